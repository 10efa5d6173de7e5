// cluster_probe.cpp — what an MPI job sees of the emulated cluster (tests/cluster/cluster.sh):
// which ranks share a node, and how bytes travel between two ranks on one host and on two hosts.
//
// Usage: cluster_probe [--mib N] [--chunk-kib K] [--pingpongs P]
//
// Output (rank 0; every line a fixed "key value" layout the tests parse):
//   rank R host H node_leader L node_size S     one line per rank: its hostname (gethostname) and
//                                               its MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) group
//                                               (L = that group's lowest world rank)
//   grouping ok|mismatch                        ok: two ranks share a node-local communicator
//                                               exactly when they share a hostname
//   transfer same_host=1|0 peer P bytes B seconds T mbytes_per_s M gbit_per_s G link_bytes E lo_bytes O
//                                               rank 0 streams B bytes to P (K-KiB messages, one
//                                               short reply at the end); E and O: bytes counted by
//                                               rank 0's network namespace on its non-loopback
//                                               interfaces and on lo (rx + tx, /proc/net/dev) while
//                                               it ran. Shared memory moves no bytes through either.
//   latency same_host=1|0 peer P half_rtt_us U  P 8-byte ping-pongs
// Exit: 0, 1 when the grouping mismatches, 2 on bad arguments.
//
// Why counters and not only timing: the counters show *which path* the bytes took (shared memory,
// loopback TCP, or the shaped link) whatever the machine's load; the timing shows the shaper.
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct NetBytes {
  unsigned long long link = 0;  // every interface but lo
  unsigned long long lo = 0;
};

// /proc/net/dev shows the devices of the reading process's network namespace (unlike /sys/class/net,
// which shows those of the namespace that mounted sysfs).
NetBytes read_net_bytes() {
  NetBytes b;
  std::ifstream f("/proc/net/dev");
  std::string line;
  while (std::getline(f, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;  // the two header lines
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    std::istringstream fields(line.substr(colon + 1));
    unsigned long long v[16] = {};
    for (auto& x : v) fields >> x;
    const unsigned long long rx_tx = v[0] + v[8];  // receive bytes, transmit bytes
    (name == "lo" ? b.lo : b.link) += rx_tx;
  }
  return b;
}

long arg_value(int argc, char** argv, const char* name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) {
      char* end = nullptr;
      const long v = std::strtol(argv[i + 1], &end, 10);
      if (*end != '\0' || v <= 0) {
        std::fprintf(stderr, "cluster_probe: %s needs a positive integer, got '%s'\n", name, argv[i + 1]);
        std::exit(2);
      }
      return v;
    }
  }
  return fallback;
}

// Rank 0 streams `bytes` to `peer` in `chunk`-byte messages; the peer answers once at the end, so
// the time covers delivery of the last byte.
void transfer(int rank, int peer, bool same_host, long bytes, long chunk) {
  std::vector<char> buf(static_cast<size_t>(chunk), 'x');
  const long messages = (bytes + chunk - 1) / chunk;
  char ack = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const NetBytes before = read_net_bytes();
  const double t0 = MPI_Wtime();
  if (rank == 0) {
    for (long m = 0; m < messages; ++m)
      MPI_Send(buf.data(), static_cast<int>(chunk), MPI_CHAR, peer, 1, MPI_COMM_WORLD);
    MPI_Recv(&ack, 1, MPI_CHAR, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (rank == peer) {
    for (long m = 0; m < messages; ++m)
      MPI_Recv(buf.data(), static_cast<int>(chunk), MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(&ack, 1, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
  }
  const double t = MPI_Wtime() - t0;
  const NetBytes after = read_net_bytes();
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    const double total = static_cast<double>(messages * chunk);
    std::printf(
        "transfer same_host=%d peer %d bytes %.0f seconds %.4f mbytes_per_s %.1f gbit_per_s %.3f link_bytes %llu "
        "lo_bytes %llu\n",
        same_host ? 1 : 0, peer, total, t, total / t / 1e6, total * 8 / t / 1e9, after.link - before.link,
        after.lo - before.lo);
  }
}

void latency(int rank, int peer, bool same_host, long pingpongs) {
  char b[8] = {};
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (long i = 0; i < pingpongs; ++i) {
    if (rank == 0) {
      MPI_Send(b, 8, MPI_CHAR, peer, 3, MPI_COMM_WORLD);
      MPI_Recv(b, 8, MPI_CHAR, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == peer) {
      MPI_Recv(b, 8, MPI_CHAR, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(b, 8, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
    }
  }
  const double t = MPI_Wtime() - t0;
  if (rank == 0)
    std::printf("latency same_host=%d peer %d half_rtt_us %.1f\n", same_host ? 1 : 0, peer,
                t / static_cast<double>(pingpongs) / 2 * 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long mib = arg_value(argc, argv, "--mib", 16);
  const long chunk = arg_value(argc, argv, "--chunk-kib", 1024) * 1024;
  const long pingpongs = arg_value(argc, argv, "--pingpongs", 1000);

  char host[256] = {};
  gethostname(host, sizeof host - 1);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int node_size = 0, leader = rank;
  MPI_Comm_size(node, &node_size);
  MPI_Allreduce(&rank, &leader, 1, MPI_INT, MPI_MIN, node);

  std::vector<char> hosts(static_cast<size_t>(size) * sizeof host);
  std::vector<int> leaders(static_cast<size_t>(size)), sizes(static_cast<size_t>(size));
  MPI_Gather(host, sizeof host, MPI_CHAR, hosts.data(), sizeof host, MPI_CHAR, 0, MPI_COMM_WORLD);
  MPI_Gather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Gather(&node_size, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);

  // Rank 0 picks its peers: the next rank on its own host, the first rank on another host.
  int peers[2] = {-1, -1};  // same host, other host
  int grouping_ok = 1;
  if (rank == 0) {
    auto host_of = [&](int r) { return std::string(&hosts[static_cast<size_t>(r) * sizeof host]); };
    for (int r = 0; r < size; ++r) {
      std::printf("rank %d host %s node_leader %d node_size %d\n", r, host_of(r).c_str(), leaders[r], sizes[r]);
      for (int q = 0; q < size; ++q) {
        if ((host_of(r) == host_of(q)) != (leaders[r] == leaders[q])) grouping_ok = 0;
      }
      if (r > 0 && peers[0] < 0 && host_of(r) == host_of(0)) peers[0] = r;
      if (peers[1] < 0 && host_of(r) != host_of(0)) peers[1] = r;
    }
    std::printf("grouping %s\n", grouping_ok ? "ok" : "mismatch");
  }
  MPI_Bcast(peers, 2, MPI_INT, 0, MPI_COMM_WORLD);
  for (int k = 0; k < 2; ++k) {
    if (peers[k] < 0) continue;
    latency(rank, peers[k], k == 0, pingpongs);
    transfer(rank, peers[k], k == 0, mib << 20, chunk);
  }
  std::fflush(stdout);
  MPI_Bcast(&grouping_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Comm_free(&node);
  MPI_Finalize();
  return grouping_ok ? 0 : 1;
}
