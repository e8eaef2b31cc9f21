// Conv: 2-D NCHW cross-correlation with groups, pads, strides, dilations and
// an optional bias, and the window sweep that the pooling lowerings
// (lower_pool.cc) share.
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/linalg.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::cpu {

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
  // Outputs o with 0 <= o * s - pad + k * d < n are [ceil(max(pad - k*d, 0) / s),
  // min(out, ceil(max(n + pad - k*d, 0) / s))).
  auto range = [&](llvm::Value* k, int64_t n, int64_t out, int64_t s, int64_t d, int64_t pad) {
    llvm::Value* offset = b.CreateMul(k, b.getInt64(d));
    auto ceilDiv = [&](llvm::Value* num) {
      num = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, num, b.getInt64(0));
      return b.CreateUDiv(b.CreateAdd(num, b.getInt64(s - 1)), b.getInt64(s));
    };
    llvm::Value* lo = ceilDiv(b.CreateSub(b.getInt64(pad), offset));
    llvm::Value* hi = b.CreateBinaryIntrinsic(
        llvm::Intrinsic::smin, ceilDiv(b.CreateSub(b.getInt64(n + pad), offset)), b.getInt64(out));
    return std::pair{lo, hi};
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

namespace {

struct ConvShape {
  int64_t N = 0, C = 0, H = 0, W = 0;  // X
  int64_t M = 0, OH = 0, OW = 0;       // Y: [N, M, OH, OW]
  int64_t group = 1, c_per_group = 0, m_per_group = 0;
  std::vector<int64_t> kernel, pads, strides, dilations;
  bool has_bias = false;
};

ConvShape convShape(const Node& node) {
  requireF32(node);
  requireRank(node, 0, "X", 4);
  requireRank(node, 1, "W", 4);
  ConvShape s;
  const std::vector<int64_t>& x = node.inputs[0]->type.dims;
  const std::vector<int64_t>& w = node.inputs[1]->type.dims;
  s.N = x[0], s.C = x[1], s.H = x[2], s.W = x[3];
  s.M = w[0];
  s.group = node.i("group");
  if (s.group < 1 || s.C % s.group != 0 || s.M % s.group != 0)
    failNode(node, "group " + std::to_string(s.group) + " must divide the " + std::to_string(s.C) +
                       " input and " + std::to_string(s.M) + " output channels");
  s.c_per_group = s.C / s.group;
  s.m_per_group = s.M / s.group;
  if (w[1] != s.c_per_group)
    failNode(node, "W " + dimsStr(w) + " must have C/group = " + std::to_string(s.c_per_group) +
                       " input channels");
  s.kernel = intsAttr(node, "kernel_shape", 2, 1);
  if (s.kernel[0] != w[2] || s.kernel[1] != w[3])
    failNode(node, "kernel_shape " + dimsStr(s.kernel) + " differs from W " + dimsStr(w));
  s.pads = intsAttr(node, "pads", 4, 0);
  s.strides = intsAttr(node, "strides", 2, 1);
  s.dilations = intsAttr(node, "dilations", 2, 1);
  s.OH = (s.H + s.pads[0] + s.pads[2] - (s.kernel[0] - 1) * s.dilations[0] - 1) / s.strides[0] + 1;
  s.OW = (s.W + s.pads[1] + s.pads[3] - (s.kernel[1] - 1) * s.dilations[1] - 1) / s.strides[1] + 1;
  if (s.OH < 1 || s.OW < 1)
    failNode(node, "the dilated kernel is larger than the padded input " + dimsStr(x));
  if (node.inputs.size() > 2 && node.inputs[2]) {
    requireRank(node, 2, "B", 1);
    if (node.inputs[2]->type.dims[0] != s.M)
      failNode(node, "B must be [" + std::to_string(s.M) + "], got " + node.inputs[2]->type.str());
    s.has_bias = true;
  }
  std::vector<int64_t> y = {s.N, s.M, s.OH, s.OW};
  if (node.outputs.size() != 1 || node.outputs[0]->type.dims != y)
    failNode(node, "output must be " + dimsStr(y));
  return s;
}

}  // namespace

// One task per (n, output channel) plane: it starts from the bias and
// accumulates every input channel of its group, tap by tap.
Lowering makeConvLowering() {
  return {[](const Node& node) -> uint64_t {
            ConvShape s = convShape(node);
            return static_cast<uint64_t>(std::max<int64_t>(1, s.N * s.M));
          },
          [](KernelBuilder& kb) {
            ConvShape s = convShape(kb.node);
            if (s.N * s.M == 0) return;
            llvm::IRBuilder<>& b = kb.b;
            llvm::Value* x = kb.input(0);
            llvm::Value* w = kb.input(1);
            llvm::Value* bias = s.has_bias ? kb.input(2) : nullptr;
            llvm::Value* y = kb.output(0);
            const int64_t plane = s.OH * s.OW;
            const int64_t taps = s.kernel[0] * s.kernel[1];
            emitLoop(
                b, kb.task_begin, kb.task_end,
                [&](llvm::Value* t) {
                  llvm::Value* n = b.CreateUDiv(t, b.getInt64(s.M));
                  llvm::Value* m = b.CreateURem(t, b.getInt64(s.M));
                  llvm::Value* g = b.CreateUDiv(m, b.getInt64(s.m_per_group));
                  llvm::Value* y_plane = b.CreateMul(t, b.getInt64(plane));
                  llvm::Value* init =
                      bias ? loadF32(b, bias, m) : llvm::ConstantFP::get(b.getFloatTy(), 0.0);
                  emitLoop(
                      b, 0, plane,
                      [&](llvm::Value* p) { storeF32(b, init, y, b.CreateAdd(y_plane, p)); }, "p");
                  // First input channel of this group, as a plane index into X.
                  llvm::Value* x_channel0 = b.CreateAdd(b.CreateMul(n, b.getInt64(s.C)),
                                                        b.CreateMul(g, b.getInt64(s.c_per_group)));
                  emitLoop(
                      b, 0, s.c_per_group,
                      [&](llvm::Value* c) {
                        llvm::Value* x_plane =
                            b.CreateMul(b.CreateAdd(x_channel0, c), b.getInt64(s.H * s.W));
                        llvm::Value* w_base =
                            b.CreateMul(b.CreateAdd(b.CreateMul(m, b.getInt64(s.c_per_group)), c),
                                        b.getInt64(taps));
                        emitWindowTaps(
                            b, s.H, s.W, s.OH, s.OW, s.kernel, s.strides, s.dilations, s.pads,
                            x_plane, y_plane,
                            [&](llvm::Value* kh, llvm::Value* kw) {
                              llvm::Value* tap =
                                  b.CreateAdd(b.CreateMul(kh, b.getInt64(s.kernel[1])), kw);
                              return loadF32(b, w, b.CreateAdd(w_base, tap));
                            },
                            [&](llvm::Value* weight, llvm::Value* x_at, llvm::Value* y_at) {
                              llvm::Value* acc = loadF32(b, y, y_at);
                              acc = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {b.getFloatTy()},
                                                      {weight, loadF32(b, x, x_at), acc});
                              storeF32(b, acc, y, y_at);
                            });
                      },
                      "c");
                },
                "task");
          }};
}

}  // namespace nanoc::cpu
