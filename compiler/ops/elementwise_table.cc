// The elementwise operators, one table row each (elementwise_table.h), and
// the one shape rule and reference that every row shares.
#include "compiler/ops/elementwise_table.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "compiler/ir/error.h"
#include "compiler/ir/float8.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ir/subbyte.h"
#include "compiler/ops/broadcast.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

bool isSignedDType(DType d) {
  return d == DType::I8 || d == DType::I16 || d == DType::I32 || d == DType::I64;
}
bool isUnsignedDType(DType d) {
  return !isFloatDType(d) && !isSignedDType(d) && !isFloat8(d) && !isSubByte(d);
}

double Scalar::asDouble() const {
  switch (kind) {
    case Float:
      return f;
    case Signed:
      return static_cast<double>(i);
    case Unsigned:
      return static_cast<double>(u);
  }
  return 0;
}

bool Scalar::truthy() const {
  switch (kind) {
    case Float:
      return f != 0;
    case Signed:
      return i != 0;
    case Unsigned:
      return u != 0;
  }
  return false;
}

namespace {

template <typename T>
T loadAs(const void* data, int64_t index) {
  T v;
  std::memcpy(&v, static_cast<const uint8_t*>(data) + index * static_cast<int64_t>(sizeof(T)),
              sizeof(T));
  return v;
}

template <typename T>
void storeAs(T v, void* data, int64_t index) {
  std::memcpy(static_cast<uint8_t*>(data) + index * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

}  // namespace

Scalar loadScalar(DType dtype, const void* data, int64_t index) {
  switch (dtype) {
    case DType::F32:
      return Scalar::ofFloat(loadAs<float>(data, index));
    case DType::F16:
      return Scalar::ofFloat(halfToFloat(loadAs<uint16_t>(data, index)));
    case DType::BF16:
      return Scalar::ofFloat(bf16ToFloat(loadAs<uint16_t>(data, index)));
    case DType::F64:
      return Scalar::ofFloat(loadAs<double>(data, index));
    case DType::I8:
      return Scalar::ofSigned(loadAs<int8_t>(data, index));
    case DType::I16:
      return Scalar::ofSigned(loadAs<int16_t>(data, index));
    case DType::I32:
      return Scalar::ofSigned(loadAs<int32_t>(data, index));
    case DType::I64:
      return Scalar::ofSigned(loadAs<int64_t>(data, index));
    case DType::U8:
      return Scalar::ofUnsigned(loadAs<uint8_t>(data, index));
    case DType::Bool:
      return Scalar::ofBool(loadAs<uint8_t>(data, index) != 0);
    case DType::U16:
      return Scalar::ofUnsigned(loadAs<uint16_t>(data, index));
    case DType::U32:
      return Scalar::ofUnsigned(loadAs<uint32_t>(data, index));
    case DType::U64:
      return Scalar::ofUnsigned(loadAs<uint64_t>(data, index));
    case DType::F8E4M3FN:
    case DType::F8E4M3FNUZ:
    case DType::F8E5M2:
    case DType::F8E5M2FNUZ:
      return Scalar::ofFloat(float8ToDouble(loadAs<uint8_t>(data, index), dtype));
    case DType::I4:
    case DType::I2:
      return Scalar::ofSigned(subByteIntValue(loadAs<uint8_t>(data, index), dtype));
    case DType::U4:
    case DType::U2:
      return Scalar::ofUnsigned(
          static_cast<uint64_t>(subByteIntValue(loadAs<uint8_t>(data, index), dtype)));
    case DType::F4E2M1:
      return Scalar::ofFloat(float4e2m1ToDouble(loadAs<uint8_t>(data, index)));
  }
  return {};
}

Scalar convertScalar(const Scalar& v, DType to) {
  if (to == DType::Bool) return Scalar::ofBool(v.truthy());
  if (isFloatDType(to) || isFloat8(to) || to == DType::F4E2M1) return Scalar::ofFloat(v.asDouble());
  if (isSubByteInt(to)) {
    // Float truncates toward zero, saturating to i64 (NaN gives 0), as the
    // generated code does; then every value wraps to the type's width (ONNX's
    // integer narrowing; ml_dtypes' float -> int4 wraps alike).
    int64_t wide = 0;
    if (v.kind == Scalar::Float)
      wide = v.f >= 9223372036854775808.0 ? INT64_MAX
             : std::isnan(v.f)
                 ? 0
                 : static_cast<int64_t>(std::trunc(std::fmax(v.f, -9223372036854775808.0)));
    else
      wide = v.kind == Scalar::Signed ? v.i : static_cast<int64_t>(v.u);
    int64_t value = subByteIntValue(subByteIntCode(wide, to), to);
    return to == DType::I4 || to == DType::I2 ? Scalar::ofSigned(value)
                                              : Scalar::ofUnsigned(static_cast<uint64_t>(value));
  }
  // Float to int truncates toward zero and saturates to the target's range
  // (NaN gives 0), as the generated code does; ONNX leaves out-of-range
  // values undefined.
  const int bits = static_cast<int>(dtypeSize(to)) * 8;
  auto fromFloat = [](double f, double lo, double hi) {
    if (std::isnan(f)) return 0.0;
    return std::trunc(std::fmin(std::fmax(f, lo), hi));
  };
  if (isSignedDType(to)) {
    if (v.kind == Scalar::Float) {
      if (bits == 64) {
        if (v.f >= 9223372036854775808.0) return Scalar::ofSigned(INT64_MAX);
        double f = fromFloat(v.f, -9223372036854775808.0, 9223372036854775807.0);
        return Scalar::ofSigned(static_cast<int64_t>(f));
      }
      double limit = std::ldexp(1.0, bits - 1);
      return Scalar::ofSigned(static_cast<int64_t>(fromFloat(v.f, -limit, limit - 1)));
    }
    return Scalar::ofSigned(v.kind == Scalar::Signed ? v.i : static_cast<int64_t>(v.u));
  }
  if (v.kind == Scalar::Float) {
    if (bits == 64) {
      if (v.f >= 18446744073709551616.0) return Scalar::ofUnsigned(UINT64_MAX);
      return Scalar::ofUnsigned(static_cast<uint64_t>(fromFloat(v.f, 0.0, 18446744073709551615.0)));
    }
    return Scalar::ofUnsigned(
        static_cast<uint64_t>(fromFloat(v.f, 0.0, std::ldexp(1.0, bits) - 1)));
  }
  return Scalar::ofUnsigned(v.kind == Scalar::Unsigned ? v.u : static_cast<uint64_t>(v.i));
}

void storeScalar(DType dtype, const Scalar& value, void* data, int64_t index, bool saturate) {
  Scalar v = convertScalar(value, dtype);
  switch (dtype) {
    case DType::F32:
      return storeAs(static_cast<float>(v.f), data, index);
    case DType::F16:
      return storeAs(floatToHalf(static_cast<float>(v.f)), data, index);
    case DType::BF16:
      return storeAs(floatToBf16(static_cast<float>(v.f)), data, index);
    case DType::F64:
      return storeAs(v.f, data, index);
    case DType::I8:
      return storeAs(static_cast<int8_t>(v.i), data, index);
    case DType::I16:
      return storeAs(static_cast<int16_t>(v.i), data, index);
    case DType::I32:
      return storeAs(static_cast<int32_t>(v.i), data, index);
    case DType::I64:
      return storeAs(v.i, data, index);
    case DType::U8:
    case DType::Bool:
      return storeAs(static_cast<uint8_t>(v.u), data, index);
    case DType::U16:
      return storeAs(static_cast<uint16_t>(v.u), data, index);
    case DType::U32:
      return storeAs(static_cast<uint32_t>(v.u), data, index);
    case DType::U64:
      return storeAs(v.u, data, index);
    case DType::F8E4M3FN:
    case DType::F8E4M3FNUZ:
    case DType::F8E5M2:
    case DType::F8E5M2FNUZ:
      // Through f32 first, as the generated code computes (double rounding
      // cannot change a result at float8's precision).
      return storeAs(doubleToFloat8(static_cast<float>(v.f), dtype, saturate), data, index);
    case DType::I4:
    case DType::I2:
      return storeAs(subByteIntCode(v.i, dtype), data, index);
    case DType::U4:
    case DType::U2:
      return storeAs(subByteIntCode(static_cast<int64_t>(v.u), dtype), data, index);
    case DType::F4E2M1:
      // Through f32 first, as the generated code computes.
      return storeAs(doubleToFloat4e2m1(static_cast<float>(v.f)), data, index);
  }
}

namespace {

using S = Scalar;

// Float-only unary rows: fn of the operand as double.
template <double (*Fn)(const Node&, double)>
S unaryF(const Node& node, const S* a) {
  return S::ofFloat(Fn(node, a[0].f));
}

#define NANOC_UNARY_F(NAME, EXPR)           \
  double NAME(const Node& node, double x) { \
    (void)node;                             \
    return EXPR;                            \
  }

NANOC_UNARY_F(fExp, std::exp(x))
NANOC_UNARY_F(fLog, std::log(x))
NANOC_UNARY_F(fSqrt, std::sqrt(x))
NANOC_UNARY_F(fReciprocal, 1.0 / x)
NANOC_UNARY_F(fSin, std::sin(x))
NANOC_UNARY_F(fCos, std::cos(x))
NANOC_UNARY_F(fTan, std::tan(x))
NANOC_UNARY_F(fAsin, std::asin(x))
NANOC_UNARY_F(fAcos, std::acos(x))
NANOC_UNARY_F(fAtan, std::atan(x))
NANOC_UNARY_F(fSinh, std::sinh(x))
NANOC_UNARY_F(fCosh, std::cosh(x))
NANOC_UNARY_F(fAsinh, std::asinh(x))
NANOC_UNARY_F(fAcosh, std::acosh(x))
NANOC_UNARY_F(fAtanh, std::atanh(x))
NANOC_UNARY_F(fErf, std::erf(x))
NANOC_UNARY_F(fSigmoid, 1.0 / (1.0 + std::exp(-x)))
NANOC_UNARY_F(fTanh, std::tanh(x))
NANOC_UNARY_F(fSoftplus, x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)))
NANOC_UNARY_F(fSoftsign, x / (1.0 + std::fabs(x)))
NANOC_UNARY_F(fFloor, std::floor(x))
NANOC_UNARY_F(fCeil, std::ceil(x))
NANOC_UNARY_F(fRound, std::nearbyint(x))  // the default rounding mode: ties to even
NANOC_UNARY_F(fMish, x* std::tanh(fSoftplus(node, x)))
NANOC_UNARY_F(fSwish, x / (1.0 + std::exp(-node.f("alpha") * x)))
NANOC_UNARY_F(fShrink, x<-node.f("lambd") ? x + node.f("bias") : x> node.f("lambd")
                           ? x - node.f("bias")
                           : 0.0)
NANOC_UNARY_F(fHardSwish, x* std::fmax(0.0, std::fmin(1.0, x / 6.0 + 0.5)))
NANOC_UNARY_F(fElu, x < 0 ? node.f("alpha") * (std::exp(x) - 1.0) : x)
NANOC_UNARY_F(fCelu, std::fmax(0.0, x) +
                         std::fmin(0.0, node.f("alpha") * (std::exp(x / node.f("alpha")) - 1.0)))
NANOC_UNARY_F(fSelu, node.f("gamma") * (x <= 0 ? node.f("alpha") * (std::exp(x) - 1.0) : x))
NANOC_UNARY_F(fLeakyRelu, x < 0 ? node.f("alpha") * x : x)
NANOC_UNARY_F(fThresholdedRelu, x > node.f("alpha") ? x : 0.0)
NANOC_UNARY_F(fHardSigmoid, std::fmax(0.0, std::fmin(1.0, node.f("alpha") * x + node.f("beta"))))
NANOC_UNARY_F(fGelu,
              node.i("approximate_tanh")
                  ? 0.5 * x*(1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)))
                  : 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))))
#undef NANOC_UNARY_F

S rRelu(const Node&, const S* a) {
  switch (a[0].kind) {
    case S::Float:
      return S::ofFloat(a[0].f < 0 ? 0.0 : a[0].f);
    case S::Signed:
      return S::ofSigned(a[0].i < 0 ? 0 : a[0].i);
    case S::Unsigned:
      return a[0];
  }
  return a[0];
}

S rAbs(const Node&, const S* a) {
  if (a[0].kind == S::Float) return S::ofFloat(std::fabs(a[0].f));
  if (a[0].kind == S::Signed) return S::ofSigned(a[0].i < 0 ? -a[0].i : a[0].i);
  return a[0];
}

S rNeg(const Node&, const S* a) {
  if (a[0].kind == S::Float) return S::ofFloat(-a[0].f);
  return S::ofSigned(static_cast<int64_t>(0ull - static_cast<uint64_t>(a[0].i)));
}

S rSign(const Node&, const S* a) {
  if (a[0].kind == S::Float)
    return S::ofFloat(std::isnan(a[0].f) ? a[0].f : (a[0].f > 0) - (a[0].f < 0));
  if (a[0].kind == S::Signed) return S::ofSigned((a[0].i > 0) - (a[0].i < 0));
  return S::ofUnsigned(a[0].u != 0);
}

S rIsNaN(const Node&, const S* a) { return S::ofBool(std::isnan(a[0].f)); }
S rIsInf(const Node& node, const S* a) {
  double x = a[0].f;
  return S::ofBool((x == INFINITY && node.i("detect_positive")) ||
                   (x == -INFINITY && node.i("detect_negative")));
}
S rNot(const Node&, const S* a) { return S::ofBool(!a[0].truthy()); }
S rBitwiseNot(const Node&, const S* a) {
  return a[0].kind == S::Signed ? S::ofSigned(~a[0].i) : S::ofUnsigned(~a[0].u);
}
S rIdentity(const Node&, const S* a) { return a[0]; }

// Binary arithmetic, by kind: ints wrap in 64 bits and are narrowed on store.
template <typename FF, typename FI, typename FU>
S arith(const S& a, const S& b, FF ff, FI fi, FU fu) {
  switch (a.kind) {
    case S::Float:
      return S::ofFloat(ff(a.f, b.f));
    case S::Signed:
      return S::ofSigned(fi(a.i, b.i));
    case S::Unsigned:
      return S::ofUnsigned(fu(a.u, b.u));
  }
  return a;
}

uint64_t wrap(int64_t v) { return static_cast<uint64_t>(v); }
int64_t unwrap(uint64_t v) { return static_cast<int64_t>(v); }

S rAdd(const Node&, const S* a) {
  return arith(
      a[0], a[1], [](double x, double y) { return x + y; },
      [](int64_t x, int64_t y) { return unwrap(wrap(x) + wrap(y)); },
      [](uint64_t x, uint64_t y) { return x + y; });
}
S rSub(const Node&, const S* a) {
  return arith(
      a[0], a[1], [](double x, double y) { return x - y; },
      [](int64_t x, int64_t y) { return unwrap(wrap(x) - wrap(y)); },
      [](uint64_t x, uint64_t y) { return x - y; });
}
S rMul(const Node&, const S* a) {
  return arith(
      a[0], a[1], [](double x, double y) { return x * y; },
      [](int64_t x, int64_t y) { return unwrap(wrap(x) * wrap(y)); },
      [](uint64_t x, uint64_t y) { return x * y; });
}
// Integer division truncates toward zero; a zero divisor (undefined in ONNX)
// gives 0 here and in the generated code, never a trap.
S rDiv(const Node&, const S* a) {
  return arith(
      a[0], a[1], [](double x, double y) { return x / y; },
      [](int64_t x, int64_t y) {
        if (y == 0 || (y == -1 && x == std::numeric_limits<int64_t>::min())) return y ? -x : 0;
        return x / y;
      },
      [](uint64_t x, uint64_t y) { return y ? x / y : 0; });
}
S rMin(const Node&, const S* a) {
  return arith(
      a[0], a[1],
      [](double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::fmin(x, y); },
      [](int64_t x, int64_t y) { return std::min(x, y); },
      [](uint64_t x, uint64_t y) { return std::min(x, y); });
}
S rMax(const Node&, const S* a) {
  return arith(
      a[0], a[1],
      [](double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::fmax(x, y); },
      [](int64_t x, int64_t y) { return std::max(x, y); },
      [](uint64_t x, uint64_t y) { return std::max(x, y); });
}
S rPRelu(const Node&, const S* a) {
  return arith(
      a[0], a[1], [](double x, double s) { return x < 0 ? x * s : x; },
      [](int64_t x, int64_t s) { return x < 0 ? x * s : x; },
      [](uint64_t x, uint64_t) { return x; });
}
// fmod = 1: C's fmod (the sign of the dividend); fmod = 0 (ints only): the
// sign of the divisor, as Python's %.
S rMod(const Node& node, const S* a) {
  bool c_style = node.i("fmod") != 0;
  return arith(
      a[0], a[1],
      [c_style](double x, double y) {
        double r = std::fmod(x, y);
        if (c_style) return r;
        if (r == 0) return std::copysign(0.0, y);
        return (r < 0) != (y < 0) ? r + y : r;
      },
      [c_style](int64_t x, int64_t y) {
        if (y == 0 || y == -1) return int64_t{0};
        int64_t r = x % y;
        if (!c_style && r != 0 && ((r < 0) != (y < 0))) r += y;
        return r;
      },
      [](uint64_t x, uint64_t y) { return y ? x % y : 0; });
}
S rPow(const Node&, const S* a) {
  if (a[0].kind == S::Float) return S::ofFloat(std::pow(a[0].f, a[1].asDouble()));
  if (a[1].kind == S::Float)
    return convertScalar(S::ofFloat(std::pow(a[0].asDouble(), a[1].f)),
                         a[0].kind == S::Signed ? DType::I64 : DType::U64);
  // Integer power by squaring; negative exponents give 0 unless |base| is 1.
  int64_t e = a[1].kind == S::Signed ? a[1].i : unwrap(a[1].u);
  uint64_t base = a[0].kind == S::Signed ? wrap(a[0].i) : a[0].u;
  if (e < 0) {
    if (a[0].kind == S::Signed && a[0].i == -1) return S::ofSigned(e % 2 ? -1 : 1);
    return a[0].kind == S::Signed ? S::ofSigned(base == 1) : S::ofUnsigned(base == 1);
  }
  uint64_t r = 1;
  for (uint64_t ue = static_cast<uint64_t>(e); ue; ue >>= 1, base *= base)
    if (ue & 1) r *= base;
  return a[0].kind == S::Signed ? S::ofSigned(unwrap(r)) : S::ofUnsigned(r);
}
// Signed operands (opset 28): a left shift wraps in the type's width; a right
// shift is arithmetic. A shift amount read as unsigned at or past the width
// (so every negative one) gives 0, or -1 for a right shift of a negative
// value. Widened to 64 bits, narrowing the result back gives the same.
S rBitShift(const Node& node, const S* a) {
  bool left = node.s("direction") == "LEFT";
  if (a[0].kind == S::Signed) {
    int64_t x = a[0].i, s = a[1].i;
    if (s < 0 || s >= 64) return S::ofSigned(left || x >= 0 ? 0 : -1);
    return S::ofSigned(left ? unwrap(wrap(x) << s) : x >> s);
  }
  uint64_t s = a[1].u;
  if (s >= 64) return S::ofUnsigned(0);
  return S::ofUnsigned(left ? a[0].u << s : a[0].u >> s);
}
S rBitwiseAnd(const Node&, const S* a) {
  return a[0].kind == S::Signed ? S::ofSigned(a[0].i & a[1].i) : S::ofUnsigned(a[0].u & a[1].u);
}
S rBitwiseOr(const Node&, const S* a) {
  return a[0].kind == S::Signed ? S::ofSigned(a[0].i | a[1].i) : S::ofUnsigned(a[0].u | a[1].u);
}
S rBitwiseXor(const Node&, const S* a) {
  return a[0].kind == S::Signed ? S::ofSigned(a[0].i ^ a[1].i) : S::ofUnsigned(a[0].u ^ a[1].u);
}
S rAnd(const Node&, const S* a) { return S::ofBool(a[0].truthy() && a[1].truthy()); }
S rOr(const Node&, const S* a) { return S::ofBool(a[0].truthy() || a[1].truthy()); }
S rXor(const Node&, const S* a) { return S::ofBool(a[0].truthy() != a[1].truthy()); }

// Comparisons: -1, 0, 1, or 2 when unordered (a NaN operand).
int compare(const S& a, const S& b) {
  switch (a.kind) {
    case S::Float:
      if (std::isnan(a.f) || std::isnan(b.f)) return 2;
      return (a.f > b.f) - (a.f < b.f);
    case S::Signed:
      return (a.i > b.i) - (a.i < b.i);
    case S::Unsigned:
      return (a.u > b.u) - (a.u < b.u);
  }
  return 2;
}
S rEqual(const Node&, const S* a) { return S::ofBool(compare(a[0], a[1]) == 0); }
S rLess(const Node&, const S* a) { return S::ofBool(compare(a[0], a[1]) == -1); }
S rLessOrEqual(const Node&, const S* a) {
  int c = compare(a[0], a[1]);
  return S::ofBool(c == -1 || c == 0);
}
S rGreater(const Node&, const S* a) { return S::ofBool(compare(a[0], a[1]) == 1); }
S rGreaterOrEqual(const Node&, const S* a) {
  int c = compare(a[0], a[1]);
  return S::ofBool(c == 1 || c == 0);
}
S rWhere(const Node&, const S* a) { return a[0].truthy() ? a[1] : a[2]; }
// Clip(x, min, max) = min(max(x, lo), hi); NaN x stays NaN.
S rClip(const Node&, const S* a) {
  S lo = a[1], hi = a[2], x = a[0];
  if (compare(x, lo) == -1) x = lo;
  if (compare(x, hi) == 1) x = hi;
  return x;
}

using R = ResultDType;
using C = DTypeClass;

std::vector<ElementwiseOp> makeTable() {
  std::vector<ElementwiseOp> t;
  auto unary = [&](std::string_view name, C accepts, S (*ref)(const Node&, const S*),
                   R result = R::SameAsInput) {
    ElementwiseOp op;
    op.name = name;
    op.accepts = accepts;
    op.result = result;
    op.reference = ref;
    t.push_back(op);
  };
  auto binary = [&](std::string_view name, C accepts, S (*ref)(const Node&, const S*),
                    R result = R::SameAsInput) {
    ElementwiseOp op;
    op.name = name;
    op.min_inputs = op.max_inputs = 2;
    op.accepts = accepts;
    op.result = result;
    op.reference = ref;
    t.push_back(op);
  };
  unary("Exp", C::Float, unaryF<fExp>);
  unary("Log", C::Float, unaryF<fLog>);
  unary("Sqrt", C::Float, unaryF<fSqrt>);
  unary("Reciprocal", C::Float, unaryF<fReciprocal>);
  unary("Sin", C::Float, unaryF<fSin>);
  unary("Cos", C::Float, unaryF<fCos>);
  unary("Tan", C::Float, unaryF<fTan>);
  unary("Asin", C::Float, unaryF<fAsin>);
  unary("Acos", C::Float, unaryF<fAcos>);
  unary("Atan", C::Float, unaryF<fAtan>);
  unary("Sinh", C::Float, unaryF<fSinh>);
  unary("Cosh", C::Float, unaryF<fCosh>);
  unary("Asinh", C::Float, unaryF<fAsinh>);
  unary("Acosh", C::Float, unaryF<fAcosh>);
  unary("Atanh", C::Float, unaryF<fAtanh>);
  unary("Erf", C::Float, unaryF<fErf>);
  unary("Sigmoid", C::Float, unaryF<fSigmoid>);
  unary("Tanh", C::Float, unaryF<fTanh>);
  unary("Softplus", C::Float, unaryF<fSoftplus>);
  unary("Softsign", C::Float, unaryF<fSoftsign>);
  unary("Floor", C::Float, unaryF<fFloor>);
  unary("Ceil", C::Float, unaryF<fCeil>);
  unary("Round", C::Float, unaryF<fRound>);
  unary("Mish", C::Float, unaryF<fMish>);
  unary("HardSwish", C::Float, unaryF<fHardSwish>);
  unary("Swish", C::Float, unaryF<fSwish>);
  unary("Shrink", C::Float, unaryF<fShrink>);
  unary("Elu", C::Float, unaryF<fElu>);
  unary("Celu", C::Float, unaryF<fCelu>);
  unary("Selu", C::Float, unaryF<fSelu>);
  unary("LeakyRelu", C::Float, unaryF<fLeakyRelu>);
  unary("ThresholdedRelu", C::Float, unaryF<fThresholdedRelu>);
  unary("HardSigmoid", C::Float, unaryF<fHardSigmoid>);
  unary("Gelu", C::Float, unaryF<fGelu>);
  unary("Relu", C::Signed, rRelu);
  unary("Abs", C::Numeric, rAbs);
  unary("Neg", C::Signed, rNeg);
  unary("Sign", C::Numeric, rSign);
  unary("IsNaN", C::Float, rIsNaN, R::Bool);
  unary("IsInf", C::Float, rIsInf, R::Bool);
  unary("Not", C::Bool, rNot);
  unary("BitwiseNot", C::Integer, rBitwiseNot);
  unary("Cast", C::Any, rIdentity, R::FromTo);
  binary("Add", C::Numeric, rAdd);
  binary("Sub", C::Numeric, rSub);
  binary("Mul", C::Numeric, rMul);
  binary("Div", C::Numeric, rDiv);
  binary("Min", C::Numeric, rMin);
  binary("Max", C::Numeric, rMax);
  binary("Mod", C::Numeric, rMod);
  binary("PRelu", C::Numeric, rPRelu);
  binary("BitShift", C::Integer, rBitShift);
  binary("BitwiseAnd", C::Integer, rBitwiseAnd);
  binary("BitwiseOr", C::Integer, rBitwiseOr);
  binary("BitwiseXor", C::Integer, rBitwiseXor);
  binary("And", C::Bool, rAnd);
  binary("Or", C::Bool, rOr);
  binary("Xor", C::Bool, rXor);
  binary("Equal", C::Any, rEqual, R::Bool);
  binary("Less", C::Numeric, rLess, R::Bool);
  binary("LessOrEqual", C::Numeric, rLessOrEqual, R::Bool);
  binary("Greater", C::Numeric, rGreater, R::Bool);
  binary("GreaterOrEqual", C::Numeric, rGreaterOrEqual, R::Bool);
  binary("Pow", C::Numeric, rPow);
  t.back().mixed_operand1 = true;
  {
    ElementwiseOp op;
    op.name = "Where";
    op.min_inputs = op.max_inputs = 3;
    op.accepts = C::Any;
    op.mixed_operand0 = true;
    op.same_as = 1;
    op.reference = rWhere;
    t.push_back(op);
  }
  {
    ElementwiseOp op;
    op.name = "Clip";
    op.min_inputs = op.max_inputs = 3;
    op.accepts = C::Numeric;
    op.reference = rClip;
    t.push_back(op);
  }
  return t;
}

bool accepts(DTypeClass c, DType d) {
  switch (c) {
    case C::Float:
      return isFloatDType(d);
    case C::Signed:
      return isFloatDType(d) || isSignedDType(d);
    case C::Numeric:
      return d != DType::Bool && !isFloat8(d) && !isSubByte(d);
    case C::Integer:
      return isSignedDType(d) || (isUnsignedDType(d) && d != DType::Bool);
    case C::Unsigned:
      return isUnsignedDType(d) && d != DType::Bool;
    case C::Bool:
      return d == DType::Bool;
    case C::Any:
      return true;
  }
  return false;
}

const char* className(DTypeClass c) {
  switch (c) {
    case C::Float:
      return "a float type (f16, bf16, f32, f64)";
    case C::Signed:
      return "a float or signed integer type";
    case C::Numeric:
      return "a numeric type";
    case C::Integer:
      return "an integer type";
    case C::Unsigned:
      return "an unsigned integer type";
    case C::Bool:
      return "bool";
    case C::Any:
      return "any type";
  }
  return "?";
}

DType resultDType(const ElementwiseOp& op, const Node& node) {
  switch (op.result) {
    case R::SameAsInput:
      return node.inputs[op.same_as]->type.dtype;
    case R::Bool:
      return DType::Bool;
    case R::FromTo: {
      int64_t to = node.i("to");
      if (to < 0 || to > static_cast<int64_t>(DType::F4E2M1))
        failNode(node, "attribute 'to' (" + std::to_string(to) + ") is not a dtype");
      return static_cast<DType>(to);
    }
  }
  return DType::F32;
}

std::vector<TensorType> inferElementwise(const ElementwiseOp& op, const Node& node) {
  std::vector<int64_t> dims = broadcastInputDims(node);
  const DType t = node.inputs[op.same_as]->type.dtype;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    DType d = node.inputs[i]->type.dtype;
    if (i == 0 && op.mixed_operand0) {
      if (d != DType::Bool)
        failNode(node, "the condition must be bool, not " + node.inputs[i]->type.str());
      continue;
    }
    if (i == 1 && op.mixed_operand1) {
      if (!accepts(op.accepts, d))
        failNode(node,
                 "operand 1 is " + node.inputs[i]->type.str() + ", not " + className(op.accepts));
      continue;
    }
    if (!accepts(op.accepts, d))
      failNode(node, "operand " + std::to_string(i) + " '" + node.inputs[i]->name + "' is " +
                         node.inputs[i]->type.str() + ", this op takes " + className(op.accepts));
    if (d != t)
      failNode(node, "operands have different dtypes: " + node.inputs[op.same_as]->type.str() +
                         " and " + node.inputs[i]->type.str());
  }
  return {{resultDType(op, node), dims}};
}

void referenceElementwise(const ElementwiseOp& op, const Node& node,
                          const std::vector<const void*>& in, const std::vector<void*>& out) {
  const DType out_dtype = node.outputs[0]->type.dtype;
  const bool saturate = !node.has("saturate") || node.i("saturate") != 0;
  std::vector<Scalar> args(node.inputs.size());
  forEachBroadcastElement(node, [&](int64_t i, const std::vector<int64_t>& offset) {
    for (size_t x = 0; x < args.size(); ++x)
      args[x] = loadScalar(node.inputs[x]->type.dtype, in[x], offset[x]);
    storeScalar(out_dtype, op.reference(node, args.data()), out[0], i, saturate);
  });
}

}  // namespace

std::vector<int64_t> broadcastInputDims(const Node& node) {
  std::vector<int64_t> dims;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const TensorType& t = inputType(node, i);
    try {
      dims = i == 0 ? t.dims : broadcastShapes(dims, t.dims);
    } catch (const CompileError& e) {
      failNode(node, e.what());
    }
  }
  return dims;
}

void forEachBroadcastElement(const Node& node,
                             const std::function<void(int64_t, const std::vector<int64_t>&)>& fn) {
  const std::vector<int64_t>& dims = node.outputs[0]->type.dims;
  const size_t n = node.inputs.size();
  std::vector<std::vector<int64_t>> strides(n);
  for (size_t x = 0; x < n; ++x) strides[x] = broadcastStrides(node.inputs[x]->type.dims, dims);
  const int64_t total = node.outputs[0]->type.numel();
  std::vector<int64_t> index(dims.size(), 0), offset(n, 0);
  for (int64_t i = 0; i < total; ++i) {
    fn(i, offset);
    // Odometer over the output index, carrying every operand's offset.
    for (size_t d = dims.size(); d-- > 0;) {
      for (size_t x = 0; x < n; ++x) offset[x] += strides[x][d];
      if (++index[d] < dims[d]) break;
      for (size_t x = 0; x < n; ++x) offset[x] -= strides[x][d] * dims[d];
      index[d] = 0;
    }
  }
}

const std::vector<ElementwiseOp>& elementwiseOps() {
  static const std::vector<ElementwiseOp> table = makeTable();
  return table;
}

const ElementwiseOp* findElementwise(std::string_view name) {
  for (const ElementwiseOp& op : elementwiseOps())
    if (op.name == name) return &op;
  return nullptr;
}

std::vector<OpSchema> elementwiseSchemas() {
  std::vector<OpSchema> schemas;
  for (const ElementwiseOp& row : elementwiseOps()) {
    const ElementwiseOp* op = &row;
    OpSchema schema;
    schema.name = std::string(op->name);
    schema.min_inputs = op->min_inputs;
    schema.max_inputs = op->max_inputs;
    schema.infer = [op](const Node& node) { return inferElementwise(*op, node); };
    schema.reference = [op](const Node& node, const std::vector<const void*>& in,
                            const std::vector<void*>& out) {
      referenceElementwise(*op, node, in, out);
    };
    schemas.push_back(std::move(schema));
  }
  return schemas;
}

}  // namespace nanoc
