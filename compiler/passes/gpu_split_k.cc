// Split-K for the GPU's products: see gpu_split_k.h.
#include "compiler/passes/gpu_split_k.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ops/epilogue.h"
#include "compiler/ops/split_k.h"
#include "compiler/passes/gpu_placement.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc {

size_t splitGpuProductsAlongK(Graph& graph, const std::function<int64_t(const Node&)>& chunk_of) {
  if (!chunk_of) return 0;
  size_t split = 0;
  std::vector<std::unique_ptr<Node>> order;
  for (std::unique_ptr<Node>& node : graph.nodes) {
    const bool product = node->op == "nanoc.ConvNHWC" || node->op == "MatMul" || node->op == "Gemm";
    const int64_t chunk =
        product && isGpuNode(*node) && node->outputs.size() == 1 && splitKChunk(*node) == 0
            ? chunk_of(*node)
            : 0;
    if (chunk <= 0) {
      order.push_back(std::move(node));
      continue;
    }
    Value* y = node->outputs[0];
    Value* partial = graph.newValue(y->name + "_partial");  // typed below
    partial->producer = node.get();

    auto sum = std::make_unique<Node>();
    sum->op = "nanoc.SplitKSum";
    sum->name = graph.uniqueNodeName(node->name + "_split_k_sum");
    sum->inputs = {partial, node->inputs.size() > 2 ? node->inputs[2] : nullptr,
                   hasResidual(*node) ? node->inputs[kResidualInput] : nullptr};
    while (!sum->inputs.empty() && !sum->inputs.back()) sum->inputs.pop_back();
    sum->outputs = {y};
    sum->attrs[kDeviceAttribute] = std::string(kGpuDevice);
    for (const char* key : {"fused_activation", "fused_alpha", "fused_beta"}) {
      auto it = node->attrs.find(key);
      if (it == node->attrs.end()) continue;
      sum->attrs[key] = it->second;
      node->attrs.erase(it);
    }
    y->producer = sum.get();

    // The partial product: A and B only (Gemm's C, with beta 1, is the
    // sum's bias: chooseSplitK takes only such a C).
    node->inputs.resize(2);
    node->outputs[0] = partial;
    node->attrs[kSplitKChunkAttribute] = chunk;
    order.push_back(std::move(node));
    order.push_back(std::move(sum));
    ++split;
  }
  graph.nodes = std::move(order);
  if (split > 0) inferShapes(graph);
  return split;
}

}  // namespace nanoc
