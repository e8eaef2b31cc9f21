// ScatterND and ScatterElements in one task: copy data to the output, then
// apply the updates in order, so repeated indices combine (or overwrite) in
// the order the reference uses.
#include "compiler/codegen/cpu/index_loops.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/ops/data_movement.h"
#include "compiler/ops/scatter.h"

namespace nanoc::cpu {
namespace {

// out[at] = out[at] <reduction> updates[from], as scatterCombine does.
void emitCombine(llvm::IRBuilder<>& b, ScatterReduction r, DType dtype, llvm::Value* out,
                 llvm::Value* at, llvm::Value* updates, llvm::Value* from) {
  if (r == ScatterReduction::None) {
    llvm::Type* element = bitsType(b, dtype);
    b.CreateStore(b.CreateLoad(element, bitsPtr(b, dtype, updates, from)),
                  bitsPtr(b, dtype, out, at));
    return;
  }
  llvm::Value* x = loadCompute(b, dtype, out, at);
  llvm::Value* u = loadCompute(b, dtype, updates, from);
  llvm::Value* v = nullptr;
  bool fp = isFloat(dtype);
  bool is_bool = dtype == DType::Bool;
  switch (r) {
    case ScatterReduction::Add:
      v = fp ? b.CreateFAdd(x, u) : (is_bool ? b.CreateOr(x, u) : b.CreateAdd(x, u));
      break;
    case ScatterReduction::Mul:
      v = fp ? b.CreateFMul(x, u) : (is_bool ? b.CreateAnd(x, u) : b.CreateMul(x, u));
      break;
    case ScatterReduction::Max:
      v = fp ? b.CreateSelect(b.CreateFCmpOLT(x, u), u, x)
             : b.CreateBinaryIntrinsic(
                   isSigned(dtype) ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, x, u);
      break;
    case ScatterReduction::Min:
      v = fp ? b.CreateSelect(b.CreateFCmpOLT(u, x), u, x)
             : b.CreateBinaryIntrinsic(
                   isSigned(dtype) ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, x, u);
      break;
    case ScatterReduction::None:
      break;
  }
  storeCompute(b, dtype, v, out, at);
}

void emitCopyData(KernelBuilder& kb) {
  const TensorType& data = kb.node.inputs[0]->type;
  kb.b.CreateMemCpy(kb.output(0), llvm::MaybeAlign(dtypeSize(data.dtype)), kb.input(0),
                    llvm::MaybeAlign(dtypeSize(data.dtype)), kb.b.getInt64(data.bytes()));
}

}  // namespace

Lowering makeScatterNDLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node&) { return uint64_t{1}; };
  lowering.emit = [](KernelBuilder& kb) {
    const TensorType& data = kb.node.inputs[0]->type;
    const TensorType& indices = kb.node.inputs[1]->type;
    ScatterReduction r = scatterReduction(kb.node);
    size_t m = static_cast<size_t>(indices.dims.back());
    int64_t tuples = 1, block = 1;
    for (size_t d = 0; d + 1 < indices.rank(); ++d) tuples *= indices.dims[d];
    for (size_t d = m; d < data.rank(); ++d) block *= data.dims[d];
    std::vector<int64_t> ds = stridesOf(data.dims);
    llvm::IRBuilder<>& b = kb.b;
    auto c = [&](int64_t v) { return b.getInt64(v); };
    // Task 0 does everything; a kernel called for an empty range does nothing.
    emitIf(b, b.CreateICmpULT(kb.task_begin, kb.task_end), [&] {
      emitCopyData(kb);
      if (block > 0)
        emitLoop(
            b, c(0), c(tuples),
            [&](llvm::Value* t) {
              llvm::Value* at = c(0);
              for (size_t k = 0; k < m; ++k) {
                llvm::Value* i = loadIndex(b, indices.dtype, kb.input(1),
                                           b.CreateAdd(b.CreateMul(t, c(static_cast<int64_t>(m))),
                                                       c(static_cast<int64_t>(k))));
                at = b.CreateAdd(at, b.CreateMul(emitClampIndex(b, i, data.dims[k]), c(ds[k])));
              }
              llvm::Value* from = b.CreateMul(t, c(block));
              emitLoop(
                  b, c(0), c(block),
                  [&](llvm::Value* e) {
                    emitCombine(b, r, data.dtype, kb.output(0), b.CreateAdd(at, e), kb.input(2),
                                b.CreateAdd(from, e));
                  },
                  "e");
            },
            "t");
    });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

Lowering makeScatterElementsLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node&) { return uint64_t{1}; };
  lowering.emit = [](KernelBuilder& kb) {
    const TensorType& data = kb.node.inputs[0]->type;
    const TensorType& indices = kb.node.inputs[1]->type;
    ScatterReduction r = scatterReduction(kb.node);
    size_t axis = static_cast<size_t>(kb.node.i("axis"));
    std::vector<int64_t> ds = stridesOf(data.dims);
    llvm::IRBuilder<>& b = kb.b;
    emitIf(b, b.CreateICmpULT(kb.task_begin, kb.task_end), [&] {
      emitCopyData(kb);
      // The update loop over every element of indices, all in this one task.
      int64_t n = indices.numel();
      std::vector<int64_t> is = stridesOf(indices.dims);
      if (n > 0)
        emitLoop(
            b, b.getInt64(0), b.getInt64(n),
            [&](llvm::Value* i) {
              llvm::Value* at = b.getInt64(0);
              for (size_t d = 0; d < indices.rank(); ++d) {
                llvm::Value* coord =
                    d == axis ? emitClampIndex(b, loadIndex(b, indices.dtype, kb.input(1), i),
                                               data.dims[d])
                              : b.CreateURem(b.CreateUDiv(i, b.getInt64(is[d])),
                                             b.getInt64(indices.dims[d]));
                at = b.CreateAdd(at, b.CreateMul(coord, b.getInt64(ds[d])));
              }
              emitCombine(b, r, data.dtype, kb.output(0), at, kb.input(2), i);
            },
            "i");
    });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
