// Format 1.4's run-time control flow (IfThunk, LoopThunk): hand-built
// programs over the chain's kernels (add, scale) and copies, run through
// every kind of session, and the verifier's refusals of nested sequences.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdint.h>
#include <string.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chain_session_test.h"
#include "test_util.h"

namespace nanort::test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using K = fb::BufferKind;

// The buffers every program here has (not every program uses each).
enum : uint32_t {
  kX,         // input 0: f32[1,4]
  kCond,      // input 1: bool[1]
  kTrips,     // input 2: i64[1]
  kFlags,     // input 3: u8[8]
  kY,         // output 0: f32[1,4]
  kN,         // output 1: i64[1]
  kW,         // constant: [10, 20, 30, 40]
  kS,         // constant: 0.5
  kZero8,     // constant: 8 zero bytes
  kFalse,     // constant: one zero byte
  kTrue,      // constant: one nonzero byte
  kT0,        // arena, 16 bytes
  kT1,        // arena, 16 bytes
  kCounter,   // arena, 8 bytes
  kACond,     // arena, 1 byte
  kAcc,       // arena, 16 bytes: a loop's state
  kBits,      // arena, 8 bytes
  kBitsTail,  // its bytes 1..7
  kTmp8,      // arena, 8 bytes
  kBitsHead,  // bits' byte 0
  kBuffers
};

constexpr uint32_t kNone = 0xFFFFFFFF;

// Constants (ChainModel's): w at 0, s at 64, zeros at 88, constants[25] =
// 1.0f puts 0x3f at byte 103.
ProgramSpec ControlFlowSpec(std::vector<ThunkSpec> thunks) {
  ProgramSpec spec;
  spec.buffers = {
      {K::Input, 0, 0, 16, "x"},           {K::Input, 1, 0, 1, "cond", 1},
      {K::Input, 2, 0, 8, "trips", 8},     {K::Input, 3, 0, 8, "flags", 8},
      {K::Output, 0, 0, 16, "y"},          {K::Output, 1, 0, 8, "n", 8},
      {K::Constant, 0, 0, 16, "w"},        {K::Constant, 0, 64, 4, "s"},
      {K::Constant, 0, 88, 8, "zero8", 8}, {K::Constant, 0, 100, 1, "false", 1},
      {K::Constant, 0, 103, 1, "true", 1}, {K::Arena, 0, 0, 16, "t0"},
      {K::Arena, 0, 64, 16, "t1"},         {K::Arena, 0, 128, 8, "counter", 8},
      {K::Arena, 0, 192, 1, "acond", 1},   {K::Arena, 0, 256, 16, "acc"},
      {K::Arena, 0, 320, 8, "bits", 8},    {K::Arena, 0, 321, 7, "bits_tail", 1},
      {K::Arena, 0, 384, 8, "tmp8", 8},    {K::Arena, 0, 320, 1, "bits_head", 1},
  };
  spec.kernels = {"add_f32", "scale_f32"};
  spec.inputs = {{"x", fb::DType::F32, {1, 4}, kX},
                 {"cond", fb::DType::Bool, {1}, kCond},
                 {"trips", fb::DType::I64, {1}, kTrips},
                 {"flags", fb::DType::U8, {8}, kFlags}};
  spec.outputs = {{"y", fb::DType::F32, {1, 4}, kY}, {"n", fb::DType::I64, {1}, kN}};
  spec.thunks = std::move(thunks);
  spec.arena_size = 392;
  spec.constants_size = sizeof(ChainModel::constants);
  return spec;
}

ThunkSpec Add(uint32_t a, uint32_t out, std::string node = "add") {
  return KernelSpec(0, {a, kW, out}, std::move(node));
}
ThunkSpec Scale(uint32_t a, uint32_t out, std::string node = "scale") {
  return KernelSpec(1, {a, kS, out}, std::move(node));
}
ThunkSpec Copy16(uint32_t src, uint32_t dst) { return CopySpec(src, dst, 16); }
ThunkSpec Copy8(uint32_t src, uint32_t dst) { return CopySpec(src, dst, 8); }

// x -> acc; Loop(body) ; acc -> y; counter -> n.
std::vector<ThunkSpec> LoopOverAcc(uint32_t trip_count, uint32_t cond, uint64_t max_trips,
                                   std::vector<ThunkSpec> body) {
  return {Copy16(kX, kAcc), LoopSpec(trip_count, cond, kCounter, max_trips, std::move(body)),
          Copy16(kAcc, kY), Copy8(kCounter, kN)};
}

// acc += w, through t0.
std::vector<ThunkSpec> AddWToAcc() { return {Add(kAcc, kT0), Copy16(kT0, kAcc)}; }

// bits <<= one byte (bits[0] is the next iteration's condition).
std::vector<ThunkSpec> ShiftBits() {
  return {CopySpec(kBitsTail, kTmp8, 7), CopySpec(kTmp8, kBits, 7)};
}

class ControlFlowTest : public ::testing::Test {
 protected:
  void TearDown() override { Release(); }
  void Release() {
    nanort_session_release(session_);
    nanort_model_release(model_);
    session_ = nullptr;
    model_ = nullptr;
  }

  // Loads `thunks` as a program: NANORT_OK or what load said.
  nanort_status_code Load(std::vector<ThunkSpec> thunks) {
    Release();
    model_def_ = std::make_unique<ChainModel>(ControlFlowSpec(std::move(thunks)));
    model_def_->constants[25] = 1.0f;
    return nanort_model_load(&model_def_->def, nanort_allocator_system(), &model_, &status_);
  }
  // Loads and creates a session of `threads` threads.
  void Start(std::vector<ThunkSpec> thunks, uint32_t threads = 1) {
    ASSERT_EQ(Load(std::move(thunks)), NANORT_OK) << status_.message;
    nanort_session_options options{};
    options.struct_size = sizeof(options);
    options.num_threads = threads;
    ASSERT_EQ(nanort_session_create_with_options(model_, nullptr, 0, nanort_allocator_system(),
                                                 &options, &session_, &status_),
              NANORT_OK)
        << status_.message;
  }
  nanort_status_code Run(bool cond, int64_t trips = 0) {
    static constexpr int64_t kOne[] = {1}, kEight[] = {8};
    const uint8_t c = cond ? 1 : 0;
    const nanort_tensor inputs[] = {{x_, NANORT_F32, 2, kChainDims},
                                    {const_cast<uint8_t*>(&c), NANORT_BOOL, 1, kOne},
                                    {&trips, NANORT_I64, 1, kOne},
                                    {flags_, NANORT_U8, 1, kEight}};
    const nanort_tensor outputs[] = {{y_, NANORT_F32, 2, kChainDims}, {&n_, NANORT_I64, 1, kOne}};
    return nanort_run(session_, inputs, 4, outputs, 2, &status_);
  }

  std::unique_ptr<ChainModel> model_def_;
  nanort_model* model_ = nullptr;
  nanort_session* session_ = nullptr;
  nanort_status status_;
  float x_[4] = {1, 2, 3, 4};
  uint8_t flags_[8] = {1, 1, 1, 0, 1, 1, 1, 1};
  float y_[4] = {-1, -1, -1, -1};
  int64_t n_ = -1;
};

// y = cond ? x + w : x * 0.5
std::vector<ThunkSpec> AddOrScale(uint32_t cond) {
  return {IfSpec(cond, {Add(kX, kT0)}, {Scale(kX, kT0)}, {kT0}), Copy16(kT0, kY),
          Copy8(kZero8, kN)};
}

#if NANORT_TEST_WITH_CONTROL_FLOW

TEST_F(ControlFlowTest, IfRunsTheBranchItsInputConditionNames) {
  Start(AddOrScale(kCond));
  ASSERT_EQ(Run(true), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(11, 22, 33, 44));
  ASSERT_EQ(Run(false), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(0.5f, 1, 1.5f, 2));
  EXPECT_EQ(n_, 0);
}

TEST_F(ControlFlowTest, IfReadsItsConditionFromTheArenaOrTheConstants) {
  std::vector<ThunkSpec> thunks = AddOrScale(kACond);
  thunks.insert(thunks.begin(), CopySpec(kCond, kACond, 1));
  Start(thunks);
  ASSERT_EQ(Run(true), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(11, 22, 33, 44));
  ASSERT_EQ(Run(false), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(0.5f, 1, 1.5f, 2));

  Start(AddOrScale(kTrue));
  ASSERT_EQ(Run(false), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(11, 22, 33, 44));
  Start(AddOrScale(kFalse));
  ASSERT_EQ(Run(true), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(0.5f, 1, 1.5f, 2));
}

TEST_F(ControlFlowTest, IfNestsInAnIf) {
  // cond ? (false ? x + w : x * 0.5) : x, then * 0.5 again in the outer then.
  const ThunkSpec inner = IfSpec(kFalse, {Add(kX, kT1)}, {Scale(kX, kT1)}, {kT1}, "inner");
  Start({IfSpec(kCond, {inner, Scale(kT1, kT0)}, {Copy16(kX, kT0)}, {kT0}, "outer"),
         Copy16(kT0, kY), Copy8(kZero8, kN)});
  ASSERT_EQ(Run(true), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(0.25f, 0.5f, 0.75f, 1));
  ASSERT_EQ(Run(false), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(1, 2, 3, 4));
}

TEST_F(ControlFlowTest, LoopRunsTripCountTimesAndLeavesTheCountInItsCounter) {
  Start(LoopOverAcc(kTrips, kNone, 100, AddWToAcc()));
  ASSERT_EQ(Run(false, 3), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(31, 62, 93, 124));
  EXPECT_EQ(n_, 3);
  ASSERT_EQ(Run(false, 1), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(11, 22, 33, 44));
  EXPECT_EQ(n_, 1);
}

TEST_F(ControlFlowTest, LoopOfNoIterationLeavesTheStateAsBefore) {
  Start(LoopOverAcc(kTrips, kNone, 100, AddWToAcc()));
  for (int64_t trips : {int64_t{0}, int64_t{-5}, INT64_MIN}) {
    n_ = -1;
    ASSERT_EQ(Run(false, trips), NANORT_OK) << status_.message;
    EXPECT_THAT(y_, ElementsAre(1, 2, 3, 4)) << trips;
    EXPECT_EQ(n_, 0) << trips;
  }
}

TEST_F(ControlFlowTest, LoopRunsWhileItsConditionHolds) {
  // bits = flags; while bits[0]: acc += w, bits <<= 1 byte.
  std::vector<ThunkSpec> body = AddWToAcc();
  for (const ThunkSpec& t : ShiftBits()) body.push_back(t);
  std::vector<ThunkSpec> thunks = LoopOverAcc(kNone, kBitsHead, 100, body);
  thunks.insert(thunks.begin(), Copy8(kFlags, kBits));
  Start(thunks);
  ASSERT_EQ(Run(false), NANORT_OK) << status_.message;  // flags 1, 1, 1, 0, ...
  EXPECT_EQ(n_, 3);
  EXPECT_THAT(y_, ElementsAre(31, 62, 93, 124));
  flags_[0] = 0;
  ASSERT_EQ(Run(false), NANORT_OK) << status_.message;
  EXPECT_EQ(n_, 0);
  EXPECT_THAT(y_, ElementsAre(1, 2, 3, 4));
}

TEST_F(ControlFlowTest, LoopWithBothStopsAtWhicheverComesFirst) {
  std::vector<ThunkSpec> body = AddWToAcc();
  for (const ThunkSpec& t : ShiftBits()) body.push_back(t);
  std::vector<ThunkSpec> thunks = LoopOverAcc(kTrips, kBitsHead, 100, body);
  thunks.insert(thunks.begin(), Copy8(kFlags, kBits));
  Start(thunks);
  ASSERT_EQ(Run(false, 2), NANORT_OK) << status_.message;
  EXPECT_EQ(n_, 2);
  ASSERT_EQ(Run(false, 10), NANORT_OK) << status_.message;
  EXPECT_EQ(n_, 3);
}

TEST_F(ControlFlowTest, LoopPastMaxTripsFailsTheRunNamingTheLoopAndALaterRunSucceeds) {
  Start(LoopOverAcc(kTrips, kNone, 4, AddWToAcc()));
  EXPECT_EQ(Run(false, 5), NANORT_INVALID_ARGUMENT);
  EXPECT_THAT(status_.message, HasSubstr("node 'loop'"));
  EXPECT_THAT(status_.message, HasSubstr("max_trips of 4 iterations"));
  ASSERT_EQ(Run(false, 4), NANORT_OK) << status_.message;
  EXPECT_EQ(n_, 4);
  EXPECT_THAT(y_, ElementsAre(41, 82, 123, 164));
}

TEST_F(ControlFlowTest, IfInsideALoop) {
  // trips times: acc = cond ? acc + w : acc * 0.5
  Start(
      LoopOverAcc(kTrips, kNone, 100,
                  {IfSpec(kCond, {Add(kAcc, kT0)}, {Scale(kAcc, kT0)}, {kT0}), Copy16(kT0, kAcc)}));
  ASSERT_EQ(Run(true, 3), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(31, 62, 93, 124));
  ASSERT_EQ(Run(false, 3), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(0.125f, 0.25f, 0.375f, 0.5f));
  EXPECT_EQ(n_, 3);
}

TEST_F(ControlFlowTest, ALoopOnTwoThreadsGivesTheSameBitsAsOnOne) {
  const std::vector<ThunkSpec> thunks =
      LoopOverAcc(kTrips, kNone, 100,
                  {IfSpec(kCond, {Add(kAcc, kT0)}, {Scale(kAcc, kT0)}, {kT0}), Copy16(kT0, kAcc),
                   Scale(kAcc, kT1), Add(kT1, kAcc)});
  x_[0] = 0.1f, x_[1] = -3.3f, x_[2] = 1e-3f, x_[3] = 7.7f;
  float one[4], two[4];
  Start(thunks, 1);
  ASSERT_EQ(Run(true, 7), NANORT_OK) << status_.message;
  memcpy(one, y_, sizeof(one));
  Start(thunks, 2);
  ASSERT_EQ(Run(true, 7), NANORT_OK) << status_.message;
  memcpy(two, y_, sizeof(two));
  EXPECT_EQ(memcmp(one, two, sizeof(one)), 0);
  EXPECT_EQ(n_, 7);
}

// The observer sees thunks by pre-order index, a loop's body once per
// iteration and an If's untaken branch never.
std::vector<std::pair<size_t, int>>* observed = nullptr;
void Record(void*, size_t thunk, nanort_thunk_event event) {
  observed->push_back({thunk, event == NANORT_THUNK_BEGIN ? 1 : -1});
}

TEST_F(ControlFlowTest, ObserverAndThunkInfoNumberThunksInPreOrder) {
  // 0 copy x->acc; 1 loop { 2 if { 3 add } else { 4 scale }; 5 copy }; 6 copy; 7 copy
  Start(
      LoopOverAcc(kTrips, kNone, 100,
                  {IfSpec(kCond, {Add(kAcc, kT0)}, {Scale(kAcc, kT0)}, {kT0}), Copy16(kT0, kAcc)}));
  ASSERT_EQ(nanort_model_thunk_count(model_), 8u);
  nanort_thunk_info info;
  ASSERT_EQ(nanort_model_thunk_info(model_, 1, &info), NANORT_OK);
  EXPECT_EQ(info.control, NANORT_THUNK_LOOP);
  EXPECT_EQ(info.level, 0u);
  ASSERT_EQ(nanort_model_thunk_info(model_, 2, &info), NANORT_OK);
  EXPECT_EQ(info.control, NANORT_THUNK_IF);
  EXPECT_EQ(info.level, 1u);
  ASSERT_EQ(nanort_model_thunk_info(model_, 4, &info), NANORT_OK);
  EXPECT_STREQ(info.node, "scale");
  EXPECT_EQ(info.level, 2u);
  EXPECT_EQ(info.control, 0);
  EXPECT_EQ(info.is_copy, 0);
  EXPECT_EQ(info.kernel, 1u);
  ASSERT_EQ(nanort_model_thunk_info(model_, 7, &info), NANORT_OK);
  EXPECT_EQ(info.is_copy, 1);
  EXPECT_EQ(info.level, 0u);
  EXPECT_EQ(nanort_model_thunk_info(model_, 8, &info), NANORT_INVALID_ARGUMENT);

  std::vector<std::pair<size_t, int>> events;
  observed = &events;
  nanort_status status;
  ASSERT_EQ(nanort_session_set_thunk_observer(session_, Record, nullptr, &status), NANORT_OK)
      << status.message;
  ASSERT_EQ(Run(false, 2), NANORT_OK) << status_.message;
  observed = nullptr;
  const std::vector<std::pair<size_t, int>> expected = {
      {0, 1},  {0, -1}, {1, 1},                             // loop begins
      {2, 1},  {4, 1},  {4, -1}, {2, -1}, {5, 1}, {5, -1},  // iteration 0
      {2, 1},  {4, 1},  {4, -1}, {2, -1}, {5, 1}, {5, -1},  // iteration 1
      {1, -1}, {6, 1},  {6, -1}, {7, 1},  {7, -1}};
  EXPECT_EQ(events, expected);
}

// ---- The verifier's refusals ----

class ControlFlowVerifierTest : public ControlFlowTest {
 protected:
  void ExpectRefused(std::vector<ThunkSpec> thunks, const std::string& message) {
    EXPECT_EQ(Load(std::move(thunks)), NANORT_INVALID_PROGRAM) << message;
    EXPECT_EQ(model_, nullptr);
    EXPECT_THAT(status_.message, HasSubstr(message));
  }
};

TEST_F(ControlFlowVerifierTest, RefusesABranchThatDoesNotWriteADeclaredOutput) {
  ExpectRefused({IfSpec(kCond, {Add(kX, kT0)}, {}, {kT0}), Copy16(kT0, kY), Copy8(kZero8, kN)},
                "thunk 0 (node 'if', op 'If'): else branch does not write all of output 0, "
                "buffer 11 ('t0')");
  ExpectRefused({IfSpec(kCond, {CopySpec(kX, kT0, 8)}, {Scale(kX, kT0)}, {kT0}), Copy16(kT0, kY),
                 Copy8(kZero8, kN)},
                "then branch does not write all of output 0");
}

TEST_F(ControlFlowVerifierTest, RefusesReadingInTheElseBranchWhatOnlyTheThenBranchWrote) {
  ExpectRefused({IfSpec(kCond, {Add(kX, kT1), Copy16(kT1, kT0)}, {Copy16(kT1, kT0)}, {kT0}),
                 Copy16(kT0, kY), Copy8(kZero8, kN)},
                "thunk 3 (node 'copy', op 'Copy'): reads buffer 12 ('t1') before anything writes "
                "it");
}

TEST_F(ControlFlowVerifierTest, RefusesReadingAfterAnIfWhatOnlyABranchWroteBesidesItsOutputs) {
  ExpectRefused(
      {IfSpec(kCond, {Add(kX, kT1), Copy16(kT1, kT0)}, {Scale(kX, kT1), Copy16(kT1, kT0)}, {kT0}),
       Copy16(kT1, kY), Copy8(kZero8, kN)},
      "thunk 5 (node 'copy', op 'Copy'): reads buffer 12 ('t1')");
}

TEST_F(ControlFlowVerifierTest, RefusesReadingAfterALoopWhatOnlyItsBodyWrote) {
  ExpectRefused(
      {LoopSpec(kTrips, kNone, kCounter, 10, {Add(kX, kT0)}), Copy16(kT0, kY), Copy8(kCounter, kN)},
      "thunk 2 (node 'copy', op 'Copy'): reads buffer 11 ('t0') before anything writes "
      "it");
  // The body may read what it overwrites, and the counter is defined after.
  EXPECT_EQ(Load(LoopOverAcc(kTrips, kNone, 10, AddWToAcc())), NANORT_OK) << status_.message;
}

TEST_F(ControlFlowVerifierTest, RefusesConditionsOfTheWrongSizeOrPlaceOrUndefined) {
  ExpectRefused(AddOrScale(kTrips),
                "condition names buffer 2, not one of the program's 20 host buffers of 1 bytes");
  ExpectRefused(AddOrScale(kBuffers), "condition names buffer 20");
  ExpectRefused(AddOrScale(kACond),
                "reads condition buffer 14 ('acond') before anything writes it");
  ExpectRefused(LoopOverAcc(kNone, kX, 10, AddWToAcc()), "condition names buffer 0");
  ExpectRefused(LoopOverAcc(kCond, kNone, 10, AddWToAcc()), "trip count names buffer 1");
  ExpectRefused(LoopOverAcc(kCounter, kNone, 10, AddWToAcc()),
                "reads trip count buffer 13 ('counter') before anything writes it");
}

TEST_F(ControlFlowVerifierTest, RefusesACounterOutsideTheArenaOrNotOfEightBytes) {
  for (uint32_t counter : {uint32_t{kN}, uint32_t{kTrips}, uint32_t{kACond}, uint32_t{kZero8}}) {
    ExpectRefused({Copy16(kX, kY), LoopSpec(kTrips, kNone, counter, 10, {}), Copy8(kZero8, kN)},
                  "counter names buffer " + std::to_string(counter) +
                      ", not one of the program's 20 arena buffers of 8 bytes");
  }
}

TEST_F(ControlFlowVerifierTest, RefusesALoopOfNoMaxTrips) {
  ExpectRefused(LoopOverAcc(kTrips, kNone, 0, AddWToAcc()),
                "thunk 1 (node 'loop', op 'Loop'): max_trips is 0");
}

TEST_F(ControlFlowVerifierTest, RefusesOutputsThatAreNotWritableHostBuffers) {
  ExpectRefused(
      {IfSpec(kCond, {Add(kX, kT0)}, {Scale(kX, kT0)}, {kX}), Copy16(kT0, kY), Copy8(kZero8, kN)},
      "output 0 names buffer 0, not one of the program's 20 arena or output buffers");
  ExpectRefused(
      {IfSpec(kCond, {Add(kX, kT0)}, {Scale(kX, kT0)}, {77}), Copy16(kT0, kY), Copy8(kZero8, kN)},
      "output 0 names buffer 77");
}

// `levels` Ifs, each the then branch of the one before.
std::vector<ThunkSpec> NestedIfs(int levels) {
  std::vector<ThunkSpec> inner = {Add(kX, kT0)};
  for (int i = 0; i < levels; ++i) {
    inner = {IfSpec(kCond, inner, {Scale(kX, kT0)}, {kT0}, "if" + std::to_string(i))};
  }
  inner.push_back(Copy16(kT0, kY));
  inner.push_back(Copy8(kZero8, kN));
  return inner;
}

TEST_F(ControlFlowVerifierTest, RunsEightLevelsOfNestingAndRefusesNine) {
  Start(NestedIfs(8));
  ASSERT_EQ(Run(true), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(11, 22, 33, 44));
  ASSERT_EQ(Run(false), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(0.5f, 1, 1.5f, 2));
  // The innermost If is thunk 8, at level 8.
  ExpectRefused(NestedIfs(9), "thunk 8 (node 'if0', op 'If'): control flow nested deeper than 8");
  // Loops count as levels too.
  std::vector<ThunkSpec> loops = {LoopSpec(kTrips, kNone, kCounter, 2, {})};
  for (int i = 0; i < 8; ++i) loops = {LoopSpec(kTrips, kNone, kCounter, 2, loops)};
  loops.insert(loops.end(), {Copy16(kX, kY), Copy8(kZero8, kN)});
  ExpectRefused(loops, "control flow nested deeper than 8");
}

TEST_F(ControlFlowVerifierTest, RefusesUnknownThunkKindsInsideBranchesAndBodies) {
  ThunkSpec unknown = Add(kX, kT0);
  unknown.kind = static_cast<fb::ThunkKind>(7);
  ThunkSpec none;
  none.kind = fb::ThunkKind::NONE;
  ExpectRefused(
      {IfSpec(kCond, {Add(kX, kT0)}, {unknown}, {kT0}), Copy16(kT0, kY), Copy8(kZero8, kN)},
      "thunk 2 (node 'add', op 'Add'): unknown or missing thunk kind 7");
  ExpectRefused(LoopOverAcc(kTrips, kNone, 3, {none}),
                "thunk 2 (node '', op ''): unknown or "
                "missing thunk kind 0");
}

#if NANORT_TEST_WITH_CUDA
TEST_F(ControlFlowVerifierTest, RefusesControlFlowInAGpuProgram) {
  ProgramSpec spec = GpuChainSpec();
  spec.thunks.insert(spec.thunks.begin() + 1,
                     IfSpec(2, {}, {}, {}));  // any operands: refused first
  ChainModel model(spec);
  const LoadResult result = LoadDef(model.def);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_THAT(result.message, HasSubstr("thunk 1 (node 'if', op 'If'): control flow in a GPU "
                                        "program"));
}
#endif

#else  // !NANORT_TEST_WITH_CONTROL_FLOW

TEST_F(ControlFlowTest, IsUnavailableWithoutControlFlow) {
  EXPECT_EQ(Load(AddOrScale(kCond)), NANORT_UNAVAILABLE);
  EXPECT_THAT(status_.message, HasSubstr("built without it (NANORT_WITH_CONTROL_FLOW=OFF)"));
}

#endif

}  // namespace
}  // namespace nanort::test
