// Trilu: each element kept or zeroed by its (row, column) in the last two dims.
#include "compiler/codegen/cpu/index_loops.h"
#include "compiler/codegen/cpu/operand_alias.h"

namespace nanoc::cpu {

Lowering makeTriluLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) {
    return elementTasks(node.outputs[0]->type.dims).count();
  };
  lowering.emit = [](KernelBuilder& kb) {
    const TensorType& x = kb.node.inputs[0]->type;
    bool upper = kb.node.i("upper") != 0;
    int64_t k = kb.node.i("k");
    llvm::IRBuilder<>& b = kb.b;
    llvm::Type* element = bitsType(b, x.dtype);
    emitElementTasks(kb, x.dims, [&](const std::vector<llvm::Value*>& index, llvm::Value* linear) {
      llvm::Value* diff = b.CreateSub(index[x.rank() - 1], index[x.rank() - 2]);
      llvm::Value* keep =
          upper ? b.CreateICmpSGE(diff, b.getInt64(k)) : b.CreateICmpSLE(diff, b.getInt64(k));
      llvm::Value* v = b.CreateLoad(element, bitsPtr(b, x.dtype, kb.input(0), linear));
      b.CreateStore(b.CreateSelect(keep, v, llvm::ConstantInt::get(element, 0)),
                    bitsPtr(b, x.dtype, kb.output(0), linear));
    });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
