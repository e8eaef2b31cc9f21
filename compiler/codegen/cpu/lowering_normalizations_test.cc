// The normalization lowerings (lower_normalizations.cc, lower_axis_ops.cc,
// lower_lrn.cc) against the ops' references on random inputs, over shapes
// that take each code path: short and long rows, rows split over several
// tasks, inner axes in strips, broadcast scales; and emitLog (math_log.h)
// against std::log.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "compiler/codegen/cpu/kernel_test_util.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/math_functions.h"
#include "compiler/ops/float_elements.h"

namespace nanoc::cpu {
namespace {

using testing::expectLoweringMatchesReference;
using Attrs = std::map<std::string, Attr>;

TensorType f32(std::vector<int64_t> dims) { return {DType::F32, std::move(dims)}; }

Attrs axisEps(int64_t axis, double eps) { return {{"axis", axis}, {"epsilon", eps}}; }

TEST(LayerNormalizationLowering, EveryAxisWithAndWithoutBias) {
  expectLoweringMatchesReference(
      "LayerNormalization", {f32({2, 3, 4, 5}), f32({4, 5}), f32({4, 5})}, axisEps(2, 1e-5), 1);
  expectLoweringMatchesReference("LayerNormalization", {f32({2, 3, 5}), f32({2, 3, 5})},
                                 axisEps(0, 0.1), 2);
  expectLoweringMatchesReference("LayerNormalization", {f32({7, 300}), f32({300}), f32({300})},
                                 axisEps(1, 1e-5), 3);
}

TEST(LayerNormalizationLowering, EmptyRowsHaveNaNStatistics) {
  expectLoweringMatchesReference("LayerNormalization", {f32({3, 0}), f32({0}), f32({0})},
                                 axisEps(1, 1e-5), 9);
}

TEST(LayerNormalizationLowering, BroadcastScaleAndBias) {
  expectLoweringMatchesReference("LayerNormalization", {f32({3, 4, 6}), f32({4, 1}), f32({6})},
                                 axisEps(1, 1e-5), 4);
  expectLoweringMatchesReference("LayerNormalization", {f32({3, 4, 6}), f32({1}), f32({1, 6})},
                                 axisEps(1, 1e-5), 5);
}

TEST(LayerNormalizationLowering, ManyRowsSplitIntoTasksAndALargeRow) {
  expectLoweringMatchesReference("LayerNormalization", {f32({300, 128}), f32({128}), f32({128})},
                                 axisEps(1, 1e-5), 6);
  expectLoweringMatchesReference("LayerNormalization", {f32({3, 40000}), f32({40000})},
                                 axisEps(1, 1e-5), 7);
}

TEST(LayerNormalizationLowering, LargeMeanDoesNotCancelTheVariance) {
  // X in [1000, 1001]: E[x^2] - E[x]^2 in f32 would lose every digit, and
  // x - mean with the mean rounded to f32 several.
  for (const char* op : {"LayerNormalization", "MeanVarianceNormalization"}) {
    bool ln = std::string(op) == "LayerNormalization";
    std::vector<TensorType> types = {f32({4, 512})};
    if (ln) types.insert(types.end(), {f32({512}), f32({512})});
    auto g = testing::makeSingleNodeGraph(op, types,
                                          ln ? axisEps(1, 1e-5) : Attrs{{"axis", int64_t{1}}});
    std::mt19937_64 rng(8);
    std::vector<testing::AlignedBuffer> data;
    for (size_t i = 0; i < types.size(); ++i) {
      data.emplace_back(types[i].bytes());
      testing::fillRandom(data.back(), types[i], rng, i == 0 ? 1000.0f : -2.0f,
                          i == 0 ? 1001.0f : 2.0f);
    }
    testing::expectLoweringMatchesReference(*g->node, data, op);
  }
}

TEST(RMSNormalizationLowering, MatchesReference) {
  expectLoweringMatchesReference("RMSNormalization", {f32({2, 3, 4, 5}), f32({3, 4, 5})},
                                 axisEps(1, 1e-5), 9);
  expectLoweringMatchesReference("RMSNormalization", {f32({64, 1000}), f32({1000})},
                                 axisEps(1, 1e-6), 10);
  expectLoweringMatchesReference("RMSNormalization", {f32({5, 8}), f32({1})}, axisEps(1, 0.1), 11);
}

TEST(InstanceNormalizationLowering, MatchesReference) {
  expectLoweringMatchesReference("InstanceNormalization", {f32({2, 3, 4, 5}), f32({3}), f32({3})},
                                 {{"epsilon", 1e-5}}, 12);
  expectLoweringMatchesReference("InstanceNormalization", {f32({1, 4, 70, 70}), f32({4}), f32({4})},
                                 {{"epsilon", 1e-2}}, 13);
  expectLoweringMatchesReference("InstanceNormalization", {f32({3, 5}), f32({5}), f32({5})},
                                 {{"epsilon", 1e-5}}, 14);
}

TEST(GroupNormalizationLowering, PerChannelAndPerGroupScale) {
  Attrs attrs = {{"num_groups", int64_t{2}}, {"epsilon", 1e-5}};
  expectLoweringMatchesReference("GroupNormalization", {f32({3, 4, 2, 2}), f32({4}), f32({4})},
                                 attrs, 15);
  expectLoweringMatchesReference("GroupNormalization", {f32({3, 4, 2, 2}), f32({2}), f32({2})},
                                 attrs, 16);
  expectLoweringMatchesReference("GroupNormalization", {f32({2, 32, 9, 9}), f32({32}), f32({32})},
                                 {{"num_groups", int64_t{8}}, {"epsilon", 1e-5}}, 17);
}

TEST(MeanVarianceNormalizationLowering, MatchesReference) {
  expectLoweringMatchesReference("MeanVarianceNormalization", {f32({3, 3, 3, 1})},
                                 {{"axis", int64_t{1}}}, 18);
  expectLoweringMatchesReference("MeanVarianceNormalization", {f32({6, 5000})},
                                 {{"axis", int64_t{0}}}, 19);
}

TEST(LpNormalizationLowering, EveryAxisBothNorms) {
  for (int64_t p : {1, 2})
    for (int64_t axis : {0, 1, 2})
      expectLoweringMatchesReference("LpNormalization", {f32({3, 7, 300})},
                                     {{"axis", axis}, {"p", p}}, 20 + p * 3 + axis);
}

TEST(LRNLowering, WindowsOfEvenAndOddSize) {
  for (int64_t size : {1, 2, 3, 5, 8})
    expectLoweringMatchesReference("LRN", {f32({2, 6, 5, 7})},
                                   {{"size", size}, {"alpha", 1e-2}, {"beta", 0.75}, {"bias", 1.0}},
                                   30 + size);
  expectLoweringMatchesReference(
      "LRN", {f32({1, 3, 2})}, {{"size", int64_t{3}}, {"alpha", 2.0}, {"beta", 1.5}, {"bias", 2.0}},
      40);
}

TEST(LogSoftmaxLowering, EveryAxisAndLargeLogits) {
  for (int64_t axis : {0, 1, 2})
    expectLoweringMatchesReference("LogSoftmax", {f32({3, 7, 300})}, {{"axis", axis}}, 50 + axis);
  expectLoweringMatchesReference("LogSoftmax", {f32({4, 50})}, {{"axis", int64_t{1}}}, 53, -200,
                                 200);
  expectLoweringMatchesReference("LogSoftmax", {f32({40, 6})}, {{"axis", int64_t{0}}}, 54, -200,
                                 200);
  expectLoweringMatchesReference("LogSoftmax", {f32({20, 3000})}, {{"axis", int64_t{1}}}, 55);
}

TEST(HardmaxLowering, EveryAxis) {
  for (int64_t axis : {0, 1, 2})
    expectLoweringMatchesReference("Hardmax", {f32({3, 7, 300})}, {{"axis", axis}}, 60 + axis);
  expectLoweringMatchesReference("Hardmax", {f32({20, 3000})}, {{"axis", int64_t{1}}}, 63);
}

TEST(HardmaxLowering, TiesGoToTheFirstIndex) {
  auto g = testing::makeSingleNodeGraph("Hardmax", {f32({2, 4})}, {{"axis", int64_t{1}}});
  testing::JitKernel kernel = testing::compileKernel(*g->node);
  std::vector<float> x = {1, 5, 5, 2, 7, 7, 7, 7}, y(8, -1);
  testing::runKernel(kernel, {x.data(), y.data()});
  EXPECT_EQ(y, (std::vector<float>{0, 1, 0, 0, 1, 0, 0, 0}));
  // Down axis 0 (the strip kernel): column 1 ties between rows 0 and 1.
  auto g0 = testing::makeSingleNodeGraph("Hardmax", {f32({2, 4})}, {{"axis", int64_t{0}}});
  testing::JitKernel kernel0 = testing::compileKernel(*g0->node);
  testing::runKernel(kernel0, {x.data(), y.data()});
  EXPECT_EQ(y, (std::vector<float>{0, 0, 0, 0, 1, 1, 1, 1}));
}

// Half-precision ops compute in f32 and round once; the double reference
// rounds once too, so the two may differ by one unit in the last place:
// compares within 2^-7 (bf16) or 2^-10 (f16) of max(1, |reference|)
// (infinities must be equal).
void expectHalfLoweringMatches(const std::string& op, DType dtype,
                               const std::vector<std::vector<int64_t>>& shapes, const Attrs& attrs,
                               uint64_t seed) {
  std::vector<TensorType> types;
  for (const auto& dims : shapes) types.push_back({dtype, dims});
  std::string what = testing::describe(op, types);
  SCOPED_TRACE(what);
  auto g = testing::makeSingleNodeGraph(op, types, attrs);
  testing::JitKernel kernel = testing::compileKernel(*g->node);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<testing::AlignedBuffer> data;
  std::vector<const void*> ref_in;
  std::vector<void*> buffers;
  for (const TensorType& t : types) {
    data.emplace_back(t.bytes());
    for (int64_t i = 0; i < t.numel(); ++i) storeFloat(dtype, data.back().data(), i, dist(rng));
    ref_in.push_back(data.back().data());
    buffers.push_back(data.back().data());
  }
  std::vector<testing::AlignedBuffer> got, want;
  std::vector<void*> ref_out;
  for (const Value* out : g->node->outputs) {
    got.emplace_back(out->type.bytes());
    want.emplace_back(out->type.bytes());
    buffers.push_back(got.back().data());
    ref_out.push_back(want.back().data());
  }
  findOp(op)->reference(*g->node, ref_in, ref_out);
  testing::runKernel(kernel, buffers);
  double ulp = dtype == DType::BF16 ? 1.0 / 128 : 1.0 / 1024;
  for (size_t o = 0; o < g->node->outputs.size(); ++o) {
    const TensorType& t = g->node->outputs[o]->type;
    int64_t bad = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      double a = loadFloat(t.dtype, got[o].data(), i), r = loadFloat(t.dtype, want[o].data(), i);
      double tol = (t.dtype == DType::F32 ? 1e-5 : ulp) * std::max(1.0, std::fabs(r));
      if (!(a == r || std::fabs(a - r) <= tol) && bad++ < 5)
        ADD_FAILURE() << what << " output " << o << " element " << i << ": " << a << ", reference "
                      << r;
    }
    EXPECT_EQ(bad, 0) << what << " output " << o;
  }
}

TEST(HalfPrecisionNormalizationLowering, F16AndBf16ComputeInF32) {
  for (DType t : {DType::F16, DType::BF16}) {
    expectHalfLoweringMatches("LayerNormalization", t, {{3, 5, 64}, {64}, {64}}, axisEps(2, 1e-5),
                              70);
    expectHalfLoweringMatches("RMSNormalization", t, {{4, 200}, {200}}, axisEps(1, 1e-5), 71);
    expectHalfLoweringMatches("InstanceNormalization", t, {{2, 3, 7, 7}, {3}, {3}},
                              {{"epsilon", 1e-5}}, 72);
    expectHalfLoweringMatches("GroupNormalization", t, {{2, 4, 5, 5}, {4}, {4}},
                              {{"num_groups", int64_t{2}}, {"epsilon", 1e-5}}, 73);
    expectHalfLoweringMatches("MeanVarianceNormalization", t, {{6, 50}}, {{"axis", int64_t{1}}},
                              74);
    for (int64_t axis : {0, 1, 2}) {
      Attrs a = {{"axis", axis}};
      expectHalfLoweringMatches("Softmax", t, {{3, 7, 300}}, a, 76 + axis);
      expectHalfLoweringMatches("LogSoftmax", t, {{3, 7, 300}}, a, 79 + axis);
      expectHalfLoweringMatches("Hardmax", t, {{3, 7, 300}}, a, 82 + axis);
      expectHalfLoweringMatches("LpNormalization", t, {{3, 7, 300}},
                                {{"axis", axis}, {"p", int64_t{2}}}, 85 + axis);
    }
    for (int64_t mode : {0, 2, 3})
      expectHalfLoweringMatches("AttentionScores", t, {{2, 4, 3, 16}, {2, 2, 7, 16}, {2, 2, 7, 8}},
                                {{"scale", 0.25},
                                 {"softcap", 0.0},
                                 {"is_causal", int64_t{1}},
                                 {"past_len", int64_t{2}},
                                 {"left_window", int64_t{-1}},
                                 {"right_window", int64_t{-1}},
                                 {"mode", mode}},
                                88 + mode);
    expectHalfLoweringMatches("Attention", t, {{2, 4, 3, 16}, {2, 2, 7, 16}, {2, 2, 7, 8}},
                              {{"scale", 0.25},
                               {"softcap", 0.0},
                               {"is_causal", int64_t{1}},
                               {"past_len", int64_t{2}},
                               {"left_window", int64_t{-1}},
                               {"right_window", int64_t{-1}}},
                              75);
  }
}

// Compiles f(x) = emitLog(x) over a vector of floats and compares with std::log.
TEST(EmitLog, MatchesStdLogOverTheF32Range) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>("log_test", *ctx);
  llvm::IRBuilder<> b(*ctx);
  auto* fn_type =
      llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy(), b.getPtrTy(), b.getInt64Ty()}, false);
  auto* fn = llvm::Function::Create(fn_type, llvm::Function::ExternalLinkage, "logs", *module);
  b.SetInsertPoint(llvm::BasicBlock::Create(*ctx, "entry", fn));
  emitLoop(b, b.getInt64(0), fn->getArg(2), [&](llvm::Value* i) {
    storeF32(b, emitLog(b, loadF32(b, fn->getArg(0), i)), fn->getArg(1), i);
  });
  b.CreateRetVoid();
  auto jit = llvm::orc::LLJITBuilder().create();
  ASSERT_TRUE(static_cast<bool>(jit));
  module->setDataLayout((*jit)->getDataLayout());
  ASSERT_FALSE(static_cast<bool>(
      (*jit)->addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(ctx)))));
  auto address = (*jit)->lookup("logs");
  ASSERT_TRUE(static_cast<bool>(address));
  auto* logs = address->toPtr<void (*)(const float*, float*, int64_t)>();

  std::vector<float> x;
  for (float v = 1e-44f; v < 3e38f; v *= 1.37f) x.push_back(v);
  for (float v = 0.5f; v < 2.0f; v += 1e-3f) x.push_back(v);
  x.insert(x.end(), {1.0f, std::numeric_limits<float>::min(), std::numeric_limits<float>::max()});
  std::vector<float> y(x.size());
  logs(x.data(), y.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    double want = std::log(static_cast<double>(x[i]));
    EXPECT_NEAR(y[i], want, 2e-7 * std::max(1.0, std::fabs(want))) << "log(" << x[i] << ")";
  }
  std::vector<float> special = {0.0f, -1.0f, std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::quiet_NaN()};
  std::vector<float> out(4);
  logs(special.data(), out.data(), 4);
  EXPECT_EQ(out[0], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_EQ(out[2], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(out[3]));
}

}  // namespace
}  // namespace nanoc::cpu
