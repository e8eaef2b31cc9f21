// GatherND: the output is [batches * tuples, block]; each row is the block of
// data that one index tuple names, copied in a piece per task.
#include "compiler/codegen/cpu/index_loops.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/ops/data_movement.h"

namespace nanoc::cpu {
namespace {

struct GatherNDLayout {
  size_t b = 0, m = 1;
  int64_t tuples = 1, batch_elems = 1, block = 1, rows = 1;
  RowTasks tasks;
};

GatherNDLayout gatherNDLayout(const Node& node) {
  const TensorType& data = node.inputs[0]->type;
  const TensorType& indices = node.inputs[1]->type;
  GatherNDLayout l;
  l.b = static_cast<size_t>(node.i("batch_dims"));
  l.m = static_cast<size_t>(indices.dims.back());
  int64_t batches = 1;
  for (size_t d = 0; d < l.b; ++d) batches *= data.dims[d];
  for (size_t d = l.b; d + 1 < indices.rank(); ++d) l.tuples *= indices.dims[d];
  for (size_t d = l.b; d < data.rank(); ++d) l.batch_elems *= data.dims[d];
  for (size_t d = l.b + l.m; d < data.rank(); ++d) l.block *= data.dims[d];
  l.rows = batches * l.tuples;
  l.tasks = splitRows(l.rows, l.block);
  return l;
}

}  // namespace

Lowering makeGatherNDLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return gatherNDLayout(node).tasks.count(); };
  lowering.emit = [](KernelBuilder& kb) {
    GatherNDLayout l = gatherNDLayout(kb.node);
    const TensorType& data = kb.node.inputs[0]->type;
    DType index_dtype = kb.node.inputs[1]->type.dtype;
    std::vector<int64_t> ds = stridesOf(data.dims);
    llvm::IRBuilder<>& b = kb.b;
    auto c = [&](int64_t v) { return b.getInt64(v); };
    emitRowTasks(kb, l.tasks, [&](llvm::Value* row, llvm::Value* col_begin, llvm::Value* col_end) {
      llvm::Value* at = b.CreateMul(b.CreateUDiv(row, c(l.tuples)), c(l.batch_elems));
      llvm::Value* tuple = b.CreateMul(row, c(static_cast<int64_t>(l.m)));
      for (size_t k = 0; k < l.m; ++k) {
        llvm::Value* i =
            loadIndex(b, index_dtype, kb.input(1), b.CreateAdd(tuple, c(static_cast<int64_t>(k))));
        at = b.CreateAdd(at, b.CreateMul(emitClampIndex(b, i, data.dims[l.b + k]), c(ds[l.b + k])));
      }
      llvm::Value* to = b.CreateMul(row, c(l.block));
      emitCopyRun(b, data.dtype, kb.output(0), to, kb.input(0), at, col_begin, col_end, l.block);
    });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
