// The decoder side of a U-Net on the GPU: ConvTranspose and Resize (f32,
// the model's NCHW layout), so that neither sends its tensor to the host and
// back (unet_small took 8-11x ONNX Runtime's CUDA time on an H100 with both
// on the CPU: two round trips and the host's kernels mid-graph).
//
// ConvTranspose (any number of spatial dims, groups, pads, strides,
// dilations, output_padding): a thread per output element Y[n, m, o...]
// gathers what the op scatters. For each kernel tap t the input position
// along dim d is (o_d + pad_begin_d - t_d * dilation_d) / stride_d where that
// divides exactly and lands inside the input; a tap that does not feed o is
// skipped (a branch, so a stride-2 2 x 2 kernel costs one tap of four), and a
// tap that does sums the group's input channels: acc = bias[m] + sum
// X[n, c, i...] * W[c, m % (M / group), t...], in f32 with fma (the host
// reference sums in f64).
//
// Resize: the separable taps of ops/resize.h, computed at compile time as
// for the CPU lowering (cpu/lower_resize.cc), become constant tables in
// global memory (per resized axis: input offsets, weights unless nearest,
// and the outside flags of tf_crop_and_resize); a thread per output element
// sums the product of its axes' taps. Every mode and coordinate transform
// of the op; f32 only on the GPU (nearest on other dtypes, and f64, stay on
// the host).
//
// nanoc.ConvTransposeNHWC and nanoc.ResizeNHWC (ops/channels_last.h) are
// the same kernels over [N, spatial..., C]: consecutive threads take
// consecutive channels of one output pixel, and a ConvTranspose thread reads
// its group's input channels of one pixel contiguously. A U-Net's decoder
// then stays channels-last between its convolutions.
//
// Launch: 256 threads per block, ceil(outputs / 256) blocks up to 8192.
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Intrinsics.h>

#include <functional>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/gpu/gpu_ir.h"
#include "compiler/ir/error.h"
#include "compiler/ops/channels_last.h"
#include "compiler/ops/conv.h"
#include "compiler/ops/resize.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::gpu {
namespace {

// ---- ConvTranspose ----

// The node's geometry; a channels-last form's through its NCHW view.
ConvShape convTransposeShapeOf(const Node& node) {
  return decodeAsChannelsFirst(node, convTransposeShape);
}

void emitConvTranspose(GpuKernelBuilder& kb, bool channels_last) {
  const ConvShape s = convTransposeShapeOf(kb.node);
  const size_t rank = s.rank();
  const int64_t outs = product(s.out, 0, rank), in_plane = product(s.in, 0, rank);
  const int64_t taps = product(s.kernel, 0, rank), cg = s.cPerGroup(), mg = s.mPerGroup();
  const int64_t total = s.n * s.m * outs;
  if (total == 0) return;
  llvm::IRBuilder<>& b = kb.b;
  llvm::Type* f32 = b.getFloatTy();
  auto c = [&](int64_t v) { return b.getInt64(v); };
  const std::vector<int64_t> in_stride = convStridesOf(s.in);
  llvm::Value* X = kb.input_ptrs[0];
  llvm::Value* W = kb.input_ptrs[1];
  llvm::Value* bias = kb.input_ptrs.size() > 2 ? kb.input_ptrs[2] : nullptr;
  llvm::Value* Y = kb.output_ptrs[0];
  emitGridStrideLoop(
      kb, total,
      [&](llvm::Value* i) {
        // Y [N, M, out...], or [N, out..., M] channels-last.
        llvm::Value* m = channels_last ? b.CreateURem(i, c(s.m))
                                       : b.CreateURem(b.CreateUDiv(i, c(outs)), c(s.m));
        llvm::Value* pos = channels_last ? b.CreateUDiv(i, c(s.m)) : b.CreateURem(i, c(outs));
        std::vector<llvm::Value*> o(rank);
        for (size_t d = rank; d-- > 0;) {
          o[d] = b.CreateURem(pos, c(s.out[d]));
          pos = b.CreateUDiv(pos, c(s.out[d]));
        }
        llvm::Value* image = channels_last ? pos : b.CreateUDiv(i, c(outs * s.m));
        llvm::Value* group = b.CreateUDiv(m, c(mg));
        llvm::Value* mi = b.CreateURem(m, c(mg));
        // X's first channel of the group (a pixel's offset added per tap),
        // and W's [c, mi] row for it; channel ci of the group one element
        // (channels-last) or one plane further.
        const int64_t x_pixel = channels_last ? s.c : 1;
        const int64_t x_channel = channels_last ? 1 : in_plane;
        llvm::Value* x_base =
            channels_last
                ? b.CreateAdd(b.CreateMul(image, c(in_plane * s.c)), b.CreateMul(group, c(cg)))
                : b.CreateMul(b.CreateAdd(b.CreateMul(image, c(s.c)), b.CreateMul(group, c(cg))),
                              c(in_plane));
        llvm::Value* w_base =
            b.CreateMul(b.CreateAdd(b.CreateMul(b.CreateMul(group, c(cg)), c(mg)), mi), c(taps));
        llvm::Value* init = bias ? cpu::loadF32(b, bias, m) : llvm::ConstantFP::get(f32, 0.0);
        std::vector<llvm::Value*> acc = emitCarriedStridedLoop(
            b, c(0), c(taps), c(1), {init},
            [&](llvm::Value* tap, const std::vector<llvm::Value*>& in) {
              llvm::Value* feeds = b.getTrue();
              llvm::Value* pixel = c(0);
              llvm::Value* rest = tap;
              for (size_t d = rank; d-- > 0;) {
                llvm::Value* t_d = b.CreateURem(rest, c(s.kernel[d]));
                rest = b.CreateUDiv(rest, c(s.kernel[d]));
                // The input pixel q with q * stride = o + pad_begin - t * dilation.
                const cpu::WindowSource src = cpu::emitWindowSource(
                    b, o[d], t_d, s.pads[d], s.dilations[d], s.strides[d], s.in[d]);
                llvm::Value* q = src.index;
                feeds = b.CreateAnd(feeds, src.valid);
                pixel = b.CreateAdd(pixel, b.CreateMul(q, c(in_stride[d])));
              }
              // A tap that does not feed this output skips its channels.
              llvm::BasicBlock* from = b.GetInsertBlock();
              llvm::Function* fn = from->getParent();
              auto* sum_block = llvm::BasicBlock::Create(b.getContext(), "tap.feeds", fn);
              auto* join = llvm::BasicBlock::Create(b.getContext(), "tap.next", fn);
              b.CreateCondBr(feeds, sum_block, join);
              b.SetInsertPoint(sum_block);
              llvm::Value* x_at = b.CreateAdd(x_base, b.CreateMul(pixel, c(x_pixel)));
              llvm::Value* w_at = b.CreateAdd(w_base, tap);
              std::vector<llvm::Value*> summed = emitCarriedStridedLoop(
                  b, c(0), c(cg), c(1), in,
                  [&](llvm::Value* ci, const std::vector<llvm::Value*>& sum) {
                    llvm::Value* x =
                        cpu::loadF32(b, X, b.CreateAdd(x_at, b.CreateMul(ci, c(x_channel))));
                    llvm::Value* w =
                        cpu::loadF32(b, W, b.CreateAdd(w_at, b.CreateMul(ci, c(mg * taps))));
                    return std::vector<llvm::Value*>{
                        b.CreateIntrinsic(llvm::Intrinsic::fma, {f32}, {x, w, sum[0]})};
                  },
                  "ci");
              llvm::BasicBlock* summed_end = b.GetInsertBlock();
              b.CreateBr(join);
              b.SetInsertPoint(join);
              llvm::PHINode* next = b.CreatePHI(f32, 2);
              next->addIncoming(in[0], from);
              next->addIncoming(summed[0], summed_end);
              return std::vector<llvm::Value*>{next};
            },
            "tap");
        cpu::storeF32(b, acc[0], Y, i);
      },
      "out");
}

GpuLowering convTransposeLowering(bool channels_last) {
  GpuLowering lowering;
  lowering.supports = [](const Node& node) {
    requireF32(node);
    convTransposeShapeOf(node);
    return node.outputs.size() == 1 && node.outputs[0]->type.dtype == DType::F32;
  };
  lowering.launch = outputElementLaunch;
  lowering.emit = [channels_last](GpuKernelBuilder& kb) { emitConvTranspose(kb, channels_last); };
  return lowering;
}

// ---- Resize ----

// Per axis of the op (NCHW for a channels-last form's view): its taps, its
// output extent, X's stride along it, and which dim of X and Y holds it.
struct ResizeShape {
  ResizeParams params;
  std::vector<ResizeAxis> axes;
  std::vector<int64_t> out, x_strides, dim_of;
};

ResizeShape resizeShape(const Node& node) {
  ResizeShape s = decodeAsChannelsFirst(node, [&node](const Node& base) {
    ResizeShape s;
    s.params = resizeParams(base);
    const std::vector<int64_t>& in = base.inputs[0]->type.dims;
    s.out = s.params.sizes;
    for (size_t a = 0; a < in.size(); ++a) s.axes.push_back(resizeAxis(base, s.params, a, in[a]));
    if (base.outputs.size() != 1 || base.outputs[0]->type.dims != s.out)
      failNode(node, "output must be " + dimsStr(s.out));
    return s;
  });
  // Axis a is dim dim_of[a] of X and Y: itself, or NHWC's.
  const size_t rank = s.out.size();
  if (!channelsFirstOp(node.op).empty()) s.dim_of = toChannelsFirst(rank);
  for (size_t a = s.dim_of.size(); a < rank; ++a) s.dim_of.push_back(static_cast<int64_t>(a));
  const std::vector<int64_t> strides = convStridesOf(node.inputs[0]->type.dims);
  for (size_t a = 0; a < rank; ++a)
    s.x_strides.push_back(strides[static_cast<size_t>(s.dim_of[a])]);
  return s;
}

// A constant table in global memory, named after the kernel.
template <typename T>
llvm::Value* globalTable(GpuKernelBuilder& kb, const std::vector<T>& values,
                         const std::string& what) {
  llvm::Constant* init = llvm::ConstantDataArray::get(kb.module.getContext(), values);
  auto* gv = new llvm::GlobalVariable(
      kb.module, init->getType(), /*isConstant=*/true, llvm::GlobalValue::InternalLinkage, init,
      kb.fn->getName() + "." + what, nullptr, llvm::GlobalValue::NotThreadLocal, kGlobalSpace);
  gv->setAlignment(llvm::Align(8));
  return gv;
}

void emitResize(GpuKernelBuilder& kb) {
  const ResizeShape s = resizeShape(kb.node);
  const ResizeParams& p = s.params;
  const size_t rank = s.out.size();
  const int64_t total = product(s.out, 0, rank);
  if (total == 0) return;
  llvm::IRBuilder<>& b = kb.b;
  llvm::Type* f32 = b.getFloatTy();
  auto c = [&](int64_t v) { return b.getInt64(v); };
  const bool nearest = p.mode == "nearest";
  struct Tables {
    llvm::Value *offset = nullptr, *weight = nullptr, *outside = nullptr;
  };
  std::vector<Tables> tables(rank);
  for (size_t a = 0; a < rank; ++a) {
    const ResizeAxis& ax = s.axes[a];
    if (ax.identity) continue;
    const std::string axis = std::to_string(a);
    std::vector<int64_t> offsets(ax.index.size());
    for (size_t k = 0; k < offsets.size(); ++k) offsets[k] = ax.index[k] * s.x_strides[a];
    tables[a].offset = globalTable(kb, offsets, "offset" + axis);
    if (!nearest)
      tables[a].weight =
          globalTable(kb, std::vector<float>(ax.weight.begin(), ax.weight.end()), "weight" + axis);
    if (!ax.outside.empty()) tables[a].outside = globalTable(kb, ax.outside, "outside" + axis);
  }
  llvm::Value* X = kb.input_ptrs[0];
  llvm::Value* Y = kb.output_ptrs[0];
  emitGridStrideLoop(
      kb, total,
      [&](llvm::Value* i) {
        // Y's position along each of its dims, then along each axis.
        const std::vector<int64_t>& y_dims = kb.node.outputs[0]->type.dims;
        std::vector<llvm::Value*> at_dim(rank), o(rank);
        llvm::Value* rest = i;
        for (size_t d = rank; d-- > 0;) {
          at_dim[d] = b.CreateURem(rest, c(y_dims[d]));
          rest = b.CreateUDiv(rest, c(y_dims[d]));
        }
        for (size_t a = 0; a < rank; ++a) o[a] = at_dim[static_cast<size_t>(s.dim_of[a])];
        llvm::Value* inside = nullptr;
        for (size_t a = 0; a < rank; ++a)
          if (tables[a].outside) {
            llvm::Value* in_a = b.CreateICmpEQ(
                cpu::loadElement(b, DType::U8, tables[a].outside, o[a]), b.getInt8(0));
            inside = inside ? b.CreateAnd(inside, in_a) : in_a;
          }
        // Sum over the product of the resized axes' taps (nearest: one tap
        // of weight 1 each, a gather).
        std::function<llvm::Value*(size_t, llvm::Value*, llvm::Value*, llvm::Value*)> taps =
            [&](size_t a, llvm::Value* src, llvm::Value* weight, llvm::Value* acc) {
              if (a == rank) {
                llvm::Value* v = cpu::loadF32(b, X, src);
                if (nearest) return v;
                return weight ? b.CreateIntrinsic(llvm::Intrinsic::fma, {f32}, {weight, v, acc})
                              : b.CreateFAdd(acc, v);
              }
              const ResizeAxis& ax = s.axes[a];
              if (ax.identity)
                return taps(a + 1, b.CreateAdd(src, b.CreateMul(o[a], c(s.x_strides[a]))), weight,
                            acc);
              auto tap = [&](llvm::Value* t, llvm::Value* acc_in) {
                llvm::Value* k = b.CreateAdd(b.CreateMul(o[a], c(ax.taps)), t);
                llvm::Value* at =
                    b.CreateAdd(src, cpu::loadElement(b, DType::I64, tables[a].offset, k));
                if (nearest) return taps(a + 1, at, nullptr, acc_in);
                llvm::Value* w = cpu::loadF32(b, tables[a].weight, k);
                return taps(a + 1, at, weight ? b.CreateFMul(weight, w) : w, acc_in);
              };
              if (ax.taps == 1) return tap(c(0), acc);
              return emitCarriedStridedLoop(
                  b, c(0), c(ax.taps), c(1), {acc},
                  [&](llvm::Value* t, const std::vector<llvm::Value*>& carried) {
                    return std::vector<llvm::Value*>{tap(t, carried[0])};
                  },
                  "tap")[0];
            };
        llvm::Value* value = taps(0, c(0), nullptr, llvm::ConstantFP::get(f32, 0.0));
        if (inside)
          value = b.CreateSelect(inside, value, llvm::ConstantFP::get(f32, p.extrapolation_value));
        cpu::storeF32(b, value, Y, i);
      },
      "out");
}

GpuLowering resizeLowering() {
  GpuLowering lowering;
  lowering.supports = [](const Node& node) {
    if (node.inputs.size() != 1 || !node.inputs[0] || node.inputs[0]->type.dtype != DType::F32)
      return false;
    resizeShape(node);
    return true;
  };
  lowering.launch = outputElementLaunch;
  lowering.emit = emitResize;
  return lowering;
}

}  // namespace

std::vector<std::pair<std::string, GpuLowering>> upsampleGpuLowerings() {
  return {{"ConvTranspose", convTransposeLowering(false)},
          {"nanoc.ConvTransposeNHWC", convTransposeLowering(true)},
          {"Resize", resizeLowering()},
          {"nanoc.ResizeNHWC", resizeLowering()}};
}

}  // namespace nanoc::gpu
