// The symbols of a compiled model's object file. Only `NAME_model` (a
// nanort_model_def) is exported; the kernels, the kernel table, the constants
// blob and the program are internal, every one of them named NAME_...
#pragma once

#include <llvm/IR/Module.h>

#include <cstdint>
#include <string>
#include <vector>

namespace nanoc {

// The ELF section that holds the serialized program, so tools can read it
// from an object or shared object without loading it.
inline constexpr const char* kProgramSection = ".nanort.program";

// What a kernel was compiled for, written beside its code in the kernel table
// (nanort_kernel): nanort refuses a program whose thunk calls it otherwise.
struct KernelSignature {
  std::vector<uint64_t> arg_bytes;  // bytes of each argument's buffer, inputs first
  uint32_t num_outputs = 0;         // the last arguments
  uint64_t task_count = 1;
  uint64_t scratch_bytes = 0;  // of the worker's scratch (nanort_kernel_args)
};

// Adds NAME_constants (64-byte aligned read-only data, used in place at run),
// NAME_program, NAME_kernels (with NAME_arg_bytes) and NAME_model to `module`.
// `kernels` is variant-major, `signatures` has one entry per kernel index and
// serves every variant.
void addModelDefinition(llvm::Module& module, const std::string& name,
                        const std::vector<uint8_t>& program, const std::vector<uint8_t>& constants,
                        const std::vector<llvm::Function*>& kernels,
                        const std::vector<KernelSignature>& signatures);

}  // namespace nanoc
