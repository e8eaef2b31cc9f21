#include "compiler/codegen/cpu/float_log_exp.h"

#include <cmath>
#include <limits>

#include "compiler/codegen/cpu/math_functions.h"

namespace nanoc::cpu {
namespace {

using llvm::Value;

bool isDouble(Value* v) { return v->getType()->getScalarType()->isDoubleTy(); }

Value* fconst(llvm::IRBuilder<>& b, Value* like, double v) {
  return llvm::ConstantFP::get(like->getType(), v);
}

}  // namespace

// ln(x) by x = m 2^e, m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s) with
// s = (m - 1) / (m + 1), |s| < 0.172: an odd series in s. NaN below 0 and
// for NaN, -inf at 0, +inf at +inf; subnormals are scaled first.
Value* emitLogAnyFloat(llvm::IRBuilder<>& b, Value* x) {
  bool dbl = isDouble(x);
  llvm::Type* ft = x->getType();
  llvm::Type* it = dbl ? b.getInt64Ty() : b.getInt32Ty();
  int mant = dbl ? 52 : 23;
  int64_t bias = dbl ? 1023 : 127;
  double min_normal = dbl ? std::numeric_limits<double>::min() : std::numeric_limits<float>::min();
  int scale_bits = dbl ? 54 : 25;
  Value* sub = b.CreateFCmpOLT(x, fconst(b, x, min_normal));
  Value* xs = b.CreateSelect(sub, b.CreateFMul(x, fconst(b, x, std::ldexp(1.0, scale_bits))), x);
  Value* bits = b.CreateBitCast(xs, it);
  Value* e = b.CreateSub(b.CreateLShr(bits, mant), llvm::ConstantInt::get(it, bias));
  e = b.CreateSub(e, b.CreateSelect(sub, llvm::ConstantInt::get(it, scale_bits),
                                    llvm::ConstantInt::get(it, 0)));
  uint64_t mant_mask = (uint64_t{1} << mant) - 1;
  Value* m =
      b.CreateBitCast(b.CreateOr(b.CreateAnd(bits, llvm::ConstantInt::get(it, mant_mask)),
                                 llvm::ConstantInt::get(it, static_cast<uint64_t>(bias) << mant)),
                      ft);  // [1, 2)
  Value* big = b.CreateFCmpOGT(m, fconst(b, x, 1.4142135623730951));
  m = b.CreateSelect(big, b.CreateFMul(m, fconst(b, x, 0.5)), m);
  e = b.CreateAdd(e, b.CreateZExt(big, it));
  Value* s = b.CreateFDiv(b.CreateFSub(m, fconst(b, x, 1.0)), b.CreateFAdd(m, fconst(b, x, 1.0)));
  Value* s2 = b.CreateFMul(s, s);
  int terms = dbl ? 11 : 5;
  Value* poly = fconst(b, x, 1.0 / (2 * terms + 1));
  for (int n = terms - 1; n >= 0; --n)
    poly = b.CreateFAdd(b.CreateFMul(poly, s2), fconst(b, x, 1.0 / (2 * n + 1)));
  Value* log_m = b.CreateFMul(fconst(b, x, 2.0), b.CreateFMul(s, poly));
  Value* ef = b.CreateSIToFP(e, ft);
  constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
  Value* r = b.CreateFAdd(b.CreateFMul(ef, fconst(b, x, kLn2Hi)),
                          b.CreateFAdd(b.CreateFMul(ef, fconst(b, x, kLn2Lo)), log_m));
  double inf = std::numeric_limits<double>::infinity();
  r = b.CreateSelect(b.CreateFCmpOEQ(x, fconst(b, x, 0.0)), fconst(b, x, -inf), r);
  r = b.CreateSelect(b.CreateFCmpOEQ(x, fconst(b, x, inf)), x, r);
  // x < 0 or NaN
  return b.CreateSelect(b.CreateFCmpUGE(x, fconst(b, x, 0.0)), r,
                        fconst(b, x, std::numeric_limits<double>::quiet_NaN()));
}

// e^x in f64: x = k ln2 + r, |r| <= ln2 / 2, e^r by its Taylor series to
// r^13, scaled by 2^k in two halves so subnormal and overflowing results come
// out right. f32 uses emitExp.
Value* emitExpAnyFloat(llvm::IRBuilder<>& b, Value* x) {
  if (!isDouble(x)) return emitExp(b, x);
  Value* xc = b.CreateSelect(b.CreateFCmpOGT(x, fconst(b, x, 710.0)), fconst(b, x, 710.0), x);
  xc = b.CreateSelect(b.CreateFCmpOLT(xc, fconst(b, x, -746.0)), fconst(b, x, -746.0), xc);
  Value* kf = b.CreateUnaryIntrinsic(llvm::Intrinsic::rint,
                                     b.CreateFMul(xc, fconst(b, x, 1.4426950408889634)));
  constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
  Value* r = b.CreateFSub(b.CreateFSub(xc, b.CreateFMul(kf, fconst(b, x, kLn2Hi))),
                          b.CreateFMul(kf, fconst(b, x, kLn2Lo)));
  double fact = 1;
  for (int n = 1; n <= 13; ++n) fact *= n;
  Value* p = fconst(b, x, 1.0 / fact);
  for (int n = 12; n >= 0; --n) {
    fact /= (n + 1);
    p = b.CreateFAdd(b.CreateFMul(p, r), fconst(b, x, 1.0 / fact));
  }
  Value* k = b.CreateFPToSI(kf, b.getInt64Ty());
  Value* k1 = b.CreateAShr(k, 1);
  Value* k2 = b.CreateSub(k, k1);
  auto pow2 = [&](Value* e) {
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, b.getInt64(1023)), 52), b.getDoubleTy());
  };
  Value* y = b.CreateFMul(b.CreateFMul(p, pow2(k1)), pow2(k2));
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, y);
}

}  // namespace nanoc::cpu
