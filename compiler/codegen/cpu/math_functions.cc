#include "compiler/codegen/cpu/math_functions.h"

#include <cstdint>
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

namespace {

// e^x clamped to [e^-86.6, e^88.72] (finite, normal), any result for a NaN x.
llvm::Value* emitExpClamped(llvm::IRBuilder<>& b, llvm::Value* x) {
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
  return b.CreateFMul(b.CreateFMul(er, scale), k(2.0f));
}

}  // namespace

llvm::Value* emitExp(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* ft = x->getType();
  llvm::Value* result = emitExpClamped(b, x);
  result = b.CreateSelect(b.CreateFCmpOGT(x, splat(b, ft, 88.72f)),
                          splat(b, ft, std::numeric_limits<float>::infinity()), result);
  // 0 where e^x is below the least normal float (x < ln 2^-126), -inf
  // included, rather than the clamp's 2.4e-38: a masked logit (-inf or
  // -3.4e38) then gives a softmax probability of 0, not 2.4e-38 / sum, a
  // subnormal that cost a microcode assist in every product that read it
  // (gpt2_block's attention: 2.4e-38 in half of P, 36 -> 11 ms on an AVX-512
  // Xeon).
  result =
      b.CreateSelect(b.CreateFCmpOLT(x, splat(b, ft, -87.3365448f)), splat(b, ft, 0.0f), result);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, result);
}

namespace {

// 1 + e^-x in few operations, as Sigmoid and SiLU run in conv epilogues
// where they can cost more than the product (15 vector ops):
// - the clamp is two compare-selects with x second, so a NaN x passes
//   through (x86's max/min return their second operand when unordered) and
//   NaN needs no select of its own;
// - m = round(x / ln2) by adding 1.5 * 2^23 (the sum's low mantissa bits
//   hold m, which gives 2^-m with one integer subtract and shift);
// - e^-r for r = x - m ln2 (Cody-Waite, |r| <= ln2 / 2) by Horner's rule on
//   a degree-5 polynomial fitted for least maximum relative error (9.6e-8
//   in exact arithmetic; e^0 = 1 exactly).
// Clamped to [-87, 88]: 2^-m stays a normal float for m in [-126, 126]
// and is 0 at m = 127 (x >= 87.7, where sigmoid rounds to 1 anyway); below
// -87 e^-x stays at e^87 rather than overflowing.
llvm::Value* emitOnePlusExpNeg(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* ft = x->getType();
  llvm::Type* it = ft->getWithNewType(b.getInt32Ty());
  auto k = [&](float v) { return splat(b, ft, v); };
  llvm::Value* xc = b.CreateSelect(b.CreateFCmpOLT(x, k(-87.0f)), k(-87.0f), x);
  xc = b.CreateSelect(b.CreateFCmpOGT(xc, k(88.0f)), k(88.0f), xc);
  const float magic = 12582912.0f;  // 1.5 * 2^23
  llvm::Value* t = fmuladd(b, xc, k(1.44269504088896341f), k(magic));
  llvm::Value* m = b.CreateFSub(t, k(magic));
  llvm::Value* r = fmuladd(b, m, k(-0.693359375f), xc);
  r = fmuladd(b, m, k(2.12194440e-4f), r);
  // e^-r = 1 + sum_k c_k (-r)^k.
  const float c[] = {1.0f,
                     0.9999996423721313f,
                     0.49999144673347473f,
                     0.16667814552783966f,
                     0.041898440569639206f,
                     0.008279531262814999f};
  llvm::Value* p = k(-c[5]);
  for (int i = 4; i >= 0; --i) p = fmuladd(b, p, r, k(i % 2 ? -c[i] : c[i]));
  // bits(t) = bits(magic) + m, so (127 - m) << 23 = (bits(magic) + 127 - bits(t)) << 23.
  const uint32_t magic_bits = 0x4B400000u;
  llvm::Value* biased =
      b.CreateSub(llvm::ConstantInt::get(it, magic_bits + 127u), b.CreateBitCast(t, it));
  llvm::Value* scale = b.CreateBitCast(b.CreateShl(biased, 23), ft);
  return fmuladd(b, p, scale, k(1.0f));
}

}  // namespace

// Measured against double over every float in [-90, 90]: at most 3.5 ulp
// (2.4e-7 relative).
llvm::Value* emitSigmoid(llvm::IRBuilder<>& b, llvm::Value* x) {
  return b.CreateFDiv(splat(b, x->getType(), 1.0f), emitOnePlusExpNeg(b, x));
}

llvm::Value* emitSiLU(llvm::IRBuilder<>& b, llvm::Value* x) {
  return b.CreateFDiv(x, emitOnePlusExpNeg(b, x));
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

llvm::Value* emitLog(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* ft = x->getType();
  llvm::Type* it = ft->getWithNewType(b.getInt32Ty());
  auto k = [&](float v) { return splat(b, ft, v); };
  auto ki = [&](int32_t v) { return llvm::ConstantInt::get(it, static_cast<uint64_t>(v), true); };
  // Subnormals: scale by 2^23 first so the exponent field is meaningful.
  llvm::Value* tiny = b.CreateFCmpOLT(x, k(1.17549435e-38f));
  llvm::Value* xs = b.CreateSelect(tiny, b.CreateFMul(x, k(8388608.0f)), x);
  llvm::Value* bits = b.CreateBitCast(xs, it);
  llvm::Value* e = b.CreateSub(b.CreateLShr(bits, 23), ki(126));
  e = b.CreateSub(e, b.CreateSelect(tiny, ki(23), ki(0)));
  // m in [0.5, 1).
  llvm::Value* m =
      b.CreateBitCast(b.CreateOr(b.CreateAnd(bits, ki(0x007fffff)), ki(0x3f000000)), ft);
  // Cephes logf: if m < sqrt(1/2), m = 2m - 1 and e -= 1, else m = m - 1.
  llvm::Value* small = b.CreateFCmpOLT(m, k(0.707106781186547524f));
  e = b.CreateSub(e, b.CreateSelect(small, ki(1), ki(0)));
  llvm::Value* f = b.CreateFSub(b.CreateSelect(small, b.CreateFAdd(m, m), m), k(1.0f));
  llvm::Value* ef = b.CreateSIToFP(e, ft);
  llvm::Value* z = b.CreateFMul(f, f);
  llvm::Value* p = k(7.0376836292e-2f);
  for (float c : {-1.1514610310e-1f, 1.1676998740e-1f, -1.2420140846e-1f, 1.4249322787e-1f,
                  -1.6668057665e-1f, 2.0000714765e-1f, -2.4999993993e-1f, 3.3333331174e-1f})
    p = fmuladd(b, p, f, k(c));
  llvm::Value* y = b.CreateFMul(b.CreateFMul(p, f), z);
  y = fmuladd(b, ef, k(-2.12194440e-4f), y);
  y = fmuladd(b, z, k(-0.5f), y);
  llvm::Value* r = b.CreateFAdd(f, y);
  r = fmuladd(b, ef, k(0.693359375f), r);
  const float inf = std::numeric_limits<float>::infinity();
  r = b.CreateSelect(b.CreateFCmpOEQ(x, k(inf)), k(inf), r);
  r = b.CreateSelect(b.CreateFCmpOEQ(x, k(0.0f)), k(-inf), r);
  r = b.CreateSelect(b.CreateFCmpOLT(x, k(0.0f)), k(std::numeric_limits<float>::quiet_NaN()), r);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, r);
}

llvm::Value* emitPowPositive(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y) {
  return emitExp(b, b.CreateFMul(y, emitLog(b, x)));
}

namespace {

// Reduces x to r in [-pi/4, pi/4] with x = j pi/4 + r, j even (Cephes).
// Returns r and j (as an integer vector/scalar).
std::pair<llvm::Value*, llvm::Value*> reduceQuarterPi(llvm::IRBuilder<>& b, llvm::Value* ax) {
  llvm::Type* ft = ax->getType();
  llvm::Type* it = ft->getWithNewType(b.getInt32Ty());
  auto k = [&](float v) { return splat(b, ft, v); };
  llvm::Value* j = b.CreateFPToSI(b.CreateFMul(ax, k(1.27323954473516f)), it);
  j = b.CreateAnd(b.CreateAdd(j, llvm::ConstantInt::get(it, 1)), llvm::ConstantInt::get(it, ~1u));
  llvm::Value* y = b.CreateSIToFP(j, ft);
  llvm::Value* r = fmuladd(b, y, k(-0.78515625f), ax);
  r = fmuladd(b, y, k(-2.4187564849853515625e-4f), r);
  r = fmuladd(b, y, k(-3.77489497744594108e-8f), r);
  return {r, j};
}

llvm::Value* sinPoly(llvm::IRBuilder<>& b, llvm::Value* r) {
  llvm::Type* ft = r->getType();
  auto k = [&](float v) { return splat(b, ft, v); };
  llvm::Value* z = b.CreateFMul(r, r);
  llvm::Value* p = fmuladd(b, k(-1.9515295891e-4f), z, k(8.3321608736e-3f));
  p = fmuladd(b, p, z, k(-1.6666654611e-1f));
  return fmuladd(b, b.CreateFMul(p, z), r, r);
}

llvm::Value* cosPoly(llvm::IRBuilder<>& b, llvm::Value* r) {
  llvm::Type* ft = r->getType();
  auto k = [&](float v) { return splat(b, ft, v); };
  llvm::Value* z = b.CreateFMul(r, r);
  llvm::Value* p = fmuladd(b, k(2.443315711809948e-5f), z, k(-1.388731625493765e-3f));
  p = fmuladd(b, p, z, k(4.166664568298827e-2f));
  return b.CreateFAdd(fmuladd(b, b.CreateFMul(p, z), z, b.CreateFMul(z, k(-0.5f))), k(1.0f));
}

llvm::Value* sinCos(llvm::IRBuilder<>& b, llvm::Value* x, bool cosine) {
  llvm::Type* ft = x->getType();
  llvm::Type* it = ft->getWithNewType(b.getInt32Ty());
  auto ki = [&](int32_t v) { return llvm::ConstantInt::get(it, static_cast<uint64_t>(v), true); };
  llvm::Value* ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  auto [r, j] = reduceQuarterPi(b, ax);
  // Octant j (even): j & 2 picks the other polynomial, j & 4 flips the sign;
  // cos(x) = sin(x + pi/2) shifts the octant by 2.
  if (cosine) j = b.CreateAdd(j, ki(2));
  llvm::Value* use_cos = b.CreateICmpNE(b.CreateAnd(j, ki(2)), ki(0));
  llvm::Value* v = b.CreateSelect(use_cos, cosPoly(b, r), sinPoly(b, r));
  llvm::Value* neg = b.CreateICmpNE(b.CreateAnd(j, ki(4)), ki(0));
  if (!cosine) neg = b.CreateXor(neg, b.CreateFCmpOLT(x, splat(b, ft, 0.0f)));
  v = b.CreateSelect(neg, b.CreateFNeg(v), v);
  // inf and NaN give NaN.
  llvm::Value* finite = b.CreateFCmpOLT(ax, splat(b, ft, std::numeric_limits<float>::infinity()));
  return b.CreateSelect(finite, v, splat(b, ft, std::numeric_limits<float>::quiet_NaN()));
}

}  // namespace

llvm::Value* emitSin(llvm::IRBuilder<>& b, llvm::Value* x) { return sinCos(b, x, false); }
llvm::Value* emitCos(llvm::IRBuilder<>& b, llvm::Value* x) { return sinCos(b, x, true); }

llvm::Value* emitAtan(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* ft = x->getType();
  auto k = [&](float v) { return splat(b, ft, v); };
  llvm::Value* ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  // Cephes atanf: reduce by tan(3pi/8) and tan(pi/8).
  llvm::Value* big = b.CreateFCmpOGT(ax, k(2.414213562373095f));
  llvm::Value* mid = b.CreateFCmpOGT(ax, k(0.4142135623730950f));
  llvm::Value* xr = b.CreateSelect(
      big, b.CreateFDiv(k(-1.0f), ax),
      b.CreateSelect(mid, b.CreateFDiv(b.CreateFSub(ax, k(1.0f)), b.CreateFAdd(ax, k(1.0f))), ax));
  llvm::Value* y0 = b.CreateSelect(big, k(1.5707963267948966f),
                                   b.CreateSelect(mid, k(0.7853981633974483f), k(0.0f)));
  llvm::Value* z = b.CreateFMul(xr, xr);
  llvm::Value* p = fmuladd(b, k(8.05374449538e-2f), z, k(-1.38776856032e-1f));
  p = fmuladd(b, p, z, k(1.99777106478e-1f));
  p = fmuladd(b, p, z, k(-3.33329491539e-1f));
  llvm::Value* y = b.CreateFAdd(y0, fmuladd(b, b.CreateFMul(p, z), xr, xr));
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, y, x);
}

llvm::Value* emitErf(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* ft = x->getType();
  auto k = [&](float v) { return splat(b, ft, v); };
  // Eigen's generic_fast_erf_float: erf(x) = x p(x^2) / q(x^2) on [-4, 4].
  llvm::Value* xc = b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, k(-4.0f));
  xc = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, xc, k(4.0f));
  llvm::Value* x2 = b.CreateFMul(xc, xc);
  llvm::Value* p = k(-2.72614225801306e-10f);
  for (float c : {2.77068142495902e-08f, -2.10102402082508e-06f, -5.69250639462346e-05f,
                  -7.34990630326855e-04f, -2.95459980854025e-03f, -1.60960333262415e-02f})
    p = fmuladd(b, p, x2, k(c));
  p = b.CreateFMul(p, xc);
  llvm::Value* q = k(-1.45660718464996e-05f);
  for (float c : {-2.13374055278905e-04f, -1.68282697438203e-03f, -7.37332916720468e-03f,
                  -1.42647390514189e-02f})
    q = fmuladd(b, q, x2, k(c));
  llvm::Value* r = b.CreateFDiv(p, q);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, r);
}

}  // namespace nanoc::cpu
