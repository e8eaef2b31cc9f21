// The GPU lowering table and the kernel entry (gpu_lowering.h), and the IR
// helpers the lowerings share (gpu_ir.h).
#include <llvm/IR/CallingConv.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <algorithm>
#include <map>

#include "compiler/codegen/gpu/gpu_ir.h"
#include "compiler/ir/error.h"

namespace nanoc::gpu {
namespace {

const std::map<std::string, GpuLowering, std::less<>>& lowerings() {
  static const std::map<std::string, GpuLowering, std::less<>> table = [] {
    std::map<std::string, GpuLowering, std::less<>> t;
    for (auto* group : {&elementwiseGpuLowerings, &matmulGpuLowerings, &rowGpuLowerings,
                        &poolGpuLowerings, &reduceGpuLowerings, &transposeGpuLowerings,
                        &dataMovementGpuLowerings, &batchNormGpuLowerings, &upsampleGpuLowerings})
      for (auto& [name, lowering] : (*group)()) t.emplace(name, std::move(lowering));
    return t;
  }();
  return table;
}

llvm::Value* sreg(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id) {
  return b.CreateIntrinsic(id, llvm::ArrayRef<llvm::Type*>{}, llvm::ArrayRef<llvm::Value*>{});
}

}  // namespace

const GpuLowering* findGpuLowering(std::string_view op) {
  auto it = lowerings().find(op);
  return it == lowerings().end() ? nullptr : &it->second;
}

bool hasGpuLowering(const Node& node) {
  const GpuLowering* lowering = findGpuLowering(node.op);
  if (!lowering) return false;
  for (const Value* v : node.outputs)
    if (!v) return false;
  try {
    return lowering->supports(node);
  } catch (const CompileError&) {
    return false;
  }
}

llvm::Function* emitGpuKernel(const Node& node, llvm::Module& module, const std::string& symbol) {
  const GpuLowering* lowering = findGpuLowering(node.op);
  if (!lowering || !lowering->supports(node))
    throw CompileError("node '" + node.name + "' (" + node.op + "): no GPU lowering for it");
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Type* ptr = llvm::PointerType::get(ctx, kGlobalSpace);
  size_t present = 0;
  for (const Value* v : node.inputs) present += v != nullptr;
  std::vector<llvm::Type*> params(present + node.outputs.size(), ptr);
  auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), params, false);
  llvm::Function* fn =
      llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, symbol, module);
  fn->setCallingConv(llvm::CallingConv::PTX_Kernel);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  GpuLaunch launch = lowering->launch(node);
  // ptxas sizes the registers so that this block fits (.maxntid), and may
  // use up to what one block per SM allows (.minnctapersm 1) rather than
  // spill to keep two (which it otherwise does, e.g. for sm_120).
  fn->addFnAttr("nvvm.maxntid", std::to_string(launch.block[0]) + "," +
                                    std::to_string(launch.block[1]) + "," +
                                    std::to_string(launch.block[2]));
  fn->addFnAttr("nvvm.minctasm", "1");
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  GpuKernelBuilder kb{module, fn, b, node, launch, {}, {}};
  size_t arg = 0;
  for (const Value* v : node.inputs) {
    if (!v) {
      kb.input_ptrs.push_back(nullptr);
      continue;
    }
    llvm::Argument* a = fn->getArg(arg++);
    a->setName("in" + std::to_string(kb.input_ptrs.size()));
    kb.input_ptrs.push_back(a);
  }
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    llvm::Argument* a = fn->getArg(arg++);
    a->setName("out" + std::to_string(o));
    kb.output_ptrs.push_back(a);
  }
  lowering->emit(kb);
  b.CreateRetVoid();
  return fn;
}

llvm::Value* threadIdX(llvm::IRBuilder<>& b) {
  return sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x);
}
llvm::Value* blockIdX(llvm::IRBuilder<>& b) {
  return sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x);
}
llvm::Value* blockIdY(llvm::IRBuilder<>& b) {
  return sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y);
}
llvm::Value* blockIdZ(llvm::IRBuilder<>& b) {
  return sreg(b, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z);
}

void barrier(llvm::IRBuilder<>& b) {
  b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_all, {}, {b.getInt32(0)});
}

llvm::Value* shuffleXorF32(llvm::IRBuilder<>& b, llvm::Value* v, uint32_t lane_mask) {
  return b.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_bfly_f32, {},
                           {b.getInt32(0xffffffffu), v, b.getInt32(lane_mask), b.getInt32(31)});
}

llvm::Value* warpSumF32(llvm::IRBuilder<>& b, llvm::Value* v) {
  for (uint32_t mask = kWarpSize / 2; mask > 0; mask /= 2)
    v = b.CreateFAdd(v, shuffleXorF32(b, v, mask));
  return v;
}

std::vector<llvm::Value*> emitCarriedStridedLoop(
    llvm::IRBuilder<>& b, llvm::Value* begin, llvm::Value* end, llvm::Value* step,
    const std::vector<llvm::Value*>& init,
    const std::function<std::vector<llvm::Value*>(llvm::Value*, const std::vector<llvm::Value*>&)>&
        body,
    const char* name) {
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::LLVMContext& ctx = b.getContext();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(ctx, std::string(name) + ".head", fn);
  auto* loop = llvm::BasicBlock::Create(ctx, std::string(name) + ".body", fn);
  auto* exit = llvm::BasicBlock::Create(ctx, std::string(name) + ".exit", fn);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode* i = b.CreatePHI(begin->getType(), 2, name);
  i->addIncoming(begin, pre);
  std::vector<llvm::PHINode*> acc;
  for (llvm::Value* v : init) {
    acc.push_back(b.CreatePHI(v->getType(), 2));
    acc.back()->addIncoming(v, pre);
  }
  b.CreateCondBr(b.CreateICmpSLT(i, end), loop, exit);
  b.SetInsertPoint(loop);
  std::vector<llvm::Value*> current(acc.begin(), acc.end());
  std::vector<llvm::Value*> next = body(i, current);
  llvm::Value* i_next = b.CreateAdd(i, step, std::string(name) + ".next", /*HasNUW=*/false,
                                    /*HasNSW=*/true);
  llvm::BasicBlock* latch = b.GetInsertBlock();
  b.CreateBr(head);
  i->addIncoming(i_next, latch);
  for (size_t k = 0; k < acc.size(); ++k) acc[k]->addIncoming(next[k], latch);
  b.SetInsertPoint(exit);
  return current;
}

void emitStridedLoop(llvm::IRBuilder<>& b, llvm::Value* begin, llvm::Value* end, llvm::Value* step,
                     const std::function<void(llvm::Value*)>& body, const char* name) {
  emitCarriedStridedLoop(
      b, begin, end, step, {},
      [&](llvm::Value* i, const std::vector<llvm::Value*>&) {
        body(i);
        return std::vector<llvm::Value*>{};
      },
      name);
}

void emitGridStrideLoop(GpuKernelBuilder& kb, int64_t total,
                        const std::function<void(llvm::Value*)>& body, const char* name) {
  llvm::IRBuilder<>& b = kb.b;
  llvm::Value* first = b.CreateAdd(
      b.CreateMul(b.CreateZExt(blockIdX(b), b.getInt64Ty()), b.getInt64(kb.launch.block[0])),
      b.CreateZExt(threadIdX(b), b.getInt64Ty()));
  emitStridedLoop(b, first, b.getInt64(total),
                  b.getInt64(int64_t{kb.launch.grid[0]} * kb.launch.block[0]), body, name);
}

llvm::GlobalVariable* sharedF32Array(llvm::Module& module, llvm::Function* fn,
                                     const std::string& name, uint64_t count) {
  auto* type = llvm::ArrayType::get(llvm::Type::getFloatTy(module.getContext()), count);
  auto* gv = new llvm::GlobalVariable(module, type, false, llvm::GlobalValue::InternalLinkage,
                                      llvm::UndefValue::get(type), fn->getName() + "." + name,
                                      nullptr, llvm::GlobalValue::NotThreadLocal, kSharedSpace);
  gv->setAlignment(llvm::Align(16));
  return gv;
}

GpuLaunch perElementLaunch(int64_t n) {
  constexpr int64_t kBlock = 256, kMaxGrid = 8192;
  GpuLaunch launch;
  launch.block[0] = kBlock;
  launch.grid[0] =
      static_cast<uint32_t>(std::clamp<int64_t>((n + kBlock - 1) / kBlock, 1, kMaxGrid));
  return launch;
}

GpuLaunch outputElementLaunch(const Node& node) {
  return perElementLaunch(node.outputs[0]->type.numel());
}

llvm::IntegerType* indexType(llvm::IRBuilder<>& b, int64_t count) {
  // Room for one grid's stride past the end (grid-stride loops add it before
  // comparing): at most 2^31 threads per grid dimension as launched here.
  return count < (int64_t{1} << 30) ? b.getInt32Ty() : b.getInt64Ty();
}

}  // namespace nanoc::gpu
