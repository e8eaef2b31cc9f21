#include "compiler/frontend/onnx/onnx_tensor.h"

#include <bit>
#include <cstring>
#include <iterator>
#include <limits>

#include "compiler/ir/error.h"
#include "compiler/ir/subbyte.h"

namespace nanoc::onnx_import {

// Constants are copied byte for byte from raw_data, which ONNX stores
// little-endian.
static_assert(std::endian::native == std::endian::little,
              "the ONNX importer assumes little-endian");

std::optional<DType> dtypeFromOnnx(int32_t onnx_type) {
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT:
      return DType::F32;
    case onnx::TensorProto::FLOAT16:
      return DType::F16;
    case onnx::TensorProto::BFLOAT16:
      return DType::BF16;
    case onnx::TensorProto::INT8:
      return DType::I8;
    case onnx::TensorProto::UINT8:
      return DType::U8;
    case onnx::TensorProto::INT32:
      return DType::I32;
    case onnx::TensorProto::INT64:
      return DType::I64;
    case onnx::TensorProto::BOOL:
      return DType::Bool;
    case onnx::TensorProto::DOUBLE:
      return DType::F64;
    case onnx::TensorProto::INT16:
      return DType::I16;
    case onnx::TensorProto::UINT16:
      return DType::U16;
    case onnx::TensorProto::UINT32:
      return DType::U32;
    case onnx::TensorProto::UINT64:
      return DType::U64;
    // Newer than this protobuf schema: ONNX's numbers for the float8 types.
    case 17:
      return DType::F8E4M3FN;
    case 18:
      return DType::F8E4M3FNUZ;
    case 19:
      return DType::F8E5M2;
    case 20:
      return DType::F8E5M2FNUZ;
    // ... and for the sub-byte types (packed in initializers, unpacked here).
    case 21:
      return DType::U4;
    case 22:
      return DType::I4;
    case 23:
      return DType::F4E2M1;
    case 25:
      return DType::U2;
    case 26:
      return DType::I2;
    default:
      return std::nullopt;
  }
}

std::string onnxTypeName(int32_t onnx_type) {
  if (onnx::TensorProto::DataType_IsValid(onnx_type))
    return onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(onnx_type));
  // Types newer than the protobuf schema nanoc builds against (onnx.proto
  // of ONNX 1.23 numbers them so).
  static constexpr const char* kNewer[] = {
      "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",      "INT4",
      "FLOAT4E2M1",   "FLOAT8E8M0",     "UINT2",      "INT2",           "FLOAT6E2M3", "FLOAT6E3M2"};
  if (onnx_type >= 17 && onnx_type < 17 + static_cast<int32_t>(std::size(kNewer)))
    return kNewer[onnx_type - 17];
  return "data type " + std::to_string(onnx_type);
}

int64_t checkedNumel(const std::vector<int64_t>& dims, DType dtype, const std::string& what) {
  // 2^48 bytes is far beyond any deployable model and keeps every later
  // offset computation (bytes, strides) clear of int64 overflow.
  constexpr int64_t kMaxBytes = int64_t{1} << 48;
  int64_t numel = 1, span = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0)
      throw CompileError(what + " dim " + std::to_string(i) + " is negative (" +
                         std::to_string(dims[i]) + ")");
    // Zero dims count as one here, so that a zero-element tensor cannot hide
    // dims whose product (a stride, a flattened size) overflows downstream.
    const int64_t factor = dims[i] == 0 ? 1 : dims[i];
    if (span > kMaxBytes / factor) throw CompileError(what + " is too large to address");
    span *= factor;
    numel *= dims[i];
  }
  if (span > kMaxBytes / dtypeSize(dtype)) throw CompileError(what + " is too large to address");
  return numel;
}

namespace {

template <typename Dst, typename Field>
std::vector<uint8_t> packTyped(const Field& field, int64_t numel, const std::string& what,
                               const char* field_name) {
  if (static_cast<int64_t>(field.size()) != numel)
    throw CompileError(what + " has " + std::to_string(field.size()) + " values in " + field_name +
                       ", its dims need " + std::to_string(numel));
  std::vector<uint8_t> bytes(static_cast<size_t>(numel) * sizeof(Dst));
  for (int64_t i = 0; i < numel; ++i) {
    // int32_data holds f16/bf16 as their 16-bit patterns and bool as 0/1;
    // narrowing to the storage type is ONNX's documented encoding.
    Dst v = static_cast<Dst>(field.Get(static_cast<int>(i)));
    std::memcpy(bytes.data() + i * sizeof(Dst), &v, sizeof(Dst));
  }
  return bytes;
}

// ONNX packs sub-byte elements into bytes, low bits first (two 4-bit or four
// 2-bit elements a byte, the last byte padded); `packed` has one packed byte
// per entry. Unpacked, each element takes a byte of its own: its code in the
// low bits, the rest zero.
template <typename Field>
std::vector<uint8_t> unpackSubByte(const Field& packed, int64_t numel, int bits,
                                   const std::string& what, const char* field_name) {
  const int per_byte = 8 / bits;
  const int64_t need = numel / per_byte + (numel % per_byte != 0);
  if (static_cast<int64_t>(packed.size()) != need)
    throw CompileError(what + " has " + std::to_string(packed.size()) + " packed bytes in " +
                       field_name + ", its dims need " + std::to_string(need) + " (" +
                       std::to_string(per_byte) + " elements a byte)");
  std::vector<uint8_t> bytes(static_cast<size_t>(numel));
  const unsigned mask = (1u << bits) - 1;
  for (int64_t i = 0; i < numel; ++i) {
    const auto byte = static_cast<uint8_t>(packed[static_cast<int>(i / per_byte)]);
    bytes[static_cast<size_t>(i)] =
        static_cast<uint8_t>((byte >> (bits * static_cast<int>(i % per_byte))) & mask);
  }
  return bytes;
}

}  // namespace

ConstantTensor decodeTensor(const onnx::TensorProto& tensor, const std::string& what) {
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL || tensor.external_data_size() > 0)
    throw CompileError(what +
                       " keeps its data in an external file, which nanoc does not read; "
                       "re-save the model with onnx.save(model, path, "
                       "save_as_external_data=False) (models up to 2 GiB)");
  if (tensor.has_segment()) throw CompileError(what + " is a segmented tensor (unsupported)");
  std::optional<DType> dtype = dtypeFromOnnx(tensor.data_type());
  if (!dtype)
    throw CompileError(what + " has dtype " + onnxTypeName(tensor.data_type()) +
                       ", which nanoc does not support");
  ConstantTensor out;
  out.type.dtype = *dtype;
  out.type.dims.assign(tensor.dims().begin(), tensor.dims().end());
  int64_t numel = checkedNumel(out.type.dims, *dtype, what);
  uint64_t nbytes = static_cast<uint64_t>(numel) * dtypeSize(*dtype);

  if (isSubByte(*dtype)) {
    const int bits = subByteBits(*dtype);
    if (tensor.has_raw_data())
      out.bytes = unpackSubByte(tensor.raw_data(), numel, bits, what, "raw_data");
    else
      out.bytes = unpackSubByte(tensor.int32_data(), numel, bits, what, "int32_data");
    return out;
  }
  if (tensor.has_raw_data()) {
    const std::string& raw = tensor.raw_data();
    if (raw.size() != nbytes)
      throw CompileError(what + " has " + std::to_string(raw.size()) + " bytes of raw_data, " +
                         out.type.str() + " needs " + std::to_string(nbytes));
    out.bytes.assign(raw.begin(), raw.end());
    if (*dtype == DType::Bool)
      for (uint8_t& b : out.bytes) b = b != 0;
    return out;
  }
  switch (*dtype) {
    case DType::F32:
      out.bytes = packTyped<float>(tensor.float_data(), numel, what, "float_data");
      break;
    case DType::F16:
    case DType::BF16:
      out.bytes = packTyped<uint16_t>(tensor.int32_data(), numel, what, "int32_data");
      break;
    case DType::I8:
      out.bytes = packTyped<int8_t>(tensor.int32_data(), numel, what, "int32_data");
      break;
    case DType::U8:
      out.bytes = packTyped<uint8_t>(tensor.int32_data(), numel, what, "int32_data");
      break;
    case DType::I32:
      out.bytes = packTyped<int32_t>(tensor.int32_data(), numel, what, "int32_data");
      break;
    case DType::Bool:
      out.bytes = packTyped<uint8_t>(tensor.int32_data(), numel, what, "int32_data");
      for (uint8_t& b : out.bytes) b = b != 0;
      break;
    case DType::I64:
      out.bytes = packTyped<int64_t>(tensor.int64_data(), numel, what, "int64_data");
      break;
    case DType::F64:
      out.bytes = packTyped<double>(tensor.double_data(), numel, what, "double_data");
      break;
    case DType::I16:
      out.bytes = packTyped<int16_t>(tensor.int32_data(), numel, what, "int32_data");
      break;
    case DType::U16:
      out.bytes = packTyped<uint16_t>(tensor.int32_data(), numel, what, "int32_data");
      break;
    case DType::U32:
      out.bytes = packTyped<uint32_t>(tensor.uint64_data(), numel, what, "uint64_data");
      break;
    case DType::U64:
      out.bytes = packTyped<uint64_t>(tensor.uint64_data(), numel, what, "uint64_data");
      break;
    case DType::F8E4M3FN:
    case DType::F8E4M3FNUZ:
    case DType::F8E5M2:
    case DType::F8E5M2FNUZ:
      out.bytes = packTyped<uint8_t>(tensor.int32_data(), numel, what, "int32_data");
      break;
    case DType::I4:
    case DType::U4:
    case DType::I2:
    case DType::U2:
    case DType::F4E2M1:
      break;  // unpacked above
  }
  return out;
}

std::string nonTensorKind(const onnx::TypeProto& type) {
  switch (type.value_case()) {
    case onnx::TypeProto::kSequenceType:
      return "a sequence";
    case onnx::TypeProto::kMapType:
      return "a map";
    case onnx::TypeProto::kOptionalType:
      return "an optional";
    case onnx::TypeProto::kSparseTensorType:
      return "a sparse tensor";
    case onnx::TypeProto::kTensorType:
      return "a tensor";
    default:
      return "of unknown type";
  }
}

TensorType inputTypeOf(const onnx::ValueInfoProto& info, const std::vector<int64_t>* shape,
                       const std::map<std::string, int64_t>& dim_params,
                       std::vector<OpenDim>& open) {
  std::string what = "input '" + info.name() + "'";
  if (!info.has_type() || !info.type().has_tensor_type())
    throw CompileError(what + " is " + nonTensorKind(info.type()) +
                       ": nanoc supports tensor inputs only");
  const onnx::TypeProto::Tensor& t = info.type().tensor_type();
  std::optional<DType> dtype = dtypeFromOnnx(t.elem_type());
  if (!dtype)
    throw CompileError(what + " has dtype " + onnxTypeName(t.elem_type()) +
                       ", which nanoc does not support");
  TensorType type;
  type.dtype = *dtype;
  if (!t.has_shape()) {
    if (!shape)
      throw CompileError(what + " has no shape, not even a rank: give it one with --input-shape " +
                         info.name() + "=d0,d1,...");
    type.dims = *shape;
  } else {
    const int rank = t.shape().dim_size();
    if (shape && shape->size() != static_cast<size_t>(rank))
      throw CompileError("--input-shape " + info.name() + " has " + std::to_string(shape->size()) +
                         " dims, but the model's " + what + " has rank " + std::to_string(rank));
    for (int i = 0; i < rank; ++i) {
      const onnx::TensorShapeProto::Dimension& d = t.shape().dim(i);
      std::string where = what + " dim " + std::to_string(i);
      if (d.has_dim_value()) {
        if (d.dim_value() < 0)
          throw CompileError(where + " is negative (" + std::to_string(d.dim_value()) + ")");
        if (shape && (*shape)[static_cast<size_t>(i)] != d.dim_value())
          throw CompileError("--input-shape " + info.name() + " sets dim " + std::to_string(i) +
                             " to " + std::to_string((*shape)[static_cast<size_t>(i)]) +
                             ", but the model fixes it at " + std::to_string(d.dim_value()));
        type.dims.push_back(d.dim_value());
      } else if (shape) {
        type.dims.push_back((*shape)[static_cast<size_t>(i)]);
      } else if (auto it = dim_params.find(d.dim_param());
                 d.has_dim_param() && it != dim_params.end()) {
        type.dims.push_back(it->second);
      } else {
        open.push_back({info.name(), static_cast<size_t>(i), d.dim_param()});
        type.dims.push_back(1);
      }
    }
  }
  for (size_t i = 0; i < type.dims.size(); ++i)
    if (type.dims[i] < 0)
      throw CompileError(what + " dim " + std::to_string(i) + " is negative (" +
                         std::to_string(type.dims[i]) + ")");
  checkedNumel(type.dims, type.dtype, what + " " + type.str());
  return type;
}

}  // namespace nanoc::onnx_import
