// The data movement operators: the family's schema list and the helpers of
// data_movement.h. Each op's shape rule and reference is in its own file.
#include "compiler/ops/data_movement.h"

#include <vector>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

OpSchema makeSliceSchema();
OpSchema makeExpandSchema();
OpSchema makePadSchema();
OpSchema makeGatherSchema();
OpSchema makeGatherElementsSchema();
OpSchema makeGatherNDSchema();
OpSchema makeScatterNDSchema();
OpSchema makeScatterElementsSchema();
OpSchema makeTriluSchema();
OpSchema makeOneHotSchema();
OpSchema makeReverseSequenceSchema();

std::vector<OpSchema> dataMovementSchemas() {
  return {makeSliceSchema(),     makeExpandSchema(),          makePadSchema(),
          makeGatherSchema(),    makeGatherElementsSchema(),  makeGatherNDSchema(),
          makeScatterNDSchema(), makeScatterElementsSchema(), makeTriluSchema(),
          makeOneHotSchema(),    makeReverseSequenceSchema()};
}

void requireIndexDType(const Node& node, size_t index, const char* operand) {
  const TensorType& t = inputType(node, index);
  if (t.dtype != DType::I32 && t.dtype != DType::I64)
    failNode(node, std::string(operand) + " must be i32 or i64, got " + t.str());
}

int64_t readInt(DType dtype, const void* data, int64_t i) {
  switch (dtype) {
    case DType::I8:
      return static_cast<const int8_t*>(data)[i];
    case DType::U8:
    case DType::Bool:
      return static_cast<const uint8_t*>(data)[i];
    case DType::I16:
      return static_cast<const int16_t*>(data)[i];
    case DType::U16:
      return static_cast<const uint16_t*>(data)[i];
    case DType::I32:
      return static_cast<const int32_t*>(data)[i];
    case DType::U32:
      return static_cast<const uint32_t*>(data)[i];
    case DType::U64:
      return static_cast<int64_t>(static_cast<const uint64_t*>(data)[i]);
    default:
      return static_cast<const int64_t*>(data)[i];
  }
}

std::vector<int64_t> stridesOf(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

void forEachIndex(
    const std::vector<int64_t>& dims,
    const std::function<void(const std::vector<int64_t>& index, int64_t linear)>& fn) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    fn(index, i);
    for (size_t d = dims.size(); d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
}

void copyStrided(const void* src, void* dst, size_t esize, const std::vector<int64_t>& dims,
                 int64_t base, const std::vector<int64_t>& strides) {
  const auto* s = static_cast<const uint8_t*>(src);
  auto* out = static_cast<uint8_t*>(dst);
  forEachIndex(dims, [&](const std::vector<int64_t>& index, int64_t i) {
    int64_t at = base;
    for (size_t d = 0; d < index.size(); ++d) at += index[d] * strides[d];
    std::memcpy(out + i * esize, s + at * esize, esize);
  });
}

StridedView sliceView(const Node& node) {
  const TensorType& x = node.inputs[0]->type;
  const std::vector<int64_t>& starts = node.ints("starts");
  const std::vector<int64_t>& steps = node.ints("steps");
  std::vector<int64_t> xs = stridesOf(x.dims);
  StridedView view;
  for (size_t d = 0; d < x.rank(); ++d) {
    view.base += starts[d] * xs[d];
    view.strides.push_back(steps[d] * xs[d]);
  }
  return view;
}

StridedView expandView(const Node& node) {
  const TensorType& x = node.inputs[0]->type;
  const std::vector<int64_t>& shape = node.outputs[0]->type.dims;
  std::vector<int64_t> xs = stridesOf(x.dims);
  StridedView view;
  view.strides.assign(shape.size(), 0);
  size_t lead = shape.size() - x.rank();
  for (size_t d = 0; d < x.rank(); ++d)
    view.strides[lead + d] = x.dims[d] == 1 && shape[lead + d] != 1 ? 0 : xs[d];
  return view;
}

}  // namespace nanoc
