// nanort.hpp: a thin RAII wrapper over nanort.h for C++ callers. No
// exceptions: every fallible call returns the C API's status code, and the
// objects are move-only owners of the C handles.
#ifndef NANORT_NANORT_HPP_
#define NANORT_NANORT_HPP_

#include <stddef.h>

#include "nanort/nanort.h"

namespace nanort {

class Model {
 public:
  Model() = default;
  ~Model() { Reset(); }
  Model(Model&& other) noexcept : model_(other.model_) { other.model_ = nullptr; }
  Model& operator=(Model&& other) noexcept {
    if (this != &other) {
      Reset();
      model_ = other.model_;
      other.model_ = nullptr;
    }
    return *this;
  }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // Replaces *out with the model loaded from `def` (see nanort_model_load).
  static nanort_status_code Load(const nanort_model_def& def, Model* out,
                                 nanort_status* status = nullptr,
                                 nanort_allocator allocator = nanort_allocator_system()) {
    nanort_model* model = nullptr;
    const nanort_status_code code = nanort_model_load(&def, allocator, &model, status);
    if (code == NANORT_OK) *out = Model(model);
    return code;
  }

  // Replaces *out with the model in shared object `path` (see
  // nanort_model_load_file); `name` may be NULL.
  static nanort_status_code LoadFile(const char* path, const char* name, Model* out,
                                     nanort_status* status = nullptr,
                                     nanort_allocator allocator = nanort_allocator_system()) {
    nanort_model* model = nullptr;
    const nanort_status_code code = nanort_model_load_file(path, name, allocator, &model, status);
    if (code == NANORT_OK) *out = Model(model);
    return code;
  }

  void Reset() {
    nanort_model_release(model_);
    model_ = nullptr;
  }

  const nanort_model* get() const { return model_; }
  explicit operator bool() const { return model_ != nullptr; }

  size_t input_count() const { return nanort_model_input_count(model_); }
  size_t output_count() const { return nanort_model_output_count(model_); }
  nanort_status_code input_info(size_t index, nanort_tensor_info* info) const {
    return nanort_model_input_info(model_, index, info);
  }
  nanort_status_code output_info(size_t index, nanort_tensor_info* info) const {
    return nanort_model_output_info(model_, index, info);
  }
  uint64_t arena_size() const { return nanort_model_arena_size(model_); }
  uint32_t arena_alignment() const { return nanort_model_arena_alignment(model_); }

 private:
  explicit Model(nanort_model* model) : model_(model) {}
  nanort_model* model_ = nullptr;
};

class Session {
 public:
  Session() = default;
  ~Session() { Reset(); }
  Session(Session&& other) noexcept : session_(other.session_) { other.session_ = nullptr; }
  Session& operator=(Session&& other) noexcept {
    if (this != &other) {
      Reset();
      session_ = other.session_;
      other.session_ = nullptr;
    }
    return *this;
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Replaces *out with a session on `model`, which must outlive it. With a
  // NULL arena nanort allocates one (see nanort_session_create).
  static nanort_status_code Create(const Model& model, Session* out,
                                   nanort_status* status = nullptr, void* arena = nullptr,
                                   size_t arena_size = 0,
                                   nanort_allocator allocator = nanort_allocator_system()) {
    nanort_session* session = nullptr;
    const nanort_status_code code =
        nanort_session_create(model.get(), arena, arena_size, allocator, &session, status);
    if (code == NANORT_OK) *out = Session(session);
    return code;
  }

  nanort_status_code Run(const nanort_tensor* inputs, size_t num_inputs,
                         const nanort_tensor* outputs, size_t num_outputs,
                         nanort_status* status = nullptr) {
    return nanort_run(session_, inputs, num_inputs, outputs, num_outputs, status);
  }

  // Inputs and outputs in host or CUDA device memory (nanort_run_with_memory).
  nanort_status_code RunWithMemory(const nanort_tensor* inputs, const nanort_memory* input_memory,
                                   size_t num_inputs, const nanort_tensor* outputs,
                                   const nanort_memory* output_memory, size_t num_outputs,
                                   nanort_status* status = nullptr) {
    return nanort_run_with_memory(session_, inputs, input_memory, num_inputs, outputs,
                                  output_memory, num_outputs, status);
  }

  void Reset() {
    nanort_session_release(session_);
    session_ = nullptr;
  }

  nanort_session* get() const { return session_; }
  explicit operator bool() const { return session_ != nullptr; }

 private:
  explicit Session(nanort_session* session) : session_(session) {}
  nanort_session* session_ = nullptr;
};

}  // namespace nanort

#endif  // NANORT_NANORT_HPP_
