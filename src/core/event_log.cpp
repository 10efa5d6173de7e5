// event_log.cpp — names of event kinds (used by traces and reports).
#include "core/event_log.hpp"

namespace microddp::core {

std::string_view event_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::Step:
      return "step";
    case EventKind::Data:
      return "data";
    case EventKind::Forward:
      return "forward";
    case EventKind::Backward:
      return "backward";
    case EventKind::LayerForward:
      return "layer_forward";
    case EventKind::LayerBackward:
      return "layer_backward";
    case EventKind::Collective:
      return "collective";
    case EventKind::CollectiveExec:
      return "collective_exec";
    case EventKind::CommWait:
      return "comm_wait";
    case EventKind::LossSync:
      return "loss_sync";
    case EventKind::Optimizer:
      return "optimizer";
    case EventKind::GradReady:
      return "grad_ready";
    case EventKind::Compress:
      return "compress";
  }
  return "?";
}

}  // namespace microddp::core
