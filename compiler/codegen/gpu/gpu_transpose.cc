// Transpose (any dtype; output dim i is input dim perm[i]) on the GPU: one
// thread per output element in a grid-stride loop, its input element found by
// splitting the output index over the output dims (dims of size 1 dropped,
// runs of dims that stay adjacent in order merged). Elements are copied in
// their storage type. Launch: 256 threads per block, ceil(n / 256) blocks up
// to 8192; indices i32 below 2^30 elements, i64 beyond.
#include <algorithm>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/gpu/gpu_ir.h"
#include "compiler/ir/error.h"

namespace nanoc::gpu {
namespace {

// The output's dims and, per dim, the input stride of its element.
struct TransposeMap {
  std::vector<int64_t> dims, in_strides;
};

TransposeMap transposeMap(const Node& node) {
  const TensorType& x = node.inputs[0]->type;
  const std::vector<int64_t>& perm = node.ints("perm");
  if (perm.size() != x.rank())
    throw CompileError("node '" + node.name + "' (Transpose): perm does not match the rank");
  std::vector<int64_t> stride(x.rank(), 1);
  for (size_t d = x.rank(); d-- > 1;) stride[d - 1] = stride[d] * x.dims[d];
  TransposeMap map;
  for (size_t i = 0; i < perm.size(); ++i) {
    int64_t p = perm[i];
    if (p < 0 || p >= static_cast<int64_t>(x.rank()))
      throw CompileError("node '" + node.name + "' (Transpose): perm out of range");
    if (x.dims[p] == 1) continue;
    // Merge with the previous output dim when it is the input dim just
    // before this one (so the pair is one contiguous run in both).
    if (!map.dims.empty() && map.in_strides.back() == stride[p] * x.dims[p]) {
      map.dims.back() *= x.dims[p];
      map.in_strides.back() = stride[p];
      continue;
    }
    map.dims.push_back(x.dims[p]);
    map.in_strides.push_back(stride[p]);
  }
  return map;
}

GpuLowering makeTransposeLowering() {
  GpuLowering lowering;
  lowering.supports = [](const Node& node) {
    if (node.inputs.size() != 1 || !node.inputs[0] || node.outputs.size() != 1) return false;
    transposeMap(node);
    return node.outputs[0]->type.dtype == node.inputs[0]->type.dtype;
  };
  lowering.launch = outputElementLaunch;
  lowering.emit = [](GpuKernelBuilder& kb) {
    TransposeMap map = transposeMap(kb.node);
    const int64_t n = kb.node.outputs[0]->type.numel();
    if (n == 0) return;
    llvm::IRBuilder<>& b = kb.b;
    const DType dtype = kb.node.inputs[0]->type.dtype;
    llvm::IntegerType* T = indexType(b, n);
    auto c = [&](int64_t v) { return llvm::ConstantInt::get(T, v); };
    llvm::Value* first =
        b.CreateAdd(b.CreateMul(b.CreateZExt(blockIdX(b), T), c(kb.launch.block[0])),
                    b.CreateZExt(threadIdX(b), T));
    emitStridedLoop(
        b, first, c(n), c(int64_t{kb.launch.grid[0]} * kb.launch.block[0]),
        [&](llvm::Value* i) {
          llvm::Value* rest = i;
          llvm::Value* at = c(0);
          for (size_t d = map.dims.size(); d-- > 0;) {
            llvm::Value* idx = d == 0 ? rest : b.CreateURem(rest, c(map.dims[d]));
            if (d > 0) rest = b.CreateUDiv(rest, c(map.dims[d]));
            at = b.CreateAdd(at, b.CreateMul(idx, c(map.in_strides[d])));
          }
          llvm::Value* v =
              cpu::loadElement(b, dtype, kb.input_ptrs[0], b.CreateZExt(at, b.getInt64Ty()));
          cpu::storeElement(b, dtype, v, kb.output_ptrs[0], b.CreateZExt(i, b.getInt64Ty()));
        },
        "elem");
  };
  return lowering;
}

}  // namespace

std::vector<std::pair<std::string, GpuLowering>> transposeGpuLowerings() {
  return {{"Transpose", makeTransposeLowering()}};
}

}  // namespace nanoc::gpu
