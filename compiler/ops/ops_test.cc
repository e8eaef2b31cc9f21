// The op table as a specification: each op's shape rule, its errors, and its
// reference implementation on small examples computed by hand (pooling edge
// cases checked against ONNX Runtime 1.31).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "compiler/ir/error.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ops/broadcast.h"
#include "compiler/ops/pool.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc {
namespace {

using Dims = std::vector<int64_t>;
using Attrs = std::map<std::string, Attr>;

TensorType f32(Dims dims) { return {DType::F32, std::move(dims)}; }

template <typename T>
std::vector<uint8_t> bytesOf(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// One node over graph inputs of the given types (a missing type = absent
// optional input), typed by its shape rule.
struct OneNode {
  Graph graph;
  Node* node = nullptr;

  OneNode(const std::string& op, const std::vector<std::optional<TensorType>>& inputs,
          Attrs attrs = {}, const std::string& name = "n") {
    std::vector<Value*> in;
    for (size_t i = 0; i < inputs.size(); ++i)
      in.push_back(inputs[i] ? graph.addInput("x" + std::to_string(i), *inputs[i]) : nullptr);
    node = graph.addNode(op, name, in, 1);
    node->attrs = std::move(attrs);
  }
  TensorType infer() {
    inferNode(*node);
    return node->outputs[0]->type;
  }
};

TensorType inferOne(const std::string& op, const std::vector<std::optional<TensorType>>& inputs,
                    Attrs attrs = {}) {
  return OneNode(op, inputs, std::move(attrs)).infer();
}

// Expects shape inference to fail with a message naming the node and op, and
// containing `what`.
void expectInferError(const std::string& op, const std::vector<std::optional<TensorType>>& inputs,
                      Attrs attrs, const std::string& what) {
  OneNode one(op, inputs, std::move(attrs), "bad_node");
  try {
    one.infer();
    FAIL() << op << ": expected a CompileError containing '" << what << "'";
  } catch (const CompileError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("node 'bad_node' (" + op + ")"), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
}

struct Tensor {
  TensorType type;
  std::vector<float> data;
};

// Runs the op's reference implementation on f32 inputs; std::nullopt is an
// absent optional input.
std::vector<float> reference(const std::string& op,
                             const std::vector<std::optional<Tensor>>& inputs, Attrs attrs = {}) {
  std::vector<std::optional<TensorType>> types;
  for (const auto& t : inputs) types.push_back(t ? std::optional(t->type) : std::nullopt);
  OneNode one(op, types, std::move(attrs));
  TensorType out = one.infer();
  std::vector<const void*> in;
  for (const auto& t : inputs) {
    if (t && static_cast<int64_t>(t->data.size()) != t->type.numel()) {
      ADD_FAILURE() << op << ": test data does not match " << t->type.str();
      return {};
    }
    in.push_back(t ? t->data.data() : nullptr);
  }
  std::vector<float> result(out.numel(), -12345.0f);
  findOp(op)->reference(*one.node, in, {result.data()});
  return result;
}

std::vector<float> iota(int64_t n, float start = 1.0f) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

void expectNear(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

Attrs poolAttrs(Dims kernel, Dims pads, Dims strides, int64_t ceil_mode, Dims dilations = {1, 1}) {
  return {{"kernel_shape", kernel},
          {"pads", pads},
          {"strides", strides},
          {"dilations", dilations},
          {"ceil_mode", ceil_mode}};
}

Attrs avgPoolAttrs(Dims kernel, Dims pads, Dims strides, int64_t ceil_mode,
                   int64_t count_include_pad, Dims dilations = {1, 1}) {
  Attrs a = poolAttrs(kernel, pads, strides, ceil_mode, dilations);
  a["count_include_pad"] = count_include_pad;
  return a;
}

Attrs convAttrs(int64_t group, Dims kernel, Dims pads, Dims strides, Dims dilations) {
  return {{"group", group},
          {"kernel_shape", kernel},
          {"pads", pads},
          {"strides", strides},
          {"dilations", dilations}};
}

// ---- the table ----

TEST(OpTable, ListsEveryOpSortedEachWithAShapeRuleAndAReference) {
  std::vector<std::string> core = {"Add",
                                   "AveragePool",
                                   "BatchNormalization",
                                   "Concat",
                                   "Conv",
                                   "CumProd",
                                   "CumSum",
                                   "Div",
                                   "Gemm",
                                   "GlobalAveragePool",
                                   "GroupNormalization",
                                   "Hardmax",
                                   "Identity",
                                   "InstanceNormalization",
                                   "LRN",
                                   "LayerNormalization",
                                   "LogSoftmax",
                                   "LpNormalization",
                                   "MatMul",
                                   "MaxPool",
                                   "MeanVarianceNormalization",
                                   "Mul",
                                   "NegativeLogLikelihoodLoss",
                                   "ReduceL1",
                                   "ReduceL2",
                                   "ReduceLogSum",
                                   "ReduceLogSumExp",
                                   "ReduceMax",
                                   "ReduceMean",
                                   "ReduceMin",
                                   "ReduceProd",
                                   "ReduceSum",
                                   "ReduceSumSquare",
                                   "Relu",
                                   "Reshape",
                                   "RotaryEmbedding",
                                   "Sigmoid",
                                   "Softmax",
                                   "SoftmaxCrossEntropyLoss",
                                   "Sub",
                                   "Tanh",
                                   "TopK",
                                   "Transpose"};
  std::vector<std::string> ops = registeredOps();
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
  EXPECT_TRUE(std::includes(ops.begin(), ops.end(), core.begin(), core.end()));
  for (const std::string& op : ops) {
    const OpSchema* schema = findOp(op);
    ASSERT_NE(schema, nullptr) << op;
    EXPECT_EQ(schema->name, op);
    EXPECT_TRUE(schema->infer) << op;
    EXPECT_TRUE(schema->reference) << op;
  }
}

TEST(OpTable, UnknownOpIsNull) {
  EXPECT_EQ(findOp("LSTM"), nullptr);
  EXPECT_EQ(findOp(""), nullptr);
}

// ---- broadcasting ----

TEST(Broadcast, RightAlignsAndStretchesOnes) {
  EXPECT_EQ(broadcastShapes({2, 1, 3}, {4, 1}), (Dims{2, 4, 3}));
  EXPECT_EQ(broadcastShapes({}, {3}), (Dims{3}));
  EXPECT_EQ(broadcastShapes({5, 0}, {1}), (Dims{5, 0}));
  EXPECT_THROW(broadcastShapes({2, 3}, {4}), CompileError);
}

TEST(Broadcast, StridesAreZeroAlongBroadcastDims) {
  EXPECT_EQ(broadcastStrides({3}, {2, 3}), (Dims{0, 1}));
  EXPECT_EQ(broadcastStrides({2, 1}, {2, 3}), (Dims{1, 0}));
  EXPECT_EQ(broadcastStrides({2, 3}, {2, 3}), (Dims{3, 1}));
  EXPECT_THROW(broadcastStrides({2, 3}, {3}), CompileError);
}

// ---- elementwise ----

TEST(ShapeBinary, BroadcastsMultidirectionally) {
  EXPECT_EQ(inferOne("Add", {f32({2, 1, 3}), f32({4, 1})}), f32({2, 4, 3}));
  EXPECT_EQ(inferOne("Mul", {f32({}), f32({3})}), f32({3}));
  EXPECT_EQ(inferOne("Div", {f32({1, 3}), f32({1, 3})}), f32({1, 3}));
}

TEST(ShapeBinary, RejectsMismatchedBroadcastAndNonF32) {
  expectInferError("Add", {f32({2, 3}), f32({4})}, {}, "do not broadcast");
  expectInferError("Sub", {TensorType{DType::I64, {3}}, f32({3})}, {}, "different dtypes");
  expectInferError("Sub", {TensorType{DType::Bool, {3}}, TensorType{DType::Bool, {3}}}, {},
                   "this op takes a numeric type");
  expectInferError("Add", {f32({3}), std::nullopt}, {}, "missing");
}

TEST(ShapeUnary, KeepsTheInputType) {
  EXPECT_EQ(inferOne("Relu", {f32({2, 5})}), f32({2, 5}));
  EXPECT_EQ(inferOne("Tanh", {f32({})}), f32({}));
  expectInferError("Sigmoid", {TensorType{DType::I32, {2}}}, {}, "this op takes a float type");
  EXPECT_EQ(inferOne("Relu", {TensorType{DType::I32, {2}}}), (TensorType{DType::I32, {2}}));
}

TEST(ReferenceBinary, BroadcastsARowAcrossAMatrix) {
  Tensor a{f32({2, 3}), {1, 2, 3, 4, 5, 6}};
  Tensor row{f32({3}), {10, 20, 30}};
  Tensor col{f32({2, 1}), {2, 4}};
  expectNear(reference("Add", {a, row}), {11, 22, 33, 14, 25, 36});
  expectNear(reference("Sub", {row, a}), {9, 18, 27, 6, 15, 24});
  expectNear(reference("Mul", {a, col}), {2, 4, 6, 16, 20, 24});
  expectNear(reference("Div", {a, col}), {0.5f, 1, 1.5f, 1, 1.25f, 1.5f});
  // [2,1] with [3] broadcast to [2,3] in both directions.
  expectNear(reference("Add", {col, row}), {12, 22, 32, 14, 24, 34});
}

TEST(ReferenceUnary, ComputesReluSigmoidTanh) {
  Tensor x{f32({4}), {-2, 0, 0.5f, 3}};
  expectNear(reference("Relu", {x}), {0, 0, 0.5f, 3});
  expectNear(reference("Sigmoid", {x}), {0.11920292f, 0.5f, 0.62245933f, 0.95257413f});
  expectNear(reference("Tanh", {x}), {-0.96402758f, 0, 0.46211716f, 0.99505475f});
  // Saturates instead of overflowing.
  Tensor big{f32({2}), {-1000, 1000}};
  expectNear(reference("Sigmoid", {big}), {0, 1});
}

// ---- MatMul, Gemm ----

TEST(ShapeMatMul, FusedBiasIsARowOfTheOutput) {
  auto matmul = [](std::vector<TensorType> in) {
    Graph g;
    std::vector<Value*> values;
    for (size_t i = 0; i < in.size(); ++i)
      values.push_back(g.addInput("in" + std::to_string(i), in[i]));
    Node* node = g.addNode("MatMul", "mm", values, 1);
    inferNode(*node);
    return node->outputs[0]->type;
  };
  EXPECT_EQ(matmul({f32({2, 3, 4}), f32({4, 5}), f32({5})}), f32({2, 3, 5}));
  EXPECT_EQ(matmul({f32({3, 4}), f32({4, 5}), f32({1, 5})}), f32({3, 5}));
  EXPECT_THROW(matmul({f32({3, 4}), f32({4, 5}), f32({3, 5})}), CompileError);
  EXPECT_THROW(matmul({f32({3, 4}), f32({4, 5}), f32({4})}), CompileError);
  EXPECT_THROW(matmul({f32({3, 4}), f32({4, 5}), f32({1, 1, 5})}), CompileError);
}

TEST(ShapeMatMul, FollowsNumpyMatmul) {
  EXPECT_EQ(inferOne("MatMul", {f32({3, 4}), f32({4, 5})}), f32({3, 5}));
  EXPECT_EQ(inferOne("MatMul", {f32({4}), f32({4, 5})}), f32({5}));
  EXPECT_EQ(inferOne("MatMul", {f32({3, 4}), f32({4})}), f32({3}));
  EXPECT_EQ(inferOne("MatMul", {f32({4}), f32({4})}), f32({}));
  EXPECT_EQ(inferOne("MatMul", {f32({2, 1, 3, 4}), f32({5, 4, 6})}), f32({2, 5, 3, 6}));
  EXPECT_EQ(inferOne("MatMul", {f32({4}), f32({7, 4, 2})}), f32({7, 2}));
}

TEST(ShapeMatMul, RejectsInnerMismatchScalarsAndBadBatch) {
  expectInferError("MatMul", {f32({3, 4}), f32({5, 6})}, {}, "inner dims");
  expectInferError("MatMul", {f32({}), f32({4})}, {}, "rank >= 1");
  expectInferError("MatMul", {f32({2, 3, 4}), f32({3, 4, 5})}, {}, "batch dims");
}

TEST(ReferenceMatMul, MultipliesWithBroadcastBatch) {
  Tensor a{f32({2, 2}), {1, 2, 3, 4}};
  Tensor b{f32({2, 2}), {5, 6, 7, 8}};
  expectNear(reference("MatMul", {a, b}), {19, 22, 43, 50});
  // Batch of two [1,2] rows against one shared [2,2] matrix.
  Tensor batch{f32({2, 1, 2}), {1, 0, 0, 1}};
  expectNear(reference("MatMul", {batch, b}), {5, 6, 7, 8});
  // Shared left matrix, batched right: B's batch selects the matrix.
  Tensor bb{f32({2, 2, 1}), {1, 1, 1, -1}};
  expectNear(reference("MatMul", {a, bb}), {3, 7, -1, -1});
  Tensor v{f32({2}), {1, 1}};
  expectNear(reference("MatMul", {v, b}), {12, 14});
  expectNear(reference("MatMul", {a, v}), {3, 7});
  expectNear(reference("MatMul", {v, v}), {2});
}

Attrs gemmAttrs(double alpha, double beta, int64_t trans_a, int64_t trans_b) {
  return {{"alpha", alpha}, {"beta", beta}, {"transA", trans_a}, {"transB", trans_b}};
}

TEST(ShapeGemm, AppliesTransposes) {
  EXPECT_EQ(inferOne("Gemm", {f32({3, 4}), f32({4, 5}), std::nullopt}, gemmAttrs(1, 1, 0, 0)),
            f32({3, 5}));
  EXPECT_EQ(inferOne("Gemm", {f32({4, 3}), f32({4, 5})}, gemmAttrs(1, 1, 1, 0)), f32({3, 5}));
  EXPECT_EQ(inferOne("Gemm", {f32({3, 4}), f32({5, 4}), f32({5})}, gemmAttrs(1, 1, 0, 1)),
            f32({3, 5}));
  EXPECT_EQ(inferOne("Gemm", {f32({4, 3}), f32({5, 4}), f32({3, 1})}, gemmAttrs(1, 1, 1, 1)),
            f32({3, 5}));
  EXPECT_EQ(inferOne("Gemm", {f32({3, 4}), f32({4, 5}), f32({})}, gemmAttrs(1, 1, 0, 0)),
            f32({3, 5}));
}

TEST(ShapeGemm, RejectsBadOperandsAndAttributes) {
  expectInferError("Gemm", {f32({4}), f32({4, 5})}, gemmAttrs(1, 1, 0, 0), "A must have rank 2");
  expectInferError("Gemm", {f32({3, 4}), f32({4, 5})}, gemmAttrs(1, 1, 0, 1), "inner dims");
  expectInferError("Gemm", {f32({3, 4}), f32({4, 5}), f32({2, 5})}, gemmAttrs(1, 1, 0, 0),
                   "does not broadcast");
  expectInferError("Gemm", {f32({3, 4}), f32({4, 5})}, gemmAttrs(1, 1, 2, 0), "'transA'");
  expectInferError("Gemm", {f32({3, 4}), f32({4, 5})}, {{"alpha", 1.0}}, "'beta' is missing");
}

TEST(ReferenceGemm, ScalesTransposesAndAddsBroadcastC) {
  // A^T = [[1,2],[3,4]], B^T = [[1,0],[0,1]] (identity), C row [10, 20].
  Tensor at{f32({2, 2}), {1, 3, 2, 4}};
  Tensor bt{f32({2, 2}), {1, 0, 0, 1}};
  Tensor c{f32({2}), {10, 20}};
  expectNear(reference("Gemm", {at, bt, c}, gemmAttrs(2.0, 0.5, 1, 1)), {7, 14, 11, 18});
  // Without C, and a [2,3] x [3,1] product.
  Tensor a{f32({2, 3}), {1, 2, 3, 4, 5, 6}};
  Tensor b{f32({3, 1}), {1, 1, 1}};
  expectNear(reference("Gemm", {a, b, std::nullopt}, gemmAttrs(1, 1, 0, 0)), {6, 15});
  // C as a column [2,1].
  Tensor ccol{f32({2, 1}), {1, -1}};
  expectNear(reference("Gemm", {a, b, ccol}, gemmAttrs(1, 3, 0, 0)), {9, 12});
}

// ---- Conv ----

TEST(ShapeConv, HandlesGroupsPadsStridesDilations) {
  EXPECT_EQ(inferOne("Conv", {f32({1, 4, 7, 7}), f32({6, 2, 3, 3}), f32({6})},
                     convAttrs(2, {3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1})),
            f32({1, 6, 4, 4}));
  EXPECT_EQ(inferOne("Conv", {f32({2, 3, 7, 7}), f32({8, 3, 3, 3})},
                     convAttrs(1, {3, 3}, {0, 0, 0, 0}, {1, 1}, {2, 2})),
            f32({2, 8, 3, 3}));
  // Asymmetric pads: H gets 0 + 2, W gets 1 + 0.
  EXPECT_EQ(inferOne("Conv", {f32({1, 1, 5, 5}), f32({1, 1, 3, 2})},
                     convAttrs(1, {3, 2}, {0, 1, 2, 0}, {1, 2}, {1, 1})),
            f32({1, 1, 5, 3}));
  // Depthwise.
  EXPECT_EQ(inferOne("Conv", {f32({1, 8, 4, 4}), f32({8, 1, 3, 3})},
                     convAttrs(8, {3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1})),
            f32({1, 8, 4, 4}));
}

TEST(ShapeConv, RejectsInconsistentOperands) {
  Attrs a = convAttrs(1, {3, 3}, {0, 0, 0, 0}, {1, 1}, {1, 1});
  expectInferError("Conv", {f32({1, 3}), f32({4, 3, 3, 3})}, a, "X must have rank >= 3");
  expectInferError("Conv", {f32({1, 3, 8}), f32({4, 3, 3, 3})}, a, "must have the rank of X");
  expectInferError("Conv", {f32({1, 3, 8, 8}), f32({4, 2, 3, 3})}, a, "input channels");
  expectInferError("Conv", {f32({1, 3, 8, 8}), f32({4, 3, 3, 3}), f32({3})}, a, "B must be [4]");
  expectInferError("Conv", {f32({1, 3, 8, 8}), f32({4, 3, 2, 2})}, a, "kernel_shape");
  expectInferError("Conv", {f32({1, 3, 2, 2}), f32({4, 3, 3, 3})}, a, "larger than the padded");
  expectInferError("Conv", {f32({1, 4, 8, 8}), f32({6, 2, 3, 3})},
                   convAttrs(4, {3, 3}, {0, 0, 0, 0}, {1, 1}, {1, 1}), "does not divide");
  expectInferError("Conv", {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})},
                   convAttrs(1, {3, 3}, {0, 0, 0, 0}, {0, 1}, {1, 1}), "'strides'");
  expectInferError("Conv", {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})},
                   convAttrs(1, {3, 3}, {0, 0}, {1, 1}, {1, 1}), "'pads' must have 4");
}

TEST(ReferenceConv, TwoByTwoKernelWithBias) {
  // y[i][j] = x[i][j] + x[i+1][j+1] + 1 over x = 1..9 (3x3).
  Tensor x{f32({1, 1, 3, 3}), iota(9)};
  Tensor w{f32({1, 1, 2, 2}), {1, 0, 0, 1}};
  Tensor b{f32({1}), {1}};
  expectNear(reference("Conv", {x, w, b}, convAttrs(1, {2, 2}, {0, 0, 0, 0}, {1, 1}, {1, 1})),
             {7, 9, 13, 15});
}

TEST(ReferenceConv, ZeroPaddingStridesAndDilation) {
  // A 3x3 box filter over a padded 2x2 input: every window sees all of it.
  Tensor x{f32({1, 1, 2, 2}), {1, 2, 3, 4}};
  Tensor ones{f32({1, 1, 3, 3}), std::vector<float>(9, 1)};
  expectNear(reference("Conv", {x, ones, std::nullopt},
                       convAttrs(1, {3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1})),
             {10, 10, 10, 10});
  // Stride 2 over padded 2x2 (pads only at the end): windows at 0 and 2.
  expectNear(reference("Conv", {x, ones}, convAttrs(1, {3, 3}, {0, 0, 1, 1}, {2, 2}, {1, 1})),
             {10});
  // Dilation 2 on a 3x3 input picks the four corners: 1 + 3 + 7 + 9.
  Tensor x3{f32({1, 1, 3, 3}), iota(9)};
  Tensor w2{f32({1, 1, 2, 2}), {1, 1, 1, 1}};
  expectNear(reference("Conv", {x3, w2}, convAttrs(1, {2, 2}, {0, 0, 0, 0}, {1, 1}, {2, 2})), {20});
}

TEST(ReferenceConv, GroupsSeeOnlyTheirChannels) {
  // Two groups of one channel each: out0 = 2 * in0, out1 = 3 * in1.
  Tensor x{f32({1, 2, 1, 2}), {1, 2, 10, 20}};
  Tensor w{f32({2, 1, 1, 1}), {2, 3}};
  expectNear(reference("Conv", {x, w}, convAttrs(2, {1, 1}, {0, 0, 0, 0}, {1, 1}, {1, 1})),
             {2, 4, 30, 60});
  // One group, two input channels summed.
  Tensor w1{f32({1, 2, 1, 1}), {1, 1}};
  expectNear(reference("Conv", {x, w1}, convAttrs(1, {1, 1}, {0, 0, 0, 0}, {1, 1}, {1, 1})),
             {11, 22});
}

// ---- pooling ----

TEST(PoolGeometry, CeilModeDropsAWindowStartingInTheEndPadding) {
  // n=5, k=2, s=2: floor gives 2, ceil 3 (the last window starts at 4 < 5).
  EXPECT_EQ(poolOutputSize({5, 2, 1, 2, 0, 0}, false), 2);
  EXPECT_EQ(poolOutputSize({5, 2, 1, 2, 0, 0}, true), 3);
  // n=4, k=2, s=3, pads 1+1: ceil((4+2-2)/3)+1 = 3, but the third window would
  // start at 6 - 1 = 5 >= 4, wholly in the end padding, so ONNX Runtime gives 2.
  EXPECT_EQ(poolOutputSize({4, 2, 1, 3, 1, 1}, true), 2);
  EXPECT_EQ(poolOutputSize({4, 2, 1, 3, 1, 1}, false), 2);
  // Exact fit: ceil changes nothing.
  EXPECT_EQ(poolOutputSize({6, 2, 1, 2, 0, 0}, true), 3);
  // Dilation widens the kernel: eff = 3.
  EXPECT_EQ(poolOutputSize({5, 2, 2, 1, 0, 0}, false), 3);
}

TEST(ShapePool, MaxAndAveragePoolOutputSizes) {
  EXPECT_EQ(inferOne("MaxPool", {f32({1, 3, 5, 5})}, poolAttrs({2, 2}, {0, 0, 0, 0}, {2, 2}, 0)),
            f32({1, 3, 2, 2}));
  EXPECT_EQ(inferOne("MaxPool", {f32({1, 3, 5, 5})}, poolAttrs({2, 2}, {0, 0, 0, 0}, {2, 2}, 1)),
            f32({1, 3, 3, 3}));
  EXPECT_EQ(inferOne("MaxPool", {f32({1, 1, 4, 4})}, poolAttrs({2, 2}, {1, 1, 1, 1}, {3, 3}, 1)),
            f32({1, 1, 2, 2}));
  EXPECT_EQ(inferOne("AveragePool", {f32({2, 1, 7, 5})},
                     avgPoolAttrs({3, 2}, {1, 0, 1, 0}, {2, 1}, 0, 1)),
            f32({2, 1, 4, 4}));
}

TEST(ShapePool, RejectsBadAttributes) {
  expectInferError("MaxPool", {f32({1, 1, 5, 5})}, poolAttrs({2, 2}, {2, 0, 0, 0}, {1, 1}, 0),
                   "smaller than kernel_shape");
  expectInferError("MaxPool", {f32({1, 1})}, poolAttrs({2, 2}, {0, 0, 0, 0}, {1, 1}, 0),
                   "rank >= 3");
  expectInferError("MaxPool", {f32({1, 1, 5})}, poolAttrs({2, 2}, {0, 0, 0, 0}, {1, 1}, 0),
                   "'kernel_shape' must have 1 entries");
  expectInferError("MaxPool", {f32({1, 1, 2, 2})}, poolAttrs({3, 3}, {0, 0, 0, 0}, {1, 1}, 0),
                   "larger than the padded");
  expectInferError("MaxPool", {f32({1, 1, 5, 5})}, poolAttrs({2, 2}, {0, 0, 0, 0}, {1, 1}, 2),
                   "'ceil_mode'");
  expectInferError("AveragePool", {f32({1, 1, 5, 5})}, poolAttrs({2, 2}, {0, 0, 0, 0}, {1, 1}, 0),
                   "'count_include_pad' is missing");
}

TEST(ReferenceMaxPool, PaddingNeverWins) {
  // All-negative input: a zero pad winning would show up as 0.
  Tensor x{f32({1, 1, 2, 2}), {-1, -2, -3, -4}};
  expectNear(reference("MaxPool", {x}, poolAttrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 0)),
             {-1, -1, -2, -1, -1, -2, -3, -3, -4});
}

TEST(ReferenceMaxPool, CeilModePartialWindows) {
  Tensor x{f32({1, 1, 5, 5}), iota(25)};
  expectNear(reference("MaxPool", {x}, poolAttrs({2, 2}, {0, 0, 0, 0}, {2, 2}, 1)),
             {7, 9, 10, 17, 19, 20, 22, 24, 25});
}

TEST(ReferenceAveragePool, CountIncludePadZeroAndOne) {
  // 5x5 of 1..25, k=3, s=2, pads 1, ceil_mode; values from ONNX Runtime.
  Tensor x{f32({1, 1, 5, 5}), iota(25)};
  expectNear(reference("AveragePool", {x}, avgPoolAttrs({3, 3}, {1, 1, 1, 1}, {2, 2}, 1, 0)),
             {4, 5.5f, 7, 11.5f, 13, 14.5f, 19, 20.5f, 22});
  expectNear(reference("AveragePool", {x}, avgPoolAttrs({3, 3}, {1, 1, 1, 1}, {2, 2}, 1, 1)),
             {16.f / 9, 33.f / 9, 28.f / 9, 69.f / 9, 13, 87.f / 9, 76.f / 9, 123.f / 9, 88.f / 9});
}

TEST(ReferenceAveragePool, CeilModeExtraPaddingIsNeverCounted) {
  // No pads, ceil_mode: the last window [4, 6) holds one real element; with
  // count_include_pad = 1 it still divides by 1, not 2 (ONNX Runtime).
  Tensor x{f32({1, 1, 5, 5}), iota(25)};
  expectNear(reference("AveragePool", {x}, avgPoolAttrs({2, 2}, {0, 0, 0, 0}, {2, 2}, 1, 1)),
             {4, 6, 7.5f, 14, 16, 17.5f, 21.5f, 23.5f, 25});
}

TEST(ReferenceAveragePool, DilatedWindowsCountTheirTaps) {
  // k=2, d=2, pads 1: taps at -1 and +1 around each position; ONNX Runtime.
  Tensor x{f32({1, 1, 5, 5}), iota(25)};
  std::vector<float> y1 =
      reference("AveragePool", {x}, avgPoolAttrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 0, 1, {2, 2}));
  expectNear({y1[0], y1[1], y1[4], y1[12], y1[24]}, {1.75f, 3.5f, 2.25f, 13, 4.75f});
  std::vector<float> y0 =
      reference("AveragePool", {x}, avgPoolAttrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 0, 0, {2, 2}));
  expectNear({y0[0], y0[1], y0[4], y0[12], y0[24]}, {7, 7, 9, 13, 19});
}

TEST(GlobalAveragePool, ShapeAndMean) {
  EXPECT_EQ(inferOne("GlobalAveragePool", {f32({2, 3, 4, 5})}), f32({2, 3, 1, 1}));
  EXPECT_EQ(inferOne("GlobalAveragePool", {f32({2, 3, 4})}), f32({2, 3, 1}));
  expectInferError("GlobalAveragePool", {f32({2, 3})}, {}, "rank >= 3");
  Tensor x{f32({1, 2, 2, 2}), {1, 2, 3, 4, 10, 20, 30, 40}};
  expectNear(reference("GlobalAveragePool", {x}), {2.5f, 25});
}

// ---- BatchNormalization, Softmax ----

TEST(BatchNormalization, ShapeRuleAndInferenceFormula) {
  TensorType c = f32({2});
  EXPECT_EQ(inferOne("BatchNormalization", {f32({1, 2, 3}), c, c, c, c}, {{"epsilon", 1e-5}}),
            f32({1, 2, 3}));
  expectInferError("BatchNormalization", {f32({1, 2, 3}), f32({3}), c, c, c}, {{"epsilon", 1e-5}},
                   "scale must be [2]");
  expectInferError("BatchNormalization", {f32({1, 2}), c, c, c, c}, {{"epsilon", -1.0}},
                   "'epsilon'");
  // y = (x - mean) / sqrt(var + eps) * scale + B with var + eps = 4 and 1.
  Tensor x{f32({1, 2, 2}), {1, 3, 5, 7}};
  Tensor scale{c, {2, 1}}, bias{c, {1, -1}}, mean{c, {1, 5}}, var{c, {3.5f, 0.5f}};
  expectNear(reference("BatchNormalization", {x, scale, bias, mean, var}, {{"epsilon", 0.5}}),
             {1, 3, -1, 1});
}

TEST(Softmax, RowsSumToOneAndLargeInputsDoNotOverflow) {
  Tensor x{f32({2, 3}), {1, 2, 3, 1000, 1000, 1001}};
  std::vector<float> y = reference("Softmax", {x}, {{"axis", int64_t{1}}});
  expectNear(y, {0.09003057f, 0.24472847f, 0.66524096f, 0.21194156f, 0.21194156f, 0.57611688f});
  EXPECT_NEAR(y[0] + y[1] + y[2], 1.0f, 1e-6f);
  EXPECT_NEAR(y[3] + y[4] + y[5], 1.0f, 1e-6f);
  // Over axis 0, each column sums to 1.
  Tensor z{f32({2, 2}), {0, 1, 0, 3}};
  expectNear(reference("Softmax", {z}, {{"axis", int64_t{0}}}),
             {0.5f, 0.11920292f, 0.5f, 0.88079708f});
}

TEST(Softmax, RejectsAxisOutOfRange) {
  EXPECT_EQ(inferOne("Softmax", {f32({2, 3})}, {{"axis", int64_t{1}}}), f32({2, 3}));
  expectInferError("Softmax", {f32({2, 3})}, {{"axis", int64_t{2}}}, "'axis' is 2");
  expectInferError("Softmax", {f32({2, 3})}, {{"axis", int64_t{-1}}}, "'axis' is -1");
}

// ---- data movement: any dtype ----

TEST(Reshape, KeepsBytesAndChecksElementCount) {
  TensorType i64{DType::I64, {2, 3}};
  EXPECT_EQ(inferOne("Reshape", {i64}, {{"shape", Dims{3, 1, 2}}}),
            (TensorType{DType::I64, {3, 1, 2}}));
  EXPECT_EQ(inferOne("Reshape", {f32({1, 1})}, {{"shape", Dims{}}}), f32({}));
  expectInferError("Reshape", {f32({2, 3})}, {{"shape", Dims{4, 2}}}, "cannot reshape");
  expectInferError("Reshape", {f32({2, 3})}, {{"shape", Dims{-1, 6}}}, "negative");
  Tensor x{f32({2, 2}), {1, 2, 3, 4}};
  expectNear(reference("Reshape", {x}, {{"shape", Dims{4}}}), {1, 2, 3, 4});
}

TEST(Transpose, PermutesDimsOfAnyDtype) {
  EXPECT_EQ(inferOne("Transpose", {f32({2, 3, 4})}, {{"perm", Dims{2, 0, 1}}}), f32({4, 2, 3}));
  expectInferError("Transpose", {f32({2, 3, 4})}, {{"perm", Dims{0, 0, 1}}}, "not a permutation");
  expectInferError("Transpose", {f32({2, 3, 4})}, {{"perm", Dims{0, 1, 3}}}, "not a permutation");
  expectInferError("Transpose", {f32({2, 3, 4})}, {{"perm", Dims{1, 0}}}, "has 2 entries");

  Tensor x{f32({2, 3}), {1, 2, 3, 4, 5, 6}};
  expectNear(reference("Transpose", {x}, {{"perm", Dims{1, 0}}}), {1, 4, 2, 5, 3, 6});

  // i64 [2,2,2] with perm [2,0,1]: y[k][i][j] = x[i][j][k].
  Graph g;
  Value* in = g.addConstant("x", {DType::I64, {2, 2, 2}},
                            bytesOf(std::vector<int64_t>{0, 1, 10, 11, 100, 101, 110, 111}));
  Node* t = g.addNode("Transpose", "t", {in}, 1);
  t->attrs["perm"] = Dims{2, 0, 1};
  inferNode(*t);
  EXPECT_EQ(t->outputs[0]->type, (TensorType{DType::I64, {2, 2, 2}}));
  std::vector<int64_t> y(8);
  findOp("Transpose")->reference(*t, {in->data->data()}, {y.data()});
  EXPECT_EQ(y, (std::vector<int64_t>{0, 10, 100, 110, 1, 11, 101, 111}));
}

TEST(Concat, JoinsAlongAxisAndChecksTheOtherDims) {
  EXPECT_EQ(inferOne("Concat", {f32({2, 3}), f32({2, 5})}, {{"axis", int64_t{1}}}), f32({2, 8}));
  EXPECT_EQ(inferOne("Concat", {f32({2, 3})}, {{"axis", int64_t{0}}}), f32({2, 3}));
  expectInferError("Concat", {f32({2, 3}), f32({3, 3})}, {{"axis", int64_t{1}}}, "does not match");
  expectInferError("Concat", {f32({2, 3}), TensorType{DType::I32, {2, 3}}}, {{"axis", int64_t{0}}},
                   "does not match");
  expectInferError("Concat", {f32({2, 3})}, {{"axis", int64_t{2}}}, "'axis' is 2");

  Tensor a{f32({2, 1}), {1, 2}};
  Tensor b{f32({2, 2}), {10, 11, 20, 21}};
  expectNear(reference("Concat", {a, b}, {{"axis", int64_t{1}}}), {1, 10, 11, 2, 20, 21});
  expectNear(reference("Concat", {b, b}, {{"axis", int64_t{0}}}), {10, 11, 20, 21, 10, 11, 20, 21});
}

TEST(Identity, CopiesAnyDtype) {
  TensorType u8{DType::U8, {3}};
  EXPECT_EQ(inferOne("Identity", {u8}), u8);
  Tensor x{f32({3}), {1, -2, 3}};
  expectNear(reference("Identity", {x}), {1, -2, 3});
}

TEST(ShapeErrors, MissingAttributeNamesTheNode) {
  expectInferError("Transpose", {f32({2, 3})}, {}, "'perm' is missing");
  expectInferError("Softmax", {f32({2, 3})}, {{"axis", 1.5}}, "'axis' is not an int");
}

}  // namespace
}  // namespace nanoc
