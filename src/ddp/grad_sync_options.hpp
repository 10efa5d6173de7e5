// grad_sync_options.hpp — the strategies' settings (bucket caps), apart from the GradSync interface
// so that the training configuration (ddp/train_config.hpp) can hold them without the strategies.
#pragma once

namespace microddp::ddp {

// Strategy settings (only `bucketed` reads them). Sizes in MiB as on the command line.
struct GradSyncOptions {
  double bucket_mb = 25.0;       // --bucket-mb: bucket cap (PyTorch DDP's default bucket_cap_mb)
  double first_bucket_mb = 0.0;  // --first-bucket-mb: cap of the first bucket; 0 = same as bucket_mb
};

}  // namespace microddp::ddp
