// A model shared object in the shape nanoc writes (NAME.so exporting
// NAME_model), built by hand from the test program so that nanort-run can be
// tested before nanoc exists. Its one kernel adds the constant w to x.
#include <cstdint>
#include <vector>

#include "nanort/nanort.h"
#include "test_program.h"

namespace {

namespace t = nanort::tools::testing;

// One task per row of the [2,3] tensors.
void AddKernel(const nanort_kernel_args* args, uint64_t task_begin, uint64_t task_end) {
  const float* x = static_cast<const float*>(args->buffers[0]);
  const float* w = static_cast<const float*>(args->buffers[1]);
  float* out = static_cast<float*>(args->buffers[2]);
  for (uint64_t row = task_begin; row < task_end; ++row) {
    for (uint64_t col = 0; col < 3; ++col) out[row * 3 + col] = x[row * 3 + col] + w[row * 3 + col];
  }
}

// Its signature: x, w and out of [2,3] f32, one task per row.
const uint64_t kArgBytes[] = {24, 24, 24};
const nanort_kernel kKernels[] = {{AddKernel, kArgBytes, 2, 3, 1}};

std::vector<uint8_t>& ProgramBytes() {
  static std::vector<uint8_t> bytes;
  return bytes;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) nanort_model_def tiny_model;
nanort_model_def tiny_model;

// nanoc's object holds the program as read-only data; here it is built when
// the shared object is loaded, before dlopen returns.
__attribute__((constructor)) static void InitTinyModel() {
  ProgramBytes() = t::BuildTestProgram("tiny", t::HostTarget());
  tiny_model.kernel_abi = NANORT_KERNEL_ABI_VERSION;
  tiny_model.num_kernels = 1;
  tiny_model.program = ProgramBytes().data();
  tiny_model.program_size = ProgramBytes().size();
  tiny_model.constants = reinterpret_cast<const uint8_t*>(t::kConstantW);
  tiny_model.constants_size = sizeof(t::kConstantW);
  tiny_model.kernels = kKernels;
}
