// device_stream.hpp — the queue a device runs work on, passed between layers as a type of its own.
// The Ops own it (kernels), a stream-ordered communicator orders its collectives after it (comm), the
// trainer hands it from one to the other (ddp): none of them needs its native type, and a stream
// cannot be mixed up with a buffer or any other pointer on the way. Only CUDA code unwraps it:
// native() is a cudaStream_t there. A default-made DeviceStream is the null stream: what the CPU
// has (it runs every call at once) and, to CUDA, the legacy default stream.
#pragma once

namespace microddp::core {

class DeviceStream {
 public:
  DeviceStream() = default;
  // `native`: a cudaStream_t (any CUDA stream handle converts to void*).
  explicit DeviceStream(void* native) : native_(native) {}

  void* native() const { return native_; }
  bool is_null() const { return native_ == nullptr; }
  friend bool operator==(DeviceStream, DeviceStream) = default;

 private:
  void* native_ = nullptr;
};

}  // namespace microddp::core
