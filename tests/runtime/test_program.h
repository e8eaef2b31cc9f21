// Builds nanort programs for tests: a ProgramSpec is plain data that a test
// edits (one field wrong at a time), and BuildProgram serializes it with the
// generated flatbuffers API, the way nanoc's emitter does.
#ifndef NANORT_TESTS_RUNTIME_TEST_PROGRAM_H_
#define NANORT_TESTS_RUNTIME_TEST_PROGRAM_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "nanort/nanort.h"
#include "program_generated.h"

namespace nanort::test {

namespace fb = ::nanort::fb;

struct BufferSpec {
  fb::BufferKind kind;
  uint32_t index;
  uint64_t offset;
  uint64_t size;
  std::string name;
  uint32_t alignment = 64;
};

struct TensorSpec {
  std::string name;
  fb::DType dtype;
  std::vector<int64_t> shape;
  uint32_t buffer;
};

struct ThunkSpec {
  fb::ThunkKind kind = fb::ThunkKind::KernelThunk;  // any value: written as is
  // KernelThunk (and GpuLaunchThunk: kernel, args, num_outputs)
  uint32_t kernel = 0;
  std::vector<uint32_t> args;
  uint64_t task_count = 1;
  uint32_t num_outputs = 1;
  // CopyThunk (and GpuCopyThunk)
  uint32_t src = 0;
  uint32_t dst = 0;
  uint64_t size = 0;
  std::string node;
  std::string op;
  // IfThunk (format 1.4): cond, then_thunks, else_thunks, outputs.
  // LoopThunk: trip_count, cond, counter, max_trips, body. 0xFFFFFFFF: none.
  uint32_t cond = 0xFFFFFFFF;
  std::vector<ThunkSpec> then_thunks;
  std::vector<ThunkSpec> else_thunks;
  std::vector<uint32_t> outputs;
  uint32_t trip_count = 0xFFFFFFFF;
  uint32_t counter = 0;
  uint64_t max_trips = 1;
  std::vector<ThunkSpec> body;
};

// Control flow (format 1.4), for tests to nest.
ThunkSpec IfSpec(uint32_t cond, std::vector<ThunkSpec> then_thunks,
                 std::vector<ThunkSpec> else_thunks, std::vector<uint32_t> outputs,
                 std::string node = "if");
ThunkSpec LoopSpec(uint32_t trip_count, uint32_t cond, uint32_t counter, uint64_t max_trips,
                   std::vector<ThunkSpec> body, std::string node = "loop");
ThunkSpec CopySpec(uint32_t src, uint32_t dst, uint64_t size, std::string node = "copy");
ThunkSpec KernelSpec(uint32_t kernel, std::vector<uint32_t> args, std::string node = "kernel");

// One CPU variant of a format 1.1 program (Program.variants).
struct VariantSpec {
  std::string cpu;
  std::vector<std::string> features;
};

// Format 1.3's GPU module (Program.gpu).
struct GpuImageSpec {
  fb::GpuImageFormat format = fb::GpuImageFormat::Cubin;
  uint32_t sm = 80;
  std::string variant;
  uint32_t ptx_isa = 80;
  std::vector<uint8_t> data;
};

struct GpuKernelSpec {
  std::string name;
  std::vector<uint64_t> arg_bytes;
  uint32_t num_outputs = 1;
  std::vector<uint32_t> grid = {1, 1, 1};
  std::vector<uint32_t> block = {128, 1, 1};
  uint32_t shared_bytes = 0;
};

struct GpuModuleSpec {
  bool present = false;  // false: a CPU-only program (no Program.gpu)
  std::vector<GpuImageSpec> images;
  std::vector<GpuKernelSpec> kernels;
  uint64_t device_arena_size = 0;
  uint32_t device_arena_alignment = 256;
  // Program.gpu_target (device CudaGpu, sm_`target_sm`, PTX ISA 8.0), as
  // nanoc writes it; absent when target_sm is 0.
  uint32_t target_sm = 80;
};

// Recognisable image bytes: a cubin is "\x7fELF" + tag, PTX is the tag.
std::vector<uint8_t> FakeCubin(const std::string& tag);
std::vector<uint8_t> FakePtx(const std::string& tag);

struct ProgramSpec {
  uint32_t format_major = NANORT_FORMAT_MAJOR;
  uint32_t format_minor = NANORT_FORMAT_MINOR;
  uint32_t kernel_abi = NANORT_KERNEL_ABI_VERSION;
  std::string model_name = "test";
  bool has_target = true;
  fb::DeviceKind device = fb::DeviceKind::Cpu;
  std::string triple;  // the host's triple by default
  std::string cpu = "generic";
  std::vector<std::string> features;
  std::vector<BufferSpec> buffers;
  std::vector<std::string> kernels;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<ThunkSpec> thunks;
  int num_entries = 1;  // copies of the one entry
  uint64_t arena_size = 0;
  uint32_t arena_alignment = 64;
  uint64_t constants_size = 0;
  const char* identifier = "NRTP";
  std::vector<VariantSpec> variants;  // empty: a one-variant program (no list)
  GpuModuleSpec gpu;
};

// "x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu", ... for this build.
std::string HostTriple();
// A triple of an architecture other than this build's.
std::string OtherTriple();

std::vector<uint8_t> BuildProgram(const ProgramSpec& spec);

// Kernels following the kernel ABI, over float vectors of kChainLength
// elements (one task per element). Like compiled kernels, they know the shapes
// they were built for and ignore tasks beyond them.
constexpr uint64_t kChainLength = 4;
void AddF32(const nanort_kernel_args* args, uint64_t task_begin, uint64_t task_end);
void ScaleF32(const nanort_kernel_args* args, uint64_t task_begin, uint64_t task_end);

// Kernel table entries for the chain's kernels, with the signatures they
// assume (three args: two inputs, one output; kChainLength tasks).
nanort_kernel AddF32Entry();
nanort_kernel ScaleF32Entry();
// The same signature as ScaleF32Entry's, with another function.
nanort_kernel ChainEntry(nanort_kernel_fn fn, bool scale);

// The chain program: y[1,4] = (x[1,4] + w) * s, through two arena buffers and
// a final copy thunk:
//   buffers: 0 x (input), 1 y (output), 2 w (constant @0), 3 s (constant @64),
//            4 t0 (arena @0), 5 t1 (arena @64)
//   thunks:  add(x, w) -> t0; scale(t0, s) -> t1; copy t1 -> y
ProgramSpec ChainSpec();

// The chain on the GPU (format 1.3): y[1,4] = (x[1,4] + w) * s, with w and s
// from the constants blob (as ChainSpec's) uploaded to the device:
//   buffers: 0 x (input), 1 y (output), 2 dx (device @0), 3 dt (device @256),
//            4 dy (device @512), 5 w (device constant @0), 6 s (device constant @64)
//   thunks:  copy x -> dx; gpu add(dx, w) -> dt; gpu scale(dt, s) -> dy;
//            copy dy -> y
//   GPU module: kernels add_f32 {16,16,16} and scale_f32 {16,4,16}, one image
//   (an sm_80 cubin, FakeCubin("sm_80")), a device arena of 528 bytes.
// Its CPU kernel table is ChainModel's (bound, unused).
ProgramSpec GpuChainSpec();

// Everything a nanort_model_def points at, kept alive together.
struct ChainModel {
  ChainModel();
  explicit ChainModel(const ProgramSpec& spec);
  // Uses `bytes` as the program and, when they hold a GPU module, seals it
  // (def.gpu) as nanoc would; setting def.program directly keeps the seal.
  void SetProgram(std::vector<uint8_t> bytes);

  std::vector<uint8_t> program;
  alignas(64) float constants[32];  // w at 0, s at byte 64
  nanort_kernel kernels[2];
  // SetProgram's seal of the program's GPU part, as nanoc would write it.
  nanort_gpu_seal gpu_seal;
  std::vector<uint8_t> image_digests;
  nanort_model_def def;
};

}  // namespace nanort::test

#endif  // NANORT_TESTS_RUNTIME_TEST_PROGRAM_H_
