// Host access to the elements of a floating-point buffer of any float dtype
// (f32, f64, f16, bf16) as double, for the references of ops that accept
// half-precision tensors. Narrowing rounds to nearest even, like the
// lowerings' stores.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "compiler/ir/dtype.h"

namespace nanoc {

inline bool isFloatDType(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16;
}

inline float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float f;
  if (exp == 0x1f) {
    uint32_t bits = sign | 0x7f800000 | (mant << 13);
    std::memcpy(&f, &bits, 4);
    return f;
  }
  f = exp == 0 ? std::ldexp(static_cast<float>(mant), -24)
               : std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  return sign ? -f : f;
}

inline uint16_t floatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  float a = std::fabs(f);
  if (std::isnan(f)) return static_cast<uint16_t>(sign | 0x7e00);
  if (a >= 65520.0f) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to inf
  if (a < 6.103515625e-05f) {  // subnormal: multiples of 2^-24, nearest even
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f)));
  }
  int e;
  float m = std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
  // 11 significant bits: mantissa = m 2^11, rounded to nearest even.
  auto mant = static_cast<uint32_t>(std::nearbyint(std::ldexp(m, 11)));
  if (mant == 2048) {
    mant = 1024;
    ++e;
  }
  uint32_t exp = static_cast<uint32_t>(e + 14);
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  return static_cast<uint16_t>(sign | (exp << 10) | (mant & 0x3ff));
}

inline float bf16ToFloat(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t floatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

// Element i of a float buffer of dtype t.
inline double loadFloat(DType t, const void* p, int64_t i) {
  switch (t) {
    case DType::F64:
      return static_cast<const double*>(p)[i];
    case DType::F16:
      return halfToFloat(static_cast<const uint16_t*>(p)[i]);
    case DType::BF16:
      return bf16ToFloat(static_cast<const uint16_t*>(p)[i]);
    default:
      return static_cast<const float*>(p)[i];
  }
}

// Stores v into element i, rounded to t (through f32 for f16 and bf16).
inline void storeFloat(DType t, void* p, int64_t i, double v) {
  switch (t) {
    case DType::F64:
      static_cast<double*>(p)[i] = v;
      break;
    case DType::F16:
      static_cast<uint16_t*>(p)[i] = floatToHalf(static_cast<float>(v));
      break;
    case DType::BF16:
      static_cast<uint16_t*>(p)[i] = floatToBf16(static_cast<float>(v));
      break;
    default:
      static_cast<float*>(p)[i] = static_cast<float>(v);
  }
}

}  // namespace nanoc
