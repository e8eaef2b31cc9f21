#include "compiler/passes/gpu_placement.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ops/elementwise_table.h"

namespace nanoc {
namespace {

bool isElementwise(const Node& node) {
  return findElementwise(node.op) != nullptr || node.op == "nanoc.Elementwise";
}

}  // namespace

bool isViewOp(const Node& node) {
  return node.op == "Reshape" || node.op == "Identity" || node.op == "BitCast";
}

bool isDeviceCopy(const Node& node) {
  return node.op == "nanoc.ToDevice" || node.op == "nanoc.ToHost";
}

bool isByteCopy(const Node& node) { return isViewOp(node) || isDeviceCopy(node); }

bool isGpuNode(const Node& node) {
  auto it = node.attrs.find(kDeviceAttribute);
  return it != node.attrs.end() && std::holds_alternative<std::string>(it->second) &&
         std::get<std::string>(it->second) == kGpuDevice;
}

bool isDeviceValue(const Value* value) {
  return value != nullptr && value->producer != nullptr && isGpuNode(*value->producer);
}

bool isGpuPrecision(const std::string& mode) {
  return mode == "exact" || mode == "tf32" || mode == "bf16" || mode == "f16";
}

size_t placeOnGpu(Graph& graph, const std::function<bool(const Node&)>& on_gpu, GpuOffload offload,
                  const GpuPrecision& precision) {
  // The tensor-core mode the products take on every target SM ("" none).
  std::string mma = precision.mode == "exact" ? "" : precision.mode;
  if (precision.min_sm < 80 && mma != "f16") mma.clear();
  // 1. Which nodes go to the GPU, in order, so a node sees its operands'
  // places.
  size_t placed = 0;
  for (const auto& node : graph.nodes) {
    bool operand_on_gpu = false;
    for (const Value* in : node->inputs) operand_on_gpu = operand_on_gpu || isDeviceValue(in);
    bool gpu = false;
    if (isViewOp(*node))
      gpu = isDeviceValue(node->inputs.empty() ? nullptr : node->inputs[0]);
    else if (on_gpu(*node))
      gpu = offload == GpuOffload::All || !isElementwise(*node) || operand_on_gpu;
    if (gpu) {
      node->attrs[kDeviceAttribute] = std::string(kGpuDevice);
      if (!mma.empty() && (node->op == "MatMul" || node->op == "Gemm" || node->op == "Conv")) {
        node->attrs[kGpuPrecisionAttribute] = mma;
        if (precision.min_sm < 80) node->attrs[kGpuMmaShapeAttribute] = std::string("m16n8k8");
      }
      if (!isViewOp(*node)) ++placed;
    }
  }
  if (placed == 0) {
    // Nothing to offload: views stay on the host too.
    for (const auto& node : graph.nodes) node->attrs.erase(kDeviceAttribute);
    return 0;
  }

  // 2. Graph outputs made on the GPU: the GPU node writes NAME_gpu, a ToHost
  // writes the model's output.
  std::vector<std::unique_ptr<Node>> appended;
  for (Value* out : graph.outputs) {
    if (!isDeviceValue(out)) continue;
    Node* producer = out->producer;
    Value* device = graph.newValue(out->name + "_gpu");
    device->type = out->type;
    device->typed = true;
    device->producer = producer;
    for (Value*& o : producer->outputs)
      if (o == out) o = device;
    // Other readers of the value read the device copy.
    for (const auto& node : graph.nodes)
      for (Value*& in : node->inputs)
        if (in == out) in = device;
    Node* copy =
        graph.addNode("nanoc.ToHost", graph.uniqueNodeName(out->name + "_to_host"), {device}, 1);
    // addNode made a fresh output: the model's output takes its place.
    Value* made = copy->outputs[0];
    copy->outputs[0] = out;
    out->producer = copy;
    made->producer = nullptr;
    appended.push_back(std::move(graph.nodes.back()));
    graph.nodes.pop_back();
  }

  // 3. Copies before first readers on the other side. The nodes are rebuilt
  // in order with each copy right before the node that first needs it.
  std::vector<std::unique_ptr<Node>> order;
  std::map<const Value*, Value*> to_device, to_host;
  std::vector<std::unique_ptr<Node>> old = std::move(graph.nodes);
  graph.nodes.clear();
  auto copyOf = [&](Value* v, bool device) -> Value* {
    auto& cache = device ? to_device : to_host;
    auto it = cache.find(v);
    if (it != cache.end()) return it->second;
    Node* copy = graph.addNode(device ? "nanoc.ToDevice" : "nanoc.ToHost",
                               graph.uniqueNodeName(v->name + (device ? "_to_gpu" : "_to_host")),
                               {v}, 1, {v->name + (device ? "_gpu" : "_host")});
    copy->outputs[0]->type = v->type;
    copy->outputs[0]->typed = true;
    if (device) copy->attrs[kDeviceAttribute] = std::string(kGpuDevice);
    cache[v] = copy->outputs[0];
    return copy->outputs[0];
  };
  for (auto& node : old) {
    const bool gpu = isGpuNode(*node);
    for (Value*& in : node->inputs) {
      if (!in || in->isConstant()) continue;
      if (gpu && !isDeviceValue(in)) in = copyOf(in, true);
      if (!gpu && isDeviceValue(in)) in = copyOf(in, false);
    }
    graph.nodes.push_back(std::move(node));
  }
  for (auto& node : appended) graph.nodes.push_back(std::move(node));
  graph.removeUnusedValues();
  return placed;
}

}  // namespace nanoc
