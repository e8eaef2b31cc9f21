// The one dtype table of the compiler. Numbering equals schema/program.fbs
// DType and nanort.h nanort_dtype.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace nanoc {

enum class DType : uint8_t {
  F32 = 0,
  F16 = 1,
  BF16 = 2,
  I8 = 3,
  U8 = 4,
  I32 = 5,
  I64 = 6,
  Bool = 7,
  F64 = 8,
  I16 = 9,
  U16 = 10,
  U32 = 11,
  U64 = 12,
  F8E4M3FN = 13,
  F8E4M3FNUZ = 14,
  F8E5M2 = 15,
  F8E5M2FNUZ = 16,
  // Sub-byte types, stored one element a byte (as ml_dtypes holds them): the
  // code in the low bits (two's complement for I4 and I2), the rest zero.
  I4 = 17,
  U4 = 18,
  I2 = 19,
  U2 = 20,
  F4E2M1 = 21
};

struct DTypeInfo {
  DType dtype;
  std::string_view name;  // as in the text IR: "f32", "i64", "bool", ...
  uint32_t size;          // bytes per element
};

const DTypeInfo& dtypeInfo(DType dtype);
inline std::string_view dtypeName(DType dtype) { return dtypeInfo(dtype).name; }
inline uint32_t dtypeSize(DType dtype) { return dtypeInfo(dtype).size; }
std::optional<DType> parseDType(std::string_view name);

}  // namespace nanoc
