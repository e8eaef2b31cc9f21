// The ONNX mappings of the normalization operators (onnx_map_normalization.cc)
// per opset: defaults made explicit, axes normalized, the legacy forms.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/ir/error.h"

namespace nanoc {
namespace {

using Dims = std::vector<int64_t>;

// A one-graph model built with the protobuf API.
class Model {
 public:
  explicit Model(int64_t opset) {
    model_.set_ir_version(8);
    onnx::OperatorSetIdProto* id = model_.add_opset_import();
    id->set_domain("");
    id->set_version(opset);
  }
  void input(const std::string& name, const Dims& dims) {
    onnx::ValueInfoProto* v = graph()->add_input();
    v->set_name(name);
    onnx::TypeProto::Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  void output(const std::string& name) { graph()->add_output()->set_name(name); }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "n") {
    onnx::NodeProto* n = graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const std::string& in : inputs) n->add_input(in);
    for (const std::string& out : outputs) n->add_output(out);
    return n;
  }
  std::unique_ptr<Graph> import() const {
    std::string bytes = model_.SerializeAsString();
    return importOnnxBytes(bytes.data(), bytes.size(), "model.onnx");
  }
  std::string importError() const {
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

void setInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void setInts(onnx::NodeProto* n, const std::string& name, const Dims& v) {
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

std::vector<std::string> ops(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& n : g.nodes) out.push_back(n->op);
  return out;
}

void expectError(const Model& m, const std::string& what) {
  std::string error = m.importError();
  EXPECT_NE(error.find(what), std::string::npos) << error;
}

TEST(OnnxNormalization, LayerNormalizationDefaultsAndStatisticsOutputs) {
  Model m(17);
  m.input("x", {2, 3, 4});
  m.input("s", {4});
  m.input("b", {4});
  m.node("LayerNormalization", {"x", "s", "b"}, {"y", "mean", "inv_std"}, "ln");
  m.output("y");
  m.output("mean");
  m.output("inv_std");
  auto g = m.import();
  ASSERT_EQ(ops(*g), (std::vector<std::string>{"LayerNormalization"}));
  const Node& ln = *g->nodes[0];
  EXPECT_EQ(ln.name, "ln");
  EXPECT_EQ(ln.i("axis"), 2);
  EXPECT_EQ(ln.f("epsilon"), 1e-5);
  ASSERT_EQ(g->outputs.size(), 3u);
  EXPECT_EQ(g->outputs[1]->name, "mean");
  EXPECT_EQ(g->outputs[1]->type.str(), "f32[2,3,1]");
  EXPECT_EQ(g->outputs[2]->producer, &ln);
  EXPECT_NO_THROW(verifyGraph(*g));
}

TEST(OnnxNormalization, LayerNormalizationWithoutBiasOrStatistics) {
  Model m(17);
  m.input("x", {2, 3, 4});
  m.input("s", {3, 4});
  onnx::NodeProto* ln_proto = m.node("LayerNormalization", {"x", "s"}, {"y"});
  setFloat(ln_proto, "epsilon", 0.25f);
  setInt(ln_proto, "axis", -2);
  m.output("y");
  auto g = m.import();
  const Node& ln = *g->nodes[0];
  EXPECT_EQ(ln.inputs.size(), 2u);
  EXPECT_EQ(ln.i("axis"), 1);
  EXPECT_EQ(ln.f("epsilon"), 0.25);
  EXPECT_EQ(ln.outputs.size(), 3u);  // the statistics, unnamed and unread
  EXPECT_NO_THROW(verifyGraph(*g));
}

TEST(OnnxNormalization, LayerNormalizationRejectsOtherStashTypes) {
  Model m(17);
  m.input("x", {2, 4});
  m.input("s", {4});
  setInt(m.node("LayerNormalization", {"x", "s"}, {"y"}), "stash_type", 11);
  m.output("y");
  expectError(m, "stash_type 11 is not supported");
}

TEST(OnnxNormalization, RMSNormalizationOpset23) {
  Model m(23);
  m.input("x", {2, 4});
  m.input("s", {4});
  m.node("RMSNormalization", {"x", "s"}, {"y"});
  m.output("y");
  auto g = m.import();
  ASSERT_EQ(ops(*g), (std::vector<std::string>{"RMSNormalization"}));
  EXPECT_EQ(g->nodes[0]->i("axis"), 1);
  EXPECT_EQ(g->nodes[0]->f("epsilon"), 1e-5);
}

TEST(OnnxNormalization, InstanceNormalizationEveryOpset) {
  for (int64_t opset : {1, 6, 22}) {
    Model m(opset);
    m.input("x", {1, 2, 3});
    m.input("s", {2});
    m.input("b", {2});
    m.node("InstanceNormalization", {"x", "s", "b"}, {"y"});
    m.output("y");
    auto g = m.import();
    ASSERT_EQ(ops(*g), (std::vector<std::string>{"InstanceNormalization"})) << opset;
    EXPECT_EQ(g->nodes[0]->f("epsilon"), 1e-5);
  }
}

TEST(OnnxNormalization, GroupNormalizationScalePerGroupInOpset18PerChannelIn21) {
  for (int64_t opset : {18, 21}) {
    Model m(opset);
    int64_t n = opset == 18 ? 2 : 4;
    m.input("x", {1, 4, 3});
    m.input("s", {n});
    m.input("b", {n});
    setInt(m.node("GroupNormalization", {"x", "s", "b"}, {"y"}), "num_groups", 2);
    m.output("y");
    auto g = m.import();
    ASSERT_EQ(ops(*g), (std::vector<std::string>{"GroupNormalization"}));
    EXPECT_EQ(g->nodes[0]->i("num_groups"), 2);
    EXPECT_EQ(g->nodes[0]->inputs[1]->type.dims, (Dims{n}));
  }
  Model bad(21);
  bad.input("x", {1, 4, 3});
  bad.input("s", {2});
  bad.input("b", {2});
  setInt(bad.node("GroupNormalization", {"x", "s", "b"}, {"y"}), "num_groups", 2);
  bad.output("y");
  expectError(bad, "scale and bias must be [4] in opset 21");
}

TEST(OnnxNormalization, MeanVarianceNormalizationMovesTheAxesLast) {
  Model m(13);
  m.input("x", {2, 3, 4, 5});
  m.node("MeanVarianceNormalization", {"x"}, {"y"});  // default axes [0, 2, 3]
  m.output("y");
  auto g = m.import();
  ASSERT_EQ(ops(*g),
            (std::vector<std::string>{"Transpose", "MeanVarianceNormalization", "Transpose"}));
  EXPECT_EQ(g->nodes[0]->ints("perm"), (Dims{1, 0, 2, 3}));
  EXPECT_EQ(g->nodes[1]->i("axis"), 1);
  EXPECT_EQ(g->nodes[2]->ints("perm"), (Dims{1, 0, 2, 3}));
  EXPECT_EQ(g->outputs[0]->name, "y");

  Model last(9);
  last.input("x", {2, 3, 4, 5});
  setInts(last.node("MeanVarianceNormalization", {"x"}, {"y"}), "axes", {-1, 2});
  last.output("y");
  auto g2 = last.import();
  ASSERT_EQ(ops(*g2), (std::vector<std::string>{"MeanVarianceNormalization"}));
  EXPECT_EQ(g2->nodes[0]->i("axis"), 2);
}

TEST(OnnxNormalization, LpNormalizationAndLRNDefaults) {
  Model m(13);
  m.input("x", {1, 3, 4});
  m.node("LpNormalization", {"x"}, {"l"});
  setInt(m.node("LRN", {"l"}, {"y"}, "lrn"), "size", 3);
  m.output("y");
  auto g = m.import();
  ASSERT_EQ(ops(*g), (std::vector<std::string>{"LpNormalization", "LRN"}));
  EXPECT_EQ(g->nodes[0]->i("axis"), 2);
  EXPECT_EQ(g->nodes[0]->i("p"), 2);
  EXPECT_EQ(g->nodes[1]->i("size"), 3);
  EXPECT_EQ(g->nodes[1]->f("alpha"), 1e-4);
  EXPECT_EQ(g->nodes[1]->f("beta"), 0.75);
  EXPECT_EQ(g->nodes[1]->f("bias"), 1.0);

  Model bad(13);
  bad.input("x", {1, 3, 4});
  bad.node("LRN", {"x"}, {"y"});
  bad.output("y");
  expectError(bad, "attribute 'size' is missing");
}

TEST(OnnxNormalization, LogSoftmaxAndHardmaxFlattenBeforeOpset13) {
  for (const char* op : {"LogSoftmax", "Hardmax"}) {
    Model m(11);
    m.input("x", {2, 3, 4});
    m.node(op, {"x"}, {"y"});  // default axis 1: over [3, 4] together
    m.output("y");
    auto g = m.import();
    ASSERT_EQ(ops(*g), (std::vector<std::string>{"Reshape", op, "Reshape"}));
    EXPECT_EQ(g->nodes[0]->ints("shape"), (Dims{2, 12}));
    EXPECT_EQ(g->nodes[1]->i("axis"), 1);
    EXPECT_EQ(g->nodes[2]->ints("shape"), (Dims{2, 3, 4}));

    Model m13(13);
    m13.input("x", {2, 3, 4});
    setInt(m13.node(op, {"x"}, {"y"}), "axis", 0);
    m13.output("y");
    auto g13 = m13.import();
    ASSERT_EQ(ops(*g13), (std::vector<std::string>{op}));
    EXPECT_EQ(g13->nodes[0]->i("axis"), 0);
  }
}

TEST(OnnxNormalization, Attention3DSplitsHeadsAndMergesY) {
  Model m(23);
  m.input("q", {2, 4, 24});
  m.input("k", {2, 6, 24});
  m.input("v", {2, 6, 30});
  onnx::NodeProto* a = m.node("Attention", {"q", "k", "v"}, {"y"}, "attn");
  setInt(a, "q_num_heads", 3);
  setInt(a, "kv_num_heads", 3);
  m.output("y");
  auto g = m.import();
  const Node* attn = nullptr;
  for (const auto& n : g->nodes)
    if (n->op == "Attention") attn = n.get();
  ASSERT_NE(attn, nullptr);
  EXPECT_EQ(attn->inputs[0]->type.str(), "f32[2,3,4,8]");
  EXPECT_EQ(attn->inputs[2]->type.str(), "f32[2,3,6,10]");
  EXPECT_DOUBLE_EQ(attn->f("scale"), 1 / std::sqrt(8.0));
  EXPECT_EQ(attn->i("is_causal"), 0);
  EXPECT_EQ(g->outputs[0]->name, "y");
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[2,4,30]");
  EXPECT_NO_THROW(verifyGraph(*g));
}

TEST(OnnxNormalization, AttentionCacheIsConcatenatedAndScoresAreASecondNode) {
  Model m(23);
  m.input("q", {1, 2, 3, 4});
  m.input("k", {1, 2, 3, 4});
  m.input("v", {1, 2, 3, 4});
  m.input("pk", {1, 2, 5, 4});
  m.input("pv", {1, 2, 5, 4});
  onnx::NodeProto* a = m.node("Attention", {"q", "k", "v", "", "pk", "pv"},
                              {"y", "present_k", "present_v", "qk"}, "attn");
  setInt(a, "is_causal", 1);
  setInt(a, "qk_matmul_output_mode", 3);
  m.output("y");
  m.output("present_k");
  m.output("present_v");
  m.output("qk");
  auto g = m.import();
  EXPECT_EQ(ops(*g),
            (std::vector<std::string>{"Concat", "Concat", "AttentionScores", "Attention"}));
  EXPECT_EQ(g->outputs[1]->name, "present_k");
  EXPECT_EQ(g->outputs[1]->type.str(), "f32[1,2,8,4]");
  EXPECT_EQ(g->outputs[3]->type.str(), "f32[1,2,3,8]");
  EXPECT_EQ(g->nodes[2]->i("mode"), 3);
  EXPECT_EQ(g->nodes[3]->i("past_len"), 5);
  EXPECT_NO_THROW(verifyGraph(*g));

  Model bad(23);
  bad.input("q", {1, 2, 3, 4});
  bad.input("k", {1, 2, 3, 4});
  bad.input("v", {1, 2, 3, 4});
  bad.input("pk", {1, 2, 5, 4});
  bad.node("Attention", {"q", "k", "v", "", "pk"}, {"y"});
  bad.output("y");
  expectError(bad, "past_key and past_value must be given together");
}

TEST(OnnxNormalization, RotaryEmbedding3DIsHeadsLastAndDefaultsToTheFullHead) {
  Model m(23);
  m.input("x", {2, 3, 32});
  m.input("cos", {2, 3, 4});
  m.input("sin", {2, 3, 4});
  setInt(m.node("RotaryEmbedding", {"x", "cos", "sin"}, {"y"}), "num_heads", 4);
  m.output("y");
  auto g = m.import();
  ASSERT_EQ(ops(*g), (std::vector<std::string>{"Reshape", "RotaryEmbedding", "Reshape"}));
  EXPECT_EQ(g->nodes[1]->inputs[0]->type.str(), "f32[2,3,4,8]");
  EXPECT_EQ(g->nodes[1]->i("heads_first"), 0);
  EXPECT_EQ(g->nodes[1]->i("rotary_dim"), 8);
  EXPECT_EQ(g->nodes[1]->i("interleaved"), 0);
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[2,3,32]");

  Model no_heads(23);
  no_heads.input("x", {2, 3, 32});
  no_heads.input("cos", {2, 3, 4});
  no_heads.input("sin", {2, 3, 4});
  no_heads.node("RotaryEmbedding", {"x", "cos", "sin"}, {"y"});
  no_heads.output("y");
  expectError(no_heads, "needs num_heads");
}

}  // namespace
}  // namespace nanoc
