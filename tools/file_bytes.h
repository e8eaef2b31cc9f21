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

}  // namespace nanort::tools

#endif  // NANORT_TOOLS_FILE_BYTES_H_
