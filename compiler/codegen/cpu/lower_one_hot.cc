// OneHot: each output element compares its depth coordinate with its index
// (read once per element; float indices truncated with saturation, NaN as 0)
// and stores values[1] or values[0].
#include "compiler/codegen/cpu/index_loops.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/ops/data_movement.h"

namespace nanoc::cpu {

Lowering makeOneHotLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) {
    return elementTasks(node.outputs[0]->type.dims).count();
  };
  lowering.emit = [](KernelBuilder& kb) {
    const TensorType& indices = kb.node.inputs[0]->type;
    const TensorType& y = kb.node.outputs[0]->type;
    size_t axis = static_cast<size_t>(kb.node.i("axis"));
    int64_t depth = kb.node.i("depth");
    std::vector<int64_t> is = stridesOf(indices.dims);
    llvm::IRBuilder<>& b = kb.b;
    llvm::Type* element = bitsType(b, y.dtype);
    emitElementTasks(kb, y.dims, [&](const std::vector<llvm::Value*>& index, llvm::Value* linear) {
      llvm::Value* at = b.getInt64(0);
      for (size_t d = 0, id = 0; d < y.rank(); ++d) {
        if (d == axis) continue;
        at = b.CreateAdd(at, b.CreateMul(index[d], b.getInt64(is[id++])));
      }
      llvm::Value* i;
      if (indices.dtype == DType::F32 || indices.dtype == DType::F64) {
        llvm::Type* ft = indices.dtype == DType::F32 ? b.getFloatTy() : b.getDoubleTy();
        llvm::Value* f = b.CreateLoad(ft, b.CreateGEP(ft, kb.input(0), at));
        i = b.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {b.getInt64Ty(), ft}, {f});
      } else {
        i = loadIndex(b, indices.dtype, kb.input(0), at);
      }
      i = b.CreateSelect(b.CreateICmpSLT(i, b.getInt64(0)), b.CreateAdd(i, b.getInt64(depth)), i);
      llvm::Value* hot = b.CreateICmpEQ(i, index[axis]);
      llvm::Value* v = b.CreateLoad(
          element, bitsPtr(b, y.dtype, kb.input(1), b.CreateZExt(hot, b.getInt64Ty())));
      b.CreateStore(v, bitsPtr(b, y.dtype, kb.output(0), linear));
    });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
