// The compiler's pass pipeline, in one place.
#pragma once

#include <cstdint>
#include <functional>

#include "compiler/ir/graph.h"
#include "compiler/ops/weight_rows.h"
#include "compiler/passes/gpu_placement.h"

namespace nanoc {

struct PipelineOptions {
  // Constant folding, and folding BatchNormalization into a constant Conv.
  bool fold_constants = true;
  // > 0: Convs become nanoc.ConvGemm on Im2Col panels of this many columns
  // (conv_to_gemm.h; the driver derives it from the targets' register tiles).
  int64_t conv_gemm_panel = 0;
  // With conv_gemm_panel: the row group of a ConvGemm's packed weights, a
  // divisor of 24 (the driver takes the least common multiple of the
  // targets' tile rows: convGemmRowGroup).
  int64_t conv_gemm_row_group = kWeightRowGroup;
  // With conv_gemm_panel: 3x3 stride-1 Convs with enough channels and tiles
  // become nanoc.Winograd (F(4x4, 3x3), weights transformed at compile time).
  bool winograd = true;
  // With conv_gemm_panel: > 1 runs a CNN of pointwise and depthwise
  // convolutions in the channel-blocked layout with blocks of this many
  // lanes (nchwc_layout.h; the driver passes the targets' common vector
  // width, 0 where they differ or have none).
  int64_t nchwc_block = 0;
  // With nchwc_block: convert every op that has a blocked form (nanoc
  // --nchwc), not only graphs that the layout pass's rules pick.
  bool nchwc_always = false;
  // With nchwc_block: every target runs its 16-lane multiply-adds at full
  // rate (NchwcOptions::full_rate_fma; the driver: fullRateWideFma).
  bool full_rate_fma = false;
  // Rewrite decomposed LayerNorms into LayerNormalization
  // (fuse_layer_norm.h); fold residual Adds and activations into the Conv,
  // ConvGemm, Gemm or MatMul producing them (fuse_epilogue.h), and a
  // per-channel scale of a pointwise ConvGemm's input into it
  // (fuse_channel_scale.h); chains of elementwise ops into one node
  // (fuse_elementwise.h).
  bool fuse = true;
  // For a GPU target (nanoc --target sm_XY): the GPU kernels take the plain
  // ops, so no channel-blocked layout, no Convs on patches or Winograd (the
  // GPU runs Conv itself) and no activations or residual Adds folded into
  // products, whatever conv_gemm_panel and nchwc_block say.
  bool gpu = false;
};

// Shape inference, constant folding (with BatchNormalization into Conv),
// dead-code elimination, Conv on the GEMM micro-kernel, epilogue and
// channel-scale fusion and output legalization, verifying the IR before and after.
void runPipeline(Graph& graph, const PipelineOptions& options = {});

// For a GPU target, after runPipeline: placement (gpu_placement.h), then,
// with `nhwc`, the channels-last layout of the GPU's convolutions and what
// follows them (gpu_nhwc_layout.h), which needs to know what runs where;
// the GPU's epilogues, the elementwise chains, the MatMuls' operand views
// (gpu_operand_views.h), split-K (gpu_split_k.h); the
// IR verified after. Returns the number of nodes placed on the GPU.
struct GpuPassOptions {
  GpuOffload offload = GpuOffload::Auto;
  GpuPrecision precision;
  bool nhwc = true;
  // Fold residual Adds and activations into the GPU products that make them
  // (fuse_epilogue.h, GPU anchors and tails only), after the layout.
  bool fuse_epilogues = true;
  // Fuse the chains of elementwise ops (fuse_elementwise.h) after the
  // epilogues, each chain on one side (runPipeline leaves them to this for
  // a GPU target).
  bool fuse_chains = true;
  // Read the GPU MatMuls' operands made by Slice / Reshape / Transpose chains
  // in place, through strided views (gpu_operand_views.h), after the chains.
  bool fold_views = true;
  // Split the GPU products whose tiles are too few to fill the GPU along K
  // (gpu_split_k.h), after the epilogues: the K chunk per node, 0 to leave
  // it whole (codegen/gpu's chooseSplitK); empty: split nothing (nanoc
  // --gpu-split-k=off).
  std::function<int64_t(const Node&)> split_k;
};
size_t runGpuPasses(Graph& graph, const std::function<bool(const Node&)>& on_gpu,
                    const GpuPassOptions& options = {});

}  // namespace nanoc
