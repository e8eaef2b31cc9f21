#include "compiler/frontend/onnx/onnx_node_importer.h"

#include <algorithm>
#include <charconv>

#include "compiler/frontend/onnx/onnx_tensor.h"
#include "compiler/ir/error.h"
#include "compiler/passes/constant_folding.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc::onnx_import {

NodeImporter::NodeImporter(Graph& graph, const onnx::NodeProto& proto, std::string name,
                           int64_t opset, std::vector<Value*> inputs,
                           const std::set<std::string>& used_names, ModelNames& names,
                           MadeConstantBudget& made_constants)
    : graph_(graph),
      proto_(proto),
      name_(std::move(name)),
      opset_(opset),
      inputs_(std::move(inputs)),
      used_names_(used_names),
      names_(names),
      made_constants_(made_constants),
      outputs_(static_cast<size_t>(proto.output_size()), nullptr) {}

void NodeImporter::fail(const std::string& message) const {
  throw NodeError("node '" + name_ + "' (" + proto_.op_type() + ", opset " +
                      std::to_string(opset_) + "): " + message,
                  message);
}

Value* NodeImporter::requiredInput(size_t i, const char* role) const {
  Value* v = input(i);
  if (!v) fail(std::string("input ") + std::to_string(i) + " (" + role + ") is missing");
  return v;
}

const onnx::AttributeProto* NodeImporter::findAttr(std::string_view key) const {
  for (const onnx::AttributeProto& a : proto_.attribute())
    if (a.name() == key) return &a;
  return nullptr;
}

namespace {

// Models from early exporters leave AttributeProto.type unset; then the field
// that holds a value says what it is.
bool isType(const onnx::AttributeProto& a, onnx::AttributeProto::AttributeType type,
            bool field_present) {
  return a.type() == type || (a.type() == onnx::AttributeProto::UNDEFINED && field_present);
}

}  // namespace

std::optional<int64_t> NodeImporter::intAttr(std::string_view key) const {
  const onnx::AttributeProto* a = findAttr(key);
  if (!a) return std::nullopt;
  if (!isType(*a, onnx::AttributeProto::INT, a->has_i()))
    fail("attribute '" + std::string(key) + "' is not an int");
  return a->i();
}

int64_t NodeImporter::intAttr(std::string_view key, int64_t fallback) const {
  return intAttr(key).value_or(fallback);
}

std::optional<double> NodeImporter::floatAttr(std::string_view key) const {
  const onnx::AttributeProto* a = findAttr(key);
  if (!a) return std::nullopt;
  if (!isType(*a, onnx::AttributeProto::FLOAT, a->has_f()))
    fail("attribute '" + std::string(key) + "' is not a float");
  return floatToAttr(a->f());
}

double NodeImporter::floatAttr(std::string_view key, double fallback) const {
  return floatAttr(key).value_or(fallback);
}

std::optional<std::vector<int64_t>> NodeImporter::intsAttr(std::string_view key) const {
  const onnx::AttributeProto* a = findAttr(key);
  if (!a) return std::nullopt;
  if (!isType(*a, onnx::AttributeProto::INTS, a->ints_size() > 0))
    fail("attribute '" + std::string(key) + "' is not a list of ints");
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::optional<std::string> NodeImporter::stringAttr(std::string_view key) const {
  const onnx::AttributeProto* a = findAttr(key);
  if (!a) return std::nullopt;
  if (!isType(*a, onnx::AttributeProto::STRING, a->has_s()))
    fail("attribute '" + std::string(key) + "' is not a string");
  return a->s();
}

bool NodeImporter::outputUsed(size_t i) const {
  return i < static_cast<size_t>(proto_.output_size()) &&
         !proto_.output(static_cast<int>(i)).empty() &&
         used_names_.count(proto_.output(static_cast<int>(i))) != 0;
}

std::string ModelNames::fresh(std::set<std::string>& taken, const std::string& hint) {
  std::string name = hint;
  for (int i = 1; taken.count(name); ++i) name = hint + "_" + std::to_string(i);
  taken.insert(name);
  return name;
}

Value* NodeImporter::emit(const std::string& op, std::vector<Value*> inputs,
                          std::map<std::string, Attr> attrs, const std::string& suffix,
                          const std::string& output_name) {
  std::string node_name =
      suffix.empty() ? name_ : ModelNames::fresh(names_.nodes, name_ + "/" + suffix);
  std::string value_name =
      output_name.empty() ? ModelNames::fresh(names_.values, node_name) : output_name;
  Node* node = graph_.addNode(op, node_name, std::move(inputs), 1, {value_name});
  node->attrs = std::move(attrs);
  // Typed right away: later mappings (Reshape, Flatten, auto_pad) read their
  // inputs' shapes.
  inferNode(*node);
  // Broadcasting can multiply sizes; keep every later dim product in range.
  Value* out = node->outputs[0];
  checkedNumel(out->type.dims, out->type.dtype,
               "node '" + node->name + "' (" + op + ") output " + out->type.str());
  // addNode appended the node, so folding it removes the last one.
  if (foldNode(*node, kImportFoldBytes)) graph_.nodes.pop_back();
  return out;
}

void NodeImporter::emitResult(const std::string& op, std::vector<Value*> inputs,
                              std::map<std::string, Attr> attrs, const std::string& suffix) {
  if (proto_.output_size() < 1 || proto_.output(0).empty()) fail("has no output");
  setOutput(0, emit(op, std::move(inputs), std::move(attrs), suffix, proto_.output(0)));
}

void NodeImporter::reserveMadeConstant(uint64_t bytes, const std::string& what) {
  const uint64_t limit = made_constants_.limit;
  if (bytes > limit - std::min(limit, made_constants_.used))
    fail(what +
         " would take the constants that nanoc makes at compile time (ConstantOfShape, "
         "Range, recurrences' zero states) past " +
         (limit >= (uint64_t{1} << 30) && limit % (uint64_t{1} << 30) == 0
              ? std::to_string(limit >> 30) + " GiB"
              : std::to_string(limit) + " bytes"));
  made_constants_.used += bytes;
}

Value* NodeImporter::constant(const std::string& suffix, const TensorType& type,
                              std::vector<uint8_t> bytes) {
  return graph_.addConstant(ModelNames::fresh(names_.values, name_ + "/" + suffix), type,
                            std::move(bytes));
}

void NodeImporter::setConstantOutput(size_t i, const TensorType& type, std::vector<uint8_t> bytes) {
  if (i >= outputs_.size() || proto_.output(static_cast<int>(i)).empty())
    fail("has no output " + std::to_string(i));
  setOutput(i, graph_.addConstant(proto_.output(static_cast<int>(i)), type, std::move(bytes)));
}

void NodeImporter::setOutput(size_t i, Value* value) {
  if (i >= outputs_.size()) fail("has no output " + std::to_string(i));
  outputs_[i] = value;
}

double floatToAttr(float value) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  double d = value;
  if (ec == std::errc()) std::from_chars(buf, end, d);
  return d;
}

}  // namespace nanoc::onnx_import
