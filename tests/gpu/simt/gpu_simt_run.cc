// gpu-simt-run: runs a model as nanoc --target sm_XY compiles it, with its
// GPU kernels' own LLVM IR executed by the SIMT emulator (simt_emulator.h)
// and the nodes that stay on the host by their reference implementations
// (the op table's, which constant folding uses). tests/gpu/run_simt.py
// compares the outputs with ONNX Runtime.
//
//   gpu-simt-run MODEL.onnx --input NAME=FILE.npy ... --output-dir DIR [--gpu-offload=all]
//                [--gpu-precision=exact|tf32|bf16|f16] [--gpu-layout=nchw]
//
// The pipeline is nanoc's for a GPU target (PipelineOptions::gpu), then
// placeOnGpu; memory follows nanoc's arena plan (planBuffers): every value
// at its slice of the device arena, the host arena or the constants, views
// and in-place Concats sharing bytes as they do in nanort.
#include <llvm/IR/LLVMContext.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/gemm_microkernel.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/target.h"
#include "compiler/codegen/gpu/gpu_lowering.h"
#include "compiler/codegen/gpu/testing/simt_emulator.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/ir/error.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ir/text.h"
#include "compiler/passes/gpu_placement.h"
#include "compiler/passes/pipeline.h"
#include "compiler/plan/arena_plan.h"
#include "npy.h"

namespace {

std::string fileSafe(const std::string& name) {
  std::string out = name;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') c = '_';
  return out;
}

int run(int argc, char** argv) {
  std::string model, out_dir = ".";
  std::map<std::string, std::string> inputs;
  nanoc::GpuOffload offload = nanoc::GpuOffload::Auto;
  nanoc::GpuPrecision precision;
  bool gpu_nhwc = true, split_k = true;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--input" && i + 1 < argc) {
      std::string v = argv[++i];
      size_t eq = v.find('=');
      if (eq == std::string::npos) throw nanoc::CompileError("--input needs NAME=FILE.npy");
      inputs[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (arg == "--gpu-offload=all") {
      offload = nanoc::GpuOffload::All;
    } else if (arg == "--gpu-layout=nchw") {
      gpu_nhwc = false;
    } else if (arg == "--gpu-split-k=off") {
      split_k = false;
    } else if (arg.rfind("--gpu-precision=", 0) == 0 ||
               (arg == "--gpu-precision" && i + 1 < argc)) {
      // As nanoc's, for sm_80 and newer (min_sm 80).
      precision.mode = arg == "--gpu-precision" ? argv[++i] : arg.substr(arg.find('=') + 1);
      if (!nanoc::isGpuPrecision(precision.mode))
        throw nanoc::CompileError("--gpu-precision must be exact, tf32, bf16 or f16");
    } else if (arg == "--output-dir" && i + 1 < argc) {
      out_dir = argv[++i];
    } else if (model.empty() && arg[0] != '-') {
      model = arg;
    } else {
      throw nanoc::CompileError(
          "usage: gpu-simt-run MODEL --input NAME=FILE.npy ... "
          "--output-dir DIR [--gpu-offload=all] [--gpu-precision=exact|tf32|bf16|f16] "
          "[--gpu-layout=nchw] [--gpu-split-k=off]");
    }
  }
  std::unique_ptr<nanoc::Graph> graph =
      model.size() > 4 && model.substr(model.size() - 4) == ".nir"
          ? nullptr
          : nanoc::importOnnxFile(model, nanoc::OnnxImportOptions{});
  if (!graph) throw nanoc::CompileError("gpu-simt-run takes ONNX models");
  nanoc::PipelineOptions pipeline;
  pipeline.gpu = true;
  nanoc::runPipeline(*graph, pipeline);
  // nanoc's GPU passes, split-K included (nanoc --gpu-split-k).
  nanoc::GpuPassOptions passes{offload, precision, gpu_nhwc};
  if (split_k) passes.split_k = nanoc::gpu::chooseSplitK;
  const size_t placed = nanoc::runGpuPasses(*graph, nanoc::gpu::hasGpuLowering, passes);

  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = nanoc::gpu::createGpuModule("simt", context);
  std::map<const nanoc::Node*, std::string> kernel_of;
  size_t k = 0;
  for (const auto& node : graph->nodes) {
    if (!nanoc::isGpuNode(*node) || nanoc::isByteCopy(*node)) continue;
    std::string name = "g" + std::to_string(k++);  // any unique symbol
    nanoc::gpu::emitGpuKernel(*node, *module, name);
    kernel_of[node.get()] = name;
  }
  nanoc::simt::Emulator emulator(*module);

  // Memory as nanort lays it out (the arena plan nanoc emits): one device
  // arena at the driver's 256-byte alignment, the host arena, the constants
  // blob, and the caller's inputs and outputs, every value at its slice.
  // Views (Reshape) and Concats whose inputs were written in place run
  // nothing, as in nanort; a value that shares bytes it must not shows in
  // the outputs. (Host and device memory are one address space here.)
  const nanoc::ArenaPlan plan =
      nanoc::planBuffers(*graph, nanoc::GreedyBySizePlanner(), nanoc::cpu::inPlaceInput);
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  auto alloc = [](uint64_t bytes, size_t alignment) {
    const uint64_t rounded =
        std::max<uint64_t>(alignment, (bytes + alignment - 1) / alignment * alignment);
    void* p = std::aligned_alloc(alignment, rounded);
    if (!p) throw nanoc::CompileError("out of memory");
    std::memset(p, 0xff, rounded);  // NaNs: a read of what was never written shows
    return std::unique_ptr<uint8_t, Free>(static_cast<uint8_t*>(p));
  };
  auto device_arena = alloc(plan.device_arena_size, nanoc::ArenaPlan::kDeviceAlignment);
  auto host_arena = alloc(plan.arena_size, nanoc::ArenaPlan::kDeviceAlignment);
  auto constants = alloc(plan.constants.size(), nanoc::ArenaPlan::kDeviceAlignment);
  if (!plan.constants.empty())
    std::memcpy(constants.get(), plan.constants.data(), plan.constants.size());
  std::vector<std::unique_ptr<uint8_t, Free>> input_bytes, output_bytes;
  for (const nanoc::Value* in : graph->inputs) {
    auto it = inputs.find(in->name);
    if (it == inputs.end()) throw nanoc::CompileError("no --input for '" + in->name + "'");
    nanort::tools::NpyArray array;
    std::string error;
    if (!nanort::tools::ReadNpy(it->second, &array, &error))
      throw nanoc::CompileError(it->second + ": " + error);
    if (array.data.size() != in->type.bytes())
      throw nanoc::CompileError("input '" + in->name + "': " + std::to_string(array.data.size()) +
                                " bytes given, " + in->type.str() + " needed");
    input_bytes.push_back(alloc(array.data.size(), 64));
    if (!array.data.empty())
      std::memcpy(input_bytes.back().get(), array.data.data(), array.data.size());
  }
  for (const nanoc::Value* o : graph->outputs) output_bytes.push_back(alloc(o->type.bytes(), 64));
  auto at = [&](const nanoc::Value* v) -> uint8_t* {
    const nanoc::BufferSlice& slice = plan.at(v);
    switch (slice.kind) {
      case nanoc::BufferKind::Constant:
      case nanoc::BufferKind::DeviceConstant:
        return constants.get() + slice.offset;
      case nanoc::BufferKind::Input:
        return input_bytes.at(slice.index).get() + slice.offset;
      case nanoc::BufferKind::Output:
        return output_bytes.at(slice.index).get() + slice.offset;
      case nanoc::BufferKind::Arena:
        return host_arena.get() + slice.offset;
      case nanoc::BufferKind::Device:
        return device_arena.get() + slice.offset;
    }
    throw nanoc::CompileError("value '" + v->name + "': unknown buffer kind");
  };
  size_t launches = 0, host_nodes = 0;
  for (const auto& node : graph->nodes) {
    if (plan.isAlias(node.get())) continue;  // a view, or a Concat written in place
    auto kernel = kernel_of.find(node.get());
    if (kernel != kernel_of.end()) {
      std::vector<void*> args;
      for (const nanoc::Value* in : node->inputs)
        if (in) args.push_back(at(in));
      for (const nanoc::Value* o : node->outputs) args.push_back(at(o));
      emulator.launch(kernel->second, nanoc::gpu::findGpuLowering(node->op)->launch(*node), args);
      ++launches;
      continue;
    }
    if (nanoc::isByteCopy(*node)) {
      std::memmove(at(node->outputs[0]), at(node->inputs[0]), node->inputs[0]->type.bytes());
      continue;
    }
    const nanoc::OpSchema* schema = nanoc::findOp(node->op);
    if (!schema || !schema->reference)
      throw nanoc::CompileError("node '" + node->name + "' (" + node->op +
                                ") stays on the host and its op has no reference");
    // The reference writes fresh buffers, copied to the outputs' slices after:
    // a host kernel may write an output over an input (the plan's in-place
    // slots), which the reference is not written for.
    std::vector<const void*> in;
    for (const nanoc::Value* v : node->inputs) in.push_back(v ? at(v) : nullptr);
    std::vector<std::vector<uint8_t>> fresh;
    fresh.reserve(node->outputs.size());
    std::vector<void*> out;
    for (const nanoc::Value* o : node->outputs) {
      fresh.emplace_back(o->type.bytes(), 0xff);
      out.push_back(fresh.back().data());
    }
    schema->reference(*node, in, out);
    for (size_t i = 0; i < node->outputs.size(); ++i)
      if (!fresh[i].empty()) std::memcpy(at(node->outputs[i]), fresh[i].data(), fresh[i].size());
    ++host_nodes;
  }
  std::filesystem::create_directories(out_dir);
  for (const nanoc::Value* o : graph->outputs) {
    nanort::tools::NpyArray array;
    array.dtype = static_cast<nanort_dtype>(o->type.dtype);
    array.shape = o->type.dims;
    const uint8_t* bytes = at(o);
    array.data.assign(bytes, bytes + o->type.bytes());
    std::string error;
    std::string path = out_dir + "/" + fileSafe(o->name) + ".npy";
    if (!nanort::tools::WriteNpy(path, array, &error))
      throw nanoc::CompileError(path + ": " + error);
  }
  std::printf("gpu-simt-run: %zu nodes on the GPU, %zu kernel launches emulated, %zu host nodes\n",
              placed, launches, host_nodes);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu-simt-run: error: %s\n", e.what());
    return 1;
  }
}
