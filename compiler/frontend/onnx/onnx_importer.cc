#include "compiler/frontend/onnx/onnx_importer.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <fstream>
#include <iterator>
#include <map>
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
  std::string first;
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
  return message + "\nto add an operator or extend one, see docs/ADDING_AN_OPERATOR.md";
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
  for (const onnx::ValueInfoProto& in : g.input()) names.values.insert(in.name());
  for (const onnx::TensorProto& init : g.initializer()) names.values.insert(init.name());
  for (const onnx::NodeProto& node : g.node()) {
    if (!node.name().empty()) names.nodes.insert(node.name());
    names.values.insert(node.output().begin(), node.output().end());
    used_names.insert(node.input().begin(), node.input().end());
  }
  for (const onnx::ValueInfoProto& out : g.output()) used_names.insert(out.name());
  std::vector<std::string> node_names;
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& node = g.node(i);
    node_names.push_back(node.name().empty() ? ModelNames::fresh(names.nodes, node.op_type() + "_" +
                                                                                  std::to_string(i))
                                             : node.name());
  }
  Structure(g, node_names).check();

  auto nodeLine = [&](int i) {
    const onnx::NodeProto& node = g.node(i);
    return "node '" + node_names[static_cast<size_t>(i)] + "' (" + opName(node) + ", opset " +
           opsets.versionFor(node.domain()) + ")";
  };
  // The mapping of node i, or null with the reason it has none.
  auto mappingOf = [&](int i, std::string& reason) -> onnx_import::OpMapping {
    const onnx::NodeProto& node = g.node(i);
    onnx_import::OpMapping mapping =
        isDefaultDomain(node.domain()) ? onnx_import::findOpMapping(node.op_type()) : nullptr;
    if (!mapping)
      reason = "unsupported operator";
    else if (opsets.default_domain == 0)
      reason = "the model imports no opset of the default ONNX domain";
    return reason.empty() ? mapping : nullptr;
  };
  std::vector<NodeProblem> problems;
  for (int i = 0; i < g.node_size(); ++i) {
    std::string reason;
    if (!mappingOf(i, reason))
      problems.push_back({nodeLine(i) + ": " + reason, opName(g.node(i)), true});
  }

  auto graph = std::make_unique<Graph>();
  graph->name = graphName(g.name());
  std::map<std::string, Value*> values;  // model value name -> IR value
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
    if (initializer_names.count(in.name())) continue;
    auto shape = options.input_shapes.find(in.name());
    input_types[in.name()] =
        onnx_import::inputTypeOf(in, shape == options.input_shapes.end() ? nullptr : &shape->second,
                                 options.dim_params, open);
  }
  if (!open.empty()) {
    // Nodes nanoc lacks outweigh open dims: fixing the dims would not help.
    if (!problems.empty())
      throw CompileError(problemsMessage(problems, 0) + "\n(and " +
                         openDimsMessage(open, input_types) + ")");
    throw CompileError(openDimsMessage(open, input_types));
  }
  for (const onnx::ValueInfoProto& in : g.input())
    if (!initializer_names.count(in.name()))
      values[in.name()] = graph->addInput(in.name(), input_types.at(in.name()));
  for (const onnx::TensorProto& init : g.initializer()) {
    onnx_import::ConstantTensor t =
        onnx_import::decodeTensor(init, "initializer '" + init.name() + "'");
    values[init.name()] = graph->addConstant(init.name(), t.type, std::move(t.bytes));
  }
  for (const onnx::ValueInfoProto& in : g.input())
    if (initializer_names.count(in.name()))
      checkDeclaredType(in, values.at(in.name())->type, "input '" + in.name() + "'",
                        "its initializer is");

  // A node that cannot be imported leaves its outputs null here; the nodes
  // that read them are skipped, and every problem found is reported at once.
  problems.clear();
  int skipped = 0;
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& node = g.node(i);
    const std::string& name = node_names[static_cast<size_t>(i)];
    auto poison = [&] {
      for (const std::string& out : node.output())
        if (!out.empty()) values[out] = nullptr;
    };
    std::string unsupported;
    onnx_import::OpMapping mapping = mappingOf(i, unsupported);
    if (!mapping) {
      problems.push_back({nodeLine(i) + ": " + unsupported, opName(node), true});
      poison();
      continue;
    }
    std::vector<Value*> inputs;
    bool readable = true;
    for (const std::string& in : node.input()) {
      // Structure::check saw every name defined before its use.
      Value* v = in.empty() ? nullptr : values.at(in);
      readable = readable && (in.empty() || v);
      inputs.push_back(v);
    }
    if (!readable) {
      ++skipped;
      poison();
      continue;
    }
    const size_t nodes_before = graph->nodes.size();
    std::optional<std::string> reason;
    try {
      NodeImporter importer(*graph, node, name, opsets.default_domain, std::move(inputs),
                            used_names, names);
      mapping(importer);
      for (int j = 0; j < node.output_size(); ++j) {
        const std::string& out = node.output(j);
        if (out.empty()) continue;
        Value* v = importer.outputs()[static_cast<size_t>(j)];
        if (!v && used_names.count(out)) importer.fail("output '" + out + "' is not supported");
        values[out] = v;
      }
    } catch (const onnx_import::NodeError& e) {
      reason = e.reason();
    } catch (const CompileError& e) {
      reason = reasonOf(e.what(), name);
    }
    if (reason) {
      problems.push_back({nodeLine(i) + ": " + *reason, opName(node), false});
      graph->nodes.resize(nodes_before);  // what the mapping emitted before it failed
      poison();
    }
  }
  if (!problems.empty()) throw CompileError(problemsMessage(problems, skipped));

  for (const onnx::ValueInfoProto& out : g.output()) {
    Value* v = values.at(out.name());
    checkDeclaredType(out, v->type, "graph output '" + out.name() + "'", "computes");
    graph->outputs.push_back(v);
  }
  if (graph->outputs.empty()) throw CompileError("the graph has no outputs");
  // Initializers and Constant nodes that nothing reads.
  graph->removeUnusedValues();
  return graph;
}

}  // namespace

std::unique_ptr<Graph> importOnnxBytes(const void* data, size_t size, const std::string& source,
                                       const OnnxImportOptions& options) {
  try {
    if (size > static_cast<size_t>(INT_MAX))
      throw CompileError(
          "larger than 2 GiB, protobuf's limit; models this large need external data, which "
          "nanoc does not read");
    onnx::ModelProto model;
    if (!model.ParseFromArray(data, static_cast<int>(size)))
      throw CompileError("not a valid ONNX model (protobuf parse failed)");
    return importModel(model, options);
  } catch (const CompileError& e) {
    throw CompileError(source + ": " + e.what());
  }
}

std::unique_ptr<Graph> importOnnxFile(const std::string& path, const OnnxImportOptions& options) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw CompileError(path + ": cannot open the file");
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) throw CompileError(path + ": cannot read the file");
  return importOnnxBytes(bytes.data(), bytes.size(), path, options);
}

}  // namespace nanoc
