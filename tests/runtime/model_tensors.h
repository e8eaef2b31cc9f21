// What the whole-model checks (run_path_check.cc, concurrency_check.cc) share:
// buffers for a loaded model's inputs or outputs, and a session on nanort's
// own pool.
#ifndef NANORT_TESTS_RUNTIME_MODEL_TENSORS_H_
#define NANORT_TESTS_RUNTIME_MODEL_TENSORS_H_

#include <string.h>

#include <cstdint>
#include <vector>

#include "nanort/nanort.h"

namespace nanort::test {

// Zeroed, 64-byte aligned buffers for every input (or output) of the model's
// entry, and the tensors that point at them (NULL data for 0 bytes).
struct ModelTensors {
  std::vector<std::vector<unsigned char>> bytes;
  std::vector<nanort_tensor> tensors;
  std::vector<size_t> sizes;  // each tensor's bytes
};

inline ModelTensors MakeModelTensors(const nanort_model* model, bool inputs) {
  ModelTensors t;
  const size_t count = inputs ? nanort_model_input_count(model) : nanort_model_output_count(model);
  t.bytes.resize(count);
  for (size_t i = 0; i < count; ++i) {
    nanort_tensor_info info;
    if (inputs)
      nanort_model_input_info(model, i, &info);
    else
      nanort_model_output_info(model, i, &info);
    // 64 bytes more, for an aligned start.
    t.bytes[i].assign(static_cast<size_t>(info.size_bytes) + 64, 0);
    unsigned char* data = t.bytes[i].data();
    data += (64 - reinterpret_cast<uintptr_t>(data) % 64) % 64;
    t.tensors.push_back({info.size_bytes ? data : nullptr, info.dtype, info.rank, info.dims});
    t.sizes.push_back(static_cast<size_t>(info.size_bytes));
  }
  return t;
}

// nanort_session_create_with_options on `threads` threads of nanort's own
// pool, the options zeroed as nanort.h asks.
inline nanort_status_code CreateSession(const nanort_model* model, unsigned threads,
                                        nanort_allocator allocator, nanort_session** session,
                                        nanort_status* status) {
  nanort_session_options options;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.num_threads = threads;
  return nanort_session_create_with_options(model, nullptr, 0, allocator, &options, session,
                                            status);
}

}  // namespace nanort::test

#endif  // NANORT_TESTS_RUNTIME_MODEL_TENSORS_H_
