// From an optimized graph to the artifacts nanoc writes: the program, the
// object code, the C header, and NAME.so linked from the object.
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/target.h"
#include "compiler/codegen/gpu/gpu_lowering.h"
#include "compiler/ir/graph.h"
#include "compiler/plan/arena_plan.h"

namespace nanoc {

struct CompileOptions {
  std::string name;  // the symbol prefix: a C identifier
  // One CPU target, or several of one architecture (nanoc --target a,b): the
  // kernels are compiled for each and nanort picks at load.
  std::vector<cpu::CpuTarget> targets;
  // Told where compileGraph is, for nanoc's progress line (driver/progress.h):
  // ("plan", 0, 0, ""), ("code generation", k, N, "kernels") before the
  // first kernel and after each of the N (every kernel of every target
  // variant), then ("optimization", s, S, "%"), S steps through LLVM's
  // optimizer (cpu::optimizeModule). Only observes: the artifact is the same
  // with or without it.
  std::function<void(const char* stage, size_t done, size_t total, const char* unit)> progress;
  // GPU offload (nanoc --target sm_XY,...): the nodes placeOnGpu marked are
  // compiled for each of these SMs (a cubin each, with ptxas), plus PTX for
  // the lowest, which newer GPUs' drivers compile; `targets` is then the host
  // CPU. Empty: a CPU program.
  std::vector<gpu::SmTarget> gpu_targets;
  // ptxas to run; empty: gpu::ptxasPath().
  std::string ptxas;
  // nanoc --denormals flush: every CPU kernel runs with flush-to-zero and
  // denormals-are-zero set (cpu::kFlushDenormalsAttribute); compileGraph
  // refuses a target that has no such mode.
  bool flush_denormals = false;
};

struct CompiledModel {
  ArenaPlan plan;
  std::vector<uint8_t> program;  // the .nrt bytes
  std::string header;            // NAME.h
  // The optimized module (kernels + model definition) and its target machine,
  // for emitObject / emitAssembly / printing.
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;
  std::unique_ptr<llvm::TargetMachine> machine;
  // GPU programs: the kernels' module (before optimization) and the PTX of
  // each SM target, in gpu_targets' order (nanoc --emit=ptx prints them).
  std::unique_ptr<llvm::Module> gpu_module;
  std::vector<std::string> ptx;
};

// `graph` has been through runPipeline. Its If and Loop nodes are spliced
// in first (flattenControlFlow: the graph is left so, for printPlan). Throws
// CompileError naming the node whose lowering fails.
CompiledModel compileGraph(Graph& graph, const CompileOptions& options);

// Links `object_path` into the shared object `so_path` with ld.lld (the one
// linker that handles every target triple nanoc emits).
void linkSharedObject(const std::string& object_path, const std::string& so_path,
                      const std::string& name);

}  // namespace nanoc
