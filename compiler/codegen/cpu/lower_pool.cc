// MaxPool and AveragePool over 2-D NCHW planes, with the output sizes, the
// ceil_mode rule and the count_include_pad divisors of compiler/ops/README.md
// (ONNX Runtime's behaviour).
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/linalg.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/ops/pool.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::cpu {

namespace {

struct PoolShape {
  int64_t N = 0, C = 0, H = 0, W = 0, OH = 0, OW = 0;
  std::vector<int64_t> kernel, pads, strides, dilations;
  bool ceil_mode = false;

  PoolAxis rows() const { return {H, kernel[0], dilations[0], strides[0], pads[0], pads[2]}; }
  PoolAxis cols() const { return {W, kernel[1], dilations[1], strides[1], pads[1], pads[3]}; }
};

PoolShape poolShape(const Node& node) {
  requireF32(node);
  requireRank(node, 0, "X", 4);
  PoolShape s;
  const std::vector<int64_t>& x = node.inputs[0]->type.dims;
  s.N = x[0], s.C = x[1], s.H = x[2], s.W = x[3];
  s.kernel = intsAttr(node, "kernel_shape", 2, 1);
  s.pads = intsAttr(node, "pads", 4, 0);
  s.strides = intsAttr(node, "strides", 2, 1);
  s.dilations = intsAttr(node, "dilations", 2, 1);
  s.ceil_mode = boolAttr(node, "ceil_mode") != 0;
  for (const PoolAxis& a : {s.rows(), s.cols()})
    if (a.size + a.pad_begin + a.pad_end < a.effectiveKernel())
      failNode(node, "the dilated kernel (" + std::to_string(a.effectiveKernel()) +
                         ") is larger than the padded input (" +
                         std::to_string(a.size + a.pad_begin + a.pad_end) + ")");
  s.OH = poolOutputSize(s.rows(), s.ceil_mode);
  s.OW = poolOutputSize(s.cols(), s.ceil_mode);
  std::vector<int64_t> y = {s.N, s.C, s.OH, s.OW};
  if (node.outputs.size() != 1 || node.outputs[0]->type.dims != y)
    failNode(node, "output must be " + dimsStr(y));
  return s;
}

uint64_t planeCount(const Node& node) {
  PoolShape s = poolShape(node);
  return static_cast<uint64_t>(std::max<int64_t>(1, s.N * s.C));
}

// Per output position along one axis, the factor of the window's count that
// the average divides by (compiler/ops/pool.h). An axis with no taps inside
// the input (possible only with dilation) leaves the sum 0, the result the
// reference gives: its factor is 1 instead of 0 so that 0 / 0 does not make it
// NaN.
std::vector<float> divisorsAlongAxis(const PoolAxis& axis, int64_t out, bool count_include_pad) {
  int64_t lo = count_include_pad ? -axis.pad_begin : 0;
  int64_t hi = count_include_pad ? axis.size + axis.pad_end : axis.size;
  std::vector<float> counts(out);
  for (int64_t o = 0; o < out; ++o)
    counts[o] = static_cast<float>(std::max<int64_t>(1, poolTapsWithin(axis, o, lo, hi)));
  return counts;
}

llvm::Value* constantTable(KernelBuilder& kb, const std::vector<float>& values, const char* what) {
  llvm::Constant* init = llvm::ConstantDataArray::get(kb.module.getContext(), values);
  return new llvm::GlobalVariable(kb.module, init->getType(), /*isConstant=*/true,
                                  llvm::GlobalValue::PrivateLinkage, init,
                                  kb.fn->getName() + "." + what);
}

// The sweep of one task's planes: `init` fills each output plane, `fold`
// folds each input element under a window tap into its output, `finish` runs
// on the plane afterwards (may be empty).
void emitPool(KernelBuilder& kb, const PoolShape& s, llvm::Value* init,
              const std::function<llvm::Value*(llvm::Value* acc, llvm::Value* x)>& fold,
              const std::function<void(llvm::Value* y_plane)>& finish) {
  if (s.N * s.C == 0) return;
  llvm::IRBuilder<>& b = kb.b;
  llvm::Value* x = kb.input(0);
  llvm::Value* y = kb.output(0);
  emitLoop(
      b, kb.task_begin, kb.task_end,
      [&](llvm::Value* t) {
        llvm::Value* y_plane = b.CreateMul(t, b.getInt64(s.OH * s.OW));
        llvm::Value* x_plane = b.CreateMul(t, b.getInt64(s.H * s.W));
        emitLoop(
            b, 0, s.OH * s.OW,
            [&](llvm::Value* p) { storeF32(b, init, y, b.CreateAdd(y_plane, p)); }, "p");
        emitWindowTaps(b, s.H, s.W, s.OH, s.OW, s.kernel, s.strides, s.dilations, s.pads, x_plane,
                       y_plane, {}, [&](llvm::Value*, llvm::Value* x_at, llvm::Value* y_at) {
                         storeF32(b, fold(loadF32(b, y, y_at), loadF32(b, x, x_at)), y, y_at);
                       });
        if (finish) finish(y_plane);
      },
      "task");
}

}  // namespace

// One task per (n, c) plane. Padding never wins: a window's maximum is over
// its taps inside the input only, and a window with none is the lowest float.
// A NaN input is skipped, as ONNX Runtime's `if (x > max) max = x` does.
Lowering makeMaxPoolLowering() {
  return {planeCount, [](KernelBuilder& kb) {
            PoolShape s = poolShape(kb.node);
            llvm::IRBuilder<>& b = kb.b;
            llvm::Value* lowest =
                llvm::ConstantFP::get(b.getFloatTy(), std::numeric_limits<float>::lowest());
            emitPool(kb, s, lowest,
                     [&](llvm::Value* acc, llvm::Value* v) {
                       return b.CreateSelect(b.CreateFCmpOGT(v, acc), v, acc);
                     },
                     {});
          }};
}

// One task per (n, c) plane: sums the taps inside the input, then divides
// each output by its window's count (row count x column count: the window is
// a rectangle).
Lowering makeAveragePoolLowering() {
  return {planeCount, [](KernelBuilder& kb) {
            PoolShape s = poolShape(kb.node);
            bool include_pad = boolAttr(kb.node, "count_include_pad") != 0;
            llvm::IRBuilder<>& b = kb.b;
            llvm::Type* f32 = b.getFloatTy();
            llvm::Value* rows =
                constantTable(kb, divisorsAlongAxis(s.rows(), s.OH, include_pad), "rows");
            llvm::Value* cols =
                constantTable(kb, divisorsAlongAxis(s.cols(), s.OW, include_pad), "cols");
            llvm::Value* y = kb.output(0);
            emitPool(
                kb, s, llvm::ConstantFP::get(f32, 0.0),
                [&](llvm::Value* acc, llvm::Value* v) { return b.CreateFAdd(acc, v); },
                [&](llvm::Value* y_plane) {
                  emitLoop(
                      b, 0, s.OH,
                      [&](llvm::Value* oh) {
                        llvm::Value* row_count = loadF32(b, rows, oh);
                        llvm::Value* y_row =
                            b.CreateAdd(y_plane, b.CreateMul(oh, b.getInt64(s.OW)));
                        emitLoop(
                            b, 0, s.OW,
                            [&](llvm::Value* ow) {
                              llvm::Value* at = b.CreateAdd(y_row, ow);
                              llvm::Value* count = b.CreateFMul(row_count, loadF32(b, cols, ow));
                              storeF32(b, b.CreateFDiv(loadF32(b, y, at), count), y, at);
                            },
                            "ow");
                      },
                      "oh");
                });
          }};
}

}  // namespace nanoc::cpu
