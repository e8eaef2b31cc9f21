#include "compiler/passes/fuse_channel_scale.h"

#include <algorithm>
#include <map>
#include <memory>
#include <vector>

#include "compiler/ops/conv_gemm.h"

namespace nanoc {

int fuseChannelScales(Graph& graph) {
  std::map<const Value*, int> uses = countUses(graph);
  std::vector<const Node*> folded;
  for (const auto& node : graph.nodes) {
    Node* conv = node.get();
    // A pointwise ConvGemm reading X in place, or a pointwise ConvNCHWc.
    const bool blocked = conv->op == "nanoc.ConvNCHWc";
    if (blocked) {
      if (!conv->has("form") || conv->s("form") != "pointwise" || conv->inputs.empty()) continue;
    } else if (conv->op != "nanoc.ConvGemm" || conv->has("kernel_shape") ||
               !conv->has("out_channels") || !conv->has("panel") || conv->i("panel") != 0 ||
               conv->has("pixel_rows") || conv->inputs.empty()) {
      continue;
    }
    if (conv->inputs.size() > kChannelScaleInput && conv->inputs[kChannelScaleInput]) continue;
    Value* b = conv->inputs[0];
    Node* mul = b ? b->producer : nullptr;
    if (!mul || mul->op != "Mul" || mul->inputs.size() != 2 || mul->outputs.size() != 1 ||
        uses[b] != 1 || b->type.dtype != DType::F32 || b->type.rank() != (blocked ? 5 : 4))
      continue;
    // Only where scaling W is the smaller pass: the kernel reads W, writes
    // the scaled rows and reads them back, M x K elements per image, where
    // the Mul reads and writes X, K x P. On a 7 x 7 map with hundreds of
    // output channels W is the larger, and the fold measured slower.
    const int64_t pixels = b->type.dims[2] * b->type.dims[3];
    if (pixels < 2 * conv->i("out_channels")) continue;
    std::vector<int64_t> scale_dims = {b->type.dims[0], b->type.dims[1], 1, 1};
    if (blocked) scale_dims.push_back(b->type.dims[4]);
    for (size_t s_at : {1, 0}) {
      Value* x = mul->inputs[1 - s_at];
      Value* s = mul->inputs[s_at];
      if (!x || !s || x == s || x->type != b->type || s->type.dtype != DType::F32 ||
          s->type.dims != scale_dims)
        continue;
      conv->inputs[0] = x;
      conv->inputs.resize(kChannelScaleInput + 1, nullptr);
      conv->inputs[kChannelScaleInput] = s;
      folded.push_back(mul);
      break;
    }
  }
  if (folded.empty()) return 0;
  std::erase_if(graph.nodes, [&](const std::unique_ptr<Node>& n) {
    return std::find(folded.begin(), folded.end(), n.get()) != folded.end();
  });
  graph.removeUnusedValues();
  return static_cast<int>(folded.size());
}

}  // namespace nanoc
