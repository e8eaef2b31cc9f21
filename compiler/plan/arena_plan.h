// Buffer assignment: where every value of a compiled graph lives at run time.
// Graph inputs and outputs are the caller's tensors, constants are slices of
// the read-only constants blob, and every other value gets an offset in the
// one arena, reusing space between values whose lifetimes do not overlap.
// The planner that packs arena values is behind one small interface
// (ArenaPlanner, as in TFLite Micro), so a better one drops in.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace nanoc {

// Same numbering as schema/program.fbs BufferKind. The plan gives values
// made on the GPU (passes/gpu_placement.h) Device slices; DeviceConstant is
// how a GPU thunk names a Constant slice (program_builder.cc), never a plan's.
enum class BufferKind : uint8_t {
  Constant = 0,
  Input = 1,
  Output = 2,
  Arena = 3,
  Device = 4,
  DeviceConstant = 5
};

struct BufferSlice {
  BufferKind kind = BufferKind::Arena;
  uint32_t index = 0;   // Input/Output: position in the entry signature
  uint64_t offset = 0;  // bytes from the start of the blob, arena or tensor
  uint64_t size = 0;    // bytes
  uint32_t alignment = 0;
};

// A value that needs arena space: alive from the node that defines it through
// the last node that reads it (node indices, both ends inclusive).
struct LiveRange {
  uint64_t size = 0;
  int first = 0;
  int last = 0;
};

class ArenaPlanner {
 public:
  virtual ~ArenaPlanner() = default;
  virtual const char* name() const = 0;
  // Offsets (multiples of `alignment`) for each range such that no two ranges
  // alive at a common node overlap. Returns the offsets, in the input order.
  virtual std::vector<uint64_t> place(const std::vector<LiveRange>& ranges,
                                      uint32_t alignment) const = 0;
};

// Places the largest buffers first, each at the lowest offset where it fits
// beside the already placed buffers it shares a lifetime with (TFLite Micro's
// greedy-by-size). Deterministic: ties break by definition order.
class GreedyBySizePlanner : public ArenaPlanner {
 public:
  const char* name() const override { return "greedy-by-size"; }
  std::vector<uint64_t> place(const std::vector<LiveRange>& ranges,
                              uint32_t alignment) const override;
};

struct ArenaPlan {
  static constexpr uint32_t kAlignment = 64;  // every arena and constant slice
  uint64_t arena_size = 0;                    // exact: the end of the highest arena slice
  // One worker's scratch (the most any kernel uses, 64-byte rounded): nanort
  // appends it to the arena at the next 64-byte boundary (nanort_kernel_args).
  uint64_t scratch_size = 0;
  // What a session's arena must hold: the slices, then worker 0's scratch.
  uint64_t sessionArenaSize() const {
    return scratch_size == 0 ? arena_size : (arena_size + 63) / 64 * 64 + scratch_size;
  }
  // The session's device arena (GPU programs): values made on the GPU,
  // placed as the host arena's are, at 256-byte alignment (the driver's).
  static constexpr uint32_t kDeviceAlignment = 256;
  uint64_t device_arena_size = 0;
  uint64_t constants_size = 0;     // bytes of the constants blob
  std::vector<uint8_t> constants;  // the blob: every constant at its slice
  // Every value that a thunk or the entry signature refers to.
  std::map<const Value*, BufferSlice> slices;
  // Nodes that need no thunk at run: a Reshape whose output is a view of its
  // input, a Concat whose inputs are slices of its output.
  std::vector<const Node*> aliased;

  const BufferSlice& at(const Value* value) const;
  bool isAlias(const Node* node) const;
};

// For a node whose kernel may write its output over one of its inputs: that
// input's position, where the kernel reads each element of it only to make
// the same element of output 0, before writing that element, on every target
// (a residual that the epilogue adds, ops/epilogue.h); -1: none.
using InPlaceInput = std::function<int(const Node&)>;

// Assigns every value of `graph` (after the pass pipeline: typed, outputs
// legalized) a slice. With `in_place`, a node's output 0 takes the slot of
// the input it names where that input is an arena value of the same type
// that dies at the node (no later node reads it or a view of it), no other
// input of the node shares its memory, and the graph has no control flow.
ArenaPlan planBuffers(const Graph& graph, const ArenaPlanner& planner = GreedyBySizePlanner(),
                      const InPlaceInput& in_place = {});

// A readable listing of the plan, for `nanoc --emit=plan` and FileCheck tests.
std::string printPlan(const Graph& graph, const ArenaPlan& plan);

}  // namespace nanoc
