// Constant weights W [M, K] packed in groups of g rows, as the GEMM
// micro-kernel reads its A (PackedProduct::a_row_group in
// codegen/cpu/gemm_microkernel.h): [ceil(M / g), K, g], W(m, k) at
// [m / g, k, m % g], the rows past M zero. A tile of mr rows (g a multiple
// of it) then reads its weights as one stream rather than mr rows K apart.
// nanoc.ConvGemm's grouped W takes g = the program's tiles' rows (12 on
// AVX-512, 6 on AVX2, 8 on NEON; kWeightRowGroup = 24, which every tile's
// rows divide, for a program of several), so that a tile's stream is dense;
// each of nanoc.Winograd's t * t products U[xi] is laid out in groups of
// kWeightRowGroup.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nanoc {

constexpr int64_t kWeightRowGroup = 24;

// The same layout in groups of g rows ([ceil(M / g), K, g]) serves as the
// micro-kernel's packed B for the transposed product W^T (g a multiple of
// every tile's columns): a group is then a panel of g columns.
inline int64_t weightRowGroups(int64_t M, int64_t g = kWeightRowGroup) { return (M + g - 1) / g; }

// Where W(m, k) of a K-column W lies in the grouped layout.
inline int64_t weightRowIndex(int64_t m, int64_t k, int64_t K, int64_t g = kWeightRowGroup) {
  return ((m / g) * K + k) * g + m % g;
}

// W [M, K] (row-major) in the grouped layout.
inline std::vector<float> groupWeightRows(const float* w, int64_t M, int64_t K,
                                          int64_t g = kWeightRowGroup) {
  std::vector<float> out(static_cast<size_t>(weightRowGroups(M, g) * K * g), 0.0f);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k)
      out[static_cast<size_t>(weightRowIndex(m, k, K, g))] = w[m * K + k];
  return out;
}

}  // namespace nanoc
