// npy_copy IN.npy OUT.npy: reads IN with the tools' .npy reader, prints
// "DTYPE SHAPE" (e.g. "f32 2,3"), and writes it back with the tools' writer.
// check_npy.py compares both ends with numpy.
#include <cstdio>
#include <string>

#include "nanort/nanort.h"
#include "npy.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: npy_copy IN.npy OUT.npy\n");
    return 2;
  }
  nanort::tools::NpyArray array;
  std::string error;
  if (!nanort::tools::ReadNpy(argv[1], &array, &error)) {
    std::fprintf(stderr, "npy_copy: error: %s\n", error.c_str());
    return 1;
  }
  std::string shape;
  for (size_t i = 0; i < array.shape.size(); ++i) {
    if (i > 0) shape += ',';
    shape += std::to_string(array.shape[i]);
  }
  std::printf("%s %s\n", nanort_dtype_name(array.dtype), shape.c_str());
  if (!nanort::tools::WriteNpy(argv[2], array, &error)) {
    std::fprintf(stderr, "npy_copy: error: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
