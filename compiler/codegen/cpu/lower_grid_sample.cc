// GridSample: a task is a group of output rows (the last output spatial axis,
// per batch item). Per output position the kernel reads the grid once,
// computes every axis's taps (padded offsets, weights, inside flags) by the
// rule of compiler/ops/grid_sample.h, and then sums, for every channel, the
// product of the axes' taps (unrolled: at most 4^3 loads). Loads always stay
// inside X: zeros padding clamps the offset and selects 0 instead.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ops/grid_sample.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::cpu {
namespace {

struct GridShape {
  GridSampleParams p;
  int64_t N = 0, C = 0, S = 0, P = 0;
  std::vector<int64_t> d, stride, out_spatial;
  RowTasks tasks;
};

GridShape gridShape(const Node& node) {
  GridShape s;
  s.p = gridSampleParams(node);
  const TensorType& x = node.inputs[0]->type;
  const TensorType& grid = node.inputs[1]->type;
  const size_t r = s.p.spatial;
  s.N = x.dims[0];
  s.C = x.dims[1];
  s.d.assign(x.dims.begin() + 2, x.dims.end());
  s.stride.assign(r, 1);
  for (size_t a = r - 1; a > 0; --a) s.stride[a - 1] = s.stride[a] * s.d[a];
  s.S = product(s.d, 0, r);
  s.out_spatial.assign(grid.dims.begin() + 1, grid.dims.end() - 1);
  s.P = product(s.out_spatial, 0, r);
  int64_t cols = s.out_spatial.back();
  int64_t rows = s.N * product(s.out_spatial, 0, r - 1);
  if (s.C == 0) rows = 0;  // an empty output
  s.tasks = splitRows(rows, cols, std::max<int64_t>(1, kTaskElements / std::max<int64_t>(1, s.C)));
  return s;
}

struct Tap {
  llvm::Value* offset;  // i64, inside X's spatial block
  llvm::Value* weight;  // compute type; null for 1
  llvm::Value* inside;  // i1; null when always inside
};

}  // namespace

Lowering makeGridSampleLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return gridShape(node).tasks.count(); };
  lowering.emit = [](KernelBuilder& kb) {
    GridShape s = gridShape(kb.node);
    const GridSampleParams& p = s.p;
    const size_t r = p.spatial;
    llvm::IRBuilder<>& b = kb.b;
    const DType x_dtype = kb.node.inputs[0]->type.dtype;
    const DType g_dtype = kb.node.inputs[1]->type.dtype;
    const DType c_dtype = x_dtype == DType::F64 ? DType::F64 : DType::F32;
    llvm::Type* ct = computeType(b.getContext(), x_dtype);
    auto cf = [&](double v) { return llvm::ConstantFP::get(ct, v); };
    auto ci = [&](int64_t v) { return b.getInt64(v); };
    auto floorOf = [&](llvm::Value* v) {
      return b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, v);
    };
    auto minF = [&](llvm::Value* a, llvm::Value* c) {
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, a, c);
    };
    auto maxF = [&](llvm::Value* a, llvm::Value* c) {
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, a, c);
    };
    auto isOdd = [&](llvm::Value* v) {  // v integral
      llvm::Value* half = b.CreateFMul(v, cf(0.5));
      return b.CreateFCmpUNE(floorOf(half), half);
    };
    auto toIndex = [&](llvm::Value* v) {  // as the reference: clamped, NaN far outside
      const double limit = static_cast<double>(int64_t{1} << 40);
      return b.CreateFPToSI(minF(maxF(v, cf(-limit)), cf(limit)), b.getInt64Ty());
    };
    auto smin = [&](llvm::Value* a, llvm::Value* c) {
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, a, c);
    };
    auto smax = [&](llvm::Value* a, llvm::Value* c) {
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, a, c);
    };

    // The coordinate of one axis from its grid value (grid_sample::coordinate).
    auto coordinate = [&](llvm::Value* g, int64_t d) {
      double len = static_cast<double>(d);
      llvm::Value* x =
          p.align_corners
              ? b.CreateFMul(b.CreateFDiv(b.CreateFAdd(g, cf(1)), cf(2)), cf(len - 1))
              : b.CreateFDiv(b.CreateFSub(b.CreateFMul(b.CreateFAdd(g, cf(1)), cf(len)), cf(1)),
                             cf(2));
      if (p.mode == GridMode::Nearest) {
        llvm::Value* rr = floorOf(b.CreateFAdd(x, cf(0.5)));
        llvm::Value* tie = b.CreateFCmpOEQ(b.CreateFSub(rr, x), cf(0.5));
        x = b.CreateSelect(b.CreateAnd(tie, isOdd(rr)), b.CreateFSub(rr, cf(1)), rr);
      }
      double lo = p.align_corners ? 0.0 : -0.5;
      double hi = p.align_corners ? len - 1 : len - 0.5;
      llvm::Value* below = b.CreateFCmpOLT(x, cf(lo));
      llvm::Value* above = b.CreateFCmpOGT(x, cf(hi));
      if (p.padding == GridPadding::Border) {
        llvm::Value* clamped = minF(maxF(x, cf(0)), cf(len - 1));
        x = b.CreateSelect(b.CreateOr(below, above), clamped, x);
      } else if (p.padding == GridPadding::Reflection) {
        double range = hi - lo;
        if (!(range > 0)) {
          x = b.CreateSelect(b.CreateOr(below, above), cf(lo), x);
        } else {
          llvm::Value* dx = b.CreateSelect(below, b.CreateFSub(cf(lo), x), b.CreateFSub(x, cf(hi)));
          llvm::Value* n =
              b.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, b.CreateFDiv(dx, cf(range)));
          llvm::Value* rem = b.CreateFSub(dx, b.CreateFMul(n, cf(range)));
          llvm::Value* even = b.CreateNot(isOdd(n));
          // below == even: lo + rem, else hi - rem.
          llvm::Value* from_lo = b.CreateICmpEQ(below, even);
          llvm::Value* reflected =
              b.CreateSelect(from_lo, b.CreateFAdd(cf(lo), rem), b.CreateFSub(cf(hi), rem));
          x = b.CreateSelect(b.CreateOr(below, above), reflected, x);
        }
      }
      return x;
    };
    // A tap's index padded into [0, d) (grid_sample::padIndex), times stride.
    auto padTap = [&](llvm::Value* i, int64_t d, int64_t stride, llvm::Value* weight) {
      Tap t{nullptr, weight, nullptr};
      llvm::Value* idx;
      if (p.padding == GridPadding::Zeros) {
        t.inside = b.CreateAnd(b.CreateICmpSGE(i, ci(0)), b.CreateICmpSLT(i, ci(d)));
        idx = b.CreateSelect(t.inside, i, ci(0));
      } else if (p.padding == GridPadding::Border) {
        idx = smin(smax(i, ci(0)), ci(d - 1));
      } else {
        int64_t period = p.align_corners ? 2 * (d - 1) : 2 * d;
        if (period <= 0) {
          idx = ci(0);
        } else {
          llvm::Value* m = b.CreateSRem(i, ci(period));
          m = b.CreateSelect(b.CreateICmpSLT(m, ci(0)), b.CreateAdd(m, ci(period)), m);
          llvm::Value* mirrored = b.CreateSub(ci(period - 1 + (p.align_corners ? 1 : 0)), m);
          idx = b.CreateSelect(b.CreateICmpSGE(m, ci(d)), mirrored, m);
        }
      }
      t.offset = b.CreateMul(idx, ci(stride));
      return t;
    };

    llvm::Value* x_buf = kb.input(0);
    llvm::Value* g_buf = kb.input(1);
    llvm::Value* y_buf = kb.output(0);
    const int64_t last = s.out_spatial.back();
    const int64_t rows_per_n = product(s.out_spatial, 0, r - 1);
    emitRowTasks(kb, s.tasks, [&](llvm::Value* row, llvm::Value* col_begin, llvm::Value* col_end) {
      llvm::Value* n = b.CreateUDiv(row, ci(rows_per_n));
      llvm::Value* pos_row = b.CreateURem(row, ci(rows_per_n));
      llvm::Value* x_n = b.CreateMul(n, ci(s.C * s.S));
      llvm::Value* y_n = b.CreateMul(n, ci(s.C * s.P));
      emitLoop(
          b, col_begin, col_end,
          [&](llvm::Value* col) {
            llvm::Value* o = b.CreateAdd(b.CreateMul(pos_row, ci(last)), col);
            llvm::Value* g_at =
                b.CreateMul(b.CreateAdd(b.CreateMul(n, ci(s.P)), o), ci(static_cast<int64_t>(r)));
            std::vector<std::vector<Tap>> taps(r);
            for (size_t a = 0; a < r; ++a) {
              llvm::Value* g = loadCompute(b, g_dtype, g_buf,
                                           b.CreateAdd(g_at, ci(static_cast<int64_t>(r - 1 - a))));
              g = convertCompute(b, g, g_dtype, c_dtype);
              llvm::Value* x = coordinate(g, s.d[a]);
              if (p.mode == GridMode::Nearest) {
                taps[a].push_back(padTap(toIndex(x), s.d[a], s.stride[a], nullptr));
                continue;
              }
              llvm::Value* x0 = floorOf(x);
              llvm::Value* t = b.CreateFSub(x, x0);
              llvm::Value* first = toIndex(x0);
              std::vector<llvm::Value*> w;
              if (p.mode == GridMode::Linear) {
                w = {b.CreateFSub(cf(1), t), t};
              } else {
                first = b.CreateSub(first, ci(1));
                const double A = -0.75;
                auto outer = [&](llvm::Value* z) {  // ((A z - 5A) z + 8A) z - 4A
                  llvm::Value* v = b.CreateFSub(b.CreateFMul(cf(A), z), cf(5 * A));
                  v = b.CreateFAdd(b.CreateFMul(v, z), cf(8 * A));
                  return b.CreateFSub(b.CreateFMul(v, z), cf(4 * A));
                };
                auto inner = [&](llvm::Value* z) {  // ((A + 2) z - (A + 3)) z z + 1
                  llvm::Value* v = b.CreateFSub(b.CreateFMul(cf(A + 2), z), cf(A + 3));
                  return b.CreateFAdd(b.CreateFMul(b.CreateFMul(v, z), z), cf(1));
                };
                llvm::Value* sv = b.CreateFSub(cf(1), t);
                w = {outer(b.CreateFAdd(t, cf(1))), inner(t), inner(sv),
                     outer(b.CreateFSub(cf(2), t))};
              }
              for (size_t k = 0; k < w.size(); ++k)
                taps[a].push_back(padTap(b.CreateAdd(first, ci(static_cast<int64_t>(k))), s.d[a],
                                         s.stride[a], w[k]));
            }
            // The product of the axes' taps, flattened once per position.
            std::vector<Tap> flat = {Tap{ci(0), nullptr, nullptr}};
            for (size_t a = 0; a < r; ++a) {
              std::vector<Tap> next;
              for (const Tap& f : flat)
                for (const Tap& t : taps[a]) {
                  Tap m;
                  m.offset = b.CreateAdd(f.offset, t.offset);
                  m.weight = !f.weight   ? t.weight
                             : !t.weight ? f.weight
                                         : b.CreateFMul(f.weight, t.weight);
                  m.inside = !f.inside   ? t.inside
                             : !t.inside ? f.inside
                                         : b.CreateAnd(f.inside, t.inside);
                  next.push_back(m);
                }
              flat = std::move(next);
            }
            emitLoop(
                b, ci(0), ci(s.C),
                [&](llvm::Value* c) {
                  llvm::Value* x_c = b.CreateAdd(x_n, b.CreateMul(c, ci(s.S)));
                  llvm::Value* acc = cf(0);
                  for (const Tap& t : flat) {
                    llvm::Value* v = loadCompute(b, x_dtype, x_buf, b.CreateAdd(x_c, t.offset));
                    if (t.inside) v = b.CreateSelect(t.inside, v, cf(0));
                    acc = t.weight ? b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ct},
                                                       {t.weight, v, acc})
                                   : b.CreateFAdd(acc, v);
                  }
                  storeCompute(b, x_dtype, acc, y_buf,
                               b.CreateAdd(y_n, b.CreateAdd(b.CreateMul(c, ci(s.P)), o)));
                },
                "c");
          },
          "col");
    });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

using LoweringList = std::vector<std::pair<std::string, Lowering>>;

// The sampling family (see all_lowerings.cc).
Lowering makeCol2ImLowering();      // lower_col2im.cc
Lowering makeRoiAlignLowering();    // lower_roi_align.cc
Lowering makeDeformConvLowering();  // lower_deform_conv.cc
Lowering makeAffineGridLowering();  // lower_affine_grid.cc

LoweringList samplingLowerings() {
  LoweringList list;
  list.emplace_back("GridSample", makeGridSampleLowering());
  list.emplace_back("Col2Im", makeCol2ImLowering());
  list.emplace_back("RoiAlign", makeRoiAlignLowering());
  list.emplace_back("DeformConv", makeDeformConvLowering());
  list.emplace_back("AffineGrid", makeAffineGridLowering());
  return list;
}

}  // namespace nanoc::cpu
