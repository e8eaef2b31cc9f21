// The non-linear-algebra CPU lowerings against their ops' reference
// implementations (JIT-compiled for this machine), and the target plumbing.
#include <gtest/gtest.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
#endif

#include "compiler/codegen/cpu/kernel_test_util.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/target.h"
#include "compiler/ir/error.h"
#include "compiler/ir/float8.h"
#include "compiler/ir/subbyte.h"
#include "compiler/ops/elementwise_table.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc::cpu {
namespace {

using testing::expectLoweringMatchesReference;

TensorType f32(std::vector<int64_t> dims) { return TensorType{DType::F32, std::move(dims)}; }

// ---- elementwise ---------------------------------------------------------

TEST(ElementwiseLowering, BinaryOpsSameShape) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    expectLoweringMatchesReference(op, {f32({7}), f32({7})}, {}, 1);
    expectLoweringMatchesReference(op, {f32({3, 37}), f32({3, 37})}, {}, 2);
    expectLoweringMatchesReference(op, {f32({2, 3, 4, 5}), f32({2, 3, 4, 5})}, {}, 3);
  }
}

TEST(ElementwiseLowering, BinaryOpsBroadcastScalarRowColumn) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    expectLoweringMatchesReference(op, {f32({5, 9}), f32({})}, {}, 4);      // scalar
    expectLoweringMatchesReference(op, {f32({}), f32({5, 9})}, {}, 5);      // scalar first
    expectLoweringMatchesReference(op, {f32({5, 9}), f32({9})}, {}, 6);     // row
    expectLoweringMatchesReference(op, {f32({5, 9}), f32({5, 1})}, {}, 7);  // column
    expectLoweringMatchesReference(op, {f32({5, 1}), f32({1, 9})}, {}, 8);  // outer product
    expectLoweringMatchesReference(op, {f32({}), f32({})}, {}, 9);
  }
}

TEST(ElementwiseLowering, BinaryOpsBroadcastRank4WithOnes) {
  expectLoweringMatchesReference("Add", {f32({2, 3, 4, 5}), f32({1, 3, 1, 1})}, {}, 10);
  expectLoweringMatchesReference("Mul", {f32({2, 1, 4, 1}), f32({1, 3, 1, 5})}, {}, 11);
  expectLoweringMatchesReference("Sub", {f32({1, 16, 1, 1}), f32({2, 16, 7, 7})}, {}, 12);
  expectLoweringMatchesReference("Div", {f32({2, 3, 4, 5}), f32({4, 1})}, {}, 13);
  expectLoweringMatchesReference("Add", {f32({1, 1, 1, 1}), f32({3, 1, 2, 1})}, {}, 14);
}

TEST(ElementwiseLowering, LargeTensorsSplitIntoSeveralTasks) {
  // One long row (split inside the row) and many short rows (grouped).
  expectLoweringMatchesReference("Add", {f32({100003}), f32({1})}, {}, 15);
  expectLoweringMatchesReference("Mul", {f32({3001, 17}), f32({17})}, {}, 16);
  expectLoweringMatchesReference("Relu", {f32({70000})}, {}, 17);
}

TEST(ElementwiseLowering, UnaryOps) {
  for (const char* op : {"Relu", "Sigmoid", "Tanh"}) {
    expectLoweringMatchesReference(op, {f32({})}, {}, 20);
    expectLoweringMatchesReference(op, {f32({1000})}, {}, 21);
    expectLoweringMatchesReference(op, {f32({2, 3, 5, 7})}, {}, 22);
  }
}

TEST(ElementwiseLowering, TranscendentalsAcrossTheirWholeRange) {
  // Saturation, overflow of e^-x in sigmoid, and the small-|x| region of tanh.
  for (const char* op : {"Sigmoid", "Tanh"}) {
    expectLoweringMatchesReference(op, {f32({4096})}, {}, 23, -100.0f, 100.0f);
    expectLoweringMatchesReference(op, {f32({4096})}, {}, 24, -12.0f, 12.0f);
    expectLoweringMatchesReference(op, {f32({4096})}, {}, 25, -0.1f, 0.1f);
    expectLoweringMatchesReference(op, {f32({4096})}, {}, 26, -1e-4f, 1e-4f);
  }
}

// Tanh near 0 must be accurate relative to x, not just to 1.
TEST(ElementwiseLowering, TanhIsRelativelyAccurateNearZero) {
  auto g = testing::makeSingleNodeGraph("Tanh", {f32({6})}, {});
  testing::JitKernel kernel = testing::compileKernel(*g->node);
  float x[6] = {1e-6f, -3e-4f, 0.01f, 0.06f, 0.07f, -0.2f};
  float y[6] = {};
  void* buffers[2] = {x, y};
  nanort_kernel_args args{buffers, 2};
  kernel.fn(&args, 0, kernel.task_count);
  for (int i = 0; i < 6; ++i)
    EXPECT_NEAR(y[i], std::tanh(static_cast<double>(x[i])), 4e-7 * std::fabs(x[i])) << x[i];
}

// Sigmoid to a few ulp relative to its value everywhere it is a normal float
// (the e^-x tail too, where an absolute tolerance would pass anything), and
// its edges: NaN, the infinities, and the floor below x = -87.
TEST(ElementwiseLowering, SigmoidIsRelativelyAccurateOverItsRange) {
  constexpr int kCount = 20000;
  auto g = testing::makeSingleNodeGraph("Sigmoid", {f32({kCount + 4})}, {});
  testing::JitKernel kernel = testing::compileKernel(*g->node);
  std::vector<float> x(kCount + 4), y(kCount + 4);
  for (int i = 0; i < kCount; ++i) x[i] = -87.0f + 175.0f * static_cast<float>(i) / kCount;
  const float inf = std::numeric_limits<float>::infinity();
  x[kCount] = std::numeric_limits<float>::quiet_NaN();
  x[kCount + 1] = inf;
  x[kCount + 2] = -inf;
  x[kCount + 3] = -1000.0f;
  void* buffers[2] = {x.data(), y.data()};
  nanort_kernel_args args{buffers, 2};
  kernel.fn(&args, 0, kernel.task_count);
  for (int i = 0; i < kCount; ++i) {
    const double ref = 1.0 / (1.0 + std::exp(-static_cast<double>(x[i])));
    EXPECT_NEAR(y[i], ref, 4.8e-7 * ref) << x[i];  // 4 ulp
  }
  EXPECT_TRUE(std::isnan(y[kCount]));
  EXPECT_EQ(y[kCount + 1], 1.0f);
  EXPECT_GE(y[kCount + 2], 0.0f);
  EXPECT_LE(y[kCount + 2], 2e-38f);
  EXPECT_LE(y[kCount + 3], 2e-38f);
}

// Exp is never subnormal: 0 below ln 2^-126 (-87.34), -inf and -3.4e38
// included (a masked logit), a normal float from there up (at most 2.5e-38
// down to -87.34); within 4 ulp of e^x where that is normal above -86.6.
TEST(ElementwiseLowering, ExpUnderflowsToZeroNeverSubnormal) {
  constexpr int kCount = 4000;
  auto g = testing::makeSingleNodeGraph("Exp", {f32({kCount + 3})}, {});
  testing::JitKernel kernel = testing::compileKernel(*g->node);
  std::vector<float> x(kCount + 3), y(kCount + 3);
  for (int i = 0; i < kCount; ++i) x[i] = -110.0f + 30.0f * static_cast<float>(i) / kCount;
  x[kCount] = -std::numeric_limits<float>::infinity();
  x[kCount + 1] = std::numeric_limits<float>::lowest();
  x[kCount + 2] = -1000.0f;
  void* buffers[2] = {x.data(), y.data()};
  nanort_kernel_args args{buffers, 2};
  kernel.fn(&args, 0, kernel.task_count);
  const float least_normal = std::numeric_limits<float>::min();
  for (int i = 0; i < kCount + 3; ++i) {
    EXPECT_TRUE(y[i] == 0.0f || y[i] >= least_normal) << x[i] << " -> " << y[i];
    if (x[i] < -87.3366f) EXPECT_EQ(y[i], 0.0f) << x[i];
    if (x[i] > -87.3364f) EXPECT_LE(y[i], 2.5e-38f + std::exp(static_cast<double>(x[i]))) << x[i];
    if (x[i] > -86.6f) {
      const double ref = std::exp(static_cast<double>(x[i]));
      EXPECT_NEAR(y[i], ref, 4.8e-7 * ref) << x[i];
    }
  }
}

// nanoc --denormals flush (kFlushDenormalsAttribute): inside the kernel a
// subnormal result is 0 (flush-to-zero) and a subnormal operand reads as 0
// (denormals-are-zero); normal values are untouched; the caller's MXCSR,
// a rounding mode of its own included, is as it was when the kernel
// returns (its exception flags aside). Without the attribute the same
// kernel keeps subnormals.
TEST(ElementwiseLowering, FlushDenormalsInsideTheKernelOnly) {
#if defined(__x86_64__) || defined(_M_X64)
  auto g = testing::makeSingleNodeGraph("Mul", {f32({3}), f32({3})}, {});
  const float tiny = 1e-40f;  // subnormal
  std::vector<float> a = {1e-20f, tiny, 3.0f}, b = {1e-20f, 1e30f, 2.0f};
  for (bool flush : {false, true}) {
    testing::KernelAttributes attrs;
    if (flush) attrs.push_back({kFlushDenormalsAttribute, "x86"});
    testing::JitKernel kernel = testing::compileKernel(*g->node, attrs);
    std::vector<float> y(3, -1.0f);
    void* buffers[3] = {a.data(), b.data(), y.data()};
    nanort_kernel_args args{buffers, 3};
    const unsigned before = _mm_getcsr();
    // Round toward zero (RC = 11): the caller's own mode, kept around the call.
    _mm_setcsr((before & ~0x6000u) | 0x6000u);
    kernel.fn(&args, 0, kernel.task_count);
    const unsigned after = _mm_getcsr();
    _mm_setcsr(before);
    // The control bits (6-15); 0-5 are sticky exception flags the
    // arithmetic may raise.
    EXPECT_EQ(after & 0xffc0u, ((before & ~0x6000u) | 0x6000u) & 0xffc0u) << "flush " << flush;
    EXPECT_EQ(y[2], 6.0f);
    if (flush) {
      EXPECT_EQ(y[0], 0.0f);  // 1e-40: flushed
      EXPECT_EQ(y[1], 0.0f);  // the subnormal operand read as 0
    } else {
      EXPECT_GT(y[0], 0.0f);
      EXPECT_LT(y[0], std::numeric_limits<float>::min());
      EXPECT_NEAR(y[1], 1e-10f, 1e-15f);
    }
  }
#else
  GTEST_SKIP() << "MXCSR is x86's; AArch64's FPCR is checked in lit (denormals_flush.nir)";
#endif
}

// nanoc.Elementwise (a fused chain) against its reference, which applies the
// steps' own references and rounds each to f32: GELU reading x twice with
// broadcast constants, an op's attribute (LeakyRelu's alpha), operands
// broadcasting along rows and columns, and Pow with a constant exponent (its
// emitter's special case) and a variable one.
TEST(FusedElementwiseLowering, ChainsMatchTheirReference) {
  using Attrs = std::map<std::string, Attr>;
  using Ints = std::vector<int64_t>;
  expectLoweringMatchesReference("nanoc.Elementwise", {f32({3, 5, 17}), f32({}), f32({}), f32({})},
                                 Attrs{{"ops", std::string("Div,Erf,Add,Mul,Mul")},
                                       {"arity", Ints{2, 1, 2, 2, 2}},
                                       {"operands", Ints{0, 1, -1, -2, 2, 0, -3, -4, 3}}},
                                 70);
  expectLoweringMatchesReference("nanoc.Elementwise", {f32({4, 6, 33}), f32({33}), f32({4, 1, 1})},
                                 Attrs{{"ops", std::string("Sub,LeakyRelu,Mul,Tanh")},
                                       {"arity", Ints{2, 1, 2, 1}},
                                       {"operands", Ints{0, 1, -1, -2, 2, -3}},
                                       {"s1.alpha", 0.125}},
                                 71);
  expectLoweringMatchesReference("nanoc.Elementwise", {f32({2, 40}), f32({2, 40})},
                                 Attrs{{"ops", std::string("Abs,Pow,Sqrt")},
                                       {"arity", Ints{1, 2, 1}},
                                       {"operands", Ints{0, -1, 1, -2}}},
                                 72, 0.5f, 2.0f);
  // Pow(x, 3) with the exponent a constant: the emitter's x * x * x.
  auto g = testing::makeSingleNodeGraph(
      "nanoc.Elementwise", {f32({5, 19}), f32({})},
      Attrs{
          {"ops", std::string("Pow,Add")}, {"arity", Ints{2, 2}}, {"operands", Ints{0, 1, -1, 0}}});
  std::mt19937_64 rng(73);
  std::vector<testing::AlignedBuffer> data;
  data.emplace_back(g->node->inputs[0]->type.bytes());
  testing::fillRandom(data.back(), g->node->inputs[0]->type, rng);
  data.emplace_back(sizeof(float));
  const float three = 3.0f;
  std::memcpy(data.back().data(), &three, sizeof three);
  g->node->inputs[1]->data =
      std::make_shared<std::vector<uint8_t>>(data.back().data(), data.back().data() + sizeof three);
  testing::expectLoweringMatchesReference(*g->node, data, "Pow(x, 3) + x");
}

TEST(FusedElementwiseLowering, MalformedProgramsAreRefused) {
  using Attrs = std::map<std::string, Attr>;
  using Ints = std::vector<int64_t>;
  auto build = [&](const std::string& ops, Ints arity, Ints operands,
                   std::vector<TensorType> inputs = {f32({4}), f32({4})}) {
    return testing::makeSingleNodeGraph(
        "nanoc.Elementwise", inputs,
        Attrs{{"ops", ops}, {"arity", std::move(arity)}, {"operands", std::move(operands)}});
  };
  EXPECT_NO_THROW(build("Add,Neg", {2, 1}, {0, 1, -1}));
  EXPECT_THROW(build("Add,Greater", {2, 2}, {0, 1, -1, 0}), CompileError);  // bool result
  EXPECT_THROW(build("Add,Cast", {2, 1}, {0, 1, -1}), CompileError);        // not f32 -> f32
  EXPECT_THROW(build("Add,Nope", {2, 1}, {0, 1, -1}), CompileError);        // unknown
  EXPECT_THROW(build("Neg,Add", {1, 2}, {-2, 0, -1}), CompileError);        // a later step
  EXPECT_THROW(build("Neg,Add", {1, 2}, {2, 0, -1}), CompileError);         // no input 2
  EXPECT_THROW(build("Neg,Add", {1, 3}, {0, 0, -1, 1}), CompileError);      // Add of 3
  EXPECT_THROW(build("Neg,Add", {1, 2}, {0, 0, -1, 1}), CompileError);      // left over
  EXPECT_THROW(build("Neg,Add", {1}, {0, 0, -1}), CompileError);            // arity count
  EXPECT_THROW(build("Neg", {1}, {0}, {f32({4}), TensorType{DType::F16, {4}}}), CompileError);
}

// Every row of the elementwise table, on every dtype its class accepts (one
// of each width and signedness), broadcasting a row against a matrix, with
// the attributes its mapping fills in.
TEST(ElementwiseLowering, EveryTableRowOnEveryDtypeItAccepts) {
  const std::vector<DType>& dtypes = testing::elementwiseTestDtypes();
  const auto& attrs = testing::elementwiseTestAttrs();
  uint64_t seed = 100;
  int checked = 0;
  for (const ElementwiseOp& op : elementwiseOps()) {
    for (DType dtype : dtypes) {
      std::vector<TensorType> inputs;
      for (int i = 0; i < op.min_inputs; ++i) {
        // A (4, 19) matrix, then a row and a scalar: three broadcast patterns.
        std::vector<int64_t> dims = i == 0   ? std::vector<int64_t>{4, 19}
                                    : i == 1 ? std::vector<int64_t>{19}
                                             : std::vector<int64_t>{};
        DType d = (i == 0 && op.mixed_operand0) ? DType::Bool : dtype;
        inputs.push_back({d, dims});
      }
      std::map<std::string, Attr> a;
      if (auto it = attrs.find(std::string(op.name)); it != attrs.end()) a = it->second;
      if (op.name == "Cast") {
        a["to"] = int64_t{static_cast<int64_t>(DType::I32)};
        a["saturate"] = int64_t{1};
      }
      try {
        testing::makeSingleNodeGraph(std::string(op.name), inputs, a);
      } catch (const CompileError&) {
        continue;  // a dtype this row does not accept
      }
      ++checked;
      // Clip's bounds are [-1, 1] so that clipping happens.
      float lo = op.name == "Pow" ? 0.5f : -3.0f, hi = 3.0f;
      expectLoweringMatchesReference(std::string(op.name), inputs, a, seed++, lo, hi);
    }
  }
  EXPECT_GT(checked, 200);
}

// Cast between every pair of dtypes, float8 and the sub-byte types included,
// on values that span each format's range: ties, subnormals, overflow,
// infinities and NaN, saturating and not; generated code and reference agree
// bit for bit.
TEST(ElementwiseLowering, CastBetweenEveryPairOfDtypes) {
  const std::vector<DType> dtypes = {
      DType::F32,      DType::F64,        DType::F16,    DType::BF16,      DType::I8,
      DType::I32,      DType::I64,        DType::U8,     DType::U64,       DType::Bool,
      DType::I4,       DType::U4,         DType::I2,     DType::U2,        DType::F4E2M1,
      DType::F8E4M3FN, DType::F8E4M3FNUZ, DType::F8E5M2, DType::F8E5M2FNUZ};
  const std::vector<double> values = {
      0.0,   -0.0, 1.0,   -1.5,   3.25,  17.0,    100.0,   -448.0, 464.0,    470.0,     1e5,
      -1e9,  2e-3, -1e-5, 0.0625, 240.0, 57344.0, 61440.0, NAN,    INFINITY, -INFINITY, 0.2734375,
      300.5, -7.5, 0.25,  0.75,   2.5,   -5.0,    5.5,     -9.0,   15.0,     -NAN};
  int checked = 0;
  for (DType from : dtypes)
    for (DType to : dtypes)
      for (int64_t saturate : {0, 1}) {
        auto g = testing::makeSingleNodeGraph(
            "Cast", {TensorType{from, {static_cast<int64_t>(values.size())}}},
            {{"to", int64_t{static_cast<int64_t>(to)}}, {"saturate", saturate}});
        testing::AlignedBuffer x(g->node->inputs[0]->type.bytes());
        for (size_t i = 0; i < values.size(); ++i)
          storeScalar(from, Scalar::ofFloat(values[i]), x.data(), static_cast<int64_t>(i));
        std::vector<testing::AlignedBuffer> in;
        in.push_back(std::move(x));
        testing::expectLoweringMatchesReference(*g->node, in,
                                                "Cast " + std::string(dtypeName(from)) + " -> " +
                                                    std::string(dtypeName(to)) + " saturate " +
                                                    std::to_string(saturate));
        ++checked;
      }
  EXPECT_EQ(checked, 19 * 19 * 2);
}

// Sub-byte elements read only their low bits: bytes with the high bits set
// (which a model never writes, but an input may hold) load as the code in
// the low bits, in generated code and reference alike.
TEST(ElementwiseLowering, SubByteLoadsReadTheLowBits) {
  for (DType from : {DType::I4, DType::U4, DType::I2, DType::U2, DType::F4E2M1})
    for (DType to : {DType::F32, DType::I32, DType::I4}) {
      auto g = testing::makeSingleNodeGraph("Cast", {TensorType{from, {256}}},
                                            {{"to", int64_t{static_cast<int64_t>(to)}}});
      testing::AlignedBuffer x(256);
      for (int i = 0; i < 256; ++i) x.data()[i] = static_cast<uint8_t>(i);
      std::vector<testing::AlignedBuffer> in;
      in.push_back(std::move(x));
      testing::expectLoweringMatchesReference(
          *g->node, in,
          "Cast " + std::string(dtypeName(from)) + " -> " + std::string(dtypeName(to)));
    }
}

// The sub-byte codecs against ml_dtypes' values (known codes).
TEST(SubByte, KnownCodes) {
  EXPECT_EQ(doubleToFloat4e2m1(0.25), 0x0);  // ties go to the even code
  EXPECT_EQ(doubleToFloat4e2m1(0.75), 0x2);
  EXPECT_EQ(doubleToFloat4e2m1(1.25), 0x2);
  EXPECT_EQ(doubleToFloat4e2m1(1.75), 0x4);
  EXPECT_EQ(doubleToFloat4e2m1(2.5), 0x4);
  EXPECT_EQ(doubleToFloat4e2m1(3.5), 0x6);
  EXPECT_EQ(doubleToFloat4e2m1(5.0), 0x6);
  EXPECT_EQ(doubleToFloat4e2m1(5.01), 0x7);
  EXPECT_EQ(doubleToFloat4e2m1(1e9), 0x7);  // saturates
  EXPECT_EQ(doubleToFloat4e2m1(-INFINITY), 0xf);
  EXPECT_EQ(doubleToFloat4e2m1(-3.5), 0xe);
  EXPECT_EQ(doubleToFloat4e2m1(-0.0), 0x8);
  EXPECT_EQ(doubleToFloat4e2m1(1e-7), 0x0);
  EXPECT_EQ(doubleToFloat4e2m1(NAN), 0x8);  // ml_dtypes: NaN -> -0, -NaN -> +0
  EXPECT_EQ(doubleToFloat4e2m1(-NAN), 0x0);
  EXPECT_EQ(float4e2m1ToDouble(0x1), 0.5);
  EXPECT_EQ(float4e2m1ToDouble(0x5), 3.0);
  EXPECT_EQ(float4e2m1ToDouble(0x7), 6.0);
  EXPECT_EQ(float4e2m1ToDouble(0xf), -6.0);
  EXPECT_EQ(float4e2m1ToDouble(0x19), -0.5);  // the high bits are not read
  EXPECT_TRUE(std::signbit(float4e2m1ToDouble(0x8)));

  EXPECT_EQ(subByteIntValue(0x0f, DType::I4), -1);  // ml_dtypes' int4 -1 is the byte 0x0f
  EXPECT_EQ(subByteIntValue(0x08, DType::I4), -8);
  EXPECT_EQ(subByteIntValue(0x07, DType::I4), 7);
  EXPECT_EQ(subByteIntValue(0xff, DType::I4), -1);
  EXPECT_EQ(subByteIntValue(0xff, DType::U4), 15);
  EXPECT_EQ(subByteIntValue(0x03, DType::I2), -1);
  EXPECT_EQ(subByteIntValue(0x02, DType::I2), -2);
  EXPECT_EQ(subByteIntValue(0x07, DType::U2), 3);
  EXPECT_EQ(subByteIntCode(-1, DType::I4), 0x0f);
  EXPECT_EQ(subByteIntCode(-9, DType::I4), 0x07);  // wraps
  EXPECT_EQ(subByteIntCode(16, DType::U4), 0x00);
  EXPECT_EQ(subByteIntCode(-1, DType::U2), 0x03);

  // Cast to a sub-byte int: truncate toward zero, then wrap (ONNX's test data).
  EXPECT_EQ(convertScalar(Scalar::ofFloat(-9.0), DType::I4).i, 7);
  EXPECT_EQ(convertScalar(Scalar::ofFloat(15.0), DType::I4).i, -1);
  EXPECT_EQ(convertScalar(Scalar::ofFloat(-9.0), DType::U4).u, 7u);
  EXPECT_EQ(convertScalar(Scalar::ofFloat(2.7), DType::I2).i, -2);
  EXPECT_EQ(convertScalar(Scalar::ofFloat(-3.0), DType::U2).u, 1u);
  EXPECT_EQ(convertScalar(Scalar::ofFloat(NAN), DType::I4).i, 0);
  EXPECT_EQ(convertScalar(Scalar::ofSigned(200), DType::I4).i, -8);
}

// The float8 codecs against ml_dtypes' values (known codes).
TEST(Float8, KnownCodes) {
  EXPECT_EQ(doubleToFloat8(448.0, DType::F8E4M3FN, true), 0x7e);
  EXPECT_EQ(doubleToFloat8(464.0, DType::F8E4M3FN, false), 0x7e);  // tie rounds to even (448)
  EXPECT_EQ(doubleToFloat8(470.0, DType::F8E4M3FN, false), 0x7f);  // NaN
  EXPECT_EQ(doubleToFloat8(-1e9, DType::F8E4M3FN, true), 0xfe);
  EXPECT_EQ(doubleToFloat8(1.0, DType::F8E4M3FN, true), 0x38);
  EXPECT_EQ(doubleToFloat8(-0.0, DType::F8E4M3FNUZ, true), 0x00);
  EXPECT_EQ(doubleToFloat8(INFINITY, DType::F8E5M2, false), 0x7c);
  EXPECT_EQ(doubleToFloat8(1.0, DType::F8E5M2, true), 0x3c);
  EXPECT_EQ(doubleToFloat8(NAN, DType::F8E5M2FNUZ, true), 0x80);
  EXPECT_EQ(float8ToDouble(0x01, DType::F8E4M3FN), std::ldexp(1.0, -9));
  EXPECT_EQ(float8ToDouble(0x7b, DType::F8E5M2), 57344.0);
  EXPECT_TRUE(std::isnan(float8ToDouble(0x80, DType::F8E4M3FNUZ)));
  EXPECT_TRUE(std::isinf(float8ToDouble(0xfc, DType::F8E5M2)));
}

// Mod and Div never trap on a zero divisor or MIN / -1: they give 0 and MIN.
TEST(ElementwiseLowering, IntegerDivisionByZeroGivesZero) {
  for (const char* op : {"Div", "Mod"}) {
    auto g = testing::makeSingleNodeGraph(
        op, {TensorType{DType::I32, {4}}, TensorType{DType::I32, {4}}}, {});
    g->node->attrs["fmod"] = int64_t{1};
    testing::JitKernel kernel = testing::compileKernel(*g->node);
    int32_t a[4] = {7, -7, INT32_MIN, 5};
    int32_t b[4] = {0, 0, -1, 2};
    int32_t y[4] = {};
    void* buffers[3] = {a, b, y};
    nanort_kernel_args args{buffers, 3};
    kernel.fn(&args, 0, kernel.task_count);
    EXPECT_EQ(y[0], 0) << op;
    EXPECT_EQ(y[1], 0) << op;
    EXPECT_EQ(y[2], std::string(op) == "Div" ? INT32_MIN : 0) << op;
    EXPECT_EQ(y[3], std::string(op) == "Div" ? 2 : 1) << op;
  }
}

// BitShift on signed ints (ONNX opset 28): arithmetic right shifts; shift
// amounts read as unsigned at or past the width (negative ones too) give 0, or
// -1 for a right shift of a negative value; left shifts wrap. Generated code
// and reference against ONNX's expected values, in i8 and i32.
TEST(ElementwiseLowering, SignedBitShiftFollowsOnnx) {
  const int8_t x[10] = {-8, 4, -1, -8, -1, -128, 64, 1, -64, 16};
  const int8_t s[10] = {8, 9, 127, -1, 1, 1, 1, 7, 1, 2};
  const int8_t right[10] = {-1, 0, -1, -1, -1, -64, 32, 0, -32, 4};
  const int8_t left[10] = {0, 0, 0, 0, -2, 0, -128, -128, -128, 64};
  for (DType dtype : {DType::I8, DType::I32})
    for (const char* dir : {"LEFT", "RIGHT"}) {
      TensorType t{dtype, {10}};
      auto g = testing::makeSingleNodeGraph("BitShift", {t, t}, {{"direction", std::string(dir)}});
      std::vector<testing::AlignedBuffer> in;
      for (const int8_t* src : {x, s}) {
        testing::AlignedBuffer b(t.bytes());
        for (int64_t i = 0; i < 10; ++i) storeScalar(dtype, Scalar::ofSigned(src[i]), b.data(), i);
        in.push_back(std::move(b));
      }
      testing::expectLoweringMatchesReference(*g->node, in, std::string("BitShift ") + dir);
      testing::JitKernel kernel = testing::compileKernel(*g->node);
      testing::AlignedBuffer y(t.bytes());
      void* buffers[3] = {in[0].data(), in[1].data(), y.data()};
      nanort_kernel_args args{buffers, 3};
      kernel.fn(&args, 0, kernel.task_count);
      const int8_t* want = std::string(dir) == "LEFT" ? left : right;
      for (int64_t i = 0; i < 10; ++i) {
        int64_t got = loadScalar(dtype, y.data(), i).i;
        // i32 keeps the bits an i8 left shift loses.
        int64_t expect = want[i];
        if (dtype == DType::I32 && std::string(dir) == "LEFT" && s[i] >= 0 && s[i] < 32)
          expect = static_cast<int32_t>(static_cast<uint32_t>(x[i]) << s[i]);
        EXPECT_EQ(got, expect) << dir << " " << dtypeName(dtype) << " " << int{x[i]} << " by "
                               << int{s[i]};
      }
    }
}

// ---- softmax, batch normalization, global average pool -------------------

TEST(SoftmaxLowering, EveryAxisOfRank2And3) {
  expectLoweringMatchesReference("Softmax", {f32({5, 33})}, {{"axis", int64_t{0}}}, 30);
  expectLoweringMatchesReference("Softmax", {f32({5, 33})}, {{"axis", int64_t{1}}}, 31);
  for (int64_t axis = 0; axis < 3; ++axis)
    expectLoweringMatchesReference("Softmax", {f32({3, 7, 300})}, {{"axis", axis}}, 32);
  expectLoweringMatchesReference("Softmax", {f32({1000})}, {{"axis", int64_t{0}}}, 33);
  expectLoweringMatchesReference("Softmax", {f32({2, 3, 4, 5})}, {{"axis", int64_t{3}}}, 34);
}

TEST(SoftmaxLowering, LargeLogitsDoNotOverflow) {
  expectLoweringMatchesReference("Softmax", {f32({4, 50})}, {{"axis", int64_t{1}}}, 35, -200, 200);
  expectLoweringMatchesReference("Softmax", {f32({40, 6})}, {{"axis", int64_t{0}}}, 36, -200, 200);
}

// A causal mask's logits (-inf, or -3.4e38 as exporters write it) give
// probabilities of exactly 0, as ONNX Runtime's, not subnormals (which cost
// a microcode assist in each product that reads them); the rest sum to 1.
TEST(SoftmaxLowering, MaskedLogitsGiveZeroNotSubnormal) {
  constexpr int kRows = 16, kCols = 64;
  for (int64_t axis : {int64_t{1}, int64_t{0}}) {
    const bool rows = axis == 1;
    auto g = testing::makeSingleNodeGraph(
        "Softmax",
        {f32(rows ? std::vector<int64_t>{kRows, kCols} : std::vector<int64_t>{kCols, kRows})},
        {{"axis", axis}});
    testing::JitKernel kernel = testing::compileKernel(*g->node);
    std::vector<float> x(kRows * kCols), y(kRows * kCols);
    std::mt19937_64 rng(40);
    std::uniform_real_distribution<float> logit(-2.0f, 2.0f);
    // Row r keeps its first r + 1 entries; the rest are masked.
    auto at = [&](int r, int c) { return rows ? r * kCols + c : c * kRows + r; };
    for (int r = 0; r < kRows; ++r)
      for (int c = 0; c < kCols; ++c)
        x[at(r, c)] = c <= r ? logit(rng)
                             : (c % 2 ? -std::numeric_limits<float>::infinity()
                                      : std::numeric_limits<float>::lowest());
    void* buffers[2] = {x.data(), y.data()};
    nanort_kernel_args args{buffers, 2};
    kernel.fn(&args, 0, kernel.task_count);
    for (int r = 0; r < kRows; ++r) {
      double sum = 0;
      for (int c = 0; c < kCols; ++c) {
        const float v = y[at(r, c)];
        if (c > r) EXPECT_EQ(v, 0.0f) << "axis " << axis << " row " << r << " col " << c;
        sum += v;
      }
      EXPECT_NEAR(sum, 1.0, 1e-5) << "axis " << axis << " row " << r;
    }
  }
}

TEST(SoftmaxLowering, ManyRowsSplitIntoSeveralTasks) {
  expectLoweringMatchesReference("Softmax", {f32({3000, 10})}, {{"axis", int64_t{1}}}, 37);
  expectLoweringMatchesReference("Softmax", {f32({300, 10, 100})}, {{"axis", int64_t{1}}}, 38);
}

// var must be >= 0, so the inputs are built by hand.
void expectBatchNormMatches(std::vector<int64_t> dims, uint64_t seed) {
  SCOPED_TRACE(f32(dims).str());
  TensorType channel = f32({dims[1]});
  auto g = testing::makeSingleNodeGraph(
      "BatchNormalization", {f32(dims), channel, channel, channel, channel}, {{"epsilon", 1e-5}});
  std::mt19937_64 rng(seed);
  std::vector<testing::AlignedBuffer> data;
  for (int i = 0; i < 5; ++i) {
    const TensorType& type = g->node->inputs[i]->type;
    data.emplace_back(type.bytes());
    if (i == 4)
      testing::fillRandom(data.back(), type, rng, 0.0f, 3.0f);
    else
      testing::fillRandom(data.back(), type, rng);
  }
  testing::expectLoweringMatchesReference(*g->node, data, "BatchNormalization");
}

TEST(BatchNormalizationLowering, MatchesReference) {
  expectBatchNormMatches({2, 3, 5, 7}, 40);
  expectBatchNormMatches({4, 16}, 41);  // no spatial axes
  expectBatchNormMatches({1, 8, 100}, 42);
  expectBatchNormMatches({2, 64, 30, 30}, 43);
  expectBatchNormMatches({3000, 7}, 44);
}

TEST(GlobalAveragePoolLowering, MatchesReference) {
  expectLoweringMatchesReference("GlobalAveragePool", {f32({2, 3, 5, 7})}, {}, 50);
  expectLoweringMatchesReference("GlobalAveragePool", {f32({1, 8, 100})}, {}, 51);
  expectLoweringMatchesReference("GlobalAveragePool", {f32({1, 1000, 7, 7})}, {}, 52);
  expectLoweringMatchesReference("GlobalAveragePool", {f32({2, 4, 200, 200})}, {}, 53);
  // Planes of fewer lanes than a vector, exactly one, several whole vectors
  // (the accumulators' step), and whole vectors past the last step plus a
  // partial one.
  for (int64_t plane : {3, 16, 64, 67, 265})
    expectLoweringMatchesReference("GlobalAveragePool", {f32({1, 5, plane})}, {}, 54);
}

// ---- transpose, concat ---------------------------------------------------

TEST(TransposeLowering, PermutationsOfRank2To4) {
  expectLoweringMatchesReference("Transpose", {f32({5, 9})}, {{"perm", std::vector<int64_t>{1, 0}}},
                                 60);
  expectLoweringMatchesReference("Transpose", {f32({5, 9})}, {{"perm", std::vector<int64_t>{0, 1}}},
                                 61);
  for (std::vector<int64_t> perm : {std::vector<int64_t>{0, 2, 1}, {2, 0, 1}, {1, 2, 0}, {2, 1, 0}})
    expectLoweringMatchesReference("Transpose", {f32({3, 4, 5})}, {{"perm", perm}}, 62);
  for (std::vector<int64_t> perm :
       {std::vector<int64_t>{0, 2, 3, 1}, {0, 3, 1, 2}, {3, 2, 1, 0}, {1, 0, 3, 2}})
    expectLoweringMatchesReference("Transpose", {f32({2, 3, 4, 5})}, {{"perm", perm}}, 63);
  // Size-1 dims between merged ones.
  expectLoweringMatchesReference("Transpose", {f32({2, 1, 6, 1, 3})},
                                 {{"perm", std::vector<int64_t>{4, 1, 0, 2, 3}}}, 64);
  expectLoweringMatchesReference("Transpose", {f32({300, 200})},
                                 {{"perm", std::vector<int64_t>{1, 0}}}, 65);
}

TEST(TransposeLowering, EveryElementSize) {
  for (DType dtype : {DType::U8, DType::F16, DType::I32, DType::I64, DType::Bool})
    expectLoweringMatchesReference("Transpose", {TensorType{dtype, {3, 4, 5}}},
                                   {{"perm", std::vector<int64_t>{2, 0, 1}}}, 66);
}

TEST(ConcatLowering, EveryAxis) {
  for (int64_t axis = 0; axis < 3; ++axis) {
    std::vector<int64_t> a = {2, 3, 4}, b = {2, 3, 4}, c = {2, 3, 4};
    b[axis] = 1;
    c[axis] = 5;
    expectLoweringMatchesReference("Concat", {f32(a), f32(b), f32(c)}, {{"axis", axis}}, 70);
  }
  expectLoweringMatchesReference("Concat", {f32({7})}, {{"axis", int64_t{0}}}, 71);
  expectLoweringMatchesReference("Concat", {f32({2, 0}), f32({2, 3})}, {{"axis", int64_t{1}}}, 72);
}

TEST(ConcatLowering, LargeRowsSplitAcrossTasks) {
  expectLoweringMatchesReference("Concat", {f32({30000}), f32({50001})}, {{"axis", int64_t{0}}},
                                 73);
  expectLoweringMatchesReference("Concat", {f32({3000, 5}), f32({3000, 7})}, {{"axis", int64_t{1}}},
                                 74);
}

TEST(ConcatLowering, EveryElementSize) {
  for (DType dtype : {DType::U8, DType::F16, DType::I32, DType::I64})
    expectLoweringMatchesReference("Concat", {TensorType{dtype, {2, 3}}, TensorType{dtype, {2, 5}}},
                                   {{"axis", int64_t{1}}}, 75);
}

// ---- target --------------------------------------------------------------

TEST(CpuTarget, HostFeaturesAreSortedUniqueAndNonEmpty) {
  CpuTarget host = hostTarget();
  EXPECT_FALSE(host.triple.empty());
  EXPECT_FALSE(host.cpu.empty());
  EXPECT_FALSE(host.data_layout.empty());
  ASSERT_FALSE(host.features.empty());
  EXPECT_TRUE(std::is_sorted(host.features.begin(), host.features.end()));
  EXPECT_EQ(std::adjacent_find(host.features.begin(), host.features.end()), host.features.end());
  for (const std::string& f : host.features) EXPECT_NE(f[0], '+') << f;
}

bool hasFeature(const CpuTarget& t, const std::string& name) {
  return std::find(t.features.begin(), t.features.end(), name) != t.features.end();
}

TEST(CpuTarget, MakesAnAarch64TargetWithTheCpusOwnFeatures) {
  CpuTarget t = makeTarget("aarch64-linux-gnu", "cortex-a76", "");
  EXPECT_EQ(t.triple, "aarch64-unknown-linux-gnu");
  EXPECT_EQ(t.cpu, "cortex-a76");
  // The record holds what the CPU implies, so the runtime can check it.
  EXPECT_TRUE(hasFeature(t, "neon"));
  EXPECT_TRUE(hasFeature(t, "dotprod"));
  EXPECT_FALSE(hasFeature(t, "sve"));
  EXPECT_NE(t.data_layout.find("e-"), std::string::npos);
  EXPECT_NE(createTargetMachine(t), nullptr);
}

TEST(CpuTarget, ExplicitFeaturesAddWhatTheyImplySortedAndUnique) {
  CpuTarget t = makeTarget("x86_64-linux-gnu", "x86-64", "+fma,avx2,+avx2");
  EXPECT_TRUE(hasFeature(t, "avx2"));
  EXPECT_TRUE(hasFeature(t, "fma"));
  EXPECT_TRUE(hasFeature(t, "avx"));     // implied by avx2
  EXPECT_TRUE(hasFeature(t, "sse4.2"));  // implied by avx
  EXPECT_FALSE(hasFeature(t, "avx512f"));
  EXPECT_TRUE(std::is_sorted(t.features.begin(), t.features.end()));
  EXPECT_EQ(std::adjacent_find(t.features.begin(), t.features.end()), t.features.end());
  EXPECT_EQ(t.featureString().rfind("+", 0), 0u);
}

TEST(CpuTarget, MinusRemovesAFeatureOfTheCpuAndWhatNeedsIt) {
  CpuTarget v3 = makeTarget("x86_64-linux-gnu", "x86-64-v3", "");
  ASSERT_TRUE(hasFeature(v3, "avx2"));
  CpuTarget t = makeTarget("x86_64-linux-gnu", "x86-64-v3", "-avx");
  EXPECT_FALSE(hasFeature(t, "avx"));
  EXPECT_FALSE(hasFeature(t, "avx2"));  // needs avx
  EXPECT_FALSE(hasFeature(t, "fma"));   // needs avx
  EXPECT_TRUE(hasFeature(t, "sse4.2"));
  // The code generator honours it: no 256-bit registers without AVX.
  auto machine = createTargetMachine(t);
  EXPECT_FALSE(machine->getMCSubtargetInfo()->checkFeatures("+avx"));
}

TEST(CpuTarget, UnknownFeatureListsTheValidOnes) {
  try {
    makeTarget("x86_64-linux-gnu", "x86-64", "+notafeature");
    FAIL() << "no error for an unknown feature";
  } catch (const CompileError& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("notafeature"), std::string::npos) << message;
    EXPECT_NE(message.find("avx2"), std::string::npos) << message;
  }
}

TEST(CpuTarget, UnknownCpuAndTripleAreErrors) {
  EXPECT_THROW(makeTarget("x86_64-linux-gnu", "pentium9000", ""), CompileError);
  EXPECT_THROW(makeTarget("mystery-unknown-none", "generic", ""), CompileError);
}

TEST(CpuTarget, Avx2AssemblyUsesVectorAdds) {
  auto g = testing::makeSingleNodeGraph("Add", {f32({1024}), f32({1024})}, {});
  llvm::LLVMContext ctx;
  auto module = testing::buildKernelModule(*g->node, ctx, "add");
  CpuTarget t = makeTarget("x86_64-linux-gnu", "x86-64", "+avx2");
  auto machine = createTargetMachine(t);
  optimizeModule(*module, *machine);
  std::string asm_text = emitAssembly(*module, *machine);
  EXPECT_NE(asm_text.find("vaddps"), std::string::npos) << asm_text;
  EXPECT_NE(asm_text.find("ymm"), std::string::npos) << asm_text;
}

TEST(CpuTarget, EmitsAnElfObject) {
  auto g = testing::makeSingleNodeGraph("Relu", {f32({64})}, {});
  llvm::LLVMContext ctx;
  auto module = testing::buildKernelModule(*g->node, ctx, "relu");
  auto machine = createTargetMachine(makeTarget("aarch64-linux-gnu", "generic", "+neon"));
  optimizeModule(*module, *machine);
  std::vector<uint8_t> object = emitObject(*module, *machine);
  ASSERT_GT(object.size(), 4u);
  EXPECT_EQ(std::string(object.begin(), object.begin() + 4),
            "\x7f"
            "ELF");
}

}  // namespace
}  // namespace nanoc::cpu
