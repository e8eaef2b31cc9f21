// The thunk program: schema/program.fbs serialized with flatbuffers. It is
// the whole contract with nanort: buffers, thunks, the entry signature, the
// arena size and the target record.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/target.h"
#include "compiler/ir/graph.h"
#include "compiler/plan/arena_plan.h"

namespace nanoc {

// How one node runs: as a compiled kernel, a byte copy, a GPU kernel launch,
// a copy to, from or on the GPU, or not at all (a view).
struct ThunkSpec {
  // IfBegin ... Else ... EndIf and LoopBegin ... EndLoop: the markers of
  // control flow spliced in (passes/control_flow.h), which the program
  // nests: IfThunk and LoopThunk.
  enum class Kind {
    Kernel,
    Copy,
    GpuLaunch,
    GpuCopy,
    IfBegin,
    Else,
    EndIf,
    LoopBegin,
    EndLoop
  } kind = Kind::Kernel;
  const Node* node = nullptr;
  uint32_t kernel = 0;      // Kernel: index into the kernel table; GpuLaunch: the GPU module's
  uint64_t task_count = 1;  // Kernel: size of its parallel iteration space
  // Kernel: the next kernel's weights, one more argument after the inputs
  // (cpu::KernelBuilder::next_weights); null: none.
  const Value* next_weights = nullptr;
};

// The GPU part of a program (format 1.3, nanoc --target sm_XY).
struct GpuImageSpec {
  bool ptx = false;  // else a cubin
  uint32_t sm = 0;
  std::string variant;  // "", "a" or "f"
  uint32_t ptx_isa = 0;
  std::vector<uint8_t> data;
};
struct GpuKernelSpec {
  std::string name;
  std::vector<uint64_t> arg_bytes;
  uint32_t num_outputs = 0;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_bytes = 0;
};
struct GpuSpec {
  uint32_t sm = 0, ptx_isa = 0;  // the first SM target, for Program.gpu_target
  std::vector<GpuImageSpec> images;
  std::vector<GpuKernelSpec> kernels;
};

struct ProgramSpec {
  std::string model_name;
  std::vector<cpu::CpuTarget> targets;      // the variants; targets[0] is Program.target
  std::vector<std::string> kernel_symbols;  // variant 0's, by kernel index
  std::vector<ThunkSpec> thunks;            // in execution order
  std::optional<GpuSpec> gpu;               // GPU programs only
};

// Serializes the program. Deterministic: the same inputs give the same bytes.
std::vector<uint8_t> buildProgram(const Graph& graph, const ArenaPlan& plan,
                                  const ProgramSpec& spec);

}  // namespace nanoc
