// ring_schedule_command.cpp — `microddp ring-schedule`: the ring all-reduce's schedule as the ring
// runs it: for every step of reduce-scatter and all-gather, which block each rank sends to its right
// neighbour and which it receives from its left, and where each block lies in a buffer of --count
// elements. The rows come from the functions the CPU and GPU rings call (comm/algorithms/ring_schedule.hpp,
// comm/algorithms/ring_layout.hpp), so the printed table and the figure drawn from --json
// (docs/tools/figures.py, docs/img/ring_schedule.png) cannot drift from the code.
// Pure arithmetic: rank 0 prints, the other ranks (if any) do nothing.
#include <cstdio>
#include <memory>
#include <string>

#include "app/command.hpp"
#include "comm/algorithms/ring_layout.hpp"
#include "comm/algorithms/ring_schedule.hpp"
#include "core/error.hpp"

namespace microddp::app {

namespace {

class RingScheduleCommand final : public Command {
 public:
  explicit RingScheduleCommand(CLI::App* sub) {
    sub->add_option("--ranks", ranks_, "Ranks in the ring")->check(CLI::Range(1, 64))->capture_default_str();
    sub->add_option("--count", count_, "Elements in the buffer (default: 4 per rank)")
        ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
    sub->add_option("--json", json_path_, "Also write the schedule as JSON (docs/tools/figures.py draws it)");
  }

  int run(const comm::MpiRuntime& mpi) override {
    if (mpi.rank() != 0) return 0;
    const int n = ranks_;
    const std::int64_t count = count_ >= 0 ? count_ : std::int64_t{4} * n;
    std::printf("# ring all-reduce schedule: %d rank(s), %lld element(s) cut into %d block(s)\n", n,
                static_cast<long long>(count), n);
    std::printf("# (comm/algorithms/ring_schedule.hpp; rank r sends to r+1 and receives from r-1, modulo %d)\n", n);
    for (int b = 0; b < n; ++b) {
      const comm::IndexRange range = comm::even_part(count, n, b);
      std::printf("# block %d: elements [%lld, %lld)\n", b, static_cast<long long>(range.begin),
                  static_cast<long long>(range.begin + range.count));
    }
    std::printf("%-15s %4s %4s %10s %4s %10s %4s  %s\n", "phase", "step", "rank", "send_block", "to", "recv_block",
                "from", "then");
    std::string json = "{\n  \"type\": \"microddp_ring_schedule\",\n  \"ranks\": " + std::to_string(n) +
                       ",\n  \"count\": " + std::to_string(count) + ",\n  \"blocks\": [";
    for (int b = 0; b < n; ++b) {
      const comm::IndexRange range = comm::even_part(count, n, b);
      json += (b ? ", " : "") + std::string("{\"begin\": ") + std::to_string(range.begin) +
              ", \"count\": " + std::to_string(range.count) + "}";
    }
    json += "],\n  \"steps\": [";
    bool first = true;
    for (const bool gather : {false, true}) {
      const char* phase = gather ? "all_gather" : "reduce_scatter";
      for (int s = 0; s + 1 < n; ++s) {
        for (int r = 0; r < n; ++r) {
          const int send = gather ? comm::ag_send_block(r, n, s) : comm::rs_send_block(r, n, s);
          const int recv = gather ? comm::ag_recv_block(r, n, s) : comm::rs_recv_block(r, n, s);
          const int to = comm::ring_mod(r + 1, n), from = comm::ring_mod(r - 1, n);
          std::printf("%-15s %4d %4d %10d %4d %10d %4d  %s\n", phase, s, r, send, to, recv, from,
                      gather ? "copy into place" : "add to own copy");
          json += std::string(first ? "\n" : ",\n") + "    {\"phase\": \"" + phase + "\", \"step\": " +
                  std::to_string(s) + ", \"rank\": " + std::to_string(r) + ", \"send_block\": " +
                  std::to_string(send) + ", \"to\": " + std::to_string(to) + ", \"recv_block\": " +
                  std::to_string(recv) + ", \"from\": " + std::to_string(from) + "}";
          first = false;
        }
      }
    }
    json += "\n  ]\n}\n";
    if (!json_path_.empty()) {
      std::FILE* f = std::fopen(json_path_.c_str(), "w");
      if (f == nullptr) throw core::UsageError("ring-schedule: cannot write --json " + json_path_);
      const bool ok = std::fputs(json.c_str(), f) >= 0;
      if (std::fclose(f) != 0 || !ok) throw core::UsageError("ring-schedule: cannot write --json " + json_path_);
    }
    return 0;
  }

 private:
  int ranks_ = 4;
  std::int64_t count_ = -1;
  std::string json_path_;
};

}  // namespace

std::unique_ptr<Command> register_ring_schedule(CLI::App& parent, CLI::App*& sub) {
  sub = parent.add_subcommand("ring-schedule",
                              "The ring all-reduce's schedule: which block each rank sends and receives at every step");
  return std::make_unique<RingScheduleCommand>(sub);
}

}  // namespace microddp::app
