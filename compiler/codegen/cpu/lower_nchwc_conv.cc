// The depthwise and direct forms of nanoc.ConvNCHWc: see nchwc_kernels.h.
//
// One task is one output row of one block of b output channels, Y's
// [n, block, oh, :, :]. Each output pixel's b channels are one vector of b
// lanes (<b x float>, whatever the target's registers: LLVM splits or
// widens it), so the kernel vectorizes over channels and a stride or a pad
// costs no shuffle:
//  - depthwise: acc(pixel) += W[block, kh, kw, :] * X[n, block, ih, iw, :];
//  - direct (X in plain NCHW, few channels: the stem; or channel-blocked,
//    a dense convolution of many channels):
//    acc(pixel) += W[block, c, kh, kw, :] * broadcast(X's channel c at
//    (ih, iw)), a blocked X read only in its lanes c < C.
// In the direct form, with an even number of output blocks, a task is the
// row of two blocks, computed together where the registers hold both
// blocks' accumulators (each broadcast of X feeds two multiply-adds: the
// stems, whose X is plain NCHW, took 0.75-0.82x the time so, with the loops
// below rolled, against one block a task). The tasks go block by block, row
// by row within each; the direct form's, where X outgrows half of L2 and
// the weights fit there, in chunks of rows, every block within a chunk
// (chooseChunk).
// Every accumulator starts at the bias (or 0), sums its taps in (c, kh, kw)
// order and meets the fused epilogue before its one store.
//
// The kernel rows a row reads, [kh_lo, kh_hi), depend on oh only: the rows
// whose window lies inside X (all but the few at the top and the bottom)
// are emitted with their kernel rows unrolled; the others share one row
// whose kernel rows [kh_lo, kh_hi) are computed and looped over at run time
// (every row so, where the taps are too many to unroll). The direct form's
// few top and bottom rows get their kernel rows at compile time too (a
// switch over them); its channels are unrolled too where channels x taps
// are few, else looped over, and both channels and kernel rows stay rolled
// loops for a plain X (the stem) and for groups of many accumulators
// (emitGroup).
//
// Each row's columns are split at compile time too: the left border (the
// windows that cross the left padding), the interior and the right border.
// The interior runs U pixels a step, U accumulators in registers (each
// weight vector loaded once per tap and step, used by U pixels), the kernel
// columns unrolled, no column checks; a last step, for the rest, ends at
// the interior's end, overlapping the one before (an interior narrower than
// U: its pixels together). The border pixels go together, one accumulator
// each, their columns compile-time constants, so the taps in the padding
// are known and skipped (wide borders, pads of many pixels: a loop, one
// pixel at a time, each tap checked with a select); in the direct form
// both borders are one group, a row no wider than a step is one group, a
// row of at most four steps' width is that many groups of equal width at
// compile-time columns (the borders' pixels in the first and the last) and
// the interior's steps are of equal width. X is only read inside its rows
// and columns.
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <functional>
#include <tuple>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/gemm_microkernel.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/nchwc_kernels.h"

namespace nanoc::cpu {

namespace {

// Taps (channels x kernel rows x kernel columns) of one row unrolled at
// most; past it the channels (direct) or the kernel rows loop at run time.
constexpr int64_t kMaxUnrolledTaps = 64;
// Border pixels unrolled (their taps checked at compile time), at most.
constexpr int64_t kMaxUnrolledBorder = 8;
// The direct form: edge rows (top and bottom) given their kernel rows at
// compile time, at most, and pixels a step, at most.
constexpr int64_t kMaxEdgeRows = 2;
constexpr int64_t kMaxBlockedStep = 14;
// The direct form: groups a row is split into at compile time, at most
// (wider rows loop over steps).
constexpr int64_t kMaxRowGroups = 4;
// The direct form on a blocked X: accumulator registers of a group whose
// channels and kernel rows may be unrolled, at most (emitGroup).
constexpr int64_t kMaxUnrolledAccumulators = 16;

using Accs = std::vector<llvm::Value*>;

// One output pixel of a group: its column, and whether its taps may fall in
// the padding (a border pixel).
struct Pixel {
  llvm::Value* ow;
  bool checked;
};

// Output-channel blocks per task: two for the direct form where the blocks
// pair up (one register tile of both blocks' accumulators, each broadcast
// of X used by both), else one.
int64_t blocksPerTask(const ConvNchwcShape& s) {
  return s.form == NchwcForm::Direct && s.ocb % 2 == 0 ? 2 : 1;
}

// The direct form at stride 2 onto a small map (rows narrower than a
// register tile's rows, at most kMaxMapPixels pixels, a blocked X, blocks
// in pairs): tasks of about kMapPixelsPerTask of the map's pixels in
// row-major order, across its rows, each pixel's row and column a
// compile-time constant (its taps in the padding skipped), rather than a
// row a task: each weight vector feeds 12 or 13 pixels rather than a row's
// 7 (in the models: resnet18's 256 -> 512 stride 2 onto 7 x 7 0.89x the
// time, resnet50's 512 -> 512 0.87x; at stride 1 the 7 x 7 layers gained
// nothing, a chain of 12 1.01-1.02x). 0: row tasks.
constexpr int64_t kMapPixelsPerTask = 12;
constexpr int64_t kMaxMapPixels = 64;
int64_t mapTasks(const ConvNchwcShape& s) {
  const int64_t pixels = s.oh * s.ow;
  if (s.form != NchwcForm::Direct || !s.blocked_input || blocksPerTask(s) != 2 || s.sh != 2 ||
      s.sw != 2 || s.ow >= kMapPixelsPerTask || pixels > kMaxMapPixels || s.oh < 2 ||
      s.kh * s.kw > kMaxUnrolledTaps / 4)
    return 0;
  return std::max<int64_t>(1, pixels / kMapPixelsPerTask);
}

class NchwcConvEmitter {
 public:
  NchwcConvEmitter(llvm::IRBuilder<>& b, const ConvNchwcShape& s, llvm::Value* x, llvm::Value* w,
                   llvm::Value* bias, llvm::Value* y, const FusedEpilogue& epilogue,
                   llvm::Value* next_weights = nullptr, int64_t next_weights_bytes = 0)
      : b_(b),
        s_(s),
        x_(x),
        w_(w),
        bias_(bias),
        y_(y),
        epilogue_(epilogue),
        next_w_(next_weights),
        next_w_floats_(next_weights_bytes / 4) {
    direct_ = s.form == NchwcForm::Direct;
    map_tasks_ = mapTasks(s);
    blocked_ = direct_ && s.blocked_input;
    channels_ = direct_ ? s.c : 1;
    lanes_ = s.block;
    per_task_ = blocksPerTask(s);
    w_block_ = channels_ * s.kh * s.kw * lanes_;
    vtype_ = lanes_ == 1 ? b.getFloatTy()
                         : static_cast<llvm::Type*>(llvm::FixedVectorType::get(
                               b.getFloatTy(), static_cast<unsigned>(lanes_)));
    planRows();
    planColumns();
    chooseStep();
    chooseChunk();
    planPrefetch();
  }

  void emitTask(llvm::Value* t) {
    llvm::IRBuilder<>& b = b_;
    const int64_t H = s_.h, W = s_.w, OH = s_.oh, OW = s_.ow, KH = s_.kh, KW = s_.kw;
    const int64_t groups = s_.ocb / per_task_;
    llvm::Value* plane;  // n * (OCb / per_task) + the task's blocks
    llvm::Value* n;
    if (map_tasks_ > 0) {
      // oh_: the task's share of the map (prefetchNext's row).
      oh_ = b.CreateURem(t, b.getInt64(map_tasks_));
      plane = b.CreateUDiv(t, b.getInt64(map_tasks_));
      n = b.CreateUDiv(plane, b.getInt64(groups));
    } else if (chunk_rows_ == OH) {
      oh_ = b.CreateURem(t, b.getInt64(OH));
      plane = b.CreateUDiv(t, b.getInt64(OH));
      n = b.CreateUDiv(plane, b.getInt64(groups));
    } else {
      // t = ((n * chunks + chunk) * groups + g) * R + r, oh = chunk * R + r.
      const int64_t R = chunk_rows_, chunks = OH / R;
      llvm::Value* rest = b.CreateUDiv(t, b.getInt64(R));
      llvm::Value* g = b.CreateURem(rest, b.getInt64(groups));
      rest = b.CreateUDiv(rest, b.getInt64(groups));
      oh_ = b.CreateAdd(b.CreateMul(b.CreateURem(rest, b.getInt64(chunks)), b.getInt64(R)),
                        b.CreateURem(t, b.getInt64(R)));
      n = b.CreateUDiv(rest, b.getInt64(chunks));
      plane = b.CreateAdd(b.CreateMul(n, b.getInt64(groups)), g);
    }
    llvm::Value* block =
        b.CreateMul(b.CreateURem(plane, b.getInt64(groups)), b.getInt64(per_task_));
    if (direct_) {
      const int64_t image = blocked_ ? channelBlocks(s_.c, lanes_) * H * W * lanes_ : s_.c * H * W;
      x_base_ = b.CreateMul(n, b.getInt64(image));  // elements
    } else {
      x_base_ = b.CreateMul(plane, b.getInt64(H * W));  // pixels (Cb == OCb)
    }
    w_base_ = b.CreateMul(block, b.getInt64(w_block_));
    // Y's row of the first block ((n * OCb + block) * OH + oh; a map's
    // task: its row 0); the next block's a plane further.
    y_row_ =
        b.CreateMul(b.CreateAdd(b.CreateMul(plane, b.getInt64(per_task_ * OH)),
                                map_tasks_ > 0 ? static_cast<llvm::Value*>(b.getInt64(0)) : oh_),
                    b.getInt64(OW * lanes_));
    inits_.clear();
    for (int64_t j = 0; j < per_task_; ++j)
      inits_.push_back(
          bias_ ? load(bias_, b.CreateMul(b.CreateAdd(block, b.getInt64(j)), b.getInt64(lanes_)))
                : llvm::Constant::getNullValue(vtype_));
    if (map_tasks_ > 0) {
      emitMapTask();
      return;
    }
    ih0_ = b.CreateSub(b.CreateMul(oh_, b.getInt64(s_.sh)), b.getInt64(s_.pad_h));
    if (together_ || per_task_ == 1) {
      first_ = 0, count_ = per_task_;
      emitRows();
      return;
    }
    for (int64_t j = 0; j < per_task_; ++j) {  // the blocks one after the other
      first_ = j, count_ = 1;
      emitRows();
    }
  }

 private:
  // The output rows [oh_full_lo_, oh_full_hi_) whose kernel rows all lie
  // inside X (none where the taps are too many to unroll), and whether the
  // others (the direct form's few top and bottom rows) get their kernel
  // rows at compile time too.
  void planRows() {
    const int64_t OH = s_.oh;
    std::tie(oh_full_lo_, oh_full_hi_) = windowsInside(s_.h, s_.kh, s_.sh, s_.pad_h, OH);
    if (s_.kh * s_.kw > kMaxUnrolledTaps) oh_full_hi_ = oh_full_lo_;
    const int64_t edge_rows = OH - (oh_full_hi_ - oh_full_lo_);
    const_edges_ = direct_ && s_.kh * s_.kw <= kMaxUnrolledTaps && edge_rows <= kMaxEdgeRows;
  }

  // The order of the tasks: output-channel blocks outer, rows inner (each
  // block's weights read once, all of X by every block), unless X is larger
  // than half of L2 and the weights fit there: then chunks of R rows outer,
  // the blocks inside each and its rows innermost, R the most rows whose
  // input rows fit in half of L2 (a divisor of OH), so X comes from memory
  // once and the weights stay in L2. (resnet50's 256 -> 512 stride-2 1x1
  // on a 56 x 56 map: 0.82x the time. Where the weights outgrow L2 too,
  // re-reading them per chunk cost more than it saved: 1.3x the time for
  // resnet50's 512 -> 512 3x3 stride 2, 9 MiB of weights, against a
  // 256 KiB L2.)
  void chooseChunk() {
    const int64_t OH = s_.oh;
    chunk_rows_ = OH;
    if (!direct_ || map_tasks_ > 0) return;
    const int64_t half_l2 = halfL2();
    const int64_t x_row = (blocked_ ? channelBlocks(s_.c, lanes_) * lanes_ : s_.c) * s_.w * 4;
    if (half_l2 == 0 || x_row * s_.h <= half_l2 || weightBytes() > half_l2) return;
    // The input rows an output row adds: min(stride, kernel rows).
    int64_t R = std::max<int64_t>(1, half_l2 / (x_row * std::min(s_.sh, s_.kh)));
    while (OH % R != 0) --R;
    chunk_rows_ = R;
  }

  // Whether each row prefetches a share of the next blocks' weights
  // (prefetchNext): the direct form in the blocks-outer order, where the
  // weights outgrow half of L2. They come from memory then, all of a task
  // block's at its first row, which waited on them (resnet50's 512 -> 512
  // 3x3 stride 2 on a 7 x 7 map, 9 MiB of weights, ran at 56% of the FMA
  // peak): its rows before bring the next block's into L2 meanwhile,
  // 1/OH of them each, spread over the channels (0.84x the time; its
  // 256 -> 256 on 14 x 14, 0.93x).
  void planPrefetch() {
    prefetch_next_ =
        direct_ && chunk_rows_ == s_.oh && s_.ocb > per_task_ && weightBytes() > halfL2();
    if (!prefetch_next_) return;
    // At least a line per row (a map's task) and channel: fewer (a 28 x 28
    // map's rows of 128 -> 128, AVX2's 73 KiB a task block), and the
    // prefetches' own work cost more than they saved (1.12x the time).
    const int64_t task_lines = per_task_ * w_block_ * 4 / 64;
    const int64_t rows = map_tasks_ > 0 ? map_tasks_ : s_.oh;
    prefetch_next_ = task_lines >= rows * s_.c;
    prefetch_lines_ = (task_lines + rows * s_.c - 1) / (rows * s_.c);
  }

  // Channel c's share of the next blocks' weights, into L2: their lines
  // (oh * C + c) * n to + n, n = prefetch_lines_, each task's first group of
  // each row. The last blocks take as much of the next kernel's weights
  // (next_w_, the first ones it reads), where nanoc passes them, or else
  // their own.
  void prefetchNext(llvm::Value* c) {
    llvm::IRBuilder<>& b = b_;
    const int64_t task_floats = per_task_ * w_block_;
    const int64_t last = (s_.ocb / per_task_ - 1) * task_floats;
    llvm::Value* next = b.CreateAdd(w_base_, b.getInt64(task_floats));
    llvm::Value* past = b.CreateICmpUGT(next, b.getInt64(last));
    next = b.CreateSelect(past, b.getInt64(last), next);
    llvm::Value* base = w_;
    llvm::Value* floats = b.getInt64(task_floats);
    if (next_w_ && next_w_floats_ > 0) {
      base = b.CreateSelect(past, next_w_, w_);
      next = b.CreateSelect(past, b.getInt64(0), next);
      floats = b.CreateSelect(past, b.getInt64(std::min(task_floats, next_w_floats_)), floats);
    }
    llvm::Value* line = b.CreateMul(b.CreateAdd(b.CreateMul(oh_, b.getInt64(s_.c)), c),
                                    b.getInt64(prefetch_lines_));
    for (int64_t u = 0; u < prefetch_lines_; ++u) {
      llvm::Value* off = b.CreateMul(b.CreateAdd(line, b.getInt64(u)), b.getInt64(16));
      off = b.CreateSelect(b.CreateICmpULT(off, floats), off, b.getInt64(0));
      prefetchF32(b, base, b.CreateAdd(next, off), /*write=*/false, /*locality=*/2);
    }
  }

  // Half of the target's L2 (0: none), and W's bytes.
  int64_t halfL2() const {
    return static_cast<int64_t>(cacheSizes(*b_.GetInsertBlock()->getParent()).l2 / 2);
  }
  int64_t weightBytes() const { return s_.ocb * w_block_ * 4; }

  // Kernel rows [lo, hi) of output row oh: max(0, -ih0) .. min(KH, H - ih0),
  // empty where the window misses X.
  std::pair<int64_t, int64_t> kernelRows(int64_t oh) const {
    const int64_t ih0 = oh * s_.sh - s_.pad_h;
    const int64_t lo = std::clamp<int64_t>(-ih0, 0, s_.kh);
    return {lo, std::clamp<int64_t>(s_.h - ih0, lo, s_.kh)};
  }

  // Columns [ow_lo_, ow_hi_) read no padding: ow * sw - pad_w >= 0 and
  // ow * sw - pad_w + KW <= W.
  void planColumns() {
    std::tie(ow_lo_, ow_hi_) = windowsInside(s_.w, s_.kw, s_.sw, s_.pad_w, s_.ow);
  }

  // Pixels per interior step: the accumulators beside, for the depthwise
  // form, one kernel row of weights (each reused by the step's pixels) and a
  // load, or for the direct form one weight and one broadcast, in the
  // target's vector registers (registerTile's count), each vector of b lanes
  // taking ceil(b / width) of them. The direct form keeps a kernel row of
  // weights per block and takes both of a task's blocks together where U >=
  // 4 pixels of them fit (2 x U accumulators, 2 x KW weights, a broadcast),
  // at most 14 pixels, its interior split into equal steps.
  void chooseStep() {
    const RegisterTile tile = registerTile(*b_.GetInsertBlock()->getParent());
    const int64_t registers = (tile.rows + 1) * tile.vectors + 1;
    const int64_t per_vector = (lanes_ + tile.width - 1) / tile.width;
    const int64_t vectors = registers / per_vector;
    per_vector_ = per_vector;
    if (direct_) {
      together_ = per_task_ == 2 && (vectors - 1 - 2 * s_.kw) / 2 >= 4;
      const int64_t blocks = together_ ? 2 : 1;
      max_step_ = std::clamp<int64_t>((vectors - 1 - blocks * s_.kw) / blocks, 2, kMaxBlockedStep);
      const int64_t interior = ow_hi_ - ow_lo_;
      step_ = max_step_;
      if (interior > max_step_) {
        const int64_t steps = (interior + max_step_ - 1) / max_step_;
        step_ = (interior + steps - 1) / steps;
      }
    } else {
      step_ = max_step_ = std::clamp<int64_t>(vectors - (s_.kw + 1), 2, 6);
    }
    // A kernel row that long: no more code per pixel.
    if (s_.kw > kMaxUnrolledTaps) step_ = max_step_ = 1;
  }

  llvm::Value* load(llvm::Value* base, llvm::Value* index) {
    return b_.CreateAlignedLoad(vtype_, f32Ptr(b_, base, index), llvm::Align(4));
  }

  // The task's row: the rows whose window lies inside X at compile time;
  // the others (the top and bottom rows: few) each at compile time too
  // (const_edges_: a switch over them) or sharing one row of run-time
  // kernel rows.
  void emitRows() {
    llvm::IRBuilder<>& b = b_;
    const int64_t OH = s_.oh, KH = s_.kh;
    if (oh_full_lo_ == 0 && oh_full_hi_ == OH) {
      emitRow(b.getInt64(0), b.getInt64(KH), 0, KH);
      return;
    }
    llvm::Function* fn = b.GetInsertBlock()->getParent();
    llvm::LLVMContext& ctx = b.getContext();
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "row.done", fn);
    const bool any_full = oh_full_hi_ > oh_full_lo_;
    if (const_edges_) {
      std::vector<std::pair<int64_t, int64_t>> kinds;  // distinct [lo, hi)
      std::vector<std::pair<int64_t, size_t>> rows;    // edge row, its kind
      for (int64_t oh = 0; oh < OH; ++oh) {
        if (oh >= oh_full_lo_ && oh < oh_full_hi_) continue;
        const std::pair<int64_t, int64_t> kind = kernelRows(oh);
        const size_t k =
            static_cast<size_t>(std::find(kinds.begin(), kinds.end(), kind) - kinds.begin());
        if (k == kinds.size()) kinds.push_back(kind);
        rows.push_back({oh, k});
      }
      std::vector<llvm::BasicBlock*> edges;
      for (size_t k = 0; k < kinds.size(); ++k)
        edges.push_back(llvm::BasicBlock::Create(ctx, "row.edge", fn));
      llvm::BasicBlock* full = any_full ? llvm::BasicBlock::Create(ctx, "row.full", fn) : nullptr;
      llvm::BasicBlock* other = full ? full : edges[rows.back().second];
      llvm::SwitchInst* sw = b.CreateSwitch(oh_, other, static_cast<unsigned>(rows.size()));
      for (const auto& [oh, k] : rows)
        if (edges[k] != other) sw->addCase(b.getInt64(oh), edges[k]);
      if (full) {
        b.SetInsertPoint(full);
        emitRow(b.getInt64(0), b.getInt64(KH), 0, KH);
        b.CreateBr(done);
      }
      for (size_t k = 0; k < kinds.size(); ++k) {
        b.SetInsertPoint(edges[k]);
        emitRow(b.getInt64(kinds[k].first), b.getInt64(kinds[k].second), kinds[k].first,
                kinds[k].second);
        b.CreateBr(done);
      }
      b.SetInsertPoint(done);
      return;
    }
    if (any_full) {
      llvm::BasicBlock* full = llvm::BasicBlock::Create(ctx, "row.full", fn);
      llvm::BasicBlock* edge = llvm::BasicBlock::Create(ctx, "row.edge", fn);
      llvm::Value* in_full = b.CreateAnd(b.CreateICmpUGE(oh_, b.getInt64(oh_full_lo_)),
                                         b.CreateICmpULT(oh_, b.getInt64(oh_full_hi_)));
      b.CreateCondBr(in_full, full, edge);
      b.SetInsertPoint(full);
      emitRow(b.getInt64(0), b.getInt64(KH), 0, KH);
      b.CreateBr(done);
      b.SetInsertPoint(edge);
    }
    // [kh_lo, kh_hi) at run time, as kernelRows.
    llvm::Value* lo = b.CreateSub(b.getInt64(0), ih0_);
    lo = b.CreateSelect(b.CreateICmpSLT(lo, b.getInt64(0)), b.getInt64(0), lo);
    lo = b.CreateSelect(b.CreateICmpSGT(lo, b.getInt64(KH)), b.getInt64(KH), lo);
    llvm::Value* hi = b.CreateSub(b.getInt64(s_.h), ih0_);
    hi = b.CreateSelect(b.CreateICmpSGT(hi, b.getInt64(KH)), b.getInt64(KH), hi);
    hi = b.CreateSelect(b.CreateICmpSLT(hi, lo), lo, hi);
    emitRow(lo, hi, -1, -1);
    b.CreateBr(done);
    b.SetInsertPoint(done);
  }

  // The task's row reading kernel rows [lo, hi): compile-time constants
  // lo_c, hi_c, or -1 (generic rows: lo and hi at run time). The direct
  // form's border pixels go together (both borders: one group), and a row
  // of at most max_step_ pixels is one group.
  void emitRow(llvm::Value* lo, llvm::Value* hi, int64_t lo_c, int64_t hi_c) {
    llvm::IRBuilder<>& b = b_;
    lo_ = lo, hi_ = hi, lo_c_ = lo_c, hi_c_ = hi_c;
    prefetched_row_ = false;
    const int64_t OW = s_.ow;
    const bool merge = direct_ && ow_lo_ <= kMaxUnrolledBorder && OW - ow_hi_ <= kMaxUnrolledBorder;
    // A row of a few steps' width: groups of equal width at compile-time
    // columns, the borders' pixels in the first and last, their taps in the
    // padding skipped (a 14-pixel row as 7 + 7 rather than a step loop of
    // 6 + 7 and the border pixel by itself: resnet50's 256 -> 256 3x3
    // stride 2 took 0.81x the time, its 28-pixel rows 0.89x; AVX2's 7- and
    // 14-pixel rows 0.80-0.84x).
    if (merge && OW > max_step_ && OW <= kMaxRowGroups * max_step_) {
      const int64_t g = (OW + max_step_ - 1) / max_step_;
      int64_t from = 0;
      for (int64_t k = 0; k < g; ++k) {
        const int64_t to = (OW * (k + 1)) / g;
        std::vector<Pixel> pixels;
        for (int64_t ow = from; ow < to; ++ow)
          pixels.push_back({b.getInt64(ow), ow < ow_lo_ || ow >= ow_hi_});
        emitGroup(pixels);
        from = to;
      }
      return;
    }
    std::vector<Pixel> borders;
    if (merge) {
      for (int64_t ow = 0; ow < OW; ++ow)
        if (ow < ow_lo_ || ow >= ow_hi_) borders.push_back({b.getInt64(ow), true});
      if (OW <= max_step_) {
        std::vector<Pixel> pixels;
        for (int64_t ow = 0; ow < OW; ++ow)
          pixels.push_back({b.getInt64(ow), ow < ow_lo_ || ow >= ow_hi_});
        emitGroup(pixels);
        return;
      }
    } else {
      emitBorder(0, ow_lo_);
    }
    const int64_t interior = ow_hi_ - ow_lo_;
    if (interior >= step_) {
      // interior / U steps, then, for the rest, one more step that ends at
      // ow_hi (overlapping the one before: the same values stored again, the
      // same taps in the same order), at a constant column.
      auto step = [&](llvm::Value* base) {
        std::vector<Pixel> pixels;
        for (int64_t u = 0; u < step_; ++u)
          pixels.push_back({b.CreateAdd(base, b.getInt64(u)), false});
        emitGroup(pixels);
      };
      emitLoop(
          b, b.getInt64(0), b.getInt64(interior / step_),
          [&](llvm::Value* i) {
            step(b.CreateAdd(b.getInt64(ow_lo_), b.CreateMul(i, b.getInt64(step_))));
          },
          "step", LoopHint::NoVectorize);
      if (interior % step_ != 0) step(b.getInt64(ow_hi_ - step_));
    } else if (interior > 0) {
      std::vector<Pixel> pixels;
      for (int64_t ow = ow_lo_; ow < ow_hi_; ++ow) pixels.push_back({b.getInt64(ow), false});
      emitGroup(pixels);
    }
    if (merge) {
      if (!borders.empty()) emitGroup(borders);
    } else {
      emitBorder(ow_hi_, OW);
    }
  }

  // Border columns [begin, end): together at compile time, or a loop.
  void emitBorder(int64_t begin, int64_t end) {
    llvm::IRBuilder<>& b = b_;
    if (begin >= end) return;
    if (end - begin <= kMaxUnrolledBorder) {
      std::vector<Pixel> pixels;
      for (int64_t ow = begin; ow < end; ++ow) pixels.push_back({b.getInt64(ow), true});
      emitGroup(pixels);
      return;
    }
    emitLoop(
        b, b.getInt64(begin), b.getInt64(end),
        [&](llvm::Value* ow) {
          emitGroup({{ow, true}});
        },
        "border", LoopHint::NoVectorize);
  }

  // The pixels' accumulators (of blocks first_ .. first_ + count_ - 1,
  // block-major) over every tap of the row, then their stores.
  void emitGroup(const std::vector<Pixel>& pixels) {
    Accs acc;
    for (int64_t j = 0; j < count_; ++j)
      acc.insert(acc.end(), pixels.size(), inits_[static_cast<size_t>(first_ + j)]);
    // The direct form on a plain X (the stem), and on a blocked X a group of
    // more than kMaxUnrolledAccumulators, keeps its channels and kernel rows
    // in loops, rolled even where they are constants: LLVM's machine
    // scheduler, given many rows' or channels' taps in one block, hoisted
    // their broadcasts of X above the multiply-adds and spilled registers
    // (AVX-512: resnet50's 128 -> 128 3x3 stride 2 on 9-pixel steps, 18
    // accumulators, 0.70x the time rolled; resnet18's 64 -> 128 1x1 stride
    // 2, its 64 channels unrolled: 0.85x; the 7x7 stem 0.82x, on AVX2
    // 0.98x; mobilenet_v2's 3x3 stem on AVX2 0.85x). On a blocked X fewer
    // accumulators leave the broadcasts room and ran faster unrolled
    // (resnet18's 7-pixel rows of 256 -> 512 3x3 stride 2, 14 accumulators:
    // 1.08x the time rolled; AVX2's 12-accumulator 1x1 groups: 1.2x).
    const bool roll = direct_ && (!blocked_ || static_cast<int64_t>(acc.size()) * per_vector_ >
                                                   kMaxUnrolledAccumulators);
    const bool prefetch = prefetch_next_ && !prefetched_row_ && first_ == 0;
    prefetched_row_ = true;
    auto overKh = [&](llvm::Value* c, const Accs& in) {
      if (prefetch) prefetchNext(c);
      if (lo_c_ < 0 || (roll && hi_c_ - lo_c_ > 1))
        return emitCarriedLoop(
            b_, lo_, hi_, in,
            [&](llvm::Value* kh, const Accs& a) { return taps(pixels, c, kh, a); }, "kh",
            lo_c_ < 0 ? LoopHint::None : LoopHint::NoUnroll);
      Accs a = in;
      for (int64_t kh = lo_c_; kh < hi_c_; ++kh) a = taps(pixels, c, b_.getInt64(kh), a);
      return a;
    };
    const bool unroll_c =
        !roll && lo_c_ >= 0 && channels_ * (hi_c_ - lo_c_) * s_.kw <= kMaxUnrolledTaps;
    if (channels_ == 1) {
      acc = overKh(b_.getInt64(0), acc);
    } else if (unroll_c) {
      for (int64_t c = 0; c < channels_; ++c) acc = overKh(b_.getInt64(c), acc);
    } else {
      acc = emitCarriedLoop(b_, b_.getInt64(0), b_.getInt64(channels_), acc, overKh, "c");
    }
    for (int64_t j = 0; j < count_; ++j)
      for (size_t i = 0; i < pixels.size(); ++i)
        store(pixels[i].ow, acc[static_cast<size_t>(j) * pixels.size() + i], first_ + j);
  }

  // Kernel row kh of channel c (direct; 0 for depthwise) for the pixels: the
  // taps kw in order, each weight vector loaded once for all of them (and
  // each broadcast of X used by all the blocks); a border pixel's taps in
  // the padding skipped (compile-time column) or selected away (run-time
  // column, its load clamped to column 0).
  Accs taps(const std::vector<Pixel>& pixels, llvm::Value* c, llvm::Value* kh, Accs acc) {
    llvm::IRBuilder<>& b = b_;
    const int64_t W = s_.w, KH = s_.kh, KW = s_.kw;
    const size_t np = pixels.size();
    llvm::Value* ih = b.CreateAdd(ih0_, kh);
    // The start of X's input row: elements (direct: channel c's, a blocked
    // X's at lane c % b, x_step elements a pixel), pixels (depthwise).
    llvm::Value* x_row;
    int64_t x_step = 1;
    if (blocked_) {
      llvm::Value* cb = b.CreateUDiv(c, b.getInt64(lanes_));
      x_row = b.CreateAdd(
          b.CreateMul(b.CreateAdd(b.CreateMul(cb, b.getInt64(s_.h)), ih), b.getInt64(W * lanes_)),
          b.CreateURem(c, b.getInt64(lanes_)));
      x_step = lanes_;
    } else if (direct_) {
      x_row = b.CreateMul(b.CreateAdd(b.CreateMul(c, b.getInt64(s_.h)), ih), b.getInt64(W));
    } else {
      x_row = b.CreateMul(ih, b.getInt64(W));
    }
    x_row = b.CreateAdd(x_base_, x_row);
    llvm::Value* w_row = b.CreateAdd(
        b.CreateAdd(w_base_, b.getInt64(first_ * w_block_)),
        b.CreateMul(b.CreateAdd(b.CreateMul(c, b.getInt64(KH)), kh), b.getInt64(KW * lanes_)));
    // The taps (pixel i, kernel column kw): kw by kw (depthwise), or, in
    // the direct form, by input column (i * sw + kw, consecutive pixels'
    // taps of one column together: one broadcast of X, used at once), each
    // pixel's still in kw order. The weights of a column are loaded at its
    // first tap.
    std::vector<std::pair<size_t, int64_t>> order;
    for (int64_t kw = 0; kw < KW; ++kw)
      for (size_t i = 0; i < np; ++i) order.push_back({i, kw});
    if (direct_)
      std::stable_sort(order.begin(), order.end(), [&](const auto& p, const auto& q) {
        return static_cast<int64_t>(p.first) * s_.sw + p.second <
               static_cast<int64_t>(q.first) * s_.sw + q.second;
      });
    std::vector<std::vector<llvm::Value*>> weights(static_cast<size_t>(KW));  // per block
    for (const auto& [i, kw] : order) {
      llvm::Value* iw =
          b.CreateAdd(b.CreateMul(pixels[i].ow, b.getInt64(s_.sw)), b.getInt64(kw - s_.pad_w));
      llvm::Value* valid = nullptr;  // null: inside X
      if (pixels[i].checked) {
        valid = b.CreateAnd(b.CreateICmpSGE(iw, b.getInt64(0)), b.CreateICmpSLT(iw, b.getInt64(W)));
        if (auto* k = llvm::dyn_cast<llvm::ConstantInt>(valid)) {
          if (k->isZero()) continue;
          valid = nullptr;
        } else {
          iw = b.CreateSelect(valid, iw, b.getInt64(0));
        }
      }
      std::vector<llvm::Value*>& weight = weights[static_cast<size_t>(kw)];
      if (weight.empty())
        for (int64_t j = 0; j < count_; ++j)
          weight.push_back(load(w_, b.CreateAdd(w_row, b.getInt64(j * w_block_ + kw * lanes_))));
      llvm::Value* xv;
      if (direct_) {
        xv = loadF32(b, x_, b.CreateAdd(x_row, b.CreateMul(iw, b.getInt64(x_step))));
        if (lanes_ > 1) xv = b.CreateVectorSplat(static_cast<unsigned>(lanes_), xv);
      } else {
        xv = load(x_, b.CreateMul(b.CreateAdd(x_row, iw), b.getInt64(lanes_)));
      }
      for (int64_t j = 0; j < count_; ++j) {
        llvm::Value*& a = acc[static_cast<size_t>(j) * np + i];
        llvm::Value* sum = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vtype_},
                                             {weight[static_cast<size_t>(j)], xv, a});
        a = valid ? b.CreateSelect(valid, sum, a) : sum;
      }
    }
    return acc;
  }

  // A map task (mapTasks): its pixels, row-major from pixels * k / tasks,
  // in groups whose accumulators (both blocks' where they fit), a weight
  // per block and a broadcast fill the registers (one group of 12 or 13
  // pixels on AVX-512, two or three on AVX2); a switch over the tasks.
  void emitMapTask() {
    llvm::IRBuilder<>& b = b_;
    llvm::Function* fn = b.GetInsertBlock()->getParent();
    llvm::LLVMContext& ctx = b.getContext();
    const RegisterTile tile = registerTile(*fn);
    const int64_t budget = std::max<int64_t>(tile.registers / per_vector_, 3);
    const int64_t blocks = (budget - 3) / 2 >= 2 ? per_task_ : 1;
    const int64_t group_max = std::max<int64_t>(1, (budget - 1 - blocks) / blocks);
    const int64_t OW = s_.ow, pixels = s_.oh * OW;
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "map.done", fn);
    std::vector<llvm::BasicBlock*> tasks;
    for (int64_t k = 0; k < map_tasks_; ++k)
      tasks.push_back(llvm::BasicBlock::Create(ctx, "map.task", fn));
    llvm::SwitchInst* sw = b.CreateSwitch(oh_, tasks.back(), static_cast<unsigned>(map_tasks_ - 1));
    for (int64_t k = 0; k + 1 < map_tasks_; ++k)
      sw->addCase(b.getInt64(k), tasks[static_cast<size_t>(k)]);
    for (int64_t k = 0; k < map_tasks_; ++k) {
      b.SetInsertPoint(tasks[static_cast<size_t>(k)]);
      prefetched_row_ = false;
      const int64_t from = pixels * k / map_tasks_, to = pixels * (k + 1) / map_tasks_;
      const int64_t groups = (to - from + group_max - 1) / group_max;
      for (int64_t g = 0; g < groups; ++g) {
        std::vector<std::pair<int64_t, int64_t>> px;  // (oh, ow)
        const int64_t lo = from + (to - from) * g / groups,
                      hi = from + (to - from) * (g + 1) / groups;
        for (int64_t q = lo; q < hi; ++q) px.push_back({q / OW, q % OW});
        for (int64_t j = 0; j < per_task_; j += blocks) {
          first_ = j, count_ = blocks;
          emitMapGroup(px);
        }
      }
      b.CreateBr(done);
    }
    b.SetInsertPoint(done);
  }

  // The map pixels' accumulators (blocks first_ .. first_ + count_ - 1,
  // block-major) over the channels, a loop, each channel's taps unrolled,
  // then their stores.
  void emitMapGroup(const std::vector<std::pair<int64_t, int64_t>>& px) {
    Accs acc;
    for (int64_t j = 0; j < count_; ++j)
      acc.insert(acc.end(), px.size(), inits_[static_cast<size_t>(first_ + j)]);
    const bool prefetch = prefetch_next_ && !prefetched_row_ && first_ == 0;
    prefetched_row_ = true;
    acc = emitCarriedLoop(
        b_, b_.getInt64(0), b_.getInt64(channels_), acc,
        [&](llvm::Value* c, const Accs& in) {
          if (prefetch) prefetchNext(c);
          return mapTaps(px, c, in);
        },
        "c");
    for (int64_t j = 0; j < count_; ++j)
      for (size_t i = 0; i < px.size(); ++i)
        store(b_.getInt64(px[i].first * s_.ow + px[i].second),
              acc[static_cast<size_t>(j) * px.size() + i], first_ + j);
  }

  // Channel c's taps (kh, kw) for the map pixels: each tap's weight vectors
  // loaded once (where a pixel reads it), then each pixel's broadcast of X
  // and multiply-adds; taps in the padding skipped at compile time. The
  // broadcasts are volatile loads: LLVM would otherwise merge the taps'
  // loads of one pixel of X, keep them all live and spill zmm registers
  // (1.25-1.3x the time).
  Accs mapTaps(const std::vector<std::pair<int64_t, int64_t>>& px, llvm::Value* c, Accs acc) {
    llvm::IRBuilder<>& b = b_;
    const int64_t H = s_.h, W = s_.w, KH = s_.kh, KW = s_.kw;
    const size_t np = px.size();
    llvm::Value* x_chan = b.CreateAdd(
        x_base_,
        b.CreateAdd(b.CreateMul(b.CreateUDiv(c, b.getInt64(lanes_)), b.getInt64(H * W * lanes_)),
                    b.CreateURem(c, b.getInt64(lanes_))));
    llvm::Value* w_c = b.CreateAdd(b.CreateAdd(w_base_, b.getInt64(first_ * w_block_)),
                                   b.CreateMul(c, b.getInt64(KH * KW * lanes_)));
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) {
        std::vector<llvm::Value*> weight;
        for (size_t i = 0; i < np; ++i) {
          const int64_t ih = px[i].first * s_.sh + kh - s_.pad_h;
          const int64_t iw = px[i].second * s_.sw + kw - s_.pad_w;
          if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
          if (weight.empty())
            for (int64_t j = 0; j < count_; ++j)
              weight.push_back(
                  load(w_, b.CreateAdd(w_c, b.getInt64(j * w_block_ + (kh * KW + kw) * lanes_))));
          llvm::Value* xv =
              b.CreateLoad(b.getFloatTy(),
                           f32Ptr(b, x_, b.CreateAdd(x_chan, b.getInt64((ih * W + iw) * lanes_))),
                           /*isVolatile=*/true);
          if (lanes_ > 1) xv = b.CreateVectorSplat(static_cast<unsigned>(lanes_), xv);
          for (int64_t j = 0; j < count_; ++j) {
            llvm::Value*& a = acc[static_cast<size_t>(j) * np + i];
            a = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vtype_},
                                  {weight[static_cast<size_t>(j)], xv, a});
          }
        }
      }
    return acc;
  }

  // Y's pixel `ow` of the task's row of its block j = epilogue(value), one
  // vector store.
  void store(llvm::Value* ow, llvm::Value* value, int64_t j) {
    llvm::Value* index = b_.CreateAdd(b_.CreateAdd(y_row_, b_.getInt64(j * s_.oh * s_.ow * lanes_)),
                                      b_.CreateMul(ow, b_.getInt64(lanes_)));
    if (!epilogue_.empty())
      value = applyEpilogue(b_, epilogue_.spec, value, epilogue_.residual, index, lanes_);
    b_.CreateAlignedStore(value, f32Ptr(b_, y_, index), llvm::Align(4));
  }

  llvm::IRBuilder<>& b_;
  const ConvNchwcShape& s_;
  llvm::Value *x_, *w_, *bias_, *y_;
  const FusedEpilogue& epilogue_;
  bool direct_ = false, blocked_ = false;
  int64_t channels_ = 1, lanes_ = 1;
  // Output-channel blocks per task, and whether they go together (one
  // group's accumulators) or one after the other.
  int64_t per_task_ = 1;
  bool together_ = false;
  // Registers per vector of b lanes.
  int64_t per_vector_ = 1;
  // planPrefetch: whether rows prefetch, lines per channel; whether the
  // row being emitted has (its first group does).
  bool prefetch_next_ = false, prefetched_row_ = false;
  int64_t prefetch_lines_ = 0;
  // Output rows per chunk of the task order (chooseChunk; OH: one chunk).
  int64_t chunk_rows_ = 1;
  // Tasks per map (mapTasks; 0: a row a task).
  int64_t map_tasks_ = 0;
  llvm::Type* vtype_ = nullptr;
  int64_t oh_full_lo_ = 0, oh_full_hi_ = 0;
  bool const_edges_ = false;
  int64_t ow_lo_ = 0, ow_hi_ = 0, step_ = 4, max_step_ = 4;
  // The task's values; W's elements per block.
  llvm::Value *oh_ = nullptr, *x_base_ = nullptr, *w_base_ = nullptr, *y_row_ = nullptr;
  // The next kernel's weights (KernelBuilder::next_weights), or null.
  llvm::Value* next_w_ = nullptr;
  int64_t next_w_floats_ = 0;
  llvm::Value* ih0_ = nullptr;
  std::vector<llvm::Value*> inits_;  // per block: the bias or 0
  int64_t w_block_ = 0;
  // The blocks being emitted: first_ .. first_ + count_ - 1 of the task's.
  int64_t first_ = 0, count_ = 1;
  // The row being emitted: its kernel rows (constants lo_c_, hi_c_ or -1).
  llvm::Value *lo_ = nullptr, *hi_ = nullptr;
  int64_t lo_c_ = -1, hi_c_ = -1;
};

}  // namespace

uint64_t nchwcDepthwiseTasks(const ConvNchwcShape& s) { return s.n * s.ocb * s.oh; }

void emitNchwcDepthwiseTask(llvm::IRBuilder<>& b, const ConvNchwcShape& s, llvm::Value* x,
                            llvm::Value* w, llvm::Value* bias, llvm::Value* y,
                            const FusedEpilogue& epilogue, llvm::Value* t) {
  NchwcConvEmitter(b, s, x, w, bias, y, epilogue).emitTask(t);
}

uint64_t nchwcDirectTasks(const ConvNchwcShape& s) {
  const int64_t map = mapTasks(s);
  return s.n * (s.ocb / blocksPerTask(s)) * (map > 0 ? map : s.oh);
}

void emitNchwcDirectTask(llvm::IRBuilder<>& b, const ConvNchwcShape& s, llvm::Value* x,
                         llvm::Value* w, llvm::Value* bias, llvm::Value* y,
                         const FusedEpilogue& epilogue, llvm::Value* t, llvm::Value* next_weights,
                         int64_t next_weights_bytes) {
  NchwcConvEmitter(b, s, x, w, bias, y, epilogue, next_weights, next_weights_bytes).emitTask(t);
}

}  // namespace nanoc::cpu
