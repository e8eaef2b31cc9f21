// nanort-inspect: prints what a compiled nanort program holds, from a .nrt
// file or from the .nanort.program section of a model.o / NAME.so.
//
// It reads the file as bytes and never dlopens it: the model may be built for
// another CPU, and a corrupt file must give an error, not run code.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "file_bytes.h"
#include "nanort/nanort.h"
#include "plan_svg.h"
#include "program_image.h"
#include "program_report.h"

namespace {

constexpr char kUsage[] =
    "usage: nanort-inspect FILE [--json | --plan-svg SVG]\n"
    "\n"
    "Prints a compiled nanort program: format version, kernel ABI, model name,\n"
    "target, entry signatures, buffers, arena plan, thunks and the kernels of\n"
    "every CPU variant.\n"
    "\n"
    "  FILE       a program (.nrt), or an object or shared object written by nanoc\n"
    "             (.o/.so), whose .nanort.program ELF section holds the program.\n"
    "             The file is only read, never loaded.\n"
    "  --json     print one JSON object instead of text\n"
    "  --plan-svg SVG\n"
    "             draw the arena plan into the file SVG instead of printing the\n"
    "             report: each arena buffer a rectangle, its arena offset upwards\n"
    "             and its live range in thunks (first write to last read)\n"
    "             rightwards, the peak (the arena size) a line; then print the\n"
    "             peak, the sum of the arena buffers' sizes and the reuse factor\n"
    "             (sum / peak)\n"
    "  --version  print the version, and the program format and kernel ABI this\n"
    "             nanort-inspect was built with\n"
    "  --help     print this help\n"
    "\n"
    "Exit status: 0 on success, 1 when the file cannot be read or is not a valid\n"
    "nanort program (every program is checked by the flatbuffers verifier first),\n"
    "or the SVG cannot be written.\n";

int Fail(const std::string& message) {
  std::fprintf(stderr, "nanort-inspect: error: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  bool json = false;
  std::string svg_path;
  bool svg = false;
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
    } else if (arg == "--plan-svg") {
      if (i + 1 >= argc) return Fail("--plan-svg needs a file name (see --help)");
      svg = true;
      svg_path = argv[++i];
      if (svg_path.empty()) return Fail("--plan-svg needs a file name (see --help)");
    } else if (arg.size() > 1 && arg[0] == '-') {
      return Fail("unknown option '" + arg + "' (see --help)");
    } else if (path.empty()) {
      path = arg;
    } else {
      return Fail("more than one FILE given ('" + path + "' and '" + arg + "')");
    }
  }
  if (path.empty()) return Fail("no FILE given (see --help)");
  if (json && svg) return Fail("--json and --plan-svg cannot be given together");

  std::vector<uint8_t> bytes;
  std::string error;
  if (!nanort::tools::ReadFileBytes(path, &bytes, &error)) return Fail(path + ": " + error);
  nanort::tools::ProgramImage image;
  const nanort::fb::Program* program = nullptr;
  if (nanort::tools::ExtractProgram(bytes.data(), bytes.size(), &image, &error)) {
    program = nanort::tools::VerifyProgram(image, &error);
  }
  if (!program) return Fail(path + ": not a valid nanort program (" + error + ")");

  if (svg) {
    const nanort::tools::ArenaPlan plan = nanort::tools::BuildArenaPlan(program);
    const std::string doc = nanort::tools::ArenaPlanSvg(plan, path);
    std::FILE* f = std::fopen(svg_path.c_str(), "wb");
    if (!f) return Fail("cannot write " + svg_path + ": " + std::strerror(errno));
    const bool written = std::fwrite(doc.data(), 1, doc.size(), f) == doc.size();
    const int write_errno = errno;
    if (std::fclose(f) != 0 || !written) {
      return Fail("cannot write " + svg_path + ": " + std::strerror(written ? errno : write_errno));
    }
    std::printf("wrote the arena plan of %zu buffers over %zu thunks to %s\n", plan.buffers.size(),
                plan.thunk_ops.size(), svg_path.c_str());
    const std::string summary = nanort::tools::ArenaPlanSummary(plan);
    std::fwrite(summary.data(), 1, summary.size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : Fail("cannot write the output");
  }

  const std::string report = json ? nanort::tools::ProgramReportJson(path, image, program)
                                  : nanort::tools::ProgramReportText(path, image, program);
  std::fwrite(report.data(), 1, report.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : Fail("cannot write the output");
}
