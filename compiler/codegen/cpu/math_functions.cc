#include "compiler/codegen/cpu/math_functions.h"

#include <limits>

namespace nanoc::cpu {
namespace {

llvm::Constant* splat(llvm::IRBuilder<>& b, llvm::Type* type, float v) {
  return llvm::ConstantFP::get(type, v);
}

llvm::Value* fmuladd(llvm::IRBuilder<>& b, llvm::Value* a, llvm::Value* m, llvm::Value* c) {
  return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {a->getType()}, {a, m, c});
}

}  // namespace

llvm::Value* emitExp(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* ft = x->getType();
  llvm::Type* it = ft->getWithNewType(b.getInt32Ty());
  auto k = [&](float v) { return splat(b, ft, v); };
  // Clamp so 2^(n-1) below is a normal float: n in [-125, 128].
  llvm::Value* xc = b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, k(-86.6f));
  xc = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, xc, k(88.72f));
  // x = n ln2 + r, |r| <= ln2/2; ln2 split in two (Cody-Waite) so n ln2 is exact.
  llvm::Value* n = b.CreateUnaryIntrinsic(llvm::Intrinsic::floor,
                                          fmuladd(b, xc, k(1.44269504088896341f), k(0.5f)));
  llvm::Value* r = fmuladd(b, n, k(-0.693359375f), xc);
  r = fmuladd(b, n, k(2.12194440e-4f), r);
  // Cephes expf minimax polynomial: e^r = 1 + r + r^2 p(r).
  llvm::Value* p = k(1.9875691500e-4f);
  for (float c :
       {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f})
    p = fmuladd(b, p, r, k(c));
  llvm::Value* r2 = b.CreateFMul(r, r);
  llvm::Value* er = b.CreateFAdd(fmuladd(b, p, r2, r), k(1.0f));
  // 2^(n-1) from its exponent bits, then times 2: 2^n itself would overflow
  // the exponent field at n = 128.
  llvm::Value* ni = b.CreateFPToSI(n, it);
  llvm::Value* bits = b.CreateShl(b.CreateAdd(ni, llvm::ConstantInt::get(it, 126)), 23);
  llvm::Value* scale = b.CreateBitCast(bits, ft);
  llvm::Value* result = b.CreateFMul(b.CreateFMul(er, scale), k(2.0f));
  result = b.CreateSelect(b.CreateFCmpOGT(x, k(88.72f)), k(std::numeric_limits<float>::infinity()),
                          result);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, result);
}

llvm::Value* emitSigmoid(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* ft = x->getType();
  llvm::Value* e = emitExp(b, b.CreateFNeg(x));
  return b.CreateFDiv(splat(b, ft, 1.0f), b.CreateFAdd(splat(b, ft, 1.0f), e));
}

llvm::Value* emitTanh(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* ft = x->getType();
  auto k = [&](float v) { return splat(b, ft, v); };
  llvm::Value* ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value* e = emitExp(b, b.CreateFMul(ax, k(-2.0f)));
  llvm::Value* t = b.CreateFDiv(b.CreateFSub(k(1.0f), e), b.CreateFAdd(k(1.0f), e));
  // Below 0.0625 the series x - x^3/3 + 2x^5/15 - 17x^7/315 is exact to f32
  // precision, where (1 - e) would lose up to 4 bits.
  llvm::Value* x2 = b.CreateFMul(ax, ax);
  llvm::Value* s = fmuladd(b, k(-17.0f / 315.0f), x2, k(2.0f / 15.0f));
  s = fmuladd(b, s, x2, k(-1.0f / 3.0f));
  s = fmuladd(b, b.CreateFMul(s, x2), ax, ax);
  t = b.CreateSelect(b.CreateFCmpOLT(ax, k(0.0625f)), s, t);
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, t, x);
}

}  // namespace nanoc::cpu
