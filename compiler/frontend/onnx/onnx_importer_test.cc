#include "compiler/frontend/onnx/onnx_importer.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cctype>
#include <initializer_list>
#include <string>
#include <vector>

#include "compiler/ir/error.h"
#include "compiler/ir/op_registry.h"

namespace nanoc {
namespace {

// ---- building small models with the protobuf API ----

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset) {
    model_.set_ir_version(8);
    onnx::OperatorSetIdProto* id = model_.add_opset_import();
    id->set_domain("");
    id->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  onnx::ValueInfoProto* input(const std::string& name, std::vector<int64_t> dims,
                              int32_t elem_type = onnx::TensorProto::FLOAT) {
    return valueInfo(graph()->add_input(), name, dims, elem_type);
  }
  // An input whose dims are numbers, dim_params ("batch") or "?" (unknown).
  onnx::ValueInfoProto* openInput(const std::string& name, std::vector<std::string> dims) {
    onnx::ValueInfoProto* v = input(name, {});
    onnx::TensorShapeProto* shape = v->mutable_type()->mutable_tensor_type()->mutable_shape();
    for (const std::string& d : dims) {
      onnx::TensorShapeProto::Dimension* dim = shape->add_dim();
      if (std::isdigit(static_cast<unsigned char>(d[0])))
        dim->set_dim_value(std::stoll(d));
      else if (d != "?")
        dim->set_dim_param(d);
    }
    return v;
  }
  onnx::ValueInfoProto* output(const std::string& name) {
    onnx::ValueInfoProto* v = graph()->add_output();
    v->set_name(name);
    return v;
  }
  void floatInit(const std::string& name, std::vector<int64_t> dims, std::vector<float> data) {
    onnx::TensorProto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float f : data) t->add_float_data(f);
  }
  void int64Init(const std::string& name, std::vector<int64_t> data) {
    onnx::TensorProto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(data.size()));
    t->set_raw_data(std::string(reinterpret_cast<const char*>(data.data()), data.size() * 8));
  }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> inputs,
                        std::vector<std::string> outputs, const std::string& name = "") {
    onnx::NodeProto* n = graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const std::string& in : inputs) n->add_input(in);
    for (const std::string& out : outputs) n->add_output(out);
    return n;
  }

  onnx::GraphProto* graph() { return model_.mutable_graph(); }
  onnx::ModelProto& model() { return model_; }
  std::unique_ptr<Graph> import(const OnnxImportOptions& options = {}) const {
    std::string bytes = model_.SerializeAsString();
    return importOnnxBytes(bytes.data(), bytes.size(), "model.onnx", options);
  }
  // The CompileError message of importing, or "" if it imported.
  std::string importError(const OnnxImportOptions& options = {}) const {
    try {
      import(options);
    } catch (const CompileError& e) {
      return e.what();
    }
    return "";
  }

 private:
  static onnx::ValueInfoProto* valueInfo(onnx::ValueInfoProto* v, const std::string& name,
                                         const std::vector<int64_t>& dims, int32_t elem_type) {
    v->set_name(name);
    onnx::TypeProto::Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem_type);
    onnx::TensorShapeProto* shape = t->mutable_shape();
    for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
    return v;
  }

  onnx::ModelProto model_;
};

void setInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void setInts(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void setFloat(onnx::NodeProto* n, const std::string& name, float v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
void setString(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

// ---- reading the imported graph ----

const Node& onlyNode(const Graph& g, const std::string& op) {
  const Node* found = nullptr;
  for (const auto& n : g.nodes)
    if (n->op == op) {
      EXPECT_EQ(found, nullptr) << "more than one " << op;
      found = n.get();
    }
  if (!found) throw std::runtime_error("no " + op + " node");
  return *found;
}

std::vector<std::string> ops(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& n : g.nodes) out.push_back(n->op);
  return out;
}

using Dims = std::vector<int64_t>;

// ---- tests ----

TEST(OnnxImporter, GemmGetsEveryDefaultExplicit) {
  ModelBuilder m(13);
  m.input("x", {2, 4});
  m.floatInit("w", {4, 3}, std::vector<float>(12, 0.5f));
  m.node("Gemm", {"x", "w"}, {"y"}, "fc");
  m.output("y");
  auto g = m.import();
  const Node& gemm = onlyNode(*g, "Gemm");
  EXPECT_EQ(gemm.name, "fc");
  EXPECT_EQ(gemm.f("alpha"), 1.0);
  EXPECT_EQ(gemm.f("beta"), 1.0);
  EXPECT_EQ(gemm.i("transA"), 0);
  EXPECT_EQ(gemm.i("transB"), 0);
  ASSERT_EQ(gemm.inputs.size(), 3u);
  EXPECT_EQ(gemm.inputs[2], nullptr);  // C absent
  ASSERT_EQ(g->outputs.size(), 1u);
  EXPECT_EQ(g->outputs[0]->name, "y");
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[2,3]");
}

TEST(OnnxImporter, FloatAttributesKeepTheirShortestDecimal) {
  ModelBuilder m(13);
  m.input("x", {2, 4});
  m.input("w", {3, 4});
  onnx::NodeProto* n = m.node("Gemm", {"x", "w"}, {"y"});
  setFloat(n, "alpha", 0.1f);
  setInt(n, "transB", 1);
  m.output("y");
  auto g = m.import();
  const Node& gemm = onlyNode(*g, "Gemm");
  EXPECT_EQ(gemm.f("alpha"), 0.1);
  EXPECT_EQ(gemm.i("transB"), 1);
  EXPECT_EQ(gemm.name, "Gemm_0");  // generated: the model's node has no name
}

TEST(OnnxImporter, ConvSameUpperBecomesExplicitPads) {
  ModelBuilder m(11);
  m.input("x", {1, 2, 5, 5});
  m.floatInit("w", {4, 2, 3, 3}, std::vector<float>(72, 1.f));
  onnx::NodeProto* n = m.node("Conv", {"x", "w"}, {"y"}, "conv");
  setString(n, "auto_pad", "SAME_UPPER");
  setInts(n, "strides", {2, 2});
  m.output("y");
  auto g = m.import();
  const Node& conv = onlyNode(*g, "Conv");
  // in 5, stride 2 -> out 3; total pad (3-1)*2 + 3 - 5 = 2, split 1 / 1.
  EXPECT_EQ(conv.ints("pads"), (Dims{1, 1, 1, 1}));
  EXPECT_EQ(conv.ints("kernel_shape"), (Dims{3, 3}));  // from W
  EXPECT_EQ(conv.ints("strides"), (Dims{2, 2}));
  EXPECT_EQ(conv.ints("dilations"), (Dims{1, 1}));
  EXPECT_EQ(conv.i("group"), 1);
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[1,4,3,3]");
}

TEST(OnnxImporter, ConvSameUpperAndLowerPutTheOddPadOnOppositeSides) {
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
    ModelBuilder m(11);
    m.input("x", {1, 1, 4, 4});
    m.floatInit("w", {1, 1, 2, 2}, std::vector<float>(4, 1.f));
    setString(m.node("Conv", {"x", "w"}, {"y"}), "auto_pad", mode);
    m.output("y");
    auto g = m.import();
    // in 4, stride 1, kernel 2: one pad in total.
    Dims expected = std::string(mode) == "SAME_UPPER" ? Dims{0, 0, 1, 1} : Dims{1, 1, 0, 0};
    EXPECT_EQ(onlyNode(*g, "Conv").ints("pads"), expected) << mode;
  }
}

TEST(OnnxImporter, ConvThreeDimensionalTakesPerDimAttributes) {
  ModelBuilder m(11);
  m.input("x", {1, 1, 4, 5, 6});
  m.floatInit("w", {2, 1, 2, 3, 3}, std::vector<float>(36, 1.f));
  onnx::NodeProto* n = m.node("Conv", {"x", "w"}, {"y"}, "conv3d");
  setString(n, "auto_pad", "SAME_LOWER");
  m.output("y");
  auto g = m.import();
  const Node& conv = onlyNode(*g, "Conv");
  EXPECT_EQ(conv.ints("kernel_shape"), (Dims{2, 3, 3}));
  // Begins, then ends; the odd pad of the depth goes first (LOWER).
  EXPECT_EQ(conv.ints("pads"), (Dims{1, 1, 1, 0, 1, 1}));
  EXPECT_EQ(conv.ints("strides"), (Dims{1, 1, 1}));
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[1,2,4,5,6]");
}

TEST(OnnxImporter, FlattenBecomesReshapeWithExplicitShape) {
  ModelBuilder m(13);
  m.input("x", {2, 3, 4, 5});
  setInt(m.node("Flatten", {"x"}, {"y"}, "flat"), "axis", -2);
  m.output("y");
  auto g = m.import();
  const Node& r = onlyNode(*g, "Reshape");
  EXPECT_EQ(r.name, "flat");
  EXPECT_EQ(r.ints("shape"), (Dims{6, 20}));
  EXPECT_EQ(r.inputs.size(), 1u);
}

TEST(OnnxImporter, FlattenDefaultAxisIsOne) {
  ModelBuilder m(9);
  m.input("x", {2, 3, 4});
  m.node("Flatten", {"x"}, {"y"});
  m.output("y");
  EXPECT_EQ(onlyNode(*m.import(), "Reshape").ints("shape"), (Dims{2, 12}));
}

TEST(OnnxImporter, ReshapeCopiesZeroDimsAndInfersMinusOne) {
  ModelBuilder m(13);
  m.input("x", {2, 3, 4});
  m.int64Init("shape", {0, -1});
  m.node("Reshape", {"x", "shape"}, {"y"});
  m.output("y");
  auto g = m.import();
  const Node& r = onlyNode(*g, "Reshape");
  EXPECT_EQ(r.ints("shape"), (Dims{2, 12}));
  EXPECT_EQ(r.inputs.size(), 1u);  // the shape operand became the attribute
  // The shape initializer is no longer referenced.
  for (const auto& v : g->values) EXPECT_NE(v->name, "shape");
}

TEST(OnnxImporter, ReshapeAllowZeroKeepsALiteralZero) {
  ModelBuilder m(14);
  m.input("x", {0, 3});
  m.int64Init("shape", {3, 0});
  setInt(m.node("Reshape", {"x", "shape"}, {"y"}), "allowzero", 1);
  m.output("y");
  EXPECT_EQ(onlyNode(*m.import(), "Reshape").ints("shape"), (Dims{3, 0}));
}

TEST(OnnxImporter, ReshapeBeforeOpset5ReadsTheShapeAttribute) {
  ModelBuilder m(1);
  m.input("x", {2, 6});
  setInts(m.node("Reshape", {"x"}, {"y"}), "shape", {3, -1});
  m.output("y");
  EXPECT_EQ(onlyNode(*m.import(), "Reshape").ints("shape"), (Dims{3, 4}));
}

TEST(OnnxImporter, ReshapeWithARuntimeShapeIsAnError) {
  ModelBuilder m(13);
  m.input("x", {2, 6});
  m.input("s", {2}, onnx::TensorProto::INT64);
  m.node("Reshape", {"x", "s"}, {"y"}, "r");
  m.output("y");
  std::string err = m.importError();
  EXPECT_NE(err.find("node 'r' (Reshape, opset 13): shape input 's' is computed at run time"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("constant"), std::string::npos) << err;
}

TEST(OnnxImporter, ReshapeWithMismatchedCountIsAnError) {
  ModelBuilder m(13);
  m.input("x", {2, 6});
  m.int64Init("shape", {5, -1});
  m.node("Reshape", {"x", "shape"}, {"y"}, "r");
  m.output("y");
  EXPECT_NE(m.importError().find("cannot reshape f32[2,6]"), std::string::npos);
}

TEST(OnnxImporter, SoftmaxOpset13IsOneAxis) {
  ModelBuilder m(13);
  m.input("x", {2, 3, 4});
  setInt(m.node("Softmax", {"x"}, {"y"}, "sm"), "axis", 1);
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(ops(*g), (std::vector<std::string>{"Softmax"}));
  EXPECT_EQ(onlyNode(*g, "Softmax").i("axis"), 1);
}

TEST(OnnxImporter, SoftmaxOpset13DefaultsToTheLastAxis) {
  ModelBuilder m(13);
  m.input("x", {2, 3, 4});
  m.node("Softmax", {"x"}, {"y"});
  m.output("y");
  EXPECT_EQ(onlyNode(*m.import(), "Softmax").i("axis"), 2);
}

TEST(OnnxImporter, SoftmaxOpset11CoercesTo2D) {
  ModelBuilder m(11);
  m.input("x", {2, 3, 4});
  m.node("Softmax", {"x"}, {"y"}, "sm");  // default axis 1: over [3, 4] together
  m.output("y");
  auto g = m.import();
  ASSERT_EQ(ops(*g), (std::vector<std::string>{"Reshape", "Softmax", "Reshape"}));
  EXPECT_EQ(g->nodes[0]->ints("shape"), (Dims{2, 12}));
  EXPECT_EQ(g->nodes[1]->i("axis"), 1);
  EXPECT_EQ(g->nodes[1]->name, "sm");
  EXPECT_EQ(g->nodes[2]->ints("shape"), (Dims{2, 3, 4}));
  EXPECT_EQ(g->outputs[0]->name, "y");
  EXPECT_EQ(g->outputs[0]->producer, g->nodes[2].get());
}

TEST(OnnxImporter, SoftmaxOpset11OnTheLastAxisNeedsNoReshape) {
  ModelBuilder m(11);
  m.input("x", {2, 3, 4});
  setInt(m.node("Softmax", {"x"}, {"y"}), "axis", -1);
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(ops(*g), (std::vector<std::string>{"Softmax"}));
  EXPECT_EQ(onlyNode(*g, "Softmax").i("axis"), 2);
}

TEST(OnnxImporter, InitializerListedAsInputIsAConstant) {
  ModelBuilder m(13);
  m.input("x", {1, 3});
  m.input("b", {1, 3});  // also an initializer: a default, compiled in
  m.floatInit("b", {1, 3}, {1.f, 2.f, 3.f});
  m.node("Add", {"x", "b"}, {"y"});
  m.output("y");
  auto g = m.import();
  ASSERT_EQ(g->inputs.size(), 1u);
  EXPECT_EQ(g->inputs[0]->name, "x");
  const Node& add = onlyNode(*g, "Add");
  ASSERT_TRUE(add.inputs[1]->isConstant());
  EXPECT_EQ(add.inputs[1]->name, "b");
  EXPECT_EQ(add.inputs[1]->as<float>()[2], 3.f);
}

TEST(OnnxImporter, ConstantNodeBecomesAConstantValue) {
  ModelBuilder m(13);
  m.input("x", {2, 2});
  onnx::NodeProto* c = m.node("Constant", {}, {"k"});
  onnx::AttributeProto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto* t = a->mutable_t();
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(2);
  t->add_float_data(10.f);
  t->add_float_data(20.f);
  m.node("Mul", {"x", "k"}, {"y"});
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(ops(*g), (std::vector<std::string>{"Mul"}));
  const Value* k = onlyNode(*g, "Mul").inputs[1];
  ASSERT_TRUE(k->isConstant());
  EXPECT_EQ(k->name, "k");
  EXPECT_EQ(k->type.str(), "f32[2]");
  EXPECT_EQ(k->as<float>()[1], 20.f);
}

TEST(OnnxImporter, ConstantNodeValueIntsFeedsReshape) {
  ModelBuilder m(13);
  m.input("x", {4, 6});
  setInts(m.node("Constant", {}, {"s"}), "value_ints", {-1, 3});
  m.node("Reshape", {"x", "s"}, {"y"});
  m.output("y");
  EXPECT_EQ(onlyNode(*m.import(), "Reshape").ints("shape"), (Dims{8, 3}));
}

TEST(OnnxImporter, ListsEveryUnsupportedOperatorInOneError) {
  ModelBuilder m(13);
  m.input("x", {2, 2});
  m.node("Relu", {"x"}, {"a"}, "fine");
  m.node("FancyOp", {"a"}, {"b"}, "first_bad");
  m.node("OtherOp", {"b"}, {"c"});
  onnx::NodeProto* ms = m.node("FusedThing", {"c"}, {"y"}, "vendor");
  ms->set_domain("com.microsoft");
  m.output("y");
  EXPECT_EQ(m.importError(),
            "model.onnx: 3 nodes cannot be imported (unsupported operators: FancyOp x1, OtherOp "
            "x1, com.microsoft.FusedThing x1):\n"
            "  node 'first_bad' (FancyOp, opset 13): unsupported operator\n"
            "  node 'OtherOp_2' (OtherOp, opset 13): unsupported operator\n"
            "  node 'vendor' (com.microsoft.FusedThing, opset ?): unsupported operator\n"
            "to add an operator or extend one, see docs/ADDING_AN_OPERATOR.md; which operators "
            "nanoc covers, and how far: docs/CONFORMANCE.md");
}

TEST(OnnxImporter, UnsupportedListStartsWithACountPerOp) {
  ModelBuilder m(13);
  m.input("x", {2, 2});
  m.node("StringNormalizer", {"x"}, {"a"}, "n1");
  m.node("StringNormalizer", {"a"}, {"b"}, "n2");
  m.node("ImageDecoder", {"b"}, {"y"}, "n3");
  m.output("y");
  std::string err = m.importError();
  EXPECT_EQ(err.substr(0, err.find('\n')),
            "model.onnx: 3 nodes cannot be imported (unsupported operators: ImageDecoder x1, "
            "StringNormalizer x2):");
  EXPECT_NE(err.find("\n  node 'n2' (StringNormalizer, opset 13): unsupported operator\n"),
            std::string::npos)
      << err;
}

TEST(OnnxImporter, OneUnsupportedNodeIsTheFirstLine) {
  ModelBuilder m(13);
  m.input("x", {2, 2});
  m.node("ImageDecoder", {"x"}, {"y"}, "e");
  m.output("y");
  EXPECT_EQ(m.importError(),
            "model.onnx: node 'e' (ImageDecoder, opset 13): unsupported operator\n"
            "to add an operator or extend one, see docs/ADDING_AN_OPERATOR.md; which operators "
            "nanoc covers, and how far: docs/CONFORMANCE.md");
}

TEST(OnnxImporter, UnsupportedAttributesAndOperatorsShareOneError) {
  ModelBuilder m(13);
  m.input("x", {1, 1, 4, 4, 4});
  m.input("s", {2}, onnx::TensorProto::INT64);
  onnx::NodeProto* gelu = m.node("Gelu", {"x"}, {"c"}, "gelu");
  onnx::AttributeProto* a = gelu->add_attribute();
  a->set_name("approximate");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("cubic");
  m.node("Relu", {"c"}, {"r"}, "after_conv");  // skipped: it reads the failed Gelu
  m.node("ImageDecoder", {"r"}, {"e"}, "erf");
  m.node("Reshape", {"e", "s"}, {"y"}, "reshape");
  m.output("y");
  std::string err = m.importError();
  EXPECT_EQ(err.substr(0, err.find('\n')),
            "model.onnx: 2 nodes cannot be imported (unsupported operators: ImageDecoder x1; other "
            "problems: Gelu x1):")
      << err;
  EXPECT_NE(err.find("\n  node 'gelu' (Gelu, opset 13): approximate 'cubic' is not 'none' or "
                     "'tanh'\n"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("\n  node 'erf' (ImageDecoder, opset 13): unsupported operator\n"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("\n  (2 later nodes reading their results were not checked)\n"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("after_conv"), std::string::npos) << err;
}

TEST(OnnxImporter, AShapeRuleErrorIsListedUnderTheModelNode) {
  ModelBuilder m(13);
  m.input("x", {2, 3});
  m.input("z", {2, 3}, onnx::TensorProto::INT64);
  m.node("Add", {"x", "z"}, {"y"}, "mixed");
  m.output("y");
  std::string err = m.importError();
  // The shape rule's own "node 'mixed' (Add): " is not repeated.
  EXPECT_EQ(err.substr(0, err.find('\n')),
            "model.onnx: node 'mixed' (Add, opset 13): operands have different dtypes: f32[2,3] "
            "and i64[2,3]");
}

TEST(OnnxImporter, GarbageBytesGiveAClearError) {
  const char garbage[] = "\xff\xff\xff\xff this is not a protobuf \x01\x02";
  try {
    importOnnxBytes(garbage, sizeof garbage, "model.onnx");
    FAIL() << "garbage imported";
  } catch (const CompileError& e) {
    EXPECT_STREQ(e.what(), "model.onnx: not a valid ONNX model (protobuf parse failed)");
  }
}

TEST(OnnxImporter, EmptyBytesHaveNoGraph) {
  try {
    importOnnxBytes("", 0, "empty.onnx");
    FAIL() << "empty bytes imported";
  } catch (const CompileError& e) {
    EXPECT_STREQ(e.what(), "empty.onnx: not a valid ONNX model (it has no graph)");
  }
}

TEST(OnnxImporter, SymbolicDimIsAnErrorNamingInputAndDim) {
  ModelBuilder m(13);
  onnx::ValueInfoProto* x = m.input("x", {1, 3});
  x->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("N");
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  std::string err = m.importError();
  EXPECT_NE(err.find("input 'x' dim 0 is symbolic ('N'): nanoc needs static shapes"),
            std::string::npos)
      << err;
}

TEST(OnnxImporter, InitializerWithTooFewBytesIsAnError) {
  ModelBuilder m(13);
  m.input("x", {2});
  onnx::TensorProto* t = m.graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(1000000000);
  t->add_dims(1000000000);
  t->set_raw_data(std::string(8, '\0'));
  m.node("Add", {"x", "w"}, {"y"});
  m.output("y");
  std::string err = m.importError();
  EXPECT_NE(err.find("initializer 'w'"), std::string::npos) << err;
}

TEST(OnnxImporter, ExternalDataIsAnError) {
  ModelBuilder m(13);
  m.input("x", {2});
  onnx::TensorProto* t = m.graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(2);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  m.node("Add", {"x", "w"}, {"y"});
  m.output("y");
  EXPECT_NE(m.importError().find("initializer 'w' keeps its data in an external file"),
            std::string::npos);
}

TEST(OnnxImporter, LegacyBroadcastAxisAlignsB) {
  ModelBuilder m(6);
  m.input("x", {2, 3, 4, 5});
  m.floatInit("b", {3}, {1.f, 2.f, 3.f});
  onnx::NodeProto* n = m.node("Add", {"x", "b"}, {"y"}, "add");
  setInt(n, "broadcast", 1);
  setInt(n, "axis", 1);
  m.output("y");
  auto g = m.import();
  // The Reshape of the constant b folded as it was imported.
  ASSERT_EQ(ops(*g), (std::vector<std::string>{"Add"}));
  const Value* b = onlyNode(*g, "Add").inputs[1];
  ASSERT_TRUE(b->isConstant());
  EXPECT_EQ(b->type.str(), "f32[3,1,1]");
  EXPECT_EQ(b->as<float>()[2], 3.f);
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[2,3,4,5]");
}

TEST(OnnxImporter, MaxPoolFillsDefaultsAndImportsUsedIndices) {
  ModelBuilder m(12);
  m.input("x", {1, 1, 4, 4});
  onnx::NodeProto* n = m.node("MaxPool", {"x"}, {"y"}, "pool");
  setInts(n, "kernel_shape", {2, 2});
  setInts(n, "strides", {2, 2});
  m.output("y");
  auto g = m.import();
  const Node& pool = onlyNode(*g, "MaxPool");
  EXPECT_EQ(pool.ints("pads"), (Dims{0, 0, 0, 0}));
  EXPECT_EQ(pool.ints("dilations"), (Dims{1, 1}));
  EXPECT_EQ(pool.i("ceil_mode"), 0);

  // A used Indices output makes it the two-output MaxPoolWithIndices.
  n->add_output("idx");
  m.output("idx");
  g = m.import();
  const Node& with = onlyNode(*g, "MaxPoolWithIndices");
  EXPECT_EQ(with.i("storage_order"), 0);
  EXPECT_EQ(g->outputs[1]->name, "idx");
  EXPECT_EQ(g->outputs[1]->type.str(), "i64[1,1,2,2]");
}

TEST(OnnxImporter, BatchNormAndDropoutForInference) {
  ModelBuilder m(12);
  m.input("x", {1, 2, 3, 3});
  for (const char* p : {"s", "b", "mean", "var"}) m.floatInit(p, {2}, {1.f, 1.f});
  m.node("BatchNormalization", {"x", "s", "b", "mean", "var"}, {"bn"}, "bn");
  m.node("Dropout", {"bn"}, {"y", "mask"}, "drop");  // mask unused: fine
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(ops(*g), (std::vector<std::string>{"BatchNormalization", "Identity"}));
  EXPECT_EQ(onlyNode(*g, "BatchNormalization").f("epsilon"), 1e-5);
}

TEST(OnnxImporter, DropoutMaskIsAllTrueAndTrainingNeedsAConstantZeroRatio) {
  ModelBuilder m(13);
  m.input("x", {2, 3});
  m.floatInit("ratio", {}, {0.f});
  onnx::TensorProto* t = m.graph()->add_initializer();
  t->set_name("training");
  t->set_data_type(onnx::TensorProto::BOOL);
  t->add_int32_data(1);
  m.node("Dropout", {"x", "ratio", "training"}, {"y", "mask"}, "drop");
  m.output("y");
  m.output("mask");
  auto g = m.import();
  EXPECT_EQ(ops(*g), (std::vector<std::string>{"Identity"}));
  ASSERT_TRUE(g->outputs[1]->isConstant());
  EXPECT_EQ(g->outputs[1]->type.str(), "bool[2,3]");
  EXPECT_EQ(*g->outputs[1]->data, std::vector<uint8_t>(6, 1));

  ModelBuilder random(13);
  random.input("x", {2, 3});
  random.floatInit("ratio", {}, {0.5f});
  onnx::TensorProto* on = random.graph()->add_initializer();
  on->set_name("training");
  on->set_data_type(onnx::TensorProto::BOOL);
  on->add_int32_data(1);
  random.node("Dropout", {"x", "ratio", "training"}, {"y"}, "drop");
  random.output("y");
  EXPECT_NE(random.importError().find("draws random numbers"), std::string::npos);

  ModelBuilder fed(13);
  fed.input("x", {2, 3});
  fed.input("training", {}, onnx::TensorProto::BOOL);
  fed.node("Dropout", {"x", "", "training"}, {"y"}, "drop");
  fed.output("y");
  EXPECT_NE(fed.importError().find("training_mode input 'training' is computed at run time"),
            std::string::npos);
}

TEST(OnnxImporter, HalfPrecisionMatMulComputesInF32AndRoundsOnce) {
  for (auto [type, name] : {std::pair{onnx::TensorProto::FLOAT16, "f16"},
                            std::pair{onnx::TensorProto::BFLOAT16, "bf16"}}) {
    ModelBuilder m(13);
    m.input("a", {2, 3}, type);
    m.input("b", {3, 4}, type);
    m.node("MatMul", {"a", "b"}, {"y"}, "mm");
    m.output("y");
    auto g = m.import();
    EXPECT_EQ(ops(*g), (std::vector<std::string>{"Cast", "Cast", "MatMul", "Cast"}));
    EXPECT_EQ(g->outputs[0]->type.str(), std::string(name) + "[2,4]");
    EXPECT_EQ(g->outputs[0]->name, "y");
  }
}

TEST(OnnxImporter, TransposeDefaultPermReversesAndConcatAxisIsNormalized) {
  ModelBuilder m(13);
  m.input("x", {2, 3, 4});
  m.node("Transpose", {"x"}, {"t"});
  setInt(m.node("Concat", {"t", "t"}, {"y"}), "axis", -1);
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(onlyNode(*g, "Transpose").ints("perm"), (Dims{2, 1, 0}));
  EXPECT_EQ(onlyNode(*g, "Concat").i("axis"), 2);
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[4,3,4]");
}

TEST(OnnxImporter, SumBecomesAChainOfAdds) {
  ModelBuilder m(13);
  m.input("a", {2, 3});
  m.input("b", {2, 3});
  m.input("c", {3});
  m.node("Sum", {"a", "b", "c"}, {"y"}, "sum");
  m.output("y");
  auto g = m.import();
  ASSERT_EQ(ops(*g), (std::vector<std::string>{"Add", "Add"}));
  EXPECT_EQ(g->nodes[1]->name, "sum");
  EXPECT_EQ(g->nodes[1]->inputs[0], g->nodes[0]->outputs[0]);
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[2,3]");
}

TEST(OnnxImporter, UnsqueezeAndSqueezeBecomeReshapes) {
  for (int64_t opset : {11, 13}) {
    ModelBuilder m(opset);
    m.input("x", {3, 4});
    onnx::NodeProto* u = m.node("Unsqueeze", {"x"}, {"u"});
    onnx::NodeProto* s = m.node("Squeeze", {"u"}, {"y"});
    if (opset < 13) {
      setInts(u, "axes", {0, -1});
      setInts(s, "axes", {0});
    } else {
      m.int64Init("uaxes", {0, -1});
      m.int64Init("saxes", {0});
      u->add_input("uaxes");
      s->add_input("saxes");
    }
    m.output("y");
    auto g = m.import();
    ASSERT_EQ(ops(*g), (std::vector<std::string>{"Reshape", "Reshape"})) << opset;
    EXPECT_EQ(g->nodes[0]->ints("shape"), (Dims{1, 3, 4, 1})) << opset;
    EXPECT_EQ(g->nodes[1]->ints("shape"), (Dims{3, 4, 1})) << opset;
  }
}

TEST(OnnxImporter, ConstantOfShapeWithAConstantShapeIsAConstant) {
  ModelBuilder m(13);
  m.input("x", {2, 3});
  m.int64Init("shape", {2, 3});
  onnx::NodeProto* c = m.node("ConstantOfShape", {"shape"}, {"k"});
  onnx::AttributeProto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_dims(1);
  a->mutable_t()->add_float_data(7.f);
  m.node("Add", {"x", "k"}, {"y"});
  m.output("y");
  auto g = m.import();
  const Value* k = onlyNode(*g, "Add").inputs[1];
  ASSERT_TRUE(k->isConstant());
  EXPECT_EQ(k->type.str(), "f32[2,3]");
  EXPECT_EQ(k->as<float>()[5], 7.f);
}

// ---- shapes fold as they import ----

std::vector<int64_t> int64s(const Value* v) {
  EXPECT_TRUE(v->isConstant()) << v->name;
  EXPECT_EQ(v->type.dtype, DType::I64) << v->name;
  return std::vector<int64_t>(v->as<int64_t>(), v->as<int64_t>() + v->type.numel());
}

TEST(OnnxImporter, ShapeFeedsReshapeAsAConstant) {
  ModelBuilder m(13);
  m.input("x", {6, 2});
  m.input("like", {3, 4});
  m.node("Shape", {"like"}, {"s"});
  m.node("Reshape", {"x", "s"}, {"y"});
  m.node("Add", {"y", "like"}, {"z"});
  m.output("z");
  auto g = m.import();
  EXPECT_EQ(ops(*g), (std::vector<std::string>{"Reshape", "Add"}));
  EXPECT_EQ(onlyNode(*g, "Reshape").ints("shape"), (Dims{3, 4}));
}

TEST(OnnxImporter, ShapeConcatReshapeChainFoldsAtImport) {
  // The exporter's flatten: Reshape(x, Concat(Shape(x)[0:1], [-1])).
  ModelBuilder m(15);
  m.input("x", {2, 3, 4});
  onnx::NodeProto* shape = m.node("Shape", {"x"}, {"batch"});
  setInt(shape, "end", 1);
  setInts(m.node("Constant", {}, {"minus_one"}), "value_ints", {-1});
  setInt(m.node("Concat", {"batch", "minus_one"}, {"flat_shape"}, "concat"), "axis", 0);
  m.node("Reshape", {"x", "flat_shape"}, {"y"});
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(ops(*g), (std::vector<std::string>{"Reshape"}));
  EXPECT_EQ(onlyNode(*g, "Reshape").ints("shape"), (Dims{2, 12}));
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[2,12]");
}

TEST(OnnxImporter, FoldedValuesKeepTheModelsNames) {
  ModelBuilder m(13);
  m.input("x", {2, 3});
  m.node("Shape", {"x"}, {"s"});
  setInt(m.node("Concat", {"s", "s"}, {"twice"}, "concat"), "axis", 0);
  m.output("twice");
  auto g = m.import();
  EXPECT_TRUE(g->nodes.empty());
  ASSERT_EQ(g->outputs.size(), 1u);
  EXPECT_EQ(g->outputs[0]->name, "twice");
  EXPECT_EQ(int64s(g->outputs[0]), (Dims{2, 3, 2, 3}));
}

TEST(OnnxImporter, ShapeStartAndEndFromOpset15ClampLikeOnnx) {
  ModelBuilder m(15);
  m.input("x", {2, 3, 4, 5});
  setInt(m.node("Shape", {"x"}, {"last_two"}), "start", -2);
  onnx::NodeProto* middle = m.node("Shape", {"x"}, {"middle"});
  setInt(middle, "start", 1);
  setInt(middle, "end", -1);
  onnx::NodeProto* clamped = m.node("Shape", {"x"}, {"clamped"});
  setInt(clamped, "start", -100);
  setInt(clamped, "end", 100);
  onnx::NodeProto* empty = m.node("Shape", {"x"}, {"empty"});
  setInt(empty, "start", 3);
  setInt(empty, "end", 1);
  for (const char* out : {"last_two", "middle", "clamped", "empty"}) m.output(out);
  auto g = m.import();
  EXPECT_EQ(int64s(g->outputs[0]), (Dims{4, 5}));
  EXPECT_EQ(int64s(g->outputs[1]), (Dims{3, 4}));
  EXPECT_EQ(int64s(g->outputs[2]), (Dims{2, 3, 4, 5}));
  EXPECT_EQ(g->outputs[3]->type.str(), "i64[0]");
}

TEST(OnnxImporter, SizeIsAnInt64Scalar) {
  ModelBuilder m(13);
  m.input("x", {2, 3, 4});
  m.node("Size", {"x"}, {"n"});
  m.output("n");
  auto g = m.import();
  EXPECT_EQ(g->outputs[0]->type.str(), "i64[]");
  EXPECT_EQ(int64s(g->outputs[0]), (Dims{24}));
}

TEST(OnnxImporter, ConstantOfShapeOfAShapeIsAConstant) {
  ModelBuilder m(13);
  m.input("x", {2, 3});
  m.node("Shape", {"x"}, {"s"});
  m.node("ConstantOfShape", {"s"}, {"zeros"});
  m.node("Add", {"x", "zeros"}, {"y"});
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(ops(*g), (std::vector<std::string>{"Add"}));
  const Value* zeros = onlyNode(*g, "Add").inputs[1];
  ASSERT_TRUE(zeros->isConstant());
  EXPECT_EQ(zeros->name, "zeros");
  EXPECT_EQ(zeros->type.str(), "f32[2,3]");
}

TEST(OnnxImporter, ConstantOfShapeBeyondTheMadeConstantBudgetIsAnError) {
  ModelBuilder m(13);
  m.input("x", {2});
  m.int64Init("shape", {1 << 20, 1 << 20});
  m.node("ConstantOfShape", {"shape"}, {"big"}, "big");
  m.node("Add", {"x", "big"}, {"y"});
  m.output("y");
  std::string err = m.importError();
  EXPECT_EQ(err.rfind("model.onnx: node 'big' (ConstantOfShape, opset 13): output "
                      "f32[1048576,1048576] would take the constants that nanoc makes at compile "
                      "time (ConstantOfShape, Range, recurrences' zero states) past 4 GiB",
                      0),
            0u)
      << err;
}

void int64Scalar(ModelBuilder& m, const std::string& name, int64_t v) {
  onnx::TensorProto* t = m.graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_int64_data(v);
}

TEST(OnnxImporter, RangeOfConstantsIsAConstant) {
  ModelBuilder m(13);
  m.input("x", {1});
  int64Scalar(m, "start", 10);
  int64Scalar(m, "limit", 1);
  int64Scalar(m, "delta", -4);
  m.node("Range", {"start", "limit", "delta"}, {"r"});
  m.output("r");
  auto g = m.import();
  EXPECT_EQ(int64s(g->outputs[0]), (Dims{10, 6, 2}));
}

TEST(OnnxImporter, RangeOfTooManyElementsIsAnError) {
  ModelBuilder m(13);
  m.input("x", {1});
  int64Scalar(m, "start", 0);
  int64Scalar(m, "limit", int64_t{1} << 62);
  int64Scalar(m, "delta", 1);
  m.node("Range", {"start", "limit", "delta"}, {"r"}, "range");
  m.output("r");
  EXPECT_EQ(m.importError(),
            "model.onnx: node 'range' (Range, opset 13): the range has too many elements\n"
            "to add an operator or extend one, see docs/ADDING_AN_OPERATOR.md; which operators "
            "nanoc covers, and how far: docs/CONFORMANCE.md");
}

TEST(OnnxImporter, RangeWithARunTimeInputIsAnError) {
  ModelBuilder m(13);
  onnx::ValueInfoProto* limit = m.input("limit", {}, onnx::TensorProto::INT64);
  (void)limit;
  int64Scalar(m, "start", 0);
  int64Scalar(m, "delta", 1);
  m.node("Range", {"start", "limit", "delta"}, {"r"}, "range");
  m.output("r");
  std::string err = m.importError();
  EXPECT_EQ(err.rfind("model.onnx: node 'range' (Range, opset 13): limit input 'limit' is "
                      "computed at run time",
                      0),
            0u)
      << err;
}

TEST(OnnxImporter, SymbolicOutputDeclarationsAreFine) {
  ModelBuilder m(13);
  m.openInput("x", {"batch", "3"});
  m.node("Relu", {"x"}, {"y"});
  onnx::ValueInfoProto* y = m.output("y");
  onnx::TypeProto::Tensor* t = y->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  t->mutable_shape()->add_dim()->set_dim_param("batch");
  t->mutable_shape()->add_dim()->set_dim_value(3);
  OnnxImportOptions options;
  options.dim_params["batch"] = 2;
  EXPECT_EQ(m.import(options)->outputs[0]->type.str(), "f32[2,3]");
}

// ---- open input dims: --input-shape and --dim ----

TEST(OnnxImporter, DimFixesEverySymbolicDimOfThatName) {
  ModelBuilder m(13);
  m.openInput("ids", {"batch", "seq"});
  m.openInput("mask", {"batch", "1", "seq"});
  m.node("Relu", {"ids"}, {"a"});
  m.node("Relu", {"mask"}, {"b"});
  m.output("a");
  m.output("b");
  OnnxImportOptions options;
  options.dim_params = {{"batch", 2}, {"seq", 7}};
  auto g = m.import(options);
  EXPECT_EQ(g->inputs[0]->type.str(), "f32[2,7]");
  EXPECT_EQ(g->inputs[1]->type.str(), "f32[2,1,7]");
}

TEST(OnnxImporter, InputShapeFixesUnknownAndSymbolicDims) {
  ModelBuilder m(13);
  m.openInput("x", {"?", "3", "height", "8"});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  OnnxImportOptions options;
  options.input_shapes["x"] = {4, 3, 16, 8};
  EXPECT_EQ(m.import(options)->inputs[0]->type.str(), "f32[4,3,16,8]");
}

TEST(OnnxImporter, InputShapeGivesAShapelessInputItsShape) {
  ModelBuilder m(13);
  onnx::ValueInfoProto* x = m.input("x", {});
  x->mutable_type()->mutable_tensor_type()->clear_shape();
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  EXPECT_EQ(m.importError(),
            "model.onnx: input 'x' has no shape, not even a rank: give it one with --input-shape "
            "x=d0,d1,...");
  OnnxImportOptions options;
  options.input_shapes["x"] = {5};
  EXPECT_EQ(m.import(options)->inputs[0]->type.str(), "f32[5]");
}

TEST(OnnxImporter, OneOpenDimIsAnErrorSuggestingBothFlags) {
  ModelBuilder m(13);
  m.openInput("x", {"N", "3"});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  EXPECT_EQ(m.importError(),
            "model.onnx: input 'x' dim 0 is symbolic ('N'): nanoc needs static shapes; fix it "
            "with --dim N=1 or --input-shape x=1,3 (1 stands for the size you will run with)");
}

TEST(OnnxImporter, EveryOpenDimIsListedInOneError) {
  ModelBuilder m(13);
  m.openInput("ids", {"batch", "seq"});
  m.openInput("extra", {"?", "4"});
  m.node("Add", {"ids", "ids"}, {"a"});
  m.node("Relu", {"extra"}, {"b"});
  m.output("a");
  m.output("b");
  EXPECT_EQ(m.importError(),
            "model.onnx: 3 input dims are open (input 'ids' dim 0 is symbolic ('batch'), input "
            "'ids' dim 1 is symbolic ('seq'), input 'extra' dim 0 is unknown): nanoc needs static "
            "shapes; fix them with --input-shape ids=1,1 --input-shape extra=1,4 (1 stands for "
            "the sizes you will run with)");
}

TEST(OnnxImporter, InputShapeMustAgreeWithTheModel) {
  ModelBuilder m(13);
  m.openInput("x", {"N", "3"});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  OnnxImportOptions rank;
  rank.input_shapes["x"] = {1, 3, 1};
  EXPECT_EQ(m.importError(rank),
            "model.onnx: --input-shape x has 3 dims, but the model's input 'x' has rank 2");
  OnnxImportOptions conflict;
  conflict.input_shapes["x"] = {1, 4};
  EXPECT_EQ(m.importError(conflict),
            "model.onnx: --input-shape x sets dim 1 to 4, but the model fixes it at 3");
}

TEST(OnnxImporter, FlagsNamingNothingInTheModelAreErrors) {
  ModelBuilder m(13);
  m.openInput("x", {"N", "3"});
  m.input("b", {3});
  m.floatInit("b", {3}, {1.f, 2.f, 3.f});
  m.node("Add", {"x", "b"}, {"y"});
  m.output("y");
  OnnxImportOptions typo;
  typo.input_shapes["X"] = {1, 3};
  EXPECT_EQ(m.importError(typo),
            "model.onnx: --input-shape names 'X', which is not a graph input; the inputs are: x");
  OnnxImportOptions initializer;
  initializer.input_shapes["b"] = {3};
  EXPECT_EQ(m.importError(initializer),
            "model.onnx: --input-shape names 'b', an initializer that nanoc compiles in as a "
            "constant; the inputs are: x");
  OnnxImportOptions dim;
  dim.dim_params["batch"] = 1;
  EXPECT_EQ(m.importError(dim),
            "model.onnx: --dim batch names no symbolic dim of the graph inputs (they have: N)");
}

TEST(OnnxImporter, HugeInputDimIsAnError) {
  ModelBuilder m(13);
  m.input("x", {int64_t{1} << 40, int64_t{1} << 40});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  EXPECT_EQ(m.importError(),
            "model.onnx: input 'x' f32[1099511627776,1099511627776] is too large to address");
}

TEST(OnnxImporter, AnOperatorWhoseOutputShapeDependsOnTheDataSaysSo) {
  ModelBuilder m(13);
  m.input("x", {4});
  m.node("NonZero", {"x"}, {"y"}, "nz");
  m.output("y");
  std::string err = m.importError();
  EXPECT_EQ(err.substr(0, err.find('\n')),
            "model.onnx: node 'nz' (NonZero, opset 13): unsupported operator: its output's shape "
            "depends on the input data, and nanoc compiles static shapes only (docs/STATUS.md)");
}

TEST(OnnxImporter, UnsupportedOperatorsComeBeforeOpenDims) {
  ModelBuilder m(13);
  m.openInput("x", {"N"});
  m.node("ImageDecoder", {"x"}, {"y"}, "e");
  m.output("y");
  std::string err = m.importError();
  EXPECT_EQ(err.substr(0, err.find('\n')),
            "model.onnx: node 'e' (ImageDecoder, opset 13): unsupported operator");
  EXPECT_NE(err.find("(and input 'x' dim 0 is symbolic ('N')"), std::string::npos) << err;
}

TEST(OnnxImporter, ADefaultDomainNodeNeedsTheDefaultOpset) {
  ModelBuilder m(3);
  m.model().mutable_opset_import(0)->set_domain("ai.onnx.ml");
  m.input("x", {2});
  m.node("Relu", {"x"}, {"y"}, "r");
  m.output("y");
  std::string err = m.importError();
  EXPECT_EQ(err.substr(0, err.find('\n')),
            "model.onnx: node 'r' (Relu, opset none): the model imports no opset of the default "
            "ONNX domain");
}

TEST(OnnxImporter, NewerDataTypesAreNamed) {
  ModelBuilder m(21);
  m.input("x", {2}, 24);  // FLOAT8E8M0
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  EXPECT_EQ(m.importError(),
            "model.onnx: input 'x' has dtype FLOAT8E8M0, which nanoc does not support");
}

// ---- control flow ----

onnx::GraphProto* setGraph(onnx::NodeProto* n, const std::string& key) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::GRAPH);
  return a->mutable_g();
}

onnx::NodeProto* addNode(onnx::GraphProto* g, const std::string& op,
                         std::vector<std::string> inputs, std::vector<std::string> outputs,
                         const std::string& name = "") {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const std::string& in : inputs) n->add_input(in);
  for (const std::string& out : outputs) n->add_output(out);
  return n;
}

void boolConstant(ModelBuilder& m, const std::string& name, bool value) {
  onnx::AttributeProto* a = m.node("Constant", {}, {name})->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
  a->mutable_t()->add_int32_data(value);
}

// If(cond) { then: Relu(x) + w (a branch initializer) } else { Sigmoid(x) }.
void ifModel(ModelBuilder& m, const std::string& cond) {
  m.input("x", {2, 2});
  onnx::NodeProto* n = m.node("If", {cond}, {"y"}, "choose");
  onnx::GraphProto* then_branch = setGraph(n, "then_branch");
  addNode(then_branch, "Relu", {"x"}, {"r"}, "relu");
  addNode(then_branch, "Add", {"r", "w"}, {"then_out"}, "add");
  onnx::TensorProto* w = then_branch->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_float_data(5.f);
  then_branch->add_output()->set_name("then_out");
  onnx::GraphProto* else_branch = setGraph(n, "else_branch");
  addNode(else_branch, "Sigmoid", {"x"}, {"else_out"}, "sigmoid");
  else_branch->add_output()->set_name("else_out");
  m.output("y");
}

TEST(OnnxImporter, IfWithAConstantConditionIsItsTakenBranch) {
  ModelBuilder yes(13);
  boolConstant(yes, "cond", true);
  ifModel(yes, "cond");
  auto g = yes.import();
  EXPECT_EQ(ops(*g), (std::vector<std::string>{"Relu", "Add"}));
  EXPECT_EQ(g->nodes[0]->name, "choose/relu");
  EXPECT_EQ(g->outputs[0]->name, "y");
  EXPECT_EQ(g->outputs[0]->producer->name, "choose/add");
  EXPECT_EQ(g->nodes[1]->inputs[1]->as<float>()[0], 5.f);
  EXPECT_NO_THROW(verifyGraph(*g));

  ModelBuilder no(13);
  boolConstant(no, "cond", false);
  ifModel(no, "cond");
  EXPECT_EQ(ops(*no.import()), (std::vector<std::string>{"Sigmoid"}));
}

TEST(OnnxImporter, IfOfAValueFromOutsideCopiesIt) {
  ModelBuilder m(13);
  boolConstant(m, "cond", true);
  m.input("x", {2});
  onnx::NodeProto* n = m.node("If", {"cond"}, {"y"}, "choose");
  setGraph(n, "then_branch")->add_output()->set_name("x");
  setGraph(n, "else_branch")->add_output()->set_name("x");
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(ops(*g), (std::vector<std::string>{"Identity"}));
  EXPECT_EQ(g->outputs[0]->name, "y");
}

TEST(OnnxImporter, IfWithARunTimeConditionKeepsBothBranches) {
  ModelBuilder m(13);
  m.input("c", {}, onnx::TensorProto::BOOL);
  ifModel(m, "c");
  auto g = m.import();
  ASSERT_EQ(ops(*g), (std::vector<std::string>{"If"}));
  const Node& node = *g->nodes[0];
  EXPECT_EQ(node.name, "choose");
  ASSERT_EQ(node.subgraphs.size(), 2u);
  EXPECT_EQ(ops(*node.subgraphs[0]), (std::vector<std::string>{"Relu", "Add"}));
  EXPECT_EQ(ops(*node.subgraphs[1]), (std::vector<std::string>{"Sigmoid"}));
  // The branches read x from outside: the node's second operand, each
  // branch's one input; the then branch's initializer is its own constant.
  ASSERT_EQ(node.inputs.size(), 2u);
  EXPECT_EQ(node.inputs[0]->name, "c");
  EXPECT_EQ(node.inputs[1]->name, "x");
  EXPECT_EQ(node.subgraphs[0]->inputs.size(), 1u);
  EXPECT_EQ(node.subgraphs[0]->nodes[0]->inputs[0], node.subgraphs[0]->inputs[0]);
  EXPECT_TRUE(node.subgraphs[0]->nodes[1]->inputs[1]->isConstant());
  EXPECT_EQ(g->outputs[0]->name, "y");
  EXPECT_EQ(g->outputs[0]->producer, &node);
  EXPECT_NO_THROW(verifyGraph(*g));
}

TEST(OnnxImporter, AnUnsupportedNodeInTheTakenBranchIsListed) {
  ModelBuilder m(13);
  boolConstant(m, "cond", true);
  m.input("x", {2});
  onnx::NodeProto* n = m.node("If", {"cond"}, {"y"}, "choose");
  onnx::GraphProto* then_branch = setGraph(n, "then_branch");
  addNode(then_branch, "ImageDecoder", {"x"}, {"e"}, "erf");
  then_branch->add_output()->set_name("e");
  setGraph(n, "else_branch")->add_output()->set_name("x");
  m.node("Relu", {"y"}, {"z"});
  m.output("z");
  std::string err = m.importError();
  EXPECT_EQ(err.substr(0, err.find('\n')),
            "model.onnx: node 'choose/erf' (ImageDecoder, opset 13): unsupported operator");
  EXPECT_NE(err.find("(1 later node reading their results were not checked)"), std::string::npos)
      << err;
}

// Loop(M, cond, y) { y_out = y_in + y_in; scan_out = y_out } over a
// constant y: the body's doubling, `trips` times.
ModelBuilder doublingLoop(const std::string& m_name, const std::string& cond_name) {
  ModelBuilder m(13);
  m.floatInit("y", {2}, {1.f, -3.f});
  onnx::NodeProto* n = m.node("Loop", {m_name, cond_name, "y"}, {"final", "scan"}, "loop");
  onnx::GraphProto* body = setGraph(n, "body");
  for (const char* in : {"iter", "cond_in", "y_in"}) body->add_input()->set_name(in);
  addNode(body, "Identity", {"cond_in"}, {"cond_out"}, "keep");
  addNode(body, "Add", {"y_in", "y_in"}, {"y_out"}, "double");
  addNode(body, "Identity", {"y_out"}, {"scan_out"}, "record");
  for (const char* out : {"cond_out", "y_out", "scan_out"}) body->add_output()->set_name(out);
  m.output("final");
  m.output("scan");
  return m;
}

TEST(OnnxImporter, LoopWithAConstantTripCountIsUnrolled) {
  ModelBuilder m = doublingLoop("M", "");
  m.int64Init("M", {3});
  auto g = m.import();
  // Every iteration folded: y doubled three times, the scan its three steps.
  ASSERT_TRUE(g->outputs[0]->isConstant());
  EXPECT_EQ(g->outputs[0]->name, "final");
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[2]");
  EXPECT_EQ(g->outputs[0]->as<float>()[0], 8.f);
  EXPECT_EQ(g->outputs[0]->as<float>()[1], -24.f);
  ASSERT_TRUE(g->outputs[1]->isConstant());
  EXPECT_EQ(g->outputs[1]->type.str(), "f32[3,2]");
  const float* scan = g->outputs[1]->as<float>();
  EXPECT_EQ(std::vector<float>(scan, scan + 6), (std::vector<float>{2, -6, 4, -12, 8, -24}));
  EXPECT_NO_THROW(verifyGraph(*g));
}

TEST(OnnxImporter, LoopOverARunTimeValueRunsItsBodyPerIteration) {
  // y a graph input: the nodes of each iteration stay, named after it.
  ModelBuilder m(13);
  m.input("y", {2});
  m.int64Init("M", {2});
  onnx::NodeProto* n = m.node("Loop", {"M", "", "y"}, {"final"}, "loop");
  onnx::GraphProto* body = setGraph(n, "body");
  for (const char* in : {"iter", "cond_in", "y_in"}) body->add_input()->set_name(in);
  addNode(body, "Identity", {"cond_in"}, {"cond_out"}, "keep");
  addNode(body, "Relu", {"y_in"}, {"y_out"}, "relu");
  for (const char* out : {"cond_out", "y_out"}) body->add_output()->set_name(out);
  m.output("final");
  auto g = m.import();
  EXPECT_EQ(ops(*g), (std::vector<std::string>{"Relu", "Relu"}));
  EXPECT_EQ(g->nodes[0]->name, "loop/i0/relu");
  EXPECT_EQ(g->nodes[1]->name, "loop/i1/relu");
  EXPECT_EQ(g->nodes[1]->inputs[0], g->nodes[0]->outputs[0]);
  EXPECT_EQ(g->outputs[0]->name, "final");
  EXPECT_NO_THROW(verifyGraph(*g));
}

TEST(OnnxImporter, LoopStopsWhenItsBodysConstantConditionSaysSo) {
  // cond_out = iter < 1: two iterations run, however large M is.
  ModelBuilder m(13);
  m.floatInit("y", {2}, {1.f, -3.f});
  m.int64Init("M", {1000});
  boolConstant(m, "go", true);
  onnx::NodeProto* n = m.node("Loop", {"M", "go", "y"}, {"final", "scan"}, "loop");
  onnx::GraphProto* body = setGraph(n, "body");
  for (const char* in : {"iter", "cond_in", "y_in"}) body->add_input()->set_name(in);
  onnx::AttributeProto* one = addNode(body, "Constant", {}, {"one"})->add_attribute();
  one->set_name("value");
  one->set_type(onnx::AttributeProto::TENSOR);
  one->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  one->mutable_t()->add_int64_data(1);
  addNode(body, "Less", {"iter", "one"}, {"cond_out"});
  addNode(body, "Add", {"y_in", "y_in"}, {"y_out"});
  addNode(body, "Identity", {"y_out"}, {"scan_out"});
  for (const char* out : {"cond_out", "y_out", "scan_out"}) body->add_output()->set_name(out);
  m.output("final");
  m.output("scan");
  auto g = m.import();
  ASSERT_TRUE(g->outputs[1]->isConstant());
  EXPECT_EQ(g->outputs[1]->type.str(), "f32[2,2]");
  EXPECT_EQ(g->outputs[0]->as<float>()[0], 4.f);
}

TEST(OnnxImporter, LoopWithARunTimeTripCountAndScanOutputsNamesTheInputs) {
  ModelBuilder m = doublingLoop("M", "");
  m.input("M", {}, onnx::TensorProto::INT64);
  std::string err = m.importError();
  EXPECT_EQ(err.substr(0, err.find('\n')),
            "model.onnx: node 'loop' (Loop, opset 13): trip count 'M' is computed at run time "
            "(from input 'M'), and the Loop has 1 scan output, whose length would then depend "
            "on the data: nanoc does not support that (compile such inputs in with --bind "
            "NAME=FILE.pb)");
  ModelBuilder forever = doublingLoop("", "");
  err = forever.importError();
  EXPECT_NE(err.find("has neither a trip count nor a condition"), std::string::npos) << err;
}

TEST(OnnxImporter, LoopWithARunTimeTripCountRunsItsBodyAtRunTime) {
  // Loop(M, "", y) { y_out = Relu(y_in) + w }, M a graph input: one IR Loop
  // whose body takes (iteration, cond, y) and reads w as its own constant.
  ModelBuilder m(13);
  m.input("M", {}, onnx::TensorProto::INT64);
  m.input("y", {2});
  m.floatInit("w", {2}, {1.f, 2.f});
  onnx::NodeProto* n = m.node("Loop", {"M", "", "y"}, {"final"}, "loop");
  onnx::GraphProto* body = setGraph(n, "body");
  for (const char* in : {"iter", "cond_in", "y_in"}) body->add_input()->set_name(in);
  addNode(body, "Identity", {"cond_in"}, {"cond_out"}, "keep");
  addNode(body, "Relu", {"y_in"}, {"r"}, "relu");
  addNode(body, "Add", {"r", "w"}, {"y_out"}, "add");
  for (const char* out : {"cond_out", "y_out"}) body->add_output()->set_name(out);
  m.output("final");
  auto g = m.import();
  ASSERT_EQ(ops(*g), (std::vector<std::string>{"Loop"}));
  const Node& loop = *g->nodes[0];
  EXPECT_EQ(loop.i("num_carried"), 1);
  EXPECT_EQ(loop.i("max_trips"), (int64_t{1} << 31) - 1);
  ASSERT_EQ(loop.inputs.size(), 3u);
  EXPECT_EQ(loop.inputs[0]->name, "M");
  EXPECT_EQ(loop.inputs[1], nullptr);
  EXPECT_EQ(loop.inputs[2]->name, "y");
  ASSERT_EQ(loop.subgraphs.size(), 1u);
  const Graph& b = *loop.subgraphs[0];
  EXPECT_EQ(b.inputs.size(), 3u);
  EXPECT_EQ(b.inputs[0]->type.str(), "i64[]");
  EXPECT_EQ(b.inputs[1]->type.str(), "bool[]");
  EXPECT_EQ(ops(b), (std::vector<std::string>{"Identity", "Relu", "Add"}));
  EXPECT_EQ(b.nodes[1]->inputs[0], b.inputs[2]);
  EXPECT_TRUE(b.nodes[2]->inputs[1]->isConstant());
  EXPECT_EQ(g->outputs[0]->producer, &loop);
  EXPECT_NO_THROW(verifyGraph(*g));
  // The op's reference runs the body per iteration: Relu(y) + w, three times.
  const int64_t trips = 3;
  const float y[2] = {-1.f, 2.f};
  float final_y[2] = {0, 0};
  findOp("Loop")->reference(loop, {&trips, nullptr, y}, {final_y});
  EXPECT_EQ(final_y[0], 3.f);
  EXPECT_EQ(final_y[1], 8.f);
}

// Scan(initial, x) { sum_out = sum_in + next; scan_out = sum_out } with one
// scan input, its outputs "sum" and "partial" the model's.
onnx::NodeProto* runningSumScan(ModelBuilder& m) {
  onnx::NodeProto* n = m.node("Scan", {"initial", "x"}, {"sum", "partial"}, "scan");
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name("num_scan_inputs");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  onnx::GraphProto* body = setGraph(n, "body");
  for (const char* in : {"sum_in", "next"}) body->add_input()->set_name(in);
  addNode(body, "Add", {"sum_in", "next"}, {"sum_out"});
  addNode(body, "Identity", {"sum_out"}, {"scan_out"});
  for (const char* out : {"sum_out", "scan_out"}) body->add_output()->set_name(out);
  m.output("sum");
  m.output("partial");
  return n;
}

TEST(OnnxImporter, ScanIsUnrolledInBothDirections) {
  // Scan(initial, x) { sum_out = sum_in + next; scan_out = sum_out }, x [2,3]
  // scanned along axis 1 backwards, the scan output stacked along axis 1.
  ModelBuilder m(11);
  m.floatInit("initial", {2}, {0.f, 10.f});
  m.floatInit("x", {2, 3}, {1.f, 2.f, 3.f, 4.f, 5.f, 6.f});
  onnx::NodeProto* n = runningSumScan(m);
  for (const char* key : {"scan_input_axes", "scan_input_directions", "scan_output_axes"}) {
    onnx::AttributeProto* list = n->add_attribute();
    list->set_name(key);
    list->set_type(onnx::AttributeProto::INTS);
    list->add_ints(1);
  }
  auto g = m.import();
  ASSERT_TRUE(g->outputs[0]->isConstant());
  EXPECT_EQ(g->outputs[0]->as<float>()[0], 6.f);   // 0 + 3 + 2 + 1
  EXPECT_EQ(g->outputs[0]->as<float>()[1], 25.f);  // 10 + 6 + 5 + 4
  ASSERT_TRUE(g->outputs[1]->isConstant());
  EXPECT_EQ(g->outputs[1]->type.str(), "f32[2,3]");
  const float* p = g->outputs[1]->as<float>();
  // Columns in the order of the steps: the last column is x's first.
  EXPECT_EQ(std::vector<float>(p, p + 6), (std::vector<float>{3, 5, 6, 16, 21, 25}));
}

TEST(OnnxImporter, ALongScanRunsAsALoop) {
  // Scan(initial, x) { sum_out = sum_in + next; scan_out = sum_out } over
  // 2,000 steps of x [2000, 2]: past the unrolling budget, one Loop whose
  // body Gathers step i of x and ScanWrites it into an accumulator.
  ModelBuilder m(11);
  m.input("initial", {2});
  m.input("x", {2000, 2});
  runningSumScan(m);
  auto g = m.import();
  ASSERT_EQ(ops(*g), (std::vector<std::string>{"nanoc.Zeros", "Loop"}));
  const Node& loop = *g->nodes[1];
  EXPECT_EQ(loop.i("num_carried"), 2);
  EXPECT_EQ(loop.i("max_trips"), 2000);
  EXPECT_EQ(*loop.inputs[0]->as<int64_t>(), 2000);
  EXPECT_EQ(loop.inputs[1], nullptr);
  EXPECT_EQ(loop.inputs[3], g->nodes[0]->outputs[0]);  // the accumulator starts as zeros
  ASSERT_EQ(loop.subgraphs.size(), 1u);
  EXPECT_EQ(ops(*loop.subgraphs[0]),
            (std::vector<std::string>{"Gather", "Add", "Identity", "nanoc.ScanWrite"}));
  EXPECT_EQ(g->outputs[0]->name, "sum");
  EXPECT_EQ(g->outputs[1]->name, "partial");
  EXPECT_EQ(g->outputs[1]->type.str(), "f32[2000,2]");
  EXPECT_NO_THROW(verifyGraph(*g));
  // The references run it: the running sums of x's rows.
  std::vector<float> initial = {1.f, -1.f}, x(4000), sum(2), partial(4000), zeros(4000, 0.f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7);
  const int64_t trips = 2000;
  findOp("Loop")->reference(loop, {&trips, nullptr, initial.data(), zeros.data(), x.data()},
                            {sum.data(), partial.data()});
  float s0 = 1.f, s1 = -1.f;
  for (size_t i = 0; i < 2000; ++i) {
    s0 += x[2 * i];
    s1 += x[2 * i + 1];
    ASSERT_EQ(partial[2 * i], s0) << i;
    ASSERT_EQ(partial[2 * i + 1], s1) << i;
  }
  EXPECT_EQ(sum[0], s0);
  EXPECT_EQ(sum[1], s1);
}

// ONNX's own function bodies (AffineGrid's) give Unsqueeze a 0-D axes
// tensor; it is one axis, as ONNX Runtime reads it.
TEST(OnnxImporter, UnsqueezeTakesAScalarAxis) {
  ModelBuilder m(13);
  m.input("x", {2, 3});
  onnx::TensorProto* axis = m.graph()->add_initializer();
  axis->set_name("axis");
  axis->set_data_type(onnx::TensorProto::INT64);
  axis->add_int64_data(-1);
  m.node("Unsqueeze", {"x", "axis"}, {"y"});
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[2,3,1]");
  // A shape stays 1-D only.
  ModelBuilder r(13);
  r.input("x", {6});
  onnx::TensorProto* shape = r.graph()->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_int64_data(6);
  r.node("Reshape", {"x", "shape"}, {"y"});
  r.output("y");
  EXPECT_NE(r.importError().find("must be a 1-D int64 tensor, not i64[]"), std::string::npos)
      << r.importError();
}

// ---- malformed graphs ----

TEST(OnnxImporter, ACycleIsAnErrorNamingItsNodes) {
  ModelBuilder m(13);
  m.input("x", {2});
  m.node("Add", {"x", "c"}, {"a"}, "first");
  m.node("Relu", {"a"}, {"b"}, "second");
  m.node("Relu", {"b"}, {"c"}, "third");
  m.output("c");
  EXPECT_EQ(m.importError(),
            "model.onnx: the graph has a cycle: node 'first' (Add) -> node 'second' (Relu) -> "
            "node 'third' (Relu) -> node 'first' (Add)");
}

TEST(OnnxImporter, NodesOutOfTopologicalOrderAreAnError) {
  ModelBuilder m(13);
  m.input("x", {2});
  m.node("Relu", {"a"}, {"y"}, "late_reader");
  m.node("Relu", {"x"}, {"a"}, "producer");
  m.output("y");
  EXPECT_EQ(m.importError(),
            "model.onnx: node 'late_reader' (Relu) reads 'a' before node 'producer' (Relu) defines "
            "it: ONNX requires nodes in topological order (onnx.checker rejects this model too)");
}

TEST(OnnxImporter, AValueDefinedTwiceIsAnError) {
  ModelBuilder m(13);
  m.input("x", {2});
  m.node("Relu", {"x"}, {"a"}, "one");
  m.node("Sigmoid", {"x"}, {"a"}, "two");
  m.output("a");
  EXPECT_EQ(m.importError(),
            "model.onnx: value 'a' is defined twice: by node 'one' (Relu) and by node 'two' "
            "(Sigmoid)");
  ModelBuilder shadow(13);
  shadow.input("x", {2});
  shadow.node("Relu", {"x"}, {"x"}, "in_place");
  shadow.output("x");
  EXPECT_EQ(shadow.importError(),
            "model.onnx: value 'x' is defined twice: by a graph input and by node 'in_place' "
            "(Relu)");
}

TEST(OnnxImporter, AnInputListedTwiceIsAnError) {
  ModelBuilder m(13);
  m.input("x", {2});
  m.input("x", {2});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  EXPECT_EQ(m.importError(), "model.onnx: graph input 'x' is listed twice");
}

TEST(OnnxImporter, AnInitializersDeclarationMustMatchIt) {
  ModelBuilder m(13);
  m.input("x", {3});
  m.input("b", {4});
  m.floatInit("b", {3}, {1.f, 2.f, 3.f});
  m.node("Add", {"x", "b"}, {"y"});
  m.output("y");
  EXPECT_EQ(m.importError(),
            "model.onnx: input 'b' is declared f32[4] but its initializer is f32[3]");
}

TEST(OnnxImporter, SequenceInputsAndOutputsAreRefused) {
  ModelBuilder m(13);
  onnx::ValueInfoProto* seq = m.graph()->add_input();
  seq->set_name("s");
  seq->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(onnx::TensorProto::FLOAT);
  m.node("Identity", {"s"}, {"y"});
  m.output("y");
  EXPECT_EQ(m.importError(),
            "model.onnx: input 's' is a sequence: nanoc supports tensor inputs only");

  ModelBuilder out(13);
  out.input("x", {2});
  out.node("Relu", {"x"}, {"y"});
  out.output("y")->mutable_type()->mutable_optional_type();
  EXPECT_EQ(out.importError(),
            "model.onnx: graph output 'y' is an optional: nanoc supports tensors only");
}

// A small model with a Shape chain, an If and a Conv: the byte-level tests'
// subject.
std::string byteTestModel() {
  ModelBuilder m(15);
  m.input("x", {1, 2, 4, 4});
  m.floatInit("w", {3, 2, 1, 1}, std::vector<float>(6, 0.5f));
  m.node("Conv", {"x", "w"}, {"c"}, "conv");
  setInt(m.node("Shape", {"c"}, {"s"}, "shape"), "end", 1);
  setInts(m.node("Constant", {}, {"minus_one"}), "value_ints", {-1});
  setInt(m.node("Concat", {"s", "minus_one"}, {"flat_shape"}, "concat"), "axis", 0);
  m.node("Reshape", {"c", "flat_shape"}, {"flat"}, "reshape");
  onnx::AttributeProto* cond = m.node("Constant", {}, {"cond"})->add_attribute();
  cond->set_name("value");
  cond->set_type(onnx::AttributeProto::TENSOR);
  cond->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
  cond->mutable_t()->add_int32_data(1);
  onnx::NodeProto* n = m.node("If", {"cond"}, {"y"}, "choose");
  for (const char* key : {"then_branch", "else_branch"}) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::GRAPH);
    onnx::NodeProto* relu = a->mutable_g()->add_node();
    relu->set_op_type("Relu");
    relu->add_input("flat");
    relu->add_output(std::string(key) + "_out");
    a->mutable_g()->add_output()->set_name(std::string(key) + "_out");
  }
  m.output("y");
  EXPECT_EQ(m.import()->outputs[0]->type.str(), "f32[1,48]");
  return m.model().SerializeAsString();
}

TEST(OnnxImporter, EveryByteFlipOfAModelIsAnErrorOrAModel) {
  const std::string bytes = byteTestModel();
  for (size_t at = 0; at < bytes.size(); ++at)
    for (unsigned char flip : {0x01, 0x80, 0xff}) {
      std::string mutated = bytes;
      mutated[at] = static_cast<char>(mutated[at] ^ flip);
      try {
        importOnnxBytes(mutated.data(), mutated.size(), "flipped.onnx");
      } catch (const CompileError& e) {
        EXPECT_EQ(std::string(e.what()).rfind("flipped.onnx: ", 0), 0u) << e.what();
      }
    }
}

TEST(OnnxImporter, EveryTruncationOfAModelIsAnErrorOrAModel) {
  std::string bytes = byteTestModel();
  int errors = 0;
  for (size_t size = 0; size < bytes.size(); ++size) {
    try {
      importOnnxBytes(bytes.data(), size, "cut.onnx");
    } catch (const CompileError& e) {
      ++errors;
      EXPECT_EQ(std::string(e.what()).rfind("cut.onnx: ", 0), 0u) << e.what();
    }
  }
  // A cut between top-level fields can leave a valid (smaller) model; most
  // cuts do not.
  EXPECT_GT(errors, static_cast<int>(bytes.size()) / 2);
}

TEST(OnnxImporter, SmallCnnAtOpset9PassesTheIRVerifier) {
  ModelBuilder m(9);
  m.input("image", {1, 3, 8, 8});
  m.floatInit("w", {4, 3, 3, 3}, std::vector<float>(108, 0.1f));
  m.floatInit("cb", {4}, std::vector<float>(4, 0.f));
  for (const char* p : {"s", "b", "mean", "var"}) m.floatInit(p, {4}, std::vector<float>(4, 1.f));
  m.floatInit("fc_w", {10, 64}, std::vector<float>(640, 0.01f));
  m.floatInit("fc_b", {10}, std::vector<float>(10, 0.f));
  setInts(m.node("Conv", {"image", "w", "cb"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  m.node("BatchNormalization", {"c", "s", "b", "mean", "var"}, {"bn"}, "bn");
  m.node("Relu", {"bn"}, {"r"}, "relu");
  onnx::NodeProto* pool = m.node("MaxPool", {"r"}, {"p"}, "pool");
  setInts(pool, "kernel_shape", {2, 2});
  setInts(pool, "strides", {2, 2});
  m.node("Flatten", {"p"}, {"f"}, "flatten");
  setInt(m.node("Gemm", {"f", "fc_w", "fc_b"}, {"logits"}, "fc"), "transB", 1);
  m.node("Softmax", {"logits"}, {"probs"}, "softmax");
  m.output("probs");
  auto g = m.import();
  EXPECT_NO_THROW(verifyGraph(*g));
  EXPECT_EQ(ops(*g), (std::vector<std::string>{"Conv", "BatchNormalization", "Relu", "MaxPool",
                                               "Reshape", "Gemm", "Softmax"}));
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[1,10]");
}

TEST(OnnxImporter, MissingFileIsAnError) {
  try {
    importOnnxFile("/nonexistent/model.onnx");
    FAIL() << "imported a missing file";
  } catch (const CompileError& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/model.onnx: cannot open the file");
  }
}

TEST(OnnxImporter, DeclaredOutputShapeMustMatch) {
  ModelBuilder m(13);
  m.input("x", {2, 3});
  m.node("Relu", {"x"}, {"y"});
  onnx::ValueInfoProto* y = m.output("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  y->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(5);
  EXPECT_NE(m.importError().find("graph output 'y' is declared f32[5] but computes f32[2,3]"),
            std::string::npos);
}

TEST(OnnxImporter, UndefinedNodeInputIsAnError) {
  ModelBuilder m(13);
  m.input("x", {2});
  m.node("Relu", {"nowhere"}, {"y"}, "r");
  m.output("y");
  EXPECT_EQ(m.importError(),
            "model.onnx: node 'r' (Relu) reads 'nowhere', which is not a graph input, an "
            "initializer or any node's output");
}

}  // namespace
}  // namespace nanoc
