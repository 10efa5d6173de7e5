// checkpoint_compression.hpp — gradient compression's state in checkpoints (the /compression group).
//
// Present only when the run compresses gradients (--grad-compression other than none):
//   /compression                 attributes: mode, powersgd_rank, powersgd_start_step, error_feedback
//                                (0/1), world_size (of the save)
//   /compression/<state>         float32, attribute fnv1a64 (of the bytes), one per compressor state:
//                                identical on all ranks (PowerSGD's Q): shape (count,)
//                                per rank (error feedback): shape (world_size, count), row r = rank r's
// A checkpoint without the group was written by an uncompressed run. Resuming requires the same four
// settings (they decide the state's meaning and shape; the field table's resume rule, checked by
// io::check_compatible once read_checkpoint put them into the checkpoint's configuration); per-rank state needs the same world size,
// otherwise it restarts from zero with a note (the error is a rank's private residue: it cannot be
// re-split among another number of ranks). Format version stays 1: the group is an addition that
// older readers ignore, and an uncompressed run's file is unchanged.
#pragma once

#include <hdf5.h>
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ddp/train_state.hpp"

namespace microddp::io {

struct CompressionSnapshot {
  bool present = false;  // false: no /compression group (uncompressed run)
  ddp::GradCompressionConfig config;
  std::int64_t world_size = 0;
  struct Tensor {
    std::string name;
    bool per_rank = false;
    std::int64_t count = 0;   // elements per rank
    std::vector<float> data;  // count, or world_size * count (per_rank)
  };
  std::vector<Tensor> tensors;
};

// Collective: the trainer's compressor state with every rank's per-rank tensors gathered (every
// rank gets the whole snapshot, so serial and parallel writers can use it). !present without one.
CompressionSnapshot snapshot_compression(MPI_Comm comm, const ddp::TrainState& trainer);
// Writes the group's attributes and datasets (serial writer: call on the writing rank only).
void write_compression_group(hid_t file, const CompressionSnapshot& s);
// Reads and verifies the group (shapes, checksums); !present when the file has none.
CompressionSnapshot read_compression_group(hid_t file, const std::string& path);
// Collective: rank 0's snapshot (the others pass any) into the trainer's compressor; returns a note
// for the log when per-rank state restarted from zero (another world size), else "".
std::string restore_compression(MPI_Comm comm, const CompressionSnapshot& s, ddp::TrainState& trainer);

}  // namespace microddp::io
