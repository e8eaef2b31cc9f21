// DeformConv (2-D): a task is a group of output rows (n, oc, i); each output
// element loops over its group's input channels and the kernel taps, reads
// the tap's offset (and mask), and adds W * mask * the bilinear sample of X
// (four taps, zeros outside: outside taps read element 0 and select 0).
#include <algorithm>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ops/deform_conv.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::cpu {
namespace {

RowTasks deformTasks(const DeformConvParams& p) {
  int64_t per_element = std::max<int64_t>(1, p.Cg * p.kH * p.kW);
  return splitRows(p.N * p.OC * p.OH, p.OW, std::max<int64_t>(1, kTaskElements / per_element));
}

}  // namespace

Lowering makeDeformConvLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) {
    return deformTasks(deformConvParams(node)).count();
  };
  lowering.emit = [](KernelBuilder& kb) {
    const DeformConvParams p = deformConvParams(kb.node);
    const RowTasks tasks = deformTasks(p);
    llvm::IRBuilder<>& b = kb.b;
    const DType dt = kb.node.inputs[0]->type.dtype;
    llvm::Type* ct = computeType(b.getContext(), dt);
    auto cf = [&](double v) { return llvm::ConstantFP::get(ct, v); };
    auto ci = [&](int64_t v) { return b.getInt64(v); };
    const int64_t K = p.kH * p.kW, ocg = p.OC / p.group, cpog = p.C / p.offset_group;
    llvm::Value* x = kb.input(0);
    llvm::Value* w = kb.input(1);
    llvm::Value* off = kb.input(2);
    llvm::Value* bias = p.has_bias ? kb.input(3) : nullptr;
    llvm::Value* mask = p.has_mask ? kb.input(4) : nullptr;
    llvm::Value* y = kb.output(0);
    const double limit = static_cast<double>(int64_t{1} << 40);
    emitRowTasks(kb, tasks, [&](llvm::Value* row, llvm::Value* col_begin, llvm::Value* col_end) {
      llvm::Value* i = b.CreateURem(row, ci(p.OH));
      llvm::Value* noc = b.CreateUDiv(row, ci(p.OH));
      llvm::Value* oc = b.CreateURem(noc, ci(p.OC));
      llvm::Value* n = b.CreateUDiv(noc, ci(p.OC));
      llvm::Value* g = b.CreateUDiv(oc, ci(ocg));
      llvm::Value* y_row = b.CreateMul(row, ci(p.OW));
      llvm::Value* h_base = b.CreateSub(b.CreateMul(i, ci(p.strides[0])), ci(p.pads[0]));
      emitLoop(
          b, col_begin, col_end,
          [&](llvm::Value* j) {
            llvm::Value* w_base = b.CreateSub(b.CreateMul(j, ci(p.strides[1])), ci(p.pads[1]));
            llvm::Value* ij = b.CreateAdd(b.CreateMul(i, ci(p.OW)), j);
            llvm::Value* init = bias ? loadCompute(b, dt, bias, oc) : cf(0);
            llvm::Value* acc = emitReduction(
                b, ci(0), ci(p.Cg), init,
                [&](llvm::Value* cg, llvm::Value* acc_c) {
                  llvm::Value* c = b.CreateAdd(b.CreateMul(g, ci(p.Cg)), cg);
                  llvm::Value* og = b.CreateUDiv(c, ci(cpog));
                  llvm::Value* ogk =
                      b.CreateMul(b.CreateAdd(b.CreateMul(n, ci(p.offset_group)), og),
                                  ci(K));  // (n * og_count + og) * K
                  llvm::Value* x_plane =
                      b.CreateMul(b.CreateAdd(b.CreateMul(n, ci(p.C)), c), ci(p.H * p.W));
                  llvm::Value* w_at =
                      b.CreateMul(b.CreateAdd(b.CreateMul(oc, ci(p.Cg)), cg), ci(K));
                  return emitReduction(
                      b, ci(0), ci(K), acc_c,
                      [&](llvm::Value* k, llvm::Value* acc_k) {
                        llvm::Value* kh = b.CreateUDiv(k, ci(p.kW));
                        llvm::Value* kw = b.CreateURem(k, ci(p.kW));
                        llvm::Value* plane = b.CreateMul(b.CreateAdd(ogk, k), ci(2));
                        llvm::Value* oy = loadCompute(
                            b, dt, off, b.CreateAdd(b.CreateMul(plane, ci(p.OH * p.OW)), ij));
                        llvm::Value* ox = loadCompute(
                            b, dt, off,
                            b.CreateAdd(b.CreateMul(b.CreateAdd(plane, ci(1)), ci(p.OH * p.OW)),
                                        ij));
                        llvm::Value* yc = b.CreateFAdd(
                            b.CreateSIToFP(b.CreateAdd(h_base, b.CreateMul(kh, ci(p.dilations[0]))),
                                           ct),
                            oy);
                        llvm::Value* xc = b.CreateFAdd(
                            b.CreateSIToFP(b.CreateAdd(w_base, b.CreateMul(kw, ci(p.dilations[1]))),
                                           ct),
                            ox);
                        auto split = [&](llvm::Value* v, llvm::Value** first) {
                          llvm::Value* f = b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, v);
                          llvm::Value* fc = b.CreateBinaryIntrinsic(
                              llvm::Intrinsic::minnum,
                              b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, f, cf(-limit)),
                              cf(limit));
                          *first = b.CreateFPToSI(fc, b.getInt64Ty());
                          return b.CreateFSub(v, f);
                        };
                        llvm::Value *y0, *x0;
                        llvm::Value* ty = split(yc, &y0);
                        llvm::Value* tx = split(xc, &x0);
                        llvm::Value* v = cf(0);
                        for (int dy = 0; dy < 2; ++dy)
                          for (int dx = 0; dx < 2; ++dx) {
                            llvm::Value* yy = b.CreateAdd(y0, ci(dy));
                            llvm::Value* xx = b.CreateAdd(x0, ci(dx));
                            llvm::Value* inside =
                                b.CreateAnd(b.CreateAnd(b.CreateICmpSGE(yy, ci(0)),
                                                        b.CreateICmpSLT(yy, ci(p.H))),
                                            b.CreateAnd(b.CreateICmpSGE(xx, ci(0)),
                                                        b.CreateICmpSLT(xx, ci(p.W))));
                            llvm::Value* at = b.CreateSelect(
                                inside, b.CreateAdd(b.CreateMul(yy, ci(p.W)), xx), ci(0));
                            llvm::Value* xv = loadCompute(b, dt, x, b.CreateAdd(x_plane, at));
                            xv = b.CreateSelect(inside, xv, cf(0));
                            llvm::Value* wy = dy ? ty : b.CreateFSub(cf(1), ty);
                            llvm::Value* wx = dx ? tx : b.CreateFSub(cf(1), tx);
                            v = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ct},
                                                  {b.CreateFMul(wy, wx), xv, v});
                          }
                        llvm::Value* wv = loadCompute(b, dt, w, b.CreateAdd(w_at, k));
                        if (mask)
                          wv = b.CreateFMul(
                              wv, loadCompute(
                                      b, dt, mask,
                                      b.CreateAdd(b.CreateMul(b.CreateAdd(ogk, k), ci(p.OH * p.OW)),
                                                  ij)));
                        return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ct}, {wv, v, acc_k});
                      },
                      "k");
                },
                "cg");
            storeCompute(b, dt, acc, y, b.CreateAdd(y_row, j));
          },
          "j");
    });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
