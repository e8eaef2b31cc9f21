#include "compiler/ir/dtype.h"

#include <array>

namespace nanoc {
namespace {

constexpr std::array<DTypeInfo, 8> kDTypes = {{
    {DType::F32, "f32", 4},
    {DType::F16, "f16", 2},
    {DType::BF16, "bf16", 2},
    {DType::I8, "i8", 1},
    {DType::U8, "u8", 1},
    {DType::I32, "i32", 4},
    {DType::I64, "i64", 8},
    {DType::Bool, "bool", 1},
}};

}  // namespace

const DTypeInfo& dtypeInfo(DType dtype) { return kDTypes[static_cast<size_t>(dtype)]; }

std::optional<DType> parseDType(std::string_view name) {
  for (const DTypeInfo& info : kDTypes)
    if (info.name == name) return info.dtype;
  return std::nullopt;
}

}  // namespace nanoc
