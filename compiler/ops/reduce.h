// The reduction family (ReduceSum ... ReduceSumSquare, ArgMax/ArgMin,
// CumSum/CumProd, TopK): the per-kind table and the index maps shared by the
// shape rules, the host references and the CPU lowerings.
//
// Every Reduce* op is one row of the table below: what each element is mapped
// to, how mapped elements combine (which fixes the initial value), and how
// the combined value is finished. The reference and the lowering both
// interpret the row, so a new kind is a new row.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"

namespace nanoc {

enum class ReduceMap { Identity, Abs, Square, ExpShifted };
enum class ReduceCombine { Add, Mul, Max, Min };
enum class ReduceFinish { None, DivideByCount, Sqrt, Log, LogPlusShift };

struct ReduceKind {
  std::string_view op;  // "ReduceSum"
  ReduceMap map;
  ReduceCombine combine;
  ReduceFinish finish;
  bool integers;  // also defined on integer dtypes (wrapping arithmetic)
  bool booleans;  // also defined on bool (Max = any, Min = all)
  // ExpShifted/LogPlusShift: a first pass finds the max, which every exp is
  // taken relative to (log-sum-exp without overflow).
  bool needsShift() const { return map == ReduceMap::ExpShifted; }
};

const std::vector<ReduceKind>& reduceKinds();
const ReduceKind* findReduceKind(std::string_view op);

// A Reduce* node's input seen as runs of adjacent dims that are all reduced
// or all kept (size-1 dims dropped). Each output element is one `outer`
// index and one `inner` index: inner walks the trailing kept run, which is
// unit-stride in input and output (inner = 1 when the last run is reduced).
struct ReduceRun {
  int64_t size = 1;
  int64_t stride = 1;  // in input elements
};
struct ReduceGeometry {
  std::vector<ReduceRun> outer_kept;  // kept runs before the trailing one, row-major
  std::vector<ReduceRun> reduced;     // reduced runs, row-major
  int64_t outer = 1;                  // product of outer_kept sizes
  int64_t inner = 1;                  // trailing kept run (unit stride), else 1
  int64_t reduced_count = 1;          // elements combined into each output
  // Whether the last reduced run is unit-stride (inner == 1 and something
  // is reduced): each output then reduces contiguous rows.
  bool contiguous() const { return inner == 1 && !reduced.empty() && reduced.back().stride == 1; }
};

// Validates a Reduce* node's `axes` (sorted, distinct, in range) and
// `keepdims`; throws CompileError naming the node.
ReduceGeometry reduceGeometry(const Node& node);
std::vector<int64_t> reduceOutputDims(const Node& node);

// The input offset of outer index `o` (mixed-radix decomposition over
// outer_kept), and of reduced index `r` over `reduced`.
int64_t runOffset(const std::vector<ReduceRun>& runs, int64_t index);

// ArgMax/ArgMin, CumSum/CumProd and TopK work along one axis: the input is
// [outer, n, inner] with the axis in the middle.
struct AxisGeometry {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisGeometry axisGeometry(const Node& node, int64_t axis);

}  // namespace nanoc
