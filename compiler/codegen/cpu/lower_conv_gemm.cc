// nanoc.Im2Col and nanoc.ConvGemm (ops/conv_gemm.h): a Conv as patches
// packed into the micro-kernel's B panels at run time, then the register-tiled
// product with the constant weights as A.
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/epilogue.h"
#include "compiler/codegen/cpu/gemm_microkernel.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/ir/error.h"
#include "compiler/ops/conv_gemm.h"

namespace nanoc::cpu {

// A task's block of rows (a multiple of kPackedRowQuantum, or all M) holds
// whole groups of a grouped W's rows (w_group, a divisor of kWeightRowGroup).
static_assert(kPackedRowQuantum % kWeightRowGroup == 0);

namespace {

// Panels per Im2Col task: about 64 tasks per image, so threads balance.
int64_t im2colPanelsPerTask(const Im2ColShape& s) {
  return std::max<int64_t>(1, (s.panels() + 63) / 64);
}

// Channel blocks per Im2Col panel: where an image has fewer than 8 panels (a
// 7 x 7 map's three of 24, 24 and 1 pixels), each panel's channels in 4
// blocks, channel blocks slowest, so that each of two (or four) threads
// gets its share of every panel.
int64_t im2colChannelBlocks(const Im2ColShape& s) {
  const int64_t panel_tasks = (s.panels() + im2colPanelsPerTask(s) - 1) / im2colPanelsPerTask(s);
  return panel_tasks < 8 ? std::clamp<int64_t>(s.c, 1, 4) : 1;
}

// Copies output pixels [p0, p_end) (p_end - p0 <= S) of one image's patches
// into one panel: panel row k = (c * kH + i) * kW + j at out[base + k * S],
// pixel p at column p - p0, taps in the padding as 0; the panel's columns
// past p_end - p0 are not written. V lanes at a time where the target has
// vectors (a vector loop, then one masked step for the rest; stride 2 loads
// 2V lanes and keeps the even ones), else one by one. x_n: X's element offset
// of the image. Only channels [c_begin, c_end) (null: all), their rows k.
void emitPackPanel(llvm::IRBuilder<>& b, const Im2ColShape& s, int64_t V, llvm::Value* x,
                   llvm::Value* x_n, llvm::Value* out, llvm::Value* base, llvm::Value* p0,
                   llvm::Value* p_end, int64_t S, llvm::Value* c_begin = nullptr,
                   llvm::Value* c_end = nullptr) {
  llvm::Value* zero = llvm::ConstantFP::get(b.getFloatTy(), 0.0);
  auto i64 = [&](int64_t v) { return b.getInt64(v); };
  auto smin = [&](llvm::Value* a, llvm::Value* c) {
    return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, a, c);
  };
  auto smax = [&](llvm::Value* a, llvm::Value* c) {
    return b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, a, c);
  };
  // Output columns ow whose input column ow * sw - pw + j * dw lies in
  // [0, W): [ceil(max(pw - j*dw, 0) / sw), min(OW, ceil(max(W + pw - j*dw, 0) / sw))).
  auto validColumns = [&](llvm::Value* j) {
    llvm::Value* off = b.CreateMul(j, i64(s.dw));
    auto ceilDiv = [&](llvm::Value* num) {
      num = smax(num, i64(0));
      return b.CreateUDiv(b.CreateAdd(num, i64(s.sw - 1)), i64(s.sw));
    };
    return std::make_pair(ceilDiv(b.CreateSub(i64(s.pad_w), off)),
                          smin(ceilDiv(b.CreateSub(i64(s.w + s.pad_w), off)), i64(s.ow)));
  };
  const bool vector_copy = V > 1 && (s.sw == 1 || s.sw == 2);
  llvm::Type* vtype = V > 1 ? llvm::FixedVectorType::get(b.getFloatTy(), V) : nullptr;
  auto laneMask = [&](int64_t lanes, llvm::Value* count) {
    std::vector<llvm::Constant*> index;
    for (int64_t l = 0; l < lanes; ++l) index.push_back(b.getInt64(l));
    return b.CreateICmpSLT(llvm::ConstantVector::get(index), b.CreateVectorSplat(lanes, count));
  };
  auto vectorAt = [&](llvm::Value* src, llvm::Value* q, llvm::Value* count) {
    if (!src) return static_cast<llvm::Value*>(llvm::Constant::getNullValue(vtype));
    const int64_t lanes = V * s.sw;
    llvm::Type* ltype = llvm::FixedVectorType::get(b.getFloatTy(), lanes);
    llvm::Value* ptr = f32Ptr(b, x, b.CreateAdd(src, b.CreateMul(q, i64(s.sw))));
    // Stride 2 reads lanes [0, 2 * count - 1): never the odd lane past the
    // last one kept, which may lie past X's end.
    if (s.sw == 2 && !count) count = i64(V);
    llvm::Value* v = nullptr;
    if (count)
      v = b.CreateMaskedLoad(
          ltype, ptr, llvm::Align(4),
          laneMask(lanes, s.sw == 1 ? count : b.CreateSub(b.CreateMul(count, i64(2)), i64(1))),
          llvm::Constant::getNullValue(ltype));
    else
      v = b.CreateAlignedLoad(ltype, ptr, llvm::Align(4));
    if (s.sw == 1) return v;
    std::vector<int> even;
    for (int64_t l = 0; l < V; ++l) even.push_back(static_cast<int>(2 * l));
    return b.CreateShuffleVector(v, even);
  };
  // out[dst + q] for q in [from, to): x[src + q * sw], or 0 when src is null.
  auto run = [&](llvm::Value* dst, llvm::Value* from, llvm::Value* to, llvm::Value* src) {
    if (!vector_copy) {
      emitLoop(
          b, from, to,
          [&](llvm::Value* q) {
            llvm::Value* v =
                src ? loadF32(b, x, b.CreateAdd(src, b.CreateMul(q, i64(s.sw)))) : zero;
            storeF32(b, v, out, b.CreateAdd(dst, q));
          },
          "q");
      return;
    }
    llvm::Value* count = smax(b.CreateSub(to, from), i64(0));
    llvm::Value* chunks = b.CreateUDiv(count, i64(V));
    emitLoop(
        b, i64(0), chunks,
        [&](llvm::Value* ci) {
          llvm::Value* q = b.CreateAdd(from, b.CreateMul(ci, i64(V)));
          b.CreateAlignedStore(vectorAt(src, q, nullptr), f32Ptr(b, out, b.CreateAdd(dst, q)),
                               llvm::Align(4));
        },
        "chunk");
    llvm::Value* rest = b.CreateSub(count, b.CreateMul(chunks, i64(V)));
    llvm::Function* fn = b.GetInsertBlock()->getParent();
    llvm::BasicBlock* tail = llvm::BasicBlock::Create(b.getContext(), "rest", fn);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(b.getContext(), "rest.done", fn);
    b.CreateCondBr(b.CreateICmpSGT(rest, i64(0)), tail, done);
    b.SetInsertPoint(tail);
    llvm::Value* q = b.CreateAdd(from, b.CreateMul(chunks, i64(V)));
    b.CreateMaskedStore(vectorAt(src, q, rest), f32Ptr(b, out, b.CreateAdd(dst, q)), llvm::Align(4),
                        laneMask(V, rest));
    b.CreateBr(done);
    b.SetInsertPoint(done);
  };
  // Where masked vector moves are cheap (AVX's vmaskmov, AVX-512's k-masks),
  // a segment of at most S <= 4V columns, its padding included, is
  // ceil(S / V) masked loads and stores: no loop, no branch. Elsewhere
  // (SSE, NEON, RVV here) masked moves become per-lane branches: the loops
  // above.
  const std::string features =
      b.GetInsertBlock()->getParent()->getFnAttribute("target-features").getValueAsString().str();
  const bool masked_segments =
      vector_copy && S <= 4 * V && features.find("+avx") != std::string::npos;
  // out[dst + q] for q in [from, to) (to - from <= S): x[src + q * sw] for q
  // in [lo, hi), else 0.
  auto segment = [&](llvm::Value* dst, llvm::Value* src, llvm::Value* from, llvm::Value* to,
                     llvm::Value* lo, llvm::Value* hi) {
    const int64_t lanes = V * s.sw;
    llvm::Type* ltype = llvm::FixedVectorType::get(b.getFloatTy(), lanes);
    std::vector<llvm::Constant*> column, even;
    for (int64_t l = 0; l < lanes; ++l) {
      column.push_back(b.getInt64(l / s.sw));
      even.push_back(b.getInt1(l % s.sw == 0));
    }
    std::vector<llvm::Constant*> iota;
    for (int64_t l = 0; l < V; ++l) iota.push_back(b.getInt64(l));
    for (int64_t v = 0; v * V < S; ++v) {
      llvm::Value* start = b.CreateAdd(from, i64(v * V));
      llvm::Value* q =
          b.CreateAdd(b.CreateVectorSplat(lanes, start), llvm::ConstantVector::get(column));
      llvm::Value* load_mask = b.CreateAnd(b.CreateICmpSGE(q, b.CreateVectorSplat(lanes, lo)),
                                           b.CreateICmpSLT(q, b.CreateVectorSplat(lanes, hi)));
      if (s.sw != 1) load_mask = b.CreateAnd(load_mask, llvm::ConstantVector::get(even));
      // Masked-off lanes are not read: their addresses may lie outside X.
      llvm::Value* from_ptr =
          b.CreateGEP(b.getFloatTy(), x, b.CreateAdd(src, b.CreateMul(start, i64(s.sw))));
      llvm::Value* value = b.CreateMaskedLoad(ltype, from_ptr, llvm::Align(4), load_mask,
                                              llvm::Constant::getNullValue(ltype));
      if (s.sw != 1) {
        std::vector<int> keep;
        for (int64_t l = 0; l < V; ++l) keep.push_back(static_cast<int>(l * s.sw));
        value = b.CreateShuffleVector(value, keep);
      }
      llvm::Value* store_mask = b.CreateICmpSLT(
          b.CreateAdd(b.CreateVectorSplat(V, start), llvm::ConstantVector::get(iota)),
          b.CreateVectorSplat(V, to));
      b.CreateMaskedStore(value, b.CreateGEP(b.getFloatTy(), out, b.CreateAdd(dst, start)),
                          llvm::Align(4), store_mask);
    }
  };
  // A window row's taps unrolled at compile time (up to 8), so that each
  // tap's valid columns and offsets are constants.
  const bool unroll = s.kw <= 8;
  auto eachTap = [&](int64_t n, const std::function<void(llvm::Value*)>& body, const char* name) {
    if (!unroll) return emitLoop(b, 0, n, body, name);
    for (int64_t v = 0; v < n; ++v) body(i64(v));
  };
  llvm::Value* oh_first = b.CreateUDiv(p0, i64(s.ow));
  llvm::Value* oh_last = b.CreateAdd(b.CreateUDiv(b.CreateSub(p_end, i64(1)), i64(s.ow)), i64(1));
  // One segment per output row the panel meets: its columns ow in
  // [ow_a, ow_b) sit at panel column q0 + ow.
  emitLoop(
      b, oh_first, oh_last,
      [&](llvm::Value* oh) {
        llvm::Value* row0 = b.CreateMul(oh, i64(s.ow));
        llvm::Value* ow_a = smax(b.CreateSub(p0, row0), i64(0));
        llvm::Value* ow_b = smin(b.CreateSub(p_end, row0), i64(s.ow));
        llvm::Value* q0 = b.CreateSub(row0, p0);
        emitLoop(
            b, c_begin ? c_begin : i64(0), c_end ? c_end : i64(s.c),
            [&](llvm::Value* c) {
              emitLoop(
                  b, 0, s.kh,
                  [&](llvm::Value* i) {
                    llvm::Value* ih =
                        b.CreateAdd(b.CreateMul(oh, i64(s.sh)),
                                    b.CreateSub(b.CreateMul(i, i64(s.dh)), i64(s.pad_h)));
                    llvm::Value* row_ok =
                        b.CreateAnd(b.CreateICmpSGE(ih, i64(0)), b.CreateICmpSLT(ih, i64(s.h)));
                    llvm::Value* x_row = b.CreateAdd(
                        x_n, b.CreateMul(b.CreateAdd(b.CreateMul(c, i64(s.h)), ih), i64(s.w)));
                    llvm::Value* k0 =
                        b.CreateMul(b.CreateAdd(b.CreateMul(c, i64(s.kh)), i), i64(s.kw));
                    eachTap(
                        s.kw,
                        [&](llvm::Value* j) {
                          auto [lo_j, hi_j] = validColumns(j);
                          llvm::Value* lo = smin(smax(lo_j, ow_a), ow_b);
                          llvm::Value* hi = smax(smin(hi_j, ow_b), lo);
                          lo = b.CreateSelect(row_ok, lo, ow_b);
                          hi = b.CreateSelect(row_ok, hi, ow_b);
                          llvm::Value* dst = b.CreateAdd(
                              b.CreateAdd(base, b.CreateMul(b.CreateAdd(k0, j), i64(S))), q0);
                          llvm::Value* src = b.CreateAdd(
                              x_row, b.CreateSub(b.CreateMul(j, i64(s.dw)), i64(s.pad_w)));
                          if (masked_segments) {
                            segment(dst, src, ow_a, ow_b, lo, hi);
                            return;
                          }
                          run(dst, ow_a, lo, nullptr);
                          run(dst, lo, hi, src);
                          run(dst, hi, ow_b, nullptr);
                        },
                        "j");
                  },
                  "i");
            },
            "c");
      },
      "oh");
}

Lowering makeIm2ColLowering() {
  return {
      [](const Node& node) -> uint64_t {
        Im2ColShape s = im2colShape(node);
        int64_t per_image = (s.panels() + im2colPanelsPerTask(s) - 1) / im2colPanelsPerTask(s);
        return static_cast<uint64_t>(
            std::max<int64_t>(1, s.n * per_image * im2colChannelBlocks(s)));
      },
      [](KernelBuilder& kb) {
        Im2ColShape s = im2colShape(kb.node);
        if (s.n * s.panels() == 0) return;
        llvm::IRBuilder<>& b = kb.b;
        llvm::Value* x = kb.input(0);
        llvm::Value* col = kb.output(0);
        const int64_t P = s.pixels(), K = s.k(), S = s.panel, panels = s.panels();
        const int64_t ppt = im2colPanelsPerTask(s);
        const int64_t per_image = (panels + ppt - 1) / ppt;
        // Tasks: (image, channel block, panel group), panel groups fastest.
        const int64_t blocks = im2colChannelBlocks(s);
        const int64_t per_block = (s.c + blocks - 1) / blocks;
        const int64_t V = registerTile(*kb.fn).width;
        auto i64 = [&](int64_t v) { return b.getInt64(v); };
        auto smin = [&](llvm::Value* a, llvm::Value* c) {
          return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, a, c);
        };
        emitLoop(
            b, kb.task_begin, kb.task_end,
            [&](llvm::Value* t) {
              llvm::Value* n = b.CreateUDiv(t, i64(per_image * blocks));
              llvm::Value* cb = b.CreateURem(b.CreateUDiv(t, i64(per_image)), i64(blocks));
              llvm::Value* c_begin = smin(b.CreateMul(cb, i64(per_block)), i64(s.c));
              llvm::Value* c_end = smin(b.CreateAdd(c_begin, i64(per_block)), i64(s.c));
              llvm::Value* k_begin = b.CreateMul(c_begin, i64(s.kh * s.kw));
              llvm::Value* k_end = b.CreateMul(c_end, i64(s.kh * s.kw));
              llvm::Value* first = b.CreateMul(b.CreateURem(t, i64(per_image)), i64(ppt));
              llvm::Value* last = b.CreateBinaryIntrinsic(
                  llvm::Intrinsic::smin, b.CreateAdd(first, i64(ppt)), i64(panels));
              llvm::Value* x_n = b.CreateMul(n, i64(s.c * s.h * s.w));
              emitLoop(
                  b, first, last,
                  [&](llvm::Value* pi) {
                    llvm::Value* p0 = b.CreateMul(pi, i64(S));
                    llvm::Value* p_end = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin,
                                                                 b.CreateAdd(p0, i64(S)), i64(P));
                    llvm::Value* base =
                        b.CreateMul(b.CreateAdd(b.CreateMul(n, i64(panels)), pi), i64(K * S));
                    emitPackPanel(b, s, V, x, x_n, col, base, p0, p_end, S, c_begin, c_end);
                    // The last panel's columns past P are zero (this task's
                    // rows).
                    if (P % S != 0) {
                      llvm::Function* fn = b.GetInsertBlock()->getParent();
                      llvm::BasicBlock* tail = llvm::BasicBlock::Create(b.getContext(), "pad", fn);
                      llvm::BasicBlock* done =
                          llvm::BasicBlock::Create(b.getContext(), "pad.done", fn);
                      b.CreateCondBr(b.CreateICmpEQ(pi, i64(panels - 1)), tail, done);
                      b.SetInsertPoint(tail);
                      llvm::Value* zero = llvm::ConstantFP::get(b.getFloatTy(), 0.0);
                      emitLoop(
                          b, k_begin, k_end,
                          [&](llvm::Value* k) {
                            emitLoop(
                                b, P % S, S,
                                [&](llvm::Value* q) {
                                  storeF32(
                                      b, zero, col,
                                      b.CreateAdd(b.CreateAdd(base, b.CreateMul(k, i64(S))), q));
                                },
                                "q");
                          },
                          "k");
                      b.CreateBr(done);
                      b.SetInsertPoint(done);
                    }
                  },
                  "panel");
            },
            "task");
      }};
}

// A packing ConvGemm's panels per task fit this (about half an L2).
constexpr int64_t kPackBytes = int64_t{192} << 10;

// Packing ConvGemms this shallow prefetch each tile's Y for writing.
constexpr int64_t kPrefetchYMaxK = 160;

// Pixels per task of a pixel_rows ConvGemm: whole tiles on every ISA.
constexpr int64_t kPixelRowsPerTask = 4 * kPackedRowQuantum;
static_assert(kPixelRowsPerTask % kPackedRowQuantum == 0);
// Maps of at most this many pixels are one block of rows: the tasks split
// the output channels alone, so that each streams its panels of W once and
// two threads' halves hold equal work. (As 96-pixel blocks a 14 x 14 map was
// 96 + 96 + 4 rows: W read three times, and resnet50's 1024 -> 256 layers
// ran no faster on two threads than on one, 668 vs 655 us.) Only where the
// output channels make this many panels, two tasks or more per thread: a
// squeeze to 64 channels keeps blocks of pixels, so that each thread reads
// the pixels of X the layers before wrote on its core.
constexpr int64_t kPixelRowsOneBlock = 256, kOneBlockMinPanels = 4;

struct ConvGemmPlan {
  ConvGemmShape s;
  PackedProduct p;  // the pointers and hooks are set by the emitter
  int64_t per_image = 1;
};

// Rows per task as the packed product has them; columns per task so that an
// image gives about 16 tasks (several per thread) of whole tiles.
ConvGemmPlan planConvGemm(const Node& node, int64_t nr) {
  ConvGemmPlan plan;
  plan.s = convGemmShape(node);
  PackedProduct& p = plan.p;
  p.M = plan.s.m;
  p.K = plan.s.k;
  p.N = plan.s.pixels();
  if (plan.s.pixel_rows > 0) {
    // The transposed product: pixels as rows, in blocks of whole tiles on
    // every ISA; output channels as columns, in whole panels of W^T, about
    // 16 tasks per image (a 7 x 7 map's 512 channels: 16 tasks of 32).
    std::swap(p.M, p.N);
    const int64_t S = plan.s.pixel_rows;
    const int64_t units = std::max<int64_t>(1, (p.N + S - 1) / S);
    p.rows_per_task = std::max<int64_t>(1, p.M <= kPixelRowsOneBlock && units >= kOneBlockMinPanels
                                               ? p.M
                                               : std::min(p.M, kPixelRowsPerTask));
    const int64_t row_blocks = (p.M + p.rows_per_task - 1) / p.rows_per_task;
    const int64_t col_blocks =
        std::min(units, std::max<int64_t>(1, (16 + row_blocks - 1) / row_blocks));
    p.cols_per_task = S * ((units + col_blocks - 1) / col_blocks);
    plan.per_image = p.M * p.N == 0 ? 0 : p.taskCount();
    return plan;
  }
  if (plan.s.packs) {
    // A task is one column block of an image: it packs the block's panels
    // into its scratch once, then multiplies every row block of W by them
    // (packedRowsPerTask's rows, so a row block of W stays in L2 across the
    // panels). Columns: about 16 blocks per image, their panels within
    // kPackBytes (L2).
    const int64_t unit = plan.s.panel;
    const int64_t units = std::max<int64_t>(1, (p.N + unit - 1) / unit);
    const int64_t fit = std::max<int64_t>(1, kPackBytes / (std::max<int64_t>(1, p.K) * unit * 4));
    const int64_t per_task = std::max<int64_t>(1, std::min(fit, (units + 15) / 16));
    p.cols_per_task = unit * per_task;
    p.rows_per_task = packedRowsPerTask(p.M, p.K, p.N);
    plan.per_image = p.M * p.N == 0 ? 0 : (units + per_task - 1) / per_task;
    return plan;
  }
  p.rows_per_task = packedRowsPerTask(p.M, p.K, p.N);
  const int64_t row_blocks = (p.M + p.rows_per_task - 1) / p.rows_per_task;
  const int64_t unit = plan.s.panel > 0 ? plan.s.panel : nr;
  const int64_t units = std::max<int64_t>(1, (p.N + unit - 1) / unit);
  const int64_t col_blocks =
      std::min(units, std::max<int64_t>(1, (16 + row_blocks - 1) / row_blocks));
  p.cols_per_task = unit * ((units + col_blocks - 1) / col_blocks);
  const int64_t cols = (units + col_blocks - 1) / col_blocks * unit;
  const int64_t col_tasks = (p.N + cols - 1) / cols;
  // Threads split the task order in halves (nanort's contiguous chunks):
  // - One column block (a 7 x 7 map): the tasks are row blocks.
  // - Row blocks, where there are several, whose two halves differ least
  //   (balancedPackedRowsPerTask: 960 -> 320 on 7 x 7 as 14 blocks of 24
  //   rows, 168 + 152, where 72-row blocks gave 216 + 104; 112 -> 672 on 14 x
  //   14 as two blocks of 336, where the 600 + 72 rows of L2-sized blocks ran
  //   1.12x faster on two threads than on one).
  // Column blocks stay where there are two or more: a 14 x 14 map's 96, 96
  // and 4 columns, the partial one first, split evenly. (Row blocks there
  // would keep both threads off the cache lines where each 784-byte row's
  // column blocks meet, but measured no faster: efficientnet_b0 on two
  // threads the same, mobilenet_v2 on one about 2% slower.)
  if (col_tasks == 1) p.cols_per_task = unit * units;
  if (p.M > kPackedRowQuantum && (row_blocks > 1 || col_tasks == 1))
    p.rows_per_task = std::min(p.rows_per_task, balancedPackedRowsPerTask(p.M, p.K, p.N));
  plan.per_image = p.M * p.N == 0 ? 0 : p.taskCount();
  return plan;
}

// The tile is the kernel function's, but the task count is fixed before the
// function exists and is the same for every ISA variant: columns per task are
// multiples of the panel (itself a multiple of every variant's nr) or, with
// panel 0, of kPackedColumnUnit, a multiple of every tile's columns.
constexpr int64_t kColumnUnit = kPackedColumnUnit;

Lowering makeConvGemmLowering() {
  Lowering lowering{
      [](const Node& node) -> uint64_t {
        ConvGemmPlan plan = planConvGemm(node, kColumnUnit);
        return static_cast<uint64_t>(std::max<int64_t>(1, plan.s.n * plan.per_image));
      },
      [](KernelBuilder& kb) {
        ConvGemmPlan plan = planConvGemm(kb.node, kColumnUnit);
        const ConvGemmShape& s = plan.s;
        if (s.n * plan.per_image == 0) return;
        llvm::IRBuilder<>& b = kb.b;
        const RegisterTile tile = registerTile(*kb.fn);
        if (s.pixel_rows > 0) {
          // Im2Col panels are A's row groups (whole tiles of pixels), W's
          // groups B's panels (whole tiles of channels).
          if (s.panel % tile.rows != 0 || s.pixel_rows % tile.columns() != 0)
            throw CompileError("nanoc.ConvGemm '" + kb.node.name + "': panel " +
                               std::to_string(s.panel) + " and pixel_rows " +
                               std::to_string(s.pixel_rows) + " must be multiples of the tile's " +
                               std::to_string(tile.rows) + " rows and " +
                               std::to_string(tile.columns()) + " columns");
        } else if (s.panel % tile.columns() != 0 || plan.p.cols_per_task % tile.columns() != 0) {
          throw CompileError("nanoc.ConvGemm '" + kb.node.name + "': panel " +
                             std::to_string(s.panel) + " is not a multiple of the tile's " +
                             std::to_string(tile.columns()) + " columns");
        } else if (s.grouped_w && s.w_group % tile.rows != 0) {
          throw CompileError("nanoc.ConvGemm '" + kb.node.name + "': W's row group " +
                             std::to_string(s.w_group) + " is not a multiple of the tile's " +
                             std::to_string(tile.rows) + " rows");
        }
        llvm::Value* bm = kb.input(0);
        llvm::Value* w = kb.input(1);
        llvm::Value* bias = s.has_bias ? kb.input(2) : nullptr;
        llvm::Value* y = kb.output(0);
        const FusedEpilogue epilogue = fusedEpilogue(kb);
        llvm::Type* f32 = b.getFloatTy();
        const int64_t P = s.pixels();
        // Input 0's elements per image: X's where the kernel reads X (packing
        // windows), else B's.
        const int64_t b_image = s.packs       ? s.window.c * s.window.h * s.window.w
                                : s.panel > 0 ? (P + s.panel - 1) / s.panel * s.k * s.panel
                                              : s.k * P;
        const int64_t col_blocks =
            plan.p.N == 0 ? 1 : (plan.p.N + plan.p.cols_per_task - 1) / plan.p.cols_per_task;
        // Y's row i (an output channel) starts at bias[i], in every lane.
        auto biasOfRow = [&](llvm::Value* i, llvm::Value*, int64_t, llvm::Type* type) {
          llvm::Value* v = loadF32(b, bias, i);
          if (auto* vec = llvm::dyn_cast<llvm::FixedVectorType>(type))
            v = b.CreateVectorSplat(vec->getNumElements(), v);
          return v;
        };
        emitLoop(
            b, kb.task_begin, kb.task_end,
            [&](llvm::Value* t) {
              PackedProduct p = plan.p;
              llvm::Value* tt = t;
              p.packed_b = bm;
              p.y = y;
              llvm::Value* residual = epilogue.residual;
              llvm::Value* n = b.getInt64(0);
              if (s.n > 1) {
                n = b.CreateUDiv(t, b.getInt64(plan.per_image));
                tt = b.CreateURem(t, b.getInt64(plan.per_image));
                p.packed_b = b.CreateGEP(f32, bm, b.CreateMul(n, b.getInt64(b_image)));
                p.y = b.CreateGEP(f32, y, b.CreateMul(n, b.getInt64(s.m * P)));
                if (residual)
                  residual = b.CreateGEP(f32, residual, b.CreateMul(n, b.getInt64(s.m * P)));
              }
              if (s.pixel_rows > 0) {
                // A = B^T (the image's pixels as rows), B = W^T in W's
                // groups, Y stored transposed: [M, P] as ever.
                p.a = p.packed_b;
                if (s.packs) {
                  // A strided 1x1 window: pixel (oh, ow) at X's (oh * sh,
                  // ow * sw) of channel k.
                  const Im2ColShape& win = s.window;
                  p.a_row_offset = [&b, win](llvm::Value* i) {
                    llvm::Value* oh = b.CreateUDiv(i, b.getInt64(win.ow));
                    llvm::Value* ow = b.CreateURem(i, b.getInt64(win.ow));
                    return b.CreateAdd(b.CreateMul(oh, b.getInt64(win.sh * win.w)),
                                       b.CreateMul(ow, b.getInt64(win.sw)));
                  };
                  p.a_k_stride = win.h * win.w;
                } else if (s.panel > 0) {
                  p.a_row_group = s.panel;
                } else {
                  p.a_row_stride = 1;
                  p.a_k_stride = P;
                }
                p.packed_b = w;
                p.b_panel_stride = s.pixel_rows;
                p.y_transposed = true;
                p.prefetch_b = true;  // W^T's panels stream from memory
                if (bias) p.init = biasOfRow;
                setPackedEpilogue(b, p, epilogue.spec, residual, P);
                emitPackedProductTask(b, tile, p, tt);
                return;
              }
              p.a = w;
              if (s.grouped_w) {
                p.a_row_group = s.w_group;
              } else {
                p.a_row_stride = s.k;
                p.a_k_stride = 1;
              }
              // Column block cb of the task order runs the image's block
              // cb - 1 (mod col_blocks): the last, partial block first, so
              // that nanort's contiguous chunks of tasks get it beside whole
              // ones (a 14 x 14 map's 7 packing blocks of 32, ..., 32, 4
              // columns split 100 + 96 between two threads, not 128 + 68; a
              // 28 x 28 map's 9 pointwise blocks of 96, ..., 96, 16 split 400
              // + 384, not 480 + 304).
              auto partialFirst = [&](llvm::Value* cb) {
                if (col_blocks == 1 || plan.p.N % plan.p.cols_per_task == 0) return cb;
                return b.CreateURem(b.CreateAdd(cb, b.getInt64(col_blocks - 1)),
                                    b.getInt64(col_blocks));
              };
              if (s.packs) tt = partialFirst(tt);
              if (s.packs) {
                // This task's columns [c0, c1) of image n (tt is its column
                // block), packed into panels of the tile's nr columns in the
                // scratch.
                const Im2ColShape& win = s.window;
                const int64_t S = tile.columns();
                llvm::Value* x_n = b.CreateMul(n, b.getInt64(win.c * win.h * win.w));
                llvm::Value* c0 = b.CreateMul(tt, b.getInt64(plan.p.cols_per_task));
                llvm::Value* c1 = b.CreateBinaryIntrinsic(
                    llvm::Intrinsic::smin, b.CreateAdd(c0, b.getInt64(plan.p.cols_per_task)),
                    b.getInt64(P));
                llvm::Value* panels = b.CreateUDiv(
                    b.CreateAdd(b.CreateSub(c1, c0), b.getInt64(S - 1)), b.getInt64(S));
                emitLoop(
                    b, b.getInt64(0), panels,
                    [&](llvm::Value* q) {
                      llvm::Value* p0 = b.CreateAdd(c0, b.CreateMul(q, b.getInt64(S)));
                      llvm::Value* p_end = b.CreateBinaryIntrinsic(
                          llvm::Intrinsic::smin, b.CreateAdd(p0, b.getInt64(S)), c1);
                      emitPackPanel(b, win, tile.width, bm, x_n, kb.scratch,
                                    b.CreateMul(q, b.getInt64(s.k * S)), p0, p_end, S);
                    },
                    "pack");
                p.packed_b = kb.scratch;
                p.b_panel_stride = S;
                p.b_column_origin = c0;
                // A stem's short K loop (27 taps of a 3x3 window on 3
                // channels) does not hide the misses of its stores to Y, a
                // large map whose lines the model's other layers evicted:
                // squeezenet1_1's stem 740 -> 661 us in the model.
                p.prefetch_y = s.k <= kPrefetchYMaxK;
              } else if (s.panel > 0) {
                p.b_panel_stride = s.panel;
              } else {
                p.b_in_place = true;
                p.b_k_stride = P;
                p.b_col_stride = 1;
              }
              if (bias) p.init = biasOfRow;
              // The image's Y is [M, P].
              setPackedEpilogue(b, p, epilogue.spec, residual, P);
              if (!s.packs) {
                // Task tt is (row block, column block), columns fastest.
                llvm::Value* cb = b.CreateURem(tt, b.getInt64(col_blocks));
                if (s.has_scale) {
                  // This task's rows of W times S[n, k], rounded to f32, into
                  // the scratch: whole groups of w_group rows (a row block
                  // is a multiple of them, or all M).
                  const int64_t g = s.w_group;
                  const int64_t groups = weightRowGroups(s.m, g);
                  const int64_t task_groups = (p.rows_per_task + g - 1) / g;
                  llvm::Value* row_begin = b.CreateMul(b.CreateUDiv(tt, b.getInt64(col_blocks)),
                                                       b.getInt64(p.rows_per_task));
                  llvm::Value* g0 = b.CreateUDiv(row_begin, b.getInt64(g));
                  llvm::Value* g1 = b.CreateBinaryIntrinsic(
                      llvm::Intrinsic::umin, b.CreateAdd(g0, b.getInt64(task_groups)),
                      b.getInt64(groups));
                  llvm::Value* scale = kb.input(kChannelScaleInput);
                  llvm::Type* row = llvm::FixedVectorType::get(f32, g);
                  emitLoop(
                      b, g0, g1,
                      [&](llvm::Value* gi) {
                        emitLoop(
                            b, 0, s.k,
                            [&](llvm::Value* k) {
                              llvm::Value* sk = loadF32(
                                  b, scale, b.CreateAdd(b.CreateMul(n, b.getInt64(s.k)), k));
                              llvm::Value* at = b.CreateMul(
                                  b.CreateAdd(b.CreateMul(gi, b.getInt64(s.k)), k), b.getInt64(g));
                              llvm::Value* to = b.CreateMul(
                                  b.CreateAdd(b.CreateMul(b.CreateSub(gi, g0), b.getInt64(s.k)), k),
                                  b.getInt64(g));
                              llvm::Value* wv =
                                  b.CreateAlignedLoad(row, f32Ptr(b, w, at), llvm::Align(4));
                              b.CreateAlignedStore(b.CreateFMul(wv, b.CreateVectorSplat(g, sk)),
                                                   f32Ptr(b, kb.scratch, to), llvm::Align(4));
                            },
                            "k");
                      },
                      "group");
                  p.a = kb.scratch;
                  p.a_row_origin = row_begin;
                }
                emitPackedProductTask(b, tile, p,
                                      b.CreateAdd(b.CreateSub(tt, cb), partialFirst(cb)));
                return;
              }
              // The product's tasks (row block r, this column block tt).
              const int64_t row_blocks = (p.M + p.rows_per_task - 1) / p.rows_per_task;
              emitLoop(
                  b, 0, row_blocks,
                  [&](llvm::Value* r) {
                    emitPackedProductTask(b, tile, p,
                                          b.CreateAdd(b.CreateMul(r, b.getInt64(col_blocks)), tt));
                  },
                  "rows");
            },
            "task");
      }};
  // A packing ConvGemm's panels: K rows of a task's columns; a scaled ConvGemm's rows of W: a
  // task's groups of them.
  lowering.scratch_bytes = [](const Node& node) -> uint64_t {
    ConvGemmPlan plan = planConvGemm(node, kColumnUnit);
    if (plan.s.has_scale) {
      const int64_t g = plan.s.w_group;
      const int64_t groups = (plan.p.rows_per_task + g - 1) / g;
      return static_cast<uint64_t>(groups * g * plan.s.k * 4);
    }
    if (!plan.s.packs || plan.s.pixel_rows > 0) return 0;
    return static_cast<uint64_t>(plan.s.k * plan.p.cols_per_task * 4);
  };
  return lowering;
}

}  // namespace

std::vector<std::pair<std::string, Lowering>> convGemmLowerings() {
  return {{"nanoc.Im2Col", makeIm2ColLowering()}, {"nanoc.ConvGemm", makeConvGemmLowering()}};
}

}  // namespace nanoc::cpu
