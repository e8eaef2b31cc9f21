// The kernels of a Scan run as a Loop (ops/control_flow.cc): nanoc.Zeros
// fills its accumulators before the loop, nanoc.ScanWrite stores one
// iteration's value into its slice. In a spliced loop ScanWrite's
// accumulator and result are one buffer, so it copies the accumulator only
// when they differ.
#include "compiler/codegen/cpu/lowering.h"

namespace nanoc::cpu {
namespace {

// The body runs once, for task 0 of a one-task kernel called with a
// non-empty range.
template <typename Body>
void onceForTask0(KernelBuilder& kb, Body body) {
  llvm::IRBuilder<>& b = kb.b;
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  auto* work = llvm::BasicBlock::Create(b.getContext(), "work", fn);
  auto* done = llvm::BasicBlock::Create(b.getContext(), "done", fn);
  b.CreateCondBr(b.CreateICmpULT(kb.task_begin, kb.task_end), work, done);
  b.SetInsertPoint(work);
  body();
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

}  // namespace

Lowering makeScanWriteLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node&) { return uint64_t{1}; };
  lowering.emit = [](KernelBuilder& kb) {
    onceForTask0(kb, [&] {
      llvm::IRBuilder<>& b = kb.b;
      llvm::LLVMContext& ctx = b.getContext();
      llvm::Function* fn = b.GetInsertBlock()->getParent();
      const TensorType& acc = kb.node.inputs[0]->type;
      const uint64_t slice = kb.node.inputs[1]->type.bytes();
      const llvm::MaybeAlign align(dtypeSize(acc.dtype));
      // The accumulator, unless the result is the same buffer.
      auto* copy = llvm::BasicBlock::Create(ctx, "copy", fn);
      auto* store = llvm::BasicBlock::Create(ctx, "store", fn);
      b.CreateCondBr(b.CreateICmpNE(kb.input(0), kb.output(0)), copy, store);
      b.SetInsertPoint(copy);
      b.CreateMemCpy(kb.output(0), align, kb.input(0), align, b.getInt64(acc.bytes()));
      b.CreateBr(store);
      b.SetInsertPoint(store);
      llvm::Value* i = b.CreateLoad(b.getInt64Ty(), kb.input(2));
      const int64_t length = acc.dims[0];
      llvm::Value* at = kb.node.i("reverse") ? b.CreateSub(b.getInt64(length - 1), i) : i;
      auto* write = llvm::BasicBlock::Create(ctx, "write", fn);
      auto* skip = llvm::BasicBlock::Create(ctx, "skip", fn);
      // Unsigned: a negative index is out of range too.
      b.CreateCondBr(b.CreateICmpULT(at, b.getInt64(length)), write, skip);
      b.SetInsertPoint(write);
      llvm::Value* dst =
          b.CreateGEP(b.getInt8Ty(), kb.output(0), b.CreateMul(at, b.getInt64(slice)));
      b.CreateMemCpy(dst, align, kb.input(1), align, b.getInt64(slice));
      b.CreateBr(skip);
      b.SetInsertPoint(skip);
    });
  };
  return lowering;
}

Lowering makeZerosLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node&) { return uint64_t{1}; };
  lowering.emit = [](KernelBuilder& kb) {
    onceForTask0(kb, [&] {
      const TensorType& t = kb.node.outputs[0]->type;
      kb.b.CreateMemSet(kb.output(0), kb.b.getInt8(0), kb.b.getInt64(t.bytes()),
                        llvm::MaybeAlign(dtypeSize(t.dtype)));
    });
  };
  return lowering;
}

}  // namespace nanoc::cpu
