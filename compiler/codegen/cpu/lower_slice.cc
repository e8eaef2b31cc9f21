// Slice as a strided copy: starts give the base, steps the strides (negative
// for a reversed axis); unit steps along the last kept dim copy whole runs.
#include "compiler/codegen/cpu/index_loops.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/ops/data_movement.h"

namespace nanoc::cpu {
namespace {

StridedCopy sliceCopy(const Node& node) {
  const TensorType& y = node.outputs[0]->type;
  if (y.numel() == 0) return simplifyStridedCopy({0}, {1}, 0);
  StridedView view = sliceView(node);
  return simplifyStridedCopy(y.dims, view.strides, view.base);
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
