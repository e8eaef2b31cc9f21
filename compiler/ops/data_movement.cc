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

namespace {

float bitsToFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint32_t floatToBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

}  // namespace

float f16ToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  int32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) return bitsToFloat(sign | 0x7f800000 | (mant << 13));
  if (exp == 0) {
    float f = static_cast<float>(mant) * (1.0f / 16777216.0f);  // mant * 2^-24
    return sign ? -f : f;
  }
  return bitsToFloat(sign | static_cast<uint32_t>(exp - 15 + 127) << 23 | (mant << 13));
}

uint16_t floatToF16(float f) {
  uint32_t x = floatToBits(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  uint32_t abs = x & 0x7fffffff;
  if (abs > 0x7f800000) return sign | 0x7e00;       // NaN
  if (abs >= 0x477ff000) return sign | 0x7c00;      // rounds to infinity
  if (abs < 0x38800000) {                           // subnormal half or zero
    float scaled = bitsToFloat(abs) * 16777216.0f;  // exact: value * 2^24
    uint32_t m = static_cast<uint32_t>(scaled);
    float rest = scaled - static_cast<float>(m);
    if (rest > 0.5f || (rest == 0.5f && (m & 1))) ++m;  // nearest, ties to even
    return sign | static_cast<uint16_t>(m);
  }
  uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);  // nearest, ties to even
  return sign | static_cast<uint16_t>((rounded - 0x38000000) >> 13);
}

float bf16ToFloat(uint16_t h) { return bitsToFloat(static_cast<uint32_t>(h) << 16); }

uint16_t floatToBf16(float f) {
  uint32_t x = floatToBits(f);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);
  return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
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
