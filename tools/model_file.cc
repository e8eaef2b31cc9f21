#include "model_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "elf_bytes.h"

namespace nanort::tools {
namespace {

// ELF (System V gABI) fields, read byte by byte (elf_bytes.h), so a truncated
// or hostile file is only ever read inside its bounds.
constexpr uint8_t kElfClass64 = 2;
constexpr uint8_t kElfData2Msb = 2;
constexpr uint16_t kEtRel = 1;
constexpr uint16_t kEtDyn = 3;
constexpr uint32_t kShtDynsym = 11;
constexpr uint8_t kStbGlobal = 1;
constexpr uint8_t kStbWeak = 2;
constexpr size_t kSym64Size = 24;

// The file's bytes, mapped read-only: a model's .so may hold hundreds of MB
// of constants, of which only the headers and symbols are read.
class MappedFile {
 public:
  bool Open(const std::string& path, std::string* error) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Fail(path, errno, error);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return Fail(path, err, error);
    }
    if (S_ISDIR(st.st_mode)) {
      ::close(fd);
      return Fail(path, EISDIR, error);
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        const int err = errno;
        ::close(fd);
        size_ = 0;
        return Fail(path, err, error);
      }
      data_ = static_cast<const uint8_t*>(p);
    }
    ::close(fd);
    return true;
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  static bool Fail(const std::string& path, int err, std::string* error) {
    *error = "cannot open '" + path + "': " + std::strerror(err);
    return false;
  }
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// The NAME of every defined, exported NAME_model in an ELF64 little-endian
// shared object's .dynsym. False when the tables cannot be read (no section
// headers, or out of bounds): then nothing is known about its symbols.
bool ReadModelSymbols(const uint8_t* data, size_t size, std::vector<std::string>* names) {
  const uint64_t shoff = LE(data + 40, 8);
  const uint64_t shentsize = LE(data + 58, 2);
  const uint64_t shnum = LE(data + 60, 2);
  if (shoff == 0 || shentsize < 64 || shnum == 0 || !InRange(shoff, shnum * shentsize, size))
    return false;
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint8_t* sh = data + shoff + i * shentsize;
    if (LE(sh + 4, 4) != kShtDynsym) continue;
    const uint64_t sym_off = LE(sh + 24, 8), sym_size = LE(sh + 32, 8);
    const uint64_t link = LE(sh + 40, 4);
    if (link >= shnum || !InRange(sym_off, sym_size, size)) return false;
    const uint8_t* strtab = data + shoff + link * shentsize;
    const uint64_t str_off = LE(strtab + 24, 8), str_size = LE(strtab + 32, 8);
    if (!InRange(str_off, str_size, size)) return false;
    const char* strings = reinterpret_cast<const char*>(data + str_off);
    static constexpr char kSuffix[] = "_model";
    constexpr size_t kSuffixLength = sizeof(kSuffix) - 1;
    for (uint64_t at = 0; at + kSym64Size <= sym_size; at += kSym64Size) {
      const uint8_t* sym = data + sym_off + at;
      const uint64_t name = LE(sym, 4);
      const uint8_t bind = sym[4] >> 4;
      const uint64_t section = LE(sym + 6, 2);
      if ((bind != kStbGlobal && bind != kStbWeak) || section == 0 || name >= str_size) continue;
      const size_t length = strnlen(strings + name, str_size - name);
      if (length == str_size - name) continue;  // no NUL inside the table
      const std::string symbol(strings + name, length);
      if (symbol.size() > kSuffixLength &&
          symbol.compare(symbol.size() - kSuffixLength, kSuffixLength, kSuffix) == 0) {
        names->push_back(symbol.substr(0, symbol.size() - kSuffixLength));
      }
    }
    std::sort(names->begin(), names->end());
    return true;
  }
  return false;
}

std::string Quote(const std::string& s) { return "'" + s + "'"; }

std::string JoinQuoted(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + Quote(n);
  return out;
}

// What to do instead of loading `path`, a NAME.nrt or NAME.o: nanoc wrote
// NAME.so beside it.
std::string UseTheSharedObject(const std::string& path) {
  const std::filesystem::path p(path);
  return "pass " + std::filesystem::path(p).replace_extension(".so").string() +
         ", which nanoc wrote beside it, or link " +
         std::filesystem::path(p).replace_extension(".o").string() +
         " into your program and call nanort_model_load";
}

}  // namespace

bool ReadModelFile(const std::string& path, ModelFile* out, std::string* error) {
  MappedFile file;
  if (!file.Open(path, error)) return false;
  *out = ModelFile();
  const uint8_t* data = file.data();
  const size_t size = file.size();
  if (size >= 8 && std::memcmp(data + 4, "NRTP", 4) == 0) {
    out->kind = ModelFile::Kind::kProgram;
    return true;
  }
  if (size < 20 || std::memcmp(data,
                               "\x7f"
                               "ELF",
                               4) != 0) {
    return true;  // kUnknown
  }
  out->elf_class = data[4];
  out->elf_big_endian = data[5] == kElfData2Msb;
  const uint16_t type =
      static_cast<uint16_t>(out->elf_big_endian ? BE(data + 16, 2) : LE(data + 16, 2));
  out->elf_machine =
      static_cast<uint16_t>(out->elf_big_endian ? BE(data + 18, 2) : LE(data + 18, 2));
  out->kind = type == kEtRel   ? ModelFile::Kind::kElfObject
              : type == kEtDyn ? ModelFile::Kind::kSharedObject
                               : ModelFile::Kind::kElfOther;
  if (out->kind == ModelFile::Kind::kSharedObject && out->elf_class == kElfClass64 &&
      !out->elf_big_endian && size >= 64) {
    out->symbols_read = ReadModelSymbols(data, size, &out->model_names);
  }
  return true;
}

std::string ElfMachineName(uint16_t machine, uint8_t elf_class) {
  const bool is64 = elf_class == kElfClass64;
  switch (machine) {
    case 3:
      return "i386";
    case 8:
      return is64 ? "mips64" : "mips";
    case 20:
      return "powerpc";
    case 21:
      return "powerpc64";
    case 22:
      return "s390x";
    case 40:
      return "arm";
    case 62:
      return "x86-64";
    case 183:
      return "aarch64";
    case 243:
      return is64 ? "riscv64" : "riscv32";
    case 258:
      return "loongarch64";
    default:
      return "ELF machine " + std::to_string(machine);
  }
}

uint16_t HostElfMachine() {
#if defined(__x86_64__)
  return 62;
#elif defined(__aarch64__)
  return 183;
#elif defined(__riscv)
  return 243;
#elif defined(__i386__)
  return 3;
#elif defined(__arm__)
  return 40;
#else
  return 0;
#endif
}

uint8_t HostElfClass() { return sizeof(void*) == 8 ? 2 : 1; }

std::string ModelNameFromPath(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return base.substr(0, base.find('.'));
}

std::string ModelFileProblem(const std::string& path, const ModelFile& file,
                             const std::string& name) {
  const std::string host = ElfMachineName(HostElfMachine(), HostElfClass());
  switch (file.kind) {
    case ModelFile::Kind::kProgram:
      return Quote(path) +
             " is a nanort program (.nrt), which holds no kernels (nanort-inspect reads it): " +
             UseTheSharedObject(path);
    case ModelFile::Kind::kElfObject:
      return Quote(path) + " is an object file (ELF relocatable, " +
             ElfMachineName(file.elf_machine, file.elf_class) +
             "), which nanort-run cannot load: " + UseTheSharedObject(path);
    case ModelFile::Kind::kElfOther:
      return Quote(path) + " is an ELF file but not a shared object: pass the NAME.so that " +
             "nanoc wrote";
    case ModelFile::Kind::kUnknown:
      return Quote(path) + " is not a shared object (no ELF header): pass the NAME.so that " +
             "nanoc wrote";
    case ModelFile::Kind::kSharedObject:
      break;
  }
  if (file.elf_machine != HostElfMachine() || file.elf_class != HostElfClass()) {
    const std::string arch = ElfMachineName(file.elf_machine, file.elf_class);
    return Quote(path) + " is a shared object for " + arch + ", and this machine is " + host +
           ": run it on " + arch + " (or under qemu-user), or compile the model for this " +
           "machine (nanoc MODEL --target host, or a profile of nanoc --list-targets)";
  }
  if (!file.symbols_read ||
      std::find(file.model_names.begin(), file.model_names.end(), name) != file.model_names.end())
    return "";
  if (file.model_names.empty())
    return Quote(path) + " exports no NAME_model symbol, so it holds no model compiled by nanoc";
  if (file.model_names.size() == 1)
    return Quote(path) + " has no model " + Quote(name) + " (no symbol " + name +
           "_model; the name comes from the file name unless --name gives one): it holds model " +
           Quote(file.model_names[0]) + "; pass --name " + file.model_names[0];
  return Quote(path) + " has no model " + Quote(name) + " (no symbol " + name +
         "_model): it holds models " + JoinQuoted(file.model_names) + "; pass --name with one";
}

}  // namespace nanort::tools
