// Writes the files the tools' CTest scripts inspect into the directory given
// (created if missing):
//   tiny.nrt            the test program, for another CPU (riscv64)
//   tiny.o              the same program in an ELF object's .nanort.program
//   tiny_truncated.nrt  tiny.nrt cut in half
//   tiny_bitflip.nrt    tiny.nrt with the top bit of its root offset flipped
//   tiny_truncated.o    tiny.o cut inside its section header table
//   plan.nrt            a program whose arena plan reuses and aliases bytes
//   no_arena.nrt        a program without arena buffers
//   control_flow.nrt    a program with a Loop around an If (format 1.4)
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "test_program.h"

namespace {

bool Write(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_test_fixtures OUTDIR\n");
    return 1;
  }
  namespace t = nanort::tools::testing;
  const std::string dir = argv[1];
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::vector<uint8_t> program = t::BuildTestProgram("tiny", t::ForeignTarget());
  const std::vector<uint8_t> elf = t::WrapInElf(program);
  std::vector<uint8_t> truncated(program.begin(), program.begin() + program.size() / 2);
  std::vector<uint8_t> flipped = program;
  flipped[3] ^= 0x80;  // root offset, little-endian: now far past the end
  std::vector<uint8_t> truncated_elf(elf.begin(), elf.end() - 100);
  const bool ok = Write(dir + "/tiny.nrt", program) && Write(dir + "/tiny.o", elf) &&
                  Write(dir + "/tiny_truncated.nrt", truncated) &&
                  Write(dir + "/tiny_bitflip.nrt", flipped) &&
                  Write(dir + "/tiny_truncated.o", truncated_elf) &&
                  Write(dir + "/plan.nrt", t::BuildPlanProgram()) &&
                  Write(dir + "/no_arena.nrt", t::BuildNoArenaProgram()) &&
                  Write(dir + "/control_flow.nrt", t::BuildControlFlowProgram());
  if (!ok) {
    std::fprintf(stderr, "make_test_fixtures: cannot write to %s\n", dir.c_str());
    return 1;
  }
  return 0;
}
