// nanort-concurrency-check: one model shared by sessions on several threads
// (issue #11 item 4).
//
//   nanort-concurrency-check MODEL.so [--sessions 8] [--runs 1000] [--session-threads 1]
//
// Loads the model once. Makes one set of inputs per session (floats uniform
// in [-1, 1) from the session's own seed, other dtypes zero) and computes each
// set's outputs on a session of one thread, alone: the references. Then each
// session runs on a thread of its own, all at once, --runs times on its set,
// each session on --session-threads threads of nanort's pool, and every
// output of every run must equal its reference bit for bit. Built with
// -fsanitize=thread as well (nanort-concurrency-check-tsan, with nanort
// itself instrumented), where ThreadSanitizer reports any data race in
// nanort's sessions, pool or loader state and fails the run;
// --race-self-test races on purpose, for a test that the instrumentation
// reports it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "model_tensors.h"
#include "nanort/nanort.h"

using nanort::test::CreateSession;
using nanort::test::MakeModelTensors;
using nanort::test::ModelTensors;

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "--race-self-test") == 0) {
    // A data race on purpose: the ThreadSanitizer build must report it
    // (runtime.concurrent_sessions_tsan_sees_races), or its clean reports
    // above would prove nothing.
    static int shared = 0;
    std::thread a([] {
      for (int i = 0; i < 1000; ++i) shared = shared + 1;
    });
    std::thread b([] {
      for (int i = 0; i < 1000; ++i) shared = shared + 1;
    });
    a.join();
    b.join();
    printf("raced: %d\n", shared);
    return 0;
  }
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL.so [--sessions N] [--runs N] [--session-threads N]\n",
            argv[0]);
    return 2;
  }
  const char* path = argv[1];
  int sessions = 8, runs = 1000;
  unsigned session_threads = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    const long v = strtol(argv[i + 1], nullptr, 10);
    if (strcmp(argv[i], "--sessions") == 0 && v >= 1 && v <= 64) {
      sessions = static_cast<int>(v);
    } else if (strcmp(argv[i], "--runs") == 0 && v >= 1 && v <= 1000000) {
      runs = static_cast<int>(v);
    } else if (strcmp(argv[i], "--session-threads") == 0 && v >= 1 && v <= 16) {
      session_threads = static_cast<unsigned>(v);
    } else {
      fprintf(stderr, "bad argument '%s %s'\n", argv[i], argv[i + 1]);
      return 2;
    }
  }
  if (argc % 2 != 0) {
    fprintf(stderr, "bad argument '%s'\n", argv[argc - 1]);
    return 2;
  }

  nanort_model* model = nullptr;
  nanort_status status;
  if (nanort_model_load_file(path, nullptr, nanort_allocator_system(), &model, &status) !=
      NANORT_OK) {
    fprintf(stderr, "FAIL: %s: %s\n", path, status.message);
    return 1;
  }
  const size_t num_in = nanort_model_input_count(model);
  const size_t num_out = nanort_model_output_count(model);

  // Each session's inputs and, from a one-thread session alone, its
  // reference outputs.
  std::vector<ModelTensors> inputs, references;
  nanort_session* alone = nullptr;
  if (CreateSession(model, 1, nanort_allocator_system(), &alone, &status) != NANORT_OK) {
    fprintf(stderr, "FAIL: %s: session: %s\n", path, status.message);
    return 1;
  }
  for (int s = 0; s < sessions; ++s) {
    inputs.push_back(MakeModelTensors(model, true));
    std::mt19937 rng(static_cast<unsigned>(1000 + s));
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (nanort_tensor& t : inputs.back().tensors) {
      if (t.dtype != NANORT_F32 || !t.data) continue;
      size_t n = 1;
      for (uint32_t d = 0; d < t.rank; ++d) n *= static_cast<size_t>(t.dims[d]);
      for (size_t e = 0; e < n; ++e) static_cast<float*>(t.data)[e] = uniform(rng);
    }
    references.push_back(MakeModelTensors(model, false));
    if (nanort_run(alone, inputs.back().tensors.data(), num_in, references.back().tensors.data(),
                   num_out, &status) != NANORT_OK) {
      fprintf(stderr, "FAIL: %s: reference run: %s\n", path, status.message);
      return 1;
    }
  }
  nanort_session_release(alone);

  std::atomic<long> mismatches{0}, errors{0};
  std::vector<std::thread> threads;
  for (int s = 0; s < sessions; ++s)
    threads.emplace_back([&, s] {
      nanort_status st;
      nanort_session* mine = nullptr;
      if (CreateSession(model, session_threads, nanort_allocator_system(), &mine, &st) !=
          NANORT_OK) {
        errors.fetch_add(1);
        return;
      }
      ModelTensors out = MakeModelTensors(model, false);
      for (int r = 0; r < runs; ++r) {
        if (nanort_run(mine, inputs[s].tensors.data(), num_in, out.tensors.data(), num_out, &st) !=
            NANORT_OK) {
          errors.fetch_add(1);
          break;
        }
        for (size_t o = 0; o < num_out; ++o) {
          const size_t n = out.sizes[o];
          if (n && memcmp(out.tensors[o].data, references[s].tensors[o].data, n) != 0)
            mismatches.fetch_add(1);
          if (n) memset(out.tensors[o].data, 0xA5, n);  // a run must write every byte again
        }
      }
      nanort_session_release(mine);
    });
  for (std::thread& t : threads) t.join();
  nanort_model_release(model);
  if (errors.load() || mismatches.load()) {
    fprintf(stderr,
            "FAIL: %s: %d sessions x %d runs on %u threads each: %ld failed, %ld outputs differ "
            "from their one-thread reference\n",
            path, sessions, runs, session_threads, errors.load(), mismatches.load());
    return 1;
  }
  printf(
      "ok: %s: %d sessions at once x %d runs on %u threads each, every output bitwise equal to "
      "its one-thread reference\n",
      path, sessions, runs, session_threads);
  return 0;
}
