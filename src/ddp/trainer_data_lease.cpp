// trainer_data_lease.cpp — ends a trainer's loan of a data source (see trainer_data_lease.hpp).
#include "ddp/trainer_data_lease.hpp"

#include <utility>

#include "ddp/trainer.hpp"

namespace microddp::ddp {

DataSourceLease::DataSourceLease(DataSourceLease&& other) noexcept
    : trainer_(std::exchange(other.trainer_, nullptr)) {}

DataSourceLease& DataSourceLease::operator=(DataSourceLease&& other) noexcept {
  if (this != &other) {
    reset();
    trainer_ = std::exchange(other.trainer_, nullptr);
  }
  return *this;
}

void DataSourceLease::reset() noexcept {
  if (trainer_ != nullptr) std::exchange(trainer_, nullptr)->release_data_source();
}

}  // namespace microddp::ddp
