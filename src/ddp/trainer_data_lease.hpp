// trainer_data_lease.hpp — how long a Trainer may read a data source it does not own.
//
// Trainer::set_data_source borrows the source, and a prefetching input pipeline reads it on a
// loader thread AHEAD of the steps (ddp/prefetching_input.hpp): when the last step returns, the
// loader may be filling batch last + 1 from it. So "the source outlives the trainer" is not enough
// in practice: whoever opened the source is usually destroyed before the object that owns the
// trainer (app/train_command.cpp opens the file after the session that owns the trainer), and a
// loader still reading a destroyed source crashed `train` at exit, now and then, after its summary.
// The lease makes the end of the loan a scope: set_data_source returns it ([[nodiscard]]), the
// caller declares it after the source (and after the trainer), and its destructor stops every read
// of the source (the loader joined, a fill in progress finished) before the source goes, on a
// normal return and while an exception unwinds alike.
//
// Contract: a lease is movable, not copyable; destroying (or reset()ting) it calls
// Trainer::release_data_source(), which does not throw. After that the trainer refuses to step
// (core::Error) until set_data_source is called again. The lease must not outlive its trainer.
#pragma once

namespace microddp::ddp {

class Trainer;

class [[nodiscard]] DataSourceLease {
 public:
  DataSourceLease() = default;  // holds nothing
  explicit DataSourceLease(Trainer& trainer) : trainer_(&trainer) {}
  DataSourceLease(DataSourceLease&& other) noexcept;
  DataSourceLease& operator=(DataSourceLease&& other) noexcept;
  DataSourceLease(const DataSourceLease&) = delete;
  DataSourceLease& operator=(const DataSourceLease&) = delete;
  ~DataSourceLease() { reset(); }

  // Ends the loan now (no-op when it holds nothing).
  void reset() noexcept;

 private:
  Trainer* trainer_ = nullptr;
};

}  // namespace microddp::ddp
