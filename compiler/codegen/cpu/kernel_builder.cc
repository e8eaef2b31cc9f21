#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsAArch64.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/TargetParser/Triple.h>

#include "compiler/codegen/cpu/lowering.h"
#include "compiler/ir/error.h"

namespace nanoc::cpu {

llvm::Value* KernelBuilder::input(size_t i) const {
  return i < input_ptrs.size() ? input_ptrs[i] : nullptr;
}
llvm::Value* KernelBuilder::output(size_t i) const {
  return i < output_ptrs.size() ? output_ptrs[i] : nullptr;
}

bool hasDoubleFloatUnit(const llvm::Function& fn) {
  llvm::SmallVector<llvm::StringRef, 64> features;
  fn.getFnAttribute("target-features").getValueAsString().split(features, ',');
  return !llvm::is_contained(features, "-fp64");
}

const char* denormalsFamily(const std::string& triple) {
  const llvm::Triple t(triple);
  if (t.isX86()) return "x86";
  if (t.isAArch64()) return "aarch64";
  return nullptr;
}

namespace {

// kFlushDenormalsAttribute: the mode set at `fn`'s entry, the caller's
// restored before each return. Every value the kernel computes comes from
// memory read after the entry and goes to memory written before a return,
// so no arithmetic of the kernel runs outside the mode; LLVM is told the
// mode too (denormal-fp-math), so that what it folds at compile time agrees.
void flushDenormals(llvm::Function& fn, llvm::StringRef family) {
  std::vector<llvm::ReturnInst*> returns;
  for (llvm::BasicBlock& block : fn)
    if (auto* ret = llvm::dyn_cast<llvm::ReturnInst>(block.getTerminator())) returns.push_back(ret);
  llvm::IRBuilder<> b(&*fn.getEntryBlock().getFirstInsertionPt());
  if (family == "x86") {
    // MXCSR bit 15 (FTZ) and bit 6 (DAZ); stmxcsr / ldmxcsr go through memory.
    llvm::Value* slot = b.CreateAlloca(b.getInt32Ty(), nullptr, "mxcsr");
    b.CreateIntrinsic(llvm::Intrinsic::x86_sse_stmxcsr, {}, {slot});
    llvm::Value* caller = b.CreateLoad(b.getInt32Ty(), slot, "mxcsr.caller");
    b.CreateStore(b.CreateOr(caller, b.getInt32(0x8040)), slot);
    b.CreateIntrinsic(llvm::Intrinsic::x86_sse_ldmxcsr, {}, {slot});
    for (llvm::ReturnInst* ret : returns) {
      b.SetInsertPoint(ret);
      b.CreateStore(caller, slot);
      b.CreateIntrinsic(llvm::Intrinsic::x86_sse_ldmxcsr, {}, {slot});
    }
  } else if (family == "aarch64") {
    // FPCR bit 24 (FZ): single and double precision.
    llvm::Value* caller = b.CreateIntrinsic(b.getInt64Ty(), llvm::Intrinsic::aarch64_get_fpcr, {});
    b.CreateIntrinsic(llvm::Intrinsic::aarch64_set_fpcr, {},
                      {b.CreateOr(caller, b.getInt64(uint64_t{1} << 24))});
    for (llvm::ReturnInst* ret : returns) {
      b.SetInsertPoint(ret);
      b.CreateIntrinsic(llvm::Intrinsic::aarch64_set_fpcr, {}, {caller});
    }
  } else {
    throw CompileError("internal error: " + std::string(kFlushDenormalsAttribute) + " '" +
                       family.str() + "' is neither x86 nor aarch64");
  }
  fn.addFnAttr("denormal-fp-math", "preserve-sign,preserve-sign");
}

}  // namespace

llvm::Function* emitKernel(const Node& node, llvm::Module& module, const std::string& symbol,
                           const std::vector<std::pair<std::string, std::string>>& attributes) {
  const Lowering* lowering = findLowering(node.op);
  if (!lowering)
    throw CompileError("node '" + node.name + "' (" + node.op +
                       "): no CPU lowering (to add one, see docs/ADDING_AN_OPERATOR.md)");
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Type* ptr = llvm::PointerType::getUnqual(ctx);
  llvm::Type* i64 = llvm::Type::getInt64Ty(ctx);
  auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, i64, i64}, false);
  auto* fn = llvm::Function::Create(type, llvm::Function::InternalLinkage, symbol, module);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  fn->addFnAttr(llvm::Attribute::NoFree);
  fn->addFnAttr(llvm::Attribute::NoSync);
  for (const auto& [name, value] : attributes) fn->addFnAttr(name, value);
  fn->addParamAttr(0, llvm::Attribute::NoAlias);
  fn->addParamAttr(0, llvm::Attribute::ReadOnly);
  llvm::Argument* args = fn->getArg(0);
  args->setName("args");
  fn->getArg(1)->setName("task_begin");
  fn->getArg(2)->setName("task_end");

  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  // nanort_kernel_args { void* const* buffers; uint64_t num_buffers; }
  llvm::Value* buffers = b.CreateLoad(ptr, args, "buffers");

  // The runtime cannot know what a kernel expects, so the kernel guards
  // itself against a damaged program: it does nothing unless it got exactly
  // its number of buffers, and never runs a task past its own task count.
  uint64_t expected_buffers = node.outputs.size();
  for (const Value* in : node.inputs) expected_buffers += in ? 1 : 0;
  // The next kernel's weights, a buffer after the inputs.
  int64_t next_weights_bytes = 0;
  if (fn->hasFnAttribute(kNextWeightsAttribute))
    fn->getFnAttribute(kNextWeightsAttribute)
        .getValueAsString()
        .getAsInteger(10, next_weights_bytes);
  if (next_weights_bytes > 0) ++expected_buffers;
  llvm::Value* num_buffers =
      b.CreateLoad(i64, b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), args, 8), "num_buffers");
  auto* body = llvm::BasicBlock::Create(ctx, "body", fn);
  auto* done = llvm::BasicBlock::Create(ctx, "done", fn);
  b.CreateCondBr(b.CreateICmpEQ(num_buffers, b.getInt64(expected_buffers)), body, done);
  b.SetInsertPoint(done);
  b.CreateRetVoid();
  b.SetInsertPoint(body);
  llvm::Value* task_count = b.getInt64(lowering->task_count(node));
  llvm::Value* task_end = b.CreateIntrinsic(
      llvm::Intrinsic::umin, {i64}, {fn->getArg(2), task_count}, nullptr, "task_end.clamped");
  llvm::Value* task_begin = b.CreateIntrinsic(
      llvm::Intrinsic::umin, {i64}, {fn->getArg(1), task_end}, nullptr, "task_begin.clamped");
  KernelBuilder kb{module, fn, b, node, task_begin, task_end};
  // nanort_kernel_args::scratch, after buffers and num_buffers.
  if (lowering->scratch_bytes && lowering->scratch_bytes(node) != 0)
    kb.scratch =
        b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), args, 16), "scratch");
  uint64_t slot = 0;
  auto loadSlot = [&](const Value& value) {
    llvm::Value* p =
        b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, buffers, slot++), value.name);
    // Every buffer is at least 64-byte aligned (arena slices, constants and the
    // caller's tensors are checked at run); operands may alias (Add(x, x), an
    // output over its in_place_input), so nothing here says they do not.
    auto* load = llvm::cast<llvm::LoadInst>(p);
    load->setMetadata(llvm::LLVMContext::MD_nonnull, llvm::MDNode::get(ctx, {}));
    return p;
  };
  for (const Value* in : node.inputs) kb.input_ptrs.push_back(in ? loadSlot(*in) : nullptr);
  if (next_weights_bytes > 0) {
    kb.next_weights =
        b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, buffers, slot++), "next_weights");
    kb.next_weights_bytes = next_weights_bytes;
  }
  for (const Value* out : node.outputs) kb.output_ptrs.push_back(loadSlot(*out));
  lowering->emit(kb);
  b.CreateRetVoid();
  if (fn->hasFnAttribute(kFlushDenormalsAttribute))
    flushDenormals(*fn, fn->getFnAttribute(kFlushDenormalsAttribute).getValueAsString());
  return fn;
}

}  // namespace nanoc::cpu
