#include "compiler/codegen/cpu/epilogue.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include "compiler/codegen/cpu/gemm_microkernel.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/math_functions.h"

namespace nanoc::cpu {

namespace {

llvm::Value* k(llvm::Value* like, double v) { return llvm::ConstantFP::get(like->getType(), v); }

llvm::Value* clamp01(llvm::IRBuilder<>& b, llvm::Value* x) {
  x = b.CreateSelect(b.CreateFCmpOLT(x, k(x, 0.0)), k(x, 0.0), x);
  return b.CreateSelect(b.CreateFCmpOGT(x, k(x, 1.0)), k(x, 1.0), x);
}

}  // namespace

FusedEpilogue fusedEpilogue(const KernelBuilder& kb) {
  FusedEpilogue e;
  e.spec = epilogueSpec(kb.node);
  if (e.spec.residual) e.residual = kb.input(kResidualInput);
  return e;
}

llvm::Value* emitActivation(llvm::IRBuilder<>& b, const EpilogueSpec& spec, llvm::Value* x) {
  // The same formulas, NaN behaviour included, as the elementwise lowerings.
  switch (spec.activation) {
    case Activation::None:
      return x;
    case Activation::Relu:
      return b.CreateSelect(b.CreateFCmpOLT(x, k(x, 0.0)), k(x, 0.0), x);
    case Activation::Clip:
      x = b.CreateSelect(b.CreateFCmpOLT(x, k(x, spec.alpha)), k(x, spec.alpha), x);
      return b.CreateSelect(b.CreateFCmpOLT(k(x, spec.beta), x), k(x, spec.beta), x);
    case Activation::LeakyRelu:
      return b.CreateSelect(b.CreateFCmpOLT(x, k(x, 0.0)), b.CreateFMul(x, k(x, spec.alpha)), x);
    case Activation::Sigmoid:
      return emitSigmoid(b, x);
    case Activation::HardSigmoid:
      return clamp01(b, b.CreateFAdd(b.CreateFMul(x, k(x, spec.alpha)), k(x, spec.beta)));
    case Activation::HardSwish:
      return b.CreateFMul(x, clamp01(b, b.CreateFAdd(b.CreateFMul(x, k(x, 1.0 / 6)), k(x, 0.5))));
    case Activation::SiLU:
      return emitSiLU(b, x);
    case Activation::Tanh:
      return emitTanh(b, x);
  }
  return x;
}

llvm::Value* applyEpilogue(llvm::IRBuilder<>& b, const EpilogueSpec& spec, llvm::Value* value,
                           llvm::Value* residual, llvm::Value* index, int64_t lanes) {
  if (spec.residual && residual)
    value = b.CreateFAdd(value, loadLanes(b, value->getType(), residual, index, lanes));
  return emitActivation(b, spec, value);
}

void prefetchResidual(llvm::IRBuilder<>& b, const EpilogueSpec& spec, llvm::Value* residual,
                      llvm::Value* index) {
  if (!spec.residual || !residual) return;
  prefetchF32(b, residual, index);
}

void emitEpilogueSweep(llvm::IRBuilder<>& b, const EpilogueSpec& spec, llvm::Value* y,
                       llvm::Value* residual, llvm::Value* begin, llvm::Value* end, int64_t width) {
  if (spec.empty()) return;
  llvm::Type* type =
      width > 1 ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(b.getFloatTy(), width))
                : b.getFloatTy();
  auto step = [&](llvm::Value* at, int64_t lanes) {
    llvm::Value* v = loadLanes(b, type, y, at, lanes);
    storeLanes(b, applyEpilogue(b, spec, v, residual, at, lanes), y, at, lanes);
  };
  llvm::Value* count = b.CreateSub(end, begin);
  llvm::Value* chunks = b.CreateUDiv(count, b.getInt64(width));
  emitLoop(
      b, b.getInt64(0), chunks,
      [&](llvm::Value* c) { step(b.CreateAdd(begin, b.CreateMul(c, b.getInt64(width))), width); },
      "epilogue");
  if (width == 1) return;
  // The rest, fewer than `width`: one masked step per possible count would
  // unroll; a scalar loop is as short and stays exact.
  llvm::Value* rest_begin = b.CreateAdd(begin, b.CreateMul(chunks, b.getInt64(width)));
  emitLoop(
      b, rest_begin, end,
      [&](llvm::Value* at) {
        llvm::Value* v = loadF32(b, y, at);
        storeF32(b, applyEpilogue(b, spec, v, residual, at, 1), y, at);
      },
      "epilogue.rest");
}

void setPackedEpilogue(llvm::IRBuilder<>& b, PackedProduct& p, const EpilogueSpec& spec,
                       llvm::Value* residual, int64_t row_stride) {
  if (spec.empty()) return;
  auto at = [&b, row_stride](llvm::Value* i, llvm::Value* j) {
    return b.CreateAdd(b.CreateMul(i, b.getInt64(row_stride)), j);
  };
  p.epilogue = [&b, spec, residual, at](llvm::Value* i, llvm::Value* j, int64_t lanes,
                                        llvm::Value* value) {
    return applyEpilogue(b, spec, value, residual, at(i, j), lanes);
  };
  if (residual)
    p.prefetch = [&b, spec, residual, at](llvm::Value* i, llvm::Value* j) {
      prefetchResidual(b, spec, residual, at(i, j));
    };
}

}  // namespace nanoc::cpu
