#include "compiler/codegen/gpu/testing/simt_emulator.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>
#include <ucontext.h>

#include <cinttypes>
#include <cmath>
#include <cstring>
#include <map>

#include "compiler/ir/error.h"

namespace nanoc::simt {
namespace {

enum class Wait : uint8_t { Ready, Barrier, Shuffle, Mma, Done };
// The mma.sync shapes and types the kernels use (f32 accumulate).
enum class MmaKind : uint8_t { Tf32M16N8K8, Bf16M16N8K16, F16M16N8K16, F16M16N8K8 };
enum class ShuffleMode : uint8_t { Up, Down, Bfly, Idx };

struct Thread {
  ucontext_t context;
  uint32_t tid[3];
  uint32_t linear = 0;
  Wait wait = Wait::Ready;
  ShuffleMode mode = ShuffleMode::Bfly;
  uint32_t b = 0, c = 0, value = 0, result = 0;
  // mma.sync: this lane's A, B, C fragment registers in, D out.
  MmaKind mma = MmaKind::Tf32M16N8K8;
  uint32_t mma_in[12] = {};
  float mma_out[4] = {};
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
  // The first load or store at an address its declared alignment does not
  // hold (alignment 0: none yet).
  uint64_t misaligned_address = 0, misaligned_alignment = 0;
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
// Called by the instrumented loads and stores (see instrumentAlignment).
void simt_misaligned(uint64_t address, uint64_t alignment) {
  if (g_block->misaligned_alignment == 0) {
    g_block->misaligned_address = address;
    g_block->misaligned_alignment = alignment;
  }
}

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
// cvt.rna.tf32.f32: round to nearest, ties away from zero, on the 13
// dropped mantissa bits (adding half of the last kept bit to the magnitude);
// NaN and infinity unchanged.
uint32_t simt_f2tf32_rna(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  if ((bits & 0x7f800000u) == 0x7f800000u) return bits;
  return (bits + 0x1000u) & 0xffffe000u;
}

// Every mma call is rewritten to pass its operands as 32-bit words (A, B, C
// fragment registers in order) and a pointer for the four D values.
void mmaCall(MmaKind kind, const uint32_t* in, float* out) {
  Thread* t = g_block->current;
  t->wait = Wait::Mma;
  t->mma = kind;
  std::memcpy(t->mma_in, in, sizeof(t->mma_in));
  yieldToScheduler();
  std::memcpy(out, t->mma_out, sizeof(t->mma_out));
}
void simt_mma_tf32_m16n8k8(const uint32_t* in, float* out) {
  mmaCall(MmaKind::Tf32M16N8K8, in, out);
}
void simt_mma_bf16_m16n8k16(const uint32_t* in, float* out) {
  mmaCall(MmaKind::Bf16M16N8K16, in, out);
}
void simt_mma_f16_m16n8k16(const uint32_t* in, float* out) {
  mmaCall(MmaKind::F16M16N8K16, in, out);
}
void simt_mma_f16_m16n8k8(const uint32_t* in, float* out) { mmaCall(MmaKind::F16M16N8K8, in, out); }

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

float bitsToFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// IEEE binary16 to f32 (exact).
float halfToFloat(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0x1f) return bitsToFloat(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return bitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
  const float v = std::ldexp(static_cast<float>(mant), -24);  // subnormal or zero
  return sign ? -v : v;
}

struct MmaShape {
  int k, a_regs, b_regs;
};
MmaShape mmaShape(MmaKind kind) {
  switch (kind) {
    case MmaKind::Tf32M16N8K8:
      return {8, 4, 2};
    case MmaKind::Bf16M16N8K16:
    case MmaKind::F16M16N8K16:
      return {16, 4, 2};
    case MmaKind::F16M16N8K8:
      return {8, 2, 1};
  }
  return {8, 4, 2};
}

// One warp's mma.sync: gathers A (16 x k), B (k x 8) and C (16 x 8) from the
// lanes' fragment registers by PTX ISA's layouts (group = lane / 4,
// tig = lane % 4), computes D = A * B + C in f32, gives each lane its D.
//  .tf32 m16n8k8: a_i (row group + 8 (i % 2), col tig + 4 (i / 2));
//                 b_i (k tig + 4 i, col group).
//  .f16/.bf16 m16n8k16: register a_i holds (row group + 8 (i % 2),
//                 col 2 tig + 8 (i / 2) + h), h = 0 in the low half;
//                 register b_i holds (k 2 tig + 8 i + h, col group).
//  .f16 m16n8k8:  register a_i holds (row group + 8 i, col 2 tig + h);
//                 b_0 holds (k 2 tig + h, col group).
//  C/D: c_i (row group + 8 (i / 2), col 2 tig + i % 2).
void runMma(Thread* lanes) {
  const MmaKind kind = lanes[0].mma;
  const MmaShape s = mmaShape(kind);
  float A[16][16] = {}, B[16][8] = {}, C[16][8] = {};
  auto element = [&](uint32_t word, int h) {
    switch (kind) {
      case MmaKind::Tf32M16N8K8:
        return bitsToFloat(word & 0xffffe000u);  // tf32 reads the top 19 bits
      case MmaKind::Bf16M16N8K16:
        return bitsToFloat(((word >> (16 * h)) & 0xffffu) << 16);
      default:
        return halfToFloat(static_cast<uint16_t>(word >> (16 * h)));
    }
  };
  const bool tf32 = kind == MmaKind::Tf32M16N8K8, k8_f16 = kind == MmaKind::F16M16N8K8;
  for (int lane = 0; lane < 32; ++lane) {
    const Thread& t = lanes[lane];
    const int g = lane / 4, q = lane % 4;
    for (int i = 0; i < s.a_regs; ++i) {
      const uint32_t w = t.mma_in[i];
      if (tf32) {
        A[g + 8 * (i % 2)][q + 4 * (i / 2)] = element(w, 0);
        continue;
      }
      const int row = k8_f16 ? g + 8 * i : g + 8 * (i % 2);
      const int col = k8_f16 ? 2 * q : 2 * q + 8 * (i / 2);
      A[row][col] = element(w, 0);
      A[row][col + 1] = element(w, 1);
    }
    for (int i = 0; i < s.b_regs; ++i) {
      const uint32_t w = t.mma_in[s.a_regs + i];
      if (tf32) {
        B[q + 4 * i][g] = element(w, 0);
        continue;
      }
      B[2 * q + 8 * i][g] = element(w, 0);
      B[2 * q + 8 * i + 1][g] = element(w, 1);
    }
    for (int i = 0; i < 4; ++i)
      C[g + 8 * (i / 2)][2 * q + i % 2] = bitsToFloat(t.mma_in[s.a_regs + s.b_regs + i]);
  }
  float D[16][8];
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 8; ++c) {
      float acc = C[r][c];
      for (int k = 0; k < s.k; ++k) acc = std::fma(A[r][k], B[k][c], acc);
      D[r][c] = acc;
    }
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, q = lane % 4;
    for (int i = 0; i < 4; ++i) lanes[lane].mma_out[i] = D[g + 8 * (i / 2)][2 * q + i % 2];
  }
}

// The mma intrinsics the emulator takes, and the host function of each.
const std::map<std::string, void*>& mmaTable() {
  static const std::map<std::string, void*> table = {
      {"llvm.nvvm.mma.m16n8k8.row.col.tf32", reinterpret_cast<void*>(simt_mma_tf32_m16n8k8)},
      {"llvm.nvvm.mma.m16n8k16.row.col.bf16", reinterpret_cast<void*>(simt_mma_bf16_m16n8k16)},
      {"llvm.nvvm.mma.m16n8k16.row.col.f32.f32", reinterpret_cast<void*>(simt_mma_f16_m16n8k16)},
      {"llvm.nvvm.mma.m16n8k8.row.col.f32.f32", reinterpret_cast<void*>(simt_mma_f16_m16n8k8)},
  };
  return table;
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
      {"llvm.nvvm.f2tf32.rna", reinterpret_cast<void*>(simt_f2tf32_rna)},
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

// Every load and store whose declared alignment is more than a byte checks
// its address: NVPTX takes the IR's alignment at its word (an `align 16`
// <4 x float> becomes one ld.global.v4.f32) and the GPU faults on an
// address that does not hold it, where the host's loads would not. A
// violation is recorded (simt_misaligned) and reported after the block; the
// host copy's accesses become unaligned ones.
void instrumentAlignment(llvm::Module& m, llvm::Function* report) {
  std::vector<std::pair<llvm::Instruction*, std::pair<llvm::Value*, uint64_t>>> accesses;
  for (llvm::Function& f : m)
    for (llvm::BasicBlock& bb : f)
      for (llvm::Instruction& inst : bb) {
        if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst)) {
          if (load->getAlign().value() > 1)
            accesses.push_back({load, {load->getPointerOperand(), load->getAlign().value()}});
        } else if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst)) {
          if (store->getAlign().value() > 1)
            accesses.push_back({store, {store->getPointerOperand(), store->getAlign().value()}});
        }
      }
  llvm::LLVMContext& c = m.getContext();
  llvm::Type* i64 = llvm::Type::getInt64Ty(c);
  for (const auto& [inst, what] : accesses) {
    const auto& [pointer, alignment] = what;
    llvm::IRBuilder<> b(inst);
    llvm::Value* address = b.CreatePtrToInt(pointer, i64);
    llvm::Value* off =
        b.CreateICmpNE(b.CreateAnd(address, b.getInt64(alignment - 1)), b.getInt64(0));
    llvm::Instruction* then = llvm::SplitBlockAndInsertIfThen(off, inst, /*Unreachable=*/false);
    llvm::IRBuilder<> r(then);
    r.CreateCall(report, {address, b.getInt64(alignment)});
    // The host itself reads and writes unaligned, so that the block runs on
    // to its end (an aligned SSE move would fault here first).
    if (auto* load = llvm::dyn_cast<llvm::LoadInst>(inst)) load->setAlignment(llvm::Align(1));
    if (auto* store = llvm::dyn_cast<llvm::StoreInst>(inst)) store->setAlignment(llvm::Align(1));
  }
}

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
  // mma calls: operands stored as 32-bit words into a stack array, a call
  // to the host function with it and a result array, the struct rebuilt.
  {
    std::vector<llvm::Function*> mmas;
    for (llvm::Function& f : *m)
      if (f.isDeclaration() && mmaTable().count(f.getName().str())) mmas.push_back(&f);
    for (llvm::Function* f : mmas) {
      void* target = mmaTable().at(f->getName().str());
      std::string host = "__simt_" + f->getName().str();
      for (char& ch : host)
        if (ch == '.') ch = '_';
      llvm::LLVMContext& c = m->getContext();
      llvm::Type* i32 = llvm::Type::getInt32Ty(c);
      llvm::Type* f32 = llvm::Type::getFloatTy(c);
      llvm::Type* ptr = llvm::PointerType::get(c, 0);
      llvm::Function* replacement = llvm::Function::Create(
          llvm::FunctionType::get(llvm::Type::getVoidTy(c), {ptr, ptr}, false),
          llvm::GlobalValue::ExternalLinkage, host, *m);
      std::vector<llvm::CallInst*> calls;
      for (llvm::User* u : f->users())
        if (auto* call = llvm::dyn_cast<llvm::CallInst>(u)) calls.push_back(call);
      for (llvm::CallInst* call : calls) {
        llvm::IRBuilder<> entry(&*call->getFunction()->getEntryBlock().getFirstInsertionPt());
        llvm::Value* in = entry.CreateAlloca(llvm::ArrayType::get(i32, 12));
        llvm::Value* out = entry.CreateAlloca(llvm::ArrayType::get(f32, 4));
        llvm::IRBuilder<> b(call);
        for (unsigned i = 0; i < call->arg_size(); ++i)
          b.CreateStore(b.CreateBitCast(call->getArgOperand(i), i32),
                        b.CreateConstGEP1_32(i32, in, i));
        b.CreateCall(replacement, {in, out});
        llvm::Value* d = llvm::PoisonValue::get(call->getType());
        for (unsigned i = 0; i < 4; ++i)
          d = b.CreateInsertValue(d, b.CreateLoad(f32, b.CreateConstGEP1_32(f32, out, i)), {i});
        call->replaceAllUsesWith(d);
        call->eraseFromParent();
      }
      f->eraseFromParent();
      symbols[es.intern(host)] = {llvm::orc::ExecutorAddr::fromPtr(target),
                                  llvm::JITSymbolFlags::Exported};
    }
  }
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
  {
    llvm::LLVMContext& c = m->getContext();
    llvm::Type* i64 = llvm::Type::getInt64Ty(c);
    llvm::Function* report =
        llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(c), {i64, i64}, false),
                               llvm::GlobalValue::ExternalLinkage, "__simt_misaligned", *m);
    instrumentAlignment(*m, report);
    symbols[es.intern("__simt_misaligned")] = {
        llvm::orc::ExecutorAddr::fromPtr(reinterpret_cast<void*>(simt_misaligned)),
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
          // Where warp w's lanes stand on a warp-collective op: none waits
          // on it, some do and another lane may still arrive (Pending), every
          // live lane does (Met), or some do and no other lane can arrive
          // (Stuck: it exited or waits at a barrier).
          enum class Meeting { None, Pending, Met, Stuck };
          auto meeting = [&](uint32_t w, uint32_t end, Wait kind) {
            bool all = true, any = false, blocked = true;
            for (uint32_t i = w * 32; i < end; ++i) {
              const Wait s = block.threads[i].wait;
              any = any || s == kind;
              all = all && s == kind;
              blocked = blocked && s != Wait::Ready;
            }
            return !any  ? Meeting::None
                   : all ? Meeting::Met
                         : (blocked ? Meeting::Stuck : Meeting::Pending);
          };
          for (uint32_t w = 0; w * 32 < threads; ++w) {
            const uint32_t end = std::min(threads, (w + 1) * 32);
            // Warps whose live lanes all wait on a shuffle complete it.
            const Meeting shuffle = meeting(w, end, Wait::Shuffle);
            if (shuffle == Meeting::Stuck)
              fail(where + ": warp " + std::to_string(w) +
                   " shuffles with lanes that exited or wait at a barrier");
            if (shuffle == Meeting::Met) {
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
            // Warps whose 32 lanes all wait on an mma complete it.
            const Meeting mma = meeting(w, end, Wait::Mma);
            if (mma == Meeting::Stuck || (mma != Meeting::None && end - w * 32 != 32))
              fail(where + ": warp " + std::to_string(w) + " runs mma.sync without all 32 lanes");
            if (mma == Meeting::Met) {
              for (uint32_t i = w * 32; i < end; ++i)
                if (block.threads[i].mma != block.threads[w * 32].mma)
                  fail(where + ": lanes of warp " + std::to_string(w) + " meet at different mmas");
              runMma(&block.threads[w * 32]);
              for (uint32_t i = w * 32; i < end; ++i) block.threads[i].wait = Wait::Ready;
              progress = true;
            }
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
        if (block.misaligned_alignment != 0) {
          char address[32];
          std::snprintf(address, sizeof address, "0x%" PRIx64, block.misaligned_address);
          fail(where + ": a load or store declared " + std::to_string(block.misaligned_alignment) +
               "-byte aligned at " + address + ", which is not (a misaligned address on a GPU)");
        }
      }
}

}  // namespace nanoc::simt
