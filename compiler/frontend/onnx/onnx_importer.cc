#include "compiler/frontend/onnx/onnx_importer.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "compiler/frontend/onnx/onnx_node_importer.h"
#include "compiler/frontend/onnx/onnx_tensor.h"
#include "compiler/ir/error.h"

namespace nanoc {
namespace {

using onnx_import::ModelNames;
using onnx_import::NodeImporter;

bool isDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

struct Opsets {
  int64_t default_domain = 0;  // 0: the model imports no default-domain opset
  std::map<std::string, int64_t> others;

  std::string versionFor(const std::string& domain) const {
    if (isDefaultDomain(domain)) return default_domain ? std::to_string(default_domain) : "none";
    auto it = others.find(domain);
    return it == others.end() ? "?" : std::to_string(it->second);
  }
};

Opsets readOpsets(const onnx::ModelProto& model) {
  Opsets opsets;
  bool found = false;
  for (const onnx::OperatorSetIdProto& id : model.opset_import()) {
    if (isDefaultDomain(id.domain())) {
      if (!found || id.version() > opsets.default_domain) opsets.default_domain = id.version();
      found = true;
    } else {
      opsets.others[id.domain()] = id.version();
    }
  }
  if (!found) {
    // Models before IR version 3 predate opset_import and mean opset 1. A
    // later model without the default domain (only ai.onnx.ml or a training
    // domain) has no default-domain node to import; any it has is refused.
    if (model.ir_version() < 3) opsets.default_domain = 1;
    return opsets;
  }
  if (opsets.default_domain < 1)
    throw CompileError("opset " + std::to_string(opsets.default_domain) + " is not valid");
  return opsets;
}

// The IR prints the graph name as an identifier; exporters use any string
// ("torch-jit-export").
std::string graphName(const std::string& onnx_name) {
  std::string name;
  for (char c : onnx_name)
    name += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return name.empty() ? "model" : name;
}

std::string opName(const onnx::NodeProto& node) {
  return isDefaultDomain(node.domain()) ? node.op_type() : node.domain() + "." + node.op_type();
}

// ---- the graph's structure ----

// What defines a value name: a graph input, an initializer or a node.
struct Definer {
  enum Kind { kInput, kInitializer, kNode } kind;
  int node = -1;  // for kNode
};

class Structure {
 public:
  Structure(const onnx::GraphProto& g, const std::vector<std::string>& node_names)
      : g_(g), node_names_(node_names) {}

  // Every value defined exactly once, and every node input defined by a graph
  // input, an initializer or an earlier node. Throws naming the nodes.
  void check() {
    std::set<std::string> inputs;
    for (const onnx::ValueInfoProto& in : g_.input()) {
      if (in.name().empty()) throw CompileError("a graph input has no name");
      if (!inputs.insert(in.name()).second)
        throw CompileError("graph input '" + in.name() + "' is listed twice");
      defs_[in.name()] = {Definer::kInput};
    }
    std::set<std::string> initializers;
    for (const onnx::TensorProto& init : g_.initializer()) {
      if (init.name().empty()) throw CompileError("an initializer has no name");
      if (!initializers.insert(init.name()).second)
        throw CompileError("initializer '" + init.name() + "' is defined twice");
      // An input of the same name is the initializer's declaration.
      defs_[init.name()] = {Definer::kInitializer};
    }
    for (int i = 0; i < g_.node_size(); ++i)
      for (const std::string& out : g_.node(i).output()) {
        if (out.empty()) continue;
        auto [it, fresh] = defs_.emplace(out, Definer{Definer::kNode, i});
        if (!fresh)
          throw CompileError("value '" + out + "' is defined twice: by " + describe(it->second) +
                             " and by " + describe(Definer{Definer::kNode, i}));
      }
    for (int i = 0; i < g_.node_size(); ++i)
      for (const std::string& in : g_.node(i).input()) {
        if (in.empty()) continue;
        auto it = defs_.find(in);
        if (it == defs_.end())
          throw CompileError(describe(Definer{Definer::kNode, i}) + " reads '" + in +
                             "', which is not a graph input, an initializer or any node's output");
        if (it->second.kind == Definer::kNode && it->second.node >= i) outOfOrder(i, in);
      }
    for (const onnx::ValueInfoProto& out : g_.output())
      if (!defs_.count(out.name()))
        throw CompileError("graph output '" + out.name() + "' is not defined by any node");
  }

 private:
  std::string describe(const Definer& d) const {
    if (d.kind == Definer::kInput) return "a graph input";
    if (d.kind == Definer::kInitializer) return "an initializer";
    return "node '" + node_names_[static_cast<size_t>(d.node)] + "' (" + opName(g_.node(d.node)) +
           ")";
  }
  std::string describeNode(int i) const { return describe(Definer{Definer::kNode, i}); }

  // The nodes that define node i's inputs.
  std::vector<int> producers(int i) const {
    std::vector<int> out;
    for (const std::string& in : g_.node(i).input()) {
      auto it = defs_.find(in);
      if (!in.empty() && it != defs_.end() && it->second.kind == Definer::kNode)
        out.push_back(it->second.node);
    }
    return out;
  }

  // Node i reads `value`, which a later node (or i itself) defines: a cycle,
  // or nodes out of the topological order ONNX requires.
  [[noreturn]] void outOfOrder(int i, const std::string& value) const {
    const int n = g_.node_size();
    // Kahn's algorithm: the nodes it cannot order are on a cycle or after one.
    std::vector<int> pending(static_cast<size_t>(n), 0);
    std::vector<std::vector<int>> consumers(static_cast<size_t>(n));
    for (int c = 0; c < n; ++c)
      for (int p : producers(c)) {
        ++pending[static_cast<size_t>(c)];
        consumers[static_cast<size_t>(p)].push_back(c);
      }
    std::vector<int> ready;
    for (int c = 0; c < n; ++c)
      if (pending[static_cast<size_t>(c)] == 0) ready.push_back(c);
    while (!ready.empty()) {
      int p = ready.back();
      ready.pop_back();
      for (int c : consumers[static_cast<size_t>(p)])
        if (--pending[static_cast<size_t>(c)] == 0) ready.push_back(c);
    }
    int stuck = -1;
    for (int c = 0; c < n && stuck < 0; ++c)
      if (pending[static_cast<size_t>(c)] > 0) stuck = c;
    if (stuck < 0)
      throw CompileError(describeNode(i) + " reads '" + value + "' before " +
                         describe(defs_.at(value)) +
                         " defines it: ONNX requires nodes in topological order (onnx.checker "
                         "rejects this model too)");
    // Every unordered node has an unordered producer; walking producers from
    // one must come back around the cycle.
    std::vector<int> path;
    std::map<int, size_t> seen;
    int at = stuck;
    while (!seen.count(at)) {
      seen[at] = path.size();
      path.push_back(at);
      for (int p : producers(at))
        if (pending[static_cast<size_t>(p)] > 0) {
          at = p;
          break;
        }
    }
    // The path runs against the data flow; the cycle is printed along it,
    // from its first node in the model's order.
    std::vector<int> cycle(path.rbegin(), path.rend() - static_cast<ptrdiff_t>(seen[at]));
    std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
    std::string text;
    for (int c : cycle) text += describeNode(c) + " -> ";
    throw CompileError("the graph has a cycle: " + text + describeNode(cycle[0]));
  }

  const onnx::GraphProto& g_;
  const std::vector<std::string>& node_names_;
  std::map<std::string, Definer> defs_;
};

// ---- graph inputs ----

// The open dims of the graph inputs, in one error that says how to fix them.
std::string openDimsMessage(const std::vector<onnx_import::OpenDim>& open,
                            const std::map<std::string, TensorType>& types) {
  std::set<std::string> params;
  bool all_named = true;
  std::vector<std::string> inputs;  // in order, once each
  for (const onnx_import::OpenDim& d : open) {
    if (inputs.empty() || inputs.back() != d.input) inputs.push_back(d.input);
    if (d.param.empty())
      all_named = false;
    else
      params.insert(d.param);
  }
  std::string shape_flags;
  for (const std::string& in : inputs) {
    std::string dims;
    for (int64_t d : types.at(in).dims) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    shape_flags += (shape_flags.empty() ? "" : " ") + ("--input-shape " + in + "=" + dims);
  }
  std::string dim_flags;
  for (const std::string& p : params)
    dim_flags += (dim_flags.empty() ? "" : " ") + ("--dim " + p + "=1");
  std::string fix = all_named ? dim_flags + " or " + shape_flags : shape_flags;
  auto dimText = [](const onnx_import::OpenDim& d) {
    return "input '" + d.input + "' dim " + std::to_string(d.index) +
           (d.param.empty() ? " is unknown" : " is symbolic ('" + d.param + "')");
  };
  if (open.size() == 1)
    return dimText(open[0]) + ": nanoc needs static shapes; fix it with " + fix +
           " (1 stands for the size you will run with)";
  std::string list;
  for (const onnx_import::OpenDim& d : open) list += (list.empty() ? "" : ", ") + dimText(d);
  return std::to_string(open.size()) + " input dims are open (" + list +
         "): nanoc needs static shapes; fix them with " + fix +
         " (1 stands for the sizes you will run with)";
}

// --input-shape and --dim must name what the model has: a typo would
// otherwise leave a dim open, or silently do nothing.
void checkOptions(const onnx::GraphProto& g, const std::set<std::string>& initializers,
                  const OnnxImportOptions& options) {
  std::string inputs;
  std::set<std::string> params;
  for (const onnx::ValueInfoProto& in : g.input()) {
    if (initializers.count(in.name())) continue;
    inputs += (inputs.empty() ? "" : ", ") + in.name();
    if (in.type().has_tensor_type() && in.type().tensor_type().has_shape())
      for (const onnx::TensorShapeProto::Dimension& d : in.type().tensor_type().shape().dim())
        if (d.has_dim_param()) params.insert(d.dim_param());
  }
  for (const auto& [name, dims] : options.input_shapes) {
    if (initializers.count(name))
      throw CompileError(
          "--input-shape names '" + name +
          "', an initializer that nanoc compiles in as a constant; the inputs are: " + inputs);
    bool found = false;
    for (const onnx::ValueInfoProto& in : g.input()) found = found || in.name() == name;
    if (!found)
      throw CompileError(
          "--input-shape names '" + name +
          "', which is not a graph input; the inputs are: " + (inputs.empty() ? "(none)" : inputs));
  }
  for (const auto& [name, bytes] : options.bound_inputs) {
    bool found = false;
    for (const onnx::ValueInfoProto& in : g.input())
      found = found || (in.name() == name && !initializers.count(name));
    if (!found)
      throw CompileError(
          "--bind names '" + name +
          "', which is not a graph input; the inputs are: " + (inputs.empty() ? "(none)" : inputs));
    if (options.input_shapes.count(name))
      throw CompileError("--bind and --input-shape both name '" + name + "'");
  }
  for (const auto& [param, value] : options.dim_params) {
    if (params.count(param)) continue;
    std::string known;
    for (const std::string& p : params) known += (known.empty() ? "" : ", ") + p;
    throw CompileError("--dim " + param + " names no symbolic dim of the graph inputs (" +
                       (known.empty() ? "they have none" : "they have: " + known) + ")");
  }
}

// ---- the nodes ----

// A node nanoc cannot import: an unsupported op, or a mapping that failed.
struct NodeProblem {
  std::string line;  // "node 'n' (Foo, opset 13): reason"
  std::string op;
  bool unsupported_op = false;
};

// A CompileError's message without the "node 'NAME' (...): " that repeats
// what the problem's line says.
std::string reasonOf(const std::string& message, const std::string& node_name) {
  std::string prefix = "node '" + node_name + "' (";
  if (message.rfind(prefix, 0) == 0) {
    size_t colon = message.find("): ", prefix.size());
    if (colon != std::string::npos) return message.substr(colon + 3);
  }
  return message;
}

// Every problem in one error: the first line says it all for one node and
// sums up many; the last points to how operators are added.
std::string problemsMessage(const std::vector<NodeProblem>& problems, int skipped) {
  std::string message;
  if (problems.size() == 1) {
    message = problems[0].line;
  } else {
    std::map<std::string, int> unsupported, failed;
    for (const NodeProblem& p : problems) ++(p.unsupported_op ? unsupported : failed)[p.op];
    auto counts = [](const std::map<std::string, int>& per_op) {
      std::string s;
      for (const auto& [op, count] : per_op)
        s += (s.empty() ? "" : ", ") + op + " x" + std::to_string(count);
      return s;
    };
    std::string summary;
    if (!unsupported.empty()) summary = "unsupported operators: " + counts(unsupported);
    if (!failed.empty())
      summary += (summary.empty() ? "" : "; ") + ("other problems: " + counts(failed));
    message = std::to_string(problems.size()) + " nodes cannot be imported (" + summary + "):";
    for (const NodeProblem& p : problems) message += "\n  " + p.line;
  }
  if (skipped > 0)
    message += "\n  (" + std::to_string(skipped) + " later node" + (skipped == 1 ? "" : "s") +
               " reading their results were not checked)";
  return message +
         "\nto add an operator or extend one, see docs/ADDING_AN_OPERATOR.md; which operators "
         "nanoc covers, and how far: docs/CONFORMANCE.md";
}

// A declared type (of a graph output, or of an input that an initializer
// defines) against the type the value has: `what` names the value, `has`
// says where its type comes from ("computes", "its initializer is").
void checkDeclaredType(const onnx::ValueInfoProto& info, const TensorType& type,
                       const std::string& what, const std::string& has) {
  if (!info.has_type() || info.type().value_case() == onnx::TypeProto::VALUE_NOT_SET) return;
  if (!info.type().has_tensor_type())
    throw CompileError(what + " is " + onnx_import::nonTensorKind(info.type()) +
                       ": nanoc supports tensors only");
  const onnx::TypeProto::Tensor& t = info.type().tensor_type();
  std::string declared;
  bool ok = true;
  if (t.elem_type() != onnx::TensorProto::UNDEFINED) {
    std::optional<DType> dtype = onnx_import::dtypeFromOnnx(t.elem_type());
    ok = dtype == type.dtype;
    declared = dtype ? std::string(dtypeName(*dtype)) : onnx_import::onnxTypeName(t.elem_type());
  } else {
    declared = "?";
  }
  if (t.has_shape()) {
    // Symbolic and unknown dims in an output's declaration are fine: the
    // inputs fixed them. Only static dims are compared.
    ok = ok && t.shape().dim_size() == static_cast<int>(type.rank());
    declared += "[";
    for (int i = 0; i < t.shape().dim_size(); ++i) {
      const onnx::TensorShapeProto::Dimension& d = t.shape().dim(i);
      declared += (i ? "," : "") + (d.has_dim_value()   ? std::to_string(d.dim_value())
                                    : d.has_dim_param() ? d.dim_param()
                                                        : "?");
      if (ok && d.has_dim_value()) ok = d.dim_value() == type.dims[static_cast<size_t>(i)];
    }
    declared += "]";
  }
  if (!ok) throw CompileError(what + " is declared " + declared + " but " + has + " " + type.str());
}

// The values a node can read: its graph's, then those of the graphs around
// it (an If branch reads the enclosing graph's values by name).
struct Scope {
  std::map<std::string, Value*> values;  // null: its producer could not be imported
  const Scope* outer = nullptr;

  // The entry for `name` here or further out; null when no scope has one.
  Value* const* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->outer)
      if (auto it = s->values.find(name); it != s->values.end()) return &it->second;
    return nullptr;
  }
};

// Why the importer has nothing for `node`, or "" when it has.
std::string unsupportedReason(const onnx::NodeProto& node, const Opsets& opsets) {
  bool known = isDefaultDomain(node.domain()) &&
               (node.op_type() == "If" || node.op_type() == "Loop" || node.op_type() == "Scan" ||
                onnx_import::findOpMapping(node.op_type()));
  if (known)
    return opsets.default_domain == 0 ? "the model imports no opset of the default ONNX domain"
                                      : "";
  const std::string& op = node.op_type();
  if (isDefaultDomain(node.domain()) &&
      (op.rfind("Sequence", 0) == 0 || op.rfind("Optional", 0) == 0 || op == "SplitToSequence" ||
       op == "ConcatFromSequence"))
    return "unsupported operator: nanoc compiles tensors only, not sequences or optionals";
  if (isDefaultDomain(node.domain()) &&
      (op == "NonZero" || op == "Unique" || op == "NonMaxSuppression"))
    return "unsupported operator: its output's shape depends on the input data, and nanoc "
           "compiles static shapes only (docs/STATUS.md)";
  return "unsupported operator";
}

// Imports a graph's nodes in order into the IR graph: the model's own, and
// the branches of the If nodes it inlines. A node that cannot be imported
// leaves its outputs null in the scope; the nodes that read them are
// skipped, and every problem is kept for one error at the end.
class NodeSequenceImporter {
 public:
  NodeSequenceImporter(Graph& graph, const Opsets& opsets, ModelNames& names,
                       const std::set<std::string>& used_names, uint64_t made_constant_limit)
      : graph_(graph), opsets_(opsets), names_(names), used_names_(used_names) {
    made_constants_.limit = made_constant_limit;
  }

  // `node_names` holds the IR name of each node.
  void importNodes(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes,
                   const std::vector<std::string>& node_names, Scope& scope) {
    for (int i = 0; i < nodes.size(); ++i)
      importNode(nodes.Get(i), node_names[static_cast<size_t>(i)], scope);
  }

  std::vector<NodeProblem> problems;
  int skipped = 0;  // nodes not tried because an input's producer failed

 private:
  std::string nodeLine(const onnx::NodeProto& node, const std::string& name) const {
    return "node '" + name + "' (" + opName(node) + ", opset " + opsets_.versionFor(node.domain()) +
           ")";
  }

  void importNode(const onnx::NodeProto& node, const std::string& name, Scope& scope) {
    auto poison = [&] {
      for (const std::string& out : node.output())
        if (!out.empty()) scope.values[out] = nullptr;
    };
    if (std::string why = unsupportedReason(node, opsets_); !why.empty()) {
      problems.push_back({nodeLine(node, name) + ": " + why, opName(node), true});
      poison();
      return;
    }
    std::vector<Value*> inputs;
    bool readable = true;
    for (const std::string& in : node.input()) {
      Value* const* v = in.empty() ? nullptr : scope.find(in);
      // The model's graph is checked up front (Structure); a branch is not.
      if (!in.empty() && !v)
        throw CompileError("node '" + name + "' (" + opName(node) + ") reads '" + in +
                           "', which is not defined before it");
      readable = readable && (in.empty() || *v);
      inputs.push_back(v ? *v : nullptr);
    }
    if (!readable) {
      ++skipped;
      poison();
      return;
    }
    const size_t nodes_before = graph_.nodes.size();
    const size_t problems_before = problems.size();
    std::optional<std::string> reason;
    try {
      NodeImporter importer(graph_, node, name, opsets_.default_domain, std::move(inputs),
                            used_names_, names_, made_constants_);
      if (node.op_type() == "If" || node.op_type() == "Loop" || node.op_type() == "Scan") {
        bool imported = node.op_type() == "If"     ? inlineIf(importer, scope)
                        : node.op_type() == "Loop" ? unrollLoop(importer, scope)
                                                   : unrollScan(importer, scope);
        if (!imported) {
          poison();  // a node of the branch or body failed; it is listed itself
          return;
        }
      } else {
        onnx_import::findOpMapping(node.op_type())(importer);
      }
      for (int j = 0; j < node.output_size(); ++j) {
        const std::string& out = node.output(j);
        if (out.empty()) continue;
        Value* v = importer.outputs()[static_cast<size_t>(j)];
        if (!v && used_names_.count(out)) importer.fail("output '" + out + "' is not supported");
        scope.values[out] = v;
      }
    } catch (const onnx_import::NodeError& e) {
      reason = e.reason();
    } catch (const CompileError& e) {
      reason = reasonOf(e.what(), name);
    }
    if (reason) {
      problems.resize(problems_before);  // a branch's, superseded by its If's
      problems.push_back({nodeLine(node, name) + ": " + *reason, opName(node), false});
      graph_.nodes.resize(nodes_before);  // what the mapping emitted before it failed
      poison();
    }
  }

  // If with a constant condition is its taken branch: the branch's nodes are
  // imported in its place, named "IF/NODE". Returns false when a node of the
  // branch could not be imported.
  bool inlineIf(NodeImporter& n, const Scope& scope) {
    Value* cond = n.requiredInput(0, "cond");
    if (cond->type.dtype != DType::Bool || cond->type.numel() != 1)
      n.fail("condition '" + cond->name + "' is " + cond->type.str() + ", not one bool");
    if (!cond->isConstant()) return runtimeIf(n, scope, cond);
    const char* key = (*cond->data)[0] ? "then_branch" : "else_branch";
    const onnx::GraphProto& body = ifBranch(n, key);

    const size_t values_before = n.graph().values.size();
    std::optional<std::vector<Value*>> outs =
        importBody(n, body, {}, bodyConstants(n, body, key), n.name() + "/", scope, key);
    if (!outs) return false;
    std::set<Value*> made_here = valuesSince(n, values_before);
    for (size_t j = 0; j < outs->size(); ++j) setBodyOutput(n, j, (*outs)[j], made_here);
    return true;
  }

  // The nodes and values imported since the graph had `nodes_before` and
  // `values_before` of them (one If branch or one Loop body, imported in
  // place), moved into a graph of their own named `name`, whose outputs are
  // `results`. `leading` (placeholders the caller made for a Loop body's own
  // inputs) become its first inputs, in order. A constant it reads from
  // outside becomes a constant of its own (sharing the bytes); any other
  // value from outside is left in place and added to `captures` (in order of
  // first use; addCaptureInputs makes them inputs once every branch is in).
  static std::shared_ptr<Graph> moveRegion(Graph& from, size_t nodes_before, size_t values_before,
                                           const std::string& name,
                                           const std::vector<Value*>& leading,
                                           const std::vector<Value*>& results,
                                           std::vector<Value*>& captures) {
    auto sub = std::make_shared<Graph>();
    sub->name = name;
    sub->max_nodes = from.max_nodes;
    std::set<std::string> value_names, node_names;
    std::set<const Value*> owned;
    for (size_t k = values_before; k < from.values.size(); ++k)
      owned.insert(sub->adoptValue(std::move(from.values[k]), value_names));
    from.values.resize(values_before);
    for (size_t k = nodes_before; k < from.nodes.size(); ++k)
      sub->adoptNode(std::move(from.nodes[k]), node_names);
    from.nodes.resize(nodes_before);
    sub->outputs = results;
    std::map<Value*, Value*> local;
    for (Value* v : leading) {
      Value* in = sub->addInput(v->name, v->type);
      local[v] = in;
      owned.insert(in);
    }
    auto bind = [&](Value* v) {
      if (!v || owned.count(v) || local.count(v)) return;
      if (v->isConstant()) {
        Value* c = sub->newValue(v->name);
        c->type = v->type;
        c->typed = true;
        c->data = v->data;
        local[v] = c;
        owned.insert(c);
      } else if (std::find(captures.begin(), captures.end(), v) == captures.end()) {
        captures.push_back(v);
      }
    };
    for (const auto& node : sub->nodes)
      for (Value* in : node->inputs) bind(in);
    for (Value* out : sub->outputs) bind(out);
    for (const auto& [outer, inner] : local) sub->replaceAllUses(outer, inner);
    return sub;
  }

  // Makes each of `captures` an input of `sub`, after its own, and what read
  // it from outside read that input.
  static void addCaptureInputs(Graph& sub, const std::vector<Value*>& captures) {
    for (Value* c : captures) sub.replaceAllUses(c, sub.addInput(c->name, c->type));
  }

  // A placeholder for one of a Loop body's own inputs while the body is
  // imported: typed, neither constant nor produced, so nothing folds it.
  static Value* placeholder(NodeImporter& n, const std::string& hint, const TensorType& type) {
    Value* v = n.graph().newValue(n.name() + "/" + hint);
    v->type = type;
    v->typed = true;
    return v;
  }

  static void dropPlaceholders(NodeImporter& n, const std::vector<Value*>& placeholders) {
    std::set<const Value*> drop(placeholders.begin(), placeholders.end());
    std::erase_if(n.graph().values,
                  [&](const std::unique_ptr<Value>& v) { return drop.count(v.get()) != 0; });
  }

  // If on a condition computed at run time: an IR If whose two graphs are
  // the branches, each imported on its own and moved out of the model's
  // graph; what they read from around the If becomes the node's operands.
  bool runtimeIf(NodeImporter& n, const Scope& scope, Value* cond) {
    std::vector<std::shared_ptr<Graph>> branches;
    std::vector<Value*> captures;
    for (const char* key : {"then_branch", "else_branch"}) {
      const onnx::GraphProto& body = ifBranch(n, key);
      const size_t nodes_before = n.graph().nodes.size();
      const size_t values_before = n.graph().values.size();
      const std::string prefix = n.name() + "/" + (key[0] == 't' ? "then" : "else") + "/";
      std::optional<std::vector<Value*>> outs =
          importBody(n, body, {}, bodyConstants(n, body, key), prefix, scope, key);
      if (!outs) return false;
      branches.push_back(moveRegion(n.graph(), nodes_before, values_before, n.name() + "/" + key,
                                    {}, *outs, captures));
    }
    for (size_t j = 0; j < branches[0]->outputs.size(); ++j)
      if (!(branches[0]->outputs[j]->type == branches[1]->outputs[j]->type))
        n.fail("output " + std::to_string(j) + " is " + branches[0]->outputs[j]->type.str() +
               " in then_branch but " + branches[1]->outputs[j]->type.str() +
               " in else_branch; nanoc needs one static type per output");
    for (auto& branch : branches) addCaptureInputs(*branch, captures);
    std::vector<Value*> inputs = {cond};
    inputs.insert(inputs.end(), captures.begin(), captures.end());
    std::vector<std::string> names;
    for (const std::string& out : n.proto().output()) names.push_back(out);
    Node* node = n.graph().addNode("If", n.name(), inputs, names.size(), names);
    node->subgraphs = std::move(branches);
    for (size_t j = 0; j < node->outputs.size(); ++j) {
      node->outputs[j]->type = node->subgraphs[0]->outputs[j]->type;
      node->outputs[j]->typed = true;
      if (!names[j].empty()) n.setOutput(j, node->outputs[j]);
    }
    return true;
  }

  // The most iterations a run-time Loop may take when its trip count is not
  // a constant: past it, nanort_run fails (LoopThunk.max_trips).
  static constexpr int64_t kRunTimeLoopMaxTrips = (int64_t{1} << 31) - 1;

  // Loop whose trip count or condition is known only at run time: an IR
  // Loop whose graph is the body, imported once with placeholders for the
  // iteration number, the condition and the loop-carried values.
  bool runtimeLoop(NodeImporter& n, const Scope& scope, const onnx::GraphProto& body, Value* m,
                   Value* cond, const std::vector<Value*>& initial, size_t scans) {
    if (scans > 0) {
      Value* v = m && !m->isConstant() ? m : cond;
      n.fail(std::string(v == m ? "trip count '" : "condition '") + v->name +
             "' is computed at run time" + runTimeSources(v) + ", and the Loop has " +
             std::to_string(scans) + " scan output" + (scans > 1 ? "s" : "") +
             ", whose length would then depend on the data: nanoc does not support that "
             "(compile such inputs in with --bind NAME=FILE.pb)");
    }
    if (m && (m->type.dtype != DType::I64 || m->type.numel() != 1))
      n.fail("trip count '" + m->name + "' is " + m->type.str() + ", not one int64");
    if (cond && (cond->type.dtype != DType::Bool || cond->type.numel() != 1))
      n.fail("condition '" + cond->name + "' is " + cond->type.str() + ", not one bool");
    int64_t max_trips = kRunTimeLoopMaxTrips;
    if (m && m->isConstant()) max_trips = std::max<int64_t>(1, *m->as<int64_t>());
    std::vector<Value*> leading = {placeholder(n, "iteration", {DType::I64, {}}),
                                   placeholder(n, "cond_in", {DType::Bool, {}})};
    for (size_t k = 0; k < initial.size(); ++k)
      leading.push_back(placeholder(n, "carried" + std::to_string(k), initial[k]->type));
    const size_t nodes_before = n.graph().nodes.size();
    const size_t values_before = n.graph().values.size();
    std::optional<std::vector<Value*>> outs = importBody(
        n, body, leading, bodyConstants(n, body, "body"), n.name() + "/body/", scope, "body");
    if (!outs) {
      dropPlaceholders(n, leading);
      return false;
    }
    std::vector<Value*> results(outs->begin(),
                                outs->begin() + 1 + static_cast<long>(initial.size()));
    if (results[0]->type.dtype != DType::Bool || results[0]->type.numel() != 1)
      n.fail("the condition its body computes is " + results[0]->type.str() + ", not one bool");
    if (results[0]->type.rank() != 0)
      results[0] =
          n.emit("Reshape", {results[0]}, {{"shape", std::vector<int64_t>{}}}, "body/cond_scalar");
    for (size_t k = 0; k < initial.size(); ++k)
      if (!(results[1 + k]->type == initial[k]->type))
        n.fail("loop-carried value " + std::to_string(k) + " starts as " + initial[k]->type.str() +
               " and the body makes it " + results[1 + k]->type.str() +
               "; nanoc needs one static type per loop-carried value");
    std::vector<Value*> captures;
    std::shared_ptr<Graph> sub = moveRegion(n.graph(), nodes_before, values_before,
                                            n.name() + "/body", leading, results, captures);
    addCaptureInputs(*sub, captures);
    dropPlaceholders(n, leading);
    Node* node = addLoop(n, m, cond, initial, captures, sub, max_trips);
    for (size_t k = 0; k < node->outputs.size(); ++k) setOutputNamed(n, k, node->outputs[k]);
    return true;
  }

  // The IR Loop over `body` (its inputs: iteration, cond, `carried`'s
  // values, `captures`), its results typed as the carried values' initial
  // values.
  static Node* addLoop(NodeImporter& n, Value* m, Value* cond, const std::vector<Value*>& carried,
                       const std::vector<Value*>& captures, std::shared_ptr<Graph> body,
                       int64_t max_trips) {
    std::vector<Value*> inputs = {m, cond};
    inputs.insert(inputs.end(), carried.begin(), carried.end());
    inputs.insert(inputs.end(), captures.begin(), captures.end());
    Node* node = n.graph().addNode("Loop", n.name(), inputs, carried.size());
    node->attrs["num_carried"] = static_cast<int64_t>(carried.size());
    node->attrs["max_trips"] = max_trips;
    node->subgraphs = {std::move(body)};
    for (size_t k = 0; k < carried.size(); ++k) {
      node->outputs[k]->type = carried[k]->type;
      node->outputs[k]->typed = true;
    }
    return node;
  }

  // An If's branch `key`: no inputs, as many outputs as the node.
  static const onnx::GraphProto& ifBranch(NodeImporter& n, const char* key) {
    const onnx::GraphProto& body = graphAttr(n, key);
    if (body.input_size() > 0) n.fail(std::string(key) + " has inputs; If's branches take none");
    if (body.output_size() != n.proto().output_size())
      n.fail(std::string(key) + " has " + std::to_string(body.output_size()) +
             " outputs, the node " + std::to_string(n.proto().output_size()));
    return body;
  }

  // The graph attribute `key` of the node.
  static const onnx::GraphProto& graphAttr(NodeImporter& n, const char* key) {
    const onnx::AttributeProto* attr = n.findAttr(key);
    if (!attr || !attr->has_g()) n.fail(std::string("attribute ") + key + " holds no graph");
    if (attr->g().sparse_initializer_size() > 0)
      n.fail(std::string(key) + " has sparse initializers (unsupported)");
    return attr->g();
  }

  // The initializers of `body` (an If branch, or a Loop or Scan body, named
  // `what` in errors), added to the graph once, for every iteration.
  std::map<std::string, Value*> bodyConstants(NodeImporter& n, const onnx::GraphProto& body,
                                              const std::string& what) {
    std::map<std::string, Value*> constants;
    for (const onnx::TensorProto& init : body.initializer()) {
      onnx_import::ConstantTensor t =
          onnx_import::decodeTensor(init, what + " initializer '" + init.name() + "'");
      constants[init.name()] =
          n.graph().addConstant(ModelNames::fresh(names_.values, n.name() + "/" + init.name()),
                                t.type, std::move(t.bytes));
    }
    return constants;
  }

  // `body`'s nodes imported in place of the node (an If's taken branch, or
  // one iteration of a Loop or Scan body): its inputs bound to `bound`, its
  // nodes named PREFIX + NAME ("IF/NAME", "LOOP/iK/NAME"). Returns the values
  // of its outputs, or nothing when a node of the body could not be imported
  // (that node is listed itself).
  std::optional<std::vector<Value*>> importBody(NodeImporter& n, const onnx::GraphProto& body,
                                                const std::vector<Value*>& bound,
                                                const std::map<std::string, Value*>& constants,
                                                const std::string& prefix, const Scope& scope,
                                                const std::string& what) {
    Scope inner;
    inner.outer = &scope;
    inner.values = constants;
    for (int i = 0; i < body.input_size(); ++i)
      inner.values[body.input(i).name()] = bound[static_cast<size_t>(i)];
    std::vector<std::string> body_names;
    for (int i = 0; i < body.node_size(); ++i) {
      const onnx::NodeProto& node = body.node(i);
      std::string hint =
          node.name().empty() ? node.op_type() + "_" + std::to_string(i) : node.name();
      body_names.push_back(ModelNames::fresh(names_.nodes, prefix + hint));
    }
    const size_t problems_before = problems.size();
    importNodes(body.node(), body_names, inner);
    if (problems.size() > problems_before) return std::nullopt;
    std::vector<Value*> outputs;
    for (const onnx::ValueInfoProto& out : body.output()) {
      Value* const* found = inner.find(out.name());
      if (!found) n.fail(what + " output '" + out.name() + "' is not defined");
      if (!*found) return std::nullopt;  // its producer failed, listed already
      outputs.push_back(*found);
    }
    return outputs;
  }

  // The graph inputs a value is computed from, for an error that says what to
  // compile in ("input 'limit'").
  static std::string runTimeSources(const Value* v) {
    std::set<const Value*> seen, inputs;
    std::vector<const Value*> todo = {v};
    while (!todo.empty() && seen.size() < 10000) {
      const Value* x = todo.back();
      todo.pop_back();
      if (!x || !seen.insert(x).second || x->isConstant()) continue;
      if (!x->producer)
        inputs.insert(x);
      else
        for (const Value* in : x->producer->inputs) todo.push_back(in);
    }
    std::vector<std::string> names;
    for (const Value* in : inputs) names.push_back("input '" + in->name + "'");
    std::sort(names.begin(), names.end());
    std::string text;
    for (size_t i = 0; i < names.size(); ++i)
      text += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    return text.empty() ? "" : " (from " + text + ")";
  }

  // The most iterations nanoc unrolls of one Loop or Scan. All of a model's
  // together (nested ones multiply) count against the graph's node limit,
  // as if each were a node: a body of no nodes must not loop unbounded
  // either.
  static constexpr int64_t kMaxUnrolledIterations = int64_t{1} << 16;
  size_t unrolled_iterations_ = 0;

  void countIteration(NodeImporter& n) {
    if (++unrolled_iterations_ > n.graph().max_nodes)
      n.fail("takes the model's unrolled Loop and Scan iterations past " +
             std::to_string(n.graph().max_nodes) + ", the graph's node limit");
  }

  // The name prefix of iteration k's nodes: "LOOP/iK/".
  static std::string iterationPrefix(NodeImporter& n, int64_t k) {
    return n.name() + "/i" + std::to_string(k) + "/";
  }

  // The values made since the graph had `before` of them.
  static std::set<Value*> valuesSince(NodeImporter& n, size_t before) {
    std::set<Value*> made;
    for (size_t k = before; k < n.graph().values.size(); ++k)
      made.insert(n.graph().values[k].get());
    return made;
  }

  // Output `j` of an If, Loop or Scan is `v`: a value its inlined body made
  // (in `made_here`) takes the output's name, one from outside it (or a
  // second output of the same value) is copied under it.
  void setBodyOutput(NodeImporter& n, size_t j, Value* v, std::set<Value*>& made_here) {
    const std::string& out = n.proto().output(static_cast<int>(j));
    if (out.empty()) return;
    if (made_here.erase(v)) {
      v->name = n.graph().uniqueName(out);
      n.setOutput(j, v);
    } else {
      n.setOutput(j, n.emit("Identity", {v}, {}, "output_" + std::to_string(j), out));
    }
  }

  // Per-iteration values stacked along a new axis `axis` (Loop's and Scan's
  // scan outputs): each reshaped to take a dim of 1 there, then concatenated.
  static Value* stack(NodeImporter& n, const std::vector<Value*>& pieces, int64_t axis,
                      const std::string& tag) {
    std::vector<Value*> rows;
    for (size_t k = 0; k < pieces.size(); ++k) {
      std::vector<int64_t> dims = pieces[k]->type.dims;
      dims.insert(dims.begin() + axis, 1);
      rows.push_back(
          n.emit("Reshape", {pieces[k]}, {{"shape", dims}}, tag + "_row" + std::to_string(k)));
    }
    if (rows.size() == 1) return rows[0];
    return n.emit("Concat", rows, {{"axis", axis}}, tag);
  }

  // Loop, unrolled at compile time: its trip count and condition must be
  // constants, and so must the condition the body computes, iteration by
  // iteration (constant folding as the body is imported makes them so when
  // they follow from constants). Each iteration is the body's nodes again;
  // the scan outputs are the iterations' values stacked.
  bool unrollLoop(NodeImporter& n, const Scope& scope) {
    const onnx::GraphProto& body = graphAttr(n, "body");
    const size_t num_inputs = static_cast<size_t>(n.proto().input_size());
    if (num_inputs < 2) n.fail("has " + std::to_string(num_inputs) + " inputs, needs M and cond");
    const size_t carried = num_inputs - 2;
    if (static_cast<size_t>(body.input_size()) != 2 + carried)
      n.fail("body has " + std::to_string(body.input_size()) + " inputs, the node's " +
             std::to_string(carried) + " loop-carried values need " + std::to_string(2 + carried));
    if (static_cast<size_t>(body.output_size()) < 1 + carried)
      n.fail("body has " + std::to_string(body.output_size()) + " outputs, fewer than the " +
             std::to_string(1 + carried) + " of its condition and loop-carried values");
    const size_t scans = static_cast<size_t>(body.output_size()) - 1 - carried;
    if (static_cast<size_t>(n.proto().output_size()) != carried + scans)
      n.fail("has " + std::to_string(n.proto().output_size()) + " outputs, its body makes " +
             std::to_string(carried) + " loop-carried values and " + std::to_string(scans) +
             " scan outputs");
    Value* m = n.input(0);
    Value* cond = n.input(1);
    if (!m && !cond)
      n.fail(
          "has neither a trip count nor a condition: it would run until a run-time value stops "
          "it, and nanoc unrolls Loop only when its trip count and condition are known at "
          "compile time");
    std::vector<Value*> state;
    for (size_t i = 0; i < carried; ++i)
      state.push_back(n.requiredInput(2 + i, "loop-carried initial value"));
    // A trip count or condition computed at run time: a loop at run time.
    if ((m && !m->isConstant()) || (cond && !cond->isConstant()))
      return runtimeLoop(n, scope, body, m, cond, state, scans);
    // M and cond: each a constant of one element of its dtype.
    auto constantScalar = [&](Value* v, const std::string& role, DType dtype, const char* what) {
      if (v->type.dtype != dtype || v->type.numel() != 1)
        n.fail(role + " '" + v->name + "' is " + v->type.str() + ", not one " + what);
    };
    int64_t trips = std::numeric_limits<int64_t>::max();
    if (m) {
      constantScalar(m, "trip count", DType::I64, "int64");
      trips = *m->as<int64_t>();
      // Without a condition to stop it early, a trip count past the limit
      // is refused before any iteration is unrolled.
      if (!cond && trips > kMaxUnrolledIterations)
        n.fail("trip count " + std::to_string(trips) + " is more than the " +
               std::to_string(kMaxUnrolledIterations) + " iterations nanoc unrolls");
    }
    bool go = true;
    if (cond) {
      constantScalar(cond, "condition", DType::Bool, "bool");
      go = (*cond->data)[0] != 0;
    }
    const std::vector<Value*> initial = state;
    const size_t nodes_before = n.graph().nodes.size();
    const size_t values_before = n.graph().values.size();
    const size_t iterations_before = unrolled_iterations_;
    const std::map<std::string, Value*> constants = bodyConstants(n, body, "body");
    std::vector<std::vector<Value*>> pieces(scans);
    int64_t k = 0;
    for (; k < trips && go; ++k) {
      if (k == kMaxUnrolledIterations)
        n.fail("runs more than " + std::to_string(kMaxUnrolledIterations) +
               " iterations, the most nanoc unrolls");
      countIteration(n);
      std::vector<uint8_t> iteration(sizeof(int64_t));
      std::memcpy(iteration.data(), &k, sizeof k);
      std::vector<Value*> bound = {
          n.constant("i" + std::to_string(k) + "/iteration", {DType::I64, {}}, iteration),
          n.constant("i" + std::to_string(k) + "/cond", {DType::Bool, {}}, {1})};
      bound.insert(bound.end(), state.begin(), state.end());
      std::optional<std::vector<Value*>> outs =
          importBody(n, body, bound, constants, iterationPrefix(n, k), scope, "body");
      if (!outs) return false;
      if (cond) {
        Value* c = (*outs)[0];
        if (!c->isConstant()) {
          // The body decides at run time when to stop: undo the unrolling
          // and loop at run time instead.
          n.graph().nodes.resize(nodes_before);
          n.graph().values.resize(values_before);
          unrolled_iterations_ = iterations_before;
          return runtimeLoop(n, scope, body, m, cond, initial, scans);
        }
        if (c->type.dtype != DType::Bool || c->type.numel() != 1)
          n.fail("the condition its body computes is " + c->type.str() + ", not one bool");
        go = (*c->data)[0] != 0;
      }
      for (size_t i = 0; i < carried; ++i) state[i] = (*outs)[1 + i];
      for (size_t s = 0; s < scans; ++s) pieces[s].push_back((*outs)[1 + carried + s]);
    }
    std::vector<Value*> results = state;
    for (size_t s = 0; s < scans; ++s) {
      if (pieces[s].empty())
        n.fail("runs no iteration, so scan output '" +
               n.proto().output(static_cast<int>(carried + s)) +
               "' has no element shape to be empty of");
      results.push_back(stack(n, pieces[s], 0, "scan" + std::to_string(s)));
    }
    std::set<Value*> made_here = valuesSince(n, values_before);
    for (size_t j = 0; j < results.size(); ++j) setBodyOutput(n, j, results[j], made_here);
    return true;
  }

  // A Scan longer than this many body nodes times steps runs as a loop at
  // run time (runtimeScan); a shorter one is unrolled, which lets the passes
  // fold and fuse across its steps.
  static constexpr int64_t kMaxUnrolledScanNodes = 1024;

  // Scan run as an IR Loop of `length` trips: each iteration Gathers its
  // step of every scan input (the iteration number, or length - 1 - it
  // backwards), runs the body, and nanoc.ScanWrite stores each scan output's
  // value into an accumulator [length, ...] (zeros before the loop), which
  // a Transpose after the loop moves to its scan_output_axes.
  bool runtimeScan(NodeImporter& n, const Scope& scope, const onnx::GraphProto& body,
                   int64_t length, const std::vector<Value*>& initial,
                   const std::vector<Value*>& xs, const std::vector<int64_t>& in_axes,
                   const std::vector<int64_t>& in_dirs, const std::vector<int64_t>& out_axes,
                   const std::vector<int64_t>& out_dirs) {
    const size_t states = initial.size(), scan_outputs = out_axes.size();
    std::vector<Value*> leading = {placeholder(n, "iteration", {DType::I64, {}}),
                                   placeholder(n, "cond_in", {DType::Bool, {}})};
    for (size_t k = 0; k < states; ++k)
      leading.push_back(placeholder(n, "state" + std::to_string(k), initial[k]->type));
    const size_t nodes_before = n.graph().nodes.size();
    const size_t values_before = n.graph().values.size();
    Value* iteration = leading[0];
    Value* backwards = nullptr;
    std::vector<Value*> bound(leading.begin() + 2, leading.end());
    for (size_t j = 0; j < xs.size(); ++j) {
      Value* at = iteration;
      if (in_dirs[j]) {
        if (!backwards) {
          std::vector<uint8_t> last(sizeof(int64_t));
          const int64_t l = length - 1;
          std::memcpy(last.data(), &l, sizeof l);
          backwards = n.emit("Sub", {n.constant("scan_last", {DType::I64, {}}, last), iteration},
                             {}, "scan_backwards");
        }
        at = backwards;
      }
      bound.push_back(
          n.emit("Gather", {xs[j], at}, {{"axis", in_axes[j]}}, "scan_in" + std::to_string(j)));
    }
    std::optional<std::vector<Value*>> outs = importBody(
        n, body, bound, bodyConstants(n, body, "body"), n.name() + "/body/", scope, "body");
    if (!outs) {
      dropPlaceholders(n, leading);
      return false;
    }
    std::vector<Value*> results = {n.constant("scan_go", {DType::Bool, {}}, {1})};
    for (size_t k = 0; k < states; ++k) {
      if (!((*outs)[k]->type == initial[k]->type))
        n.fail("state " + std::to_string(k) + " starts as " + initial[k]->type.str() +
               " and the body makes it " + (*outs)[k]->type.str() +
               "; nanoc needs one static type per state");
      results.push_back((*outs)[k]);
    }
    // The accumulators: placeholders made now (the body fixed their types),
    // inputs of the body after the states all the same.
    std::vector<TensorType> accumulators;  // their types (the placeholders go with the body)
    for (size_t s = 0; s < scan_outputs; ++s) {
      Value* v = (*outs)[states + s];
      std::vector<int64_t> dims = v->type.dims;
      dims.insert(dims.begin(), length);
      Value* acc = placeholder(n, "scan_acc" + std::to_string(s), {v->type.dtype, dims});
      leading.push_back(acc);
      accumulators.push_back(acc->type);
      results.push_back(n.emit("nanoc.ScanWrite", {acc, v, iteration}, {{"reverse", out_dirs[s]}},
                               "scan_out" + std::to_string(s)));
    }
    std::vector<Value*> captures;
    std::shared_ptr<Graph> sub = moveRegion(n.graph(), nodes_before, values_before,
                                            n.name() + "/body", leading, results, captures);
    addCaptureInputs(*sub, captures);
    dropPlaceholders(n, leading);
    sub->removeUnusedValues();  // the accumulators' placeholders, moved with the body
    // Before the loop: zeros for every accumulator.
    std::vector<uint8_t> length_bytes(sizeof(int64_t));
    std::memcpy(length_bytes.data(), &length, sizeof length);
    std::vector<Value*> carried = initial;
    for (size_t s = 0; s < scan_outputs; ++s) {
      const TensorType& t = accumulators[s];
      Node* zeros =
          n.graph().addNode("nanoc.Zeros", n.name() + "/scan_zeros" + std::to_string(s), {}, 1);
      zeros->attrs["dtype"] = static_cast<int64_t>(t.dtype);
      zeros->attrs["shape"] = t.dims;
      zeros->outputs[0]->type = t;
      zeros->outputs[0]->typed = true;
      carried.push_back(zeros->outputs[0]);
    }
    Node* node = addLoop(n, n.constant("scan_length", {DType::I64, {}}, std::move(length_bytes)),
                         nullptr, carried, captures, sub, std::max<int64_t>(1, length));
    for (size_t k = 0; k < states; ++k) setOutputNamed(n, k, node->outputs[k]);
    for (size_t s = 0; s < scan_outputs; ++s) {
      Value* stacked = node->outputs[states + s];
      const int64_t rank = static_cast<int64_t>(stacked->type.rank());
      int64_t a = out_axes[s];
      if (a < -rank || a >= rank)
        n.fail("scan_output_axes[" + std::to_string(s) + "] = " + std::to_string(a) +
               " is outside rank " + std::to_string(rank));
      if (a < 0) a += rank;
      if (a != 0) {
        std::vector<int64_t> perm;
        for (int64_t d = 1; d <= a; ++d) perm.push_back(d);
        perm.push_back(0);
        for (int64_t d = a + 1; d < rank; ++d) perm.push_back(d);
        stacked = n.emit("Transpose", {stacked}, {{"perm", perm}}, "scan_axis" + std::to_string(s));
      }
      setOutputNamed(n, states + s, stacked);
    }
    return true;
  }

  // Output `j` of the node is `v`, a value this node made: it takes the
  // output's name.
  static void setOutputNamed(NodeImporter& n, size_t j, Value* v) {
    const std::string& out = n.proto().output(static_cast<int>(j));
    if (out.empty()) return;
    v->name = n.graph().uniqueName(out);
    n.setOutput(j, v);
  }

  // Scan (opset 9 and later), unrolled: one iteration per slice of the scan
  // inputs along their scan axes, forwards or backwards, the scan outputs
  // stacked along theirs.
  bool unrollScan(NodeImporter& n, const Scope& scope) {
    if (n.opset() < 9)
      n.fail(
          "Scan of opset 8 (a batch axis and sequence_lens) is not supported; re-export with "
          "opset 9 or later");
    const onnx::GraphProto& body = graphAttr(n, "body");
    const std::optional<int64_t> num_scan = n.intAttr("num_scan_inputs");
    const size_t num_inputs = static_cast<size_t>(n.proto().input_size());
    if (!num_scan || *num_scan < 1 || static_cast<size_t>(*num_scan) > num_inputs)
      n.fail("num_scan_inputs must be between 1 and the " + std::to_string(num_inputs) + " inputs");
    const size_t scan_inputs = static_cast<size_t>(*num_scan);
    const size_t states = num_inputs - scan_inputs;
    if (static_cast<size_t>(body.input_size()) != num_inputs)
      n.fail("body has " + std::to_string(body.input_size()) + " inputs, the node " +
             std::to_string(num_inputs));
    if (static_cast<size_t>(body.output_size()) < states)
      n.fail("body has fewer outputs than the " + std::to_string(states) + " state variables");
    const size_t scan_outputs = static_cast<size_t>(body.output_size()) - states;
    if (static_cast<size_t>(n.proto().output_size()) != states + scan_outputs)
      n.fail("has " + std::to_string(n.proto().output_size()) + " outputs, its body makes " +
             std::to_string(body.output_size()));
    auto listAttr = [&](const char* key, size_t count) {
      std::vector<int64_t> v = n.intsAttr(key).value_or(std::vector<int64_t>(count, 0));
      if (v.size() != count)
        n.fail(std::string(key) + " has " + std::to_string(v.size()) + " entries, not " +
               std::to_string(count));
      return v;
    };
    std::vector<int64_t> in_axes = listAttr("scan_input_axes", scan_inputs);
    std::vector<int64_t> in_dirs = listAttr("scan_input_directions", scan_inputs);
    std::vector<int64_t> out_axes = listAttr("scan_output_axes", scan_outputs);
    std::vector<int64_t> out_dirs = listAttr("scan_output_directions", scan_outputs);
    int64_t length = -1;
    std::vector<Value*> xs;
    for (size_t j = 0; j < scan_inputs; ++j) {
      Value* x = n.requiredInput(states + j, "scan input");
      const int64_t rank = static_cast<int64_t>(x->type.rank());
      int64_t& a = in_axes[j];
      if (a < -rank || a >= rank)
        n.fail("scan_input_axes[" + std::to_string(j) + "] = " + std::to_string(a) +
               " is outside " + x->type.str());
      if (a < 0) a += rank;
      if (in_dirs[j] != 0 && in_dirs[j] != 1) n.fail("scan_input_directions must be 0 or 1");
      const int64_t l = x->type.dims[static_cast<size_t>(a)];
      if (length >= 0 && l != length)
        n.fail("scan inputs have different lengths along their scan axes (" +
               std::to_string(length) + " and " + std::to_string(l) + ")");
      length = l;
      xs.push_back(x);
    }
    for (int64_t d : out_dirs)
      if (d != 0 && d != 1) n.fail("scan_output_directions must be 0 or 1");
    if (length == 0 && scan_outputs > 0)
      n.fail("scans 0 steps, so its scan outputs have no element shape to be empty of");
    std::vector<Value*> state;
    for (size_t i = 0; i < states; ++i) state.push_back(n.requiredInput(i, "initial state"));
    // A long scan runs as a loop at run time instead of as copies of its body.
    if (length * std::max<int64_t>(1, body.node_size()) > kMaxUnrolledScanNodes)
      return runtimeScan(n, scope, body, length, state, xs, in_axes, in_dirs, out_axes, out_dirs);
    const size_t values_before = n.graph().values.size();
    const std::map<std::string, Value*> constants = bodyConstants(n, body, "body");
    std::vector<std::vector<Value*>> pieces(scan_outputs);
    for (int64_t t = 0; t < length; ++t) {
      countIteration(n);
      std::vector<Value*> bound = state;
      for (size_t j = 0; j < scan_inputs; ++j) {
        Value* x = xs[j];
        const int64_t at = in_dirs[j] ? length - 1 - t : t;
        const size_t axis = static_cast<size_t>(in_axes[j]);
        std::vector<int64_t> starts(x->type.rank(), 0), ends = x->type.dims,
                                                        steps(x->type.rank(), 1);
        starts[axis] = at;
        ends[axis] = at + 1;
        const std::string tag = "i" + std::to_string(t) + "/scan_in" + std::to_string(j);
        Value* slice =
            n.emit("Slice", {x}, {{"starts", starts}, {"ends", ends}, {"steps", steps}}, tag);
        std::vector<int64_t> dims = x->type.dims;
        dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(axis));
        bound.push_back(n.emit("Reshape", {slice}, {{"shape", dims}}, tag + "_element"));
      }
      std::optional<std::vector<Value*>> outs =
          importBody(n, body, bound, constants, iterationPrefix(n, t), scope, "body");
      if (!outs) return false;
      for (size_t i = 0; i < states; ++i) state[i] = (*outs)[i];
      for (size_t s = 0; s < scan_outputs; ++s) pieces[s].push_back((*outs)[states + s]);
    }
    std::vector<Value*> results = state;
    for (size_t s = 0; s < scan_outputs; ++s) {
      std::vector<Value*> p = pieces[s];
      if (out_dirs[s]) std::reverse(p.begin(), p.end());
      const int64_t rank = static_cast<int64_t>(p[0]->type.rank()) + 1;
      int64_t a = out_axes[s];
      if (a < -rank || a >= rank)
        n.fail("scan_output_axes[" + std::to_string(s) + "] = " + std::to_string(a) +
               " is outside rank " + std::to_string(rank));
      if (a < 0) a += rank;
      results.push_back(stack(n, p, a, "scan_out" + std::to_string(s)));
    }
    std::set<Value*> made_here = valuesSince(n, values_before);
    for (size_t j = 0; j < results.size(); ++j) setBodyOutput(n, j, results[j], made_here);
    return true;
  }

  Graph& graph_;
  const Opsets& opsets_;
  ModelNames& names_;
  const std::set<std::string>& used_names_;
  onnx_import::MadeConstantBudget made_constants_;  // see NodeImporter::reserveMadeConstant
};

// Every name used anywhere in `g` and the graphs of its nodes' attributes
// (If branches), so that fresh names avoid them all.
void collectNames(const onnx::GraphProto& g, ModelNames& names, std::set<std::string>& used_names) {
  for (const onnx::ValueInfoProto& in : g.input()) names.values.insert(in.name());
  for (const onnx::TensorProto& init : g.initializer()) names.values.insert(init.name());
  for (const onnx::NodeProto& node : g.node()) {
    if (!node.name().empty()) names.nodes.insert(node.name());
    names.values.insert(node.output().begin(), node.output().end());
    used_names.insert(node.input().begin(), node.input().end());
    for (const onnx::AttributeProto& a : node.attribute())
      if (a.has_g()) {
        collectNames(a.g(), names, used_names);
        for (const onnx::ValueInfoProto& out : a.g().output()) used_names.insert(out.name());
      }
  }
}

std::unique_ptr<Graph> importModel(const onnx::ModelProto& model,
                                   const OnnxImportOptions& options) {
  if (!model.has_graph()) throw CompileError("not a valid ONNX model (it has no graph)");
  const Opsets opsets = readOpsets(model);
  const onnx::GraphProto& g = model.graph();
  if (g.sparse_initializer_size() > 0)
    throw CompileError("sparse initializers are unsupported ('" +
                       g.sparse_initializer(0).values().name() + "')");

  ModelNames names;
  std::set<std::string> used_names;  // read by some node or a graph output
  collectNames(g, names, used_names);
  for (const onnx::ValueInfoProto& out : g.output()) used_names.insert(out.name());
  std::vector<std::string> node_names;
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& node = g.node(i);
    node_names.push_back(node.name().empty() ? ModelNames::fresh(names.nodes, node.op_type() + "_" +
                                                                                  std::to_string(i))
                                             : node.name());
  }
  Structure(g, node_names).check();

  // The operators nanoc lacks, listed before open input dims: fixing the
  // dims would not help.
  std::vector<NodeProblem> unsupported;
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& node = g.node(i);
    if (std::string why = unsupportedReason(node, opsets); !why.empty())
      unsupported.push_back({"node '" + node_names[static_cast<size_t>(i)] + "' (" + opName(node) +
                                 ", opset " + opsets.versionFor(node.domain()) + "): " + why,
                             opName(node), true});
  }

  auto graph = std::make_unique<Graph>();
  graph->max_nodes = options.max_nodes;
  graph->name = graphName(g.name());
  Scope scope;  // model value name -> IR value
  std::set<std::string> initializer_names;
  for (const onnx::TensorProto& init : g.initializer()) initializer_names.insert(init.name());
  checkOptions(g, initializer_names, options);

  std::vector<onnx_import::OpenDim> open;
  std::map<std::string, TensorType> input_types;
  for (const onnx::ValueInfoProto& in : g.input()) {
    // ONNX (IR version 4 on) makes an input with an initializer of the same
    // name an overridable default; ONNX Runtime uses the initializer unless
    // the caller feeds the input. nanoc's entry has fixed inputs, so it
    // compiles the default in as a constant: the result of ONNX Runtime run
    // without that feed. (Before IR version 4 every initializer was listed
    // as an input, and it is a constant all the more.)
    if (initializer_names.count(in.name()) || options.bound_inputs.count(in.name())) continue;
    auto shape = options.input_shapes.find(in.name());
    input_types[in.name()] =
        onnx_import::inputTypeOf(in, shape == options.input_shapes.end() ? nullptr : &shape->second,
                                 options.dim_params, open);
  }
  if (!open.empty()) {
    if (!unsupported.empty())
      throw CompileError(problemsMessage(unsupported, 0) + "\n(and " +
                         openDimsMessage(open, input_types) + ")");
    throw CompileError(openDimsMessage(open, input_types));
  }
  for (const onnx::ValueInfoProto& in : g.input()) {
    if (initializer_names.count(in.name())) continue;
    auto bound = options.bound_inputs.find(in.name());
    if (bound == options.bound_inputs.end()) {
      scope.values[in.name()] = graph->addInput(in.name(), input_types.at(in.name()));
      continue;
    }
    const std::string what = "--bind " + in.name();
    onnx::TensorProto proto;
    if (bound->second.size() > static_cast<size_t>(INT32_MAX) ||
        !proto.ParseFromArray(bound->second.data(), static_cast<int>(bound->second.size())))
      throw CompileError(what + ": not a serialized onnx TensorProto");
    onnx_import::ConstantTensor t = onnx_import::decodeTensor(proto, what);
    checkDeclaredType(in, t.type, "input '" + in.name() + "'", "the bound value is");
    scope.values[in.name()] = graph->addConstant(in.name(), t.type, std::move(t.bytes));
  }
  for (const onnx::TensorProto& init : g.initializer()) {
    onnx_import::ConstantTensor t =
        onnx_import::decodeTensor(init, "initializer '" + init.name() + "'");
    scope.values[init.name()] = graph->addConstant(init.name(), t.type, std::move(t.bytes));
  }
  for (const onnx::ValueInfoProto& in : g.input())
    if (initializer_names.count(in.name()))
      checkDeclaredType(in, scope.values.at(in.name())->type, "input '" + in.name() + "'",
                        "its initializer is");

  NodeSequenceImporter nodes(*graph, opsets, names, used_names, options.max_made_constant_bytes);
  nodes.importNodes(g.node(), node_names, scope);
  if (!nodes.problems.empty()) throw CompileError(problemsMessage(nodes.problems, nodes.skipped));

  for (const onnx::ValueInfoProto& out : g.output()) {
    Value* v = scope.values.at(out.name());
    checkDeclaredType(out, v->type, "graph output '" + out.name() + "'", "computes");
    graph->outputs.push_back(v);
  }
  if (graph->outputs.empty()) throw CompileError("the graph has no outputs");
  // Initializers and Constant nodes that nothing reads.
  graph->removeUnusedValues();
  return graph;
}

}  // namespace

namespace {

const char kOver2GiB[] =
    "larger than 2 GiB, protobuf's limit; models this large need external data, which nanoc "
    "does not read";

// Parses the model's bytes; errors name `source`.
void parseModel(const void* data, size_t size, const std::string& source, onnx::ModelProto& model) {
  if (size > static_cast<size_t>(INT_MAX)) throw CompileError(source + ": " + kOver2GiB);
  if (!model.ParseFromArray(data, static_cast<int>(size)))
    throw CompileError(source + ": not a valid ONNX model (protobuf parse failed)");
}

std::unique_ptr<Graph> importParsed(const onnx::ModelProto& model, const std::string& source,
                                    const OnnxImportOptions& options) {
  try {
    return importModel(model, options);
  } catch (const CompileError& e) {
    throw CompileError(source + ": " + e.what());
  }
}

}  // namespace

std::unique_ptr<Graph> importOnnxBytes(const void* data, size_t size, const std::string& source,
                                       const OnnxImportOptions& options) {
  onnx::ModelProto model;
  parseModel(data, size, source, model);
  return importParsed(model, source, options);
}

std::unique_ptr<Graph> importOnnxFile(const std::string& path, const OnnxImportOptions& options) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) throw CompileError(path + ": cannot open the file");
  // The size first: a file protobuf cannot parse is refused unread, and the
  // rest is read into one buffer of exactly its size, freed once parsed (a
  // model's initializers are then held once by the parsed model, once by
  // the IR).
  const std::streamoff size = file.tellg();
  if (size < 0) throw CompileError(path + ": cannot read the file");
  if (size > static_cast<std::streamoff>(INT_MAX)) throw CompileError(path + ": " + kOver2GiB);
  onnx::ModelProto model;
  {
    std::string bytes(static_cast<size_t>(size), '\0');
    file.seekg(0);
    if (!file.read(bytes.data(), size) || file.gcount() != size)
      throw CompileError(path + ": cannot read the file");
    parseModel(bytes.data(), bytes.size(), path, model);
  }
  return importParsed(model, path, options);
}

}  // namespace nanoc
