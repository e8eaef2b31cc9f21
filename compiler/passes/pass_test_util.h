// Helpers of the passes' tests (header-only, tests only): a graph run by its
// ops' references, distinct constant weights, and lookups of its nodes.
#pragma once

#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ir/text.h"

namespace nanoc::testing {

// The graph's outputs for input x (its one f32 input), every node run by its
// op's reference.
inline std::vector<std::vector<float>> evaluateByReferences(const Graph& g,
                                                            const std::vector<float>& x) {
  std::map<const Value*, std::vector<uint8_t>> memory;
  memory[g.inputs[0]] = f32Bytes(x);
  for (const auto& node : g.nodes) {
    std::vector<const void*> in;
    std::vector<void*> out;
    for (const Value* v : node->inputs)
      in.push_back(!v ? nullptr : v->isConstant() ? v->data->data() : memory.at(v).data());
    for (const Value* v : node->outputs) {
      memory[v].resize(v->type.bytes());
      out.push_back(memory[v].data());
    }
    findOp(node->op)->reference(*node, in, out);
  }
  std::vector<std::vector<float>> outputs;
  for (const Value* v : g.outputs) {
    const std::vector<uint8_t>& bytes = memory.at(v);
    outputs.emplace_back(bytes.size() / sizeof(float));
    std::memcpy(outputs.back().data(), bytes.data(), bytes.size());
  }
  return outputs;
}

// Sets f32 constant v's elements to at(0), at(1), ... (row-major): distinct
// weights, so that one read from the wrong place shows.
inline void setF32Constant(Value& v, const std::function<float(size_t)>& at) {
  std::vector<float> w(static_cast<size_t>(v.type.numel()));
  for (size_t i = 0; i < w.size(); ++i) w[i] = at(i);
  v.data = std::make_shared<const std::vector<uint8_t>>(f32Bytes(w));
}

// The number of nodes of op `op`.
inline size_t countOps(const Graph& g, const std::string& op) {
  size_t n = 0;
  for (const auto& node : g.nodes) n += node->op == op;
  return n;
}

// The node named `name`, or null.
inline const Node* nodeNamed(const Graph& g, const std::string& name) {
  for (const auto& node : g.nodes)
    if (node->name == name) return node.get();
  return nullptr;
}

}  // namespace nanoc::testing
