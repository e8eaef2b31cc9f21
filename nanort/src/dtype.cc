#include "bytes.h"
#include "nanort/nanort.h"

extern "C" const char* nanort_dtype_name(nanort_dtype dtype) {
  // One string of names in dtype order: no table of pointers to store.
  static_assert(NANORT_F32 == 0 && NANORT_BOOL == 7, "names below are in dtype order");
  const char* name = "f32\0f16\0bf16\0i8\0u8\0i32\0i64\0bool\0";
  if (static_cast<unsigned>(dtype) > NANORT_BOOL) return "?";
  return nanort::PackedName(name, static_cast<unsigned>(dtype));
}

extern "C" size_t nanort_dtype_size(nanort_dtype dtype) {
  switch (dtype) {
    case NANORT_F32:
    case NANORT_I32:
      return 4;
    case NANORT_F16:
    case NANORT_BF16:
      return 2;
    case NANORT_I8:
    case NANORT_U8:
    case NANORT_BOOL:
      return 1;
    case NANORT_I64:
      return 8;
  }
  return 0;
}
