// The ONNX mappings of the reduction family, per opset: where axes come from
// (attribute or constant input), the defaults each opset fills in, and the
// errors for what nanoc cannot compile.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/ir/error.h"

namespace nanoc {
namespace {

// A one-op model: input "x" (f32 unless said), initializers, one node.
class Model {
 public:
  explicit Model(int64_t opset) {
    model_.set_ir_version(8);
    onnx::OperatorSetIdProto* id = model_.add_opset_import();
    id->set_domain("");
    id->set_version(opset);
  }
  Model& input(const std::string& name, std::vector<int64_t> dims,
               int32_t type = onnx::TensorProto::FLOAT) {
    onnx::ValueInfoProto* v = graph()->add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    t->mutable_shape();
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
    return *this;
  }
  // An int64 (or int32) initializer, 1-D, or a scalar when `scalar`.
  Model& ints(const std::string& name, std::vector<int64_t> data, bool scalar = false,
              bool int32 = false) {
    onnx::TensorProto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(int32 ? onnx::TensorProto::INT32 : onnx::TensorProto::INT64);
    if (!scalar) t->add_dims(static_cast<int64_t>(data.size()));
    for (int64_t v : data)
      int32 ? t->add_int32_data(static_cast<int32_t>(v)) : t->add_int64_data(v);
    return *this;
  }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> inputs,
                        std::vector<std::string> outputs = {"y"}) {
    onnx::NodeProto* n = graph()->add_node();
    n->set_op_type(op);
    n->set_name("node0");
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) {
      n->add_output(o);
      graph()->add_output()->set_name(o);
    }
    return n;
  }
  std::unique_ptr<Graph> import() const {
    std::string bytes = model_.SerializeAsString();
    return importOnnxBytes(bytes.data(), bytes.size(), "model.onnx");
  }
  std::string error() const {
    try {
      import();
    } catch (const CompileError& e) {
      return e.what();
    }
    return "";
  }

 private:
  onnx::GraphProto* graph() { return model_.mutable_graph(); }
  onnx::ModelProto model_;
};

void attrString(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}
void attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void attrInts(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

const Node& only(const Graph& g, const std::string& op) {
  for (const auto& n : g.nodes)
    if (n->op == op) return *n;
  throw CompileError("no " + op + " node");
}

TEST(OnnxReduce, AttributeAxesAreNormalizedAndSorted) {
  Model m(11);
  m.input("x", {2, 3, 4});
  attrInts(m.node("ReduceMean", {"x"}), "axes", {-1, 0});
  auto g = m.import();
  const Node& n = only(*g, "ReduceMean");
  EXPECT_EQ(n.ints("axes"), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(n.i("keepdims"), 1);
  EXPECT_EQ(g->outputs[0]->type.dims, (std::vector<int64_t>{1, 3, 1}));
}

TEST(OnnxReduce, NoAxesReduceEverything) {
  Model m(1);
  m.input("x", {2, 3});
  attr(m.node("ReduceMax", {"x"}), "keepdims", 0);
  auto g = m.import();
  EXPECT_EQ(only(*g, "ReduceMax").ints("axes"), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(g->outputs[0]->type.dims, (std::vector<int64_t>{}));
}

TEST(OnnxReduce, ReduceSum13TakesAxesAsAConstantInput) {
  Model m(13);
  m.input("x", {2, 3}).ints("axes", {-1});
  m.node("ReduceSum", {"x", "axes"});
  EXPECT_EQ(only(*m.import(), "ReduceSum").ints("axes"), (std::vector<int64_t>{1}));
}

TEST(OnnxReduce, OtherReducesTakeAxesAsAnInputFromOpset18Only) {
  Model m13(13);
  m13.input("x", {2, 3});
  attrInts(m13.node("ReduceL2", {"x"}), "axes", {1});
  EXPECT_EQ(only(*m13.import(), "ReduceL2").ints("axes"), (std::vector<int64_t>{1}));
  Model m18(18);
  m18.input("x", {2, 3}).ints("axes", {0});
  m18.node("ReduceL2", {"x", "axes"});
  EXPECT_EQ(only(*m18.import(), "ReduceL2").ints("axes"), (std::vector<int64_t>{0}));
}

TEST(OnnxReduce, NoopWithEmptyAxesKeepsEveryElement) {
  Model m(18);
  m.input("x", {2, 3}).ints("axes", {});
  attr(m.node("ReduceSumSquare", {"x", "axes"}), "noop_with_empty_axes", 1);
  auto g = m.import();
  EXPECT_EQ(only(*g, "ReduceSumSquare").ints("axes"), (std::vector<int64_t>{}));
  EXPECT_EQ(g->outputs[0]->type.dims, (std::vector<int64_t>{2, 3}));
  // Without the flag, empty axes reduce everything.
  Model all(18);
  all.input("x", {2, 3}).ints("axes", {});
  all.node("ReduceSumSquare", {"x", "axes"});
  EXPECT_EQ(only(*all.import(), "ReduceSumSquare").ints("axes"), (std::vector<int64_t>{0, 1}));
}

TEST(OnnxReduce, RuntimeOrRepeatedAxesAreErrors) {
  Model m(18);
  m.input("x", {2, 3}).input("axes", {1}, onnx::TensorProto::INT64);
  m.node("ReduceProd", {"x", "axes"});
  EXPECT_NE(m.error().find("computed at run time"), std::string::npos) << m.error();
  Model twice(11);
  twice.input("x", {2, 3});
  attrInts(twice.node("ReduceSum", {"x"}), "axes", {1, -1});
  EXPECT_NE(twice.error().find("name an axis twice"), std::string::npos) << twice.error();
  Model range(11);
  range.input("x", {2, 3});
  attrInts(range.node("ReduceSum", {"x"}), "axes", {2});
  EXPECT_NE(range.error().find("out of range"), std::string::npos) << range.error();
}

TEST(OnnxArg, DefaultsAndSelectLastIndexFromOpset12) {
  Model m(11);
  m.input("x", {2, 3});
  attr(m.node("ArgMax", {"x"}), "select_last_index", 1);  // not in opset 11
  auto g11 = m.import();
  const Node& n = only(*g11, "ArgMax");
  EXPECT_EQ(n.i("axis"), 0);
  EXPECT_EQ(n.i("keepdims"), 1);
  EXPECT_EQ(n.i("select_last_index"), 0);
  Model m13(13);
  m13.input("x", {2, 3});
  onnx::NodeProto* p = m13.node("ArgMin", {"x"});
  attr(p, "axis", -1);
  attr(p, "keepdims", 0);
  attr(p, "select_last_index", 1);
  auto g = m13.import();
  const Node& a = only(*g, "ArgMin");
  EXPECT_EQ(a.i("axis"), 1);
  EXPECT_EQ(a.i("select_last_index"), 1);
  EXPECT_EQ(g->outputs[0]->type, (TensorType{DType::I64, {2}}));
}

TEST(OnnxCumulative, AxisIsAConstantScalarOfEitherIntType) {
  Model m(14);
  m.input("x", {2, 3}).ints("axis", {-1}, /*scalar=*/true, /*int32=*/true);
  onnx::NodeProto* p = m.node("CumSum", {"x", "axis"});
  attr(p, "reverse", 1);
  auto g = m.import();
  const Node& n = only(*g, "CumSum");
  EXPECT_EQ(n.i("axis"), 1);
  EXPECT_EQ(n.i("exclusive"), 0);
  EXPECT_EQ(n.i("reverse"), 1);
  Model runtime(14);
  runtime.input("x", {2, 3}).input("axis", {}, onnx::TensorProto::INT32);
  runtime.node("CumProd", {"x", "axis"});
  EXPECT_NE(runtime.error().find("computed at run time"), std::string::npos) << runtime.error();
}

TEST(OnnxTopK, KFromAttributeThenInputAndTwoNamedOutputs) {
  Model m1(1);
  m1.input("x", {3, 5});
  attr(m1.node("TopK", {"x"}, {"values", "indices"}), "k", 2);
  auto g1 = m1.import();
  const Node& a = only(*g1, "TopK");
  EXPECT_EQ(a.i("k"), 2);
  EXPECT_EQ(a.i("axis"), 1);
  EXPECT_EQ(a.i("largest"), 1);
  ASSERT_EQ(g1->outputs.size(), 2u);
  EXPECT_EQ(g1->outputs[0]->name, "values");
  EXPECT_EQ(g1->outputs[1]->type, (TensorType{DType::I64, {3, 2}}));
  Model m11(11);
  m11.input("x", {3, 5}).ints("k", {2});
  onnx::NodeProto* p = m11.node("TopK", {"x", "k"}, {"values", "indices"});
  attr(p, "axis", 0);
  attr(p, "largest", 0);
  auto g11 = m11.import();
  const Node& b = only(*g11, "TopK");
  EXPECT_EQ(b.i("k"), 2);
  EXPECT_EQ(b.i("axis"), 0);
  EXPECT_EQ(b.i("largest"), 0);
  EXPECT_EQ(g11->outputs[0]->type, (TensorType{DType::F32, {2, 5}}));
}

TEST(OnnxTopK, KLargerThanTheAxisIsAnError) {
  Model m(11);
  m.input("x", {3, 5}).ints("k", {6});
  m.node("TopK", {"x", "k"}, {"values", "indices"});
  EXPECT_NE(m.error().find("'k' is 6"), std::string::npos) << m.error();
}

TEST(OnnxLoss, NllDefaultsToMeanAndNoIgnoredIndex) {
  Model m(13);
  m.input("x", {3, 5}).input("t", {3}, onnx::TensorProto::INT64);
  m.node("NegativeLogLikelihoodLoss", {"x", "t"});
  auto g = m.import();
  const Node& n = only(*g, "NegativeLogLikelihoodLoss");
  EXPECT_EQ(n.s("reduction"), "mean");
  EXPECT_EQ(n.i("ignore_index"), -1);
  EXPECT_EQ(g->outputs[0]->type, (TensorType{DType::F32, {}}));
}

TEST(OnnxLoss, SoftmaxCrossEntropyHasLossAndLogProbOutputs) {
  Model m(13);
  m.input("x", {3, 5, 2}).input("t", {3, 2}, onnx::TensorProto::INT64);
  onnx::NodeProto* p = m.node("SoftmaxCrossEntropyLoss", {"x", "t"}, {"loss", "log_prob"});
  attrString(p, "reduction", "none");
  attr(p, "ignore_index", 4);
  auto g = m.import();
  const Node& n = only(*g, "SoftmaxCrossEntropyLoss");
  EXPECT_EQ(n.i("ignore_index"), 4);
  ASSERT_EQ(g->outputs.size(), 2u);
  EXPECT_EQ(g->outputs[0]->type, (TensorType{DType::F32, {3, 2}}));
  EXPECT_EQ(g->outputs[1]->name, "log_prob");
  EXPECT_EQ(g->outputs[1]->type, (TensorType{DType::F32, {3, 5, 2}}));
}

TEST(OnnxLoss, UnknownReductionIsAnError) {
  Model m(13);
  m.input("x", {3, 5}).input("t", {3}, onnx::TensorProto::INT64);
  attrString(m.node("NegativeLogLikelihoodLoss", {"x", "t"}), "reduction", "max");
  EXPECT_NE(m.error().find("reduction 'max'"), std::string::npos) << m.error();
}

}  // namespace
}  // namespace nanoc
