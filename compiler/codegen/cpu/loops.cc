#include "compiler/codegen/cpu/loops.h"

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

}  // namespace nanoc::cpu
