#include "compiler/emit/program_builder.h"

#include <map>
#include <tuple>

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
  auto bufferOf = [&](const Value* v) {
    const BufferSlice& s = plan.at(v);
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

  std::vector<flatbuffers::Offset<fb::Thunk>> thunks;
  for (const ThunkSpec& t : spec.thunks) {
    const Node& node = *t.node;
    flatbuffers::Offset<void> kind;
    fb::ThunkKind kind_type;
    if (t.kind == ThunkSpec::Kind::Copy) {
      kind_type = fb::ThunkKind::CopyThunk;
      kind = fb::CreateCopyThunk(b, bufferOf(node.inputs[0]), bufferOf(node.outputs[0]),
                                 node.outputs[0]->type.bytes())
                 .Union();
    } else {
      std::vector<uint32_t> args;
      for (const Value* in : node.inputs)
        if (in) args.push_back(bufferOf(in));
      for (const Value* out : node.outputs) args.push_back(bufferOf(out));
      kind_type = fb::ThunkKind::KernelThunk;
      kind = fb::CreateKernelThunkDirect(b, t.kernel, &args, t.task_count,
                                         static_cast<uint32_t>(node.outputs.size()))
                 .Union();
    }
    thunks.push_back(
        fb::CreateThunk(b, kind_type, kind, b.CreateString(node.name), b.CreateString(node.op)));
  }
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
  auto program = fb::CreateProgramDirect(
      b, NANORT_FORMAT_MAJOR, NANORT_FORMAT_MINOR, NANORT_KERNEL_ABI_VERSION,
      spec.model_name.c_str(), variants.at(0), &buffers, &kernels, &entries, plan.arena_size,
      ArenaPlan::kAlignment, plan.constants_size, variants.size() > 1 ? &variants : nullptr);
  fb::FinishProgramBuffer(b, program);
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

}  // namespace nanoc
