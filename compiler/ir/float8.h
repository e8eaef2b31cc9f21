// ONNX's float8 types (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ): their formats, and
// the one definition of conversion to and from them that the references use
// and the code generator follows (round to nearest even; saturate or not, as
// Cast's `saturate` says).
#pragma once

#include <cstdint>

#include "compiler/ir/dtype.h"

namespace nanoc {

struct Float8Format {
  int man_bits;      // mantissa bits (3 or 2)
  int bias;          // exponent bias
  bool fnuz;         // no negative zero; 0x80 is the one NaN
  bool has_inf;      // E5M2 only: 0x7C is +inf
  uint8_t max_code;  // largest finite magnitude's code
  uint8_t nan_code;  // the NaN this conversion writes
  double max;        // largest finite magnitude
};

bool isFloat8(DType dtype);
const Float8Format& float8Format(DType dtype);  // dtype must be a float8 type
double float8ToDouble(uint8_t code, DType dtype);
// Rounds to nearest even on the format's grid; a magnitude that rounds past
// `max` (or an infinity) gives +-max when saturating, else inf (E5M2) or NaN.
uint8_t doubleToFloat8(double value, DType dtype, bool saturate);

}  // namespace nanoc
