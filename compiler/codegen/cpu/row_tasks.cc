#include "compiler/codegen/cpu/row_tasks.h"

#include <algorithm>

#include "compiler/codegen/cpu/loops.h"

namespace nanoc::cpu {

uint64_t RowTasks::count() const {
  if (rows <= 0 || cols <= 0) return 1;
  return static_cast<uint64_t>((rows + rows_per_task - 1) / rows_per_task) *
         static_cast<uint64_t>(col_blocks);
}

RowTasks splitRows(int64_t rows, int64_t cols, int64_t task_elements) {
  RowTasks t;
  t.rows = rows;
  t.cols = cols;
  t.cols_per_task = std::max<int64_t>(cols, 1);
  if (rows <= 0 || cols <= 0) return t;
  if (cols >= task_elements) {
    // Blocks a multiple of 64 elements where tasks are that large, so each
    // starts vector-aligned relative to its row.
    int64_t align = task_elements >= 64 ? 64 : 1;
    int64_t block = std::max<int64_t>(1, task_elements / align * align);
    t.col_blocks = (cols + block - 1) / block;
    t.cols_per_task = (cols + t.col_blocks - 1) / t.col_blocks;
    t.cols_per_task = (t.cols_per_task + align - 1) / align * align;
    t.col_blocks = (cols + t.cols_per_task - 1) / t.cols_per_task;
  } else {
    t.rows_per_task = std::max<int64_t>(1, task_elements / cols);
  }
  return t;
}

void emitRowTasks(KernelBuilder& kb, const RowTasks& tasks,
                  const std::function<void(llvm::Value*, llvm::Value*, llvm::Value*)>& body) {
  if (tasks.rows <= 0 || tasks.cols <= 0) return;
  llvm::IRBuilder<>& b = kb.b;
  auto* i64 = b.getInt64Ty();
  auto c = [&](int64_t v) { return llvm::ConstantInt::get(i64, v); };
  emitLoop(
      b, kb.task_begin, kb.task_end,
      [&](llvm::Value* t) {
        llvm::Value* row_group = tasks.col_blocks == 1 ? t : b.CreateUDiv(t, c(tasks.col_blocks));
        llvm::Value* block = tasks.col_blocks == 1 ? c(0) : b.CreateURem(t, c(tasks.col_blocks));
        llvm::Value* row_begin = b.CreateMul(row_group, c(tasks.rows_per_task), "", true, true);
        llvm::Value* row_end = b.CreateBinaryIntrinsic(
            llvm::Intrinsic::smin, b.CreateAdd(row_begin, c(tasks.rows_per_task), "", true, true),
            c(tasks.rows));
        llvm::Value* col_begin = b.CreateMul(block, c(tasks.cols_per_task), "", true, true);
        llvm::Value* col_end = b.CreateBinaryIntrinsic(
            llvm::Intrinsic::smin, b.CreateAdd(col_begin, c(tasks.cols_per_task), "", true, true),
            c(tasks.cols));
        // Rows one after the other: LLVM vectorizes the columns (or, where
        // it unrolls a short row away, the straight-line code), not the rows
        // with gathers and scatters (a 7 x 7 plane's broadcast Mul: 64 -> 6
        // us for 1152 planes).
        emitLoop(
            b, row_begin, row_end, [&](llvm::Value* row) { body(row, col_begin, col_end); }, "row",
            tasks.cols >= 8 ? LoopHint::NoVectorize : LoopHint::None);
      },
      "task");
}

}  // namespace nanoc::cpu
