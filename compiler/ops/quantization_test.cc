// The quantization family as a specification: shape rules, their errors, and
// the references on small cases (the expected values are ONNX's reference
// implementation's, onnx 1.23, except where a comment derives them).
#include "compiler/ops/quantization.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>

#include "compiler/ir/error.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ops/elementwise_table.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc {
namespace {

using Dims = std::vector<int64_t>;
using Attrs = std::map<std::string, Attr>;

struct Tensor {
  TensorType type;
  std::vector<uint8_t> bytes;
};

// A tensor of `dtype` holding `values` (converted as storeScalar does).
Tensor tensor(DType dtype, Dims dims, const std::vector<double>& values) {
  Tensor t{{dtype, std::move(dims)}, {}};
  t.bytes.resize(t.type.bytes());
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.type.numel());
  for (size_t i = 0; i < values.size(); ++i) {
    Scalar s = isFloatDType(dtype) || isQuantizedFloat(dtype) ? Scalar::ofFloat(values[i])
               : values[i] < 0 ? Scalar::ofSigned(static_cast<int64_t>(values[i]))
                               : Scalar::ofUnsigned(static_cast<uint64_t>(values[i]));
    storeScalar(dtype, s, t.bytes.data(), static_cast<int64_t>(i));
  }
  return t;
}

struct OneNode {
  Graph graph;
  Node* node = nullptr;

  OneNode(const std::string& op, const std::vector<std::optional<TensorType>>& inputs,
          Attrs attrs) {
    std::vector<Value*> in;
    for (size_t i = 0; i < inputs.size(); ++i)
      in.push_back(inputs[i] ? graph.addInput("x" + std::to_string(i), *inputs[i]) : nullptr);
    node = graph.addNode(op, "bad_node", in, static_cast<size_t>(findOp(op)->num_outputs));
    node->attrs = std::move(attrs);
  }
};

// Runs the op's shape rule and reference; returns every output, each element
// widened to double.
std::vector<std::vector<double>> run(const std::string& op,
                                     const std::vector<std::optional<Tensor>>& inputs, Attrs attrs,
                                     std::vector<TensorType>* types = nullptr) {
  std::vector<std::optional<TensorType>> in_types;
  for (const auto& t : inputs) in_types.push_back(t ? std::optional(t->type) : std::nullopt);
  OneNode one(op, in_types, std::move(attrs));
  inferNode(*one.node);
  std::vector<const void*> in;
  for (const auto& t : inputs) in.push_back(t ? t->bytes.data() : nullptr);
  std::vector<std::vector<uint8_t>> out_bytes;
  std::vector<void*> out;
  for (const Value* v : one.node->outputs) out_bytes.emplace_back(v->type.bytes() + 8, 0xAB);
  for (auto& b : out_bytes) out.push_back(b.data());
  findOp(op)->reference(*one.node, in, out);
  std::vector<std::vector<double>> result;
  for (size_t o = 0; o < out.size(); ++o) {
    const TensorType& t = one.node->outputs[o]->type;
    if (types) types->push_back(t);
    result.emplace_back();
    for (int64_t i = 0; i < t.numel(); ++i)
      result.back().push_back(loadScalar(t.dtype, out[o], i).asDouble());
  }
  return result;
}

void expectInferError(const std::string& op, const std::vector<std::optional<TensorType>>& inputs,
                      Attrs attrs, const std::string& what) {
  OneNode one(op, inputs, std::move(attrs));
  try {
    inferNode(*one.node);
    FAIL() << op << ": expected a CompileError containing '" << what << "'";
  } catch (const CompileError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("node 'bad_node' (" + op + ")"), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
}

int64_t dt(DType d) { return static_cast<int64_t>(d); }

Attrs quantAttrs(int64_t axis, int64_t block, DType out, DType precision = DType::F32) {
  return {{"axis", axis},
          {"block_size", block},
          {"output_dtype", dt(out)},
          {"precision", dt(precision)}};
}

Attrs dequantAttrs(int64_t axis, int64_t block, DType out) {
  return {{"axis", axis}, {"block_size", block}, {"output_dtype", dt(out)}};
}

Attrs convAttrs(Dims kernel, Dims pads, int64_t group = 1) {
  Dims ones(kernel.size(), 1);
  return {{"group", group},
          {"kernel_shape", kernel},
          {"pads", pads},
          {"strides", ones},
          {"dilations", ones}};
}

using V = std::vector<double>;

// ---- QuantizeLinear ----

TEST(QuantizeLinear, RoundsHalfToEvenAddsTheZeroPointAndSaturates) {
  // x / 2 = 0, .5, 1.25, 1.75, -1.25, 150, -150, 500 -> round-half-even
  // 0, 0, 1, 2, -1, 150, -150, 500; + 128, clamped to [0, 255].
  auto y = run("QuantizeLinear",
               {tensor(DType::F32, {8}, {0, 1, 2.5, 3.5, -2.5, 300, -300, 1000}),
                tensor(DType::F32, {}, {2}), tensor(DType::U8, {}, {128})},
               quantAttrs(0, 0, DType::U8));
  EXPECT_EQ(y[0], (V{128, 128, 129, 130, 127, 255, 0, 255}));
}

TEST(QuantizeLinear, PerAxisScalesAndZeroPointsFollowTheAxis) {
  // Column j: x / scale[j] rounded, + zp[j].
  auto y = run("QuantizeLinear",
               {tensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}), tensor(DType::F32, {3}, {1, 2, 4}),
                tensor(DType::I8, {3}, {0, 1, -1})},
               quantAttrs(1, 0, DType::I8));
  EXPECT_EQ(y[0], (V{1, 2, 0, 4, 3, 1}));
}

TEST(QuantizeLinear, BlockedScalesRepeatAlongTheAxisWithAShortLastBlock) {
  std::vector<TensorType> types;
  auto y = run("QuantizeLinear",
               {tensor(DType::F32, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}),
                tensor(DType::F32, {2, 2}, {1, 2, 4, 8}), std::nullopt},
               quantAttrs(1, 2, DType::I16), &types);
  EXPECT_EQ(types[0], (TensorType{DType::I16, {2, 4}}));
  EXPECT_EQ(y[0], (V{1, 2, 2, 2, 1, 2, 1, 1}));
  // 5 elements in blocks of 2: scales 1, 2, 4 cover [0, 2), [2, 4), [4, 5).
  y = run("QuantizeLinear",
          {tensor(DType::F32, {1, 5}, {1, 2, 3, 4, 5}), tensor(DType::F32, {1, 3}, {1, 2, 4})},
          quantAttrs(1, 2, DType::U8));
  EXPECT_EQ(y[0], (V{1, 2, 2, 2, 1}));
}

TEST(QuantizeLinear, PrecisionRoundsTheQuotient) {
  // 1000.7 is 1000.5 in f16, which rounds to even 1000; in f32 it rounds to 1001.
  Tensor x = tensor(DType::F32, {1}, {1000.7});
  Tensor scale = tensor(DType::F32, {}, {1});
  EXPECT_EQ(run("QuantizeLinear", {x, scale}, quantAttrs(0, 0, DType::U16, DType::F16))[0],
            V{1000});
  EXPECT_EQ(run("QuantizeLinear", {x, scale}, quantAttrs(0, 0, DType::U16, DType::F32))[0],
            V{1001});
}

TEST(QuantizeLinear, SubByteIntsRoundAndSaturateToTheirRanges) {
  // Rounded half to even: 0, 2, 4, -2, 30, -30, 7, -9; + 1, clamped to [-8, 7].
  auto y = run("QuantizeLinear",
               {tensor(DType::F32, {8}, {0, 2.5, 3.5, -2.5, 30, -30, 7, -9}),
                tensor(DType::F32, {}, {1}), tensor(DType::I4, {1}, {1})},
               quantAttrs(0, 0, DType::I4));
  EXPECT_EQ(y[0], (V{1, 3, 5, -1, 7, -8, 7, -8}));
  y = run("QuantizeLinear",
          {tensor(DType::F32, {4}, {-1, 0.5, 1.5, 5}), tensor(DType::F32, {}, {1})},
          quantAttrs(0, 0, DType::U2));
  EXPECT_EQ(y[0], (V{0, 0, 2, 3}));
}

TEST(QuantizeLinear, ToFloatTypesConvertsAsCast) {
  // ONNX's test_quantizelinear_float4e2m1: per-axis scales 2, 3, 4.
  auto y =
      run("QuantizeLinear",
          {tensor(DType::F32, {3, 4}, {0, 2.5, 4.8, 8.6, -30, -20, 6, 9, -0.0, -2.5, -4.8, -8.6}),
           tensor(DType::F32, {3}, {2, 3, 4}), tensor(DType::F4E2M1, {3}, {0, 0, 0})},
          quantAttrs(0, 0, DType::F4E2M1));
  EXPECT_EQ(y[0], (V{0, 1, 2, 4, -6, -6, 2, 3, 0, -0.5, -1, -2}));
  // Past float8's range: the largest finite value, or NaN with saturate 0.
  Attrs a = quantAttrs(0, 0, DType::F8E4M3FN);
  y = run("QuantizeLinear", {tensor(DType::F32, {2}, {1000, 0.3}), tensor(DType::F32, {}, {1})}, a);
  EXPECT_EQ(y[0], (V{448, 0.3125}));
  a["saturate"] = int64_t{0};
  y = run("QuantizeLinear", {tensor(DType::F32, {2}, {1000, 0.3}), tensor(DType::F32, {}, {1})}, a);
  EXPECT_TRUE(std::isnan(y[0][0]));
}

TEST(DequantizeLinear, FromSubByteAndFloatTypes) {
  // A scalar scale with a [1] zero point is per-tensor.
  auto y = run("DequantizeLinear",
               {tensor(DType::I2, {4}, {-2, -1, 0, 1}), tensor(DType::F32, {}, {2}),
                tensor(DType::I2, {1}, {1})},
               dequantAttrs(0, 0, DType::F32));
  EXPECT_EQ(y[0], (V{-6, -4, -2, 0}));
  y = run("DequantizeLinear",
          {tensor(DType::F8E4M3FN, {2}, {448, -0.5}), tensor(DType::F32, {}, {2})},
          dequantAttrs(0, 0, DType::F32));
  EXPECT_EQ(y[0], (V{896, -1}));
}

TEST(QuantizeLinear, TakesHalfAndI32Inputs) {
  EXPECT_EQ(run("QuantizeLinear",
                {tensor(DType::F16, {3}, {-1.5, 0.5, 2.5}), tensor(DType::F16, {}, {0.5})},
                quantAttrs(0, 0, DType::I8, DType::F16))[0],
            (V{-3, 1, 5}));
  EXPECT_EQ(run("QuantizeLinear",
                {tensor(DType::I32, {3}, {-70000, 3, 70000}), tensor(DType::F32, {}, {2})},
                quantAttrs(0, 0, DType::I16, DType::F64))[0],
            (V{-32768, 2, 32767}));
}

TEST(QuantizeLinear, RejectsMismatchedScalesAndTypes) {
  TensorType x{DType::F32, {2, 3}};
  expectInferError("QuantizeLinear", {x, TensorType{DType::F32, {2}}}, quantAttrs(1, 0, DType::U8),
                   "per-axis scale f32[2] must be [3]");
  expectInferError("QuantizeLinear", {x, TensorType{DType::F32, {2, 1}}},
                   quantAttrs(1, 2, DType::U8), "blocked scale f32[2,1] must be [2,2]");
  expectInferError("QuantizeLinear", {x, TensorType{DType::F32, {3}}, TensorType{DType::U8, {1}}},
                   quantAttrs(1, 0, DType::U8), "must have the shape of scale");
  expectInferError("QuantizeLinear", {x, TensorType{DType::F32, {}}, TensorType{DType::I8, {}}},
                   quantAttrs(0, 0, DType::U8), "must have the output dtype u8");
  expectInferError("QuantizeLinear", {x, TensorType{DType::F32, {}}}, quantAttrs(0, 0, DType::F32),
                   "not a supported quantized type");
  expectInferError("QuantizeLinear", {x, TensorType{DType::F32, {3}}}, quantAttrs(2, 0, DType::U8),
                   "axis 2 is out of range");
  expectInferError("QuantizeLinear", {x, TensorType{DType::F32, {}}},
                   quantAttrs(0, 0, DType::U8, DType::I32), "precision i32 must be a float");
}

// ---- DequantizeLinear ----

TEST(DequantizeLinear, SubtractsTheZeroPointAndScales) {
  std::vector<TensorType> types;
  auto y = run("DequantizeLinear",
               {tensor(DType::U8, {4}, {0, 3, 128, 255}), tensor(DType::F32, {}, {2}),
                tensor(DType::U8, {}, {128})},
               dequantAttrs(0, 0, DType::F32), &types);
  EXPECT_EQ(types[0], (TensorType{DType::F32, {4}}));
  EXPECT_EQ(y[0], (V{-256, -250, 0, 254}));
}

TEST(DequantizeLinear, PerAxisBlockedAndI32) {
  auto y = run("DequantizeLinear",
               {tensor(DType::I8, {2, 2}, {-128, 127, 10, 20}), tensor(DType::F32, {2}, {1, 0.5}),
                tensor(DType::I8, {2}, {0, -2})},
               dequantAttrs(0, 0, DType::F32));
  EXPECT_EQ(y[0], (V{-128, 127, 6, 11}));
  y = run("DequantizeLinear",
          {tensor(DType::I16, {1, 3}, {-32768, 100, 32767}), tensor(DType::F32, {1, 2}, {1, 0.25})},
          dequantAttrs(1, 2, DType::F32));
  EXPECT_EQ(y[0], (V{-32768, 100, 8191.75}));
  y = run("DequantizeLinear",
          {tensor(DType::I32, {2}, {-1000000, 7}), tensor(DType::F32, {}, {0.5})},
          dequantAttrs(0, 0, DType::F32));
  EXPECT_EQ(y[0], (V{-500000, 3.5}));
}

TEST(DequantizeLinear, OutputDtypeRoundsTheProduct) {
  std::vector<TensorType> types;
  auto y = run("DequantizeLinear", {tensor(DType::U16, {1}, {2049}), tensor(DType::F32, {}, {1})},
               dequantAttrs(0, 0, DType::F16), &types);
  EXPECT_EQ(types[0].dtype, DType::F16);
  EXPECT_EQ(y[0], V{2048});  // 2049 lies halfway between f16 2048 and 2050: ties to even
}

TEST(DequantizeLinear, RejectsFloatInputsAndMismatchedZeroPoints) {
  expectInferError("DequantizeLinear", {TensorType{DType::F32, {2}}, TensorType{DType::F32, {}}},
                   dequantAttrs(0, 0, DType::F32), "not a supported quantized type");
  expectInferError(
      "DequantizeLinear",
      {TensorType{DType::U8, {2}}, TensorType{DType::F32, {}}, TensorType{DType::I8, {}}},
      dequantAttrs(0, 0, DType::F32), "must have x's dtype u8");
  expectInferError("DequantizeLinear", {TensorType{DType::U8, {2}}, TensorType{DType::F32, {}}},
                   dequantAttrs(0, 0, DType::I32), "output_dtype i32 must be f32, f16 or bf16");
}

// ---- DynamicQuantizeLinear ----

TEST(DynamicQuantizeLinear, MapsTheRangeWithZeroOntoU8) {
  std::vector<TensorType> types;
  auto out = run("DynamicQuantizeLinear", {tensor(DType::F32, {6}, {0, 2, -3, -2.5, 1.34, 0.5})},
                 {}, &types);
  EXPECT_EQ(types[1], (TensorType{DType::F32, {}}));
  EXPECT_EQ(types[2], (TensorType{DType::U8, {}}));
  EXPECT_EQ(out[0], (V{153, 255, 0, 26, 221, 179}));
  EXPECT_FLOAT_EQ(static_cast<float>(out[1][0]), 5.0f / 255.0f);
  EXPECT_EQ(out[2], V{153});
  // All zeros: scale 1 / 255, zero point 0.
  out = run("DynamicQuantizeLinear", {tensor(DType::F32, {2}, {0, 0})}, {});
  EXPECT_FLOAT_EQ(static_cast<float>(out[1][0]), 1.0f / 255.0f);
  EXPECT_EQ(out[2], V{0});
}

// ---- integer products ----

TEST(MatMulInteger, SubtractsZeroPointsAndAccumulatesInI32) {
  Tensor a = tensor(DType::U8, {4, 3}, {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0});
  Tensor b = tensor(DType::U8, {3, 2}, {1, 4, 2, 5, 3, 6});
  std::vector<TensorType> types;
  auto y = run("MatMulInteger", {a, b, tensor(DType::U8, {1}, {12}), tensor(DType::U8, {1}, {0})},
               {}, &types);
  EXPECT_EQ(types[0], (TensorType{DType::I32, {4, 2}}));
  EXPECT_EQ(y[0], (V{-38, -83, -44, -98, -50, -113, -56, -128}));
  // Per-row a and per-column b zero points; i8 x u8.
  y = run("MatMulInteger",
          {tensor(DType::I8, {2, 2}, {-128, 127, 1, 2}), tensor(DType::U8, {2, 2}, {255, 0, 1, 1}),
           tensor(DType::I8, {2}, {0, 1}), tensor(DType::U8, {2}, {0, 1})},
          {});
  // row 0: [-128, 127] x [[255, -1], [1, 0]] = [-32640 + 127, 128]
  // row 1: [0, 1] x the same = [1, 0]
  EXPECT_EQ(y[0], (V{-32513, 128, 1, 0}));
}

TEST(MatMulInteger, BroadcastsBatchesAndPromotesVectors) {
  std::vector<TensorType> types;
  run("MatMulInteger", {tensor(DType::U8, {2, 1, 3}, V(6, 1)), tensor(DType::U8, {3}, V(3, 2))}, {},
      &types);
  EXPECT_EQ(types[0], (TensorType{DType::I32, {2, 1}}));
}

TEST(MatMulInteger, RejectsFloatsAndWrongZeroPoints) {
  expectInferError("MatMulInteger", {TensorType{DType::F32, {2, 2}}, TensorType{DType::U8, {2, 2}}},
                   {}, "must be i8 or u8");
  expectInferError("MatMulInteger",
                   {TensorType{DType::U8, {2, 3}}, TensorType{DType::U8, {3, 4}}, std::nullopt,
                    TensorType{DType::U8, {3}}},
                   {}, "b_zero_point u8[3] must be a scalar or [4]");
}

TEST(QLinearMatMul, RequantizesTheI32Product) {
  auto y = run("QLinearMatMul",
               {tensor(DType::U8, {2, 4}, {208, 236, 0, 238, 3, 214, 255, 29}),
                tensor(DType::F32, {1}, {0.0066}), tensor(DType::U8, {1}, {113}),
                tensor(DType::U8, {4, 3}, {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247}),
                tensor(DType::F32, {1}, {0.00705}), tensor(DType::U8, {1}, {114}),
                tensor(DType::F32, {1}, {0.0107}), tensor(DType::U8, {1}, {118})},
               {});
  EXPECT_EQ(y[0], (V{168, 115, 255, 1, 66, 151}));
}

TEST(QLinearMatMul, RoundsTheProductBeforeAddingTheZeroPoint) {
  // 13 * 0.5 = 6.5 rounds to even 6, + 3 = 9 (as the spec and ONNX Runtime;
  // rounding 6.5 + 3 would give 10).
  auto f = [](double v) { return tensor(DType::F32, {}, {v}); };
  auto u = [](double v) { return tensor(DType::U8, {}, {v}); };
  auto y = run("QLinearMatMul",
               {tensor(DType::U8, {1, 1}, {1}), f(1), u(0), tensor(DType::U8, {1, 1}, {13}), f(0.5),
                u(0), f(1), u(3)},
               {});
  EXPECT_EQ(y[0], V{9});
}

TEST(QLinearMatMul, RejectsScalesOfDifferentDtypes) {
  TensorType u8m{DType::U8, {2, 2}}, u8s{DType::U8, {}};
  expectInferError("QLinearMatMul",
                   {u8m, TensorType{DType::F32, {}}, u8s, u8m, TensorType{DType::F16, {}}, u8s,
                    TensorType{DType::F32, {}}, u8s},
                   {}, "scales must share one dtype");
  // Per-row scales that vary across batches are not supported.
  TensorType a{DType::U8, {2, 3, 4}}, f32s{DType::F32, {}};
  expectInferError("QLinearMatMul",
                   {a, TensorType{DType::F32, {2, 3, 1}}, u8s, TensorType{DType::U8, {4, 5}}, f32s,
                    u8s, f32s, u8s},
                   {}, "a_scale f32[2,3,1] must be a scalar or [3] (one per row of a)");
}

TEST(ConvInteger, PaddingAddsNothingAndWZeroPointsArePerChannel) {
  Tensor x = tensor(DType::U8, {1, 1, 3, 3}, {2, 3, 4, 5, 6, 7, 8, 9, 10});
  Tensor w = tensor(DType::U8, {2, 1, 2, 2}, V(8, 1));
  std::vector<TensorType> types;
  auto y = run("ConvInteger", {x, w, tensor(DType::U8, {}, {1}), tensor(DType::U8, {2}, {1, 2})},
               convAttrs({2, 2}, {1, 1, 1, 1}), &types);
  EXPECT_EQ(types[0], (TensorType{DType::I32, {1, 2, 4, 4}}));
  V want(16, 0);
  for (double v : {-1, -3, -5, -3, -5, -12, -16, -9, -11, -24, -28, -15, -7, -15, -17, -9})
    want.push_back(v);
  EXPECT_EQ(y[0], want);
}

TEST(ConvInteger, OneAndThreeSpatialDims) {
  // 1-D: x - 1 = [0, 1, 2, 3], w = [1, 2]: [2, 5, 8].
  auto y = run("ConvInteger",
               {tensor(DType::U8, {1, 1, 4}, {1, 2, 3, 4}), tensor(DType::I8, {1, 1, 2}, {1, 2}),
                tensor(DType::U8, {}, {1})},
               convAttrs({2}, {0, 0}));
  EXPECT_EQ(y[0], (V{2, 5, 8}));
  std::vector<TensorType> types;
  run("ConvInteger",
      {tensor(DType::I8, {1, 2, 3, 3, 3}, V(54, 1)), tensor(DType::I8, {1, 2, 2, 2, 2}, V(16, 1))},
      convAttrs({2, 2, 2}, {0, 0, 0, 1, 1, 1}), &types);
  EXPECT_EQ(types[0], (TensorType{DType::I32, {1, 1, 3, 3, 3}}));
}

TEST(ConvInteger, RejectsBadOperands) {
  expectInferError("ConvInteger",
                   {TensorType{DType::U8, {1, 1, 3, 3}}, TensorType{DType::U8, {2, 1, 2, 2}},
                    std::nullopt, TensorType{DType::U8, {3}}},
                   convAttrs({2, 2}, {0, 0, 0, 0}), "w_zero_point u8[3] must be a scalar or [2]");
  expectInferError("ConvInteger",
                   {TensorType{DType::U8, {1, 1, 3, 3}}, TensorType{DType::U8, {2, 1, 2, 2}}},
                   convAttrs({3, 3}, {0, 0, 0, 0}), "differs from w");
  expectInferError("ConvInteger",
                   {TensorType{DType::U8, {1, 2, 3, 3}}, TensorType{DType::U8, {2, 1, 2, 2}}},
                   convAttrs({2, 2}, {0, 0, 0, 0}), "does not fit the 2 input channels");
}

TEST(QLinearConv, PerChannelScalesBiasAndRequantization) {
  auto y = run("QLinearConv",
               {tensor(DType::U8, {1, 1, 3, 3}, {10, 20, 30, 40, 50, 60, 70, 80, 90}),
                tensor(DType::F32, {}, {0.5}), tensor(DType::U8, {}, {10}),
                tensor(DType::I8, {2, 1, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}),
                tensor(DType::F32, {2}, {0.25, 0.125}), tensor(DType::I8, {2}, {0, 1}),
                tensor(DType::F32, {}, {2}), tensor(DType::U8, {}, {5}),
                tensor(DType::I32, {2}, {100, -50})},
               convAttrs({2, 2}, {0, 0, 0, 0}));
  EXPECT_EQ(y[0], (V{28, 34, 47, 53, 19, 26, 40, 47}));
}

}  // namespace
}  // namespace nanoc
