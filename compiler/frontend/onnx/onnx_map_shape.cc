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

}  // namespace

MappingList shapeMappings() { return {{"Shape", mapShape}, {"Size", mapSize}}; }

}  // namespace nanoc::onnx_import
