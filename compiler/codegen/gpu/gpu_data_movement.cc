// Data movement on the GPU (any dtype, copied in its storage type), one
// thread per output element in a grid-stride loop, i64 indices:
//   Slice, Expand  a strided read of the input (ops/data_movement.h's
//                  StridedView: base + sum index_d * stride_d, strides
//                  negative for a reversed slice, 0 for a broadcast dim)
//   Concat         the output's (outer, position on the axis, inner) picks
//                  the operand whose range holds the position
//   Gather         data[outer, clampIndex(indices[j]), inner]: a bad index
//                  reads a valid element, as the reference and the CPU
// Launch: 256 threads per block, ceil(n / 256) blocks up to 8192.
#include <algorithm>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/gpu/gpu_ir.h"
#include "compiler/ir/error.h"
#include "compiler/ops/data_movement.h"

namespace nanoc::gpu {
namespace {

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t d = begin; d < end; ++d) p *= dims[d];
  return p;
}

// for each output element i: body(i), i64.
void emitPerElement(GpuKernelBuilder& kb, const std::function<void(llvm::Value*)>& body) {
  emitGridStrideLoop(kb, kb.node.outputs[0]->type.numel(), body);
}

bool oneOutputOfInputDType(const Node& node) {
  return node.outputs.size() == 1 && !node.inputs.empty() && node.inputs[0] &&
         node.outputs[0]->type.dtype == node.inputs[0]->type.dtype;
}

// ---- Slice, Expand ----

GpuLowering makeStridedLowering(bool slice) {
  GpuLowering lowering;
  lowering.supports = [slice](const Node& node) {
    if (!oneOutputOfInputDType(node) || node.inputs.size() != 1) return false;
    StridedView v = slice ? sliceView(node) : expandView(node);
    return v.strides.size() == node.outputs[0]->type.rank();
  };
  lowering.launch = outputElementLaunch;
  lowering.emit = [slice](GpuKernelBuilder& kb) {
    const TensorType& y = kb.node.outputs[0]->type;
    if (y.numel() == 0) return;
    StridedView v = slice ? sliceView(kb.node) : expandView(kb.node);
    llvm::IRBuilder<>& b = kb.b;
    const DType dtype = y.dtype;
    emitPerElement(kb, [&](llvm::Value* i) {
      llvm::Value* rest = i;
      llvm::Value* at = b.getInt64(v.base);
      for (size_t d = y.rank(); d-- > 0;) {
        if (y.dims[d] == 1) continue;
        llvm::Value* idx = b.CreateURem(rest, b.getInt64(y.dims[d]));
        rest = b.CreateUDiv(rest, b.getInt64(y.dims[d]));
        at = b.CreateAdd(at, b.CreateMul(idx, b.getInt64(v.strides[d])));
      }
      cpu::storeElement(b, dtype, cpu::loadElement(b, dtype, kb.input_ptrs[0], at),
                        kb.output_ptrs[0], i);
    });
  };
  return lowering;
}

// ---- Concat ----

GpuLowering makeConcatLowering() {
  GpuLowering lowering;
  lowering.supports = [](const Node& node) {
    if (!oneOutputOfInputDType(node)) return false;
    for (const Value* v : node.inputs)
      if (!v || v->type.dtype != node.outputs[0]->type.dtype) return false;
    int64_t axis = node.i("axis");
    return axis >= 0 && axis < static_cast<int64_t>(node.outputs[0]->type.rank());
  };
  lowering.launch = outputElementLaunch;
  lowering.emit = [](GpuKernelBuilder& kb) {
    const TensorType& y = kb.node.outputs[0]->type;
    if (y.numel() == 0) return;
    const size_t axis = static_cast<size_t>(kb.node.i("axis"));
    const int64_t inner = product(y.dims, axis + 1, y.rank()), total = y.dims[axis];
    llvm::IRBuilder<>& b = kb.b;
    const DType dtype = y.dtype;
    emitPerElement(kb, [&](llvm::Value* i) {
      llvm::Value* in_idx = b.CreateURem(i, b.getInt64(inner));
      llvm::Value* rest = b.CreateUDiv(i, b.getInt64(inner));
      llvm::Value* a = b.CreateURem(rest, b.getInt64(total));
      llvm::Value* outer = b.CreateUDiv(rest, b.getInt64(total));
      // The operand holding position a: the last one starting at or before
      // it (operands empty along the axis never do).
      llvm::Value* ptr = nullptr;
      llvm::Value* at = nullptr;
      int64_t start = 0;
      for (size_t x = 0; x < kb.node.inputs.size(); ++x) {
        int64_t size = kb.node.inputs[x]->type.dims[axis];
        if (size == 0) continue;
        // outer * (size * inner) + (a - start) * inner + in_idx
        llvm::Value* off = b.CreateAdd(
            b.CreateMul(outer, b.getInt64(size * inner)),
            b.CreateAdd(b.CreateMul(b.CreateSub(a, b.getInt64(start)), b.getInt64(inner)), in_idx));
        if (!ptr) {
          ptr = kb.input_ptrs[x];
          at = off;
        } else {
          llvm::Value* here = b.CreateICmpUGE(a, b.getInt64(start));
          ptr = b.CreateSelect(here, kb.input_ptrs[x], ptr);
          at = b.CreateSelect(here, off, at);
        }
        start += size;
      }
      cpu::storeElement(b, dtype, cpu::loadElement(b, dtype, ptr, at), kb.output_ptrs[0], i);
    });
  };
  return lowering;
}

// ---- Gather ----

GpuLowering makeGatherLowering() {
  GpuLowering lowering;
  lowering.supports = [](const Node& node) {
    if (!oneOutputOfInputDType(node) || node.inputs.size() != 2 || !node.inputs[1]) return false;
    DType t = node.inputs[1]->type.dtype;
    int64_t axis = node.i("axis");
    return (t == DType::I32 || t == DType::I64) && axis >= 0 &&
           axis < static_cast<int64_t>(node.inputs[0]->type.rank());
  };
  lowering.launch = outputElementLaunch;
  lowering.emit = [](GpuKernelBuilder& kb) {
    const TensorType& y = kb.node.outputs[0]->type;
    if (y.numel() == 0) return;
    const TensorType& data = kb.node.inputs[0]->type;
    const TensorType& indices = kb.node.inputs[1]->type;
    const size_t axis = static_cast<size_t>(kb.node.i("axis"));
    const int64_t dim = data.dims[axis], count = indices.numel();
    const int64_t inner = product(data.dims, axis + 1, data.rank());
    llvm::IRBuilder<>& b = kb.b;
    const DType dtype = y.dtype;
    emitPerElement(kb, [&](llvm::Value* i) {
      llvm::Value* in_idx = b.CreateURem(i, b.getInt64(inner));
      llvm::Value* rest = b.CreateUDiv(i, b.getInt64(inner));
      llvm::Value* j = b.CreateURem(rest, b.getInt64(count));
      llvm::Value* outer = b.CreateUDiv(rest, b.getInt64(count));
      llvm::Value* k = cpu::loadElement(b, indices.dtype, kb.input_ptrs[1], j);
      k = b.CreateSExt(k, b.getInt64Ty());
      // clampIndex: negative counts from the end once, then clamp.
      k = b.CreateSelect(b.CreateICmpSLT(k, b.getInt64(0)), b.CreateAdd(k, b.getInt64(dim)), k);
      k = b.CreateSelect(b.CreateICmpSLT(k, b.getInt64(0)), b.getInt64(0), k);
      k = b.CreateSelect(b.CreateICmpSGE(k, b.getInt64(dim)), b.getInt64(dim - 1), k);
      llvm::Value* at = b.CreateAdd(
          b.CreateMul(b.CreateAdd(b.CreateMul(outer, b.getInt64(dim)), k), b.getInt64(inner)),
          in_idx);
      cpu::storeElement(b, dtype, cpu::loadElement(b, dtype, kb.input_ptrs[0], at),
                        kb.output_ptrs[0], i);
    });
  };
  return lowering;
}

}  // namespace

std::vector<std::pair<std::string, GpuLowering>> dataMovementGpuLowerings() {
  return {{"Slice", makeStridedLowering(true)},
          {"Expand", makeStridedLowering(false)},
          {"Concat", makeConcatLowering()},
          {"Gather", makeGatherLowering()}};
}

}  // namespace nanoc::gpu
