#include "nanort/nanort.h"

extern "C" const char* nanort_dtype_name(nanort_dtype dtype) {
  switch (dtype) {
    case NANORT_F32:
      return "f32";
    case NANORT_F16:
      return "f16";
    case NANORT_BF16:
      return "bf16";
    case NANORT_I8:
      return "i8";
    case NANORT_U8:
      return "u8";
    case NANORT_I32:
      return "i32";
    case NANORT_I64:
      return "i64";
    case NANORT_BOOL:
      return "bool";
  }
  return "?";
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
