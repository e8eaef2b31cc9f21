#include <gtest/gtest.h>
#include <string.h>

#include <utility>

#include "nanort/nanort.h"

namespace {

TEST(StatusCodeName, NamesEveryCode) {
  const std::pair<nanort_status_code, const char*> names[] = {
      {NANORT_OK, "OK"},
      {NANORT_INVALID_ARGUMENT, "INVALID_ARGUMENT"},
      {NANORT_INVALID_PROGRAM, "INVALID_PROGRAM"},
      {NANORT_UNSUPPORTED_VERSION, "UNSUPPORTED_VERSION"},
      {NANORT_UNSUPPORTED_TARGET, "UNSUPPORTED_TARGET"},
      {NANORT_ARENA_TOO_SMALL, "ARENA_TOO_SMALL"},
      {NANORT_SHAPE_MISMATCH, "SHAPE_MISMATCH"},
      {NANORT_NOT_FOUND, "NOT_FOUND"},
      {NANORT_OUT_OF_MEMORY, "OUT_OF_MEMORY"},
      {NANORT_UNAVAILABLE, "UNAVAILABLE"}};
  for (const auto& [code, name] : names) EXPECT_STREQ(nanort_status_code_name(code), name);
  EXPECT_STREQ(nanort_status_code_name(static_cast<nanort_status_code>(10)), "UNKNOWN_STATUS");
  EXPECT_STREQ(nanort_status_code_name(static_cast<nanort_status_code>(99)), "UNKNOWN_STATUS");
  EXPECT_STREQ(nanort_status_code_name(static_cast<nanort_status_code>(-1)), "UNKNOWN_STATUS");
}

TEST(Dtype, NamesAndSizesMatchTheSchemaNumbering) {
  const std::pair<nanort_dtype, const char*> names[] = {
      {NANORT_F32, "f32"}, {NANORT_F16, "f16"}, {NANORT_BF16, "bf16"}, {NANORT_I8, "i8"},
      {NANORT_U8, "u8"},   {NANORT_I32, "i32"}, {NANORT_I64, "i64"},   {NANORT_BOOL, "bool"},
      {NANORT_F64, "f64"}, {NANORT_I16, "i16"}, {NANORT_U16, "u16"},   {NANORT_U32, "u32"},
      {NANORT_U64, "u64"}};
  for (const auto& [dtype, name] : names) EXPECT_STREQ(nanort_dtype_name(dtype), name);
  EXPECT_STREQ(nanort_dtype_name(NANORT_F8E5M2FNUZ), "f8e5m2fnuz");
  EXPECT_STREQ(nanort_dtype_name(NANORT_I4), "i4");
  EXPECT_STREQ(nanort_dtype_name(NANORT_U2), "u2");
  EXPECT_STREQ(nanort_dtype_name(NANORT_F4E2M1), "f4e2m1");
  EXPECT_STREQ(nanort_dtype_name(static_cast<nanort_dtype>(22)), "?");
  EXPECT_STREQ(nanort_dtype_name(static_cast<nanort_dtype>(-1)), "?");
  EXPECT_EQ(nanort_dtype_size(NANORT_F32), 4u);
  EXPECT_EQ(nanort_dtype_size(NANORT_F16), 2u);
  EXPECT_EQ(nanort_dtype_size(NANORT_I64), 8u);
  EXPECT_EQ(nanort_dtype_size(NANORT_U8), 1u);
  EXPECT_EQ(nanort_dtype_size(NANORT_BOOL), 1u);
  EXPECT_EQ(nanort_dtype_size(NANORT_F64), 8u);
  EXPECT_EQ(nanort_dtype_size(NANORT_I16), 2u);
  EXPECT_EQ(nanort_dtype_size(NANORT_U16), 2u);
  EXPECT_EQ(nanort_dtype_size(NANORT_U32), 4u);
  EXPECT_EQ(nanort_dtype_size(NANORT_U64), 8u);
  EXPECT_EQ(nanort_dtype_size(NANORT_F8E4M3FN), 1u);
  EXPECT_EQ(nanort_dtype_size(NANORT_F8E5M2FNUZ), 1u);
  EXPECT_EQ(nanort_dtype_size(NANORT_I4), 1u);
  EXPECT_EQ(nanort_dtype_size(NANORT_F4E2M1), 1u);
  EXPECT_EQ(nanort_dtype_size(static_cast<nanort_dtype>(22)), 0u);
  EXPECT_EQ(nanort_dtype_size(static_cast<nanort_dtype>(200)), 0u);
}

TEST(SystemAllocator, ReturnsMemoryAtTheAskedAlignment) {
  nanort_allocator allocator = nanort_allocator_system();
  for (size_t alignment : {1, 8, 64, 4096}) {
    void* p = allocator.alloc(allocator.self, 100, alignment);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignment, 0u);
    memset(p, 1, 100);
    allocator.free(allocator.self, p);
  }
  void* empty = allocator.alloc(allocator.self, 0, 64);
  EXPECT_NE(empty, nullptr);
  allocator.free(allocator.self, empty);
}

TEST(SystemAllocator, RefusesAnAlignmentThatIsNotAPowerOfTwo) {
  nanort_allocator allocator = nanort_allocator_system();
  EXPECT_EQ(allocator.alloc(allocator.self, 64, 48), nullptr);
}

}  // namespace
