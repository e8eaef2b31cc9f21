// The arena plan of a verified nanort program, as numbers (peak, sum of the
// arena buffers' sizes, reuse factor) and as a picture: an SVG that draws each
// arena buffer as a rectangle, its arena offset upwards against thunk order
// rightwards, so that buffers sharing bytes at different times sit side by
// side and the arena's peak (Program.arena_size) is a line across the top.
#ifndef NANORT_TOOLS_PLAN_SVG_H_
#define NANORT_TOOLS_PLAN_SVG_H_

#include <cstdint>
#include <string>
#include <vector>

namespace nanort::fb {
struct Program;
}

namespace nanort::tools {

struct PlanBuffer {
  uint32_t id = 0;   // index into Program.buffers
  std::string name;  // the raw bytes from the program
  uint64_t offset = 0;
  uint64_t size = 0;
  // The live range in thunk order (every entry's thunks, one after another):
  // from the first thunk that uses the buffer (its writer) to the last one
  // (its last reader; the writer itself if nothing reads it). -1 when no
  // thunk uses it.
  int64_t first = -1;
  int64_t last = -1;
  bool past_arena = false;  // offset + size overflows or ends past arena_size
};

struct ArenaPlan {
  std::string model_name;
  uint64_t arena_size = 0;             // the peak: what a session allocates
  uint64_t buffers_size_sum = 0;       // every arena buffer's size, aliases too (saturating)
  std::vector<PlanBuffer> buffers;     // the arena buffers, in buffer-table order
  std::vector<std::string> thunk_ops;  // each thunk's op, in thunk order
  struct EntryStart {
    size_t first_thunk;
    std::string name;
  };
  std::vector<EntryStart> entries;
};

// `program` must have passed VerifyProgram. Thunk arguments that are out of
// range are skipped.
ArenaPlan BuildArenaPlan(const nanort::fb::Program* program);

// buffers_size_sum / arena_size; 0 when the arena is empty.
double ReuseFactor(const ArenaPlan& plan);

// Three lines: the peak, the arena buffers' count and sizes' sum, and the
// reuse factor (sum / peak).
std::string ArenaPlanSummary(const ArenaPlan& plan);

// A self-contained SVG document (no scripts, fonts or links), the same bytes
// for the same plan and `source` (the file named in its title). Names are
// escaped for XML; bytes that are not printable text are shown as \xNN.
std::string ArenaPlanSvg(const ArenaPlan& plan, const std::string& source);

}  // namespace nanort::tools

#endif  // NANORT_TOOLS_PLAN_SVG_H_
