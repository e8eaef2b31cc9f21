// ONNX TensorProto / ValueInfoProto -> IR types and constant bytes. Every size
// read from the model is checked before use: a model is untrusted input.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace nanoc::onnx_import {

// The IR dtype of an ONNX TensorProto.DataType, or nullopt for one the IR has
// no equivalent of (string, complex, float8e8m0, the 6-bit floats, ...).
std::optional<DType> dtypeFromOnnx(int32_t onnx_type);
// ONNX's own name for a data type ("FLOAT", "DOUBLE"), for error messages.
std::string onnxTypeName(int32_t onnx_type);

// Product of `dims`, throwing CompileError naming `what` for a negative dim or
// a tensor too large to address (its byte size must fit comfortably in int64).
int64_t checkedNumel(const std::vector<int64_t>& dims, DType dtype, const std::string& what);

struct ConstantTensor {
  TensorType type;
  std::vector<uint8_t> bytes;  // dense, row-major, little-endian; type.bytes() long
};

// Decodes an initializer or a Constant node's tensor from raw_data or the typed
// fields (4- and 2-bit elements, packed there, unpacked to a byte each). Throws CompileError naming
// `what` ("initializer 'w'") for external data, an unsupported dtype, or a payload whose size does
// not match the dims.
ConstantTensor decodeTensor(const onnx::TensorProto& tensor, const std::string& what);

// What a value is when it is not a tensor ("a sequence", "a map", "an
// optional", "a sparse tensor", "of unknown type"), for refusals.
std::string nonTensorKind(const onnx::TypeProto& type);

// A graph input dim that neither the model nor the user fixed.
struct OpenDim {
  std::string input;
  size_t index = 0;
  std::string param;  // its dim_param; empty for an unknown dim
};

// The type of graph input `info`. `shape` (nanoc's --input-shape, may be null)
// gives every dim; otherwise `dim_params` (--dim) fixes symbolic dims. A dim
// left open is appended to `open` and typed 1, so the caller can list every
// open dim of every input in one error. Throws CompileError naming the input
// for a non-tensor type, an unsupported dtype, a rank or dim that conflicts
// with `shape`, a negative dim, or a tensor too large to address.
TensorType inputTypeOf(const onnx::ValueInfoProto& info, const std::vector<int64_t>* shape,
                       const std::map<std::string, int64_t>& dim_params,
                       std::vector<OpenDim>& open);

}  // namespace nanoc::onnx_import
