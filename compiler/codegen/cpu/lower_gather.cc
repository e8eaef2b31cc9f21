// Gather: the output is [outer, count, block] (outer = data dims before axis,
// count = number of indices, block = data dims after axis); each (o, j) row
// is one contiguous block of data, copied in a piece per task.
#include "compiler/codegen/cpu/index_loops.h"
#include "compiler/codegen/cpu/operand_alias.h"

namespace nanoc::cpu {
namespace {

struct GatherLayout {
  int64_t outer = 1, count = 1, dim = 1, block = 1;
  RowTasks tasks;
};

GatherLayout gatherLayout(const Node& node) {
  const TensorType& data = node.inputs[0]->type;
  size_t axis = static_cast<size_t>(node.i("axis"));
  GatherLayout l;
  for (size_t d = 0; d < axis; ++d) l.outer *= data.dims[d];
  for (size_t d = axis + 1; d < data.rank(); ++d) l.block *= data.dims[d];
  l.count = node.inputs[1]->type.numel();
  l.dim = data.dims[axis];
  l.tasks = splitRows(l.outer * l.count, l.block);
  return l;
}

}  // namespace

Lowering makeGatherLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return gatherLayout(node).tasks.count(); };
  lowering.emit = [](KernelBuilder& kb) {
    GatherLayout l = gatherLayout(kb.node);
    DType dtype = kb.node.inputs[0]->type.dtype;
    DType index_dtype = kb.node.inputs[1]->type.dtype;
    llvm::IRBuilder<>& b = kb.b;
    auto c = [&](int64_t v) { return b.getInt64(v); };
    emitRowTasks(kb, l.tasks, [&](llvm::Value* row, llvm::Value* col_begin, llvm::Value* col_end) {
      llvm::Value* o = b.CreateUDiv(row, c(l.count));
      llvm::Value* j = b.CreateURem(row, c(l.count));
      llvm::Value* k = emitClampIndex(b, loadIndex(b, index_dtype, kb.input(1), j), l.dim);
      llvm::Value* from = b.CreateMul(b.CreateAdd(b.CreateMul(o, c(l.dim)), k), c(l.block));
      llvm::Value* to = b.CreateMul(row, c(l.block));
      emitCopyRun(b, dtype, kb.output(0), to, kb.input(0), from, col_begin, col_end, l.block);
    });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
