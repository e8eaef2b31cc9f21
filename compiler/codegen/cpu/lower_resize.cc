// Resize: the separable taps of compiler/ops/resize.h, computed at compile
// time, become constant tables (per axis: input offsets, and weights unless
// the mode is nearest); the kernel sums, per output element, the product of
// the axes' taps. Axes that keep their size cost nothing; nearest mode is a
// pure gather and works for every dtype.
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ops/resize.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::cpu {
namespace {

struct ResizeShape {
  ResizeParams params;
  std::vector<ResizeAxis> axes;
  std::vector<int64_t> in, out, x_strides;
  RowTasks tasks;
};

ResizeShape resizeShape(const Node& node) {
  ResizeShape s;
  s.params = resizeParams(node);
  s.in = node.inputs[0]->type.dims;
  s.out = s.params.sizes;
  const size_t rank = s.in.size();
  for (size_t a = 0; a < rank; ++a) s.axes.push_back(resizeAxis(node, s.params, a, s.in[a]));
  s.x_strides.assign(rank, 1);
  for (size_t a = rank - 1; a > 0; --a) s.x_strides[a - 1] = s.x_strides[a] * s.in[a];
  if (node.outputs.size() != 1 || node.outputs[0]->type.dims != s.out)
    failNode(node, "output must be " + dimsStr(s.out));
  s.tasks = splitRows(product(s.out, 0, rank - 1), s.out[rank - 1]);
  return s;
}

template <typename T>
llvm::Value* constantTable(KernelBuilder& kb, const std::vector<T>& values,
                           const std::string& what) {
  llvm::Constant* init = llvm::ConstantDataArray::get(kb.module.getContext(), values);
  return new llvm::GlobalVariable(kb.module, init->getType(), /*isConstant=*/true,
                                  llvm::GlobalValue::PrivateLinkage, init,
                                  kb.fn->getName() + "." + what);
}

// One axis's tables in the kernel: offsets into X (input position times the
// axis's stride), weights in the compute type, the outside flags.
struct AxisTables {
  llvm::Value *offset = nullptr, *weight = nullptr, *outside = nullptr;
};

}  // namespace

Lowering makeResizeLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return resizeShape(node).tasks.count(); };
  lowering.emit = [](KernelBuilder& kb) {
    ResizeShape s = resizeShape(kb.node);
    const ResizeParams& p = s.params;
    const size_t rank = s.in.size();
    if (product(s.out, 0, rank) == 0) return;
    llvm::IRBuilder<>& b = kb.b;
    const DType dtype = kb.node.inputs[0]->type.dtype;
    const bool nearest = p.mode == "nearest";
    const DType weight_dtype = dtype == DType::F64 ? DType::F64 : DType::F32;
    std::vector<AxisTables> tables(rank);
    bool any_outside = false;
    for (size_t a = 0; a < rank; ++a) {
      const ResizeAxis& ax = s.axes[a];
      if (ax.identity) continue;
      std::string axis = std::to_string(a);
      std::vector<int64_t> offsets(ax.index.size());
      for (size_t k = 0; k < offsets.size(); ++k) offsets[k] = ax.index[k] * s.x_strides[a];
      tables[a].offset = constantTable(kb, offsets, "offset" + axis);
      if (!nearest) {
        if (weight_dtype == DType::F64) {
          tables[a].weight = constantTable(kb, ax.weight, "weight" + axis);
        } else {
          std::vector<float> w(ax.weight.begin(), ax.weight.end());
          tables[a].weight = constantTable(kb, w, "weight" + axis);
        }
      }
      if (!ax.outside.empty()) {
        tables[a].outside = constantTable(kb, ax.outside, "outside" + axis);
        any_outside = true;
      }
    }
    llvm::Value* x = kb.input(0);
    llvm::Value* y = kb.output(0);
    emitRowTasks(kb, s.tasks, [&](llvm::Value* row, llvm::Value* col_begin, llvm::Value* col_end) {
      // The output position along every axis but the last.
      std::vector<llvm::Value*> o(rank);
      llvm::Value* rem = row;
      for (size_t a = rank - 1; a-- > 0;) {
        o[a] = b.CreateURem(rem, b.getInt64(s.out[a]));
        rem = b.CreateUDiv(rem, b.getInt64(s.out[a]));
      }
      llvm::Value* y_row = b.CreateMul(row, b.getInt64(s.out[rank - 1]));
      emitLoop(
          b, col_begin, col_end,
          [&](llvm::Value* col) {
            o[rank - 1] = col;
            llvm::Value* inside = nullptr;
            if (any_outside)
              for (size_t a = 0; a < rank; ++a)
                if (tables[a].outside) {
                  llvm::Value* in_a = b.CreateICmpEQ(
                      loadElement(b, DType::U8, tables[a].outside, o[a]), b.getInt8(0));
                  inside = inside ? b.CreateAnd(inside, in_a) : in_a;
                }
            llvm::Value* value;
            if (nearest) {
              llvm::Value* src = b.getInt64(0);
              for (size_t a = 0; a < rank; ++a)
                src = b.CreateAdd(src, tables[a].offset
                                           ? loadElement(b, DType::I64, tables[a].offset, o[a])
                                           : b.CreateMul(o[a], b.getInt64(s.x_strides[a])));
              value = loadElement(b, dtype, x, src);
              if (inside) {
                llvm::Type* t = storageType(b.getContext(), dtype);
                llvm::Value* fill = isFloat(dtype) ? llvm::ConstantFP::get(t, p.extrapolation_value)
                                                   : llvm::Constant::getNullValue(t);
                value = b.CreateSelect(inside, value, fill);
              }
              storeElement(b, dtype, value, y, b.CreateAdd(y_row, col));
              return;
            }
            // Sum over the product of the axes' taps, one nested loop per
            // resized axis (short constant trip counts that unroll).
            llvm::Type* ct = computeType(b.getContext(), dtype);
            std::function<llvm::Value*(size_t, llvm::Value*, llvm::Value*, llvm::Value*)> taps =
                [&](size_t a, llvm::Value* src, llvm::Value* weight, llvm::Value* acc) {
                  if (a == rank) {
                    llvm::Value* v = loadCompute(b, dtype, x, src);
                    return weight
                               ? b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ct}, {weight, v, acc})
                               : b.CreateFAdd(acc, v);
                  }
                  const ResizeAxis& ax = s.axes[a];
                  if (ax.identity)
                    return taps(a + 1,
                                b.CreateAdd(src, b.CreateMul(o[a], b.getInt64(s.x_strides[a]))),
                                weight, acc);
                  auto tap = [&](llvm::Value* t, llvm::Value* acc_in) {
                    llvm::Value* k = b.CreateAdd(b.CreateMul(o[a], b.getInt64(ax.taps)), t);
                    llvm::Value* w = loadElement(b, weight_dtype, tables[a].weight, k);
                    return taps(a + 1,
                                b.CreateAdd(src, loadElement(b, DType::I64, tables[a].offset, k)),
                                weight ? b.CreateFMul(weight, w) : w, acc_in);
                  };
                  if (ax.taps == 1) return tap(b.getInt64(0), acc);
                  return emitReduction(b, b.getInt64(0), b.getInt64(ax.taps), acc, tap, "tap");
                };
            value = taps(0, b.getInt64(0), nullptr, llvm::ConstantFP::get(ct, 0.0));
            if (inside)
              value =
                  b.CreateSelect(inside, value, llvm::ConstantFP::get(ct, p.extrapolation_value));
            storeCompute(b, dtype, value, y, b.CreateAdd(y_row, col));
          },
          "col");
    });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
