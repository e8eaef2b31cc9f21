// nanoc.Winograd: see winograd.h.
#include "compiler/ops/winograd.h"

#include <algorithm>
#include <string>

#include "compiler/ir/error.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ops/epilogue.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

const WinogradMatrices& winogradMatrices(int64_t m) {
  static const WinogradMatrices f2 = {2,
                                      4,
                                      {1, 0, -1, 0,  //
                                       0, 1, 1, 0,   //
                                       0, -1, 1, 0,  //
                                       0, 1, 0, -1},
                                      {1, 0, 0,         //
                                       0.5, 0.5, 0.5,   //
                                       0.5, -0.5, 0.5,  //
                                       0, 0, 1},
                                      {1, 1, 1, 0,  //
                                       0, 1, -1, -1}};
  static const WinogradMatrices f4 = {4,
                                      6,
                                      {4, 0,  -5, 0,  1, 0,  //
                                       0, -4, -4, 1,  1, 0,  //
                                       0, 4,  -4, -1, 1, 0,  //
                                       0, -2, -1, 2,  1, 0,  //
                                       0, 2,  -1, -2, 1, 0,  //
                                       0, 4,  0,  -5, 0, 1},
                                      {1.0 / 4, 0, 0,                 //
                                       -1.0 / 6, -1.0 / 6, -1.0 / 6,  //
                                       -1.0 / 6, 1.0 / 6, -1.0 / 6,   //
                                       1.0 / 24, 1.0 / 12, 1.0 / 6,   //
                                       1.0 / 24, -1.0 / 12, 1.0 / 6,  //
                                       0, 0, 1},
                                      {1, 1, 1,  1, 1,  0,  //
                                       0, 1, -1, 2, -2, 0,  //
                                       0, 1, 1,  4, 4,  0,  //
                                       0, 1, -1, 8, -8, 1}};
  if (m == 2) return f2;
  if (m == 4) return f4;
  throw CompileError("Winograd tile " + std::to_string(m) + " is not 2 or 4");
}

namespace {
// U's element (xi, o, c): product xi's grouped [M, C] matrix, then (o, c) in
// it.
int64_t uIndex(int64_t xi, int64_t o, int64_t c, int64_t M, int64_t C, int64_t g) {
  return xi * weightRowGroups(M, g) * C * g + weightRowIndex(o, c, C, g);
}
}  // namespace

std::vector<float> winogradWeights(const float* w, int64_t M, int64_t C, int64_t m, int64_t group) {
  const WinogradMatrices& f = winogradMatrices(m);
  const int64_t t = f.t;
  std::vector<float> u(static_cast<size_t>(t * t * weightRowGroups(M, group) * C * group));
  for (int64_t o = 0; o < M; ++o)
    for (int64_t c = 0; c < C; ++c) {
      const float* g = w + (o * C + c) * 9;
      double gg[6][3];  // G g
      for (int64_t a = 0; a < t; ++a)
        for (int64_t j = 0; j < 3; ++j) {
          double s = 0;
          for (int64_t i = 0; i < 3; ++i) s += f.g[a * 3 + i] * g[i * 3 + j];
          gg[a][j] = s;
        }
      for (int64_t a = 0; a < t; ++a)
        for (int64_t b = 0; b < t; ++b) {
          double s = 0;
          for (int64_t j = 0; j < 3; ++j) s += gg[a][j] * f.g[b * 3 + j];
          u[static_cast<size_t>(uIndex(a * t + b, o, c, M, C, group))] = static_cast<float>(s);
        }
    }
  return u;
}

WinogradShape winogradShape(const Node& node) {
  requireF32(node);
  WinogradShape s;
  s.block = node.i("block", 0);
  if (s.block < 0 || s.block > 64)
    failNode(node, "attribute 'block' must be in [0, 64], got " + std::to_string(s.block));
  requireRank(node, 0, "X", s.block > 0 ? 5 : 4);
  requireRank(node, 1, "U", 4);
  const std::vector<int64_t>& x = inputType(node, 0).dims;
  const std::vector<int64_t>& u = inputType(node, 1).dims;
  s.n = x[0], s.c = s.block > 0 ? u[2] : x[1], s.h = x[2], s.w = x[3];
  if (s.block > 0 && (x[4] != s.block || s.c < 1 || x[1] != s.inBlocks()))
    failNode(node, "blocked X " + dimsStr(x) + " must be [N, " +
                       std::to_string((std::max<int64_t>(1, s.c) + s.block - 1) / s.block) +
                       ", H, W, " + std::to_string(s.block) + "] for U's " + std::to_string(s.c) +
                       " input channels");
  s.tile = node.i("tile");
  if (s.tile != 2 && s.tile != 4)
    failNode(node, "attribute 'tile' must be 2 or 4, got " + std::to_string(s.tile));
  s.t = s.tile + 2;
  const std::vector<int64_t>& pads = intsAttr(node, "pads", 4, 0);
  for (int64_t p : pads)
    if (p < 0 || p > 2) failNode(node, "pads must be in [0, 2]");
  s.pad_h = pads[0], s.pad_w = pads[1];
  s.oh = s.h + pads[0] + pads[2] - 2;
  s.ow = s.w + pads[1] + pads[3] - 2;
  if (s.oh < 1 || s.ow < 1) failNode(node, "the 3x3 window is larger than the padded input");
  const std::vector<int64_t>& spatial = intsAttr(node, "output_spatial", 2, 0);
  if (spatial[0] != s.oh || spatial[1] != s.ow)
    failNode(node,
             "output_spatial must be [" + std::to_string(s.oh) + ", " + std::to_string(s.ow) + "]");
  s.panel = node.i("panel");
  if (s.panel < 1 || s.panel > 1024)
    failNode(node, "attribute 'panel' must be in [1, 1024], got " + std::to_string(s.panel));
  s.m_out = node.i("out_channels");
  if (s.m_out < 1 || s.m_out > (int64_t{1} << 24))
    failNode(node, "attribute 'out_channels' must be in [1, 2^24]");
  s.tile_rows = node.i("tile_rows", 0);
  if (s.tile_rows < 0 || s.tile_rows > 1024 || s.tile_rows % s.panel != 0)
    failNode(node, "attribute 'tile_rows' must be 0 or a multiple of 'panel' (" +
                       std::to_string(s.panel) + ") up to 1024, got " +
                       std::to_string(s.tile_rows));
  if (s.block > 0 && (s.tile_rows == 0 || s.tile_rows % s.block != 0))
    failNode(node, "a blocked nanoc.Winograd needs 'tile_rows', a multiple of 'block'");
  const std::vector<int64_t> want = winogradWeightDims(s.m_out, s.c, s.tile, s.uGroup());
  if (u != want) failNode(node, "U " + dimsStr(u) + " must be " + dimsStr(want));
  // The kernel indexes X and Y with 32-bit lane offsets.
  constexpr int64_t kLimit = int64_t{1} << 31;
  if (s.n * s.c * s.h * s.w >= kLimit || s.n * s.m_out * s.oh * s.ow >= kLimit)
    failNode(node, "X and Y must have fewer than 2^31 elements");
  if (node.inputs.size() > 2 && node.inputs[2]) {
    const int64_t bias = s.block > 0 ? s.outBlocks() * s.block : s.m_out;
    if (node.inputs[2]->type.dims != std::vector<int64_t>{bias})
      failNode(node,
               "bias must be [" + std::to_string(bias) + "], got " + node.inputs[2]->type.str());
    s.has_bias = true;
  }
  return s;
}

std::vector<int64_t> winogradOutputDims(const WinogradShape& s) {
  if (s.block > 0) return {s.n, s.outBlocks(), s.oh, s.ow, s.block};
  return {s.n, s.m_out, s.oh, s.ow};
}

namespace {

OpSchema makeWinogradSchema() {
  OpSchema schema;
  schema.name = "nanoc.Winograd";
  schema.min_inputs = 2;
  schema.max_inputs = 4;  // X, U, bias?, the fused residual? (ops/epilogue.h)
  schema.infer = [](const Node& node) {
    WinogradShape s = winogradShape(node);
    TensorType y{DType::F32, winogradOutputDims(s)};
    checkEpilogue(node, y);
    return std::vector<TensorType>{y};
  };
  // The transforms in double, tile by tile.
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    WinogradShape s = winogradShape(node);
    const WinogradMatrices& f = winogradMatrices(s.tile);
    const int64_t t = s.t, T2 = t * t, m = s.tile;
    const float* x = static_cast<const float*>(in[0]);
    const float* u = static_cast<const float*>(in[1]);
    const float* bias = s.has_bias ? static_cast<const float*>(in[2]) : nullptr;
    float* y = static_cast<float*>(out[0]);
    // Element (n, c, h, w) of X and Y, plain or blocked (Y's lanes past M
    // are 0 before the epilogue).
    const int64_t b = s.block;
    auto xAt = [&](int64_t n, int64_t c, int64_t h, int64_t w) {
      return b > 0 ? (((n * s.inBlocks() + c / b) * s.h + h) * s.w + w) * b + c % b
                   : ((n * s.c + c) * s.h + h) * s.w + w;
    };
    auto yAt = [&](int64_t n, int64_t o, int64_t h, int64_t w) {
      return b > 0 ? (((n * s.outBlocks() + o / b) * s.oh + h) * s.ow + w) * b + o % b
                   : ((n * s.m_out + o) * s.oh + h) * s.ow + w;
    };
    const std::vector<int64_t> y_dims = winogradOutputDims(s);
    const int64_t y_size = product(y_dims, 0, y_dims.size());
    std::fill(y, y + y_size, 0.0f);
    std::vector<double> v(static_cast<size_t>(s.c * T2)), acc(static_cast<size_t>(T2));
    double d[6][6], tmp[6][6];
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t th = 0; th < s.tilesH(); ++th)
        for (int64_t tw = 0; tw < s.tilesW(); ++tw) {
          for (int64_t c = 0; c < s.c; ++c) {
            for (int64_t i = 0; i < t; ++i)
              for (int64_t j = 0; j < t; ++j) {
                int64_t ih = th * m - s.pad_h + i, iw = tw * m - s.pad_w + j;
                d[i][j] = ih < 0 || ih >= s.h || iw < 0 || iw >= s.w ? 0.0 : x[xAt(n, c, ih, iw)];
              }
            for (int64_t a = 0; a < t; ++a)
              for (int64_t j = 0; j < t; ++j) {
                tmp[a][j] = 0;
                for (int64_t i = 0; i < t; ++i) tmp[a][j] += f.bt[a * t + i] * d[i][j];
              }
            for (int64_t a = 0; a < t; ++a)
              for (int64_t b = 0; b < t; ++b) {
                double sum = 0;
                for (int64_t j = 0; j < t; ++j) sum += tmp[a][j] * f.bt[b * t + j];
                v[static_cast<size_t>(c * T2 + a * t + b)] = sum;
              }
          }
          for (int64_t o = 0; o < s.m_out; ++o) {
            for (int64_t xi = 0; xi < T2; ++xi) {
              double sum = 0;
              for (int64_t c = 0; c < s.c; ++c)
                sum += u[uIndex(xi, o, c, s.m_out, s.c, s.uGroup())] *
                       v[static_cast<size_t>(c * T2 + xi)];
              acc[static_cast<size_t>(xi)] = sum;
            }
            for (int64_t r = 0; r < m; ++r)
              for (int64_t q = 0; q < m; ++q) {
                int64_t oh = th * m + r, ow = tw * m + q;
                if (oh >= s.oh || ow >= s.ow) continue;
                double sum = bias ? bias[o] : 0.0;
                for (int64_t a = 0; a < t; ++a)
                  for (int64_t b = 0; b < t; ++b)
                    sum += f.at[r * t + a] * acc[static_cast<size_t>(a * t + b)] * f.at[q * t + b];
                y[yAt(n, o, oh, ow)] = static_cast<float>(sum);
              }
          }
        }
    // A blocked Y's lanes past M: the bias there (the products are 0).
    if (b > 0 && bias)
      for (int64_t n = 0; n < s.n; ++n)
        for (int64_t o = s.m_out; o < s.outBlocks() * b; ++o)
          for (int64_t h = 0; h < s.oh; ++h)
            for (int64_t w = 0; w < s.ow; ++w) y[yAt(n, o, h, w)] = bias[o];
    applyEpilogue(
        epilogueSpec(node), y,
        in.size() > kResidualInput ? static_cast<const float*>(in[kResidualInput]) : nullptr,
        y_size);
  };
  return schema;
}

}  // namespace

std::vector<OpSchema> winogradSchemas() { return {makeWinogradSchema()}; }

}  // namespace nanoc
