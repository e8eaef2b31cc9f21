// nanort_session_create and nanort_run on the chain program.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <string.h>

#include "chain_session_test.h"
#include "nanort/nanort.hpp"
#include "test_util.h"

namespace nanort::test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const int64_t* kDims = kChainDims;

nanort_tensor F32Tensor(float* data, const int64_t* dims = kDims, uint32_t rank = 2) {
  return nanort_tensor{data, NANORT_F32, rank, dims};
}

class RunTest : public ChainSessionTest {
 protected:
  void SetUp() override { LoadChain(); }
  nanort_status_code CreateSession(void* arena = nullptr, size_t arena_size = 0) {
    return nanort_session_create(model_, arena, arena_size, nanort_allocator_system(), &session_,
                                 &status_);
  }
  nanort_status_code Run(const nanort_tensor& x, const nanort_tensor& y) {
    return nanort_run(session_, &x, 1, &y, 1, &status_);
  }
};

TEST_F(RunTest, ComputesTheChainWithAnArenaItAllocates) {
  ASSERT_EQ(CreateSession(), NANORT_OK) << status_.message;
  ASSERT_EQ(Run(F32Tensor(x_), F32Tensor(y_)), NANORT_OK) << status_.message;
  // (x + w) * s with w = [10, 20, 30, 40], s = 0.5
  EXPECT_THAT(y_, ElementsAre(5.5f, 11.0f, 16.5f, 22.0f));
}

TEST_F(RunTest, RunsAgainWithNewInputs) {
  ASSERT_EQ(CreateSession(), NANORT_OK) << status_.message;
  ASSERT_EQ(Run(F32Tensor(x_), F32Tensor(y_)), NANORT_OK);
  float x2[4] = {0, 0, 2, -40};
  float y2[4] = {};
  ASSERT_EQ(Run(F32Tensor(x2), F32Tensor(y2)), NANORT_OK);
  EXPECT_THAT(y2, ElementsAre(5.0f, 10.0f, 16.0f, 0.0f));
  ASSERT_EQ(Run(F32Tensor(x_), F32Tensor(y_)), NANORT_OK);
  EXPECT_THAT(y_, ElementsAre(5.5f, 11.0f, 16.5f, 22.0f));
}

TEST_F(RunTest, ComputesTheChainInTheCallersArena) {
  alignas(64) uint8_t arena[80];
  memset(arena, 0xcd, sizeof(arena));
  ASSERT_EQ(CreateSession(arena, sizeof(arena)), NANORT_OK) << status_.message;
  ASSERT_EQ(Run(F32Tensor(x_), F32Tensor(y_)), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(5.5f, 11.0f, 16.5f, 22.0f));
  float t1[4];
  memcpy(t1, arena + 64, sizeof(t1));  // the scale kernel's result, in place
  EXPECT_THAT(t1, ElementsAre(5.5f, 11.0f, 16.5f, 22.0f));
}

TEST_F(RunTest, RefusesAnArenaTooSmall) {
  // At exactly 64-byte alignment: a multiple of 64 that is not one of 128.
  alignas(128) uint8_t arena[256];
  EXPECT_EQ(CreateSession(arena + 64, 72), NANORT_ARENA_TOO_SMALL);
  EXPECT_EQ(session_, nullptr);
  EXPECT_STREQ(status_.message,
               "arena of 72 bytes at alignment 64, model needs 80 bytes at "
               "alignment 64");
}

TEST_F(RunTest, RefusesAMisalignedArena) {
  alignas(64) uint8_t arena[256];
  EXPECT_EQ(CreateSession(arena + 16, 200), NANORT_ARENA_TOO_SMALL);
  EXPECT_STREQ(status_.message,
               "arena of 200 bytes at alignment 16, model needs 80 bytes at "
               "alignment 64");
}

TEST_F(RunTest, RefusesAWrongInputShapeNamingTheInput) {
  ASSERT_EQ(CreateSession(), NANORT_OK);
  const int64_t dims[] = {1, 3};
  EXPECT_EQ(Run(F32Tensor(x_, dims), F32Tensor(y_)), NANORT_SHAPE_MISMATCH);
  EXPECT_STREQ(status_.message, "input 'x': shape [1,3] given, model needs [1,4]");
  EXPECT_EQ(Run(F32Tensor(x_), F32Tensor(y_, kDims + 1, 1)), NANORT_SHAPE_MISMATCH);
  EXPECT_STREQ(status_.message, "output 'y': shape [4] given, model needs [1,4]");
  EXPECT_THAT(y_, ElementsAre(-1, -1, -1, -1));  // nothing ran
}

TEST_F(RunTest, RefusesAWrongDtype) {
  ASSERT_EQ(CreateSession(), NANORT_OK);
  nanort_tensor x = F32Tensor(x_);
  x.dtype = NANORT_I32;
  EXPECT_EQ(Run(x, F32Tensor(y_)), NANORT_SHAPE_MISMATCH);
  EXPECT_STREQ(status_.message, "input 'x': dtype i32 given, model needs f32");
}

TEST_F(RunTest, RefusesAWrongTensorCount) {
  ASSERT_EQ(CreateSession(), NANORT_OK);
  nanort_tensor x[2] = {F32Tensor(x_), F32Tensor(x_)};
  nanort_tensor y = F32Tensor(y_);
  EXPECT_EQ(nanort_run(session_, x, 2, &y, 1, &status_), NANORT_INVALID_ARGUMENT);
  EXPECT_STREQ(status_.message, "2 inputs given, model takes 1");
  EXPECT_EQ(nanort_run(session_, x, 1, &y, 0, &status_), NANORT_INVALID_ARGUMENT);
  EXPECT_STREQ(status_.message, "0 outputs given, model gives 1");
}

TEST_F(RunTest, RefusesNullArguments) {
  EXPECT_EQ(
      nanort_session_create(nullptr, nullptr, 0, nanort_allocator_system(), &session_, &status_),
      NANORT_INVALID_ARGUMENT);
  EXPECT_EQ(nanort_session_create(model_, nullptr, 0, nanort_allocator_system(), nullptr, &status_),
            NANORT_INVALID_ARGUMENT);
  ASSERT_EQ(CreateSession(), NANORT_OK);
  nanort_tensor y = F32Tensor(y_);
  EXPECT_EQ(nanort_run(nullptr, nullptr, 0, nullptr, 0, &status_), NANORT_INVALID_ARGUMENT);
  EXPECT_EQ(nanort_run(session_, nullptr, 1, &y, 1, &status_), NANORT_INVALID_ARGUMENT);
  EXPECT_STREQ(status_.message, "inputs is NULL");
  EXPECT_EQ(Run(F32Tensor(nullptr), y), NANORT_INVALID_ARGUMENT);
  EXPECT_STREQ(status_.message, "input 'x': data is NULL");
  EXPECT_EQ(Run(F32Tensor(x_, nullptr), y), NANORT_INVALID_ARGUMENT);
  EXPECT_STREQ(status_.message, "input 'x': rank 2 with NULL dims");
  // A NULL status is allowed everywhere.
  EXPECT_EQ(nanort_run(session_, nullptr, 1, &y, 1, nullptr), NANORT_INVALID_ARGUMENT);
  nanort_session_release(nullptr);
}

TEST_F(RunTest, RefusesMisalignedData) {
  ASSERT_EQ(CreateSession(), NANORT_OK);
  alignas(4) uint8_t bytes[20];
  EXPECT_EQ(Run(F32Tensor(reinterpret_cast<float*>(bytes + 1)), F32Tensor(y_)),
            NANORT_INVALID_ARGUMENT);
  EXPECT_THAT(status_.message, HasSubstr("is not aligned to its 4-byte elements"));
}

TEST_F(RunTest, RefusesAnOutputOverlappingAnInput) {
  ASSERT_EQ(CreateSession(), NANORT_OK);
  float both[6] = {};
  EXPECT_EQ(Run(F32Tensor(both), F32Tensor(both + 2)), NANORT_INVALID_ARGUMENT);
  EXPECT_STREQ(status_.message, "output 'y' overlaps input 'x'");
  // In-place is overlap too.
  EXPECT_EQ(Run(F32Tensor(x_), F32Tensor(x_)), NANORT_INVALID_ARGUMENT);
}

TEST_F(RunTest, SessionsOnOneModelAreIndependent) {
  ASSERT_EQ(CreateSession(), NANORT_OK);
  nanort_session* other = nullptr;
  ASSERT_EQ(nanort_session_create(model_, nullptr, 0, nanort_allocator_system(), &other, nullptr),
            NANORT_OK);
  float y2[4];
  nanort_tensor x = F32Tensor(x_), y = F32Tensor(y2);
  ASSERT_EQ(nanort_run(other, &x, 1, &y, 1, nullptr), NANORT_OK);
  nanort_session_release(other);
  ASSERT_EQ(Run(F32Tensor(x_), F32Tensor(y_)), NANORT_OK);
  EXPECT_THAT(y2, ElementsAre(5.5f, 11.0f, 16.5f, 22.0f));
  EXPECT_THAT(y_, ElementsAre(5.5f, 11.0f, 16.5f, 22.0f));
}

// Counts calls, to show that run allocates nothing.
struct CountingAllocator {
  int allocs = 0;
  int frees = 0;
  nanort_allocator Get() {
    return nanort_allocator{this,
                            [](void* self, size_t size, size_t alignment) {
                              ++static_cast<CountingAllocator*>(self)->allocs;
                              const nanort_allocator system = nanort_allocator_system();
                              return system.alloc(system.self, size, alignment);
                            },
                            [](void* self, void* ptr) {
                              ++static_cast<CountingAllocator*>(self)->frees;
                              free(ptr);
                            }};
  }
};

TEST(Run, AllocatesOnlyAtLoadAndSessionCreation) {
  ChainModel chain;
  CountingAllocator counting;
  nanort_model* model = nullptr;
  ASSERT_EQ(nanort_model_load(&chain.def, counting.Get(), &model, nullptr), NANORT_OK);
  nanort_session* session = nullptr;
  ASSERT_EQ(nanort_session_create(model, nullptr, 0, counting.Get(), &session, nullptr), NANORT_OK);
  const int allocs = counting.allocs;
  float x[4] = {1, 2, 3, 4}, y[4];
  nanort_tensor in = F32Tensor(x), out = F32Tensor(y);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(nanort_run(session, &in, 1, &out, 1, nullptr), NANORT_OK);
  EXPECT_EQ(counting.allocs, allocs);
  nanort_session_release(session);
  nanort_model_release(model);
  EXPECT_EQ(counting.allocs, counting.frees);
}

TEST(CppWrapper, LoadsCreatesAndRunsWithMoveOnlyOwners) {
  ChainModel chain;
  nanort::Model model;
  nanort_status status;
  ASSERT_EQ(nanort::Model::Load(chain.def, &model, &status), NANORT_OK) << status.message;
  ASSERT_TRUE(model);
  nanort::Model moved = std::move(model);
  EXPECT_FALSE(model);  // NOLINT: testing the moved-from state
  EXPECT_EQ(moved.input_count(), 1u);
  EXPECT_EQ(moved.arena_size(), 80u);
  nanort::Session session;
  ASSERT_EQ(nanort::Session::Create(moved, &session, &status), NANORT_OK) << status.message;
  float x[4] = {1, 2, 3, 4}, y[4];
  nanort_tensor in = F32Tensor(x), out = F32Tensor(y);
  ASSERT_EQ(session.Run(&in, 1, &out, 1, &status), NANORT_OK) << status.message;
  EXPECT_THAT(y, ElementsAre(5.5f, 11.0f, 16.5f, 22.0f));
  nanort::Session other;
  other = std::move(session);
  EXPECT_FALSE(session);  // NOLINT
  EXPECT_EQ(other.Run(&in, 1, &out, 1), NANORT_OK);
}

TEST(CppWrapper, ReturnsTheLoadErrorAndLeavesTheModelEmpty) {
  ProgramSpec spec = ChainSpec();
  spec.format_major = 9;
  ChainModel chain(spec);
  nanort::Model model;
  nanort_status status;
  EXPECT_EQ(nanort::Model::Load(chain.def, &model, &status), NANORT_UNSUPPORTED_VERSION);
  EXPECT_FALSE(model);
}

}  // namespace
}  // namespace nanort::test
