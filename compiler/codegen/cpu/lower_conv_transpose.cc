// ConvTranspose over [N, C, spatial...]: the scatter of each input element
// through the kernel, y[i * stride + t * dilation - pad_begin] += w[t] * x[i].
// That is Conv's window sweep with the roles of input and output exchanged,
// so it reuses emitWindowTapsND: for each tap, the input positions whose
// target lies inside the output are a range computed up front, and the inner
// loop over them has no branches.
#include <algorithm>
#include <vector>

#include "compiler/codegen/cpu/linalg.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/ops/conv.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::cpu {
namespace {

ConvShape loweredShape(const Node& node) {
  ConvShape s = convTransposeShape(node);
  if (node.outputs.size() != 1 || node.outputs[0]->type.dims != s.outputDims())
    failNode(node, "output must be " + dimsStr(s.outputDims()));
  return s;
}

}  // namespace

// One task per (n, output channel) plane: the bias, then the scatter of
// every input channel of its group. W is [C, M/group, kernel...].
Lowering makeConvTransposeLowering() {
  return {[](const Node& node) -> uint64_t {
            ConvShape s = loweredShape(node);
            return static_cast<uint64_t>(std::max<int64_t>(1, s.n * s.m));
          },
          [](KernelBuilder& kb) {
            ConvShape s = loweredShape(kb.node);
            if (s.n * s.m == 0) return;
            llvm::IRBuilder<>& b = kb.b;
            llvm::Value* x = kb.input(0);
            llvm::Value* w = kb.input(1);
            llvm::Value* bias = s.has_bias ? kb.input(2) : nullptr;
            llvm::Value* y = kb.output(0);
            const size_t k = s.rank();
            const int64_t in_plane = product(s.in, 0, k);
            const int64_t plane = product(s.out, 0, k);
            const int64_t taps = product(s.kernel, 0, k);
            const int64_t cg = s.cPerGroup(), mg = s.mPerGroup();
            emitLoop(
                b, kb.task_begin, kb.task_end,
                [&](llvm::Value* t) {
                  llvm::Value* n = b.CreateUDiv(t, b.getInt64(s.m));
                  llvm::Value* m = b.CreateURem(t, b.getInt64(s.m));
                  llvm::Value* g = b.CreateUDiv(m, b.getInt64(mg));
                  llvm::Value* mi = b.CreateURem(m, b.getInt64(mg));
                  llvm::Value* y_plane = b.CreateMul(t, b.getInt64(plane));
                  llvm::Value* init =
                      bias ? loadF32(b, bias, m) : llvm::ConstantFP::get(b.getFloatTy(), 0.0);
                  emitLoop(
                      b, 0, plane,
                      [&](llvm::Value* p) { storeF32(b, init, y, b.CreateAdd(y_plane, p)); }, "p");
                  llvm::Value* c0 = b.CreateMul(g, b.getInt64(cg));
                  emitLoop(
                      b, 0, cg,
                      [&](llvm::Value* ci) {
                        llvm::Value* c = b.CreateAdd(c0, ci);
                        llvm::Value* x_plane = b.CreateMul(
                            b.CreateAdd(b.CreateMul(n, b.getInt64(s.c)), c), b.getInt64(in_plane));
                        llvm::Value* w_base = b.CreateMul(
                            b.CreateAdd(b.CreateMul(c, b.getInt64(mg)), mi), b.getInt64(taps));
                        // Swapped: the sweep's "input" is Y and its "output" X.
                        emitWindowTapsND(
                            b, s.out, s.in, s.kernel, s.strides, s.dilations, s.pads, y_plane,
                            x_plane,
                            [&](const std::vector<llvm::Value*>& tap) {
                              return loadFilterTap(b, w, w_base, tap, s.kernel);
                            },
                            [&](llvm::Value* weight, llvm::Value* y_at, llvm::Value* x_at) {
                              emitMultiplyAccumulate(b, weight, x, x_at, y, y_at);
                            });
                      },
                      "c");
                },
                "task");
          }};
}

}  // namespace nanoc::cpu
