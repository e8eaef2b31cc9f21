// nanoc.Winograd (ops/winograd.h) on the GEMM micro-kernel. A task is one
// block of an image's tiles (and a group of output channels, when an image
// has too few tiles to give two tasks):
//  1. the input transform V = B^T d B of the block, vectorized over V tiles
//     (lanes gather their t x t patches, padding as masked-off lanes), into
//     the worker's scratch as t*t packed B operands [C x tiles], in panels of
//     the tile's nr columns;
//  2. per block of R output channels: t*t register-tiled products U[xi] (the
//     compile-time transformed weights, read in place as A) x V[xi] into
//     scratch, or with tile_rows their transposes V[xi]^T x U[xi]^T (the
//     tiles as the tile's rows, U's panels as B, each register tile
//     transposed before its store), then the output transform A^T Mx A,
//     bias and the fused epilogue, V tiles at a time, scattered into Y
//     (lanes past OH or OW masked off).
// The transforms are unrolled at compile time from the constant matrices
// (zero coefficients skipped, +-1 as adds), so an F(4x4, 3x3) tile costs 36
// multiply-adds per channel pair instead of 144.
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/epilogue.h"
#include "compiler/codegen/cpu/gemm_microkernel.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/ir/error.h"
#include "compiler/ops/winograd.h"

namespace nanoc::cpu {

namespace {

// A task's transformed input (t*t x C x tiles) stays about this size (whole
// panels, at least one): it is read again by every block of rows.
constexpr int64_t kBlockBytes = int64_t{512} << 10;
// Tiles per block are a multiple of this where an image has several blocks.
constexpr int64_t kBlockQuantum = 8;
// Blocks of an image that one block would hold are split in two only into
// blocks of at least this many tiles.
constexpr int64_t kMinSplitBlock = 16;
// Output channels per block of the products (a multiple of
// kPackedRowQuantum, so of every tile's rows).
constexpr int64_t kRowBlock = 96;

struct WinogradPlan {
  WinogradShape s;
  int64_t tiles = 0;      // per image
  int64_t block = 1;      // tiles per task (the last block may have fewer)
  int64_t block_pad = 1;  // block rounded up to whole panels
  int64_t blocks = 1;     // per image
  int64_t rows = 1;       // R: output channels per block of the products
  int64_t row_blocks = 1;
  int64_t groups = 1;  // tasks per tile block, each a range of row blocks
  int64_t perImage() const { return blocks * groups; }
  // The last block's tiles: fewer than `block`, or, blocked, up to
  // kBlockQuantum more (blockCount).
  int64_t lastBlock() const { return tiles - (blocks - 1) * block; }
  int64_t maxBlock() const { return std::max(block, lastBlock()); }
  int64_t t2() const { return s.t * s.t; }
  // Floats of the scratch's V per product: C x block_pad, or blocked
  // ICb x maxBlock x b. The products of a block of rows follow all t*t of
  // them.
  int64_t vPerProduct() const {
    return s.block > 0 ? s.inBlocks() * maxBlock() * s.block : s.c * block_pad;
  }
  uint64_t scratchBytes() const {
    return static_cast<uint64_t>(4 * t2() * (vPerProduct() + rows * maxBlock()));
  }
};

// Blocks of `size` tiles for `tiles`: the blocked form (its tiles are the
// products' rows, not vector lanes, so a block may hold any count) joins a
// last block of at most kBlockQuantum tiles to the one before, so that two
// threads' halves of the tasks balance (28 x 28's 49 tiles as 24 + 25, not
// 32 + 17; 56 x 56's 196 as 5 x 32 + 36, not 13 of 16, 112 + 84). On a
// Zen 4 (A/B, interleaved) resnet18 took 0.957x the time at two threads
// and 0.984x at one (its 28 x 28 layers 0.68-0.77x at two), resnet50
// 0.969x and 0.982x, squeezenet1_1 (13 x 13's F(2x2) 49 tiles) 0.914x and
// 0.963x; compiled for x86-64-v3 0.930x / 0.985x, 0.978x / 0.991x and
// 0.896x / 0.950x.
int64_t blockCount(int64_t tiles, int64_t size, bool blocked) {
  const int64_t count = (tiles + size - 1) / size;
  const int64_t last = tiles - (count - 1) * size;
  return blocked && count > 1 && last <= kBlockQuantum ? count - 1 : count;
}

WinogradPlan planWinograd(const Node& node) {
  WinogradPlan p;
  p.s = winogradShape(node);
  const WinogradShape& s = p.s;
  p.tiles = s.tiles();
  const int64_t panel_bytes = 4 * p.t2() * std::max<int64_t>(1, s.c) * s.panel;
  const int64_t most = std::max<int64_t>(1, kBlockBytes / panel_bytes) * s.panel;
  const bool blocked = s.block > 0;
  if (p.tiles <= most && p.tiles < 2 * kMinSplitBlock) {
    p.block = p.tiles;
  } else if (p.tiles <= most) {
    // Two blocks, so that two threads share the image's tiles without
    // transforming the same input twice (rows split 24 + 40 at M = 64);
    // not below 16 tiles a block, whose products run on narrower vectors
    // (14 x 14's 16 tiles as 8 + 8: 1.3x slower on one thread). Blocked,
    // the first may hold the whole 8-tile groups of half and the second
    // the rest (blockCount), where that balances them better.
    p.block = ((p.tiles + 1) / 2 + kBlockQuantum - 1) / kBlockQuantum * kBlockQuantum;
    const int64_t down = p.tiles / 2 / kBlockQuantum * kBlockQuantum;
    if (blocked && down >= kMinSplitBlock && blockCount(p.tiles, down, true) == 2 &&
        p.tiles - down < p.block)
      p.block = down;
  } else {
    // Blocks of whole 8-tile groups (full vectors of 8 or 16 lanes), at most
    // `most`, chosen so that nanort's two threads, one per half of the tasks,
    // get about as many tiles each (196 tiles: 13 blocks of 16 rather than 7
    // of 32, which split 128 + 68); a block costs about two tiles more.
    int64_t best_cost = -1;
    for (int64_t size = kBlockQuantum; size <= most; size += kBlockQuantum) {
      const int64_t count = blockCount(p.tiles, size, blocked);
      const int64_t half = (count + 1) / 2;
      const int64_t first = half == count ? p.tiles : half * size;
      const int64_t cost = std::max(first, p.tiles - first) + 2 * half;
      if (best_cost < 0 || cost <= best_cost) best_cost = cost, p.block = size;
    }
  }
  p.blocks = blockCount(p.tiles, p.block, blocked);
  p.block_pad = (p.block + s.panel - 1) / s.panel * s.panel;
  const int64_t M = s.m_out;
  // Transposed products take their output channels (columns) in whole
  // panels of U.
  const int64_t quantum = s.tile_rows > 0 ? s.tile_rows : kPackedRowQuantum;
  const int64_t most_rows = std::max(quantum, kRowBlock / quantum * quantum);
  p.rows = std::min(M, most_rows);
  // One block of tiles per image: two groups of rows, so that two threads
  // share an image (each transforms the block's input itself).
  if (p.blocks == 1 && M > quantum) {
    // Row blocks whose two groups (group 0 takes the first row_blocks / 2)
    // differ least in rows (M = 256: 11 blocks of 24, 120 + 136).
    int64_t best = -1;
    for (int64_t rows = quantum; rows <= std::min(M, most_rows); rows += quantum) {
      const int64_t blocks = (M + rows - 1) / rows;
      const int64_t first = std::min(M, blocks / 2 * rows);
      const int64_t busiest = std::max(first, M - first);
      if (best < 0 || busiest <= best) best = busiest, p.rows = rows;
    }
    p.row_blocks = (M + p.rows - 1) / p.rows;
    p.groups = std::min<int64_t>(2, p.row_blocks);
  } else {
    p.row_blocks = (M + p.rows - 1) / p.rows;
  }
  // Blocked: a row block's products are whole blocks of channels (M itself
  // may end within one).
  if (s.block > 0) p.rows = (p.rows + s.block - 1) / s.block * s.block;
  return p;
}

// The linear combination sum_k coeffs[k] * values[k] of vectors, unrolled:
// zero coefficients skipped, +-1 as adds and subtractions, the rest
// multiply-adds; all zero: 0.
llvm::Value* combine(llvm::IRBuilder<>& b, llvm::Type* type, const double* coeffs, int64_t stride,
                     const std::vector<llvm::Value*>& values) {
  llvm::Value* sum = nullptr;
  for (size_t k = 0; k < values.size(); ++k) {
    const double c = coeffs[static_cast<int64_t>(k) * stride];
    if (c == 0) continue;
    llvm::Value* v = values[k];
    if (!sum) {
      sum = c == 1    ? v
            : c == -1 ? b.CreateFNeg(v)
                      : b.CreateFMul(v, llvm::ConstantFP::get(type, c));
    } else if (c == 1) {
      sum = b.CreateFAdd(sum, v);
    } else if (c == -1) {
      sum = b.CreateFSub(sum, v);
    } else {
      sum = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {type},
                              {v, llvm::ConstantFP::get(type, c), sum});
    }
  }
  return sum ? sum : llvm::Constant::getNullValue(type);
}

// V = B^T d B of a t x t patch, d(i, j) its pixel (i, j): t*t vectors,
// row-major.
std::vector<llvm::Value*> inputTransform(llvm::IRBuilder<>& b, llvm::Type* type,
                                         const WinogradMatrices& f,
                                         const std::function<llvm::Value*(int64_t, int64_t)>& d) {
  const int64_t t = f.t;
  // tmp = B^T d, column by column of d.
  std::vector<llvm::Value*> tmp(static_cast<size_t>(t * t)), v(tmp.size());
  for (int64_t j = 0; j < t; ++j) {
    std::vector<llvm::Value*> column;
    for (int64_t i = 0; i < t; ++i) column.push_back(d(i, j));
    for (int64_t a = 0; a < t; ++a) tmp[a * t + j] = combine(b, type, &f.bt[a * t], 1, column);
  }
  for (int64_t a = 0; a < t; ++a) {
    std::vector<llvm::Value*> row(tmp.begin() + a * t, tmp.begin() + (a + 1) * t);
    for (int64_t c = 0; c < t; ++c) v[a * t + c] = combine(b, type, &f.bt[c * t], 1, row);
  }
  return v;
}

// A^T Mx A of a tile's t*t products (row-major): m*m vectors, row-major.
std::vector<llvm::Value*> outputTransform(llvm::IRBuilder<>& b, llvm::Type* type,
                                          const WinogradMatrices& f,
                                          const std::vector<llvm::Value*>& mx) {
  const int64_t m = f.m, t = f.t;
  // tmp = A^T Mx (m x t).
  std::vector<llvm::Value*> tmp, y;
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < t; ++j) {
      std::vector<llvm::Value*> column;
      for (int64_t a = 0; a < t; ++a) column.push_back(mx[a * t + j]);
      tmp.push_back(combine(b, type, &f.at[r * t], 1, column));
    }
  for (int64_t r = 0; r < m; ++r) {
    std::vector<llvm::Value*> row(tmp.begin() + r * t, tmp.begin() + (r + 1) * t);
    for (int64_t q = 0; q < m; ++q) y.push_back(combine(b, type, &f.at[q * t], 1, row));
  }
  return y;
}

}  // namespace

Lowering makeWinogradLowering() {
  Lowering lowering{
      [](const Node& node) -> uint64_t {
        WinogradPlan plan = planWinograd(node);
        return static_cast<uint64_t>(std::max<int64_t>(1, plan.s.n * plan.perImage()));
      },
      [](KernelBuilder& kb) {
        WinogradPlan plan = planWinograd(kb.node);
        const WinogradShape& s = plan.s;
        if (s.n == 0) return;
        llvm::IRBuilder<>& b = kb.b;
        const RegisterTile tile = registerTile(*kb.fn);
        const int64_t V = tile.width, S = tile.columns();
        if (s.block > 0 && s.block != V)
          throw CompileError("nanoc.Winograd '" + kb.node.name + "': block " +
                             std::to_string(s.block) + " is not the tile's vector width " +
                             std::to_string(V));
        if (plan.block_pad % S != 0 || S % V != 0 || s.tile_rows % S != 0)
          throw CompileError("nanoc.Winograd '" + kb.node.name + "': panel " +
                             std::to_string(s.panel) + " or tile_rows " +
                             std::to_string(s.tile_rows) + " is not a multiple of the tile's " +
                             std::to_string(S) + " columns");
        const WinogradMatrices& f = winogradMatrices(s.tile);
        const int64_t t = s.t, T2 = plan.t2(), m = s.tile, C = s.c, M = s.m_out, R = plan.rows;
        llvm::Type* f32 = b.getFloatTy();
        llvm::Type* i32 = b.getInt32Ty();
        llvm::Type* vtype = llvm::FixedVectorType::get(f32, V);
        auto i64 = [&](int64_t v) { return b.getInt64(v); };
        auto vi32 = [&](int64_t v) {
          return b.CreateVectorSplat(V, b.getInt32(static_cast<int32_t>(v)));
        };
        llvm::Value* x = kb.input(0);
        llvm::Value* u = kb.input(1);
        llvm::Value* bias = s.has_bias ? kb.input(2) : nullptr;
        llvm::Value* y = kb.output(0);
        const FusedEpilogue epilogue = fusedEpilogue(kb);
        llvm::Value* vbuf = kb.scratch;
        const int64_t VX = plan.vPerProduct();
        llvm::Value* mbuf = b.CreateGEP(f32, kb.scratch, i64(T2 * VX));
        // U[xi]: M's groups of g output channels, C rows each.
        auto uOf = [&](llvm::Value* xi) {
          const int64_t g = s.uGroup();
          return b.CreateGEP(f32, u, b.CreateMul(xi, i64(weightRowGroups(M, g) * C * g)));
        };
        llvm::Value* zero = llvm::Constant::getNullValue(vtype);
        std::vector<llvm::Constant*> iota_c;
        for (int64_t l = 0; l < V; ++l) iota_c.push_back(b.getInt32(static_cast<uint32_t>(l)));
        llvm::Value* iota = llvm::ConstantVector::get(iota_c);

        // Lanes q0 + l of a block starting at tile t0 with nb tiles: their
        // tiles' rows and columns and whether the lane holds a tile.
        struct Lanes {
          llvm::Value *th, *tw, *valid;
        };
        auto lanesAt = [&](llvm::Value* t0, llvm::Value* q0, int64_t nb) {
          llvm::Value* q = b.CreateAdd(b.CreateVectorSplat(V, b.CreateTrunc(q0, i32)), iota);
          llvm::Value* tq = b.CreateAdd(q, b.CreateVectorSplat(V, b.CreateTrunc(t0, i32)));
          return Lanes{b.CreateUDiv(tq, vi32(s.tilesW())), b.CreateURem(tq, vi32(s.tilesW())),
                       b.CreateICmpSLT(q, vi32(nb))};
        };
        auto inRange = [&](llvm::Value* v, int64_t end) {
          return b.CreateAnd(b.CreateICmpSGE(v, vi32(0)), b.CreateICmpSLT(v, vi32(end)));
        };
        // Groups of V lanes over [0, nb): the full ones in a loop, then the
        // partial one with its lane count.
        auto forGroups = [&](int64_t nb, const std::function<void(llvm::Value*, int64_t)>& body) {
          emitLoop(
              b, 0, nb / V, [&](llvm::Value* g) { body(b.CreateMul(g, i64(V)), V); }, "group");
          if (nb % V) body(i64(nb / V * V), nb % V);
        };

        // One block of nb tiles from tile t0 of image n, row blocks
        // [rb_begin, rb_end).
        auto block = [&](llvm::Value* n, llvm::Value* t0, llvm::Value* rb_begin,
                         llvm::Value* rb_end, int64_t nb) {
          llvm::Value* xn = b.CreateGEP(f32, x, b.CreateMul(n, i64(C * s.h * s.w)));
          // 1. V[xi][c][q] at xi * C * block_pad + (q / S) * C * S + c * S + q % S.
          forGroups(nb, [&](llvm::Value* q0, int64_t) {
            Lanes l = lanesAt(t0, q0, nb);
            std::vector<llvm::Value*> offset(static_cast<size_t>(T2)), mask(offset.size());
            for (int64_t i = 0; i < t; ++i) {
              llvm::Value* ih = b.CreateAdd(b.CreateMul(l.th, vi32(m)), vi32(i - s.pad_h));
              llvm::Value* row_ok = b.CreateAnd(l.valid, inRange(ih, s.h));
              for (int64_t j = 0; j < t; ++j) {
                llvm::Value* iw = b.CreateAdd(b.CreateMul(l.tw, vi32(m)), vi32(j - s.pad_w));
                offset[i * t + j] = b.CreateAdd(b.CreateMul(ih, vi32(s.w)), iw);
                mask[i * t + j] = b.CreateAnd(row_ok, inRange(iw, s.w));
              }
            }
            llvm::Value* dst0 = b.CreateAdd(b.CreateMul(b.CreateUDiv(q0, i64(S)), i64(C * S)),
                                            b.CreateURem(q0, i64(S)));
            emitLoop(
                b, 0, C,
                [&](llvm::Value* c) {
                  llvm::Value* xc = b.CreateGEP(f32, xn, b.CreateMul(c, i64(s.h * s.w)));
                  std::vector<llvm::Value*> v =
                      inputTransform(b, vtype, f, [&](int64_t i, int64_t j) {
                        return b.CreateMaskedGather(vtype, b.CreateGEP(f32, xc, offset[i * t + j]),
                                                    llvm::Align(4), mask[i * t + j], zero);
                      });
                  llvm::Value* dst = b.CreateAdd(dst0, b.CreateMul(c, i64(S)));
                  for (int64_t xi = 0; xi < T2; ++xi)
                    b.CreateAlignedStore(v[xi], f32Ptr(b, vbuf, b.CreateAdd(dst, i64(xi * VX))),
                                         llvm::Align(4));
                },
                "c");
          });
          // 2. Row block by row block: the products, then the output transform.
          emitLoop(
              b, rb_begin, rb_end,
              [&](llvm::Value* rb) {
                llvm::Value* r0 = b.CreateMul(rb, i64(R));
                emitLoop(
                    b, 0, T2,
                    [&](llvm::Value* xi) {
                      PackedProduct p;
                      const int64_t g = s.uGroup();
                      llvm::Value* v_xi = b.CreateGEP(f32, vbuf, b.CreateMul(xi, i64(VX)));
                      llvm::Value* u_xi = uOf(xi);
                      llvm::Value* m_xi = b.CreateMul(xi, i64(R * nb));
                      p.K = C;
                      if (s.tile_rows > 0) {
                        // Transposed: Mx[xi]^T (nb x M) = V[xi]^T (the
                        // tiles as rows: row i at (i / S) * C * S + i % S,
                        // K S apart) x U[xi]^T (panels of tile_rows output
                        // channels), rows [r0, r0 + R) of Mx[xi] as this
                        // task's columns, each tile transposed before its
                        // store into the row block's [R, nb].
                        p.a = v_xi;
                        p.a_row_offset = [&](llvm::Value* i) {
                          return b.CreateAdd(b.CreateMul(b.CreateUDiv(i, i64(S)), i64(C * S)),
                                             b.CreateURem(i, i64(S)));
                        };
                        p.a_k_stride = S;
                        p.packed_b = u_xi;
                        p.b_panel_stride = g;
                        // Y's row o (an output channel) at (o - r0) * nb: the
                        // offset may point before the scratch (not inbounds).
                        p.y = b.CreateGEP(f32, mbuf, b.CreateSub(m_xi, b.CreateMul(r0, i64(nb))));
                        p.y_transposed = true;
                        p.prefetch_b = true;  // U's panels stream from memory
                        p.M = nb;
                        p.N = M;
                        p.rows_per_task = nb;
                        p.cols_per_task = R;
                      } else {
                        p.a = u_xi;
                        p.a_row_group = g;
                        p.packed_b = v_xi;
                        p.b_panel_stride = S;
                        p.y = b.CreateGEP(f32, mbuf, m_xi);
                        p.y_row_origin = r0;
                        p.M = M;
                        p.N = nb;
                        p.rows_per_task = R;
                      }
                      emitPackedProductTask(b, tile, p, rb);
                    },
                    "xi");
                llvm::Value* r1 =
                    b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b.CreateAdd(r0, i64(R)), i64(M));
                forGroups(nb, [&](llvm::Value* q0, int64_t lanes) {
                  Lanes l = lanesAt(t0, q0, nb);
                  std::vector<llvm::Value*> offset(static_cast<size_t>(m * m)), mask(offset.size());
                  for (int64_t r = 0; r < m; ++r) {
                    llvm::Value* oh = b.CreateAdd(b.CreateMul(l.th, vi32(m)), vi32(r));
                    llvm::Value* row_ok = b.CreateAnd(l.valid, b.CreateICmpSLT(oh, vi32(s.oh)));
                    for (int64_t q = 0; q < m; ++q) {
                      llvm::Value* ow = b.CreateAdd(b.CreateMul(l.tw, vi32(m)), vi32(q));
                      offset[r * m + q] = b.CreateAdd(b.CreateMul(oh, vi32(s.ow)), ow);
                      mask[r * m + q] = b.CreateAnd(row_ok, b.CreateICmpSLT(ow, vi32(s.ow)));
                    }
                  }
                  emitLoop(
                      b, r0, r1,
                      [&](llvm::Value* o) {
                        llvm::Value* at = b.CreateAdd(b.CreateMul(b.CreateSub(o, r0), i64(nb)), q0);
                        std::vector<llvm::Value*> acc;
                        for (int64_t xi = 0; xi < T2; ++xi)
                          acc.push_back(
                              loadLanes(b, vtype, mbuf, b.CreateAdd(at, i64(xi * R * nb)), lanes));
                        const std::vector<llvm::Value*> out = outputTransform(b, vtype, f, acc);
                        llvm::Value* plane =
                            b.CreateMul(b.CreateAdd(b.CreateMul(n, i64(M)), o), i64(s.oh * s.ow));
                        llvm::Value* y_plane = b.CreateGEP(f32, y, plane);
                        llvm::Value* r_plane = epilogue.spec.residual && epilogue.residual
                                                   ? b.CreateGEP(f32, epilogue.residual, plane)
                                                   : nullptr;
                        llvm::Value* bias_o =
                            bias ? b.CreateVectorSplat(V, loadF32(b, bias, o)) : nullptr;
                        for (int64_t r = 0; r < m; ++r)
                          for (int64_t q = 0; q < m; ++q) {
                            llvm::Value* v = out[r * m + q];
                            if (bias_o) v = b.CreateFAdd(v, bias_o);
                            if (r_plane)
                              v = b.CreateFAdd(
                                  v, b.CreateMaskedGather(
                                         vtype, b.CreateGEP(f32, r_plane, offset[r * m + q]),
                                         llvm::Align(4), mask[r * m + q], zero));
                            v = emitActivation(b, epilogue.spec, v);
                            b.CreateMaskedScatter(v, b.CreateGEP(f32, y_plane, offset[r * m + q]),
                                                  llvm::Align(4), mask[r * m + q]);
                          }
                      },
                      "o");
                });
              },
              "rows");
        };

        // The blocked form (s.block = V): one block of nb tiles from tile t0
        // of image n, row blocks [rb_begin, rb_end). V[xi] is [ICb, BK, V]
        // and a row block's products [R / V, BK, V] (BK = plan.maxBlock()): the
        // packed product's channel-blocked A and Y, a pixel's or a tile's V
        // channels one vector throughout.
        auto blockNchwc = [&](llvm::Value* n, llvm::Value* t0, llvm::Value* rb_begin,
                              llvm::Value* rb_end, int64_t nb) {
          const int64_t ICb = s.inBlocks(), OCb = s.outBlocks(), BK = plan.maxBlock();
          const int64_t x_plane = s.h * s.w * V, y_plane = s.oh * s.ow * V;
          llvm::Value* xn = b.CreateGEP(f32, x, b.CreateMul(n, i64(ICb * x_plane)));
          llvm::Value* yn = b.CreateGEP(f32, y, b.CreateMul(n, i64(OCb * y_plane)));
          llvm::Value* rn =
              epilogue.spec.residual && epilogue.residual
                  ? b.CreateGEP(f32, epilogue.residual, b.CreateMul(n, i64(OCb * y_plane)))
                  : nullptr;
          auto tileAt = [&](llvm::Value* q) {
            llvm::Value* tq = b.CreateAdd(t0, q);
            return std::make_pair(b.CreateMul(b.CreateUDiv(tq, i64(s.tilesW())), i64(m)),
                                  b.CreateMul(b.CreateURem(tq, i64(s.tilesW())), i64(m)));
          };
          // 1. V[xi][cb][q] = (B^T d B)[xi] of the tile's patch, a vector of
          // V channels; pixels outside X read as 0 (their loads clamped to
          // the plane's first pixel, then replaced).
          emitLoop(
              b, 0, nb,
              [&](llvm::Value* q) {
                auto [oh0, ow0] = tileAt(q);
                std::vector<llvm::Value*> offset(static_cast<size_t>(T2)), inside(offset.size());
                for (int64_t i = 0; i < t; ++i) {
                  llvm::Value* ih = b.CreateAdd(oh0, i64(i - s.pad_h));
                  llvm::Value* row_ok =
                      b.CreateAnd(b.CreateICmpSGE(ih, i64(0)), b.CreateICmpSLT(ih, i64(s.h)));
                  for (int64_t j = 0; j < t; ++j) {
                    llvm::Value* iw = b.CreateAdd(ow0, i64(j - s.pad_w));
                    llvm::Value* ok = b.CreateAnd(
                        row_ok,
                        b.CreateAnd(b.CreateICmpSGE(iw, i64(0)), b.CreateICmpSLT(iw, i64(s.w))));
                    inside[i * t + j] = ok;
                    offset[i * t + j] = b.CreateSelect(
                        ok, b.CreateMul(b.CreateAdd(b.CreateMul(ih, i64(s.w)), iw), i64(V)),
                        i64(0));
                  }
                }
                emitLoop(
                    b, 0, ICb,
                    [&](llvm::Value* cb) {
                      llvm::Value* plane = b.CreateGEP(f32, xn, b.CreateMul(cb, i64(x_plane)));
                      std::vector<llvm::Value*> v =
                          inputTransform(b, vtype, f, [&](int64_t i, int64_t j) {
                            return b.CreateSelect(
                                inside[i * t + j],
                                b.CreateAlignedLoad(vtype, f32Ptr(b, plane, offset[i * t + j]),
                                                    llvm::Align(4)),
                                zero);
                          });
                      llvm::Value* dst =
                          b.CreateMul(b.CreateAdd(b.CreateMul(cb, i64(BK)), q), i64(V));
                      for (int64_t xi = 0; xi < T2; ++xi)
                        b.CreateAlignedStore(v[xi], f32Ptr(b, vbuf, b.CreateAdd(dst, i64(xi * VX))),
                                             llvm::Align(4));
                    },
                    "cb");
              },
              "tile");
          // 2. Row block by row block: the products, then the output transform.
          emitLoop(
              b, rb_begin, rb_end,
              [&](llvm::Value* rb) {
                llvm::Value* r0 = b.CreateMul(rb, i64(R));
                llvm::Value* ob0 = b.CreateUDiv(r0, i64(V));
                emitLoop(
                    b, 0, T2,
                    [&](llvm::Value* xi) {
                      PackedProduct p;
                      p.a = b.CreateGEP(f32, vbuf, b.CreateMul(xi, i64(VX)));
                      p.channel_block = V;
                      p.a_block_stride = BK * V;
                      p.K = C;
                      p.packed_b = uOf(xi);
                      p.b_panel_stride = s.uGroup();
                      p.prefetch_b = true;
                      // Output channel j of tile i at ((j / V - ob0) * BK + i) * V
                      // + j % V of this row block's products (the offset may
                      // point before the scratch: not inbounds).
                      p.y = b.CreateGEP(
                          f32, mbuf,
                          b.CreateSub(b.CreateMul(xi, i64(R * BK)), b.CreateMul(ob0, i64(BK * V))));
                      p.y_block_stride = BK * V;
                      p.M = nb;
                      p.N = M;
                      p.rows_per_task = nb;
                      p.cols_per_task = R;
                      emitPackedProductTask(b, tile, p, rb);
                    },
                    "xi");
                llvm::Value* ob1 = b.CreateUDiv(
                    b.CreateAdd(b.CreateBinaryIntrinsic(llvm::Intrinsic::smin,
                                                        b.CreateAdd(r0, i64(R)), i64(M)),
                                i64(V - 1)),
                    i64(V));
                emitLoop(
                    b, 0, nb,
                    [&](llvm::Value* q) {
                      auto [oh0, ow0] = tileAt(q);
                      emitLoop(
                          b, ob0, ob1,
                          [&](llvm::Value* ob) {
                            llvm::Value* at = b.CreateMul(
                                b.CreateAdd(b.CreateMul(b.CreateSub(ob, ob0), i64(BK)), q), i64(V));
                            std::vector<llvm::Value*> acc;
                            for (int64_t xi = 0; xi < T2; ++xi)
                              acc.push_back(b.CreateAlignedLoad(
                                  vtype, f32Ptr(b, mbuf, b.CreateAdd(at, i64(xi * R * BK))),
                                  llvm::Align(4)));
                            const std::vector<llvm::Value*> out = outputTransform(b, vtype, f, acc);
                            llvm::Value* bias_ob =
                                bias ? b.CreateAlignedLoad(vtype,
                                                           f32Ptr(b, bias, b.CreateMul(ob, i64(V))),
                                                           llvm::Align(4))
                                     : nullptr;
                            llvm::Value* y_ob = b.CreateMul(ob, i64(y_plane));
                            for (int64_t r = 0; r < m; ++r)
                              for (int64_t qq = 0; qq < m; ++qq) {
                                llvm::Value* v = out[r * m + qq];
                                llvm::Value* oh = b.CreateAdd(oh0, i64(r));
                                llvm::Value* ow = b.CreateAdd(ow0, i64(qq));
                                emitIf(
                                    b,
                                    b.CreateAnd(b.CreateICmpSLT(oh, i64(s.oh)),
                                                b.CreateICmpSLT(ow, i64(s.ow))),
                                    [&] {
                                      llvm::Value* idx = b.CreateAdd(
                                          y_ob,
                                          b.CreateMul(b.CreateAdd(b.CreateMul(oh, i64(s.ow)), ow),
                                                      i64(V)));
                                      llvm::Value* value = v;
                                      if (bias_ob) value = b.CreateFAdd(value, bias_ob);
                                      if (rn)
                                        value = b.CreateFAdd(
                                            value, b.CreateAlignedLoad(vtype, f32Ptr(b, rn, idx),
                                                                       llvm::Align(4)));
                                      value = emitActivation(b, epilogue.spec, value);
                                      b.CreateAlignedStore(value, f32Ptr(b, yn, idx),
                                                           llvm::Align(4));
                                    },
                                    "inside");
                              }
                          },
                          "ob");
                    },
                    "tile");
              },
              "rows");
        };

        auto run = [&](llvm::Value* n, llvm::Value* t0, llvm::Value* rb_begin, llvm::Value* rb_end,
                       int64_t nb) {
          if (s.block > 0) return blockNchwc(n, t0, rb_begin, rb_end, nb);
          block(n, t0, rb_begin, rb_end, nb);
        };
        emitLoop(
            b, kb.task_begin, kb.task_end,
            [&](llvm::Value* task) {
              llvm::Value* n = b.CreateUDiv(task, i64(plan.perImage()));
              llvm::Value* r = b.CreateURem(task, i64(plan.perImage()));
              llvm::Value* tb = b.CreateUDiv(r, i64(plan.groups));
              llvm::Value* g = b.CreateURem(r, i64(plan.groups));
              llvm::Value* t0 = b.CreateMul(tb, i64(plan.block));
              llvm::Value* rb_begin =
                  b.CreateUDiv(b.CreateMul(g, i64(plan.row_blocks)), i64(plan.groups));
              llvm::Value* rb_end = b.CreateUDiv(
                  b.CreateMul(b.CreateAdd(g, i64(1)), i64(plan.row_blocks)), i64(plan.groups));
              if (plan.lastBlock() == plan.block) {
                run(n, t0, rb_begin, rb_end, plan.block);
                return;
              }
              llvm::Function* fn = b.GetInsertBlock()->getParent();
              llvm::BasicBlock* full = llvm::BasicBlock::Create(b.getContext(), "full", fn);
              llvm::BasicBlock* last = llvm::BasicBlock::Create(b.getContext(), "last", fn);
              llvm::BasicBlock* done = llvm::BasicBlock::Create(b.getContext(), "block.done", fn);
              b.CreateCondBr(b.CreateICmpEQ(tb, i64(plan.blocks - 1)), last, full);
              b.SetInsertPoint(full);
              run(n, t0, rb_begin, rb_end, plan.block);
              b.CreateBr(done);
              b.SetInsertPoint(last);
              run(n, t0, rb_begin, rb_end, plan.lastBlock());
              b.CreateBr(done);
              b.SetInsertPoint(done);
            },
            "task");
      }};
  // The transformed input of a block (t*t x vPerProduct) and the products of
  // a block of rows (t*t x R x block).
  lowering.scratch_bytes = [](const Node& node) -> uint64_t {
    return planWinograd(node).scratchBytes();
  };
  // The products go to the scratch; the output transform reads a pixel's
  // residual and then stores the pixel, once: the output may take the
  // residual's slot.
  lowering.in_place_input = [](const Node& node) {
    return hasResidual(node) ? static_cast<int>(kResidualInput) : -1;
  };
  return lowering;
}

}  // namespace nanoc::cpu
