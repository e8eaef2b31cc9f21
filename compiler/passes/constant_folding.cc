#include "compiler/passes/constant_folding.h"

#include "compiler/ir/op_registry.h"

namespace nanoc {

bool foldNode(Node& node, uint64_t max_bytes) {
  const OpSchema* schema = findOp(node.op);
  if (!schema || !schema->reference) return false;
  // If and Loop are left to run time: a Loop's iterations are bounded only
  // by its max_trips, and an If on a constant is inlined by the importer.
  if (!node.subgraphs.empty()) return false;
  // A fill of zeros (a Scan's accumulators) is cheaper as a kernel than as
  // its bytes in the object.
  if (node.op == "nanoc.Zeros") return false;
  uint64_t out_bytes = 0;
  for (const Value* in : node.inputs)
    if (in && !in->isConstant()) return false;
  for (const Value* out : node.outputs) out_bytes += out->type.bytes();
  if (out_bytes > max_bytes) return false;
  // An empty tensor's bytes still get a real address: the references pass
  // them to memcpy, which must not see null even for 0 bytes.
  alignas(64) static const uint8_t kNoBytesIn[64] = {};
  alignas(64) uint8_t no_bytes_out[64];
  std::vector<const void*> in_ptrs;
  for (const Value* in : node.inputs)
    in_ptrs.push_back(!in ? nullptr : in->data->empty() ? kNoBytesIn : in->data->data());
  std::vector<std::vector<uint8_t>> results;
  std::vector<void*> out_ptrs;
  for (const Value* out : node.outputs) results.emplace_back(out->type.bytes());
  for (auto& r : results) out_ptrs.push_back(r.empty() ? no_bytes_out : r.data());
  schema->reference(node, in_ptrs, out_ptrs);
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    // The output value itself becomes the constant, so its name and every
    // use (graph outputs included) stay as they were.
    Value* out = node.outputs[i];
    out->producer = nullptr;
    out->data = std::make_shared<const std::vector<uint8_t>>(std::move(results[i]));
  }
  return true;
}

int foldConstants(Graph& graph, uint64_t max_bytes) {
  int folded = 0;
  std::vector<std::unique_ptr<Node>> kept;
  for (auto& node : graph.nodes) {
    if (foldNode(*node, max_bytes))
      ++folded;
    else
      kept.push_back(std::move(node));
  }
  graph.nodes = std::move(kept);
  return folded;
}

}  // namespace nanoc
