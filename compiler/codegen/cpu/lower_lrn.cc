// LRN across channels of X [N, C, spatial...]:
// y = x / (bias + alpha / size * sum of x^2 over the channel window)^beta.
// A task takes whole (n, c) planes. The window's sum of squares is built in
// the output plane itself (a unit-stride loop per window channel), then
// rewritten in place to x * (bias + alpha / size * sum)^-beta, with the power
// as e^(-beta ln(base)) inline (math_log.h), so that loop vectorizes too.
#include <algorithm>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/math_functions.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ir/error.h"

namespace nanoc::cpu {
namespace {

struct LrnShape {
  int64_t n = 0, c = 0, spatial = 1, size = 1;
};

LrnShape lrnShape(const Node& node) {
  const TensorType& x = node.inputs[0]->type;
  if (x.rank() < 2 || x.dtype != DType::F32)
    throw CompileError("node '" + node.name +
                       "' (LRN): the CPU lowering needs f32 [N, C, ...], got " + x.str());
  LrnShape s;
  s.n = x.dims[0];
  s.c = x.dims[1];
  for (size_t d = 2; d < x.rank(); ++d) s.spatial *= x.dims[d];
  s.size = node.i("size");
  return s;
}

RowTasks lrnTasks(const LrnShape& s) {
  int64_t work = std::max<int64_t>(1, s.spatial * std::min(s.size, std::max<int64_t>(s.c, 1)));
  return splitRows(s.n * s.c, 1, std::max<int64_t>(1, kTaskElements / work));
}

}  // namespace

Lowering makeLRNLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return lrnTasks(lrnShape(node)).count(); };
  lowering.emit = [](KernelBuilder& kb) {
    LrnShape s = lrnShape(kb.node);
    llvm::IRBuilder<>& b = kb.b;
    llvm::Value* x = kb.input(0);
    llvm::Value* y = kb.output(0);
    auto c = [&](int64_t v) { return b.getInt64(v); };
    auto kf = [&](double v) { return llvm::ConstantFP::get(b.getFloatTy(), v); };
    llvm::Value* coef = kf(kb.node.f("alpha") / static_cast<double>(s.size));
    llvm::Value* bias = kf(kb.node.f("bias"));
    llvm::Value* neg_beta = kf(-kb.node.f("beta"));
    if (s.n > 0 && s.c > 0 && s.spatial > 0)
      emitRowTasks(kb, lrnTasks(s), [&](llvm::Value* plane, llvm::Value*, llvm::Value*) {
        llvm::Value* ch = b.CreateURem(plane, c(s.c));
        llvm::Value* image = b.CreateSub(plane, ch);  // plane of channel 0
        llvm::Value* lo = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, c(0),
                                                  b.CreateSub(ch, c((s.size - 1) / 2)));
        llvm::Value* hi = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, c(s.c),
                                                  b.CreateAdd(ch, c(s.size / 2 + 1)));
        llvm::Value* out = b.CreateMul(plane, c(s.spatial));
        emitLoop(
            b, c(0), c(s.spatial),
            [&](llvm::Value* i) { storeF32(b, kf(0.0), y, b.CreateAdd(out, i)); }, "zero");
        emitLoop(
            b, lo, hi,
            [&](llvm::Value* k) {
              llvm::Value* in = b.CreateMul(b.CreateAdd(image, k), c(s.spatial));
              emitLoop(
                  b, c(0), c(s.spatial),
                  [&](llvm::Value* i) {
                    llvm::Value* v = loadF32(b, x, b.CreateAdd(in, i));
                    llvm::Value* at = b.CreateAdd(out, i);
                    storeF32(b,
                             b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {b.getFloatTy()},
                                               {v, v, loadF32(b, y, at)}),
                             y, at);
                  },
                  "i");
            },
            "window");
        emitLoop(
            b, c(0), c(s.spatial),
            [&](llvm::Value* i) {
              llvm::Value* at = b.CreateAdd(out, i);
              llvm::Value* base = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {b.getFloatTy()},
                                                    {loadF32(b, y, at), coef, bias});
              storeF32(b, b.CreateFMul(loadF32(b, x, at), emitPowPositive(b, base, neg_beta)), y,
                       at);
            },
            "scale");
      });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
