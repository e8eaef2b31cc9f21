// The thunk program: schema/program.fbs serialized with flatbuffers. It is
// the whole contract with nanort: buffers, thunks, the entry signature, the
// arena size and the target record.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/target.h"
#include "compiler/ir/graph.h"
#include "compiler/plan/arena_plan.h"

namespace nanoc {

// How one node runs: as a compiled kernel, a byte copy, or not at all (a view).
struct ThunkSpec {
  enum class Kind { Kernel, Copy } kind = Kind::Kernel;
  const Node* node = nullptr;
  uint32_t kernel = 0;      // Kernel: index into the kernel table
  uint64_t task_count = 1;  // Kernel: size of its parallel iteration space
};

struct ProgramSpec {
  std::string model_name;
  std::vector<cpu::CpuTarget> targets;      // the variants; targets[0] is Program.target
  std::vector<std::string> kernel_symbols;  // variant 0's, by kernel index
  std::vector<ThunkSpec> thunks;            // in execution order
};

// Serializes the program. Deterministic: the same inputs give the same bytes.
std::vector<uint8_t> buildProgram(const Graph& graph, const ArenaPlan& plan,
                                  const ProgramSpec& spec);

}  // namespace nanoc
