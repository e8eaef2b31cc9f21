// nanort_model_load_file with a shared object built beside the tests.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "nanort/nanort.h"

namespace {

using ::testing::HasSubstr;

TEST(ModelLoadFile, ReportsAMissingFile) {
  nanort_model* model = nullptr;
  nanort_status status;
  EXPECT_EQ(nanort_model_load_file("/nonexistent/dir/mnist.so", nullptr, nanort_allocator_system(),
                                   &model, &status),
            NANORT_NOT_FOUND);
  EXPECT_EQ(model, nullptr);
  EXPECT_THAT(status.message, HasSubstr("cannot load '/nonexistent/dir/mnist.so'"));
}

TEST(ModelLoadFile, LoadsAndRunsAModelNamedByItsFile) {
  nanort_model* model = nullptr;
  nanort_status status;
  ASSERT_EQ(nanort_model_load_file(NANORT_TEST_ADDONE_SO, nullptr, nanort_allocator_system(),
                                   &model, &status),
            NANORT_OK)
      << status.message;
  nanort_session* session = nullptr;
  ASSERT_EQ(nanort_session_create(model, nullptr, 0, nanort_allocator_system(), &session, &status),
            NANORT_OK)
      << status.message;
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  const int64_t dims[] = {4};
  nanort_tensor in{x, NANORT_F32, 1, dims}, out{y, NANORT_F32, 1, dims};
  ASSERT_EQ(nanort_run(session, &in, 1, &out, 1, &status), NANORT_OK) << status.message;
  EXPECT_THAT(y, ::testing::ElementsAre(2, 3, 4, 5));
  nanort_session_release(session);
  nanort_model_release(model);
}

TEST(ModelLoadFile, ReportsAMissingSymbol) {
  nanort_model* model = nullptr;
  nanort_status status;
  EXPECT_EQ(nanort_model_load_file(NANORT_TEST_ADDONE_SO, "mnist", nanort_allocator_system(),
                                   &model, &status),
            NANORT_NOT_FOUND);
  EXPECT_THAT(status.message, HasSubstr("has no symbol mnist_model"));
}

TEST(ModelLoadFile, RefusesNullArguments) {
  nanort_model* model = nullptr;
  EXPECT_EQ(nanort_model_load_file(nullptr, nullptr, nanort_allocator_system(), &model, nullptr),
            NANORT_INVALID_ARGUMENT);
  EXPECT_EQ(nanort_model_load_file(NANORT_TEST_ADDONE_SO, nullptr, nanort_allocator_system(),
                                   nullptr, nullptr),
            NANORT_INVALID_ARGUMENT);
}

}  // namespace
