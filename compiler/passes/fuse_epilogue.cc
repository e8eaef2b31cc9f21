#include "compiler/passes/fuse_epilogue.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ops/epilogue.h"

namespace nanoc {
namespace {

bool isAnchorOp(const std::string& op) {
  return op == "Conv" || op == "nanoc.ConvGemm" || op == "nanoc.Winograd" ||
         op == "nanoc.ConvNCHWc" || op == "nanoc.ConvNHWC" || op == "Gemm" || op == "MatMul";
}

class EpilogueFuser {
 public:
  EpilogueFuser(Graph& graph, const std::function<bool(const Node&)>& where)
      : graph_(graph), where_(where) {
    for (size_t at = 0; at < graph.nodes.size(); ++at) {
      Node* node = graph.nodes[at].get();
      position_[node] = at;
      for (Value* in : node->inputs)
        if (in) users_[in].push_back(node);
    }
    for (Value* out : graph.outputs) ++output_uses_[out];
  }

  int run() {
    int folded = 0;
    for (size_t at = 0; at < graph_.nodes.size(); ++at) {
      Node* node = graph_.nodes[at].get();
      if (!node) continue;
      if (node->op == "Add") {
        const int bias = fuseBias(at);
        folded += bias ? bias : fuseResidual(at);
      } else if (node->op == "Mul")
        folded += fuseSiLU(at);
      else
        folded += fuseActivation(at);
    }
    std::erase_if(graph_.nodes, [](const std::unique_ptr<Node>& n) { return n == nullptr; });
    graph_.removeUnusedValues();
    return folded;
  }

 private:
  // The anchor producing `v` if v is its f32 result with one use by `user`
  // only, no graph output, and the anchor has no activation yet.
  Node* anchorOf(Value* v, const Node* user) {
    Node* a = v ? v->producer : nullptr;
    if (!a || !isAnchorOp(a->op) || a->outputs.size() != 1 || a->outputs[0] != v) return nullptr;
    if (where_ && (!where_(*a) || !where_(*user))) return nullptr;
    if (v->type.dtype != DType::F32 || a->has("fused_activation")) return nullptr;
    if (output_uses_.count(v)) return nullptr;
    const std::vector<Node*>& users = users_[v];
    if (users.size() != 1 || users[0] != user) return nullptr;
    return a;
  }

  // The anchor takes over `tail`'s result; the tail and the anchor's old
  // result go away. `extra` are nodes fused along with the tail (SiLU's
  // Sigmoid).
  void absorb(Node* anchor, size_t tail_at, const std::vector<Node*>& extra = {}) {
    Node* tail = graph_.nodes[tail_at].get();
    Value* result = tail->outputs[0];
    anchor->outputs[0] = result;
    result->producer = anchor;
    for (Node* n : extra) graph_.nodes[position_[n]].reset();
    graph_.nodes[tail_at].reset();
  }

  // Add(Y, c) or Add(c, Y), Y a MatMul's result and c a constant f32 row
  // vector of Y's last dim ([N] or [1, ..., 1, N]): the MatMul's bias (input
  // 2), added to the product rounded to f32 as the Add did, before any
  // residual or activation folds in after it.
  int fuseBias(size_t at) {
    Node* add = graph_.nodes[at].get();
    if (add->inputs.size() != 2 || add->outputs.size() != 1) return 0;
    for (int s = 0; s < 2; ++s) {
      Value* y = add->inputs[s];
      Value* c = add->inputs[1 - s];
      if (!y || !c || !c->isConstant() || c->type.dtype != DType::F32 || y == c) continue;
      Node* a = anchorOf(y, add);
      if (!a || a->op != "MatMul" || a->inputs.size() > 2) continue;
      if (add->outputs[0]->type != y->type || y->type.rank() < 1) continue;
      const std::vector<int64_t>& d = c->type.dims;
      bool row = !d.empty() && d.size() <= y->type.rank() && d.back() == y->type.dims.back();
      for (size_t i = 0; row && i + 1 < d.size(); ++i) row = d[i] == 1;
      if (!row) continue;
      Value* old = a->outputs[0];
      a->inputs.push_back(c);
      absorb(a, at);
      users_.erase(old);
      return 1;
    }
    return 0;
  }

  int fuseResidual(size_t at) {
    Node* add = graph_.nodes[at].get();
    if (add->inputs.size() != 2 || add->outputs.size() != 1) return 0;
    Value* lhs = add->inputs[0];
    Value* rhs = add->inputs[1];
    if (!lhs || !rhs || lhs == rhs || lhs->type != rhs->type) return 0;
    // Either operand's anchor; the later one when both are, so that the
    // other is computed before it and nothing moves.
    Node* anchor = nullptr;
    Value* residual = nullptr;
    for (auto [mine, other] : {std::pair{lhs, rhs}, std::pair{rhs, lhs}}) {
      Node* a = anchorOf(mine, add);
      if (!a || (a->inputs.size() > kResidualInput && a->inputs[kResidualInput])) continue;
      if (!anchor || position_[a] > position_[anchor]) anchor = a, residual = other;
    }
    if (!anchor) return 0;
    Value* old = anchor->outputs[0];
    anchor->inputs.resize(kResidualInput + 1, nullptr);
    anchor->inputs[kResidualInput] = residual;
    std::replace(users_[residual].begin(), users_[residual].end(), add, anchor);
    const size_t anchor_at = position_[anchor];
    if (residual->producer && position_[residual->producer] > anchor_at) {
      // R is computed after the anchor: the anchor moves to the Add's place
      // (its own operands all come before its old place).
      graph_.nodes[at].swap(graph_.nodes[anchor_at]);
      position_[anchor] = at;
      absorb(anchor, anchor_at);
    } else {
      absorb(anchor, at);
    }
    users_.erase(old);
    return 1;
  }

  int fuseActivation(size_t at) {
    Node* act = graph_.nodes[at].get();
    if (act->inputs.empty() || act->outputs.size() != 1) return 0;
    Activation kind = activationByName(act->op);
    if (kind == Activation::None || kind == Activation::SiLU) return 0;
    double alpha = 0.0, beta = 0.0;
    if (kind == Activation::Clip) {
      if (act->inputs.size() != 3 || !f32ScalarConstant(act->inputs[1], alpha) ||
          !f32ScalarConstant(act->inputs[2], beta))
        return 0;
    } else if (act->inputs.size() != 1) {
      return 0;
    }
    if (kind == Activation::LeakyRelu || kind == Activation::HardSigmoid) alpha = act->f("alpha");
    if (kind == Activation::HardSigmoid) beta = act->f("beta");
    Node* anchor = anchorOf(act->inputs[0], act);
    if (!anchor) return 0;
    Value* old = anchor->outputs[0];
    anchor->attrs["fused_activation"] = std::string(activationName(kind));
    if (activationHasAlpha(kind)) anchor->attrs["fused_alpha"] = alpha;
    if (activationHasBeta(kind)) anchor->attrs["fused_beta"] = beta;
    absorb(anchor, at);
    users_.erase(old);
    return 1;
  }

  // Mul(x, Sigmoid(x)) or Mul(Sigmoid(x), x) with x an anchor's result that
  // only the two read, and the Sigmoid read by the Mul only.
  int fuseSiLU(size_t at) {
    Node* mul = graph_.nodes[at].get();
    if (mul->inputs.size() != 2 || mul->outputs.size() != 1) return 0;
    for (int s = 0; s < 2; ++s) {
      Value* x = mul->inputs[1 - s];
      Value* sig = mul->inputs[s];
      Node* sigmoid = sig ? sig->producer : nullptr;
      if (!x || !sigmoid || sigmoid->op != "Sigmoid" || sigmoid->inputs.size() != 1 ||
          sigmoid->inputs[0] != x || sig->type != x->type)
        continue;
      if (output_uses_.count(sig) || users_[sig].size() != 1) continue;
      Node* a = x->producer;
      if (!a || !isAnchorOp(a->op) || a->outputs.size() != 1 || a->outputs[0] != x ||
          x->type.dtype != DType::F32 || a->has("fused_activation") || output_uses_.count(x))
        continue;
      if (where_ && (!where_(*a) || !where_(*mul) || !where_(*sigmoid))) continue;
      std::vector<Node*> users = users_[x];
      std::sort(users.begin(), users.end());
      std::vector<Node*> want = {sigmoid, mul};
      std::sort(want.begin(), want.end());
      if (users != want) continue;
      a->attrs["fused_activation"] = std::string("SiLU");
      absorb(a, at, {sigmoid});
      users_.erase(x);
      users_.erase(sig);
      return 2;
    }
    return 0;
  }

  Graph& graph_;
  std::function<bool(const Node&)> where_;  // empty: every anchor and tail
  std::map<const Node*, size_t> position_;
  std::map<const Value*, std::vector<Node*>> users_;  // one entry per use
  std::map<const Value*, int> output_uses_;
};

}  // namespace

int fuseEpilogues(Graph& graph, const std::function<bool(const Node&)>& where) {
  return EpilogueFuser(graph, where).run();
}

}  // namespace nanoc
