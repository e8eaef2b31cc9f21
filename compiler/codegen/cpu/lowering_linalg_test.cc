// The linear-algebra and pooling lowerings (MatMul, Gemm, Conv, MaxPool,
// AveragePool) against the ops' reference implementations on random inputs,
// plus small hand-computed cases that pin the pooling rules of
// compiler/ops/README.md independently of the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/gemm_microkernel.h"
#include "compiler/codegen/cpu/kernel_test_util.h"

namespace nanoc::cpu {
namespace {

using testing::AlignedBuffer;
using testing::expectLoweringMatchesReference;

TensorType f32(std::vector<int64_t> dims) { return {DType::F32, std::move(dims)}; }

using Attrs = std::map<std::string, Attr>;

// The lowering's output for explicit input data, run over its tasks in uneven
// chunks like the reference checks.
std::vector<float> runLowering(const std::string& op, const std::vector<TensorType>& types,
                               const std::vector<std::vector<float>>& data, const Attrs& attrs,
                               std::vector<int64_t>* out_dims = nullptr) {
  auto g = testing::makeSingleNodeGraph(op, types, attrs);
  testing::JitKernel kernel = testing::compileKernel(*g->node);
  std::vector<AlignedBuffer> inputs;
  std::vector<void*> buffers;
  for (size_t i = 0; i < data.size(); ++i) {
    inputs.emplace_back(types[i].bytes());
    std::memcpy(inputs.back().data(), data[i].data(), types[i].bytes());
    buffers.push_back(inputs.back().data());
  }
  const TensorType& out = g->node->outputs[0]->type;
  std::vector<float> result(out.numel());
  buffers.push_back(result.data());
  testing::runKernel(kernel, buffers);
  if (out_dims) *out_dims = out.dims;
  return result;
}

std::vector<float> iota(int64_t n, float start = 1.0f, float step = 1.0f) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i);
  return v;
}

// ---------------------------------------------------------------- MatMul

TEST(MatMulLowering, TwoDimensionalMatchesReference) {
  expectLoweringMatchesReference("MatMul", {f32({5, 7}), f32({7, 13})}, {}, 1);
  expectLoweringMatchesReference("MatMul", {f32({1, 1}), f32({1, 1})}, {}, 2);
  // K not a multiple of the 4-deep unroll, N not of any vector width.
  expectLoweringMatchesReference("MatMul", {f32({16, 33}), f32({33, 19})}, {}, 3);
}

TEST(MatMulLowering, ManyRowBlocksSplitOverTasks) {
  // K * N is small, so rows are grouped into blocks; 200 rows need several.
  expectLoweringMatchesReference("MatMul", {f32({200, 9}), f32({9, 37})}, {}, 4);
  expectLoweringMatchesReference("MatMul", {f32({130, 64}), f32({64, 96})}, {}, 5);
}

TEST(MatMulLowering, OneDimensionalOperandsArePromoted) {
  expectLoweringMatchesReference("MatMul", {f32({7}), f32({7, 5})}, {}, 6);     // -> [5]
  expectLoweringMatchesReference("MatMul", {f32({6, 7}), f32({7})}, {}, 7);     // -> [6]
  expectLoweringMatchesReference("MatMul", {f32({9}), f32({9})}, {}, 8);        // -> []
  expectLoweringMatchesReference("MatMul", {f32({3}), f32({2, 3, 4})}, {}, 9);  // -> [2, 4]
}

TEST(MatMulLowering, BatchDimsBroadcast) {
  expectLoweringMatchesReference("MatMul", {f32({3, 4, 5}), f32({3, 5, 6})}, {}, 10);
  // On the register tile (8 or more rows, columns and K): A's batches
  // broadcast over B's and B's over A's, several row blocks a batch.
  expectLoweringMatchesReference("MatMul", {f32({2, 1, 30, 9}), f32({3, 9, 40})}, {}, 15);
  expectLoweringMatchesReference("MatMul", {f32({2, 3, 50, 16}), f32({16, 33})}, {}, 16);
  expectLoweringMatchesReference("MatMul", {f32({12, 65, 64}), f32({12, 64, 65})}, {}, 17);
  expectLoweringMatchesReference("MatMul", {f32({2, 1, 5, 7}), f32({3, 7, 6})}, {}, 11);
  expectLoweringMatchesReference("MatMul", {f32({4, 5}), f32({2, 3, 5, 6})}, {}, 12);
  expectLoweringMatchesReference("MatMul", {f32({2, 3, 4, 5}), f32({5, 1})}, {}, 13);
}

TEST(MatMulLowering, EmptyDimensions) {
  // K = 0: an empty sum, every output 0.
  EXPECT_EQ(runLowering("MatMul", {f32({2, 0}), f32({0, 3})}, {{}, {}}, {}),
            (std::vector<float>(6, 0.0f)));
  expectLoweringMatchesReference("MatMul", {f32({0, 3}), f32({3, 4})}, {}, 14);
}

TEST(MatMulLowering, HandComputedProduct) {
  // [[1,2,3],[4,5,6]] x [[1,0],[0,1],[1,1]] = [[4,5],[10,11]]
  std::vector<int64_t> dims;
  EXPECT_EQ(
      runLowering("MatMul", {f32({2, 3}), f32({3, 2})}, {iota(6), {1, 0, 0, 1, 1, 1}}, {}, &dims),
      (std::vector<float>{4, 5, 10, 11}));
  EXPECT_EQ(dims, (std::vector<int64_t>{2, 2}));
}

// ---------------------------------------------------------------- Gemm

Attrs gemmAttrs(double alpha, double beta, int64_t trans_a, int64_t trans_b) {
  return {{"alpha", alpha}, {"beta", beta}, {"transA", trans_a}, {"transB", trans_b}};
}

TEST(GemmLowering, EveryTransposeCombinationMatchesReference) {
  const int64_t M = 33, K = 19, N = 21;
  for (int64_t ta : {0, 1})
    for (int64_t tb : {0, 1}) {
      SCOPED_TRACE("transA=" + std::to_string(ta) + " transB=" + std::to_string(tb));
      TensorType a = ta ? f32({K, M}) : f32({M, K});
      TensorType b = tb ? f32({N, K}) : f32({K, N});
      expectLoweringMatchesReference("Gemm", {a, b}, gemmAttrs(1.0, 1.0, ta, tb), 20 + ta * 2 + tb);
      expectLoweringMatchesReference("Gemm", {a, b, f32({M, N})}, gemmAttrs(0.5, -1.5, ta, tb),
                                     30 + ta * 2 + tb);
    }
}

TEST(GemmLowering, CBroadcastsToTheOutput) {
  const int64_t M = 12, K = 10, N = 17;
  for (const std::vector<int64_t>& c :
       std::vector<std::vector<int64_t>>{{N}, {M, 1}, {}, {1}, {1, N}, {1, 1}, {M, N}}) {
    SCOPED_TRACE("C " + f32(c).str());
    expectLoweringMatchesReference("Gemm", {f32({M, K}), f32({K, N}), f32(c)},
                                   gemmAttrs(2.0, 0.25, 0, 0), 40);
    expectLoweringMatchesReference("Gemm", {f32({M, K}), f32({N, K}), f32(c)},
                                   gemmAttrs(1.0, 1.0, 0, 1), 41);
  }
}

TEST(GemmLowering, BetaZeroIgnoresC) {
  expectLoweringMatchesReference("Gemm", {f32({6, 5}), f32({5, 4}), f32({6, 4})},
                                 gemmAttrs(1.0, 0.0, 0, 0), 50);
  // As in BLAS and ONNX Runtime, beta = 0 does not propagate C's NaNs.
  std::vector<float> c(4, std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(runLowering("Gemm", {f32({2, 1}), f32({1, 2}), f32({2, 2})}, {{1, 2}, {3, 4}, c},
                        gemmAttrs(1.0, 0.0, 0, 0)),
            (std::vector<float>{3, 4, 6, 8}));
}

TEST(GemmLowering, LargeAndSkinnyShapes) {
  expectLoweringMatchesReference("Gemm", {f32({150, 64}), f32({64, 80}), f32({80})},
                                 gemmAttrs(1.0, 1.0, 0, 0), 60);
  expectLoweringMatchesReference("Gemm", {f32({150, 64}), f32({80, 64}), f32({80})},
                                 gemmAttrs(1.0, 1.0, 0, 1), 61);
  expectLoweringMatchesReference("Gemm", {f32({1, 64}), f32({64, 1})}, gemmAttrs(1.0, 1.0, 0, 0),
                                 62);
  expectLoweringMatchesReference("Gemm", {f32({64, 3}), f32({3, 1}), f32({1})},
                                 gemmAttrs(-1.0, 3.0, 0, 0), 63);
}

// A batch-1 classifier's Gemm (few rows, B not a constant here: the row
// product, over 1M multiply-adds) splits its columns into tasks: K = 1100
// gives blocks of 64 columns, the last one partial; both layouts of B, C per
// column and per element, two rows; a shorter one in two halves.
TEST(GemmLowering, FewRowsSplitTheirColumns) {
  expectLoweringMatchesReference("Gemm", {f32({1, 1100}), f32({1000, 1100}), f32({1000})},
                                 gemmAttrs(1.0, 1.0, 0, 1), 64);
  expectLoweringMatchesReference("Gemm", {f32({1, 1100}), f32({1100, 1000}), f32({1000})},
                                 gemmAttrs(0.5, 2.0, 0, 0), 65);
  expectLoweringMatchesReference("Gemm", {f32({1100, 2}), f32({1100, 700}), f32({2, 700})},
                                 gemmAttrs(1.0, -1.0, 1, 0), 66);
  // A fused residual and activation, swept over each task's columns.
  Attrs fused = gemmAttrs(1.0, 1.0, 0, 1);
  fused["fused_activation"] = std::string("Sigmoid");
  expectLoweringMatchesReference(
      "Gemm", {f32({1, 1100}), f32({1000, 1100}), f32({1000}), f32({1, 1000})}, fused, 67);
  // Between 256K and 1M multiply-adds (an MLP's 784 x 512): two halves.
  expectLoweringMatchesReference("Gemm", {f32({1, 784}), f32({500, 784}), f32({500})},
                                 gemmAttrs(1.0, 1.0, 0, 1), 68);
  // The split shows in the task count; a short product stays one task.
  auto tasks = [](std::vector<TensorType> inputs) {
    auto g = testing::makeSingleNodeGraph("Gemm", inputs, gemmAttrs(1.0, 1.0, 0, 1));
    return findLowering("Gemm")->task_count(*g->node);
  };
  EXPECT_EQ(tasks({f32({1, 1100}), f32({1000, 1100})}), 16u);
  EXPECT_EQ(tasks({f32({1, 784}), f32({512, 784})}), 2u);
  EXPECT_EQ(tasks({f32({1, 784}), f32({500, 784})}), 2u);  // 256 + 244 columns
  EXPECT_EQ(tasks({f32({1, 256}), f32({512, 256})}), 1u);
}

TEST(GemmLowering, HandComputedWithAlphaBetaAndTransposes) {
  // A^T = [[1,2],[3,4]] (A stored [[1,3],[2,4]]), B^T = I: 2 * A^T + 10 * [1, 2]
  EXPECT_EQ(runLowering("Gemm", {f32({2, 2}), f32({2, 2}), f32({2})},
                        {{1, 3, 2, 4}, {1, 0, 0, 1}, {1, 2}}, gemmAttrs(2.0, 10.0, 1, 1)),
            (std::vector<float>{12, 24, 16, 28}));
}

// ------------------------------------------ MatMul and Gemm with constant B

using testing::tileTargets;

// Runs `op` with input 1 made a constant (its random data) on every tile,
// each with the kernel attributes `extra` too.
void expectConstantBMatchesReference(const std::string& op, std::vector<TensorType> inputs,
                                     Attrs attrs, uint64_t seed,
                                     const testing::KernelAttributes& extra = {}) {
  auto g = testing::makeSingleNodeGraph(op, inputs, attrs);
  testing::expectMatchesOnEveryTile(*g->node, seed,
                                    testing::describe(op, inputs) + " with constant B", {1}, extra);
}

TEST(PackedProductLowering, MatMulEdgesInRowsAndColumns) {
  // Rows and columns around every tile size (4, 6, 8, 12; 4, 8, 16, 24, 32).
  for (int64_t M : {1, 4, 5, 13, 24, 50})
    for (int64_t N : {1, 7, 16, 33, 70}) {
      SCOPED_TRACE("M=" + std::to_string(M) + " N=" + std::to_string(N));
      expectConstantBMatchesReference("MatMul", {f32({M, 9}), f32({9, N})}, {}, 100 + M * N);
    }
}

TEST(PackedProductLowering, MatMulBatchesShareTheConstantB) {
  expectConstantBMatchesReference("MatMul", {f32({2, 3, 17, 40}), f32({40, 35})}, {}, 110);
  expectConstantBMatchesReference("MatMul", {f32({40}), f32({40, 35})}, {}, 111);
  expectConstantBMatchesReference("MatMul", {f32({2, 2, 40}), f32({40, 35})}, {}, 113);
  // Many tasks: the last has the partial tile.
  expectConstantBMatchesReference("MatMul", {f32({301, 64}), f32({64, 48})}, {}, 112);
}

// K a multiple of 512: A's rows are copied into the scratch in groups of the
// tile's rows first (rows 2 KiB apart alias in L1: 12 on AVX-512, 8, 6 or 4
// elsewhere); several row blocks, the last one partial, batches folded into
// rows, a fused activation.
TEST(PackedProductLowering, MatMulPacksARowsWhoseStrideAliases) {
  expectConstantBMatchesReference("MatMul", {f32({301, 512}), f32({512, 40})}, {}, 114);
  expectConstantBMatchesReference("MatMul", {f32({2, 30, 1536}), f32({1536, 70})}, {}, 115);
  expectConstantBMatchesReference("MatMul", {f32({7, 1024}), f32({1024, 33})}, {}, 116);
  Attrs fused = {{"fused_activation", std::string("Relu")}};
  expectConstantBMatchesReference("MatMul", {f32({50, 512}), f32({512, 48})}, fused, 117);
}

TEST(PackedProductLowering, GemmTransposesAlphaBetaAndC) {
  const int64_t M = 29, K = 19, N = 37;
  for (int64_t ta : {0, 1})
    for (int64_t tb : {0, 1}) {
      SCOPED_TRACE("transA=" + std::to_string(ta) + " transB=" + std::to_string(tb));
      TensorType a = ta ? f32({K, M}) : f32({M, K});
      TensorType b = tb ? f32({N, K}) : f32({K, N});
      expectConstantBMatchesReference("Gemm", {a, b}, gemmAttrs(1.0, 1.0, ta, tb),
                                      120 + ta * 2 + tb);
      for (const std::vector<int64_t>& c :
           std::vector<std::vector<int64_t>>{{N}, {M, 1}, {}, {1, N}, {M, N}})
        expectConstantBMatchesReference("Gemm", {a, b, f32(c)}, gemmAttrs(0.5, -1.5, ta, tb),
                                        130 + ta * 2 + tb);
    }
}

// The tile of a function with these attributes.
RegisterTile tileOf(const testing::KernelAttributes& attributes) {
  llvm::LLVMContext ctx;
  llvm::Module module("m", ctx);
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), false),
                                    llvm::Function::InternalLinkage, "f", module);
  for (const auto& [k, v] : attributes) fn->addFnAttr(k, v);
  return registerTile(*fn);
}

TEST(PackedProductLowering, DeepKRunsInSeveralCacheBlocks) {
  // With a 32 KiB L1 and a 128 KiB L2, these K take several kc blocks on
  // every vector tile (4097 on the scalar one too), the last one shorter for
  // 4097; partial sums wait in Y between blocks.
  const testing::KernelAttributes cache = {{kL1DataCacheAttribute, "32768"},
                                           {kL2CacheAttribute, "131072"}};
  for (const testing::KernelAttributes& target : tileTargets()) {
    RegisterTile tile = tileOf(target);
    EXPECT_LT(packedKBlock(tile, 4097, 72, {32768, 131072}), 2100);
    if (tile.width > 1) EXPECT_LE(packedKBlock(tile, 1000, 72, {32768, 131072}), 500);
  }
  uint64_t seed = 400;
  for (int64_t K : {1000, 1024, 4097})
    for (auto [M, N] : std::vector<std::pair<int64_t, int64_t>>{{29, 37}, {13, 70}}) {
      SCOPED_TRACE("K=" + std::to_string(K) + " M=" + std::to_string(M) +
                   " N=" + std::to_string(N));
      expectConstantBMatchesReference("MatMul", {f32({M, K}), f32({K, N})}, {}, seed++, cache);
    }
  // alpha, beta * C (the tile's init) and B^T once, after the last block.
  expectConstantBMatchesReference("Gemm", {f32({1000, 21}), f32({33, 1000}), f32({21, 33})},
                                  gemmAttrs(0.5, -1.5, 1, 1), seed++, cache);
  expectConstantBMatchesReference("Gemm", {f32({23, 1024}), f32({1024, 19}), f32({19})},
                                  gemmAttrs(2.0, 1.0, 0, 0), seed++, cache);
  // The default caches (no attributes): K = 4097 in blocks on every tile.
  expectConstantBMatchesReference("MatMul", {f32({29, 4097}), f32({4097, 37})}, {}, seed++);
}

TEST(PackedProductLowering, CacheSizesSetTheBlockDepth) {
  const RegisterTile avx512 = {16, 2, 12};  // 12 x 32
  // No cache (Cortex-M4): one block.
  EXPECT_EQ(packedKBlock(avx512, 5000, 48, {0, 0}), 5000);
  // Zen 4 (32 KiB, 1 MiB) and 48 rows: blocks up to 1638 deep (A's 48 rows
  // and B's 32 columns in 512 KiB), so K = 1024 is one block, 4096 three.
  EXPECT_EQ(packedKBlock(avx512, 1024, 48, {32768, 1048576}), 1024);
  EXPECT_EQ(packedKBlock(avx512, 4096, 48, {32768, 1048576}), 1366);
  // A small L2 never goes below BLIS's kc, B's block in half of L1: 128.
  EXPECT_EQ(packedKBlock(avx512, 1024, 48, {32768, 65536}), 128);
  EXPECT_EQ(packedKBlock(avx512, 1000, 48, {32768, 0}), 125);  // no L2: 8 of 125
  EXPECT_EQ(packedKBlock(avx512, 16, 48, {32768, 65536}), 16);
  // A bigger L2 or fewer rows, deeper blocks.
  EXPECT_GT(packedKBlock(avx512, 8192, 48, {32768, 2097152}),
            packedKBlock(avx512, 8192, 48, {32768, 1048576}));
  EXPECT_GT(packedKBlock(avx512, 8192, 24, {32768, 1048576}),
            packedKBlock(avx512, 8192, 48, {32768, 1048576}));
  // The kernels read the sizes from their attributes: blocks of 15 at a 1
  // KiB L1 and no L2, one block without a cache, the defaults for a
  // malformed size; the same result every way.
  uint64_t seed = 500;
  for (const char* l1d : {"1024", "0", "not-a-size"}) {
    SCOPED_TRACE(std::string("L1 ") + l1d);
    testing::KernelAttributes cache = {{kL1DataCacheAttribute, l1d}, {kL2CacheAttribute, "0"}};
    expectConstantBMatchesReference("MatMul", {f32({13, 100}), f32({100, 37})}, {}, seed++, cache);
    expectConstantBMatchesReference("Gemm", {f32({13, 100}), f32({100, 37}), f32({13, 37})},
                                    gemmAttrs(0.5, -1.5, 0, 0), seed++, cache);
  }
}

TEST(PackedProductLowering, TwoThreadsGetHalvesOfTheRows) {
  // nanort runs the first ceil(tasks / 2) tasks on one thread, the rest on
  // the other: each gets M / 2 rows give or take a quantum. A small product
  // stays one task.
  for (int64_t M : {97, 300, 1000, 1024, 2000, 4096})
    for (int64_t K : {64, 1024}) {
      SCOPED_TRACE("M=" + std::to_string(M) + " K=" + std::to_string(K));
      const int64_t rows = balancedPackedRowsPerTask(M, K, 1024);
      EXPECT_EQ(rows % kPackedRowQuantum == 0 || rows == M, true) << rows;
      const int64_t tasks = (M + rows - 1) / rows;
      const int64_t first = std::min(M, (tasks + 1) / 2 * rows);
      if (rows == M) {
        // Kept whole: the columns split in two instead.
        const int64_t cols = balancedPackedColumnsPerTask(M, K, 1024, rows);
        ASSERT_GT(cols, 0);
        EXPECT_LE(std::max(cols, 1024 - cols), 512 + kPackedColumnUnit) << cols;
        continue;
      }
      EXPECT_LE(std::max(first, M - first), M / 2 + kPackedRowQuantum) << rows;
    }
  EXPECT_EQ(balancedPackedRowsPerTask(50, 9, 70), 50);
}

TEST(PackedProductLowering, FewRowsSplitWhicheverWayIsEvener) {
  // vit_small's MLP: 65 rows as 48 + 17 would leave one thread 74% of the
  // work; 768 columns as 384 + 384 split it evenly.
  EXPECT_EQ(balancedPackedRowsPerTask(65, 192, 768), 65);
  EXPECT_EQ(balancedPackedColumnsPerTask(65, 192, 768, 65), 384);
  // 96 rows split 48 + 48 at least as evenly as 200 columns (192 + 8).
  EXPECT_EQ(balancedPackedRowsPerTask(96, 256, 200), 48);
  // GPT-2's fc_out: 24-row tasks (its A's rows in 256 KiB) would give 72 +
  // 56 rows; its 768 columns split 384 + 384 instead, A's 1.5 MiB one block.
  EXPECT_EQ(balancedPackedRowsPerTask(128, 3072, 768), 128);
  EXPECT_EQ(balancedPackedColumnsPerTask(128, 3072, 768, 128), 384);
  // An A past 2 MiB stays in row blocks.
  EXPECT_LT(balancedPackedRowsPerTask(192, 3072, 768), 192);
}

TEST(PackedProductLowering, FewRowsSplitTheirColumnsInTwo) {
  // 16 rows are one task's; its columns go in two tasks of whole 96-column
  // units instead, so two threads share it.
  EXPECT_EQ(balancedPackedRowsPerTask(16, 768, 3072), 16);
  EXPECT_EQ(balancedPackedColumnsPerTask(16, 768, 3072, 16), 1536);
  EXPECT_EQ(balancedPackedColumnsPerTask(16, 768, 300, 16), 192);    // 192 + 108
  EXPECT_EQ(balancedPackedColumnsPerTask(16, 768, 150, 16), 96);     // 96 + 54
  EXPECT_EQ(balancedPackedColumnsPerTask(16, 768, 90, 16), 0);       // one unit
  EXPECT_EQ(balancedPackedColumnsPerTask(4, 9, 300, 4), 0);          // too little work
  EXPECT_EQ(balancedPackedColumnsPerTask(1024, 1024, 1024, 48), 0);  // rows split already
  uint64_t seed = 600;
  expectConstantBMatchesReference("MatMul", {f32({16, 200}), f32({200, 300})}, {}, seed++);
  expectConstantBMatchesReference("MatMul", {f32({2, 5, 200}), f32({200, 290})}, {}, seed++);
  expectConstantBMatchesReference("Gemm", {f32({200, 13}), f32({300, 200}), f32({300})},
                                  gemmAttrs(0.5, 2.0, 1, 1), seed++);
}

TEST(PackedProductLowering, TileFollowsTheTargetFeatures) {
  auto shape = [](const testing::KernelAttributes& attributes) {
    RegisterTile t = tileOf(attributes);
    return std::vector<int64_t>{t.rows, t.columns()};
  };
  EXPECT_EQ(shape({}), (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(shape({{"target-features", "+avx,+avx2,+fma,-avx512f"}}),
            (std::vector<int64_t>{6, 16}));
  EXPECT_EQ(shape({{"target-features", "+avx2,+avx512f"}}), (std::vector<int64_t>{12, 32}));
  EXPECT_EQ(shape({{"target-features", "+avx512f"}, {"prefer-vector-width", "256"}}),
            (std::vector<int64_t>{8, 24}));
  EXPECT_EQ(shape({{"target-features", "+fp-armv8,+neon"}}), (std::vector<int64_t>{8, 12}));
  EXPECT_EQ(shape({{"target-features", "+d,+f,+v"}}), (std::vector<int64_t>{8, 12}));
  for (int64_t rows : {4, 6, 8, 12}) EXPECT_EQ(kPackedRowQuantum % rows, 0);
}

// ---------------------------------------------------------------- Conv

Attrs convAttrs(int64_t group, std::vector<int64_t> kernel,
                std::vector<int64_t> pads = {0, 0, 0, 0}, std::vector<int64_t> strides = {1, 1},
                std::vector<int64_t> dilations = {1, 1}) {
  return {{"group", group},
          {"kernel_shape", kernel},
          {"pads", pads},
          {"strides", strides},
          {"dilations", dilations}};
}

TEST(ConvLowering, DenseWithBiasMatchesReference) {
  expectLoweringMatchesReference("Conv", {f32({2, 3, 9, 11}), f32({4, 3, 3, 3}), f32({4})},
                                 convAttrs(1, {3, 3}, {1, 1, 1, 1}), 100);
  expectLoweringMatchesReference("Conv", {f32({1, 5, 8, 8}), f32({7, 5, 1, 1}), f32({7})},
                                 convAttrs(1, {1, 1}), 101);
  expectLoweringMatchesReference("Conv", {f32({1, 2, 12, 10}), f32({3, 2, 5, 3}), f32({3})},
                                 convAttrs(1, {5, 3}), 102);
}

TEST(ConvLowering, WithoutBias) {
  expectLoweringMatchesReference("Conv", {f32({2, 3, 7, 7}), f32({5, 3, 3, 3})},
                                 convAttrs(1, {3, 3}, {1, 1, 1, 1}), 110);
}

TEST(ConvLowering, GroupedAndDepthwise) {
  expectLoweringMatchesReference("Conv", {f32({1, 6, 10, 10}), f32({6, 1, 3, 3}), f32({6})},
                                 convAttrs(6, {3, 3}, {1, 1, 1, 1}), 120);
  expectLoweringMatchesReference("Conv", {f32({2, 4, 9, 9}), f32({8, 1, 3, 3})},
                                 convAttrs(4, {3, 3}, {1, 1, 1, 1}, {2, 2}), 121);
  expectLoweringMatchesReference("Conv", {f32({1, 6, 8, 7}), f32({4, 3, 3, 2}), f32({4})},
                                 convAttrs(2, {3, 2}), 122);
}

TEST(ConvLowering, AsymmetricPadsStridesAndDilations) {
  // pads are (top, left, bottom, right).
  expectLoweringMatchesReference("Conv", {f32({1, 3, 11, 13}), f32({2, 3, 3, 3}), f32({2})},
                                 convAttrs(1, {3, 3}, {0, 1, 2, 3}), 130);
  expectLoweringMatchesReference("Conv", {f32({1, 3, 11, 13}), f32({2, 3, 3, 3})},
                                 convAttrs(1, {3, 3}, {1, 1, 1, 1}, {2, 2}), 131);
  expectLoweringMatchesReference("Conv", {f32({1, 3, 12, 12}), f32({2, 3, 3, 3}), f32({2})},
                                 convAttrs(1, {3, 3}, {2, 2, 2, 2}, {1, 1}, {2, 2}), 132);
  expectLoweringMatchesReference("Conv", {f32({2, 2, 13, 9}), f32({3, 2, 3, 2}), f32({3})},
                                 convAttrs(1, {3, 2}, {3, 0, 1, 2}, {3, 2}, {2, 3}), 133);
  // Pads wider than the kernel: whole output rows and columns see only padding.
  expectLoweringMatchesReference("Conv", {f32({1, 1, 4, 4}), f32({1, 1, 2, 2}), f32({1})},
                                 convAttrs(1, {2, 2}, {3, 3, 3, 3}), 134);
}

TEST(ConvLowering, HandComputedPaddedSum) {
  // A 2x2 all-ones kernel over 1..9 with one zero-pad on the top and left.
  std::vector<int64_t> dims;
  std::vector<float> y =
      runLowering("Conv", {f32({1, 1, 3, 3}), f32({1, 1, 2, 2})}, {iota(9), {1, 1, 1, 1}},
                  convAttrs(1, {2, 2}, {1, 1, 0, 0}), &dims);
  EXPECT_EQ(dims, (std::vector<int64_t>{1, 1, 3, 3}));
  EXPECT_EQ(y, (std::vector<float>{1, 3, 5, 5, 12, 16, 11, 24, 28}));
}

// ---------------------------------------------------------------- pools

Attrs poolAttrs(std::vector<int64_t> kernel, std::vector<int64_t> pads,
                std::vector<int64_t> strides, int64_t ceil_mode,
                std::vector<int64_t> dilations = {1, 1}) {
  return {{"kernel_shape", kernel},
          {"pads", pads},
          {"strides", strides},
          {"dilations", dilations},
          {"ceil_mode", ceil_mode}};
}

Attrs averageAttrs(std::vector<int64_t> kernel, std::vector<int64_t> pads,
                   std::vector<int64_t> strides, int64_t ceil_mode, int64_t count_include_pad,
                   std::vector<int64_t> dilations = {1, 1}) {
  Attrs a = poolAttrs(std::move(kernel), std::move(pads), std::move(strides), ceil_mode,
                      std::move(dilations));
  a["count_include_pad"] = count_include_pad;
  return a;
}

TEST(MaxPoolLowering, MatchesReference) {
  expectLoweringMatchesReference("MaxPool", {f32({2, 3, 8, 8})},
                                 poolAttrs({2, 2}, {0, 0, 0, 0}, {2, 2}, 0), 200);
  expectLoweringMatchesReference("MaxPool", {f32({1, 4, 9, 11})},
                                 poolAttrs({3, 3}, {1, 1, 1, 1}, {1, 1}, 0), 201);
  expectLoweringMatchesReference("MaxPool", {f32({1, 2, 10, 9})},
                                 poolAttrs({3, 2}, {1, 0, 0, 1}, {2, 3}, 1), 202);
  expectLoweringMatchesReference("MaxPool", {f32({1, 2, 11, 11})},
                                 poolAttrs({3, 3}, {2, 2, 2, 2}, {2, 2}, 1, {2, 2}), 203);
  expectLoweringMatchesReference("MaxPool", {f32({1, 1, 7, 6})},
                                 poolAttrs({2, 2}, {0, 0, 0, 0}, {2, 2}, 1), 204);
}

TEST(MaxPoolLowering, PaddingNeverWins) {
  // Every input is negative; a zero from the padding must never be the max.
  std::vector<int64_t> dims;
  std::vector<float> y = runLowering("MaxPool", {f32({1, 1, 3, 3})}, {iota(9, -1.0f, -1.0f)},
                                     poolAttrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 0), &dims);
  EXPECT_EQ(dims, (std::vector<int64_t>{1, 1, 4, 4}));
  EXPECT_EQ(y,
            (std::vector<float>{-1, -1, -2, -3, -1, -1, -2, -3, -4, -4, -5, -6, -7, -7, -8, -9}));
}

TEST(MaxPoolLowering, CeilModeKeepsThePartialLastWindow) {
  // 5 wide, kernel 2, stride 2: floor gives 2 windows, ceil a third over column 4 alone.
  std::vector<int64_t> dims;
  std::vector<float> y = runLowering("MaxPool", {f32({1, 1, 1, 5})}, {{5, 1, 4, 2, 3}},
                                     poolAttrs({1, 2}, {0, 0, 0, 0}, {1, 2}, 1), &dims);
  EXPECT_EQ(dims, (std::vector<int64_t>{1, 1, 1, 3}));
  EXPECT_EQ(y, (std::vector<float>{5, 4, 3}));
}

TEST(AveragePoolLowering, MatchesReferenceBothCountModes) {
  for (int64_t include_pad : {0, 1}) {
    SCOPED_TRACE("count_include_pad=" + std::to_string(include_pad));
    expectLoweringMatchesReference("AveragePool", {f32({2, 3, 8, 8})},
                                   averageAttrs({2, 2}, {0, 0, 0, 0}, {2, 2}, 0, include_pad), 300);
    expectLoweringMatchesReference("AveragePool", {f32({1, 4, 9, 11})},
                                   averageAttrs({3, 3}, {1, 1, 1, 1}, {1, 1}, 0, include_pad), 301);
    expectLoweringMatchesReference("AveragePool", {f32({1, 2, 10, 9})},
                                   averageAttrs({3, 2}, {1, 0, 0, 1}, {2, 3}, 1, include_pad), 302);
    expectLoweringMatchesReference("AveragePool", {f32({1, 2, 7, 8})},
                                   averageAttrs({3, 3}, {1, 1, 1, 1}, {2, 2}, 1, include_pad), 303);
    expectLoweringMatchesReference(
        "AveragePool", {f32({1, 2, 11, 11})},
        averageAttrs({3, 3}, {2, 2, 2, 2}, {2, 2}, 1, include_pad, {2, 2}), 304);
  }
}

TEST(AveragePoolLowering, CountIncludePadDividesByTheWholeWindow) {
  // 1..9, kernel 3, stride 2, one pad on every side: windows start at -1 and 1.
  Attrs attrs = averageAttrs({3, 3}, {1, 1, 1, 1}, {2, 2}, 0, 1);
  EXPECT_EQ(runLowering("AveragePool", {f32({1, 1, 3, 3})}, {iota(9)}, attrs),
            (std::vector<float>{12.0f / 9, 16.0f / 9, 24.0f / 9, 28.0f / 9}));
  attrs["count_include_pad"] = int64_t{0};
  EXPECT_EQ(runLowering("AveragePool", {f32({1, 1, 3, 3})}, {iota(9)}, attrs),
            (std::vector<float>{12.0f / 4, 16.0f / 4, 24.0f / 4, 28.0f / 4}));
}

TEST(AveragePoolLowering, CeilModeWindowPastTheEndPadDoesNotCountIt) {
  // Width 4, kernel 3, stride 2, pads 1/1, ceil_mode: windows start at -1, 1, 3.
  // The last covers column 3, the end pad (4) and column 5, which lies past the
  // padded input: with count_include_pad it divides by 2, without by 1.
  std::vector<float> x = {1, 2, 3, 4};
  std::vector<int64_t> dims;
  Attrs attrs = averageAttrs({1, 3}, {0, 1, 0, 1}, {1, 2}, 1, 1);
  EXPECT_EQ(runLowering("AveragePool", {f32({1, 1, 1, 4})}, {x}, attrs, &dims),
            (std::vector<float>{3.0f / 3, 9.0f / 3, 4.0f / 2}));
  EXPECT_EQ(dims, (std::vector<int64_t>{1, 1, 1, 3}));
  attrs["count_include_pad"] = int64_t{0};
  EXPECT_EQ(runLowering("AveragePool", {f32({1, 1, 1, 4})}, {x}, attrs),
            (std::vector<float>{3.0f / 2, 9.0f / 3, 4.0f / 1}));
}

TEST(AveragePoolLowering, CeilModeDropsAWindowStartingInTheEndPad) {
  // Width 3, kernel 2, stride 2, end pad 1: ceil((3 + 1 - 2) / 2) + 1 = 2 windows,
  // the second starting at 2, inside the input: kept, over column 2 and the pad.
  std::vector<int64_t> dims;
  Attrs attrs = averageAttrs({1, 2}, {0, 0, 0, 1}, {1, 2}, 1, 1);
  EXPECT_EQ(runLowering("AveragePool", {f32({1, 1, 1, 3})}, {{1, 2, 3}}, attrs, &dims),
            (std::vector<float>{1.5f, 1.5f}));
  EXPECT_EQ(dims, (std::vector<int64_t>{1, 1, 1, 2}));
  // Width 2, same window: ceil((2 + 1 - 2) / 2) + 1 = 2, but the second would
  // start at 2 = n + p_begin, in the end pad: dropped.
  EXPECT_EQ(runLowering("AveragePool", {f32({1, 1, 1, 2})}, {{1, 2}}, attrs, &dims),
            (std::vector<float>{1.5f}));
  EXPECT_EQ(dims, (std::vector<int64_t>{1, 1, 1, 1}));
}

TEST(AveragePoolLowering, WindowWithNoInputTapsGivesZero) {
  // Dilation 3 over width 2 with one pad each side: the one window's taps sit
  // at -1 and 2, both outside the input.
  expectLoweringMatchesReference("AveragePool", {f32({1, 2, 1, 2})},
                                 averageAttrs({1, 2}, {0, 1, 0, 1}, {1, 1}, 0, 0, {1, 3}), 310);
  EXPECT_EQ(runLowering("AveragePool", {f32({1, 1, 1, 2})}, {{5, 6}},
                        averageAttrs({1, 2}, {0, 1, 0, 1}, {1, 1}, 0, 0, {1, 3})),
            (std::vector<float>{0}));
  expectLoweringMatchesReference("MaxPool", {f32({1, 2, 1, 2})},
                                 poolAttrs({1, 2}, {0, 1, 0, 1}, {1, 1}, 0, {1, 3}), 311);
}

}  // namespace
}  // namespace nanoc::cpu
