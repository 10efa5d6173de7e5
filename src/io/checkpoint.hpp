// checkpoint.hpp — HDF5 checkpoints: what `train` and the tests include. The pieces, one concept each:
//
//   io/checkpoint_schema.hpp  the file: tensor layout, root attributes (the configuration fields come
//                             from ddp/train_config_fields.hpp), their digest, compatibility
//   io/checkpoint_save.hpp    the crash-safe save protocol, its fault points, retention
//   io/checkpoint_load.hpp    the verified read and resume (rank 0 reads, everyone gets a broadcast)
//   io/checkpoint_dir.hpp     file names, listing (newest first), deleting beyond --keep
//   io/checkpoint_ownership.hpp  which run a checkpoint belongs to (io/run_info.hpp: the run record)
//   io/atomic_file.hpp        temp file, fsync, rename, directory fsync (shared with make-dataset)
//
// docs/checkpoint_format.md is the reference of the format, the protocol and the resume rules.
#pragma once

#include "io/checkpoint_dir.hpp"
#include "io/checkpoint_ownership.hpp"
#include "io/checkpoint_load.hpp"
#include "io/checkpoint_save.hpp"
#include "io/checkpoint_schema.hpp"
