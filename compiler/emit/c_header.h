// NAME.h: a self-describing C header for a compiled model (as Glow's bundles
// do): the exported symbol, and the arena, inputs and outputs as named
// constants, so a user can call nanort without reading our docs.
#pragma once

#include <string>
#include <vector>

#include "compiler/codegen/cpu/target.h"
#include "compiler/ir/graph.h"
#include "compiler/plan/arena_plan.h"

namespace nanoc {

std::string emitCHeader(const std::string& name, const Graph& graph, const ArenaPlan& plan,
                        const std::vector<cpu::CpuTarget>& targets);

}  // namespace nanoc
