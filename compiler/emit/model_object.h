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

// Adds NAME_constants (64-byte aligned read-only data, used in place at run),
// NAME_program, NAME_kernels and NAME_model to `module`.
void addModelDefinition(llvm::Module& module, const std::string& name,
                        const std::vector<uint8_t>& program, const std::vector<uint8_t>& constants,
                        const std::vector<llvm::Function*>& kernels);

}  // namespace nanoc
