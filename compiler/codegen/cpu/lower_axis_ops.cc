// CPU lowerings of the ops that reduce along one axis and then rewrite it:
// LogSoftmax, Hardmax and LpNormalization. The tensor is viewed as
// [outer, n, inner] with n the axis, like Softmax (lower_softmax.cc):
// inner == 1 takes whole contiguous rows per task, each pass a unit-stride
// loop; inner > 1 takes strips of kStrip columns of one outer slice, with the
// strip's running reductions in stack arrays, so the inner loops stay
// unit-stride instead of striding `inner` down the axis.
//
// Each op is up to two reductions along the line, a per-line value computed
// from them, and an elementwise output:
//   LogSoftmax       r1 = max x, r2 = sum e^(x - r1); v = r1 + ln r2; y = x - v
//   Hardmax          r1 = max x, r2 = first index of r1; y = (a == r2)
//   LpNormalization  r1 = sum |x| or x^2; v = 1 / norm (0 for norm 0); y = x v
// f16 and bf16 are loaded into f32 and rounded once on store.
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

using Builder = llvm::IRBuilder<>;

struct AxisOp {
  // First reduction: acc1 = step1(acc1, x) from init1.
  std::function<llvm::Value*(Builder&)> init1;
  std::function<llvm::Value*(Builder&, llvm::Value* acc, llvm::Value* x)> step1;
  // Optional second reduction, given r1 and the axis index a (i64).
  std::function<llvm::Value*(Builder&, llvm::Value* r1)> init2;
  std::function<llvm::Value*(Builder&, llvm::Value* acc, llvm::Value* x, llvm::Value* a,
                             llvm::Value* r1)>
      step2;
  // The per-line value from the reductions (r2 null without a second one).
  std::function<llvm::Value*(Builder&, llvm::Value* r1, llvm::Value* r2)> finish;
  // The output element from x, its axis index and the per-line value.
  std::function<llvm::Value*(Builder&, llvm::Value* x, llvm::Value* a, llvm::Value* v)> output;
  // r1 is f32; r2 and v are i64 (an index) when set, else f32.
  bool index_valued = false;
};

struct AxisShape {
  int64_t outer = 1, n = 1, inner = 1;
  DType dtype = DType::F32;  // of X and Y; computed in f32
};

AxisShape axisShape(const Node& node) {
  const TensorType& x = node.inputs[0]->type;
  int64_t axis = node.i("axis");
  if (axis < 0 || axis >= static_cast<int64_t>(x.rank()))
    throw CompileError("node '" + node.name + "' (" + node.op + "): axis " + std::to_string(axis) +
                       " out of range for " + x.str());
  if (x.dtype != DType::F32 && x.dtype != DType::F16 && x.dtype != DType::BF16)
    throw CompileError("node '" + node.name + "' (" + node.op +
                       "): the CPU lowering takes f32, f16 or bf16, got " + x.str());
  AxisShape s;
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

RowTasks axisTasks(const AxisShape& s) {
  int64_t n = std::max<int64_t>(s.n, 1);
  if (s.inner == 1) return splitRows(s.outer, 1, std::max<int64_t>(1, kTaskElements / n));
  int64_t strips = (s.inner + kStrip - 1) / kStrip;
  return splitRows(s.outer, strips, std::max<int64_t>(1, kTaskElements / (n * kStrip)));
}

llvm::Value* reassoc(llvm::Value* v) {
  if (auto* inst = llvm::dyn_cast<llvm::Instruction>(v)) inst->setHasAllowReassoc(true);
  return v;
}

void emitRows(KernelBuilder& kb, const AxisShape& s, const AxisOp& op) {
  Builder& b = kb.b;
  llvm::Value* x = kb.input(0);
  llvm::Value* y = kb.output(0);
  llvm::Value* n = b.getInt64(s.n);
  emitRowTasks(kb, axisTasks(s), [&](llvm::Value* row, llvm::Value*, llvm::Value*) {
    llvm::Value* base = b.CreateMul(row, n);
    llvm::Value* r1 = emitReduction(
        b, b.getInt64(0), n, op.init1(b),
        [&](llvm::Value* a, llvm::Value* acc) {
          return op.step1(b, acc, loadCompute(b, s.dtype, x, b.CreateAdd(base, a)));
        },
        "r1");
    llvm::Value* r2 = nullptr;
    if (op.step2)
      r2 = emitReduction(
          b, b.getInt64(0), n, op.init2(b, r1),
          [&](llvm::Value* a, llvm::Value* acc) {
            return op.step2(b, acc, loadCompute(b, s.dtype, x, b.CreateAdd(base, a)), a, r1);
          },
          "r2");
    llvm::Value* v = op.finish(b, r1, r2);
    emitLoop(
        b, b.getInt64(0), n,
        [&](llvm::Value* a) {
          llvm::Value* at = b.CreateAdd(base, a);
          storeCompute(b, s.dtype, op.output(b, loadCompute(b, s.dtype, x, at), a, v), y, at);
        },
        "out");
  });
}

void emitStrips(KernelBuilder& kb, const AxisShape& s, const AxisOp& op) {
  Builder& b = kb.b;
  llvm::Value* x = kb.input(0);
  llvm::Value* y = kb.output(0);
  auto c = [&](int64_t v) { return b.getInt64(v); };
  // Scratch at the entry block, so it is allocated once per call.
  Builder entry(&kb.fn->getEntryBlock(), kb.fn->getEntryBlock().begin());
  llvm::Type* t1 = b.getFloatTy();
  llvm::Type* t2 = op.index_valued ? b.getInt64Ty() : b.getFloatTy();
  llvm::Type* tv = t2;
  llvm::Value* buf1 = entry.CreateAlloca(llvm::ArrayType::get(t1, kStrip), nullptr, "strip_r1");
  llvm::Value* buf2 = entry.CreateAlloca(llvm::ArrayType::get(t2, kStrip), nullptr, "strip_r2");
  llvm::Value* bufv = entry.CreateAlloca(llvm::ArrayType::get(tv, kStrip), nullptr, "strip_v");
  auto ld = [&](llvm::Type* t, llvm::Value* buf, llvm::Value* j) {
    return b.CreateLoad(t, b.CreateInBoundsGEP(t, buf, j));
  };
  auto st = [&](llvm::Type* t, llvm::Value* v, llvm::Value* buf, llvm::Value* j) {
    b.CreateStore(v, b.CreateInBoundsGEP(t, buf, j));
  };
  emitRowTasks(
      kb, axisTasks(s), [&](llvm::Value* o, llvm::Value* strip_begin, llvm::Value* strip_end) {
        emitLoop(
            b, strip_begin, strip_end,
            [&](llvm::Value* strip) {
              llvm::Value* j0 = b.CreateMul(strip, c(kStrip));
              llvm::Value* width = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, c(kStrip),
                                                           b.CreateSub(c(s.inner), j0));
              // (o, a, j0 + j) is at (o * n + a) * inner + j0 + j.
              auto at = [&](llvm::Value* a, llvm::Value* j) {
                return b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(o, c(s.n)), a), c(s.inner)),
                                   b.CreateAdd(j0, j));
              };
              auto columns = [&](const std::function<void(llvm::Value*)>& body) {
                emitLoop(b, c(0), width, body, "j");
              };
              auto lines = [&](const std::function<void(llvm::Value*, llvm::Value*)>& body) {
                emitLoop(
                    b, c(0), c(s.n),
                    [&](llvm::Value* a) { columns([&](llvm::Value* j) { body(a, j); }); }, "a");
              };
              columns([&](llvm::Value* j) { st(t1, op.init1(b), buf1, j); });
              lines([&](llvm::Value* a, llvm::Value* j) {
                st(t1, op.step1(b, ld(t1, buf1, j), loadCompute(b, s.dtype, x, at(a, j))), buf1, j);
              });
              if (op.step2) {
                columns([&](llvm::Value* j) { st(t2, op.init2(b, ld(t1, buf1, j)), buf2, j); });
                lines([&](llvm::Value* a, llvm::Value* j) {
                  st(t2,
                     op.step2(b, ld(t2, buf2, j), loadCompute(b, s.dtype, x, at(a, j)), a,
                              ld(t1, buf1, j)),
                     buf2, j);
                });
              }
              columns([&](llvm::Value* j) {
                st(tv, op.finish(b, ld(t1, buf1, j), op.step2 ? ld(t2, buf2, j) : nullptr), bufv,
                   j);
              });
              lines([&](llvm::Value* a, llvm::Value* j) {
                storeCompute(b, s.dtype,
                             op.output(b, loadCompute(b, s.dtype, x, at(a, j)), a, ld(tv, bufv, j)),
                             y, at(a, j));
              });
            },
            "strip");
      });
}

Lowering makeAxisLowering(AxisOp (*make)(const Node&)) {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return axisTasks(axisShape(node)).count(); };
  lowering.emit = [make](KernelBuilder& kb) {
    AxisShape s = axisShape(kb.node);
    AxisOp op = make(kb.node);
    if (s.outer > 0 && s.n > 0 && s.inner > 0) {
      if (s.inner == 1)
        emitRows(kb, s, op);
      else
        emitStrips(kb, s, op);
    }
    addOperandAliasScopes(kb);
  };
  return lowering;
}

llvm::Value* f32(Builder& b, double v) { return llvm::ConstantFP::get(b.getFloatTy(), v); }

llvm::Value* maxInit(Builder& b) { return f32(b, -std::numeric_limits<float>::infinity()); }

llvm::Value* maxStep(Builder& b, llvm::Value* acc, llvm::Value* x) {
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, acc, x);
}

AxisOp logSoftmaxOp(const Node&) {
  AxisOp op;
  op.init1 = maxInit;
  op.step1 = maxStep;
  op.init2 = [](Builder& b, llvm::Value*) { return f32(b, 0.0); };
  op.step2 = [](Builder& b, llvm::Value* acc, llvm::Value* x, llvm::Value*, llvm::Value* max) {
    return reassoc(b.CreateFAdd(acc, emitExp(b, b.CreateFSub(x, max))));
  };
  op.finish = [](Builder& b, llvm::Value* max, llvm::Value* sum) {
    return b.CreateFAdd(max, emitLog(b, sum));
  };
  op.output = [](Builder& b, llvm::Value* x, llvm::Value*, llvm::Value* v) {
    return b.CreateFSub(x, v);
  };
  return op;
}

AxisOp hardmaxOp(const Node& node) {
  int64_t n = std::max<int64_t>(node.inputs[0]->type.dims[static_cast<size_t>(node.i("axis"))], 1);
  AxisOp op;
  op.init1 = maxInit;
  op.step1 = maxStep;
  // The first index holding the max: smin over the matching indices, n when
  // none matches (a NaN max), which then marks nothing.
  op.init2 = [n](Builder& b, llvm::Value*) { return b.getInt64(n); };
  op.step2 = [](Builder& b, llvm::Value* acc, llvm::Value* x, llvm::Value* a, llvm::Value* max) {
    return b.CreateSelect(b.CreateFCmpOEQ(x, max),
                          b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, acc, a), acc);
  };
  op.finish = [](Builder&, llvm::Value*, llvm::Value* first) { return first; };
  op.index_valued = true;
  op.output = [](Builder& b, llvm::Value*, llvm::Value* a, llvm::Value* first) {
    return b.CreateUIToFP(b.CreateICmpEQ(a, first), b.getFloatTy());
  };
  return op;
}

AxisOp lpNormalizationOp(const Node& node) {
  bool l1 = node.i("p") == 1;
  AxisOp op;
  op.init1 = [](Builder& b) { return f32(b, 0.0); };
  op.step1 = [l1](Builder& b, llvm::Value* acc, llvm::Value* x) {
    llvm::Value* term = l1 ? b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x) : b.CreateFMul(x, x);
    return reassoc(b.CreateFAdd(acc, term));
  };
  op.finish = [l1](Builder& b, llvm::Value* sum, llvm::Value*) {
    llvm::Value* norm = l1 ? sum : b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, sum);
    // A zero norm means a zero vector, which stays zero.
    return b.CreateSelect(b.CreateFCmpOEQ(norm, f32(b, 0.0)), f32(b, 0.0),
                          b.CreateFDiv(f32(b, 1.0), norm));
  };
  op.output = [](Builder& b, llvm::Value* x, llvm::Value*, llvm::Value* v) {
    return b.CreateFMul(x, v);
  };
  return op;
}

}  // namespace

Lowering makeLogSoftmaxLowering() { return makeAxisLowering(logSoftmaxOp); }
Lowering makeHardmaxLowering() { return makeAxisLowering(hardmaxOp); }
Lowering makeLpNormalizationLowering() { return makeAxisLowering(lpNormalizationOp); }

}  // namespace nanoc::cpu
