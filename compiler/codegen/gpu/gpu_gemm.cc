// MatMul (numpy semantics: 1-D operands promoted, batch dims broadcast),
// Gemm (transA, transB, alpha, beta, C broadcast to [M, N]), Conv (NCHW,
// any spatial rank, groups; an implicit GEMM per group: W's rows times the
// input gathered im2col-style while staging, never materialized) and
// nanoc.ConvNHWC (channels-last, ops/channels_last.h: an implicit GEMM per
// group with M = images x output pixels, N = output channels, K = taps x
// input channels, channel-inner, so that A's gather along k reads one input
// pixel's contiguous channels; B the weights laid out [K, M] at compile
// time, read as MatMul's B) in exact f32 on the GPU: a shared-memory tiled
// SIMT GEMM, with the fused bias (MatMul's and Conv's input 2) and epilogue
// (ops/epilogue.h: act(y + residual)) in its store. A ConvNHWC whose groups
// have fewer than kMinGemmGroupWidth output channels (depthwise) runs
// gpu_conv_direct.cc's kernel instead.
//
// Split along K (split_k_chunk, ops/split_k.h, passes/gpu_split_k.h;
// ConvNHWC, MatMul and Gemm, not the NCHW Conv plan): the grid's z takes the
// slices too (z = batch + batches * slice), each block sums its slice's K
// steps and stores the raw sums to its slice of the partial result;
// nanoc.SplitKSum (below: a thread per element) adds the slices in order,
// then the bias and the epilogue.
//
// Launch: 256 threads (16 x 16) per tile of Y, grid (ceil(N / tn),
// ceil(M / tm), batches) (ConvNHWC: (ceil(M / tm), ceil(N / tn), groups), its
// M being the large side), the tile (tileFor) 128 x 128 (K steps of 8, each
// thread 8 x 8 outputs), 64 x 64 (K steps of 16, 4 x 4 per thread) or 32 x 32
// (K steps of 32, 2 x 2 per thread), whichever is the largest that gives
// every SM a block. Per K step the block stages A's tm x bk and B's bk x tn
// slices into shared memory (each thread tm * bk / 256 elements of each,
// bounds-checked, zeros outside), all threads meet at a barrier, each thread
// accumulates its register tile (rows ty * rm + i, columns tx * rn + j, read
// as float4s, float2s on 32 x 32) with fma, and all meet again before the
// next step overwrites the slices.
// Barriers are never inside a branch: every thread runs every K step. The
// next step's slices are read from global memory into registers before the
// current step's multiply-adds (their latency hidden behind them) and
// stored after the barrier that ends the step. The store is bounds-checked,
// so any M, N, K (K = 0 gives zeros plus C). ptxas gives the 128 x 128
// kernel about 150 registers: one block per SM, eight warps of 64
// independent accumulators each.
//
// With the node attribute gpu_precision (nanoc --gpu-precision tf32 | bf16 |
// f16, set by placeOnGpu) the same staging, barriers and store run the K
// step on tensor cores instead: values rounded to the mode's format as they
// are stored into shared memory (cvt.rna.tf32.f32, or fptrunc to bf16/f16,
// kept as f32), K steps of 16, each warp (2 x 4 of them) a (tm/2) x (tn/4)
// part of the tile as 16 x 8 pieces, one mma.sync (m16n8k8 tf32, m16n8k16
// bf16/f16, or sm_75's m16n8k8 f16) per piece and 8 or 16 of K, f32
// accumulators in PTX's C/D fragment layout. README.md has the layouts.
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>

#include "compiler/codegen/cpu/epilogue.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/gpu/gpu_ir.h"
#include "compiler/ir/error.h"
#include "compiler/ops/broadcast.h"
#include "compiler/ops/channels_last.h"
#include "compiler/ops/conv.h"
#include "compiler/ops/data_movement.h"
#include "compiler/ops/epilogue.h"
#include "compiler/ops/gemm.h"
#include "compiler/ops/operand_view.h"
#include "compiler/ops/schema_checks.h"
#include "compiler/ops/split_k.h"
#include "compiler/passes/gpu_placement.h"

namespace nanoc::gpu {
namespace {

constexpr int64_t kThreads = 256;  // 16 x 16
constexpr int64_t kMaxGridYZ = 65535;

// The block's tile of Y (tm x tn), its K step (bk), and each thread's
// register tile (rm x rn = tm / 16 x tn / 16): rows ty * rm + i, columns
// tx * rn + j, read from shared memory as float4s. The staged slices are
// [bk][tm] and [bk][tn] with rows `pitch` floats apart (a multiple of 4, for
// aligned float4 reads, plus 4 so that the staging stores spread over banks).
struct Tile {
  int64_t tm, tn, bk;
  int64_t rm() const { return tm / 16; }
  int64_t rn() const { return tn / 16; }
  int64_t pitchA() const { return tm + 4; }
  int64_t pitchB() const { return tn + 4; }
};
constexpr Tile kSmallTile{64, 64, 16}, kLargeTile{128, 128, 8};
// For products whose 64 x 64 tiles cannot give every SM a block (a short
// sequence's projections and attention, batch-1 MLPs): 32 x 32 tiles, each
// thread 2 x 2 (read as float2s), K steps of 32 (16 where a split's slices
// are not whole steps of 32), so four times the blocks, each with half the
// K steps.
constexpr Tile kNarrowTile{32, 32, 32}, kNarrowTile16{32, 32, 16};
// The node attribute that pins a product's SIMT tile to tm x tm (32, 64 or
// 128) instead of tileFor's choice: for measuring the tiles against each
// other (nanoc_gpu_bundle's perf cases); no pass sets it.
constexpr const char* kGpuTileAttribute = "gpu_tile";
// A GPU the tile choice plans for: an H100's 132 SMs.
constexpr int64_t kPlannedSms = 132;

// Split-K (chooseSplitK): products of fewer tiles than this are split, into
// slices of whole steps of 16 (every tile's K step divides it), each at
// least kSplitKMinSteps of them, until there are about this many blocks:
// two per SM of an H100 (132 SMs). Measured there on resnet18's 3 x 3
// layers (docs/GPU.md): slices of 128-144 were the fastest of 64 to 576.
constexpr int64_t kSplitKTargetBlocks = 264, kSplitKStep = 16, kSplitKMinSteps = 8;

// Tensor-core modes (the node attribute kGpuPrecisionAttribute, set by
// placeOnGpu from nanoc --gpu-precision): one warp-wide mma.sync per
// 16 x 8 x mmaK() piece of the product, f32 accumulate. Their tiles take K
// steps of 16 (a multiple of every mmaK); 8 warps as 2 (M) x 4 (N), each
// warp (tm / 2) x (tn / 4) of Y as 16 x 8 pieces.
enum class Mma { None, Tf32, Bf16, F16, F16K8 };
constexpr Tile kMmaSmallTile{64, 64, 16}, kMmaLargeTile{128, 128, 16};
// 32 x 32: each warp one 16 x 8 piece.
constexpr Tile kMmaNarrowTile{32, 32, 16};
int64_t mmaK(Mma m) { return m == Mma::Tf32 || m == Mma::F16K8 ? 8 : 16; }

Mma mmaOf(const Node& node) {
  auto it = node.attrs.find(kGpuPrecisionAttribute);
  if (it == node.attrs.end() || !std::holds_alternative<std::string>(it->second)) return Mma::None;
  const std::string& v = std::get<std::string>(it->second);
  if (v == "tf32") return Mma::Tf32;
  if (v == "bf16") return Mma::Bf16;
  if (v == "f16")
    return node.has(kGpuMmaShapeAttribute) && node.s(kGpuMmaShapeAttribute) == "m16n8k8"
               ? Mma::F16K8
               : Mma::F16;
  if (v == "exact") return Mma::None;
  throw CompileError("node '" + node.name + "': unknown gpu_precision '" + v + "'");
}

// One product Y[z] (M x N) = op(A[z]) (M x K) * op(B[z]) (K x N) per batch z,
// with A's element (m, k) at a_base(z) + m * a_sm + k * a_sk and B's (k, n)
// at b_base(z) + k * b_sk + n * b_sn; Y dense row-major, batches apart.
struct GemmPlan {
  int64_t M = 0, N = 0, K = 0;
  int64_t a_sm = 0, a_sk = 0, b_sk = 0, b_sn = 0;
  std::vector<int64_t> batch_dims, a_batch_strides, b_batch_strides;
  int64_t batches = 1;
  double alpha = 1.0, beta = 0.0;
  int c_input = -1;  // Gemm's C
  int64_t c_sm = 0, c_sn = 0;
  int bias_input = -1;  // MatMul's fused bias, bias[n]
  EpilogueSpec epilogue;
  int residual_input = -1;
  // Conv as an implicit GEMM per group g (the batch index z): A is W's rows
  // of the group ([M / G, C / G * taps]), B the gathered input (k = (ci, tap),
  // n = (image, output position)), Y [N, M, out...]; bias[g * M/G + m].
  // channels_last (ConvNHWC): A the gathered input (m = (image, output
  // position), k = (tap, ci)), B W's columns of the group (b_base), Y
  // [N, out..., M]; bias[g * M/G + n]; blocks take M along x.
  std::optional<ConvShape> conv;
  bool channels_last = false;
  // Split along K (ops/split_k.h; not the NCHW Conv plan): block z of the
  // grid is batch z % batches of slice z / batches, which sums k in
  // [slice * k_chunk, (slice + 1) * k_chunk) and stores its raw sums to
  // Y[slice] (Y being [slices, Y's dims...]); no bias, C or epilogue.
  int64_t k_chunk = 0, slices = 1;
  // MatMul operands read through views (ops/operand_view.h): the first
  // element of A's and B's batch 0, in their inputs.
  int64_t a_offset = 0, b_offset = 0;
};

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

GemmPlan matmulPlan(const Node& node) {
  if (node.outputs.size() != 1 || !node.inputs[0] || !node.inputs[1])
    throw CompileError("node '" + node.name + "' (MatMul): malformed");
  requireF32(node);
  const std::optional<OperandView> va = operandView(node, 0), vb = operandView(node, 1);
  std::vector<int64_t> a = va ? va->shape : node.inputs[0]->type.dims;
  std::vector<int64_t> bd = vb ? vb->shape : node.inputs[1]->type.dims;
  if (a.empty() || bd.empty())
    throw CompileError("node '" + node.name + "' (MatMul): operands must have rank >= 1");
  // Each operand's element strides: its view's, or dense row-major.
  std::vector<int64_t> as = va ? va->strides : stridesOf(a), bs = vb ? vb->strides : stridesOf(bd);
  if (a.size() == 1) a.insert(a.begin(), 1), as.insert(as.begin(), 0);
  if (bd.size() == 1) bd.push_back(1), bs.push_back(0);
  GemmPlan p;
  p.M = a[a.size() - 2];
  p.K = a.back();
  p.N = bd.back();
  if (bd[bd.size() - 2] != p.K)
    throw CompileError("node '" + node.name + "' (MatMul): inner dimensions differ");
  p.a_sm = as[as.size() - 2];
  p.a_sk = as.back();
  p.b_sk = bs[bs.size() - 2];
  p.b_sn = bs.back();
  p.a_offset = va ? va->offset : 0;
  p.b_offset = vb ? vb->offset : 0;
  std::vector<int64_t> a_batch(a.begin(), a.end() - 2), b_batch(bd.begin(), bd.end() - 2);
  if (b_batch.empty() && !va && !vb) {
    // A's batches are one [batches * M, K] matrix, Y's one [batches * M, N].
    for (int64_t d : a_batch) p.M *= d;
  } else {
    // Each batch dim's element stride in A and B, 0 where one broadcasts.
    p.batch_dims = broadcastShapes(a_batch, b_batch);
    auto batchStrides = [&](const std::vector<int64_t>& dims, const std::vector<int64_t>& st) {
      std::vector<int64_t> out(p.batch_dims.size(), 0);
      const size_t lead = p.batch_dims.size() - dims.size();
      for (size_t d = 0; d < dims.size(); ++d)
        if (dims[d] != 1) out[lead + d] = st[d];
      return out;
    };
    p.a_batch_strides = batchStrides(a_batch, as);
    p.b_batch_strides = batchStrides(b_batch, bs);
    for (int64_t d : p.batch_dims) p.batches *= d;
  }
  if (node.outputs[0]->type.numel() != kSlicesOf(node, p.K).count * p.batches * p.M * p.N)
    throw CompileError("node '" + node.name + "' (MatMul): output type does not match");
  if (node.inputs.size() > 2 && node.inputs[2]) {
    if (node.inputs[2]->type.numel() != p.N)
      throw CompileError("node '" + node.name + "' (MatMul): bias is not [N]");
    p.bias_input = 2;
  }
  return p;
}

GemmPlan gemmPlan(const Node& node) {
  GemmShape s = gemmShape(node);
  requireF32(node);
  GemmPlan p;
  p.M = s.m;
  p.N = s.n;
  p.K = s.k;
  // A is [m, k], or [k, m] with transA; B [k, n], or [n, k] with transB.
  p.a_sm = s.trans_a ? 1 : s.k;
  p.a_sk = s.trans_a ? s.m : 1;
  p.b_sk = s.trans_b ? 1 : s.n;
  p.b_sn = s.trans_b ? s.k : 1;
  p.alpha = node.f("alpha");
  p.beta = node.f("beta");
  if (node.inputs.size() > 2 && node.inputs[2]) {
    p.c_input = 2;
    std::vector<int64_t> sc = broadcastStrides(node.inputs[2]->type.dims, {s.m, s.n});
    p.c_sm = sc[0];
    p.c_sn = sc[1];
  }
  return p;
}

GemmPlan convPlan(const Node& node) {
  ConvShape s = convShape(node);
  requireF32(node);
  GemmPlan p;
  const int64_t taps = product(s.kernel, 0, s.rank());
  p.M = s.mPerGroup();
  p.K = s.cPerGroup() * taps;
  p.N = s.n * product(s.out, 0, s.rank());
  p.a_sm = p.K;
  p.a_sk = 1;
  p.b_sk = 0;  // gathered
  p.b_sn = 1;  // consecutive threads take consecutive output positions
  p.batch_dims = {s.group};
  p.a_batch_strides = {p.M * p.K};
  p.b_batch_strides = {0};
  p.batches = s.group;
  if (s.has_bias) p.bias_input = 2;
  p.conv = s;
  return p;
}

GemmPlan convNhwcPlan(const Node& node) {
  ConvShape s = convShape(channelsFirstView(node)->node);
  requireF32(node);
  GemmPlan p;
  const int64_t taps = product(s.kernel, 0, s.rank());
  p.M = s.n * product(s.out, 0, s.rank());
  p.K = taps * s.cPerGroup();
  p.N = s.mPerGroup();
  p.a_sm = 0;  // gathered
  p.a_sk = 1;  // consecutive threads take consecutive channels of a pixel
  p.b_sk = s.m;
  p.b_sn = 1;
  p.batch_dims = {s.group};
  p.a_batch_strides = {0};
  p.b_batch_strides = {s.mPerGroup()};  // the group's columns of W
  p.batches = s.group;
  if (s.has_bias) p.bias_input = 2;
  p.conv = s;
  p.channels_last = true;
  return p;
}

GemmPlan planOf(const Node& node) {
  GemmPlan p = node.op == "Gemm"             ? gemmPlan(node)
               : node.op == "Conv"           ? convPlan(node)
               : node.op == "nanoc.ConvNHWC" ? convNhwcPlan(node)
                                             : matmulPlan(node);
  p.epilogue = epilogueSpec(node);
  if (p.epilogue.residual) p.residual_input = static_cast<int>(kResidualInput);
  p.k_chunk = splitKChunk(node);
  p.slices = kSlicesOf(node, p.K).count;
  return p;
}

// The blocks of one slice of K: tiles times batches.
int64_t tilesOf(const GemmPlan& p, const Tile& t) {
  return ceilDiv(p.M, t.tm) * ceilDiv(p.N, t.tn) * p.batches;
}

// The slices of K chooseSplitK gives a product on tile t (1: not split):
// until about kSplitKTargetBlocks blocks (half that of 128 x 128, whose
// ~150 registers a thread fill an SM), each at least kSplitKMinSteps K
// steps of 16. Depends on M, N, K and the batches only, so it is the same
// before and after the split.
int64_t splitSlicesFor(const GemmPlan& p, const Tile& t) {
  const int64_t target = t.tm == 128 ? kSplitKTargetBlocks / 2 : kSplitKTargetBlocks;
  const int64_t blocks = tilesOf(p, t);
  if (blocks >= target) return 1;
  return std::max<int64_t>(1,
                           std::min(target / blocks, ceilDiv(p.K, kSplitKStep) / kSplitKMinSteps));
}

// Whether chooseSplitK may split the product (besides its tiles): a
// channels-last GEMM conv, MatMul or Gemm, not empty, alpha 1, Gemm's C a
// row [N] (or [1, N]) with beta 1 (the sum's bias).
bool splittable(const Node& node, const GemmPlan& p) {
  const bool conv = node.op == "nanoc.ConvNHWC" && !isDirectConv(node);
  if (!conv && node.op != "MatMul" && node.op != "Gemm") return false;
  if (p.M == 0 || p.N == 0 || p.K == 0 || p.alpha != 1.0) return false;
  if (p.c_input >= 0) {
    const TensorType& c = node.inputs[static_cast<size_t>(p.c_input)]->type;
    if (p.beta != 1.0 || c.rank() < 1 || c.dims.back() != p.N || c.numel() != p.N) return false;
  }
  return true;
}

// The SIMT tile: 128 x 128 where both sides fill it and there is a block
// for every SM (fewest shared-memory reads a multiply-add); else 64 x 64
// where its blocks, times the slices of K split-K would give them, have a
// block for every SM; else 32 x 32 (a quarter of the work a block, four
// times the blocks). Measured on an H100 (docs/GPU.md, ninth run), µs a
// launch: bert_tiny's products 20-28 on 128 x 128 (1-4 blocks), 6-9 on
// 64 x 64, 4-5 on 32 x 32; a GPT-2 block's, 64 x 64 split (13.9-32.1) ahead
// of 128 x 128 split (30.9-44.3) and of 32 x 32 (17.1-55.7); 1024^3, 64 x 64
// (77) ahead of 128 x 128 (146; 89 split) and 32 x 32 (140). Convs keep the
// 64 x 64 tile: with the patch gather's index arithmetic the large tile
// spilled 8-12 bytes on sm_90 (squeezenet1_1's and mobilenet_v2's Convs),
// and split-K gives their few-tile layers blocks (eighth run). The
// tensor-core modes choose among their tiles (kMma*Tile) the same way. The
// attribute gpu_tile pins the tile (the perf cases).
Tile tileFor(const Node& node, const GemmPlan& p) {
  const bool fits_large = p.M >= 128 && p.N >= 128 && !p.conv;
  const bool mma = mmaOf(node) != Mma::None;
  const Tile large = mma ? kMmaLargeTile : kLargeTile, small = mma ? kMmaSmallTile : kSmallTile;
  const Tile narrow = mma                               ? kMmaNarrowTile
                      : p.k_chunk % kNarrowTile.bk == 0 ? kNarrowTile
                                                        : kNarrowTile16;
  switch (node.i(kGpuTileAttribute, 0)) {
    case 0:
      break;
    case 128:
      return large;
    case 64:
      return small;
    case 32:
      return narrow;
    default:
      throw CompileError("node '" + node.name + "': " + kGpuTileAttribute +
                         " must be 32, 64 or 128");
  }
  if (p.conv) return small;
  if (fits_large && tilesOf(p, large) >= kPlannedSms) return large;
  // A split product was splittable; its slices are splitSlicesFor's.
  const int64_t slices = p.k_chunk > 0 || splittable(node, p) ? splitSlicesFor(p, small) : 1;
  if (tilesOf(p, small) * slices >= kPlannedSms) return small;
  return narrow;
}

// A product of one row (M = 1 a batch: a batch-1 Linear, a decoder's
// token) runs as a matrix-vector product instead of on a tile, whose other
// rows would idle: unless split or pinned to a tile (gpu_tile). Its blocks
// take kGemvOutputs outputs each: where B's k is contiguous (b_sk = 1, Gemm's
// transB), a warp an output, its lanes along K (coalesced reads of B's row),
// the lanes' sums added by butterfly shuffles; else (B [K, N] row-major, a
// MatMul's) a lane an output, the 8 warps interleaved along K (coalesced
// reads of B's rows), their sums added in shared memory in warp order.
// Each lane keeps kGemvChains independent sums. Exact f32 in every
// gpu_precision mode (tensor cores need 16 rows).
constexpr int64_t kGemvChains = 4;  // a power of two: summed pairwise
bool isGemv(const Node& node, const GemmPlan& p) {
  return p.M == 1 && !p.conv && p.k_chunk == 0 && node.i(kGpuTileAttribute, 0) == 0;
}
int64_t gemvOutputs(const GemmPlan& p) { return p.b_sk == 1 ? kThreads / kWarpSize : kWarpSize; }

bool supportsGemm(const Node& node) {
  GemmPlan p = planOf(node);
  if (p.epilogue.residual && (node.inputs.size() <= kResidualInput || !node.inputs[kResidualInput]))
    return false;
  Tile t = tileFor(node, p);
  // A slice is whole K steps: no step reads across two.
  if (p.k_chunk > 0 && (p.k_chunk % t.bk != 0 || p.bias_input >= 0 || p.c_input >= 0 ||
                        p.alpha != 1.0 || !p.epilogue.empty() || (p.conv && !p.channels_last)))
    return false;
  const int64_t rows = ceilDiv(p.M, t.tm), cols = ceilDiv(p.N, t.tn);
  const int64_t x = p.channels_last ? rows : cols, y = p.channels_last ? cols : rows;
  if (isGemv(node, p))
    return p.batches <= kMaxGridYZ &&
           ceilDiv(p.N, gemvOutputs(p)) <= std::numeric_limits<int32_t>::max();
  return y <= kMaxGridYZ && p.batches * p.slices <= kMaxGridYZ &&
         x <= std::numeric_limits<int32_t>::max();
}

GpuLaunch gemmLaunch(const Node& node) {
  GemmPlan p = planOf(node);
  Tile t = tileFor(node, p);
  GpuLaunch launch;
  launch.block[0] = kThreads;
  if (isGemv(node, p)) {
    launch.grid[0] = static_cast<uint32_t>(std::max<int64_t>(1, ceilDiv(p.N, gemvOutputs(p))));
    launch.grid[2] = static_cast<uint32_t>(std::max<int64_t>(1, p.batches));
    return launch;
  }
  launch.grid[0] = static_cast<uint32_t>(std::max<int64_t>(1, ceilDiv(p.N, t.tn)));
  launch.grid[1] = static_cast<uint32_t>(std::max<int64_t>(1, ceilDiv(p.M, t.tm)));
  if (p.channels_last) std::swap(launch.grid[0], launch.grid[1]);
  launch.grid[2] = static_cast<uint32_t>(std::max<int64_t>(1, p.batches * p.slices));
  return launch;
}

void emitGemm(GpuKernelBuilder& kb) {
  const GemmPlan p = planOf(kb.node);
  llvm::IRBuilder<>& b = kb.b;
  if (p.M == 0 || p.N == 0) return;  // Y is empty (and A or B may be)
  llvm::Type* f32 = b.getFloatTy();
  auto c64 = [&](int64_t v) { return b.getInt64(v); };
  auto c32 = [&](int64_t v) { return b.getInt32(static_cast<uint32_t>(v)); };
  // Conv: A is W (input 1), B gathers from X (input 0); ConvNHWC: A
  // gathers from X, B is W.
  const bool swapped = p.conv && !p.channels_last;
  llvm::Value* A = kb.input_ptrs[swapped ? 1 : 0];
  llvm::Value* B = kb.input_ptrs[swapped ? 0 : 1];
  llvm::Value* Y = kb.output_ptrs[0];

  const Mma mma = mmaOf(kb.node);
  const Tile t = tileFor(kb.node, p);
  const int64_t rm = t.rm(), rn = t.rn();
  const bool gemv = isGemv(kb.node, p);
  llvm::GlobalVariable* as =
      gemv ? nullptr : sharedF32Array(kb.module, kb.fn, "a_tile", t.bk * t.pitchA());
  llvm::GlobalVariable* bs =
      gemv ? nullptr : sharedF32Array(kb.module, kb.fn, "b_tile", t.bk * t.pitchB());
  auto sharedAt = [&](llvm::GlobalVariable* tile, llvm::Value* index) {
    return b.CreateInBoundsGEP(f32, tile, index);
  };
  // `width` (4, or 2 for the narrow tile) floats of a slice at a multiple
  // of width: one aligned 16- (8-) byte read.
  const int64_t width = std::min<int64_t>(4, std::min(t.rm(), t.rn()));
  llvm::Type* f32xw = llvm::FixedVectorType::get(f32, static_cast<unsigned>(width));
  auto readW = [&](llvm::GlobalVariable* tile, llvm::Value* index, llvm::Value** out) {
    llvm::Value* v = b.CreateAlignedLoad(f32xw, sharedAt(tile, index), llvm::Align(4 * width));
    for (int64_t e = 0; e < width; ++e) out[e] = b.CreateExtractElement(v, e);
  };

  llvm::Value* tid = threadIdX(b);
  llvm::Value* tx = b.CreateAnd(tid, c32(15), "tx");
  llvm::Value* ty = b.CreateLShr(tid, c32(4), "ty");
  llvm::Value* row_block = p.channels_last ? blockIdX(b) : blockIdY(b);
  llvm::Value* col_block = p.channels_last ? blockIdY(b) : blockIdX(b);
  llvm::Value* row0 =
      gemv ? c64(0) : b.CreateMul(b.CreateZExt(row_block, b.getInt64Ty()), c64(t.tm), "row0");
  llvm::Value* col0 = b.CreateMul(b.CreateZExt(col_block, b.getInt64Ty()),
                                  c64(gemv ? gemvOutputs(p) : t.tn), "col0");

  // This block's batch, and its slice of K (0 unless split).
  llvm::Value* z_batch = b.CreateZExt(blockIdZ(b), b.getInt64Ty(), "z");
  llvm::Value* slice = c64(0);
  if (p.slices > 1) {
    slice = b.CreateUDiv(z_batch, c64(p.batches), "slice");
    z_batch = b.CreateURem(z_batch, c64(p.batches), "batch");
  }
  llvm::Value* k_begin = b.CreateMul(slice, c64(p.k_chunk), "k_begin");
  // This batch's matrices.
  llvm::Value* a_base = c64(p.a_offset);
  llvm::Value* b_base = c64(p.b_offset);
  llvm::Value* y_base = c64(0);
  if (p.batches > 1) {
    llvm::Value* z = z_batch;
    y_base = b.CreateMul(z, c64(p.M * p.N));
    llvm::Value* rest = z;
    for (size_t d = p.batch_dims.size(); d-- > 0;) {
      llvm::Value* idx = b.CreateURem(rest, c64(p.batch_dims[d]));
      rest = b.CreateUDiv(rest, c64(p.batch_dims[d]));
      a_base = b.CreateAdd(a_base, b.CreateMul(idx, c64(p.a_batch_strides[d])));
      b_base = b.CreateAdd(b_base, b.CreateMul(idx, c64(p.b_batch_strides[d])));
    }
  }

  llvm::Value* group = p.conv ? z_batch : nullptr;

  // The store: Y = alpha * acc + beta * C (Gemm), acc + bias (MatMul), then
  // act(y + residual).
  llvm::Value* C = p.c_input >= 0 ? kb.input_ptrs[p.c_input] : nullptr;
  llvm::Value* bias = p.bias_input >= 0 ? kb.input_ptrs[p.bias_input] : nullptr;
  llvm::Value* residual = p.residual_input >= 0 ? kb.input_ptrs[p.residual_input] : nullptr;
  // Accumulator `value` is Y's element at tile row r_local, column c_local.
  auto storeOne = [&](llvm::Value* value, llvm::Value* r_local, llvm::Value* c_local) {
    llvm::Value* gm = b.CreateAdd(row0, b.CreateZExt(r_local, b.getInt64Ty()));
    llvm::Value* gn = b.CreateAdd(col0, b.CreateZExt(c_local, b.getInt64Ty()));
    llvm::Value* inside = b.CreateAnd(b.CreateICmpULT(gm, c64(p.M)), b.CreateICmpULT(gn, c64(p.N)));
    emitIf(
        b, inside,
        [&] {
          llvm::Value* v = value;
          if (p.alpha != 1.0) v = b.CreateFMul(llvm::ConstantFP::get(f32, p.alpha), v);
          if (C) {
            llvm::Value* c = cpu::loadF32(
                b, C, b.CreateAdd(b.CreateMul(gm, c64(p.c_sm)), b.CreateMul(gn, c64(p.c_sn))));
            v = b.CreateFAdd(v, b.CreateFMul(llvm::ConstantFP::get(f32, p.beta), c));
          }
          llvm::Value* at;
          if (p.slices > 1) {
            // Slice `slice` of the partial sums: the raw accumulator.
            if (p.channels_last) {
              llvm::Value* channel = b.CreateAdd(b.CreateMul(group, c64(p.N)), gn);
              at = b.CreateAdd(b.CreateMul(slice, c64(p.M * p.conv->m)),
                               b.CreateAdd(b.CreateMul(gm, c64(p.conv->m)), channel));
            } else {
              at = b.CreateAdd(b.CreateMul(slice, c64(p.batches * p.M * p.N)),
                               b.CreateAdd(y_base, b.CreateAdd(b.CreateMul(gm, c64(p.N)), gn)));
            }
            cpu::storeF32(b, value, Y, at);
            return;
          }
          if (p.channels_last) {
            // Y[image, position, g * M/G + n]; the bias per output channel.
            llvm::Value* channel = b.CreateAdd(b.CreateMul(group, c64(p.N)), gn);
            if (bias) v = b.CreateFAdd(v, cpu::loadF32(b, bias, channel));
            at = b.CreateAdd(b.CreateMul(gm, c64(p.conv->m)), channel);
          } else if (p.conv) {
            // Y[image, g * M/G + m, position]; the bias per output channel.
            const ConvShape& cs = *p.conv;
            const int64_t outs = product(cs.out, 0, cs.rank());
            llvm::Value* channel = b.CreateAdd(b.CreateMul(group, c64(p.M)), gm);
            if (bias) v = b.CreateFAdd(v, cpu::loadF32(b, bias, channel));
            llvm::Value* image = b.CreateUDiv(gn, c64(outs));
            at = b.CreateAdd(
                b.CreateMul(b.CreateAdd(b.CreateMul(image, c64(cs.m)), channel), c64(outs)),
                b.CreateURem(gn, c64(outs)));
          } else {
            if (bias) v = b.CreateFAdd(v, cpu::loadF32(b, bias, gn));
            at = b.CreateAdd(y_base, b.CreateAdd(b.CreateMul(gm, c64(p.N)), gn));
          }
          if (residual) v = b.CreateFAdd(v, cpu::loadF32(b, residual, at));
          v = cpu::emitActivation(b, p.epilogue, v);
          cpu::storeF32(b, v, Y, at);
        },
        "store");
  };

  if (gemv) {
    // Output col0 + o of this batch's row: o the warp (b_sk = 1) or the lane.
    llvm::Value* lane64 = b.CreateZExt(b.CreateAnd(tid, c32(kWarpSize - 1)), b.getInt64Ty());
    llvm::Value* warp64 = b.CreateZExt(b.CreateLShr(tid, c32(5)), b.getInt64Ty());
    const bool along_k = p.b_sk == 1;
    llvm::Value* o = along_k ? warp64 : lane64;
    // Threads sharing an output take k = first + stride * i.
    llvm::Value* first = along_k ? lane64 : warp64;
    const int64_t stride = along_k ? kWarpSize : kThreads / kWarpSize;
    llvm::Value* n = b.CreateAdd(col0, o, "n");
    // Past N: read column 0 (there: N >= 1), store nothing.
    llvm::Value* n_read = b.CreateSelect(b.CreateICmpULT(n, c64(p.N)), n, c64(0));
    llvm::Value* b_col = b.CreateAdd(b_base, b.CreateMul(n_read, c64(p.b_sn)));
    std::vector<llvm::Value*> sums(kGemvChains, llvm::ConstantFP::get(f32, 0.0));
    const int64_t round = stride * kGemvChains;
    sums = emitCarriedStridedLoop(
        b, c64(0), c64(ceilDiv(p.K, round)), c64(1), sums,
        [&](llvm::Value* r, const std::vector<llvm::Value*>& in) {
          std::vector<llvm::Value*> out = in;
          for (int64_t c = 0; c < kGemvChains; ++c) {
            llvm::Value* k =
                b.CreateAdd(b.CreateMul(r, c64(round)), b.CreateAdd(first, c64(c * stride)));
            llvm::Value* inside = b.CreateICmpULT(k, c64(p.K));
            llvm::Value* kr = b.CreateSelect(inside, k, c64(0));
            llvm::Value* av = cpu::loadF32(b, A, b.CreateAdd(a_base, b.CreateMul(kr, c64(p.a_sk))));
            llvm::Value* bv = cpu::loadF32(b, B, b.CreateAdd(b_col, b.CreateMul(kr, c64(p.b_sk))));
            llvm::Value* prod = b.CreateSelect(inside, bv, llvm::ConstantFP::get(f32, 0.0));
            out[c] = b.CreateIntrinsic(llvm::Intrinsic::fma, {f32}, {av, prod, in[c]});
          }
          return out;
        },
        "kgemv");
    // The lane's sums pairwise, in a fixed order: (0 + 1) + (2 + 3).
    for (size_t width = sums.size(); width > 1; width /= 2)
      for (size_t i = 0; i < width / 2; ++i) sums[i] = b.CreateFAdd(sums[2 * i], sums[2 * i + 1]);
    llvm::Value* sum = sums[0];
    if (along_k) {
      sum = warpSumF32(b, sum);
      emitIf(b, b.CreateICmpEQ(lane64, c64(0)),
             [&] { storeOne(sum, c32(0), b.CreateTrunc(o, b.getInt32Ty())); });
      return;
    }
    // The warps' sums of each output through shared memory, in warp order.
    llvm::GlobalVariable* partial = sharedF32Array(kb.module, kb.fn, "gemv_sums", kThreads);
    b.CreateStore(sum, b.CreateInBoundsGEP(f32, partial, tid));
    barrier(b);
    emitIf(b, b.CreateICmpULT(tid, c32(kWarpSize)), [&] {
      llvm::Value* total = llvm::ConstantFP::get(f32, 0.0);
      for (int64_t w = 0; w < kThreads / kWarpSize; ++w)
        total = b.CreateFAdd(
            total, b.CreateAlignedLoad(
                       f32, b.CreateInBoundsGEP(f32, partial, b.CreateAdd(tid, c32(w * kWarpSize))),
                       llvm::Align(4)));
      storeOne(total, c32(0), tid);
    });
    return;
  }

  // One element a thread stages per K step: its value (read from global
  // memory a step ahead) and where it goes in shared memory.
  struct Staged {
    llvm::Value* value;
    llvm::GlobalVariable* tile;
    llvm::Value* at;
  };
  // Element (r, k) of A's tm x bk slice (or (k, r) of B's bk x tn one), 0
  // outside the matrix, for tile[k_local * pitch + r_local].
  auto fetch = [&](llvm::Value* ptr, llvm::Value* base, llvm::Value* r, int64_t r_stride,
                   int64_t r_limit, llvm::Value* k, int64_t k_stride, llvm::Value* r0,
                   llvm::GlobalVariable* tile, int64_t pitch, llvm::Value* k_local,
                   llvm::Value* r_local) {
    llvm::Value* gr = b.CreateAdd(r0, r);
    llvm::Value* inside =
        b.CreateAnd(b.CreateICmpULT(gr, c64(r_limit)), b.CreateICmpULT(k, c64(p.K)));
    llvm::Value* offset = b.CreateAdd(
        base, b.CreateAdd(b.CreateMul(gr, c64(r_stride)), b.CreateMul(k, c64(k_stride))));
    // Outside the matrix: read element 0 of the batch (there whenever a K
    // step runs: M, N, K >= 1) and use 0 instead.
    offset = b.CreateSelect(inside, offset, base);
    llvm::Value* v = cpu::loadF32(b, ptr, offset);
    v = b.CreateSelect(inside, v, llvm::ConstantFP::get(f32, 0.0));
    return Staged{v, tile, b.CreateAdd(b.CreateMul(k_local, c32(pitch)), r_local)};
  };
  // Element e of a slice with `fast` elements along its contiguous side:
  // consecutive threads take consecutive addresses of the matrix.
  auto split = [&](llvm::Value* e, int64_t fast) {
    return std::make_pair(b.CreateURem(e, c32(fast)), b.CreateUDiv(e, c32(fast)));
  };

  // A gather's input element within its image's spatial plane, for output
  // position `pos` and tap `tap` (both linear, innermost dimension fastest):
  // per spatial dimension q = o * stride - pad + t * dilation, inside &= 0 <=
  // q < in; returns the sum of q * the input's stride there.
  auto gatherPixel = [&](const ConvShape& cs, llvm::Value* pos, llvm::Value* tap,
                         llvm::Value*& inside) {
    const std::vector<int64_t> in_stride = convStridesOf(cs.in);
    llvm::Value* pixel = c64(0);
    for (size_t d = cs.rank(); d-- > 0;) {
      llvm::Value* o = b.CreateURem(pos, c64(cs.out[d]));
      pos = b.CreateUDiv(pos, c64(cs.out[d]));
      llvm::Value* t_d = b.CreateURem(tap, c64(cs.kernel[d]));
      tap = b.CreateUDiv(tap, c64(cs.kernel[d]));
      llvm::Value* q = b.CreateAdd(b.CreateSub(b.CreateMul(o, c64(cs.strides[d])), c64(cs.pads[d])),
                                   b.CreateMul(t_d, c64(cs.dilations[d])));
      inside = b.CreateAnd(
          inside, b.CreateAnd(b.CreateICmpSGE(q, c64(0)), b.CreateICmpSLT(q, c64(cs.in[d]))));
      pixel = b.CreateAdd(pixel, b.CreateMul(q, c64(in_stride[d])));
    }
    return pixel;
  };

  // Conv's B: element (k, n) of the im2col matrix, gathered from X (0 in
  // the padding and outside the matrix).
  auto fetchConvB = [&](llvm::Value* k, llvm::Value* n, llvm::Value* k_local,
                        llvm::Value* n_local) {
    const ConvShape& cs = *p.conv;
    const size_t rank = cs.rank();
    const int64_t taps = product(cs.kernel, 0, rank), outs = product(cs.out, 0, rank);
    const int64_t in_plane = product(cs.in, 0, rank);
    llvm::Value* at = b.CreateAdd(b.CreateMul(k_local, c32(t.pitchB())), n_local);
    // An empty input (all padding): nothing to read.
    if (in_plane == 0) return Staged{llvm::ConstantFP::get(f32, 0.0), bs, at};
    llvm::Value* inside = b.CreateAnd(b.CreateICmpULT(k, c64(p.K)), b.CreateICmpULT(n, c64(p.N)));
    llvm::Value* ci = b.CreateUDiv(k, c64(taps));
    llvm::Value* tap = b.CreateURem(k, c64(taps));
    llvm::Value* image = b.CreateUDiv(n, c64(outs));
    llvm::Value* pos = b.CreateURem(n, c64(outs));
    llvm::Value* channel = b.CreateAdd(b.CreateMul(group, c64(cs.cPerGroup())), ci);
    llvm::Value* offset =
        b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(image, c64(cs.c)), channel), c64(in_plane)),
                    gatherPixel(cs, pos, tap, inside));
    offset = b.CreateSelect(inside, offset, c64(0));
    llvm::Value* v = cpu::loadF32(b, B, offset);
    v = b.CreateSelect(inside, v, llvm::ConstantFP::get(f32, 0.0));
    return Staged{v, bs, at};
  };

  // ConvNHWC's A: element (m, k) of the patch matrix, gathered from X [N,
  // in..., C]: m = (image, output position), k = (tap, ci), so consecutive
  // k are consecutive channels of one input pixel (0 in the padding and
  // outside the matrix).
  auto fetchConvA = [&](llvm::Value* m, llvm::Value* k, llvm::Value* m_local,
                        llvm::Value* k_local) {
    const ConvShape& cs = *p.conv;
    const size_t rank = cs.rank();
    const int64_t outs = product(cs.out, 0, rank), in_plane = product(cs.in, 0, rank);
    llvm::Value* at = b.CreateAdd(b.CreateMul(k_local, c32(t.pitchA())), m_local);
    if (in_plane == 0) return Staged{llvm::ConstantFP::get(f32, 0.0), as, at};
    llvm::Value* inside = b.CreateAnd(b.CreateICmpULT(m, c64(p.M)), b.CreateICmpULT(k, c64(p.K)));
    llvm::Value* tap = b.CreateUDiv(k, c64(cs.cPerGroup()));
    llvm::Value* ci = b.CreateURem(k, c64(cs.cPerGroup()));
    llvm::Value* image = b.CreateUDiv(m, c64(outs));
    llvm::Value* pos = b.CreateURem(m, c64(outs));
    llvm::Value* pixel =
        b.CreateAdd(b.CreateMul(image, c64(in_plane)), gatherPixel(cs, pos, tap, inside));
    llvm::Value* channel = b.CreateAdd(b.CreateMul(group, c64(cs.cPerGroup())), ci);
    llvm::Value* offset = b.CreateAdd(b.CreateMul(pixel, c64(cs.c)), channel);
    offset = b.CreateSelect(inside, offset, c64(0));
    llvm::Value* v = cpu::loadF32(b, A, offset);
    v = b.CreateSelect(inside, v, llvm::ConstantFP::get(f32, 0.0));
    return Staged{v, as, at};
  };

  // Everything this thread stages for K step `step` (step k_steps: zeros,
  // from in-bounds addresses).
  auto fetchStep = [&](llvm::Value* step) {
    std::vector<Staged> staged;
    llvm::Value* k0 = b.CreateAdd(k_begin, b.CreateMul(step, c64(t.bk)), "k0");
    for (int64_t r = 0; r < (t.tm * t.bk) / kThreads; ++r) {
      llvm::Value* e = b.CreateAdd(tid, c32(r * kThreads));
      llvm::Value *m_local, *k_local;
      if (p.a_sk == 1)
        std::tie(k_local, m_local) = split(e, t.bk);
      else
        std::tie(m_local, k_local) = split(e, t.tm);
      llvm::Value* gk = b.CreateAdd(k0, b.CreateZExt(k_local, b.getInt64Ty()));
      if (p.channels_last)
        staged.push_back(fetchConvA(b.CreateAdd(row0, b.CreateZExt(m_local, b.getInt64Ty())), gk,
                                    m_local, k_local));
      else
        staged.push_back(fetch(A, a_base, b.CreateZExt(m_local, b.getInt64Ty()), p.a_sm, p.M, gk,
                               p.a_sk, row0, as, t.pitchA(), k_local, m_local));
    }
    for (int64_t r = 0; r < (t.tn * t.bk) / kThreads; ++r) {
      llvm::Value* e = b.CreateAdd(tid, c32(r * kThreads));
      llvm::Value *n_local, *k_local;
      if (p.b_sn == 1)
        std::tie(n_local, k_local) = split(e, t.tn);
      else
        std::tie(k_local, n_local) = split(e, t.bk);
      llvm::Value* gk = b.CreateAdd(k0, b.CreateZExt(k_local, b.getInt64Ty()));
      if (swapped)
        staged.push_back(fetchConvB(gk, b.CreateAdd(col0, b.CreateZExt(n_local, b.getInt64Ty())),
                                    k_local, n_local));
      else
        staged.push_back(fetch(B, b_base, b.CreateZExt(n_local, b.getInt64Ty()), p.b_sn, p.N, gk,
                               p.b_sk, col0, bs, t.pitchB(), k_local, n_local));
    }
    return staged;
  };

  // The K loop carries the accumulators and the next step's staged values:
  // each step stores them, meets at a barrier, fetches the following step's
  // (their latency hidden behind the multiply-adds), accumulates, and meets
  // again before the next step's stores.
  const int64_t k_steps = ceilDiv(p.k_chunk > 0 ? std::min(p.k_chunk, p.K) : p.K, t.bk);
  // Tensor cores: warp (wm, wn) of 2 x 4 owns rows wm * wtm ... and columns
  // wn * wtn ... of the tile, as mi_count x ni_count pieces of 16 x 8, four
  // f32 accumulators a lane each (PTX ISA's C/D fragment: c_i at row
  // group + 8 * (i / 2), column 2 * tig + i % 2; group = lane / 4,
  // tig = lane % 4).
  const int64_t wtm = t.tm / 2, wtn = t.tn / 4;
  const int64_t mi_count = wtm / 16, ni_count = wtn / 8;
  const int64_t n_acc = mma == Mma::None ? rm * rn : mi_count * ni_count * 4;
  llvm::Value* lane = b.CreateAnd(tid, c32(31), "lane");
  llvm::Value* warp = b.CreateLShr(tid, c32(5), "warp");
  llvm::Value* lane_group = b.CreateLShr(lane, c32(2), "group");
  llvm::Value* tig = b.CreateAnd(lane, c32(3), "tig");
  llvm::Value* warp_row = b.CreateMul(b.CreateLShr(warp, c32(2)), c32(wtm));
  llvm::Value* warp_col = b.CreateMul(b.CreateAnd(warp, c32(3)), c32(wtn));
  llvm::Type* i32 = b.getInt32Ty();
  // What a staged f32 becomes in shared memory: rounded to the mode's format
  // (cvt.rna.tf32.f32; fptrunc to bf16 / f16, round to nearest even), kept as
  // an f32 holding that value (exact), so the fragments read it back as is.
  auto convert = [&](llvm::Value* v) -> llvm::Value* {
    switch (mma) {
      case Mma::None:
        return v;
      case Mma::Tf32:
        return b.CreateBitCast(b.CreateIntrinsic(i32, llvm::Intrinsic::nvvm_f2tf32_rna, {v}), f32);
      case Mma::Bf16:
        return b.CreateFPExt(b.CreateFPTrunc(v, b.getBFloatTy()), f32);
      case Mma::F16:
      case Mma::F16K8:
        return b.CreateFPExt(b.CreateFPTrunc(v, b.getHalfTy()), f32);
    }
    return v;
  };
  // Element (k, r) of a staged slice.
  auto sharedF32 = [&](llvm::GlobalVariable* tile, int64_t pitch, llvm::Value* k,
                       llvm::Value* r) -> llvm::Value* {
    return b.CreateAlignedLoad(f32, sharedAt(tile, b.CreateAdd(b.CreateMul(k, c32(pitch)), r)),
                               llvm::Align(4));
  };
  // One 32-bit fragment register: a tf32 element, or two 16-bit ones (the
  // lower k or column in the low half).
  auto pack = [&](llvm::Value* lo, llvm::Value* hi) -> llvm::Value* {
    if (mma == Mma::Bf16) {
      // bf16 values held as f32: their top 16 bits.
      llvm::Value* l = b.CreateLShr(b.CreateBitCast(lo, i32), c32(16));
      llvm::Value* h = b.CreateAnd(b.CreateBitCast(hi, i32), c32(0xffff0000u));
      return b.CreateOr(l, h);
    }
    llvm::Type* h2 = llvm::FixedVectorType::get(b.getHalfTy(), 2);
    llvm::Value* v = llvm::PoisonValue::get(h2);
    v = b.CreateInsertElement(v, b.CreateFPTrunc(lo, b.getHalfTy()), uint64_t{0});
    return b.CreateInsertElement(v, b.CreateFPTrunc(hi, b.getHalfTy()), uint64_t{1});
  };
  // The warp's mma pieces for one k0 (a multiple of mmaK) of the slices.
  auto mmaStep = [&](int64_t k0, std::vector<llvm::Value*>& acc_io) {
    const int64_t mk = mmaK(mma);
    // A fragments (PTX ISA, mma.m16n8k8 .tf32: a_i at row group + 8 * (i % 2),
    // column tig + 4 * (i / 2); m16n8k16 .f16/.bf16: register i holds row
    // group + 8 * (i % 2), columns 2 * tig + 8 * (i / 2) + {0, 1};
    // m16n8k8 .f16: register i row group + 8 * i, columns 2 * tig + {0, 1}).
    std::vector<std::vector<llvm::Value*>> afrag(mi_count), bfrag(ni_count);
    for (int64_t mi = 0; mi < mi_count; ++mi) {
      llvm::Value* row = b.CreateAdd(warp_row, b.CreateAdd(lane_group, c32(mi * 16)));
      auto a = [&](int64_t dr, llvm::Value* k) {
        return sharedF32(as, t.pitchA(), b.CreateAdd(k, c32(k0)), b.CreateAdd(row, c32(dr)));
      };
      if (mma == Mma::Tf32) {
        for (int64_t i = 0; i < 4; ++i)
          afrag[mi].push_back(
              b.CreateBitCast(a(8 * (i % 2), b.CreateAdd(tig, c32(4 * (i / 2)))), i32));
      } else {
        const int64_t regs = mma == Mma::F16K8 ? 2 : 4;
        for (int64_t i = 0; i < regs; ++i) {
          const int64_t dr = mma == Mma::F16K8 ? 8 * i : 8 * (i % 2);
          const int64_t dk = mma == Mma::F16K8 ? 0 : 8 * (i / 2);
          llvm::Value* k = b.CreateAdd(b.CreateMul(tig, c32(2)), c32(dk));
          afrag[mi].push_back(pack(a(dr, k), a(dr, b.CreateAdd(k, c32(1)))));
        }
      }
    }
    // B fragments (.tf32: b_i at k tig + 4 * i, column group; .f16/.bf16:
    // register i holds k 2 * tig + 8 * i + {0, 1}, column group).
    for (int64_t ni = 0; ni < ni_count; ++ni) {
      llvm::Value* col = b.CreateAdd(warp_col, b.CreateAdd(lane_group, c32(ni * 8)));
      auto bb = [&](llvm::Value* k) {
        return sharedF32(bs, t.pitchB(), b.CreateAdd(k, c32(k0)), col);
      };
      const int64_t regs = mk == 16 ? 2 : (mma == Mma::Tf32 ? 2 : 1);
      for (int64_t i = 0; i < regs; ++i) {
        if (mma == Mma::Tf32) {
          bfrag[ni].push_back(b.CreateBitCast(bb(b.CreateAdd(tig, c32(4 * i))), i32));
        } else {
          llvm::Value* k = b.CreateAdd(b.CreateMul(tig, c32(2)), c32(8 * i));
          bfrag[ni].push_back(pack(bb(k), bb(b.CreateAdd(k, c32(1)))));
        }
      }
    }
    llvm::Intrinsic::ID id = mma == Mma::Tf32   ? llvm::Intrinsic::nvvm_mma_m16n8k8_row_col_tf32
                             : mma == Mma::Bf16 ? llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16
                             : mma == Mma::F16  ? llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32
                                                : llvm::Intrinsic::nvvm_mma_m16n8k8_row_col_f32_f32;
    for (int64_t mi = 0; mi < mi_count; ++mi)
      for (int64_t ni = 0; ni < ni_count; ++ni) {
        std::vector<llvm::Value*> args = afrag[mi];
        args.insert(args.end(), bfrag[ni].begin(), bfrag[ni].end());
        const int64_t base = (mi * ni_count + ni) * 4;
        for (int64_t i = 0; i < 4; ++i) args.push_back(acc_io[base + i]);
        llvm::Value* d = b.CreateIntrinsic(id, {}, args);
        for (int64_t i = 0; i < 4; ++i)
          acc_io[base + i] = b.CreateExtractValue(d, {static_cast<unsigned>(i)});
      }
  };
  std::vector<llvm::Value*> acc(n_acc, llvm::ConstantFP::get(f32, 0.0));
  if (k_steps > 0) {
    std::vector<Staged> first = fetchStep(c64(0));
    std::vector<llvm::Value*> init = acc;
    for (const Staged& st : first) init.push_back(st.value);
    std::vector<llvm::Value*> carried = emitCarriedStridedLoop(
        b, c64(0), c64(k_steps), c64(1), init,
        [&](llvm::Value* step, const std::vector<llvm::Value*>& in) {
          for (size_t x = 0; x < first.size(); ++x)
            b.CreateStore(convert(in[n_acc + x]), sharedAt(first[x].tile, first[x].at));
          barrier(b);
          std::vector<Staged> next = fetchStep(b.CreateAdd(step, c64(1)));
          std::vector<llvm::Value*> out(in.begin(), in.begin() + n_acc);
          if (mma != Mma::None) {
            for (int64_t k0 = 0; k0 < t.bk; k0 += mmaK(mma)) mmaStep(k0, out);
            barrier(b);
            for (const Staged& st : next) out.push_back(st.value);
            return out;
          }
          llvm::Value* a_row = b.CreateMul(ty, c32(rm));
          llvm::Value* b_col = b.CreateMul(tx, c32(rn));
          for (int64_t kk = 0; kk < t.bk; ++kk) {
            std::vector<llvm::Value*> av(rm), bv(rn);
            for (int64_t i = 0; i < rm; i += width)
              readW(as, b.CreateAdd(a_row, c32(kk * t.pitchA() + i)), &av[i]);
            for (int64_t j = 0; j < rn; j += width)
              readW(bs, b.CreateAdd(b_col, c32(kk * t.pitchB() + j)), &bv[j]);
            for (int64_t i = 0; i < rm; ++i)
              for (int64_t j = 0; j < rn; ++j)
                out[i * rn + j] =
                    b.CreateIntrinsic(llvm::Intrinsic::fma, {f32}, {av[i], bv[j], out[i * rn + j]});
          }
          barrier(b);
          for (const Staged& st : next) out.push_back(st.value);
          return out;
        },
        "kstep");
    acc.assign(carried.begin(), carried.begin() + n_acc);
  }

  if (mma != Mma::None) {
    for (int64_t mi = 0; mi < mi_count; ++mi)
      for (int64_t ni = 0; ni < ni_count; ++ni)
        for (int64_t i = 0; i < 4; ++i) {
          llvm::Value* r =
              b.CreateAdd(warp_row, b.CreateAdd(lane_group, c32(mi * 16 + 8 * (i / 2))));
          llvm::Value* c =
              b.CreateAdd(warp_col, b.CreateAdd(b.CreateMul(tig, c32(2)), c32(ni * 8 + i % 2)));
          storeOne(acc[(mi * ni_count + ni) * 4 + i], r, c);
        }
    return;
  }
  for (int64_t i = 0; i < rm; ++i)
    for (int64_t j = 0; j < rn; ++j)
      storeOne(acc[i * rn + j], b.CreateAdd(b.CreateMul(ty, c32(rm)), c32(i)),
               b.CreateAdd(b.CreateMul(tx, c32(rn)), c32(j)));
}

GpuLowering makeGemmLowering() {
  GpuLowering lowering;
  lowering.supports = supportsGemm;
  lowering.launch = gemmLaunch;
  lowering.emit = emitGemm;
  return lowering;
}

// nanoc.SplitKSum (ops/split_k.h): a thread per element of Y in a
// grid-stride loop, the slices added in order, then the bias, the residual
// and the activation, as the GEMM's own store does.
void emitSplitKSum(GpuKernelBuilder& kb) {
  llvm::IRBuilder<>& b = kb.b;
  const Node& node = kb.node;
  const int64_t count = node.outputs[0]->type.numel();
  const int64_t slices = node.inputs[0]->type.dims[0], width = node.outputs[0]->type.dims.back();
  if (count == 0) return;
  EpilogueSpec spec = epilogueSpec(node);
  llvm::Value* P = kb.input_ptrs[0];
  llvm::Value* bias =
      kb.input_ptrs.size() > kSplitKBiasInput ? kb.input_ptrs[kSplitKBiasInput] : nullptr;
  llvm::Value* residual =
      kb.input_ptrs.size() > kSplitKResidualInput ? kb.input_ptrs[kSplitKResidualInput] : nullptr;
  emitGridStrideLoop(kb, count, [&](llvm::Value* i) {
    llvm::Value* v = cpu::loadF32(b, P, i);
    for (int64_t s = 1; s < slices; ++s)
      v = b.CreateFAdd(v, cpu::loadF32(b, P, b.CreateAdd(i, b.getInt64(s * count))));
    if (bias) v = b.CreateFAdd(v, cpu::loadF32(b, bias, b.CreateURem(i, b.getInt64(width))));
    if (residual) v = b.CreateFAdd(v, cpu::loadF32(b, residual, i));
    v = cpu::emitActivation(b, spec, v);
    cpu::storeF32(b, v, kb.output_ptrs[0], i);
  });
}

GpuLowering makeSplitKSumLowering() {
  GpuLowering lowering;
  lowering.supports = [](const Node& node) {
    return node.outputs.size() == 1 && node.inputs[0] && node.inputs[0]->type.rank() >= 2;
  };
  lowering.launch = outputElementLaunch;
  lowering.emit = emitSplitKSum;
  return lowering;
}

// ConvNHWC: the GEMM, or for narrow groups (depthwise) the direct kernel.
GpuLowering makeConvNhwcLowering() {
  GpuLowering gemm = makeGemmLowering(), direct = directConvGpuLowering();
  GpuLowering lowering;
  lowering.supports = [gemm, direct](const Node& node) {
    return isDirectConv(node) ? direct.supports(node) : gemm.supports(node);
  };
  lowering.launch = [gemm, direct](const Node& node) {
    return isDirectConv(node) ? direct.launch(node) : gemm.launch(node);
  };
  lowering.emit = [gemm, direct](GpuKernelBuilder& kb) {
    isDirectConv(kb.node) ? direct.emit(kb) : gemm.emit(kb);
  };
  return lowering;
}

}  // namespace

std::vector<std::pair<std::string, GpuLowering>> matmulGpuLowerings() {
  return {{"MatMul", makeGemmLowering()},
          {"Gemm", makeGemmLowering()},
          {"Conv", makeGemmLowering()},
          {"nanoc.ConvNHWC", makeConvNhwcLowering()},
          {"nanoc.SplitKSum", makeSplitKSumLowering()}};
}

int64_t chooseSplitK(const Node& node) {
  if (splitKChunk(node) != 0 || !supportsGemm(node)) return 0;
  const GemmPlan p = planOf(node);
  if (!splittable(node, p) || isGemv(node, p)) return 0;
  const Tile t = tileFor(node, p);
  const int64_t slices = splitSlicesFor(p, t);
  if (slices < 2) return 0;
  // Whole K steps of the tile (32 for the narrow tile, else 16).
  const int64_t bk = std::max(t.bk, kSplitKStep);
  const int64_t steps = ceilDiv(p.K, kSplitKStep);
  const int64_t chunk = ceilDiv(ceilDiv(steps, slices) * kSplitKStep, bk) * bk;
  if (ceilDiv(p.K, chunk) < 2 || p.batches * ceilDiv(p.K, chunk) > kMaxGridYZ) return 0;
  return chunk;
}

}  // namespace nanoc::gpu
