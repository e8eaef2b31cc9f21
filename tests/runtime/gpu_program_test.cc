// Format 1.3 GPU programs at the verifier: every hostile variant of the GPU
// chain (tests/runtime/test_program.h) is refused, naming what is wrong, and
// nothing reaches a driver. This binary links no GPU offload (it never refers
// to nanort_cuda_offload), so the valid chain itself is refused as
// UNAVAILABLE, which also shows that the CUDA code stays out of a program
// that does not ask for it. The driver-facing tests are in tests/cuda.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "test_util.h"

namespace nanort::test {
namespace {

using K = fb::BufferKind;

#if NANORT_TEST_WITH_CUDA

TEST(GpuProgram, ValidChainIsUnavailableInABinaryWithoutTheOffload) {
  const LoadResult result = LoadSpec(GpuChainSpec());
  EXPECT_EQ(result.code, NANORT_UNAVAILABLE) << result.message;
  EXPECT_NE(result.message.find("does not link nanort's GPU offload"), std::string::npos)
      << result.message;
}

TEST(GpuProgram, CpuModelHasNoGpuDescription) {
  ChainModel chain;
  nanort_model* model = nullptr;
  ASSERT_EQ(nanort_model_load(&chain.def, nanort_allocator_system(), &model, nullptr), NANORT_OK);
  EXPECT_EQ(nanort_model_gpu(model), nullptr);
  nanort_model_release(model);
}

struct Hostile {
  const char* name;
  std::function<void(ProgramSpec&)> edit;
  const char* expected;  // a part of the message
};

class HostileGpuProgram : public ::testing::TestWithParam<Hostile> {};

TEST_P(HostileGpuProgram, IsRefusedAsInvalid) {
  ProgramSpec spec = GpuChainSpec();
  GetParam().edit(spec);
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM) << result.message;
  EXPECT_NE(result.message.find(GetParam().expected), std::string::npos) << result.message;
}

const Hostile kHostile[] = {
    {"KernelIndexOutOfRange", [](ProgramSpec& s) { s.thunks[1].kernel = 2; },
     "GPU kernel 2 out of range (2 kernels)"},
    {"TooFewArgs",
     [](ProgramSpec& s) {
       s.thunks[1].args = {2, 3};
     },
     "does not match GPU kernel 0 ('add_f32'), compiled for 3 args"},
    {"OutputsDiffer", [](ProgramSpec& s) { s.thunks[1].num_outputs = 2; },
     "does not match GPU kernel 0"},
    {"ArgInHostMemory",
     [](ProgramSpec& s) {
       s.thunks[1].args = {0, 5, 3};
     },
     "arg 0 names buffer 0, not one of the program's 7 buffers in GPU memory"},
    {"ArgOfTheWrongSize",
     [](ProgramSpec& s) {
       s.thunks[2].args = {3, 5, 4};
     },
     "arg 1 names buffer 5"},
    {"ArgOutOfRange",
     [](ProgramSpec& s) {
       s.thunks[1].args = {2, 5, 70};
     },
     "arg 2 names buffer 70"},
    {"WritesADeviceConstant",
     [](ProgramSpec& s) {
       s.buffers[6].size = 16;
       s.gpu.kernels[1].arg_bytes = {16, 16, 16};
       s.thunks[2].args = {3, 5, 6};
       s.thunks[3].src = 3;
     },
     "which is not in the device arena"},
    {"ReadsDeviceMemoryBeforeItIsWritten",
     [](ProgramSpec& s) {
       s.thunks[1].args = {4, 5, 3};
     },
     "reads buffer 4 ('dy') before anything writes it"},
    {"CopiesOutBeforeTheKernelWrites", [](ProgramSpec& s) { std::swap(s.thunks[2], s.thunks[3]); },
     "reads buffer 4 ('dy') before anything writes it"},
    {"ZeroBlock",
     [](ProgramSpec& s) {
       s.gpu.kernels[0].block = {0, 1, 1};
     },
     "block is not 3 dims >= 1 of at most 1024 threads"},
    {"BlockOf2048Threads",
     [](ProgramSpec& s) {
       s.gpu.kernels[0].block = {64, 32, 1};
     },
     "block is not 3 dims"},
    {"BlockOfTwoDims",
     [](ProgramSpec& s) {
       s.gpu.kernels[0].block = {64, 1};
     },
     "block is not 3 dims"},
    {"GridYOf65536",
     [](ProgramSpec& s) {
       s.gpu.kernels[0].grid = {1, 65536, 1};
     },
     "grid is not 3 dims >= 1 with x < 2^31"},
    {"GridXOf2To31",
     [](ProgramSpec& s) {
       s.gpu.kernels[0].grid = {0x80000000u, 1, 1};
     },
     "grid is not 3 dims"},
    {"ZeroGrid",
     [](ProgramSpec& s) {
       s.gpu.kernels[1].grid = {1, 1, 0};
     },
     "grid is not"},
    {"TooMuchSharedMemory", [](ProgramSpec& s) { s.gpu.kernels[0].shared_bytes = 256 * 1024 + 1; },
     "bytes of shared memory (at most 262144)"},
    {"KernelNameEmpty", [](ProgramSpec& s) { s.gpu.kernels[0].name = ""; },
     "is not a C identifier"},
    {"KernelNameStartsWithADigit", [](ProgramSpec& s) { s.gpu.kernels[0].name = "1add"; },
     "name '1add' is not a C identifier"},
    {"KernelNameWithAQuote", [](ProgramSpec& s) { s.gpu.kernels[0].name = "add'; x"; },
     "is not a C identifier"},
    {"KernelNameTooLong", [](ProgramSpec& s) { s.gpu.kernels[0].name = std::string(256, 'k'); },
     "is not a C identifier of 1 to 255"},
    {"MoreOutputsThanArgs", [](ProgramSpec& s) { s.gpu.kernels[0].num_outputs = 4; },
     "3 args (at most 512), 4 of them outputs"},
    {"NoImages", [](ProgramSpec& s) { s.gpu.images.clear(); }, "GPU module has 0 images"},
    {"EmptyImage", [](ProgramSpec& s) { s.gpu.images[0].data.clear(); }, "GPU image 0: 0 bytes"},
    {"CubinThatIsNotElf", [](ProgramSpec& s) { s.gpu.images[0].data = FakePtx("not elf"); },
     "cubin is not ELF"},
    {"PtxWithANul",
     [](ProgramSpec& s) {
       s.gpu.images.push_back({fb::GpuImageFormat::Ptx, 80, "", 80, {'.', 'v', 0, 'x', 'y'}});
     },
     "GPU image 1: PTX holds a NUL at byte 2"},
    {"UnknownImageFormat",
     [](ProgramSpec& s) { s.gpu.images[0].format = static_cast<fb::GpuImageFormat>(7); },
     "unknown format 7"},
    {"UnknownVariant", [](ProgramSpec& s) { s.gpu.images[0].variant = "b"; }, "variant 'b' is not"},
    {"SmOutOfRange", [](ProgramSpec& s) { s.gpu.images[0].sm = 5; }, "sm 5 or PTX ISA 80"},
    {"DeviceSliceOutsideTheDeviceArena", [](ProgramSpec& s) { s.buffers[4].offset = 768; },
     "outside the device arena (528 bytes)"},
    {"DeviceConstantOutsideTheBlob", [](ProgramSpec& s) { s.buffers[6].offset = 128; },
     "outside the constants"},
    {"DeviceArenaLargerThanNeeded", [](ProgramSpec& s) { s.gpu.device_arena_size = 1024; },
     "device arena of 1024 bytes, more than its buffers need"},
    {"DeviceAlignmentOverTheArenas",
     [](ProgramSpec& s) {
       s.buffers[3].alignment = 512;
       s.buffers[3].offset = 0;
     },
     "alignment 512 exceeds the device arena's"},
    {"DeviceArenaAlignmentOver256", [](ProgramSpec& s) { s.gpu.device_arena_alignment = 512; },
     "device arena alignment 512"},
    {"CopyOfPartOfABuffer", [](ProgramSpec& s) { s.thunks[0].size = 8; },
     "copies 8 bytes between buffers of 16 and 16 bytes"},
    {"CopyIntoADeviceConstant",
     [](ProgramSpec& s) {
       s.thunks[0].dst = 5;
       s.thunks[1].args = {5, 5, 3};
     },
     "which is an input or constant"},
    {"CopyIntoTheInput", [](ProgramSpec& s) { s.thunks[3].dst = 0; },
     "which is an input or constant"},
    {"CopyHostToHost", [](ProgramSpec& s) { s.thunks[3].src = 0; },
     "copies host buffer 0 to host buffer 1"},
    {"HostKernelOnDeviceMemory",
     [](ProgramSpec& s) {
       ThunkSpec host;
       host.kernel = 0, host.args = {2, 4, 3}, host.task_count = kChainLength;
       s.thunks.insert(s.thunks.begin() + 1, host);
     },
     "which is in GPU memory"},
    {"HostCopyOfDeviceMemory", [](ProgramSpec& s) { s.thunks[3].kind = fb::ThunkKind::CopyThunk; },
     "on the host, but one is in GPU memory"},
    {"DeviceBuffersWithoutAModule", [](ProgramSpec& s) { s.gpu.present = false; },
     "is in device memory, but the program has no GPU module"},
    {"GpuThunkWithoutAModule",
     [](ProgramSpec& s) {
       s.gpu.present = false;
       s.buffers.resize(2);
       s.buffers.push_back({K::Arena, 0, 0, 16, "t"});
       s.arena_size = 16;
       s.thunks = {s.thunks[0]};
       s.thunks[0].dst = 2;
     },
     "and no GPU module"},
};

INSTANTIATE_TEST_SUITE_P(GpuProgram, HostileGpuProgram, ::testing::ValuesIn(kHostile),
                         [](const auto& info) { return std::string(info.param.name); });

#else  // a nanort built without GPU offload

TEST(GpuProgram, IsUnavailableWithoutNanortWithCuda) {
  const LoadResult result = LoadSpec(GpuChainSpec());
  EXPECT_EQ(result.code, NANORT_UNAVAILABLE) << result.message;
  EXPECT_EQ(result.message, "GPU programs are not supported by this build (program is for sm_80)");
}

#endif

}  // namespace
}  // namespace nanort::test
