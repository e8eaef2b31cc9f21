// Fuzz target: nanoc's IR text parser, then the pass pipeline and the arena
// plan on whatever it parses. Every malformed text must end in a
// CompileError; any other exception, crash or sanitizer report is a bug.
#include <stddef.h>
#include <stdint.h>

#include <string_view>

#include "compiler/ir/error.h"
#include "compiler/ir/text.h"
#include "front_half.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    std::unique_ptr<nanoc::Graph> graph =
        nanoc::parseGraph(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.nir");
    nanort::fuzz::RunFrontHalf(*graph, size);
  } catch (const nanoc::CompileError&) {
  }
  return 0;
}
