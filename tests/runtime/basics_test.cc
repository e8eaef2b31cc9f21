#include <gtest/gtest.h>
#include <string.h>

#include "nanort/nanort.h"

namespace {

TEST(StatusCodeName, NamesEveryCode) {
  EXPECT_STREQ(nanort_status_code_name(NANORT_OK), "OK");
  EXPECT_STREQ(nanort_status_code_name(NANORT_INVALID_PROGRAM), "INVALID_PROGRAM");
  EXPECT_STREQ(nanort_status_code_name(NANORT_UNAVAILABLE), "UNAVAILABLE");
  EXPECT_STREQ(nanort_status_code_name(static_cast<nanort_status_code>(99)), "UNKNOWN_STATUS");
}

TEST(Dtype, NamesAndSizesMatchTheSchemaNumbering) {
  EXPECT_STREQ(nanort_dtype_name(NANORT_F32), "f32");
  EXPECT_STREQ(nanort_dtype_name(NANORT_BF16), "bf16");
  EXPECT_STREQ(nanort_dtype_name(NANORT_BOOL), "bool");
  EXPECT_STREQ(nanort_dtype_name(static_cast<nanort_dtype>(8)), "?");
  EXPECT_EQ(nanort_dtype_size(NANORT_F32), 4u);
  EXPECT_EQ(nanort_dtype_size(NANORT_F16), 2u);
  EXPECT_EQ(nanort_dtype_size(NANORT_I64), 8u);
  EXPECT_EQ(nanort_dtype_size(NANORT_U8), 1u);
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
