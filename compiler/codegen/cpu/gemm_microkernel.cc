#include "compiler/codegen/cpu/gemm_microkernel.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/linalg.h"
#include "compiler/codegen/cpu/loops.h"

namespace nanoc::cpu {

namespace {

RegisterTile tileFor(const std::function<bool(llvm::StringRef)>& has, unsigned prefer) {
  if (has("+avx512f")) {
    if (prefer != 0 && prefer < 512) return {8, 3, 8, 32};  // 32 ymm: 8 x 24
    return {16, 2, 12, 32};                                 // 32 zmm: 12 x 32
  }
  if (has("+avx")) return {8, 2, 6, 16};  // 16 ymm: 6 x 16
  if (has("+sse2")) return {4, 2, 6, 16};
  if (has("+neon") || has("+v")) return {4, 3, 8, 32};  // 32 q / v registers of 128 bits
  return {1, 4, 4, 16};
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

namespace {

// The least common multiple of `of` over the targets' tiles, or 0 where one
// has no vector unit.
int64_t tilesLcm(const std::vector<CpuTarget>& targets, int64_t (*of)(const RegisterTile&)) {
  int64_t lcm = 0;
  for (const CpuTarget& t : targets) {
    RegisterTile tile = registerTile(t);
    if (tile.width == 1) return 0;
    lcm = lcm == 0 ? of(tile) : std::lcm(lcm, of(tile));
  }
  return lcm;
}

}  // namespace

int64_t convGemmPanel(const std::vector<CpuTarget>& targets) {
  return tilesLcm(targets, [](const RegisterTile& tile) { return tile.columns(); });
}

int64_t convGemmRowGroup(const std::vector<CpuTarget>& targets) {
  return tilesLcm(targets, [](const RegisterTile& tile) { return tile.rows; });
}

int64_t nchwcBlock(const std::vector<CpuTarget>& targets) {
  int64_t block = 0;
  for (const CpuTarget& t : targets) {
    const int64_t width = registerTile(t).width;
    if (width < 2 || (block != 0 && block != width)) return 0;
    block = width;
  }
  return block;
}

bool fullRateWideFma(const std::vector<CpuTarget>& targets) {
  if (targets.empty()) return false;
  for (const CpuTarget& t : targets) {
    const llvm::StringRef cpu = t.cpu;
    if (registerTile(t).width != 16 || cpu == "znver4" || cpu == "generic" ||
        cpu.starts_with("x86-64"))
      return false;
  }
  return true;
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

int64_t balancedPackedRowsPerTask(int64_t M, int64_t K, int64_t N) {
  constexpr int64_t Q = kPackedRowQuantum;
  int64_t rows = packedRowsPerTask(M, K, N);
  // The busier half of N split in whole kPackedColumnUnit, as
  // balancedPackedColumnsPerTask splits it for rows = M (0: one unit).
  const int64_t units = (N + kPackedColumnUnit - 1) / kPackedColumnUnit;
  const int64_t first_cols = std::min(N, (units + 1) / 2 * kPackedColumnUnit);
  const int64_t busiest_cols = units >= 2 ? std::max(first_cols, N - first_cols) : 0;
  // One task that is worth two (productRowsPerTask's 64K multiply-adds each)
  // becomes two.
  if (rows == M && M > Q && M * K * N >= 2 * 65536) {
    rows = ((M + 1) / 2 + Q - 1) / Q * Q;
    // Unless its columns split more evenly: a transformer's 65 rows split 48
    // + 17, its 768 columns 384 + 384 (vit_small's MLP: 1.37x faster on two
    // threads than on one with the rows split).
    if (busiest_cols > 0 && busiest_cols * M < std::max(rows, M - rows) * N) return M;
  }
  if (rows >= M) return rows;
  // nanort gives two threads the first and the second half of the tasks (the
  // first one more when their count is odd): of the sizes down to a third of
  // this one, the largest whose halves differ least in rows (M = 1024: 22
  // tasks of 48 rows, 528 + 496, rather than 15 of 72, 576 + 448).
  auto busiest = [&](int64_t r) {
    const int64_t first = std::min(M, (((M + r - 1) / r + 1) / 2) * r);
    return std::max(first, M - first);
  };
  int64_t best = rows;
  for (int64_t r = rows - Q; r >= std::max(Q, rows / 3); r -= Q)
    if (busiest(r) < busiest(best)) best = r;
  // Or one row block whose columns split in halves, where that leaves the
  // busier of two threads less work than the best row split and the rows'
  // A stays within 2 MiB (a deeper product's A block then takes a shorter
  // kc): GPT-2's fc_out, 128 x 3072 x 768, as 128 x 384 + 128 x 384 rather
  // than 72 + 56 rows of 24-row tasks.
  if (busiest_cols > 0 && M * K * N >= 2 * 65536 && M * K * 4 <= (int64_t{2} << 20) &&
      M * busiest_cols < busiest(best) * N)
    return M;
  return best;
}

int64_t balancedPackedColumnsPerTask(int64_t M, int64_t K, int64_t N, int64_t rows_per_task) {
  const int64_t units = (N + kPackedColumnUnit - 1) / kPackedColumnUnit;
  if (rows_per_task < M || M * K * N < 2 * 65536 || units < 2) return 0;
  return kPackedColumnUnit * ((units + 1) / 2);
}

int64_t packedKBlock(const RegisterTile& tile, int64_t K, int64_t rows,
                     const CpuTarget::CacheSizes& cache) {
  K = std::max<int64_t>(1, K);
  if (cache.l1d == 0) return K;
  const int64_t nr = tile.columns();
  // BLIS's kc, the block of B's panel (kc x nr) in half of L1, is the least:
  // shorter blocks cost more in restarting the tiles than they save (K =
  // 1024 on a 12 x 32 tile ran 5-10% slower at kc = 86 or 128 than unblocked
  // on a Zen 4).
  const int64_t least = std::max<int64_t>(16, static_cast<int64_t>(cache.l1d / 2) / (4 * nr));
  // Otherwise as deep as keeps the task's block of A (rows x kc), which every
  // panel reuses, and the panel's block, which every tile reuses, in half of
  // L2.
  const int64_t most =
      cache.l2 == 0 ? least
                    : static_cast<int64_t>(cache.l2 / 2) / (4 * (std::max<int64_t>(1, rows) + nr));
  const int64_t kc = std::max(least, most);
  // Equal blocks: K = 1000 at most 600 gives 2 blocks of 500, not 600 and 400.
  const int64_t blocks = (K + kc - 1) / kc;
  return (K + blocks - 1) / blocks;
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

void setRowInit(llvm::IRBuilder<>& b, PackedProduct& p, llvm::Value* row) {
  p.init = [&b, row](llvm::Value*, llvm::Value* j, int64_t lanes, llvm::Type* type) {
    return loadLanes(b, type, row, j, lanes);
  };
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

// The transpose of `rows` (at most W vectors of W lanes): W vectors whose
// lane r is rows[r]'s lane l, for l the output's index; lanes past
// rows.size() are poison. log2(W) rounds of two-source shuffles, each
// swapping one bit of the row index with the same bit of the lane index.
std::vector<llvm::Value*> transposeTile(llvm::IRBuilder<>& b, std::vector<llvm::Value*> rows,
                                        int64_t W) {
  if (W == 1) return rows;
  llvm::Type* type = rows.front()->getType();
  rows.resize(static_cast<size_t>(W), llvm::PoisonValue::get(type));
  for (int64_t d = 1; d < W; d *= 2) {
    std::vector<int> lo, hi;
    for (int64_t l = 0; l < W; ++l) {
      const bool bit = (l & d) != 0;
      lo.push_back(static_cast<int>(bit ? W + (l ^ d) : l));
      hi.push_back(static_cast<int>(bit ? W + l : (l ^ d)));
    }
    for (int64_t r = 0; r < W; ++r) {
      if (r & d) continue;
      llvm::Value* a = rows[r];
      llvm::Value* c = rows[r | d];
      rows[r] = b.CreateShuffleVector(a, c, lo);
      rows[r | d] = b.CreateShuffleVector(a, c, hi);
    }
  }
  return rows;
}

namespace {

// The next panel a tile prefetches into L2 (prefetch_next_panel): its
// rows [k_begin, k_end) from line `line` on, `per_step` lines a K step;
// `checked`: lines past the rows are skipped (where the tiles' lines
// overrun them); start null: none.
struct NextPanel {
  llvm::Value* start = nullptr;  // the panel's row 0 in packed B
  llvm::Value* line = nullptr;
  int64_t per_step = 0;
  bool checked = false;
};

// One rows x w tile of Y at (i0, j0) over k in [k_begin, k_end), one kc
// block: the accumulators are phis of the K loop (SSA values, so the register
// allocator keeps them in registers), B's row of the panel is `vectors`
// vector loads, A's element a broadcast, the update a multiply-add per
// accumulator. The accumulators start at 0 on the first block (`first`, an
// i1) and at the partial sums the previous block left in Y otherwise; the
// last block (`last`) applies alpha, init and the epilogue, the others store
// the raw sums. A float stored and reloaded is the same float, so every
// element sums its products in the order of an unblocked K loop. first and
// last null: the one block, true. `next`: the panel it prefetches.
void emitTile(llvm::IRBuilder<>& b, const RegisterTile& tile, const PackedProduct& p,
              llvm::Value* i0, llvm::Value* j0, llvm::Value* panel, int64_t rows, int64_t w,
              llvm::Value* k_begin, llvm::Value* k_end, llvm::Value* first, llvm::Value* last,
              const NextPanel& next = {}) {
  llvm::LLVMContext& ctx = b.getContext();
  llvm::Type* f32 = b.getFloatTy();
  auto vectorOf = [&](int64_t width) {
    return width == 1 ? f32 : static_cast<llvm::Type*>(llvm::FixedVectorType::get(f32, width));
  };
  int64_t vectors = (w + tile.width - 1) / tile.width;
  auto lanesOf = [&](int64_t v) { return std::min(tile.width, w - v * tile.width); };
  // Each vector's type: the tile's, but a partial last vector takes the
  // narrowest that holds its lanes (f32 for one, else 4, 8, ... lanes), so a
  // 4-column remainder of a 32-column tile costs xmm, not zmm, multiply-adds
  // (half the work where zmm is split in two, as on Zen 4).
  std::vector<llvm::Type*> types;
  for (int64_t v = 0; v < vectors; ++v) {
    const int64_t lanes = lanesOf(v);
    int64_t width = tile.width;
    // (A transposed tile keeps whole vectors: they are transposed as such.)
    if (lanes < tile.width && !p.y_transposed) {
      width = lanes == 1 ? 1 : 4;
      while (width < lanes) width *= 2;
      width = std::min(width, tile.width);
    }
    types.push_back(vectorOf(width));
  }
  auto widthOf = [&](int64_t v) {
    auto* vec = llvm::dyn_cast<llvm::FixedVectorType>(types[v]);
    return vec ? static_cast<int64_t>(vec->getNumElements()) : int64_t{1};
  };
  const int64_t b_stride = p.b_panel_stride > 0 ? p.b_panel_stride : w;
  // Y's row of product row i.
  auto yRow = [&](llvm::Value* i) { return p.y_row_origin ? b.CreateSub(i, p.y_row_origin) : i; };
  // Y's element (i, j): row-major, or channel-blocked.
  auto yAt = [&](llvm::Value* i, llvm::Value* j) -> llvm::Value* {
    if (p.channel_block > 0) {
      const int64_t c = p.channel_block;
      return b.CreateAdd(
          b.CreateMul(b.CreateUDiv(j, b.getInt64(c)), b.getInt64(p.y_block_stride)),
          b.CreateAdd(b.CreateMul(yRow(i), b.getInt64(c)), b.CreateURem(j, b.getInt64(c))));
    }
    return b.CreateAdd(b.CreateMul(yRow(i), b.getInt64(p.N)), j);
  };
  auto yIndex = [&](int64_t r, int64_t v) {
    return yAt(b.CreateAdd(i0, b.getInt64(r)), b.CreateAdd(j0, b.getInt64(v * tile.width)));
  };

  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx, "tile.k", fn);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx, "tile.body", fn);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, "tile.store", fn);
  std::vector<llvm::Value*> a_rows;
  // A's row of product row i0.
  llvm::Value* a_i0 = p.a_row_origin ? b.CreateSub(i0, p.a_row_origin) : i0;
  if (p.channel_block > 0) {
    for (int64_t r = 0; r < rows; ++r)
      a_rows.push_back(b.CreateMul(b.CreateAdd(a_i0, b.getInt64(r)), b.getInt64(p.channel_block)));
  } else if (p.a_row_group > 0) {
    // The tile's rows lie in one group (i0 is a multiple of mr, which
    // divides the group).
    const int64_t g = p.a_row_group;
    llvm::Value* base =
        b.CreateAdd(b.CreateMul(b.CreateUDiv(a_i0, b.getInt64(g)), b.getInt64(g * p.K)),
                    b.CreateURem(a_i0, b.getInt64(g)));
    for (int64_t r = 0; r < rows; ++r) a_rows.push_back(b.CreateAdd(base, b.getInt64(r)));
  } else if (p.a_row_offset) {
    for (int64_t r = 0; r < rows; ++r)
      a_rows.push_back(p.a_row_offset(b.CreateAdd(a_i0, b.getInt64(r))));
  } else {
    for (int64_t r = 0; r < rows; ++r)
      a_rows.push_back(b.CreateMul(b.CreateAdd(a_i0, b.getInt64(r)), b.getInt64(p.a_row_stride)));
  }
  if (p.prefetch && p.y_transposed) {
    for (int64_t j = 0; j < w; ++j) p.prefetch(b.CreateAdd(j0, b.getInt64(j)), i0);
  } else if (p.prefetch) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < vectors; ++v)
        p.prefetch(b.CreateAdd(i0, b.getInt64(r)), b.CreateAdd(j0, b.getInt64(v * tile.width)));
  }
  if (p.prefetch_y && !p.y_transposed && p.channel_block == 0)
    // The tile's lines of Y, for writing: a short K loop does not hide the
    // misses of stores to lines no longer cached.
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < vectors; ++v) prefetchF32(b, p.y, yIndex(r, v), /*write=*/true);
  llvm::BasicBlock* pre = b.GetInsertBlock();
  // Later blocks resume from Y's partial sums.
  llvm::BasicBlock* resume = nullptr;
  std::vector<llvm::Value*> partial;
  if (first) {
    resume = llvm::BasicBlock::Create(ctx, "tile.resume", fn);
    b.CreateCondBr(first, header, resume);
    b.SetInsertPoint(resume);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < vectors; ++v)
        partial.push_back(loadLanes(b, types[v], p.y, yIndex(r, v), lanesOf(v)));
  }
  b.CreateBr(header);

  b.SetInsertPoint(header);
  llvm::PHINode* k = b.CreatePHI(b.getInt64Ty(), 3, "k");
  k->addIncoming(k_begin, pre);
  if (resume) k->addIncoming(k_begin, resume);
  std::vector<llvm::PHINode*> acc;
  for (int64_t r = 0; r < rows * vectors; ++r) {
    llvm::Type* type = types[r % vectors];
    acc.push_back(b.CreatePHI(type, 3, "acc"));
    acc.back()->addIncoming(llvm::Constant::getNullValue(type), pre);
    if (resume) acc.back()->addIncoming(partial[r], resume);
  }
  b.CreateCondBr(b.CreateICmpSLT(k, k_end), body, exit);

  b.SetInsertPoint(body);
  llvm::Value* b_row = p.b_in_place ? b.CreateAdd(b.CreateMul(k, b.getInt64(p.b_k_stride)),
                                                  b.CreateMul(j0, b.getInt64(p.b_col_stride)))
                                    : b.CreateAdd(panel, b.CreateMul(k, b.getInt64(b_stride)));
  const int64_t b_lane_stride = p.b_in_place ? p.b_col_stride : 1;
  if (p.prefetch_b) {
    // B's row 16 ahead: a streamed panel of weights is read once from
    // memory by the tile that reaches it first, faster than the hardware
    // prefetcher brings it (resnet18's 3x3 stride-2 layer on 7 x 7: 1155 ->
    // 1077 us in the model; mobilenet_v2's channel-blocked 7 x 7 layers
    // 1.2x faster, the model 1.08x on one thread).
    constexpr int64_t kAhead = 16;
    for (int64_t v = 0; v < vectors; ++v)
      prefetchF32(b, p.packed_b,
                  b.CreateAdd(b_row, b.getInt64(kAhead * b_stride + v * tile.width)));
  }
  if (next.start) {
    // Line L of the next panel's rows [k_begin, k_end) (b_stride floats a
    // row); past them (checked), B's row being read (in L1: no cost).
    llvm::Value* region = b.CreateAdd(next.start, b.CreateMul(k_begin, b.getInt64(b_stride)));
    llvm::Value* step = b.CreateMul(b.CreateSub(k, k_begin), b.getInt64(next.per_step));
    for (int64_t u = 0; u < next.per_step; ++u) {
      llvm::Value* at =
          b.CreateMul(b.CreateAdd(b.CreateAdd(next.line, step), b.getInt64(u)), b.getInt64(16));
      llvm::Value* address = b.CreateAdd(region, at);
      if (next.checked)
        address = b.CreateSelect(
            b.CreateICmpSLT(at, b.CreateMul(b.CreateSub(k_end, k_begin), b.getInt64(b_stride))),
            address, b_row);
      prefetchF32(b, p.packed_b, address, /*write=*/false, /*locality=*/2);
    }
  }
  std::vector<llvm::Value*> bvec;
  for (int64_t v = 0; v < vectors; ++v)
    bvec.push_back(loadLanes(b, types[v], p.packed_b,
                             b.CreateAdd(b_row, b.getInt64(v * tile.width * b_lane_stride)),
                             lanesOf(v)));
  llvm::Value* a_k =
      p.channel_block > 0
          ? b.CreateAdd(b.CreateMul(b.CreateUDiv(k, b.getInt64(p.channel_block)),
                                    b.getInt64(p.a_block_stride)),
                        b.CreateURem(k, b.getInt64(p.channel_block)))
          : b.CreateMul(k, b.getInt64(p.a_row_group > 0 ? p.a_row_group : p.a_k_stride));
  for (int64_t r = 0; r < rows; ++r) {
    llvm::Value* a = loadF32(b, p.a, b.CreateAdd(a_rows[r], a_k));
    std::map<int64_t, llvm::Value*> splats;  // by width
    for (int64_t v = 0; v < vectors; ++v) {
      const int64_t width = widthOf(v);
      llvm::Value*& x = splats[width];
      if (!x) x = width > 1 ? b.CreateVectorSplat(width, a) : a;
      llvm::PHINode* phi = acc[r * vectors + v];
      phi->addIncoming(b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {types[v]}, {x, bvec[v], phi}),
                       body);
    }
  }
  k->addIncoming(b.CreateAdd(k, b.getInt64(1)), body);
  b.CreateBr(header);

  b.SetInsertPoint(exit);
  llvm::BasicBlock* done = nullptr;
  if (last) {
    // Not the last block: the raw sums, for the next block to resume.
    llvm::BasicBlock* raw = llvm::BasicBlock::Create(ctx, "tile.partial", fn);
    llvm::BasicBlock* finish = llvm::BasicBlock::Create(ctx, "tile.finish", fn);
    done = llvm::BasicBlock::Create(ctx, "tile.done", fn);
    b.CreateCondBr(last, finish, raw);
    b.SetInsertPoint(raw);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < vectors; ++v)
        storeLanes(b, acc[r * vectors + v], p.y, yIndex(r, v), lanesOf(v));
    b.CreateBr(done);
    b.SetInsertPoint(finish);
  }
  // alpha * sum + init, then the epilogue, of Y's element (i, j) and the
  // `lanes` after it (the hooks' frame: Y's own).
  auto finalValue = [&](llvm::Value* i, llvm::Value* j, int64_t lanes, llvm::Value* y) {
    llvm::Type* type = y->getType();
    if (p.alpha != 1.0) y = b.CreateFMul(y, llvm::ConstantFP::get(type, p.alpha));
    if (p.init) y = b.CreateFAdd(y, p.init(i, j, lanes, type));
    if (p.epilogue) y = p.epilogue(i, j, lanes, y);
    return y;
  };
  if (p.y_transposed) {
    // Chunks of up to `width` rows: each vector of the chunk's rows,
    // transposed, is one vector of Y's row per column (lanes: the chunk's
    // rows).
    const int64_t W = tile.width;
    for (int64_t r0 = 0; r0 < rows; r0 += W) {
      const int64_t R = std::min(W, rows - r0);
      llvm::Value* col = b.CreateAdd(i0, b.getInt64(r0));
      for (int64_t v = 0; v < vectors; ++v) {
        std::vector<llvm::Value*> chunk;
        for (int64_t r = r0; r < r0 + R; ++r) chunk.push_back(acc[r * vectors + v]);
        std::vector<llvm::Value*> t = transposeTile(b, chunk, W);
        for (int64_t l = 0; l < lanesOf(v); ++l) {
          llvm::Value* row = b.CreateAdd(j0, b.getInt64(v * W + l));
          // The value first, then its index (as arguments their order would
          // be the compiler's).
          llvm::Value* y = finalValue(row, col, R, t[l]);
          storeLanes(b, y, p.y, b.CreateAdd(b.CreateMul(row, b.getInt64(p.M)), col), R);
        }
      }
    }
  }
  for (int64_t r = 0; r < rows && !p.y_transposed; ++r) {
    llvm::Value* i = b.CreateAdd(i0, b.getInt64(r));
    for (int64_t v = 0; v < vectors; ++v) {
      llvm::Value* j = b.CreateAdd(j0, b.getInt64(v * tile.width));
      llvm::Value* y = finalValue(i, j, lanesOf(v), acc[r * vectors + v]);
      storeLanes(b, y, p.y, yAt(i, j), lanesOf(v));
      if (p.channel_block > 0 && lanesOf(v) < p.channel_block)
        // The lanes of the last block past N: 0.
        storeLanes(b, llvm::Constant::getNullValue(vectorOf(p.channel_block)), p.y,
                   b.CreateAdd(yAt(i, j), b.getInt64(lanesOf(v))), p.channel_block - lanesOf(v));
    }
  }
  if (done) {
    b.CreateBr(done);
    b.SetInsertPoint(done);
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
  // The rows past a block's whole tiles: the same in every block but the
  // last (none where rows_per_task is a multiple of mr, as packedRowsPerTask
  // makes it), and the last block's own.
  const int64_t last_rows = p.M - (row_blocks - 1) * p.rows_per_task;
  const int64_t last_tail = last_rows % mr;
  const int64_t block_tail = row_blocks > 1 ? p.rows_per_task % mr : last_tail;
  llvm::Value* rb = col_blocks == 1 ? t : b.CreateUDiv(t, b.getInt64(col_blocks));
  llvm::Value* row_begin = b.CreateMul(rb, b.getInt64(p.rows_per_task));
  llvm::Value* row_end = b.CreateBinaryIntrinsic(
      llvm::Intrinsic::smin, b.CreateAdd(row_begin, b.getInt64(p.rows_per_task)), b.getInt64(p.M));
  llvm::Value* tiles = b.CreateUDiv(b.CreateSub(row_end, row_begin), b.getInt64(mr));
  // A tail short enough for the registers to take it joins the block's
  // last whole tile (a 7 x 7 map's 49 pixels on AVX-512: 12 + 12 + 12 + 13
  // rows, not a 1-row tile whose two accumulators wait on the multiply-add
  // latency for the whole K loop). Not where A's rows are packed in groups:
  // a tile's rows lie in one group there.
  auto absorbs = [&](int64_t tail, int64_t rows) {
    return tail > 0 && rows >= mr && mr + tail <= tile.maxRows() && p.a_row_group == 0 &&
           !p.y_transposed;
  };
  const bool absorb_last = absorbs(last_tail, last_rows);
  const bool absorb_block = row_blocks > 1 ? absorbs(block_tail, p.rows_per_task) : absorb_last;
  // The rows of the block's final tile after the loop over whole ones.
  const int64_t last_end = absorb_last ? mr + last_tail : last_tail;
  const int64_t block_end = absorb_block ? mr + block_tail : block_tail;
  llvm::Value* loop_tiles = tiles;
  if (absorb_last || absorb_block) {
    llvm::Value* absorbed =
        absorb_last == absorb_block
            ? b.getInt64(1)
            : b.CreateSelect(b.CreateICmpEQ(row_end, b.getInt64(p.M)),
                             b.getInt64(absorb_last ? 1 : 0), b.getInt64(absorb_block ? 1 : 0));
    loop_tiles = b.CreateSub(tiles, absorbed);
  }

  // kc block by kc block (BLIS's order): the task's block of A (its rows x
  // kc) stays in L2 for every panel, the panel's block (kc x nr) in cache for
  // every tile of the task's rows.
  const int64_t kc = p.y_transposed  ? std::max<int64_t>(1, p.K)
                     : p.k_block > 0 ? std::min(p.k_block, std::max<int64_t>(1, p.K))
                                     : packedKBlock(tile, p.K, p.rows_per_task,
                                                    cacheSizes(*b.GetInsertBlock()->getParent()));
  const int64_t k_blocks = (p.K + kc - 1) / kc;
  // The kc block being emitted: [k_begin, k_end), and whether it is the
  // first / last (null: the one block).
  llvm::Value *k_begin = b.getInt64(0), *k_end = b.getInt64(p.K), *k_first = nullptr,
              *k_last = nullptr;
  auto kBlocks = [&](const std::function<void()>& body) {
    if (k_blocks == 1) return body();
    emitLoop(
        b, 0, k_blocks,
        [&](llvm::Value* kb) {
          k_begin = b.CreateMul(kb, b.getInt64(kc));
          k_end = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin,
                                          b.CreateAdd(k_begin, b.getInt64(kc)), b.getInt64(p.K));
          k_first = b.CreateICmpEQ(kb, b.getInt64(0));
          k_last = b.CreateICmpEQ(kb, b.getInt64(k_blocks - 1));
          body();
        },
        "kblock");
  };
  // The next panel's prefetch: tiles 1 .. `fetching` take lines from (ti -
  // 1) * kc * per_step, per_step lines a K step, so that they cover a
  // panel's kc rows (b_stride floats each); the first tile and those after
  // run no prefetch. Where the fetching tiles' lines overrun the rows, the
  // last ones are checked. Only on 16-lane tiles (AVX-512's 12 x 32, 24
  // multiply-adds a K step): x86-64-v3's 6 x 16 kernels took SGEMM 1.05x
  // the time with it (1.08x with every tile after the first prefetching,
  // checking its lines) on the AVX-512 Xeon, whose L2 holds what the
  // profile's 256 KiB does not.
  const int64_t task_tiles = std::max<int64_t>(1, p.rows_per_task / mr);
  const uint64_t l2 = cacheSizes(*b.GetInsertBlock()->getParent()).l2;
  const bool next_panel = p.prefetch_next_panel && !p.b_in_place && !p.y_transposed &&
                          task_tiles >= 2 && tile.width >= 16 && l2 > 0 &&
                          static_cast<uint64_t>(p.K * std::min(cols, p.N) * 4) > l2;
  const int64_t row_floats = p.b_panel_stride > 0 ? p.b_panel_stride : nr;
  const int64_t row_lines = (row_floats + 15) / 16;
  const int64_t per_step = next_panel ? (row_lines + task_tiles - 2) / (task_tiles - 1) : 0;
  const int64_t fetching = next_panel ? (row_lines + per_step - 1) / per_step : 0;
  const bool checked = fetching * per_step * 16 != row_floats;
  auto nextPanel = [&](llvm::Value* start, llvm::Value* ti) {
    NextPanel n;
    if (!start) return n;
    n.start = start;
    n.per_step = per_step;
    n.checked = checked;
    n.line = b.CreateMul(b.CreateSub(ti, b.getInt64(1)),
                         b.CreateMul(b.CreateSub(k_end, k_begin), b.getInt64(per_step)));
    return n;
  };
  auto tileRows = [&](llvm::Value* j0, llvm::Value* panel, int64_t w, llvm::Value* next = nullptr) {
    auto tiles = [&](llvm::Value* from, llvm::Value* to, bool fetch) {
      emitLoop(
          b, from, to,
          [&](llvm::Value* ti) {
            emitTile(b, tile, p, b.CreateAdd(row_begin, b.CreateMul(ti, b.getInt64(mr))), j0, panel,
                     mr, w, k_begin, k_end, k_first, k_last,
                     fetch ? nextPanel(next, ti) : NextPanel{});
          },
          "tile");
    };
    if (next) {
      // [0, 1), [1, 1 + fetching), the rest: each clamped to loop_tiles.
      auto clamp = [&](int64_t v) {
        return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b.getInt64(v), loop_tiles);
      };
      tiles(b.getInt64(0), clamp(1), false);
      tiles(clamp(1), clamp(1 + fetching), true);
      tiles(clamp(1 + fetching), loop_tiles, false);
    } else {
      tiles(b.getInt64(0), loop_tiles, false);
    }
    auto tailTile = [&](int64_t rows) {
      emitTile(b, tile, p, b.CreateAdd(row_begin, b.CreateMul(loop_tiles, b.getInt64(mr))), j0,
               panel, rows, w, k_begin, k_end, k_first, k_last);
    };
    if (block_end == last_end) {
      if (last_end > 0) tailTile(last_end);
      return;
    }
    // The last block's tail, or the others'.
    llvm::Function* fn = b.GetInsertBlock()->getParent();
    llvm::BasicBlock* last = llvm::BasicBlock::Create(b.getContext(), "tail.last", fn);
    llvm::BasicBlock* other = llvm::BasicBlock::Create(b.getContext(), "tail.block", fn);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(b.getContext(), "tail.done", fn);
    b.CreateCondBr(b.CreateICmpEQ(row_end, b.getInt64(p.M)), last, other);
    for (auto [block, rows] : {std::pair{last, last_end}, std::pair{other, block_end}}) {
      b.SetInsertPoint(block);
      if (rows > 0) tailTile(rows);
      b.CreateBr(done);
    }
    b.SetInsertPoint(done);
  };
  const int64_t full_panels = p.N / nr;
  // Where column j0's panel row 0 starts in packed B.
  auto panelStart = [&](llvm::Value* j0) -> llvm::Value* {
    const int64_t S = p.b_panel_stride;
    if (S > 0 && p.b_column_origin) j0 = b.CreateSub(j0, p.b_column_origin);
    if (S <= 0 || S == nr) return b.CreateMul(j0, b.getInt64(p.K));
    return b.CreateAdd(b.CreateMul(b.CreateUDiv(j0, b.getInt64(S)), b.getInt64(p.K * S)),
                       b.CreateURem(j0, b.getInt64(S)));
  };
  // The task's full panels [first, last): the one after pi (after the
  // last, the first).
  llvm::Value *first_panel = b.getInt64(0), *end_panel = b.getInt64(full_panels);
  auto fullPanel = [&](llvm::Value* pi) {
    llvm::Value* j0 = b.CreateMul(pi, b.getInt64(nr));
    llvm::Value* next = nullptr;
    if (next_panel) {
      llvm::Value* np = b.CreateAdd(pi, b.getInt64(1));
      np = b.CreateSelect(b.CreateICmpSLT(np, end_panel), np, first_panel);
      next = panelStart(b.CreateMul(np, b.getInt64(nr)));
    }
    tileRows(j0, panelStart(j0), nr, next);
  };
  auto partialPanel = [&] {
    llvm::Value* j0 = b.getInt64(full_panels * nr);
    tileRows(j0, panelStart(j0), p.N % nr);
  };
  // Within a kc block, panel by panel, each over the task's tiles.
  auto panels = [&] {
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
    first_panel = first, end_panel = last;
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
  };
  kBlocks(panels);
}

}  // namespace nanoc::cpu
