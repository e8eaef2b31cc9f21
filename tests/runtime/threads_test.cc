// Sessions that split kernels over threads (nanort_session_create_with_options):
// options checking, nanort's own pool, the caller's parallel-for, and outputs
// that do not depend on the thread count. The chain program's two kernels have
// kChainLength (4) tasks each; its copy thunk is never split.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "chain_session_test.h"
#include "nanort/nanort.h"
#include "test_util.h"

namespace nanort::test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const int64_t* kDims = kChainDims;

nanort_session_options Options(uint32_t num_threads) {
  nanort_session_options options;
  memset(&options, 0, sizeof(options));
  options.struct_size = sizeof(options);
  options.num_threads = num_threads;
  return options;
}

// What the recording scale kernel saw: each task range and the thread it ran on.
struct ScaleCalls {
  std::mutex mutex;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  std::set<std::thread::id> threads;
};
ScaleCalls* g_scale_calls = nullptr;

void RecordingScale(const nanort_kernel_args* args, uint64_t task_begin, uint64_t task_end) {
  {
    std::lock_guard<std::mutex> lock(g_scale_calls->mutex);
    g_scale_calls->ranges.emplace_back(task_begin, task_end);
    g_scale_calls->threads.insert(std::this_thread::get_id());
  }
  ScaleF32(args, task_begin, task_end);
}

// A caller's pool: runs every index on the calling thread, backwards (any
// order must do), and counts its calls and indices.
struct CallerPool {
  int calls = 0;
  std::vector<size_t> sizes;
};

void CallerParallelFor(void* pool_user_data, size_t n, void (*fn)(void* ctx, size_t i), void* ctx) {
  CallerPool* pool = static_cast<CallerPool*>(pool_user_data);
  ++pool->calls;
  pool->sizes.push_back(n);
  for (size_t i = n; i-- > 0;) fn(ctx, i);
}

// A caller's pool that really uses threads: one std::thread per index.
void SpawningParallelFor(void*, size_t n, void (*fn)(void* ctx, size_t i), void* ctx) {
  std::vector<std::thread> threads;
  for (size_t i = 1; i < n; ++i) threads.emplace_back(fn, ctx, i);
  fn(ctx, 0);
  for (std::thread& t : threads) t.join();
}

class ThreadsTest : public ChainSessionTest {
 protected:
  void SetUp() override {
    chain_.kernels[1] = ChainEntry(&RecordingScale, /*scale=*/true);
    g_scale_calls = &scale_calls_;
    LoadChain();
  }
  void TearDown() override {
    ChainSessionTest::TearDown();
    g_scale_calls = nullptr;
  }
  nanort_status_code Create(const nanort_session_options* options) {
    nanort_session_release(session_);
    session_ = nullptr;
    return nanort_session_create_with_options(model_, nullptr, 0, nanort_allocator_system(),
                                              options, &session_, &status_);
  }
  nanort_status_code Run() { return RunChain(); }

  ScaleCalls scale_calls_;
};

TEST_F(ThreadsTest, NullOptionsRunEverythingOnTheCallingThread) {
  ASSERT_EQ(Create(nullptr), NANORT_OK) << status_.message;
  ASSERT_EQ(Run(), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(5.5f, 11.0f, 16.5f, 22.0f));
  EXPECT_THAT(scale_calls_.ranges, ElementsAre(std::make_pair(0u, 4u)));
  EXPECT_THAT(scale_calls_.threads, ElementsAre(std::this_thread::get_id()));
}

TEST_F(ThreadsTest, OneThreadRunsEveryKernelWhole) {
  for (uint32_t threads : {0u, 1u}) {
    const nanort_session_options options = Options(threads);
    ASSERT_EQ(Create(&options), NANORT_OK) << status_.message;
    ASSERT_EQ(Run(), NANORT_OK) << status_.message;
  }
  EXPECT_THAT(scale_calls_.ranges, ElementsAre(std::make_pair(0u, 4u), std::make_pair(0u, 4u)));
  EXPECT_THAT(y_, ElementsAre(5.5f, 11.0f, 16.5f, 22.0f));
}

TEST_F(ThreadsTest, OwnPoolSplitsEachKernelIntoContiguousChunks) {
  const nanort_session_options options = Options(3);
  ASSERT_EQ(Create(&options), NANORT_OK) << status_.message;
  ASSERT_EQ(Run(), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(5.5f, 11.0f, 16.5f, 22.0f));
  std::sort(scale_calls_.ranges.begin(), scale_calls_.ranges.end());
  // 4 tasks over 3 chunks: the first chunk takes the extra task.
  EXPECT_THAT(scale_calls_.ranges,
              ElementsAre(std::make_pair(0u, 2u), std::make_pair(2u, 3u), std::make_pair(3u, 4u)));
}

TEST_F(ThreadsTest, OwnPoolRunsChunksOnItsWorkersAndTheCallingThread) {
  const nanort_session_options options = Options(4);
  ASSERT_EQ(Create(&options), NANORT_OK) << status_.message;
  for (int run = 0; run < 50; ++run) ASSERT_EQ(Run(), NANORT_OK) << status_.message;
  EXPECT_EQ(scale_calls_.ranges.size(), 50u * 4u);
  // Static split: the caller runs chunk 0 and each worker its own chunk.
  EXPECT_EQ(scale_calls_.threads.size(), 4u);
  EXPECT_EQ(scale_calls_.threads.count(std::this_thread::get_id()), 1u);
}

TEST_F(ThreadsTest, MoreThreadsThanTasksGiveOneTaskAChunk) {
  const nanort_session_options options = Options(7);
  ASSERT_EQ(Create(&options), NANORT_OK) << status_.message;
  ASSERT_EQ(Run(), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(5.5f, 11.0f, 16.5f, 22.0f));
  EXPECT_EQ(scale_calls_.ranges.size(), 4u);
}

TEST_F(ThreadsTest, OutputsAreBitwiseTheSameForEveryThreadCount) {
  float x[4] = {0.1f, -3.7f, 1e-30f, 12345.678f};
  memcpy(x_, x, sizeof(x));
  std::vector<uint8_t> first;
  for (uint32_t threads : {1u, 2u, 3u, 4u}) {
    const nanort_session_options options = Options(threads);
    ASSERT_EQ(Create(&options), NANORT_OK) << status_.message;
    memset(y_, 0xff, sizeof(y_));
    ASSERT_EQ(Run(), NANORT_OK) << status_.message;
    std::vector<uint8_t> bytes(reinterpret_cast<uint8_t*>(y_),
                               reinterpret_cast<uint8_t*>(y_) + sizeof(y_));
    if (first.empty()) first = bytes;
    EXPECT_EQ(bytes, first) << threads << " threads";
  }
}

TEST_F(ThreadsTest, CallersParallelForGetsEachSplitKernelOnce) {
  CallerPool pool;
  nanort_session_options options = Options(3);
  options.parallel_for = &CallerParallelFor;
  options.pool_user_data = &pool;
  ASSERT_EQ(Create(&options), NANORT_OK) << status_.message;
  ASSERT_EQ(Run(), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(5.5f, 11.0f, 16.5f, 22.0f));
  // Two kernels of 4 tasks, 3 chunks each; the copy stays on the caller.
  EXPECT_EQ(pool.calls, 2);
  EXPECT_THAT(pool.sizes, ElementsAre(3u, 3u));
  EXPECT_THAT(scale_calls_.threads, ElementsAre(std::this_thread::get_id()));
  ASSERT_EQ(Run(), NANORT_OK) << status_.message;
  EXPECT_EQ(pool.calls, 4);
}

TEST_F(ThreadsTest, CallersParallelForMayRunChunksOnItsOwnThreads) {
  nanort_session_options options = Options(4);
  options.parallel_for = &SpawningParallelFor;
  ASSERT_EQ(Create(&options), NANORT_OK) << status_.message;
  ASSERT_EQ(Run(), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(5.5f, 11.0f, 16.5f, 22.0f));
  EXPECT_EQ(scale_calls_.threads.size(), 4u);
}

// What a scratch-using kernel saw: the scratch of each call, which it fills
// (a chunk sharing another's scratch would race; the recording makes it
// visible as one pointer for two task ranges).
struct ScratchCalls {
  std::mutex mutex;
  std::vector<std::pair<uint64_t, uint8_t*>> scratch;  // (task_begin, scratch)
};
ScratchCalls* g_scratch_calls = nullptr;
constexpr uint64_t kScratchBytes = 200;

void ScratchScale(const nanort_kernel_args* args, uint64_t task_begin, uint64_t task_end) {
  uint8_t* scratch = static_cast<uint8_t*>(args->scratch);
  memset(scratch, 0x5a, kScratchBytes);
  {
    std::lock_guard<std::mutex> lock(g_scratch_calls->mutex);
    g_scratch_calls->scratch.emplace_back(task_begin, scratch);
  }
  ScaleF32(args, task_begin, task_end);
}

class ScratchTest : public ChainSessionTest {
 protected:
  void SetUp() override {
    chain_.kernels[1] = ChainEntry(&ScratchScale, /*scale=*/true);
    chain_.kernels[1].scratch_bytes = kScratchBytes;
    g_scratch_calls = &calls_;
    LoadChain();
  }
  void TearDown() override {
    ChainSessionTest::TearDown();
    g_scratch_calls = nullptr;
  }
  ScratchCalls calls_;
};

TEST_F(ScratchTest, TheArenaHoldsTheCallingThreadsScratch) {
  // 80 bytes of buffers, then 200 bytes of scratch, both 64-byte rounded.
  EXPECT_EQ(nanort_model_arena_size(model_), 128u + 256u);
  alignas(64) static uint8_t arena[384];
  ASSERT_EQ(nanort_session_create(model_, arena, sizeof(arena), nanort_allocator_system(),
                                  &session_, &status_),
            NANORT_OK)
      << status_.message;
  ASSERT_EQ(RunChain(), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(5.5f, 11.0f, 16.5f, 22.0f));
  ASSERT_EQ(calls_.scratch.size(), 1u);
  EXPECT_EQ(calls_.scratch[0].second, arena + 128);
  nanort_session_release(session_);
  session_ = nullptr;
  EXPECT_EQ(
      nanort_session_create(model_, arena, 383, nanort_allocator_system(), &session_, &status_),
      NANORT_ARENA_TOO_SMALL);
}

TEST_F(ScratchTest, EveryChunkGetsScratchOfItsOwn) {
  const nanort_session_options options = Options(4);
  ASSERT_EQ(nanort_session_create_with_options(model_, nullptr, 0, nanort_allocator_system(),
                                               &options, &session_, &status_),
            NANORT_OK)
      << status_.message;
  for (int run = 0; run < 20; ++run) {
    memset(y_, 0xff, sizeof(y_));
    ASSERT_EQ(RunChain(), NANORT_OK) << status_.message;
    EXPECT_THAT(y_, ElementsAre(5.5f, 11.0f, 16.5f, 22.0f));
  }
  std::set<uint8_t*> distinct;
  std::map<uint64_t, std::set<uint8_t*>> by_chunk;
  for (const auto& [begin, scratch] : calls_.scratch) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(scratch) % 64, 0u);
    distinct.insert(scratch);
    by_chunk[begin].insert(scratch);
  }
  // 4 tasks, 4 chunks: each chunk always gets the same scratch, no two the same.
  EXPECT_EQ(by_chunk.size(), 4u);
  EXPECT_EQ(distinct.size(), 4u);
  for (const auto& [begin, pointers] : by_chunk) EXPECT_EQ(pointers.size(), 1u) << begin;
}

// An allocator that refuses one size (the other threads' scratch) and
// counts what it holds.
struct RefusingAllocator {
  size_t refused_size = 0;
  int live = 0;
  static void* Alloc(void* self, size_t size, size_t alignment) {
    auto* a = static_cast<RefusingAllocator*>(self);
    if (size == a->refused_size) return nullptr;
    void* p = aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
    if (p != nullptr) ++a->live;
    return p;
  }
  static void Free(void* self, void* p) {
    if (p == nullptr) return;
    --static_cast<RefusingAllocator*>(self)->live;
    free(p);
  }
};

TEST_F(ScratchTest, ScratchTheAllocatorRefusesFailsTheSessionCleanly) {
  RefusingAllocator refusing;
  refusing.refused_size = 3 * 256;  // 3 more threads, 200 bytes each rounded to 256
  const nanort_session_options options = Options(4);
  EXPECT_EQ(
      nanort_session_create_with_options(
          model_, nullptr, 0, {&refusing, &RefusingAllocator::Alloc, &RefusingAllocator::Free},
          &options, &session_, &status_),
      NANORT_OUT_OF_MEMORY);
  EXPECT_EQ(session_, nullptr);
  EXPECT_THAT(status_.message, HasSubstr("3 threads' scratch of 256 bytes each"));
  EXPECT_EQ(refusing.live, 0);
}

TEST_F(ThreadsTest, CallersParallelForIsNotCalledForOneThread) {
  CallerPool pool;
  nanort_session_options options = Options(1);
  options.parallel_for = &CallerParallelFor;
  options.pool_user_data = &pool;
  ASSERT_EQ(Create(&options), NANORT_OK) << status_.message;
  ASSERT_EQ(Run(), NANORT_OK) << status_.message;
  EXPECT_EQ(pool.calls, 0);
}

TEST_F(ThreadsTest, StructSizeSmallerThanTheFirstVersionIsRefused) {
  nanort_session_options options = Options(2);
  options.struct_size = sizeof(options) - 1;
  EXPECT_EQ(Create(&options), NANORT_INVALID_ARGUMENT);
  EXPECT_THAT(status_.message, HasSubstr("struct_size"));
  EXPECT_EQ(session_, nullptr);
  options.struct_size = 0;
  EXPECT_EQ(Create(&options), NANORT_INVALID_ARGUMENT);
}

TEST_F(ThreadsTest, LargerStructFromANewerHeaderIsReadWhenItsNewFieldsAreZero) {
  struct Newer {
    nanort_session_options known;
    uint64_t added_later;
  } newer;
  memset(&newer, 0, sizeof(newer));
  newer.known.struct_size = sizeof(newer);
  newer.known.num_threads = 2;
  ASSERT_EQ(Create(&newer.known), NANORT_OK) << status_.message;
  ASSERT_EQ(Run(), NANORT_OK) << status_.message;
  EXPECT_THAT(y_, ElementsAre(5.5f, 11.0f, 16.5f, 22.0f));

  newer.added_later = 1;
  EXPECT_EQ(Create(&newer.known), NANORT_UNSUPPORTED_VERSION);
  EXPECT_THAT(status_.message, HasSubstr("beyond"));
  EXPECT_EQ(session_, nullptr);
}

TEST_F(ThreadsTest, ReleaseWhileIdleJoinsTheWorkers) {
  const nanort_session_options options = Options(4);
  ASSERT_EQ(Create(&options), NANORT_OK) << status_.message;
  nanort_session_release(session_);  // never ran
  session_ = nullptr;
  ASSERT_EQ(Create(&options), NANORT_OK) << status_.message;
  ASSERT_EQ(Run(), NANORT_OK) << status_.message;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // workers asleep
  nanort_session_release(session_);
  session_ = nullptr;
}

TEST_F(ThreadsTest, ManySessionsRunSideBySide) {
  constexpr int kSessions = 8;
  std::vector<std::thread> callers;
  std::vector<int> failures(kSessions, 0);
  for (int s = 0; s < kSessions; ++s) {
    callers.emplace_back([&, s] {
      nanort_session_options options = Options(static_cast<uint32_t>(1 + s % 4));
      nanort_session* session = nullptr;
      nanort_status status;
      if (nanort_session_create_with_options(model_, nullptr, 0, nanort_allocator_system(),
                                             &options, &session, &status) != NANORT_OK) {
        failures[s] = 1;
        return;
      }
      float x[4] = {1, 2, 3, 4}, y[4];
      const nanort_tensor tx{x, NANORT_F32, 2, kDims}, ty{y, NANORT_F32, 2, kDims};
      for (int run = 0; run < 200; ++run) {
        memset(y, 0, sizeof(y));
        if (nanort_run(session, &tx, 1, &ty, 1, &status) != NANORT_OK || y[0] != 5.5f ||
            y[3] != 22.0f) {
          ++failures[s];
        }
      }
      nanort_session_release(session);
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_THAT(failures, ::testing::Each(0));
}

TEST_F(ThreadsTest, ObserverSeesWholeThunksOnTheCallingThread) {
  const nanort_session_options options = Options(4);
  ASSERT_EQ(Create(&options), NANORT_OK) << status_.message;
  struct Seen {
    std::vector<std::pair<size_t, int>> events;
    std::thread::id caller = std::this_thread::get_id();
    bool other_thread = false;
  } seen;
  const nanort_status_code code = nanort_session_set_thunk_observer(
      session_,
      [](void* user_data, size_t thunk, nanort_thunk_event event) {
        Seen* s = static_cast<Seen*>(user_data);
        s->events.emplace_back(thunk, static_cast<int>(event));
        if (std::this_thread::get_id() != s->caller) s->other_thread = true;
      },
      &seen, &status_);
  if (code == NANORT_UNAVAILABLE) GTEST_SKIP() << status_.message;
  ASSERT_EQ(code, NANORT_OK) << status_.message;
  ASSERT_EQ(Run(), NANORT_OK) << status_.message;
  EXPECT_THAT(seen.events,
              ElementsAre(std::make_pair(0u, 0), std::make_pair(0u, 1), std::make_pair(1u, 0),
                          std::make_pair(1u, 1), std::make_pair(2u, 0), std::make_pair(2u, 1)));
  EXPECT_FALSE(seen.other_thread);
  EXPECT_THAT(y_, ElementsAre(5.5f, 11.0f, 16.5f, 22.0f));
}

}  // namespace
}  // namespace nanort::test
