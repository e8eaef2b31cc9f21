#include "cpu_features.h"

#include <string.h>

namespace nanort {

CpuFeature HostCpuFeatures::Lookup(const char* name, size_t length) const {
  const char* known = names_;
  for (size_t i = 0; i < count_; ++i) {
    const size_t known_length = strlen(known);
    if (known_length == length && memcmp(known, name, length) == 0) {
      return (bits_[i / 64] >> (i % 64)) & 1u ? CpuFeature::kPresent : CpuFeature::kAbsent;
    }
    known += known_length + 1;
  }
  return CpuFeature::kUnknown;
}

CpuFeature HostCpuFeatures::Lookup(const char* name) const { return Lookup(name, strlen(name)); }

}  // namespace nanort
