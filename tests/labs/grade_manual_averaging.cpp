// grade_manual_averaging.cpp — the grader of lab 01 (manual gradient averaging,
// combine_replica_gradients).
//
// Part 1, closed form. 1 to 4 replicas, counts 0 to 4099. Replica r's gradient of element i is a
// small integer divided by the global batch B = 64 (a power of two), as a replica computes it (loss
// / GLOBAL batch): every sum is exact in fp32 in any order. Expected afterwards, in EVERY replica's
// buffer: the sum over the replicas (the mean gradient over the global batch). Nothing may be
// written outside the buffers (guard elements on both sides).
// Part 2, the order. Gradients that are not exact (fractions with full mantissas), 2, 3 and 4
// replicas: the result must equal ours (app::sum_replica_gradients, what `microddp manual` runs)
// bit for bit — added in replica order ((g_0 + g_1) + g_2) + ..., the order rank 0 adds the ranks'
// buffers in a naive all-reduce. With 2 replicas any order gives the bits of `train -np 2`
// (a + b == b + a in floating point); from 3 on, (a + b) + c and a + (b + c) differ in the last bit.
// Part 3, in the program. `microddp manual`'s replicas (app::ManualReplicas) train a small MLP for
// 6 Adam steps on a global batch of 11 (shares 6 + 5), once with ours and once with yours
// (`manual --average lab` runs exactly this): both replicas' parameters must be bitwise identical
// to ours, so the checksum `manual --average lab` prints is the one `manual` prints.
// Values are compared with == (so -0 equals +0: the sign of a zero gradient does not move a
// parameter). The grader runs on rank 0; other ranks (graders_both_ways starts it at 1, 3 and 4)
// wait for its verdict (grader_support.hpp). Exit 0 and "PASS" when everything holds, else exit 1 on every rank.
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "app/manual_replicas.hpp"
#include "grader_support.hpp"
#include "labs/lab_api.hpp"

namespace {

using namespace microddp;
using labs::grading::ulps;

constexpr const char* kLab = "01-manual-averaging (combine_replica_gradients)";
constexpr std::int64_t kGuard = 16;
constexpr float kGuardValue = -7777.0f;
constexpr float kBatch = 64.0f;

// Replica buffers with guards: buf[r] holds kGuard + count + kGuard floats.
struct Replicas {
  std::vector<std::vector<float>> buf;
  std::vector<float*> ptr;
  Replicas(int n, std::int64_t count) {
    for (int r = 0; r < n; ++r) buf.emplace_back(static_cast<std::size_t>(count + 2 * kGuard), kGuardValue);
    for (auto& b : buf) ptr.push_back(b.data() + kGuard);
  }
};

// Why `got` (replica r) is not `want` (n replicas; `mine`: replica r's input).
std::string hint(float got, float want, float mine, int n, bool first_replica_right) {
  if (got == mine && got != want)
    return first_replica_right ? " (this replica's own gradient: the sum was not written back to every replica)"
                               : " (this replica's own gradient: nothing was combined)";
  if (n > 1 && (got == want / static_cast<float>(n) || got == want * (1.0f / static_cast<float>(n))))
    return " (the sum divided by the number of replicas, " + std::to_string(n) +
           ": each replica's loss is already divided by the GLOBAL batch size, so the sum IS the mean over "
           "the global batch; dividing again makes every step n times too small — see the README)";
  if (ulps(got, want) <= 4)
    return " (" + std::to_string(ulps(got, want)) +
           " ulp off: the right sum, added in another order. Float addition is not associative; add in replica "
           "order, ((g_0 + g_1) + g_2) + ..., as rank 0 of a naive all-reduce adds the ranks)";
  return "";
}

// Runs the student's function on `reps` against `want` (per replica the same expected vector);
// "" when it passed.
std::string check(Replicas& reps, const std::vector<float>& want, const std::vector<std::vector<float>>& input,
                  std::int64_t count, const char* what) {
  const int n = static_cast<int>(reps.ptr.size());
  char msg[1024];
  try {
    labs::combine_replica_gradients(reps.ptr, count);
  } catch (const std::exception& e) {
    std::snprintf(msg, sizeof msg, "%s, %d replica(s), count %lld: your function threw: %s", what, n,
                  static_cast<long long>(count), e.what());
    return msg;
  }
  for (int r = 0; r < n; ++r) {
    for (std::int64_t i = 0; i < count; ++i) {
      const float got = reps.ptr[static_cast<std::size_t>(r)][i], w = want[static_cast<std::size_t>(i)];
      if (got != w) {
        const bool first_right = reps.ptr[0][i] == w;
        std::snprintf(
            msg, sizeof msg, "%s, %d replica(s), count %lld: replica %d element %lld: expected %.9g, got %.9g%s", what,
            n, static_cast<long long>(count), r, static_cast<long long>(i), static_cast<double>(w),
            static_cast<double>(got),
            hint(got, w, input[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)], n, first_right).c_str());
        return msg;
      }
    }
    const auto& b = reps.buf[static_cast<std::size_t>(r)];
    for (std::int64_t g = 0; g < kGuard; ++g) {
      if (b[static_cast<std::size_t>(g)] != kGuardValue ||
          b[static_cast<std::size_t>(kGuard + count + g)] != kGuardValue) {
        std::snprintf(msg, sizeof msg, "%s, %d replica(s), count %lld: replica %d: wrote outside its buffer", what, n,
                      static_cast<long long>(count), r);
        return msg;
      }
    }
  }
  return "";
}

std::string closed_form() {
  for (int n = 1; n <= 4; ++n) {
    for (const std::int64_t count : {0, 1, 2, 7, 1000, 4099}) {
      Replicas reps(n, count);
      std::vector<std::vector<float>> input(static_cast<std::size_t>(n));
      std::vector<float> want(static_cast<std::size_t>(count), 0.0f);
      for (int r = 0; r < n; ++r) {
        for (std::int64_t i = 0; i < count; ++i) {
          const float v = static_cast<float>((r * 5 + i * 3) % 17 - 8) / kBatch;  // k / 64, |k| <= 8: exact
          input[static_cast<std::size_t>(r)].push_back(v);
          reps.ptr[static_cast<std::size_t>(r)][i] = v;
          want[static_cast<std::size_t>(i)] += v;
        }
      }
      const std::string f = check(reps, want, input, count, "part 1 (exact sums)");
      if (!f.empty()) return f;
    }
  }
  return "";
}

std::string order() {
  std::uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&state] {  // xorshift64*: fractions with full mantissas, both signs
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    const std::uint64_t x = state * 0x2545f4914f6cdd1dull;
    return (static_cast<float>(x >> 40) / static_cast<float>(1u << 24) - 0.5f) * 1e-3f;
  };
  const std::int64_t count = 4099;
  for (int n = 2; n <= 4; ++n) {
    Replicas reps(n, count), ours(n, count);
    std::vector<std::vector<float>> input(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
      for (std::int64_t i = 0; i < count; ++i) {
        const float v = next();
        input[static_cast<std::size_t>(r)].push_back(v);
        reps.ptr[static_cast<std::size_t>(r)][i] = ours.ptr[static_cast<std::size_t>(r)][i] = v;
      }
    }
    app::sum_replica_gradients(ours.ptr, count);
    const std::vector<float> want(ours.ptr[0], ours.ptr[0] + count);
    const std::string f = check(reps, want, input, count, "part 2 (bitwise equal to ours)");
    if (!f.empty()) return f;
  }
  return "";
}

std::string in_the_program() {
  ddp::TrainConfig cfg;
  cfg.model = model::MlpConfig{8, 16, 3, 3};
  cfg.global_batch = 11;
  cfg.seed = 5;
  const int steps = 6;
  app::ManualReplicas ours(cfg, 2, 1), yours(cfg, 2, 1);
  double losses[2];
  char msg[1024];
  for (int s = 0; s < steps; ++s) {
    ours.step(s, &app::sum_replica_gradients, losses);
    try {
      yours.step(s, &labs::combine_replica_gradients, losses);
    } catch (const std::exception& e) {
      std::snprintf(msg, sizeof msg, "part 3 (manual's replicas), step %d: your function threw: %s", s + 1, e.what());
      return msg;
    }
  }
  const std::int64_t n = ours.param_count();
  for (int r = 0; r < 2; ++r) {
    const float* want = ours.replica(0).param_data();
    const float* got = yours.replica(r).param_data();
    for (std::int64_t i = 0; i < n; ++i) {
      if (std::memcmp(want + i, got + i, sizeof(float)) != 0) {
        std::snprintf(msg, sizeof msg,
                      "part 3 (manual's replicas): after %d Adam steps, replica %d's parameter element %lld is %.9g; "
                      "with ours %.9g (checksums: ours %016llx, yours %016llx)",
                      steps, r, static_cast<long long>(i), static_cast<double>(got[i]), static_cast<double>(want[i]),
                      static_cast<unsigned long long>(ours.checksum(0)),
                      static_cast<unsigned long long>(yours.checksum(r)));
        return msg;
      }
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace labs::grading;
  return run_grader(argc, argv, [](const comm::MpiRuntime& mpi) {
    root_says("grading lab %s\n", kLab);
    std::string f;
    if (mpi.rank() == 0) {  // the other ranks wait for its verdict
      f = guarded([] {
        std::string failure = closed_form();
        if (failure.empty()) failure = order();
        if (failure.empty()) failure = in_the_program();
        return failure;
      });
    }
    if (any_failed(f, /*same_everywhere=*/true)) return false;
    root_says(
        "PASS: lab %s: exact sums for 1-4 replicas, bitwise equal to ours in replica order, and manual's "
        "replicas train bitwise identically to `microddp manual`\n",
        kLab);
    return true;
  });
}
