// Transpose of any dtype, moved as integers of the element's size. The
// permutation is first simplified: size-1 dims dropped and input dims that
// stay adjacent and in order merged, so [N, C, H, W] -> [N, H, W, C] becomes a
// 3-D [N, C, HW] -> [N, HW, C]. Each output row (last output dim) is then one
// loop: a unit-stride copy where the input's last dim stays last, otherwise a
// strided gather.
#include <algorithm>
#include <numeric>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ir/error.h"

namespace nanoc::cpu {
namespace {

struct TransposeLayout {
  std::vector<int64_t> out_dims;    // collapsed output dims
  std::vector<int64_t> in_strides;  // input element stride for each output dim
};

TransposeLayout collapseTranspose(const Node& node) {
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
  std::vector<int64_t> stride(rank, 1);
  for (size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * x.dims[d];

  // Output dims in order, each with its input stride; size-1 dims index
  // nothing, and an output dim that continues the previous one's input run
  // (previous stride = this stride * this size) merges with it.
  TransposeLayout layout;
  for (size_t i = 0; i < rank; ++i) {
    int64_t axis = perm[i];
    int64_t dim = x.dims[axis];
    if (dim == 1) continue;
    if (!layout.out_dims.empty() && layout.in_strides.back() == stride[axis] * dim) {
      layout.out_dims.back() *= dim;
      layout.in_strides.back() = stride[axis];
    } else {
      layout.out_dims.push_back(dim);
      layout.in_strides.push_back(stride[axis]);
    }
  }
  if (layout.out_dims.empty()) {
    layout.out_dims.push_back(1);
    layout.in_strides.push_back(1);
  }
  return layout;
}

RowTasks transposeTasks(const TransposeLayout& layout) {
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < layout.out_dims.size(); ++d) rows *= layout.out_dims[d];
  return splitRows(rows, layout.out_dims.back());
}

}  // namespace

Lowering makeTransposeLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) {
    return transposeTasks(collapseTranspose(node)).count();
  };
  lowering.emit = [](KernelBuilder& kb) {
    TransposeLayout layout = collapseTranspose(kb.node);
    RowTasks tasks = transposeTasks(layout);
    llvm::IRBuilder<>& b = kb.b;
    llvm::Type* element = b.getIntNTy(8 * dtypeSize(kb.node.inputs[0]->type.dtype));
    auto c = [&](int64_t v) { return b.getInt64(v); };
    size_t k = layout.out_dims.size();
    int64_t inner_stride = layout.in_strides[k - 1];
    emitRowTasks(kb, tasks, [&](llvm::Value* row, llvm::Value* col_begin, llvm::Value* col_end) {
      llvm::Value* in_base = c(0);
      llvm::Value* rest = row;
      for (size_t d = k - 1; d-- > 0;) {
        llvm::Value* idx = d == 0 ? rest : b.CreateURem(rest, c(layout.out_dims[d]));
        if (d > 0) rest = b.CreateUDiv(rest, c(layout.out_dims[d]));
        in_base = b.CreateAdd(in_base, b.CreateMul(idx, c(layout.in_strides[d])));
      }
      llvm::Value* out_base = b.CreateMul(row, c(layout.out_dims.back()));
      emitLoop(
          b, col_begin, col_end,
          [&](llvm::Value* col) {
            llvm::Value* from = b.CreateAdd(in_base, b.CreateMul(col, c(inner_stride)));
            llvm::Value* v = b.CreateLoad(element, b.CreateInBoundsGEP(element, kb.input(0), from));
            b.CreateStore(v,
                          b.CreateInBoundsGEP(element, kb.output(0), b.CreateAdd(out_base, col)));
          },
          "col");
    });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
