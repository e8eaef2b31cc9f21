// What one ONNX node's mapping sees (its proto, resolved inputs, attributes
// with opset-specific defaults) and how it emits canonical IR nodes. Each
// mapping in onnx_op_mappings.cc is a function of a NodeImporter.
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/error.h"
#include "compiler/ir/graph.h"

namespace nanoc::onnx_import {

// What NodeImporter::fail throws: the full message, and the reason alone so
// that the importer can list it under the node's name, op and opset.
class NodeError : public CompileError {
 public:
  NodeError(const std::string& message, std::string reason)
      : CompileError(message), reason_(std::move(reason)) {}
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

// Nodes whose inputs are all constants are evaluated as they are imported
// when their outputs are at most this large, so that the mappings after them
// see constants (a Reshape's shape computed by Shape -> Gather -> Concat).
constexpr uint64_t kImportFoldBytes = uint64_t{1} << 20;

// ConstantOfShape and Range make constants of sizes the model computes. Their
// total is bounded, so that a small hostile model cannot ask for any amount of
// memory: twice what a model file (protobuf's 2 GiB) can hold.
constexpr uint64_t kMaxMadeConstantBytes = uint64_t{4} << 30;

// The model's running total of those constants, against its limit
// (OnnxImportOptions::max_made_constant_bytes, kMaxMadeConstantBytes unless
// the caller asks for less: the fuzzers do).
struct MadeConstantBudget {
  uint64_t used = 0;
  uint64_t limit = kMaxMadeConstantBytes;
};

// Names the model itself uses. The helper values and nodes a mapping adds
// (e.g. the Reshapes around a legacy Softmax) take fresh names outside these
// sets, so every model value keeps its exact name in the IR.
struct ModelNames {
  std::set<std::string> values, nodes;
  // A name derived from `hint` that is in neither the model nor an earlier
  // fresh() result of the same set; it is added to `taken`.
  static std::string fresh(std::set<std::string>& taken, const std::string& hint);
};

class NodeImporter {
 public:
  // `inputs` are the IR values of proto's inputs, null where the name is empty
  // (an absent optional input). `used_names` holds every value name that some
  // node or graph output reads, so a mapping can ignore unread extra outputs.
  // `made_constants` is the model's running total for
  // reserveMadeConstant.
  NodeImporter(Graph& graph, const onnx::NodeProto& proto, std::string name, int64_t opset,
               std::vector<Value*> inputs, const std::set<std::string>& used_names,
               ModelNames& names, MadeConstantBudget& made_constants);

  const onnx::NodeProto& proto() const { return proto_; }
  const std::string& name() const { return name_; }
  int64_t opset() const { return opset_; }
  Graph& graph() { return graph_; }

  size_t numInputs() const { return inputs_.size(); }
  // Input `i`, or null when absent (beyond the list or an empty name).
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  // Input `i`, which must be present; `role` names it in the error ("W").
  Value* requiredInput(size_t i, const char* role) const;

  // Attribute readers; a present attribute of the wrong type is an error.
  bool hasAttr(std::string_view key) const { return findAttr(key) != nullptr; }
  std::optional<int64_t> intAttr(std::string_view key) const;
  int64_t intAttr(std::string_view key, int64_t fallback) const;
  std::optional<double> floatAttr(std::string_view key) const;
  double floatAttr(std::string_view key, double fallback) const;
  std::optional<std::vector<int64_t>> intsAttr(std::string_view key) const;
  std::optional<std::string> stringAttr(std::string_view key) const;
  const onnx::AttributeProto* findAttr(std::string_view key) const;

  // Whether output `i` exists with a name that something reads.
  bool outputUsed(size_t i) const;

  // Appends IR node `op`, types it with shape inference and returns its one
  // output; when every input is a constant, it folds the node (see
  // kImportFoldBytes) and the output is that constant. The node is named after this ONNX node, with
  // "/suffix" for the helper nodes of a multi-node mapping; the output is named `output_name` (a
  // model value name) or, when empty, a fresh name after the node.
  Value* emit(const std::string& op, std::vector<Value*> inputs, std::map<std::string, Attr> attrs,
              const std::string& suffix = "", const std::string& output_name = "");
  // Emits `op` as the producer of the model's output 0, which names its value.
  void emitResult(const std::string& op, std::vector<Value*> inputs,
                  std::map<std::string, Attr> attrs = {}, const std::string& suffix = "");
  // Counts `bytes` of a constant this node makes (ConstantOfShape, Range)
  // against the model's budget (MadeConstantBudget); fails beyond it,
  // naming `what` ("output f32[4096,25088]").
  void reserveMadeConstant(uint64_t bytes, const std::string& what);
  // A constant helper value (Gather's indices), named after the node and
  // `suffix`.
  Value* constant(const std::string& suffix, const TensorType& type, std::vector<uint8_t> bytes);
  // Defines the model's output `i` as a constant under its model name.
  void setConstantOutput(size_t i, const TensorType& type, std::vector<uint8_t> bytes);

  // The IR value for the model's output `i`; outputs left null are not
  // defined (mappings leave unread extra outputs null).
  void setOutput(size_t i, Value* value);
  const std::vector<Value*>& outputs() const { return outputs_; }

  // Throws NodeError: "node 'NAME' (OP, opset N): message".
  [[noreturn]] void fail(const std::string& message) const;

 private:
  Graph& graph_;
  const onnx::NodeProto& proto_;
  std::string name_;
  int64_t opset_;
  std::vector<Value*> inputs_;
  const std::set<std::string>& used_names_;
  ModelNames& names_;
  MadeConstantBudget& made_constants_;
  std::vector<Value*> outputs_;
};

using OpMapping = void (*)(NodeImporter&);

// The mapping for a default-domain ONNX op type, or null when unsupported.
OpMapping findOpMapping(std::string_view op_type);

// Converts an ONNX float attribute to the IR's double by its shortest decimal
// form, so 1e-5f prints as 1e-05 rather than 9.99999974737875e-06 and still
// rounds back to the same float.
double floatToAttr(float value);

}  // namespace nanoc::onnx_import
