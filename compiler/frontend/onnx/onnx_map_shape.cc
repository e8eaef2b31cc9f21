// ONNX -> IR mappings of the shape operators. Shapes are static, so Shape and
// Size are constants, and so is a Range of constants: the subgraphs exporters
// build from them (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) fold as
// they are imported.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "compiler/frontend/onnx/onnx_mapping_util.h"
#include "compiler/frontend/onnx/onnx_tensor.h"

namespace nanoc::onnx_import {
namespace {

std::vector<uint8_t> int64Bytes(const std::vector<int64_t>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(int64_t));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

void mapShape(NodeImporter& n) {
  const std::vector<int64_t>& dims = n.requiredInput(0, "data")->type.dims;
  const auto rank = static_cast<int64_t>(dims.size());
  // Opset 15 added a [start, end) window, clamped to [0, rank] after adding
  // rank to a negative bound.
  auto bound = [&](const char* key, int64_t fallback) {
    int64_t b = n.opset() >= 15 ? n.intAttr(key, fallback) : fallback;
    if (b < 0) b = b < -rank ? 0 : b + rank;
    return std::min(b, rank);
  };
  int64_t start = bound("start", 0), end = bound("end", rank);
  std::vector<int64_t> window;
  for (int64_t i = start; i < end; ++i) window.push_back(dims[static_cast<size_t>(i)]);
  TensorType type{DType::I64, {static_cast<int64_t>(window.size())}};
  n.setConstantOutput(0, type, int64Bytes(window));
}

void mapSize(NodeImporter& n) {
  int64_t numel = n.requiredInput(0, "data")->type.numel();
  n.setConstantOutput(0, TensorType{DType::I64, {}}, int64Bytes({numel}));
}

// The one element of a constant scalar input of Range, widened to T.
template <typename T>
T rangeScalar(const NodeImporter& n, const Value* v, const char* role) {
  if (!v->isConstant())
    n.fail(std::string(role) + " input '" + v->name +
           "' is computed at run time: Range's output size depends on its value, and nanoc "
           "needs static shapes");
  if (v->type.numel() != 1)
    n.fail(std::string(role) + " input '" + v->name + "' must be a scalar, not " + v->type.str());
  switch (v->type.dtype) {
    case DType::F32:
      return static_cast<T>(v->as<float>()[0]);
    case DType::F64:
      return static_cast<T>(v->as<double>()[0]);
    case DType::I16:
      return static_cast<T>(v->as<int16_t>()[0]);
    case DType::I32:
      return static_cast<T>(v->as<int32_t>()[0]);
    case DType::I64:
      return static_cast<T>(v->as<int64_t>()[0]);
    default:
      n.fail(std::string(role) + " input '" + v->name + "' is " + v->type.str() +
             "; Range takes f32, f64, i16, i32 or i64");
  }
}

// ceil((limit - start) / delta) elements, start + i * delta each, computed
// in the input's type as ONNX Runtime does (floats accumulate delta).
template <typename T>
void emitRange(NodeImporter& n, DType dtype) {
  T start = rangeScalar<T>(n, n.requiredInput(0, "start"), "start");
  T limit = rangeScalar<T>(n, n.requiredInput(1, "limit"), "limit");
  T delta = rangeScalar<T>(n, n.requiredInput(2, "delta"), "delta");
  if (delta == T(0)) n.fail("delta is 0");
  double count = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) /
                           static_cast<double>(delta));
  if (!(count >= 0)) count = 0;  // NaN too
  char digits[32];
  std::snprintf(digits, sizeof digits, "%.0f", count);
  std::string what = "output of " + std::string(digits) + " elements";
  if (count > static_cast<double>(kMaxMadeConstantBytes / sizeof(T)))
    n.reserveMadeConstant(kMaxMadeConstantBytes + 1, what);  // fails
  auto numel = static_cast<size_t>(count);
  n.reserveMadeConstant(numel * sizeof(T), what);
  std::vector<uint8_t> bytes(numel * sizeof(T));
  T value = start;
  for (size_t i = 0; i < numel; ++i) {
    std::memcpy(bytes.data() + i * sizeof(T), &value, sizeof(T));
    if constexpr (std::is_floating_point_v<T>) {
      value += delta;
    } else {
      // i * delta can leave T's range even where start + i * delta does not;
      // unsigned arithmetic wraps back to the right value.
      value = static_cast<T>(static_cast<uint64_t>(start) +
                             static_cast<uint64_t>(i + 1) * static_cast<uint64_t>(delta));
    }
  }
  n.setConstantOutput(0, TensorType{dtype, {static_cast<int64_t>(numel)}}, std::move(bytes));
}

void mapRange(NodeImporter& n) {
  DType dtype = n.requiredInput(0, "start")->type.dtype;
  for (size_t i = 1; i < 3; ++i)
    if (Value* v = n.input(i); v && v->type.dtype != dtype)
      n.fail("inputs have different dtypes: start is " + std::string(dtypeName(dtype)) +
             ", input " + std::to_string(i) + " is " + std::string(dtypeName(v->type.dtype)));
  switch (dtype) {
    case DType::F32:
      return emitRange<float>(n, dtype);
    case DType::F64:
      return emitRange<double>(n, dtype);
    case DType::I16:
      return emitRange<int16_t>(n, dtype);
    case DType::I32:
      return emitRange<int32_t>(n, dtype);
    case DType::I64:
      return emitRange<int64_t>(n, dtype);
    default:
      n.fail("dtype " + std::string(dtypeName(dtype)) + " is unsupported; Range takes f32, f64, " +
             "i16, i32 or i64");
  }
}

}  // namespace

MappingList shapeMappings() {
  return {{"Range", mapRange}, {"Shape", mapShape}, {"Size", mapSize}};
}

}  // namespace nanoc::onnx_import
