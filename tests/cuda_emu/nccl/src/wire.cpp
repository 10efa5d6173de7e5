// wire.cpp — header descriptions and checks (wire.hpp).
#include "wire.hpp"

#include "status.hpp"
#include "types.hpp"

namespace cuda_emu::nccl {

const char* kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::AllReduce:
      return "all-reduce";
    case OpKind::ReduceScatter:
      return "reduce-scatter";
    case OpKind::AllGather:
      return "all-gather";
    case OpKind::Broadcast:
      return "broadcast";
    case OpKind::Reduce:
      return "reduce";
    case OpKind::P2P:
      return "point-to-point message";
  }
  return "unknown operation";
}

std::string describe(const Header& h) {
  const auto kind = static_cast<OpKind>(h.kind);
  std::string s =
      cat(kind_name(kind), " #", h.seq, " (count ", h.count, ", ", dtype_name(static_cast<ncclDataType_t>(h.dtype)));
  const bool reduces = kind == OpKind::AllReduce || kind == OpKind::ReduceScatter || kind == OpKind::Reduce;
  if (reduces) s += cat(", ", op_name(static_cast<ncclRedOp_t>(h.op)));
  if (kind == OpKind::Broadcast || kind == OpKind::Reduce) s += cat(", root ", h.root);
  return s + ")";
}

std::string mismatch(const Header& expected, const Header& got, int me, int peer) {
  if (got.magic != kHeaderMagic) {
    return cat("rank ", me, " received a corrupt message header from rank ", peer, " (bad magic 0x", std::hex,
               got.magic, ") while in ", describe(expected));
  }
  const bool same = got.kind == expected.kind && got.seq == expected.seq && got.count == expected.count &&
                    got.dtype == expected.dtype && got.op == expected.op && got.root == expected.root &&
                    got.step == expected.step && got.payload_bytes == expected.payload_bytes && got.from == peer;
  if (same) return {};
  std::string why = cat("operation mismatch between rank ", me, " and rank ", peer, ": rank ", me, " is in ",
                        describe(expected), " and expects ", expected.payload_bytes, " bytes from rank ", peer,
                        ", but rank ", peer, " sent ", describe(got), " with ", got.payload_bytes, " bytes");
  if (got.step != expected.step) why += cat(" (step ", got.step, " vs ", expected.step, ")");
  return why + ": the ranks issued different operations (desynchronised)";
}

}  // namespace cuda_emu::nccl
