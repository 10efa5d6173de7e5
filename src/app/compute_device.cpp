// compute_device.cpp — --device: CPU ops or CUDA ops on the rank's GPU, and the matching backend.
#include "app/compute_device.hpp"

#include <vector>

#include "run/agreed_usage_error.hpp"
#include "comm/factory.hpp"
#include "core/error.hpp"

#if MICRODDP_HAVE_CUDA
#include "comm/gpu/gpu_sharing.hpp"
#include "kernels/cuda/device.hpp"
#endif

namespace microddp::app {

namespace {
// GPUs this process can use: 0 in a build without the CUDA path (no driver calls at all).
int visible_gpus() {
#if MICRODDP_HAVE_CUDA
  return kernels::cuda_device_count();
#else
  return 0;
#endif
}

// "mpi, hier, nccl or nccl-ring": this build's backends that accept device buffers.
std::string device_backends() {
  std::vector<std::string> names;
  for (const auto& b : comm::available_backends()) {
    if (backend_accepts_device_buffers(b)) names.push_back(b);
  }
  std::string list;
  for (std::size_t i = 0; i < names.size(); ++i)
    list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return list;
}

// The backend a GPU model uses when --comm was not given: NCCL when this build has it.
std::string default_device_backend() { return comm::describe_backend("nccl").compiled_in ? "nccl" : "mpi"; }

ComputeChoice choose_local(const std::string& device, const std::string& comm, bool comm_given, bool tf32,
                           int blas_threads, const comm::MpiRuntime& mpi) {
  validate_device_name(device);
  bool use_gpu = false;
  if (device == "cuda") {
#if !MICRODDP_HAVE_CUDA
    MDDP_USAGE_CHECK(false,
                     "--device cuda: this microddp was built without CUDA (MICRODDP_CUDA=OFF); "
                     "rebuild with nvcc available or use --device cpu");
#endif
    MDDP_USAGE_CHECK(visible_gpus() > 0,
                     "--device cuda: no CUDA device visible (driver, CUDA_VISIBLE_DEVICES?); "
                     "use --device cpu");
    MDDP_USAGE_CHECK(!comm_given || backend_accepts_device_buffers(comm),
                     "--comm " << comm << " runs on host memory only; a model on the GPU (--device cuda) needs "
                               << "--comm " << device_backends());
    use_gpu = true;
  } else if (device == "auto") {
    use_gpu = visible_gpus() > 0 && (!comm_given || backend_accepts_device_buffers(comm));
  }
  // TF32 is a tensor-core operand format: a CPU run asked for it would silently compute in fp32.
  MDDP_USAGE_CHECK(use_gpu || !tf32,
                   "--precision tf32 (--tf32) needs the GPU path (TF32 tensor cores); this run computes on the CPU "
                   "(--device "
                       << device << "): use --precision fp32, or bf16 (on the CPU: the bf16 reference)");
  ComputeChoice c;
  if (use_gpu) {
    c.ops = kernels::make_cuda_ops(mpi.local_rank() % visible_gpus(), tf32);
    c.comm = comm_given ? comm : default_device_backend();
  } else {
    c.ops = kernels::make_cpu_ops(blas_threads);
    c.comm = comm;
  }
  return c;
}
}  // namespace

void validate_device_name(const std::string& device) {
  MDDP_USAGE_CHECK(device == "cpu" || device == "cuda" || device == "auto",
                   "--device must be cpu, cuda or auto, got '" << device << "'");
}

bool backend_accepts_device_buffers(const std::string& comm) {
  const auto d = comm::find_backend(comm);
  return d && d->accepts_device_buffers;
}

ComputeChoice choose_compute(const std::string& device, const std::string& comm, bool comm_given, bool tf32,
                             int blas_threads, const comm::MpiRuntime& mpi) {
  // Ranks agree on the outcome first, so "no GPU" everywhere is one clean message and exit 2 on
  // every rank (an error on some ranks only still ends the job, through MPI_Abort).
  std::string error;
  ComputeChoice choice;
  try {
    choice = choose_local(device, comm, comm_given, tf32, blas_threads, mpi);
  } catch (const core::UsageError& e) {
    error = e.what();
  }
  run::agree_on_usage_error(mpi, "the --device agreement", error,
                       "--device " + device + ": another rank cannot use its device");
#if MICRODDP_HAVE_CUDA
  // Ranks that compute on one shared GPU (two ranks on a one-GPU workstation: the README's first
  // command on a CUDA build) cannot use NCCL, which needs one GPU per rank. Without --comm they get
  // `mpi` (it stages device buffers through the host and works on a shared GPU) and the header says
  // why; an explicit --comm nccl is refused by the backend itself, naming the ranks.
  comm::GpuIdentity mine;
  mine.host = mpi.hostname();
  if (choice.ops->device() == core::Device::Cuda) {
    mine.uses_gpu = true;
    mine.uuid = kernels::cuda_device_uuid(mpi.local_rank() % visible_gpus());
  }
  const comm::GpuSharing sharing = comm::exchange_gpu_identities(mpi, mine, kernels::format_device_uuid);
  if (sharing.shared() && mine.uses_gpu && !comm_given && choice.comm != "mpi") {
    choice.note = sharing.example + ": gradients go through --comm mpi (NCCL needs one GPU per rank)";
    choice.comm = "mpi";
  }
#endif
  return choice;
}

}  // namespace microddp::app
