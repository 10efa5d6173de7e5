// collectives.cpp — the collective algorithms and the execution of a fused operation (operation.hpp).
//
// Every collective is one or two steps of run_step() (transfer.hpp) plus local arithmetic between them.
// Bandwidth is not the goal (the emulator runs a CI cluster on a few cores); what matters is that every
// rank gets bitwise identical results, that each block is reduced in rank order exactly once, that
// memory stays O(buffer) per rank at any rank count, and that a desynchronisation is detected.
#include <algorithm>
#include <cstring>

#include "operation.hpp"
#include "reduce.hpp"
#include "transfer.hpp"
#include "types.hpp"
#include "wire.hpp"

namespace cuda_emu::nccl {

namespace {

struct Block {
  std::size_t offset;  // elements
  std::size_t count;
};

// Block b of `count` elements split over n ranks: the first count % n blocks one element longer.
Block even_block(std::size_t count, int n, int b) {
  const auto nn = static_cast<std::size_t>(n), ub = static_cast<std::size_t>(b);
  const std::size_t base = count / nn, extra = count % nn;
  return {ub * base + std::min(ub, extra), base + (ub < extra ? 1 : 0)};
}

OpKind kind_of(CallType t) {
  switch (t) {
    case CallType::AllReduce:
      return OpKind::AllReduce;
    case CallType::ReduceScatter:
      return OpKind::ReduceScatter;
    case CallType::AllGather:
      return OpKind::AllGather;
    case CallType::Broadcast:
      return OpKind::Broadcast;
    case CallType::Reduce:
      return OpKind::Reduce;
    case CallType::Send:
    case CallType::Recv:
      break;
  }
  return OpKind::P2P;
}

// The header rank `from` puts on its step-`step` message of call `c` (the same call on every rank).
Header header_for(const Call& c, int step, int from, std::size_t payload_bytes) {
  const OpKind kind = kind_of(c.type);
  Header h;
  h.kind = static_cast<std::uint8_t>(kind);
  h.step = static_cast<std::uint8_t>(step);
  h.dtype = static_cast<std::uint8_t>(c.dtype);
  const bool reduces = kind == OpKind::AllReduce || kind == OpKind::ReduceScatter || kind == OpKind::Reduce;
  h.op = reduces ? static_cast<std::uint8_t>(c.op) : 0;
  h.root = kind == OpKind::Broadcast || kind == OpKind::Reduce ? c.root : -1;
  h.from = from;
  h.seq = c.seq;
  h.count = c.count;
  h.payload_bytes = payload_bytes;
  return h;
}

const char* at(const void* base, std::size_t elements, std::size_t element_bytes) {
  return static_cast<const char*>(base) + elements * element_bytes;
}
char* at(void* base, std::size_t elements, std::size_t element_bytes) {
  return static_cast<char*>(base) + elements * element_bytes;
}

void copy_if_different(void* to, const void* from, std::size_t bytes) {
  if (bytes > 0 && to != from) std::memmove(to, from, bytes);
}

// Step 1 of the reducing collectives: block_of(q) of this rank's input goes to rank q, and this rank's
// own block is reduced from every rank's contribution, in rank order, into `out`.
template <typename BlockOf>
Status reduce_to_owners(Comm& comm, const Call& c, BlockOf block_of, void* out) {
  const int n = comm.size(), r = comm.rank();
  const std::size_t es = dtype_bytes(c.dtype);
  const Block mine = block_of(r);
  const std::size_t mine_bytes = mine.count * es;
  std::byte* contributions = comm.scratch(static_cast<std::size_t>(n - 1) * mine_bytes);
  std::vector<SendMessage> sends;
  std::vector<RecvMessage> recvs;
  std::vector<const void*> inputs(static_cast<std::size_t>(n));
  std::size_t slot = 0;
  for (int q = 0; q < n; ++q) {
    if (q == r) {
      inputs[static_cast<std::size_t>(q)] = at(c.send, mine.offset, es);
      continue;
    }
    const Block b = block_of(q);
    sends.push_back({q, header_for(c, 1, r, b.count * es), at(c.send, b.offset, es), b.count * es});
    void* into = contributions + slot++ * mine_bytes;
    recvs.push_back({q, header_for(c, 1, q, mine_bytes), into, mine_bytes});
    inputs[static_cast<std::size_t>(q)] = into;
  }
  if (Status st = run_step(comm, sends, recvs); !st.ok()) return st;
  reduce_in_order(out, inputs.data(), n, mine.count, c.dtype, c.op);
  return success();
}

Status all_reduce(Comm& comm, const Call& c) {
  const int n = comm.size(), r = comm.rank();
  const std::size_t es = dtype_bytes(c.dtype);
  if (n == 1) {
    copy_if_different(c.recv, c.send, c.count * es);
    return success();
  }
  auto block_of = [&](int q) { return even_block(c.count, n, q); };
  const Block mine = block_of(r);
  if (Status st = reduce_to_owners(comm, c, block_of, at(c.recv, mine.offset, es)); !st.ok()) return st;
  std::vector<SendMessage> sends;
  std::vector<RecvMessage> recvs;
  for (int q = 0; q < n; ++q) {
    if (q == r) continue;
    const Block b = block_of(q);
    sends.push_back({q, header_for(c, 2, r, mine.count * es), at(c.recv, mine.offset, es), mine.count * es});
    recvs.push_back({q, header_for(c, 2, q, b.count * es), at(c.recv, b.offset, es), b.count * es});
  }
  return run_step(comm, sends, recvs);
}

Status reduce(Comm& comm, const Call& c) {
  const int n = comm.size(), r = comm.rank();
  const std::size_t es = dtype_bytes(c.dtype);
  if (n == 1) {
    copy_if_different(c.recv, c.send, c.count * es);
    return success();
  }
  auto block_of = [&](int q) { return even_block(c.count, n, q); };
  const Block mine = block_of(r);
  const std::size_t mine_bytes = mine.count * es;
  // Off the root, the reduced block lives in scratch after the contributions (recvbuff may be null).
  void* out = r == c.root ? static_cast<void*>(at(c.recv, mine.offset, es))
                          : static_cast<void*>(comm.scratch(static_cast<std::size_t>(n) * mine_bytes) +
                                               static_cast<std::size_t>(n - 1) * mine_bytes);
  if (Status st = reduce_to_owners(comm, c, block_of, out); !st.ok()) return st;
  std::vector<SendMessage> sends;
  std::vector<RecvMessage> recvs;
  if (r != c.root) {
    sends.push_back({c.root, header_for(c, 2, r, mine_bytes), out, mine_bytes});
  } else {
    for (int q = 0; q < n; ++q) {
      if (q == r) continue;
      const Block b = block_of(q);
      recvs.push_back({q, header_for(c, 2, q, b.count * es), at(c.recv, b.offset, es), b.count * es});
    }
  }
  return run_step(comm, sends, recvs);
}

Status reduce_scatter(Comm& comm, const Call& c) {
  const std::size_t es = dtype_bytes(c.dtype);
  if (comm.size() == 1) {
    copy_if_different(c.recv, c.send, c.count * es);
    return success();
  }
  auto block_of = [&](int q) { return Block{static_cast<std::size_t>(q) * c.count, c.count}; };
  return reduce_to_owners(comm, c, block_of, c.recv);
}

Status all_gather(Comm& comm, const Call& c) {
  const int n = comm.size(), r = comm.rank();
  const std::size_t es = dtype_bytes(c.dtype), bytes = c.count * es;
  std::vector<SendMessage> sends;
  std::vector<RecvMessage> recvs;
  for (int q = 0; q < n; ++q) {
    if (q == r) continue;
    sends.push_back({q, header_for(c, 1, r, bytes), c.send, bytes});
    recvs.push_back({q, header_for(c, 1, q, bytes), at(c.recv, static_cast<std::size_t>(q) * c.count, es), bytes});
  }
  if (Status st = run_step(comm, sends, recvs); !st.ok()) return st;
  // After the step: the send buffer must stay intact while it is being sent.
  copy_if_different(at(c.recv, static_cast<std::size_t>(r) * c.count, es), c.send, bytes);
  return success();
}

Status broadcast(Comm& comm, const Call& c) {
  const int n = comm.size(), r = comm.rank();
  const std::size_t bytes = c.count * dtype_bytes(c.dtype);
  std::vector<SendMessage> sends;
  std::vector<RecvMessage> recvs;
  for (int q = 0; q < n; ++q) {
    if (q == r) continue;
    // Non-roots send an empty message to everyone so that every rank checks every rank's header.
    if (r == c.root) {
      sends.push_back({q, header_for(c, 1, r, bytes), c.send, bytes});
    } else {
      sends.push_back({q, header_for(c, 1, r, 0), nullptr, 0});
    }
    if (q == c.root) {
      recvs.push_back({q, header_for(c, 1, q, bytes), c.recv, bytes});
    } else {
      recvs.push_back({q, header_for(c, 1, q, 0), nullptr, 0});
    }
  }
  if (Status st = run_step(comm, sends, recvs); !st.ok()) return st;
  if (r == c.root) copy_if_different(c.recv, c.send, bytes);
  return success();
}

Status point_to_point(Comm& comm, const std::vector<Call>& calls) {
  std::vector<SendMessage> sends;
  std::vector<RecvMessage> recvs;
  for (const Call& c : calls) {
    const std::size_t bytes = c.count * dtype_bytes(c.dtype);
    if (c.type == CallType::Send) {
      sends.push_back({c.peer, header_for(c, 0, comm.rank(), bytes), c.send, bytes});
    } else if (c.type == CallType::Recv) {
      recvs.push_back({c.peer, header_for(c, 0, c.peer, bytes), c.recv, bytes});
    }
  }
  if (sends.empty() && recvs.empty()) return success();
  return run_step(comm, sends, recvs);
}

}  // namespace

const char* call_name(CallType type) {
  switch (type) {
    case CallType::AllReduce:
      return "ncclAllReduce";
    case CallType::ReduceScatter:
      return "ncclReduceScatter";
    case CallType::AllGather:
      return "ncclAllGather";
    case CallType::Broadcast:
      return "ncclBroadcast";
    case CallType::Reduce:
      return "ncclReduce";
    case CallType::Send:
      return "ncclSend";
    case CallType::Recv:
      return "ncclRecv";
  }
  return "nccl?";
}

bool is_p2p(CallType type) { return type == CallType::Send || type == CallType::Recv; }

Status execute(Comm& comm, const std::vector<Call>& calls) {
  for (const Call& c : calls) {
    Status st;
    switch (c.type) {
      case CallType::AllReduce:
        st = all_reduce(comm, c);
        break;
      case CallType::ReduceScatter:
        st = reduce_scatter(comm, c);
        break;
      case CallType::AllGather:
        st = all_gather(comm, c);
        break;
      case CallType::Broadcast:
        st = broadcast(comm, c);
        break;
      case CallType::Reduce:
        st = reduce(comm, c);
        break;
      case CallType::Send:
      case CallType::Recv:
        continue;  // below, all together
    }
    if (!st.ok()) return st;
  }
  return point_to_point(comm, calls);
}

}  // namespace cuda_emu::nccl
