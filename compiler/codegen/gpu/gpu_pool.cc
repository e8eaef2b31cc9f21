// MaxPool and AveragePool (f32, NCHW and any number of spatial dims, with
// ops/pool.h's geometry: kernel, strides, dilations, pads, ceil_mode,
// count_include_pad) on the GPU: one thread per output element in a
// grid-stride loop, each walking its window's taps. Padding never wins a max
// (a window without input taps gives the lowest float, as the reference);
// NaN never wins either. The average divides by the taps inside the input
// (count_include_pad 0) or inside the padded extent (1), as the reference.
//
// nanoc.MaxPoolNHWC and nanoc.AveragePoolNHWC (ops/channels_last.h) are the
// same kernel over [N, spatial..., C]: consecutive threads take consecutive
// channels of one output pixel, so each tap's reads are contiguous across a
// warp. nanoc.GlobalAveragePoolNHWC: a thread per (image, channel), summing
// the pixels in order (the reads of a warp contiguous at each pixel).
//
// Launch: 256 threads per block, ceil(outputs / 256) blocks up to 8192.
#include <algorithm>
#include <cfloat>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/gpu/gpu_ir.h"
#include "compiler/ir/error.h"
#include "compiler/ops/channels_last.h"
#include "compiler/ops/pool.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::gpu {
namespace {

// The node's pool geometry; a channels-last form's through its NCHW view.
PoolShape poolShapeOf(const Node& node) { return decodeAsChannelsFirst(node, poolShape); }

bool supportsPool(const Node& node) {
  if (node.inputs.size() != 1 || !node.inputs[0] || node.outputs.size() != 1) return false;
  if (node.inputs[0]->type.dtype != DType::F32) return false;
  poolShapeOf(node);
  return true;
}

GpuLaunch poolLaunch(const Node& node) {
  PoolShape s = poolShapeOf(node);
  return perElementLaunch(s.planes() * s.outPlane());
}

void emitPool(GpuKernelBuilder& kb, bool max, bool channels_last) {
  const PoolShape s = poolShapeOf(kb.node);
  const bool include_pad = !max && kb.node.i("count_include_pad", 0) != 0;
  const int64_t total = s.planes() * s.outPlane();
  if (total == 0) return;
  llvm::IRBuilder<>& b = kb.b;
  llvm::Type* f32 = b.getFloatTy();
  auto c = [&](int64_t v) { return b.getInt64(v); };
  const size_t k = s.axes.size();
  // Input strides of the spatial dims within a plane.
  std::vector<int64_t> in_stride(k, 1);
  for (size_t d = k; d-- > 1;) in_stride[d - 1] = in_stride[d] * s.axes[d].size;
  llvm::Value* X = kb.input_ptrs[0];
  llvm::Value* Y = kb.output_ptrs[0];
  emitGridStrideLoop(
      kb, total,
      [&](llvm::Value* i) {
        std::vector<llvm::Value*> start(k);
        llvm::Value* rest = i;
        // Channels-last: the channel is the fastest index.
        llvm::Value* channel = channels_last ? b.CreateURem(rest, c(s.c)) : nullptr;
        if (channels_last) rest = b.CreateUDiv(rest, c(s.c));
        for (size_t d = k; d-- > 0;) {
          llvm::Value* o = b.CreateURem(rest, c(s.out[d]));
          rest = b.CreateUDiv(rest, c(s.out[d]));
          start[d] = b.CreateSub(b.CreateMul(o, c(s.axes[d].stride)), c(s.axes[d].pad_begin));
        }
        llvm::Value* plane_base = b.CreateMul(rest, c(s.inPlane()));
        llvm::Value* init = llvm::ConstantFP::get(f32, max ? -FLT_MAX : 0.0);
        // Nested loops over the window's taps, axis by axis, carrying the
        // max or the sum and the count; offset / inside / padded so far.
        std::function<std::vector<llvm::Value*>(size_t, llvm::Value*, llvm::Value*, llvm::Value*,
                                                const std::vector<llvm::Value*>&)>
            taps = [&](size_t d, llvm::Value* offset, llvm::Value* inside, llvm::Value* padded,
                       const std::vector<llvm::Value*>& acc) -> std::vector<llvm::Value*> {
          if (d == k) {
            llvm::Value* at = b.CreateAdd(plane_base, offset);
            if (channels_last) at = b.CreateAdd(b.CreateMul(at, c(s.c)), channel);
            at = b.CreateSelect(inside, at, c(0));
            llvm::Value* v = cpu::loadF32(b, X, at);
            if (max) {
              llvm::Value* wins = b.CreateAnd(inside, b.CreateFCmpOGT(v, acc[0]));
              return {b.CreateSelect(wins, v, acc[0]), acc[1]};
            }
            llvm::Value* sum =
                b.CreateFAdd(acc[0], b.CreateSelect(inside, v, llvm::ConstantFP::get(f32, 0.0)));
            llvm::Value* counts = include_pad ? padded : inside;
            return {sum, b.CreateAdd(acc[1], b.CreateZExt(counts, b.getInt64Ty()))};
          }
          const PoolAxis& a = s.axes[d];
          return emitCarriedStridedLoop(
              b, c(0), c(a.kernel), c(1), acc,
              [&](llvm::Value* t, const std::vector<llvm::Value*>& in) {
                llvm::Value* pos = b.CreateAdd(start[d], b.CreateMul(t, c(a.dilation)));
                llvm::Value* in_d =
                    b.CreateAnd(b.CreateICmpSGE(pos, c(0)), b.CreateICmpSLT(pos, c(a.size)));
                llvm::Value* pad_d = b.CreateAnd(b.CreateICmpSGE(pos, c(-a.pad_begin)),
                                                 b.CreateICmpSLT(pos, c(a.size + a.pad_end)));
                return taps(d + 1, b.CreateAdd(offset, b.CreateMul(pos, c(in_stride[d]))),
                            b.CreateAnd(inside, in_d), b.CreateAnd(padded, pad_d), in);
              },
              "tap");
        };
        std::vector<llvm::Value*> r = taps(0, c(0), b.getTrue(), b.getTrue(), {init, c(0)});
        llvm::Value* y = r[0];
        if (!max) {
          llvm::Value* count = b.CreateUIToFP(r[1], f32);
          y = b.CreateSelect(b.CreateICmpEQ(r[1], c(0)), llvm::ConstantFP::get(f32, 0.0),
                             b.CreateFDiv(r[0], count));
        }
        cpu::storeF32(b, y, Y, i);
      },
      "out");
}

GpuLowering makePoolLowering(bool max, bool channels_last) {
  GpuLowering lowering;
  lowering.supports = supportsPool;
  lowering.launch = poolLaunch;
  lowering.emit = [max, channels_last](GpuKernelBuilder& kb) { emitPool(kb, max, channels_last); };
  return lowering;
}

// X [N, spatial..., C] -> Y [N, 1..., C]: Y[n, c] = the mean of X[n, p, c]
// over the pixels p (0 for none, as the reference).
void emitGlobalAveragePoolNhwc(GpuKernelBuilder& kb) {
  const std::vector<int64_t>& x = kb.node.inputs[0]->type.dims;
  const int64_t channels = x.back(), pixels = product(x, 1, x.size() - 1);
  const int64_t total = x[0] * channels;
  if (total == 0) return;
  llvm::IRBuilder<>& b = kb.b;
  llvm::Type* f32 = b.getFloatTy();
  auto c = [&](int64_t v) { return b.getInt64(v); };
  llvm::Value* X = kb.input_ptrs[0];
  llvm::Value* Y = kb.output_ptrs[0];
  emitGridStrideLoop(
      kb, total,
      [&](llvm::Value* i) {
        llvm::Value* channel = b.CreateURem(i, c(channels));
        llvm::Value* base = b.CreateMul(b.CreateUDiv(i, c(channels)), c(pixels * channels));
        std::vector<llvm::Value*> sum = emitCarriedStridedLoop(
            b, c(0), c(pixels), c(1), {llvm::ConstantFP::get(f32, 0.0)},
            [&](llvm::Value* p, const std::vector<llvm::Value*>& acc) {
              llvm::Value* at =
                  b.CreateAdd(base, b.CreateAdd(b.CreateMul(p, c(channels)), channel));
              return std::vector<llvm::Value*>{b.CreateFAdd(acc[0], cpu::loadF32(b, X, at))};
            },
            "pixel");
        llvm::Value* y = pixels == 0 ? llvm::ConstantFP::get(f32, 0.0)
                                     : b.CreateFDiv(sum[0], llvm::ConstantFP::get(f32, pixels));
        cpu::storeF32(b, y, Y, i);
      },
      "out");
}

GpuLowering makeGlobalAveragePoolNhwcLowering() {
  GpuLowering lowering;
  lowering.supports = [](const Node& node) {
    return node.inputs.size() == 1 && node.inputs[0] && node.outputs.size() == 1 &&
           node.inputs[0]->type.dtype == DType::F32 && node.inputs[0]->type.rank() >= 3;
  };
  lowering.launch = outputElementLaunch;
  lowering.emit = emitGlobalAveragePoolNhwc;
  return lowering;
}

}  // namespace

std::vector<std::pair<std::string, GpuLowering>> poolGpuLowerings() {
  return {{"MaxPool", makePoolLowering(true, false)},
          {"AveragePool", makePoolLowering(false, false)},
          {"nanoc.MaxPoolNHWC", makePoolLowering(true, true)},
          {"nanoc.AveragePoolNHWC", makePoolLowering(false, true)},
          {"nanoc.GlobalAveragePoolNHWC", makeGlobalAveragePoolNhwcLowering()}};
}

}  // namespace nanoc::gpu
