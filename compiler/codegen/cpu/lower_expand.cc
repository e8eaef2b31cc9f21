// Expand as a strided copy with stride 0 along the broadcast dims.
#include "compiler/codegen/cpu/index_loops.h"
#include "compiler/codegen/cpu/operand_alias.h"

namespace nanoc::cpu {
namespace {

StridedCopy expandCopy(const Node& node) {
  const TensorType& x = node.inputs[0]->type;
  const TensorType& y = node.outputs[0]->type;
  std::vector<int64_t> xs(x.rank(), 1), strides(y.rank(), 0);
  for (size_t d = x.rank(); d-- > 1;) xs[d - 1] = xs[d] * x.dims[d];
  size_t lead = y.rank() - x.rank();
  for (size_t d = 0; d < x.rank(); ++d)
    strides[lead + d] = x.dims[d] == 1 && y.dims[lead + d] != 1 ? 0 : xs[d];
  if (y.numel() == 0) return simplifyStridedCopy({0}, {1}, 0);
  return simplifyStridedCopy(y.dims, strides, 0);
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
