#include "compiler/codegen/cpu/math_log.h"

#include <limits>

#include "compiler/codegen/cpu/math_functions.h"

namespace nanoc::cpu {

llvm::Value* emitLog(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* ft = x->getType();
  llvm::Type* it = ft->getWithNewType(b.getInt32Ty());
  auto k = [&](float v) { return llvm::ConstantFP::get(ft, v); };
  auto ki = [&](int32_t v) { return llvm::ConstantInt::get(it, v); };
  auto fma = [&](llvm::Value* a, llvm::Value* m, llvm::Value* c) {
    return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ft}, {a, m, c});
  };
  // Subnormals are scaled into the normal range first (2^25), their exponent
  // corrected below.
  llvm::Value* tiny = b.CreateFCmpOLT(x, k(std::numeric_limits<float>::min()));
  llvm::Value* xs = b.CreateSelect(tiny, b.CreateFMul(x, k(33554432.0f)), x);
  // x = m 2^e with m in [0.5, 1), from the bits.
  llvm::Value* bits = b.CreateBitCast(xs, it);
  llvm::Value* e = b.CreateSub(b.CreateAnd(b.CreateLShr(bits, 23), ki(0xff)), ki(126));
  e = b.CreateSub(e, b.CreateSelect(tiny, ki(25), ki(0)));
  llvm::Value* m =
      b.CreateBitCast(b.CreateOr(b.CreateAnd(bits, ki(0x807fffff)), ki(0x3f000000)), ft);
  // Cephes logf: fold m into [sqrt(1/2), sqrt(2)) and take r = m - 1.
  llvm::Value* low = b.CreateFCmpOLT(m, k(0.707106781186547524f));
  e = b.CreateSub(e, b.CreateSelect(low, ki(1), ki(0)));
  llvm::Value* r = b.CreateFSub(b.CreateSelect(low, b.CreateFAdd(m, m), m), k(1.0f));
  llvm::Value* fe = b.CreateSIToFP(e, ft);
  llvm::Value* z = b.CreateFMul(r, r);
  llvm::Value* p = k(7.0376836292e-2f);
  for (float c : {-1.1514610310e-1f, 1.1676998740e-1f, -1.2420140846e-1f, 1.4249322787e-1f,
                  -1.6668057665e-1f, 2.0000714765e-1f, -2.4999993993e-1f, 3.3333331174e-1f})
    p = fma(p, r, k(c));
  llvm::Value* y = b.CreateFMul(b.CreateFMul(p, r), z);
  y = fma(fe, k(-2.12194440e-4f), y);
  y = fma(z, k(-0.5f), y);
  llvm::Value* result = fma(fe, k(0.693359375f), b.CreateFAdd(r, y));
  // Edge cases: 0 -> -inf, x < 0 or NaN -> NaN, +inf -> +inf.
  result = b.CreateSelect(b.CreateFCmpOEQ(x, k(0.0f)), k(-std::numeric_limits<float>::infinity()),
                          result);
  result = b.CreateSelect(b.CreateFCmpOEQ(x, k(std::numeric_limits<float>::infinity())), x, result);
  return b.CreateSelect(b.CreateFCmpULT(x, k(0.0f)), k(std::numeric_limits<float>::quiet_NaN()),
                        result);
}

llvm::Value* emitPowPositive(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y) {
  return emitExp(b, b.CreateFMul(y, emitLog(b, x)));
}

}  // namespace nanoc::cpu
