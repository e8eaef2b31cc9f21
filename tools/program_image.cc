#include "program_image.h"

#include <cstdio>
#include <cstring>

#include "elf_bytes.h"
#include "flatbuffers/flatbuffers.h"
#include "program_generated.h"

namespace nanort::tools {
namespace {

// ELF64 layout (System V gABI). Parsed field by field from little-endian
// bytes rather than through <elf.h> structs, so that the tool reads the same
// on any host and never dereferences a misaligned or out-of-bounds pointer.
constexpr size_t kEhdrSize = 64;
constexpr size_t kShdrSize = 64;
constexpr uint8_t kElfClass64 = 2;
constexpr uint8_t kElfData2Lsb = 1;
constexpr uint32_t kShtNobits = 8;
constexpr uint16_t kShnXindex = 0xffff;

struct SectionHeader {
  uint32_t name;
  uint32_t type;
  uint64_t offset;
  uint64_t size;
  uint32_t link;
};

SectionHeader ReadSectionHeader(const uint8_t* p) {
  SectionHeader s;
  s.name = static_cast<uint32_t>(LE(p + 0, 4));
  s.type = static_cast<uint32_t>(LE(p + 4, 4));
  s.offset = LE(p + 24, 8);
  s.size = LE(p + 32, 8);
  s.link = static_cast<uint32_t>(LE(p + 40, 4));
  return s;
}

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

bool ExtractFromElf(const uint8_t* data, size_t size, ProgramImage* out, std::string* error) {
  if (size < kEhdrSize) {
    *error = "truncated ELF header (" + std::to_string(size) + " bytes)";
    return false;
  }
  if (data[4] != kElfClass64 || data[5] != kElfData2Lsb) {
    *error = "unsupported ELF class/byte order (only ELF64 little-endian is read)";
    return false;
  }
  const uint64_t shoff = LE(data + 40, 8);
  const uint64_t shentsize = LE(data + 58, 2);
  uint64_t shnum = LE(data + 60, 2);
  uint64_t shstrndx = LE(data + 62, 2);
  if (shoff == 0) {
    *error = "ELF file has no section header table";
    return false;
  }
  if (shentsize < kShdrSize) {
    *error = "ELF section header size " + std::to_string(shentsize) + " is smaller than " +
             std::to_string(kShdrSize);
    return false;
  }
  if (!InRange(shoff, kShdrSize, size)) {
    *error = "ELF section header table at " + Hex(shoff) + " lies outside the file";
    return false;
  }
  // With 0xff00 or more sections the real count and string table index live
  // in section 0 (gABI "extended section numbering").
  const SectionHeader first = ReadSectionHeader(data + shoff);
  if (shnum == 0) shnum = first.size;
  if (shstrndx == kShnXindex) shstrndx = first.link;
  if (shnum > (size - shoff) / shentsize) {
    *error = "ELF section header table (" + std::to_string(shnum) + " entries at " + Hex(shoff) +
             ") runs past the end of the file";
    return false;
  }
  if (shstrndx >= shnum) {
    *error = "ELF section name table index " + std::to_string(shstrndx) + " is out of range";
    return false;
  }
  const SectionHeader strtab = ReadSectionHeader(data + shoff + shstrndx * shentsize);
  if (strtab.type == kShtNobits || !InRange(strtab.offset, strtab.size, size)) {
    *error = "ELF section name table lies outside the file";
    return false;
  }
  const char* names = reinterpret_cast<const char*>(data + strtab.offset);
  const size_t want_len = sizeof(kProgramSectionName);  // with the NUL
  for (uint64_t i = 0; i < shnum; ++i) {
    const SectionHeader s = ReadSectionHeader(data + shoff + i * shentsize);
    if (s.name >= strtab.size || strtab.size - s.name < want_len) continue;
    if (std::memcmp(names + s.name, kProgramSectionName, want_len) != 0) continue;
    if (s.type == kShtNobits) {
      *error = std::string("ELF section ") + kProgramSectionName + " has no file contents";
      return false;
    }
    if (!InRange(s.offset, s.size, size)) {
      *error = std::string("ELF section ") + kProgramSectionName + " (" + std::to_string(s.size) +
               " bytes at " + Hex(s.offset) + ") lies outside the file";
      return false;
    }
    out->bytes.assign(data + s.offset, data + s.offset + s.size);
    out->origin = std::string("ELF section ") + kProgramSectionName + " at file offset " +
                  Hex(s.offset) + ", " + std::to_string(s.size) + " bytes";
    return true;
  }
  *error = std::string("ELF file has no ") + kProgramSectionName + " section";
  return false;
}

}  // namespace

bool ExtractProgram(const uint8_t* data, size_t size, ProgramImage* out, std::string* error) {
  if (size >= 4 && std::memcmp(data,
                               "\x7f"
                               "ELF",
                               4) == 0) {
    return ExtractFromElf(data, size, out, error);
  }
  out->bytes.assign(data, data + size);
  out->origin = "whole file, " + std::to_string(size) + " bytes";
  return true;
}

const nanort::fb::Program* VerifyProgram(const ProgramImage& image, std::string* error) {
  const std::vector<uint8_t>& b = image.bytes;
  // The smallest flatbuffer with an identifier: root offset + identifier.
  if (b.size() < sizeof(flatbuffers::uoffset_t) + flatbuffers::kFileIdentifierLength) {
    *error = "too small to be a flatbuffer (" + std::to_string(b.size()) + " bytes)";
    return nullptr;
  }
  // The verifier asserts on this rather than failing.
  if (b.size() >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    *error = "larger than a flatbuffer can be";
    return nullptr;
  }
  if (!nanort::fb::ProgramBufferHasIdentifier(b.data())) {
    std::string id;
    for (size_t i = 0; i < flatbuffers::kFileIdentifierLength; ++i) {
      const char c = static_cast<char>(b[sizeof(flatbuffers::uoffset_t) + i]);
      id += (c >= 0x20 && c < 0x7f) ? c : '?';
    }
    *error =
        "file identifier is \"" + id + "\", expected \"" + nanort::fb::ProgramIdentifier() + "\"";
    return nullptr;
  }
  flatbuffers::Verifier verifier(b.data(), b.size());
  if (!nanort::fb::VerifyProgramBuffer(verifier)) {
    *error = "the flatbuffers verifier rejected it: corrupt or truncated";
    return nullptr;
  }
  return nanort::fb::GetProgram(b.data());
}

}  // namespace nanort::tools
