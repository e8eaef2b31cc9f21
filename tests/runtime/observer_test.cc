// Observing a run (nanort_session_set_thunk_observer) and naming its thunks
// (nanort_model_thunk_count/_info), on the chain program: add, scale, copy.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <string.h>

#include <string>
#include <vector>

#include "chain_session_test.h"
#include "nanort/nanort.h"
#include "test_util.h"

namespace nanort::test {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

constexpr const int64_t* kDims = kChainDims;

// What the observer saw: "B0" for NANORT_THUNK_BEGIN of thunk 0, "E0" for its
// end, and the output's first element at each call.
struct Trace {
  std::vector<std::string> events;
  std::vector<float> y0_seen;
  const float* y = nullptr;
};

void Record(void* user_data, size_t thunk_index, nanort_thunk_event event) {
  Trace* trace = static_cast<Trace*>(user_data);
  trace->events.push_back((event == NANORT_THUNK_BEGIN ? "B" : "E") + std::to_string(thunk_index));
  trace->y0_seen.push_back(trace->y[0]);
}

class ObserverTest : public ChainSessionTest {
 protected:
  void SetUp() override {
    LoadChain();
    if (HasFatalFailure()) return;
    ASSERT_EQ(
        nanort_session_create(model_, nullptr, 0, nanort_allocator_system(), &session_, &status_),
        NANORT_OK)
        << status_.message;
    trace_.y = y_;
  }
  // Sets the recording observer; skips the test in builds without observers.
  void Observe() {
    const nanort_status_code code =
        nanort_session_set_thunk_observer(session_, &Record, &trace_, &status_);
    if (code == NANORT_UNAVAILABLE) GTEST_SKIP() << status_.message;
    ASSERT_EQ(code, NANORT_OK) << status_.message;
  }
  nanort_status_code Run() { return RunChain(); }

  Trace trace_;
};

TEST_F(ObserverTest, SeesEveryThunkBeginAndEndOnceARunInOrder) {
  Observe();
  if (IsSkipped()) return;
  ASSERT_EQ(Run(), NANORT_OK) << status_.message;
  EXPECT_THAT(trace_.events, ElementsAre("B0", "E0", "B1", "E1", "B2", "E2"));
  ASSERT_EQ(Run(), NANORT_OK) << status_.message;
  EXPECT_THAT(trace_.events,
              ElementsAre("B0", "E0", "B1", "E1", "B2", "E2", "B0", "E0", "B1", "E1", "B2", "E2"));
  EXPECT_THAT(y_, ElementsAre(5.5f, 11.0f, 16.5f, 22.0f));
}

TEST_F(ObserverTest, IsCalledAroundTheThunksWork) {
  Observe();
  if (IsSkipped()) return;
  ASSERT_EQ(Run(), NANORT_OK) << status_.message;
  // Only the last thunk (the copy into y) writes y: before its end y[0] is
  // still the caller's -1, after it the result.
  EXPECT_THAT(trace_.y0_seen, ElementsAre(-1, -1, -1, -1, -1, 5.5f));
}

TEST_F(ObserverTest, ARunWithoutOneComputesTheSame) {
  ASSERT_EQ(Run(), NANORT_OK) << status_.message;
  float plain[4];
  memcpy(plain, y_, sizeof(plain));
  Observe();
  if (IsSkipped()) return;
  memset(y_, 0, sizeof(y_));
  ASSERT_EQ(Run(), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAreArray(plain));
  EXPECT_THAT(plain, ElementsAre(5.5f, 11.0f, 16.5f, 22.0f));
}

TEST_F(ObserverTest, RemovedIsNotCalledAgain) {
  Observe();
  if (IsSkipped()) return;
  ASSERT_EQ(nanort_session_set_thunk_observer(session_, nullptr, &trace_, &status_), NANORT_OK);
  ASSERT_EQ(Run(), NANORT_OK) << status_.message;
  EXPECT_TRUE(trace_.events.empty());
  EXPECT_THAT(y_, ElementsAre(5.5f, 11.0f, 16.5f, 22.0f));
}

TEST_F(ObserverTest, IsNotCalledByARunThatFailsItsChecks) {
  Observe();
  if (IsSkipped()) return;
  const int64_t wrong[] = {4, 1};
  const nanort_tensor x{x_, NANORT_F32, 2, wrong}, y{y_, NANORT_F32, 2, kDims};
  ASSERT_EQ(nanort_run(session_, &x, 1, &y, 1, &status_), NANORT_SHAPE_MISMATCH);
  EXPECT_TRUE(trace_.events.empty());
}

TEST_F(ObserverTest, NeedsASession) {
  EXPECT_EQ(nanort_session_set_thunk_observer(nullptr, &Record, &trace_, &status_),
            NANORT_INVALID_ARGUMENT);
  EXPECT_STREQ(status_.message, "session is NULL");
}

TEST_F(ObserverTest, ThunkInfoNamesEachThunkInRunOrder) {
  ASSERT_EQ(nanort_model_thunk_count(model_), 3u);
  nanort_thunk_info info;
  ASSERT_EQ(nanort_model_thunk_info(model_, 0, &info), NANORT_OK);
  EXPECT_STREQ(info.node, "add0");
  EXPECT_STREQ(info.op, "Add");
  EXPECT_EQ(info.is_copy, 0);
  EXPECT_EQ(info.kernel, 0u);
  ASSERT_EQ(nanort_model_thunk_info(model_, 1, &info), NANORT_OK);
  EXPECT_STREQ(info.node, "mul0");
  EXPECT_STREQ(info.op, "Mul");
  EXPECT_EQ(info.kernel, 1u);
  ASSERT_EQ(nanort_model_thunk_info(model_, 2, &info), NANORT_OK);
  EXPECT_STREQ(info.node, "y");
  EXPECT_STREQ(info.op, "Copy");
  EXPECT_EQ(info.is_copy, 1);
}

TEST_F(ObserverTest, ThunkInfoRefusesWhatIsNotThere) {
  nanort_thunk_info info;
  EXPECT_EQ(nanort_model_thunk_info(model_, 3, &info), NANORT_INVALID_ARGUMENT);
  EXPECT_EQ(nanort_model_thunk_info(model_, 0, nullptr), NANORT_INVALID_ARGUMENT);
  EXPECT_EQ(nanort_model_thunk_info(nullptr, 0, &info), NANORT_INVALID_ARGUMENT);
  EXPECT_EQ(nanort_model_thunk_count(nullptr), 0u);
}

TEST(ThunkInfo, AnUnnamedThunkHasEmptyNames) {
  ProgramSpec spec = ChainSpec();
  spec.thunks[0].node.clear();
  spec.thunks[0].op.clear();
  ChainModel chain(spec);
  nanort_model* model = nullptr;
  nanort_status status;
  ASSERT_EQ(nanort_model_load(&chain.def, nanort_allocator_system(), &model, &status), NANORT_OK)
      << status.message;
  nanort_thunk_info info;
  ASSERT_EQ(nanort_model_thunk_info(model, 0, &info), NANORT_OK);
  EXPECT_STREQ(info.node, "");
  EXPECT_STREQ(info.op, "");
  nanort_model_release(model);
}

}  // namespace
}  // namespace nanort::test
