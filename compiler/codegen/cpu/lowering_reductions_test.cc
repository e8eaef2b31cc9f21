// The reduction family's lowerings (Reduce*, ArgMax/ArgMin, CumSum/CumProd,
// TopK) against the ops' references on random inputs, over every dtype the
// family supports and the shapes that pick each loop structure: the reduced
// axis innermost (contiguous rows), outer (strips, one or several per row),
// several reduced runs, size-1 dims, empty sets.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/kernel_test_util.h"

namespace nanoc::cpu {
namespace {

using testing::AlignedBuffer;
using Attrs = std::map<std::string, Attr>;
using Dims = std::vector<int64_t>;

// Exact for the values the tests use (small multiples of 1/8).
uint16_t toHalf(float f) {
  if (f == 0) return std::signbit(f) ? 0x8000 : 0;
  uint32_t b = std::bit_cast<uint32_t>(f);
  return static_cast<uint16_t>(((b >> 16) & 0x8000) | ((((b >> 23) & 0xff) - 112) << 10) |
                               ((b >> 13) & 0x3ff));
}
float fromHalf(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
  if (e == 0) return (sign ? -1.0f : 1.0f) * std::ldexp(static_cast<float>(m), -24);
  return std::bit_cast<float>(sign | ((e + 112) << 23) | (m << 13));
}

// Element i of a buffer as a double (every dtype), and stored from one.
double get(const AlignedBuffer& buf, DType d, int64_t i) {
  const uint8_t* p = buf.data();
  switch (d) {
    case DType::F32:
      return reinterpret_cast<const float*>(p)[i];
    case DType::F64:
      return reinterpret_cast<const double*>(p)[i];
    case DType::F16:
      return fromHalf(reinterpret_cast<const uint16_t*>(p)[i]);
    case DType::BF16:
      return std::bit_cast<float>(static_cast<uint32_t>(reinterpret_cast<const uint16_t*>(p)[i])
                                  << 16);
    default:
      return 0;
  }
}
void set(AlignedBuffer& buf, DType d, int64_t i, double v) {
  uint8_t* p = buf.data();
  switch (d) {
    case DType::F32:
      reinterpret_cast<float*>(p)[i] = static_cast<float>(v);
      return;
    case DType::F64:
      reinterpret_cast<double*>(p)[i] = v;
      return;
    case DType::F16:
      reinterpret_cast<uint16_t*>(p)[i] = toHalf(static_cast<float>(v));
      return;
    case DType::BF16:
      reinterpret_cast<uint16_t*>(p)[i] =
          static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>(v)) >> 16);
      return;
    case DType::I8:
      reinterpret_cast<int8_t*>(p)[i] = static_cast<int8_t>(v);
      return;
    case DType::U8:
    case DType::Bool:
      reinterpret_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v);
      return;
    case DType::I16:
      reinterpret_cast<int16_t*>(p)[i] = static_cast<int16_t>(v);
      return;
    case DType::U16:
      reinterpret_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v);
      return;
    case DType::I32:
      reinterpret_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
      return;
    case DType::U32:
      reinterpret_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v);
      return;
    case DType::I64:
      reinterpret_cast<int64_t*>(p)[i] = static_cast<int64_t>(v);
      return;
    case DType::U64:
      reinterpret_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v);
      return;
  }
}

bool isFloatType(DType d) {
  return d == DType::F32 || d == DType::F64 || d == DType::F16 || d == DType::BF16;
}

struct Range {
  double lo = -2, hi = 2;
  bool whole = false;  // integers only (ties for ArgMax/TopK), also for float dtypes
};

// Compiles the node's kernel, runs it in uneven task chunks and compares each
// output with the reference: floats by tolerance (looser for f16/bf16, whose
// kernels accumulate in f32 and round once), everything else bit for bit.
void expectMatches(const std::string& op, const std::vector<TensorType>& inputs, Attrs attrs,
                   uint64_t seed, const std::vector<Range>& ranges) {
  std::string what = testing::describe(op, inputs);
  SCOPED_TRACE(what);
  auto g = testing::makeSingleNodeGraph(op, inputs, attrs);
  const Node& node = *g->node;
  std::mt19937_64 rng(seed);
  std::vector<AlignedBuffer> in;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const TensorType& input = inputs[k];
    const Range& range = ranges[k];
    in.emplace_back(input.bytes());
    AlignedBuffer& x = in.back();
    std::uniform_real_distribution<double> dist(range.lo, range.hi);
    for (int64_t i = 0; i < input.numel(); ++i) {
      double v = dist(rng);
      if (range.whole || !isFloatType(input.dtype)) v = std::round(v);
      if (input.dtype == DType::F16 || input.dtype == DType::BF16) v = std::round(v * 8) / 8;
      if (input.dtype == DType::Bool) v = v > 0 ? 1 : 0;
      set(x, input.dtype, i, v);
    }
  }
  testing::JitKernel kernel = testing::compileKernel(node);
  ASSERT_GE(kernel.task_count, 1u);
  std::vector<void*> buffers;
  std::vector<const void*> ref_in;
  for (const AlignedBuffer& x : in) {
    buffers.push_back(x.data());
    ref_in.push_back(x.data());
  }
  std::vector<AlignedBuffer> got, want;
  std::vector<void*> ref_out;
  for (const Value* out : node.outputs) {
    got.emplace_back(out->type.bytes());
    want.emplace_back(out->type.bytes());
    std::memset(got.back().data(), 0xff, got.back().size());
    buffers.push_back(got.back().data());
    ref_out.push_back(want.back().data());
  }
  findOp(op)->reference(node, ref_in, ref_out);
  testing::runKernel(kernel, buffers);
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    const TensorType& t = node.outputs[o]->type;
    if (!isFloatType(t.dtype)) {
      EXPECT_EQ(0, std::memcmp(got[o].data(), want[o].data(), t.bytes())) << "output " << o;
      continue;
    }
    double rel = t.dtype == DType::BF16 ? 1e-2 : t.dtype == DType::F16 ? 2e-3 : 1e-5;
    int bad = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      double a = get(got[o], t.dtype, i), r = get(want[o], t.dtype, i);
      bool ok =
          std::isnan(r)
              ? std::isnan(a)
              : (std::isinf(r) ? a == r : std::fabs(a - r) <= rel * std::max(1.0, std::fabs(r)));
      if (!ok && bad++ < 5)
        ADD_FAILURE() << "output " << o << " element " << i << " is " << a << ", reference " << r;
    }
  }
}

void expectMatches(const std::string& op, TensorType input, Attrs attrs, uint64_t seed,
                   Range range = {}) {
  expectMatches(op, std::vector<TensorType>{input}, std::move(attrs), seed, {range});
}

Attrs reduceAttrs(Dims axes, int64_t keepdims = 1) {
  return {{"axes", std::move(axes)}, {"keepdims", keepdims}};
}

const char* const kReduceOps[] = {"ReduceSum",       "ReduceMean",     "ReduceMax", "ReduceMin",
                                  "ReduceProd",      "ReduceL1",       "ReduceL2",  "ReduceLogSum",
                                  "ReduceLogSumExp", "ReduceSumSquare"};

// Inputs each op is defined and well-conditioned on.
Range rangeFor(const std::string& op) {
  if (op == "ReduceLogSum") return {0.1, 2};
  if (op == "ReduceProd") return {0.7, 1.3};
  return {};
}

struct Shape {
  Dims dims;
  Dims axes;
};

// Every structure: contiguous rows, strips (one and several per row), an
// outer reduced run with a contiguous one, reduced runs between kept ones,
// size-1 dims, everything, nothing (per-element), an empty reduced set.
const Shape kShapes[] = {
    {{37}, {0}},          {{5, 300}, {1}},        {{300, 5}, {0}},        {{3, 5, 600}, {1}},
    {{4, 7, 33}, {0, 2}}, {{3, 5, 7, 9}, {1, 3}}, {{3, 5, 7, 9}, {0, 2}}, {{3, 5, 7, 9}, {1, 2}},
    {{6, 1, 8}, {1}},     {{6, 1, 8}, {0, 1}},    {{2, 3, 4}, {0, 1, 2}}, {{2, 3, 4}, {}},
    {{2, 0, 4}, {1}},
};

TEST(ReduceLowering, EveryKindAndStructureMatchesReferenceInF32) {
  uint64_t seed = 1;
  // keepdims changes only the output's shape, not its layout: alternate it.
  for (const char* op : kReduceOps)
    for (const Shape& s : kShapes)
      expectMatches(op, {DType::F32, s.dims}, reduceAttrs(s.axes, static_cast<int64_t>(seed % 2)),
                    seed++, rangeFor(op));
}

TEST(ReduceLowering, LongContiguousRowsAndManyRowsSplitOverTasks) {
  expectMatches("ReduceSum", {DType::F32, {2, 40000}}, reduceAttrs({1}), 1);
  expectMatches("ReduceMean", {DType::F32, {3000, 64}}, reduceAttrs({1}), 2);
  expectMatches("ReduceMax", {DType::F32, {64, 3000}}, reduceAttrs({0}), 3);
  expectMatches("ReduceLogSumExp", {DType::F32, {17, 1100}}, reduceAttrs({1}), 4, {-50, 50});
}

TEST(ReduceLowering, FloatDTypesAccumulateInF32OrF64) {
  uint64_t seed = 100;
  for (DType d : {DType::F16, DType::BF16, DType::F64})
    for (const char* op : kReduceOps)
      for (const Shape& s : {Shape{{5, 64}, {1}}, Shape{{64, 5}, {0}}, Shape{{2, 0, 3}, {1}}})
        expectMatches(op, {d, s.dims}, reduceAttrs(s.axes), seed++, rangeFor(op));
}

TEST(ReduceLowering, IntegerDTypesWrapLikeTheReference) {
  uint64_t seed = 200;
  for (DType d : {DType::I8, DType::U8, DType::I16, DType::I32, DType::U32, DType::I64, DType::U64})
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                           "ReduceL1", "ReduceL2", "ReduceSumSquare"})
      for (const Shape& s : {Shape{{5, 40}, {1}}, Shape{{40, 5}, {0}}, Shape{{2, 0, 3}, {1}}}) {
        bool sgn = d == DType::I8 || d == DType::I16 || d == DType::I32 || d == DType::I64;
        expectMatches(op, {d, s.dims}, reduceAttrs(s.axes), seed++,
                      sgn ? Range{-100, 100} : Range{0, 200});
      }
}

TEST(ReduceLowering, BoolMaxIsAnyAndMinIsAll) {
  for (const char* op : {"ReduceMax", "ReduceMin"}) {
    expectMatches(op, {DType::Bool, {4, 9}}, reduceAttrs({1}), 300, {-0.3, 1});
    expectMatches(op, {DType::Bool, {9, 4}}, reduceAttrs({0}), 301, {-1, 0.3});
    expectMatches(op, {DType::Bool, {2, 0, 4}}, reduceAttrs({1}), 302);
  }
}

std::vector<float> runF32(const std::string& op, const TensorType& type,
                          const std::vector<float>& data, const Attrs& attrs) {
  auto g = testing::makeSingleNodeGraph(op, {type}, attrs);
  testing::JitKernel kernel = testing::compileKernel(*g->node);
  AlignedBuffer x(type.bytes());
  std::memcpy(x.data(), data.data(), type.bytes());
  std::vector<float> y(static_cast<size_t>(g->node->outputs[0]->type.numel()));
  testing::runKernel(kernel, {x.data(), y.data()});
  return y;
}

TEST(ReduceLowering, EmptySetsGiveTheIdentityOfEachKind) {
  TensorType empty{DType::F32, {2, 0}};
  float inf = INFINITY;
  EXPECT_EQ(runF32("ReduceSum", empty, {}, reduceAttrs({1})), (std::vector<float>{0, 0}));
  EXPECT_EQ(runF32("ReduceProd", empty, {}, reduceAttrs({1})), (std::vector<float>{1, 1}));
  EXPECT_EQ(runF32("ReduceMax", empty, {}, reduceAttrs({1})), (std::vector<float>{-inf, -inf}));
  EXPECT_EQ(runF32("ReduceMin", empty, {}, reduceAttrs({1})), (std::vector<float>{inf, inf}));
  EXPECT_EQ(runF32("ReduceLogSum", empty, {}, reduceAttrs({1})), (std::vector<float>{-inf, -inf}));
  EXPECT_EQ(runF32("ReduceLogSumExp", empty, {}, reduceAttrs({1})),
            (std::vector<float>{-inf, -inf}));
  EXPECT_TRUE(std::isnan(runF32("ReduceMean", empty, {}, reduceAttrs({1}))[0]));
}

TEST(ReduceLowering, LogSumExpDoesNotOverflowAndMaxPropagatesNaN) {
  std::vector<float> y =
      runF32("ReduceLogSumExp", {DType::F32, {1, 2}}, {1000.0f, 1000.0f}, reduceAttrs({1}));
  EXPECT_NEAR(y[0], 1000.0f + std::log(2.0f), 1e-3);
  y = runF32("ReduceMax", {DType::F32, {1, 3}}, {1.0f, NAN, 2.0f}, reduceAttrs({1}));
  EXPECT_TRUE(std::isnan(y[0]));
  y = runF32("ReduceLogSum", {DType::F32, {4}}, {1.0f, 2.0f, 3.0f, 4.0f}, reduceAttrs({0}));
  EXPECT_NEAR(y[0], std::log(10.0f), 1e-6);
}

// ---- ArgMax / ArgMin ----

Attrs argAttrs(int64_t axis, int64_t keepdims, int64_t last) {
  return {{"axis", axis}, {"keepdims", keepdims}, {"select_last_index", last}};
}

TEST(ArgLowering, TiesPickFirstOrLastIndexOnEveryAxis) {
  uint64_t seed = 400;
  for (const char* op : {"ArgMax", "ArgMin"})
    for (int64_t last : {0, 1})
      for (auto [dims, axis] : {std::pair<Dims, int64_t>{{4, 37}, 1},
                                {{37, 4}, 0},
                                {{3, 9, 300}, 1},
                                {{2, 3, 5}, 2},
                                {{1}, 0}})
        expectMatches(op, {DType::F32, dims}, argAttrs(axis, 1, last), seed++, {-3, 3, true});
}

TEST(ArgLowering, OtherDTypes) {
  uint64_t seed = 500;
  for (DType d : {DType::F16, DType::F64, DType::I8, DType::U8, DType::I32, DType::I64, DType::U64})
    for (const char* op : {"ArgMax", "ArgMin"})
      for (int64_t last : {0, 1}) {
        expectMatches(op, {d, {6, 11}}, argAttrs(1, 0, last), seed++, {0, 9, true});
        expectMatches(op, {d, {11, 6}}, argAttrs(0, 1, last), seed++, {0, 9, true});
      }
}

std::vector<int64_t> runArg(const std::string& op, const TensorType& type,
                            const std::vector<float>& data, const Attrs& attrs) {
  auto g = testing::makeSingleNodeGraph(op, {type}, attrs);
  testing::JitKernel kernel = testing::compileKernel(*g->node);
  AlignedBuffer x(type.bytes());
  std::memcpy(x.data(), data.data(), type.bytes());
  std::vector<int64_t> y(static_cast<size_t>(g->node->outputs[0]->type.numel()));
  testing::runKernel(kernel, {x.data(), y.data()});
  return y;
}

TEST(ArgLowering, NaNWinsOnlyAtElementZeroLikeOnnxRuntime) {
  float nan = NAN;
  std::vector<float> rows = {nan, 1, 2, 1, nan, 0, nan, nan, nan};
  // Contiguous rows (axis 1) and strips (axis 0 of the transpose) agree.
  std::vector<float> cols = {nan, 1, nan, 1, nan, nan, 2, 0, nan};
  EXPECT_EQ(runArg("ArgMax", {DType::F32, {3, 3}}, rows, argAttrs(1, 0, 0)),
            (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(runArg("ArgMin", {DType::F32, {3, 3}}, rows, argAttrs(1, 0, 0)),
            (std::vector<int64_t>{0, 2, 0}));
  EXPECT_EQ(runArg("ArgMax", {DType::F32, {3, 3}}, cols, argAttrs(0, 0, 0)),
            (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(runArg("ArgMin", {DType::F32, {3, 3}}, cols, argAttrs(0, 0, 0)),
            (std::vector<int64_t>{0, 2, 0}));
}

// ---- CumSum / CumProd ----

TEST(CumulativeLowering, ExclusiveAndReverseOnEveryAxis) {
  uint64_t seed = 600;
  for (const char* op : {"CumSum", "CumProd"})
    for (int64_t exclusive : {0, 1})
      for (int64_t reverse : {0, 1})
        for (auto [dims, axis] : {std::pair<Dims, int64_t>{{7}, 0},
                                  {{4, 37}, 1},
                                  {{37, 4}, 0},
                                  {{2, 5, 300}, 1},
                                  {{3, 0, 2}, 1}})
          expectMatches(op, {DType::F32, dims},
                        {{"axis", axis}, {"exclusive", exclusive}, {"reverse", reverse}}, seed++,
                        {0.8, 1.2});
}

TEST(CumulativeLowering, OtherDTypes) {
  uint64_t seed = 700;
  for (DType d : {DType::F64, DType::F16, DType::I32, DType::I64, DType::U8, DType::I8})
    for (const char* op : {"CumSum", "CumProd"})
      expectMatches(op, {d, {5, 9}}, {{"axis", 1}, {"exclusive", 1}, {"reverse", 0}}, seed++,
                    {0, 3, true});
}

// ---- TopK ----

Attrs topKAttrs(int64_t axis, int64_t k, int64_t largest) {
  return {{"axis", axis}, {"k", k}, {"largest", largest}, {"sorted", 1}};
}

TEST(TopKLowering, LargestAndSmallestWithTiesInIndexOrder) {
  uint64_t seed = 800;
  for (int64_t largest : {0, 1})
    for (auto [dims, axis, k] : {std::tuple<Dims, int64_t, int64_t>{{3, 20}, 1, 5},
                                 {{20, 3}, 0, 4},
                                 {{2, 9, 4}, 1, 9},
                                 {{6, 7}, 1, 1},
                                 {{6, 7}, 1, 0},
                                 // Long contiguous rows: the vector block filter.
                                 {{4, 300}, 1, 7},
                                 {{3, 77}, 1, 1},
                                 {{2, 40}, 1, 23}})
      expectMatches("TopK", {DType::F32, dims}, topKAttrs(axis, k, largest), seed++, {-4, 4, true});
}

TEST(TopKLowering, OtherDTypes) {
  uint64_t seed = 900;
  for (DType d : {DType::F16, DType::F64, DType::I32, DType::I64, DType::U64, DType::U8})
    for (int64_t largest : {0, 1}) {
      expectMatches("TopK", {d, {4, 12}}, topKAttrs(1, 3, largest), seed++, {0, 6, true});
      expectMatches("TopK", {d, {3, 150}}, topKAttrs(1, 4, largest), seed++, {0, 60, true});
    }
}

// ---- NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss ----

TEST(LossLowering, EveryReductionWithAndWithoutWeightsAndIgnoredTargets) {
  uint64_t seed = 1000;
  for (const char* op : {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"})
    for (DType d : {DType::F32, DType::F64})
      for (DType t : {DType::I64, DType::I32})
        for (const char* reduction : {"none", "sum", "mean"})
          for (bool weighted : {false, true})
            for (Dims dims : {Dims{3, 5}, Dims{2, 4, 3, 5}}) {
              Dims tdims = {dims[0]};
              tdims.insert(tdims.end(), dims.begin() + 2, dims.end());
              std::vector<TensorType> inputs = {{d, dims}, {t, tdims}};
              // Targets in [-1, C]: -1 and C are out of range, 2 is ignored.
              std::vector<Range> ranges = {{-3, 1}, {-1, static_cast<double>(dims[1]), true}};
              if (weighted) {
                inputs.push_back({d, {dims[1]}});
                ranges.push_back({0.5, 2});
              }
              expectMatches(op, inputs,
                            {{"reduction", std::string(reduction)}, {"ignore_index", int64_t{2}}},
                            seed++, ranges);
            }
}

}  // namespace
}  // namespace nanoc::cpu
