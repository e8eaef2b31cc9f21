// AffineGrid: grid[n, o..., k] = sum_j theta[n, k, j] * base(o...)[j], where
// base holds the output position's normalized coordinates (innermost axis
// first) and a 1: with align_corners -1 + 2 i / (d - 1) (-1 when d = 1),
// else -1 + (2 i + 1) / d. Computed in the compute type (f64 for f64 theta,
// else f32), as the lowering does.
#include <vector>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/elementwise_table.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {
namespace {

// size: [N, C, D1..Dr] (r = 2 or 3); theta must be [N, r, r + 1].
std::vector<int64_t> affineSpatial(const Node& node) {
  const TensorType& theta = inputType(node, 0);
  const std::vector<int64_t>& size = node.ints("size");
  boolAttr(node, "align_corners");
  if (size.size() != 4 && size.size() != 5)
    failNode(node, "size must be [N, C, H, W] or [N, C, D, H, W], got " + dimsStr(size));
  const auto r = static_cast<int64_t>(size.size() - 2);
  if (theta.dims != std::vector<int64_t>{size[0], r, r + 1})
    failNode(node, "theta must be [" + std::to_string(size[0]) + ", " + std::to_string(r) + ", " +
                       std::to_string(r + 1) + "] for size " + dimsStr(size) + ", got " +
                       theta.str());
  if (theta.dtype != DType::F32 && theta.dtype != DType::F64 && theta.dtype != DType::F16 &&
      theta.dtype != DType::BF16)
    failNode(node, "theta must be f16, bf16, f32 or f64, got " + theta.str());
  std::vector<int64_t> spatial(size.begin() + 2, size.end());
  for (int64_t d : spatial)
    if (d < 0 || d > (int64_t{1} << 32))
      failNode(node, "size " + dimsStr(size) + " is out of range");
  return spatial;
}

std::vector<TensorType> inferAffineGrid(const Node& node) {
  std::vector<int64_t> dims = {node.ints("size").empty() ? 0 : node.ints("size")[0]};
  std::vector<int64_t> spatial = affineSpatial(node);
  dims.insert(dims.end(), spatial.begin(), spatial.end());
  dims.push_back(static_cast<int64_t>(spatial.size()));
  return {{node.inputs[0]->type.dtype, dims}};
}

template <typename T>
void referenceT(const Node& node, const std::vector<const void*>& in,
                const std::vector<void*>& out) {
  const std::vector<int64_t> spatial = affineSpatial(node);
  const bool align = node.i("align_corners") != 0;
  const DType dt = node.inputs[0]->type.dtype;
  const size_t r = spatial.size();
  const int64_t N = node.ints("size")[0];
  const int64_t P = product(spatial, 0, r);
  const auto R = static_cast<int64_t>(r);
  std::vector<T> base(r + 1);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < P; ++p) {
      int64_t rem = p;
      for (size_t a = r; a-- > 0;) {
        int64_t d = spatial[a], i = rem % d;
        rem /= d;
        T v = align ? (d > 1 ? T(-1) + T(2) * static_cast<T>(i) / static_cast<T>(d - 1) : T(-1))
                    : T(-1) + (T(2) * static_cast<T>(i) + T(1)) / static_cast<T>(d);
        base[r - 1 - a] = v;
      }
      base[r] = 1;
      for (int64_t k = 0; k < R; ++k) {
        T acc = 0;
        for (int64_t j = 0; j <= R; ++j)
          acc += static_cast<T>(loadScalar(dt, in[0], (n * R + k) * (R + 1) + j).f) *
                 base[static_cast<size_t>(j)];
        storeScalar(dt, Scalar::ofFloat(static_cast<double>(acc)), out[0], (n * P + p) * R + k);
      }
    }
}

void referenceAffineGrid(const Node& node, const std::vector<const void*>& in,
                         const std::vector<void*>& out) {
  if (node.inputs[0]->type.dtype == DType::F64)
    referenceT<double>(node, in, out);
  else
    referenceT<float>(node, in, out);
}

}  // namespace

OpSchema makeAffineGridSchema() {
  OpSchema schema;
  schema.name = "AffineGrid";
  schema.infer = inferAffineGrid;
  schema.reference = referenceAffineGrid;
  return schema;
}

}  // namespace nanoc
