#include "compiler/codegen/cpu/loops.h"

#include <llvm/IR/Intrinsics.h>

namespace nanoc::cpu {

void emitLoop(llvm::IRBuilder<>& b, llvm::Value* begin, llvm::Value* end,
              const std::function<void(llvm::Value* i)>& body, const char* name) {
  emitReduction(
      b, begin, end, nullptr,
      [&](llvm::Value* i, llvm::Value*) -> llvm::Value* {
        body(i);
        return nullptr;
      },
      name);
}

llvm::Value* emitReduction(
    llvm::IRBuilder<>& b, llvm::Value* begin, llvm::Value* end, llvm::Value* init,
    const std::function<llvm::Value*(llvm::Value* i, llvm::Value* acc)>& body, const char* name) {
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::LLVMContext& ctx = b.getContext();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx, std::string(name) + ".header", fn);
  llvm::BasicBlock* loop = llvm::BasicBlock::Create(ctx, std::string(name) + ".body", fn);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, std::string(name) + ".exit", fn);
  b.CreateBr(header);

  b.SetInsertPoint(header);
  llvm::PHINode* iv = b.CreatePHI(b.getInt64Ty(), 2, name);
  iv->addIncoming(begin, pre);
  llvm::PHINode* acc = nullptr;
  if (init) {
    acc = b.CreatePHI(init->getType(), 2, std::string(name) + ".acc");
    acc->addIncoming(init, pre);
  }
  b.CreateCondBr(b.CreateICmpSLT(iv, end), loop, exit);

  b.SetInsertPoint(loop);
  llvm::Value* next_acc = body(iv, acc);
  // The body may have created blocks of its own: the back edge leaves from
  // wherever it ended.
  llvm::BasicBlock* latch = b.GetInsertBlock();
  llvm::Value* next = b.CreateAdd(iv, b.getInt64(1), std::string(name) + ".next", true, true);
  iv->addIncoming(next, latch);
  if (acc) acc->addIncoming(next_acc, latch);
  b.CreateBr(header);

  b.SetInsertPoint(exit);
  return acc;
}

llvm::Value* f32Ptr(llvm::IRBuilder<>& b, llvm::Value* base, llvm::Value* index) {
  return b.CreateInBoundsGEP(b.getFloatTy(), base, index);
}

llvm::Value* loadF32(llvm::IRBuilder<>& b, llvm::Value* base, llvm::Value* index) {
  return b.CreateLoad(b.getFloatTy(), f32Ptr(b, base, index));
}

void storeF32(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* base, llvm::Value* index) {
  b.CreateStore(value, f32Ptr(b, base, index));
}

llvm::Type* storageType(llvm::LLVMContext& ctx, DType dtype) {
  switch (dtype) {
    case DType::F32:
      return llvm::Type::getFloatTy(ctx);
    case DType::F16:
      return llvm::Type::getHalfTy(ctx);
    case DType::BF16:
      return llvm::Type::getBFloatTy(ctx);
    case DType::F64:
      return llvm::Type::getDoubleTy(ctx);
    case DType::I8:
    case DType::U8:
    case DType::Bool:
      return llvm::Type::getInt8Ty(ctx);
    case DType::I16:
    case DType::U16:
      return llvm::Type::getInt16Ty(ctx);
    case DType::I32:
    case DType::U32:
      return llvm::Type::getInt32Ty(ctx);
    case DType::I64:
    case DType::U64:
      return llvm::Type::getInt64Ty(ctx);
  }
  return llvm::Type::getInt8Ty(ctx);
}

llvm::Value* elementPtr(llvm::IRBuilder<>& b, DType dtype, llvm::Value* base, llvm::Value* index) {
  return b.CreateInBoundsGEP(storageType(b.getContext(), dtype), base, index);
}

llvm::Value* loadElement(llvm::IRBuilder<>& b, DType dtype, llvm::Value* base, llvm::Value* index) {
  return b.CreateLoad(storageType(b.getContext(), dtype), elementPtr(b, dtype, base, index));
}

void storeElement(llvm::IRBuilder<>& b, DType dtype, llvm::Value* value, llvm::Value* base,
                  llvm::Value* index) {
  b.CreateStore(value, elementPtr(b, dtype, base, index));
}

bool isFloat(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16 || dtype == DType::F64;
}

bool isSigned(DType dtype) {
  return dtype == DType::I8 || dtype == DType::I16 || dtype == DType::I32 || dtype == DType::I64;
}

llvm::Type* computeType(llvm::LLVMContext& ctx, DType dtype) {
  if (dtype == DType::F16 || dtype == DType::BF16) return llvm::Type::getFloatTy(ctx);
  return storageType(ctx, dtype);
}

llvm::Value* loadCompute(llvm::IRBuilder<>& b, DType dtype, llvm::Value* base, llvm::Value* index) {
  llvm::Value* v = loadElement(b, dtype, base, index);
  if (dtype == DType::F16 || dtype == DType::BF16) return b.CreateFPExt(v, b.getFloatTy());
  return v;
}

void storeCompute(llvm::IRBuilder<>& b, DType dtype, llvm::Value* value, llvm::Value* base,
                  llvm::Value* index) {
  llvm::Type* storage = storageType(b.getContext(), dtype);
  if (dtype == DType::F16 || dtype == DType::BF16)
    value = b.CreateFPTrunc(value, storage);
  else if (dtype == DType::Bool && value->getType()->isIntegerTy(1))
    value = b.CreateZExt(value, storage);
  storeElement(b, dtype, value, base, index);
}

llvm::Value* convertCompute(llvm::IRBuilder<>& b, llvm::Value* value, DType from, DType to) {
  llvm::LLVMContext& ctx = b.getContext();
  llvm::Type* dst = computeType(ctx, to);
  llvm::Type* src = value->getType();
  if (to == DType::Bool) {
    llvm::Value* nz = src->isFloatingPointTy()
                          ? b.CreateFCmpUNE(value, llvm::ConstantFP::get(src, 0.0))
                          : b.CreateICmpNE(value, llvm::ConstantInt::get(src, 0));
    return b.CreateZExt(nz, dst);
  }
  if (src == dst) return value;
  if (src->isFloatingPointTy() && dst->isFloatingPointTy())
    return src->getPrimitiveSizeInBits() < dst->getPrimitiveSizeInBits()
               ? b.CreateFPExt(value, dst)
               : b.CreateFPTrunc(value, dst);
  if (src->isFloatingPointTy())
    return b.CreateIntrinsic(
        isSigned(to) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat, {dst, src},
        {value});
  if (dst->isFloatingPointTy())
    return isSigned(from) ? b.CreateSIToFP(value, dst) : b.CreateUIToFP(value, dst);
  return b.CreateIntCast(value, dst, isSigned(from));
}

}  // namespace nanoc::cpu
