#include "file_bytes.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace nanort::tools {

bool ReadFileBytes(const std::string& path, std::vector<uint8_t>* out, std::string* error) {
  // Chunked reads rather than a size from fseek: this also reads pipes, and
  // never allocates more than the file really holds.
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    *error = "cannot open: " + std::string(std::strerror(errno));
    return false;
  }
  out->clear();
  uint8_t chunk[1 << 16];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) out->insert(out->end(), chunk, chunk + n);
  const bool failed = std::ferror(f);
  const int err = errno;
  std::fclose(f);
  if (failed) {
    *error = "cannot read: " + std::string(std::strerror(err));
    return false;
  }
  return true;
}

std::string SafeFileName(const char* name) {
  std::string out = name;
  for (char& c : out) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok) c = '_';
  }
  // "", "." and ".." would name a hidden file or a directory, not the output.
  if (out.empty() || out == "." || out == "..") out = std::string(out.size() + 1, '_');
  return out;
}

}  // namespace nanort::tools
