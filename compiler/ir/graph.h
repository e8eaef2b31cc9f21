// The typed graph IR: static shapes, values in SSA form, nodes kept in a
// topological order. The op set and each op's canonical attributes are
// documented in compiler/ops/README.md; the frontend produces exactly that
// canonical form (every attribute explicit, no defaults left implicit).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "compiler/ir/dtype.h"

namespace nanoc {

struct Node;
class Graph;

struct TensorType {
  DType dtype = DType::F32;
  std::vector<int64_t> dims;  // row-major, all static, each >= 0; rank 0 = scalar

  int64_t numel() const;
  uint64_t bytes() const { return static_cast<uint64_t>(numel()) * dtypeSize(dtype); }
  size_t rank() const { return dims.size(); }
  bool operator==(const TensorType& other) const = default;
  std::string str() const;  // "f32[1,3,8,8]", "f32[]" for a scalar
};

// A tensor value. Exactly one of: a graph input, a constant (data != null),
// or the output of `producer`.
struct Value {
  int id = 0;        // unique within its graph, stable for printing
  std::string name;  // unique within its graph
  TensorType type;
  bool typed = false;  // false until shape inference set `type`
  Node* producer = nullptr;
  std::shared_ptr<const std::vector<uint8_t>> data;  // constants only; type.bytes() bytes

  bool isConstant() const { return data != nullptr; }
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(data->data());
  }
};

using Attr = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;

struct Node {
  std::string op;              // registered op name, e.g. "Conv" (compiler/ops)
  std::string name;            // unique within its graph; from the model where it had one
  std::vector<Value*> inputs;  // a null entry is an absent optional input
  std::vector<Value*> outputs;
  std::map<std::string, Attr> attrs;  // sorted, so printing is deterministic
  // Control flow decided at run time (If, Loop: compiler/ops/control_flow.cc):
  // the graphs the node runs, each self-contained (what it reads from
  // outside is one of its inputs, bound to the node's operands). Passes see
  // the node as one opaque op; runPipeline runs on these graphs first, and
  // flattenControlFlow (passes/control_flow.h) splices them in before the
  // arena plan.
  std::vector<std::shared_ptr<Graph>> subgraphs;

  bool has(const std::string& key) const { return attrs.count(key) != 0; }
  // Typed accessors; throw CompileError naming the node if missing or mistyped.
  int64_t i(const std::string& key) const;
  double f(const std::string& key) const;
  const std::string& s(const std::string& key) const;
  const std::vector<int64_t>& ints(const std::string& key) const;
  const std::vector<double>& floats(const std::string& key) const;
  // Same, with a default when absent.
  int64_t i(const std::string& key, int64_t fallback) const;
  double f(const std::string& key, double fallback) const;
};

// The most nodes a graph may hold, counting what the importer unrolls (an
// RNN's steps) and the passes add: a bound on the compiler's memory for a
// small model that declares a long sequence. Real exports stay far below.
constexpr size_t kMaxGraphNodes = size_t{1} << 20;

class Graph {
 public:
  std::string name = "model";
  size_t max_nodes = kMaxGraphNodes;           // addNode throws CompileError beyond it
  std::vector<std::unique_ptr<Value>> values;  // owns every value
  std::vector<std::unique_ptr<Node>> nodes;    // topological order
  std::vector<Value*> inputs;                  // entry signature order
  std::vector<Value*> outputs;                 // entry signature order

  Value* addInput(const std::string& name, const TensorType& type);
  Value* addConstant(const std::string& name, const TensorType& type, std::vector<uint8_t> bytes);
  // Appends a node with `num_outputs` untyped outputs named after `output_names`
  // (generated when empty or shorter). Names are made unique.
  Node* addNode(const std::string& op, const std::string& name, std::vector<Value*> inputs,
                size_t num_outputs, const std::vector<std::string>& output_names = {});
  // Creates a value with a fresh unique name derived from `hint`.
  Value* newValue(const std::string& hint);
  // Takes over a value or node made in another graph (control flow's
  // regions): a fresh id, and the same name unless one in `taken` (the names
  // of this graph's values, or of its nodes) has it. Nodes are appended.
  Value* adoptValue(std::unique_ptr<Value> value, std::set<std::string>& taken);
  Node* adoptNode(std::unique_ptr<Node> node, std::set<std::string>& taken);

  // Every use of `from` (node inputs and graph outputs) now uses `to`.
  void replaceAllUses(Value* from, Value* to);
  // Drops values that nothing refers to any more (not inputs, outputs, node
  // operands or results).
  void removeUnusedValues();
  // A value name not yet used in this graph, derived from `hint`.
  std::string uniqueName(const std::string& hint);
  // Same for node names, which have their own namespace.
  std::string uniqueNodeName(const std::string& hint);

 private:
  std::map<std::string, int> name_counts_, node_name_counts_;
  int next_id_ = 0;
};

// The bytes of f32 values, for Graph::addConstant (passes that compute
// weights: BatchNormalization folded into a Conv, the GEMM layouts).
std::vector<uint8_t> f32Bytes(const std::vector<float>& values);

// The value of a scalar (one-element) f32 constant, as the rewrites read
// Clip's bounds or LayerNorm's epsilon; false for anything else.
bool f32ScalarConstant(const Value* v, double& out);

// How many times each value is read: once per node input that names it and
// once per graph output it is (what the fusion passes check "read by this
// node alone, not a graph output" against).
std::map<const Value*, int> countUses(const Graph& graph);

// Checks the IR invariants: topological order, every operand defined before
// use, unique names, every value typed, every op registered with the right
// arity and attributes it requires, constants sized to their type. Throws
// CompileError listing the first violation with the node's name and op.
void verifyGraph(const Graph& graph);

}  // namespace nanoc
