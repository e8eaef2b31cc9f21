// Gemm: Y = alpha * op(A) * op(B) + beta * C, and the row-block matrix
// product that MatMul's lowering (lower_matmul.cc) shares.
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <functional>
#include <string>

#include "compiler/codegen/cpu/epilogue.h"
#include "compiler/codegen/cpu/gemm_microkernel.h"
#include "compiler/codegen/cpu/linalg.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/ops/gemm.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::cpu {

// Rows of the product per task: enough multiply-adds (~64K) that a task
// outweighs its dispatch, and at most 64 blocks per matrix so the task count
// stays bounded for large M.
int64_t productRowsPerTask(int64_t M, int64_t K, int64_t N) {
  if (M <= 0) return 1;
  int64_t per_row = std::max<int64_t>(1, K * N);
  int64_t rows = std::max<int64_t>((65536 + per_row - 1) / per_row, (M + 63) / 64);
  return std::clamp<int64_t>(rows, 1, M);
}

// Emits rows [row_begin, row_end) of a K-deep product into a row-major Y with
// N columns:
//   Y(i, j) = alpha * sum_k A(i, k) * B(k, j) + init(i, j)   (init empty: 0)
// where A(i, k) = a[a_base + i * a_row_stride + k * a_k_stride] and
//       B(k, j) = bm[b_base + k * b_k_stride + j * b_col_stride].
// The loop order follows B's unit stride so that the innermost loop is
// unit-stride and vectorizes: along j (i-k-j order, A(i, k) broadcast, Y's row
// accumulated in place) when B's rows are contiguous, otherwise along k (one
// dot product per output, a reassociable reduction).
void emitProductRows(llvm::IRBuilder<>& b, llvm::Value* a, llvm::Value* a_base,
                     int64_t a_row_stride, int64_t a_k_stride, llvm::Value* bm, llvm::Value* b_base,
                     int64_t b_k_stride, int64_t b_col_stride, llvm::Value* y, llvm::Value* y_base,
                     int64_t K, int64_t N, llvm::Value* row_begin, llvm::Value* row_end,
                     double alpha,
                     const std::function<llvm::Value*(llvm::Value* i, llvm::Value* j)>& init,
                     llvm::Value* col_begin, llvm::Value* col_end) {
  llvm::Type* f32 = b.getFloatTy();
  if (!col_begin) col_begin = b.getInt64(0);
  if (!col_end) col_end = b.getInt64(N);
  auto mulAdd = [&](llvm::Value* x, llvm::Value* w, llvm::Value* acc) {
    return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {f32}, {x, w, acc});
  };
  auto index = [&](llvm::Value* base, llvm::Value* v, int64_t stride) {
    return b.CreateAdd(base, b.CreateMul(v, b.getInt64(stride)));
  };
  bool ikj = b_col_stride == 1 && N > 1;

  emitLoop(
      b, row_begin, row_end,
      [&](llvm::Value* i) {
        llvm::Value* y_row = index(y_base, i, N);
        llvm::Value* a_row = index(a_base, i, a_row_stride);
        if (ikj) {
          emitLoop(
              b, col_begin, col_end,
              [&](llvm::Value* j) {
                llvm::Value* v = init ? init(i, j) : llvm::ConstantFP::get(f32, 0.0);
                storeF32(b, v, y, b.CreateAdd(y_row, j));
              },
              "j0");
          // `taps` consecutive k per pass over Y's row: the row is loaded and
          // stored once per 4 multiply-adds instead of once per one.
          auto accumulate = [&](llvm::Value* k0, int64_t taps) {
            std::vector<llvm::Value*> scales, b_rows;
            for (int64_t u = 0; u < taps; ++u) {
              llvm::Value* k = b.CreateAdd(k0, b.getInt64(u));
              llvm::Value* s = loadF32(b, a, index(a_row, k, a_k_stride));
              if (alpha != 1.0) s = b.CreateFMul(s, llvm::ConstantFP::get(f32, alpha));
              scales.push_back(s);
              b_rows.push_back(index(b_base, k, b_k_stride));
            }
            emitLoop(
                b, col_begin, col_end,
                [&](llvm::Value* j) {
                  llvm::Value* at = b.CreateAdd(y_row, j);
                  llvm::Value* acc = loadF32(b, y, at);
                  for (int64_t u = 0; u < taps; ++u)
                    acc = mulAdd(scales[u], loadF32(b, bm, b.CreateAdd(b_rows[u], j)), acc);
                  storeF32(b, acc, y, at);
                },
                "j");
          };
          constexpr int64_t kUnroll = 4;
          if (K / kUnroll > 0)
            emitLoop(
                b, 0, K / kUnroll,
                [&](llvm::Value* kk) { accumulate(b.CreateMul(kk, b.getInt64(kUnroll)), kUnroll); },
                "k");
          if (K % kUnroll) accumulate(b.getInt64(K / kUnroll * kUnroll), K % kUnroll);
          return;
        }
        emitLoop(
            b, col_begin, col_end,
            [&](llvm::Value* j) {
              llvm::Value* b_col = index(b_base, j, b_col_stride);
              llvm::Value* sum;
              {
                // Reassociation lets the vectorizer split the sum into lanes.
                llvm::IRBuilder<>::FastMathFlagGuard guard(b);
                llvm::FastMathFlags fmf;
                fmf.setAllowReassoc();
                fmf.setAllowContract();
                b.setFastMathFlags(fmf);
                sum = emitReduction(
                    b, b.getInt64(0), b.getInt64(K), llvm::ConstantFP::get(f32, 0.0),
                    [&](llvm::Value* k, llvm::Value* acc) {
                      llvm::Value* x = loadF32(b, a, index(a_row, k, a_k_stride));
                      llvm::Value* w = loadF32(b, bm, index(b_col, k, b_k_stride));
                      return b.CreateFAdd(acc, b.CreateFMul(x, w));
                    },
                    "k");
              }
              if (alpha != 1.0) sum = b.CreateFMul(sum, llvm::ConstantFP::get(f32, alpha));
              if (init) sum = b.CreateFAdd(sum, init(i, j));
              storeF32(b, sum, y, b.CreateAdd(y_row, j));
            },
            "j");
      },
      "i");
}

namespace {

// The lowering's view of a Gemm: the op's dimensions (compiler/ops/gemm.h,
// which also checks them) plus how C is read and how rows split into tasks.
struct GemmPlan {
  int64_t M = 0, K = 0, N = 0;
  bool trans_a = false, trans_b = false;
  double alpha = 1.0, beta = 0.0;
  bool has_c = false;
  // C(i, j) = c[i * c_row_stride + j * c_col_stride]: 0 along C's broadcast dims.
  int64_t c_row_stride = 0, c_col_stride = 0;
  int64_t rows_per_task = 1;
  // B is a constant: packed at compile time, the register-tiled product.
  bool packed = false;

  int64_t cols_per_task = 0;  // packed: PackedProduct's, 0 for all N

  // Row product: column blocks of this many, 0 for all N.
  int64_t row_product_cols = 0;

  int64_t blocks() const { return M == 0 ? 1 : (M + rows_per_task - 1) / rows_per_task; }
  int64_t colBlocks() const {
    if (!packed && row_product_cols > 0) return (N + row_product_cols - 1) / row_product_cols;
    return cols_per_task > 0 ? (N + cols_per_task - 1) / cols_per_task : 1;
  }
};

GemmPlan gemmPlan(const Node& node) {
  const GemmShape shape = gemmShape(node);
  GemmPlan s;
  s.M = shape.m, s.K = shape.k, s.N = shape.n;
  s.trans_a = shape.trans_a, s.trans_b = shape.trans_b;
  s.alpha = node.f("alpha");
  s.beta = node.f("beta");
  // beta = 0 ignores C, as BLAS and ONNX Runtime do (even a NaN in C).
  if (node.inputs.size() > 2 && node.inputs[2] && s.beta != 0.0) {
    const std::vector<int64_t>& c = node.inputs[2]->type.dims;
    int64_t cm = c.size() == 2 ? c[0] : 1;
    int64_t cn = c.empty() ? 1 : c.back();
    s.has_c = true;
    s.c_col_stride = cn == 1 ? 0 : 1;
    s.c_row_stride = cm == 1 ? 0 : cn;
  }
  s.packed = usesPackedProduct(node.inputs[1], s.M);
  s.rows_per_task =
      s.packed ? balancedPackedRowsPerTask(s.M, s.K, s.N) : productRowsPerTask(s.M, s.K, s.N);
  if (s.packed) s.cols_per_task = balancedPackedColumnsPerTask(s.M, s.K, s.N, s.rows_per_task);
  // Few rows (a batch-1 classifier: M = 1, K x N = 2048 x 1000) give one or
  // two tasks: split the columns too, into blocks of whole 16-column groups
  // of about productRowsPerTask's 64K multiply-adds, so that threads share
  // the product; below 1M multiply-adds (an MLP's 784 x 512), in two halves
  // only, so that one thread still streams B's rows in long runs. Two
  // threads then each keep their half of B in their own L2 from run to run:
  // mlp_b1 (2.7 MB of weights, 2 MiB L2 per core) on an AVX-512 Xeon took
  // 53 us on one thread and on two unsplit, 18 us on two split. Not below
  // 256K multiply-adds, where a second thread's barrier costs more.
  constexpr int64_t kMinSplitWork = int64_t{1} << 20, kMinHalvesWork = int64_t{1} << 18;
  const int64_t work = s.M * s.K * s.N;
  if (!s.packed && s.blocks() < 4 && s.N >= 32 && work >= kMinHalvesWork) {
    const int64_t per_column = std::max<int64_t>(1, s.K * s.rows_per_task);
    int64_t cols = work >= kMinSplitWork
                       ? std::max<int64_t>(16, (65536 + per_column - 1) / per_column)
                       : (s.N + 1) / 2;
    cols = (cols + 15) / 16 * 16;
    if (cols < s.N) s.row_product_cols = cols;
  }
  return s;
}

// Y = alpha * op(A) * packed B + beta * C, one register tile at a time.
void emitPackedGemm(KernelBuilder& kb, const GemmPlan& s) {
  llvm::IRBuilder<>& b = kb.b;
  RegisterTile tile = registerTile(*kb.fn);
  PackedProduct p;
  // B's packed panels stream from memory, each read by a task's few tiles
  // (mlp_b32 1.08x faster on one thread).
  p.prefetch_b = true;
  // The next panel into L2, as MatMul's, where B outgrows L2 (mlp_b32's
  // 1.6 MiB does not: prefetched so, it took 1.07x the time).
  p.prefetch_next_panel = true;
  p.a = kb.input(0);
  p.a_row_stride = s.trans_a ? 1 : s.K;
  p.a_k_stride = s.trans_a ? s.M : 1;
  if (tile.width == 1) {
    p.packed_b = kb.input(1);
    p.b_in_place = true;
    p.b_k_stride = s.trans_b ? 1 : s.N;
    p.b_col_stride = s.trans_b ? s.K : 1;
  } else {
    p.packed_b = packB(kb.module, *kb.node.inputs[1], s.trans_b, s.K, s.N, tile.columns(),
                       kb.fn->getName().str() + ".packed_b");
  }
  p.y = kb.output(0);
  p.M = s.M, p.K = s.K, p.N = s.N;
  p.rows_per_task = s.rows_per_task;
  p.cols_per_task = s.cols_per_task;
  p.alpha = s.alpha;
  llvm::Value* c = s.has_c ? kb.input(2) : nullptr;
  if (c)
    p.init = [&](llvm::Value* i, llvm::Value* j, int64_t lanes, llvm::Type* type) {
      llvm::Value* row = b.CreateMul(i, b.getInt64(s.c_row_stride));
      llvm::Value* v;
      if (s.c_col_stride == 1) {
        v = loadLanes(b, type, c, b.CreateAdd(row, j), lanes);
      } else {
        v = loadF32(b, c, row);
        if (auto* vec = llvm::dyn_cast<llvm::FixedVectorType>(type))
          v = b.CreateVectorSplat(vec->getNumElements(), v);
      }
      if (s.beta != 1.0) v = b.CreateFMul(v, llvm::ConstantFP::get(type, s.beta));
      return v;
    };
  const FusedEpilogue epilogue = fusedEpilogue(kb);
  setPackedEpilogue(b, p, epilogue.spec, epilogue.residual, s.N);
  emitLoop(
      b, kb.task_begin, kb.task_end, [&](llvm::Value* t) { emitPackedProductTask(b, tile, p, t); },
      "task");
}

}  // namespace

// One task per block of rows of Y (and of columns, for few rows), or with a
// packed B per (block of rows, block of columns).
Lowering makeGemmLowering() {
  return {[](const Node& node) -> uint64_t {
            GemmPlan s = gemmPlan(node);
            return s.blocks() * s.colBlocks();
          },
          [](KernelBuilder& kb) {
            GemmPlan s = gemmPlan(kb.node);
            if (s.M == 0 || s.N == 0) return;
            if (s.packed) return emitPackedGemm(kb, s);
            llvm::IRBuilder<>& b = kb.b;
            llvm::Value* c = s.has_c ? kb.input(2) : nullptr;
            const FusedEpilogue epilogue = fusedEpilogue(kb);
            std::function<llvm::Value*(llvm::Value*, llvm::Value*)> init;
            if (c)
              init = [&](llvm::Value* i, llvm::Value* j) -> llvm::Value* {
                llvm::Value* at = b.CreateAdd(b.CreateMul(i, b.getInt64(s.c_row_stride)),
                                              b.CreateMul(j, b.getInt64(s.c_col_stride)));
                llvm::Value* v = loadF32(b, c, at);
                if (s.beta != 1.0)
                  v = b.CreateFMul(v, llvm::ConstantFP::get(b.getFloatTy(), s.beta));
                return v;
              };
            const int64_t col_blocks = s.colBlocks();
            emitLoop(
                b, kb.task_begin, kb.task_end,
                [&](llvm::Value* task) {
                  // Task = (row block, column block), columns fastest.
                  llvm::Value* t = b.CreateUDiv(task, b.getInt64(col_blocks));
                  llvm::Value* col_begin = nullptr;
                  llvm::Value* col_end = nullptr;
                  if (col_blocks > 1) {
                    col_begin = b.CreateMul(b.CreateURem(task, b.getInt64(col_blocks)),
                                            b.getInt64(s.row_product_cols));
                    col_end = b.CreateBinaryIntrinsic(
                        llvm::Intrinsic::smin,
                        b.CreateAdd(col_begin, b.getInt64(s.row_product_cols)), b.getInt64(s.N));
                  }
                  llvm::Value* row_begin = b.CreateMul(t, b.getInt64(s.rows_per_task));
                  llvm::Value* row_end = b.CreateBinaryIntrinsic(
                      llvm::Intrinsic::smin, b.CreateAdd(row_begin, b.getInt64(s.rows_per_task)),
                      b.getInt64(s.M));
                  // op(A)(i, k) and op(B)(k, j) as strides over the stored layouts.
                  emitProductRows(b, kb.input(0), b.getInt64(0), s.trans_a ? 1 : s.K,
                                  s.trans_a ? s.M : 1, kb.input(1), b.getInt64(0),
                                  s.trans_b ? 1 : s.N, s.trans_b ? s.K : 1, kb.output(0),
                                  b.getInt64(0), s.K, s.N, row_begin, row_end, s.alpha, init,
                                  col_begin, col_end);
                  // Y accumulates in place: the epilogue sweeps the task's
                  // rows (its columns of them) while they are in cache.
                  if (col_blocks == 1) {
                    emitEpilogueSweep(b, epilogue.spec, kb.output(0), epilogue.residual,
                                      b.CreateMul(row_begin, b.getInt64(s.N)),
                                      b.CreateMul(row_end, b.getInt64(s.N)),
                                      registerTile(*kb.fn).width);
                    return;
                  }
                  emitLoop(
                      b, row_begin, row_end,
                      [&](llvm::Value* i) {
                        llvm::Value* row = b.CreateMul(i, b.getInt64(s.N));
                        emitEpilogueSweep(b, epilogue.spec, kb.output(0), epilogue.residual,
                                          b.CreateAdd(row, col_begin), b.CreateAdd(row, col_end),
                                          registerTile(*kb.fn).width);
                      },
                      "sweep");
                },
                "task");
          }};
}

}  // namespace nanoc::cpu
