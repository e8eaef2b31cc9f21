// Finds and verifies the serialized nanort program (schema/program.fbs) in a
// file's bytes, without loading or running anything: the file may be built
// for another CPU, and may be corrupt.
#ifndef NANORT_TOOLS_PROGRAM_IMAGE_H_
#define NANORT_TOOLS_PROGRAM_IMAGE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nanort::fb {
struct Program;
}

namespace nanort::tools {

// The ELF section nanoc writes the program into, in model.o and NAME.so.
inline constexpr char kProgramSectionName[] = ".nanort.program";

struct ProgramImage {
  // A copy of the program's bytes: the copy is what makes the flatbuffer
  // aligned (a section inside a file read into memory need not be).
  std::vector<uint8_t> bytes;
  // Where the bytes came from, for the reader: "whole file" or
  // "ELF section .nanort.program at file offset 4096".
  std::string origin;
};

// Picks the program out of a file's contents: an ELF64 little-endian object or
// shared object holds it in the .nanort.program section; anything else is
// taken to be the flatbuffer itself (a .nrt file). Every ELF offset and size
// is checked against `size`. On failure sets *error to the reason.
bool ExtractProgram(const uint8_t* data, size_t size, ProgramImage* out, std::string* error);

// Runs the flatbuffers verifier (file identifier "NRTP") over image.bytes and
// returns the program, or nullptr with *error set. The result points into
// image.bytes.
const nanort::fb::Program* VerifyProgram(const ProgramImage& image, std::string* error);

}  // namespace nanort::tools

#endif  // NANORT_TOOLS_PROGRAM_IMAGE_H_
