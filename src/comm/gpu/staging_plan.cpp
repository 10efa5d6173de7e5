// staging_plan.cpp — see staging_plan.hpp.
#include "comm/gpu/staging_plan.hpp"

#include "comm/gpu/device_staging.hpp"

#include <algorithm>

namespace microddp::comm {

bool collective_uses_send(const CollectiveCall& c, int rank) {
  switch (c.kind) {
    case CollectiveKind::Barrier:
    case CollectiveKind::Broadcast:
      return false;  // broadcast: recv is the buffer on every rank
    case CollectiveKind::Scatter:
      return rank == c.root;
    default:
      return true;
  }
}

bool collective_uses_recv(const CollectiveCall& c, int rank) {
  switch (c.kind) {
    case CollectiveKind::Barrier:
      return false;
    case CollectiveKind::Gather:
      return rank == c.root;
    default:
      return true;
  }
}

bool uses_device_buffers(const CollectiveCall& call, int rank) {
  return (collective_uses_send(call, rank) && call.send.count > 0 && call.send.device == core::Device::Cuda) ||
         (collective_uses_recv(call, rank) && call.recv.count > 0 && call.recv.device == core::Device::Cuda);
}

StagingPlan plan_staging(const CollectiveCall& call, int rank) {
  StagingPlan p;
  const bool s = collective_uses_send(call, rank) && call.send.count > 0;
  const bool r = collective_uses_recv(call, rank) && call.recv.count > 0;
  char* sb = static_cast<char*>(call.send.data);
  char* rb = static_cast<char*>(call.recv.data);
  const std::int64_t sn = s ? call.send.bytes() : 0, rn = r ? call.recv.bytes() : 0;
  if (s && r && sb < rb + rn && rb < sb + sn) {
    char* lo = std::min(sb, rb);
    char* hi = std::max(sb + sn, rb + rn);
    p.regions[0] = {lo, hi - lo, true};
    p.region_count = 1;
    p.send = {0, sb - lo};
    p.recv = {0, rb - lo};
  } else {
    if (s) {
      p.regions[p.region_count] = {sb, sn, true};
      p.send = {p.region_count++, 0};
    }
    if (r) {
      p.regions[p.region_count] = {rb, rn, call.kind == CollectiveKind::Broadcast};
      p.recv = {p.region_count++, 0};
    }
  }
  p.copy_out = r;
  return p;
}

CollectiveCall staged_call(const CollectiveCall& call, const StagingPlan& plan, char* const stage_base[2],
                           core::Device staged_device) {
  CollectiveCall c = call;
  if (plan.send.region >= 0) {
    c.send.data = stage_base[plan.send.region] + plan.send.offset_bytes;
    c.send.device = staged_device;
  }
  if (plan.recv.region >= 0) {
    c.recv.data = stage_base[plan.recv.region] + plan.recv.offset_bytes;
    c.recv.device = staged_device;
  }
  return c;
}

}  // namespace microddp::comm
