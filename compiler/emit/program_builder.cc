#include "compiler/emit/program_builder.h"

#include <functional>
#include <map>
#include <tuple>

#include "compiler/ir/error.h"
#include "nanort/nanort.h"
#include "program_generated.h"

namespace nanoc {
namespace fb = nanort::fb;

std::vector<uint8_t> buildProgram(const Graph& graph, const ArenaPlan& plan,
                                  const ProgramSpec& spec) {
  flatbuffers::FlatBufferBuilder b(1 << 12);

  // One Buffer per distinct slice; a view shares its owner's.
  using Key = std::tuple<uint8_t, uint32_t, uint64_t, uint64_t>;
  std::map<Key, uint32_t> buffer_index;
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
  // A GPU thunk reads a constant as uploaded to the device (DeviceConstant).
  auto bufferOf = [&](const Value* v, bool on_gpu = false) {
    BufferSlice s = plan.at(v);
    if (on_gpu && s.kind == BufferKind::Constant) s.kind = BufferKind::DeviceConstant;
    Key key{static_cast<uint8_t>(s.kind), s.index, s.offset, s.size};
    auto [it, inserted] = buffer_index.emplace(key, static_cast<uint32_t>(buffers.size()));
    if (inserted)
      buffers.push_back(fb::CreateBufferDirect(b, static_cast<fb::BufferKind>(s.kind), s.index,
                                               s.offset, s.size, s.alignment, v->name.c_str()));
    return it->second;
  };

  auto tensors = [&](const std::vector<Value*>& values) {
    std::vector<flatbuffers::Offset<fb::Tensor>> out;
    for (const Value* v : values)
      out.push_back(fb::CreateTensorDirect(
          b, v->name.c_str(), static_cast<fb::DType>(v->type.dtype), &v->type.dims, bufferOf(v)));
    return out;
  };
  auto inputs = tensors(graph.inputs);
  auto outputs = tensors(graph.outputs);

  // One thunk of the sequence spec.thunks[at ...]; `at` moves past it (past
  // a whole If or Loop for their markers).
  constexpr uint32_t kNone = 0xFFFFFFFFu;
  std::function<std::vector<flatbuffers::Offset<fb::Thunk>>(size_t&, ThunkSpec::Kind)> sequence;
  auto one = [&](size_t& at) -> flatbuffers::Offset<fb::Thunk> {
    const ThunkSpec& t = spec.thunks[at++];
    const Node& node = *t.node;
    flatbuffers::Offset<void> kind;
    fb::ThunkKind kind_type;
    std::string op = node.op;
    if (t.kind == ThunkSpec::Kind::IfBegin) {
      auto then_thunks = sequence(at, ThunkSpec::Kind::Else);
      auto else_thunks = sequence(at, ThunkSpec::Kind::EndIf);
      const Node& end = *spec.thunks[at - 1].node;  // nanoc.EndIf: reads the If's outputs
      std::vector<uint32_t> outs;
      for (const Value* v : end.inputs) outs.push_back(bufferOf(v));
      kind_type = fb::ThunkKind::IfThunk;
      kind = fb::CreateIfThunk(b, bufferOf(node.inputs[0]), b.CreateVector(then_thunks),
                               b.CreateVector(else_thunks), b.CreateVector(outs))
                 .Union();
      op = "If";
    } else if (t.kind == ThunkSpec::Kind::LoopBegin) {
      auto body_thunks = sequence(at, ThunkSpec::Kind::EndLoop);
      const Value* m = node.inputs.size() > 0 ? node.inputs[0] : nullptr;
      const Value* cond = node.inputs.size() > 1 ? node.inputs[1] : nullptr;
      kind_type = fb::ThunkKind::LoopThunk;
      kind =
          fb::CreateLoopThunk(b, m ? bufferOf(m) : kNone, cond ? bufferOf(cond) : kNone,
                              bufferOf(node.outputs[0]), static_cast<uint64_t>(node.i("max_trips")),
                              b.CreateVector(body_thunks))
              .Union();
      op = "Loop";
    } else if (t.kind == ThunkSpec::Kind::Copy) {
      kind_type = fb::ThunkKind::CopyThunk;
      kind = fb::CreateCopyThunk(b, bufferOf(node.inputs[0]), bufferOf(node.outputs[0]),
                                 node.outputs[0]->type.bytes())
                 .Union();
    } else if (t.kind == ThunkSpec::Kind::GpuCopy) {
      // The source as its reader sees it: a constant copied on the GPU is
      // the uploaded one.
      const bool device_source = plan.at(node.outputs[0]).kind == BufferKind::Device;
      kind_type = fb::ThunkKind::GpuCopyThunk;
      kind = fb::CreateGpuCopyThunk(b, bufferOf(node.inputs[0], device_source),
                                    bufferOf(node.outputs[0]), node.outputs[0]->type.bytes())
                 .Union();
    } else if (t.kind == ThunkSpec::Kind::GpuLaunch) {
      std::vector<uint32_t> args;
      for (const Value* in : node.inputs)
        if (in) args.push_back(bufferOf(in, true));
      for (const Value* out : node.outputs) args.push_back(bufferOf(out, true));
      kind_type = fb::ThunkKind::GpuLaunchThunk;
      kind = fb::CreateGpuLaunchThunkDirect(b, t.kernel, &args,
                                            static_cast<uint32_t>(node.outputs.size()))
                 .Union();
    } else if (t.kind == ThunkSpec::Kind::Kernel) {
      std::vector<uint32_t> args;
      for (const Value* in : node.inputs)
        if (in) args.push_back(bufferOf(in));
      if (t.next_weights) args.push_back(bufferOf(t.next_weights));
      for (const Value* out : node.outputs) args.push_back(bufferOf(out));
      kind_type = fb::ThunkKind::KernelThunk;
      kind = fb::CreateKernelThunkDirect(b, t.kernel, &args, t.task_count,
                                         static_cast<uint32_t>(node.outputs.size()))
                 .Union();
    } else {
      throw CompileError("internal error: control flow marker '" + node.name + "' (" + node.op +
                         ") out of place");
    }
    return fb::CreateThunk(b, kind_type, kind, b.CreateString(node.name), b.CreateString(op));
  };
  // The thunks up to the marker `until` (consumed), or to the end for Kernel.
  sequence = [&](size_t& at, ThunkSpec::Kind until) {
    std::vector<flatbuffers::Offset<fb::Thunk>> out;
    while (true) {
      if (at == spec.thunks.size()) {
        if (until == ThunkSpec::Kind::Kernel) return out;
        throw CompileError("internal error: control flow markers unbalanced");
      }
      if (spec.thunks[at].kind == until && until != ThunkSpec::Kind::Kernel) {
        ++at;
        return out;
      }
      out.push_back(one(at));
    }
  };
  size_t at = 0;
  std::vector<flatbuffers::Offset<fb::Thunk>> thunks = sequence(at, ThunkSpec::Kind::Kernel);
  auto entry = fb::CreateEntryDirect(b, "main", &inputs, &outputs, &thunks);
  std::vector<flatbuffers::Offset<fb::Entry>> entries{entry};

  std::vector<flatbuffers::Offset<fb::Kernel>> kernels;
  for (const std::string& symbol : spec.kernel_symbols)
    kernels.push_back(fb::CreateKernelDirect(b, symbol.c_str(), fb::DeviceKind::Cpu));

  auto targetRecord = [&](const cpu::CpuTarget& t) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> features;
    for (const std::string& f : t.features) features.push_back(b.CreateString(f));
    return fb::CreateTarget(b, fb::DeviceKind::Cpu, b.CreateString(t.triple), b.CreateString(t.cpu),
                            b.CreateVector(features), b.CreateString(t.data_layout));
  };
  std::vector<flatbuffers::Offset<fb::Target>> variants;
  for (const cpu::CpuTarget& t : spec.targets) variants.push_back(targetRecord(t));
  flatbuffers::Offset<fb::GpuModule> gpu;
  flatbuffers::Offset<fb::Target> gpu_target;
  if (spec.gpu) {
    std::vector<flatbuffers::Offset<fb::GpuImage>> images;
    for (const GpuImageSpec& image : spec.gpu->images)
      images.push_back(fb::CreateGpuImageDirect(
          b, image.ptx ? fb::GpuImageFormat::Ptx : fb::GpuImageFormat::Cubin, image.sm,
          image.variant.c_str(), image.ptx_isa, &image.data));
    std::vector<flatbuffers::Offset<fb::GpuKernel>> gpu_kernels;
    for (const GpuKernelSpec& k : spec.gpu->kernels) {
      std::vector<uint32_t> grid(k.grid, k.grid + 3), block(k.block, k.block + 3);
      gpu_kernels.push_back(fb::CreateGpuKernelDirect(
          b, k.name.c_str(), &k.arg_bytes, k.num_outputs, &grid, &block, k.shared_bytes));
    }
    gpu = fb::CreateGpuModuleDirect(b, &images, &gpu_kernels, plan.device_arena_size,
                                    ArenaPlan::kDeviceAlignment);
    gpu_target = fb::CreateTarget(b, fb::DeviceKind::CudaGpu, b.CreateString("nvptx64-nvidia-cuda"),
                                  b.CreateString("sm_" + std::to_string(spec.gpu->sm)), 0, 0,
                                  spec.gpu->sm, spec.gpu->ptx_isa);
  }
  auto program = fb::CreateProgramDirect(
      b, NANORT_FORMAT_MAJOR, NANORT_FORMAT_MINOR, NANORT_KERNEL_ABI_VERSION,
      spec.model_name.c_str(), variants.at(0), &buffers, &kernels, &entries, plan.arena_size,
      ArenaPlan::kAlignment, plan.constants_size, variants.size() > 1 ? &variants : nullptr, gpu,
      gpu_target);
  fb::FinishProgramBuffer(b, program);
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

}  // namespace nanoc
