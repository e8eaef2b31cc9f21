// What a file handed to nanort-run as MODEL.so is, read from its bytes before
// anything dlopens it. dlopen's own words leave a user stuck on the common
// mistakes: a .nrt or a .o instead of the .so ("invalid ELF header", "only
// ET_DYN and ET_EXEC can be loaded"), a shared object for another
// architecture ("No such file or directory" for a file that exists), or a
// renamed NAME.so (no symbol NEWNAME_model).
#ifndef NANORT_TOOLS_MODEL_FILE_H_
#define NANORT_TOOLS_MODEL_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace nanort::tools {

struct ModelFile {
  enum class Kind {
    kProgram,       // a serialized program (.nrt): flatbuffer identifier "NRTP"
    kElfObject,     // ELF ET_REL: a NAME.o
    kSharedObject,  // ELF ET_DYN
    kElfOther,      // ELF of another type (an executable, a core dump)
    kUnknown,       // none of these
  };
  Kind kind = Kind::kUnknown;
  uint16_t elf_machine = 0;  // e_machine
  uint8_t elf_class = 0;     // 1: ELF32, 2: ELF64
  bool elf_big_endian = false;
  // For a shared object whose dynamic symbols could be read: the NAME of each
  // NAME_model it exports (the symbol nanoc's NAME.so exports), sorted.
  bool symbols_read = false;
  std::vector<std::string> model_names;
};

// Reads what `path` is. False with *error = "cannot open 'PATH': " plus the
// system's reason (errno) when it cannot be read.
bool ReadModelFile(const std::string& path, ModelFile* out, std::string* error);

// The architecture of an ELF file, in the words toolchains use: "x86-64",
// "aarch64", "riscv64", "arm", "i386", ...; "ELF machine N" for others.
std::string ElfMachineName(uint16_t machine, uint8_t elf_class);

// This program's own e_machine and class, as its ELF header says.
uint16_t HostElfMachine();
uint8_t HostElfClass();

// The model name nanort_model_load_file takes from a path when given none:
// the file name up to its first '.' ("dir/mnist.so" -> "mnist").
std::string ModelNameFromPath(const std::string& path);

// Why nanort-run cannot load `file` (read from `path`) as the model `name`,
// and what to do instead; "" when nothing is known to be wrong.
std::string ModelFileProblem(const std::string& path, const ModelFile& file,
                             const std::string& name);

}  // namespace nanort::tools

#endif  // NANORT_TOOLS_MODEL_FILE_H_
