// Slice as a strided copy: starts give the base, steps the strides (negative
// for a reversed axis); unit steps along the last kept dim copy whole runs.
#include "compiler/codegen/cpu/index_loops.h"
#include "compiler/codegen/cpu/operand_alias.h"

namespace nanoc::cpu {
namespace {

StridedCopy sliceCopy(const Node& node) {
  const TensorType& x = node.inputs[0]->type;
  const TensorType& y = node.outputs[0]->type;
  const std::vector<int64_t>& starts = node.ints("starts");
  const std::vector<int64_t>& steps = node.ints("steps");
  std::vector<int64_t> xs(x.rank(), 1), strides(x.rank());
  for (size_t d = x.rank(); d-- > 1;) xs[d - 1] = xs[d] * x.dims[d];
  int64_t base = 0;
  for (size_t d = 0; d < x.rank(); ++d) {
    base += starts[d] * xs[d];
    strides[d] = steps[d] * xs[d];
  }
  if (y.numel() == 0) return simplifyStridedCopy({0}, {1}, 0);
  return simplifyStridedCopy(y.dims, strides, base);
}

}  // namespace

Lowering makeSliceLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return sliceCopy(node).tasks.count(); };
  lowering.emit = [](KernelBuilder& kb) {
    emitStridedCopy(kb, kb.node.inputs[0]->type.dtype, sliceCopy(kb.node));
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
