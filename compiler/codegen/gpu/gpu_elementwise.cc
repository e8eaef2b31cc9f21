// The elementwise table's ops (ops/elementwise_table.h) and the fused chain
// nanoc.Elementwise (ops/fused_elementwise.h) on the GPU: one thread per
// output element in a grid-stride loop, each input's element found through
// the collapsed broadcast layout (codegen/cpu/elementwise_scalar.h), the
// value computed by the CPU's own scalar emitters, so both targets compute
// the same IR per element.
//
// Launch: blocks of 256 threads, ceil(n / 256) blocks up to 8192 (the loop
// covers the rest). Indices are i32 below 2^30 elements, i64 beyond.
#include <algorithm>

#include "compiler/codegen/cpu/elementwise_scalar.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/gpu/gpu_ir.h"
#include "compiler/ir/error.h"
#include "compiler/ops/elementwise_table.h"
#include "compiler/ops/fused_elementwise.h"

namespace nanoc::gpu {
namespace {

int64_t layoutCount(const cpu::BroadcastLayout& layout) {
  int64_t n = 1;
  for (int64_t d : layout.dims) n *= d;
  return n;
}

bool allInputsPresent(const Node& node) {
  if (node.outputs.size() != 1 || node.inputs.empty()) return false;
  for (const Value* v : node.inputs)
    if (!v) return false;
  return true;
}

// The grid-stride loop over the output's elements: body(offsets, i) with
// each input's element index and the output's, in the kernel's index type.
void emitElementwiseLoop(
    GpuKernelBuilder& kb,
    const std::function<void(const std::vector<llvm::Value*>& at, llvm::Value* i)>& body) {
  llvm::IRBuilder<>& b = kb.b;
  cpu::BroadcastLayout layout = cpu::collapseBroadcast(kb.node);
  const int64_t n = layoutCount(layout);
  const size_t k = layout.dims.size(), inputs = kb.node.inputs.size();
  llvm::IntegerType* T = indexType(b, n);
  auto c = [&](int64_t v) { return llvm::ConstantInt::get(T, v); };
  llvm::Value* tid = b.CreateZExt(threadIdX(b), T);
  llvm::Value* block = b.CreateZExt(blockIdX(b), T);
  llvm::Value* first = b.CreateAdd(b.CreateMul(block, c(kb.launch.block[0])), tid, "gid");
  llvm::Value* stride = c(int64_t{kb.launch.grid[0]} * kb.launch.block[0]);
  // An input read densely (no broadcast dim) reads at the output's index.
  std::vector<bool> dense(inputs, true);
  for (size_t x = 0; x < inputs; ++x) {
    int64_t expect = 1;
    for (size_t d = k; d-- > 0;) {
      if (layout.strides[x][d] != expect && layout.dims[d] != 1) dense[x] = false;
      expect *= layout.dims[d];
    }
  }
  emitStridedLoop(
      b, first, c(n), stride,
      [&](llvm::Value* i) {
        std::vector<llvm::Value*> at(inputs, nullptr);
        std::vector<llvm::Value*> offset(inputs, c(0));
        bool any = false;
        for (size_t x = 0; x < inputs; ++x) {
          if (dense[x])
            at[x] = i;
          else
            any = true;
        }
        if (any) {
          llvm::Value* rest = i;
          for (size_t d = k; d-- > 0;) {
            bool used = false;
            for (size_t x = 0; x < inputs; ++x) used |= !dense[x] && layout.strides[x][d] != 0;
            if (!used && d > 0) {
              rest = b.CreateUDiv(rest, c(layout.dims[d]));
              continue;
            }
            llvm::Value* idx = d == 0 ? rest : b.CreateURem(rest, c(layout.dims[d]));
            if (d > 0) rest = b.CreateUDiv(rest, c(layout.dims[d]));
            for (size_t x = 0; x < inputs; ++x)
              if (!dense[x] && layout.strides[x][d] != 0)
                offset[x] = b.CreateAdd(offset[x], b.CreateMul(idx, c(layout.strides[x][d])));
          }
          for (size_t x = 0; x < inputs; ++x)
            if (!dense[x]) at[x] = offset[x];
        }
        // GEP indices in i64: an i32 index is non-negative here.
        for (llvm::Value*& a : at) a = b.CreateZExt(a, b.getInt64Ty());
        body(at, b.CreateZExt(i, b.getInt64Ty()));
      },
      "elem");
}

GpuLowering makeTableLowering() {
  GpuLowering lowering;
  lowering.supports = [](const Node& node) {
    const ElementwiseOp* op = findElementwise(node.op);
    if (!op || !cpu::hasElementwiseScalar(node.op) || !allInputsPresent(node)) return false;
    cpu::collapseBroadcast(node);  // throws when the inputs do not broadcast
    return true;
  };
  lowering.launch = outputElementLaunch;
  lowering.emit = [](GpuKernelBuilder& kb) {
    llvm::IRBuilder<>& b = kb.b;
    const DType out = kb.node.outputs[0]->type.dtype;
    const bool saturate = !kb.node.has("saturate") || kb.node.i("saturate") != 0;
    std::vector<DType> in;
    for (const Value* v : kb.node.inputs) in.push_back(v->type.dtype);
    emitElementwiseLoop(kb, [&](const std::vector<llvm::Value*>& at, llvm::Value* i) {
      std::vector<llvm::Value*> operands;
      for (size_t x = 0; x < at.size(); ++x)
        operands.push_back(cpu::loadCompute(b, in[x], kb.input_ptrs[x], at[x]));
      llvm::Value* r = cpu::emitElementwiseScalar(b, kb.node, in, out, operands);
      cpu::storeCompute(b, out, r, kb.output_ptrs[0], i, saturate);
    });
  };
  return lowering;
}

GpuLowering makeFusedLowering() {
  GpuLowering lowering;
  lowering.supports = [](const Node& node) {
    if (!allInputsPresent(node)) return false;
    ElementwiseProgram program = decodeElementwise(node, node.outputs[0]->type);
    for (const ElementwiseProgram::Step& step : program.steps)
      if (!cpu::hasElementwiseScalar(step.op->name)) return false;
    cpu::collapseBroadcast(node);
    return true;
  };
  lowering.launch = outputElementLaunch;
  lowering.emit = [](GpuKernelBuilder& kb) {
    llvm::IRBuilder<>& b = kb.b;
    ElementwiseProgram program = decodeElementwise(kb.node, kb.node.outputs[0]->type);
    emitElementwiseLoop(kb, [&](const std::vector<llvm::Value*>& at, llvm::Value* i) {
      std::vector<llvm::Value*> inputs;
      for (size_t x = 0; x < at.size(); ++x)
        inputs.push_back(cpu::loadF32(b, kb.input_ptrs[x], at[x]));
      llvm::Value* r = cpu::emitFusedElementwiseScalar(b, kb.node, program, inputs);
      cpu::storeF32(b, r, kb.output_ptrs[0], i);
    });
  };
  return lowering;
}

}  // namespace

std::vector<std::pair<std::string, GpuLowering>> elementwiseGpuLowerings() {
  std::vector<std::pair<std::string, GpuLowering>> out;
  for (const ElementwiseOp& op : elementwiseOps())
    out.emplace_back(std::string(op.name), makeTableLowering());
  out.emplace_back("nanoc.Elementwise", makeFusedLowering());
  return out;
}

}  // namespace nanoc::gpu
