#include "compiler/passes/pipeline.h"

#include "compiler/ir/error.h"
#include "compiler/ops/split_k.h"
#include "compiler/passes/constant_folding.h"
#include "compiler/passes/conv_to_gemm.h"
#include "compiler/passes/dead_code_elimination.h"
#include "compiler/passes/fold_batch_norm.h"
#include "compiler/passes/fuse_channel_scale.h"
#include "compiler/passes/fuse_elementwise.h"
#include "compiler/passes/fuse_epilogue.h"
#include "compiler/passes/fuse_layer_norm.h"
#include "compiler/passes/gpu_nhwc_layout.h"
#include "compiler/passes/gpu_operand_views.h"
#include "compiler/passes/gpu_split_k.h"
#include "compiler/passes/legalize_outputs.h"
#include "compiler/passes/nchwc_layout.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc {

void runPipeline(Graph& graph, const PipelineOptions& options) {
  // The graphs of If and Loop first, each on its own (they are
  // self-contained): the node stays one opaque op to the passes below.
  for (const auto& node : graph.nodes)
    for (const auto& sub : node->subgraphs) runPipeline(*sub, options);
  // Partial products (ops/split_k.h) are made by runGpuPasses' split-K on
  // GPU nodes, never taken from the input: a CPU has no kernel for them.
  for (const auto& node : graph.nodes)
    if (node->has(kSplitKChunkAttribute))
      throw CompileError("node '" + node->name + "' (" + node->op +
                         "): split_k_chunk is set by nanoc's GPU split-K pass, not by a model");
  inferShapes(graph);
  verifyGraph(graph);
  if (options.fold_constants) {
    foldConstants(graph);
    foldBatchNormIntoConv(graph);
  }
  eliminateDeadCode(graph);
  const int64_t conv_gemm_panel = options.gpu ? 0 : options.conv_gemm_panel;
  if (conv_gemm_panel > 0)
    convertToNchwc(graph, options.nchwc_block, conv_gemm_panel,
                   NchwcOptions{options.nchwc_always, options.winograd, options.full_rate_fma});
  convToGemm(graph, conv_gemm_panel, options.winograd, options.conv_gemm_row_group);
  if (options.fuse) {
    fuseLayerNorms(graph);
    if (!options.gpu) fuseEpilogues(graph);
    fuseChannelScales(graph);
    // A GPU target fuses its chains after placement and the GPU's epilogues
    // (runGpuPasses): a residual Add and Relu after a Conv fold into it
    // there, not into a chain of their own.
    if (!options.gpu) fuseElementwiseChains(graph);
  }
  legalizeOutputs(graph);
  verifyGraph(graph);
}

size_t runGpuPasses(Graph& graph, const std::function<bool(const Node&)>& on_gpu,
                    const GpuPassOptions& options) {
  const size_t placed = placeOnGpu(graph, on_gpu, options.offload, options.precision);
  if (options.nhwc && placed > 0) convertGpuToNhwc(graph);
  if (options.fuse_epilogues && placed > 0) fuseEpilogues(graph, isGpuNode);
  if (options.fuse_chains) fuseElementwiseChains(graph);
  if (options.fold_views && placed > 0) foldGpuOperandViews(graph);
  if (placed > 0) splitGpuProductsAlongK(graph, options.split_k);
  verifyGraph(graph);
  return placed;
}

}  // namespace nanoc
