// Fuzz target: the .npy reader of nanort-run and nanort-inspect. Every file
// either parses or gets an error message; one that parses must write back
// and parse again to the same array.
#include <stdint.h>
#include <stdlib.h>

#include <string>

#include "tools/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nanort::tools::NpyArray array;
  std::string error;
  if (!nanort::tools::ParseNpy(data, size, &array, &error)) {
    if (error.empty()) abort();  // a refusal says why
    return 0;
  }
  std::vector<uint8_t> bytes;
  if (!nanort::tools::EncodeNpy(array, &bytes, &error)) abort();
  nanort::tools::NpyArray again;
  if (!nanort::tools::ParseNpy(bytes.data(), bytes.size(), &again, &error)) abort();
  // The one-byte types numpy cannot name (float8, 4- and 2-bit) all write
  // '|V1', which reads back as the first of them: the caller's model says
  // which it is (npy.h). Every other dtype reads back as itself.
  const bool same_dtype =
      again.dtype == array.dtype || std::string(nanort::tools::NpyDescr(array.dtype)) == "|V1";
  if (!same_dtype || again.shape != array.shape || again.data != array.data) abort();
  return 0;
}
