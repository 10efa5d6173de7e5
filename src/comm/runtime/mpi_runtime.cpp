// mpi_runtime.cpp — MPI initialisation, node-local rank, abort, and MPI helpers.
#include "comm/runtime/mpi_runtime.hpp"

#include <cstdio>
#include <cstdlib>

#include "comm/runtime/collective_watchdog.hpp"
#include "comm/transport/mpi_check.hpp"
#include "comm/transport/wire16_mpi_op.hpp"
#include "core/log.hpp"

namespace microddp::comm {

std::string mpi_error_string(int code) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS) return "MPI error code " + std::to_string(code);
  return std::string(buf, static_cast<std::size_t>(len));
}

MPI_Datatype mpi_datatype(core::DType t) {
  switch (t) {
    case core::DType::F32:
      return MPI_FLOAT;
    case core::DType::F64:
      return MPI_DOUBLE;
    case core::DType::I32:
      return MPI_INT32_T;
    case core::DType::I64:
      return MPI_INT64_T;
    case core::DType::F16:
    case core::DType::BF16:
      return MPI_UINT16_T;  // the bits; reductions use wire16_mpi_op
  }
  MDDP_CHECK(false, "no MPI datatype for dtype");
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(core::ReduceOp op, core::DType dtype) {
  if (dtype == core::DType::F16 || dtype == core::DType::BF16) return wire16_mpi_op(dtype, op);
  return mpi_op(op);
}

MPI_Op mpi_op(core::ReduceOp op) {
  switch (op) {
    case core::ReduceOp::Sum:
      return MPI_SUM;
    case core::ReduceOp::Max:
      return MPI_MAX;
    case core::ReduceOp::Min:
      return MPI_MIN;
    case core::ReduceOp::Mean:
      break;
  }
  MDDP_CHECK(false, "ReduceOp::Mean has no MPI op (it is executed as sum, then divided)");
  return MPI_OP_NULL;
}

MpiRuntime::MpiRuntime(int* argc, char*** argv, double timeout_s) {
  if (timeout_s > 0.0) {
    watchdog_ = std::make_unique<CollectiveWatchdog>(timeout_s, [this, timeout_s](const CollectiveCall&,
                                                                                  const char* label, double waited) {
      // stderr directly: during start-up logging does not know the rank yet. The launcher's own
      // variables name the rank before MPI can.
      const int rank = reported_rank_.load();
      const std::string who = rank >= 0 ? std::to_string(rank) : launcher_rank().value_or("?");
      std::fprintf(stderr,
                   "microddp: error: MPI section timeout on rank %s: %s has not completed after %.1f s "
                   "(--comm-timeout %g s): another rank did not reach it, is stopped or is dead. Aborting the job.\n",
                   who.c_str(), label != nullptr ? label : "(unnamed section)", waited, timeout_s);
      std::fflush(stderr);
      abort_all(1);  // MPI_Abort once MPI is up; before that, _Exit: the launcher then ends the job
    });
  }
  const Section startup = watch("MPI start-up (MPI_Init_thread and the node-local split)");
  int provided = 0;
  MDDP_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided));
  MDDP_CHECK(provided >= MPI_THREAD_SERIALIZED,
             "the MPI library provides thread level " << provided << "; microddp needs MPI_THREAD_SERIALIZED");
  MDDP_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MDDP_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  reported_rank_ = rank_;
  MDDP_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  MPI_Comm local = MPI_COMM_NULL;
  MDDP_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local));
  MDDP_MPI_CHECK(MPI_Comm_rank(local, &local_rank_));
  MDDP_MPI_CHECK(MPI_Comm_size(local, &local_size_));
  MDDP_MPI_CHECK(MPI_Comm_free(&local));
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  MDDP_MPI_CHECK(MPI_Get_processor_name(name, &len));
  hostname_.assign(name, static_cast<std::size_t>(len));
  core::set_error_rank(rank_);
  core::set_log_rank(rank_, size_);
}

MpiRuntime::Section::Section(const MpiRuntime& mpi, const char* label) : mpi_(mpi) {
  if (mpi_.watchdog_ && mpi_.section_depth_++ == 0) mpi_.watchdog_->begin(CollectiveCall{}, label);
}

MpiRuntime::Section::~Section() {
  if (mpi_.watchdog_ && --mpi_.section_depth_ == 0) mpi_.watchdog_->end();
}

MpiRuntime::~MpiRuntime() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::string MpiRuntime::library_version() const {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(buf, &len);
  std::string s(buf, static_cast<std::size_t>(len));
  const auto cut = s.find_first_of(",\n");
  return cut == std::string::npos ? s : s.substr(0, cut);
}

std::optional<std::string> MpiRuntime::launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    if (const char* v = std::getenv(var)) return std::string(v);
  }
  return std::nullopt;
}

void MpiRuntime::abort_all(int code) {
  if (initialized()) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

bool MpiRuntime::initialized() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

}  // namespace microddp::comm
