// GlobalMaxPool: [N, C, spatial...] -> [N, C, 1...], one maximum per (n, c)
// plane. A task takes whole planes; the plane's maximum is a unit-stride
// reduction by `x > m ? x : m`, as the reference (NaN never wins), with no
// call on any target (maxnum is a libm fmaxf call on Cortex-M).
#include <limits>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::cpu {
namespace {

struct GmpShape {
  int64_t planes = 1, spatial = 1;
};

GmpShape gmpShape(const Node& node) {
  const TensorType& x = node.inputs[0]->type;
  if (x.rank() < 3 || x.dtype != DType::F32)
    failNode(node, "the CPU lowering needs f32 [N, C, spatial...], got " + x.str());
  return {x.dims[0] * x.dims[1], product(x.dims, 2, x.rank())};
}

RowTasks gmpTasks(const GmpShape& s) {
  return splitRows(s.planes, 1,
                   std::max<int64_t>(1, kTaskElements / std::max<int64_t>(s.spatial, 1)));
}

}  // namespace

Lowering makeGlobalMaxPoolLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return gmpTasks(gmpShape(node)).count(); };
  lowering.emit = [](KernelBuilder& kb) {
    GmpShape s = gmpShape(kb.node);
    llvm::IRBuilder<>& b = kb.b;
    emitRowTasks(kb, gmpTasks(s), [&](llvm::Value* plane, llvm::Value*, llvm::Value*) {
      llvm::Value* base = b.CreateMul(plane, b.getInt64(s.spatial));
      llvm::Value* m = emitReduction(
          b, b.getInt64(0), b.getInt64(s.spatial),
          llvm::ConstantFP::get(b.getFloatTy(), std::numeric_limits<float>::lowest()),
          [&](llvm::Value* i, llvm::Value* acc) {
            llvm::Value* v = loadF32(b, kb.input(0), b.CreateAdd(base, i));
            return b.CreateSelect(b.CreateFCmpOGT(v, acc), v, acc);
          },
          "max");
      storeF32(b, m, kb.output(0), plane);
    });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
