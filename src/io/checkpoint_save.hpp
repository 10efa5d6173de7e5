// checkpoint_save.hpp — the crash-safe checkpoint save (the schema is io/checkpoint_schema.hpp).
//
// Protocol (collective over `comm`, between steps, when the communicator is idle):
//   1. write <dir>/ckpt_<step>.h5.tmp: every rank writes its disjoint row slice of every dataset
//      collectively with the MPI-IO driver (WriterMode::Parallel), or rank 0 writes it all
//      (WriterMode::Rank0) while the others wait for the outcome;
//   2. H5Fflush + H5Fclose, then rank 0 publishes it (io/atomic_file: fsync, rename to
//      ckpt_<step>.h5, directory fsync), so the published name only ever names a complete file;
//   3. rank 0 reads the new checkpoint back and verifies every checksum, and only then deletes
//      this run's checkpoints (same run_id, io/run_info.hpp) beyond its newest `keep` and stale
//      *.tmp files (io/checkpoint_dir) — so the only valid checkpoint is never deleted, nor is
//      another run's. A save to a path of its own (SaveOptions::path: best.h5) deletes nothing.
// Rank 0 broadcasts the outcome: an I/O failure on it is a core::Error on every rank.
//
// Fault points (core/fault_plan.hpp; occurrence = SaveOptions::save_number): save_fault_points(),
// in protocol order. The armed rank SIGKILLs itself there (tests/io/fault_injection.sh; `train`
// arms them from MICRODDP_FAULT_KILL_AT/_RANK/_SAVE, app/fault_env.hpp).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/fault_plan.hpp"
#include "ddp/train_state.hpp"
#include "io/run_info.hpp"

namespace microddp::io {

enum class WriterMode { Parallel, Rank0 };

struct SaveOptions {
  std::string dir;
  int keep = 3;                              // newest checkpoints kept; 0 = keep all
  WriterMode writer = WriterMode::Parallel;  // `train` defaults to Rank0 (measured, see the docs)
  std::string backend;                       // communicator name, recorded
  bool verify = true;                        // read back before deleting older checkpoints
  core::FaultPlan faults;                    // save fault points (test hooks); empty by default
  std::int64_t save_number = 1;              // this save's number in the process (1-based), for `faults`
  RunInfo run;                               // recorded as the file's run record (run_id, history, best)
  std::string path;                          // "": <dir>/ckpt_<step>.h5 with retention; else this file, no retention
};

struct SaveResult {
  std::string path;
  std::int64_t bytes = 0;  // file size
  double write_s = 0;      // create + write + flush + close
  double publish_s = 0;    // fsync + rename + directory fsync
  double verify_s = 0;     // read-back verification (rank 0)
  std::vector<std::string> deleted;
};

// The save's named fault points, in protocol order: begin created mid_write before_flush
// after_flush after_fsync after_rename after_dir_fsync mid_retention.
const std::vector<std::string>& save_fault_points();

// Collective over `comm` (all ranks of the trainer). Throws core::Error on I/O failure on any rank.
SaveResult save_checkpoint(MPI_Comm comm, const ddp::TrainState& trainer, const SaveOptions& opts);

}  // namespace microddp::io
