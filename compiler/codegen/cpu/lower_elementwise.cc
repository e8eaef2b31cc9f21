// The elementwise ops of compiler/ops/elementwise_table.h: one scalar
// emitter per table row, found by the op's name, and one loop nest for all of
// them. Operands broadcast numpy-style over any rank: the output shape is
// collapsed to the fewest dims such that each operand is, per dim, either
// fully present or broadcast (stride 0), so the innermost loop is one
// unit-stride (or invariant) run that LLVM vectorizes.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "compiler/codegen/cpu/elementwise_scalar.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/math_functions.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ir/error.h"
#include "compiler/ops/elementwise_table.h"
#include "compiler/ops/fused_elementwise.h"

namespace nanoc::cpu {

BroadcastLayout collapseBroadcast(const Node& node) {
  const std::vector<int64_t>& out = node.outputs[0]->type.dims;
  size_t rank = out.size();
  size_t n = node.inputs.size();
  // broadcast[x][d]: operand x repeats along output dim d.
  std::vector<std::vector<bool>> broadcast(n, std::vector<bool>(rank));
  for (size_t x = 0; x < n; ++x) {
    const std::vector<int64_t>& in = node.inputs[x]->type.dims;
    if (in.size() > rank)
      throw CompileError("node '" + node.name + "' (" + node.op + "): input rank exceeds output");
    for (size_t d = 0; d < rank; ++d) {
      size_t pad = rank - in.size();
      int64_t dim = d < pad ? 1 : in[d - pad];
      if (dim != out[d] && dim != 1)
        throw CompileError("node '" + node.name + "' (" + node.op + "): input " +
                           std::to_string(x) + " " + node.inputs[x]->type.str() +
                           " does not broadcast to " + node.outputs[0]->type.str());
      broadcast[x][d] = dim == 1 && out[d] != 1;
    }
  }
  BroadcastLayout layout;
  std::vector<std::vector<bool>> flags(n);  // per collapsed dim
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;  // contributes nothing to any index
    bool same = !layout.dims.empty();
    for (size_t x = 0; x < n && same; ++x) same = flags[x].back() == broadcast[x][d];
    if (same) {
      layout.dims.back() *= out[d];
    } else {
      layout.dims.push_back(out[d]);
      for (size_t x = 0; x < n; ++x) flags[x].push_back(broadcast[x][d]);
    }
  }
  if (layout.dims.empty()) {
    layout.dims.push_back(1);
    for (size_t x = 0; x < n; ++x) flags[x].push_back(false);
  }
  size_t k = layout.dims.size();
  layout.strides.assign(n, std::vector<int64_t>(k, 0));
  for (size_t x = 0; x < n; ++x) {
    int64_t stride = 1;
    for (size_t d = k; d-- > 0;) {
      if (flags[x][d]) continue;
      layout.strides[x][d] = stride;
      stride *= layout.dims[d];
    }
  }
  return layout;
}

namespace {

RowTasks tasksFor(const BroadcastLayout& layout) {
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < layout.dims.size(); ++d) rows *= layout.dims[d];
  return splitRows(rows, layout.dims.back());
}

// What a scalar emitter sees: the operands, each already in the compute type
// of its dtype (loops.h: computeType), and the node for its attributes. It
// returns the result in computeType(out) (a bool may be returned as i1).
struct ScalarArgs {
  llvm::IRBuilder<>& b;
  const Node& node;
  std::vector<DType> in;  // operand dtypes
  DType out;
  std::vector<llvm::Value*> v;

  llvm::Type* type(size_t i = 0) const { return v[i]->getType(); }
  bool isF(size_t i = 0) const { return isFloat(in[i]); }
  bool isS(size_t i = 0) const { return isSigned(in[i]); }
  llvm::Value* k(double c, size_t i = 0) const {
    return type(i)->isFloatingPointTy() ? llvm::ConstantFP::get(type(i), c)
                                        : llvm::ConstantInt::get(type(i), static_cast<int64_t>(c));
  }
  llvm::Value* attrF(const char* key) const { return k(node.f(key)); }
};

using ScalarEmitter = llvm::Value* (*)(ScalarArgs&);

// Transcendental emitters are f32: an f64 operand is computed through f32
// (rounded once in, once out), accurate to f32 precision.
template <llvm::Value* (*Fn)(ScalarArgs&, llvm::Value*)>
llvm::Value* viaF32(ScalarArgs& a) {
  llvm::IRBuilder<>& b = a.b;
  llvm::Value* x = a.v[0];
  if (x->getType()->isDoubleTy()) {
    llvm::Value* r = Fn(a, b.CreateFPTrunc(x, b.getFloatTy()));
    return b.CreateFPExt(r, x->getType());
  }
  return Fn(a, x);
}

llvm::Value* kf(llvm::IRBuilder<>& b, llvm::Value* like, double c) {
  return llvm::ConstantFP::get(like->getType(), c);
}
llvm::Value* fabsOf(llvm::IRBuilder<>& b, llvm::Value* x) {
  return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
}
llvm::Value* clamp01(llvm::IRBuilder<>& b, llvm::Value* x) {
  x = b.CreateSelect(b.CreateFCmpOLT(x, kf(b, x, 0.0)), kf(b, x, 0.0), x);
  return b.CreateSelect(b.CreateFCmpOGT(x, kf(b, x, 1.0)), kf(b, x, 1.0), x);
}
llvm::Value* softplus(llvm::IRBuilder<>& b, llvm::Value* x) {
  // max(x, 0) + log(1 + e^-|x|): never overflows.
  llvm::Value* pos = b.CreateSelect(b.CreateFCmpOGT(x, kf(b, x, 0.0)), x, kf(b, x, 0.0));
  llvm::Value* e = emitExp(b, b.CreateFNeg(fabsOf(b, x)));
  return b.CreateFAdd(pos, emitLog(b, b.CreateFAdd(kf(b, x, 1.0), e)));
}
llvm::Value* asinOf(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Value* c = b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt,
                                          b.CreateFSub(kf(b, x, 1.0), b.CreateFMul(x, x)));
  return emitAtan(b, b.CreateFDiv(x, c));
}

#define NANOC_F32(NAME, EXPR)                             \
  llvm::Value* NAME##F32(ScalarArgs& a, llvm::Value* x) { \
    llvm::IRBuilder<>& b = a.b;                           \
    (void)a;                                              \
    return EXPR;                                          \
  }                                                       \
  llvm::Value* NAME(ScalarArgs& a) { return viaF32<NAME##F32>(a); }

NANOC_F32(eExp, emitExp(b, x))
NANOC_F32(eLog, emitLog(b, x))
NANOC_F32(eSin, emitSin(b, x))
NANOC_F32(eCos, emitCos(b, x))
NANOC_F32(eTan, b.CreateFDiv(emitSin(b, x), emitCos(b, x)))
NANOC_F32(eAtan, emitAtan(b, x))
NANOC_F32(eAsin, asinOf(b, x))
NANOC_F32(eAcos, b.CreateFSub(kf(b, x, M_PI / 2), asinOf(b, x)))
NANOC_F32(eSinh, [&] {
  llvm::Value* e = emitExp(b, x);
  llvm::Value* big = b.CreateFMul(b.CreateFSub(e, b.CreateFDiv(kf(b, x, 1.0), e)), kf(b, x, 0.5));
  // Near 0, e - 1/e cancels: x + x^3/6 + x^5/120 instead.
  llvm::Value* x2 = b.CreateFMul(x, x);
  llvm::Value* s = b.CreateFAdd(kf(b, x, 1.0 / 6), b.CreateFMul(x2, kf(b, x, 1.0 / 120)));
  s = b.CreateFAdd(x, b.CreateFMul(b.CreateFMul(x2, x), s));
  return b.CreateSelect(b.CreateFCmpOLT(fabsOf(b, x), kf(b, x, 0.25)), s, big);
}())
NANOC_F32(eCosh, [&] {
  llvm::Value* e = emitExp(b, fabsOf(b, x));
  return b.CreateFMul(b.CreateFAdd(e, b.CreateFDiv(kf(b, x, 1.0), e)), kf(b, x, 0.5));
}())
NANOC_F32(eAsinh, [&] {
  llvm::Value* ax = fabsOf(b, x);
  llvm::Value* r = emitLog(
      b,
      b.CreateFAdd(ax, b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt,
                                              b.CreateFAdd(b.CreateFMul(ax, ax), kf(b, x, 1.0)))));
  // Near 0, asinh(x) = x - x^3/6.
  llvm::Value* s =
      b.CreateFSub(x, b.CreateFMul(b.CreateFMul(b.CreateFMul(x, x), x), kf(b, x, 1.0 / 6)));
  r = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, r, x);
  return b.CreateSelect(b.CreateFCmpOLT(ax, kf(b, x, 0.01)), s, r);
}())
NANOC_F32(eAcosh, emitLog(b, b.CreateFAdd(x, b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt,
                                                                    b.CreateFSub(b.CreateFMul(x, x),
                                                                                 kf(b, x, 1.0))))))
NANOC_F32(eAtanh,
          b.CreateFMul(kf(b, x, 0.5), emitLog(b, b.CreateFDiv(b.CreateFAdd(kf(b, x, 1.0), x),
                                                              b.CreateFSub(kf(b, x, 1.0), x)))))
NANOC_F32(eErf, emitErf(b, x))
NANOC_F32(eSigmoid, emitSigmoid(b, x))
NANOC_F32(eTanh, emitTanh(b, x))
NANOC_F32(eSoftplus, softplus(b, x))
NANOC_F32(eSwish, b.CreateFMul(x, emitSigmoid(b, b.CreateFMul(kf(b, x, a.node.f("alpha")), x))))
NANOC_F32(eMish, b.CreateFMul(x, emitTanh(b, softplus(b, x))))
NANOC_F32(eElu, b.CreateSelect(b.CreateFCmpOLT(x, kf(b, x, 0.0)),
                               b.CreateFMul(kf(b, x, a.node.f("alpha")),
                                            b.CreateFSub(emitExp(b, x), kf(b, x, 1.0))),
                               x))
NANOC_F32(eCelu, [&] {
  double alpha = a.node.f("alpha");
  llvm::Value* e = b.CreateFMul(
      kf(b, x, alpha), b.CreateFSub(emitExp(b, b.CreateFDiv(x, kf(b, x, alpha))), kf(b, x, 1.0)));
  return b.CreateSelect(b.CreateFCmpOLT(x, kf(b, x, 0.0)), e, x);
}())
NANOC_F32(eSelu, [&] {
  llvm::Value* e =
      b.CreateFMul(kf(b, x, a.node.f("alpha")), b.CreateFSub(emitExp(b, x), kf(b, x, 1.0)));
  return b.CreateFMul(kf(b, x, a.node.f("gamma")),
                      b.CreateSelect(b.CreateFCmpOLE(x, kf(b, x, 0.0)), e, x));
}())
NANOC_F32(eGelu, [&] {
  if (a.node.i("approximate_tanh")) {
    llvm::Value* inner = b.CreateFMul(
        kf(b, x, std::sqrt(2.0 / M_PI)),
        b.CreateFAdd(x, b.CreateFMul(kf(b, x, 0.044715), b.CreateFMul(b.CreateFMul(x, x), x))));
    return b.CreateFMul(b.CreateFMul(kf(b, x, 0.5), x),
                        b.CreateFAdd(kf(b, x, 1.0), emitTanh(b, inner)));
  }
  llvm::Value* e = emitErf(b, b.CreateFMul(x, kf(b, x, M_SQRT1_2)));
  return b.CreateFMul(b.CreateFMul(kf(b, x, 0.5), x), b.CreateFAdd(kf(b, x, 1.0), e));
}())
#undef NANOC_F32

// Float-only rows that need no f32 detour.
llvm::Value* eSqrt(ScalarArgs& a) {
  return a.b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a.v[0]);
}
llvm::Value* eReciprocal(ScalarArgs& a) { return a.b.CreateFDiv(a.k(1.0), a.v[0]); }
llvm::Value* eFloor(ScalarArgs& a) {
  return a.b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, a.v[0]);
}
llvm::Value* eCeil(ScalarArgs& a) {
  return a.b.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, a.v[0]);
}
llvm::Value* eRound(ScalarArgs& a) {
  return a.b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, a.v[0]);
}
llvm::Value* eSoftsign(ScalarArgs& a) {
  llvm::IRBuilder<>& b = a.b;
  return b.CreateFDiv(a.v[0], b.CreateFAdd(a.k(1.0), fabsOf(b, a.v[0])));
}
llvm::Value* eHardSwish(ScalarArgs& a) {
  llvm::IRBuilder<>& b = a.b;
  llvm::Value* x = a.v[0];
  return b.CreateFMul(x, clamp01(b, b.CreateFAdd(b.CreateFMul(x, a.k(1.0 / 6)), a.k(0.5))));
}
llvm::Value* eHardSigmoid(ScalarArgs& a) {
  llvm::IRBuilder<>& b = a.b;
  return clamp01(b, b.CreateFAdd(b.CreateFMul(a.v[0], a.attrF("alpha")), a.attrF("beta")));
}
llvm::Value* eLeakyRelu(ScalarArgs& a) {
  llvm::IRBuilder<>& b = a.b;
  llvm::Value* x = a.v[0];
  return b.CreateSelect(b.CreateFCmpOLT(x, a.k(0.0)), b.CreateFMul(x, a.attrF("alpha")), x);
}
llvm::Value* eThresholdedRelu(ScalarArgs& a) {
  llvm::IRBuilder<>& b = a.b;
  llvm::Value* x = a.v[0];
  return b.CreateSelect(b.CreateFCmpOGT(x, a.attrF("alpha")), x, a.k(0.0));
}
llvm::Value* eShrink(ScalarArgs& a) {
  llvm::IRBuilder<>& b = a.b;
  llvm::Value* x = a.v[0];
  llvm::Value* lambd = a.attrF("lambd");
  llvm::Value* bias = a.attrF("bias");
  llvm::Value* hi = b.CreateSelect(b.CreateFCmpOGT(x, lambd), b.CreateFSub(x, bias), a.k(0.0));
  return b.CreateSelect(b.CreateFCmpOLT(x, b.CreateFNeg(lambd)), b.CreateFAdd(x, bias), hi);
}
llvm::Value* eIsNaN(ScalarArgs& a) { return a.b.CreateFCmpUNO(a.v[0], a.v[0]); }
llvm::Value* eIsInf(ScalarArgs& a) {
  llvm::IRBuilder<>& b = a.b;
  llvm::Value* x = a.v[0];
  const double inf = std::numeric_limits<double>::infinity();
  llvm::Value* pos = a.node.i("detect_positive") ? b.CreateFCmpOEQ(x, a.k(inf)) : b.getFalse();
  llvm::Value* neg = a.node.i("detect_negative") ? b.CreateFCmpOEQ(x, a.k(-inf)) : b.getFalse();
  return b.CreateOr(pos, neg);
}

// Rows for every numeric dtype.
llvm::Value* lessThan(ScalarArgs& a, llvm::Value* x, llvm::Value* y) {
  if (a.isF()) return a.b.CreateFCmpOLT(x, y);
  return a.isS() ? a.b.CreateICmpSLT(x, y) : a.b.CreateICmpULT(x, y);
}
llvm::Value* eRelu(ScalarArgs& a) {
  // x < 0 ? 0 : x, so NaN propagates as in the reference and ONNX Runtime.
  return a.b.CreateSelect(lessThan(a, a.v[0], a.k(0.0)), a.k(0.0), a.v[0]);
}
llvm::Value* eAbs(ScalarArgs& a) {
  llvm::IRBuilder<>& b = a.b;
  if (a.isF()) return fabsOf(b, a.v[0]);
  if (!a.isS()) return a.v[0];
  return b.CreateSelect(lessThan(a, a.v[0], a.k(0.0)), b.CreateNeg(a.v[0]), a.v[0]);
}
llvm::Value* eNeg(ScalarArgs& a) {
  return a.isF() ? a.b.CreateFNeg(a.v[0]) : a.b.CreateNeg(a.v[0]);
}
llvm::Value* eSign(ScalarArgs& a) {
  llvm::IRBuilder<>& b = a.b;
  llvm::Value* x = a.v[0];
  if (a.isF())
    return b.CreateSelect(b.CreateFCmpOGT(x, a.k(0.0)), a.k(1.0),
                          b.CreateSelect(b.CreateFCmpOLT(x, a.k(0.0)), a.k(-1.0), x));
  llvm::Value* gt = b.CreateZExt(
      a.isS() ? b.CreateICmpSGT(x, a.k(0.0)) : b.CreateICmpUGT(x, a.k(0.0)), x->getType());
  llvm::Value* lt = b.CreateZExt(lessThan(a, x, a.k(0.0)), x->getType());
  return b.CreateSub(gt, lt);
}
llvm::Value* eNot(ScalarArgs& a) { return a.b.CreateICmpEQ(a.v[0], a.k(0.0)); }
llvm::Value* eBitwiseNot(ScalarArgs& a) { return a.b.CreateNot(a.v[0]); }
llvm::Value* eCast(ScalarArgs& a) { return convertCompute(a.b, a.v[0], a.in[0], a.out); }

llvm::Value* eAdd(ScalarArgs& a) {
  return a.isF() ? a.b.CreateFAdd(a.v[0], a.v[1]) : a.b.CreateAdd(a.v[0], a.v[1]);
}
llvm::Value* eSub(ScalarArgs& a) {
  return a.isF() ? a.b.CreateFSub(a.v[0], a.v[1]) : a.b.CreateSub(a.v[0], a.v[1]);
}
llvm::Value* eMul(ScalarArgs& a) {
  return a.isF() ? a.b.CreateFMul(a.v[0], a.v[1]) : a.b.CreateMul(a.v[0], a.v[1]);
}
// Integer division and remainder never trap: a zero divisor (undefined in
// ONNX) gives 0, and MIN / -1 gives MIN (the reference does the same).
llvm::Value* safeDivisor(ScalarArgs& a, llvm::Value* x, llvm::Value* y, llvm::Value** bad) {
  llvm::IRBuilder<>& b = a.b;
  *bad = b.CreateICmpEQ(y, a.k(0.0));
  llvm::Value* overflow = b.getFalse();
  if (a.isS()) {
    unsigned bits = y->getType()->getIntegerBitWidth();
    overflow = b.CreateAnd(
        b.CreateICmpEQ(y, llvm::ConstantInt::get(y->getType(), -1, true)),
        b.CreateICmpEQ(x,
                       llvm::ConstantInt::get(y->getType(), llvm::APInt::getSignedMinValue(bits))));
  }
  return b.CreateSelect(b.CreateOr(*bad, overflow), a.k(1.0), y);
}
llvm::Value* eDiv(ScalarArgs& a) {
  llvm::IRBuilder<>& b = a.b;
  if (a.isF()) return b.CreateFDiv(a.v[0], a.v[1]);
  llvm::Value* zero;
  llvm::Value* y = safeDivisor(a, a.v[0], a.v[1], &zero);
  llvm::Value* q = a.isS() ? b.CreateSDiv(a.v[0], y) : b.CreateUDiv(a.v[0], y);
  return b.CreateSelect(zero, a.k(0.0), q);
}
llvm::Value* eMod(ScalarArgs& a) {
  llvm::IRBuilder<>& b = a.b;
  llvm::Value* x = a.v[0];
  if (a.isF()) {
    // fmod: x - trunc(x / y) y (frem would call libm's fmodf).
    llvm::Value* y = a.v[1];
    llvm::Value* q = b.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, b.CreateFDiv(x, y));
    llvm::Value* r = b.CreateFSub(x, b.CreateFMul(q, y));
    // fmod(x, +-inf) = x for finite x; the result has x's sign (also at 0).
    llvm::Value* y_inf = b.CreateFCmpOEQ(fabsOf(b, y), a.k(INFINITY));
    r = b.CreateSelect(b.CreateAnd(y_inf, b.CreateFCmpOLT(fabsOf(b, x), a.k(INFINITY))), x, r);
    r = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, r, x);
    if (a.node.i("fmod") != 0) return r;
    // fmod = 0: the sign of the divisor, as Python's % (numpy.mod).
    llvm::Value* zero = b.CreateFCmpOEQ(r, a.k(0.0));
    llvm::Value* fix = b.CreateAnd(
        b.CreateNot(zero), b.CreateXor(b.CreateFCmpOLT(r, a.k(0.0)), b.CreateFCmpOLT(y, a.k(0.0))));
    r = b.CreateSelect(fix, b.CreateFAdd(r, y), r);
    return b.CreateSelect(zero, b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, r, y), r);
  }
  llvm::Value* zero;
  llvm::Value* y = safeDivisor(a, x, a.v[1], &zero);
  if (!a.isS()) return b.CreateSelect(zero, a.k(0.0), b.CreateURem(x, y));
  llvm::Value* r = b.CreateSRem(x, y);
  if (a.node.i("fmod") == 0) {
    // Python's %: the result takes the divisor's sign.
    llvm::Value* fix =
        b.CreateAnd(b.CreateICmpNE(r, a.k(0.0)),
                    b.CreateICmpNE(b.CreateICmpSLT(r, a.k(0.0)), b.CreateICmpSLT(y, a.k(0.0))));
    r = b.CreateSelect(fix, b.CreateAdd(r, y), r);
  }
  return b.CreateSelect(zero, a.k(0.0), r);
}
llvm::Value* eMin(ScalarArgs& a) {
  llvm::IRBuilder<>& b = a.b;
  llvm::Value *x = a.v[0], *y = a.v[1];
  llvm::Value* m = b.CreateSelect(lessThan(a, y, x), y, x);
  if (!a.isF()) return m;
  return b.CreateSelect(b.CreateFCmpUNO(x, y), b.CreateFAdd(x, y), m);  // NaN propagates
}
llvm::Value* eMax(ScalarArgs& a) {
  llvm::IRBuilder<>& b = a.b;
  llvm::Value *x = a.v[0], *y = a.v[1];
  llvm::Value* m = b.CreateSelect(lessThan(a, x, y), y, x);
  if (!a.isF()) return m;
  return b.CreateSelect(b.CreateFCmpUNO(x, y), b.CreateFAdd(x, y), m);
}
llvm::Value* ePRelu(ScalarArgs& a) {
  llvm::IRBuilder<>& b = a.b;
  llvm::Value* scaled = a.isF() ? b.CreateFMul(a.v[0], a.v[1]) : b.CreateMul(a.v[0], a.v[1]);
  return b.CreateSelect(lessThan(a, a.v[0], a.k(0.0)), scaled, a.v[0]);
}
llvm::Value* eBitShift(ScalarArgs& a) {
  llvm::IRBuilder<>& b = a.b;
  unsigned bits = a.type()->getIntegerBitWidth();
  llvm::Value* s = a.v[1];
  // A shift amount read as unsigned at or past the width (every negative one)
  // gives 0, or the sign for a signed right shift: no poison shifts.
  llvm::Value* out = b.CreateICmpUGE(s, llvm::ConstantInt::get(a.type(), bits));
  if (a.node.s("direction") == "LEFT") return b.CreateSelect(out, a.k(0.0), b.CreateShl(a.v[0], s));
  if (a.isS())
    return b.CreateAShr(a.v[0], b.CreateSelect(out, llvm::ConstantInt::get(a.type(), bits - 1), s));
  return b.CreateSelect(out, a.k(0.0), b.CreateLShr(a.v[0], s));
}
llvm::Value* eAnd(ScalarArgs& a) { return a.b.CreateAnd(a.v[0], a.v[1]); }
llvm::Value* eOr(ScalarArgs& a) { return a.b.CreateOr(a.v[0], a.v[1]); }
llvm::Value* eXor(ScalarArgs& a) { return a.b.CreateXor(a.v[0], a.v[1]); }

llvm::Value* compareWith(ScalarArgs& a, llvm::CmpInst::Predicate f, llvm::CmpInst::Predicate s,
                         llvm::CmpInst::Predicate u) {
  llvm::IRBuilder<>& b = a.b;
  if (a.isF()) return b.CreateFCmp(f, a.v[0], a.v[1]);
  return b.CreateICmp(a.isS() ? s : u, a.v[0], a.v[1]);
}
llvm::Value* eEqual(ScalarArgs& a) {
  return compareWith(a, llvm::CmpInst::FCMP_OEQ, llvm::CmpInst::ICMP_EQ, llvm::CmpInst::ICMP_EQ);
}
llvm::Value* eLess(ScalarArgs& a) {
  return compareWith(a, llvm::CmpInst::FCMP_OLT, llvm::CmpInst::ICMP_SLT, llvm::CmpInst::ICMP_ULT);
}
llvm::Value* eLessOrEqual(ScalarArgs& a) {
  return compareWith(a, llvm::CmpInst::FCMP_OLE, llvm::CmpInst::ICMP_SLE, llvm::CmpInst::ICMP_ULE);
}
llvm::Value* eGreater(ScalarArgs& a) {
  return compareWith(a, llvm::CmpInst::FCMP_OGT, llvm::CmpInst::ICMP_SGT, llvm::CmpInst::ICMP_UGT);
}
llvm::Value* eGreaterOrEqual(ScalarArgs& a) {
  return compareWith(a, llvm::CmpInst::FCMP_OGE, llvm::CmpInst::ICMP_SGE, llvm::CmpInst::ICMP_UGE);
}
llvm::Value* eWhere(ScalarArgs& a) {
  return a.b.CreateSelect(a.b.CreateICmpNE(a.v[0], a.k(0.0)), a.v[1], a.v[2]);
}
llvm::Value* eClip(ScalarArgs& a) {
  llvm::IRBuilder<>& b = a.b;
  llvm::Value* x = b.CreateSelect(lessThan(a, a.v[0], a.v[1]), a.v[1], a.v[0]);
  return b.CreateSelect(lessThan(a, a.v[2], x), a.v[2], x);
}

// x^y with numpy's special cases; a constant exponent of 1, 2, 3, 0.5 or -1
// (LayerNorm decompositions, x^2 in variances) is spelled out exactly.
llvm::Value* powF32(ScalarArgs& a, llvm::Value* x, llvm::Value* y) {
  llvm::IRBuilder<>& b = a.b;
  auto k = [&](double c) { return kf(b, x, c); };
  llvm::Value* r = emitExp(b, b.CreateFMul(y, emitLog(b, fabsOf(b, x))));
  llvm::Value* y_int = b.CreateFCmpOEQ(b.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, y), y);
  llvm::Value* half = b.CreateFMul(y, k(0.5));
  llvm::Value* y_odd = b.CreateAnd(
      y_int, b.CreateFCmpUNE(b.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, half), half));
  llvm::Value* neg = b.CreateFCmpOLT(x, k(0.0));
  r = b.CreateSelect(b.CreateAnd(neg, y_odd), b.CreateFNeg(r), r);
  r = b.CreateSelect(b.CreateAnd(neg, b.CreateNot(y_int)), k(NAN), r);
  llvm::Value* x_zero = b.CreateFCmpOEQ(x, k(0.0));
  llvm::Value* at_zero = b.CreateSelect(b.CreateFCmpOLT(y, k(0.0)), k(INFINITY), k(0.0));
  r = b.CreateSelect(x_zero, at_zero, r);
  r = b.CreateSelect(b.CreateFCmpUNO(x, y), b.CreateFAdd(x, y), r);
  llvm::Value* one = b.CreateOr(b.CreateFCmpOEQ(y, k(0.0)), b.CreateFCmpOEQ(x, k(1.0)));
  return b.CreateSelect(one, k(1.0), r);
}
llvm::Value* ePow(ScalarArgs& a) {
  llvm::IRBuilder<>& b = a.b;
  const Value* exponent = a.node.inputs[1];
  if (a.isF() && exponent->isConstant() && exponent->type.numel() == 1) {
    double e = loadScalar(exponent->type.dtype, exponent->data->data(), 0).asDouble();
    llvm::Value* x = a.v[0];
    if (e == 1.0) return x;
    if (e == 2.0) return b.CreateFMul(x, x);
    if (e == 3.0) return b.CreateFMul(b.CreateFMul(x, x), x);
    if (e == 0.5) return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
    if (e == -1.0) return b.CreateFDiv(a.k(1.0), x);
  }
  // Through f32 for every dtype: an integer result is rounded to nearest.
  llvm::Value* x = convertCompute(b, a.v[0], a.in[0], DType::F32);
  llvm::Value* y = convertCompute(b, a.v[1], a.in[1], DType::F32);
  llvm::Value* r = powF32(a, x, y);
  if (a.isF()) return convertCompute(b, r, DType::F32, a.in[0]);
  r = b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, r);
  return convertCompute(b, r, DType::F32, a.in[0]);
}

const std::map<std::string_view, ScalarEmitter>& emitters() {
  static const std::map<std::string_view, ScalarEmitter> table = {
      {"Exp", eExp},
      {"Log", eLog},
      {"Sqrt", eSqrt},
      {"Reciprocal", eReciprocal},
      {"Sin", eSin},
      {"Cos", eCos},
      {"Tan", eTan},
      {"Asin", eAsin},
      {"Acos", eAcos},
      {"Atan", eAtan},
      {"Sinh", eSinh},
      {"Cosh", eCosh},
      {"Asinh", eAsinh},
      {"Acosh", eAcosh},
      {"Atanh", eAtanh},
      {"Erf", eErf},
      {"Sigmoid", eSigmoid},
      {"Tanh", eTanh},
      {"Softplus", eSoftplus},
      {"Softsign", eSoftsign},
      {"Floor", eFloor},
      {"Ceil", eCeil},
      {"Round", eRound},
      {"Mish", eMish},
      {"HardSwish", eHardSwish},
      {"Swish", eSwish},
      {"Shrink", eShrink},
      {"Elu", eElu},
      {"Celu", eCelu},
      {"Selu", eSelu},
      {"LeakyRelu", eLeakyRelu},
      {"ThresholdedRelu", eThresholdedRelu},
      {"HardSigmoid", eHardSigmoid},
      {"Gelu", eGelu},
      {"Relu", eRelu},
      {"Abs", eAbs},
      {"Neg", eNeg},
      {"Sign", eSign},
      {"IsNaN", eIsNaN},
      {"IsInf", eIsInf},
      {"Not", eNot},
      {"BitwiseNot", eBitwiseNot},
      {"Cast", eCast},
      {"Add", eAdd},
      {"Sub", eSub},
      {"Mul", eMul},
      {"Div", eDiv},
      {"Min", eMin},
      {"Max", eMax},
      {"Mod", eMod},
      {"PRelu", ePRelu},
      {"BitShift", eBitShift},
      {"BitwiseAnd", eAnd},
      {"BitwiseOr", eOr},
      {"BitwiseXor", eXor},
      {"And", eAnd},
      {"Or", eOr},
      {"Xor", eXor},
      {"Equal", eEqual},
      {"Less", eLess},
      {"LessOrEqual", eLessOrEqual},
      {"Greater", eGreater},
      {"GreaterOrEqual", eGreaterOrEqual},
      {"Pow", ePow},
      {"Where", eWhere},
      {"Clip", eClip},
  };
  return table;
}

// The loop nest of the table's ops and of nanoc.Elementwise: the output's
// collapsed broadcast layout in row tasks, each row's operand offsets from
// its index once, then body(at, out_at) per element, with each input's
// element index and the output's.
void emitBroadcastLoops(
    KernelBuilder& kb,
    const std::function<void(const std::vector<llvm::Value*>& at, llvm::Value* out_at)>& body) {
  BroadcastLayout layout = collapseBroadcast(kb.node);
  RowTasks tasks = tasksFor(layout);
  llvm::IRBuilder<>& b = kb.b;
  auto c = [&](int64_t v) { return b.getInt64(v); };
  const size_t k = layout.dims.size(), n = kb.node.inputs.size();
  emitRowTasks(kb, tasks, [&](llvm::Value* row, llvm::Value* col_begin, llvm::Value* col_end) {
    // Each operand's offset at the start of this row: the row index split
    // into the outer collapsed dims (divisions by constants).
    std::vector<llvm::Value*> base(n, c(0));
    llvm::Value* rest = row;
    for (size_t d = k - 1; d-- > 0;) {
      llvm::Value* idx = d == 0 ? rest : b.CreateURem(rest, c(layout.dims[d]));
      if (d > 0) rest = b.CreateUDiv(rest, c(layout.dims[d]));
      for (size_t x = 0; x < n; ++x)
        if (layout.strides[x][d])
          base[x] = b.CreateAdd(base[x], b.CreateMul(idx, c(layout.strides[x][d])));
    }
    llvm::Value* out_base = b.CreateMul(row, c(layout.dims.back()));
    emitLoop(
        b, col_begin, col_end,
        [&](llvm::Value* col) {
          std::vector<llvm::Value*> at;
          for (size_t x = 0; x < n; ++x)
            at.push_back(layout.strides[x][k - 1] ? b.CreateAdd(base[x], col) : base[x]);
          body(at, b.CreateAdd(out_base, col));
        },
        "col");
  });
  addOperandAliasScopes(kb);
}

uint64_t broadcastTaskCount(const Node& node) { return tasksFor(collapseBroadcast(node)).count(); }

Lowering makeElementwise(ScalarEmitter fn) {
  Lowering lowering;
  lowering.task_count = broadcastTaskCount;
  lowering.emit = [fn](KernelBuilder& kb) {
    llvm::IRBuilder<>& b = kb.b;
    const DType out = kb.node.outputs[0]->type.dtype;
    const bool saturate = !kb.node.has("saturate") || kb.node.i("saturate") != 0;
    emitBroadcastLoops(kb, [&](const std::vector<llvm::Value*>& at, llvm::Value* out_at) {
      ScalarArgs args{b, kb.node, {}, out, {}};
      for (size_t x = 0; x < at.size(); ++x) {
        DType dtype = kb.node.inputs[x]->type.dtype;
        args.in.push_back(dtype);
        args.v.push_back(loadCompute(b, dtype, kb.input(x), at[x]));
      }
      storeCompute(b, out, fn(args), kb.output(0), out_at, saturate);
    });
  };
  return lowering;
}

// nanoc.Elementwise (ops/fused_elementwise.h): the same loop nest over the
// fused node's inputs, the steps' emitters applied in order to values in
// registers, one store.
Lowering makeFusedElementwise() {
  Lowering lowering;
  lowering.task_count = broadcastTaskCount;
  lowering.emit = [](KernelBuilder& kb) {
    ElementwiseProgram program = decodeElementwise(kb.node, kb.node.outputs[0]->type);
    for (const ElementwiseProgram::Step& step : program.steps)
      if (!hasElementwiseScalar(step.op->name))
        throw CompileError("node '" + kb.node.name + "': no emitter for " +
                           std::string(step.op->name));
    llvm::IRBuilder<>& b = kb.b;
    emitBroadcastLoops(kb, [&](const std::vector<llvm::Value*>& at, llvm::Value* out_at) {
      std::vector<llvm::Value*> inputs;
      for (size_t x = 0; x < at.size(); ++x) inputs.push_back(loadF32(b, kb.input(x), at[x]));
      storeF32(b, emitFusedElementwiseScalar(b, kb.node, program, inputs), kb.output(0), out_at);
    });
  };
  return lowering;
}

}  // namespace

bool hasElementwiseScalar(std::string_view op) { return emitters().count(op) != 0; }

llvm::Value* emitElementwiseScalar(llvm::IRBuilder<>& b, const Node& node,
                                   const std::vector<DType>& in, DType out,
                                   const std::vector<llvm::Value*>& operands) {
  auto it = emitters().find(node.op);
  if (it == emitters().end())
    throw CompileError("node '" + node.name + "' (" + node.op + "): no elementwise scalar emitter");
  ScalarArgs args{b, node, in, out, operands};
  return it->second(args);
}

llvm::Value* emitFusedElementwiseScalar(llvm::IRBuilder<>& b, const Node& node,
                                        const ElementwiseProgram& program,
                                        const std::vector<llvm::Value*>& inputs) {
  std::vector<llvm::Value*> results;
  for (const ElementwiseProgram::Step& step : program.steps) {
    auto it = emitters().find(step.op->name);
    if (it == emitters().end())
      throw CompileError("node '" + node.name + "': no emitter for " + std::string(step.op->name));
    ScalarArgs args{b, *step.node, {}, DType::F32, {}};
    for (int64_t r : step.operands) {
      args.in.push_back(DType::F32);
      args.v.push_back(r >= 0 ? inputs[r] : results[-r - 1]);
    }
    results.push_back(it->second(args));
  }
  return results.back();
}

std::vector<std::pair<std::string, Lowering>> elementwiseTableLowerings() {
  std::vector<std::pair<std::string, Lowering>> lowerings;
  for (const ElementwiseOp& op : elementwiseOps()) {
    auto it = emitters().find(op.name);
    if (it == emitters().end())
      throw CompileError("elementwise op " + std::string(op.name) + " has no scalar emitter");
    lowerings.emplace_back(std::string(op.name), makeElementwise(it->second));
  }
  lowerings.emplace_back("nanoc.Elementwise", makeFusedElementwise());
  return lowerings;
}

}  // namespace nanoc::cpu
