// nanoc.Im2Col and nanoc.ConvGemm (ops/conv_gemm.h): a Conv as patches
// packed into the micro-kernel's B panels at run time, then the register-tiled
// product with the constant weights as A.
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/epilogue.h"
#include "compiler/codegen/cpu/gemm_microkernel.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/ir/error.h"
#include "compiler/ops/conv_gemm.h"

namespace nanoc::cpu {

namespace {

// Panels per Im2Col task: about 64 tasks per image, so threads balance.
int64_t im2colPanelsPerTask(const Im2ColShape& s) {
  return std::max<int64_t>(1, (s.panels() + 63) / 64);
}

Lowering makeIm2ColLowering() {
  return {
      [](const Node& node) -> uint64_t {
        Im2ColShape s = im2colShape(node);
        int64_t per_image = (s.panels() + im2colPanelsPerTask(s) - 1) / im2colPanelsPerTask(s);
        return static_cast<uint64_t>(std::max<int64_t>(1, s.n * per_image));
      },
      [](KernelBuilder& kb) {
        Im2ColShape s = im2colShape(kb.node);
        if (s.n * s.panels() == 0) return;
        llvm::IRBuilder<>& b = kb.b;
        llvm::Value* x = kb.input(0);
        llvm::Value* col = kb.output(0);
        const int64_t P = s.pixels(), K = s.k(), S = s.panel, panels = s.panels();
        const int64_t ppt = im2colPanelsPerTask(s);
        const int64_t per_image = (panels + ppt - 1) / ppt;
        llvm::Value* zero = llvm::ConstantFP::get(b.getFloatTy(), 0.0);
        auto i64 = [&](int64_t v) { return b.getInt64(v); };
        auto smin = [&](llvm::Value* a, llvm::Value* c) {
          return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, a, c);
        };
        auto smax = [&](llvm::Value* a, llvm::Value* c) {
          return b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, a, c);
        };
        // Output columns ow whose input column ow * sw - pw + j * dw lies
        // in [0, W): [ceil(max(pw - j*dw, 0) / sw), min(OW, ceil(max(W + pw - j*dw, 0) / sw))).
        auto validColumns = [&](llvm::Value* j) {
          llvm::Value* off = b.CreateMul(j, i64(s.dw));
          auto ceilDiv = [&](llvm::Value* num) {
            num = smax(num, i64(0));
            return b.CreateUDiv(b.CreateAdd(num, i64(s.sw - 1)), i64(s.sw));
          };
          return std::make_pair(ceilDiv(b.CreateSub(i64(s.pad_w), off)),
                                smin(ceilDiv(b.CreateSub(i64(s.w + s.pad_w), off)), i64(s.ow)));
        };
        // col[dst + q] for q in [from, to): x[src + q * sw], or 0 when
        // src is null. V lanes at a time where the target has vectors (a
        // vector loop, then one masked step for the rest; stride 2 loads
        // 2V lanes and keeps the even ones), else one by one.
        const int64_t V = registerTile(*kb.fn).width;
        const bool vector_copy = V > 1 && (s.sw == 1 || s.sw == 2);
        llvm::Type* vtype = V > 1 ? llvm::FixedVectorType::get(b.getFloatTy(), V) : nullptr;
        auto laneMask = [&](int64_t lanes, llvm::Value* count) {
          std::vector<llvm::Constant*> index;
          for (int64_t l = 0; l < lanes; ++l) index.push_back(b.getInt64(l));
          return b.CreateICmpSLT(llvm::ConstantVector::get(index),
                                 b.CreateVectorSplat(lanes, count));
        };
        auto vectorAt = [&](llvm::Value* src, llvm::Value* q, llvm::Value* count) {
          if (!src) return static_cast<llvm::Value*>(llvm::Constant::getNullValue(vtype));
          const int64_t lanes = V * s.sw;
          llvm::Type* ltype = llvm::FixedVectorType::get(b.getFloatTy(), lanes);
          llvm::Value* ptr = f32Ptr(b, x, b.CreateAdd(src, b.CreateMul(q, i64(s.sw))));
          // Stride 2 reads lanes [0, 2 * count - 1): never the odd lane
          // past the last one kept, which may lie past X's end.
          if (s.sw == 2 && !count) count = i64(V);
          llvm::Value* v = nullptr;
          if (count)
            v = b.CreateMaskedLoad(
                ltype, ptr, llvm::Align(4),
                laneMask(lanes,
                         s.sw == 1 ? count : b.CreateSub(b.CreateMul(count, i64(2)), i64(1))),
                llvm::Constant::getNullValue(ltype));
          else
            v = b.CreateAlignedLoad(ltype, ptr, llvm::Align(4));
          if (s.sw == 1) return v;
          std::vector<int> even;
          for (int64_t l = 0; l < V; ++l) even.push_back(static_cast<int>(2 * l));
          return b.CreateShuffleVector(v, even);
        };
        auto run = [&](llvm::Value* dst, llvm::Value* from, llvm::Value* to, llvm::Value* src) {
          if (!vector_copy) {
            emitLoop(
                b, from, to,
                [&](llvm::Value* q) {
                  llvm::Value* v =
                      src ? loadF32(b, x, b.CreateAdd(src, b.CreateMul(q, i64(s.sw)))) : zero;
                  storeF32(b, v, col, b.CreateAdd(dst, q));
                },
                "q");
            return;
          }
          llvm::Value* count = smax(b.CreateSub(to, from), i64(0));
          llvm::Value* chunks = b.CreateUDiv(count, i64(V));
          emitLoop(
              b, i64(0), chunks,
              [&](llvm::Value* ci) {
                llvm::Value* q = b.CreateAdd(from, b.CreateMul(ci, i64(V)));
                b.CreateAlignedStore(vectorAt(src, q, nullptr), f32Ptr(b, col, b.CreateAdd(dst, q)),
                                     llvm::Align(4));
              },
              "chunk");
          llvm::Value* rest = b.CreateSub(count, b.CreateMul(chunks, i64(V)));
          llvm::Function* fn = b.GetInsertBlock()->getParent();
          llvm::BasicBlock* tail = llvm::BasicBlock::Create(b.getContext(), "rest", fn);
          llvm::BasicBlock* done = llvm::BasicBlock::Create(b.getContext(), "rest.done", fn);
          b.CreateCondBr(b.CreateICmpSGT(rest, i64(0)), tail, done);
          b.SetInsertPoint(tail);
          llvm::Value* q = b.CreateAdd(from, b.CreateMul(chunks, i64(V)));
          b.CreateMaskedStore(vectorAt(src, q, rest), f32Ptr(b, col, b.CreateAdd(dst, q)),
                              llvm::Align(4), laneMask(V, rest));
          b.CreateBr(done);
          b.SetInsertPoint(done);
        };
        auto fill = [&](llvm::Value* dst, llvm::Value* from, llvm::Value* to) {
          run(dst, from, to, nullptr);
        };
        emitLoop(
            b, kb.task_begin, kb.task_end,
            [&](llvm::Value* t) {
              llvm::Value* n = b.CreateUDiv(t, i64(per_image));
              llvm::Value* first = b.CreateMul(b.CreateURem(t, i64(per_image)), i64(ppt));
              llvm::Value* last = smin(b.CreateAdd(first, i64(ppt)), i64(panels));
              llvm::Value* x_n = b.CreateMul(n, i64(s.c * s.h * s.w));
              emitLoop(
                  b, first, last,
                  [&](llvm::Value* pi) {
                    llvm::Value* p0 = b.CreateMul(pi, i64(S));
                    llvm::Value* p_end = smin(b.CreateAdd(p0, i64(S)), i64(P));
                    llvm::Value* base =
                        b.CreateMul(b.CreateAdd(b.CreateMul(n, i64(panels)), pi), i64(K * S));
                    llvm::Value* oh_first = b.CreateUDiv(p0, i64(s.ow));
                    llvm::Value* oh_last =
                        b.CreateAdd(b.CreateUDiv(b.CreateSub(p_end, i64(1)), i64(s.ow)), i64(1));
                    // One segment per output row the panel meets: its
                    // columns ow in [ow_a, ow_b) sit at panel column
                    // q0 + ow.
                    emitLoop(
                        b, oh_first, oh_last,
                        [&](llvm::Value* oh) {
                          llvm::Value* row0 = b.CreateMul(oh, i64(s.ow));
                          llvm::Value* ow_a = smax(b.CreateSub(p0, row0), i64(0));
                          llvm::Value* ow_b = smin(b.CreateSub(p_end, row0), i64(s.ow));
                          llvm::Value* q0 = b.CreateSub(row0, p0);
                          emitLoop(
                              b, 0, s.c,
                              [&](llvm::Value* c) {
                                emitLoop(
                                    b, 0, s.kh,
                                    [&](llvm::Value* i) {
                                      llvm::Value* ih = b.CreateAdd(
                                          b.CreateMul(oh, i64(s.sh)),
                                          b.CreateSub(b.CreateMul(i, i64(s.dh)), i64(s.pad_h)));
                                      llvm::Value* row_ok =
                                          b.CreateAnd(b.CreateICmpSGE(ih, i64(0)),
                                                      b.CreateICmpSLT(ih, i64(s.h)));
                                      llvm::Value* x_row = b.CreateAdd(
                                          x_n,
                                          b.CreateMul(b.CreateAdd(b.CreateMul(c, i64(s.h)), ih),
                                                      i64(s.w)));
                                      llvm::Value* k0 = b.CreateMul(
                                          b.CreateAdd(b.CreateMul(c, i64(s.kh)), i), i64(s.kw));
                                      emitLoop(
                                          b, 0, s.kw,
                                          [&](llvm::Value* j) {
                                            auto [lo_j, hi_j] = validColumns(j);
                                            llvm::Value* lo = smin(smax(lo_j, ow_a), ow_b);
                                            llvm::Value* hi = smax(smin(hi_j, ow_b), lo);
                                            lo = b.CreateSelect(row_ok, lo, ow_b);
                                            hi = b.CreateSelect(row_ok, hi, ow_b);
                                            llvm::Value* dst = b.CreateAdd(
                                                b.CreateAdd(
                                                    base, b.CreateMul(b.CreateAdd(k0, j), i64(S))),
                                                q0);
                                            llvm::Value* src = b.CreateAdd(
                                                x_row, b.CreateSub(b.CreateMul(j, i64(s.dw)),
                                                                   i64(s.pad_w)));
                                            fill(dst, ow_a, lo);
                                            run(dst, lo, hi, src);
                                            fill(dst, hi, ow_b);
                                          },
                                          "j");
                                    },
                                    "i");
                              },
                              "c");
                        },
                        "oh");
                    // The last panel's columns past P are zero.
                    if (P % S != 0) {
                      llvm::Function* fn = b.GetInsertBlock()->getParent();
                      llvm::BasicBlock* tail = llvm::BasicBlock::Create(b.getContext(), "pad", fn);
                      llvm::BasicBlock* done =
                          llvm::BasicBlock::Create(b.getContext(), "pad.done", fn);
                      b.CreateCondBr(b.CreateICmpEQ(pi, i64(panels - 1)), tail, done);
                      b.SetInsertPoint(tail);
                      emitLoop(
                          b, 0, K,
                          [&](llvm::Value* k) {
                            fill(b.CreateAdd(base, b.CreateMul(k, i64(S))), i64(P % S), i64(S));
                          },
                          "k");
                      b.CreateBr(done);
                      b.SetInsertPoint(done);
                    }
                  },
                  "panel");
            },
            "task");
      }};
}

struct ConvGemmPlan {
  ConvGemmShape s;
  PackedProduct p;  // the pointers and hooks are set by the emitter
  int64_t per_image = 1;
};

// Rows per task as the packed product has them; columns per task so that an
// image gives about 16 tasks (several per thread) of whole tiles.
ConvGemmPlan planConvGemm(const Node& node, int64_t nr) {
  ConvGemmPlan plan;
  plan.s = convGemmShape(node);
  PackedProduct& p = plan.p;
  p.M = plan.s.m;
  p.K = plan.s.k;
  p.N = plan.s.pixels();
  p.rows_per_task = packedRowsPerTask(p.M, p.K, p.N);
  const int64_t row_blocks = (p.M + p.rows_per_task - 1) / p.rows_per_task;
  const int64_t unit = plan.s.panel > 0 ? plan.s.panel : nr;
  const int64_t units = std::max<int64_t>(1, (p.N + unit - 1) / unit);
  const int64_t col_blocks =
      std::min(units, std::max<int64_t>(1, (16 + row_blocks - 1) / row_blocks));
  p.cols_per_task = unit * ((units + col_blocks - 1) / col_blocks);
  plan.per_image = p.M * p.N == 0 ? 0 : p.taskCount();
  return plan;
}

// The tile is the kernel function's, but the task count is fixed before the
// function exists and is the same for every ISA variant: columns per task are
// multiples of the panel (itself a multiple of every variant's nr) or, with
// panel 0, of 96, a multiple of every tile's columns (32, 24, 16, 12, 8, 4).
constexpr int64_t kColumnUnit = 96;

Lowering makeConvGemmLowering() {
  return {[](const Node& node) -> uint64_t {
            ConvGemmPlan plan = planConvGemm(node, kColumnUnit);
            return static_cast<uint64_t>(std::max<int64_t>(1, plan.s.n * plan.per_image));
          },
          [](KernelBuilder& kb) {
            ConvGemmPlan plan = planConvGemm(kb.node, kColumnUnit);
            const ConvGemmShape& s = plan.s;
            if (s.n * plan.per_image == 0) return;
            llvm::IRBuilder<>& b = kb.b;
            const RegisterTile tile = registerTile(*kb.fn);
            if (s.panel % tile.columns() != 0 || plan.p.cols_per_task % tile.columns() != 0)
              throw CompileError("nanoc.ConvGemm '" + kb.node.name + "': panel " +
                                 std::to_string(s.panel) + " is not a multiple of the tile's " +
                                 std::to_string(tile.columns()) + " columns");
            llvm::Value* bm = kb.input(0);
            llvm::Value* w = kb.input(1);
            llvm::Value* bias = s.has_bias ? kb.input(2) : nullptr;
            llvm::Value* y = kb.output(0);
            const FusedEpilogue epilogue = fusedEpilogue(kb);
            llvm::Type* f32 = b.getFloatTy();
            const int64_t P = s.pixels();
            const int64_t b_image =
                s.panel > 0 ? (P + s.panel - 1) / s.panel * s.k * s.panel : s.k * P;
            emitLoop(
                b, kb.task_begin, kb.task_end,
                [&](llvm::Value* t) {
                  PackedProduct p = plan.p;
                  llvm::Value* tt = t;
                  p.packed_b = bm;
                  p.y = y;
                  llvm::Value* residual = epilogue.residual;
                  if (s.n > 1) {
                    llvm::Value* n = b.CreateUDiv(t, b.getInt64(plan.per_image));
                    tt = b.CreateURem(t, b.getInt64(plan.per_image));
                    p.packed_b = b.CreateGEP(f32, bm, b.CreateMul(n, b.getInt64(b_image)));
                    p.y = b.CreateGEP(f32, y, b.CreateMul(n, b.getInt64(s.m * P)));
                    if (residual)
                      residual = b.CreateGEP(f32, residual, b.CreateMul(n, b.getInt64(s.m * P)));
                  }
                  p.a = w;
                  p.a_row_stride = s.k;
                  p.a_k_stride = 1;
                  if (s.panel > 0) {
                    p.b_panel_stride = s.panel;
                  } else {
                    p.b_in_place = true;
                    p.b_k_stride = P;
                    p.b_col_stride = 1;
                  }
                  if (bias)
                    p.init = [&](llvm::Value* i, llvm::Value*, int64_t, llvm::Type* type) {
                      llvm::Value* v = loadF32(b, bias, i);
                      if (auto* vec = llvm::dyn_cast<llvm::FixedVectorType>(type))
                        v = b.CreateVectorSplat(vec->getNumElements(), v);
                      return v;
                    };
                  // The image's Y is [M, P]: the tile's (i, j) is element i * P + j.
                  if (!epilogue.empty())
                    p.epilogue = [&](llvm::Value* i, llvm::Value* j, int64_t lanes,
                                     llvm::Value* value) {
                      llvm::Value* at = b.CreateAdd(b.CreateMul(i, b.getInt64(P)), j);
                      return applyEpilogue(b, epilogue.spec, value, residual, at, lanes);
                    };
                  if (residual)
                    p.prefetch = [&](llvm::Value* i, llvm::Value* j) {
                      prefetchResidual(b, epilogue.spec, residual,
                                       b.CreateAdd(b.CreateMul(i, b.getInt64(P)), j));
                    };
                  emitPackedProductTask(b, tile, p, tt);
                },
                "task");
          }};
}

}  // namespace

std::vector<std::pair<std::string, Lowering>> convGemmLowerings() {
  return {{"nanoc.Im2Col", makeIm2ColLowering()}, {"nanoc.ConvGemm", makeConvGemmLowering()}};
}

}  // namespace nanoc::cpu
