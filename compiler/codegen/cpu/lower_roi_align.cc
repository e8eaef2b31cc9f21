// RoiAlign: a task is a group of output rows (r, c, ph); every bin computes
// its ROI geometry in f64 as the reference does (compiler/ops/roi_align.h),
// then loops over its sample grid (a run-time count when sampling_ratio is
// 0) reading four bilinear taps per sample. Samples outside the feature map
// read element 0 with weight 0, as the reference does.
#include <algorithm>
#include <limits>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ops/roi_align.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::cpu {
namespace {

RowTasks roiAlignTasks(const Node& node) {
  RoiAlignParams p = roiAlignParams(node);
  const int64_t R = node.inputs[1]->type.dims[0], C = node.inputs[0]->type.dims[1];
  // A bin reads many samples: fewer bins per task.
  return splitRows(R * C * p.output_height, p.output_width, kTaskElements / 16);
}

}  // namespace

Lowering makeRoiAlignLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return roiAlignTasks(node).count(); };
  lowering.emit = [](KernelBuilder& kb) {
    const RoiAlignParams p = roiAlignParams(kb.node);
    const RowTasks tasks = roiAlignTasks(kb.node);
    llvm::IRBuilder<>& b = kb.b;
    const TensorType& xt = kb.node.inputs[0]->type;
    const DType x_dtype = xt.dtype;
    const DType r_dtype = kb.node.inputs[1]->type.dtype;
    const int64_t N = xt.dims[0], C = xt.dims[1], H = xt.dims[2], W = xt.dims[3];
    const int64_t PH = p.output_height, PW = p.output_width;
    llvm::Type* f64 = b.getDoubleTy();
    auto cf = [&](double v) { return llvm::ConstantFP::get(f64, v); };
    auto ci = [&](int64_t v) { return b.getInt64(v); };
    auto toF = [&](llvm::Value* i) { return b.CreateSIToFP(i, f64); };
    llvm::Value* x_buf = kb.input(0);
    llvm::Value* rois = kb.input(1);
    llvm::Value* batch = kb.input(2);
    llvm::Value* y_buf = kb.output(0);
    const double H_d = static_cast<double>(H), W_d = static_cast<double>(W);
    emitRowTasks(kb, tasks, [&](llvm::Value* row, llvm::Value* col_begin, llvm::Value* col_end) {
      llvm::Value* ph = b.CreateURem(row, ci(PH));
      llvm::Value* rc = b.CreateUDiv(row, ci(PH));
      llvm::Value* c = b.CreateURem(rc, ci(C));
      llvm::Value* r = b.CreateUDiv(rc, ci(C));
      auto roi = [&](int64_t k) {
        llvm::Value* v = loadCompute(b, r_dtype, rois, b.CreateAdd(b.CreateMul(r, ci(4)), ci(k)));
        v = convertCompute(b, v, r_dtype == DType::F64 ? DType::F64 : DType::F32, DType::F64);
        return b.CreateFSub(b.CreateFMul(v, cf(p.spatial_scale)), cf(p.half_pixel ? 0.5 : 0.0));
      };
      llvm::Value* start_w = roi(0);
      llvm::Value* start_h = roi(1);
      llvm::Value* roi_w = b.CreateFSub(roi(2), start_w);
      llvm::Value* roi_h = b.CreateFSub(roi(3), start_h);
      if (!p.half_pixel) {  // python max(v, 1.0): 1.0 only when 1.0 > v
        roi_w = b.CreateSelect(b.CreateFCmpOGT(cf(1), roi_w), cf(1), roi_w);
        roi_h = b.CreateSelect(b.CreateFCmpOGT(cf(1), roi_h), cf(1), roi_h);
      }
      llvm::Value* bin_h = b.CreateFDiv(roi_h, cf(static_cast<double>(PH)));
      llvm::Value* bin_w = b.CreateFDiv(roi_w, cf(static_cast<double>(PW)));
      auto gridCount = [&](llvm::Value* v) -> llvm::Value* {
        if (p.sampling_ratio > 0) return ci(p.sampling_ratio);
        llvm::Value* cv = b.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, v);
        cv = b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, cv, cf(0));  // NaN -> 0
        cv = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, cv, cf(4096));
        return b.CreateFPToSI(cv, b.getInt64Ty());
      };
      llvm::Value* grid_h = gridCount(bin_h);
      llvm::Value* grid_w = gridCount(bin_w);
      llvm::Value* count =
          toF(b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, b.CreateMul(grid_h, grid_w), ci(1)));
      llvm::Value* grid_h_f = toF(grid_h);
      llvm::Value* grid_w_f = toF(grid_w);
      llvm::Value* bi = loadElement(b, DType::I64, batch, r);
      bi = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin,
                                   b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, bi, ci(0)),
                                   ci(N - 1));
      llvm::Value* base = b.CreateMul(b.CreateAdd(b.CreateMul(bi, ci(C)), c), ci(H * W));
      llvm::Value* y_row = b.CreateMul(row, ci(PW));
      llvm::Value* ph_f = toF(ph);
      emitLoop(
          b, col_begin, col_end,
          [&](llvm::Value* pw) {
            llvm::Value* pw_f = toF(pw);
            llvm::Value* init = p.max_mode ? cf(-std::numeric_limits<double>::infinity()) : cf(0.0);
            llvm::Value* acc = emitReduction(
                b, ci(0), grid_h, init,
                [&](llvm::Value* iy, llvm::Value* acc_y) {
                  llvm::Value* yy = b.CreateFAdd(
                      b.CreateFAdd(start_h, b.CreateFMul(ph_f, bin_h)),
                      b.CreateFDiv(b.CreateFMul(b.CreateFAdd(toF(iy), cf(0.5)), bin_h), grid_h_f));
                  return emitReduction(
                      b, ci(0), grid_w, acc_y,
                      [&](llvm::Value* ix, llvm::Value* acc_x) {
                        llvm::Value* xx = b.CreateFAdd(
                            b.CreateFAdd(start_w, b.CreateFMul(pw_f, bin_w)),
                            b.CreateFDiv(b.CreateFMul(b.CreateFAdd(toF(ix), cf(0.5)), bin_w),
                                         grid_w_f));
                        llvm::Value* out = b.CreateOr(
                            b.CreateOr(b.CreateFCmpOLT(yy, cf(-1)), b.CreateFCmpOGT(yy, cf(H_d))),
                            b.CreateOr(b.CreateFCmpOLT(xx, cf(-1)), b.CreateFCmpOGT(xx, cf(W_d))));
                        // One axis: low/high index and the fraction (ONNX's clamping).
                        auto axis = [&](llvm::Value* v, int64_t size, llvm::Value** low,
                                        llvm::Value** high) {
                          v = b.CreateSelect(b.CreateFCmpOGT(v, cf(0)), v, cf(0));
                          v = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, v,
                                                      cf(static_cast<double>(size)));
                          llvm::Value* lo = b.CreateFPToSI(v, b.getInt64Ty());
                          llvm::Value* at_end = b.CreateICmpSGE(lo, ci(size - 1));
                          *low = b.CreateSelect(at_end, ci(size - 1), lo);
                          *high = b.CreateSelect(at_end, ci(size - 1), b.CreateAdd(lo, ci(1)));
                          llvm::Value* vv = b.CreateSelect(at_end, toF(*low), v);
                          return b.CreateFSub(vv, toF(*low));
                        };
                        llvm::Value *y_low, *y_high, *x_low, *x_high;
                        llvm::Value* ly = axis(yy, H, &y_low, &y_high);
                        llvm::Value* lx = axis(xx, W, &x_low, &x_high);
                        llvm::Value* hy = b.CreateFSub(cf(1), ly);
                        llvm::Value* hx = b.CreateFSub(cf(1), lx);
                        llvm::Value* zero = cf(0);
                        llvm::Value* w[4] = {b.CreateSelect(out, zero, b.CreateFMul(hy, hx)),
                                             b.CreateSelect(out, zero, b.CreateFMul(hy, lx)),
                                             b.CreateSelect(out, zero, b.CreateFMul(ly, hx)),
                                             b.CreateSelect(out, zero, b.CreateFMul(ly, lx))};
                        llvm::Value* pos[4] = {b.CreateAdd(b.CreateMul(y_low, ci(W)), x_low),
                                               b.CreateAdd(b.CreateMul(y_low, ci(W)), x_high),
                                               b.CreateAdd(b.CreateMul(y_high, ci(W)), x_low),
                                               b.CreateAdd(b.CreateMul(y_high, ci(W)), x_high)};
                        llvm::Value* t[4];
                        for (int k = 0; k < 4; ++k) {
                          llvm::Value* at = b.CreateSelect(out, ci(0), pos[k]);
                          llvm::Value* v = loadCompute(b, x_dtype, x_buf, b.CreateAdd(base, at));
                          v = convertCompute(b, v, x_dtype == DType::F64 ? DType::F64 : DType::F32,
                                             DType::F64);
                          t[k] = b.CreateFMul(w[k], v);
                        }
                        if (p.max_mode) {
                          // python max(a, b): b only when b > a.
                          auto mx = [&](llvm::Value* a, llvm::Value* c2) {
                            return b.CreateSelect(b.CreateFCmpOGT(c2, a), c2, a);
                          };
                          llvm::Value* m = mx(mx(mx(t[0], t[1]), t[2]), t[3]);
                          return mx(acc_x, m);
                        }
                        return b.CreateFAdd(
                            acc_x,
                            b.CreateFAdd(b.CreateFAdd(b.CreateFAdd(t[0], t[1]), t[2]), t[3]));
                      },
                      "ix");
                },
                "iy");
            if (p.max_mode) {
              // An empty sample grid gives 0, as the reference.
              acc = b.CreateSelect(b.CreateICmpEQ(b.CreateMul(grid_h, grid_w), ci(0)), cf(0), acc);
            } else {
              acc = b.CreateFDiv(acc, count);
            }
            llvm::Value* v =
                convertCompute(b, acc, DType::F64, x_dtype == DType::F64 ? DType::F64 : DType::F32);
            storeCompute(b, x_dtype, v, y_buf, b.CreateAdd(y_row, pw));
          },
          "pw");
    });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
