// Hostile programs (issue #14): programs built to make load or session
// creation take memory or time out of proportion to their size, by naming
// one table or vector from many places (flatbuffers allows it), and the bound
// nanort holds instead: load and session creation together allocate at most
// kMaxBytesPerProgramByte times the program's size (plus a constant), and a
// 1 MB program verifies in well under a second.
#include <gtest/gtest.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "test_util.h"

namespace nanort::test {
namespace {

// The bound docs/SAFETY.md states: the session's tables, the model and the
// verifier's scratch together, per byte of program.
constexpr double kMaxBytesPerProgramByte = 8;
constexpr size_t kFixedBytes = 4096;

// The system allocator, counting the most bytes it held at once.
struct CountingAllocator {
  std::map<void*, size_t> live;
  size_t held = 0, peak = 0;

  static void* Alloc(void* self, size_t size, size_t alignment) {
    auto* c = static_cast<CountingAllocator*>(self);
    void* p = aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
    if (p == nullptr) return nullptr;
    c->live[p] = size;
    c->held += size;
    if (c->held > c->peak) c->peak = c->held;
    return p;
  }
  static void Free(void* self, void* p) {
    auto* c = static_cast<CountingAllocator*>(self);
    if (p == nullptr) return;
    c->held -= c->live[p];
    c->live.erase(p);
    free(p);
  }
  nanort_allocator get() { return {this, &Alloc, &Free}; }
};

struct Outcome {
  nanort_status_code code;
  std::string message;
  size_t peak_bytes;  // most bytes held at once by load and session creation
  double seconds;
};

// Loads `def` and creates a session in an arena of our own (not counted).
Outcome LoadAndCreate(const nanort_model_def& def) {
  CountingAllocator counting;
  nanort_status status;
  nanort_model* model = nullptr;
  const auto start = std::chrono::steady_clock::now();
  nanort_status_code code = nanort_model_load(&def, counting.get(), &model, &status);
  if (code == NANORT_OK) {
    std::vector<uint8_t> arena(nanort_model_arena_size(model) + 4096);
    uint8_t* aligned = arena.data() + (4096 - reinterpret_cast<uintptr_t>(arena.data()) % 4096);
    nanort_session* session = nullptr;
    code = nanort_session_create(model, aligned, nanort_model_arena_size(model), counting.get(),
                                 &session, &status);
    nanort_session_release(session);
    nanort_model_release(model);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(counting.held, 0u) << "leaked";
  return {code, status.message, counting.peak, seconds};
}

void ExpectBounded(const Outcome& o, size_t program_size) {
  EXPECT_LE(o.peak_bytes, kMaxBytesPerProgramByte * program_size + kFixedBytes)
      << o.peak_bytes << " bytes for a " << program_size << "-byte program";
  EXPECT_LT(o.seconds, 1.0) << "for a " << program_size << "-byte program";
}

// The chain's model def around program bytes built here.
struct Model {
  explicit Model(std::vector<uint8_t> bytes) { chain.SetProgram(std::move(bytes)); }
  ChainModel chain;
};

// ---- shared tables and vectors ----

// `inputs` input tensors, each its own table and buffer, all naming one
// `rank`-long shape vector: the model would copy rank * inputs dims.
std::vector<uint8_t> SharedShape(uint32_t inputs, uint32_t rank) {
  flatbuffers::FlatBufferBuilder b;
  const auto shape = b.CreateVector(std::vector<int64_t>(rank, 1));
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
  for (uint32_t i = 0; i < inputs; ++i) {
    buffers.push_back(fb::CreateBuffer(b, fb::BufferKind::Input, i, 0, 4));
    tensors.push_back(fb::CreateTensor(b, 0, fb::DType::F32, shape, i));
  }
  const auto entry = fb::CreateEntry(b, 0, b.CreateVector(tensors));
  b.Finish(fb::CreateProgram(b, NANORT_FORMAT_MAJOR, NANORT_FORMAT_MINOR, NANORT_KERNEL_ABI_VERSION,
                             0, fb::CreateTarget(b), b.CreateVector(buffers), 0,
                             b.CreateVector(std::vector<flatbuffers::Offset<fb::Entry>>{entry})),
           fb::ProgramIdentifier());
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

// `entries` thunk entries naming one kernel thunk of `args` arguments: the
// session would bind entries * args slots.
std::vector<uint8_t> SharedThunk(uint32_t entries, uint32_t args) {
  flatbuffers::FlatBufferBuilder b;
  const auto thunk = fb::CreateThunk(
      b, fb::ThunkKind::KernelThunk,
      fb::CreateKernelThunk(b, 0, b.CreateVector(std::vector<uint32_t>(args, 0)), 1, 0).Union());
  const auto entry = fb::CreateEntry(
      b, 0, 0, 0, b.CreateVector(std::vector<flatbuffers::Offset<fb::Thunk>>(entries, thunk)));
  const auto buffers = b.CreateVector(
      std::vector<flatbuffers::Offset<fb::Buffer>>{fb::CreateBuffer(b, fb::BufferKind::Arena)});
  b.Finish(fb::CreateProgram(b, NANORT_FORMAT_MAJOR, NANORT_FORMAT_MINOR, NANORT_KERNEL_ABI_VERSION,
                             0, fb::CreateTarget(b), buffers, 0,
                             b.CreateVector(std::vector<flatbuffers::Offset<fb::Entry>>{entry})),
           fb::ProgramIdentifier());
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

// `variants` entries naming one target whose features list one string
// `features` times: the walk would verify variants * features strings.
std::vector<uint8_t> SharedVariant(uint32_t variants, uint32_t features) {
  flatbuffers::FlatBufferBuilder b;
  const auto name = b.CreateString("sse2");
  const auto target = fb::CreateTarget(
      b, fb::DeviceKind::Cpu, 0, 0,
      b.CreateVector(std::vector<flatbuffers::Offset<flatbuffers::String>>(features, name)));
  b.Finish(fb::CreateProgram(
               b, NANORT_FORMAT_MAJOR, NANORT_FORMAT_MINOR, NANORT_KERNEL_ABI_VERSION, 0, target, 0,
               0, 0, 0, 64, 0,
               b.CreateVector(std::vector<flatbuffers::Offset<fb::Target>>(variants, target))),
           fb::ProgramIdentifier());
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

void ExpectRefusedAsShared(const std::vector<uint8_t>& bytes) {
  const Model model(bytes);
  const Outcome o = LoadAndCreate(model.chain.def);
  EXPECT_EQ(o.code, NANORT_INVALID_PROGRAM);
  EXPECT_NE(o.message.find("from many places"), std::string::npos) << o.message;
  ExpectBounded(o, bytes.size());
  printf("[          ] %zu-byte program refused in %.1f ms, %zu bytes allocated\n", bytes.size(),
         o.seconds * 1e3, o.peak_bytes);
}

TEST(HostileProgram, InputsSharingOneShapeAreRefusedWithoutCopyingIt) {
  // The fuzzer's: 231 KB that asked for 277 MB at load.
  ExpectRefusedAsShared(SharedShape(2400, 14400));
}

TEST(HostileProgram, ThunksSharingOneThunkAreRefusedWithoutBindingIt) {
  // The fuzzer's: 48 KB that asked for 288 MB at session creation.
  ExpectRefusedAsShared(SharedThunk(6000, 6000));
}

TEST(HostileProgram, VariantsSharingOneTargetAreRefusedInLinearTime) {
  // The fuzzer's: 160 KB that took 0.6 s to refuse; 800 KB took 20 s.
  ExpectRefusedAsShared(SharedVariant(20000, 20000));
  ExpectRefusedAsShared(SharedVariant(100000, 100000));
}

TEST(HostileProgram, ProgramsThatShareNothingStillLoad) {
  // The same counts, unshared, are legal: the rule is about sharing, not size.
  const std::vector<uint8_t> bytes = SharedShape(1, 14400);
  flatbuffers::Verifier verifier(bytes.data(), bytes.size());
  ASSERT_TRUE(fb::VerifyProgramBuffer(verifier));
  const Model model(bytes);
  EXPECT_EQ(LoadAndCreate(model.chain.def).message.find("from many places"), std::string::npos);
}

// ---- the bound on large programs that share nothing ----

// A chain-shaped program of `copies` extra copy thunks through arena buffers
// 64 bytes apart, written in decreasing offsets (so that no two written
// ranges touch, and each lands before all the others: the verifier's worst
// order) and, if `read_back`, read back in increasing ones. Names are empty
// when not `named`, to fit the most thunks in a megabyte.
ProgramSpec ManyCopies(uint32_t copies, bool read_back = true, bool named = true) {
  ProgramSpec spec = ChainSpec();
  const uint32_t first = static_cast<uint32_t>(spec.buffers.size());
  for (uint32_t i = 0; i < copies; ++i) {
    spec.buffers.push_back({fb::BufferKind::Arena, 0, 128 + 64 * uint64_t{copies - 1 - i}, 16,
                            named ? "c" + std::to_string(i) : ""});
  }
  std::vector<ThunkSpec> thunks = spec.thunks;
  for (uint32_t i = 0; i < copies; ++i) {
    ThunkSpec copy = spec.thunks[2];
    copy.src = 5, copy.dst = first + i, copy.node = named ? "w" + std::to_string(i) : "";
    if (!named) copy.op = "";
    thunks.push_back(copy);
  }
  for (uint32_t i = 0; read_back && i < copies; ++i) {
    ThunkSpec copy = spec.thunks[2];
    copy.src = first + copies - 1 - i, copy.dst = 1, copy.node = "r" + std::to_string(i);
    thunks.push_back(copy);
  }
  spec.thunks = thunks;
  spec.arena_size = 128 + 64 * uint64_t{copies - 1} + 16;
  return spec;
}

// `thunks` add thunks whose kernel takes `args` arguments, all but the last
// the caller's input (each a slot patched at every run: the most session
// memory per program byte).
struct ManyArgs {
  ManyArgs(uint32_t thunks, uint32_t args) : arg_bytes(args, 16) {
    ProgramSpec spec = ChainSpec();
    ThunkSpec add = spec.thunks[0];
    add.args.assign(args, 0);
    add.args.back() = 1;  // y
    spec.thunks.assign(thunks, add);
    spec.arena_size = 0;
    spec.buffers.resize(4);  // no arena buffers
    chain.kernels[0] = nanort_kernel{&AddF32, arg_bytes.data(), kChainLength, args, 1};
    chain.SetProgram(BuildProgram(spec));
  }
  std::vector<uint64_t> arg_bytes;
  ChainModel chain;
};

TEST(HostileProgram, AMegabyteOfCopiesLoadsInBoundedTimeAndMemory) {
  const ProgramSpec spec = ManyCopies(6000);
  const Model model(BuildProgram(spec));
  const Outcome o = LoadAndCreate(model.chain.def);
  EXPECT_EQ(o.code, NANORT_OK) << o.message;
  ExpectBounded(o, model.chain.program.size());
  printf("[          ] %zu-byte program, %zu thunks: loaded in %.1f ms, %zu bytes allocated\n",
         model.chain.program.size(), spec.thunks.size(), o.seconds * 1e3, o.peak_bytes);
}

TEST(HostileProgram, AMegabyteOfScatteredWritesLoadsInBoundedTimeAndMemory) {
  const ProgramSpec spec = ManyCopies(13000, false, false);
  const Model model(BuildProgram(spec));
  const Outcome o = LoadAndCreate(model.chain.def);
  EXPECT_EQ(o.code, NANORT_OK) << o.message;
  ExpectBounded(o, model.chain.program.size());
  printf("[          ] %zu-byte program, %zu thunks: loaded in %.1f ms, %zu bytes allocated\n",
         model.chain.program.size(), spec.thunks.size(), o.seconds * 1e3, o.peak_bytes);
}

TEST(HostileProgram, AMegabyteOfPatchedArgumentsLoadsInBoundedTimeAndMemory) {
  const ManyArgs model(4, 60000);
  const Outcome o = LoadAndCreate(model.chain.def);
  EXPECT_EQ(o.code, NANORT_OK) << o.message;
  ExpectBounded(o, model.chain.program.size());
  printf("[          ] %zu-byte program, 240000 args: loaded in %.1f ms, %zu bytes allocated\n",
         model.chain.program.size(), o.seconds * 1e3, o.peak_bytes);
}

#if NANORT_TEST_WITH_CONTROL_FLOW
// Format 1.4: `ifs` unnamed IfThunks on a 1-byte constant after `spec`'s
// thunks, each branch copying one byte into the arena (the verifier
// snapshots and restores the written ranges at every one).
ProgramSpec WithIfs(ProgramSpec spec, uint32_t ifs) {
  const uint32_t cond = static_cast<uint32_t>(spec.buffers.size());
  spec.buffers.push_back({fb::BufferKind::Constant, 0, 0, 1, "", 1});
  ThunkSpec copy = CopySpec(0, 4, 1, "");
  copy.op = "";
  for (uint32_t i = 0; i < ifs; ++i) spec.thunks.push_back(IfSpec(cond, {copy}, {copy}, {}, ""));
  for (ThunkSpec& t : spec.thunks) t.op = t.kind == fb::ThunkKind::IfThunk ? "" : t.op;
  return spec;
}

TEST(HostileProgram, AMegabyteOfIfsLoadsInBoundedTimeAndMemory) {
  const ProgramSpec spec = WithIfs(ChainSpec(), 20000);
  const Model model(BuildProgram(spec));
  const Outcome o = LoadAndCreate(model.chain.def);
  EXPECT_EQ(o.code, NANORT_OK) << o.message;
  ExpectBounded(o, model.chain.program.size());
  printf("[          ] %zu-byte program, 20000 ifs: loaded in %.1f ms, %zu bytes allocated\n",
         model.chain.program.size(), o.seconds * 1e3, o.peak_bytes);
}

TEST(HostileProgram, IfsAfterScatteredWritesLoadInBoundedTimeAndMemory) {
  // Each If copies every written range three times: the verifier's worst
  // case, quadratic (docs/SAFETY.md).
  const ProgramSpec spec = WithIfs(ManyCopies(6000, false, false), 3000);
  const Model model(BuildProgram(spec));
  const Outcome o = LoadAndCreate(model.chain.def);
  EXPECT_EQ(o.code, NANORT_OK) << o.message;
  ExpectBounded(o, model.chain.program.size());
  printf(
      "[          ] %zu-byte program, 6000 scattered writes, 3000 ifs: loaded in %.1f ms, %zu "
      "bytes allocated\n",
      model.chain.program.size(), o.seconds * 1e3, o.peak_bytes);
}
#endif

}  // namespace
}  // namespace nanort::test
