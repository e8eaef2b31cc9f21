// Expand as a strided copy with stride 0 along the broadcast dims.
#include "compiler/codegen/cpu/index_loops.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/ops/data_movement.h"

namespace nanoc::cpu {
namespace {

StridedCopy expandCopy(const Node& node) {
  const TensorType& y = node.outputs[0]->type;
  if (y.numel() == 0) return simplifyStridedCopy({0}, {1}, 0);
  return simplifyStridedCopy(y.dims, expandView(node).strides, 0);
}

}  // namespace

Lowering makeExpandLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return expandCopy(node).tasks.count(); };
  lowering.emit = [](KernelBuilder& kb) {
    emitStridedCopy(kb, kb.node.inputs[0]->type.dtype, expandCopy(kb.node));
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
