// GridSample: Y[n, c, o...] samples X[n, c] at the point grid[n, o...] (r
// normalized coordinates, innermost axis first) by nearest, linear or cubic
// interpolation with zeros, border or reflection padding (grid_sample.h).
#include "compiler/ops/grid_sample.h"

#include <algorithm>
#include <vector>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/elementwise_table.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

GridSampleParams gridSampleParams(const Node& node) {
  const TensorType& x = inputType(node, 0);
  const TensorType& grid = inputType(node, 1);
  GridSampleParams p;
  const std::string& mode = node.s("mode");
  if (mode == "nearest")
    p.mode = GridMode::Nearest;
  else if (mode == "linear")
    p.mode = GridMode::Linear;
  else if (mode == "cubic")
    p.mode = GridMode::Cubic;
  else
    failNode(node, "mode '" + mode + "' is not nearest, linear or cubic");
  const std::string& padding = node.s("padding_mode");
  if (padding == "zeros")
    p.padding = GridPadding::Zeros;
  else if (padding == "border")
    p.padding = GridPadding::Border;
  else if (padding == "reflection")
    p.padding = GridPadding::Reflection;
  else
    failNode(node, "padding_mode '" + padding + "' is not zeros, border or reflection");
  p.align_corners = boolAttr(node, "align_corners") != 0;
  if (x.rank() < 3 || x.rank() > 5)
    failNode(node, "X must be [N, C, D1..Dr] with 1 <= r <= 3, got " + x.str());
  p.spatial = x.rank() - 2;
  if (grid.rank() != x.rank() || grid.dims[0] != x.dims[0] ||
      grid.dims.back() != static_cast<int64_t>(p.spatial))
    failNode(node, "grid must be [N, O1..O" + std::to_string(p.spatial) + ", " +
                       std::to_string(p.spatial) + "] for X " + x.str() + ", got " + grid.str());
  for (size_t a = 2; a < x.rank(); ++a)
    if (x.dims[a] == 0) failNode(node, "X " + x.str() + " has an empty spatial axis");
  for (DType t : {x.dtype, grid.dtype})
    if (t != DType::F32 && t != DType::F64 && t != DType::F16 && t != DType::BF16)
      failNode(node,
               "X and grid must be f16, bf16, f32 or f64, got " + x.str() + " and " + grid.str());
  return p;
}

namespace {

std::vector<TensorType> inferGridSample(const Node& node) {
  gridSampleParams(node);
  const TensorType& x = node.inputs[0]->type;
  const TensorType& grid = node.inputs[1]->type;
  std::vector<int64_t> dims = {x.dims[0], x.dims[1]};
  dims.insert(dims.end(), grid.dims.begin() + 1, grid.dims.end() - 1);
  return {{x.dtype, dims}};
}

// Index arithmetic on coordinates stays far from int64's limits (and NaN
// reads as far outside), as the lowering's clamp does.
template <typename T>
int64_t toIndex(T x) {
  const T limit = T(int64_t{1} << 40);
  return static_cast<int64_t>(std::fmin(std::fmax(x, -limit), limit));
}

template <typename T>
void referenceT(const Node& node, const std::vector<const void*>& in,
                const std::vector<void*>& out) {
  using namespace grid_sample;
  const GridSampleParams p = gridSampleParams(node);
  const TensorType& xt = node.inputs[0]->type;
  const TensorType& gt = node.inputs[1]->type;
  const size_t r = p.spatial;
  const int64_t N = xt.dims[0], C = xt.dims[1];
  const std::vector<int64_t> d(xt.dims.begin() + 2, xt.dims.end());
  std::vector<int64_t> stride(r, 1);
  for (size_t a = r - 1; a > 0; --a) stride[a - 1] = stride[a] * d[a];
  const int64_t S = product(d, 0, r);
  const int64_t P = product(gt.dims, 1, r + 1);
  const int64_t taps = p.taps();
  std::vector<int64_t> offset(r * 4);
  std::vector<T> weight(r * 4);
  std::vector<uint8_t> inside(r * 4);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < P; ++o) {
      for (size_t a = 0; a < r; ++a) {
        T g = static_cast<T>(
            loadScalar(gt.dtype, in[1], (n * P + o) * int64_t(r) + static_cast<int64_t>(r - 1 - a))
                .f);
        T x = coordinate(p, g, d[a]);
        T w[4] = {1, 0, 0, 0};
        int64_t first;
        if (p.mode == GridMode::Nearest) {
          first = toIndex(x);
        } else {
          T x0 = std::floor(x);
          T t = x - x0;
          first = toIndex(x0);
          if (p.mode == GridMode::Linear) {
            w[0] = 1 - t;
            w[1] = t;
          } else {
            first -= 1;
            cubicCoeffs(t, w);
          }
        }
        for (int64_t k = 0; k < taps; ++k) {
          bool ok;
          int64_t i = padIndex(p, first + k, d[a], &ok);
          offset[a * 4 + k] = i * stride[a];
          weight[a * 4 + k] = w[k];
          inside[a * 4 + k] = ok;
        }
      }
      for (int64_t c = 0; c < C; ++c) {
        const int64_t base = (n * C + c) * S;
        T acc = 0;
        // Odometer over the taps of every axis.
        std::vector<int64_t> t(r, 0);
        for (;;) {
          T w = 1;
          int64_t src = base;
          bool ok = true;
          for (size_t a = 0; a < r; ++a) {
            size_t k = a * 4 + static_cast<size_t>(t[a]);
            w *= weight[k];
            src += offset[k];
            ok = ok && inside[k];
          }
          if (ok) acc += w * static_cast<T>(loadScalar(xt.dtype, in[0], src).f);
          size_t a = r;
          while (a > 0 && ++t[a - 1] == taps) t[--a] = 0;
          if (a == 0) break;
        }
        storeScalar(xt.dtype, Scalar::ofFloat(static_cast<double>(acc)), out[0],
                    (n * C + c) * P + o);
      }
    }
}

void referenceGridSample(const Node& node, const std::vector<const void*>& in,
                         const std::vector<void*>& out) {
  if (node.inputs[0]->type.dtype == DType::F64)
    referenceT<double>(node, in, out);
  else
    referenceT<float>(node, in, out);
}

}  // namespace

OpSchema makeGridSampleSchema() {
  OpSchema schema;
  schema.name = "GridSample";
  schema.min_inputs = 2;
  schema.max_inputs = 2;
  schema.infer = inferGridSample;
  schema.reference = referenceGridSample;
  return schema;
}

// The sampling family: GridSample and the image-patch ops.
OpSchema makeCol2ImSchema();      // col2im.cc
OpSchema makeRoiAlignSchema();    // roi_align.cc
OpSchema makeDeformConvSchema();  // deform_conv.cc
OpSchema makeAffineGridSchema();  // affine_grid.cc
std::vector<OpSchema> samplingSchemas() {
  return {makeGridSampleSchema(), makeCol2ImSchema(), makeRoiAlignSchema(), makeDeformConvSchema(),
          makeAffineGridSchema()};
}

}  // namespace nanoc
