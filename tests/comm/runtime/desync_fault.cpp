// desync_fault.cpp — fault program for the desync tests (desync.sh): the last rank issues a
// different collective sequence than the others. Without desync detection each fault either hangs
// (caught only by the watchdog, named after the wrong collective) or, with point-to-point backends,
// completes with wrong data; with it the job must end with a report naming every rank's collective.
// Usage: desync_fault BACKEND FAULT CHECK [TIMEOUT_S]
//   FAULT  none        no fault (must finish, exit 0: no false alarm)
//          skip        the last rank skips an all_reduce (count 1000) the others issue
//          count       the last rank's all_reduce has count 999 instead of 1000
//          root        the last rank's broadcast has root 1 instead of 0 (np >= 2)
//          op          the last rank's all_reduce uses max instead of sum
//          skip-empty  the last rank skips an all_reduce of count 0 (moves no data on any backend,
//                      so nothing hangs: only the sequence numbers differ)
//   CHECK  debug       --debug-sync: every collective's fingerprint is compared before it runs
//          periodic    only Communicator::check_sync() after the faulty part (the trainer's
//                      --sync-check-every), no per-collective exchange
//          off         neither (shows what happens without detection)
//   TIMEOUT_S  --comm-timeout (default 60: a backstop, the tests expect no timeout)
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "comm/factory.hpp"
#include "comm/runtime/mpi_runtime.hpp"

int main(int argc, char** argv) {
  using namespace microddp;
  try {
    comm::MpiRuntime mpi(&argc, &argv);
    if (argc < 4 || argc > 5) {
      std::fprintf(stderr, "usage: %s BACKEND none|skip|count|root|op|skip-empty debug|periodic|off [TIMEOUT_S]\n",
                   argv[0]);
      return 2;
    }
    const std::string fault = argv[2], check = argv[3];
    auto c = comm::make_communicator(argv[1], mpi);
    c->set_comm_timeout(argc == 5 ? std::atof(argv[4]) : 60.0);
    if (check == "debug") c->set_debug_sync(true);
    const bool faulty = mpi.rank() == mpi.size() - 1 && fault != "none";
    std::vector<float> x(1000, 1.0f);
    auto v = [&](std::int64_t n) { return core::TensorView::of(x.data(), n); };

    c->all_reduce(v(1000), comm::ReduceOp::Sum);                        // seq 1: everyone, fine
    if (check == "periodic") c->check_sync("sync check after set-up");  // passes
    // seq 2: the faulty collective.
    if (fault == "skip" || fault == "none" || fault == "count" || fault == "op") {
      if (!(faulty && fault == "skip")) {
        c->all_reduce(v(faulty && fault == "count" ? 999 : 1000),
                      faulty && fault == "op" ? comm::ReduceOp::Max : comm::ReduceOp::Sum);
      }
    } else if (fault == "root") {
      c->broadcast(v(1000), faulty ? 1 : 0);
    } else if (fault == "skip-empty") {
      if (!faulty) c->all_reduce(v(0), comm::ReduceOp::Sum);
    } else {
      std::fprintf(stderr, "unknown fault '%s'\n", fault.c_str());
      return 2;
    }
    if (check == "periodic") {
      c->check_sync("sync check at", 100);
    } else {
      c->barrier();
    }
    std::printf("rank %d: no desync detected\n", mpi.rank());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    std::fflush(stderr);
    comm::MpiRuntime::abort_all(1);
  }
}
