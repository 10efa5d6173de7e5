// reduce_op.hpp — reduction operators shared by kernels (the reduction loops) and comm (the API).
#pragma once

#include <cstdint>
#include <string_view>

namespace microddp::core {

// Mean is Sum followed by division by the number of ranks (floating-point dtypes only).
enum class ReduceOp : std::uint8_t { Sum, Max, Min, Mean };

constexpr std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::Mean:
      return "mean";
  }
  return "?";
}

}  // namespace microddp::core
