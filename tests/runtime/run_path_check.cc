// nanort-run-path-check: holds nanort_run to its promise that a run
// allocates nothing, takes no lock and touches no file (issue #11 item 3).
//
//   nanort-run-path-check MODEL.so [--threads 1,2] [--runs N]
//   nanort-run-path-check --self-test
//
// This executable defines malloc, calloc, realloc, free, aligned_alloc,
// posix_memalign, memalign, valloc, pthread_mutex_lock/trylock/timedlock,
// pthread_rwlock_rdlock/wrlock, sem_wait, open, open64, openat, openat64,
// creat, fopen, fopen64 and fdopen itself, so that every caller in the
// process, the model's shared object and nanort's worker threads included,
// reaches them, and forwards each to the C library. While a flag is set,
// around each nanort_run only, every call is counted, whichever thread makes
// it. The model runs on zero inputs on each thread count (nanort's own pool:
// its workers start at session creation, outside the watch), --runs times,
// and the check fails if any call was counted or a run failed. Session
// creation is watched too: its memory must come from the caller's allocator
// (a counting one here), none from the C library directly, and release must
// return all of it; the one exception, named, is pthread_create's: the
// dynamic loader allocates each new worker's thread-local storage. nanort's
// pool wakes and waits for its workers with futex system calls on Linux,
// which are not library calls: that synchronisation is the one the promise
// allows (nanort.h). --self-test makes one call of each kind inside the
// watch and fails unless each is counted, so a build where the
// interposition does not take effect cannot pass.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "model_tensors.h"
#include "nanort/nanort.h"

extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* ptr, size_t size);
void __libc_free(void* ptr);
void* __libc_memalign(size_t alignment, size_t size);
}

namespace {

enum Kind { kAlloc, kFree, kLock, kFile, kKinds };
const char* const kKindNames[kKinds] = {"allocations", "frees", "locks", "file opens"};

std::atomic<bool> g_watch{false};
std::atomic<unsigned long> g_counts[kKinds];
// The first call counted of each kind, for the report (a static string).
std::atomic<const char*> g_first[kKinds];

// The dynamic loader's code: where pthread_create's allocation of a new
// thread's thread-local storage comes from (found at startup).
uintptr_t g_loader_begin = 0, g_loader_end = 0;
std::atomic<unsigned long> g_loader_allocs{0};

inline void note(Kind kind, const char* what, const void* caller = nullptr) {
  if (!g_watch.load(std::memory_order_relaxed)) return;
  const auto at = reinterpret_cast<uintptr_t>(caller);
  if (kind == kAlloc && at >= g_loader_begin && at < g_loader_end) {
    g_loader_allocs.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (g_counts[kind].fetch_add(1, std::memory_order_relaxed) == 0) g_first[kind].store(what);
}

void findLoader() {
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void*) {
        if (!info->dlpi_name || !strstr(info->dlpi_name, "ld-linux")) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
          g_loader_begin = info->dlpi_addr + ph.p_vaddr;
          g_loader_end = g_loader_begin + ph.p_memsz;
        }
        return 1;
      },
      nullptr);
}

// The C library's definitions behind the interposed ones, found once before
// anything is watched (dlsym may allocate).
template <typename F>
F next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}
struct Real {
  int (*mutex_lock)(pthread_mutex_t*) = nullptr;
  int (*mutex_trylock)(pthread_mutex_t*) = nullptr;
  int (*mutex_timedlock)(pthread_mutex_t*, const struct timespec*) = nullptr;
  int (*rwlock_rdlock)(pthread_rwlock_t*) = nullptr;
  int (*rwlock_wrlock)(pthread_rwlock_t*) = nullptr;
  int (*sem_wait)(sem_t*) = nullptr;
  int (*open)(const char*, int, ...) = nullptr;
  int (*open64)(const char*, int, ...) = nullptr;
  int (*openat)(int, const char*, int, ...) = nullptr;
  int (*openat64)(int, const char*, int, ...) = nullptr;
  int (*creat)(const char*, mode_t) = nullptr;
  FILE* (*fopen)(const char*, const char*) = nullptr;
  FILE* (*fopen64)(const char*, const char*) = nullptr;
  FILE* (*fdopen)(int, const char*) = nullptr;
};
Real& real() {
  static Real r = [] {
    Real x;
    x.mutex_lock = next<decltype(x.mutex_lock)>("pthread_mutex_lock");
    x.mutex_trylock = next<decltype(x.mutex_trylock)>("pthread_mutex_trylock");
    x.mutex_timedlock = next<decltype(x.mutex_timedlock)>("pthread_mutex_timedlock");
    x.rwlock_rdlock = next<decltype(x.rwlock_rdlock)>("pthread_rwlock_rdlock");
    x.rwlock_wrlock = next<decltype(x.rwlock_wrlock)>("pthread_rwlock_wrlock");
    x.sem_wait = next<decltype(x.sem_wait)>("sem_wait");
    x.open = next<decltype(x.open)>("open");
    x.open64 = next<decltype(x.open64)>("open64");
    x.openat = next<decltype(x.openat)>("openat");
    x.openat64 = next<decltype(x.openat64)>("openat64");
    x.creat = next<decltype(x.creat)>("creat");
    x.fopen = next<decltype(x.fopen)>("fopen");
    x.fopen64 = next<decltype(x.fopen64)>("fopen64");
    x.fdopen = next<decltype(x.fdopen)>("fdopen");
    return x;
  }();
  return r;
}

mode_t modeArg(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}

}  // namespace

extern "C" {

void* malloc(size_t size) {
  note(kAlloc, "malloc", __builtin_return_address(0));
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  if (getenv("RPDEBUG") && g_watch.load()) {
    Dl_info info;
    if (dladdr(__builtin_return_address(0), &info))
      fprintf(stderr, "calloc from %s %s\n", info.dli_fname, info.dli_sname ? info.dli_sname : "?");
  }
  note(kAlloc, "calloc", __builtin_return_address(0));
  return __libc_calloc(count, size);
}
void* realloc(void* ptr, size_t size) {
  note(kAlloc, "realloc", __builtin_return_address(0));
  return __libc_realloc(ptr, size);
}
void free(void* ptr) {
  if (ptr) note(kFree, "free");
  __libc_free(ptr);
}
void* memalign(size_t alignment, size_t size) {
  note(kAlloc, "memalign", __builtin_return_address(0));
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  note(kAlloc, "aligned_alloc", __builtin_return_address(0));
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  note(kAlloc, "posix_memalign", __builtin_return_address(0));
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* p = __libc_memalign(alignment, size);
  if (!p && size) return ENOMEM;
  *out = p;
  return 0;
}
void* valloc(size_t size) {
  note(kAlloc, "valloc", __builtin_return_address(0));
  return __libc_memalign(static_cast<size_t>(sysconf(_SC_PAGESIZE)), size);
}

int pthread_mutex_lock(pthread_mutex_t* m) {
  note(kLock, "pthread_mutex_lock");
  return real().mutex_lock(m);
}
int pthread_mutex_trylock(pthread_mutex_t* m) {
  note(kLock, "pthread_mutex_trylock");
  return real().mutex_trylock(m);
}
int pthread_mutex_timedlock(pthread_mutex_t* m, const struct timespec* t) {
  note(kLock, "pthread_mutex_timedlock");
  return real().mutex_timedlock(m, t);
}
int pthread_rwlock_rdlock(pthread_rwlock_t* l) {
  note(kLock, "pthread_rwlock_rdlock");
  return real().rwlock_rdlock(l);
}
int pthread_rwlock_wrlock(pthread_rwlock_t* l) {
  note(kLock, "pthread_rwlock_wrlock");
  return real().rwlock_wrlock(l);
}
int sem_wait(sem_t* s) {
  note(kLock, "sem_wait");
  return real().sem_wait(s);
}

int open(const char* path, int flags, ...) {
  note(kFile, "open");
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = modeArg(flags, ap);
  va_end(ap);
  return real().open(path, flags, mode);
}
int open64(const char* path, int flags, ...) {
  note(kFile, "open64");
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = modeArg(flags, ap);
  va_end(ap);
  return real().open64(path, flags, mode);
}
int openat(int dir, const char* path, int flags, ...) {
  note(kFile, "openat");
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = modeArg(flags, ap);
  va_end(ap);
  return real().openat(dir, path, flags, mode);
}
int openat64(int dir, const char* path, int flags, ...) {
  note(kFile, "openat64");
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = modeArg(flags, ap);
  va_end(ap);
  return real().openat64(dir, path, flags, mode);
}
int creat(const char* path, mode_t mode) {
  note(kFile, "creat");
  return real().creat(path, mode);
}
FILE* fopen(const char* path, const char* mode) {
  note(kFile, "fopen");
  return real().fopen(path, mode);
}
FILE* fopen64(const char* path, const char* mode) {
  note(kFile, "fopen64");
  return real().fopen64(path, mode);
}
FILE* fdopen(int fd, const char* mode) {
  note(kFile, "fdopen");
  return real().fdopen(fd, mode);
}

}  // extern "C"

namespace {

void resetCounts() {
  for (int k = 0; k < kKinds; ++k) {
    g_counts[k].store(0);
    g_first[k].store(nullptr);
  }
}

// One call of each kind while watched, each counted; then an allocation on
// another thread (as nanort's workers would make) and one through the
// process's global symbol scope (where a dlopen'ed model's references bind),
// each counted too. volatile keeps the compiler from eliding allocations.
int selfTest() {
  resetCounts();
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  g_watch.store(true);
  void* volatile p = malloc(64);
  free(p);
  pthread_mutex_lock(&m);
  pthread_mutex_unlock(&m);
  FILE* f = fopen("/dev/null", "r");
  g_watch.store(false);
  if (f) fclose(f);
  int failed = 0;
  for (int k = 0; k < kKinds; ++k) {
    printf("self-test: %lu %s counted\n", g_counts[k].load(), kKindNames[k]);
    failed += g_counts[k].load() == 0;
  }
  // Another thread, started before the watch.
  resetCounts();
  std::atomic<int> step{0};
  pthread_t worker;
  pthread_create(
      &worker, nullptr,
      [](void* arg) -> void* {
        auto* s = static_cast<std::atomic<int>*>(arg);
        while (s->load() == 0) {
        }
        void* volatile q = malloc(32);
        free(q);
        s->store(2);
        return nullptr;
      },
      &step);
  g_watch.store(true);
  step.store(1);
  while (step.load() != 2) {
  }
  g_watch.store(false);
  pthread_join(worker, nullptr);
  printf("self-test: %lu allocations counted on another thread\n", g_counts[kAlloc].load());
  failed += g_counts[kAlloc].load() == 0;
  // The global scope's malloc.
  resetCounts();
  auto global_malloc = reinterpret_cast<void* (*)(size_t)>(dlsym(RTLD_DEFAULT, "malloc"));
  g_watch.store(true);
  void* volatile r = global_malloc ? global_malloc(16) : nullptr;
  g_watch.store(false);
  free(r);
  printf("self-test: %lu allocations counted through the global scope\n", g_counts[kAlloc].load());
  failed += g_counts[kAlloc].load() == 0;
  if (failed) {
    fprintf(stderr, "FAIL: the interposed functions did not see the calls made\n");
    return 1;
  }
  printf("PASS: the interposition counts allocations, frees, locks and file opens\n");
  return 0;
}

// A caller's allocator over the C library's memory below the interposed
// functions (its own calls are not counted), counting what it hands out.
struct CountingAllocator {
  unsigned long calls = 0, bytes = 0;
  long live = 0;
  static void* Alloc(void* self, size_t size, size_t alignment) {
    auto* c = static_cast<CountingAllocator*>(self);
    ++c->calls, c->bytes += size, ++c->live;
    return __libc_memalign(alignment < sizeof(void*) ? sizeof(void*) : alignment, size ? size : 1);
  }
  static void Free(void* self, void* ptr) {
    if (!ptr) return;
    --static_cast<CountingAllocator*>(self)->live;
    __libc_free(ptr);
  }
  nanort_allocator get() { return {this, &Alloc, &Free}; }
};

std::vector<unsigned> parseThreads(const char* list) {
  std::vector<unsigned> out;
  for (const char* p = list; *p;) {
    char* end = nullptr;
    unsigned long v = strtoul(p, &end, 10);
    if (end == p || v == 0 || v > 64) return {};
    out.push_back(static_cast<unsigned>(v));
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return {};
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  real();  // resolve the C library's functions before anything is watched
  findLoader();
  if (argc == 2 && strcmp(argv[1], "--self-test") == 0) return selfTest();
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL.so [--threads 1,2] [--runs N] | --self-test\n", argv[0]);
    return 2;
  }
  const char* path = argv[1];
  std::vector<unsigned> threads = {1, 2};
  int runs = 3;
  for (int i = 2; i < argc; ++i) {
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = parseThreads(argv[++i]);
      if (threads.empty()) {
        fprintf(stderr, "--threads: a comma-separated list of 1..64\n");
        return 2;
      }
    } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = atoi(argv[++i]);
      if (runs < 1 || runs > 1000) {
        fprintf(stderr, "--runs: 1..1000\n");
        return 2;
      }
    } else {
      fprintf(stderr, "unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }

  nanort_model* model = nullptr;
  nanort_status status;
  if (nanort_model_load_file(path, nullptr, nanort_allocator_system(), &model, &status) !=
      NANORT_OK) {
    fprintf(stderr, "FAIL: %s: %s\n", path, status.message);
    return 1;
  }
  // Zero inputs and output buffers, as the entry's signature has them.
  const nanort::test::ModelTensors in = nanort::test::MakeModelTensors(model, true);
  nanort::test::ModelTensors out = nanort::test::MakeModelTensors(model, false);
  const std::vector<nanort_tensor>& in_t = in.tensors;
  const std::vector<nanort_tensor>& out_t = out.tensors;

  int failed = 0;
  for (unsigned t : threads) {
    nanort_session* session = nullptr;
    // Session creation takes its memory from the caller's allocator only
    // (nanort.h): watched, with an allocator that reaches the C library's
    // memory below the interposed functions, it makes no call of them.
    CountingAllocator counting;
    resetCounts();
    g_loader_allocs.store(0);
    g_watch.store(true);
    const nanort_status_code created =
        nanort::test::CreateSession(model, t, counting.get(), &session, &status);
    g_watch.store(false);
    if (created != NANORT_OK) {
      fprintf(stderr, "FAIL: %s: session on %u threads: %s\n", path, t, status.message);
      ++failed;
      continue;
    }
    const unsigned long session_loader_allocs = g_loader_allocs.load();
    if (g_counts[kAlloc].load() || g_counts[kFile].load()) {
      fprintf(stderr,
              "FAIL: %s: session creation on %u threads made %lu allocations (first: %s) and %lu "
              "file opens outside its allocator\n",
              path, t, g_counts[kAlloc].load(), g_first[kAlloc].load(), g_counts[kFile].load());
      ++failed;
    }
    resetCounts();
    g_loader_allocs.store(0);
    int run_errors = 0;
    for (int r = 0; r < runs; ++r) {
      g_watch.store(true);
      const nanort_status_code code =
          nanort_run(session, in_t.data(), in_t.size(), out_t.data(), out_t.size(), &status);
      g_watch.store(false);
      run_errors += code != NANORT_OK;
    }
    nanort_session_release(session);
    if (counting.live != 0) {
      fprintf(stderr, "FAIL: %s: session release on %u threads left %ld allocations\n", path, t,
              counting.live);
      ++failed;
    }
    // Inside a run even the loader's allocations count.
    unsigned long total = g_loader_allocs.load();
    std::string report;
    if (total) report += " " + std::to_string(total) + " allocations by the dynamic loader;";
    for (int k = 0; k < kKinds; ++k) {
      const unsigned long n = g_counts[k].load();
      total += n;
      report += " " + std::to_string(n) + " " + kKindNames[k];
      if (n) report += std::string(" (first: ") + g_first[k].load() + ")";
    }
    if (run_errors) {
      fprintf(stderr, "FAIL: %s on %u threads: %d of %d runs failed: %s\n", path, t, run_errors,
              runs, status.message);
      ++failed;
    } else if (total) {
      fprintf(stderr, "FAIL: %s on %u threads, %d runs:%s\n", path, t, runs, report.c_str());
      ++failed;
    } else {
      printf(
          "ok: %s on %u threads, %d runs:%s (session: %lu allocations, %lu bytes, from its "
          "allocator; %lu by the dynamic loader for its workers' thread-local storage)\n",
          path, t, runs, report.c_str(), counting.calls, counting.bytes, session_loader_allocs);
    }
  }
  nanort_model_release(model);
  return failed ? 1 : 0;
}
