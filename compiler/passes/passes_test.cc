// The passes on small graphs built with the Graph API: constant folding, dead
// code elimination, output legalization, the verifier, and the pipeline.
#include <gtest/gtest.h>

#include <cstring>

#include "compiler/ir/error.h"
#include "compiler/passes/constant_folding.h"
#include "compiler/passes/dead_code_elimination.h"
#include "compiler/passes/legalize_outputs.h"
#include "compiler/passes/pipeline.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc {
namespace {

TensorType f32(std::vector<int64_t> dims) { return {DType::F32, std::move(dims)}; }

Value* constant(Graph& g, const std::string& name, std::vector<int64_t> dims,
                const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return g.addConstant(name, f32(std::move(dims)), std::move(bytes));
}

std::vector<float> valuesOf(const Value* v) {
  EXPECT_TRUE(v->isConstant()) << v->name;
  if (!v->isConstant()) return {};
  return std::vector<float>(v->as<float>(), v->as<float>() + v->type.numel());
}

Value* unary(Graph& g, const std::string& op, const std::string& name, Value* x) {
  return g.addNode(op, name, {x}, 1)->outputs[0];
}

Value* binary(Graph& g, const std::string& op, const std::string& name, Value* a, Value* b) {
  return g.addNode(op, name, {a, b}, 1)->outputs[0];
}

void expectErrorContaining(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    FAIL() << "expected a CompileError";
  } catch (const CompileError& e) {
    std::string msg = e.what();
    for (const std::string& part : parts) EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
}

// ---- constant folding ----

TEST(ConstantFolding, FoldsAChainOfConstantNodes) {
  Graph g;
  Value* a = constant(g, "a", {2}, {1, -5});
  Value* b = constant(g, "b", {2}, {2, 3});
  Value* sum = binary(g, "Add", "add", a, b);   // [3, -2]
  Value* relu = unary(g, "Relu", "relu", sum);  // [3, 0]
  Value* x = g.addInput("x", f32({2}));
  Value* y = binary(g, "Mul", "mul", x, relu);  // depends on the input
  g.outputs = {y, relu};
  inferShapes(g);

  EXPECT_EQ(foldConstants(g), 2);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0]->name, "mul");
  EXPECT_EQ(valuesOf(sum), (std::vector<float>{3, -2}));
  EXPECT_EQ(valuesOf(relu), (std::vector<float>{3, 0}));
  // The folded value keeps its name and its uses.
  EXPECT_EQ(relu->name, "relu");
  EXPECT_EQ(relu->producer, nullptr);
  EXPECT_EQ(g.nodes[0]->inputs[1], relu);
  EXPECT_FALSE(y->isConstant());
  verifyGraph(g);
}

TEST(ConstantFolding, LeavesNodesThatReadAGraphInput) {
  Graph g;
  Value* x = g.addInput("x", f32({3}));
  Value* c = constant(g, "c", {3}, {1, 2, 3});
  g.outputs = {unary(g, "Tanh", "tanh", binary(g, "Add", "add", x, c))};
  inferShapes(g);
  EXPECT_EQ(foldConstants(g), 0);
  EXPECT_EQ(g.nodes.size(), 2u);
}

TEST(ConstantFolding, KeepsResultsLargerThanTheLimit) {
  Graph g;
  Value* c = constant(g, "c", {4}, {1, 2, 3, 4});
  g.outputs = {unary(g, "Relu", "relu", c)};
  inferShapes(g);
  EXPECT_EQ(foldConstants(g, /*max_bytes=*/8), 0);
  EXPECT_EQ(foldConstants(g, /*max_bytes=*/16), 1);
}

TEST(ConstantFolding, FoldsAnOpWithAnAbsentOptionalInput) {
  Graph g;
  Value* a = constant(g, "a", {1, 2}, {1, 2});
  Value* b = constant(g, "b", {2, 1}, {3, 4});
  Node* gemm = g.addNode("Gemm", "gemm", {a, b, nullptr}, 1);
  gemm->attrs = {{"alpha", 1.0}, {"beta", 1.0}, {"transA", int64_t{0}}, {"transB", int64_t{0}}};
  g.outputs = {gemm->outputs[0]};
  inferShapes(g);
  Value* out = gemm->outputs[0];
  EXPECT_EQ(foldConstants(g), 1);
  EXPECT_EQ(valuesOf(out), (std::vector<float>{11}));
}

// ---- dead code elimination ----

TEST(DeadCodeElimination, RemovesADeadBranchAndKeepsOutputs) {
  Graph g;
  Value* x = g.addInput("x", f32({4}));
  Value* live = unary(g, "Relu", "live", x);
  Value* dead = unary(g, "Tanh", "dead", x);
  unary(g, "Sigmoid", "dead_too", dead);
  Value* out = binary(g, "Add", "out", live, x);
  g.outputs = {out, live};
  inferShapes(g);

  EXPECT_EQ(eliminateDeadCode(g), 2);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0]->name, "live");
  EXPECT_EQ(g.nodes[1]->name, "out");
  for (const auto& v : g.values) EXPECT_NE(v->name, "dead");
  EXPECT_EQ(g.values.size(), 3u);  // x, live, out
  EXPECT_EQ(g.outputs, (std::vector<Value*>{out, live}));
  verifyGraph(g);
}

TEST(DeadCodeElimination, DropsUnusedConstantsButKeepsGraphInputs) {
  Graph g;
  Value* x = g.addInput("x", f32({2}));
  g.addInput("unused_input", f32({2}));
  constant(g, "unused_constant", {1}, {7});
  g.outputs = {unary(g, "Relu", "relu", x)};
  inferShapes(g);
  EXPECT_EQ(eliminateDeadCode(g), 0);
  EXPECT_EQ(g.inputs.size(), 2u);
  for (const auto& v : g.values) EXPECT_NE(v->name, "unused_constant");
  verifyGraph(g);
}

// ---- output legalization ----

TEST(LegalizeOutputs, AnOutputThatIsAGraphInputGetsAnIdentity) {
  Graph g;
  Value* x = g.addInput("x", f32({2, 2}));
  g.outputs = {x};
  legalizeOutputs(g);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0]->op, "Identity");
  EXPECT_EQ(g.nodes[0]->inputs, (std::vector<Value*>{x}));
  ASSERT_NE(g.outputs[0], x);
  EXPECT_EQ(g.outputs[0]->producer, g.nodes[0].get());
  EXPECT_EQ(g.outputs[0]->type, f32({2, 2}));
  verifyGraph(g);
}

TEST(LegalizeOutputs, ConstantAndRepeatedOutputsGetCopiesOthersDoNot) {
  Graph g;
  Value* x = g.addInput("x", f32({2}));
  Value* r = unary(g, "Relu", "relu", x);
  Value* c = constant(g, "c", {1}, {1});
  g.outputs = {r, r, c};
  inferShapes(g);
  legalizeOutputs(g);
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.outputs[0], r);
  EXPECT_NE(g.outputs[1], r);
  EXPECT_NE(g.outputs[2], c);
  EXPECT_EQ(g.outputs[1]->producer->op, "Identity");
  EXPECT_EQ(g.outputs[2]->producer->op, "Identity");
  verifyGraph(g);
}

TEST(LegalizeOutputs, AConstantOutputKeepsItsNameOnTheCopy) {
  Graph g;
  g.addInput("x", f32({2}));
  Value* c = constant(g, "shape", {2}, {1, 2});
  g.outputs = {c};
  legalizeOutputs(g);
  ASSERT_NE(g.outputs[0], c);
  EXPECT_EQ(g.outputs[0]->name, "shape");
  EXPECT_EQ(g.outputs[0]->producer->op, "Identity");
  EXPECT_NE(c->name, "shape");
  verifyGraph(g);
}

// ---- verifier ----

TEST(PassesVerify, RejectsAUseBeforeItsDefinition) {
  Graph g;
  Value* x = g.addInput("x", f32({2}));
  Value* first = unary(g, "Relu", "first", x);
  Value* second = unary(g, "Tanh", "second", first);
  g.outputs = {second};
  inferShapes(g);
  verifyGraph(g);
  std::swap(g.nodes[0], g.nodes[1]);
  expectErrorContaining([&] { verifyGraph(g); },
                        {"node 'second' (Tanh)", "'first' is used before it is defined"});
}

TEST(PassesVerify, RejectsAnOutputTypeTheShapeRuleDisagreesWith) {
  Graph g;
  Value* a = g.addInput("a", f32({2, 3}));
  Value* b = g.addInput("b", f32({3, 4}));
  Value* y = binary(g, "MatMul", "mm", a, b);
  g.outputs = {y};
  inferShapes(g);
  verifyGraph(g);
  y->type = f32({2, 5});
  expectErrorContaining([&] { verifyGraph(g); },
                        {"node 'mm' (MatMul)", "f32[2,5]", "the shape rule gives f32[2,4]"});
}

TEST(PassesVerify, RejectsWrongArityAndUnknownOps) {
  Graph g;
  Value* x = g.addInput("x", f32({2}));
  Value* y = binary(g, "Relu", "two_inputs", x, x);
  y->type = f32({2});
  y->typed = true;
  g.outputs = {y};
  expectErrorContaining([&] { verifyGraph(g); }, {"node 'two_inputs' (Relu)", "has 2 inputs"});
  g.nodes[0]->op = "Frobnicate";
  expectErrorContaining([&] { verifyGraph(g); }, {"node 'two_inputs' (Frobnicate)", "unknown op"});
}

TEST(PassesVerify, RejectsComputeOpsOnOtherDtypes) {
  Graph g;
  Value* x = g.addInput("x", {DType::I32, {2}});
  Value* y = unary(g, "Sigmoid", "int_sigmoid", x);
  y->type = {DType::I32, {2}};
  y->typed = true;
  g.outputs = {y};
  expectErrorContaining([&] { verifyGraph(g); },
                        {"node 'int_sigmoid' (Sigmoid)", "this op takes a float type"});
}

// ---- shape inference and pipeline ----

TEST(ShapeInference, NamesTheNodeThatFails) {
  Graph g;
  Value* a = g.addInput("a", f32({2, 3}));
  Value* b = g.addInput("b", f32({4}));
  g.outputs = {binary(g, "Add", "bad_add", a, b)};
  expectErrorContaining([&] { inferShapes(g); }, {"node 'bad_add' (Add)", "do not broadcast"});
}

TEST(Pipeline, FoldsPrunesAndLegalizes) {
  Graph g;
  Value* x = g.addInput("x", f32({1, 2}));
  Value* w = constant(g, "w", {2, 2}, {1, 2, 3, 4});
  Node* t = g.addNode("Transpose", "wt", {w}, 1);
  t->attrs["perm"] = std::vector<int64_t>{1, 0};
  Value* y = binary(g, "MatMul", "mm", x, t->outputs[0]);
  unary(g, "Sigmoid", "unused", y);
  g.outputs = {y, x};
  runPipeline(g);

  // Transpose folded, Sigmoid removed, x copied by an Identity.
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0]->op, "MatMul");
  EXPECT_EQ(valuesOf(g.nodes[0]->inputs[1]), (std::vector<float>{1, 3, 2, 4}));
  EXPECT_EQ(g.nodes[1]->op, "Identity");
  EXPECT_EQ(g.outputs[0], y);
  EXPECT_EQ(y->type, f32({1, 2}));
  EXPECT_EQ(g.outputs[1]->producer, g.nodes[1].get());
}

TEST(Pipeline, WithoutFoldingKeepsConstantNodes) {
  Graph g;
  Value* c = constant(g, "c", {2}, {-1, 1});
  g.outputs = {unary(g, "Relu", "relu", c)};
  runPipeline(g, {.fold_constants = false});
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0]->op, "Relu");
}

}  // namespace
}  // namespace nanoc

namespace nanoc {
namespace {

TEST(FoldBatchNorm, FoldsIntoAConstantConvAndMatchesTheUnfoldedResult) {
  // x [1,1,1,1] -> Conv 1x1 to 2 channels (w = {2, -3}, b = {0.5, 1}) -> BN.
  Graph g;
  Value* x = g.addInput("x", f32({1, 1, 1, 1}));
  Value* w = constant(g, "w", {2, 1, 1, 1}, {2.0f, -3.0f});
  Value* b = constant(g, "b", {2}, {0.5f, 1.0f});
  Node* conv = g.addNode("Conv", "conv", {x, w, b}, 1);
  conv->attrs = {{"group", int64_t{1}},
                 {"kernel_shape", std::vector<int64_t>{1, 1}},
                 {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                 {"strides", std::vector<int64_t>{1, 1}},
                 {"dilations", std::vector<int64_t>{1, 1}}};
  Node* bn =
      g.addNode("BatchNormalization", "bn",
                {conv->outputs[0], constant(g, "scale", {2}, {1.5f, 0.5f}),
                 constant(g, "bias", {2}, {0.25f, -1.0f}), constant(g, "mean", {2}, {1.0f, 2.0f}),
                 constant(g, "var", {2}, {4.0f, 0.25f})},
                1);
  bn->attrs = {{"epsilon", 0.0}};
  g.outputs = {bn->outputs[0]};
  runPipeline(g);

  ASSERT_EQ(g.nodes.size(), 1u);
  const Node& folded = *g.nodes[0];
  EXPECT_EQ(folded.op, "Conv");
  // s = scale / sqrt(var): {0.75, 1}; W' = W * s; B' = (B - mean) * s + bias.
  EXPECT_EQ(valuesOf(folded.inputs[1]), (std::vector<float>{1.5f, -3.0f}));
  EXPECT_EQ(valuesOf(folded.inputs[2]), (std::vector<float>{-0.125f, -2.0f}));
  EXPECT_EQ(g.outputs[0], folded.outputs[0]);
}

TEST(FoldBatchNorm, LeavesAConvWhoseResultHasAnotherUse) {
  Graph g;
  Value* x = g.addInput("x", f32({1, 1, 2, 2}));
  Value* w = constant(g, "w", {1, 1, 1, 1}, {2.0f});
  Node* conv = g.addNode("Conv", "conv", {x, w}, 1);
  conv->attrs = {{"group", int64_t{1}},
                 {"kernel_shape", std::vector<int64_t>{1, 1}},
                 {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                 {"strides", std::vector<int64_t>{1, 1}},
                 {"dilations", std::vector<int64_t>{1, 1}}};
  Node* bn = g.addNode(
      "BatchNormalization", "bn",
      {conv->outputs[0], constant(g, "scale", {1}, {1.5f}), constant(g, "bias", {1}, {0.25f}),
       constant(g, "mean", {1}, {1.0f}), constant(g, "var", {1}, {4.0f})},
      1);
  bn->attrs = {{"epsilon", 1e-5}};
  g.outputs = {bn->outputs[0], conv->outputs[0]};
  runPipeline(g);
  int bns = 0;
  for (const auto& node : g.nodes) bns += node->op == "BatchNormalization";
  EXPECT_EQ(bns, 1);
}

}  // namespace
}  // namespace nanoc
