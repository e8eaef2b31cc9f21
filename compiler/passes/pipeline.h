// The compiler's pass pipeline, in one place.
#pragma once

#include "compiler/ir/graph.h"

namespace nanoc {

struct PipelineOptions {
  // Constant folding, and folding BatchNormalization into a constant Conv.
  bool fold_constants = true;
};

// Shape inference, constant folding (with BatchNormalization into Conv),
// dead-code elimination and output
// legalization, verifying the IR before and after.
void runPipeline(Graph& graph, const PipelineOptions& options = {});

}  // namespace nanoc
