// The CPU a program is compiled for: LLVM triple, CPU name and the enabled
// features, resolved once and recorded in the program (schema Target) so the
// runtime can refuse a CPU that lacks them.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace llvm {
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

  // "+a,+b,..." for LLVM.
  std::string featureString() const;
};

// The recorded features on and every other feature LLVM knows for the triple
// off: what a TargetMachine or a function's "target-features" needs so that a
// feature the CPU has but the target removed stays off.
std::string exactFeatureString(const CpuTarget& target);

// This machine: LLVM's host triple, host CPU name and host features.
CpuTarget hostTarget();

// A target from nanoc's --triple/--cpu/--features. `features` is a comma list
// of "+name" / "-name" / "name" (= "+name") on top of the CPU's own. Throws
// CompileError for an unknown triple, CPU or feature, naming the valid ones.
CpuTarget makeTarget(const std::string& triple, const std::string& cpu,
                     const std::string& features);

// A TargetMachine for `target`: position-independent code (the same object
// links statically and into NAME.so), optimization level 3.
std::unique_ptr<llvm::TargetMachine> createTargetMachine(const CpuTarget& target);

// LLVM's O3 module pipeline, tuned for the target machine.
void optimizeModule(llvm::Module& module, llvm::TargetMachine& machine);

// The module as an ELF relocatable object.
std::vector<uint8_t> emitObject(llvm::Module& module, llvm::TargetMachine& machine);
// The module as textual assembly (for FileCheck tests and --emit-asm).
std::string emitAssembly(llvm::Module& module, llvm::TargetMachine& machine);

}  // namespace nanoc::cpu
