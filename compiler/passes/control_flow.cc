#include "compiler/passes/control_flow.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/error.h"

namespace nanoc {

namespace {

class Splicer {
 public:
  explicit Splicer(Graph& graph) : graph_(graph) {
    for (const auto& v : graph.values) {
      value_names_.insert(v->name);
      if (v->isConstant()) constants_.emplace(v->data.get(), v.get());
    }
  }

  void run() {
    std::vector<std::unique_ptr<Node>> old = std::move(graph_.nodes);
    graph_.nodes.clear();
    for (auto& node : old) place(std::move(node));
  }

 private:
  Node* emit(const std::string& op, const std::string& name, std::vector<Value*> inputs,
             std::vector<Value*> outputs) {
    auto node = std::make_unique<Node>();
    node->op = op;
    node->name = name;
    node->inputs = std::move(inputs);
    node->outputs = std::move(outputs);
    return graph_.adoptNode(std::move(node), node_names_);
  }

  Node* copy(Value* from, Value* to, const std::string& name) {
    Node* node = emit("Identity", name, {from}, {to});
    return node;
  }

  Value* fresh(const std::string& hint, const TensorType& type) {
    Value* v = graph_.newValue(hint);
    value_names_.insert(v->name);
    v->type = type;
    v->typed = true;
    return v;
  }

  // A node of the graph being rebuilt, or an If or Loop spliced in its place.
  void place(std::unique_ptr<Node> node) {
    if (node->op == "If")
      spliceIf(*node);
    else if (node->op == "Loop")
      spliceLoop(*node);
    else
      graph_.adoptNode(std::move(node), node_names_);
  }

  // `sub`'s nodes appended (its own If and Loop spliced too), its inputs read
  // as `bound`; returns its outputs as the spliced nodes define them.
  std::vector<Value*> spliceGraph(Graph& sub, const std::vector<Value*>& bound) {
    if (bound.size() != sub.inputs.size())
      throw CompileError("internal error: graph '" + sub.name + "' takes " +
                         std::to_string(sub.inputs.size()) + " inputs, bound to " +
                         std::to_string(bound.size()));
    std::map<const Value*, Value*> input_of;
    for (size_t i = 0; i < bound.size(); ++i) input_of[sub.inputs[i]] = bound[i];
    auto rebind = [&](Value*& v) {
      if (auto it = input_of.find(v); it != input_of.end()) v = it->second;
    };
    // A graph's constant that shares its bytes with one already here (the
    // importer gives a graph its own Value for a constant from outside) is
    // that one: the blob holds it once.
    for (const auto& v : sub.values)
      if (v->isConstant())
        if (auto it = constants_.find(v->data.get());
            it != constants_.end() && it->second->type == v->type)
          input_of[v.get()] = it->second;
    for (auto& node : sub.nodes)
      for (Value*& in : node->inputs) rebind(in);
    std::vector<Value*> outputs = sub.outputs;
    for (Value*& out : outputs) rebind(out);
    for (auto& v : sub.values) {
      if (input_of.count(v.get())) continue;
      Value* adopted = graph_.adoptValue(std::move(v), value_names_);
      if (adopted->isConstant()) constants_.emplace(adopted->data.get(), adopted);
    }
    sub.values.clear();
    std::vector<std::unique_ptr<Node>> nodes = std::move(sub.nodes);
    sub.nodes.clear();
    for (auto& node : nodes) place(std::move(node));
    return outputs;
  }

  void spliceIf(Node& node) {
    if (node.subgraphs.size() != 2 || node.inputs.empty())
      throw CompileError("internal error: If '" + node.name + "' is malformed");
    const std::vector<Value*> captures(node.inputs.begin() + 1, node.inputs.end());
    emit("nanoc.If", node.name, {node.inputs[0]}, {});
    for (size_t b = 0; b < 2; ++b) {
      if (b == 1) emit("nanoc.Else", node.name + "/else", {}, {});
      const size_t first = graph_.nodes.size();
      std::vector<Value*> results = spliceGraph(*node.subgraphs[b], captures);
      for (size_t j = 0; j < node.outputs.size(); ++j) {
        Value* out = node.outputs[j];
        if (Node* p = soleWriter(results, j, first)) {
          // The branch's own node writes the If's result: no copy.
          for (Value*& v : p->outputs)
            if (v == results[j]) v = out;
          if (b == 0) out->producer = p;
          continue;
        }
        Node* c = copy(results[j], out,
                       node.name + (b == 0 ? "/then_out" : "/else_out") + std::to_string(j));
        if (b == 0) out->producer = c;
      }
    }
    emit("nanoc.EndIf", node.name + "/end", node.outputs, {});
  }

  // The node that may write branch result `j` straight into the If's result:
  // the one node among those the branch placed (from `first` on) that
  // defines it, where nothing else there reads it (nested markers included),
  // it is no other result, and the plan does not make it a view (Reshape) or
  // write into it in place (Concat). Null when a copy is needed.
  Node* soleWriter(const std::vector<Value*>& results, size_t j, size_t first) const {
    const Value* r = results[j];
    for (size_t k = 0; k < results.size(); ++k)
      if (k != j && results[k] == r) return nullptr;
    Node* writer = nullptr;
    for (size_t n = first; n < graph_.nodes.size(); ++n) {
      Node* node = graph_.nodes[n].get();
      for (const Value* in : node->inputs)
        if (in == r) return nullptr;
      for (const Value* o : node->outputs)
        if (o == r) {
          if (writer) return nullptr;
          writer = node;
        }
    }
    if (!writer || writer != r->producer || writer->op == "Reshape" || writer->op == "Concat")
      return nullptr;
    return writer;
  }

  // The value whose memory `v` is: through the Reshapes the plan makes views.
  static const Value* rootOf(const Value* v) {
    while (v->producer && v->producer->op == "Reshape" && !v->producer->inputs.empty())
      v = v->producer->inputs[0];
    return v;
  }

  void spliceLoop(Node& node) {
    const size_t carried = static_cast<size_t>(node.i("num_carried"));
    if (node.subgraphs.size() != 1 || node.inputs.size() < 2 + carried)
      throw CompileError("internal error: Loop '" + node.name + "' is malformed");
    Value* m = node.inputs[0];
    Value* cond = node.inputs[1];
    const std::vector<Value*> captures(node.inputs.begin() + 2 + static_cast<long>(carried),
                                       node.inputs.end());
    // The state: the Loop's outputs, and a bool for the condition.
    std::vector<Value*> state = node.outputs;
    for (size_t k = 0; k < carried; ++k)
      state[k]->producer =
          copy(node.inputs[2 + k], state[k], node.name + "/init" + std::to_string(k));
    Value* cond_state = nullptr;
    if (cond) {
      cond_state = fresh(node.name + "/cond", {DType::Bool, {}});
      cond_state->producer = copy(cond, cond_state, node.name + "/init_cond");
    }
    Value* iteration = fresh(node.name + "/iteration", {DType::I64, {}});
    Node* begin = emit("nanoc.Loop", node.name, {m, cond_state}, {iteration});
    begin->attrs["max_trips"] = node.i("max_trips");
    iteration->producer = begin;
    // Without a condition input the body's condition input is true and
    // what it computes is ignored (ONNX Loop).
    Value* cond_in = cond_state;
    if (!cond_in) {
      cond_in = graph_.addConstant(node.name + "/true", {DType::Bool, {}}, {1});
      value_names_.insert(cond_in->name);
    }
    std::vector<Value*> bound = {iteration, cond_in};
    bound.insert(bound.end(), state.begin(), state.end());
    bound.insert(bound.end(), captures.begin(), captures.end());
    std::vector<Value*> results = spliceGraph(*node.subgraphs[0], bound);
    // A Scan's accumulator updated by nanoc.ScanWrite is written in place:
    // the kernel's result is the state itself, so no copy follows.
    for (size_t k = 0; k < carried; ++k) {
      Value* r = results[1 + k];
      Node* write = r->producer;
      if (r != state[k] && write && write->op == "nanoc.ScanWrite" &&
          write->inputs[0] == state[k]) {
        write->outputs[0] = state[k];
        results[1 + k] = state[k];
      }
    }
    // Next iteration's state: a parallel assignment, so a source that shares
    // memory with any state value is copied aside first.
    std::vector<std::pair<Value*, Value*>> moves;  // (source, state)
    if (cond_state) moves.emplace_back(results[0], cond_state);
    for (size_t k = 0; k < carried; ++k) moves.emplace_back(results[1 + k], state[k]);
    std::set<const Value*> targets;
    for (const auto& [from, to] : moves) targets.insert(to);
    for (auto& [from, to] : moves) {
      if (from == to || !targets.count(rootOf(from))) continue;
      Value* aside = fresh(to->name + "_next", to->type);
      aside->producer = copy(from, aside, node.name + "/next_" + to->name);
      from = aside;
    }
    for (const auto& [from, to] : moves)
      if (from != to) copy(from, to, node.name + "/carry_" + to->name);
    std::vector<Value*> alive = state;
    if (cond_state) alive.push_back(cond_state);
    alive.push_back(iteration);
    emit("nanoc.EndLoop", node.name + "/end", alive, {});
  }

  Graph& graph_;
  std::set<std::string> value_names_, node_names_;
  std::map<const void*, Value*> constants_;  // by their bytes
};

}  // namespace

bool hasControlFlow(const Graph& graph) {
  for (const auto& node : graph.nodes)
    if (!node->subgraphs.empty()) return true;
  return false;
}

void flattenControlFlow(Graph& graph) {
  if (!hasControlFlow(graph)) return;
  Splicer(graph).run();
}

}  // namespace nanoc
