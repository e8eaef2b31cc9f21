// Inference BatchNormalization over axis 1 of [N, C, spatial...]:
// y = (x - mean[c]) * (scale[c] / sqrt(var[c] + eps)) + B[c].
// With a spatial extent, a task takes whole (n, c) planes and the per-channel
// factor is computed once per plane; without one ([N, C]), rows are n and the
// unit-stride loop runs over channels, computing the factor per element (that
// loop vectorizes, sqrt and division included).
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ir/error.h"

namespace nanoc::cpu {
namespace {

struct BnShape {
  int64_t n = 1, c = 1, spatial = 1;
};

BnShape bnShape(const Node& node) {
  const TensorType& x = node.inputs[0]->type;
  if (x.rank() < 2)
    throw CompileError("node '" + node.name + "' (BatchNormalization): input " + x.str() +
                       " has no channel axis");
  for (const Value* in : node.inputs)
    if (!in || in->type.dtype != DType::F32)
      throw CompileError("node '" + node.name +
                         "' (BatchNormalization): the CPU lowering needs all five f32 inputs");
  for (size_t i = 1; i < 5; ++i)
    if (node.inputs[i]->type.numel() != x.dims[1])
      throw CompileError("node '" + node.name + "' (BatchNormalization): input " +
                         std::to_string(i) + " " + node.inputs[i]->type.str() + " is not [" +
                         std::to_string(x.dims[1]) + "]");
  BnShape s;
  s.n = x.dims[0];
  s.c = x.dims[1];
  for (size_t d = 2; d < x.rank(); ++d) s.spatial *= x.dims[d];
  return s;
}

RowTasks bnTasks(const BnShape& s) {
  if (s.spatial == 1) return splitRows(s.n, s.c);
  return splitRows(s.n * s.c, s.spatial);
}

}  // namespace

Lowering makeBatchNormalizationLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return bnTasks(bnShape(node)).count(); };
  lowering.emit = [](KernelBuilder& kb) {
    BnShape s = bnShape(kb.node);
    RowTasks tasks = bnTasks(s);
    llvm::IRBuilder<>& b = kb.b;
    llvm::Value* eps = llvm::ConstantFP::get(b.getFloatTy(), kb.node.f("epsilon"));
    // The affine form of channel c: y = x * factor + shift.
    auto channel = [&](llvm::Value* c) {
      llvm::Value* var = loadF32(b, kb.input(4), c);
      llvm::Value* inv_std =
          b.CreateFDiv(llvm::ConstantFP::get(b.getFloatTy(), 1.0),
                       b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, b.CreateFAdd(var, eps)));
      llvm::Value* factor = b.CreateFMul(inv_std, loadF32(b, kb.input(1), c));
      llvm::Value* mean = loadF32(b, kb.input(3), c);
      llvm::Value* bias = loadF32(b, kb.input(2), c);
      return std::make_pair(factor, std::make_pair(mean, bias));
    };
    auto apply = [&](llvm::Value* x,
                     std::pair<llvm::Value*, std::pair<llvm::Value*, llvm::Value*>> f) {
      return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {b.getFloatTy()},
                               {b.CreateFSub(x, f.second.first), f.first, f.second.second});
    };
    emitRowTasks(kb, tasks, [&](llvm::Value* row, llvm::Value* col_begin, llvm::Value* col_end) {
      if (s.spatial == 1) {
        llvm::Value* base = b.CreateMul(row, b.getInt64(s.c));
        emitLoop(
            b, col_begin, col_end,
            [&](llvm::Value* c) {
              llvm::Value* at = b.CreateAdd(base, c);
              storeF32(b, apply(loadF32(b, kb.input(0), at), channel(c)), kb.output(0), at);
            },
            "c");
        return;
      }
      auto f = channel(b.CreateURem(row, b.getInt64(s.c)));
      llvm::Value* base = b.CreateMul(row, b.getInt64(s.spatial));
      emitLoop(
          b, col_begin, col_end,
          [&](llvm::Value* i) {
            llvm::Value* at = b.CreateAdd(base, i);
            storeF32(b, apply(loadF32(b, kb.input(0), at), f), kb.output(0), at);
          },
          "i");
    });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
