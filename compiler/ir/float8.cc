#include "compiler/ir/float8.h"

#include <cmath>

namespace nanoc {

bool isFloat8(DType d) {
  return d == DType::F8E4M3FN || d == DType::F8E4M3FNUZ || d == DType::F8E5M2 ||
         d == DType::F8E5M2FNUZ;
}

const Float8Format& float8Format(DType dtype) {
  static const Float8Format kE4M3FN{3, 7, false, false, 0x7e, 0x7f, 448.0};
  static const Float8Format kE4M3FNUZ{3, 8, true, false, 0x7f, 0x80, 240.0};
  static const Float8Format kE5M2{2, 15, false, true, 0x7b, 0x7f, 57344.0};
  static const Float8Format kE5M2FNUZ{2, 16, true, false, 0x7f, 0x80, 57344.0};
  switch (dtype) {
    case DType::F8E4M3FNUZ:
      return kE4M3FNUZ;
    case DType::F8E5M2:
      return kE5M2;
    case DType::F8E5M2FNUZ:
      return kE5M2FNUZ;
    default:
      return kE4M3FN;
  }
}

double float8ToDouble(uint8_t code, DType dtype) {
  const Float8Format& f = float8Format(dtype);
  if (f.fnuz && code == 0x80) return NAN;
  const bool negative = code & 0x80;
  const int exp_bits = 7 - f.man_bits;
  const int exp = (code >> f.man_bits) & ((1 << exp_bits) - 1);
  const int man = code & ((1 << f.man_bits) - 1);
  double v;
  if (!f.fnuz && exp == (1 << exp_bits) - 1 && (f.has_inf || man == (1 << f.man_bits) - 1)) {
    // E5M2: the top exponent is inf (mantissa 0) or NaN; E4M3FN: only S.1111.111 is NaN.
    v = f.has_inf && man == 0 ? INFINITY : NAN;
  } else if (exp == 0) {
    v = std::ldexp(man, 1 - f.bias - f.man_bits);
  } else {
    v = std::ldexp((1 << f.man_bits) + man, exp - f.bias - f.man_bits);
  }
  return negative ? -v : v;
}

uint8_t doubleToFloat8(double value, DType dtype, bool saturate) {
  const Float8Format& f = float8Format(dtype);
  if (std::isnan(value)) return f.nan_code;
  const uint8_t sign = std::signbit(value) ? 0x80 : 0;
  const double a = std::fabs(value);
  auto overflow = [&]() -> uint8_t {
    if (saturate) return static_cast<uint8_t>(sign | f.max_code);
    return f.has_inf ? static_cast<uint8_t>(sign | 0x7c) : f.nan_code;
  };
  if (std::isinf(a)) return overflow();
  // Round on the grid of the format's precision, extended past its range so
  // that a value rounding above max is seen to overflow.
  const int min_exp = 1 - f.bias;
  int exp = a > 0 ? std::ilogb(a) : min_exp;
  if (exp < min_exp) exp = min_exp;
  const double q = std::nearbyint(std::ldexp(a, f.man_bits - exp));  // ties to even
  if (std::ldexp(q, exp - f.man_bits) > f.max) return overflow();
  // ((exp + bias - 1) << man_bits) + q covers subnormals (q < 2^man_bits at
  // min_exp), normals and the carry into the next exponent.
  const int code = ((exp + f.bias - 1) << f.man_bits) + static_cast<int>(q);
  if (code == 0) return f.fnuz ? 0 : sign;  // FNUZ has no negative zero
  return static_cast<uint8_t>(sign | code);
}

}  // namespace nanoc
