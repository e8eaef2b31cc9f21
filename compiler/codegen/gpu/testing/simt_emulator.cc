#include "compiler/codegen/gpu/testing/simt_emulator.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <ucontext.h>

#include <cstring>
#include <map>

#include "compiler/ir/error.h"

namespace nanoc::simt {
namespace {

enum class Wait : uint8_t { Ready, Barrier, Shuffle, Done };
enum class ShuffleMode : uint8_t { Up, Down, Bfly, Idx };

struct Thread {
  ucontext_t context;
  uint32_t tid[3];
  uint32_t linear = 0;
  Wait wait = Wait::Ready;
  ShuffleMode mode = ShuffleMode::Bfly;
  uint32_t b = 0, c = 0, value = 0, result = 0;
};

// The block being run (one at a time; thread_local keeps emulators on two OS
// threads apart).
struct Block {
  std::vector<Thread> threads;
  std::vector<uint8_t> stacks;
  size_t stack_size = 0;
  uint32_t ntid[3], ctaid[3], nctaid[3];
  ucontext_t scheduler;
  Thread* current = nullptr;
  void* fn = nullptr;
  const std::vector<void*>* args = nullptr;
};
thread_local Block* g_block = nullptr;

constexpr size_t kStackBytes = 64 * 1024;
constexpr size_t kMaxArgs = 16;

void yieldToScheduler() {
  Thread* t = g_block->current;
  swapcontext(&t->context, &g_block->scheduler);
}

template <size_t... I>
void invokeN(void* fn, const std::vector<void*>& a, std::index_sequence<I...>) {
  using Fn = void (*)(decltype((void)I, static_cast<void*>(nullptr))...);
  reinterpret_cast<Fn>(fn)(a[I]...);
}

template <size_t N>
void invokeIf(void* fn, const std::vector<void*>& a) {
  if (a.size() == N) invokeN(fn, a, std::make_index_sequence<N>());
  if constexpr (N > 0) invokeIf<N - 1>(fn, a);
}

void fiberMain() {
  invokeIf<kMaxArgs>(g_block->fn, *g_block->args);
  g_block->current->wait = Wait::Done;
  // uc_link returns to the scheduler.
}

// ---- what the kernels' NVVM intrinsics become ----
extern "C" {
uint32_t simt_tid_x() { return g_block->current->tid[0]; }
uint32_t simt_tid_y() { return g_block->current->tid[1]; }
uint32_t simt_tid_z() { return g_block->current->tid[2]; }
uint32_t simt_ntid_x() { return g_block->ntid[0]; }
uint32_t simt_ntid_y() { return g_block->ntid[1]; }
uint32_t simt_ntid_z() { return g_block->ntid[2]; }
uint32_t simt_ctaid_x() { return g_block->ctaid[0]; }
uint32_t simt_ctaid_y() { return g_block->ctaid[1]; }
uint32_t simt_ctaid_z() { return g_block->ctaid[2]; }
uint32_t simt_nctaid_x() { return g_block->nctaid[0]; }
uint32_t simt_nctaid_y() { return g_block->nctaid[1]; }
uint32_t simt_nctaid_z() { return g_block->nctaid[2]; }
uint32_t simt_laneid() { return g_block->current->linear % 32; }
uint32_t simt_warpsize() { return 32; }
void simt_barrier() {
  g_block->current->wait = Wait::Barrier;
  yieldToScheduler();
}
void simt_barrier_i32(uint32_t) { simt_barrier(); }

uint32_t shuffle(ShuffleMode mode, uint32_t value, uint32_t b, uint32_t c) {
  Thread* t = g_block->current;
  t->wait = Wait::Shuffle;
  t->mode = mode;
  t->value = value;
  t->b = b;
  t->c = c;
  yieldToScheduler();
  return t->result;
}
#define NANOC_SIMT_SHUFFLE(MODE, NAME)                                            \
  uint32_t simt_shfl_##NAME##_i32(uint32_t, uint32_t v, uint32_t b, uint32_t c) { \
    return shuffle(ShuffleMode::MODE, v, b, c);                                   \
  }                                                                               \
  float simt_shfl_##NAME##_f32(uint32_t, float v, uint32_t b, uint32_t c) {       \
    uint32_t bits;                                                                \
    std::memcpy(&bits, &v, 4);                                                    \
    bits = shuffle(ShuffleMode::MODE, bits, b, c);                                \
    float out;                                                                    \
    std::memcpy(&out, &bits, 4);                                                  \
    return out;                                                                   \
  }
NANOC_SIMT_SHUFFLE(Up, up)
NANOC_SIMT_SHUFFLE(Down, down)
NANOC_SIMT_SHUFFLE(Bfly, bfly)
NANOC_SIMT_SHUFFLE(Idx, idx)
#undef NANOC_SIMT_SHUFFLE
}

// PTX ISA, shfl.sync: the source lane of `lane` and whether it is in range.
uint32_t shuffleSource(const Thread& t, uint32_t lane) {
  const uint32_t bval = t.b & 31, cval = t.c & 31, segmask = (t.c >> 8) & 31;
  const uint32_t max_lane = (lane & segmask) | (cval & ~segmask);
  const uint32_t min_lane = lane & segmask;
  int64_t j = lane;
  bool in_range = false;
  switch (t.mode) {
    case ShuffleMode::Up:
      j = static_cast<int64_t>(lane) - bval;
      in_range = j >= static_cast<int64_t>(max_lane);
      break;
    case ShuffleMode::Down:
      j = lane + bval;
      in_range = j <= max_lane;
      break;
    case ShuffleMode::Bfly:
      j = lane ^ bval;
      in_range = j <= max_lane;
      break;
    case ShuffleMode::Idx:
      j = min_lane | (bval & ~segmask);
      in_range = j <= max_lane;
      break;
  }
  return in_range ? static_cast<uint32_t>(j) : lane;
}

// The intrinsic names the emulator replaces, and what with.
const std::map<std::string, void*>& intrinsicTable() {
  static const std::map<std::string, void*> table = {
      {"llvm.nvvm.read.ptx.sreg.tid.x", reinterpret_cast<void*>(simt_tid_x)},
      {"llvm.nvvm.read.ptx.sreg.tid.y", reinterpret_cast<void*>(simt_tid_y)},
      {"llvm.nvvm.read.ptx.sreg.tid.z", reinterpret_cast<void*>(simt_tid_z)},
      {"llvm.nvvm.read.ptx.sreg.ntid.x", reinterpret_cast<void*>(simt_ntid_x)},
      {"llvm.nvvm.read.ptx.sreg.ntid.y", reinterpret_cast<void*>(simt_ntid_y)},
      {"llvm.nvvm.read.ptx.sreg.ntid.z", reinterpret_cast<void*>(simt_ntid_z)},
      {"llvm.nvvm.read.ptx.sreg.ctaid.x", reinterpret_cast<void*>(simt_ctaid_x)},
      {"llvm.nvvm.read.ptx.sreg.ctaid.y", reinterpret_cast<void*>(simt_ctaid_y)},
      {"llvm.nvvm.read.ptx.sreg.ctaid.z", reinterpret_cast<void*>(simt_ctaid_z)},
      {"llvm.nvvm.read.ptx.sreg.nctaid.x", reinterpret_cast<void*>(simt_nctaid_x)},
      {"llvm.nvvm.read.ptx.sreg.nctaid.y", reinterpret_cast<void*>(simt_nctaid_y)},
      {"llvm.nvvm.read.ptx.sreg.nctaid.z", reinterpret_cast<void*>(simt_nctaid_z)},
      {"llvm.nvvm.read.ptx.sreg.laneid", reinterpret_cast<void*>(simt_laneid)},
      {"llvm.nvvm.read.ptx.sreg.warpsize", reinterpret_cast<void*>(simt_warpsize)},
      {"llvm.nvvm.barrier0", reinterpret_cast<void*>(simt_barrier)},
      {"llvm.nvvm.barrier.cta.sync.aligned.all", reinterpret_cast<void*>(simt_barrier_i32)},
      {"llvm.nvvm.barrier.cta.sync.all", reinterpret_cast<void*>(simt_barrier_i32)},
      {"llvm.nvvm.shfl.sync.up.i32", reinterpret_cast<void*>(simt_shfl_up_i32)},
      {"llvm.nvvm.shfl.sync.up.f32", reinterpret_cast<void*>(simt_shfl_up_f32)},
      {"llvm.nvvm.shfl.sync.down.i32", reinterpret_cast<void*>(simt_shfl_down_i32)},
      {"llvm.nvvm.shfl.sync.down.f32", reinterpret_cast<void*>(simt_shfl_down_f32)},
      {"llvm.nvvm.shfl.sync.bfly.i32", reinterpret_cast<void*>(simt_shfl_bfly_i32)},
      {"llvm.nvvm.shfl.sync.bfly.f32", reinterpret_cast<void*>(simt_shfl_bfly_f32)},
      {"llvm.nvvm.shfl.sync.idx.i32", reinterpret_cast<void*>(simt_shfl_idx_i32)},
      {"llvm.nvvm.shfl.sync.idx.f32", reinterpret_cast<void*>(simt_shfl_idx_f32)},
  };
  return table;
}

[[noreturn]] void fail(const std::string& what) { throw CompileError("SIMT emulator: " + what); }

template <typename T>
T orFail(llvm::Expected<T> value, const std::string& what) {
  if (!value) fail(what + ": " + llvm::toString(value.takeError()));
  return std::move(*value);
}

}  // namespace

struct Emulator::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  // addrspace(3) globals, renamed external, and their bytes.
  std::vector<std::pair<std::string, uint64_t>> shared_globals;
  std::map<std::string, void*> kernels;
};

Emulator::Emulator(const llvm::Module& gpu_module) : impl_(std::make_unique<Impl>()) {
  static const bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;
  // A copy in a context of its own (the JIT owns it), through bitcode.
  std::string bitcode;
  llvm::raw_string_ostream os(bitcode);
  llvm::WriteBitcodeToFile(gpu_module, os);
  auto context = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> m =
      orFail(llvm::parseBitcodeFile(llvm::MemoryBufferRef(bitcode, "gpu"), *context), "bitcode");

  impl_->jit = orFail(llvm::orc::LLJITBuilder().create(), "creating the JIT");
  m->setTargetTriple(impl_->jit->getTargetTriple());
  m->setDataLayout(impl_->jit->getDataLayout());

  std::vector<std::string> kernel_names;
  for (llvm::Function& f : *m) {
    if (f.getCallingConv() == llvm::CallingConv::PTX_Kernel) {
      f.setCallingConv(llvm::CallingConv::C);
      f.setLinkage(llvm::GlobalValue::ExternalLinkage);
      kernel_names.push_back(f.getName().str());
    }
  }
  llvm::orc::SymbolMap symbols;
  auto& es = impl_->jit->getExecutionSession();
  std::vector<llvm::Function*> intrinsics;
  for (llvm::Function& f : *m)
    if (f.isDeclaration() && f.getName().starts_with("llvm.nvvm.")) intrinsics.push_back(&f);
  for (llvm::Function* f : intrinsics) {
    auto it = intrinsicTable().find(f->getName().str());
    if (it == intrinsicTable().end())
      fail("NVVM intrinsic '" + f->getName().str() + "' is not emulated");
    std::string host = "__simt_" + f->getName().str();
    for (char& ch : host)
      if (ch == '.') ch = '_';
    llvm::Function* replacement =
        llvm::Function::Create(f->getFunctionType(), llvm::GlobalValue::ExternalLinkage, host, *m);
    f->replaceAllUsesWith(replacement);
    f->eraseFromParent();
    symbols[es.intern(host)] = {llvm::orc::ExecutorAddr::fromPtr(it->second),
                                llvm::JITSymbolFlags::Exported};
  }
  // Shared memory: one instance, named so it can be found and poisoned.
  size_t n = 0;
  for (llvm::GlobalVariable& g : m->globals()) {
    if (g.getAddressSpace() != 3) continue;
    std::string name = "__simt_shared_" + std::to_string(n++);
    g.setName(name);
    g.setLinkage(llvm::GlobalValue::ExternalLinkage);
    if (!g.hasInitializer()) g.setInitializer(llvm::Constant::getNullValue(g.getValueType()));
    impl_->shared_globals.emplace_back(name, m->getDataLayout().getTypeAllocSize(g.getValueType()));
  }
  std::string errors;
  llvm::raw_string_ostream es_os(errors);
  if (llvm::verifyModule(*m, &es_os)) fail("host copy of the kernels is invalid IR:\n" + errors);

  auto& main = impl_->jit->getMainJITDylib();
  if (auto err = main.define(llvm::orc::absoluteSymbols(std::move(symbols))))
    fail("defining the intrinsics: " + llvm::toString(std::move(err)));
  // libm and libc for what the host code calls (memcpy, fmaf, ...).
  main.addGenerator(orFail(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
                               impl_->jit->getDataLayout().getGlobalPrefix()),
                           "process symbols"));
  if (auto err =
          impl_->jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(context))))
    fail("adding the module: " + llvm::toString(std::move(err)));
  for (const std::string& k : kernel_names)
    impl_->kernels[k] = orFail(impl_->jit->lookup(k), "looking up " + k).toPtr<void*>();
}

Emulator::~Emulator() = default;

void Emulator::launch(const std::string& name, const gpu::GpuLaunch& launch,
                      const std::vector<void*>& args) {
  auto it = impl_->kernels.find(name);
  if (it == impl_->kernels.end()) fail("no kernel '" + name + "'");
  if (args.size() > kMaxArgs) fail(name + ": more than 16 parameters");
  // Shared memory starts each block as NaNs (0xff bytes): a kernel that
  // reads what it did not write shows it.
  std::vector<std::pair<void*, uint64_t>> shared;
  for (const auto& [g, bytes] : impl_->shared_globals)
    shared.emplace_back(orFail(impl_->jit->lookup(g), "shared memory").toPtr<void*>(), bytes);

  Block block;
  const uint32_t threads = launch.block[0] * launch.block[1] * launch.block[2];
  block.threads.resize(threads);
  block.stacks.resize(threads * kStackBytes);
  for (int d = 0; d < 3; ++d) {
    block.ntid[d] = launch.block[d];
    block.nctaid[d] = launch.grid[d];
  }
  block.fn = it->second;
  block.args = &args;
  Block* saved = g_block;
  g_block = &block;
  struct Restore {
    Block* saved;
    ~Restore() { g_block = saved; }
  } restore{saved};

  for (uint32_t bz = 0; bz < launch.grid[2]; ++bz)
    for (uint32_t by = 0; by < launch.grid[1]; ++by)
      for (uint32_t bx = 0; bx < launch.grid[0]; ++bx) {
        block.ctaid[0] = bx, block.ctaid[1] = by, block.ctaid[2] = bz;
        for (const auto& [at, bytes] : shared) std::memset(at, 0xff, bytes);
        for (uint32_t i = 0; i < threads; ++i) {
          Thread& t = block.threads[i];
          t.linear = i;
          t.tid[0] = i % launch.block[0];
          t.tid[1] = (i / launch.block[0]) % launch.block[1];
          t.tid[2] = i / (launch.block[0] * launch.block[1]);
          t.wait = Wait::Ready;
          getcontext(&t.context);
          t.context.uc_stack.ss_sp = block.stacks.data() + i * kStackBytes;
          t.context.uc_stack.ss_size = kStackBytes;
          t.context.uc_link = &block.scheduler;
          makecontext(&t.context, fiberMain, 0);
        }
        std::string where = name + " block (" + std::to_string(bx) + "," + std::to_string(by) +
                            "," + std::to_string(bz) + ")";
        while (true) {
          bool progress = false;
          for (Thread& t : block.threads) {
            if (t.wait != Wait::Ready) continue;
            block.current = &t;
            swapcontext(&block.scheduler, &t.context);
            progress = true;
          }
          // Warps whose live lanes all wait on a shuffle complete it.
          for (uint32_t w = 0; w * 32 < threads; ++w) {
            const uint32_t end = std::min(threads, (w + 1) * 32);
            bool all = true, any = false;
            for (uint32_t i = w * 32; i < end; ++i) {
              const Wait s = block.threads[i].wait;
              any = any || s == Wait::Shuffle;
              all = all && s == Wait::Shuffle;
            }
            if (!any) continue;
            if (!all) {
              bool blocked = true;  // can another lane still arrive?
              for (uint32_t i = w * 32; i < end; ++i)
                blocked = blocked && block.threads[i].wait != Wait::Ready;
              if (blocked)
                fail(where + ": warp " + std::to_string(w) +
                     " shuffles with lanes that exited or wait at a barrier");
              continue;
            }
            for (uint32_t i = w * 32; i < end; ++i) {
              Thread& t = block.threads[i];
              const Thread& first = block.threads[w * 32];
              if (t.mode != first.mode || t.c != first.c)
                fail(where + ": lanes of warp " + std::to_string(w) +
                     " meet at different shuffles");
              const uint32_t src = w * 32 + shuffleSource(t, i % 32);
              t.result = src < end ? block.threads[src].value : t.value;
            }
            for (uint32_t i = w * 32; i < end; ++i) block.threads[i].wait = Wait::Ready;
            progress = true;
          }
          size_t done = 0, at_barrier = 0;
          for (const Thread& t : block.threads) {
            done += t.wait == Wait::Done;
            at_barrier += t.wait == Wait::Barrier;
          }
          if (done == threads) break;
          if (at_barrier != 0 && at_barrier + done == threads) {
            if (done != 0)
              fail(where + ": divergent barrier: " + std::to_string(done) +
                   " threads returned while " + std::to_string(at_barrier) + " wait at it");
            for (Thread& t : block.threads) t.wait = Wait::Ready;
            progress = true;
          }
          if (!progress) fail(where + ": deadlock (threads wait at a barrier and a shuffle)");
        }
      }
}

}  // namespace nanoc::simt
