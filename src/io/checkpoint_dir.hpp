// checkpoint_dir.hpp — the checkpoint directory: file names, listing, retention.
//
// A published checkpoint is <dir>/ckpt_<step, 10 digits>.h5; a save in progress is that name plus
// ".tmp" (io/atomic_file). The best model (train --save-best) is <dir>/best.h5, a checkpoint too,
// which listing and retention never see. Listing sees only published names (never *.tmp, never
// foreign files), newest (highest step) first. Retention deletes this run's published checkpoints
// beyond its newest `keep` (`ours` decides which are this run's: another run's are never deleted)
// and stale temporaries of killed saves; the save calls it only after the new checkpoint was
// verified, so the only valid checkpoint is never deleted.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace microddp::io {

std::string checkpoint_path(const std::string& dir, std::int64_t step);
// <dir>/best.h5
std::string best_checkpoint_path(const std::string& dir);
// Published checkpoints in `dir`, newest first. A missing directory has none.
std::vector<std::string> list_checkpoints(const std::string& dir);

// Deletes the published checkpoints for which `ours` is true beyond the newest `keep` of them
// (keep > 0), never `newest` itself; `after_first` (if set) runs after the first deletion attempt.
// Returns the deleted paths.
std::vector<std::string> remove_beyond_keep(const std::string& dir, int keep, const std::string& newest,
                                            const std::function<bool(const std::string&)>& ours,
                                            const std::function<void()>& after_first = {});
// Deletes ckpt_<step>.h5.tmp files (saves that were killed before they published).
void remove_stale_temporaries(const std::string& dir);

}  // namespace microddp::io
