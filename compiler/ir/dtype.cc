#include "compiler/ir/dtype.h"

#include <array>

namespace nanoc {
namespace {

constexpr std::array<DTypeInfo, 22> kDTypes = {{
    {DType::F32, "f32", 4},
    {DType::F16, "f16", 2},
    {DType::BF16, "bf16", 2},
    {DType::I8, "i8", 1},
    {DType::U8, "u8", 1},
    {DType::I32, "i32", 4},
    {DType::I64, "i64", 8},
    {DType::Bool, "bool", 1},
    {DType::F64, "f64", 8},
    {DType::I16, "i16", 2},
    {DType::U16, "u16", 2},
    {DType::U32, "u32", 4},
    {DType::U64, "u64", 8},
    {DType::F8E4M3FN, "f8e4m3fn", 1},
    {DType::F8E4M3FNUZ, "f8e4m3fnuz", 1},
    {DType::F8E5M2, "f8e5m2", 1},
    {DType::F8E5M2FNUZ, "f8e5m2fnuz", 1},
    {DType::I4, "i4", 1},
    {DType::U4, "u4", 1},
    {DType::I2, "i2", 1},
    {DType::U2, "u2", 1},
    {DType::F4E2M1, "f4e2m1", 1},
}};

}  // namespace

const DTypeInfo& dtypeInfo(DType dtype) { return kDTypes[static_cast<size_t>(dtype)]; }

std::optional<DType> parseDType(std::string_view name) {
  for (const DTypeInfo& info : kDTypes)
    if (info.name == name) return info.dtype;
  return std::nullopt;
}

}  // namespace nanoc
