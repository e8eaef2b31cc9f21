// ONNX's sub-byte types (INT4, UINT4, INT2, UINT2, FLOAT4E2M1): nanoc keeps
// them unpacked, one element a byte, as ml_dtypes and numpy hold them: the
// element's code in the low 4 or 2 bits (two's complement for the signed
// ints), the high bits zero. A load reads only the low bits; a store writes
// them and clears the rest. The one definition of their conversions, which the
// references use and the code generator follows.
#pragma once

#include <cstdint>

#include "compiler/ir/dtype.h"

namespace nanoc {

bool isSubByte(DType dtype);     // I4, U4, I2, U2, F4E2M1
bool isSubByteInt(DType dtype);  // I4, U4, I2, U2
int subByteBits(DType dtype);    // 4 or 2 (0 for any other dtype)

// The value of a sub-byte int's byte (high bits ignored), and the byte that
// holds `value` wrapped to the type's width (ONNX's integer narrowing:
// higher bits discarded, two's complement reinterpreted).
int64_t subByteIntValue(uint8_t byte, DType dtype);
uint8_t subByteIntCode(int64_t value, DType dtype);

// FLOAT4E2M1: 1 sign, 2 exponent (bias 1) and 1 mantissa bit, magnitudes
// 0, 0.5, 1, 1.5, 2, 3, 4, 6; no infinity, no NaN.
double float4e2m1ToDouble(uint8_t code);  // high bits ignored
// Rounds to nearest even and saturates to +-6 (infinities included). NaN, which
// the type cannot hold, gives a zero of the opposite sign (0x8 for a NaN
// whose sign bit is clear), as ml_dtypes and so ONNX's reference
// implementation and conformance data do (ONNX's float4 page says 6).
uint8_t doubleToFloat4e2m1(double value);

}  // namespace nanoc
