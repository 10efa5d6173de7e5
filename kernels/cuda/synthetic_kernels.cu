// synthetic_kernels.cu — the synthetic data set's rows made on the GPU (synthetic_data.hpp), bit for
// bit the rows synthetic_rows_host makes on the CPU: the same per-element function
// (portable_normal01, explicitly rounded intrinsics on the device) and the same order of every
// sample's label sums (teacher_score), so a GPU step needs no host fill and no upload.
// Contract: see cuda_kernels.hpp (gpu::synthetic_rows). Two kernels on the caller's stream, the
// labels after the features they read.
#include <cstdint>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/grid_stride.cuh"
#include "kernels/cuda/launch.hpp"
#include "kernels/cuda_kernels.hpp"
#include "kernels/launch_geometry.hpp"
#include "kernels/portable_math.hpp"
#include "kernels/synthetic_data.hpp"

namespace microddp::kernels::gpu {

namespace {

// x[i] = portable_normal01(seed, stream, first_counter + i), i < n: element (s, j) of the rows is
// counter (first + s) * in_dim + j = first * in_dim + (s * in_dim + j), so the rows are one counter
// range and one coalesced grid-stride loop.
__global__ void synthetic_features_kernel(std::uint64_t seed, std::uint64_t stream, std::uint64_t first_counter,
                                          float* __restrict__ x, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    x[i] = portable_normal01(seed, stream, first_counter + static_cast<std::uint64_t>(i));
  }
}

// y[s] = teacher_label(teacher, x[s], in_dim, classes). A block takes a tile of 32 samples (lane =
// sample); warp w scores classes w, w + 8, ... keeping its first best, and lane `sample` of warp 0
// picks the largest of the 8 (ties: the smaller class), which is the first largest over all classes,
// as teacher_label. The lanes of a warp read 32 different rows at the same column: each 128-byte
// line then serves the next 31 columns from L1, and the 8 warps share the tile's lines.
__global__ void __launch_bounds__(kSyntheticLabelWarps * 32)
    synthetic_labels_kernel(const float* __restrict__ teacher, const float* __restrict__ x, std::int64_t count,
                            std::int64_t tiles, std::int64_t in_dim, std::int64_t classes,
                            std::int32_t* __restrict__ y) {
  __shared__ float tile_score[kSyntheticLabelWarps][32];
  __shared__ std::int32_t tile_class[kSyntheticLabelWarps][32];
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warp = static_cast<int>(threadIdx.x / 32);
  for (std::int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {  // the same trip count for the block
    const std::int64_t s = tile * 32 + lane;
    float best_score = 0.0f;
    std::int32_t best = -1;  // none: a warp with no class (classes < 8) or a lane past the end
    if (s < count) {
      const float* row = x + s * in_dim;
      for (std::int64_t c = warp; c < classes; c += kSyntheticLabelWarps) {
        const float score = teacher_score(teacher + c * in_dim, row, in_dim);
        if (best < 0 || score > best_score) {
          best_score = score;
          best = static_cast<std::int32_t>(c);
        }
      }
    }
    tile_score[warp][lane] = best_score;
    tile_class[warp][lane] = best;
    __syncthreads();
    if (warp == 0 && s < count) {  // warp 0 holds class 0, so best >= 0 here
      for (int w = 1; w < static_cast<int>(kSyntheticLabelWarps); ++w) {
        const std::int32_t c = tile_class[w][lane];
        const float score = tile_score[w][lane];
        if (c >= 0 && (score > best_score || (score == best_score && c < best))) {
          best_score = score;
          best = c;
        }
      }
      y[s] = best;
    }
    __syncthreads();  // the tile's scores are read before the next tile overwrites them
  }
}

}  // namespace

void synthetic_rows(const SyntheticSpec& spec, std::int64_t first, std::int64_t count, float* x, std::int32_t* y,
                    cudaStream_t stream) {
  check_synthetic_rows(spec, first, count, "gpu::synthetic_rows");
  if (count == 0) return;
  MDDP_CHECK(x != nullptr && y != nullptr, "gpu::synthetic_rows: null output");
  const std::int64_t n = count * spec.in_dim;  // fits: check_synthetic_rows
  const LaunchGeometry features = grid_stride_geometry(n);
  MDDP_LAUNCH(synthetic_features_kernel, features.blocks, features.threads, 0, stream)
  (spec.seed, spec.stream, static_cast<std::uint64_t>(first) * static_cast<std::uint64_t>(spec.in_dim), x, n);
  MDDP_CUDA_CHECK_LAUNCH();
  const LaunchGeometry labels = synthetic_labels_geometry(count);
  MDDP_LAUNCH(synthetic_labels_kernel, labels.blocks, labels.threads, 0, stream)
  (spec.teacher, x, count, ceil_div(count, 32), spec.in_dim, spec.classes, y);
  MDDP_CUDA_CHECK_LAUNCH();
}

}  // namespace microddp::kernels::gpu
