// nanort's own worker threads on POSIX (NANORT_WITH_THREADS), behind
// thread_pool.h.
//
// One job at a time: the caller writes the job (fn, ctx, n), then bumps
// `generation`, which wakes the workers; each worker runs its static share of
// [0, n) and decrements `remaining`; the caller runs its own share, then
// waits for `remaining` to reach 0. Since every worker checks out of every
// generation before the caller writes the next job, the job fields need no
// atomics: the generation's release/acquire orders them.
//
// Waiting is a bounded spin (the next kernel of a run usually comes within
// microseconds), then a sleep: a futex on Linux, a condition variable
// elsewhere. An idle session's workers all sleep. `sleepers` and
// `caller_waiting` let the waking side skip the system call when nobody
// sleeps; each is paired with the word it guards in sequentially consistent
// order (Dekker), so a wake-up is never lost.
#if defined(NANORT_WITH_THREADS) && NANORT_WITH_THREADS

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>

#include <atomic>
#include <new>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "allocator.h"
#include "status.h"
#include "thread_pool.h"

namespace nanort {
namespace {

// Polling before a sleep: CPU pauses for up to kSpinNanos, read on the
// monotonic clock every kPausesPerCheck pauses (a pause takes from about ten
// to over a hundred cycles, depending on the CPU), then kYieldIterations
// sched_yield calls, which give the core to a thread that has work when
// there are more threads than cores. A sleeping worker's wake-up costs tens
// of microseconds (more in a virtual machine, whose idle vCPU the host must
// resume), so the spin outlasts the usual imbalance between two threads'
// shares of a kernel: squeezenet1_1 on two threads of an AVX-512 Xeon VM ran
// 6-7% faster with 250 us than with 2000 pauses (22 us there).
constexpr uint64_t kSpinNanos = 250000;
constexpr int kPausesPerCheck = 64;
constexpr int kYieldIterations = 64;

inline void CpuPause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ __volatile__("yield" ::: "memory");
#else
  __asm__ __volatile__("" ::: "memory");
#endif
}

inline uint64_t NowNanos() {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
}

// Polls done() through the spin and the yields; returns whether it held.
template <typename Done>
bool SpinUntil(Done done) {
  const uint64_t start = NowNanos();
  for (int pauses = 1;; ++pauses) {
    if (done()) return true;
    CpuPause();
    if (pauses % kPausesPerCheck == 0 && NowNanos() - start >= kSpinNanos) break;
  }
  for (int yields = 0; yields < kYieldIterations; ++yields) {
    if (done()) return true;
    sched_yield();
  }
  return done();
}

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "futex words are 32-bit");

struct Worker {
  ThreadPool* pool;
  size_t index;  // 1..num_workers; the calling thread is 0
  pthread_t thread;
};

}  // namespace

struct ThreadPool {
  // The futex word the workers sleep on; bumped once per job and at destroy.
  alignas(64) std::atomic<uint32_t> generation{0};
  std::atomic<uint32_t> sleepers{0};
  std::atomic<bool> stop{false};
  // The job, written by the caller before it bumps `generation`.
  void (*fn)(void* ctx, size_t i) = nullptr;
  void* ctx = nullptr;
  size_t n = 0;
  // The futex word the caller sleeps on: workers not yet done with the job.
  alignas(64) std::atomic<uint32_t> remaining{0};
  std::atomic<uint32_t> caller_waiting{0};
  size_t num_workers = 0;
  Worker* workers = nullptr;
  nanort_allocator allocator{};
#if !defined(__linux__)
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
#endif
};

namespace {

// Sleeps while `word` holds `value` (or returns at once; callers re-check).
void SleepWhile(ThreadPool& pool, std::atomic<uint32_t>& word, uint32_t value) {
#if defined(__linux__)
  (void)pool;
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, value, nullptr,
          nullptr, 0);
#else
  pthread_mutex_lock(&pool.mutex);
  while (word.load() == value) pthread_cond_wait(&pool.cond, &pool.mutex);
  pthread_mutex_unlock(&pool.mutex);
#endif
}

// Wakes every sleeper on `word`, which the caller has just changed.
void WakeAll(ThreadPool& pool, std::atomic<uint32_t>& word) {
#if defined(__linux__)
  (void)pool;
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
#else
  (void)word;
  // Taking the mutex orders the change before any sleeper's check.
  pthread_mutex_lock(&pool.mutex);
  pthread_mutex_unlock(&pool.mutex);
  pthread_cond_broadcast(&pool.cond);
#endif
}

// Returns the first generation other than `seen`.
uint32_t AwaitGeneration(ThreadPool& pool, uint32_t seen) {
  uint32_t current = seen;
  if (SpinUntil([&] {
        current = pool.generation.load(std::memory_order_acquire);
        return current != seen;
      }))
    return current;
  pool.sleepers.fetch_add(1, std::memory_order_seq_cst);
  while ((current = pool.generation.load(std::memory_order_seq_cst)) == seen) {
    SleepWhile(pool, pool.generation, seen);
  }
  pool.sleepers.fetch_sub(1, std::memory_order_relaxed);
  return current;
}

void* WorkerMain(void* arg) {
  Worker& worker = *static_cast<Worker*>(arg);
  ThreadPool& pool = *worker.pool;
  const size_t stride = pool.num_workers + 1;
  // Generation 0 is the pool's initial one: no job was published before the
  // pool was created, so a worker that starts late misses none.
  uint32_t seen = 0;
  for (;;) {
    seen = AwaitGeneration(pool, seen);
    if (pool.stop.load(std::memory_order_relaxed)) return nullptr;
    for (size_t i = worker.index; i < pool.n; i += stride) pool.fn(pool.ctx, i);
    if (pool.remaining.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        pool.caller_waiting.load(std::memory_order_seq_cst) != 0) {
      WakeAll(pool, pool.remaining);
    }
  }
}

// Stops and joins the first `started` workers, then frees the pool.
void StopAndFree(ThreadPool* pool, size_t started) {
  pool->stop.store(true, std::memory_order_relaxed);
  pool->generation.fetch_add(1, std::memory_order_seq_cst);
  WakeAll(*pool, pool->generation);
  for (size_t w = 0; w < started; ++w) pthread_join(pool->workers[w].thread, nullptr);
  const nanort_allocator allocator = pool->allocator;
#if !defined(__linux__)
  pthread_cond_destroy(&pool->cond);
  pthread_mutex_destroy(&pool->mutex);
#endif
  pool->~ThreadPool();
  allocator.free(allocator.self, pool);
}

}  // namespace

nanort_status_code ThreadPoolCreate(size_t num_workers, nanort_allocator allocator,
                                    ThreadPool** out_pool, nanort_status* status) {
  *out_pool = nullptr;
  NANORT_CHECK_OR_RETURN(num_workers >= 1 && num_workers < UINT32_MAX, status,
                         NANORT_INVALID_ARGUMENT, "%zu worker threads", num_workers);
  BlockLayout layout;
  const size_t pool_at = layout.Add<ThreadPool>(1);
  const size_t workers_at = layout.Add<Worker>(num_workers);
  NANORT_CHECK_OR_RETURN(!layout.overflow(), status, NANORT_OUT_OF_MEMORY, "%zu worker threads",
                         num_workers);
  uint8_t* block =
      static_cast<uint8_t*>(allocator.alloc(allocator.self, layout.size(), layout.alignment()));
  NANORT_CHECK_OR_RETURN(block != nullptr, status, NANORT_OUT_OF_MEMORY,
                         "allocator returned NULL for a pool of %zu threads (%zu bytes)",
                         num_workers, layout.size());
  ThreadPool* pool = new (block + pool_at) ThreadPool();
  pool->num_workers = num_workers;
  pool->workers = reinterpret_cast<Worker*>(block + workers_at);
  pool->allocator = allocator;

  // Workers take no signals: the process's handlers run on its own threads.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  size_t started = 0;
  int error = 0;
  for (; started < num_workers; ++started) {
    Worker& worker = pool->workers[started];
    worker.pool = pool;
    worker.index = started + 1;
    error = pthread_create(&worker.thread, nullptr, WorkerMain, &worker);
    if (error != 0) break;
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (error != 0) {
    StopAndFree(pool, started);
    return NANORT_FAIL(status, NANORT_OUT_OF_MEMORY,
                       "could not start worker thread %zu of %zu (pthread_create: error %d)",
                       started + 1, num_workers, error);
  }
  *out_pool = pool;
  return SetOk(status);
}

void ThreadPoolDestroy(ThreadPool* pool) {
  if (pool != nullptr) StopAndFree(pool, pool->num_workers);
}

void ThreadPoolParallelFor(void* pool_ptr, size_t n, void (*fn)(void* ctx, size_t i), void* ctx) {
  ThreadPool& pool = *static_cast<ThreadPool*>(pool_ptr);
  pool.fn = fn;
  pool.ctx = ctx;
  pool.n = n;
  pool.remaining.store(static_cast<uint32_t>(pool.num_workers), std::memory_order_relaxed);
  pool.caller_waiting.store(0, std::memory_order_relaxed);
  // Publishes the job (release) and pairs with AwaitGeneration's sleepers.
  pool.generation.fetch_add(1, std::memory_order_seq_cst);
  if (pool.sleepers.load(std::memory_order_seq_cst) != 0) WakeAll(pool, pool.generation);

  const size_t stride = pool.num_workers + 1;
  for (size_t i = 0; i < n; i += stride) fn(ctx, i);

  if (SpinUntil([&] { return pool.remaining.load(std::memory_order_acquire) == 0; })) return;
  pool.caller_waiting.store(1, std::memory_order_seq_cst);
  uint32_t left;
  while ((left = pool.remaining.load(std::memory_order_seq_cst)) != 0) {
    SleepWhile(pool, pool.remaining, left);
  }
}

}  // namespace nanort

#endif  // NANORT_WITH_THREADS
