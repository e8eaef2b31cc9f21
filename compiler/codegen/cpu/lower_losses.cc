// CPU lowerings of NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
// (semantics in compiler/ops/losses.cc). One task: a "mean" or "sum" loss is
// one sum over the whole batch, and these heads are small next to the model
// that feeds them. SoftmaxCrossEntropyLoss writes log_softmax over C into its
// second output first, then gathers the loss from there.
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/float_log_exp.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/operand_alias.h"

namespace nanoc::cpu {
namespace {

using llvm::Value;

// Lets the vectorizer reorder a reduction over C (rounding differences only).
Value* reassoc(Value* v) {
  if (auto* inst = llvm::dyn_cast<llvm::Instruction>(v)) inst->setHasAllowReassoc(true);
  return v;
}

struct LossShape {
  int64_t n, c, d;
};

LossShape lossShape(const Node& node) {
  const TensorType& x = node.inputs[0]->type;
  int64_t d = 1;
  for (size_t i = 2; i < x.rank(); ++i) d *= x.dims[i];
  return {x.dims[0], x.dims[1], d};
}

// log_softmax over C of x into y, both [N, C, D].
void emitLogSoftmax(llvm::IRBuilder<>& b, DType dtype, const LossShape& s, Value* x, Value* y) {
  llvm::Type* ct = computeType(b.getContext(), dtype);
  emitLoop(
      b, b.getInt64(0), b.getInt64(s.n * s.d),
      [&](Value* i) {
        Value* a = b.CreateUDiv(i, b.getInt64(s.d));
        Value* j = b.CreateURem(i, b.getInt64(s.d));
        Value* base = b.CreateAdd(b.CreateMul(a, b.getInt64(s.c * s.d)), j);
        auto at = [&](Value* k) { return b.CreateAdd(base, b.CreateMul(k, b.getInt64(s.d))); };
        Value* max = emitReduction(
            b, b.getInt64(0), b.getInt64(s.c), llvm::ConstantFP::getInfinity(ct, true),
            [&](Value* k, Value* m) {
              return reassoc(b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, m,
                                                     loadCompute(b, dtype, x, at(k))));
            },
            "max");
        Value* sum = emitReduction(
            b, b.getInt64(0), b.getInt64(s.c), llvm::ConstantFP::get(ct, 0.0),
            [&](Value* k, Value* acc) {
              return reassoc(b.CreateFAdd(
                  acc, emitExpAnyFloat(b, b.CreateFSub(loadCompute(b, dtype, x, at(k)), max))));
            },
            "sum");
        Value* lse = b.CreateFAdd(max, emitLogAnyFloat(b, sum));
        emitLoop(
            b, b.getInt64(0), b.getInt64(s.c),
            [&](Value* k) {
              storeCompute(b, dtype, b.CreateFSub(loadCompute(b, dtype, x, at(k)), lse), y, at(k));
            },
            "k");
      },
      "row");
}

// loss from log-probabilities `x` [N, C, D], `target` [N, D], `weight` [C]
// or null.
void emitNll(KernelBuilder& kb, Value* x, Value* target, Value* weight, Value* loss) {
  const Node& node = kb.node;
  llvm::IRBuilder<>& b = kb.b;
  DType dtype = node.inputs[0]->type.dtype;
  DType tdtype = node.inputs[1]->type.dtype;
  llvm::Type* ct = computeType(b.getContext(), dtype);
  LossShape s = lossShape(node);
  const std::string& reduction = node.s("reduction");
  Value* zero = llvm::ConstantFP::get(ct, 0.0);
  llvm::IRBuilder<> entry(&kb.fn->getEntryBlock(), kb.fn->getEntryBlock().begin());
  Value* loss_sum = entry.CreateAlloca(ct, nullptr, "loss_sum");
  Value* weight_sum = entry.CreateAlloca(ct, nullptr, "weight_sum");
  b.CreateStore(zero, loss_sum);
  b.CreateStore(zero, weight_sum);
  emitLoop(
      b, b.getInt64(0), b.getInt64(s.n),
      [&](Value* a) {
        emitLoop(
            b, b.getInt64(0), b.getInt64(s.d),
            [&](Value* j) {
              Value* i = b.CreateAdd(b.CreateMul(a, b.getInt64(s.d)), j);
              Value* t = b.CreateSExt(loadElement(b, tdtype, target, i), b.getInt64Ty());
              // Unsigned t < C also rejects negative targets.
              Value* valid = b.CreateAnd(b.CreateICmpNE(t, b.getInt64(node.i("ignore_index"))),
                                         b.CreateICmpULT(t, b.getInt64(s.c)));
              Value* tc = b.CreateSelect(valid, t, b.getInt64(0));
              Value* w =
                  weight ? loadCompute(b, dtype, weight, tc) : llvm::ConstantFP::get(ct, 1.0);
              w = b.CreateSelect(valid, w, zero);
              Value* at = b.CreateAdd(
                  b.CreateMul(b.CreateAdd(b.CreateMul(a, b.getInt64(s.c)), tc), b.getInt64(s.d)),
                  j);
              Value* l = b.CreateSelect(
                  valid, b.CreateFMul(b.CreateFNeg(loadCompute(b, dtype, x, at)), w), zero);
              if (reduction == "none") storeCompute(b, dtype, l, loss, i);
              b.CreateStore(b.CreateFAdd(b.CreateLoad(ct, loss_sum), l), loss_sum);
              b.CreateStore(b.CreateFAdd(b.CreateLoad(ct, weight_sum), w), weight_sum);
            },
            "d");
      },
      "n");
  Value* total = b.CreateLoad(ct, loss_sum);
  if (reduction == "sum") storeCompute(b, dtype, total, loss, b.getInt64(0));
  if (reduction == "mean")
    storeCompute(b, dtype, b.CreateFDiv(total, b.CreateLoad(ct, weight_sum)), loss, b.getInt64(0));
}

Lowering makeLossLowering(bool softmax) {
  Lowering lowering;
  lowering.task_count = [](const Node&) { return uint64_t{1}; };
  lowering.emit = [softmax](KernelBuilder& kb) {
    llvm::IRBuilder<>& b = kb.b;
    // One task: run the body only for the call whose range holds task 0.
    llvm::BasicBlock* body = llvm::BasicBlock::Create(b.getContext(), "loss", kb.fn);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(b.getContext(), "loss.done", kb.fn);
    b.CreateCondBr(b.CreateICmpEQ(kb.task_begin, b.getInt64(0)), body, done);
    b.SetInsertPoint(body);
    Value* x = kb.input(0);
    if (softmax) {
      emitLogSoftmax(b, kb.node.inputs[0]->type.dtype, lossShape(kb.node), x, kb.output(1));
      x = kb.output(1);
    }
    emitNll(kb, x, kb.input(1), kb.input(2), kb.output(0));
    b.CreateBr(done);
    b.SetInsertPoint(done);
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace

std::vector<std::pair<std::string, Lowering>> lossLowerings() {
  std::vector<std::pair<std::string, Lowering>> list;
  list.emplace_back("NegativeLogLikelihoodLoss", makeLossLowering(false));
  list.emplace_back("SoftmaxCrossEntropyLoss", makeLossLowering(true));
  return list;
}

}  // namespace nanoc::cpu
