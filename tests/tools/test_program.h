// A small, hand-built nanort program for the tools' tests, written with
// flatbuffers::FlatBufferBuilder so that the tests do not need nanoc.
//
// The program computes y = x + w for x, w, y f32[2,3]: one kernel thunk
// (x + w -> arena buffer t, one task per row) and one copy thunk (t -> y).
#ifndef NANORT_TESTS_TOOLS_TEST_PROGRAM_H_
#define NANORT_TESTS_TOOLS_TEST_PROGRAM_H_

#include <cstdint>
#include <string>
#include <vector>

namespace nanort::tools::testing {

struct TestTarget {
  std::string triple;
  std::string cpu;
  std::vector<std::string> features;
};

// A target for another CPU than the host: nanort-inspect must still read it.
TestTarget ForeignTarget();
// The host's architecture with no required features: nanort can run it.
TestTarget HostTarget();

// The name of one arena buffer, holding every kind of byte a string in a
// program may hold: quote, backslash, a control byte, invalid UTF-8 and a
// valid multi-byte character. Reports must escape it.
extern const char kAwkwardName[];

// The constants blob (w), aligned like the 64-byte buffers the program declares.
alignas(64) inline constexpr float kConstantW[6] = {0.5f, -1.0f, 2.0f, 0.25f, 100.0f, -3.5f};

// Serializes the program for model `model_name`.
std::vector<uint8_t> BuildTestProgram(const std::string& model_name, const TestTarget& target);

// A program for the arena plan picture (nanort-inspect --plan-svg): six arena
// buffers over six thunks, some sharing bytes at different times, one a view
// of another (same bytes, same time), one written and never read, one used by
// no thunk, one named with XML's special characters. Not runnable: its kernel
// exists nowhere. The arena is 12352 bytes; the buffers sum to 23616.
std::vector<uint8_t> BuildPlanProgram();
// The same with no arena buffers at all: y = x + w straight into the output.
std::vector<uint8_t> BuildNoArenaProgram();
// A format 1.4 program with control flow: a copy, a Loop whose body is an If
// with a copy in each branch, a copy (thunks 0 to 5 in pre-order).
std::vector<uint8_t> BuildControlFlowProgram();

// Wraps `program` in a minimal ELF64 little-endian relocatable object whose
// .nanort.program section holds it, the way nanoc's model.o does.
std::vector<uint8_t> WrapInElf(const std::vector<uint8_t>& program);

}  // namespace nanort::tools::testing

#endif  // NANORT_TESTS_TOOLS_TEST_PROGRAM_H_
