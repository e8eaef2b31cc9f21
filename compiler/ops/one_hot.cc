// OneHot: output = indices' dims with `depth` inserted at `axis` (in [0,
// rank(indices)]); output[..., d, ...] is values[1] where the index equals d
// and values[0] elsewhere. A negative index counts from depth; one outside
// [-depth, depth) gives a row of values[0] (ONNX's rule). indices: any
// integer or f32/f64 dtype (floats truncated); values: 2 elements of any
// dtype, which is the output's.
#include <cstring>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/data_movement.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {
namespace {

int64_t readIndexValue(DType dtype, const void* data, int64_t i) {
  auto truncate = [](double v) {
    if (v != v) return int64_t{0};  // NaN, as the lowering's saturating conversion
    if (v >= 9.2233720368547758e18) return INT64_MAX;
    if (v <= -9.2233720368547758e18) return INT64_MIN;
    return static_cast<int64_t>(v);
  };
  if (dtype == DType::F32) return truncate(static_cast<const float*>(data)[i]);
  if (dtype == DType::F64) return truncate(static_cast<const double*>(data)[i]);
  return readInt(dtype, data, i);
}

}  // namespace

OpSchema makeOneHotSchema() {
  OpSchema schema;
  schema.name = "OneHot";
  schema.min_inputs = schema.max_inputs = 2;
  schema.infer = [](const Node& node) {
    const TensorType& indices = inputType(node, 0);
    const TensorType& values = inputType(node, 1);
    if (indices.dtype == DType::F16 || indices.dtype == DType::BF16 || indices.dtype == DType::Bool)
      failNode(node, "indices " + indices.str() + " must be an integer, f32 or f64 tensor");
    if (values.numel() != 2 || values.rank() != 1)
      failNode(node, "values " + values.str() + " must hold 2 elements (off, on)");
    int64_t axis = node.i("axis"), depth = node.i("depth");
    if (axis < 0 || axis > static_cast<int64_t>(indices.rank()))
      failNode(node, "attribute 'axis' is " + std::to_string(axis) + ", must be in [0, " +
                         std::to_string(indices.rank()) + "]");
    int64_t numel = depth;
    if (depth < 0 || __builtin_mul_overflow(numel, indices.numel(), &numel) ||
        numel > (int64_t{1} << 40))
      failNode(node, "attribute 'depth' " + std::to_string(depth) + " is out of range");
    TensorType y{values.dtype, indices.dims};
    y.dims.insert(y.dims.begin() + axis, depth);
    return std::vector<TensorType>{y};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const TensorType& indices = node.inputs[0]->type;
    const TensorType& y = node.outputs[0]->type;
    size_t axis = static_cast<size_t>(node.i("axis"));
    int64_t depth = node.i("depth");
    int64_t outer = product(indices.dims, 0, axis);
    int64_t inner = product(indices.dims, axis, indices.rank());
    size_t esize = dtypeSize(y.dtype);
    const auto* values = static_cast<const uint8_t*>(in[1]);
    auto* dst = static_cast<uint8_t*>(out[0]);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t d = 0; d < depth; ++d)
        for (int64_t i = 0; i < inner; ++i) {
          int64_t index = readIndexValue(indices.dtype, in[0], o * inner + i);
          if (index < 0) index += depth;
          std::memcpy(dst + ((o * depth + d) * inner + i) * esize,
                      values + (index == d ? esize : 0), esize);
        }
  };
  return schema;
}

}  // namespace nanoc
