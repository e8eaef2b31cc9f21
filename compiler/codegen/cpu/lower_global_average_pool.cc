// GlobalAveragePool: [N, C, spatial...] -> [N, C, 1...], one mean per (n, c)
// plane. A task takes whole planes; on vector targets a plane is summed V
// lanes at a time (a masked load for its last, partial vector, whose lane
// count is a constant) into up to four vector accumulators, then across the
// lanes: the loop vectorizer would leave a 7 x 7 plane (49 < its 64-lane
// unrolled step) to 49 dependent scalar adds.
#include <llvm/IR/Intrinsics.h>

#include <vector>

#include "compiler/codegen/cpu/gemm_microkernel.h"
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
      llvm::Value* x = kb.input(0);
      llvm::Value* sum = nullptr;
      const int64_t V = registerTile(*kb.fn).width;
      if (V > 1 && s.spatial >= V) {
        llvm::Type* vt = llvm::FixedVectorType::get(b.getFloatTy(), V);
        const int64_t full = s.spatial / V, rest = s.spatial % V;
        // Accumulators: one per vector of a step of `step` vectors.
        const int64_t step = full >= 16 ? 4 : full >= 4 ? 2 : 1;
        const int64_t steps = full / step;
        std::vector<llvm::Value*> acc(step, llvm::Constant::getNullValue(vt));
        auto addVector = [&](llvm::Value* a, llvm::Value* index, int64_t lanes) {
          return b.CreateFAdd(a, loadLanes(b, vt, x, b.CreateAdd(base, index), lanes));
        };
        if (steps > 0) {
          // The loop's accumulators as phis.
          llvm::Function* fn = b.GetInsertBlock()->getParent();
          llvm::BasicBlock* pre = b.GetInsertBlock();
          llvm::BasicBlock* head = llvm::BasicBlock::Create(b.getContext(), "gap.step", fn);
          llvm::BasicBlock* done = llvm::BasicBlock::Create(b.getContext(), "gap.done", fn);
          b.CreateBr(head);
          b.SetInsertPoint(head);
          llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2, "v");
          i->addIncoming(b.getInt64(0), pre);
          std::vector<llvm::PHINode*> phis;
          for (int64_t a = 0; a < step; ++a) {
            phis.push_back(b.CreatePHI(vt, 2, "acc"));
            phis.back()->addIncoming(acc[a], pre);
          }
          std::vector<llvm::Value*> next;
          for (int64_t a = 0; a < step; ++a)
            next.push_back(
                addVector(phis[a], b.CreateMul(b.CreateAdd(i, b.getInt64(a)), b.getInt64(V)), V));
          llvm::Value* i_next = b.CreateAdd(i, b.getInt64(step));
          llvm::BasicBlock* latch = b.GetInsertBlock();
          i->addIncoming(i_next, latch);
          for (int64_t a = 0; a < step; ++a) phis[a]->addIncoming(next[a], latch);
          b.CreateCondBr(b.CreateICmpSLT(i_next, b.getInt64(steps * step)), head, done);
          b.SetInsertPoint(done);
          acc = next;
        }
        // The whole vectors past the last step, then the partial one.
        for (int64_t v = steps * step; v < full; ++v)
          acc[v % step] = addVector(acc[v % step], b.getInt64(v * V), V);
        if (rest) acc[0] = addVector(acc[0], b.getInt64(full * V), rest);
        llvm::Value* total = acc[0];
        for (int64_t a = 1; a < step; ++a) total = b.CreateFAdd(total, acc[a]);
        auto* reduce = llvm::cast<llvm::Instruction>(
            b.CreateFAddReduce(llvm::ConstantFP::get(b.getFloatTy(), -0.0), total));
        reduce->setHasAllowReassoc(true);
        sum = reduce;
      } else {
        sum = emitReduction(
            b, b.getInt64(0), b.getInt64(s.spatial), llvm::ConstantFP::get(b.getFloatTy(), 0.0),
            [&](llvm::Value* i, llvm::Value* acc) {
              auto* add = llvm::cast<llvm::Instruction>(
                  b.CreateFAdd(acc, loadF32(b, x, b.CreateAdd(base, i))));
              add->setHasAllowReassoc(true);
              return add;
            },
            "sum");
      }
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
