#include "compiler/ir/graph.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/ir/error.h"

namespace nanoc {
namespace {

TensorType f32(std::vector<int64_t> dims) { return TensorType{DType::F32, std::move(dims)}; }

bool owns(const Graph& g, const Value* v) {
  return std::any_of(g.values.begin(), g.values.end(),
                     [&](const std::unique_ptr<Value>& owned) { return owned.get() == v; });
}

TEST(GraphTensorType, StrNumelAndBytes) {
  TensorType t{DType::F32, {1, 3, 8, 8}};
  EXPECT_EQ(t.str(), "f32[1,3,8,8]");
  EXPECT_EQ(t.numel(), 192);
  EXPECT_EQ(t.bytes(), 768u);
  EXPECT_EQ(t.rank(), 4u);

  TensorType scalar{DType::I64, {}};
  EXPECT_EQ(scalar.str(), "i64[]");
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.bytes(), 8u);

  TensorType empty{DType::BF16, {4, 0}};
  EXPECT_EQ(empty.str(), "bf16[4,0]");
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_EQ(empty.bytes(), 0u);

  EXPECT_EQ((TensorType{DType::Bool, {5}}).bytes(), 5u);
  EXPECT_EQ((TensorType{DType::F16, {3}}).bytes(), 6u);
  EXPECT_FALSE(t == (TensorType{DType::I32, {1, 3, 8, 8}}));
}

TEST(GraphDType, TableNamesAndSizesRoundTrip) {
  const std::pair<DType, uint32_t> expected[] = {
      {DType::F32, 4}, {DType::F16, 2}, {DType::BF16, 2}, {DType::I8, 1},
      {DType::U8, 1},  {DType::I32, 4}, {DType::I64, 8},  {DType::Bool, 1},
  };
  for (auto [dtype, size] : expected) {
    EXPECT_EQ(dtypeSize(dtype), size) << dtypeName(dtype);
    EXPECT_EQ(parseDType(dtypeName(dtype)), dtype);
  }
  EXPECT_EQ(dtypeName(DType::Bool), "bool");
  EXPECT_EQ(parseDType("float32"), std::nullopt);
}

TEST(GraphNames, UniqueNameSuffixesTakenNames) {
  Graph g;
  EXPECT_EQ(g.uniqueName("x"), "x");
  EXPECT_EQ(g.uniqueName("x"), "x_1");
  EXPECT_EQ(g.uniqueName("y_2"), "y_2");
  EXPECT_EQ(g.uniqueName("y"), "y");
  EXPECT_EQ(g.uniqueName("y"), "y_1");
  EXPECT_EQ(g.uniqueName("y"), "y_3");  // y_2 was taken explicitly
  EXPECT_EQ(g.uniqueName(""), "v");
  EXPECT_EQ(g.uniqueName(""), "v_1");
}

TEST(GraphNames, NodeNamesHaveTheirOwnNamespace) {
  Graph g;
  Value* x = g.addInput("relu", f32({2}));
  Node* a = g.addNode("Relu", "", {x}, 1);
  Node* b = g.addNode("Relu", "", {a->outputs[0]}, 1);
  Node* c = g.addNode("Relu", "Relu", {b->outputs[0]}, 1);
  EXPECT_EQ(a->name, "Relu");
  EXPECT_EQ(b->name, "Relu_1");
  EXPECT_EQ(c->name, "Relu_2");
  EXPECT_EQ(g.uniqueNodeName("relu"), "relu");  // a value is called relu, no node is
}

TEST(GraphNames, AddNodeNamesItsOutputs) {
  Graph g;
  Value* x = g.addInput("x", f32({2}));
  Node* one = g.addNode("Relu", "act", {x}, 1);
  EXPECT_EQ(one->outputs[0]->name, "act");
  Node* three = g.addNode("Split", "split", {x}, 3, {"first", ""});
  ASSERT_EQ(three->outputs.size(), 3u);
  EXPECT_EQ(three->outputs[0]->name, "first");
  EXPECT_EQ(three->outputs[1]->name, "split_1");
  EXPECT_EQ(three->outputs[2]->name, "split_2");
  Node* clash = g.addNode("Relu", "r", {x}, 1, {"x"});
  EXPECT_EQ(clash->outputs[0]->name, "x_1");
  for (Value* v : three->outputs) {
    EXPECT_EQ(v->producer, three);
    EXPECT_FALSE(v->typed);
  }
  // Ids are distinct and follow creation order.
  for (size_t i = 1; i < g.values.size(); ++i) EXPECT_LT(g.values[i - 1]->id, g.values[i]->id);
}

TEST(GraphBuild, InputsAndConstantsAreTyped) {
  Graph g;
  Value* x = g.addInput("x", f32({1, 2}));
  EXPECT_TRUE(x->typed);
  EXPECT_FALSE(x->isConstant());
  EXPECT_EQ(g.inputs, std::vector<Value*>{x});
  Value* c = g.addConstant("c", TensorType{DType::I32, {2}}, {1, 0, 0, 0, 2, 0, 0, 0});
  EXPECT_TRUE(c->typed);
  ASSERT_TRUE(c->isConstant());
  EXPECT_EQ(c->as<int32_t>()[1], 2);
  EXPECT_TRUE(g.inputs.size() == 1);  // a constant is no graph input
}

TEST(GraphBuild, ConstantOfTheWrongSizeIsRefused) {
  Graph g;
  try {
    g.addConstant("c", f32({2}), {0, 0, 0});
    FAIL() << "no error";
  } catch (const CompileError& e) {
    EXPECT_STREQ(e.what(), "constant 'c' of type f32[2] has 3 bytes, expected 8");
  }
}

TEST(GraphEdit, ReplaceAllUsesRewritesOperandsAndOutputs) {
  Graph g;
  Value* x = g.addInput("x", f32({2}));
  Value* y = g.addInput("y", f32({2}));
  Node* add = g.addNode("Add", "add", {x, x}, 1);
  Node* mul = g.addNode("Mul", "mul", {add->outputs[0], y}, 1);
  g.outputs = {x, mul->outputs[0]};

  g.replaceAllUses(x, y);
  EXPECT_EQ(add->inputs, (std::vector<Value*>{y, y}));
  EXPECT_EQ(mul->inputs, (std::vector<Value*>{add->outputs[0], y}));
  EXPECT_EQ(g.outputs, (std::vector<Value*>{y, mul->outputs[0]}));
  EXPECT_EQ(g.inputs, (std::vector<Value*>{x, y}));  // the signature is not a use
}

TEST(GraphEdit, ReplaceAllUsesKeepsAbsentInputsAbsent) {
  Graph g;
  Value* x = g.addInput("x", f32({2}));
  Value* y = g.addInput("y", f32({2}));
  Node* gemm = g.addNode("Gemm", "gemm", {x, x, nullptr}, 1);
  g.replaceAllUses(x, y);
  EXPECT_EQ(gemm->inputs, (std::vector<Value*>{y, y, nullptr}));
}

TEST(GraphEdit, RemoveUnusedValuesDropsOnlyUnreferencedValues) {
  Graph g;
  Value* x = g.addInput("x", f32({2}));
  Value* unused_input = g.addInput("unused_input", f32({2}));
  Value* used_const = g.addConstant("k", f32({2}), std::vector<uint8_t>(8));
  Value* dead_const = g.addConstant("dead", f32({2}), std::vector<uint8_t>(8));
  Value* orphan = g.newValue("orphan");
  Node* add = g.addNode("Add", "add", {x, used_const}, 1);
  Node* split = g.addNode("Split", "split", {add->outputs[0]}, 2);
  g.outputs = {split->outputs[0]};

  // A value replaced everywhere is unreferenced afterwards.
  Value* other = g.addConstant("other", f32({2}), std::vector<uint8_t>(8));
  g.replaceAllUses(used_const, other);

  g.removeUnusedValues();
  EXPECT_TRUE(owns(g, x));
  EXPECT_TRUE(owns(g, unused_input));       // part of the signature
  EXPECT_TRUE(owns(g, split->outputs[1]));  // a node result, even if unused
  EXPECT_TRUE(owns(g, other));
  EXPECT_FALSE(owns(g, used_const));
  EXPECT_FALSE(owns(g, dead_const));
  EXPECT_FALSE(owns(g, orphan));
  EXPECT_EQ(g.values.size(), 6u);  // x, unused_input, add, split_0, split_1, other
}

TEST(GraphNode, TypedAttributeAccessors) {
  Graph g;
  Node* n = g.addNode("Conv", "conv1", {}, 1);
  n->attrs = {{"group", int64_t{2}},
              {"eps", 1e-5},
              {"mode", std::string("constant")},
              {"pads", std::vector<int64_t>{0, 1, 0, 1}},
              {"scales", std::vector<double>{0.5}}};
  EXPECT_EQ(n->i("group"), 2);
  EXPECT_EQ(n->f("eps"), 1e-5);
  EXPECT_EQ(n->f("group"), 2.0);  // an integral literal reads as a float
  EXPECT_EQ(n->s("mode"), "constant");
  EXPECT_EQ(n->ints("pads"), (std::vector<int64_t>{0, 1, 0, 1}));
  EXPECT_EQ(n->floats("scales"), std::vector<double>{0.5});
  EXPECT_EQ(n->i("missing", 7), 7);
  EXPECT_EQ(n->f("missing", 0.25), 0.25);
  EXPECT_TRUE(n->has("eps"));
  EXPECT_FALSE(n->has("missing"));

  try {
    n->i("missing");
    FAIL() << "no error";
  } catch (const CompileError& e) {
    EXPECT_STREQ(e.what(), "node 'conv1' (Conv): attribute 'missing' is missing");
  }
  try {
    n->i("eps");
    FAIL() << "no error";
  } catch (const CompileError& e) {
    EXPECT_STREQ(e.what(), "node 'conv1' (Conv): attribute 'eps' is not an int");
  }
  EXPECT_THROW(n->ints("group"), CompileError);
  EXPECT_THROW(n->s("group"), CompileError);
  EXPECT_THROW(n->floats("pads"), CompileError);
}

// A graph stops growing at max_nodes with an error naming the node that
// would pass it (the importer's unrolled recurrences meet this bound).
TEST(GraphLimits, AddNodeStopsAtMaxNodes) {
  Graph g;
  g.max_nodes = 3;
  Value* x = g.addInput("x", {DType::F32, {4}});
  for (int i = 0; i < 3; ++i) x = g.addNode("Relu", "r", {x}, 1)->outputs[0];
  try {
    g.addNode("Relu", "fourth", {x}, 1);
    FAIL() << "a fourth node was added";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("more than 3 nodes (node 'fourth', Relu)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(g.nodes.size(), 3u);
}

}  // namespace
}  // namespace nanoc
