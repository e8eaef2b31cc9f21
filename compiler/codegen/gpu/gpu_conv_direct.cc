// nanoc.ConvNHWC (ops/channels_last.h) with narrow groups, depthwise above
// all: a thread per output element Y[image, position, oc], in a grid-stride
// loop, accumulating over the taps (inside the input) and the group's input
// channels: acc = bias[oc] + sum X[image, q, g * C/G + ci] *
// W[tap, ci, oc], then the fused epilogue, act(acc + residual). Consecutive
// threads take consecutive output channels, so the reads of W, and of X
// where a group has one input channel, are contiguous across a warp. f32 exact (gpu_precision does
// not apply: there is no GEMM to put on tensor cores).
//
// Launch: 256 threads per block, ceil(outputs / 256) blocks up to 8192.
#include <llvm/IR/Intrinsics.h>

#include "compiler/codegen/cpu/epilogue.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/gpu/gpu_ir.h"
#include "compiler/ir/error.h"
#include "compiler/ops/channels_last.h"
#include "compiler/ops/conv.h"
#include "compiler/ops/epilogue.h"

namespace nanoc::gpu {
namespace {

constexpr int64_t kMinGemmGroupWidth = 16;

ConvShape directShape(const Node& node) {
  requireF32(node);
  return convShape(channelsFirstView(node)->node);
}

void emitDirectConv(GpuKernelBuilder& kb) {
  const ConvShape s = directShape(kb.node);
  const size_t rank = s.rank();
  const int64_t outs = product(s.out, 0, rank), in_plane = product(s.in, 0, rank);
  const int64_t taps = product(s.kernel, 0, rank), cg = s.cPerGroup(), mg = s.mPerGroup();
  const int64_t total = s.n * outs * s.m;
  if (total == 0) return;
  llvm::IRBuilder<>& b = kb.b;
  llvm::Type* f32 = b.getFloatTy();
  auto c = [&](int64_t v) { return b.getInt64(v); };
  const std::vector<int64_t> in_stride = convStridesOf(s.in);
  llvm::Value* X = kb.input_ptrs[0];
  llvm::Value* W = kb.input_ptrs[1];
  llvm::Value* bias = s.has_bias ? kb.input_ptrs[2] : nullptr;
  llvm::Value* Y = kb.output_ptrs[0];
  const EpilogueSpec epilogue = epilogueSpec(kb.node);
  llvm::Value* residual = epilogue.residual ? kb.input_ptrs[kResidualInput] : nullptr;
  emitGridStrideLoop(
      kb, total,
      [&](llvm::Value* i) {
        llvm::Value* oc = b.CreateURem(i, c(s.m));
        llvm::Value* m = b.CreateUDiv(i, c(s.m));
        llvm::Value* image = b.CreateUDiv(m, c(outs));
        llvm::Value* pos = b.CreateURem(m, c(outs));
        std::vector<llvm::Value*> start(rank);
        for (size_t d = rank; d-- > 0;) {
          llvm::Value* o = b.CreateURem(pos, c(s.out[d]));
          pos = b.CreateUDiv(pos, c(s.out[d]));
          start[d] = b.CreateSub(b.CreateMul(o, c(s.strides[d])), c(s.pads[d]));
        }
        llvm::Value* channel0 = b.CreateMul(b.CreateUDiv(oc, c(mg)), c(cg));
        llvm::Value* image_base = b.CreateMul(image, c(in_plane));
        llvm::Value* init = bias ? cpu::loadF32(b, bias, oc) : llvm::ConstantFP::get(f32, 0.0);
        std::vector<llvm::Value*> acc = emitCarriedStridedLoop(
            b, c(0), c(taps), c(1), {init},
            [&](llvm::Value* tap, const std::vector<llvm::Value*>& in) {
              llvm::Value* inside = b.getTrue();
              llvm::Value* pixel = image_base;
              llvm::Value* rest = tap;
              for (size_t d = rank; d-- > 0;) {
                llvm::Value* t_d = b.CreateURem(rest, c(s.kernel[d]));
                rest = b.CreateUDiv(rest, c(s.kernel[d]));
                llvm::Value* q = b.CreateAdd(start[d], b.CreateMul(t_d, c(s.dilations[d])));
                inside = b.CreateAnd(
                    inside, b.CreateAnd(b.CreateICmpSGE(q, c(0)), b.CreateICmpSLT(q, c(s.in[d]))));
                pixel = b.CreateAdd(pixel, b.CreateMul(q, c(in_stride[d])));
              }
              llvm::Value* x_base =
                  b.CreateSelect(inside, b.CreateAdd(b.CreateMul(pixel, c(s.c)), channel0), c(0));
              llvm::Value* w_base = b.CreateAdd(b.CreateMul(tap, c(cg * s.m)), oc);
              return emitCarriedStridedLoop(
                  b, c(0), c(cg), c(1), in,
                  [&](llvm::Value* ci, const std::vector<llvm::Value*>& sum) {
                    llvm::Value* x = cpu::loadF32(b, X, b.CreateAdd(x_base, ci));
                    x = b.CreateSelect(inside, x, llvm::ConstantFP::get(f32, 0.0));
                    llvm::Value* w =
                        cpu::loadF32(b, W, b.CreateAdd(w_base, b.CreateMul(ci, c(s.m))));
                    return std::vector<llvm::Value*>{
                        b.CreateIntrinsic(llvm::Intrinsic::fma, {f32}, {x, w, sum[0]})};
                  },
                  "ci");
            },
            "tap");
        // The fused epilogue (ops/epilogue.h): act(y + residual).
        llvm::Value* v = acc[0];
        if (residual) v = b.CreateFAdd(v, cpu::loadF32(b, residual, i));
        cpu::storeF32(b, cpu::emitActivation(b, epilogue, v), Y, i);
      },
      "out");
}

}  // namespace

bool isDirectConv(const Node& node) {
  if (node.op != "nanoc.ConvNHWC") return false;
  ConvShape s = directShape(node);
  return s.group > 1 && s.mPerGroup() < kMinGemmGroupWidth;
}

GpuLowering directConvGpuLowering() {
  GpuLowering lowering;
  lowering.supports = [](const Node& node) {
    directShape(node);
    return node.outputs.size() == 1;
  };
  lowering.launch = [](const Node& node) { return outputElementLaunch(node); };
  lowering.emit = emitDirectConv;
  return lowering;
}

}  // namespace nanoc::gpu
