// Control flow decided at run time: If and Loop, each with its graphs in
// Node::subgraphs (self-contained: what a graph reads from outside is one of
// its inputs). The ONNX importer inlines an If whose condition is a
// constant and unrolls a Loop whose trip count and condition are; these
// two ops are what is left. passes/control_flow.h splices the graphs into
// the node sequence before the arena plan, and the program runs them as
// nested thunk sequences (schema/program.fbs: IfThunk, LoopThunk).
//
//   If(cond, captures...) -> (outputs...)
//     subgraphs [then, else]: inputs = the captures' types, outputs = the
//     node's types (both branches alike). cond: one bool.
//
//   Loop(M, cond, initial..., captures...) -> (finals...)
//     attributes num_carried (the count of initial values), max_trips (the
//     most iterations a run may take: more is a run-time error).
//     M: one int64 or absent; cond: one bool or absent (absent both: it
//     would never stop, refused). subgraphs [body]: inputs = (iteration
//     int64[], cond bool[], carried..., captures...), outputs = (cond bool[],
//     carried...), each carried value of its initial value's type.
#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <string>

#include "compiler/ir/error.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

namespace {

bool isOneOf(const TensorType& t, DType dtype) { return t.dtype == dtype && t.numel() == 1; }

void expectType(const Node& node, const TensorType& have, const TensorType& want,
                const std::string& what) {
  if (!(have == want)) failNode(node, what + " is " + have.str() + ", expected " + want.str());
}

const Graph& subgraph(const Node& node, size_t i, size_t count) {
  if (node.subgraphs.size() != count)
    failNode(node, "has " + std::to_string(node.subgraphs.size()) + " subgraphs, expected " +
                       std::to_string(count));
  if (!node.subgraphs[i]) failNode(node, "has a null subgraph");
  return *node.subgraphs[i];
}

// Runs `g` on the host with each node's reference implementation: inputs
// and outputs dense buffers of the graph's types.
void evaluateGraph(const Graph& g, const std::vector<const void*>& inputs,
                   const std::vector<void*>& outputs) {
  alignas(64) static const uint8_t kNoBytes[64] = {};
  std::map<const Value*, const void*> at;
  std::map<const Value*, std::vector<uint8_t>> made;
  for (size_t i = 0; i < g.inputs.size(); ++i) at[g.inputs[i]] = inputs[i];
  for (const auto& v : g.values)
    if (v->isConstant()) at[v.get()] = v->data->empty() ? kNoBytes : v->data->data();
  for (const auto& node : g.nodes) {
    const OpSchema* schema = findOp(node->op);
    if (!schema || !schema->reference)
      throw CompileError("node '" + node->name + "' (" + node->op + ") has no reference");
    std::vector<const void*> in;
    for (const Value* v : node->inputs) in.push_back(v ? at.at(v) : nullptr);
    std::vector<void*> out;
    for (const Value* v : node->outputs) {
      std::vector<uint8_t>& bytes = made[v];
      bytes.resize(std::max<uint64_t>(v->type.bytes(), 1));
      out.push_back(bytes.data());
      at[v] = bytes.data();
    }
    schema->reference(*node, in, out);
  }
  for (size_t j = 0; j < g.outputs.size(); ++j)
    if (const uint64_t bytes = g.outputs[j]->type.bytes())
      std::memcpy(outputs[j], at.at(g.outputs[j]), bytes);
}

OpSchema makeIfSchema() {
  OpSchema schema;
  schema.name = "If";
  schema.min_inputs = 1;
  schema.max_inputs = 1 << 20;
  schema.num_outputs = -1;
  schema.infer = [](const Node& node) {
    const TensorType& cond = inputType(node, 0);
    if (!isOneOf(cond, DType::Bool))
      failNode(node, "condition is " + cond.str() + ", not one bool");
    std::vector<TensorType> out;
    for (size_t b = 0; b < 2; ++b) {
      const Graph& g = subgraph(node, b, 2);
      const std::string branch = b == 0 ? "then branch" : "else branch";
      if (g.inputs.size() + 1 != node.inputs.size())
        failNode(node, branch + " takes " + std::to_string(g.inputs.size()) + " inputs, the node " +
                           std::to_string(node.inputs.size() - 1) + " captures");
      for (size_t i = 0; i < g.inputs.size(); ++i)
        expectType(node, inputType(node, i + 1), g.inputs[i]->type, "capture " + std::to_string(i));
      if (g.outputs.size() != node.outputs.size())
        failNode(node, branch + " has " + std::to_string(g.outputs.size()) + " outputs, the node " +
                           std::to_string(node.outputs.size()));
      for (size_t i = 0; i < g.outputs.size(); ++i) {
        if (b == 0)
          out.push_back(g.outputs[i]->type);
        else
          expectType(node, g.outputs[i]->type, out[i],
                     "else branch's output " + std::to_string(i) + " (the then branch's type)");
      }
    }
    return out;
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const bool cond = *static_cast<const uint8_t*>(in[0]) != 0;
    evaluateGraph(*node.subgraphs[cond ? 0 : 1], std::vector<const void*>(in.begin() + 1, in.end()),
                  out);
  };
  return schema;
}

OpSchema makeLoopSchema() {
  OpSchema schema;
  schema.name = "Loop";
  schema.min_inputs = 2;
  schema.max_inputs = 1 << 20;
  schema.num_outputs = -1;
  schema.infer = [](const Node& node) {
    const int64_t carried = node.i("num_carried");
    if (node.i("max_trips") < 1) failNode(node, "max_trips must be at least 1");
    if (carried < 0 || static_cast<size_t>(carried) + 2 > node.inputs.size())
      failNode(node, "num_carried " + std::to_string(carried) + " does not fit its " +
                         std::to_string(node.inputs.size()) + " inputs");
    if (!node.inputs[0] && !node.inputs[1])
      failNode(node, "has neither a trip count nor a condition");
    if (node.inputs[0] && !isOneOf(inputType(node, 0), DType::I64))
      failNode(node, "trip count is " + inputType(node, 0).str() + ", not one int64");
    if (node.inputs[1] && !isOneOf(inputType(node, 1), DType::Bool))
      failNode(node, "condition is " + inputType(node, 1).str() + ", not one bool");
    const Graph& body = subgraph(node, 0, 1);
    const size_t captures = node.inputs.size() - 2 - static_cast<size_t>(carried);
    if (body.inputs.size() != 2 + static_cast<size_t>(carried) + captures)
      failNode(node, "body takes " + std::to_string(body.inputs.size()) + " inputs, expected " +
                         std::to_string(2 + carried + static_cast<int64_t>(captures)));
    if (body.outputs.size() != 1 + static_cast<size_t>(carried))
      failNode(node, "body has " + std::to_string(body.outputs.size()) + " outputs, expected " +
                         std::to_string(1 + carried));
    expectType(node, body.inputs[0]->type, {DType::I64, {}}, "body's iteration number");
    expectType(node, body.inputs[1]->type, {DType::Bool, {}}, "body's condition input");
    expectType(node, body.outputs[0]->type, {DType::Bool, {}}, "body's condition output");
    std::vector<TensorType> out;
    for (size_t k = 0; k < static_cast<size_t>(carried); ++k) {
      const TensorType& init = inputType(node, 2 + k);
      if (!node.inputs[2 + k])
        failNode(node, "loop-carried value " + std::to_string(k) + " is absent");
      expectType(node, body.inputs[2 + k]->type, init,
                 "body input of carried value " + std::to_string(k));
      expectType(node, body.outputs[1 + k]->type, init,
                 "body output of carried value " + std::to_string(k));
      out.push_back(init);
    }
    for (size_t j = 0; j < captures; ++j) {
      const size_t at = 2 + static_cast<size_t>(carried) + j;
      expectType(node, body.inputs[at]->type, inputType(node, at), "capture " + std::to_string(j));
    }
    if (node.outputs.size() != out.size())
      failNode(node, "has " + std::to_string(node.outputs.size()) + " outputs, its " +
                         std::to_string(carried) + " loop-carried values");
    return out;
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const size_t carried = static_cast<size_t>(node.i("num_carried"));
    const Graph& body = *node.subgraphs[0];
    int64_t trips = std::numeric_limits<int64_t>::max();
    if (in[0]) std::memcpy(&trips, in[0], sizeof trips);
    uint8_t cond = in[1] ? *static_cast<const uint8_t*>(in[1]) : 1;
    std::vector<std::vector<uint8_t>> state(carried), next(1 + carried);
    for (size_t k = 0; k < carried; ++k) {
      const uint8_t* init = static_cast<const uint8_t*>(in[2 + k]);
      state[k].assign(init, init + node.outputs[k]->type.bytes());
    }
    for (int64_t i = 0; i < trips && (cond || !in[1]); ++i) {
      if (i >= node.i("max_trips"))
        failNode(node,
                 "runs past its bound of " + std::to_string(node.i("max_trips")) + " iterations");
      std::vector<const void*> body_in = {&i, &cond};
      for (auto& s : state) body_in.push_back(s.data());
      body_in.insert(body_in.end(), in.begin() + 2 + static_cast<long>(carried), in.end());
      std::vector<void*> body_out;
      next[0].assign(1, 0);
      body_out.push_back(next[0].data());
      for (size_t k = 0; k < carried; ++k) {
        next[1 + k].assign(std::max<uint64_t>(state[k].size(), 1), 0);
        body_out.push_back(next[1 + k].data());
      }
      evaluateGraph(body, body_in, body_out);
      cond = next[0][0];
      for (size_t k = 0; k < carried; ++k)
        state[k].assign(next[1 + k].begin(),
                        next[1 + k].begin() + static_cast<long>(state[k].size()));
    }
    for (size_t k = 0; k < carried; ++k)
      if (!state[k].empty()) std::memcpy(out[k], state[k].data(), state[k].size());
  };
  return schema;
}

// nanoc.ScanWrite(acc, value, iteration) {reverse} -> acc with slice
// `iteration` (T - 1 - iteration with reverse) along axis 0 replaced by
// value: how a Scan run as a Loop stacks its scan outputs. An index outside
// [0, T) writes nothing. In a spliced loop the result is the accumulator
// itself (passes/control_flow.cc), so the kernel writes one slice in place.
OpSchema makeScanWriteSchema() {
  OpSchema schema;
  schema.name = "nanoc.ScanWrite";
  schema.min_inputs = 3;
  schema.max_inputs = 3;
  schema.infer = [](const Node& node) {
    const TensorType& acc = inputType(node, 0);
    const TensorType& value = inputType(node, 1);
    const int64_t reverse = node.i("reverse");
    if (reverse != 0 && reverse != 1) failNode(node, "reverse must be 0 or 1");
    std::vector<int64_t> dims = value.dims;
    if (acc.rank() == 0) failNode(node, "accumulator is a scalar");
    dims.insert(dims.begin(), acc.dims[0]);
    expectType(node, acc, {value.dtype, dims}, "accumulator");
    expectType(node, inputType(node, 2), {DType::I64, {}}, "iteration");
    return std::vector<TensorType>{acc};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const TensorType& acc = node.inputs[0]->type;
    if (acc.bytes() != 0 && out[0] != in[0]) std::memcpy(out[0], in[0], acc.bytes());
    int64_t i = 0;
    std::memcpy(&i, in[2], sizeof i);
    const int64_t length = acc.dims[0];
    const int64_t at = node.i("reverse") ? length - 1 - i : i;
    const uint64_t slice = node.inputs[1]->type.bytes();
    if (at >= 0 && at < length && slice != 0)
      std::memcpy(static_cast<uint8_t*>(out[0]) + static_cast<uint64_t>(at) * slice, in[1], slice);
  };
  return schema;
}

// nanoc.Zeros {dtype, shape} -> zeros: a Scan's accumulators before the
// loop. Never folded (constant_folding.cc): the kernel is cheaper than its
// bytes in the object.
OpSchema makeZerosSchema() {
  OpSchema schema;
  schema.name = "nanoc.Zeros";
  schema.min_inputs = 0;
  schema.max_inputs = 0;
  schema.infer = [](const Node& node) {
    const int64_t dtype = node.i("dtype");
    if (dtype < 0 || dtype > static_cast<int64_t>(DType::F8E5M2FNUZ))
      failNode(node, "attribute 'dtype' (" + std::to_string(dtype) + ") is not a dtype");
    for (int64_t d : node.ints("shape"))
      if (d < 0) failNode(node, "shape has a negative dim");
    return std::vector<TensorType>{{static_cast<DType>(dtype), node.ints("shape")}};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>&,
                        const std::vector<void*>& out) {
    if (const uint64_t bytes = node.outputs[0]->type.bytes()) std::memset(out[0], 0, bytes);
  };
  return schema;
}

}  // namespace

std::vector<OpSchema> controlFlowSchemas() {
  return {makeIfSchema(), makeLoopSchema(), makeScanWriteSchema(), makeZerosSchema()};
}

}  // namespace nanoc
