// nanort_model_load: the program's framing, version, invariants and target.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <string.h>

#include "cpu_features.h"
#include "test_util.h"

namespace nanort::test {
namespace {

using ::testing::HasSubstr;
using K = fb::BufferKind;

TEST(ModelLoad, AcceptsTheChainProgram) {
  const LoadResult result = LoadSpec(ChainSpec());
  EXPECT_EQ(result.code, NANORT_OK) << result.message;
  EXPECT_EQ(result.message, "");
}

TEST(ModelLoad, ReportsTheEntrySignatureAndArena) {
  ChainModel chain;
  nanort_model* model = nullptr;
  ASSERT_EQ(nanort_model_load(&chain.def, nanort_allocator_system(), &model, nullptr), NANORT_OK);
  ASSERT_EQ(nanort_model_input_count(model), 1u);
  ASSERT_EQ(nanort_model_output_count(model), 1u);
  nanort_tensor_info info;
  ASSERT_EQ(nanort_model_input_info(model, 0, &info), NANORT_OK);
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.dtype, NANORT_F32);
  ASSERT_EQ(info.rank, 2u);
  EXPECT_EQ(info.dims[0], 1);
  EXPECT_EQ(info.dims[1], 4);
  EXPECT_EQ(info.size_bytes, 16u);
  ASSERT_EQ(nanort_model_output_info(model, 0, &info), NANORT_OK);
  EXPECT_STREQ(info.name, "y");
  EXPECT_EQ(nanort_model_input_info(model, 1, &info), NANORT_INVALID_ARGUMENT);
  EXPECT_EQ(nanort_model_output_info(model, 0, nullptr), NANORT_INVALID_ARGUMENT);
  EXPECT_EQ(nanort_model_arena_size(model), 80u);
  EXPECT_EQ(nanort_model_arena_alignment(model), 64u);
  nanort_model_release(model);
}

TEST(ModelLoad, ReadsAProgramAtAnOddAddress) {
  ChainModel chain;
  std::vector<uint8_t> shifted(chain.program.size() + 1);
  memcpy(shifted.data() + 1, chain.program.data(), chain.program.size());
  chain.def.program = shifted.data() + 1;
  const LoadResult result = LoadDef(chain.def);
  EXPECT_EQ(result.code, NANORT_OK) << result.message;
}

TEST(ModelLoad, RefusesAWrongFileIdentifier) {
  ProgramSpec spec = ChainSpec();
  spec.identifier = "ONNX";
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_EQ(result.message, "not a nanort program: file identifier 'ONNX', expected 'NRTP'");
}

TEST(ModelLoad, RefusesANewerMajorFormatNamingBothVersions) {
  ProgramSpec spec = ChainSpec();
  spec.format_major = 2;
  spec.format_minor = 0;
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_UNSUPPORTED_VERSION);
  EXPECT_EQ(result.message, "program format 2.0, this runtime reads 1.x");
}

TEST(ModelLoad, ReadsANewerMinorFormat) {
  ProgramSpec spec = ChainSpec();
  spec.format_minor = 7;
  EXPECT_EQ(LoadSpec(spec).code, NANORT_OK);
}

TEST(ModelLoad, RefusesANewerKernelAbiInTheDef) {
  ChainModel chain;
  chain.def.kernel_abi = NANORT_KERNEL_ABI_VERSION + 1;
  const LoadResult result = LoadDef(chain.def);
  EXPECT_EQ(result.code, NANORT_UNSUPPORTED_VERSION);
  EXPECT_THAT(result.message,
              HasSubstr("kernel ABI " + std::to_string(NANORT_KERNEL_ABI_VERSION + 1)));
}

TEST(ModelLoad, RefusesAnObjectOfKernelAbi1WhoseKernelTableHasNoSignatures) {
  ChainModel chain;
  chain.def.kernel_abi = 1;
  const LoadResult result = LoadDef(chain.def);
  EXPECT_EQ(result.code, NANORT_UNSUPPORTED_VERSION);
  EXPECT_EQ(result.message, "model was compiled for kernel ABI 1, this runtime calls ABI 4");
}

TEST(ModelLoad, RefusesAKernelIndexOutOfRange) {
  ProgramSpec spec = ChainSpec();
  spec.thunks[1].kernel = 7;
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_EQ(result.message, "thunk 1 (node 'mul0', op 'Mul'): kernel 7 out of range (2 kernels)");
}

TEST(ModelLoad, RefusesAKernelTableOfAnotherSize) {
  ChainModel chain;
  chain.def.num_kernels = 1;
  const LoadResult result = LoadDef(chain.def);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_EQ(result.message, "program has 2 kernels (x1 variants), its object file binds 1");
}

TEST(ModelLoad, RefusesANullKernel) {
  ChainModel chain;
  chain.kernels[1].fn = nullptr;
  const LoadResult result = LoadDef(chain.def);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_THAT(result.message, HasSubstr("kernel 1 of variant 0 is NULL"));
}

TEST(ModelLoad, RefusesScratchOverOneGiB) {
  ChainModel chain;
  chain.kernels[0].scratch_bytes = (uint64_t{1} << 30) + 1;
  const LoadResult result = LoadDef(chain.def);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_THAT(result.message,
              HasSubstr("kernel 0 of variant 0 is NULL, differs from variant 0's or "
                        "declares over 1 GiB of scratch"));
  chain.kernels[0].scratch_bytes = UINT64_MAX;
  EXPECT_EQ(LoadDef(chain.def).code, NANORT_INVALID_PROGRAM);
}

TEST(ModelLoad, RefusesAnArenaSliceOutOfRange) {
  ProgramSpec spec = ChainSpec();
  spec.buffers[5].offset = 128;
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_EQ(result.message, "buffer 5 ('t1'): bytes [128, 144) outside the arena (80 bytes)");
}

TEST(ModelLoad, RefusesASliceWhoseEndOverflows) {
  ProgramSpec spec = ChainSpec();
  spec.buffers[4].offset = UINT64_MAX - 63;
  spec.buffers[4].size = 128;
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_THAT(result.message, HasSubstr("offset + size overflows"));
}

TEST(ModelLoad, RefusesAConstantSliceOutsideTheBlob) {
  ProgramSpec spec = ChainSpec();
  spec.buffers[3].offset = 128;
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_THAT(result.message, HasSubstr("outside the constants"));
}

TEST(ModelLoad, RefusesAMisalignedOffset) {
  ProgramSpec spec = ChainSpec();
  spec.buffers[5].offset = 32;
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_EQ(result.message, "buffer 5 ('t1'): offset 32 is not aligned to 64");
}

TEST(ModelLoad, RefusesAnAlignmentThatIsNotAPowerOfTwo) {
  ProgramSpec spec = ChainSpec();
  spec.buffers[4].alignment = 48;
  EXPECT_EQ(LoadSpec(spec).code, NANORT_INVALID_PROGRAM);
}

TEST(ModelLoad, RefusesAnInputSliceBeyondItsTensor) {
  ProgramSpec spec = ChainSpec();
  spec.buffers.push_back({K::Input, 0, 8, 16, "x_tail", 4});
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_EQ(result.message, "buffer 6 ('x_tail'): bytes [8, 24) outside the input (16 bytes)");
}

TEST(ModelLoad, RefusesAnOutputIndexOutOfRange) {
  ProgramSpec spec = ChainSpec();
  spec.buffers.push_back({K::Output, 3, 0, 4, "nowhere"});
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_THAT(result.message, HasSubstr("output 3 out of range"));
}

TEST(ModelLoad, RefusesAConstantsSizeThatDiffersFromTheDef) {
  ProgramSpec spec = ChainSpec();
  spec.constants_size = 64;
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_EQ(result.message, "program expects 64 bytes of constants, its object file has 128");
}

TEST(ModelLoad, RefusesATensorWhoseBufferHasAnotherSize) {
  ProgramSpec spec = ChainSpec();
  spec.inputs[0].shape = {1, 8};
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_EQ(result.message, "input 0 ('x'): buffer 0 is not the whole input 0 (32 bytes)");
}

TEST(ModelLoad, RefusesANegativeDim) {
  ProgramSpec spec = ChainSpec();
  spec.outputs[0].shape = {-1, 4};
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_THAT(result.message, HasSubstr("output 0 ('y'): shape has a negative dim"));
}

TEST(ModelLoad, RefusesATensorSizeThatOverflows) {
  ProgramSpec spec = ChainSpec();
  spec.inputs[0].shape = {INT64_MAX / 2, 4};
  EXPECT_EQ(LoadSpec(spec).code, NANORT_INVALID_PROGRAM);
}

TEST(ModelLoad, RefusesAnUnknownDtype) {
  ProgramSpec spec = ChainSpec();
  spec.inputs[0].dtype = static_cast<fb::DType>(42);
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_EQ(result.message, "input 0 ('x'): unknown dtype 42");
}

TEST(ModelLoad, RefusesAReadBeforeWrite) {
  ProgramSpec spec = ChainSpec();
  std::swap(spec.thunks[0], spec.thunks[1]);
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_EQ(result.message,
            "thunk 0 (node 'mul0', op 'Mul'): reads buffer 4 ('t0') before anything writes it");
}

TEST(ModelLoad, RefusesACopyOfArenaBytesNothingWrote) {
  ProgramSpec spec = ChainSpec();
  spec.buffers.push_back({K::Arena, 0, 32, 16, "gap", 16});  // between t0 and t1
  spec.thunks[2].src = 6;
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_EQ(result.message,
            "thunk 2 (node 'y', op 'Copy'): reads buffer 6 ('gap') before anything writes it");
}

TEST(ModelLoad, RefusesACopyLargerThanItsBuffers) {
  ProgramSpec spec = ChainSpec();
  spec.thunks[2].size = 32;
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_THAT(result.message, HasSubstr("copies 32 bytes between buffers of 16 and 16 bytes"));
}

TEST(ModelLoad, AcceptsAnAliasOfWrittenArenaBytes) {
  // A view of t1's bytes under another buffer (as a reshape would give) is
  // defined once t1 is written.
  ProgramSpec spec = ChainSpec();
  spec.buffers.push_back({K::Arena, 0, 64, 16, "t1_view"});
  spec.thunks[2].src = 6;
  EXPECT_EQ(LoadSpec(spec).code, NANORT_OK);
}

TEST(ModelLoad, RefusesAPartlyWrittenArenaRead) {
  ProgramSpec spec = ChainSpec();
  spec.buffers.push_back({K::Arena, 0, 64, 32, "t1_and_more"});
  spec.buffers.push_back({K::Arena, 0, 128, 32, "t2"});
  spec.arena_size = 160;
  ThunkSpec copy = spec.thunks[2];
  spec.thunks[2].src = 6;  // reads [64, 80) of a 32-byte buffer: defined
  copy.src = 6, copy.dst = 7, copy.size = 32;
  spec.thunks.push_back(copy);  // reads all of [64, 96): not defined
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_THAT(result.message, HasSubstr("thunk 3"));
  EXPECT_THAT(result.message,
              HasSubstr("reads buffer 6 ('t1_and_more') before anything writes it"));
}

TEST(ModelLoad, RefusesAnOutputNeverWritten) {
  ProgramSpec spec = ChainSpec();
  spec.thunks.pop_back();
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_EQ(result.message, "output buffer 1 ('y') is never (fully) written by any thunk");
}

TEST(ModelLoad, RefusesAThunkThatWritesAnInputOrConstant) {
  ProgramSpec spec = ChainSpec();
  spec.thunks[0].args = {0, 2, 0};
  const LoadResult input = LoadSpec(spec);
  EXPECT_EQ(input.code, NANORT_INVALID_PROGRAM);
  EXPECT_EQ(input.message,
            "thunk 0 (node 'add0', op 'Add'): writes buffer 0 ('x'), which is an input or "
            "constant");
  spec.thunks[0].args = {0, 2, 2};
  const LoadResult constant = LoadSpec(spec);
  EXPECT_EQ(constant.code, NANORT_INVALID_PROGRAM);
  EXPECT_THAT(constant.message, HasSubstr("writes buffer 2 ('w'), which is an input or constant"));
}

TEST(ModelLoad, RefusesAnArgOutOfRange) {
  ProgramSpec spec = ChainSpec();
  spec.thunks[0].args[1] = 99;
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_THAT(result.message, HasSubstr("arg 1 names buffer 99, not one of the program's 6 buffers "
                                        "of the 16 bytes the kernel takes"));
}

TEST(ModelLoad, RefusesAThunkThatDoesNotMatchItsKernelsSignature) {
  const std::string add =
      "thunk 0 (node 'add0', op 'Add'): does not match kernel 0, compiled "
      "for 3 args (1 outputs) and 4 tasks";
  ProgramSpec spec = ChainSpec();
  spec.thunks[0].task_count = 0;
  EXPECT_EQ(LoadSpec(spec).message, add);
  spec.thunks[0].task_count = 5;
  EXPECT_EQ(LoadSpec(spec).message, add);
  // A task count of 2^63 (or 2^64 - 1) is no kernel's either.
  spec.thunks[0].task_count = uint64_t{1} << 63;
  EXPECT_EQ(LoadSpec(spec).message, add);
  spec.thunks[0].task_count = UINT64_MAX;
  EXPECT_EQ(LoadSpec(spec).message, add);
  spec = ChainSpec();
  spec.thunks[0].num_outputs = 4;
  EXPECT_EQ(LoadSpec(spec).message, add);
  spec.thunks[0].num_outputs = 2;
  EXPECT_EQ(LoadSpec(spec).message, add);
  spec = ChainSpec();
  spec.thunks[0].args.push_back(4);
  EXPECT_EQ(LoadSpec(spec).message, add);
  spec.thunks[0].args.resize(2);
  EXPECT_EQ(LoadSpec(spec).message, add);
  // The add kernel called where the scale kernel was compiled (kernel index
  // swapped): its second argument is the 4-byte scale, not 16 bytes.
  spec = ChainSpec();
  spec.thunks[1].kernel = 0;
  EXPECT_EQ(LoadSpec(spec).message,
            "thunk 1 (node 'mul0', op 'Mul'): arg 1 names buffer 3, not one of the program's 6 "
            "buffers of the 16 bytes the kernel takes");
  // An output pointed at a smaller buffer.
  spec = ChainSpec();
  spec.buffers.push_back({fb::BufferKind::Arena, 0, 0, 8, "small"});
  spec.thunks[0].args[2] = 6;
  EXPECT_THAT(
      LoadSpec(spec).message,
      HasSubstr("arg 2 names buffer 6, not one of the program's 7 buffers of the 16 bytes"));
}

TEST(ModelLoad, RefusesAnArenaOtherThanItsBuffersNeed) {
  ProgramSpec spec = ChainSpec();
  spec.arena_size = 81;
  EXPECT_EQ(LoadSpec(spec).message, "arena of 81 bytes, more than its buffers need");
  spec.arena_size = uint64_t{1} << 40;
  EXPECT_EQ(LoadSpec(spec).code, NANORT_INVALID_PROGRAM);
  spec = ChainSpec();
  spec.arena_alignment = 1u << 31;
  EXPECT_EQ(LoadSpec(spec).message, "arena alignment 2147483648 is not a power of two up to 4096");
  spec.arena_alignment = 8192;
  EXPECT_EQ(LoadSpec(spec).code, NANORT_INVALID_PROGRAM);
  spec.arena_alignment = 4096;
  EXPECT_EQ(LoadSpec(spec).code, NANORT_OK);
}

TEST(ModelLoad, RefusesAnArenaNoAddressSpaceHolds) {
  // A valid chain whose second buffer sits at 2^60 - 64: the arena its
  // buffers need is 2^60 bytes. Load refuses it, so that no allocator is ever
  // asked for it (issue #11 item 5).
  ProgramSpec spec = ChainSpec();
  spec.buffers[5].offset = (uint64_t{1} << 60) - 64;
  spec.arena_size = uint64_t{1} << 60;
  EXPECT_EQ(LoadSpec(spec).message,
            "arena of 1152921504606846976 bytes is too large for this machine");
  if (sizeof(size_t) < 8) return;
  // The bound on 64-bit hosts: 2^47 bytes (48-bit user address spaces) load
  // (the model only: no session asks for them here), one aligned block more
  // does not.
  spec.buffers[5].offset = (uint64_t{1} << 47) - 64;
  spec.arena_size = (uint64_t{1} << 47) - 48;
  EXPECT_EQ(LoadSpec(spec).code, NANORT_OK);
  spec.buffers[5].offset = uint64_t{1} << 47;
  spec.arena_size = (uint64_t{1} << 47) + 16;
  EXPECT_EQ(LoadSpec(spec).message, "arena of 140737488355344 bytes is too large for this machine");
}

TEST(ModelLoad, RefusesAProgramAgainstAKernelCompiledOtherwise) {
  ChainModel chain;
  chain.kernels[1].task_count = 3;
  EXPECT_THAT(LoadDef(chain.def).message, HasSubstr("compiled for 3 args (1 outputs) and 3 tasks"));
}

TEST(ModelLoad, RefusesAnUnknownThunkKind) {
  ProgramSpec spec = ChainSpec();
  spec.thunks[1].kind = static_cast<fb::ThunkKind>(9);
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_THAT(result.message, HasSubstr("unknown or missing thunk kind 9"));
  spec.thunks[1].kind = fb::ThunkKind::NONE;
  EXPECT_EQ(LoadSpec(spec).code, NANORT_INVALID_PROGRAM);
}

TEST(ModelLoad, RefusesNoEntryAndSeveralEntries) {
  ProgramSpec spec = ChainSpec();
  spec.num_entries = 0;
  EXPECT_EQ(LoadSpec(spec).message, "program has 0 entries: nanort runs programs of one");
  spec.num_entries = 2;
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_INVALID_PROGRAM);
  EXPECT_EQ(result.message, "program has 2 entries: nanort runs programs of one");
}

TEST(ModelLoad, RefusesAProgramWithoutTarget) {
  ProgramSpec spec = ChainSpec();
  spec.has_target = false;
  EXPECT_EQ(LoadSpec(spec).message, "program has no target record");
}

TEST(ModelLoad, RefusesAnotherArchitecture) {
  ProgramSpec spec = ChainSpec();
  spec.triple = OtherTriple();
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_UNSUPPORTED_TARGET);
  EXPECT_EQ(result.message, "program is for " + OtherTriple() + ", this CPU is " +
                                std::string(nanort::HostArchitecture()));
}

// A host target record that names a GPU. A build without GPU offload
// refuses a format 1.3 GPU part by the same check, as UNAVAILABLE
// (gpu_program_test.cc).
TEST(ModelLoad, RefusesAGpuProgram) {
  ProgramSpec spec = ChainSpec();
  spec.device = fb::DeviceKind::CudaGpu;
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_TEST_WITH_CUDA ? NANORT_UNSUPPORTED_TARGET : NANORT_UNAVAILABLE);
  EXPECT_THAT(result.message, HasSubstr("GPU programs are not supported by this build"));
}

TEST(ModelLoad, RefusesAFeatureThisCpuLacksNamingOnlyTheMissing) {
  const std::string absent = AbsentFeature();
  if (absent.empty()) GTEST_SKIP() << "this CPU has every candidate feature; nothing to miss";
#if defined(__x86_64__)
  const std::string present = "sse2";
#elif defined(__aarch64__)
  const std::string present = "neon";
#else
  const std::string present = "m";
#endif
  ProgramSpec spec = ChainSpec();
  spec.features = {present, absent, "fast-variable-perm"};
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_UNSUPPORTED_TARGET);
  EXPECT_EQ(result.message,
            "program needs " + present + ", " + absent + "; this CPU lacks: " + absent);
}

TEST(ModelLoad, KeepsTheMissingListWhenTheNeededListIsLong) {
  const std::string absent = AbsentFeature();
  if (absent.empty()) GTEST_SKIP() << "this CPU has every candidate feature; nothing to miss";
  ProgramSpec spec = ChainSpec();
#if defined(__x86_64__)
  for (const char* f :
       {"sse",  "sse2",  "sse3",   "ssse3",    "sse4.1", "sse4.2", "popcnt", "cx16",
        "cmov", "cx8",   "fxsr",   "mmx",      "x87",    "64bit",  "sahf",   "pclmul",
        "aes",  "movbe", "xsave",  "rdrnd",    "crc32",  "lzcnt",  "prfchw", "bmi",
        "bmi2", "adx",   "rdseed", "xsaveopt", "popcnt", "sse4.2", "ssse3",  "sse3"}) {
    spec.features.push_back(f);
  }
#endif
  spec.features.push_back(absent);
  const LoadResult result = LoadSpec(spec);
  EXPECT_EQ(result.code, NANORT_UNSUPPORTED_TARGET);
  EXPECT_LT(result.message.size(), static_cast<size_t>(NANORT_STATUS_MESSAGE_SIZE));
  const std::string tail = "; this CPU lacks: " + absent;
  ASSERT_GE(result.message.size(), tail.size());
  EXPECT_EQ(result.message.substr(result.message.size() - tail.size()), tail) << result.message;
}

TEST(ModelLoad, IgnoresFeaturesItCannotDetect) {
  ProgramSpec spec = ChainSpec();
  spec.features = {"fast-variable-perm", "slow-3ops-lea", "tuning-fast-imm-vector-shift"};
  EXPECT_EQ(LoadSpec(spec).code, NANORT_OK);
}

TEST(ModelLoad, RefusesNullArguments) {
  ChainModel chain;
  nanort_model* model = reinterpret_cast<nanort_model*>(1);
  nanort_status status;
  EXPECT_EQ(nanort_model_load(nullptr, nanort_allocator_system(), &model, &status),
            NANORT_INVALID_ARGUMENT);
  EXPECT_EQ(model, nullptr);
  EXPECT_STREQ(status.message, "model def is NULL");
  EXPECT_EQ(nanort_model_load(&chain.def, nanort_allocator_system(), nullptr, &status),
            NANORT_INVALID_ARGUMENT);
  nanort_allocator broken = nanort_allocator_system();
  broken.alloc = nullptr;
  EXPECT_EQ(nanort_model_load(&chain.def, broken, &model, &status), NANORT_INVALID_ARGUMENT);
  chain.def.program = nullptr;
  EXPECT_EQ(nanort_model_load(&chain.def, nanort_allocator_system(), &model, nullptr),
            NANORT_INVALID_ARGUMENT);
  nanort_model_release(nullptr);
  EXPECT_EQ(nanort_model_input_count(nullptr), 0u);
}

TEST(ModelLoad, ReportsAFailingAllocator) {
  ChainModel chain;
  nanort_allocator failing = nanort_allocator_system();
  failing.alloc = [](void*, size_t, size_t) -> void* { return nullptr; };
  nanort_model* model = nullptr;
  nanort_status status;
  EXPECT_EQ(nanort_model_load(&chain.def, failing, &model, &status), NANORT_OUT_OF_MEMORY);
  EXPECT_EQ(model, nullptr);
}

}  // namespace
}  // namespace nanort::test
