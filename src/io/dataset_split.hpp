// dataset_split.hpp — the held-out split of `train --val-fraction F` written out as two files
// (`make-dataset --split --val-fraction F [--seed S] IN.h5 TRAIN.h5 VAL.h5`; docs/data_sets.md).
//
// Contract: the rows are exactly data::TrainValSplit(N, F, S)'s, the split `train --data IN.h5
// --val-fraction F --seed S` holds out: VAL.h5 row j is IN's row val_row(j), TRAIN.h5 row t is
// IN's row train_row(t). In that order, `train --data TRAIN.h5 --val-data VAL.h5 --seed S` reads the
// same batches as the --val-fraction run (its epochs order the training indices t either way) and
// evaluates the same rows: the same losses bit for bit, and `evaluate --data VAL.h5` scores the
// rows a run held out. Both files are float32/int32 (IN's rows as train reads them: float64 rounded,
// uint8 scaled) and carry IN's number of classes as their `classes` attribute, plus source, split,
// val_fraction and seed. Written by one process through io/dataset_writer.hpp (OUT.tmp until
// complete); a bad IN or fraction is a core::UsageError (exit 2) and leaves no output.
#pragma once

#include <cstdint>
#include <string>

namespace microddp::io {

struct SplitOptions {
  std::string input, train_output, val_output;
  double val_fraction = 0.0;
  std::uint64_t seed = 1;
};

struct SplitResult {
  std::int64_t rows = 0, train_rows = 0, val_rows = 0, in_dim = 0, classes = 0;
  double seconds = 0.0;
};

SplitResult write_split(const SplitOptions& opts);

}  // namespace microddp::io
