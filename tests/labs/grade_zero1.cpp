// grade_zero1.cpp — the grader of lab 09 (ZeRO stage 1: docs/labs/09-zero1).
//
// Part 1, the shard (every rank computes the same): zero1_shard for every rank of 1 to 8 ranks over
// counts from 0 to 2^20 + 3 — none, fewer than the ranks, divisible, with a remainder — against the
// one split the communicator's equal blocks allow: chunk = floor(count / world) elements at
// rank * chunk, the tail the last count - world * chunk.
// Part 2, inside the trainer: a small MLP (9 inputs, 3 hidden layers of 7, 3 classes: 206 parameters
// in 511 floats up to the end of the last one, odd and not a multiple of 3, so at 2, 3 and 4 ranks
// there is a tail of 1, 1 and 3 parameters) trains 4 Adam steps on a global batch of 13 (uneven
// shares) with `--strategy flat` (production DDP: one all-reduce, every rank updates everything)
// and with `--strategy lab-zero1` (your three functions, through the seam `train` uses). Checked on
// every rank:
//   * every parameter after every step, and every step's loss, equal to flat's to 1e-6 relative
//     (after every step: a mistake shows alone in the step it is made). Why not bitwise:
//     the reduce-scatter and the all-reduce may add the ranks' contributions in different orders
//     (a few ulp, 1e-7 relative); Adam's update divides m by sqrt(v), so those ulp stay ulp.
//     A wrong element is off by about the learning rate (1e-3), thousands of times more;
//   * the optimizer state is this rank's shard only: chunk + tail elements per buffer, not the
//     flat buffer's (the memory saving is the point);
//   * the communication is ZeRO-1's: per step, the chunks reduce-scattered (world * chunk floats),
//     at most the tail all-reduced, and the chunks all-gathered — what DDP's one all-reduce moves.
// A failure names the rank, the parameter, the element and where it lies (this rank's chunk,
// another rank's, the tail), what flat gave and what came back, with a hint. Exit 0 and "PASS" when
// everything holds.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "grader_training.hpp"
#include "labs/lab_zero1.hpp"
#include "labs/lab_api.hpp"
#include "labs/lab_strategies.hpp"
#include "labs/lab_zero1.hpp"

namespace {

using namespace microddp;
using labs::LabShard;
using labs::same_shard;
using labs::shard_text;
using labs::Zero1Context;

constexpr const char* kLab = "09-zero1 (zero1_shard, zero1_reduce_gradients, zero1_update)";
constexpr double kRelTol = 1e-6;  // see the file comment: ulp from another summation order pass, mistakes do not
constexpr int kSteps = 4;

// Part 1: "" when every shard is right.
std::string grade_shards() {
  const std::int64_t counts[] = {0, 1, 2, 3, 5, 7, 8, 64, 100, 511, 739, 1000, 1001, (1 << 20) + 3};
  for (const std::int64_t count : counts) {
    for (int world = 1; world <= 8; ++world) {
      for (int rank = 0; rank < world; ++rank) {
        const LabShard want = labs::expected_zero1_shard(count, world, rank);
        LabShard got;
        try {
          got = labs::zero1_shard(count, world, rank);
        } catch (const std::exception& e) {
          return std::string("zero1_shard threw: ") + e.what();
        }
        if (same_shard(got, want)) continue;
        std::ostringstream os;
        os << "zero1_shard(count " << count << ", world " << world << ", rank " << rank << "): expected "
           << shard_text(want) << ", got " << shard_text(got);
        const std::int64_t ceil_chunk = (count + world - 1) / world;
        if (want.tail_count > 0 && got.tail_count == 0 && got.chunk_count == want.chunk_count) {
          os << ". Hint: " << count << " = " << world << " x " << want.chunk_count << " + " << want.tail_count
             << ": the remainder is the tail, and every rank keeps it (the equal blocks of the reduce-scatter "
                "cannot carry it)";
        } else if (want.tail_count > 0 && got.chunk_count == ceil_chunk) {
          os << ". Hint: chunks of ceil(count / world) = " << ceil_chunk
             << " do not tile the buffer in equal blocks (the last rank's would run past the end); chunks of "
                "floor(count / world), and the rest is the tail";
        } else if (got.chunk_count == want.chunk_count && got.chunk_begin != want.chunk_begin) {
          os << ". Hint: rank r's chunk is block r of the reduce-scatter: it starts at r * chunk_count";
        } else if (got.chunk_count == count && count > 0 && world > 1) {
          os << ". Hint: that is the whole buffer on every rank: DDP's replicated state, not a shard";
        }
        return os.str();
      }
    }
  }
  return "";
}

// Part 2's model and run.
ddp::TrainConfig config(ddp::Strategy strategy) {
  ddp::TrainConfig c;
  c.model = model::MlpConfig{9, 7, 3, 3};  // 511 floats up to the end of layer_00.weight (file comment)
  c.global_batch = 13;
  c.steps = kSteps;
  c.seed = 9;
  c.strategy = strategy;
  return c;
}

bool close(double want, double got) {
  return std::fabs(want - got) <= kRelTol * std::max(std::fabs(want), std::fabs(got));
}

// Where flat element i lies for `rank` (its chunk, another rank's, the tail, beyond the shards).
std::string where(std::int64_t i, const LabShard& mine, int rank, int world) {
  std::ostringstream os;
  if (i >= mine.tail_begin) {
    os << "in the tail [" << mine.tail_begin << ", " << mine.tail_begin + mine.tail_count
       << ") every rank updates. Hint: the remainder — is its gradient all-reduced and the tail updated on every "
          "rank, with state [chunk_count, state_count())?";
  } else if (mine.chunk_count > 0 && i / mine.chunk_count == rank) {
    os << "in this rank's own chunk [" << mine.chunk_begin << ", " << mine.chunk_begin + mine.chunk_count
       << "). Hint: is its summed gradient the one updated (grads[0, chunk_count) after the in-place "
          "reduce-scatter), and the parameters at chunk_begin?";
  } else {
    const std::int64_t owner = mine.chunk_count > 0 ? i / mine.chunk_count : -1;
    os << "in rank " << owner << "'s chunk [" << owner * mine.chunk_count << ", " << (owner + 1) * mine.chunk_count
       << ")" << (world > 1 ? ". Hint: did the updated chunks reach every rank (all_gather of the parameters)?" : "");
  }
  return os.str();
}

// Part 2 on this rank: "" when it passed.
std::string grade_training(comm::Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  // The parameters after every step: a mistake shows alone in the step it is made, before it spreads
  // through the next forward to every other element.
  std::vector<std::vector<float>> ours_after, yours_after;
  const auto keep = [](std::vector<std::vector<float>>& after, const ddp::Trainer& t) {
    after.emplace_back(t.model().param_data(), t.model().param_data() + t.model().flat_count());
  };
  const labs::grading::TrainRun ours = labs::grading::train(
      config(ddp::Strategy::Flat), comm, [&](const ddp::Trainer& t, std::int64_t) { keep(ours_after, t); });
  labs::grading::TrainRun yours;
  LabShard shard;
  std::int64_t zero_count = 0, state_count = 0, flat_state_count = 0;  // elements per state buffer
  std::string calls_failure;  // the first step whose collectives are not ZeRO-1's
  try {
    yours =
        labs::grading::train(config(labs::lab_strategies().zero1), comm, [&](const ddp::Trainer& t, std::int64_t s) {
          keep(yours_after, t);
          const auto& sync = dynamic_cast<const labs::LabZero1Sync&>(t.sync());
          shard = sync.context().shard();
          zero_count = sync.zero_count();
          state_count = t.optimizer().state_count();
          flat_state_count = t.model().flat_count();
          if (!calls_failure.empty()) return;
          std::int64_t scattered = 0, reduced = 0, gathered = 0;
          const auto& calls = sync.context().calls();
          for (const Zero1Context::Call& c : calls) {
            if (c.kind == Zero1Context::Kind::ReduceScatter) scattered += c.count * n;
            if (c.kind == Zero1Context::Kind::AllReduce) reduced += c.count;
            if (c.kind == Zero1Context::Kind::AllGather) gathered += c.count * n;
          }
          const std::int64_t chunks = n * shard.chunk_count;
          std::ostringstream os;
          os << "step " << s + 1 << ": ";
          if (sync.context().calls_made() > static_cast<std::int64_t>(calls.size())) {
            os << sync.context().calls_made()
               << " collectives in one step; ZeRO-1 needs three at most (reduce-scatter, "
               << "the tail's all-reduce, all-gather)";
          } else if (reduced > shard.tail_count) {
            os << "all_reduce_sum over " << reduced << " floats; ZeRO-1 all-reduces only the tail (" << shard.tail_count
               << " float(s)). Hint: all-reducing the gradient gives every rank the WHOLE summed gradient, of which it "
                  "updates 1/"
               << n
               << "; with the all-gather after it that is twice DDP's communication. "
                  "reduce_scatter_sum gives each rank just its chunk's sum, for half the traffic";
          } else if (scattered != chunks) {
            os << "reduce_scatter_sum covered " << scattered << " floats; ZeRO-1 reduce-scatters all " << n
               << " chunks, " << chunks << " floats";
          } else if (gathered != chunks) {
            os << "all_gather covered " << gathered << " floats; ZeRO-1 all-gathers all " << n << " updated chunks, "
               << chunks << " floats";
          } else {
            return;
          }
          calls_failure = os.str();
        });
  } catch (const std::exception& e) {
    return std::string("training with --strategy lab-zero1 threw: ") + e.what();
  }
  char msg[1400];
  for (std::size_t step = 0; step < ours_after.size() && step < yours_after.size(); ++step) {
    for (const auto& p : ours.layout) {
      for (std::int64_t i = 0; i < p.count; ++i) {
        const auto at = static_cast<std::size_t>(p.offset + i);
        const float want = ours_after[step][at], got = yours_after[step][at];
        if (close(want, got)) continue;
        std::snprintf(msg, sizeof msg,
                      "after Adam step %zu of %d, parameter %s element %lld (flat element %zu of %lld, %s): "
                      "--strategy flat gives %.9g, yours %.9g (more than %.0e relative)",
                      step + 1, kSteps, p.name.c_str(), static_cast<long long>(i), at,
                      static_cast<long long>(zero_count), where(static_cast<std::int64_t>(at), shard, r, n).c_str(),
                      static_cast<double>(want), static_cast<double>(got), kRelTol);
        return msg;
      }
    }
  }
  for (std::size_t s = 0; s < ours.losses.size(); ++s) {
    if (!close(ours.losses[s], yours.losses[s])) {
      std::snprintf(msg, sizeof msg, "step %zu: loss %.9g with --strategy flat, %.9g with yours", s + 1, ours.losses[s],
                    yours.losses[s]);
      return msg;
    }
  }
  if (state_count != labs::expected_zero1_shard(zero_count, n, r).state_count()) {
    std::snprintf(msg, sizeof msg,
                  "the optimizer state holds %lld elements per buffer on this rank; ZeRO-1's is the shard's, %lld "
                  "(chunk %lld + tail %lld), against DDP's %lld",
                  static_cast<long long>(state_count), static_cast<long long>(shard.state_count()),
                  static_cast<long long>(shard.chunk_count), static_cast<long long>(shard.tail_count),
                  static_cast<long long>(flat_state_count));
    return msg;
  }
  return calls_failure;
}

}  // namespace

int main(int argc, char** argv) {
  return labs::grading::run_trainer_grader(
      argc, argv, kLab, " (a hang here: ranks made different collectives)",
      {{[](comm::Communicator&) { return grade_shards(); }, /*same_everywhere=*/true, nullptr},
       {grade_training, false, "training vs --strategy flat (part 2)"}},
      std::string("lab ") + kLab + ": every shard exact; " + std::to_string(kSteps) +
          " training steps equal to --strategy flat to 1e-6 relative on every rank, with the optimizer state of the "
          "shard only and ZeRO-1's collectives");
}
