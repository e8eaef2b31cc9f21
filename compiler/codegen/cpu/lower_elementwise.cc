// Elementwise ops. Binary ops broadcast numpy-style over any rank: the output
// shape is collapsed to the fewest dims such that each operand is, per dim,
// either fully present or broadcast (stride 0), so the innermost loop is one
// unit-stride (or invariant) run that LLVM vectorizes.
#include <algorithm>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/math_functions.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ir/error.h"

namespace nanoc::cpu {
namespace {

using ScalarFn = std::function<llvm::Value*(llvm::IRBuilder<>&, const std::vector<llvm::Value*>&)>;

// The output iteration space after collapsing: dims[k], and per operand the
// element stride of each dim (0 where the operand is broadcast).
struct BroadcastLayout {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;  // [operand][dim]
};

BroadcastLayout collapseBroadcast(const Node& node) {
  const std::vector<int64_t>& out = node.outputs[0]->type.dims;
  size_t rank = out.size();
  size_t n = node.inputs.size();
  // broadcast[x][d]: operand x repeats along output dim d.
  std::vector<std::vector<bool>> broadcast(n, std::vector<bool>(rank));
  for (size_t x = 0; x < n; ++x) {
    const std::vector<int64_t>& in = node.inputs[x]->type.dims;
    if (in.size() > rank)
      throw CompileError("node '" + node.name + "' (" + node.op + "): input rank exceeds output");
    for (size_t d = 0; d < rank; ++d) {
      size_t pad = rank - in.size();
      int64_t dim = d < pad ? 1 : in[d - pad];
      if (dim != out[d] && dim != 1)
        throw CompileError("node '" + node.name + "' (" + node.op + "): input " +
                           std::to_string(x) + " " + node.inputs[x]->type.str() +
                           " does not broadcast to " + node.outputs[0]->type.str());
      broadcast[x][d] = dim == 1 && out[d] != 1;
    }
  }
  BroadcastLayout layout;
  std::vector<std::vector<bool>> flags(n);  // per collapsed dim
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;  // contributes nothing to any index
    bool same = !layout.dims.empty();
    for (size_t x = 0; x < n && same; ++x) same = flags[x].back() == broadcast[x][d];
    if (same) {
      layout.dims.back() *= out[d];
    } else {
      layout.dims.push_back(out[d]);
      for (size_t x = 0; x < n; ++x) flags[x].push_back(broadcast[x][d]);
    }
  }
  if (layout.dims.empty()) {
    layout.dims.push_back(1);
    for (size_t x = 0; x < n; ++x) flags[x].push_back(false);
  }
  size_t k = layout.dims.size();
  layout.strides.assign(n, std::vector<int64_t>(k, 0));
  for (size_t x = 0; x < n; ++x) {
    int64_t stride = 1;
    for (size_t d = k; d-- > 0;) {
      if (flags[x][d]) continue;
      layout.strides[x][d] = stride;
      stride *= layout.dims[d];
    }
  }
  return layout;
}

RowTasks tasksFor(const BroadcastLayout& layout) {
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < layout.dims.size(); ++d) rows *= layout.dims[d];
  return splitRows(rows, layout.dims.back());
}

Lowering makeElementwise(ScalarFn fn) {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return tasksFor(collapseBroadcast(node)).count(); };
  lowering.emit = [fn](KernelBuilder& kb) {
    for (const Value* in : kb.node.inputs)
      if (in->type.dtype != DType::F32 || kb.node.outputs[0]->type.dtype != DType::F32)
        throw CompileError("node '" + kb.node.name + "' (" + kb.node.op +
                           "): the CPU lowering computes f32 only, got " + in->type.str());
    BroadcastLayout layout = collapseBroadcast(kb.node);
    RowTasks tasks = tasksFor(layout);
    llvm::IRBuilder<>& b = kb.b;
    auto c = [&](int64_t v) { return b.getInt64(v); };
    size_t k = layout.dims.size();
    size_t n = kb.node.inputs.size();
    emitRowTasks(kb, tasks, [&](llvm::Value* row, llvm::Value* col_begin, llvm::Value* col_end) {
      // Each operand's offset at the start of this row: the row index split
      // into the outer collapsed dims (divisions by constants).
      std::vector<llvm::Value*> base(n, c(0));
      llvm::Value* rest = row;
      for (size_t d = k - 1; d-- > 0;) {
        llvm::Value* idx = d == 0 ? rest : b.CreateURem(rest, c(layout.dims[d]));
        if (d > 0) rest = b.CreateUDiv(rest, c(layout.dims[d]));
        for (size_t x = 0; x < n; ++x)
          if (layout.strides[x][d])
            base[x] = b.CreateAdd(base[x], b.CreateMul(idx, c(layout.strides[x][d])));
      }
      llvm::Value* out_base = b.CreateMul(row, c(layout.dims.back()));
      emitLoop(
          b, col_begin, col_end,
          [&](llvm::Value* col) {
            std::vector<llvm::Value*> args;
            for (size_t x = 0; x < n; ++x) {
              llvm::Value* index = layout.strides[x][k - 1] ? b.CreateAdd(base[x], col) : base[x];
              args.push_back(loadF32(b, kb.input(x), index));
            }
            storeF32(b, fn(b, args), kb.output(0), b.CreateAdd(out_base, col));
          },
          "col");
    });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace

Lowering makeAddLowering() {
  return makeElementwise([](llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& v) {
    return b.CreateFAdd(v[0], v[1]);
  });
}
Lowering makeSubLowering() {
  return makeElementwise([](llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& v) {
    return b.CreateFSub(v[0], v[1]);
  });
}
Lowering makeMulLowering() {
  return makeElementwise([](llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& v) {
    return b.CreateFMul(v[0], v[1]);
  });
}
Lowering makeDivLowering() {
  return makeElementwise([](llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& v) {
    return b.CreateFDiv(v[0], v[1]);
  });
}
Lowering makeReluLowering() {
  // x < 0 ? 0 : x, so NaN propagates as in the reference and ONNX Runtime.
  return makeElementwise([](llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& v) {
    llvm::Value* zero = llvm::ConstantFP::get(v[0]->getType(), 0.0);
    return b.CreateSelect(b.CreateFCmpOLT(v[0], zero), zero, v[0]);
  });
}
Lowering makeSigmoidLowering() {
  return makeElementwise([](llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& v) {
    return emitSigmoid(b, v[0]);
  });
}
Lowering makeTanhLowering() {
  return makeElementwise(
      [](llvm::IRBuilder<>& b, const std::vector<llvm::Value*>& v) { return emitTanh(b, v[0]); });
}

}  // namespace nanoc::cpu
