// Pad: one element per output element. Each padded axis maps the output
// coordinate to an input coordinate by the mode's rule (padSource in
// compiler/ops/pad.h); in constant mode an outside coordinate selects the
// fill value, read from input 1 (or zero), after a load clamped to element 0
// so that no load leaves the input.
#include "compiler/codegen/cpu/index_loops.h"
#include "compiler/codegen/cpu/operand_alias.h"
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
    std::vector<int64_t> xs(x.rank(), 1);
    for (size_t d = x.rank(); d-- > 1;) xs[d - 1] = xs[d] * x.dims[d];
    llvm::IRBuilder<>& b = kb.b;
    llvm::Type* element = bitsType(b, x.dtype);
    bool has_value = kb.node.inputs.size() > 1 && kb.node.inputs[1];
    // With nothing left of some axis, every output element is the fill.
    bool empty_input = false;
    for (size_t d = 0; d < x.rank(); ++d)
      empty_input |= padAxis(x.dims[d], pads[d], pads[x.rank() + d]).kept == 0;
    emitElementTasks(kb, y.dims, [&](const std::vector<llvm::Value*>& index, llvm::Value* linear) {
      llvm::Value* fill = has_value ? static_cast<llvm::Value*>(b.CreateLoad(element, kb.input(1)))
                                    : llvm::ConstantInt::get(element, 0);
      llvm::Value* v = fill;
      if (!empty_input) {
        llvm::Value* at = b.getInt64(0);
        llvm::Value* outside = b.getFalse();
        for (size_t d = 0; d < x.rank(); ++d) {
          PadAxis a = padAxis(x.dims[d], pads[d], pads[x.rank() + d]);
          llvm::Value* i = b.CreateSub(index[d], b.getInt64(a.pad_begin));
          llvm::Value* axis_outside = nullptr;
          bool unpadded = pads[d] <= 0 && pads[x.rank() + d] <= 0;  // only cropped
          llvm::Value* s = unpadded ? i : emitPadSource(b, mode, i, a.kept, &axis_outside);
          if (axis_outside) outside = b.CreateOr(outside, axis_outside);
          s = b.CreateAdd(s, b.getInt64(a.crop_begin));
          at = b.CreateAdd(at, b.CreateMul(s, b.getInt64(xs[d])));
        }
        llvm::Value* loaded = b.CreateLoad(element, bitsPtr(b, x.dtype, kb.input(0), at));
        v = b.CreateSelect(outside, fill, loaded);
      }
      b.CreateStore(v, bitsPtr(b, x.dtype, kb.output(0), linear));
    });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
