#include "test_program.h"

// nanort internals, named by path: not every target of this file has
// nanort/src on its include path.
#include <string.h>

#include <functional>

#include "../../nanort/src/cuda/gpu_seal.h"
#include "../../nanort/src/cuda/sha256.h"

namespace nanort::test {

std::string HostTriple() {
#if defined(__x86_64__)
  return "x86_64-unknown-linux-gnu";
#elif defined(__aarch64__)
  return "aarch64-unknown-linux-gnu";
#elif defined(__riscv)
  return "riscv64-unknown-linux-gnu";
#else
  return "unknown-unknown-unknown";
#endif
}

std::string OtherTriple() {
#if defined(__aarch64__)
  return "x86_64-unknown-linux-gnu";
#else
  return "aarch64-unknown-linux-gnu";
#endif
}

std::vector<uint8_t> BuildProgram(const ProgramSpec& spec) {
  flatbuffers::FlatBufferBuilder b;
  flatbuffers::Offset<fb::Target> target;
  if (spec.has_target) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> features;
    for (const std::string& f : spec.features) features.push_back(b.CreateString(f));
    target = fb::CreateTarget(
        b, spec.device, b.CreateString(spec.triple.empty() ? HostTriple() : spec.triple),
        b.CreateString(spec.cpu), b.CreateVector(features), b.CreateString(""), 0, 0);
  }
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
  for (const BufferSpec& s : spec.buffers) {
    buffers.push_back(fb::CreateBuffer(b, s.kind, s.index, s.offset, s.size, s.alignment,
                                       b.CreateString(s.name)));
  }
  std::vector<flatbuffers::Offset<fb::Kernel>> kernels;
  for (const std::string& k : spec.kernels) {
    kernels.push_back(fb::CreateKernel(b, b.CreateString(k), fb::DeviceKind::Cpu));
  }
  auto tensors = [&](const std::vector<TensorSpec>& specs) {
    std::vector<flatbuffers::Offset<fb::Tensor>> out;
    for (const TensorSpec& t : specs) {
      out.push_back(
          fb::CreateTensor(b, b.CreateString(t.name), t.dtype, b.CreateVector(t.shape), t.buffer));
    }
    return b.CreateVector(out);
  };
  // Nested sequences first: a table is finished before the one naming it.
  std::function<flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Thunk>>>(
      const std::vector<ThunkSpec>&)>
      sequence = [&](const std::vector<ThunkSpec>& specs) {
        std::vector<flatbuffers::Offset<fb::Thunk>> thunks;
        for (const ThunkSpec& t : specs) {
          flatbuffers::Offset<void> kind;
          if (t.kind == fb::ThunkKind::CopyThunk) {
            kind = fb::CreateCopyThunk(b, t.src, t.dst, t.size).Union();
          } else if (t.kind == fb::ThunkKind::GpuCopyThunk) {
            kind = fb::CreateGpuCopyThunk(b, t.src, t.dst, t.size).Union();
          } else if (t.kind == fb::ThunkKind::GpuLaunchThunk) {
            kind = fb::CreateGpuLaunchThunk(b, t.kernel, b.CreateVector(t.args), t.num_outputs)
                       .Union();
          } else if (t.kind == fb::ThunkKind::IfThunk) {
            const auto then_thunks = sequence(t.then_thunks);
            const auto else_thunks = sequence(t.else_thunks);
            kind = fb::CreateIfThunk(b, t.cond, then_thunks, else_thunks, b.CreateVector(t.outputs))
                       .Union();
          } else if (t.kind == fb::ThunkKind::LoopThunk) {
            const auto body = sequence(t.body);
            kind =
                fb::CreateLoopThunk(b, t.trip_count, t.cond, t.counter, t.max_trips, body).Union();
          } else if (t.kind != fb::ThunkKind::NONE) {
            kind = fb::CreateKernelThunk(b, t.kernel, b.CreateVector(t.args), t.task_count,
                                         t.num_outputs)
                       .Union();
          }
          thunks.push_back(
              fb::CreateThunk(b, t.kind, kind, b.CreateString(t.node), b.CreateString(t.op)));
        }
        return b.CreateVector(thunks);
      };
  const auto thunks = sequence(spec.thunks);
  std::vector<flatbuffers::Offset<fb::Entry>> entries;
  for (int e = 0; e < spec.num_entries; ++e) {
    entries.push_back(fb::CreateEntry(b, b.CreateString("main"), tensors(spec.inputs),
                                      tensors(spec.outputs), thunks));
  }
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Target>>> variants;
  if (!spec.variants.empty()) {
    std::vector<flatbuffers::Offset<fb::Target>> records;
    for (const VariantSpec& v : spec.variants) {
      std::vector<flatbuffers::Offset<flatbuffers::String>> features;
      for (const std::string& f : v.features) features.push_back(b.CreateString(f));
      records.push_back(fb::CreateTarget(
          b, fb::DeviceKind::Cpu, b.CreateString(spec.triple.empty() ? HostTriple() : spec.triple),
          b.CreateString(v.cpu), b.CreateVector(features), b.CreateString(""), 0, 0));
    }
    variants = b.CreateVector(records);
  }
  flatbuffers::Offset<fb::GpuModule> gpu;
  flatbuffers::Offset<fb::Target> gpu_target;
  if (spec.gpu.present && spec.gpu.target_sm != 0) {
    const std::string sm = "sm_" + std::to_string(spec.gpu.target_sm);
    gpu_target =
        fb::CreateTarget(b, fb::DeviceKind::CudaGpu, b.CreateString("nvptx64-nvidia-cuda"),
                         b.CreateString(sm), 0, b.CreateString(""), spec.gpu.target_sm, 80);
  }
  if (spec.gpu.present) {
    std::vector<flatbuffers::Offset<fb::GpuImage>> images;
    for (const GpuImageSpec& i : spec.gpu.images) {
      images.push_back(fb::CreateGpuImage(b, i.format, i.sm, b.CreateString(i.variant), i.ptx_isa,
                                          b.CreateVector(i.data)));
    }
    std::vector<flatbuffers::Offset<fb::GpuKernel>> gpu_kernels;
    for (const GpuKernelSpec& k : spec.gpu.kernels) {
      gpu_kernels.push_back(
          fb::CreateGpuKernel(b, b.CreateString(k.name), b.CreateVector(k.arg_bytes), k.num_outputs,
                              b.CreateVector(k.grid), b.CreateVector(k.block), k.shared_bytes));
    }
    gpu = fb::CreateGpuModule(b, b.CreateVector(images), b.CreateVector(gpu_kernels),
                              spec.gpu.device_arena_size, spec.gpu.device_arena_alignment);
  }
  auto program = fb::CreateProgram(
      b, spec.format_major, spec.format_minor, spec.kernel_abi, b.CreateString(spec.model_name),
      target, b.CreateVector(buffers), b.CreateVector(kernels), b.CreateVector(entries),
      spec.arena_size, spec.arena_alignment, spec.constants_size, variants, gpu, gpu_target);
  b.Finish(program, spec.identifier);
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

ThunkSpec IfSpec(uint32_t cond, std::vector<ThunkSpec> then_thunks,
                 std::vector<ThunkSpec> else_thunks, std::vector<uint32_t> outputs,
                 std::string node) {
  ThunkSpec t;
  t.kind = fb::ThunkKind::IfThunk;
  t.cond = cond;
  t.then_thunks = std::move(then_thunks);
  t.else_thunks = std::move(else_thunks);
  t.outputs = std::move(outputs);
  t.node = std::move(node);
  t.op = "If";
  return t;
}

ThunkSpec LoopSpec(uint32_t trip_count, uint32_t cond, uint32_t counter, uint64_t max_trips,
                   std::vector<ThunkSpec> body, std::string node) {
  ThunkSpec t;
  t.kind = fb::ThunkKind::LoopThunk;
  t.trip_count = trip_count;
  t.cond = cond;
  t.counter = counter;
  t.max_trips = max_trips;
  t.body = std::move(body);
  t.node = std::move(node);
  t.op = "Loop";
  return t;
}

ThunkSpec CopySpec(uint32_t src, uint32_t dst, uint64_t size, std::string node) {
  ThunkSpec t;
  t.kind = fb::ThunkKind::CopyThunk;
  t.src = src, t.dst = dst, t.size = size;
  t.node = std::move(node);
  t.op = "Copy";
  return t;
}

ThunkSpec KernelSpec(uint32_t kernel, std::vector<uint32_t> args, std::string node) {
  ThunkSpec t;
  t.kernel = kernel;
  t.args = std::move(args);
  t.task_count = kChainLength;
  t.node = std::move(node);
  t.op = kernel == 0 ? "Add" : "Mul";
  return t;
}

std::vector<uint8_t> FakeCubin(const std::string& tag) {
  std::vector<uint8_t> bytes = {0x7f, 'E', 'L', 'F', ':'};
  bytes.insert(bytes.end(), tag.begin(), tag.end());
  return bytes;
}

std::vector<uint8_t> FakePtx(const std::string& tag) {
  return std::vector<uint8_t>(tag.begin(), tag.end());
}

void AddF32(const nanort_kernel_args* args, uint64_t task_begin, uint64_t task_end) {
  if (args->num_buffers != 3) return;
  const float* a = static_cast<const float*>(args->buffers[0]);
  const float* c = static_cast<const float*>(args->buffers[1]);
  float* out = static_cast<float*>(args->buffers[2]);
  for (uint64_t i = task_begin; i < task_end && i < kChainLength; ++i) out[i] = a[i] + c[i];
}

void ScaleF32(const nanort_kernel_args* args, uint64_t task_begin, uint64_t task_end) {
  if (args->num_buffers != 3) return;
  const float* x = static_cast<const float*>(args->buffers[0]);
  const float scale = *static_cast<const float*>(args->buffers[1]);
  float* out = static_cast<float*>(args->buffers[2]);
  for (uint64_t i = task_begin; i < task_end && i < kChainLength; ++i) out[i] = x[i] * scale;
}

nanort_kernel ChainEntry(nanort_kernel_fn fn, bool scale) {
  static const uint64_t kAddBytes[] = {16, 16, 16}, kScaleBytes[] = {16, 4, 16};
  return nanort_kernel{fn, scale ? kScaleBytes : kAddBytes, kChainLength, 3, 1};
}

nanort_kernel AddF32Entry() { return ChainEntry(&AddF32, false); }
nanort_kernel ScaleF32Entry() { return ChainEntry(&ScaleF32, true); }

ProgramSpec ChainSpec() {
  using K = fb::BufferKind;
  ProgramSpec spec;
  spec.buffers = {
      {K::Input, 0, 0, 16, "x"},    {K::Output, 0, 0, 16, "y"}, {K::Constant, 0, 0, 16, "w"},
      {K::Constant, 0, 64, 4, "s"}, {K::Arena, 0, 0, 16, "t0"}, {K::Arena, 0, 64, 16, "t1"},
  };
  spec.kernels = {"add_f32", "scale_f32"};
  spec.inputs = {{"x", fb::DType::F32, {1, 4}, 0}};
  spec.outputs = {{"y", fb::DType::F32, {1, 4}, 1}};
  ThunkSpec add;
  add.kernel = 0, add.args = {0, 2, 4}, add.task_count = kChainLength, add.node = "add0";
  add.op = "Add";
  ThunkSpec scale;
  scale.kernel = 1, scale.args = {4, 3, 5}, scale.task_count = kChainLength;
  scale.node = "mul0", scale.op = "Mul";
  ThunkSpec copy;
  copy.kind = fb::ThunkKind::CopyThunk, copy.src = 5, copy.dst = 1, copy.size = 16;
  copy.node = "y", copy.op = "Copy";
  spec.thunks = {add, scale, copy};
  spec.arena_size = 80;  // exactly what t0 and t1 need
  spec.constants_size = sizeof(ChainModel::constants);
  return spec;
}

ProgramSpec GpuChainSpec() {
  using K = fb::BufferKind;
  ProgramSpec spec = ChainSpec();
  spec.buffers = {
      {K::Input, 0, 0, 16, "x"},          {K::Output, 0, 0, 16, "y"},
      {K::Device, 0, 0, 16, "dx"},        {K::Device, 0, 256, 16, "dt"},
      {K::Device, 0, 512, 16, "dy"},      {K::DeviceConstant, 0, 0, 16, "w"},
      {K::DeviceConstant, 0, 64, 4, "s"},
  };
  spec.arena_size = 0;
  ThunkSpec in;
  in.kind = fb::ThunkKind::GpuCopyThunk, in.src = 0, in.dst = 2, in.size = 16;
  in.node = "x", in.op = "CopyToDevice";
  ThunkSpec add;
  add.kind = fb::ThunkKind::GpuLaunchThunk, add.kernel = 0, add.args = {2, 5, 3};
  add.node = "add0", add.op = "Add";
  ThunkSpec scale;
  scale.kind = fb::ThunkKind::GpuLaunchThunk, scale.kernel = 1, scale.args = {3, 6, 4};
  scale.node = "mul0", scale.op = "Mul";
  ThunkSpec out;
  out.kind = fb::ThunkKind::GpuCopyThunk, out.src = 4, out.dst = 1, out.size = 16;
  out.node = "y", out.op = "CopyToHost";
  spec.thunks = {in, add, scale, out};
  spec.gpu.present = true;
  spec.gpu.images = {{fb::GpuImageFormat::Cubin, 80, "", 80, FakeCubin("sm_80")}};
  spec.gpu.kernels = {{"add_f32", {16, 16, 16}}, {"scale_f32", {16, 4, 16}}};
  spec.gpu.device_arena_size = 528;
  return spec;
}

ChainModel::ChainModel() : ChainModel(ChainSpec()) {}

ChainModel::ChainModel(const ProgramSpec& spec) {
  memset(constants, 0, sizeof(constants));
  constants[0] = 10, constants[1] = 20, constants[2] = 30, constants[3] = 40;
  constants[16] = 0.5f;  // s, at byte 64
  kernels[0] = AddF32Entry();
  kernels[1] = ScaleF32Entry();
  def.kernel_abi = NANORT_KERNEL_ABI_VERSION;
  def.num_kernels = 2;
  def.constants = reinterpret_cast<const uint8_t*>(constants);
  def.constants_size = sizeof(constants);
  def.kernels = kernels;
  SetProgram(BuildProgram(spec));
}

void ChainModel::SetProgram(std::vector<uint8_t> bytes) {
  program = std::move(bytes);
  def.program = program.data();
  def.program_size = program.size();
  def.gpu = nullptr;
  flatbuffers::Verifier verifier(program.data(), program.size());
  if (program.empty() || !fb::VerifyProgramBuffer(verifier)) return;
  const fb::GpuModule* gpu = fb::GetProgram(program.data())->gpu();
  if (gpu == nullptr) return;
  gpu_seal::DigestKernels<cuda::Sha256>(*gpu, gpu_seal.kernels_sha256);
  image_digests.assign(32 * flatbuffers::VectorLength(gpu->images()), 0);
  for (flatbuffers::uoffset_t i = 0; i < flatbuffers::VectorLength(gpu->images()); ++i) {
    gpu_seal::DigestImage<cuda::Sha256>(*gpu->images()->Get(i), image_digests.data() + 32 * i);
  }
  gpu_seal.num_images = flatbuffers::VectorLength(gpu->images());
  gpu_seal.images_sha256 = image_digests.data();
  def.gpu = &gpu_seal;
}

}  // namespace nanort::test
