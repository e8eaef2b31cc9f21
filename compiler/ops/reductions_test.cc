// The reduction family as a specification: shape rules, their errors, and
// the references on small examples computed by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "compiler/ir/error.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ops/reduce.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc {
namespace {

using Dims = std::vector<int64_t>;
using Attrs = std::map<std::string, Attr>;

struct OneNode {
  Graph graph;
  Node* node = nullptr;
  OneNode(const std::string& op, const TensorType& input, Attrs attrs,
          const std::string& name = "n") {
    Value* x = graph.addInput("x", input);
    const OpSchema* schema = findOp(op);
    node = graph.addNode(op, name, {x}, schema ? schema->num_outputs : 1);
    node->attrs = std::move(attrs);
  }
};

std::vector<TensorType> infer(const std::string& op, const TensorType& input, Attrs attrs) {
  OneNode one(op, input, std::move(attrs));
  inferNode(*one.node);
  std::vector<TensorType> types;
  for (const Value* v : one.node->outputs) types.push_back(v->type);
  return types;
}

void expectInferError(const std::string& op, const TensorType& input, Attrs attrs,
                      const std::string& what) {
  OneNode one(op, input, std::move(attrs), "bad_node");
  try {
    inferNode(*one.node);
    FAIL() << op << ": expected a CompileError containing '" << what << "'";
  } catch (const CompileError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("node 'bad_node' (" + op + ")"), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
}

// Runs the reference on `data` (of the input's C++ type T); returns output
// `index` as U.
template <typename U, typename T>
std::vector<U> run(const std::string& op, TensorType input, const std::vector<T>& data, Attrs attrs,
                   size_t index = 0) {
  OneNode one(op, input, std::move(attrs));
  inferNode(*one.node);
  std::vector<std::vector<uint8_t>> outs;
  std::vector<void*> ptrs;
  for (const Value* v : one.node->outputs) {
    outs.emplace_back(v->type.bytes() + 8);
    ptrs.push_back(outs.back().data());
  }
  findOp(op)->reference(*one.node, {data.data()}, ptrs);
  std::vector<U> result(static_cast<size_t>(one.node->outputs[index]->type.numel()));
  if (!result.empty()) std::memcpy(result.data(), ptrs[index], result.size() * sizeof(U));
  return result;
}

std::vector<float> runF32(const std::string& op, Dims dims, const std::vector<float>& data,
                          Attrs attrs, size_t index = 0) {
  return run<float>(op, {DType::F32, std::move(dims)}, data, std::move(attrs), index);
}

Attrs reduce(Dims axes, int64_t keepdims = 1) {
  return {{"axes", std::move(axes)}, {"keepdims", keepdims}};
}

TEST(ReduceOps, ShapeKeepsOrDropsReducedAxes) {
  TensorType x{DType::F32, {2, 3, 4}};
  EXPECT_EQ(infer("ReduceSum", x, reduce({1}))[0], (TensorType{DType::F32, {2, 1, 4}}));
  EXPECT_EQ(infer("ReduceSum", x, reduce({0, 2}, 0))[0], (TensorType{DType::F32, {3}}));
  EXPECT_EQ(infer("ReduceMax", x, reduce({0, 1, 2}, 0))[0], (TensorType{DType::F32, {}}));
  // No axes: every element reduced alone, same shape.
  EXPECT_EQ(infer("ReduceL2", x, reduce({}))[0], x);
  EXPECT_EQ(infer("ReduceMin", {DType::Bool, {4}}, reduce({0}))[0], (TensorType{DType::Bool, {1}}));
  EXPECT_EQ(infer("ReduceSum", {DType::I64, {4}}, reduce({0}, 0))[0], (TensorType{DType::I64, {}}));
}

TEST(ReduceOps, ShapeErrorsNameTheNode) {
  TensorType x{DType::F32, {2, 3}};
  expectInferError("ReduceSum", x, reduce({2}), "out of range");
  expectInferError("ReduceSum", x, reduce({1, 0}), "sorted and distinct");
  expectInferError("ReduceSum", x, reduce({1, 1}), "sorted and distinct");
  expectInferError("ReduceSum", x, reduce({1}, 2), "'keepdims' must be 0 or 1");
  expectInferError("ReduceLogSum", {DType::I32, {2}}, reduce({0}), "supports float dtypes");
  expectInferError("ReduceSum", {DType::Bool, {2}}, reduce({0}), "float and integer");
  expectInferError("ReduceMean", x, {{"keepdims", int64_t{1}}}, "axes");
}

TEST(ReduceOps, GeometryMergesRunsAndDropsUnitDims) {
  OneNode one("ReduceSum", {DType::F32, {2, 3, 1, 4, 5}}, reduce({1, 2, 3}));
  ReduceGeometry g = reduceGeometry(*one.node);
  EXPECT_EQ(g.outer, 2);
  EXPECT_EQ(g.inner, 5);
  EXPECT_EQ(g.reduced_count, 12);
  ASSERT_EQ(g.reduced.size(), 1u);  // dims 1..3 are one run of 12, stride 5
  EXPECT_EQ(g.reduced[0].stride, 5);
  EXPECT_FALSE(g.contiguous());
  OneNode last("ReduceSum", {DType::F32, {2, 3, 4}}, reduce({0, 2}));
  ReduceGeometry h = reduceGeometry(*last.node);
  EXPECT_TRUE(h.contiguous());
  EXPECT_EQ(h.outer, 3);
  EXPECT_EQ(h.reduced.size(), 2u);
}

TEST(ReduceOps, ReferencesByHand) {
  std::vector<float> x = {1, 2, 3, 4, -5, 6};  // [2, 3]
  EXPECT_EQ(runF32("ReduceSum", {2, 3}, x, reduce({0})), (std::vector<float>{5, -3, 9}));
  EXPECT_EQ(runF32("ReduceMean", {2, 3}, x, reduce({1})), (std::vector<float>{2, 5.0f / 3}));
  EXPECT_EQ(runF32("ReduceMax", {2, 3}, x, reduce({1})), (std::vector<float>{3, 6}));
  EXPECT_EQ(runF32("ReduceMin", {2, 3}, x, reduce({0, 1})), (std::vector<float>{-5}));
  EXPECT_EQ(runF32("ReduceProd", {2, 3}, x, reduce({1})), (std::vector<float>{6, -120}));
  EXPECT_EQ(runF32("ReduceL1", {2, 3}, x, reduce({1})), (std::vector<float>{6, 15}));
  EXPECT_EQ(runF32("ReduceSumSquare", {2, 3}, x, reduce({0})), (std::vector<float>{17, 29, 45}));
  EXPECT_FLOAT_EQ(runF32("ReduceL2", {2, 3}, x, reduce({0}))[0], std::sqrt(17.0f));
  EXPECT_FLOAT_EQ(runF32("ReduceLogSum", {2, 3}, x, reduce({0}))[2], std::log(9.0f));
  EXPECT_FLOAT_EQ(runF32("ReduceLogSumExp", {2, 3}, x, reduce({1}))[0],
                  std::log(std::exp(1.0f) + std::exp(2.0f) + std::exp(3.0f)));
  // Empty axes: each element alone, so SumSquare squares and L1 takes |x|.
  EXPECT_EQ(runF32("ReduceSumSquare", {2, 3}, x, reduce({})),
            (std::vector<float>{1, 4, 9, 16, 25, 36}));
  EXPECT_EQ(runF32("ReduceL1", {2, 3}, x, reduce({})), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(ReduceOps, IntegersWrapAndMeanTruncates) {
  EXPECT_EQ(
      run<int32_t>("ReduceMean", {DType::I32, {3}}, std::vector<int32_t>{-7, 0, 0}, reduce({0})),
      (std::vector<int32_t>{-2}));
  EXPECT_EQ(run<int8_t>("ReduceSum", {DType::I8, {2}}, std::vector<int8_t>{100, 100}, reduce({0})),
            (std::vector<int8_t>{-56}));
  // i8 mean over more elements than i8 can count.
  EXPECT_EQ(run<int8_t>("ReduceMean", {DType::I8, {200}}, std::vector<int8_t>(200, 0), reduce({0})),
            (std::vector<int8_t>{0}));
  EXPECT_EQ(run<uint8_t>("ReduceMax", {DType::Bool, {2, 2}}, std::vector<uint8_t>{0, 1, 0, 0},
                         reduce({1})),
            (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(run<uint8_t>("ReduceMin", {DType::Bool, {2, 0}}, std::vector<uint8_t>{}, reduce({1})),
            (std::vector<uint8_t>{1, 1}));
}

TEST(ReduceOps, EmptySetsGiveEachKindsIdentity) {
  float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(runF32("ReduceSum", {2, 0}, {}, reduce({1})), (std::vector<float>{0, 0}));
  EXPECT_EQ(runF32("ReduceProd", {1, 0}, {}, reduce({1})), (std::vector<float>{1}));
  EXPECT_EQ(runF32("ReduceMax", {1, 0}, {}, reduce({1})), (std::vector<float>{-inf}));
  EXPECT_EQ(runF32("ReduceMin", {1, 0}, {}, reduce({1})), (std::vector<float>{inf}));
  EXPECT_EQ(runF32("ReduceLogSumExp", {1, 0}, {}, reduce({1})), (std::vector<float>{-inf}));
}

Attrs arg(int64_t axis, int64_t keepdims, int64_t last) {
  return {{"axis", axis}, {"keepdims", keepdims}, {"select_last_index", last}};
}

TEST(ArgOps, ShapeAndTies) {
  EXPECT_EQ(infer("ArgMax", {DType::F32, {2, 3}}, arg(1, 1, 0))[0],
            (TensorType{DType::I64, {2, 1}}));
  EXPECT_EQ(infer("ArgMin", {DType::I32, {2, 3}}, arg(0, 0, 0))[0], (TensorType{DType::I64, {3}}));
  std::vector<float> x = {2, 7, 7, 1, 1, 0};  // [2, 3]
  EXPECT_EQ(run<int64_t>("ArgMax", {DType::F32, {2, 3}}, x, arg(1, 1, 0)),
            (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(run<int64_t>("ArgMax", {DType::F32, {2, 3}}, x, arg(1, 1, 1)),
            (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(run<int64_t>("ArgMin", {DType::F32, {2, 3}}, x, arg(0, 0, 0)),
            (std::vector<int64_t>{1, 1, 1}));
  expectInferError("ArgMax", {DType::F32, {2, 0}}, arg(1, 1, 0), "is empty");
  expectInferError("ArgMax", {DType::F32, {2}}, arg(1, 1, 0), "'axis' is 1");
  expectInferError("ArgMin", {DType::F32, {2}}, arg(0, 1, 3), "'select_last_index'");
}

Attrs cum(int64_t axis, int64_t exclusive, int64_t reverse) {
  return {{"axis", axis}, {"exclusive", exclusive}, {"reverse", reverse}};
}

TEST(CumulativeOps, ExclusiveAndReverse) {
  std::vector<float> x = {1, 2, 3};
  EXPECT_EQ(runF32("CumSum", {3}, x, cum(0, 0, 0)), (std::vector<float>{1, 3, 6}));
  EXPECT_EQ(runF32("CumSum", {3}, x, cum(0, 1, 0)), (std::vector<float>{0, 1, 3}));
  EXPECT_EQ(runF32("CumSum", {3}, x, cum(0, 0, 1)), (std::vector<float>{6, 5, 3}));
  EXPECT_EQ(runF32("CumSum", {3}, x, cum(0, 1, 1)), (std::vector<float>{5, 3, 0}));
  EXPECT_EQ(runF32("CumProd", {3}, x, cum(0, 1, 0)), (std::vector<float>{1, 1, 2}));
  EXPECT_EQ(runF32("CumSum", {2, 2}, {1, 2, 3, 4}, cum(0, 0, 0)), (std::vector<float>{1, 2, 4, 6}));
  EXPECT_EQ(infer("CumProd", {DType::I64, {2, 5}}, cum(1, 0, 0))[0],
            (TensorType{DType::I64, {2, 5}}));
  expectInferError("CumSum", {DType::F32, {3}}, cum(1, 0, 0), "'axis' is 1");
  expectInferError("CumSum", {DType::Bool, {3}}, cum(0, 0, 0), "float and integer");
}

Attrs topk(int64_t axis, int64_t k, int64_t largest) {
  return {{"axis", axis}, {"k", k}, {"largest", largest}, {"sorted", 1}};
}

TEST(TopKOps, ValuesAndIndicesWithTiesInIndexOrder) {
  std::vector<TensorType> types = infer("TopK", {DType::F32, {2, 5}}, topk(1, 3, 1));
  EXPECT_EQ(types[0], (TensorType{DType::F32, {2, 3}}));
  EXPECT_EQ(types[1], (TensorType{DType::I64, {2, 3}}));
  std::vector<float> x = {3, 1, 3, 2};
  EXPECT_EQ(runF32("TopK", {4}, x, topk(0, 2, 1)), (std::vector<float>{3, 3}));
  EXPECT_EQ(run<int64_t>("TopK", {DType::F32, {4}}, x, topk(0, 2, 1), 1),
            (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(runF32("TopK", {4}, x, topk(0, 2, 0)), (std::vector<float>{1, 2}));
  EXPECT_EQ(run<int64_t>("TopK", {DType::F32, {4}}, x, topk(0, 2, 0), 1),
            (std::vector<int64_t>{1, 3}));
  expectInferError("TopK", {DType::F32, {4}}, topk(0, 5, 1), "'k' is 5");
  expectInferError("TopK", {DType::F32, {4}}, topk(0, -1, 1), "'k' is -1");
}

// ---- losses ----

struct Loss {
  Graph graph;
  Node* node = nullptr;
  // input [2, 2] = [[-1, -2], [-3, -4]], target [1, 0], weight [1, 3] if weighted.
  Loss(const std::string& op, const std::string& reduction, int64_t ignore, bool weighted,
       Dims target_dims = {2}) {
    std::vector<Value*> in = {graph.addInput("x", {DType::F32, {2, 2}}),
                              graph.addInput("t", {DType::I64, std::move(target_dims)})};
    if (weighted) in.push_back(graph.addInput("w", {DType::F32, {2}}));
    node = graph.addNode(op, "bad_node", in, static_cast<size_t>(findOp(op)->num_outputs));
    node->attrs = {{"reduction", reduction}, {"ignore_index", ignore}};
  }
  std::vector<float> run(size_t output = 0) {
    inferNode(*node);
    std::vector<float> x = {-1, -2, -3, -4}, w = {1, 3};
    std::vector<int64_t> t = {1, 0};
    std::vector<std::vector<float>> outs;
    std::vector<void*> ptrs;
    for (const Value* v : node->outputs) {
      outs.emplace_back(static_cast<size_t>(std::max<int64_t>(1, v->type.numel())));
      ptrs.push_back(outs.back().data());
    }
    std::vector<const void*> in = {x.data(), t.data()};
    if (node->inputs.size() > 2) in.push_back(w.data());
    findOp(node->op)->reference(*node, in, ptrs);
    outs[output].resize(static_cast<size_t>(node->outputs[output]->type.numel()));
    return outs[output];
  }
};

TEST(LossOps, NegativeLogLikelihoodByHand) {
  const char* nll = "NegativeLogLikelihoodLoss";
  EXPECT_EQ(Loss(nll, "none", -1, false).run(), (std::vector<float>{2, 3}));
  EXPECT_EQ(Loss(nll, "sum", -1, false).run(), (std::vector<float>{5}));
  EXPECT_EQ(Loss(nll, "mean", -1, false).run(), (std::vector<float>{2.5}));
  EXPECT_EQ(Loss(nll, "none", -1, true).run(), (std::vector<float>{6, 3}));
  EXPECT_EQ(Loss(nll, "mean", -1, true).run(), (std::vector<float>{9.0f / 4}));
  // Target 1 ignored: no loss and no weight.
  EXPECT_EQ(Loss(nll, "none", 1, true).run(), (std::vector<float>{0, 3}));
  EXPECT_EQ(Loss(nll, "mean", 1, true).run(), (std::vector<float>{3}));
}

TEST(LossOps, SoftmaxCrossEntropyIsNllOfLogSoftmax) {
  Loss sce("SoftmaxCrossEntropyLoss", "none", -1, false);
  std::vector<float> log_prob = sce.run(1);
  // Both rows have scores one apart: log_softmax = [-l, -1 - l], l = log(1 + e^-1).
  float l = std::log(1 + std::exp(-1.0f));
  EXPECT_FLOAT_EQ(log_prob[0], -l);
  EXPECT_FLOAT_EQ(log_prob[1], -1 - l);
  EXPECT_EQ(sce.node->outputs[1]->type, (TensorType{DType::F32, {2, 2}}));
  std::vector<float> loss = Loss("SoftmaxCrossEntropyLoss", "none", -1, false).run(0);
  EXPECT_FLOAT_EQ(loss[0], 1 + l);  // target 1 of row [-1, -2]
  EXPECT_FLOAT_EQ(loss[1], l);      // target 0 of row [-3, -4]
}

TEST(LossOps, ShapeErrors) {
  const char* nll = "NegativeLogLikelihoodLoss";
  Loss bad_target(nll, "none", -1, false, {3});
  EXPECT_THROW(bad_target.run(), CompileError);
  Loss bad_reduction(nll, "max", -1, false);
  try {
    bad_reduction.run();
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'bad_node' (NegativeLogLikelihoodLoss)"),
              std::string::npos);
    EXPECT_NE(std::string(e.what()).find("'reduction'"), std::string::npos);
  }
}

}  // namespace
}  // namespace nanoc
