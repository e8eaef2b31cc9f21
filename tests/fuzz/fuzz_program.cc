// Fuzz target: the program loader, then session creation and one run.
//
// The input is a program (the flatbuffer nanoc writes, NAME.nrt). It is
// loaded with the kernels and constants of tests/fuzz/fuzz_model.nir
// (compiled by nanoc, linked in), so a mutant the verifier accepts runs real
// kernels: nanort_model_load must refuse anything it cannot prove safe, and a
// program it accepts must create a session and run on zero inputs of the
// shapes it declares without any sanitizer report.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "fuzz_model.h"
#include "nanort/nanort.h"

namespace {

// Sessions whose arena or tensors would exceed this are not created: a
// program may declare any size the verifier bounds (2^47 bytes), which is
// the loader's business, not an allocation worth making per input.
constexpr uint64_t kMaxBytes = uint64_t{64} << 20;

struct Tensors {
  std::vector<std::vector<uint64_t>> storage;  // 8-byte aligned, zeroed
  std::vector<nanort_tensor> tensors;
};

// Zeroed tensors of the shapes the model declares; false when they are over
// the budget.
bool MakeTensors(const nanort_model* model, bool inputs, uint64_t* budget, Tensors* out) {
  const size_t count = inputs ? nanort_model_input_count(model) : nanort_model_output_count(model);
  out->storage.resize(count);
  out->tensors.resize(count);
  for (size_t i = 0; i < count; ++i) {
    nanort_tensor_info info;
    nanort_status_code code = inputs ? nanort_model_input_info(model, i, &info)
                                     : nanort_model_output_info(model, i, &info);
    if (code != NANORT_OK) abort();  // the count said it exists
    if (info.size_bytes > *budget) return false;
    *budget -= info.size_bytes;
    out->storage[i].assign((info.size_bytes + 7) / 8 + 1, 0);
    out->tensors[i] = {out->storage[i].data(), info.dtype, info.rank, info.dims};
  }
  return true;
}

// NANORT_FUZZ_VERBOSE=1 prints how far each input got (for reading a
// finding or checking that the seed runs).
void Say(const char* stage, const nanort_status& status) {
  static const bool verbose = getenv("NANORT_FUZZ_VERBOSE") != nullptr;
  if (verbose) fprintf(stderr, "fuzz_program: %s: %s\n", stage, status.message);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Flatbuffers are read at 8-byte alignment, as nanoc's object places them.
  std::vector<uint64_t> program(size / 8 + 1);
  memcpy(program.data(), data, size);
  nanort_model_def def = fuzz_model_model;
  def.program = reinterpret_cast<const uint8_t*>(program.data());
  def.program_size = size;

  nanort_model* model = nullptr;
  nanort_status status;
  if (nanort_model_load(&def, nanort_allocator_system(), &model, &status) != NANORT_OK) {
    if (model != nullptr) abort();  // a failed load hands out no model
    Say("load", status);
    return 0;
  }
  uint64_t budget = kMaxBytes;
  const uint64_t arena = nanort_model_arena_size(model);
  Tensors in, out;
  bool fits = arena <= budget;
  if (fits) budget -= arena;
  fits = fits && MakeTensors(model, true, &budget, &in) && MakeTensors(model, false, &budget, &out);
  nanort_session* session = nullptr;
  if (fits && nanort_session_create(model, nullptr, 0, nanort_allocator_system(), &session,
                                    &status) == NANORT_OK) {
    status.message[0] = 0;
    nanort_run(session, in.tensors.data(), in.tensors.size(), out.tensors.data(),
               out.tensors.size(), &status);
    Say("ran", status);
    nanort_session_release(session);
  } else {
    Say(fits ? "session" : "over the budget", status);
  }
  nanort_model_release(model);
  return 0;
}
