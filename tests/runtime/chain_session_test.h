// A fixture for tests that load the chain program (test_program.h) and run it
// through one session: the model, the session, the status and the [1,4] input
// and output buffers, released after each test.
#ifndef NANORT_TESTS_RUNTIME_CHAIN_SESSION_TEST_H_
#define NANORT_TESTS_RUNTIME_CHAIN_SESSION_TEST_H_

#include <gtest/gtest.h>

#include "nanort/nanort.h"
#include "test_program.h"

namespace nanort::test {

inline constexpr int64_t kChainDims[] = {1, 4};

class ChainSessionTest : public ::testing::Test {
 protected:
  void TearDown() override {
    nanort_session_release(session_);
    nanort_model_release(model_);
  }
  // Loads chain_ (after a test's SetUp changed its kernels, if it does).
  void LoadChain() {
    ASSERT_EQ(nanort_model_load(&chain_.def, nanort_allocator_system(), &model_, &status_),
              NANORT_OK)
        << status_.message;
  }
  // One run of x_ into y_, both f32[1,4].
  nanort_status_code RunChain() {
    const nanort_tensor x{x_, NANORT_F32, 2, kChainDims}, y{y_, NANORT_F32, 2, kChainDims};
    return nanort_run(session_, &x, 1, &y, 1, &status_);
  }

  ChainModel chain_;
  nanort_model* model_ = nullptr;
  nanort_session* session_ = nullptr;
  nanort_status status_;
  float x_[4] = {1, 2, 3, 4};
  float y_[4] = {-1, -1, -1, -1};
};

}  // namespace nanort::test

#endif  // NANORT_TESTS_RUNTIME_CHAIN_SESSION_TEST_H_
