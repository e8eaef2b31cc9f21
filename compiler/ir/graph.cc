#include "compiler/ir/graph.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>

#include "compiler/ir/error.h"
#include "compiler/ir/op_registry.h"

namespace nanoc {

int64_t TensorType::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string TensorType::str() const {
  std::string s(dtypeName(dtype));
  s += '[';
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(dims[i]);
  }
  s += ']';
  return s;
}

namespace {

[[noreturn]] void attrError(const Node& node, const std::string& key, const char* what) {
  throw CompileError("node '" + node.name + "' (" + node.op + "): attribute '" + key + "' " + what);
}

template <typename T>
const T& getAttr(const Node& node, const std::string& key, const char* type_name) {
  auto it = node.attrs.find(key);
  if (it == node.attrs.end()) attrError(node, key, "is missing");
  const T* value = std::get_if<T>(&it->second);
  if (!value) attrError(node, key, (std::string("is not ") + type_name).c_str());
  return *value;
}

}  // namespace

int64_t Node::i(const std::string& key) const { return getAttr<int64_t>(*this, key, "an int"); }
double Node::f(const std::string& key) const {
  // An integral literal is accepted where a float is expected.
  auto it = attrs.find(key);
  if (it != attrs.end())
    if (const int64_t* v = std::get_if<int64_t>(&it->second)) return static_cast<double>(*v);
  return getAttr<double>(*this, key, "a float");
}
const std::string& Node::s(const std::string& key) const {
  return getAttr<std::string>(*this, key, "a string");
}
const std::vector<int64_t>& Node::ints(const std::string& key) const {
  return getAttr<std::vector<int64_t>>(*this, key, "a list of ints");
}
const std::vector<double>& Node::floats(const std::string& key) const {
  return getAttr<std::vector<double>>(*this, key, "a list of floats");
}
int64_t Node::i(const std::string& key, int64_t fallback) const {
  return has(key) ? i(key) : fallback;
}
double Node::f(const std::string& key, double fallback) const {
  return has(key) ? f(key) : fallback;
}

namespace {

// `counts` holds every name handed out; for a base name it also holds the next
// suffix to try (std::map references stay valid across inserts).
std::string uniqueIn(std::map<std::string, int>& counts, const std::string& hint) {
  std::string base = hint.empty() ? "v" : hint;
  if (!counts.count(base)) {
    counts[base] = 1;
    return base;
  }
  int& next = counts[base];
  std::string name;
  do name = base + "_" + std::to_string(next++);
  while (counts.count(name));
  counts[name] = 1;
  return name;
}

}  // namespace

std::string Graph::uniqueName(const std::string& hint) { return uniqueIn(name_counts_, hint); }
std::string Graph::uniqueNodeName(const std::string& hint) {
  return uniqueIn(node_name_counts_, hint);
}

Value* Graph::newValue(const std::string& hint) {
  auto value = std::make_unique<Value>();
  value->id = next_id_++;
  value->name = uniqueName(hint);
  values.push_back(std::move(value));
  return values.back().get();
}

Value* Graph::adoptValue(std::unique_ptr<Value> value, std::set<std::string>& taken) {
  value->id = next_id_++;
  if (taken.count(value->name)) value->name = uniqueName(value->name);
  name_counts_.emplace(value->name, 1);
  taken.insert(value->name);
  values.push_back(std::move(value));
  return values.back().get();
}

Node* Graph::adoptNode(std::unique_ptr<Node> node, std::set<std::string>& taken) {
  if (taken.count(node->name)) node->name = uniqueNodeName(node->name);
  node_name_counts_.emplace(node->name, 1);
  taken.insert(node->name);
  nodes.push_back(std::move(node));
  return nodes.back().get();
}

Value* Graph::addInput(const std::string& name, const TensorType& type) {
  Value* v = newValue(name);
  v->type = type;
  v->typed = true;
  inputs.push_back(v);
  return v;
}

std::vector<uint8_t> f32Bytes(const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

bool f32ScalarConstant(const Value* v, double& out) {
  if (!v || !v->isConstant() || v->type.dtype != DType::F32 || v->type.numel() != 1) return false;
  out = v->as<float>()[0];
  return true;
}

std::map<const Value*, int> countUses(const Graph& graph) {
  std::map<const Value*, int> uses;
  for (const auto& node : graph.nodes)
    for (const Value* in : node->inputs)
      if (in) ++uses[in];
  for (const Value* out : graph.outputs) ++uses[out];
  return uses;
}

Value* Graph::addConstant(const std::string& name, const TensorType& type,
                          std::vector<uint8_t> bytes) {
  if (bytes.size() != type.bytes())
    throw CompileError("constant '" + name + "' of type " + type.str() + " has " +
                       std::to_string(bytes.size()) + " bytes, expected " +
                       std::to_string(type.bytes()));
  Value* v = newValue(name);
  v->type = type;
  v->typed = true;
  v->data = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  return v;
}

Node* Graph::addNode(const std::string& op, const std::string& name, std::vector<Value*> in,
                     size_t num_outputs, const std::vector<std::string>& output_names) {
  if (nodes.size() >= max_nodes)
    throw CompileError("the graph would have more than " + std::to_string(max_nodes) +
                       " nodes (node '" + name + "', " + op +
                       "); nanoc compiles graphs up to that size, recurrences unrolled");
  auto node = std::make_unique<Node>();
  node->op = op;
  node->name = uniqueNodeName(name.empty() ? op : name);
  node->inputs = std::move(in);
  for (size_t i = 0; i < num_outputs; ++i) {
    std::string hint = i < output_names.size() && !output_names[i].empty()
                           ? output_names[i]
                           : node->name + (num_outputs > 1 ? "_" + std::to_string(i) : "");
    Value* v = newValue(hint);
    v->producer = node.get();
    node->outputs.push_back(v);
  }
  nodes.push_back(std::move(node));
  return nodes.back().get();
}

void Graph::replaceAllUses(Value* from, Value* to) {
  for (auto& node : nodes)
    for (Value*& v : node->inputs)
      if (v == from) v = to;
  for (Value*& v : outputs)
    if (v == from) v = to;
}

void Graph::removeUnusedValues() {
  std::set<const Value*> used(inputs.begin(), inputs.end());
  used.insert(outputs.begin(), outputs.end());
  for (auto& node : nodes) {
    used.insert(node->inputs.begin(), node->inputs.end());
    used.insert(node->outputs.begin(), node->outputs.end());
  }
  std::erase_if(values, [&](const std::unique_ptr<Value>& v) { return !used.count(v.get()); });
}

void verifyGraph(const Graph& graph) {
  std::set<const Value*> defined;
  std::set<std::string> value_names, node_names;
  auto fail = [](const std::string& msg) { throw CompileError("invalid IR: " + msg); };
  for (const auto& v : graph.values) {
    if (!value_names.insert(v->name).second) fail("value name '" + v->name + "' is not unique");
    if (!v->typed) fail("value '" + v->name + "' has no type");
    for (int64_t d : v->type.dims)
      if (d < 0) fail("value '" + v->name + "' has a negative dim in " + v->type.str());
    if (v->isConstant()) {
      if (v->data->size() != v->type.bytes())
        fail("constant '" + v->name + "' holds " + std::to_string(v->data->size()) +
             " bytes, its type " + v->type.str() + " needs " + std::to_string(v->type.bytes()));
      defined.insert(v.get());
    }
  }
  for (const Value* v : graph.inputs) {
    if (v->producer || v->isConstant()) fail("graph input '" + v->name + "' is not a plain input");
    defined.insert(v);
  }
  for (const auto& node : graph.nodes) {
    std::string where = "node '" + node->name + "' (" + node->op + ")";
    if (!node_names.insert(node->name).second) fail(where + ": node name is not unique");
    const OpSchema* schema = findOp(node->op);
    if (!schema) fail(where + ": unknown op");
    int n = static_cast<int>(node->inputs.size());
    if (n < schema->min_inputs || n > schema->max_inputs)
      fail(where + ": has " + std::to_string(n) + " inputs, expected " +
           std::to_string(schema->min_inputs) + ".." + std::to_string(schema->max_inputs));
    if (schema->num_outputs >= 0 && static_cast<int>(node->outputs.size()) != schema->num_outputs)
      fail(where + ": has " + std::to_string(node->outputs.size()) + " outputs, expected " +
           std::to_string(schema->num_outputs));
    for (const Value* in : node->inputs)
      if (in && !defined.count(in))
        fail(where + ": operand '" + in->name + "' is used before it is defined");
    for (const Value* out : node->outputs) {
      if (out->producer != node.get())
        fail(where + ": output '" + out->name + "' has another producer");
      if (!defined.insert(out).second)
        fail(where + ": output '" + out->name + "' is defined twice");
    }
    // The shape rule also checks attributes and operand types.
    std::vector<TensorType> expected = schema->infer(*node);
    for (size_t i = 0; i < node->outputs.size(); ++i)
      if (!(expected[i] == node->outputs[i]->type))
        fail(where + ": output '" + node->outputs[i]->name + "' has type " +
             node->outputs[i]->type.str() + ", the shape rule gives " + expected[i].str());
  }
  for (const Value* v : graph.outputs)
    if (!defined.count(v)) fail("graph output '" + v->name + "' is never defined");
  for (const auto& node : graph.nodes)
    for (const auto& sub : node->subgraphs) {
      if (!sub) fail("node '" + node->name + "' (" + node->op + ") has a null subgraph");
      verifyGraph(*sub);
    }
}

}  // namespace nanoc
