// AffineGrid: a task is a group of output rows (n and every spatial axis but
// the last); theta[n] is loaded once per row and the column loop computes
// each position's normalized coordinates inline (no base-grid table) and its
// r outputs, a straight-line loop that vectorizes.
#include <string>
#include <vector>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::cpu {
namespace {

RowTasks affineTasks(const Node& node) {
  const std::vector<int64_t>& dims = node.outputs[0]->type.dims;  // [N, D1..Dr, r]
  const size_t r = dims.size() - 2;
  return splitRows(product(dims, 0, r), dims[r], kTaskElements / 4);
}

}  // namespace

Lowering makeAffineGridLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return affineTasks(node).count(); };
  lowering.emit = [](KernelBuilder& kb) {
    const RowTasks tasks = affineTasks(kb.node);
    const std::vector<int64_t>& dims = kb.node.outputs[0]->type.dims;
    const size_t r = dims.size() - 2;
    const auto R = static_cast<int64_t>(r);
    const std::vector<int64_t> spatial(dims.begin() + 1, dims.end() - 1);
    const bool align = kb.node.i("align_corners") != 0;
    llvm::IRBuilder<>& b = kb.b;
    const DType dt = kb.node.inputs[0]->type.dtype;
    llvm::Type* ct = computeType(b.getContext(), dt);
    auto cf = [&](double v) { return llvm::ConstantFP::get(ct, v); };
    auto ci = [&](int64_t v) { return b.getInt64(v); };
    llvm::Value* theta = kb.input(0);
    llvm::Value* grid = kb.output(0);
    // The normalized coordinate of index i on an axis of size d.
    auto coord = [&](llvm::Value* i, int64_t d) -> llvm::Value* {
      llvm::Value* fi = b.CreateSIToFP(i, ct);
      if (align) {
        if (d <= 1) return cf(-1);
        return b.CreateFAdd(cf(-1), b.CreateFDiv(b.CreateFMul(cf(2), fi), cf(double(d - 1))));
      }
      return b.CreateFAdd(
          cf(-1), b.CreateFDiv(b.CreateFAdd(b.CreateFMul(cf(2), fi), cf(1)), cf(double(d))));
    };
    const int64_t rows_per_n = product(spatial, 0, r - 1);
    emitRowTasks(kb, tasks, [&](llvm::Value* row, llvm::Value* col_begin, llvm::Value* col_end) {
      llvm::Value* n = b.CreateUDiv(row, ci(rows_per_n));
      llvm::Value* rem = b.CreateURem(row, ci(rows_per_n));
      // base[j] for the axes other than the last: j = r - 1 - a.
      std::vector<llvm::Value*> base(r + 1);
      for (size_t a = r - 1; a-- > 0;) {
        base[r - 1 - a] = coord(b.CreateURem(rem, ci(spatial[a])), spatial[a]);
        rem = b.CreateUDiv(rem, ci(spatial[a]));
      }
      base[r] = cf(1);
      std::vector<llvm::Value*> t(static_cast<size_t>(R * (R + 1)));
      llvm::Value* t_at = b.CreateMul(n, ci(R * (R + 1)));
      for (int64_t k = 0; k < R * (R + 1); ++k)
        t[static_cast<size_t>(k)] = loadCompute(b, dt, theta, b.CreateAdd(t_at, ci(k)));
      llvm::Value* y_row = b.CreateMul(row, ci(spatial[r - 1] * R));
      emitLoop(
          b, col_begin, col_end,
          [&](llvm::Value* col) {
            base[0] = coord(col, spatial[r - 1]);
            llvm::Value* at = b.CreateAdd(y_row, b.CreateMul(col, ci(R)));
            for (int64_t k = 0; k < R; ++k) {
              llvm::Value* acc = cf(0);
              for (int64_t j = 0; j <= R; ++j)
                acc = b.CreateFAdd(acc, b.CreateFMul(t[static_cast<size_t>(k * (R + 1) + j)],
                                                     base[static_cast<size_t>(j)]));
              storeCompute(b, dt, acc, grid, b.CreateAdd(at, ci(k)));
            }
          },
          "col");
    });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
