// MatMul with numpy semantics: 1-D operands promoted ([K] -> [1,K] for A,
// [K] -> [K,1] for B), batch dims broadcast. Each batch is a plain row-major
// product, emitted by the row-block product shared with Gemm.
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/epilogue.h"
#include "compiler/codegen/cpu/gemm_microkernel.h"
#include "compiler/codegen/cpu/linalg.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/ops/broadcast.h"
#include "compiler/ops/operand_view.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::cpu {

namespace {

struct MatMulShape {
  int64_t M = 0, K = 0, N = 0;
  std::vector<int64_t> batch_dims;  // broadcast batch dims of A and B
  // Per batch dim, the element stride of A's and B's matrices (0 where that
  // operand is broadcast along it).
  std::vector<int64_t> a_batch_strides, b_batch_strides;
  int64_t batches = 1;
  int64_t rows_per_task = 1;
  // B is a 2-D constant: A's batches are one [batches * M, K] matrix times a
  // B packed at compile time (the register-tiled product); M counts every
  // batch's rows and batches is 1.
  bool packed = false;

  int64_t cols_per_task = 0;  // packed: PackedProduct's, 0 for all N
  // packed: copy a task's rows of A into the worker's scratch in groups of
  // the tile's mr rows (PackedProduct::a_row_group) first. Where A's row
  // stride is a multiple of 2 KiB (K a multiple of 512), at least half of a
  // tile's mr rows fall in one L1 set, which its K loop then thrashes (GPT-2's
  // 3072 -> 768 product ran at 81% of peak where the 768 -> 3072 one ran at
  // 97%); one stream of A instead, each line of it whole to the tile (in
  // groups of kPackedRowQuantum = 24 rows a 12-row tile read half of each
  // line: SGEMM 1024^3 at 168 GFLOP/s, in groups of 12 at 180). The scratch
  // holds whole groups of kPackedRowQuantum, which every tile's mr divides.
  bool pack_a = false;
  // Not packed: B (a run-time operand) read in place by the register tile
  // (PackedProduct::b_in_place, vector targets), a batch's row block a
  // task, rows_per_task a multiple of kPackedRowQuantum so that every ISA's
  // tile rows divide it. Attention's products (Q K^T, P V: 12 heads of
  // 128 x 64 x 128 in GPT-2) ran as LLVM-vectorized i-k-j loops, each step
  // a load, multiply-add and store of Y's row, at 50-80 GFLOP/s.
  bool tiled = false;
  int64_t packedAGroups() const {
    return (rows_per_task + kPackedRowQuantum - 1) / kPackedRowQuantum;
  }

  int64_t blocks() const { return M == 0 ? 1 : (M + rows_per_task - 1) / rows_per_task; }
  int64_t colBlocks() const {
    return cols_per_task > 0 ? (N + cols_per_task - 1) / cols_per_task : 1;
  }
};

MatMulShape matMulShape(const Node& node) {
  requireF32(node);
  if (hasOperandView(node))
    failNode(node, "operands read through views (a_view_*, b_view_*) are the GPU lowering's");
  std::vector<int64_t> a = inputType(node, 0).dims;
  std::vector<int64_t> bd = inputType(node, 1).dims;
  if (a.empty() || bd.empty()) failNode(node, "operands must have rank >= 1");
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  MatMulShape s;
  s.M = a[a.size() - 2];
  s.K = a.back();
  s.N = bd.back();
  if (bd[bd.size() - 2] != s.K)
    failNode(node, "inner dimensions differ: " + dimsStr(a) + " x " + dimsStr(bd));
  std::vector<int64_t> a_batch(a.begin(), a.end() - 2), b_batch(bd.begin(), bd.end() - 2);
  try {
    s.batch_dims = broadcastShapes(a_batch, b_batch);
  } catch (const std::exception& e) {
    failNode(node, std::string("batch dims: ") + e.what());
  }
  // Strides in units of whole matrices, then scaled to elements.
  s.a_batch_strides = broadcastStrides(a_batch, s.batch_dims);
  s.b_batch_strides = broadcastStrides(b_batch, s.batch_dims);
  for (int64_t& st : s.a_batch_strides) st *= s.M * s.K;
  for (int64_t& st : s.b_batch_strides) st *= s.K * s.N;
  s.batches = product(s.batch_dims, 0, s.batch_dims.size());
  if (node.outputs.size() != 1 || node.outputs[0]->type.numel() != s.batches * s.M * s.N)
    failNode(node, "output type does not match " + dimsStr(inputType(node, 0).dims) + " x " +
                       dimsStr(inputType(node, 1).dims));
  s.packed = usesPackedProduct(node.inputs[1], s.M * s.batches);
  if (s.packed) {
    s.M *= s.batches;
    s.batches = 1;
    s.rows_per_task = balancedPackedRowsPerTask(s.M, s.K, s.N);
    s.cols_per_task = balancedPackedColumnsPerTask(s.M, s.K, s.N, s.rows_per_task);
    s.pack_a = s.K >= 512 && s.K % 512 == 0;
  } else {
    s.rows_per_task = productRowsPerTask(s.M, s.K, s.N);
    s.tiled = s.M >= 8 && s.K >= 8 && s.N >= 8;
    if (s.tiled)
      s.rows_per_task = std::min(
          s.M, (s.rows_per_task + kPackedRowQuantum - 1) / kPackedRowQuantum * kPackedRowQuantum);
  }
  return s;
}

}  // namespace

// One task per (batch, block of output rows), or with a packed B per (block
// of rows, block of columns).
Lowering makeMatMulLowering() {
  Lowering lowering{
      [](const Node& node) -> uint64_t {
        MatMulShape s = matMulShape(node);
        return static_cast<uint64_t>(std::max<int64_t>(1, s.batches * s.blocks() * s.colBlocks()));
      },
      [](KernelBuilder& kb) {
        MatMulShape s = matMulShape(kb.node);
        if (s.batches * s.M * s.N == 0) return;
        llvm::IRBuilder<>& b = kb.b;
        const FusedEpilogue epilogue = fusedEpilogue(kb);
        // The product of A (row-major, from `a`) into Y (from `y`), both
        // paths' rows, columns, fused bias and epilogue (its residual from
        // `residual`); B as each path reads it.
        auto product = [&](llvm::Value* a, llvm::Value* y, llvm::Value* residual) {
          PackedProduct p;
          p.a = a;
          p.a_row_stride = s.K;
          p.a_k_stride = 1;
          p.y = y;
          p.M = s.M, p.K = s.K, p.N = s.N;
          p.rows_per_task = s.rows_per_task;
          p.cols_per_task = s.cols_per_task;
          if (llvm::Value* bias = kb.input(2)) setRowInit(b, p, bias);
          setPackedEpilogue(b, p, epilogue.spec, residual, s.N);
          return p;
        };
        if (s.packed) {
          RegisterTile tile = registerTile(*kb.fn);
          PackedProduct p = product(kb.input(0), kb.output(0), epilogue.residual);
          // B's packed panels stream from memory (as emitPackedGemm's):
          // SGEMM 1024^3 1.05x faster on one thread. Where B outgrows L2,
          // a task's later tiles bring the next panel into L2 (SGEMM
          // 1024^3 0.96-0.97x the time at one and two threads, gpt2_block
          // 0.985-0.99x).
          p.prefetch_b = true;
          p.prefetch_next_panel = true;
          if (tile.width == 1) {
            p.packed_b = kb.input(1);
            p.b_in_place = true;
            p.b_k_stride = s.N;
            p.b_col_stride = 1;
          } else {
            p.packed_b = packB(kb.module, *kb.node.inputs[1], false, s.K, s.N, tile.columns(),
                               kb.fn->getName().str() + ".packed_b");
          }
          emitLoop(
              b, kb.task_begin, kb.task_end,
              [&](llvm::Value* t) {
                if (!s.pack_a) return emitPackedProductTask(b, tile, p, t);
                // Rows [row_begin, row_begin + rows) of A, grouped: row r,
                // column k at ((r / g) * K + k) * g + r % g of the scratch.
                const int64_t g = tile.rows;
                llvm::Value* row_begin = b.CreateMul(b.CreateUDiv(t, b.getInt64(s.colBlocks())),
                                                     b.getInt64(s.rows_per_task));
                llvm::Value* rows =
                    b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b.getInt64(s.rows_per_task),
                                            b.CreateSub(b.getInt64(s.M), row_begin));
                // Whole groups a vector tile at a time: up to W rows' W
                // columns loaded, transposed in registers, stored as W
                // columns' rows (g = 12 rows as 12 lanes of vectors of 16,
                // 6 of 8; 8 as two vectors of 4). K is a multiple of 512,
                // so of W.
                const int64_t W = tile.width;
                llvm::Value* groups = b.CreateUDiv(rows, b.getInt64(g));
                if (W > 1) {
                  llvm::Type* vec = llvm::FixedVectorType::get(b.getFloatTy(), W);
                  emitLoop(
                      b, b.getInt64(0), groups,
                      [&](llvm::Value* gi) {
                        llvm::Value* from0 =
                            b.CreateMul(b.CreateAdd(row_begin, b.CreateMul(gi, b.getInt64(g))),
                                        b.getInt64(s.K));
                        llvm::Value* to0 = b.CreateMul(gi, b.getInt64(g * s.K));
                        emitLoop(
                            b, 0, s.K / W,
                            [&](llvm::Value* kc) {
                              llvm::Value* k0 = b.CreateMul(kc, b.getInt64(W));
                              for (int64_t r0 = 0; r0 < g; r0 += W) {
                                const int64_t R = std::min(W, g - r0);
                                std::vector<llvm::Value*> block;
                                for (int64_t r = r0; r < r0 + R; ++r)
                                  block.push_back(b.CreateAlignedLoad(
                                      vec,
                                      f32Ptr(
                                          b, kb.input(0),
                                          b.CreateAdd(b.CreateAdd(from0, b.getInt64(r * s.K)), k0)),
                                      llvm::Align(4)));
                                std::vector<llvm::Value*> t = transposeTile(b, block, W);
                                for (int64_t kk = 0; kk < W; ++kk)
                                  storeLanes(
                                      b, t[kk], kb.scratch,
                                      b.CreateAdd(
                                          to0,
                                          b.CreateAdd(b.CreateMul(b.CreateAdd(k0, b.getInt64(kk)),
                                                                  b.getInt64(g)),
                                                      b.getInt64(r0))),
                                      R);
                              }
                            },
                            "pack_a.k");
                      },
                      "pack_a.groups");
                }
                // The rest (a partial group, or every row on a scalar tile)
                // one element at a time.
                emitLoop(
                    b, W > 1 ? b.CreateMul(groups, b.getInt64(g)) : b.getInt64(0), rows,
                    [&](llvm::Value* r) {
                      llvm::Value* from = b.CreateMul(b.CreateAdd(row_begin, r), b.getInt64(s.K));
                      llvm::Value* to = b.CreateAdd(
                          b.CreateMul(b.CreateUDiv(r, b.getInt64(g)), b.getInt64(g * s.K)),
                          b.CreateURem(r, b.getInt64(g)));
                      emitLoop(
                          b, 0, s.K,
                          [&](llvm::Value* k) {
                            storeF32(b, loadF32(b, kb.input(0), b.CreateAdd(from, k)), kb.scratch,
                                     b.CreateAdd(to, b.CreateMul(k, b.getInt64(g))));
                          },
                          "k");
                    },
                    "pack_a");
                PackedProduct q = p;
                q.a = kb.scratch;
                q.a_row_group = g;
                q.a_row_origin = row_begin;
                emitPackedProductTask(b, tile, q, t);
              },
              "task");
          return;
        }
        emitLoop(
            b, kb.task_begin, kb.task_end,
            [&](llvm::Value* t) {
              llvm::Value* blocks = b.getInt64(s.blocks());
              llvm::Value* batch = b.CreateUDiv(t, blocks);
              llvm::Value* row_begin =
                  b.CreateMul(b.CreateURem(t, blocks), b.getInt64(s.rows_per_task));
              llvm::Value* row_end = b.CreateBinaryIntrinsic(
                  llvm::Intrinsic::smin, b.CreateAdd(row_begin, b.getInt64(s.rows_per_task)),
                  b.getInt64(s.M));
              // Batch index -> each operand's matrix offset, innermost dim first.
              llvm::Value* a_base = b.getInt64(0);
              llvm::Value* b_base = b.getInt64(0);
              llvm::Value* rest = batch;
              for (size_t d = s.batch_dims.size(); d-- > 0;) {
                llvm::Value* dim = b.getInt64(s.batch_dims[d]);
                llvm::Value* at = b.CreateURem(rest, dim);
                rest = b.CreateUDiv(rest, dim);
                a_base = b.CreateAdd(a_base, b.CreateMul(at, b.getInt64(s.a_batch_strides[d])));
                b_base = b.CreateAdd(b_base, b.CreateMul(at, b.getInt64(s.b_batch_strides[d])));
              }
              llvm::Value* y_base = b.CreateMul(batch, b.getInt64(s.M * s.N));
              const RegisterTile tile = registerTile(*kb.fn);
              if (s.tiled && tile.width > 1) {
                PackedProduct q =
                    product(f32Ptr(b, kb.input(0), a_base), f32Ptr(b, kb.output(0), y_base),
                            epilogue.residual ? f32Ptr(b, epilogue.residual, y_base) : nullptr);
                q.packed_b = f32Ptr(b, kb.input(1), b_base);
                q.b_in_place = true;
                q.b_k_stride = s.N;
                q.b_col_stride = 1;
                emitPackedProductTask(b, tile, q, b.CreateURem(t, blocks));
                return;
              }
              emitProductRows(b, kb.input(0), a_base, s.K, 1, kb.input(1), b_base, s.N, 1,
                              kb.output(0), y_base, s.K, s.N, row_begin, row_end, 1.0, {});
              if (llvm::Value* bias = kb.input(2)) {
                // The fused bias, on the product rounded to f32 (as the Add).
                emitLoop(
                    b, row_begin, row_end,
                    [&](llvm::Value* i) {
                      llvm::Value* row = b.CreateAdd(y_base, b.CreateMul(i, b.getInt64(s.N)));
                      emitLoop(
                          b, 0, s.N,
                          [&](llvm::Value* j) {
                            llvm::Value* at = b.CreateAdd(row, j);
                            storeF32(
                                b, b.CreateFAdd(loadF32(b, kb.output(0), at), loadF32(b, bias, j)),
                                kb.output(0), at);
                          },
                          "bias_col");
                    },
                    "bias_row", LoopHint::NoVectorize);
              }
              // Y accumulates in place: the epilogue sweeps the task's rows
              // while they are in cache.
              llvm::Value* first = b.CreateAdd(y_base, b.CreateMul(row_begin, b.getInt64(s.N)));
              llvm::Value* last = b.CreateAdd(y_base, b.CreateMul(row_end, b.getInt64(s.N)));
              emitEpilogueSweep(b, epilogue.spec, kb.output(0), epilogue.residual, first, last,
                                registerTile(*kb.fn).width);
            },
            "task");
      }};
  lowering.scratch_bytes = [](const Node& node) -> uint64_t {
    MatMulShape s = matMulShape(node);
    if (!s.pack_a) return 0;
    return static_cast<uint64_t>(s.packedAGroups() * kPackedRowQuantum * s.K * 4);
  };
  return lowering;
}

}  // namespace nanoc::cpu
