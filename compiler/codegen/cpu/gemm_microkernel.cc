#include "compiler/codegen/cpu/gemm_microkernel.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/linalg.h"
#include "compiler/codegen/cpu/loops.h"

namespace nanoc::cpu {

namespace {

RegisterTile tileFor(const std::function<bool(llvm::StringRef)>& has, unsigned prefer) {
  if (has("+avx512f")) {
    if (prefer != 0 && prefer < 512) return {8, 3, 8};  // 32 ymm: 8 x 24
    return {16, 2, 12};                                 // 32 zmm: 12 x 32
  }
  if (has("+avx")) return {8, 2, 6};  // 16 ymm: 6 x 16
  if (has("+sse2")) return {4, 2, 6};
  if (has("+neon") || has("+v")) return {4, 3, 8};  // 32 q / v registers of 128 bits
  return {1, 4, 4};
}

}  // namespace

RegisterTile registerTile(const llvm::Function& fn) {
  llvm::SmallVector<llvm::StringRef, 64> features;
  fn.getFnAttribute("target-features").getValueAsString().split(features, ',');
  unsigned prefer = 0;
  if (fn.hasFnAttribute("prefer-vector-width"))
    fn.getFnAttribute("prefer-vector-width").getValueAsString().getAsInteger(10, prefer);
  return tileFor([&](llvm::StringRef f) { return llvm::is_contained(features, f); }, prefer);
}

RegisterTile registerTile(const CpuTarget& target) {
  return tileFor(
      [&](llvm::StringRef f) { return llvm::is_contained(target.features, f.drop_front().str()); },
      target.vector_bits);
}

int64_t convGemmPanel(const std::vector<CpuTarget>& targets) {
  int64_t panel = 0;
  for (const CpuTarget& t : targets) {
    RegisterTile tile = registerTile(t);
    if (tile.width == 1) return 0;
    panel = panel == 0 ? tile.columns() : std::lcm(panel, tile.columns());
  }
  return panel;
}

int64_t packedRowsPerTask(int64_t M, int64_t K, int64_t N) {
  // A task sweeps every panel of B over its rows: the more rows, the more
  // tiles reuse each panel from cache, while the task's rows of A (rows x K)
  // stay within kTaskABytes of L2.
  constexpr int64_t kTaskABytes = 256 * 1024;
  int64_t rows = std::max(productRowsPerTask(M, K, N), kTaskABytes / (4 * std::max<int64_t>(1, K)));
  rows = (rows + kPackedRowQuantum - 1) / kPackedRowQuantum * kPackedRowQuantum;
  return std::max<int64_t>(1, std::min(rows, M));
}

bool usesPackedProduct(const Value* b, int64_t M) {
  return b && b->isConstant() && b->type.dtype == DType::F32 && b->type.dims.size() == 2 &&
         M >= kPackedMinRows;
}

llvm::GlobalVariable* packB(llvm::Module& module, const Value& bv, bool trans_b, int64_t K,
                            int64_t N, int64_t nr, const std::string& name) {
  const float* src = bv.as<float>();
  std::vector<float> packed(static_cast<size_t>(K * N));
  size_t at = 0;
  for (int64_t j0 = 0; j0 < N; j0 += nr) {
    int64_t w = std::min(nr, N - j0);
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = j0; j < j0 + w; ++j)
        packed[at++] = trans_b ? src[j * K + k] : src[k * N + j];
  }
  llvm::Constant* init = llvm::ConstantDataArray::get(module.getContext(), llvm::ArrayRef(packed));
  auto* global = new llvm::GlobalVariable(module, init->getType(), /*isConstant=*/true,
                                          llvm::GlobalValue::PrivateLinkage, init, name);
  global->setAlignment(llvm::Align(64));
  return global;
}

llvm::Value* loadLanes(llvm::IRBuilder<>& b, llvm::Type* type, llvm::Value* base,
                       llvm::Value* index, int64_t lanes) {
  llvm::Value* ptr = f32Ptr(b, base, index);
  auto* vec = llvm::dyn_cast<llvm::FixedVectorType>(type);
  if (!vec) return b.CreateAlignedLoad(type, ptr, llvm::Align(4));
  if (lanes >= vec->getNumElements()) return b.CreateAlignedLoad(type, ptr, llvm::Align(4));
  std::vector<llvm::Constant*> bits;
  for (unsigned l = 0; l < vec->getNumElements(); ++l) bits.push_back(b.getInt1(l < lanes));
  return b.CreateMaskedLoad(type, ptr, llvm::Align(4), llvm::ConstantVector::get(bits),
                            llvm::Constant::getNullValue(type));
}

void storeLanes(llvm::IRBuilder<>& b, llvm::Value* v, llvm::Value* base, llvm::Value* index,
                int64_t lanes) {
  llvm::Value* ptr = f32Ptr(b, base, index);
  auto* vec = llvm::dyn_cast<llvm::FixedVectorType>(v->getType());
  if (!vec || lanes >= vec->getNumElements()) {
    b.CreateAlignedStore(v, ptr, llvm::Align(4));
    return;
  }
  std::vector<llvm::Constant*> bits;
  for (unsigned l = 0; l < vec->getNumElements(); ++l) bits.push_back(b.getInt1(l < lanes));
  b.CreateMaskedStore(v, ptr, llvm::Align(4), llvm::ConstantVector::get(bits));
}

namespace {

// One rows x w tile of Y at (i0, j0) over the whole K: the accumulators are
// phis of the K loop (SSA values, so the register allocator keeps them in
// registers), B's row of the panel is `vectors` vector loads, A's element a
// broadcast, the update a multiply-add per accumulator. Y is stored once.
void emitTile(llvm::IRBuilder<>& b, const RegisterTile& tile, const PackedProduct& p,
              llvm::Value* i0, llvm::Value* j0, llvm::Value* panel, int64_t rows, int64_t w) {
  llvm::LLVMContext& ctx = b.getContext();
  llvm::Type* f32 = b.getFloatTy();
  llvm::Type* type =
      tile.width == 1 ? f32 : static_cast<llvm::Type*>(llvm::FixedVectorType::get(f32, tile.width));
  int64_t vectors = (w + tile.width - 1) / tile.width;
  auto lanesOf = [&](int64_t v) { return std::min(tile.width, w - v * tile.width); };
  llvm::Value* zero = llvm::Constant::getNullValue(type);
  const int64_t b_stride = p.b_panel_stride > 0 ? p.b_panel_stride : w;

  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx, "tile.k", fn);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx, "tile.body", fn);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, "tile.store", fn);
  std::vector<llvm::Value*> a_rows;
  for (int64_t r = 0; r < rows; ++r)
    a_rows.push_back(b.CreateMul(b.CreateAdd(i0, b.getInt64(r)), b.getInt64(p.a_row_stride)));
  if (p.prefetch)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < vectors; ++v)
        p.prefetch(b.CreateAdd(i0, b.getInt64(r)), b.CreateAdd(j0, b.getInt64(v * tile.width)));
  b.CreateBr(header);

  b.SetInsertPoint(header);
  llvm::PHINode* k = b.CreatePHI(b.getInt64Ty(), 2, "k");
  k->addIncoming(b.getInt64(0), pre);
  std::vector<llvm::PHINode*> acc;
  for (int64_t r = 0; r < rows * vectors; ++r) {
    acc.push_back(b.CreatePHI(type, 2, "acc"));
    acc.back()->addIncoming(zero, pre);
  }
  b.CreateCondBr(b.CreateICmpSLT(k, b.getInt64(p.K)), body, exit);

  b.SetInsertPoint(body);
  llvm::Value* b_row = p.b_in_place ? b.CreateAdd(b.CreateMul(k, b.getInt64(p.b_k_stride)),
                                                  b.CreateMul(j0, b.getInt64(p.b_col_stride)))
                                    : b.CreateAdd(panel, b.CreateMul(k, b.getInt64(b_stride)));
  const int64_t b_lane_stride = p.b_in_place ? p.b_col_stride : 1;
  std::vector<llvm::Value*> bvec;
  for (int64_t v = 0; v < vectors; ++v)
    bvec.push_back(loadLanes(b, type, p.packed_b,
                             b.CreateAdd(b_row, b.getInt64(v * tile.width * b_lane_stride)),
                             lanesOf(v)));
  llvm::Value* a_k = b.CreateMul(k, b.getInt64(p.a_k_stride));
  for (int64_t r = 0; r < rows; ++r) {
    llvm::Value* x = loadF32(b, p.a, b.CreateAdd(a_rows[r], a_k));
    if (tile.width > 1) x = b.CreateVectorSplat(tile.width, x);
    for (int64_t v = 0; v < vectors; ++v) {
      llvm::PHINode* phi = acc[r * vectors + v];
      phi->addIncoming(b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {type}, {x, bvec[v], phi}),
                       body);
    }
  }
  k->addIncoming(b.CreateAdd(k, b.getInt64(1)), body);
  b.CreateBr(header);

  b.SetInsertPoint(exit);
  llvm::Value* alpha = p.alpha == 1.0 ? nullptr : llvm::ConstantFP::get(type, p.alpha);
  for (int64_t r = 0; r < rows; ++r) {
    llvm::Value* i = b.CreateAdd(i0, b.getInt64(r));
    for (int64_t v = 0; v < vectors; ++v) {
      llvm::Value* j = b.CreateAdd(j0, b.getInt64(v * tile.width));
      llvm::Value* y = acc[r * vectors + v];
      if (alpha) y = b.CreateFMul(y, alpha);
      if (p.init) y = b.CreateFAdd(y, p.init(i, j, lanesOf(v), type));
      if (p.epilogue) y = p.epilogue(i, j, lanesOf(v), y);
      storeLanes(b, y, p.y, b.CreateAdd(b.CreateMul(i, b.getInt64(p.N)), j), lanesOf(v));
    }
  }
}

}  // namespace

int64_t PackedProduct::taskCount() const {
  const int64_t cols = cols_per_task > 0 ? cols_per_task : std::max<int64_t>(1, N);
  return ((M + rows_per_task - 1) / rows_per_task) * ((N + cols - 1) / cols);
}

void emitPackedProductTask(llvm::IRBuilder<>& b, const RegisterTile& tile, const PackedProduct& p,
                           llvm::Value* t) {
  const int64_t nr = tile.columns(), mr = tile.rows;
  const int64_t cols = p.cols_per_task > 0 ? p.cols_per_task : std::max<int64_t>(1, p.N);
  const int64_t col_blocks = (p.N + cols - 1) / cols;
  const int64_t row_blocks = (p.M + p.rows_per_task - 1) / p.rows_per_task;
  // Every row block but the last has a multiple of mr rows (packedRowsPerTask).
  const int64_t last_rows = p.M - (row_blocks - 1) * p.rows_per_task;
  const int64_t tail_rows = last_rows % mr;
  llvm::Value* rb = col_blocks == 1 ? t : b.CreateUDiv(t, b.getInt64(col_blocks));
  llvm::Value* row_begin = b.CreateMul(rb, b.getInt64(p.rows_per_task));
  llvm::Value* row_end = b.CreateBinaryIntrinsic(
      llvm::Intrinsic::smin, b.CreateAdd(row_begin, b.getInt64(p.rows_per_task)), b.getInt64(p.M));
  llvm::Value* tiles = b.CreateUDiv(b.CreateSub(row_end, row_begin), b.getInt64(mr));

  // Panel by panel, so that the panel (K x nr) is reused from cache by every
  // tile of the task's rows.
  auto panelColumn = [&](llvm::Value* j0, llvm::Value* panel, int64_t w) {
    emitLoop(
        b, b.getInt64(0), tiles,
        [&](llvm::Value* ti) {
          emitTile(b, tile, p, b.CreateAdd(row_begin, b.CreateMul(ti, b.getInt64(mr))), j0, panel,
                   mr, w);
        },
        "tile");
    if (tail_rows == 0) return;
    llvm::Function* fn = b.GetInsertBlock()->getParent();
    llvm::BasicBlock* tail = llvm::BasicBlock::Create(b.getContext(), "tail", fn);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(b.getContext(), "tail.done", fn);
    b.CreateCondBr(b.CreateICmpEQ(row_end, b.getInt64(p.M)), tail, done);
    b.SetInsertPoint(tail);
    emitTile(b, tile, p, b.CreateAdd(row_begin, b.CreateMul(tiles, b.getInt64(mr))), j0, panel,
             tail_rows, w);
    b.CreateBr(done);
    b.SetInsertPoint(done);
  };
  const int64_t full_panels = p.N / nr;
  // Where column j0's panel row 0 starts in packed B.
  auto panelStart = [&](llvm::Value* j0) -> llvm::Value* {
    const int64_t S = p.b_panel_stride;
    if (S <= 0 || S == nr) return b.CreateMul(j0, b.getInt64(p.K));
    return b.CreateAdd(b.CreateMul(b.CreateUDiv(j0, b.getInt64(S)), b.getInt64(p.K * S)),
                       b.CreateURem(j0, b.getInt64(S)));
  };
  auto fullPanel = [&](llvm::Value* pi) {
    llvm::Value* j0 = b.CreateMul(pi, b.getInt64(nr));
    panelColumn(j0, panelStart(j0), nr);
  };
  auto partialPanel = [&] {
    llvm::Value* j0 = b.getInt64(full_panels * nr);
    panelColumn(j0, panelStart(j0), p.N % nr);
  };
  if (col_blocks == 1) {
    emitLoop(b, 0, full_panels, fullPanel, "panel");
    if (p.N % nr) partialPanel();
    return;
  }
  // This column block's full panels, then the partial panel if the block
  // holds it (only the last one can).
  const int64_t panels_per_block = cols / nr;
  llvm::Value* cb = b.CreateURem(t, b.getInt64(col_blocks));
  llvm::Value* first = b.CreateMul(cb, b.getInt64(panels_per_block));
  llvm::Value* last = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin,
                                              b.CreateAdd(first, b.getInt64(panels_per_block)),
                                              b.getInt64(full_panels));
  emitLoop(b, first, last, fullPanel, "panel");
  if (p.N % nr == 0) return;
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* partial = llvm::BasicBlock::Create(b.getContext(), "partial", fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(b.getContext(), "partial.done", fn);
  b.CreateCondBr(b.CreateICmpEQ(cb, b.getInt64(col_blocks - 1)), partial, done);
  b.SetInsertPoint(partial);
  partialPanel();
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

}  // namespace nanoc::cpu
