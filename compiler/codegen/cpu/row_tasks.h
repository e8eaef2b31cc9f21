// Splitting a kernel's work into coarse tasks. Most lowerings see their
// output as `rows` x `cols` (cols unit-stride in the output); a task is a
// group of whole rows, or, when one row alone is large, a block of one row, so
// every task holds about `kTaskElements` elements and the task count stays
// proportional to the tensor's size, never one per element.
#pragma once

#include <cstdint>
#include <functional>

#include "compiler/codegen/cpu/lowering.h"

namespace nanoc::cpu {

// Elements per task: large enough that a task's fixed cost (a few divisions
// and a call) is noise, small enough that mid-sized tensors still split.
inline constexpr int64_t kTaskElements = 16384;

struct RowTasks {
  int64_t rows = 1, cols = 1;
  int64_t rows_per_task = 1;  // whole rows per task when a row is small
  int64_t cols_per_task = 1;  // columns per task (= cols unless a row is split)
  int64_t col_blocks = 1;     // tasks per row (1 unless a row is split)

  uint64_t count() const;
};

// rows, cols >= 0; an empty tensor gets one task that does nothing.
RowTasks splitRows(int64_t rows, int64_t cols, int64_t task_elements = kTaskElements);

// Emits the loop over tasks [kb.task_begin, kb.task_end): for each row of
// each task, body(row, col_begin, col_end) with i64 values.
void emitRowTasks(KernelBuilder& kb, const RowTasks& tasks,
                  const std::function<void(llvm::Value* row, llvm::Value* col_begin,
                                           llvm::Value* col_end)>& body);

}  // namespace nanoc::cpu
