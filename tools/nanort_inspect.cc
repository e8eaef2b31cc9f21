// nanort-inspect: prints what a compiled nanort program holds, from a .nrt
// file or from the .nanort.program section of a model.o / NAME.so.
//
// It reads the file as bytes and never dlopens it: the model may be built for
// another CPU, and a corrupt file must give an error, not run code.
#include <cstdio>
#include <string>
#include <vector>

#include "file_bytes.h"
#include "nanort/nanort.h"
#include "program_image.h"
#include "program_report.h"

namespace {

constexpr char kUsage[] =
    "usage: nanort-inspect FILE [--json]\n"
    "\n"
    "Prints a compiled nanort program: format version, kernel ABI, model name,\n"
    "target, entry signatures, buffers, arena plan, thunks and the kernels of\n"
    "every CPU variant.\n"
    "\n"
    "  FILE       a program (.nrt), or an object or shared object written by nanoc\n"
    "             (.o/.so), whose .nanort.program ELF section holds the program.\n"
    "             The file is only read, never loaded.\n"
    "  --json     print one JSON object instead of text\n"
    "  --version  print the version, and the program format and kernel ABI this\n"
    "             nanort-inspect was built with\n"
    "  --help     print this help\n"
    "\n"
    "Exit status: 0 on success, 1 when the file cannot be read or is not a valid\n"
    "nanort program (every program is checked by the flatbuffers verifier first).\n";

int Fail(const std::string& message) {
  std::fprintf(stderr, "nanort-inspect: error: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--version") {
      std::printf("nanort-inspect %s (program format %u.%u, kernel ABI %u)\n",
                  NANORT_PROJECT_VERSION, NANORT_FORMAT_MAJOR, NANORT_FORMAT_MINOR,
                  NANORT_KERNEL_ABI_VERSION);
      return 0;
    }
    if (arg == "--json") {
      json = true;
    } else if (arg.size() > 1 && arg[0] == '-') {
      return Fail("unknown option '" + arg + "' (see --help)");
    } else if (path.empty()) {
      path = arg;
    } else {
      return Fail("more than one FILE given ('" + path + "' and '" + arg + "')");
    }
  }
  if (path.empty()) return Fail("no FILE given (see --help)");

  std::vector<uint8_t> bytes;
  std::string error;
  if (!nanort::tools::ReadFileBytes(path, &bytes, &error)) return Fail(path + ": " + error);
  nanort::tools::ProgramImage image;
  const nanort::fb::Program* program = nullptr;
  if (nanort::tools::ExtractProgram(bytes.data(), bytes.size(), &image, &error)) {
    program = nanort::tools::VerifyProgram(image, &error);
  }
  if (!program) return Fail(path + ": not a valid nanort program (" + error + ")");

  const std::string report = json ? nanort::tools::ProgramReportJson(path, image, program)
                                  : nanort::tools::ProgramReportText(path, image, program);
  std::fwrite(report.data(), 1, report.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : Fail("cannot write the output");
}
