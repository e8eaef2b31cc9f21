// BatchNormalization in inference form (f32 X [N, C, ...], scale, B, mean,
// var [C]; training mode is decomposed at import) on the GPU: one thread per
// element, y = (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + B[c] in
// f32 (the reference in double). Launch: 256 threads per block,
// ceil(n / 256) blocks up to 8192.
#include <llvm/IR/Intrinsics.h>

#include <algorithm>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/gpu/gpu_ir.h"
#include "compiler/ir/error.h"

namespace nanoc::gpu {
namespace {

GpuLowering makeBatchNormLowering() {
  GpuLowering lowering;
  lowering.supports = [](const Node& node) {
    if (node.inputs.size() != 5 || node.outputs.size() != 1) return false;
    for (const Value* v : node.inputs)
      if (!v || v->type.dtype != DType::F32) return false;
    const TensorType& x = node.inputs[0]->type;
    if (x.rank() < 2) return false;
    for (size_t i = 1; i < 5; ++i)
      if (node.inputs[i]->type.numel() != x.dims[1]) return false;
    return true;
  };
  lowering.launch = outputElementLaunch;
  lowering.emit = [](GpuKernelBuilder& kb) {
    const TensorType& x = kb.node.inputs[0]->type;
    const int64_t n = x.numel();
    if (n == 0) return;
    int64_t inner = 1;
    for (size_t d = 2; d < x.rank(); ++d) inner *= x.dims[d];
    const int64_t channels = x.dims[1];
    llvm::IRBuilder<>& b = kb.b;
    llvm::Type* f32 = b.getFloatTy();
    const double eps = kb.node.f("epsilon");
    emitGridStrideLoop(
        kb, n,
        [&](llvm::Value* i) {
          llvm::Value* c = b.CreateURem(b.CreateUDiv(i, b.getInt64(inner)), b.getInt64(channels));
          auto at = [&](size_t input) { return cpu::loadF32(b, kb.input_ptrs[input], c); };
          llvm::Value* inv_std = b.CreateFDiv(
              llvm::ConstantFP::get(f32, 1.0),
              b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt,
                                     b.CreateFAdd(at(4), llvm::ConstantFP::get(f32, eps))));
          llvm::Value* y =
              b.CreateFMul(b.CreateFSub(cpu::loadF32(b, kb.input_ptrs[0], i), at(3)), inv_std);
          y = b.CreateFAdd(b.CreateFMul(y, at(1)), at(2));
          cpu::storeF32(b, y, kb.output_ptrs[0], i);
        },
        "elem");
  };
  return lowering;
}

}  // namespace

std::vector<std::pair<std::string, GpuLowering>> batchNormGpuLowerings() {
  return {{"BatchNormalization", makeBatchNormLowering()}};
}

}  // namespace nanoc::gpu
