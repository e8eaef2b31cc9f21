// What the running CPU can execute, in LLVM's feature names ("avx2",
// "sve", "v"), so that a program's target record can be checked against it.
//
// This is the platform layer's CPU half: platform/posix_cpu_features.cc reads
// the CPU (cpuid, getauxval, arch_prctl); platform/none_platform.cc, for bare
// metal, answers from the compiler's target macros, since the firmware is
// built for one board and there is no OS to ask.
//
// Only instruction-set features are in the table: a program feature the table
// does not know (tuning flags such as "fast-variable-perm", "slow-3ops-lea",
// or features this runtime has no way to detect) is not checked, because it
// cannot cause an illegal instruction or was not detectable anyway.
#ifndef NANORT_SRC_CPU_FEATURES_H_
#define NANORT_SRC_CPU_FEATURES_H_

#include <stddef.h>
#include <stdint.h>

#include "bytes.h"

namespace nanort {

// The architecture component of a target triple this build runs as:
// "x86_64", "aarch64" or "riscv64" ("unknown" on other hosts).
const char* HostArchitecture();

enum class CpuFeature { kPresent, kAbsent, kUnknown };

// A snapshot of the host CPU's features, read once (cpuid + xgetbv on x86-64,
// getauxval hwcaps on aarch64/riscv64; the build's target macros on bare
// metal) so that looking up many names costs no further instructions or
// system calls.
class HostCpuFeatures {
 public:
  // Reads the CPU; cheap, but not free (cpuid may trap into a hypervisor).
  // The platform layer implements it.
  static HostCpuFeatures Detect();

  // kUnknown when `name` (length `length`, not NUL-terminated) is not in this
  // architecture's table.
  CpuFeature Lookup(const char* name, size_t length) const;
  CpuFeature Lookup(const char* name) const;

 private:
  // This architecture's feature names, NUL-terminated one after another, and
  // one bit per name (bit i of the 128 for name i) saying it is present.
  const char* names_ = "";
  size_t count_ = 0;
  uint64_t bits_[2] = {0, 0};
};

// Linux hands out AMX tile state only to processes that ask for it; without
// asking, the first tile instruction faults although cpuid and XCR0 report
// AMX. Asks for it; false if the OS refuses. True where there is nothing to
// ask (other OSes, bare metal: whoever set XCR0 owns the state).
bool RequestAmxTileState();

}  // namespace nanort

#endif  // NANORT_SRC_CPU_FEATURES_H_
