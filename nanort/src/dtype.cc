#include "bytes.h"
#include "nanort/nanort.h"

extern "C" const char* nanort_dtype_name(nanort_dtype dtype) {
  // One string of names in dtype order, "?" last for any other value: no
  // table of pointers to store.
  static_assert(NANORT_F32 == 0 && NANORT_F4E2M1 == 21, "names below are in dtype order");
  const char* name =
      "f32\0f16\0bf16\0i8\0u8\0i32\0i64\0bool\0f64\0i16\0u16\0u32\0u64\0f8e4m3fn\0f8e4m3fnuz\0"
      "f8e5m2\0f8e5m2fnuz\0i4\0u4\0i2\0u2\0f4e2m1\0?";
  const unsigned d = static_cast<unsigned>(dtype);
  return nanort::PackedName(name, d > NANORT_F4E2M1 ? NANORT_F4E2M1 + 1 : d);
}

extern "C" size_t nanort_dtype_size(nanort_dtype dtype) {
  // log2 of each size, two bits a dtype, in dtype order (the float8 and
  // sub-byte types, 13 to 21, are one byte: zero bits).
  constexpr uint64_t kLog2Sizes = 2u << 0 | 1u << 2 | 1u << 4 | 0u << 6 | 0u << 8 | 2u << 10 |
                                  3u << 12 | 0u << 14 | 3u << 16 | 1u << 18 | 1u << 20 | 2u << 22 |
                                  3u << 24;
  const unsigned d = static_cast<unsigned>(dtype);
  if (d > NANORT_F4E2M1) return 0;
  return size_t{1} << ((kLog2Sizes >> (2 * d)) & 3u);
}
