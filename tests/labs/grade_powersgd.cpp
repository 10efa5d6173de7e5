// grade_powersgd.cpp — the grader of lab 10 (PowerSGD with error feedback: docs/labs/10-powersgd).
//
// Your powersgd_step runs through the seam `train` uses (`--grad-compression lab-powersgd`,
// labs/lab_powersgd.hpp) next to the production compressor (`--grad-compression powersgd`) on the
// same gradients, and every output is compared with production's after every step, on every rank:
// the decoded gradient, Q (identical on all ranks) and the residual (this rank's error feedback).
// Part 1, the compressor alone: five parameters in two units — a 12 x 10 matrix, its bias, a wide
//   6 x 30 and a tall 40 x 5 matrix, and a 3 x 4 one too small to compress — with fresh random
//   gradients per rank and step: 3 steps at rank 2 with error feedback, 2 at rank 3 without.
// Part 2, inside the trainer: a small MLP (16 inputs, 2 hidden layers of 24, 4 classes: two 24-wide
//   matrices compressed, the output layer and the biases not) trains 4 SGD steps on a global batch
//   of 13 (uneven shares) with --strategy bucketed (the plain tensors' all-reduce asynchronous during
//   backward), step 0 uncompressed (--powersgd-start-step 1), then rank 2: the gradient the
//   optimizer received, the parameters and the loss after every step, and the state at the end.
// And the traffic: per matrix and step, the all-reduces move P and Q once each, (rows + cols) r floats.
//
// Tolerance: 1e-4 of the largest element of the matrix (max-norm), not bitwise. Production
// multiplies with fp32 BLAS, a correct solution with its own loops (float or double sums), so
// elements differ by rounding (measured with the reference solution, double sums: at most 6.5e-7 of
// the largest element over every check at 1 to 4 ranks; float sums round a few times more);
// orthonormalisation and the warm start carry the difference from step to step without
// amplifying it at these shapes (P keeps full column rank). Every mistake below moves an element by
// a sizeable fraction of the largest one: the residual left at zero (no error feedback), M minus
// the SUM's approximation as residual, P not orthonormalised, an average instead of the sum.
// A failure names the rank, the step, the matrix, the element, what production gave and what
// yours gave, with a hint. Exit 0 and "PASS" when everything holds.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "ddp/compression/grad_compressor.hpp"
#include "grader_training.hpp"
#include "labs/lab_api.hpp"
#include "labs/lab_powersgd.hpp"

namespace {

using namespace microddp;
using labs::LabMatrix;
using labs::PowerSgdContext;

constexpr const char* kLab = "10-powersgd (powersgd_step)";
constexpr double kTol = 1e-4;  // of the largest element (max-norm): see the file comment
constexpr int kTrainSteps = 4;

// Where two tensors of one matrix (or parameter) first differ beyond the tolerance: -1 when they agree.
std::int64_t first_off(const float* want, const float* got, std::int64_t count, double* scale) {
  double big = 0;
  for (std::int64_t i = 0; i < count; ++i) big = std::max(big, std::fabs(static_cast<double>(want[i])));
  *scale = big;
  const double tol = kTol * std::max(big, 1e-30);
  for (std::int64_t i = 0; i < count; ++i) {
    if (!(std::fabs(static_cast<double>(want[i]) - got[i]) <= tol)) return i;
  }
  return -1;
}

double max_abs(const float* x, std::int64_t count) {
  double big = 0;
  for (std::int64_t i = 0; i < count; ++i) big = std::max(big, std::fabs(static_cast<double>(x[i])));
  return big;
}

// The hint for a wrong output, from the calls of this step and what the numbers look like.
std::string hint(const char* what, const LabMatrix& m, int matrix, const PowerSgdContext& ctx, const float* want,
                 const float* got, std::int64_t count, const float* m_input, int world) {
  // The calls of this matrix, in order.
  std::vector<PowerSgdContext::Call> calls;
  for (const auto& c : ctx.calls()) {
    if (c.matrix == matrix) calls.push_back(c);
  }
  const bool logged_all = ctx.calls_made() == static_cast<std::int64_t>(ctx.calls().size());
  const auto is_p = [&](const PowerSgdContext::Call& c) { return c.data >= m.p && c.data < m.p + m.rows * m.rank; };
  if (logged_all) {
    const bool orth = std::any_of(calls.begin(), calls.end(),
                                  [](const auto& c) { return c.kind == PowerSgdContext::Kind::Orthonormalize; });
    if (!orth) {
      return "orthonormalize was never called: P = M Q has columns of any length and direction, and P Q^T "
             "with Q = M^T P is a projection only when P's columns are orthonormal";
    }
    if (calls.size() != 3 || calls[0].kind != PowerSgdContext::Kind::AllReduce || !is_p(calls[0]) ||
        calls[0].count != m.rows * m.rank || calls[1].kind != PowerSgdContext::Kind::Orthonormalize ||
        calls[2].kind != PowerSgdContext::Kind::AllReduce || is_p(calls[2]) || calls[2].count != m.cols * m.rank) {
      return "the calls are not all_reduce_sum(m.p, rows * r), orthonormalize(m.p, rows, r), all_reduce_sum(m.q, "
             "cols * r), in that order: P must be summed before it is orthonormalised (every rank then gets the "
             "same basis), and Q after the residual was taken";
    }
  }
  const std::string w = what;
  const double g = max_abs(got, count);
  if (w == "residual" && g == 0 && max_abs(want, count) > 0) {
    return "your residual stays zero: no error feedback. Add m.residual to the gradient first (M = G + E), and "
           "leave in it what this rank's projection leaves out, E = M - P Q^T";
  }
  if (w == "residual" && m_input != nullptr && world > 1) {
    // M - (the decoded gradient): the error of the SUM's approximation, not this rank's.
    bool matches = true;
    const double big = std::max(max_abs(got, count), 1e-30);
    for (std::int64_t i = 0; i < count && matches; ++i)
      matches = std::fabs(static_cast<double>(m_input[i]) - m.grad[i] - got[i]) <= 1e-4 * big;
    if (matches) {
      return "your residual is M minus the DECODED gradient (P times the all-reduced Q): that subtracts the "
             "approximation of the SUM over ranks from this rank's M. The error is this rank's own: E = M - P Q^T "
             "with this rank's Q = M^T P, taken before Q is all-reduced";
    }
  }
  if (w == "decoded gradient" && world > 1) {
    bool averaged = true;
    const double big = std::max(max_abs(want, count), 1e-30);
    for (std::int64_t i = 0; i < count && averaged; ++i)
      averaged = std::fabs(static_cast<double>(want[i]) / world - got[i]) <= 1e-4 * big;
    if (averaged) {
      return "yours is production's divided by the number of ranks: each rank's loss is already divided by the "
             "GLOBAL batch, so the SUM over ranks is the gradient (nothing to divide)";
    }
  }
  if (w == "Q") {
    return "Q must end as the all-reduced M^T P, the same on every rank: it is next step's warm start";
  }
  return "compare your step with the derivation in docs/labs/10-powersgd/README.md, one line at a time";
}

// What a compressor leaves after a step, in comparable pieces.
struct Outputs {
  std::vector<float> grads;     // the flat gradient buffer
  std::vector<float> q, error;  // state(): powersgd_q, error_feedback (empty without)
};

Outputs outputs(ddp::GradCompressor& c, const std::vector<float>& grads) {
  Outputs o;
  o.grads = grads;
  for (const ddp::CompressorState& s : c.state()) {
    std::vector<float>& to = s.name == "powersgd_q" ? o.q : o.error;
    to.assign(s.data, s.data + s.count);
  }
  return o;
}

// Compares one step's outputs; "" when they agree. `m_inputs`: this rank's M of the step (G + E
// before it, production's E), per flat element, for the hints.
std::string compare(const char* where, std::int64_t step, const Outputs& ours, const Outputs& yours,
                    const labs::LabPowerSgdCompressor& lab, const std::vector<model::ParamInfo>& params,
                    const std::vector<float>& m_inputs, int world, bool compressed = true) {
  char msg[2400];
  const auto& mats = lab.matrices();
  // Q's layout: the matrices in order, cols * r each (both compressors).
  std::int64_t q_at = 0;
  for (std::size_t mi = 0; mi < mats.size(); ++mi) {
    const LabMatrix& m = mats[mi];
    const auto p = std::find_if(params.begin(), params.end(), [&](const auto& x) { return x.name == m.name; });
    struct Piece {
      const char* what;
      const float *want, *got;
      std::int64_t count, cols;
    };
    std::vector<Piece> pieces = {
        {"decoded gradient", ours.grads.data() + p->offset, yours.grads.data() + p->offset, p->count, m.cols}};
    if (!ours.error.empty()) {
      pieces.push_back({"residual", ours.error.data() + p->offset, yours.error.data() + p->offset, p->count, m.cols});
    }
    pieces.push_back({"Q", ours.q.data() + q_at, yours.q.data() + q_at, m.cols * m.rank, m.rank});
    q_at += m.cols * m.rank;
    for (const Piece& pc : pieces) {
      double scale = 0;
      const std::int64_t i = first_off(pc.want, pc.got, pc.count, &scale);
      if (i < 0) continue;
      const std::string h = hint(pc.what, m, static_cast<int>(mi), lab.context(), pc.want, pc.got, pc.count,
                                 m_inputs.empty() ? nullptr : m_inputs.data() + p->offset, world);
      std::snprintf(msg, sizeof msg,
                    "%s, step %lld, matrix %s (%lld x %lld, rank %lld): the %s differs at (%lld, %lld): production "
                    "gives %.7g, yours %.7g (more than %.0e of its largest element, %.4g). Hint: %s",
                    where, static_cast<long long>(step + 1), p->name.c_str(), static_cast<long long>(m.rows),
                    static_cast<long long>(m.cols), static_cast<long long>(m.rank), pc.what,
                    static_cast<long long>(i / pc.cols), static_cast<long long>(i % pc.cols),
                    static_cast<double>(pc.want[i]), static_cast<double>(pc.got[i]), kTol, scale, h.c_str());
      return msg;
    }
  }
  // The traffic: P and Q of every matrix, once (the numbers can be right with more: the whole P
  // all-reduced twice, say, which is twice the bytes).
  const PowerSgdContext& ctx = lab.context();
  if (compressed && ctx.calls_made() == static_cast<std::int64_t>(ctx.calls().size())) {
    for (std::size_t mi = 0; mi < mats.size(); ++mi) {
      const LabMatrix& m = mats[mi];
      std::int64_t sent = 0;
      for (const auto& c : ctx.calls()) {
        if (c.matrix == static_cast<int>(mi) && c.kind == PowerSgdContext::Kind::AllReduce) sent += c.count;
      }
      if (sent == (m.rows + m.cols) * m.rank) continue;
      std::snprintf(msg, sizeof msg,
                    "%s, step %lld, matrix %s (%lld x %lld, rank %lld): your all_reduce_sum calls moved %lld floats; "
                    "PowerSGD moves P and Q once each, (rows + cols) x r = %lld",
                    where, static_cast<long long>(step + 1), std::string(m.name).c_str(),
                    static_cast<long long>(m.rows), static_cast<long long>(m.cols), static_cast<long long>(m.rank),
                    static_cast<long long>(sent), static_cast<long long>((m.rows + m.cols) * m.rank));
      return msg;
    }
  }
  // The parameters that travel uncompressed: the program's own all-reduce (production's packs them
  // with the P's, the lab's alone: MPI may add in another order, so not bitwise either).
  for (const auto& p : params) {
    const bool matrix = std::any_of(mats.begin(), mats.end(), [&](const LabMatrix& m) { return m.name == p.name; });
    if (matrix) continue;
    double scale = 0;
    const std::int64_t i = first_off(ours.grads.data() + p.offset, yours.grads.data() + p.offset, p.count, &scale);
    if (i < 0) continue;
    std::snprintf(msg, sizeof msg,
                  "%s, step %lld: %s (uncompressed) element %lld: production gives %.7g, yours %.7g. Hint: the program "
                  "all-reduces it; did powersgd_step write outside its matrix?",
                  where, static_cast<long long>(step + 1), p.name.c_str(), static_cast<long long>(i),
                  static_cast<double>(ours.grads[static_cast<std::size_t>(p.offset + i)]),
                  static_cast<double>(yours.grads[static_cast<std::size_t>(p.offset + i)]));
    return msg;
  }
  return "";
}

// Part 1's parameters: (rows, cols), a bias, in two units [0, 3) and [3, 5).
std::vector<model::ParamInfo> part1_params() {
  const struct {
    const char* name;
    std::int64_t rows, cols;
    bool bias;
  } shapes[] = {{"square.weight", 12, 10, false},
                {"square.bias", 12, 1, true},
                {"wide.weight", 6, 30, false},
                {"tall.weight", 40, 5, false},
                {"small.weight", 3, 4, false}};
  std::vector<model::ParamInfo> params;
  std::int64_t at = 0;
  for (const auto& s : shapes) {
    model::ParamInfo p;
    p.name = s.name;
    p.index = static_cast<int>(params.size());
    p.is_bias = s.bias;
    p.offset = at;
    p.count = s.rows * s.cols;
    p.rows = s.rows;
    p.cols = s.cols;
    at += p.count;
    params.push_back(p);
  }
  return params;
}

// Part 1 on this rank: "" when it passed.
std::string grade_compressor(comm::Communicator& comm) {
  const std::vector<model::ParamInfo> params = part1_params();
  const std::int64_t count = params.back().offset + params.back().count;
  auto ops = kernels::make_cpu_ops(1);
  const struct {
    std::int64_t rank;
    bool error_feedback;
    int steps;
  } cases[] = {{2, true, 3}, {3, false, 2}};
  for (const auto& cs : cases) {
    ddp::GradCompressionConfig cfg;
    cfg.powersgd_rank = cs.rank;
    cfg.error_feedback = cs.error_feedback;
    std::vector<float> g_ours(static_cast<std::size_t>(count)), g_yours(static_cast<std::size_t>(count));
    cfg.mode = ddp::CompressionMode::PowerSgd;
    auto ours = ddp::make_grad_compressor(cfg, 7, comm, *ops, params, core::TensorView::of(g_ours.data(), count));
    cfg.mode = labs::lab_powersgd_mode();
    auto yours_owner =
        ddp::make_grad_compressor(cfg, 7, comm, *ops, params, core::TensorView::of(g_yours.data(), count));
    auto& yours = dynamic_cast<labs::LabPowerSgdCompressor&>(*yours_owner);
    for (ddp::GradCompressor* c : {ours.get(), yours_owner.get()}) {
      c->add_unit(0, params[3].offset, 0, 3);
      c->add_unit(params[3].offset, count - params[3].offset, 3, 5);
    }
    char where[96];
    std::snprintf(where, sizeof where, "part 1 (rank %lld, error feedback %s)", static_cast<long long>(cs.rank),
                  cs.error_feedback ? "on" : "off");
    std::vector<float> m_inputs;
    for (int step = 0; step < cs.steps; ++step) {
      // This rank's gradient of this step: fresh normal values, different on every rank.
      for (std::int64_t e = 0; e < count; ++e) {
        g_ours[static_cast<std::size_t>(e)] = core::normal01(11, 100 + static_cast<std::uint64_t>(comm.rank()),
                                                             static_cast<std::uint64_t>(step * count + e));
      }
      g_yours = g_ours;
      m_inputs.clear();
      if (cs.error_feedback) {  // M = G + E, with production's E (yours equals it, or an earlier step failed)
        const std::vector<ddp::CompressorState> st = ours->state();
        m_inputs = g_ours;
        for (std::int64_t e = 0; e < count; ++e) m_inputs[static_cast<std::size_t>(e)] += st[1].data[e];
      }
      for (ddp::GradCompressor* c : {ours.get(), yours_owner.get()}) {
        c->begin_step(step);
        for (int u = 0; u < 2; ++u) {
          c->start(u, comm::Mode::Sync).wait();
          c->finish(u);
        }
      }
      const std::string failure =
          compare(where, step, outputs(*ours, g_ours), outputs(yours, g_yours), yours, params, m_inputs, comm.size());
      if (!failure.empty()) return failure;
    }
  }
  return "";
}

// Part 2's run.
ddp::TrainConfig config(ddp::CompressionMode mode) {
  ddp::TrainConfig c;
  c.model = model::MlpConfig{16, 24, 2, 4};
  c.optimizer.name = "sgd";
  c.optimizer.lr = 0.1f;
  c.global_batch = 13;
  c.steps = kTrainSteps;
  c.seed = 5;
  c.strategy = ddp::Strategy::Bucketed;
  c.compression.mode = mode;
  c.compression.powersgd_rank = 2;
  c.compression.powersgd_start_step = 1;
  return c;
}

// Part 2 on this rank: "" when it passed.
std::string grade_training(comm::Communicator& comm) {
  const ddp::CompressionMode lab_mode = labs::lab_powersgd_mode();
  // After every step: the gradient the optimizer received and the state; the parameters.
  std::vector<Outputs> ours_after;
  std::vector<std::vector<float>> ours_params;
  const labs::grading::TrainRun ours =
      labs::grading::train(config(ddp::CompressionMode::PowerSgd), comm, [&](const ddp::Trainer& t, std::int64_t) {
        const auto& m = t.model();
        ours_after.push_back(
            outputs(*t.sync().compressor(), std::vector<float>(m.grad_data(), m.grad_data() + m.flat_count())));
        ours_params.emplace_back(m.param_data(), m.param_data() + m.flat_count());
      });
  std::string failure;  // the first step that differs
  labs::grading::TrainRun yours;
  try {
    yours = labs::grading::train(config(lab_mode), comm, [&](const ddp::Trainer& t, std::int64_t s) {
      if (!failure.empty()) return;
      const auto& m = t.model();
      ddp::GradCompressor& c = *t.sync().compressor();
      const auto& lab = dynamic_cast<const labs::LabPowerSgdCompressor&>(c);
      const auto step = static_cast<std::size_t>(s);
      failure = compare("inside the trainer", s, ours_after[step],
                        outputs(c, std::vector<float>(m.grad_data(), m.grad_data() + m.flat_count())), lab, m.params(),
                        {}, comm.size(), s >= config(lab_mode).compression.powersgd_start_step);
      if (!failure.empty()) return;
      for (const auto& p : m.params()) {
        double scale = 0;
        const std::int64_t i =
            first_off(ours_params[step].data() + p.offset, m.param_data() + p.offset, p.count, &scale);
        if (i < 0) continue;
        std::ostringstream os;
        os << "inside the trainer, after SGD step " << s + 1 << ": parameter " << p.name << " element " << i
           << ": production " << ours_params[step][static_cast<std::size_t>(p.offset + i)] << ", yours "
           << m.param_data()[p.offset + i];
        failure = os.str();
        return;
      }
    });
  } catch (const std::exception& e) {
    return std::string("training with --grad-compression lab-powersgd threw: ") + e.what();
  }
  if (!failure.empty()) return failure;
  for (std::size_t s = 0; s < ours.losses.size(); ++s) {
    if (std::fabs(ours.losses[s] - yours.losses[s]) > 1e-5 * std::fabs(ours.losses[s])) {
      std::ostringstream os;
      os << "inside the trainer, step " << s + 1 << ": loss " << ours.losses[s] << " with powersgd, " << yours.losses[s]
         << " with yours";
      return os.str();
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  return labs::grading::run_trainer_grader(
      argc, argv, kLab, " (a hang here: ranks made different collectives)",
      {{grade_compressor, false, nullptr}, {grade_training, false, "training with --grad-compression (part 2)"}},
      std::string("lab ") + kLab + ": the decoded gradient, Q and the residual equal to production PowerSGD's to " +
          "1e-4 of each matrix's largest element on every rank, step after step, alone and inside the trainer");
}
