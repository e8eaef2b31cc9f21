#include "compiler/codegen/cpu/operand_alias.h"

#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/MDBuilder.h>

namespace nanoc::cpu {

void addOperandAliasScopes(KernelBuilder& kb) {
  llvm::LLVMContext& ctx = kb.fn->getContext();
  llvm::MDBuilder md(ctx);
  llvm::MDNode* domain = md.createAnonymousAliasScopeDomain(kb.fn->getName());
  std::vector<llvm::Metadata*> scopes;
  for (size_t i = 0; i < kb.output_ptrs.size(); ++i)
    scopes.push_back(md.createAnonymousAliasScope(domain, "out" + std::to_string(i)));

  auto outputIndex = [&](const llvm::Value* base) -> int {
    for (size_t i = 0; i < kb.output_ptrs.size(); ++i)
      if (kb.output_ptrs[i] == base) return static_cast<int>(i);
    return -1;
  };
  auto isInput = [&](const llvm::Value* base) {
    for (const llvm::Value* p : kb.input_ptrs)
      if (p && p == base) return true;
    return false;
  };
  auto othersThan = [&](int skip) {
    std::vector<llvm::Metadata*> out;
    for (size_t i = 0; i < scopes.size(); ++i)
      if (static_cast<int>(i) != skip) out.push_back(scopes[i]);
    return llvm::MDNode::get(ctx, out);
  };

  for (llvm::Instruction& inst : llvm::instructions(kb.fn)) {
    const llvm::Value* address = nullptr;
    if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst))
      address = load->getPointerOperand();
    else if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst))
      address = store->getPointerOperand();
    else if (auto* call = llvm::dyn_cast<llvm::MemTransferInst>(&inst)) {
      // memcpy(out, in): the destination decides; sources are inputs.
      int out = outputIndex(llvm::getUnderlyingObject(call->getRawDest()));
      if (out >= 0 && isInput(llvm::getUnderlyingObject(call->getRawSource()))) {
        inst.setMetadata(llvm::LLVMContext::MD_alias_scope, llvm::MDNode::get(ctx, {scopes[out]}));
        inst.setMetadata(llvm::LLVMContext::MD_noalias, othersThan(out));
      }
      continue;
    }
    if (!address) continue;
    const llvm::Value* base = llvm::getUnderlyingObject(address);
    int out = outputIndex(base);
    if (out >= 0) {
      inst.setMetadata(llvm::LLVMContext::MD_alias_scope, llvm::MDNode::get(ctx, {scopes[out]}));
      if (scopes.size() > 1) inst.setMetadata(llvm::LLVMContext::MD_noalias, othersThan(out));
    } else if (isInput(base) && !scopes.empty()) {
      inst.setMetadata(llvm::LLVMContext::MD_noalias, othersThan(-1));
    }
  }
}

}  // namespace nanoc::cpu
