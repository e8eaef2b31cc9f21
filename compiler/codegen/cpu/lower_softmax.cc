// Softmax over one axis, numerically stable: y = e^(x - max) / sum e^(x - max).
// The tensor is viewed as [outer, n, inner] with `n` the softmax axis.
// inner == 1: each task takes whole contiguous rows (max, exp-and-sum, scale,
// each a unit-stride loop). inner > 1: columns of one outer slice are done in
// strips of kStrip, with the strip's running max and sum in a stack array, so
// every inner loop runs unit-stride over the strip rather than with stride
// `inner` down the axis.
#include <algorithm>
#include <limits>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/math_functions.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ir/error.h"

namespace nanoc::cpu {
namespace {

constexpr int64_t kStrip = 256;

struct SoftmaxShape {
  int64_t outer = 1, n = 1, inner = 1;
  // X and Y; computed in f32. An f32 Y holds the exponentials between passes;
  // a half-precision one is written once, the exponentials computed again.
  DType dtype = DType::F32;
  bool keepsExp() const { return dtype == DType::F32; }
};

SoftmaxShape softmaxShape(const Node& node) {
  const TensorType& x = node.inputs[0]->type;
  int64_t axis = node.i("axis");
  if (axis < 0 || axis >= static_cast<int64_t>(x.rank()))
    throw CompileError("node '" + node.name + "' (Softmax): axis " + std::to_string(axis) +
                       " out of range for " + x.str());
  if (x.dtype != DType::F32 && x.dtype != DType::F16 && x.dtype != DType::BF16)
    throw CompileError("node '" + node.name +
                       "' (Softmax): the CPU lowering takes f32, f16 or bf16, got " + x.str());
  SoftmaxShape s;
  s.dtype = x.dtype;
  for (int64_t d = 0; d < static_cast<int64_t>(x.rank()); ++d) {
    if (d < axis)
      s.outer *= x.dims[d];
    else if (d == axis)
      s.n = x.dims[d];
    else
      s.inner *= x.dims[d];
  }
  return s;
}

// Tasks as rows x cols where a row is one outer slice and a column one strip
// of `inner` (or, for inner == 1, a row is one softmax row).
RowTasks softmaxTasks(const SoftmaxShape& s) {
  int64_t n = std::max<int64_t>(s.n, 1);
  if (s.inner == 1) return splitRows(s.outer, 1, std::max<int64_t>(1, kTaskElements / n));
  int64_t strips = (s.inner + kStrip - 1) / kStrip;
  return splitRows(s.outer, strips, std::max<int64_t>(1, kTaskElements / (n * kStrip)));
}

llvm::Value* fmax(llvm::IRBuilder<>& b, llvm::Value* a, llvm::Value* c) {
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, a, c);
}

// Lets the vectorizer reorder a reduction's additions (results differ from
// sequential summation by rounding only).
llvm::Value* reassoc(llvm::Value* v) {
  if (auto* inst = llvm::dyn_cast<llvm::Instruction>(v)) inst->setHasAllowReassoc(true);
  return v;
}

void emitContiguousRows(KernelBuilder& kb, const SoftmaxShape& s, const RowTasks& tasks) {
  llvm::IRBuilder<>& b = kb.b;
  llvm::Value* x = kb.input(0);
  llvm::Value* y = kb.output(0);
  llvm::Value* n = b.getInt64(s.n);
  emitRowTasks(kb, tasks, [&](llvm::Value* row, llvm::Value*, llvm::Value*) {
    llvm::Value* base = b.CreateMul(row, n);
    llvm::Value* lowest =
        llvm::ConstantFP::get(b.getFloatTy(), -std::numeric_limits<float>::infinity());
    llvm::Value* max = emitReduction(
        b, b.getInt64(0), n, lowest,
        [&](llvm::Value* i, llvm::Value* acc) {
          return fmax(b, acc, loadCompute(b, s.dtype, x, b.CreateAdd(base, i)));
        },
        "max");
    llvm::Value* sum = emitReduction(
        b, b.getInt64(0), n, llvm::ConstantFP::get(b.getFloatTy(), 0.0),
        [&](llvm::Value* i, llvm::Value* acc) {
          llvm::Value* e =
              emitExp(b, b.CreateFSub(loadCompute(b, s.dtype, x, b.CreateAdd(base, i)), max));
          if (s.keepsExp()) storeF32(b, e, y, b.CreateAdd(base, i));
          return reassoc(b.CreateFAdd(acc, e));
        },
        "sum");
    llvm::Value* inv = b.CreateFDiv(llvm::ConstantFP::get(b.getFloatTy(), 1.0), sum);
    emitLoop(
        b, b.getInt64(0), n,
        [&](llvm::Value* i) {
          llvm::Value* at = b.CreateAdd(base, i);
          llvm::Value* e = s.keepsExp()
                               ? loadF32(b, y, at)
                               : emitExp(b, b.CreateFSub(loadCompute(b, s.dtype, x, at), max));
          storeCompute(b, s.dtype, b.CreateFMul(e, inv), y, at);
        },
        "scale");
  });
}

void emitStrips(KernelBuilder& kb, const SoftmaxShape& s, const RowTasks& tasks) {
  llvm::IRBuilder<>& b = kb.b;
  llvm::Value* x = kb.input(0);
  llvm::Value* y = kb.output(0);
  // Scratch at the entry block, so it is allocated once per call.
  llvm::IRBuilder<> entry(&kb.fn->getEntryBlock(), kb.fn->getEntryBlock().begin());
  llvm::Type* strip_type = llvm::ArrayType::get(b.getFloatTy(), kStrip);
  llvm::Value* max_buf = entry.CreateAlloca(strip_type, nullptr, "strip_max");
  llvm::Value* sum_buf = entry.CreateAlloca(strip_type, nullptr, "strip_sum");
  auto c = [&](int64_t v) { return b.getInt64(v); };
  emitRowTasks(kb, tasks, [&](llvm::Value* o, llvm::Value* strip_begin, llvm::Value* strip_end) {
    emitLoop(
        b, strip_begin, strip_end,
        [&](llvm::Value* strip) {
          llvm::Value* j0 = b.CreateMul(strip, c(kStrip));
          llvm::Value* width = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, c(kStrip),
                                                       b.CreateSub(c(s.inner), j0));
          // base of (o, a, j0) is (o * n + a) * inner + j0
          auto at = [&](llvm::Value* a, llvm::Value* j) {
            return b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(o, c(s.n)), a), c(s.inner)),
                               b.CreateAdd(j0, j));
          };
          // Row a = 0 seeds the strip's max and sum (the axis is never empty
          // here), so no fill loop is needed.
          emitLoop(
              b, c(0), width,
              [&](llvm::Value* j) {
                storeF32(b, loadCompute(b, s.dtype, x, at(c(0), j)), max_buf, j);
              },
              "j");
          emitLoop(
              b, c(1), c(s.n),
              [&](llvm::Value* a) {
                emitLoop(
                    b, c(0), width,
                    [&](llvm::Value* j) {
                      storeF32(
                          b, fmax(b, loadF32(b, max_buf, j), loadCompute(b, s.dtype, x, at(a, j))),
                          max_buf, j);
                    },
                    "j");
              },
              "a");
          auto expAt = [&](llvm::Value* a, llvm::Value* j) {
            llvm::Value* e = emitExp(
                b, b.CreateFSub(loadCompute(b, s.dtype, x, at(a, j)), loadF32(b, max_buf, j)));
            if (s.keepsExp()) storeF32(b, e, y, at(a, j));
            return e;
          };
          emitLoop(
              b, c(0), width, [&](llvm::Value* j) { storeF32(b, expAt(c(0), j), sum_buf, j); },
              "j");
          emitLoop(
              b, c(1), c(s.n),
              [&](llvm::Value* a) {
                emitLoop(
                    b, c(0), width,
                    [&](llvm::Value* j) {
                      storeF32(b, b.CreateFAdd(loadF32(b, sum_buf, j), expAt(a, j)), sum_buf, j);
                    },
                    "j");
              },
              "a");
          emitLoop(
              b, c(0), width,
              [&](llvm::Value* j) {
                storeF32(b,
                         b.CreateFDiv(llvm::ConstantFP::get(b.getFloatTy(), 1.0),
                                      loadF32(b, sum_buf, j)),
                         sum_buf, j);
              },
              "inv");
          emitLoop(
              b, c(0), c(s.n),
              [&](llvm::Value* a) {
                emitLoop(
                    b, c(0), width,
                    [&](llvm::Value* j) {
                      llvm::Value* e = s.keepsExp() ? loadF32(b, y, at(a, j)) : expAt(a, j);
                      storeCompute(b, s.dtype, b.CreateFMul(e, loadF32(b, sum_buf, j)), y,
                                   at(a, j));
                    },
                    "j");
              },
              "a");
        },
        "strip");
  });
}

}  // namespace

Lowering makeSoftmaxLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return softmaxTasks(softmaxShape(node)).count(); };
  lowering.emit = [](KernelBuilder& kb) {
    SoftmaxShape s = softmaxShape(kb.node);
    RowTasks tasks = softmaxTasks(s);
    if (s.outer > 0 && s.n > 0 && s.inner > 0) {
      if (s.inner == 1)
        emitContiguousRows(kb, s, tasks);
      else
        emitStrips(kb, s, tasks);
    }
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
