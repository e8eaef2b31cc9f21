// Transpose of any dtype as a strided copy (index_loops.h): output dim i
// walks input dim perm[i]. The copy is simplified first: size-1 dims dropped
// and input dims that stay adjacent and in order merged, so [N, C, H, W] ->
// [N, H, W, C] becomes a 3-D [N, C, HW] -> [N, HW, C]. Where the input's last
// dim stays last, each output row is one memcpy of a contiguous run;
// otherwise a strided gather of elements moved as integers of their size.
#include "compiler/codegen/cpu/index_loops.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/ir/error.h"
#include "compiler/ops/data_movement.h"

namespace nanoc::cpu {
namespace {

StridedCopy transposeCopy(const Node& node) {
  const TensorType& x = node.inputs[0]->type;
  const std::vector<int64_t>& perm = node.ints("perm");
  size_t rank = x.rank();
  std::vector<bool> seen(rank);
  bool valid = perm.size() == rank;
  for (size_t i = 0; valid && i < rank; ++i) {
    valid = perm[i] >= 0 && perm[i] < static_cast<int64_t>(rank) && !seen[perm[i]];
    if (valid) seen[perm[i]] = true;
  }
  if (!valid)
    throw CompileError("node '" + node.name + "' (Transpose): perm is not a permutation of the " +
                       std::to_string(rank) + " dims of " + x.str());
  if (x.numel() == 0) return simplifyStridedCopy({0}, {1}, 0);
  std::vector<int64_t> stride = stridesOf(x.dims), dims(rank), strides(rank);
  for (size_t i = 0; i < rank; ++i) {
    dims[i] = x.dims[perm[i]];
    strides[i] = stride[perm[i]];
  }
  return simplifyStridedCopy(dims, strides, 0);
}

}  // namespace

Lowering makeTransposeLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return transposeCopy(node).tasks.count(); };
  lowering.emit = [](KernelBuilder& kb) {
    emitStridedCopy(kb, kb.node.inputs[0]->type.dtype, transposeCopy(kb.node));
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
