#include "compiler/codegen/gpu/testing/simt_emulator.h"

#include <llvm/ExecutionEngine/Orc/AbsoluteSymbols.h>
#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/CallingConv.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <ucontext.h>

#include <cstdint>
#include <cstring>
#include <map>

#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/target.h"
#include "compiler/ir/error.h"

namespace nanoc::gpu::testing {
namespace {

constexpr size_t kStackBytes = 128 * 1024;
constexpr uint32_t kWarp = 32;

enum class State { Runnable, AtBarrier, AtShuffle, Done };

struct Fiber {
  ucontext_t context;
  uint8_t* stack = nullptr;  // kStackBytes, owned by the SimtModule
  State state = State::Runnable;
  uint32_t tid = 0;
  float shuffle_value = 0;
  uint32_t shuffle_lane_mask = 0;
  uint32_t shuffle_mode = 0;  // 0: bfly (xor), 1: down, 2: idx
};

struct Block {
  uint32_t ctaid[3] = {0, 0, 0};
  uint32_t ntid[3] = {1, 1, 1};
  uint32_t nctaid[3] = {1, 1, 1};
  std::vector<Fiber> fibers;
  ucontext_t scheduler;
  Fiber* current = nullptr;
  void (*entry)(void**) = nullptr;
  void** args = nullptr;
  std::string error;  // set inside a fiber (no exception crosses a fiber)
};

thread_local Block* g_block = nullptr;

void yieldToScheduler() {
  Fiber* f = g_block->current;
  swapcontext(&f->context, &g_block->scheduler);
}

extern "C" {
uint32_t nanoc_simt_tid_x() { return g_block->current->tid; }
uint32_t nanoc_simt_ntid_x() { return g_block->ntid[0]; }
uint32_t nanoc_simt_ctaid(uint32_t d) { return g_block->ctaid[d]; }
uint32_t nanoc_simt_nctaid(uint32_t d) { return g_block->nctaid[d]; }
void nanoc_simt_barrier() {
  g_block->current->state = State::AtBarrier;
  yieldToScheduler();
}
float nanoc_simt_shfl_f32(uint32_t mode, uint32_t mask, float v, uint32_t lane_arg, uint32_t c) {
  if ((mask != 0xffffffffu || c != 31) && g_block->error.empty())
    g_block->error = "SIMT emulator: only full-warp shuffles with c = 31 are emulated";
  Fiber* f = g_block->current;
  f->state = State::AtShuffle;
  f->shuffle_value = v;
  f->shuffle_lane_mask = lane_arg;
  f->shuffle_mode = mode;
  yieldToScheduler();
  return f->shuffle_value;  // the scheduler put the partner's value here
}
}

void fiberMain() {
  Block* block = g_block;
  block->entry(block->args);
  block->current->state = State::Done;
  // Returning resumes uc_link: the scheduler.
}

// Runs one block to completion.
void runBlock(Block& block) {
  g_block = &block;
  for (Fiber& f : block.fibers) {
    f.state = State::Runnable;
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack;
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = &block.scheduler;
    makecontext(&f.context, fiberMain, 0);
  }
  const size_t n = block.fibers.size();
  for (;;) {
    bool ran = false;
    for (Fiber& f : block.fibers) {
      if (f.state != State::Runnable) continue;
      block.current = &f;
      swapcontext(&block.scheduler, &f.context);
      ran = true;
    }
    if (ran) continue;
    // Everyone is blocked or done: resolve warps whose lanes all shuffle.
    size_t done = 0, at_barrier = 0;
    bool resolved = false;
    for (const Fiber& f : block.fibers) {
      done += f.state == State::Done;
      at_barrier += f.state == State::AtBarrier;
    }
    if (done == n) {
      if (!block.error.empty()) throw CompileError(block.error);
      return;
    }
    for (size_t w = 0; w * kWarp < n; ++w) {
      size_t lanes = std::min<size_t>(kWarp, n - w * kWarp);
      Fiber* lane = &block.fibers[w * kWarp];
      size_t shuffling = 0;
      for (size_t l = 0; l < lanes; ++l) shuffling += lane[l].state == State::AtShuffle;
      if (shuffling == 0) continue;
      if (shuffling != kWarp)
        throw CompileError("SIMT emulator: a shuffle that " + std::to_string(kWarp - shuffling) +
                           " lanes of warp " + std::to_string(w) + " never reach");
      std::vector<float> values(kWarp);
      for (size_t l = 0; l < kWarp; ++l) values[l] = lane[l].shuffle_value;
      for (size_t l = 0; l < kWarp; ++l) {
        uint32_t src = static_cast<uint32_t>(l);
        uint32_t arg = lane[l].shuffle_lane_mask;
        switch (lane[l].shuffle_mode) {
          case 0:
            src = static_cast<uint32_t>(l) ^ arg;
            break;
          case 1:
            src = static_cast<uint32_t>(l) + arg < kWarp ? static_cast<uint32_t>(l) + arg
                                                         : static_cast<uint32_t>(l);
            break;
          default:
            src = arg & (kWarp - 1);
        }
        if (src >= kWarp) src = static_cast<uint32_t>(l);
        lane[l].shuffle_value = values[src];
        lane[l].state = State::Runnable;
      }
      resolved = true;
    }
    if (resolved) continue;
    if (at_barrier + done == n && at_barrier > 0) {
      if (done > 0)
        throw CompileError("SIMT emulator: a barrier that " + std::to_string(done) +
                           " threads of the block exited without reaching");
      for (Fiber& f : block.fibers) f.state = State::Runnable;
      continue;
    }
    throw CompileError("SIMT emulator: the block deadlocks");
  }
}

// Replaces the NVVM intrinsics of `m` with calls to the emulator.
void lowerNvvmIntrinsics(llvm::Module& m) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::Type* i32 = llvm::Type::getInt32Ty(ctx);
  llvm::Type* f32 = llvm::Type::getFloatTy(ctx);
  llvm::Type* void_ty = llvm::Type::getVoidTy(ctx);
  auto callee = [&](const char* name, llvm::Type* ret, std::vector<llvm::Type*> params) {
    return m.getOrInsertFunction(name, llvm::FunctionType::get(ret, params, false));
  };
  // Shared memory: internal globals whose address never escapes, which
  // LLVM's alias analysis would take as untouched by the barrier call (and
  // move loads across it); external, any call may write them.
  for (llvm::GlobalVariable& gv : m.globals())
    if (gv.getAddressSpace() == 3) {
      gv.setLinkage(llvm::GlobalValue::ExternalLinkage);
      gv.setInitializer(llvm::Constant::getNullValue(gv.getValueType()));
    }
  std::vector<llvm::CallInst*> calls;
  for (llvm::Function& fn : m)
    for (llvm::BasicBlock& bb : fn)
      for (llvm::Instruction& inst : bb)
        if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst))
          if (llvm::Function* f = call->getCalledFunction();
              f && f->isIntrinsic() && f->getName().starts_with("llvm.nvvm."))
            calls.push_back(call);
  for (llvm::CallInst* call : calls) {
    llvm::IRBuilder<> b(call);
    llvm::Value* r = nullptr;
    switch (call->getIntrinsicID()) {
      case llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x:
        r = b.CreateCall(callee("nanoc_simt_tid_x", i32, {}));
        break;
      case llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x:
        r = b.CreateCall(callee("nanoc_simt_ntid_x", i32, {}));
        break;
      case llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x:
      case llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y:
      case llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z: {
        uint32_t d = call->getIntrinsicID() - llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x;
        if (call->getIntrinsicID() == llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x) d = 0;
        if (call->getIntrinsicID() == llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y) d = 1;
        if (call->getIntrinsicID() == llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z) d = 2;
        r = b.CreateCall(callee("nanoc_simt_ctaid", i32, {i32}), {b.getInt32(d)});
        break;
      }
      case llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x:
        r = b.CreateCall(callee("nanoc_simt_nctaid", i32, {i32}), {b.getInt32(0)});
        break;
      case llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_all:
        b.CreateCall(callee("nanoc_simt_barrier", void_ty, {}));
        break;
      case llvm::Intrinsic::nvvm_shfl_sync_bfly_f32:
      case llvm::Intrinsic::nvvm_shfl_sync_down_f32:
      case llvm::Intrinsic::nvvm_shfl_sync_idx_f32: {
        uint32_t mode = call->getIntrinsicID() == llvm::Intrinsic::nvvm_shfl_sync_bfly_f32   ? 0
                        : call->getIntrinsicID() == llvm::Intrinsic::nvvm_shfl_sync_down_f32 ? 1
                                                                                             : 2;
        r = b.CreateCall(callee("nanoc_simt_shfl_f32", f32, {i32, i32, f32, i32, i32}),
                         {b.getInt32(mode), call->getArgOperand(0), call->getArgOperand(1),
                          call->getArgOperand(2), call->getArgOperand(3)});
        break;
      }
      default:
        throw CompileError("SIMT emulator: no emulation of " +
                           call->getCalledFunction()->getName().str());
    }
    if (r) call->replaceAllUsesWith(r);
    call->eraseFromParent();
  }
}

}  // namespace

SimtModule::SimtModule(std::unique_ptr<llvm::Module> m, std::unique_ptr<llvm::LLVMContext> ctx) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  lowerNvvmIntrinsics(*m);
  // Host functions: a C entry per kernel, `void NAME.simt(void** args)`.
  std::vector<llvm::Function*> kernels;
  for (llvm::Function& fn : *m)
    if (fn.getCallingConv() == llvm::CallingConv::PTX_Kernel) kernels.push_back(&fn);
  for (llvm::Function* fn : kernels) {
    fn->setCallingConv(llvm::CallingConv::C);
    fn->removeFnAttr("nvvm.maxntid");
    fn->removeFnAttr("nvvm.minctasm");
    llvm::LLVMContext& c = m->getContext();
    llvm::Type* ptr = llvm::PointerType::get(c, 0);
    auto* entry =
        llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(c), {ptr}, false),
                               llvm::GlobalValue::ExternalLinkage, fn->getName() + ".simt", *m);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(c, "entry", entry));
    std::vector<llvm::Value*> args;
    for (unsigned i = 0; i < fn->arg_size(); ++i) {
      llvm::Value* p = b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, entry->getArg(0), i));
      args.push_back(b.CreateAddrSpaceCast(p, fn->getArg(i)->getType()));
    }
    b.CreateCall(fn, args);
    b.CreateRetVoid();
  }
  cpu::CpuTarget host = cpu::hostTarget();
  std::unique_ptr<llvm::TargetMachine> machine = cpu::createTargetMachine(host);
  m->setTargetTriple(machine->getTargetTriple());
  m->setDataLayout(machine->createDataLayout());
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (llvm::verifyModule(*m, &os)) throw CompileError("SIMT emulator: invalid module: " + errors);
  cpu::optimizeModule(*m, *machine);
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit) throw CompileError("SIMT emulator: LLJIT: " + llvm::toString(jit.takeError()));
  jit_ = std::move(*jit);
  llvm::orc::MangleAndInterner mangle(jit_->getExecutionSession(), jit_->getDataLayout());
  llvm::orc::SymbolMap symbols;
  auto add = [&](const char* name, void* address) {
    symbols[mangle(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                             llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
  };
  add("nanoc_simt_tid_x", reinterpret_cast<void*>(&nanoc_simt_tid_x));
  add("nanoc_simt_ntid_x", reinterpret_cast<void*>(&nanoc_simt_ntid_x));
  add("nanoc_simt_ctaid", reinterpret_cast<void*>(&nanoc_simt_ctaid));
  add("nanoc_simt_nctaid", reinterpret_cast<void*>(&nanoc_simt_nctaid));
  add("nanoc_simt_barrier", reinterpret_cast<void*>(&nanoc_simt_barrier));
  add("nanoc_simt_shfl_f32", reinterpret_cast<void*>(&nanoc_simt_shfl_f32));
  if (llvm::Error e = jit_->getMainJITDylib().define(llvm::orc::absoluteSymbols(symbols)))
    throw CompileError("SIMT emulator: " + llvm::toString(std::move(e)));
  m->setDataLayout(jit_->getDataLayout());
  if (llvm::Error e = jit_->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))))
    throw CompileError("SIMT emulator: addIRModule: " + llvm::toString(std::move(e)));
}

SimtModule::~SimtModule() = default;

void SimtModule::launch(const std::string& symbol, const GpuLaunch& launch,
                        const std::vector<void*>& buffers) {
  auto address = jit_->lookup(symbol + ".simt");
  if (!address) throw CompileError("SIMT emulator: " + llvm::toString(address.takeError()));
  Block block;
  block.entry = address->toPtr<void (*)(void**)>();
  std::vector<void*> args = buffers;
  block.args = args.data();
  if (launch.block[1] != 1 || launch.block[2] != 1)
    throw CompileError("SIMT emulator: only 1-D blocks are emulated");
  for (int d = 0; d < 3; ++d) {
    block.ntid[d] = launch.block[d];
    block.nctaid[d] = launch.grid[d];
  }
  block.fibers.resize(launch.block[0]);
  while (stacks_.size() < launch.block[0])
    stacks_.push_back(std::unique_ptr<uint8_t[]>(new uint8_t[kStackBytes]));
  for (uint32_t t = 0; t < launch.block[0]; ++t) {
    block.fibers[t].tid = t;
    block.fibers[t].stack = stacks_[t].get();
  }
  for (uint32_t z = 0; z < launch.grid[2]; ++z)
    for (uint32_t y = 0; y < launch.grid[1]; ++y)
      for (uint32_t x = 0; x < launch.grid[0]; ++x) {
        block.ctaid[0] = x;
        block.ctaid[1] = y;
        block.ctaid[2] = z;
        runBlock(block);
      }
  g_block = nullptr;
}

}  // namespace nanoc::gpu::testing
