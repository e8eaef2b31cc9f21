// The quantization lowerings against their references (compiler/ops/
// quantization*.cc) on random data: every granularity, dtype and attribute,
// shapes that split into several tasks and accumulator strips, and values
// that hit rounding ties and saturation. Integer outputs must match bit for
// bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/kernel_test_util.h"
#include "compiler/ops/quantization.h"

namespace nanoc::cpu {
namespace {

using testing::AlignedBuffer;
using Attrs = std::map<std::string, Attr>;
using Dims = std::vector<int64_t>;

// One operand: its type and the range its random values come from; `step`
// rounds floats to multiples of it (so that quotients tie); absent when no
// type is given.
struct Operand {
  std::optional<TensorType> type;
  double lo = -2, hi = 2, step = 0;
};

Operand in(DType dtype, Dims dims, double lo, double hi, double step = 0) {
  return {TensorType{dtype, std::move(dims)}, lo, hi, step};
}
Operand absent() { return {}; }
// Integer operands over (most of) their dtype's range.
Operand ints(DType dtype, Dims dims) { return in(dtype, std::move(dims), -128, 255); }

void check(const std::string& op, const std::vector<Operand>& operands, const Attrs& attrs,
           uint64_t seed) {
  std::string what = op + "(";
  for (const Operand& o : operands) what += (o.type ? o.type->str() : "-") + " ";
  what += ")";
  SCOPED_TRACE(what);
  Graph graph;
  std::vector<Value*> values;
  for (size_t i = 0; i < operands.size(); ++i)
    values.push_back(operands[i].type ? graph.addInput("in" + std::to_string(i), *operands[i].type)
                                      : nullptr);
  Node* node = graph.addNode(op, "n0", values, static_cast<size_t>(findOp(op)->num_outputs));
  node->attrs = attrs;
  inferNode(*node);
  std::mt19937_64 rng(seed);
  std::vector<AlignedBuffer> data;
  for (const Operand& o : operands) {
    if (!o.type) continue;
    data.emplace_back(o.type->bytes());
    std::uniform_real_distribution<double> dist(o.lo, o.hi);
    for (int64_t i = 0; i < o.type->numel(); ++i) {
      double v = dist(rng);
      if (o.step > 0) v = std::round(v / o.step) * o.step;
      Scalar s = isFloatDType(o.type->dtype) || isQuantizedFloat(o.type->dtype) ? Scalar::ofFloat(v)
                 : v < 0 ? Scalar::ofSigned(static_cast<int64_t>(std::round(v)))
                         : Scalar::ofUnsigned(static_cast<uint64_t>(std::round(v)));
      storeScalar(o.type->dtype, s, data.back().data(), i);
    }
  }
  // As testing::expectLoweringMatchesReference, but absent operands are null
  // for the reference (and take no buffer slot in the kernel).
  testing::JitKernel kernel = testing::compileKernel(*node);
  std::vector<const void*> ref_in;
  std::vector<void*> buffers;
  for (size_t i = 0, next = 0; i < operands.size(); ++i) {
    if (!operands[i].type) {
      ref_in.push_back(nullptr);
      continue;
    }
    ref_in.push_back(data[next].data());
    buffers.push_back(data[next++].data());
  }
  std::vector<AlignedBuffer> got, want;
  std::vector<void*> ref_out;
  for (const Value* out : node->outputs) {
    got.emplace_back(out->type.bytes());
    want.emplace_back(out->type.bytes());
    std::memset(got.back().data(), 0xff, got.back().size());
    buffers.push_back(got.back().data());
    ref_out.push_back(want.back().data());
  }
  findOp(op)->reference(*node, ref_in, ref_out);
  testing::runKernel(kernel, buffers);
  for (size_t i = 0; i < node->outputs.size(); ++i)
    testing::expectOutputMatches(node->outputs[i]->type, got[i], want[i],
                                 what + " output " + std::to_string(i));
}

int64_t dt(DType d) { return static_cast<int64_t>(d); }

Attrs quant(int64_t axis, int64_t block, DType out, DType precision = DType::F32) {
  return {{"axis", axis},
          {"block_size", block},
          {"output_dtype", dt(out)},
          {"precision", dt(precision)}};
}

Attrs dequant(int64_t axis, int64_t block, DType out) {
  return {{"axis", axis}, {"block_size", block}, {"output_dtype", dt(out)}};
}

Attrs conv(Dims kernel, Dims pads, Dims strides, Dims dilations, int64_t group = 1) {
  return {{"group", group},
          {"kernel_shape", kernel},
          {"pads", pads},
          {"strides", strides},
          {"dilations", dilations}};
}

// ---------------------------------------------------------------- QuantizeLinear

TEST(QuantizeLinearLowering, PerTensorEveryOutputDtype) {
  uint64_t seed = 1;
  for (DType out : {DType::U8, DType::I8, DType::U16, DType::I16}) {
    Operand zp = out == DType::U16   ? in(out, {}, 0, 60000)
                 : out == DType::I16 ? in(out, {}, -30000, 30000)
                                     : ints(out, {});
    // Quotients in +-600 (saturating 8-bit outputs), many exact ties.
    check("QuantizeLinear",
          {in(DType::F32, {3, 37}, -300, 300, 0.25), in(DType::F32, {}, 0.5, 0.5), zp},
          quant(0, 0, out), seed++);
    check("QuantizeLinear", {in(DType::F32, {3, 37}, -3e5, 3e5), in(DType::F32, {}, 0.5, 4)},
          quant(0, 0, out), seed++);
  }
}

TEST(QuantizeLinearLowering, PerAxisOnEveryAxis) {
  for (int64_t axis = 0; axis < 3; ++axis) {
    Dims dims = {3, 4, 5};
    int64_t d = dims[static_cast<size_t>(axis)];
    check("QuantizeLinear",
          {in(DType::F32, dims, -200, 200, 0.5), in(DType::F32, {d}, 0.5, 2, 0.5),
           ints(DType::I8, {d})},
          quant(axis, 0, DType::I8), 10 + static_cast<uint64_t>(axis));
  }
}

TEST(QuantizeLinearLowering, BlockedWithAShortLastBlock) {
  check("QuantizeLinear",
        {in(DType::F32, {2, 7, 5}, -100, 100), in(DType::F32, {2, 3, 5}, 0.25, 2),
         ints(DType::U8, {2, 3, 5})},
        quant(1, 3, DType::U8), 20);
  check("QuantizeLinear",
        {in(DType::F32, {4, 70}, -100, 100), in(DType::F32, {4, 3}, 0.25, 2),
         ints(DType::I8, {4, 3})},
        quant(1, 32, DType::I8), 21);
  check("QuantizeLinear", {in(DType::F32, {9, 4}, -100, 100), in(DType::F32, {3, 4}, 0.25, 2)},
        quant(0, 4, DType::U16), 22);
}

TEST(QuantizeLinearLowering, HalfInputsScalesAndPrecisions) {
  uint64_t seed = 30;
  for (DType x : {DType::F32, DType::F16, DType::BF16})
    for (DType scale : {DType::F32, DType::F16, DType::BF16})
      for (DType precision : {DType::F32, DType::F16, DType::BF16, DType::F64})
        check("QuantizeLinear",
              {in(x, {40}, -300, 300), in(scale, {}, 0.3, 3), ints(DType::U8, {})},
              quant(0, 0, DType::U8, precision), seed++);
  check("QuantizeLinear",
        {in(DType::I32, {64}, -1e6, 1e6, 1), in(DType::F32, {}, 2, 2), in(DType::I16, {}, -9, 9)},
        quant(0, 0, DType::I16, DType::F64), seed++);
}

// To the float8 types and f4e2m1: x / scale (+ a zero point of 0) converted
// as Cast does, saturating and not; to the sub-byte ints: rounded and clamped
// to their ranges (quotients in +-80, many ties).
TEST(QuantizeLinearLowering, Float8AndSubByteOutputs) {
  uint64_t seed = 200;
  for (DType out :
       {DType::F8E4M3FN, DType::F8E4M3FNUZ, DType::F8E5M2, DType::F8E5M2FNUZ, DType::F4E2M1})
    for (int64_t saturate : {0, 1}) {
      Attrs a = quant(0, 0, out);
      a["saturate"] = saturate;
      check("QuantizeLinear", {in(DType::F32, {3, 37}, -1e5, 1e5), in(DType::F32, {}, 0.5, 4)}, a,
            seed++);
      check("QuantizeLinear",
            {in(DType::F32, {3, 37}, -20, 20, 0.125), in(DType::F32, {}, 0.5, 0.5),
             in(out, {}, 0, 0)},
            a, seed++);
      Attrs h = quant(1, 0, out, DType::F16);
      h["saturate"] = saturate;
      check("QuantizeLinear",
            {in(DType::F16, {3, 5}, -600, 600), in(DType::F16, {5}, 0.1, 3), in(out, {5}, 0, 0)}, h,
            seed++);
    }
  for (DType out : {DType::I4, DType::U4, DType::I2, DType::U2}) {
    QuantRange r = out == DType::I4   ? QuantRange{-8, 7}
                   : out == DType::U4 ? QuantRange{0, 15}
                   : out == DType::I2 ? QuantRange{-2, 1}
                                      : QuantRange{0, 3};
    Operand zp = in(out, {}, static_cast<double>(r.lo), static_cast<double>(r.hi));
    check("QuantizeLinear",
          {in(DType::F32, {3, 37}, -40, 40, 0.25), in(DType::F32, {}, 0.5, 0.5), zp},
          quant(0, 0, out), seed++);
    check("QuantizeLinear",
          {in(DType::F32, {4, 9}, -10, 10), in(DType::F32, {4, 3}, 0.25, 2),
           in(out, {4, 3}, static_cast<double>(r.lo), static_cast<double>(r.hi))},
          quant(1, 3, out), seed++);
  }
}

TEST(QuantizeLinearLowering, LargeTensorsSplitIntoTasks) {
  check("QuantizeLinear",
        {in(DType::F32, {70001}, -300, 300), in(DType::F32, {}, 1, 2), ints(DType::U8, {})},
        quant(0, 0, DType::U8), 40);
  check("QuantizeLinear",
        {in(DType::F32, {3, 20000}, -300, 300), in(DType::F32, {3}, 1, 2), ints(DType::U8, {3})},
        quant(0, 0, DType::U8), 41);
}

// ---------------------------------------------------------------- DequantizeLinear

TEST(DequantizeLinearLowering, EveryInputAndOutputDtype) {
  uint64_t seed = 50;
  for (DType x : {DType::U8, DType::I8, DType::U16, DType::I16, DType::I32})
    for (DType out : {DType::F32, DType::F16, DType::BF16}) {
      Operand values = x == DType::I32 ? in(x, {3, 41}, -1e8, 1e8) : in(x, {3, 41}, -4e4, 7e4);
      Operand zp = x == DType::I32 ? absent() : in(x, {}, -4e4, 7e4);
      check("DequantizeLinear", {values, in(out, {}, 0.01, 2), zp}, dequant(0, 0, out), seed++);
    }
}

TEST(DequantizeLinearLowering, PerAxisAndBlocked) {
  check("DequantizeLinear",
        {ints(DType::U8, {3, 4, 5}), in(DType::F32, {4}, 0.01, 1), ints(DType::U8, {4})},
        dequant(1, 0, DType::F32), 60);
  check("DequantizeLinear", {ints(DType::I8, {3, 4, 5}), in(DType::F16, {5}, 0.01, 1)},
        dequant(2, 0, DType::F16), 61);
  check("DequantizeLinear",
        {ints(DType::I8, {6, 33}), in(DType::F32, {6, 3}, 0.01, 1), ints(DType::I8, {6, 3})},
        dequant(1, 16, DType::F32), 62);
  check("DequantizeLinear", {ints(DType::U8, {70000}), in(DType::F32, {}, 0.01, 1)},
        dequant(0, 0, DType::F32), 63);
}

TEST(DequantizeLinearLowering, Float8AndSubByteInputs) {
  uint64_t seed = 250;
  for (DType x :
       {DType::F8E4M3FN, DType::F8E4M3FNUZ, DType::F8E5M2, DType::F8E5M2FNUZ, DType::F4E2M1})
    for (DType out : {DType::F32, DType::F16, DType::BF16}) {
      check("DequantizeLinear", {in(x, {3, 41}, -500, 500), in(out, {}, 0.01, 2)},
            dequant(0, 0, out), seed++);
      check("DequantizeLinear", {in(x, {3, 41}, -5, 5), in(out, {41}, 0.01, 2), in(x, {41}, 0, 0)},
            dequant(1, 0, out), seed++);
    }
  for (DType x : {DType::I4, DType::U4, DType::I2, DType::U2})
    for (DType out : {DType::F32, DType::F16}) {
      check("DequantizeLinear", {in(x, {3, 41}, -8, 15), in(out, {}, 0.01, 2), in(x, {}, -8, 15)},
            dequant(0, 0, out), seed++);
      check("DequantizeLinear",
            {in(x, {6, 33}, -8, 15), in(out, {6, 3}, 0.01, 1), in(x, {6, 3}, -8, 15)},
            dequant(1, 16, out), seed++);
    }
}

// ---------------------------------------------------------------- DynamicQuantizeLinear

TEST(DynamicQuantizeLinearLowering, MatchesReference) {
  check("DynamicQuantizeLinear", {in(DType::F32, {6}, -3, 2)}, {}, 70);
  check("DynamicQuantizeLinear", {in(DType::F32, {3, 1000}, 1, 50)}, {}, 71);
  check("DynamicQuantizeLinear", {in(DType::F32, {17}, -9, -1)}, {}, 72);
  check("DynamicQuantizeLinear", {in(DType::F32, {5}, 0, 0)}, {}, 73);
}

// ---------------------------------------------------------------- integer matmul

TEST(MatMulIntegerLowering, ShapesZeroPointsAndDtypes) {
  uint64_t seed = 80;
  for (DType a : {DType::U8, DType::I8})
    for (DType b : {DType::U8, DType::I8}) {
      check("MatMulInteger", {ints(a, {5, 7}), ints(b, {7, 13}), ints(a, {}), ints(b, {})}, {},
            seed++);
      check("MatMulInteger", {ints(a, {16, 33}), ints(b, {33, 300})}, {}, seed++);
    }
  // Per-row a and per-column b zero points, one of them absent.
  check("MatMulInteger",
        {ints(DType::U8, {6, 9}), ints(DType::I8, {9, 11}), ints(DType::U8, {6}),
         ints(DType::I8, {11})},
        {}, seed++);
  check("MatMulInteger",
        {ints(DType::U8, {6, 9}), ints(DType::U8, {9, 11}), absent(), ints(DType::U8, {11})}, {},
        seed++);
  // Batches broadcast, vectors promoted.
  check("MatMulInteger", {ints(DType::U8, {2, 1, 4, 5}), ints(DType::U8, {3, 5, 6})}, {}, seed++);
  check("MatMulInteger", {ints(DType::U8, {5}), ints(DType::U8, {2, 5, 3})}, {}, seed++);
  check("MatMulInteger", {ints(DType::I8, {2, 4, 5}), ints(DType::I8, {5})}, {}, seed++);
  check("MatMulInteger", {ints(DType::U8, {200, 64}), ints(DType::U8, {64, 40})}, {}, seed++);
}

TEST(QLinearMatMulLowering, ScalesOfEveryDtypePerRowAndColumn) {
  uint64_t seed = 100;
  for (DType s : {DType::F32, DType::F16, DType::BF16})
    for (DType y : {DType::U8, DType::I8}) {
      check("QLinearMatMul",
            {ints(DType::U8, {2, 3, 19}), in(s, {}, 0.01, 0.05), ints(DType::U8, {}),
             ints(DType::I8, {19, 270}), in(s, {}, 0.01, 0.05), ints(DType::I8, {}),
             in(s, {}, 2, 10), ints(y, {})},
            {}, seed++);
    }
  check("QLinearMatMul",
        {ints(DType::I8, {7, 12}), in(DType::F32, {7}, 0.01, 0.05), ints(DType::I8, {7}),
         ints(DType::U8, {12, 9}), in(DType::F32, {9}, 0.01, 0.05), ints(DType::U8, {9}),
         in(DType::F32, {}, 2, 10), ints(DType::U8, {})},
        {}, seed++);
  // The spec's N-D forms: per row [.., M, 1], per column [.., 1, N].
  check("QLinearMatMul",
        {ints(DType::U8, {2, 7, 12}), in(DType::F32, {1, 7, 1}, 0.01, 0.05),
         ints(DType::U8, {1, 7, 1}), ints(DType::U8, {12, 9}), in(DType::F32, {1, 9}, 0.01, 0.05),
         ints(DType::U8, {9}), in(DType::F32, {}, 2, 10), ints(DType::U8, {})},
        {}, seed++);
}

// ---------------------------------------------------------------- integer conv

TEST(ConvIntegerLowering, WindowsGroupsAndZeroPoints) {
  check("ConvInteger",
        {ints(DType::U8, {2, 4, 9, 11}), ints(DType::I8, {6, 2, 3, 3}), ints(DType::U8, {}),
         ints(DType::I8, {6})},
        conv({3, 3}, {1, 2, 0, 1}, {2, 1}, {1, 2}, 2), 120);
  check("ConvInteger", {ints(DType::I8, {1, 3, 5, 5}), ints(DType::U8, {2, 3, 2, 2})},
        conv({2, 2}, {0, 0, 0, 0}, {1, 1}, {1, 1}), 121);
  // Rows wider than one accumulator strip, split into tasks.
  check("ConvInteger",
        {ints(DType::U8, {1, 2, 3, 700}), ints(DType::U8, {3, 2, 2, 3}), ints(DType::U8, {})},
        conv({2, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}), 122);
  // Depthwise.
  check("ConvInteger", {ints(DType::U8, {1, 4, 6, 6}), ints(DType::I8, {4, 1, 3, 3})},
        conv({3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 4), 123);
  // Output channels in blocks of four (per group), per-channel zero points.
  check("ConvInteger",
        {ints(DType::U8, {2, 6, 7, 9}), ints(DType::I8, {8, 3, 3, 2}), ints(DType::U8, {}),
         ints(DType::I8, {8})},
        conv({3, 2}, {1, 0, 2, 1}, {1, 2}, {2, 1}, 2), 124);
  check("ConvInteger", {ints(DType::I8, {1, 3, 4, 300}), ints(DType::U8, {8, 3, 1, 3})},
        conv({1, 3}, {0, 1, 0, 1}, {1, 1}, {1, 1}), 125);
}

TEST(ConvIntegerLowering, OneAndThreeSpatialDims) {
  check("ConvInteger",
        {ints(DType::U8, {2, 3, 20}), ints(DType::I8, {4, 3, 3}), ints(DType::U8, {}),
         ints(DType::I8, {})},
        conv({3}, {2, 1}, {2}, {2}), 130);
  check("ConvInteger",
        {ints(DType::I8, {1, 2, 4, 5, 6}), ints(DType::I8, {3, 2, 2, 3, 2}), ints(DType::I8, {}),
         ints(DType::I8, {3})},
        conv({2, 3, 2}, {1, 0, 1, 0, 1, 1}, {1, 2, 1}, {2, 1, 1}), 131);
}

TEST(QLinearConvLowering, PerChannelScalesAndBias) {
  uint64_t seed = 140;
  for (DType s : {DType::F32, DType::F16, DType::BF16})
    for (DType y : {DType::U8, DType::I8})
      check("QLinearConv",
            {ints(DType::U8, {1, 4, 7, 8}), in(s, {}, 0.01, 0.05), ints(DType::U8, {}),
             ints(DType::I8, {6, 2, 3, 3}), in(s, {6}, 0.01, 0.05), ints(DType::I8, {6}),
             in(s, {}, 0.5, 2), ints(y, {}), in(DType::I32, {6}, -5000, 5000)},
            conv({3, 3}, {1, 1, 1, 1}, {1, 2}, {1, 1}, 2), seed++);
  check("QLinearConv",
        {ints(DType::U8, {2, 3, 6, 6}), in(DType::F32, {}, 0.01, 0.05), ints(DType::U8, {}),
         ints(DType::U8, {8, 3, 3, 3}), in(DType::F32, {8}, 0.01, 0.05), ints(DType::U8, {8}),
         in(DType::F32, {}, 0.5, 2), ints(DType::U8, {}), in(DType::I32, {8}, -5000, 5000)},
        conv({3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}), seed++);
  check("QLinearConv",
        {ints(DType::I8, {2, 3, 10}), in(DType::F32, {}, 0.01, 0.05), ints(DType::I8, {}),
         ints(DType::I8, {2, 3, 4}), in(DType::F32, {}, 0.01, 0.05), ints(DType::I8, {}),
         in(DType::F32, {}, 0.05, 0.5), ints(DType::I8, {})},
        conv({4}, {1, 2}, {1}, {2}), seed++);
}

}  // namespace
}  // namespace nanoc::cpu
