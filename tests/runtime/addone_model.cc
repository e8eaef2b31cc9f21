// A model in a shared object, standing in for nanoc's NAME.so: exports
// `addone_model`, whose entry computes y[4] = x[4] + 1 with one kernel.
#include "nanort/nanort.h"
#include "test_program.h"

namespace {

constexpr uint64_t kLength = 4;

void AddOne(const nanort_kernel_args* args, uint64_t task_begin, uint64_t task_end) {
  if (args->num_buffers != 2) return;
  const float* x = static_cast<const float*>(args->buffers[0]);
  float* y = static_cast<float*>(args->buffers[1]);
  for (uint64_t i = task_begin; i < task_end && i < kLength; ++i) y[i] = x[i] + 1.0f;
}

const uint64_t kArgBytes[] = {16, 16};
const nanort_kernel kKernels[] = {{&AddOne, kArgBytes, kLength, 2, 1}};

// nanoc embeds the program as read-only data; building it at load time here
// keeps the test free of a generated binary fixture.
std::vector<uint8_t> BuildAddOne() {
  using namespace nanort::test;
  ProgramSpec spec;
  spec.model_name = "addone";
  spec.buffers = {{fb::BufferKind::Input, 0, 0, 16, "x"}, {fb::BufferKind::Output, 0, 0, 16, "y"}};
  spec.kernels = {"add_one"};
  spec.inputs = {{"x", fb::DType::F32, {4}, 0}};
  spec.outputs = {{"y", fb::DType::F32, {4}, 1}};
  ThunkSpec thunk;
  thunk.args = {0, 1}, thunk.task_count = kLength, thunk.node = "add", thunk.op = "Add";
  spec.thunks = {thunk};
  return BuildProgram(spec);
}

const std::vector<uint8_t> kProgram = BuildAddOne();

}  // namespace

extern "C" __attribute__((visibility("default"))) const nanort_model_def addone_model = {
    NANORT_KERNEL_ABI_VERSION, 1, kProgram.data(), kProgram.size(), nullptr, 0, kKernels, nullptr};
