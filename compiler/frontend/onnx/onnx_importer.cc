#include "compiler/frontend/onnx/onnx_importer.h"

#include <onnx/onnx_pb.h>

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
  int64_t default_domain = 0;
  std::map<std::string, int64_t> others;

  std::string versionFor(const std::string& domain) const {
    if (isDefaultDomain(domain)) return std::to_string(default_domain);
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
    // Models before IR version 3 predate opset_import and mean opset 1.
    if (model.ir_version() >= 3)
      throw CompileError("the model imports no opset of the default ONNX domain");
    opsets.default_domain = 1;
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

// Every unsupported node, in one error, before anything is imported.
void checkSupported(const onnx::GraphProto& g, const Opsets& opsets,
                    const std::vector<std::string>& node_names) {
  std::vector<std::string> lines;
  std::map<std::string, int> per_op;
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& node = g.node(i);
    bool known = isDefaultDomain(node.domain()) && onnx_import::findOpMapping(node.op_type());
    if (known) continue;
    std::string op =
        isDefaultDomain(node.domain()) ? node.op_type() : node.domain() + "." + node.op_type();
    lines.push_back("  node '" + node_names[static_cast<size_t>(i)] + "' op " + op + " (opset " +
                    opsets.versionFor(node.domain()) + ")");
    ++per_op[op];
  }
  if (lines.empty()) return;
  std::string message = "unsupported operators (" + std::to_string(lines.size()) + "):";
  for (const std::string& line : lines) message += "\n" + line;
  // Real models repeat one op hundreds of times; the last line (what a
  // terminal shows) sums up what is missing.
  if (lines.size() > per_op.size()) {
    message += "\n  by op:";
    for (const auto& [op, count] : per_op) message += " " + op + " x" + std::to_string(count);
  }
  throw CompileError(message);
}

void checkDeclaredOutput(const onnx::ValueInfoProto& info, const Value& v) {
  if (!info.has_type() || !info.type().has_tensor_type()) return;
  const onnx::TypeProto::Tensor& t = info.type().tensor_type();
  std::string declared;
  bool ok = true;
  if (t.elem_type() != onnx::TensorProto::UNDEFINED) {
    std::optional<DType> dtype = onnx_import::dtypeFromOnnx(t.elem_type());
    ok = dtype == v.type.dtype;
    declared = dtype ? std::string(dtypeName(*dtype)) : onnx_import::onnxTypeName(t.elem_type());
  } else {
    declared = "?";
  }
  if (t.has_shape()) {
    // Symbolic dims in an output's declaration are fine: the inputs fixed them.
    ok = ok && t.shape().dim_size() == static_cast<int>(v.type.rank());
    declared += "[";
    for (int i = 0; i < t.shape().dim_size(); ++i) {
      const onnx::TensorShapeProto::Dimension& d = t.shape().dim(i);
      declared += (i ? "," : "") + (d.has_dim_value() ? std::to_string(d.dim_value()) : "?");
      if (ok && d.has_dim_value()) ok = d.dim_value() == v.type.dims[static_cast<size_t>(i)];
    }
    declared += "]";
  }
  if (!ok)
    throw CompileError("graph output '" + info.name() + "' is declared " + declared +
                       " but computes " + v.type.str());
}

std::unique_ptr<Graph> importModel(const onnx::ModelProto& model) {
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
  checkSupported(g, opsets, node_names);

  auto graph = std::make_unique<Graph>();
  graph->name = graphName(g.name());
  std::map<std::string, Value*> values;  // model value name -> IR value
  std::set<std::string> initializer_names;
  for (const onnx::TensorProto& init : g.initializer()) {
    if (init.name().empty()) throw CompileError("an initializer has no name");
    if (!initializer_names.insert(init.name()).second)
      throw CompileError("initializer '" + init.name() + "' is defined twice");
  }
  for (const onnx::ValueInfoProto& in : g.input()) {
    // An input with an initializer of the same name only has a default value
    // in ONNX; nanoc compiles that value in as a constant.
    if (initializer_names.count(in.name())) continue;
    if (in.name().empty()) throw CompileError("a graph input has no name");
    if (values.count(in.name())) throw CompileError("input '" + in.name() + "' is listed twice");
    TensorType type = onnx_import::staticTypeOf(in, "input '" + in.name() + "'");
    values[in.name()] = graph->addInput(in.name(), type);
  }
  for (const onnx::TensorProto& init : g.initializer()) {
    onnx_import::ConstantTensor t =
        onnx_import::decodeTensor(init, "initializer '" + init.name() + "'");
    values[init.name()] = graph->addConstant(init.name(), t.type, std::move(t.bytes));
  }

  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& node = g.node(i);
    const std::string& name = node_names[static_cast<size_t>(i)];
    std::vector<Value*> inputs;
    for (const std::string& in : node.input()) {
      if (in.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      auto it = values.find(in);
      if (it == values.end())
        throw CompileError("node '" + name + "' (" + node.op_type() + "): input '" + in +
                           "' is not a graph input, an initializer or the output of an earlier "
                           "node (ONNX graphs are topologically sorted)");
      inputs.push_back(it->second);
    }
    NodeImporter importer(*graph, node, name, opsets.default_domain, std::move(inputs), used_names,
                          names);
    onnx_import::findOpMapping(node.op_type())(importer);
    for (int j = 0; j < node.output_size(); ++j) {
      const std::string& out = node.output(j);
      if (out.empty()) continue;
      Value* v = importer.outputs()[static_cast<size_t>(j)];
      if (!v) {
        if (used_names.count(out)) importer.fail("output '" + out + "' is not supported");
        continue;
      }
      if (!values.emplace(out, v).second)
        importer.fail("output '" + out + "' is already defined elsewhere in the graph");
    }
  }

  for (const onnx::ValueInfoProto& out : g.output()) {
    auto it = values.find(out.name());
    if (it == values.end())
      throw CompileError("graph output '" + out.name() + "' is not defined by any node");
    checkDeclaredOutput(out, *it->second);
    graph->outputs.push_back(it->second);
  }
  if (graph->outputs.empty()) throw CompileError("the graph has no outputs");
  // Initializers and Constant nodes that nothing reads.
  graph->removeUnusedValues();
  return graph;
}

}  // namespace

std::unique_ptr<Graph> importOnnxBytes(const void* data, size_t size, const std::string& source) {
  try {
    if (size > static_cast<size_t>(INT_MAX))
      throw CompileError(
          "larger than 2 GiB, protobuf's limit; models this large need external data, which "
          "nanoc does not read");
    onnx::ModelProto model;
    if (!model.ParseFromArray(data, static_cast<int>(size)))
      throw CompileError("not a valid ONNX model (protobuf parse failed)");
    return importModel(model);
  } catch (const CompileError& e) {
    throw CompileError(source + ": " + e.what());
  }
}

std::unique_ptr<Graph> importOnnxFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw CompileError(path + ": cannot open the file");
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) throw CompileError(path + ": cannot read the file");
  return importOnnxBytes(bytes.data(), bytes.size(), path);
}

}  // namespace nanoc
