// The kernels of a Scan run as a Loop (ops/control_flow.cc): nanoc.Zeros
// fills its accumulators before the loop, nanoc.ScanWrite stores one
// iteration's value into its slice. In a spliced loop ScanWrite's
// accumulator and result are one buffer, so it copies the accumulator only
// when they differ.
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"

namespace nanoc::cpu {

Lowering makeScanWriteLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node&) { return uint64_t{1}; };
  lowering.emit = [](KernelBuilder& kb) {
    llvm::IRBuilder<>& b = kb.b;
    // One task; a kernel called for an empty range does nothing.
    emitIf(b, b.CreateICmpULT(kb.task_begin, kb.task_end), [&] {
      const TensorType& acc = kb.node.inputs[0]->type;
      const uint64_t slice = kb.node.inputs[1]->type.bytes();
      const llvm::MaybeAlign align(dtypeSize(acc.dtype));
      // The accumulator, unless the result is the same buffer.
      emitIf(b, b.CreateICmpNE(kb.input(0), kb.output(0)), [&] {
        b.CreateMemCpy(kb.output(0), align, kb.input(0), align, b.getInt64(acc.bytes()));
      });
      llvm::Value* i = b.CreateLoad(b.getInt64Ty(), kb.input(2));
      const int64_t length = acc.dims[0];
      llvm::Value* at = kb.node.i("reverse") ? b.CreateSub(b.getInt64(length - 1), i) : i;
      // Unsigned: a negative index is out of range too.
      emitIf(b, b.CreateICmpULT(at, b.getInt64(length)), [&] {
        llvm::Value* dst =
            b.CreateGEP(b.getInt8Ty(), kb.output(0), b.CreateMul(at, b.getInt64(slice)));
        b.CreateMemCpy(dst, align, kb.input(1), align, b.getInt64(slice));
      });
    });
  };
  return lowering;
}

Lowering makeZerosLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node&) { return uint64_t{1}; };
  lowering.emit = [](KernelBuilder& kb) {
    llvm::IRBuilder<>& b = kb.b;
    emitIf(b, b.CreateICmpULT(kb.task_begin, kb.task_end), [&] {
      const TensorType& t = kb.node.outputs[0]->type;
      b.CreateMemSet(kb.output(0), b.getInt8(0), b.getInt64(t.bytes()),
                     llvm::MaybeAlign(dtypeSize(t.dtype)));
    });
  };
  return lowering;
}

}  // namespace nanoc::cpu
