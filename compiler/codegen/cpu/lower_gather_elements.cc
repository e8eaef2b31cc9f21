// GatherElements: one element per output element, its source the output's
// multi-index with the axis coordinate read from indices.
#include "compiler/codegen/cpu/index_loops.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/ops/data_movement.h"

namespace nanoc::cpu {

Lowering makeGatherElementsLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) {
    return elementTasks(node.inputs[1]->type.dims).count();
  };
  lowering.emit = [](KernelBuilder& kb) {
    const TensorType& data = kb.node.inputs[0]->type;
    const TensorType& indices = kb.node.inputs[1]->type;
    size_t axis = static_cast<size_t>(kb.node.i("axis"));
    std::vector<int64_t> ds = stridesOf(data.dims);
    llvm::IRBuilder<>& b = kb.b;
    llvm::Type* element = bitsType(b, data.dtype);
    emitElementTasks(
        kb, indices.dims, [&](const std::vector<llvm::Value*>& index, llvm::Value* linear) {
          llvm::Value* at = b.getInt64(0);
          for (size_t d = 0; d < index.size(); ++d) {
            llvm::Value* coord =
                d == axis ? emitClampIndex(b, loadIndex(b, indices.dtype, kb.input(1), linear),
                                           data.dims[d])
                          : index[d];
            at = b.CreateAdd(at, b.CreateMul(coord, b.getInt64(ds[d])));
          }
          llvm::Value* v = b.CreateLoad(element, bitsPtr(b, data.dtype, kb.input(0), at));
          b.CreateStore(v, bitsPtr(b, data.dtype, kb.output(0), linear));
        });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
