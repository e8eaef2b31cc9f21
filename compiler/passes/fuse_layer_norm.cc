#include "compiler/passes/fuse_layer_norm.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace nanoc {
namespace {

class LayerNormFuser {
 public:
  explicit LayerNormFuser(Graph& graph) : graph_(graph), uses_(countUses(graph)) {
    for (size_t at = 0; at < graph.nodes.size(); ++at) {
      position_[graph.nodes[at].get()] = at;
      for (const Value* in : graph.nodes[at]->inputs)
        if (in) users_[in].push_back(graph.nodes[at].get());
    }
  }

  int run() {
    int rewritten = 0;
    for (size_t at = 0; at < graph_.nodes.size(); ++at) {
      Node* div = graph_.nodes[at].get();
      if (div && div->op == "Div") rewritten += rewrite(div);
    }
    if (rewritten == 0) return 0;
    std::erase_if(graph_.nodes, [](const std::unique_ptr<Node>& n) { return n == nullptr; });
    graph_.removeUnusedValues();
    return rewritten;
  }

 private:
  // The producer of v if it is `op` with a single f32 result read `uses`
  // times, and not a graph output (counted as a use).
  Node* producer(const Value* v, const char* op, int uses = 1) {
    Node* p = v ? v->producer : nullptr;
    if (!p || p->op != op || p->outputs.size() != 1 || p->outputs[0] != v) return nullptr;
    if (v->type.dtype != DType::F32 || uses_[v] != uses) return nullptr;
    return p;
  }
  // ReduceMean over the last axis of a rank-r input, keeping dims.
  static bool lastAxisMean(const Node* n) {
    if (!n || n->inputs.size() != 1 || !n->has("axes") || !n->inputs[0]) return false;
    const int64_t rank = static_cast<int64_t>(n->inputs[0]->type.rank());
    const std::vector<int64_t>& axes = n->ints("axes");
    if (rank == 0 || axes.size() != 1 || (axes[0] != rank - 1 && axes[0] != -1)) return false;
    return !n->has("keepdims") || n->i("keepdims") == 1;
  }
  // The only reader of v (a node; v not a graph output), or null.
  Node* soleUser(const Value* v) {
    if (uses_[v] != 1) return nullptr;
    auto it = users_.find(v);
    return it == users_.end() || it->second.size() != 1 ? nullptr : it->second[0];
  }
  // The other operand of a binary node than `v`, or null.
  static Value* other(const Node* n, const Value* v) {
    if (n->inputs.size() != 2) return nullptr;
    if (n->inputs[0] == v) return n->inputs[1];
    if (n->inputs[1] == v) return n->inputs[0];
    return nullptr;
  }

  int rewrite(Node* div) {
    if (div->inputs.size() != 2 || div->outputs.size() != 1) return 0;
    Value* d = div->inputs[0];
    Node* sqrt = producer(div->inputs[1], "Sqrt");
    Node* sub = producer(d, "Sub", 2);
    if (!sqrt || !sub || sqrt->inputs.size() != 1 || sub->inputs.size() != 2) return 0;
    Node* add_eps = producer(sqrt->inputs[0], "Add");
    if (!add_eps || add_eps->inputs.size() != 2) return 0;
    double eps = 0;
    Value* var = nullptr;
    for (int i : {0, 1})
      if (f32ScalarConstant(add_eps->inputs[1 - i], eps)) var = add_eps->inputs[i];
    Node* var_mean = producer(var, "ReduceMean");
    if (!var_mean || !lastAxisMean(var_mean) || !(eps >= 0)) return 0;
    Node* pow = producer(var_mean->inputs[0], "Pow");
    double two = 0;
    if (!pow || pow->inputs.size() != 2 || pow->inputs[0] != d ||
        !f32ScalarConstant(pow->inputs[1], two) || two != 2.0)
      return 0;
    Value* x = sub->inputs[0];
    Node* mean = producer(sub->inputs[1], "ReduceMean");
    if (!mean || !lastAxisMean(mean) || mean->inputs[0] != x || x->type.dtype != DType::F32)
      return 0;
    if (div->outputs[0]->type != x->type) return 0;
    const int64_t row = x->type.dims.back();
    const std::vector<int64_t> row_dims = {row};
    // The affine tail: Mul by gamma, then Add of beta, each optional.
    std::vector<Node*> matched = {mean, sub, pow, var_mean, add_eps, sqrt, div};
    Node* last = div;
    Value* gamma = nullptr;
    Value* beta = nullptr;
    if (Node* mul = soleUser(div->outputs[0]); mul && mul->op == "Mul") {
      Value* g = other(mul, div->outputs[0]);
      if (g && g != x && g->type.dtype == DType::F32 && g->type.dims == row_dims &&
          mul->outputs.size() == 1 && mul->outputs[0]->type == x->type)
        gamma = g, last = mul, matched.push_back(mul);
    }
    if (gamma) {
      Node* add = soleUser(last->outputs[0]);
      Value* b = add && add->op == "Add" ? other(add, last->outputs[0]) : nullptr;
      if (b && b->type.dtype == DType::F32 && b->type.dims == row_dims &&
          add->outputs.size() == 1 && add->outputs[0]->type == x->type)
        beta = b, last = add, matched.push_back(add);
    }
    // gamma and beta must be defined before the node that takes their place.
    for (Value* v : {gamma, beta})
      if (v && v->producer && position_[v->producer] > position_[last]) return 0;
    if (!gamma) {
      std::vector<float> ones(static_cast<size_t>(row), 1.0f);
      gamma = graph_.addConstant(div->name + "_scale", {DType::F32, row_dims}, f32Bytes(ones));
    }
    // The LayerNormalization in `last`'s place: its result value and name.
    Value* result = last->outputs[0];
    const std::string name = last->name;
    for (Node* n : matched)
      if (n != last) graph_.nodes[position_[n]].reset();
    Node* ln = last;
    ln->op = "LayerNormalization";
    ln->inputs = beta ? std::vector<Value*>{x, gamma, beta} : std::vector<Value*>{x, gamma};
    ln->attrs.clear();
    ln->attrs["axis"] = static_cast<int64_t>(x->type.rank()) - 1;
    ln->attrs["epsilon"] = eps;
    ln->outputs = {result};
    for (const char* stat : {"_mean", "_inv_std_dev"}) {
      Value* v = graph_.newValue(name + stat);
      v->producer = ln;
      v->type = {DType::F32, x->type.dims};
      v->type.dims.back() = 1;
      v->typed = true;
      ln->outputs.push_back(v);
    }
    return 1;
  }

  Graph& graph_;
  std::map<const Value*, int> uses_;
  std::map<const Node*, size_t> position_;
  std::map<const Value*, std::vector<Node*>> users_;
};

}  // namespace

int fuseLayerNorms(Graph& graph) { return LayerNormFuser(graph).run(); }

}  // namespace nanoc
