// The register-blocked matrix product for a constant B (weights): B packed
// into column panels at compile time, an mr x nr tile of Y held in vector
// registers across a kc block of K (the Goto/BLIS shape). One generator for
// every ISA: the tile comes from the kernel function's target features, kc
// from its cache sizes (a task's rows are the mc block). Not yet: packing A,
// and replacing B's constant by the packed one (on vector targets the packed
// copy is a second constant today; scalar tiles read B in place).
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/codegen/cpu/target.h"
#include "compiler/ir/graph.h"

namespace nanoc::cpu {

// The register tile: `rows` (mr) rows of `vectors` vectors of `width` f32
// lanes (nr = vectors * width columns), chosen so that the accumulators, one
// row of B's vectors and one broadcast A element fit the vector registers
// (rows * vectors + vectors + 1 <= registers):
//   AVX-512 (32 zmm)          12 x 32      AVX2/AVX/SSE (16 regs)  6 x 2W
//   NEON, RVV at VLEN 128     8 x 12       no vectors (scalar FPU)  4 x 4
// Every rows value divides kPackedRowQuantum, so a block of whole quanta of
// rows is whole tiles; any other block (the last, or every one where a
// product's rows per task are not quanta) ends in a partial tile.
// `registers`: the vector registers (f32 ones for the scalar tile), which
// say how many rows a tile can take beyond `rows` (maxRows), so that a
// block ends without a tile of one or two rows.
struct RegisterTile {
  int64_t width = 1, vectors = 4, rows = 4, registers = 16;
  int64_t columns() const { return width * vectors; }
  // The most rows whose accumulators, B's row and a broadcast still fit
  // the registers: 14 on AVX-512's 12 x 32.
  int64_t maxRows() const { return std::max(rows, (registers - vectors - 1) / vectors); }
};
constexpr int64_t kPackedRowQuantum = 24;

// The tile for the target of `fn` (its "target-features" and
// "prefer-vector-width" attributes; none: the scalar tile).
RegisterTile registerTile(const llvm::Function& fn);
// The same for a target, as compile.cc sets up its kernel functions.
RegisterTile registerTile(const CpuTarget& target);

// The Im2Col panel width for a program with these targets: the least common
// multiple of their tiles' columns (each ISA variant reads a panel as whole
// tiles), or 0 (keep the direct Conv) when one of them has no vector unit.
int64_t convGemmPanel(const std::vector<CpuTarget>& targets);
// The row group of a ConvGemm's packed W (ops/weight_rows.h) for a program
// with these targets: the least common multiple of their tiles' rows (12
// on AVX-512 alone), which divides kPackedRowQuantum; 0 where one has no
// vector unit (as convGemmPanel). A tile of mr rows of W in groups of 24
// reads half of each line of its stream and skips the other half, which
// the L1 holds beside the panel of B all the same.
int64_t convGemmRowGroup(const std::vector<CpuTarget>& targets);
// The channel block of the NCHWc layout (ops/nchwc.h) for a program with
// these targets: their tiles' common vector width in floats, or 0 where the
// widths differ or one has no vector unit (the program keeps NCHW).
int64_t nchwcBlock(const std::vector<CpuTarget>& targets);
// Whether every target runs 16-lane (512-bit) multiply-adds at full rate,
// two a cycle, as far as its CPU tells: its tile is 16 lanes wide and its
// CPU is a named one other than AMD's Zen 4 (znver4: two 256-bit pipes, so
// AVX-512 at AVX2's rate) and not a generic level (x86-64-v4 runs on Zen 4
// too). Intel's AVX-512 Xeons and Zen 5 pass. So do, though they should
// not, the parts with one 512-bit pipe that LLVM names as the others:
// Xeon Silver and Gold 5xxx, and the client cores (icelake-client,
// tigerlake, rocketlake; the 2-vCPU Xeon VM of docs/BENCHMARKS.md reports
// rocketlake's model while its measured peak is two pipes').
bool fullRateWideFma(const std::vector<CpuTarget>& targets);

// Rows of Y per task for the packed product: productRowsPerTask, or more
// while the task's rows of A fit 256 KiB, rounded up to a multiple of
// kPackedRowQuantum (whole tiles on every ISA), or M. The same for every
// target (the task count precedes the kernel's target): no cache sizes.
int64_t packedRowsPerTask(int64_t M, int64_t K, int64_t N);
// For products whose tasks are row blocks only (MatMul, Gemm): that, split in
// two when one task holds the work of two (or kept whole, M, where its
// columns split more evenly: balancedPackedColumnsPerTask), then down to a
// third of it (whole quanta) where nanort's two threads, one per half of the
// tasks, get closer to M / 2 rows each; or M again, the columns split in
// halves instead, where that leaves the busier thread less work and the rows
// of A take at most 2 MiB.
int64_t balancedPackedRowsPerTask(int64_t M, int64_t K, int64_t N);
// Columns per task to go with it: 0 (all N), or, when the rows make one task
// that holds the work of two, half of N in whole kPackedColumnUnit, so that
// two threads share it (a product of few rows, as in a transformer).
constexpr int64_t kPackedColumnUnit = 96;  // a multiple of every tile's columns
int64_t balancedPackedColumnsPerTask(int64_t M, int64_t K, int64_t N, int64_t rows_per_task);

// The depth of a kc block of the packed product for this tile, `rows` rows
// per task and these caches: K in equal blocks, each as deep as keeps the
// task's block of A and the panel's block of B in half of L2, and at least
// BLIS's kc (the panel's block in half of L1); no L1 (0): one block.
int64_t packedKBlock(const RegisterTile& tile, int64_t K, int64_t rows,
                     const CpuTarget::CacheSizes& cache);

// Whether an M x K x N product with this B takes the packed product: B a 2-D
// f32 constant and M at least kPackedMinRows (fewer rows give too few
// independent accumulators to hide the multiply-add latency; a batch-1
// product streams B faster along its rows).
constexpr int64_t kPackedMinRows = 4;
bool usesPackedProduct(const Value* b, int64_t M);

// B (op(B) = B or B^T, [K, N]) packed as an internal constant of `module`:
// panel p holds columns [p * nr, p * nr + w) with w = min(nr, N - p * nr),
// starts at element p * K * nr and is row-major [K][w], so the K loop reads
// it contiguously and the array has exactly K * N elements.
llvm::GlobalVariable* packB(llvm::Module& module, const Value& b, bool trans_b, int64_t K,
                            int64_t N, int64_t nr, const std::string& name);

struct PackedProduct {
  llvm::Value* a = nullptr;  // A(i, k) = a[i * a_row_stride + k * a_k_stride]
  int64_t a_row_stride = 0, a_k_stride = 0;
  // > 0: A packed in groups of this many rows (a multiple of the tile's mr,
  // such as kPackedRowQuantum): A(i, k) = a[(i / g) * g * K + k * g + i % g],
  // so a tile's rows at one k are adjacent and its K loop reads one stream
  // (a_row_stride and a_k_stride unused).
  int64_t a_row_group = 0;
  // Set (without a_row_group): A(i, k) = a[a_row_offset(i) + k *
  // a_k_stride], rows at any offsets (a strided 1x1 window's pixels read
  // from X in place); a_row_stride unused.
  std::function<llvm::Value*(llvm::Value* i)> a_row_offset;
  // The row `a` holds first (a multiple of a_row_group), for an A that holds
  // one block of rows (a task's scaled copy of W); nullptr: row 0.
  llvm::Value* a_row_origin = nullptr;
  // packB's layout, or with b_in_place op(B) where it is:
  // op(B)(k, j) = packed_b[k * b_k_stride + j * b_col_stride]. In place at
  // width 1 (scalar tiles: Cortex-M, RV64GC), where a second copy of the
  // weights would cost flash and buys nothing, and for a run-time B whose
  // rows are contiguous (b_col_stride 1: a MatMul's second operand).
  llvm::Value* packed_b = nullptr;
  bool b_in_place = false;
  int64_t b_k_stride = 0, b_col_stride = 0;
  // Not in place: 0 for packB's exact layout; S > 0 for panels of S columns
  // (a multiple of the tile's nr) whose rows are S apart even in the last,
  // partial panel: column j of row k at (j / S) * K * S + k * S + j % S
  // (nanoc.Im2Col's layout, shared by every ISA variant of a program).
  int64_t b_panel_stride = 0;
  // With b_panel_stride: the first column packed_b holds (a multiple of S),
  // for panels packed a task's columns at a time; nullptr: column 0.
  llvm::Value* b_column_origin = nullptr;
  llvm::Value* y = nullptr;  // row-major [M, N]
  // > 0: A and Y are channel-blocked (ops/nchwc.h) in blocks of this many
  // lanes (a multiple of the tile's width): the product's rows are pixels,
  // A(i, k) = a[(k / c) * a_block_stride + i * c + k % c] and
  // Y(i, j) = y[(j / c) * y_block_stride + i * c + j % c], so that each
  // vector of a tile row is one pixel's block of channels (a_row_stride,
  // a_k_stride, a_row_group and N's row stride unused). K and N may end
  // within a block: A's lanes past K are not read, Y's past N are written 0.
  int64_t channel_block = 0;
  int64_t a_block_stride = 0, y_block_stride = 0;
  // Prefetch each tile's lines of Y for writing before its K loop (Y's
  // row-major or channel-blocked layouts).
  bool prefetch_y = false;
  // Prefetch B's rows 16 ahead in the K loop: for a constant B whose panels
  // stream from memory once per task, read by few tiles (weights against a
  // few pixels or rows: the transposed products', the channel-blocked
  // pointwise product's, a packed Gemm's), faster than the hardware
  // prefetcher brings them.
  bool prefetch_b = false;
  // Prefetch the next panel's rows of the kc block into L2 in the task's
  // tiles after the first that cover them (the first reads its own panel,
  // from memory or L3; on AVX-512's 12 x 32 the second and third, a line a
  // K step each): the next panel after the task's last is its first, the
  // next task's. For a constant B that does not stay in L2 across a task's
  // panels, on 16-lane tiles (emitPackedProductTask).
  bool prefetch_next_panel = false;
  // Y stored transposed, [N, M]: Y(i, j) at y[j * M + i]. For a product
  // whose rows are few and its columns many (a Conv on a 7 x 7 map with the
  // pixels as rows and the output channels as columns, so no vector lane
  // is wasted): each tile is transposed in registers before its store, and
  // the init, epilogue and prefetch hooks see Y's own frame: (i, j) = (Y's
  // row, its first column) = (the product's column, its first row), with
  // `lanes` the tile's rows (at most the tile's width). The K loop runs as
  // one block (no partial sums stored in Y); y_row_origin and
  // channel_block unused.
  bool y_transposed = false;
  // The row y holds first (y's row i is the product's row i - y_row_origin),
  // for a y that holds one block of rows; nullptr: row 0. The init,
  // epilogue and prefetch hooks still see the product's rows.
  llvm::Value* y_row_origin = nullptr;
  int64_t M = 0, K = 0, N = 0;
  int64_t rows_per_task = 1;  // packedRowsPerTask or balancedPackedRowsPerTask
  // K per cache block (the sum runs block by block, partial sums kept in Y);
  // 0: packedKBlock for the tile and the kernel function's caches
  // (cacheSizes).
  int64_t k_block = 0;
  // Columns per task, a multiple of the tile's nr; 0: all N. Tasks are
  // (row block, column block) pairs, column blocks fastest.
  int64_t cols_per_task = 0;
  int64_t taskCount() const;
  double alpha = 1.0;
  // Y(i, j..j+lanes) = alpha * sum + init(i, j, lanes, type) (init empty:
  // 0): `lanes` columns from j (lanes <= the tile's width) as `type`, the
  // tile's vector type (f32 at width 1); lanes past `lanes` may hold anything
  // (loadLanes reads only `lanes`).
  std::function<llvm::Value*(llvm::Value* i, llvm::Value* j, int64_t lanes, llvm::Type* type)> init;
  // Applied to alpha * sum + init before the tile's one store (a fused
  // activation or residual); empty: none. Same arguments as init, plus the
  // value.
  std::function<llvm::Value*(llvm::Value* i, llvm::Value* j, int64_t lanes, llvm::Value* value)>
      epilogue;
  // Called per row and vector of a tile before its K loop (same i, j as the
  // epilogue's), so that an epilogue reading memory (a residual) can prefetch
  // it: the K loop hides the misses that would stall the store.
  std::function<void(llvm::Value* i, llvm::Value* j)> prefetch;
};

// `lanes` f32 from base[index] as `type` (a vector, or f32): a masked load
// when lanes is less than the vector's width, the rest zero.
llvm::Value* loadLanes(llvm::IRBuilder<>& b, llvm::Type* type, llvm::Value* base,
                       llvm::Value* index, int64_t lanes);
// p.init = row[j .. j + lanes): a bias added to every row of the product.
void setRowInit(llvm::IRBuilder<>& b, PackedProduct& p, llvm::Value* row);
// The first `lanes` lanes of v (a vector, or f32) to base[index]: a masked
// store when lanes is less than the vector's width.
void storeLanes(llvm::IRBuilder<>& b, llvm::Value* v, llvm::Value* base, llvm::Value* index,
                int64_t lanes);

// The transpose of `rows` (at most W vectors of W lanes, W a power of two):
// W vectors, lane r of vector l being rows[r]'s lane l; lanes past
// rows.size() are poison. W = 1: rows itself.
std::vector<llvm::Value*> transposeTile(llvm::IRBuilder<>& b, std::vector<llvm::Value*> rows,
                                        int64_t W);

// Emits task `t` of p.taskCount(): rows [r * rows_per_task, min(M, (r + 1) *
// rows_per_task)) and columns [c * cols_per_task, min(N, (c + 1) *
// cols_per_task)) of the product, with (r, c) = (t / column blocks, t %
// column blocks). A block whose rows are not a multiple of the tile's ends
// in a tile of the rest (every block's, where rows_per_task is not).
void emitPackedProductTask(llvm::IRBuilder<>& b, const RegisterTile& tile, const PackedProduct& p,
                           llvm::Value* t);

}  // namespace nanoc::cpu
