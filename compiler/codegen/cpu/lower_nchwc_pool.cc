// nanoc.MaxPoolNCHWc's kernel: see ops/nchwc.h and ops/nchwc_pool.cc.
//
// The depthwise ConvNCHWc's plan (lower_nchwc_conv.cc) with a maximum for
// the sum. One task is one output row of one channel block, Y's
// [n, block, oh, :, :]; each output pixel's b channels are one vector of b
// lanes (<b x float>), so a stride or a pad costs no shuffle. Every maximum
// starts at the lowest float and takes its taps in (kh, kw) order, each as
// select(v > max, v, max) lane by lane (fcmp ogt: a NaN is never taken, of
// +0 and -0 the first stays), the reference's order and rule, so the result
// is the reference's bit for bit (on x86 the select is one maxps).
//
// The kernel rows a row reads depend on oh only: the rows whose window lies
// inside X (all but the few at the top and the bottom) are emitted with
// their kernel rows unrolled; the others share one row whose kernel rows
// [kh_lo, kh_hi) (those inside X, dilated) are computed and looped over at
// run time (every row so where the taps are too many to unroll).
//
// Each row's columns are split at compile time: the left border (windows
// that cross the left padding), the interior and the right border (ceil
// mode's last window among them). The interior runs U pixels a step, U
// maxima in registers, the kernel columns unrolled, no checks, each input
// pixel loaded once per step and kernel row however many of the step's
// windows hold it (a stride below the kernel's width: neighbours share
// columns); the rest, fewer than U, go together after the loop. The border
// pixels go together, their columns compile-time constants, so the taps in
// the padding are known and never emitted. Wide borders (pads of many
// pixels, a map narrower than the window) and kernels too wide to unroll
// loop one pixel at a time over the kernel columns inside X, computed at run
// time. So no load is ever emitted for a tap outside X: the kernel reads
// only X's own rows and columns, whatever the input.
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/gemm_microkernel.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/nchwc_kernels.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::cpu {

namespace {

// Taps (kernel rows x kernel columns) of one row unrolled at most; past it
// the kernel rows loop at run time (and kernel columns past it too).
constexpr int64_t kMaxUnrolledTaps = 64;
// Border pixels unrolled (their taps checked at compile time), at most.
constexpr int64_t kMaxUnrolledBorder = 8;

using Accs = std::vector<llvm::Value*>;

// The node's window, validated again by the op's shape rule.
struct PoolGeometry {
  int64_t n = 0, cb = 0, lanes = 1, h = 0, w = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, pad_top = 0, pad_left = 0;
  int64_t oh = 0, ow = 0;
  uint64_t tasks() const { return static_cast<uint64_t>(n * cb * oh); }
};

PoolGeometry poolGeometry(const Node& node) {
  const std::vector<TensorType> types = findOp(node.op)->infer(node);
  if (node.outputs.size() != 1 || node.outputs[0]->type != types[0])
    failNode(node, "output must be " + types[0].str());
  const std::vector<int64_t>& x = node.inputs[0]->type.dims;
  const std::vector<int64_t>& kernel = node.ints("kernel_shape");
  const std::vector<int64_t>& strides = node.ints("strides");
  const std::vector<int64_t>& dilations = node.ints("dilations");
  const std::vector<int64_t>& pads = node.ints("pads");
  const std::vector<int64_t>& out = node.ints("output_spatial");
  PoolGeometry g;
  g.n = x[0], g.cb = x[1], g.h = x[2], g.w = x[3], g.lanes = x[4];
  g.kh = kernel[0], g.kw = kernel[1], g.sh = strides[0], g.sw = strides[1];
  g.dh = dilations[0], g.dw = dilations[1], g.pad_top = pads[0], g.pad_left = pads[1];
  g.oh = out[0], g.ow = out[1];
  return g;
}

// Pixels whose columns are base + offsets[i] (base null: the offsets are the
// columns, compile-time constants, and their taps outside X are skipped;
// otherwise every tap lies inside X).
struct Group {
  llvm::Value* base = nullptr;
  std::vector<int64_t> offsets;
};

class MaxPoolNchwcEmitter {
 public:
  MaxPoolNchwcEmitter(llvm::IRBuilder<>& b, const PoolGeometry& g, llvm::Value* x, llvm::Value* y)
      : b_(b), g_(g), x_(x), y_(y) {
    vtype_ = g.lanes == 1 ? b.getFloatTy()
                          : static_cast<llvm::Type*>(llvm::FixedVectorType::get(
                                b.getFloatTy(), static_cast<unsigned>(g.lanes)));
    lowest_ =
        llvm::ConstantFP::get(vtype_, static_cast<double>(std::numeric_limits<float>::lowest()));
    wide_ = g.kw > kMaxUnrolledTaps;
    planRows();
    planColumns();
    chooseStep();
  }

  void emitTask(llvm::Value* t) {
    llvm::IRBuilder<>& b = b_;
    const int64_t KH = g_.kh;
    llvm::Value* oh = b.CreateURem(t, b.getInt64(g_.oh));
    llvm::Value* plane = b.CreateUDiv(t, b.getInt64(g_.oh));  // n * Cb + block
    x_base_ = b.CreateMul(plane, b.getInt64(g_.h * g_.w));    // pixels
    y_row_ = b.CreateMul(t, b.getInt64(g_.ow * g_.lanes));    // elements
    ih0_ = b.CreateSub(b.CreateMul(oh, b.getInt64(g_.sh)), b.getInt64(g_.pad_top));

    llvm::Function* fn = b.GetInsertBlock()->getParent();
    llvm::LLVMContext& ctx = b.getContext();
    llvm::BasicBlock* done = nullptr;
    if (oh_full_hi_ > oh_full_lo_) {
      if (oh_full_lo_ == 0 && oh_full_hi_ == g_.oh) {
        emitRow(b.getInt64(0), b.getInt64(KH), 0, KH);
        return;
      }
      llvm::BasicBlock* full = llvm::BasicBlock::Create(ctx, "row.full", fn);
      llvm::BasicBlock* edge = llvm::BasicBlock::Create(ctx, "row.edge", fn);
      done = llvm::BasicBlock::Create(ctx, "row.done", fn);
      llvm::Value* in_full = b.CreateAnd(b.CreateICmpUGE(oh, b.getInt64(oh_full_lo_)),
                                         b.CreateICmpULT(oh, b.getInt64(oh_full_hi_)));
      b.CreateCondBr(in_full, full, edge);
      b.SetInsertPoint(full);
      emitRow(b.getInt64(0), b.getInt64(KH), 0, KH);
      b.CreateBr(done);
      b.SetInsertPoint(edge);
    }
    auto [lo, hi] = tapRange(ih0_, g_.h, g_.kh, g_.dh);
    emitRow(lo, hi, -1, -1);
    if (done) {
      b.CreateBr(done);
      b.SetInsertPoint(done);
    }
  }

 private:
  // The taps [lo, hi) of a window starting at `start` (i64, any sign) with
  // `kernel` taps `dilation` apart that lie in [0, size): lo = ceil(-start /
  // dilation) where start < 0, hi = ceil((size - start) / dilation), both
  // clamped into [0, kernel], hi >= lo (empty where the window misses X).
  std::pair<llvm::Value*, llvm::Value*> tapRange(llvm::Value* start, int64_t size, int64_t kernel,
                                                 int64_t dilation) {
    llvm::IRBuilder<>& b = b_;
    auto smax = [&](llvm::Value* a, llvm::Value* c) {
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, a, c);
    };
    auto umin = [&](llvm::Value* a, llvm::Value* c) {
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, a, c);
    };
    auto ceilDiv = [&](llvm::Value* v) {  // v >= 0
      if (dilation == 1) return v;
      return b.CreateUDiv(b.CreateAdd(v, b.getInt64(dilation - 1)), b.getInt64(dilation));
    };
    llvm::Value* lo =
        umin(ceilDiv(smax(b.CreateSub(b.getInt64(0), start), b.getInt64(0))), b.getInt64(kernel));
    llvm::Value* hi = umin(ceilDiv(smax(b.CreateSub(b.getInt64(size), start), b.getInt64(0))),
                           b.getInt64(kernel));
    hi = b.CreateBinaryIntrinsic(llvm::Intrinsic::umax, hi, lo);
    return {lo, hi};
  }

  // The output rows [oh_full_lo_, oh_full_hi_) whose kernel rows all lie
  // inside X (none where the taps are too many to unroll).
  void planRows() {
    std::tie(oh_full_lo_, oh_full_hi_) =
        windowsInside(g_.h, g_.dh * (g_.kh - 1) + 1, g_.sh, g_.pad_top, g_.oh);
    if (g_.kh * g_.kw > kMaxUnrolledTaps) oh_full_hi_ = oh_full_lo_;
  }

  // Columns [ow_lo_, ow_hi_) read no padding: ow * sw - pad_left >= 0 and
  // ow * sw - pad_left + dw * (kw - 1) <= W - 1.
  void planColumns() {
    std::tie(ow_lo_, ow_hi_) =
        windowsInside(g_.w, g_.dw * (g_.kw - 1) + 1, g_.sw, g_.pad_left, g_.ow);
  }

  // Pixels per interior step: U maxima and a load in the target's vector
  // registers (registerTile's count), a vector of b lanes taking ceil(b /
  // width) of them.
  void chooseStep() {
    const RegisterTile tile = registerTile(*b_.GetInsertBlock()->getParent());
    const int64_t registers = (tile.rows + 1) * tile.vectors + 1;
    const int64_t per_vector = (g_.lanes + tile.width - 1) / tile.width;
    step_ = std::clamp<int64_t>(registers / per_vector - 2, 2, 8);
  }

  llvm::Value* loadPixel(llvm::Value* pixel) {  // X's pixel index
    return b_.CreateAlignedLoad(vtype_, f32Ptr(b_, x_, b_.CreateMul(pixel, b_.getInt64(g_.lanes))),
                                llvm::Align(4));
  }

  llvm::Value* maxOf(llvm::Value* v, llvm::Value* acc) {
    return b_.CreateSelect(b_.CreateFCmpOGT(v, acc), v, acc);
  }

  // The task's row reading kernel rows [lo, hi): compile-time constants
  // lo_c, hi_c, or -1 (edge rows: lo and hi at run time).
  void emitRow(llvm::Value* lo, llvm::Value* hi, int64_t lo_c, int64_t hi_c) {
    llvm::IRBuilder<>& b = b_;
    lo_ = lo, hi_ = hi, lo_c_ = lo_c, hi_c_ = hi_c;
    if (wide_) {  // kernel rows too wide to unroll: every pixel by itself
      emitLoop(
          b, b.getInt64(0), b.getInt64(g_.ow), [&](llvm::Value* ow) { emitRangePixel(ow); },
          "pixel", LoopHint::NoVectorize);
      return;
    }
    emitBorder(0, ow_lo_);
    const int64_t interior = ow_hi_ - ow_lo_;
    Group step;
    for (int64_t u = 0; u < step_; ++u) step.offsets.push_back(u);
    if (interior >= step_)
      emitLoop(
          b, b.getInt64(0), b.getInt64(interior / step_),
          [&](llvm::Value* i) {
            step.base = b.CreateAdd(b.getInt64(ow_lo_), b.CreateMul(i, b.getInt64(step_)));
            emitGroup(step);
          },
          "step", LoopHint::NoVectorize);
    Group rest;  // the interior's last pixels, fewer than a step
    for (int64_t ow = ow_lo_ + interior / step_ * step_; ow < ow_hi_; ++ow)
      rest.offsets.push_back(ow);
    emitGroup(rest);
    emitBorder(ow_hi_, g_.ow);
  }

  // Border columns [begin, end): together at compile time, or a loop.
  void emitBorder(int64_t begin, int64_t end) {
    llvm::IRBuilder<>& b = b_;
    if (begin >= end) return;
    if (end - begin <= kMaxUnrolledBorder) {
      Group border;
      for (int64_t ow = begin; ow < end; ++ow) border.offsets.push_back(ow);
      emitGroup(border);
      return;
    }
    emitLoop(
        b, b.getInt64(begin), b.getInt64(end), [&](llvm::Value* ow) { emitRangePixel(ow); },
        "border", LoopHint::NoVectorize);
  }

  // The kernel rows of the row being emitted, acc = rowBody(kh, acc) for each.
  Accs overKernelRows(const Accs& init,
                      const std::function<Accs(llvm::Value* kh, const Accs& acc)>& body) {
    if (lo_c_ < 0) return emitCarriedLoop(b_, lo_, hi_, init, body, "kh");
    Accs acc = init;
    for (int64_t kh = lo_c_; kh < hi_c_; ++kh) acc = body(b_.getInt64(kh), acc);
    return acc;
  }

  // X's pixel index of the start of input row ih0 + kh * dh of the task's plane.
  llvm::Value* inputRow(llvm::Value* kh) {
    llvm::Value* ih = b_.CreateAdd(ih0_, b_.CreateMul(kh, b_.getInt64(g_.dh)));
    return b_.CreateAdd(x_base_, b_.CreateMul(ih, b_.getInt64(g_.w)));
  }

  // The group's maxima over every tap of the row, then their stores.
  void emitGroup(const Group& group) {
    llvm::IRBuilder<>& b = b_;
    const size_t count = group.offsets.size();
    if (count == 0) return;
    // The input column of offset 0's first tap, for a run-time base.
    llvm::Value* col0 = group.base ? b.CreateSub(b.CreateMul(group.base, b.getInt64(g_.sw)),
                                                 b.getInt64(g_.pad_left))
                                   : nullptr;
    Accs acc = overKernelRows(Accs(count, lowest_), [&](llvm::Value* kh, const Accs& in) {
      Accs a = in;
      llvm::Value* row = inputRow(kh);
      if (col0) row = b.CreateAdd(row, col0);
      // Pixel by pixel, each input column loaded once for the group (its
      // column relative to col0, or absolute for compile-time columns) where
      // its first pixel needs it, so that a load lives until the next pixel
      // at most (kernel columns outer: the loads of a kernel column live
      // until the next, which spills at 16 lanes on AVX2, 2.5x slower).
      std::map<int64_t, llvm::Value*> loaded;
      for (size_t i = 0; i < count; ++i)
        for (int64_t kw = 0; kw < g_.kw; ++kw) {
          const int64_t column = group.offsets[i] * g_.sw + kw * g_.dw - (col0 ? 0 : g_.pad_left);
          if (!col0 && (column < 0 || column >= g_.w)) continue;  // a tap in the padding
          llvm::Value*& v = loaded[column];
          if (!v) v = loadPixel(b.CreateAdd(row, b.getInt64(column)));
          a[i] = maxOf(v, a[i]);
        }
      return a;
    });
    for (size_t i = 0; i < count; ++i) {
      llvm::Value* ow = group.base ? b.CreateAdd(group.base, b.getInt64(group.offsets[i]))
                                   : b.getInt64(group.offsets[i]);
      store(ow, acc[i]);
    }
  }

  // One pixel at run-time column `ow`: its kernel columns inside X,
  // [kw_lo, kw_hi), computed and looped over.
  void emitRangePixel(llvm::Value* ow) {
    llvm::IRBuilder<>& b = b_;
    llvm::Value* iw0 = b.CreateSub(b.CreateMul(ow, b.getInt64(g_.sw)), b.getInt64(g_.pad_left));
    auto [kw_lo, kw_hi] = tapRange(iw0, g_.w, g_.kw, g_.dw);
    Accs acc = overKernelRows({lowest_}, [&](llvm::Value* kh, const Accs& in) {
      llvm::Value* row = b.CreateAdd(inputRow(kh), iw0);
      return emitCarriedLoop(
          b, kw_lo, kw_hi, in,
          [&](llvm::Value* kw, const Accs& a) {
            llvm::Value* v = loadPixel(b.CreateAdd(row, b.CreateMul(kw, b.getInt64(g_.dw))));
            return Accs{maxOf(v, a[0])};
          },
          "kw");
    });
    store(ow, acc[0]);
  }

  // Y's pixel `ow` of the task's row, one vector store.
  void store(llvm::Value* ow, llvm::Value* value) {
    llvm::Value* index = b_.CreateAdd(y_row_, b_.CreateMul(ow, b_.getInt64(g_.lanes)));
    b_.CreateAlignedStore(value, f32Ptr(b_, y_, index), llvm::Align(4));
  }

  llvm::IRBuilder<>& b_;
  const PoolGeometry& g_;
  llvm::Value *x_, *y_;
  llvm::Type* vtype_ = nullptr;
  llvm::Value* lowest_ = nullptr;
  bool wide_ = false;
  int64_t oh_full_lo_ = 0, oh_full_hi_ = 0;
  int64_t ow_lo_ = 0, ow_hi_ = 0, step_ = 4;
  // The task's values.
  llvm::Value *x_base_ = nullptr, *y_row_ = nullptr, *ih0_ = nullptr;
  // The row being emitted: its kernel rows (constants lo_c_, hi_c_ or -1).
  llvm::Value *lo_ = nullptr, *hi_ = nullptr;
  int64_t lo_c_ = -1, hi_c_ = -1;
};

Lowering makeMaxPoolNchwcLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) {
    return std::max<uint64_t>(1, poolGeometry(node).tasks());
  };
  lowering.emit = [](KernelBuilder& kb) {
    const PoolGeometry g = poolGeometry(kb.node);
    if (g.tasks() == 0) return;  // an empty X and Y: the one task does nothing
    llvm::IRBuilder<>& b = kb.b;
    llvm::Value* x = kb.input(0);
    llvm::Value* y = kb.output(0);
    emitLoop(
        b, kb.task_begin, kb.task_end,
        [&](llvm::Value* t) { MaxPoolNchwcEmitter(b, g, x, y).emitTask(t); }, "task",
        LoopHint::NoVectorize);
  };
  return lowering;
}

}  // namespace

std::vector<std::pair<std::string, Lowering>> nchwcPoolLowerings() {
  return {{"nanoc.MaxPoolNCHWc", makeMaxPoolNchwcLowering()}};
}

}  // namespace nanoc::cpu
