// Pad by output rows (the last dim). Each padded outer axis maps the row's
// coordinate to an input coordinate once per row by the mode's rule
// (padSource in compiler/ops/pad.h); along the row, the columns over the kept
// input run copy it in order and only the padding columns at either end apply
// the rule per element. In constant mode a coordinate in the padding selects
// the fill value (input 1, or zero) after a load kept inside the input, so no
// load leaves it.
#include "compiler/codegen/cpu/index_loops.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/ops/data_movement.h"
#include "compiler/ops/pad.h"

namespace nanoc::cpu {
namespace {

// The input coordinate for i = o - pad_begin (i64) along an axis of size dim
// >= 1; sets *outside (i1) in constant mode.
llvm::Value* emitPadSource(llvm::IRBuilder<>& b, PadMode mode, llvm::Value* i, int64_t dim,
                           llvm::Value** outside) {
  auto c = [&](int64_t v) { return b.getInt64(v); };
  switch (mode) {
    case PadMode::Constant: {
      *outside = b.CreateICmpUGE(i, c(dim));  // negative i is a huge unsigned value
      return b.CreateSelect(*outside, c(0), i);
    }
    case PadMode::Edge:
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin,
                                     b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, i, c(0)),
                                     c(dim - 1));
    case PadMode::Wrap: {
      llvm::Value* m = b.CreateSRem(i, c(dim));
      return b.CreateSelect(b.CreateICmpSLT(m, c(0)), b.CreateAdd(m, c(dim)), m);
    }
    case PadMode::Reflect: {
      if (dim == 1) return c(0);
      int64_t period = 2 * (dim - 1);
      llvm::Value* m = b.CreateSRem(i, c(period));
      m = b.CreateSelect(b.CreateICmpSLT(m, c(0)), b.CreateAdd(m, c(period)), m);
      return b.CreateSelect(b.CreateICmpSGE(m, c(dim)), b.CreateSub(c(period), m), m);
    }
  }
  return i;
}

}  // namespace

Lowering makePadLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) {
    return elementTasks(node.outputs[0]->type.dims).count();
  };
  lowering.emit = [](KernelBuilder& kb) {
    const TensorType& x = kb.node.inputs[0]->type;
    const TensorType& y = kb.node.outputs[0]->type;
    PadMode mode = padMode(kb.node);
    const std::vector<int64_t>& pads = kb.node.ints("pads");
    size_t rank = x.rank();
    std::vector<int64_t> xs = stridesOf(x.dims);
    std::vector<PadAxis> axes;
    for (size_t d = 0; d < rank; ++d) axes.push_back(padAxis(x.dims[d], pads[d], pads[rank + d]));
    // A scalar is one row of one element that reads itself.
    PadAxis last = rank ? axes.back() : PadAxis{0, 0, 1};
    bool last_padded = rank && (pads[rank - 1] > 0 || pads[2 * rank - 1] > 0);
    llvm::IRBuilder<>& b = kb.b;
    auto c = [&](int64_t v) { return b.getInt64(v); };
    llvm::Type* element = bitsType(b, x.dtype);
    bool has_value = kb.node.inputs.size() > 1 && kb.node.inputs[1];
    // With nothing left of some axis, every output element is the fill.
    bool empty_input = false;
    for (const PadAxis& a : axes) empty_input |= a.kept == 0;
    std::vector<int64_t> out_dims = rank ? y.dims : std::vector<int64_t>{1};
    RowTasks tasks = elementTasks(out_dims);
    emitRowTasks(kb, tasks, [&](llvm::Value* row, llvm::Value* col_begin, llvm::Value* col_end) {
      llvm::Value* fill = has_value ? static_cast<llvm::Value*>(b.CreateLoad(element, kb.input(1)))
                                    : llvm::ConstantInt::get(element, 0);
      llvm::Value* out_row = b.CreateMul(row, c(tasks.cols));
      auto store = [&](llvm::Value* col, llvm::Value* v) {
        b.CreateStore(v, bitsPtr(b, x.dtype, kb.output(0), b.CreateAdd(out_row, col)));
      };
      if (empty_input) {
        emitLoop(
            b, col_begin, col_end, [&](llvm::Value* col) { store(col, fill); }, "col");
        return;
      }
      // The row's input offset and, in constant mode, whether any outer
      // coordinate falls in the padding (then the whole row is the fill; the
      // offset is kept inside the input so that loads stay in bounds).
      llvm::Value* at = c(0);
      llvm::Value* outside = b.getFalse();
      llvm::Value* rest = row;
      for (size_t d = rank < 1 ? 0 : rank - 1; d-- > 0;) {
        llvm::Value* o = d == 0 ? rest : b.CreateURem(rest, c(y.dims[d]));
        if (d > 0) rest = b.CreateUDiv(rest, c(y.dims[d]));
        const PadAxis& a = axes[d];
        llvm::Value* i = b.CreateSub(o, c(a.pad_begin));
        llvm::Value* axis_outside = nullptr;
        bool padded = pads[d] > 0 || pads[rank + d] > 0;
        llvm::Value* src = padded ? emitPadSource(b, mode, i, a.kept, &axis_outside) : i;
        if (axis_outside) outside = b.CreateOr(outside, axis_outside);
        at = b.CreateAdd(at, b.CreateMul(b.CreateAdd(src, c(a.crop_begin)), c(xs[d])));
      }
      at = b.CreateAdd(at, c(last.crop_begin));
      // Columns [lo, hi) read the kept input run in order; those before and
      // after follow the mode.
      llvm::Value* lo = c(last.pad_begin);
      llvm::Value* hi = c(last.pad_begin + last.kept);
      auto element_at = [&](llvm::Value* col, llvm::Value* src_col) {
        llvm::Value* v =
            b.CreateLoad(element, bitsPtr(b, x.dtype, kb.input(0), b.CreateAdd(at, src_col)));
        return b.CreateSelect(outside, fill, v);
      };
      auto edge = [&](llvm::Value* begin, llvm::Value* end) {
        emitLoop(
            b, begin, end,
            [&](llvm::Value* col) {
              llvm::Value* axis_outside = nullptr;
              llvm::Value* src =
                  emitPadSource(b, mode, b.CreateSub(col, lo), last.kept, &axis_outside);
              llvm::Value* v = element_at(col, src);
              store(col, axis_outside ? b.CreateSelect(axis_outside, fill, v) : v);
            },
            "edge");
      };
      auto smax = [&](llvm::Value* p, llvm::Value* q) {
        return b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, p, q);
      };
      auto smin = [&](llvm::Value* p, llvm::Value* q) {
        return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, p, q);
      };
      if (last_padded) edge(col_begin, smin(col_end, lo));
      emitLoop(
          b, smax(col_begin, lo), smin(col_end, hi),
          [&](llvm::Value* col) { store(col, element_at(col, b.CreateSub(col, lo))); }, "run");
      if (last_padded) edge(smax(col_begin, hi), col_end);
    });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
