// Lab 10 — PowerSGD with error feedback.
// Read docs/labs/10-powersgd/README.md first. Build: cmake --build build --target lab_grade_powersgd microddp;
// grade: ctest --test-dir build -L lab -R powersgd (after configuring with -DMICRODDP_LAB_GRADERS=ON).
#include <cstdint>

#include "labs/lab_api.hpp"

namespace microddp::labs {

// One PowerSGD step of one weight matrix (LabMatrix in src/labs/lab_api.hpp; every matrix row-major,
// r = m.rank):
//   M = G + E with error feedback (m.residual set), else M = G      (rows, cols)
//   P = M Q, all-reduced, then orthonormalised                       (rows, r)
//   Q = M^T P, then this rank's new error E = M - P Q^T              (cols, r)
//   Q all-reduced; the decoded gradient G = P Q^T                    (rows, cols)
// On return m.grad holds the decoded gradient (the approximation of the SUM over ranks: nothing to
// divide), m.q the all-reduced Q (next step's warm start) and m.residual this rank's new error.
// What you may call: ctx.all_reduce_sum(data, count) on m.p or m.q, ctx.orthonormalize(m.p, rows, r).
void powersgd_step(PowerSgdContext& ctx, const LabMatrix& m) {
  // TODO(lab 10): write the step here, then delete the next line.
  lab_todo("10-powersgd", "powersgd_step", "docs/labs/10-powersgd/powersgd.cpp");
  (void)ctx;
  (void)m;
}

}  // namespace microddp::labs
