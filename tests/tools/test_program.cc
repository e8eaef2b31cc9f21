#include "test_program.h"

#include <cstring>

#include "flatbuffers/flatbuffers.h"
#include "nanort/nanort.h"
#include "program_generated.h"

namespace nanort::tools::testing {

namespace fb = nanort::fb;

const char kAwkwardName[] = "t\"2\\tmp\x01\xff\xc3\xa9";

TestTarget ForeignTarget() {
  return {"riscv64-unknown-linux-gnu", "generic-rv64", {"c", "m", "v"}};
}

TestTarget HostTarget() {
#if defined(__x86_64__)
  return {"x86_64-unknown-linux-gnu", "x86-64", {}};
#elif defined(__aarch64__)
  return {"aarch64-unknown-linux-gnu", "generic", {}};
#elif defined(__riscv) && __riscv_xlen == 64
  return {"riscv64-unknown-linux-gnu", "generic-rv64", {}};
#else
#error "no host target for this architecture"
#endif
}

std::vector<uint8_t> BuildTestProgram(const std::string& model_name, const TestTarget& target) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<flatbuffers::String>> features;
  for (const std::string& f : target.features) features.push_back(b.CreateString(f));
  auto fb_target =
      fb::CreateTargetDirect(b, fb::DeviceKind::Cpu, target.triple.c_str(), target.cpu.c_str(),
                             &features, "e-m:e-p:64:64-i64:64-n32:64-S128");
  constexpr uint64_t kBytes = 6 * sizeof(float);
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers = {
      fb::CreateBufferDirect(b, fb::BufferKind::Input, 0, 0, kBytes, 64, "x"),
      fb::CreateBufferDirect(b, fb::BufferKind::Constant, 0, 0, kBytes, 64, "w"),
      fb::CreateBufferDirect(b, fb::BufferKind::Arena, 0, 0, kBytes, 64, "t"),
      fb::CreateBufferDirect(b, fb::BufferKind::Output, 0, 0, kBytes, 64, "y"),
      fb::CreateBufferDirect(b, fb::BufferKind::Arena, 0, 64, 64, 64, kAwkwardName),
  };
  std::vector<flatbuffers::Offset<fb::Kernel>> kernels = {
      fb::CreateKernelDirect(b, (model_name + "_add_0").c_str(), fb::DeviceKind::Cpu)};
  const std::vector<uint32_t> args = {0, 1, 2};
  std::vector<flatbuffers::Offset<fb::Thunk>> thunks = {
      fb::CreateThunkDirect(b, fb::ThunkKind::KernelThunk,
                            fb::CreateKernelThunkDirect(b, 0, &args, 2, 1).Union(), "add0", "Add"),
      fb::CreateThunkDirect(b, fb::ThunkKind::CopyThunk,
                            fb::CreateCopyThunk(b, 2, 3, kBytes).Union(), "y_copy", "Identity"),
  };
  const std::vector<int64_t> shape = {2, 3};
  std::vector<flatbuffers::Offset<fb::Tensor>> inputs = {
      fb::CreateTensorDirect(b, "x", fb::DType::F32, &shape, 0)};
  std::vector<flatbuffers::Offset<fb::Tensor>> outputs = {
      fb::CreateTensorDirect(b, "y", fb::DType::F32, &shape, 3)};
  std::vector<flatbuffers::Offset<fb::Entry>> entries = {
      fb::CreateEntryDirect(b, "main", &inputs, &outputs, &thunks)};
  // A format 1.0 program, which every later 1.x runtime and tool reads.
  auto program = fb::CreateProgramDirect(b, /*format_major=*/1, /*format_minor=*/0,
                                         NANORT_KERNEL_ABI_VERSION, model_name.c_str(), fb_target,
                                         &buffers, &kernels, &entries, /*arena_size=*/128,
                                         /*arena_alignment=*/64, /*constants_size=*/kBytes);
  fb::FinishProgramBuffer(b, program);
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

std::vector<uint8_t> BuildControlFlowProgram() {
  flatbuffers::FlatBufferBuilder b;
  const TestTarget target = ForeignTarget();
  auto fb_target = fb::CreateTargetDirect(b, fb::DeviceKind::Cpu, target.triple.c_str(),
                                          target.cpu.c_str(), nullptr, "");
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers = {
      fb::CreateBufferDirect(b, fb::BufferKind::Input, 0, 0, 16, 64, "x"),
      fb::CreateBufferDirect(b, fb::BufferKind::Input, 1, 0, 1, 1, "cond"),
      fb::CreateBufferDirect(b, fb::BufferKind::Output, 0, 0, 16, 64, "y"),
      fb::CreateBufferDirect(b, fb::BufferKind::Arena, 0, 0, 8, 64, "i"),
      fb::CreateBufferDirect(b, fb::BufferKind::Input, 2, 0, 8, 8, "trips"),
  };
  auto copy = [&](uint32_t src, uint32_t dst, const char* node) {
    return fb::CreateThunkDirect(b, fb::ThunkKind::CopyThunk,
                                 fb::CreateCopyThunk(b, src, dst, 16).Union(), node, "Identity");
  };
  std::vector<flatbuffers::Offset<fb::Thunk>> then_thunks = {copy(0, 2, "then_copy")};
  std::vector<flatbuffers::Offset<fb::Thunk>> else_thunks = {copy(0, 2, "else_copy")};
  const std::vector<uint32_t> if_outputs = {2};
  std::vector<flatbuffers::Offset<fb::Thunk>> body = {fb::CreateThunkDirect(
      b, fb::ThunkKind::IfThunk,
      fb::CreateIfThunkDirect(b, 1, &then_thunks, &else_thunks, &if_outputs).Union(), "branch",
      "If")};
  std::vector<flatbuffers::Offset<fb::Thunk>> thunks = {
      copy(0, 2, "first"),
      fb::CreateThunkDirect(b, fb::ThunkKind::LoopThunk,
                            fb::CreateLoopThunkDirect(b, 4, 0xFFFFFFFF, 3, 10, &body).Union(),
                            "loop", "Loop"),
      copy(0, 2, "last")};
  const std::vector<int64_t> shape = {4}, one = {1};
  std::vector<flatbuffers::Offset<fb::Tensor>> inputs = {
      fb::CreateTensorDirect(b, "x", fb::DType::F32, &shape, 0),
      fb::CreateTensorDirect(b, "cond", fb::DType::Bool, &one, 1),
      fb::CreateTensorDirect(b, "trips", fb::DType::I64, &one, 4)};
  std::vector<flatbuffers::Offset<fb::Tensor>> outputs = {
      fb::CreateTensorDirect(b, "y", fb::DType::F32, &shape, 2)};
  std::vector<flatbuffers::Offset<fb::Entry>> entries = {
      fb::CreateEntryDirect(b, "main", &inputs, &outputs, &thunks)};
  std::vector<flatbuffers::Offset<fb::Kernel>> kernels;
  auto program = fb::CreateProgramDirect(b, 1, 4, NANORT_KERNEL_ABI_VERSION, "control_flow",
                                         fb_target, &buffers, &kernels, &entries,
                                         /*arena_size=*/8, /*arena_alignment=*/64, 0);
  fb::FinishProgramBuffer(b, program);
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

namespace {

struct PlanBufferSpec {
  fb::BufferKind kind;
  uint32_t index;
  uint64_t offset, size;
  const char* name;
};
struct PlanThunkSpec {
  std::vector<uint32_t> args;  // a copy thunk when num_outputs is 0: {src, dst}
  uint32_t num_outputs;
  const char* node;
  const char* op;
};

std::vector<uint8_t> BuildPlanLikeProgram(const std::vector<PlanBufferSpec>& buffer_specs,
                                          const std::vector<PlanThunkSpec>& thunk_specs,
                                          uint64_t arena_size) {
  flatbuffers::FlatBufferBuilder b;
  const TestTarget target = ForeignTarget();
  auto fb_target = fb::CreateTargetDirect(b, fb::DeviceKind::Cpu, target.triple.c_str(),
                                          target.cpu.c_str(), nullptr, "");
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
  std::vector<flatbuffers::Offset<fb::Tensor>> inputs, outputs;
  const std::vector<int64_t> shape = {1};
  for (uint32_t i = 0; i < buffer_specs.size(); ++i) {
    const PlanBufferSpec& s = buffer_specs[i];
    buffers.push_back(fb::CreateBufferDirect(b, s.kind, s.index, s.offset, s.size, 64, s.name));
    if (s.kind == fb::BufferKind::Input) {
      inputs.push_back(fb::CreateTensorDirect(b, s.name, fb::DType::U8, &shape, i));
    } else if (s.kind == fb::BufferKind::Output) {
      outputs.push_back(fb::CreateTensorDirect(b, s.name, fb::DType::U8, &shape, i));
    }
  }
  std::vector<flatbuffers::Offset<fb::Kernel>> kernels = {
      fb::CreateKernelDirect(b, "plan_op_0", fb::DeviceKind::Cpu)};
  std::vector<flatbuffers::Offset<fb::Thunk>> thunks;
  for (const PlanThunkSpec& t : thunk_specs) {
    if (t.num_outputs == 0) {
      thunks.push_back(fb::CreateThunkDirect(
          b, fb::ThunkKind::CopyThunk,
          fb::CreateCopyThunk(b, t.args[0], t.args[1], buffer_specs[t.args[1]].size).Union(),
          t.node, t.op));
    } else {
      thunks.push_back(fb::CreateThunkDirect(
          b, fb::ThunkKind::KernelThunk,
          fb::CreateKernelThunkDirect(b, 0, &t.args, 1, t.num_outputs).Union(), t.node, t.op));
    }
  }
  std::vector<flatbuffers::Offset<fb::Entry>> entries = {
      fb::CreateEntryDirect(b, "main", &inputs, &outputs, &thunks)};
  auto program = fb::CreateProgramDirect(b, 1, 0, NANORT_KERNEL_ABI_VERSION, "plan", fb_target,
                                         &buffers, &kernels, &entries, arena_size, 64, 4096);
  fb::FinishProgramBuffer(b, program);
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

}  // namespace

std::vector<uint8_t> BuildPlanProgram() {
  using K = fb::BufferKind;
  return BuildPlanLikeProgram(
      {
          {K::Input, 0, 0, 4096, "x"},                     // 0
          {K::Constant, 0, 0, 4096, "w"},                  // 1
          {K::Arena, 0, 0, 4096, "a"},                     // 2: thunks 0-1
          {K::Arena, 0, 4096, 8192, "b"},                  // 3: thunks 1-5
          {K::Arena, 0, 4096, 8192, "b_view"},             // 4: thunk 3, b's bytes
          {K::Arena, 0, 0, 2048, "c"},                     // 5: thunks 2-4, a's old bytes
          {K::Arena, 0, 2048, 1024, "<dead & \"gone\">"},  // 6: thunk 3, never read
          {K::Arena, 0, 12288, 64, "unused"},              // 7: no thunk
          {K::Output, 0, 0, 2048, "y"},                    // 8
          {K::Output, 1, 0, 8192, "z"},                    // 9
      },
      {
          {{0, 1, 2}, 1, "conv0", "Conv"},
          {{2, 3}, 1, "relu0", "Relu"},
          {{3, 5}, 1, "pool0", "MaxPool"},
          {{4, 6}, 1, "side0", "Neg"},
          {{5, 3, 8}, 1, "out0", "Add"},
          {{3, 9}, 0, "z_copy", "Identity"},
      },
      /*arena_size=*/12352);
}

std::vector<uint8_t> BuildNoArenaProgram() {
  using K = fb::BufferKind;
  return BuildPlanLikeProgram(
      {{K::Input, 0, 0, 4096, "x"}, {K::Constant, 0, 0, 4096, "w"}, {K::Output, 0, 0, 4096, "y"}},
      {{{0, 1, 2}, 1, "add0", "Add"}}, /*arena_size=*/0);
}

namespace {

void Put(std::vector<uint8_t>* out, size_t at, uint64_t value, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) (*out)[at + i] = static_cast<uint8_t>(value >> (8 * i));
}

}  // namespace

std::vector<uint8_t> WrapInElf(const std::vector<uint8_t>& program) {
  // Layout: ELF header | program (8-aligned) | names | 3 section headers
  // (null, .nanort.program, .shstrtab).
  static const char kNames[] = "\0.nanort.program\0.shstrtab";
  const size_t program_offset = 64;
  const size_t names_offset = program_offset + program.size();
  const size_t shoff = (names_offset + sizeof(kNames) + 7) / 8 * 8;
  std::vector<uint8_t> elf(shoff + 3 * 64, 0);
  std::memcpy(elf.data(),
              "\x7f"
              "ELF",
              4);
  elf[4] = 2;            // ELFCLASS64
  elf[5] = 1;            // ELFDATA2LSB
  elf[6] = 1;            // EV_CURRENT
  Put(&elf, 16, 1, 2);   // ET_REL
  Put(&elf, 18, 62, 2);  // EM_X86_64; inspection does not care
  Put(&elf, 20, 1, 4);
  Put(&elf, 40, shoff, 8);
  Put(&elf, 52, 64, 2);  // e_ehsize
  Put(&elf, 58, 64, 2);  // e_shentsize
  Put(&elf, 60, 3, 2);   // e_shnum
  Put(&elf, 62, 2, 2);   // e_shstrndx
  std::memcpy(elf.data() + program_offset, program.data(), program.size());
  std::memcpy(elf.data() + names_offset, kNames, sizeof(kNames));
  const size_t prog_sh = shoff + 64, names_sh = shoff + 128;
  Put(&elf, prog_sh + 0, 1, 4);  // name: ".nanort.program"
  Put(&elf, prog_sh + 4, 1, 4);  // SHT_PROGBITS
  Put(&elf, prog_sh + 8, 2, 8);  // SHF_ALLOC
  Put(&elf, prog_sh + 24, program_offset, 8);
  Put(&elf, prog_sh + 32, program.size(), 8);
  Put(&elf, prog_sh + 48, 8, 8);
  Put(&elf, names_sh + 0, 17, 4);  // name: ".shstrtab"
  Put(&elf, names_sh + 4, 3, 4);   // SHT_STRTAB
  Put(&elf, names_sh + 24, names_offset, 8);
  Put(&elf, names_sh + 32, sizeof(kNames), 8);
  Put(&elf, names_sh + 48, 1, 8);
  return elf;
}

}  // namespace nanort::tools::testing
