// Constant weights W [M, K] packed in groups of kWeightRowGroup rows, as the
// GEMM micro-kernel reads its A (PackedProduct::a_row_group in
// codegen/cpu/gemm_microkernel.h): [ceil(M / 24), K, 24], W(m, k) at
// [m / 24, k, m % 24], the rows past M zero. A tile of any ISA's mr rows
// (which divides 24) then reads its weights as one stream rather than mr
// rows K apart. nanoc.ConvGemm's grouped W and each of nanoc.Winograd's
// t * t products U[xi] are laid out so.
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
