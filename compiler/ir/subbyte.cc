#include "compiler/ir/subbyte.h"

#include <cmath>

namespace nanoc {

bool isSubByte(DType d) { return isSubByteInt(d) || d == DType::F4E2M1; }

bool isSubByteInt(DType d) {
  return d == DType::I4 || d == DType::U4 || d == DType::I2 || d == DType::U2;
}

int subByteBits(DType d) {
  if (d == DType::I4 || d == DType::U4 || d == DType::F4E2M1) return 4;
  if (d == DType::I2 || d == DType::U2) return 2;
  return 0;
}

int64_t subByteIntValue(uint8_t byte, DType dtype) {
  const int bits = subByteBits(dtype);
  const int64_t code = byte & ((1 << bits) - 1);
  if (dtype == DType::I4 || dtype == DType::I2) return code - ((code >> (bits - 1)) << bits);
  return code;
}

uint8_t subByteIntCode(int64_t value, DType dtype) {
  return static_cast<uint8_t>(static_cast<uint64_t>(value) & ((1u << subByteBits(dtype)) - 1));
}

double float4e2m1ToDouble(uint8_t code) {
  static constexpr double kMagnitudes[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  const double v = kMagnitudes[code & 7];
  return code & 8 ? -v : v;
}

uint8_t doubleToFloat4e2m1(double value) {
  if (std::isnan(value)) return std::signbit(value) ? 0x0 : 0x8;
  const double a = std::fabs(value);
  // The code is the number of midpoints between neighbouring magnitudes that
  // `a` lies above; at a midpoint, above only when that rounds to the even
  // code (0.75, 1.75, 3.5 round up; 0.25, 1.25, 2.5, 5 down).
  const uint8_t code =
      (a > 0.25) + (a >= 0.75) + (a > 1.25) + (a >= 1.75) + (a > 2.5) + (a >= 3.5) + (a > 5.0);
  return static_cast<uint8_t>((std::signbit(value) ? 8 : 0) | code);
}

}  // namespace nanoc
