// Conv: cross-correlation over [N, C, spatial...] with groups, pads, strides,
// dilations and an optional bias, and the window sweep that the pooling lowerings
// (lower_pool.cc) share.
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/conv_kernels.h"
#include "compiler/codegen/cpu/epilogue.h"
#include "compiler/codegen/cpu/gemm_microkernel.h"
#include "compiler/codegen/cpu/linalg.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/ops/conv.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::cpu {

namespace {

// Outputs o with 0 <= o * s - pad + k * d < n are [ceil(max(pad - k*d, 0) / s),
// min(out, ceil(max(n + pad - k*d, 0) / s))).
std::pair<llvm::Value*, llvm::Value*> validOutputs(llvm::IRBuilder<>& b, llvm::Value* k, int64_t n,
                                                   int64_t out, int64_t s, int64_t d, int64_t pad) {
  llvm::Value* offset = b.CreateMul(k, b.getInt64(d));
  auto ceilDiv = [&](llvm::Value* num) {
    num = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, num, b.getInt64(0));
    return b.CreateUDiv(b.CreateAdd(num, b.getInt64(s - 1)), b.getInt64(s));
  };
  llvm::Value* lo = ceilDiv(b.CreateSub(b.getInt64(pad), offset));
  llvm::Value* hi = b.CreateBinaryIntrinsic(
      llvm::Intrinsic::smin, ceilDiv(b.CreateSub(b.getInt64(n + pad), offset)), b.getInt64(out));
  return {lo, hi};
}

}  // namespace

// Emits, for one H x W input plane and its OH x OW output plane, every pair
// (window tap (kh, kw), output (oh, ow)) whose input element
//   (oh * strides[0] - pads[0] + kh * dilations[0], ow * strides[1] - pads[1] + kw * dilations[1])
// lies inside the input; taps in the padding are skipped. `tap(kh, kw)` runs
// once per tap and output row, before its output loop; `body(tap_value,
// x_index, y_index)` runs per output element. For each output, taps come in
// (kh, kw) lexicographic order.
//
// The valid output range of each tap is computed up front, so the innermost
// loop runs over ow without branches, unit-stride in Y (and in X for stride
// 1): it vectorizes. The output row stays hot across the kW taps.
void emitWindowTaps(
    llvm::IRBuilder<>& b, int64_t H, int64_t W, int64_t OH, int64_t OW,
    const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
    const std::vector<int64_t>& dilations, const std::vector<int64_t>& pads, llvm::Value* x_plane,
    llvm::Value* y_plane, const std::function<llvm::Value*(llvm::Value* kh, llvm::Value* kw)>& tap,
    const std::function<void(llvm::Value* tap_value, llvm::Value* x_at, llvm::Value* y_at)>& body) {
  auto range = [&](llvm::Value* k, int64_t n, int64_t out, int64_t s, int64_t d, int64_t pad) {
    return validOutputs(b, k, n, out, s, d, pad);
  };
  emitLoop(
      b, 0, kernel[0],
      [&](llvm::Value* kh) {
        auto [oh_lo, oh_hi] = range(kh, H, OH, strides[0], dilations[0], pads[0]);
        llvm::Value* row_offset =
            b.CreateSub(b.CreateMul(kh, b.getInt64(dilations[0])), b.getInt64(pads[0]));
        emitLoop(
            b, oh_lo, oh_hi,
            [&](llvm::Value* oh) {
              llvm::Value* ih = b.CreateAdd(b.CreateMul(oh, b.getInt64(strides[0])), row_offset);
              llvm::Value* x_row = b.CreateAdd(x_plane, b.CreateMul(ih, b.getInt64(W)));
              llvm::Value* y_row = b.CreateAdd(y_plane, b.CreateMul(oh, b.getInt64(OW)));
              emitLoop(
                  b, 0, kernel[1],
                  [&](llvm::Value* kw) {
                    auto [ow_lo, ow_hi] = range(kw, W, OW, strides[1], dilations[1], pads[1]);
                    llvm::Value* tap_value = tap ? tap(kh, kw) : nullptr;
                    llvm::Value* x_tap =
                        b.CreateAdd(x_row, b.CreateSub(b.CreateMul(kw, b.getInt64(dilations[1])),
                                                       b.getInt64(pads[1])));
                    emitLoop(
                        b, ow_lo, ow_hi,
                        [&](llvm::Value* ow) {
                          llvm::Value* x_at =
                              b.CreateAdd(x_tap, b.CreateMul(ow, b.getInt64(strides[1])));
                          body(tap_value, x_at, b.CreateAdd(y_row, ow));
                        },
                        "ow");
                  },
                  "kw");
            },
            "oh");
      },
      "kh");
}

llvm::Value* loadFilterTap(llvm::IRBuilder<>& b, llvm::Value* w, llvm::Value* w_base,
                           const std::vector<llvm::Value*>& tap,
                           const std::vector<int64_t>& kernel) {
  llvm::Value* flat = tap[0];
  for (size_t i = 1; i < tap.size(); ++i)
    flat = b.CreateAdd(b.CreateMul(flat, b.getInt64(kernel[i])), tap[i]);
  return loadF32(b, w, b.CreateAdd(w_base, flat));
}

void emitMultiplyAccumulate(llvm::IRBuilder<>& b, llvm::Value* weight, llvm::Value* x,
                            llvm::Value* x_at, llvm::Value* y, llvm::Value* y_at) {
  llvm::Value* acc = loadF32(b, y, y_at);
  acc = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {b.getFloatTy()},
                          {weight, loadF32(b, x, x_at), acc});
  storeF32(b, acc, y, y_at);
}

void emitWindowTapsND(
    llvm::IRBuilder<>& b, const std::vector<int64_t>& in, const std::vector<int64_t>& out,
    const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
    const std::vector<int64_t>& dilations, const std::vector<int64_t>& pads, llvm::Value* x_plane,
    llvm::Value* y_plane, const std::function<llvm::Value*(const std::vector<llvm::Value*>&)>& tap,
    const std::function<void(llvm::Value* tap_value, llvm::Value* x_at, llvm::Value* y_at)>& body) {
  const size_t k = in.size();
  if (k == 1) {
    emitWindowTaps(b, 1, in[0], 1, out[0], {1, kernel[0]}, {1, strides[0]}, {1, dilations[0]},
                   {0, pads[0], 0, pads[1]}, x_plane, y_plane,
                   tap ? [&](llvm::Value*, llvm::Value* kw) { return tap({kw}); }
                       : std::function<llvm::Value*(llvm::Value*, llvm::Value*)>(),
                   body);
    return;
  }
  std::vector<int64_t> in_stride(k, 1), out_stride(k, 1);
  for (size_t i = k - 1; i > 0; --i) {
    in_stride[i - 1] = in_stride[i] * in[i];
    out_stride[i - 1] = out_stride[i] * out[i];
  }
  std::vector<llvm::Value*> taps;
  std::function<void(size_t, llvm::Value*, llvm::Value*)> dim = [&](size_t d, llvm::Value* x_at,
                                                                    llvm::Value* y_at) {
    if (d + 2 == k) {
      emitWindowTaps(
          b, in[d], in[d + 1], out[d], out[d + 1], {kernel[d], kernel[d + 1]},
          {strides[d], strides[d + 1]}, {dilations[d], dilations[d + 1]},
          {pads[d], pads[d + 1], pads[k + d], pads[k + d + 1]}, x_at, y_at,
          tap ? [&](llvm::Value* kh, llvm::Value* kw) {
            std::vector<llvm::Value*> all = taps;
            all.push_back(kh);
            all.push_back(kw);
            return tap(all);
          }
              : std::function<llvm::Value*(llvm::Value*, llvm::Value*)>(),
          body);
      return;
    }
    emitLoop(
        b, 0, kernel[d],
        [&](llvm::Value* t) {
          auto [lo, hi] = validOutputs(b, t, in[d], out[d], strides[d], dilations[d], pads[d]);
          llvm::Value* offset =
              b.CreateSub(b.CreateMul(t, b.getInt64(dilations[d])), b.getInt64(pads[d]));
          emitLoop(
              b, lo, hi,
              [&](llvm::Value* o) {
                llvm::Value* i = b.CreateAdd(b.CreateMul(o, b.getInt64(strides[d])), offset);
                taps.push_back(t);
                dim(d + 1, b.CreateAdd(x_at, b.CreateMul(i, b.getInt64(in_stride[d]))),
                    b.CreateAdd(y_at, b.CreateMul(o, b.getInt64(out_stride[d]))));
                taps.pop_back();
              },
              "o");
        },
        "t");
  };
  dim(0, x_plane, y_plane);
}

namespace {

ConvShape loweredConvShape(const Node& node) {
  ConvShape s = convShape(node);
  if (node.outputs.size() != 1 || node.outputs[0]->type.dims != s.outputDims())
    failNode(node, "output must be " + dimsStr(s.outputDims()));
  return s;
}

}  // namespace

// One task per (n, output channel) plane: it starts from the bias and
// accumulates every input channel of its group, tap by tap. Depthwise 2-D
// convs take the vector kernel of lower_conv_depthwise.cc where it applies
// (same tasks).
Lowering makeConvLowering() {
  return {[](const Node& node) -> uint64_t {
            ConvShape s = loweredConvShape(node);
            return static_cast<uint64_t>(std::max<int64_t>(1, s.n * s.m));
          },
          [](KernelBuilder& kb) {
            ConvShape s = loweredConvShape(kb.node);
            if (s.n * s.m == 0 || emitDepthwiseConv(kb, s)) return;
            llvm::IRBuilder<>& b = kb.b;
            llvm::Value* x = kb.input(0);
            llvm::Value* w = kb.input(1);
            llvm::Value* bias = s.has_bias ? kb.input(2) : nullptr;
            llvm::Value* y = kb.output(0);
            const size_t k = s.rank();
            const int64_t in_plane = product(s.in, 0, k);
            const int64_t plane = product(s.out, 0, k);
            const int64_t taps = product(s.kernel, 0, k);
            const int64_t cg = s.cPerGroup();
            const FusedEpilogue epilogue = fusedEpilogue(kb);
            const int64_t width = registerTile(*kb.fn).width;
            emitLoop(
                b, kb.task_begin, kb.task_end,
                [&](llvm::Value* t) {
                  llvm::Value* n = b.CreateUDiv(t, b.getInt64(s.m));
                  llvm::Value* m = b.CreateURem(t, b.getInt64(s.m));
                  llvm::Value* g = b.CreateUDiv(m, b.getInt64(s.mPerGroup()));
                  llvm::Value* y_plane = b.CreateMul(t, b.getInt64(plane));
                  llvm::Value* init =
                      bias ? loadF32(b, bias, m) : llvm::ConstantFP::get(b.getFloatTy(), 0.0);
                  emitLoop(
                      b, 0, plane,
                      [&](llvm::Value* p) { storeF32(b, init, y, b.CreateAdd(y_plane, p)); }, "p");
                  // First input channel of this group, as a plane index into X.
                  llvm::Value* x_channel0 =
                      b.CreateAdd(b.CreateMul(n, b.getInt64(s.c)), b.CreateMul(g, b.getInt64(cg)));
                  emitLoop(
                      b, 0, cg,
                      [&](llvm::Value* c) {
                        llvm::Value* x_plane =
                            b.CreateMul(b.CreateAdd(x_channel0, c), b.getInt64(in_plane));
                        llvm::Value* w_base = b.CreateMul(
                            b.CreateAdd(b.CreateMul(m, b.getInt64(cg)), c), b.getInt64(taps));
                        emitWindowTapsND(
                            b, s.in, s.out, s.kernel, s.strides, s.dilations, s.pads, x_plane,
                            y_plane,
                            [&](const std::vector<llvm::Value*>& tap) {
                              return loadFilterTap(b, w, w_base, tap, s.kernel);
                            },
                            [&](llvm::Value* weight, llvm::Value* x_at, llvm::Value* y_at) {
                              emitMultiplyAccumulate(b, weight, x, x_at, y, y_at);
                            });
                      },
                      "c");
                  // The plane accumulates in Y: the epilogue sweeps it once
                  // every channel is in, while it is still in cache.
                  emitEpilogueSweep(b, epilogue.spec, y, epilogue.residual, y_plane,
                                    b.CreateAdd(y_plane, b.getInt64(plane)), width);
                },
                "task");
          }};
}

}  // namespace nanoc::cpu
