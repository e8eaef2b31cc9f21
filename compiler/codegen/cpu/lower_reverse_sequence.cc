// ReverseSequence: each element reads the mirrored time step inside its batch
// entry's (clamped) length, or itself past it.
#include "compiler/codegen/cpu/index_loops.h"
#include "compiler/codegen/cpu/operand_alias.h"

namespace nanoc::cpu {

Lowering makeReverseSequenceLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) {
    return elementTasks(node.outputs[0]->type.dims).count();
  };
  lowering.emit = [](KernelBuilder& kb) {
    const TensorType& x = kb.node.inputs[0]->type;
    size_t batch_axis = static_cast<size_t>(kb.node.i("batch_axis"));
    size_t time_axis = static_cast<size_t>(kb.node.i("time_axis"));
    int64_t time = x.dims[time_axis];
    int64_t time_stride = 1;
    for (size_t d = time_axis + 1; d < x.rank(); ++d) time_stride *= x.dims[d];
    llvm::IRBuilder<>& b = kb.b;
    llvm::Type* element = bitsType(b, x.dtype);
    auto c = [&](int64_t v) { return b.getInt64(v); };
    emitElementTasks(kb, x.dims, [&](const std::vector<llvm::Value*>& index, llvm::Value* linear) {
      llvm::Value* len = loadIndex(b, DType::I64, kb.input(1), index[batch_axis]);
      len = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin,
                                    b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, len, c(0)),
                                    c(time));
      llvm::Value* t = index[time_axis];
      llvm::Value* from =
          b.CreateSelect(b.CreateICmpSLT(t, len), b.CreateSub(b.CreateSub(len, c(1)), t), t);
      llvm::Value* at = b.CreateAdd(linear, b.CreateMul(b.CreateSub(from, t), c(time_stride)));
      llvm::Value* v = b.CreateLoad(element, bitsPtr(b, x.dtype, kb.input(0), at));
      b.CreateStore(v, bitsPtr(b, x.dtype, kb.output(0), linear));
    });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
