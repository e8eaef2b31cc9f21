// Reading and writing NumPy .npy files for the command-line tools.
//
// Only what nanort tensors can be: little-endian (or byte-sized) numeric
// dtypes that map to a nanort_dtype, in C order. Every malformed file gives an
// error message; nothing here trusts a header it read.
#ifndef NANORT_TOOLS_NPY_H_
#define NANORT_TOOLS_NPY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nanort/nanort.h"

namespace nanort::tools {

struct NpyArray {
  nanort_dtype dtype = NANORT_F32;
  std::vector<int64_t> shape;  // empty for a 0-d array (one element)
  std::vector<uint8_t> data;   // element bytes in C order, little-endian
};

// Size in bytes of one element of a dtype .npy can hold; 0 for the others
// (bf16, unknown values).
size_t NpyElementSize(nanort_dtype dtype);

// The .npy descr string numpy writes for a dtype ("<f4", "|b1"); nullptr when
// .npy has no such dtype (bf16).
const char* NpyDescr(nanort_dtype dtype);

// Element count of a shape; false when a dim is negative or the product
// overflows.
bool NpyElementCount(const std::vector<int64_t>& shape, uint64_t* count);

// Parses a whole .npy file held in memory. On failure returns false and sets
// *error to what is wrong; *out is then unspecified.
bool ParseNpy(const uint8_t* bytes, size_t size, NpyArray* out, std::string* error);

// Reads `path`. Errors name the file.
bool ReadNpy(const std::string& path, NpyArray* out, std::string* error);

// Serializes `array` as .npy format 1.0, or 2.0 when the header does not fit
// in 1.0's 16-bit length. Fails when the dtype has no .npy form or the data
// size does not match the shape.
bool EncodeNpy(const NpyArray& array, std::vector<uint8_t>* out, std::string* error);

// Writes `array` to `path` (replacing it). Errors name the file.
bool WriteNpy(const std::string& path, const NpyArray& array, std::string* error);

}  // namespace nanort::tools

#endif  // NANORT_TOOLS_NPY_H_
