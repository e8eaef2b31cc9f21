// GlobalAveragePool: [N, C, spatial...] -> [N, C, 1...], one mean per (n, c)
// plane. A task takes whole planes; the plane's sum is a unit-stride
// reduction that may be reassociated so it vectorizes.
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ir/error.h"

namespace nanoc::cpu {
namespace {

struct GapShape {
  int64_t planes = 1, spatial = 1;
};

GapShape gapShape(const Node& node) {
  const TensorType& x = node.inputs[0]->type;
  if (x.rank() < 3 || x.dtype != DType::F32)
    throw CompileError("node '" + node.name +
                       "' (GlobalAveragePool): the CPU lowering needs f32 "
                       "[N, C, spatial...], got " +
                       x.str());
  GapShape s;
  s.planes = x.dims[0] * x.dims[1];
  for (size_t d = 2; d < x.rank(); ++d) s.spatial *= x.dims[d];
  return s;
}

// Rows are planes, each a single output column; a task takes planes worth
// about kTaskElements inputs.
RowTasks gapTasks(const GapShape& s) {
  return splitRows(s.planes, 1,
                   std::max<int64_t>(1, kTaskElements / std::max<int64_t>(s.spatial, 1)));
}

}  // namespace

Lowering makeGlobalAveragePoolLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return gapTasks(gapShape(node)).count(); };
  lowering.emit = [](KernelBuilder& kb) {
    GapShape s = gapShape(kb.node);
    llvm::IRBuilder<>& b = kb.b;
    emitRowTasks(kb, gapTasks(s), [&](llvm::Value* plane, llvm::Value*, llvm::Value*) {
      llvm::Value* base = b.CreateMul(plane, b.getInt64(s.spatial));
      llvm::Value* sum = emitReduction(
          b, b.getInt64(0), b.getInt64(s.spatial), llvm::ConstantFP::get(b.getFloatTy(), 0.0),
          [&](llvm::Value* i, llvm::Value* acc) {
            auto* add = llvm::cast<llvm::Instruction>(
                b.CreateFAdd(acc, loadF32(b, kb.input(0), b.CreateAdd(base, i))));
            add->setHasAllowReassoc(true);
            return add;
          },
          "sum");
      // An empty plane averages to 0, as in the reference, not 0/0.
      llvm::Value* mean =
          s.spatial ? b.CreateFMul(sum, llvm::ConstantFP::get(b.getFloatTy(), 1.0 / s.spatial))
                    : static_cast<llvm::Value*>(llvm::ConstantFP::get(b.getFloatTy(), 0.0));
      storeF32(b, mean, kb.output(0), plane);
    });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
