// Col2Im as a gather: a task is a group of output rows (the last image axis,
// per (n, c)); each output element sums, over the K kernel offsets in order,
// the input value of the block position that puts that offset on it, where
// one exists (the offset must land on a stride multiple inside the blocks).
// Invalid offsets read element 0 of the plane and select 0 instead.
#include <algorithm>
#include <vector>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ops/col2im.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::cpu {
namespace {

struct Col2ImShape {
  Col2ImParams p;
  int64_t N = 0;
  RowTasks tasks;
};

Col2ImShape col2ImShape(const Node& node) {
  Col2ImShape s;
  s.p = col2ImParams(node);
  s.N = node.inputs[0]->type.dims[0];
  const size_t r = s.p.image.size();
  int64_t rows = s.N * s.p.C * product(s.p.image, 0, r - 1);
  s.tasks = splitRows(rows, s.p.image[r - 1],
                      std::max<int64_t>(1, kTaskElements / std::max<int64_t>(1, s.p.K)));
  return s;
}

}  // namespace

Lowering makeCol2ImLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return col2ImShape(node).tasks.count(); };
  lowering.emit = [](KernelBuilder& kb) {
    Col2ImShape s = col2ImShape(kb.node);
    const Col2ImParams& p = s.p;
    const size_t r = p.image.size();
    llvm::IRBuilder<>& b = kb.b;
    const DType dtype = kb.node.inputs[0]->type.dtype;
    llvm::Type* ct = computeType(b.getContext(), dtype);
    auto ci = [&](int64_t v) { return b.getInt64(v); };
    llvm::Value* x = kb.input(0);
    llvm::Value* y = kb.output(0);
    const int64_t inner_rows = product(p.image, 0, r - 1);
    const int64_t last = p.image[r - 1];
    std::vector<int64_t> l_stride(r, 1);
    for (size_t a = r - 1; a > 0; --a) l_stride[a - 1] = l_stride[a] * p.blocks[a];
    emitRowTasks(kb, s.tasks, [&](llvm::Value* row, llvm::Value* col_begin, llvm::Value* col_end) {
      llvm::Value* plane = b.CreateUDiv(row, ci(inner_rows));  // n * C + c
      std::vector<llvm::Value*> pos(r);
      llvm::Value* rem = b.CreateURem(row, ci(inner_rows));
      for (size_t a = r - 1; a-- > 0;) {
        pos[a] = b.CreateURem(rem, ci(p.image[a]));
        rem = b.CreateUDiv(rem, ci(p.image[a]));
      }
      llvm::Value* x_plane = b.CreateMul(plane, ci(p.K * p.L));
      llvm::Value* y_row = b.CreateMul(row, ci(last));
      emitLoop(
          b, col_begin, col_end,
          [&](llvm::Value* col) {
            pos[r - 1] = col;
            auto tap = [&](llvm::Value* kf, llvm::Value* acc) {
              llvm::Value* valid = b.getTrue();
              llvm::Value* lf = ci(0);
              llvm::Value* krem = kf;
              for (size_t a = r; a-- > 0;) {
                llvm::Value* k = b.CreateURem(krem, ci(p.block[a]));
                krem = b.CreateUDiv(krem, ci(p.block[a]));
                // l * stride = the block position.
                const WindowSource src = emitWindowSource(b, pos[a], k, p.pads[a], p.dilations[a],
                                                          p.strides[a], p.blocks[a]);
                llvm::Value* l = src.index;
                valid = b.CreateAnd(valid, src.valid);
                lf = b.CreateAdd(lf, b.CreateMul(l, ci(l_stride[a])));
              }
              llvm::Value* index = b.CreateAdd(
                  x_plane, b.CreateSelect(valid, b.CreateAdd(b.CreateMul(kf, ci(p.L)), lf), ci(0)));
              llvm::Value* v = loadCompute(b, dtype, x, index);
              return b.CreateFAdd(acc, b.CreateSelect(valid, v, llvm::ConstantFP::get(ct, 0.0)));
            };
            llvm::Value* sum =
                emitReduction(b, ci(0), ci(p.K), llvm::ConstantFP::get(ct, 0.0), tap, "k");
            storeCompute(b, dtype, sum, y, b.CreateAdd(y_row, col));
          },
          "col");
    });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
