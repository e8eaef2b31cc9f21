// The depthwise and direct forms of nanoc.ConvNCHWc: see nchwc_kernels.h.
//
// One task is one output row of one block of b output channels, Y's
// [n, block, oh, :, :]. Each output pixel's b channels are one vector of b
// lanes (<b x float>, whatever the target's registers: LLVM splits or
// widens it), so the kernel vectorizes over channels and a stride or a pad
// costs no shuffle:
//  - depthwise: acc(pixel) += W[block, kh, kw, :] * X[n, block, ih, iw, :];
//  - direct (X in plain NCHW, few channels: the stem):
//    acc(pixel) += W[block, c, kh, kw, :] * broadcast(X[n, c, ih, iw]).
// Every accumulator starts at the bias (or 0), sums its taps in (c, kh, kw)
// order and meets the fused epilogue before its one store.
//
// The kernel rows a row reads, [kh_lo, kh_hi), depend on oh only: the rows
// whose window lies inside X (all but the few at the top and the bottom)
// are emitted with their kernel rows unrolled; the others share one row
// whose kernel rows [kh_lo, kh_hi) are computed and looped over at run time
// (every row so, where the taps are too many to unroll). The direct form's
// channels are unrolled too where channels x taps are few (the stem's 27),
// else looped over.
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
// pixel at a time, each tap checked with a select). X is only read inside
// its rows and columns.
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <functional>
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

using Accs = std::vector<llvm::Value*>;

// for (i = begin; i < end; ++i) acc = body(i, acc), the accumulators as phis.
Accs emitCarriedLoop(llvm::IRBuilder<>& b, llvm::Value* begin, llvm::Value* end, const Accs& init,
                     const std::function<Accs(llvm::Value* i, const Accs& acc)>& body,
                     const char* name) {
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::LLVMContext& ctx = b.getContext();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* loop = llvm::BasicBlock::Create(ctx, name, fn);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, std::string(name) + ".end", fn);
  b.CreateCondBr(b.CreateICmpSLT(begin, end), loop, exit);
  b.SetInsertPoint(loop);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2, name);
  i->addIncoming(begin, pre);
  std::vector<llvm::PHINode*> phis;
  Accs acc;
  for (llvm::Value* v : init) {
    phis.push_back(b.CreatePHI(v->getType(), 2));
    phis.back()->addIncoming(v, pre);
    acc.push_back(phis.back());
  }
  Accs next = body(i, acc);
  llvm::BasicBlock* latch = b.GetInsertBlock();
  llvm::Value* i_next = b.CreateAdd(i, b.getInt64(1));
  i->addIncoming(i_next, latch);
  for (size_t k = 0; k < phis.size(); ++k) phis[k]->addIncoming(next[k], latch);
  b.CreateCondBr(b.CreateICmpSLT(i_next, end), loop, exit);
  b.SetInsertPoint(exit);
  Accs out;
  for (size_t k = 0; k < init.size(); ++k) {
    llvm::PHINode* phi = b.CreatePHI(init[k]->getType(), 2);
    phi->addIncoming(init[k], pre);
    phi->addIncoming(next[k], latch);
    out.push_back(phi);
  }
  return out;
}

// One output pixel of a group: its column, and whether its taps may fall in
// the padding (a border pixel).
struct Pixel {
  llvm::Value* ow;
  bool checked;
};

class NchwcConvEmitter {
 public:
  NchwcConvEmitter(llvm::IRBuilder<>& b, const ConvNchwcShape& s, llvm::Value* x, llvm::Value* w,
                   llvm::Value* bias, llvm::Value* y, const FusedEpilogue& epilogue)
      : b_(b), s_(s), x_(x), w_(w), bias_(bias), y_(y), epilogue_(epilogue) {
    direct_ = s.form == NchwcForm::Direct;
    channels_ = direct_ ? s.c : 1;
    lanes_ = s.block;
    vtype_ = lanes_ == 1 ? b.getFloatTy()
                         : static_cast<llvm::Type*>(llvm::FixedVectorType::get(
                               b.getFloatTy(), static_cast<unsigned>(lanes_)));
    planRows();
    planColumns();
    chooseStep();
  }

  void emitTask(llvm::Value* t) {
    llvm::IRBuilder<>& b = b_;
    const int64_t H = s_.h, W = s_.w, OH = s_.oh, OW = s_.ow, KH = s_.kh, KW = s_.kw;
    oh_ = b.CreateURem(t, b.getInt64(OH));
    llvm::Value* plane = b.CreateUDiv(t, b.getInt64(OH));  // n * OCb + block
    llvm::Value* block = b.CreateURem(plane, b.getInt64(s_.ocb));
    if (direct_) {
      llvm::Value* n = b.CreateUDiv(plane, b.getInt64(s_.ocb));
      x_base_ = b.CreateMul(n, b.getInt64(s_.c * H * W));  // elements
    } else {
      x_base_ = b.CreateMul(plane, b.getInt64(H * W));  // pixels (Cb == OCb)
    }
    w_base_ = b.CreateMul(block, b.getInt64(channels_ * KH * KW * lanes_));
    y_row_ = b.CreateMul(t, b.getInt64(OW * lanes_));
    init_ = bias_ ? load(bias_, b.CreateMul(block, b.getInt64(lanes_)))
                  : llvm::Constant::getNullValue(vtype_);
    ih0_ = b.CreateSub(b.CreateMul(oh_, b.getInt64(s_.sh)), b.getInt64(s_.pad_h));

    // The rows whose window lies inside X, at compile time; the others
    // (the top and bottom rows: few) share one row of run-time kernel rows.
    llvm::Function* fn = b.GetInsertBlock()->getParent();
    llvm::LLVMContext& ctx = b.getContext();
    llvm::BasicBlock* done = nullptr;
    if (oh_full_hi_ > oh_full_lo_) {
      if (oh_full_lo_ == 0 && oh_full_hi_ == OH) {
        emitRow(b.getInt64(0), b.getInt64(KH), 0, KH);
        return;
      }
      llvm::BasicBlock* full = llvm::BasicBlock::Create(ctx, "row.full", fn);
      llvm::BasicBlock* edge = llvm::BasicBlock::Create(ctx, "row.edge", fn);
      done = llvm::BasicBlock::Create(ctx, "row.done", fn);
      llvm::Value* in_full = b.CreateAnd(b.CreateICmpUGE(oh_, b.getInt64(oh_full_lo_)),
                                         b.CreateICmpULT(oh_, b.getInt64(oh_full_hi_)));
      b.CreateCondBr(in_full, full, edge);
      b.SetInsertPoint(full);
      emitRow(b.getInt64(0), b.getInt64(KH), 0, KH);
      b.CreateBr(done);
      b.SetInsertPoint(edge);
    }
    // [kh_lo, kh_hi): max(0, -ih0) .. min(KH, H - ih0), empty where the
    // window misses X.
    llvm::Value* lo = b.CreateSub(b.getInt64(0), ih0_);
    lo = b.CreateSelect(b.CreateICmpSLT(lo, b.getInt64(0)), b.getInt64(0), lo);
    lo = b.CreateSelect(b.CreateICmpSGT(lo, b.getInt64(KH)), b.getInt64(KH), lo);
    llvm::Value* hi = b.CreateSub(b.getInt64(H), ih0_);
    hi = b.CreateSelect(b.CreateICmpSGT(hi, b.getInt64(KH)), b.getInt64(KH), hi);
    hi = b.CreateSelect(b.CreateICmpSLT(hi, lo), lo, hi);
    emitRow(lo, hi, -1, -1);
    if (done) {
      b.CreateBr(done);
      b.SetInsertPoint(done);
    }
  }

 private:
  // The output rows [oh_full_lo_, oh_full_hi_) whose kernel rows all lie
  // inside X (none where the taps are too many to unroll).
  void planRows() {
    const int64_t OH = s_.oh, sh = s_.sh;
    oh_full_lo_ = std::min(OH, (s_.pad_h + sh - 1) / sh);
    const int64_t limit = s_.h - s_.kh + s_.pad_h;
    oh_full_hi_ = limit < 0 ? 0 : limit / sh + 1;
    oh_full_hi_ = std::clamp(oh_full_hi_, oh_full_lo_, OH);
    if (s_.kh * s_.kw > kMaxUnrolledTaps) oh_full_hi_ = oh_full_lo_;
  }

  // Columns [ow_lo_, ow_hi_) read no padding: ow * sw - pad_w >= 0 and
  // ow * sw - pad_w + KW <= W.
  void planColumns() {
    const int64_t OW = s_.ow;
    ow_lo_ = std::min(OW, (s_.pad_w + s_.sw - 1) / s_.sw);
    const int64_t limit = s_.w - s_.kw + s_.pad_w;
    ow_hi_ = limit < 0 ? 0 : limit / s_.sw + 1;
    ow_hi_ = std::clamp(ow_hi_, ow_lo_, OW);
  }

  // Pixels per interior step: the accumulators beside, for the depthwise
  // form, one kernel row of weights (each reused by the step's pixels) and a
  // load, or for the direct form one weight and one broadcast, in the
  // target's vector registers (registerTile's count), each vector of b lanes
  // taking ceil(b / width) of them.
  void chooseStep() {
    const RegisterTile tile = registerTile(*b_.GetInsertBlock()->getParent());
    const int64_t registers = (tile.rows + 1) * tile.vectors + 1;
    const int64_t per_vector = (lanes_ + tile.width - 1) / tile.width;
    const int64_t fit = registers / per_vector - (direct_ ? 2 : s_.kw + 1);
    step_ = std::clamp<int64_t>(fit, 2, direct_ ? 8 : 6);
    if (s_.kw > kMaxUnrolledTaps) step_ = 1;  // a kernel row that long: no more code per pixel
  }

  llvm::Value* load(llvm::Value* base, llvm::Value* index) {
    return b_.CreateAlignedLoad(vtype_, f32Ptr(b_, base, index), llvm::Align(4));
  }

  // The task's row reading kernel rows [lo, hi): compile-time constants
  // lo_c, hi_c, or -1 (generic rows: lo and hi at run time).
  void emitRow(llvm::Value* lo, llvm::Value* hi, int64_t lo_c, int64_t hi_c) {
    llvm::IRBuilder<>& b = b_;
    lo_ = lo, hi_ = hi, lo_c_ = lo_c, hi_c_ = hi_c;
    emitBorder(0, ow_lo_);
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
    emitBorder(ow_hi_, s_.ow);
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

  // The pixels' accumulators over every tap of the row, then their stores.
  void emitGroup(const std::vector<Pixel>& pixels) {
    Accs acc(pixels.size(), init_);
    auto overKh = [&](llvm::Value* c, const Accs& in) {
      if (lo_c_ < 0)
        return emitCarriedLoop(
            b_, lo_, hi_, in,
            [&](llvm::Value* kh, const Accs& a) { return taps(pixels, c, kh, a); }, "kh");
      Accs a = in;
      for (int64_t kh = lo_c_; kh < hi_c_; ++kh) a = taps(pixels, c, b_.getInt64(kh), a);
      return a;
    };
    const bool unroll_c = lo_c_ >= 0 && channels_ * (hi_c_ - lo_c_) * s_.kw <= kMaxUnrolledTaps;
    if (channels_ == 1) {
      acc = overKh(b_.getInt64(0), acc);
    } else if (unroll_c) {
      for (int64_t c = 0; c < channels_; ++c) acc = overKh(b_.getInt64(c), acc);
    } else {
      acc = emitCarriedLoop(b_, b_.getInt64(0), b_.getInt64(channels_), acc, overKh, "c");
    }
    for (size_t i = 0; i < pixels.size(); ++i) store(pixels[i].ow, acc[i]);
  }

  // Kernel row kh of channel c (direct; 0 for depthwise) for the pixels: the
  // taps kw in order, each weight vector loaded once for all of them; a
  // border pixel's taps in the padding skipped (compile-time column) or
  // selected away (run-time column, its load clamped to column 0).
  Accs taps(const std::vector<Pixel>& pixels, llvm::Value* c, llvm::Value* kh, Accs acc) {
    llvm::IRBuilder<>& b = b_;
    const int64_t W = s_.w, KH = s_.kh, KW = s_.kw;
    llvm::Value* ih = b.CreateAdd(ih0_, kh);
    // The start of X's input row: elements (direct), pixels (depthwise).
    llvm::Value* x_row =
        direct_ ? b.CreateMul(b.CreateAdd(b.CreateMul(c, b.getInt64(s_.h)), ih), b.getInt64(W))
                : b.CreateMul(ih, b.getInt64(W));
    x_row = b.CreateAdd(x_base_, x_row);
    llvm::Value* w_row = b.CreateAdd(
        w_base_,
        b.CreateMul(b.CreateAdd(b.CreateMul(c, b.getInt64(KH)), kh), b.getInt64(KW * lanes_)));
    for (int64_t kw = 0; kw < KW; ++kw) {
      llvm::Value* weight = nullptr;
      for (size_t i = 0; i < pixels.size(); ++i) {
        llvm::Value* iw =
            b.CreateAdd(b.CreateMul(pixels[i].ow, b.getInt64(s_.sw)), b.getInt64(kw - s_.pad_w));
        llvm::Value* valid = nullptr;  // null: inside X
        if (pixels[i].checked) {
          valid =
              b.CreateAnd(b.CreateICmpSGE(iw, b.getInt64(0)), b.CreateICmpSLT(iw, b.getInt64(W)));
          if (auto* k = llvm::dyn_cast<llvm::ConstantInt>(valid)) {
            if (k->isZero()) continue;
            valid = nullptr;
          } else {
            iw = b.CreateSelect(valid, iw, b.getInt64(0));
          }
        }
        if (!weight) weight = load(w_, b.CreateAdd(w_row, b.getInt64(kw * lanes_)));
        llvm::Value* xv;
        if (direct_) {
          xv = loadF32(b, x_, b.CreateAdd(x_row, iw));
          if (lanes_ > 1) xv = b.CreateVectorSplat(static_cast<unsigned>(lanes_), xv);
        } else {
          xv = load(x_, b.CreateMul(b.CreateAdd(x_row, iw), b.getInt64(lanes_)));
        }
        llvm::Value* sum =
            b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vtype_}, {weight, xv, acc[i]});
        acc[i] = valid ? b.CreateSelect(valid, sum, acc[i]) : sum;
      }
    }
    return acc;
  }

  // Y's pixel `ow` of the task's row = epilogue(value), one vector store.
  void store(llvm::Value* ow, llvm::Value* value) {
    llvm::Value* index = b_.CreateAdd(y_row_, b_.CreateMul(ow, b_.getInt64(lanes_)));
    if (!epilogue_.empty())
      value = applyEpilogue(b_, epilogue_.spec, value, epilogue_.residual, index, lanes_);
    b_.CreateAlignedStore(value, f32Ptr(b_, y_, index), llvm::Align(4));
  }

  llvm::IRBuilder<>& b_;
  const ConvNchwcShape& s_;
  llvm::Value *x_, *w_, *bias_, *y_;
  const FusedEpilogue& epilogue_;
  bool direct_ = false;
  int64_t channels_ = 1, lanes_ = 1;
  llvm::Type* vtype_ = nullptr;
  int64_t oh_full_lo_ = 0, oh_full_hi_ = 0;
  int64_t ow_lo_ = 0, ow_hi_ = 0, step_ = 4;
  // The task's values.
  llvm::Value *oh_ = nullptr, *x_base_ = nullptr, *w_base_ = nullptr, *y_row_ = nullptr;
  llvm::Value *init_ = nullptr, *ih0_ = nullptr;
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

uint64_t nchwcDirectTasks(const ConvNchwcShape& s) { return s.n * s.ocb * s.oh; }

void emitNchwcDirectTask(llvm::IRBuilder<>& b, const ConvNchwcShape& s, llvm::Value* x,
                         llvm::Value* w, llvm::Value* bias, llvm::Value* y,
                         const FusedEpilogue& epilogue, llvm::Value* t) {
  NchwcConvEmitter(b, s, x, w, bias, y, epilogue).emitTask(t);
}

}  // namespace nanoc::cpu
