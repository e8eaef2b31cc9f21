// Renders a verified nanort program for people (text) and for scripts (JSON):
// format version, kernel ABI, model name, target, entry signatures, thunks,
// buffers, the arena plan and kernels (every CPU variant's). Both forms hold
// the same facts.
#ifndef NANORT_TOOLS_PROGRAM_REPORT_H_
#define NANORT_TOOLS_PROGRAM_REPORT_H_

#include <string>

#include "program_image.h"

namespace nanort::tools {

// `program` must have passed VerifyProgram(image). Every string from the
// program is escaped (any bytes may be in it); values outside the schema's
// enums are shown by number; indices out of range are shown, not followed.
std::string ProgramReportText(const std::string& path, const ProgramImage& image,
                              const nanort::fb::Program* program);

// One JSON object, valid UTF-8 whatever bytes the program's strings hold.
std::string ProgramReportJson(const std::string& path, const ProgramImage& image,
                              const nanort::fb::Program* program);

}  // namespace nanort::tools

#endif  // NANORT_TOOLS_PROGRAM_REPORT_H_
