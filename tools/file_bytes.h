// Whole-file reading shared by the tools.
#ifndef NANORT_TOOLS_FILE_BYTES_H_
#define NANORT_TOOLS_FILE_BYTES_H_

#include <cstdint>
#include <string>
#include <vector>

namespace nanort::tools {

// Reads all of `path` into *out. On failure sets *error to the system's reason
// ("cannot open: No such file or directory"), without the path.
bool ReadFileBytes(const std::string& path, std::vector<uint8_t>* out, std::string* error);

// The file name (without extension) an output tensor is written to: `name`
// with every character outside [A-Za-z0-9_.-] replaced by '_'.
std::string SafeFileName(const char* name);

}  // namespace nanort::tools

#endif  // NANORT_TOOLS_FILE_BYTES_H_
