#include "compiler/emit/compile.h"

#include <llvm/IR/Verifier.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <cctype>

#include "compiler/codegen/cpu/lowering.h"
#include "compiler/emit/c_header.h"
#include "compiler/emit/model_object.h"
#include "compiler/emit/program_builder.h"
#include "compiler/ir/error.h"
#include "compiler/passes/control_flow.h"
#include "compiler/passes/gpu_placement.h"

namespace nanoc {

namespace {

// "nanoc.Elementwise" -> "nanoc_Elementwise": kernel names are C identifiers.
std::string identifier(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

// The GPU nodes' kernels in one NVPTX module, compiled for every SM target
// (a cubin each) and as PTX for the lowest SM, which later GPUs' drivers
// compile: the program's GPU module.
GpuSpec compileGpuKernels(const std::vector<const Node*>& nodes, const CompileOptions& options,
                          CompiledModel& out) {
  GpuSpec spec;
  out.gpu_module = gpu::createGpuModule(options.name + "_gpu", *out.context);
  for (size_t k = 0; k < nodes.size(); ++k) {
    const Node& node = *nodes[k];
    GpuKernelSpec kernel;
    kernel.name = options.name + "_g" + std::to_string(k) + "_" + identifier(node.op);
    gpu::emitGpuKernel(node, *out.gpu_module, kernel.name);
    const gpu::GpuLaunch launch = gpu::findGpuLowering(node.op)->launch(node);
    for (int d = 0; d < 3; ++d) {
      kernel.grid[d] = launch.grid[d];
      kernel.block[d] = launch.block[d];
    }
    kernel.shared_bytes = launch.shared_bytes;
    for (const Value* in : node.inputs)
      if (in) kernel.arg_bytes.push_back(out.plan.at(in).size);
    for (const Value* o : node.outputs) kernel.arg_bytes.push_back(out.plan.at(o).size);
    kernel.num_outputs = static_cast<uint32_t>(node.outputs.size());
    spec.kernels.push_back(std::move(kernel));
  }
  std::string errors;
  llvm::raw_string_ostream es(errors);
  if (llvm::verifyModule(*out.gpu_module, &es))
    throw CompileError("internal error: generated GPU LLVM IR is invalid:\n" + errors);
  // The lowest SM first: its PTX is the forward-compatible image.
  std::vector<gpu::SmTarget> targets = options.gpu_targets;
  for (gpu::SmTarget& t : targets) t = gpu::withModuleNeeds(t, *out.gpu_module);
  std::stable_sort(targets.begin(), targets.end(),
                   [](const gpu::SmTarget& a, const gpu::SmTarget& b) { return a.sm < b.sm; });
  spec.sm = options.gpu_targets[0].sm;
  spec.ptx_isa = gpu::withModuleNeeds(options.gpu_targets[0], *out.gpu_module).ptx_isa;
  for (size_t i = 0; i < targets.size(); ++i) {
    const gpu::SmTarget& t = targets[i];
    if (options.progress) options.progress("GPU code", i, targets.size(), "SM targets");
    std::string ptx = gpu::emitPtx(*out.gpu_module, t);
    GpuImageSpec cubin;
    cubin.sm = t.sm;
    cubin.variant = t.variant;
    cubin.ptx_isa = t.ptx_isa;
    cubin.data = gpu::runPtxas(ptx, t, options.ptxas);
    spec.images.push_back(std::move(cubin));
    if (i == 0 && t.variant.empty()) {
      GpuImageSpec text;
      text.ptx = true;
      text.sm = t.sm;
      text.ptx_isa = t.ptx_isa;
      text.data.assign(ptx.begin(), ptx.end());
      spec.images.push_back(std::move(text));
    }
    out.ptx.push_back(std::move(ptx));
  }
  if (options.progress) options.progress("GPU code", targets.size(), targets.size(), "SM targets");
  return spec;
}

}  // namespace

CompiledModel compileGraph(Graph& graph, const CompileOptions& options) {
  if (options.targets.empty()) throw CompileError("no target to compile for");
  if (!options.gpu_targets.empty())
    for (const auto& node : graph.nodes)
      if (!node->subgraphs.empty())
        throw CompileError("node '" + node->name + "' (" + node->op +
                           ") decides at run time what runs; nanoc compiles such control flow "
                           "for CPU targets only, not with a GPU target");
  flattenControlFlow(graph);
  const cpu::CpuTarget& base = options.targets[0];
  for (const cpu::CpuTarget& t : options.targets)
    if (llvm::Triple(t.triple).getArch() != llvm::Triple(base.triple).getArch() ||
        t.data_layout != base.data_layout)
      throw CompileError("targets of one artifact must share an architecture and data layout: " +
                         base.triple + " (" + base.cpu + ") and " + t.triple + " (" + t.cpu + ")");
  auto progress = [&](const char* stage, size_t done, size_t total, const char* unit) {
    if (options.progress) options.progress(stage, done, total, unit);
  };
  progress("plan", 0, 0, "");
  CompiledModel out;
  out.plan = planBuffers(graph, GreedyBySizePlanner(), cpu::inPlaceInput);
  out.context = std::make_unique<llvm::LLVMContext>();
  out.module = std::make_unique<llvm::Module>(options.name, *out.context);
  out.machine = cpu::createTargetMachine(base);
  out.module->setTargetTriple(out.machine->getTargetTriple());
  out.module->setDataLayout(out.machine->createDataLayout());

  ProgramSpec spec;
  spec.model_name = options.name;
  spec.targets = options.targets;
  // Which nodes run as kernels, in order; copies and views need none.
  std::vector<const Node*> kernel_nodes, gpu_nodes;
  for (const auto& node : graph.nodes) {
    if (out.plan.isAlias(node.get())) continue;
    ThunkSpec thunk;
    thunk.node = node.get();
    if (isControlMarker(*node)) {
      thunk.kind = node->op == "nanoc.If"      ? ThunkSpec::Kind::IfBegin
                   : node->op == "nanoc.Else"  ? ThunkSpec::Kind::Else
                   : node->op == "nanoc.EndIf" ? ThunkSpec::Kind::EndIf
                   : node->op == "nanoc.Loop"  ? ThunkSpec::Kind::LoopBegin
                                               : ThunkSpec::Kind::EndLoop;
      spec.thunks.push_back(thunk);
      continue;
    }
    const bool copy_op = isViewOp(*node);
    if (isDeviceCopy(*node) || (copy_op && isGpuNode(*node))) {
      if (options.gpu_targets.empty())
        throw CompileError("node '" + node->name + "' (" + node->op +
                           ") moves data to or on a GPU, but no GPU target was given");
      thunk.kind = ThunkSpec::Kind::GpuCopy;
    } else if (isGpuNode(*node)) {
      if (options.gpu_targets.empty())
        throw CompileError("node '" + node->name + "' (" + node->op +
                           ") is placed on a GPU, but no GPU target was given");
      if (!gpu::hasGpuLowering(*node))
        throw CompileError("node '" + node->name + "' (" + node->op + "): no GPU lowering");
      thunk.kind = ThunkSpec::Kind::GpuLaunch;
      thunk.kernel = static_cast<uint32_t>(gpu_nodes.size());
      gpu_nodes.push_back(node.get());
    } else if (copy_op) {
      thunk.kind = ThunkSpec::Kind::Copy;
    } else {
      const cpu::Lowering* lowering = cpu::findLowering(node->op);
      if (!lowering)
        throw CompileError("node '" + node->name + "' (" + node->op +
                           "): no CPU lowering (to add one, see docs/ADDING_AN_OPERATOR.md)");
      thunk.kernel = static_cast<uint32_t>(kernel_nodes.size());
      thunk.task_count = lowering->task_count(*node);
      kernel_nodes.push_back(node.get());
    }
    spec.thunks.push_back(thunk);
  }
  // A kernel whose lowering prefetches the next kernel's weights gets them:
  // the largest constant (64 KiB or more) of the next kernel that has one,
  // past copies and at most two kernels without (a Slice, a pool), within
  // the same sequence (no control flow marker, no GPU thunk between).
  constexpr uint64_t kMinNextWeightsBytes = 64 * 1024;
  std::vector<const Value*> next_weights(kernel_nodes.size(), nullptr);
  for (size_t i = 0; i < spec.thunks.size(); ++i) {
    ThunkSpec& thunk = spec.thunks[i];
    if (thunk.kind != ThunkSpec::Kind::Kernel) continue;
    const cpu::Lowering* lowering = cpu::findLowering(thunk.node->op);
    if (!lowering->prefetches_next_weights || !lowering->prefetches_next_weights(*thunk.node))
      continue;
    int skipped = 0;
    for (size_t j = i + 1; j < spec.thunks.size() && !thunk.next_weights && skipped <= 2; ++j) {
      const ThunkSpec& next = spec.thunks[j];
      if (next.kind == ThunkSpec::Kind::Copy) continue;
      if (next.kind != ThunkSpec::Kind::Kernel) break;
      const Value* largest = nullptr;
      for (const Value* in : next.node->inputs)
        if (in && in->isConstant() && in->type.bytes() >= kMinNextWeightsBytes &&
            (!largest || in->type.bytes() > largest->type.bytes()))
          largest = in;
      if (largest)
        thunk.next_weights = largest;
      else
        ++skipped;
    }
    next_weights[thunk.kernel] = thunk.next_weights;
  }
  // Kernels variant-major, each variant's functions compiled for its own CPU
  // through function attributes (one module, one object).
  std::vector<llvm::Function*> kernels;
  const size_t kernel_total = options.targets.size() * kernel_nodes.size();
  progress("code generation", 0, kernel_total, "kernels");
  for (size_t v = 0; v < options.targets.size(); ++v) {
    const cpu::CpuTarget& target = options.targets[v];
    std::string prefix =
        options.name + (options.targets.size() > 1 ? "_v" + std::to_string(v) : "");
    std::string features = cpu::exactFeatureString(target);
    const char* denormals = nullptr;  // the kFlushDenormalsAttribute value
    if (options.flush_denormals) {
      denormals = cpu::denormalsFamily(target.triple);
      if (!denormals)
        throw CompileError(
            "--denormals flush: nanoc sets flush-to-zero on x86-64 and AArch64 "
            "only, not on " +
            target.triple + " (RISC-V's F extension has no such mode); compile without it");
    }
    for (size_t k = 0; k < kernel_nodes.size(); ++k) {
      std::string symbol = prefix + "_k" + std::to_string(k) + "_" + kernel_nodes[k]->op;
      std::vector<std::pair<std::string, std::string>> attributes = {{"target-cpu", target.cpu},
                                                                     {"target-features", features}};
      if (target.vector_bits != 0)
        attributes.emplace_back("prefer-vector-width", std::to_string(target.vector_bits));
      if (target.cache) {
        attributes.emplace_back(cpu::kL1DataCacheAttribute, std::to_string(target.cache->l1d));
        attributes.emplace_back(cpu::kL2CacheAttribute, std::to_string(target.cache->l2));
      }
      if (next_weights[k])
        attributes.emplace_back(cpu::kNextWeightsAttribute,
                                std::to_string(out.plan.at(next_weights[k]).size));
      if (denormals) attributes.emplace_back(cpu::kFlushDenormalsAttribute, denormals);
      llvm::Function* fn = cpu::emitKernel(*kernel_nodes[k], *out.module, symbol, attributes);
      kernels.push_back(fn);
      if (v == 0) spec.kernel_symbols.push_back(symbol);
      progress("code generation", kernels.size(), kernel_total, "kernels");
    }
  }
  // Each kernel's signature, from the same slices the program's thunk names.
  std::vector<KernelSignature> signatures;
  for (const ThunkSpec& thunk : spec.thunks) {
    if (thunk.kind != ThunkSpec::Kind::Kernel) continue;
    KernelSignature s;
    for (const Value* in : thunk.node->inputs)
      if (in) s.arg_bytes.push_back(out.plan.at(in).size);
    if (thunk.next_weights) s.arg_bytes.push_back(out.plan.at(thunk.next_weights).size);
    for (const Value* o : thunk.node->outputs) s.arg_bytes.push_back(out.plan.at(o).size);
    s.num_outputs = static_cast<uint32_t>(thunk.node->outputs.size());
    s.task_count = thunk.task_count;
    const cpu::Lowering* lowering = cpu::findLowering(thunk.node->op);
    if (lowering->scratch_bytes) s.scratch_bytes = lowering->scratch_bytes(*thunk.node);
    // nanort refuses a kernel that declares more (its verifier's bound).
    constexpr uint64_t kMaxScratchBytes = uint64_t{1} << 30;
    if (s.scratch_bytes > kMaxScratchBytes)
      throw CompileError("node '" + thunk.node->name + "' (" + thunk.node->op + ") needs " +
                         std::to_string(s.scratch_bytes) +
                         " bytes of scratch per thread, over nanort's 1 GiB");
    out.plan.scratch_size = std::max(out.plan.scratch_size, (s.scratch_bytes + 63) / 64 * 64);
    signatures.push_back(std::move(s));
  }
  if (!options.gpu_targets.empty()) spec.gpu = compileGpuKernels(gpu_nodes, options, out);
  out.program = buildProgram(graph, out.plan, spec);
  addModelDefinition(*out.module, options.name, out.program, out.plan.constants, kernels,
                     signatures);

  std::string errors;
  llvm::raw_string_ostream es(errors);
  if (llvm::verifyModule(*out.module, &es))
    throw CompileError("internal error: generated LLVM IR is invalid:\n" + errors);
  cpu::FunctionProgress optimized;
  if (options.progress)
    optimized = [&](size_t done, size_t total) { progress("optimization", done, total, "%"); };
  cpu::optimizeModule(*out.module, *out.machine, optimized);
  out.header = emitCHeader(options.name, graph, out.plan, options.targets);
  return out;
}

void linkSharedObject(const std::string& object_path, const std::string& so_path,
                      const std::string& name) {
  std::string soname = name + ".so";
  llvm::SmallVector<llvm::StringRef, 16> args = {
      NANOC_LLD_PATH, "-shared", "--build-id=none", "-z",   "noexecstack", "-z",    "relro",
      "-z",           "now",     "-soname",         soname, "-o",          so_path, object_path};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(NANOC_LLD_PATH, args, std::nullopt, {}, 0, 0, &message);
  if (rc != 0)
    throw CompileError("linking " + so_path + " with " + NANOC_LLD_PATH + " failed" +
                       (message.empty() ? "" : ": " + message));
}

}  // namespace nanoc
