#include "compiler/passes/gpu_nhwc_layout.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ops/channels_last.h"
#include "compiler/ops/elementwise_table.h"
#include "compiler/passes/gpu_placement.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc {
namespace {

enum class Kind { Plain, Conv, Pool, Concat, Elementwise };

constexpr size_t kRank = 4;

bool f32Rank4(const Value* v) {
  return v && v->type.dtype == DType::F32 && v->type.rank() == kRank;
}

// A Conv's or ConvTranspose's inputs are X, W and an optional bias, W and
// the bias constants (laid out, or kept, at compile time).
bool constantWeightsAndBias(const Node& node) {
  if (node.inputs.size() < 2 || node.inputs.size() > 3 || !node.inputs[1] ||
      !node.inputs[1]->isConstant())
    return false;
  return node.inputs.size() < 3 || !node.inputs[2] || node.inputs[2]->isConstant();
}

// Whether the conversion of a tensor of `dims` by `perm` moves only dims of
// size 1: the others keep their order, so the bytes stay where they are.
bool movesOnlyUnitDims(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm) {
  int64_t last = -1;
  for (int64_t p : perm) {
    if (dims[static_cast<size_t>(p)] == 1) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}

class GpuNhwcLayout {
 public:
  explicit GpuNhwcLayout(Graph& graph) : graph_(graph) {}

  int run() {
    int converted = 0;
    for (auto& node : graph_.nodes) {
      Kind k = classify(*node);
      kind_[node.get()] = k;
      if (k == Kind::Conv) ++converted;
      if (k != Kind::Plain) nhwc_.insert(node->outputs[0]);
    }
    if (converted == 0) return 0;
    // Conversions: into the layout before Convs of NCHW inputs, out of it
    // for every other reader and the graph's outputs.
    std::set<const Value*> to_nhwc, to_nchw;
    for (auto& node : graph_.nodes) {
      const Kind k = kind_[node.get()];
      if (k == Kind::Conv && !nhwc_.count(node->inputs[0])) to_nhwc.insert(node->inputs[0]);
      if (k == Kind::Plain)
        for (const Value* in : node->inputs)
          if (in && nhwc_.count(in)) to_nchw.insert(in);
    }
    for (const Value* out : graph_.outputs)
      if (nhwc_.count(out)) to_nchw.insert(out);
    int64_t moving = 0;
    for (const Value* v : to_nhwc)
      moving += !movesOnlyUnitDims(v->type.dims, toChannelsLast(kRank));
    for (const Value* v : to_nchw)
      moving += !movesOnlyUnitDims(v->type.dims, toChannelsFirst(kRank));
    if (moving > converted) return 0;
    rewrite(to_nchw);
    return converted;
  }

 private:
  Kind classify(const Node& node) {
    if (!isGpuNode(node) || node.outputs.size() != 1 || !f32Rank4(node.outputs[0]))
      return Kind::Plain;
    const std::string& op = node.op;
    if (op == "Conv") {
      if (!constantWeightsAndBias(node) || !f32Rank4(node.inputs[0]) ||
          node.inputs[0]->isConstant() || !f32Rank4(node.inputs[1]))
        return Kind::Plain;
      for (const auto& [key, value] : node.attrs)
        if (key.rfind("fused_", 0) == 0) return Kind::Plain;
      return Kind::Conv;
    }
    if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "Resize")
      return node.inputs.size() == 1 && nhwc_.count(node.inputs[0]) ? Kind::Pool : Kind::Plain;
    if (op == "ConvTranspose")  // W and B keep their layout (nanoc.ConvTransposeNHWC)
      return constantWeightsAndBias(node) && nhwc_.count(node.inputs[0]) ? Kind::Pool : Kind::Plain;
    if (op == "Concat") {
      if (node.i("axis") != 1) return Kind::Plain;
      for (const Value* in : node.inputs)
        if (!in || !nhwc_.count(in)) return Kind::Plain;
      return Kind::Concat;
    }
    if (findElementwise(op) == nullptr && op != "nanoc.Elementwise") return Kind::Plain;
    bool any = false;
    for (const Value* in : node.inputs) {
      if (!in) continue;
      if (nhwc_.count(in)) {
        any = true;
      } else if (!in->isConstant() || in->type.rank() > kRank ||
                 (in->type.numel() != 1 && in->type.dtype != DType::F32)) {
        return Kind::Plain;
      }
    }
    return any ? Kind::Elementwise : Kind::Plain;
  }

  // A constant operand of an elementwise op, laid out channels-last: right-
  // aligned to rank 4, permuted, its leading 1s dropped.
  Value* channelsLastConstant(Value* c) {
    if (c->type.numel() == 1) return c;
    std::vector<int64_t> dims(kRank - c->type.rank(), 1);
    dims.insert(dims.end(), c->type.dims.begin(), c->type.dims.end());
    const std::vector<int64_t> perm = toChannelsLast(kRank);
    std::vector<uint8_t> bytes = permuteTensor({c->type.dtype, dims}, c->data->data(), perm);
    std::vector<int64_t> out = permuteDims(dims, perm);
    while (out.size() > 1 && out[0] == 1) out.erase(out.begin());
    return graph_.addConstant(c->name + "_nhwc", {c->type.dtype, out}, std::move(bytes));
  }

  // A Transpose of `in` by `perm` (a Reshape where it moves only unit dims),
  // on the GPU, writing `out`.
  std::unique_ptr<Node> conversion(Value* in, Value* out, const std::vector<int64_t>& perm,
                                   const std::string& hint) {
    auto n = std::make_unique<Node>();
    n->name = graph_.uniqueNodeName(hint);
    n->inputs = {in};
    n->outputs = {out};
    n->attrs[kDeviceAttribute] = std::string(kGpuDevice);
    if (movesOnlyUnitDims(in->type.dims, perm)) {
      n->op = "Reshape";
      n->attrs["shape"] = permuteDims(in->type.dims, perm);
    } else {
      n->op = "Transpose";
      n->attrs["perm"] = perm;
    }
    out->producer = n.get();
    return n;
  }

  void rewrite(const std::set<const Value*>& to_nchw) {
    std::map<const Value*, Value*> nhwc_of;  // original value -> its channels-last copy
    std::vector<std::unique_ptr<Node>> order;
    std::vector<std::unique_ptr<Node>> old = std::move(graph_.nodes);
    graph_.nodes.clear();
    for (std::unique_ptr<Node>& node : old) {
      const Kind k = kind_[node.get()];
      if (k == Kind::Plain) {
        order.push_back(std::move(node));
        continue;
      }
      for (size_t i = 0; i < node->inputs.size(); ++i) {
        Value* in = node->inputs[i];
        if (!in) continue;
        auto it = nhwc_of.find(in);
        if (it != nhwc_of.end()) {
          node->inputs[i] = it->second;
        } else if (k == Kind::Conv && i == 0) {
          Value* converted = graph_.newValue(in->name + "_nhwc");
          order.push_back(conversion(in, converted, toChannelsLast(kRank), in->name + "_to_nhwc"));
          nhwc_of[in] = converted;
          node->inputs[i] = converted;
        } else if (k == Kind::Elementwise && in->isConstant()) {
          node->inputs[i] = channelsLastConstant(in);
        }
      }
      if (k == Kind::Conv) {
        Value* w = node->inputs[1];
        std::vector<int64_t> perm = toKernelMajor(kRank);
        node->inputs[1] =
            graph_.addConstant(w->name + "_nhwc", {DType::F32, permuteDims(w->type.dims, perm)},
                               permuteTensor(w->type, w->data->data(), perm));
        node->op = "nanoc.ConvNHWC";
      } else if (k == Kind::Pool) {
        node->op = channelsLastOp(node->op);
      } else if (k == Kind::Concat) {
        node->attrs["axis"] = int64_t{3};
      }
      Value* out = node->outputs[0];
      Value* converted = graph_.newValue(out->name + "_nhwc");
      converted->producer = node.get();
      node->outputs[0] = converted;
      nhwc_of[out] = converted;
      const std::string name = node->name;
      order.push_back(std::move(node));
      // Shape inference types the new values after the rewrite; the
      // conversion back needs the channels-last dims now.
      converted->type = {DType::F32, permuteDims(out->type.dims, toChannelsLast(kRank))};
      if (to_nchw.count(out))
        order.push_back(conversion(converted, out, toChannelsFirst(kRank), name + "_to_nchw"));
      else
        out->producer = nullptr;
    }
    graph_.nodes = std::move(order);
    graph_.removeUnusedValues();
    inferShapes(graph_);
  }

  Graph& graph_;
  std::map<const Node*, Kind> kind_;
  std::set<const Value*> nhwc_;  // results of nodes that run channels-last
};

}  // namespace

int convertGpuToNhwc(Graph& graph) { return GpuNhwcLayout(graph).run(); }

}  // namespace nanoc
