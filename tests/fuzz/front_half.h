// What the nanoc fuzz targets run on a graph they read: nanoc's front half,
// the pass pipeline and the arena plan, with the options of an AVX-512 or an
// AVX2 host (picked by the input, so both layouts get fuzzed).
#pragma once

#include <stddef.h>

#include "compiler/ir/graph.h"
#include "compiler/passes/control_flow.h"
#include "compiler/passes/pipeline.h"
#include "compiler/plan/arena_plan.h"

namespace nanort::fuzz {

inline void RunFrontHalf(nanoc::Graph& graph, size_t input_size) {
  nanoc::PipelineOptions options;
  options.conv_gemm_panel = 24;
  options.nchwc_block = input_size % 2 ? 16 : 8;
  nanoc::runPipeline(graph, options);
  nanoc::flattenControlFlow(graph);
  nanoc::planBuffers(graph);
}

}  // namespace nanort::fuzz
