// nanoc.Winograd: a 3x3, stride-1, undilated 2-D convolution by Winograd's
// minimal filtering F(m x m, 3 x 3) (Lavin and Gray, "Fast Algorithms for
// Convolutional Neural Networks", 2016). Each m x m tile of Y comes from the
// t x t patch of X under it (t = m + 2):
//
//   V = B^T d B                      (input transform, per channel c)
//   Mx[xi] = sum_c U[xi, o, c] V[xi]  (t*t products over the channels)
//   Y tile = A^T Mx A                 (output transform, per output channel o)
//
// so an output tile costs t*t multiply-adds per channel instead of 9 m*m: 4x
// fewer for m = 4, 2.25x for m = 2. The weights' transform U = G g G^T is done
// by passes/conv_to_gemm.cc at compile time (winogradWeights):
//
//   nanoc.Winograd(X [N, C, H, W], U [t*t, G, C, g], bias [M]?, residual?)
//       {tile = m (2 or 4), out_channels = M, pads [4], output_spatial [OH, OW],
//        panel, tile_rows = 0}
//     -> Y [N, M, OH, OW] with OH = H + pads[0] + pads[2] - 2 and
//        OW = W + pads[1] + pads[3] - 2
//
// U holds output channel o of product xi at U[xi, o / g, c, o % g] (G =
// ceil(M / g) groups of g, the rows past M zero): each U[xi] an [M, C]
// weight matrix in weight_rows.h's grouped layout. g is 24 (the products'
// rows are output channels, U[xi] their A), or tile_rows where that is set
// (a multiple of `panel`): the products are transposed, their rows the
// tiles and U[xi] their B in panels of g output channels, so that an image
// of few tiles (7 x 7 or 14 x 14 maps: 16) fills the vector lanes with
// output channels instead of leaving them part empty.
//
// With `block` = b > 0 (passes/nchwc_layout.cc, ops/nchwc.h) X and Y are
// channel-blocked, X [N, ceil(C / b), H, W, b] (C: U's) and Y [N, ceil(M /
// b), OH, OW, b], bias [ceil(M / b) * b] (0 past M); tile_rows is set, and
// the products' rows are the tiles, their columns the output channels, V
// and the products held blocked as well, so that each transform is a
// pixel's b channels a vector. Y's lanes past M are the epilogue of the
// bias there (of 0 where the layout pass pads it; the products are 0 there
// whatever U holds). The kernel reads no lane of X past C.
//
// The last tiles of a row or column may hang past OH, OW (read as padding,
// not stored). `panel` is the unit of the scratch's columns of tiles, a
// multiple of every ISA variant's tile width (as nanoc.ConvGemm's). The
// fusion pass's attributes (fused_*) and residual input apply to Y.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/weight_rows.h"

namespace nanoc {

// B^T (t x t), G (t x 3) and A^T (m x t), row-major, for F(m x m, 3 x 3).
struct WinogradMatrices {
  int64_t m = 0, t = 0;
  std::vector<double> bt, g, at;
};
// m = 2 or 4 (the points 0, +-1, +-2 and infinity for 4).
const WinogradMatrices& winogradMatrices(int64_t m);

// U's dims for M output and C input channels, tile m and groups of g:
// [t*t, ceil(M / g), C, g].
inline std::vector<int64_t> winogradWeightDims(int64_t M, int64_t C, int64_t m, int64_t g) {
  return {(m + 2) * (m + 2), weightRowGroups(M, g), C, g};
}

// U [t*t, G, C, g] from W [M, C, 3, 3]: U[xi = a * t + b, o / g, c, o % g]
// = (G w[o, c] G^T)[a][b], computed in double.
std::vector<float> winogradWeights(const float* w, int64_t M, int64_t C, int64_t m,
                                   int64_t g = kWeightRowGroup);

struct WinogradShape {
  int64_t n = 0, c = 0, h = 0, w = 0, m_out = 0;  // m_out: output channels M
  int64_t tile = 4, t = 6;                        // m and t = m + 2
  int64_t pad_h = 0, pad_w = 0;                   // begins
  int64_t oh = 0, ow = 0;
  int64_t panel = 1;
  int64_t tile_rows = 0;  // > 0: transposed products, U in groups of this many
  int64_t block = 0;      // > 0: X and Y channel-blocked in blocks of this many lanes
  bool has_bias = false;
  int64_t inBlocks() const { return block > 0 ? (c + block - 1) / block : c; }
  int64_t outBlocks() const { return block > 0 ? (m_out + block - 1) / block : m_out; }
  int64_t uGroup() const { return tile_rows > 0 ? tile_rows : kWeightRowGroup; }
  int64_t tilesH() const { return (oh + tile - 1) / tile; }
  int64_t tilesW() const { return (ow + tile - 1) / tile; }
  int64_t tiles() const { return tilesH() * tilesW(); }  // per image
};
WinogradShape winogradShape(const Node& node);
// Y's dims: [N, M, OH, OW], or blocked [N, ceil(M / b), OH, OW, b].
std::vector<int64_t> winogradOutputDims(const WinogradShape& s);

}  // namespace nanoc
