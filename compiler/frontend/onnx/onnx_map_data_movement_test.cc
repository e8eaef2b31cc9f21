// The data movement mappings per opset: each ONNX form lands on the canonical
// IR form (compiler/ops/README.md), shape-deciding operands are read as
// constants, and constant subgraphs fold at import.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/ir/error.h"

namespace nanoc {
namespace {

using Dims = std::vector<int64_t>;

class Model {
 public:
  explicit Model(int64_t opset) {
    model_.set_ir_version(8);
    onnx::OperatorSetIdProto* id = model_.add_opset_import();
    id->set_domain("");
    id->set_version(opset);
  }
  void input(const std::string& name, Dims dims, int32_t type = onnx::TensorProto::FLOAT) {
    onnx::ValueInfoProto* v = graph()->add_input();
    v->set_name(name);
    onnx::TypeProto::Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  void output(const std::string& name) { graph()->add_output()->set_name(name); }
  template <typename T>
  void init(const std::string& name, int32_t type, Dims dims, std::vector<T> data) {
    onnx::TensorProto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(
        std::string(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(T)));
  }
  void ints(const std::string& name, Dims data) {
    init(name, onnx::TensorProto::INT64, {static_cast<int64_t>(data.size())}, data);
  }
  void scalar(const std::string& name, int64_t v) {
    init(name, onnx::TensorProto::INT64, {}, std::vector<int64_t>{v});
  }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> in,
                        std::vector<std::string> out) {
    onnx::NodeProto* n = graph()->add_node();
    n->set_op_type(op);
    n->set_name(op + "_node");
    for (const auto& s : in) n->add_input(s);
    for (const auto& s : out) n->add_output(s);
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
void setInts(onnx::NodeProto* n, const std::string& name, Dims v) {
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

std::vector<std::string> ops(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& n : g.nodes) out.push_back(n->op);
  return out;
}

template <typename T>
std::vector<T> constantValues(const Value* v) {
  EXPECT_TRUE(v->isConstant()) << v->name;
  if (!v->isConstant()) return {};
  std::vector<T> out(v->data->size() / sizeof(T));
  std::memcpy(out.data(), v->data->data(), v->data->size());
  return out;
}

// ---- Slice ----

TEST(OnnxDataMovement, SliceOpset1AttributesBecomeClampedPerAxisForm) {
  Model m(1);
  m.input("x", {5, 6, 7});
  onnx::NodeProto* n = m.node("Slice", {"x"}, {"y"});
  setInts(n, "starts", {-2, 1});
  setInts(n, "ends", {1000, -1});
  setInts(n, "axes", {2, 0});
  m.output("y");
  auto g = m.import();
  ASSERT_EQ(ops(*g), (std::vector<std::string>{"Slice"}));
  const Node& s = *g->nodes[0];
  EXPECT_EQ(s.ints("starts"), (Dims{1, 0, 5}));
  EXPECT_EQ(s.ints("ends"), (Dims{4, 6, 7}));
  EXPECT_EQ(s.ints("steps"), (Dims{1, 1, 1}));
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[3,6,2]");
}

TEST(OnnxDataMovement, SliceOpset13NegativeStepsClampToTheAxis) {
  Model m(13);
  m.input("x", {10});
  m.ints("starts", {100});
  m.ints("ends", {-100});
  m.ints("axes", {0});
  m.ints("steps", {-3});
  m.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  m.output("y");
  auto g = m.import();
  const Node& s = *g->nodes[0];
  EXPECT_EQ(s.ints("starts"), (Dims{9}));
  EXPECT_EQ(s.ints("ends"), (Dims{-1}));
  EXPECT_EQ(s.ints("steps"), (Dims{-3}));
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[4]");  // 9, 6, 3, 0
}

TEST(OnnxDataMovement, SliceRejectsRuntimeStartsAndZeroSteps) {
  Model m(13);
  m.input("x", {10});
  m.input("starts", {1}, onnx::TensorProto::INT64);
  m.ints("ends", {5});
  m.node("Slice", {"x", "starts", "ends"}, {"y"});
  m.output("y");
  std::string e = m.importError();
  EXPECT_NE(e.find("node 'Slice_node' (Slice, opset 13)"), std::string::npos) << e;
  EXPECT_NE(e.find("computed at run time"), std::string::npos) << e;

  Model z(13);
  z.input("x", {10});
  z.ints("s", {0});
  z.ints("e", {5});
  z.ints("a", {0});
  z.ints("st", {0});
  z.node("Slice", {"x", "s", "e", "a", "st"}, {"y"});
  z.output("y");
  EXPECT_NE(z.importError().find("zero step"), std::string::npos);
}

// ---- Split ----

TEST(OnnxDataMovement, SplitEachOpsetFormBecomesSlicesNamedAfterTheOutputs) {
  for (int64_t opset : {11, 13, 18}) {
    SCOPED_TRACE(opset);
    Model m(opset);
    m.input("x", {7, 2});
    onnx::NodeProto* n;
    if (opset == 11) {
      n = m.node("Split", {"x"}, {"a", "b", "c"});
      setInts(n, "split", {3, 3, 1});
    } else if (opset == 13) {
      m.ints("split", {3, 3, 1});
      n = m.node("Split", {"x", "split"}, {"a", "b", "c"});
    } else {
      n = m.node("Split", {"x"}, {"a", "b", "c"});
      setInt(n, "num_outputs", 3);  // ceil(7 / 3) = 3: 3, 3, 1
    }
    m.output("a");
    m.output("b");
    m.output("c");
    auto g = m.import();
    ASSERT_EQ(ops(*g), (std::vector<std::string>{"Slice", "Slice", "Slice"}));
    EXPECT_EQ(g->outputs[0]->name, "a");
    EXPECT_EQ(g->outputs[2]->name, "c");
    EXPECT_EQ(g->nodes[1]->ints("starts"), (Dims{3, 0}));
    EXPECT_EQ(g->nodes[1]->ints("ends"), (Dims{6, 2}));
    EXPECT_EQ(g->outputs[2]->type.str(), "f32[1,2]");
  }
}

TEST(OnnxDataMovement, SplitThatDoesNotAddUpFails) {
  Model m(13);
  m.input("x", {7});
  m.ints("split", {3, 3});
  m.node("Split", {"x", "split"}, {"a", "b"});
  m.output("a");
  EXPECT_NE(m.importError().find("does not divide"), std::string::npos);
}

// ---- Pad ----

TEST(OnnxDataMovement, PadOpset2ValueAttributeBecomesAConstantInput) {
  Model m(2);
  m.input("x", {2, 3});
  onnx::NodeProto* n = m.node("Pad", {"x"}, {"y"});
  setInts(n, "pads", {1, 0, 0, 2});
  setFloat(n, "value", 1.5f);
  m.output("y");
  auto g = m.import();
  const Node& p = *g->nodes[0];
  EXPECT_EQ(p.op, "Pad");
  EXPECT_EQ(p.s("mode"), "constant");
  EXPECT_EQ(p.ints("pads"), (Dims{1, 0, 0, 2}));
  ASSERT_EQ(p.inputs.size(), 2u);
  EXPECT_EQ(constantValues<float>(p.inputs[1]), (std::vector<float>{1.5f}));
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[3,5]");
}

TEST(OnnxDataMovement, PadOpset18AxesSpreadIntoFullPads) {
  Model m(19);
  m.input("x", {2, 3, 4});
  m.ints("pads", {1, 2, 3, 4});
  m.ints("axes", {-1, 0});
  onnx::NodeProto* n = m.node("Pad", {"x", "pads", "", "axes"}, {"y"});
  setString(n, "mode", "wrap");
  m.output("y");
  auto g = m.import();
  const Node& p = *g->nodes[0];
  EXPECT_EQ(p.ints("pads"), (Dims{2, 0, 1, 4, 0, 3}));
  EXPECT_EQ(p.s("mode"), "wrap");
  EXPECT_EQ(p.inputs.size(), 1u);
}

TEST(OnnxDataMovement, PadWrapIsRejectedBeforeOpset19) {
  Model m(18);
  m.input("x", {2});
  m.ints("pads", {1, 1});
  setString(m.node("Pad", {"x", "pads"}, {"y"}), "mode", "wrap");
  m.output("y");
  EXPECT_NE(m.importError().find("mode 'wrap'"), std::string::npos);
}

// ---- folding the shape arithmetic of exported models ----

TEST(OnnxDataMovement, ConstantShapeArithmeticFoldsAtImport) {
  // shape = Concat(Unsqueeze(Gather(dims, 0)), [-1]), as torch exports it
  // after Shape; every step has constant inputs, so Reshape sees a constant.
  Model m(13);
  m.input("x", {6, 4});
  m.ints("dims", {3, 8});
  m.scalar("zero", 0);
  m.ints("axes0", {0});
  m.ints("minus_one", {-1});
  m.node("Gather", {"dims", "zero"}, {"d0"});
  m.node("Unsqueeze", {"d0", "axes0"}, {"d0v"});
  setInt(m.node("Concat", {"d0v", "minus_one"}, {"shape"}), "axis", 0);
  m.node("Reshape", {"x", "shape"}, {"y"});
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(ops(*g), (std::vector<std::string>{"Reshape"}));
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[3,8]");
}

TEST(OnnxDataMovement, GatherKeepsRuntimeIndicesAndNormalizesAxis) {
  Model m(13);
  m.input("x", {4, 5});
  m.input("i", {2}, onnx::TensorProto::INT32);
  setInt(m.node("Gather", {"x", "i"}, {"y"}), "axis", -1);
  m.output("y");
  auto g = m.import();
  ASSERT_EQ(ops(*g), (std::vector<std::string>{"Gather"}));
  EXPECT_EQ(g->nodes[0]->i("axis"), 1);
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[4,2]");
}

TEST(OnnxDataMovement, ConstantIndicesOutOfRangeAreTheModelsError) {
  Model m(13);
  m.input("x", {4, 5});
  m.ints("i", {3, -4, 4});
  m.node("Gather", {"x", "i"}, {"y"});
  m.output("y");
  std::string e = m.importError();
  EXPECT_NE(e.find("node 'Gather_node' (Gather, opset 13)"), std::string::npos) << e;
  EXPECT_NE(e.find("index 4 (element 2 of 'i') is out of range for an axis of size 4"),
            std::string::npos)
      << e;
}

TEST(OnnxDataMovement, SliceStepsLongerThanTheAxisAreBounded) {
  Model m(13);
  m.input("x", {5});
  m.ints("s", {-1});
  m.ints("e", {INT64_MIN});
  m.ints("a", {0});
  m.ints("st", {INT64_MIN});
  m.node("Slice", {"x", "s", "e", "a", "st"}, {"y"});
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(g->nodes[0]->ints("steps"), (Dims{-5}));
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[1]");
}

// ---- compositions: Tile, DepthToSpace, Expand ----

TEST(OnnxDataMovement, TileIsAnExpandBetweenReshapes) {
  Model m(13);
  m.input("x", {2, 3});
  m.ints("r", {2, 1});
  m.node("Tile", {"x", "r"}, {"y"});
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(ops(*g), (std::vector<std::string>{"Reshape", "Expand", "Reshape"}));
  EXPECT_EQ(g->nodes[1]->ints("shape"), (Dims{2, 2, 1, 3}));
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[4,3]");
}

TEST(OnnxDataMovement, DepthToSpaceModesPickTheirPermutations) {
  for (const char* mode : {"DCR", "CRD"}) {
    Model m(13);
    m.input("x", {1, 8, 2, 3});
    onnx::NodeProto* n = m.node("DepthToSpace", {"x"}, {"y"});
    setInt(n, "blocksize", 2);
    setString(n, "mode", mode);
    m.output("y");
    auto g = m.import();
    ASSERT_EQ(ops(*g), (std::vector<std::string>{"Reshape", "Transpose", "Reshape"}));
    EXPECT_EQ(g->nodes[1]->ints("perm"),
              std::string(mode) == "DCR" ? (Dims{0, 3, 4, 1, 5, 2}) : (Dims{0, 1, 4, 2, 5, 3}));
    EXPECT_EQ(g->outputs[0]->type.str(), "f32[1,2,4,6]");
  }
}

TEST(OnnxDataMovement, ExpandBroadcastsBothWays) {
  Model m(13);
  m.input("x", {3, 1});
  m.ints("shape", {2, 1, 4});
  m.node("Expand", {"x", "shape"}, {"y"});
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(g->nodes[0]->ints("shape"), (Dims{2, 3, 4}));
}

// ---- constants: Range, EyeLike ----

TEST(OnnxDataMovement, RangeAndEyeLikeBecomeConstants) {
  Model m(13);
  m.input("x", {2, 3}, onnx::TensorProto::INT32);
  m.scalar("start", 10);
  m.scalar("limit", -3);
  m.scalar("delta", -4);
  m.node("Range", {"start", "limit", "delta"}, {"r"});
  setInt(m.node("EyeLike", {"x"}, {"e"}), "k", 1);
  m.output("r");
  m.output("e");
  auto g = m.import();
  EXPECT_TRUE(g->nodes.empty());
  EXPECT_EQ(constantValues<int64_t>(g->outputs[0]), (std::vector<int64_t>{10, 6, 2, -2}));
  EXPECT_EQ(g->outputs[1]->type.str(), "i32[2,3]");
  EXPECT_EQ(constantValues<int32_t>(g->outputs[1]), (std::vector<int32_t>{0, 1, 0, 0, 0, 1}));
}

// ---- OneHot, Trilu, Scatter ----

TEST(OnnxDataMovement, OneHotAxisCountsFromTheOutputRank) {
  Model m(11);
  m.input("i", {2, 3}, onnx::TensorProto::INT64);
  m.init("depth", onnx::TensorProto::FLOAT, {}, std::vector<float>{4.0f});
  m.init("values", onnx::TensorProto::FLOAT, {2}, std::vector<float>{0, 1});
  setInt(m.node("OneHot", {"i", "depth", "values"}, {"y"}), "axis", -2);
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(g->nodes[0]->i("axis"), 1);
  EXPECT_EQ(g->nodes[0]->i("depth"), 4);
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[2,4,3]");
}

TEST(OnnxDataMovement, TriluReadsKFromItsConstantInput) {
  Model m(14);
  m.input("x", {3, 3});
  m.scalar("k", -1);
  setInt(m.node("Trilu", {"x", "k"}, {"y"}), "upper", 0);
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(g->nodes[0]->i("k"), -1);
  EXPECT_EQ(g->nodes[0]->i("upper"), 0);
}

TEST(OnnxDataMovement, ScatterReductionsFollowTheirOpsets) {
  for (auto [opset, reduction, ok] :
       {std::tuple{11, "", true}, {16, "mul", true}, {16, "max", false}, {18, "max", true}}) {
    Model m(opset);
    m.input("x", {4});
    m.input("i", {2, 1}, onnx::TensorProto::INT64);
    m.input("u", {2});
    onnx::NodeProto* n = m.node("ScatterND", {"x", "i", "u"}, {"y"});
    if (*reduction) setString(n, "reduction", reduction);
    m.output("y");
    if (ok) {
      auto g = m.import();
      EXPECT_EQ(g->nodes[0]->s("reduction"), *reduction ? reduction : "none");
    } else {
      EXPECT_NE(m.importError().find("not defined in this opset"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace nanoc
