// The CPU a program is compiled for: LLVM triple, CPU name and the enabled
// features, resolved once and recorded in the program (schema Target) so the
// runtime can refuse a CPU that lacks them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class Function;
class TargetMachine;
class Module;
}  // namespace llvm

namespace nanoc::cpu {

struct CpuTarget {
  std::string triple;                 // normalized, e.g. "x86_64-unknown-linux-gnu"
  std::string cpu;                    // LLVM CPU name, e.g. "znver4", "generic"
  std::vector<std::string> features;  // enabled features, no '+', sorted, unique
  std::string data_layout;            // the TargetMachine's data layout string
  // Vector width the kernels prefer, in bits; 0 leaves it to the CPU's tuning.
  // (LLVM prefers 256-bit vectors on AVX-512 CPUs unless told 512.)
  uint32_t vector_bits = 0;
  // Per-core data cache sizes in bytes, for the GEMM's cache blocking (0: the
  // level is absent, as on a Cortex-M4); none: unknown, the kernels assume
  // kDefaultCacheSizes.
  struct CacheSizes {
    uint64_t l1d = 0, l2 = 0;
  };
  std::optional<CacheSizes> cache;

  // "+a,+b,..." for LLVM.
  std::string featureString() const;
};

// The recorded features on and every other feature LLVM knows for the triple
// off: what a TargetMachine or a function's "target-features" needs so that a
// feature the CPU has but the target removed stays off.
std::string exactFeatureString(const CpuTarget& target);

// What the kernels assume of a target whose cache sizes are unknown: small
// enough for any desktop or server core of the last decade.
constexpr CpuTarget::CacheSizes kDefaultCacheSizes = {32 * 1024, 512 * 1024};

// A kernel function carries its target's cache sizes as these string
// attributes (decimal bytes), set beside target-cpu and target-features.
constexpr const char* kL1DataCacheAttribute = "nanoc-l1d-cache-bytes";
constexpr const char* kL2CacheAttribute = "nanoc-l2-cache-bytes";
// The cache sizes of `fn`'s target: its attributes, kDefaultCacheSizes for an
// absent or malformed one (kernels built without a CpuTarget, as in tests).
CpuTarget::CacheSizes cacheSizes(const llvm::Function& fn);

// This machine: LLVM's host triple, host CPU name and host features, and its
// cache sizes from Linux's sysfs (unknown elsewhere).
CpuTarget hostTarget();

// A target from nanoc's --triple/--cpu/--features. `features` is a comma list
// of "+name" / "-name" / "name" (= "+name") on top of the CPU's own. Throws
// CompileError for an unknown triple, CPU or feature, naming the valid ones.
CpuTarget makeTarget(const std::string& triple, const std::string& cpu,
                     const std::string& features);

// A TargetMachine for `target`: position-independent code (the same object
// links statically and into NAME.so), optimization level 3.
std::unique_ptr<llvm::TargetMachine> createTargetMachine(const CpuTarget& target);

// Told how far a long step over the module's functions is, `done` of `total`,
// for nanoc's progress line; it only observes (the same code with or without).
using FunctionProgress = std::function<void(size_t done, size_t total)>;

// LLVM's O3 module pipeline, tuned for the target machine. `progress` counts
// two steps a function: through the simplification (CGSCC) pipeline's GVN,
// then through the optimization pipeline's loop vectorizer, of twice the
// defined functions.
void optimizeModule(llvm::Module& module, llvm::TargetMachine& machine,
                    const FunctionProgress& progress = {});

// The module as an ELF relocatable object; `progress` counts the functions
// the code generator has printed, of the defined functions.
std::vector<uint8_t> emitObject(llvm::Module& module, llvm::TargetMachine& machine,
                                const FunctionProgress& progress = {});
// The module as textual assembly (for FileCheck tests and --emit-asm).
std::string emitAssembly(llvm::Module& module, llvm::TargetMachine& machine,
                         const FunctionProgress& progress = {});

}  // namespace nanoc::cpu
