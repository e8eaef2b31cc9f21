// ScatterND and ScatterElements: the output is a copy of data with updates
// written (or combined by `reduction`: none, add, mul, max, min) at the
// places indices name, in the order of the updates. Indices (i32 or i64)
// follow the run-time policy of data_movement.h. data and updates any dtype.
//
// ScatterND: data rank r, indices [I..., m] (1 <= m <= r), updates
//   [I..., data[m:]...]; each index tuple names the block data[i_0..i_{m-1}].
// ScatterElements: indices and updates of one shape, data's rank, no dim
//   larger than data's outside `axis`; updates[p] goes to data[p with its
//   `axis` coordinate replaced by indices[p]].
#include "compiler/ops/scatter.h"

#include <cstring>
#include <type_traits>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/data_movement.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {
namespace {

template <typename T>
T combine(ScatterReduction r, T a, T b) {
  switch (r) {
    case ScatterReduction::None:
      return b;
    case ScatterReduction::Max:
      return a < b ? b : a;
    case ScatterReduction::Min:
      return b < a ? b : a;
    case ScatterReduction::Add:
      if constexpr (std::is_same_v<T, bool>)
        return a || b;
      else if constexpr (std::is_integral_v<T>)
        return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
      else
        return a + b;
    case ScatterReduction::Mul:
      if constexpr (std::is_same_v<T, bool>)
        return a && b;
      else if constexpr (std::is_integral_v<T>)
        return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
      else
        return a * b;
  }
  return b;
}

template <typename T>
void combineAll(ScatterReduction r, void* dst, const void* src, int64_t count) {
  auto* d = static_cast<T*>(dst);
  const auto* s = static_cast<const T*>(src);
  for (int64_t i = 0; i < count; ++i) d[i] = combine(r, d[i], s[i]);
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void combineAll16(ScatterReduction r, void* dst, const void* src, int64_t count) {
  auto* d = static_cast<uint16_t*>(dst);
  const auto* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < count; ++i)
    d[i] = r == ScatterReduction::None ? s[i] : FromFloat(combine(r, ToFloat(d[i]), ToFloat(s[i])));
}

void checkAxis(const Node& node, const TensorType& data) {
  int64_t axis = node.i("axis");
  if (axis < 0 || axis >= static_cast<int64_t>(data.rank()))
    failNode(node, "attribute 'axis' is " + std::to_string(axis) + ", must be in [0, " +
                       std::to_string(data.rank()) + ") for " + data.str());
}

void checkUpdatesDType(const Node& node) {
  const TensorType& data = inputType(node, 0);
  const TensorType& updates = inputType(node, 2);
  if (updates.dtype != data.dtype)
    failNode(node, "updates " + updates.str() + " and data " + data.str() + " differ in dtype");
}

}  // namespace

ScatterReduction scatterReduction(const Node& node) {
  const std::string& r = node.s("reduction");
  if (r == "none") return ScatterReduction::None;
  if (r == "add") return ScatterReduction::Add;
  if (r == "mul") return ScatterReduction::Mul;
  if (r == "max") return ScatterReduction::Max;
  if (r == "min") return ScatterReduction::Min;
  failNode(node, "attribute 'reduction' is '" + r + "', not none, add, mul, max or min");
}

void scatterCombine(ScatterReduction r, DType dtype, void* dst, const void* src, int64_t count) {
  switch (dtype) {
    case DType::F32:
      return combineAll<float>(r, dst, src, count);
    case DType::F64:
      return combineAll<double>(r, dst, src, count);
    case DType::F16:
      return combineAll16<halfToFloat, floatToHalf>(r, dst, src, count);
    case DType::BF16:
      return combineAll16<bf16ToFloat, floatToBf16>(r, dst, src, count);
    case DType::I8:
      return combineAll<int8_t>(r, dst, src, count);
    case DType::U8:
      return combineAll<uint8_t>(r, dst, src, count);
    case DType::I16:
      return combineAll<int16_t>(r, dst, src, count);
    case DType::U16:
      return combineAll<uint16_t>(r, dst, src, count);
    case DType::I32:
      return combineAll<int32_t>(r, dst, src, count);
    case DType::U32:
      return combineAll<uint32_t>(r, dst, src, count);
    case DType::I64:
      return combineAll<int64_t>(r, dst, src, count);
    case DType::U64:
      return combineAll<uint64_t>(r, dst, src, count);
    case DType::Bool:
      return combineAll<bool>(r, dst, src, count);
  }
}

OpSchema makeScatterNDSchema() {
  OpSchema schema;
  schema.name = "ScatterND";
  schema.min_inputs = schema.max_inputs = 3;
  schema.infer = [](const Node& node) {
    const TensorType& data = inputType(node, 0);
    const TensorType& indices = inputType(node, 1);
    const TensorType& updates = inputType(node, 2);
    requireIndexDType(node, 1, "indices");
    checkUpdatesDType(node);
    scatterReduction(node);
    if (indices.rank() < 1 || indices.dims.back() < 1 ||
        indices.dims.back() > static_cast<int64_t>(data.rank()))
      failNode(node, "the last dim of indices " + indices.str() + " must be in [1, " +
                         std::to_string(data.rank()) + "] for data " + data.str());
    size_t m = static_cast<size_t>(indices.dims.back());
    std::vector<int64_t> want(indices.dims.begin(), indices.dims.end() - 1);
    want.insert(want.end(), data.dims.begin() + m, data.dims.end());
    if (updates.dims != want)
      failNode(node, "updates " + updates.str() + " must have dims " + dimsStr(want));
    for (size_t d = 0; d < m; ++d)
      if (data.dims[d] == 0 && updates.numel() > 0)
        failNode(node, "scatters into the empty axis " + std::to_string(d) + " of " + data.str());
    return std::vector<TensorType>{data};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const TensorType& data = node.inputs[0]->type;
    const TensorType& indices = node.inputs[1]->type;
    ScatterReduction r = scatterReduction(node);
    size_t m = static_cast<size_t>(indices.dims.back());
    int64_t tuples = product(indices.dims, 0, indices.rank() - 1);
    int64_t block = product(data.dims, m, data.rank());
    size_t esize = dtypeSize(data.dtype);
    std::vector<int64_t> ds = stridesOf(data.dims);
    auto* dst = static_cast<uint8_t*>(out[0]);
    const auto* updates = static_cast<const uint8_t*>(in[2]);
    std::memcpy(dst, in[0], data.bytes());
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t at = 0;
      for (size_t k = 0; k < m; ++k)
        at += clampIndex(readInt(indices.dtype, in[1], t * static_cast<int64_t>(m) + k),
                         data.dims[k]) *
              ds[k];
      scatterCombine(r, data.dtype, dst + at * esize, updates + t * block * esize, block);
    }
  };
  return schema;
}

OpSchema makeScatterElementsSchema() {
  OpSchema schema;
  schema.name = "ScatterElements";
  schema.min_inputs = schema.max_inputs = 3;
  schema.infer = [](const Node& node) {
    const TensorType& data = inputType(node, 0);
    const TensorType& indices = inputType(node, 1);
    const TensorType& updates = inputType(node, 2);
    requireIndexDType(node, 1, "indices");
    checkUpdatesDType(node);
    checkAxis(node, data);
    scatterReduction(node);
    int64_t axis = node.i("axis");
    bool ok = indices.rank() == data.rank() && updates.dims == indices.dims;
    for (size_t d = 0; ok && d < data.rank(); ++d)
      ok = static_cast<int64_t>(d) == axis ? (data.dims[d] > 0 || indices.numel() == 0)
                                           : indices.dims[d] <= data.dims[d];
    if (!ok)
      failNode(node, "indices " + indices.str() + " and updates " + updates.str() +
                         " do not fit data " + data.str());
    return std::vector<TensorType>{data};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const TensorType& data = node.inputs[0]->type;
    const TensorType& indices = node.inputs[1]->type;
    ScatterReduction r = scatterReduction(node);
    size_t axis = static_cast<size_t>(node.i("axis"));
    size_t esize = dtypeSize(data.dtype);
    std::vector<int64_t> ds = stridesOf(data.dims);
    auto* dst = static_cast<uint8_t*>(out[0]);
    const auto* updates = static_cast<const uint8_t*>(in[2]);
    std::memcpy(dst, in[0], data.bytes());
    forEachIndex(indices.dims, [&](const std::vector<int64_t>& index, int64_t i) {
      int64_t at = 0;
      for (size_t d = 0; d < index.size(); ++d)
        at += (d == axis ? clampIndex(readInt(indices.dtype, in[1], i), data.dims[d]) : index[d]) *
              ds[d];
      scatterCombine(r, data.dtype, dst + at * esize, updates + i * esize, 1);
    });
  };
  return schema;
}

}  // namespace nanoc
