// CPU lowerings of the integer products: MatMulInteger, QLinearMatMul,
// ConvInteger, QLinearConv (semantics in compiler/ops/
// quantization_products.cc). Each accumulates a strip of up to kStrip outputs
// of one output row in an i32 array on the stack: the innermost loop runs along
// the strip, unit-stride in the accumulators and in B's row (matmul) or X's row
// (conv, stride 1), so it vectorizes. The finished strip is then stored (i32
// ops) or requantized (QLinear ops).
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/linalg.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/quantization_emit.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ops/quantization.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::cpu {
namespace {

constexpr int64_t kStrip = 256;  // i32 accumulators per strip (1 KiB of stack)

llvm::Value* smin(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y) {
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, x, y);
}
llvm::Value* smax(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y) {
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x, y);
}

// An i8/u8 element widened to i32.
llvm::Value* loadI32(llvm::IRBuilder<>& b, DType dtype, llvm::Value* base, llvm::Value* index) {
  return convertCompute(b, loadElement(b, dtype, base, index), dtype, DType::I32);
}

// Element `index` of an optional zero point widened to i32 (element 0 when it
// has one element), 0 when absent.
llvm::Value* zeroPointAt(llvm::IRBuilder<>& b, const Node& node, llvm::Value* ptr, size_t operand,
                         int64_t count, llvm::Value* index) {
  if (!ptr) return b.getInt32(0);
  return loadI32(b, node.inputs[operand]->type.dtype, ptr, count == 1 ? b.getInt64(0) : index);
}

// `rows` accumulator strips, allocated once per call in the entry block.
llvm::Value* stripAlloca(KernelBuilder& kb, int64_t rows = 1) {
  llvm::IRBuilder<> entry(&kb.fn->getEntryBlock(), kb.fn->getEntryBlock().begin());
  return entry.CreateAlloca(llvm::ArrayType::get(kb.b.getInt32Ty(), rows * kStrip), nullptr, "acc");
}

// acc[j] (i32) of the strip.
llvm::Value* accPtr(llvm::IRBuilder<>& b, llvm::Value* acc, llvm::Value* j) {
  return b.CreateInBoundsGEP(b.getInt32Ty(), acc, j);
}

// The requantization of a QLinear op: y = saturate(round(acc * multiplier) +
// y_zero_point), the multiplier a_scale * b_scale / y_scale rounded to the
// scales' dtype at each step (f32 arithmetic), the rest in f64; in f32 where
// the target has no f64 hardware (a Cortex-M4, where f64 is libgcc's soft
// float), as ONNX Runtime's MLAS requantizes on every target: float(acc) *
// scale, rounded half to even, plus the zero point, saturated.
struct Requantize {
  DType scale_dtype, out;
  QuantRange range;
  llvm::Type* compute = nullptr;        // f64, or f32 without f64 hardware
  llvm::Value* y_scale = nullptr;       // f32
  llvm::Value* y_zero_point = nullptr;  // compute

  llvm::Value* loadScale(llvm::IRBuilder<>& b, llvm::Value* ptr, llvm::Value* index) const {
    return loadCompute(b, scale_dtype, ptr, index);
  }
  llvm::Value* multiplier(llvm::IRBuilder<>& b, llvm::Value* a_scale, llvm::Value* b_scale) const {
    llvm::Value* m = roundToDType(b, b.CreateFMul(a_scale, b_scale), scale_dtype);
    m = roundToDType(b, b.CreateFDiv(m, y_scale), scale_dtype);
    return b.CreateFPCast(m, compute);
  }
  llvm::Value* apply(llvm::IRBuilder<>& b, llvm::Value* acc, llvm::Value* mult) const {
    llvm::Value* v = b.CreateFMul(b.CreateSIToFP(acc, compute), mult);
    v = b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, v);
    return emitSaturate(b, b.CreateFAdd(v, y_zero_point), range, out);
  }
};

Requantize makeRequantize(KernelBuilder& kb, size_t scale, size_t y_scale, size_t y_zp) {
  const Node& node = kb.node;
  llvm::IRBuilder<>& b = kb.b;
  Requantize r;
  r.scale_dtype = node.inputs[scale]->type.dtype;
  r.out = node.outputs[0]->type.dtype;
  r.range = quantRange(node, r.out);
  r.compute = hasDoubleFloatUnit(*kb.fn) ? b.getDoubleTy() : b.getFloatTy();
  r.y_scale = r.loadScale(b, kb.input(y_scale), b.getInt64(0));
  r.y_zero_point =
      b.CreateSIToFP(zeroPointAt(b, node, kb.input(y_zp), y_zp, 1, b.getInt64(0)), r.compute);
  return r;
}

// ---------------------------------------------------------------- matmul

struct ProductPlan {
  IntegerProductShape s;
  size_t a, a_zp, b, b_zp;
  int64_t a_zp_count = 1, b_zp_count = 1;
  int64_t rows_per_task = 1;

  int64_t blocks() const { return s.m == 0 ? 1 : (s.m + rows_per_task - 1) / rows_per_task; }
  uint64_t tasks() const {
    return static_cast<uint64_t>(std::max<int64_t>(1, s.batches * blocks()));
  }
};

ProductPlan productPlan(const Node& node, size_t a, size_t a_zp, size_t b, size_t b_zp) {
  ProductPlan p;
  p.s = integerProductShape(node, a, b);
  p.a = a, p.a_zp = a_zp, p.b = b, p.b_zp = b_zp;
  p.a_zp_count = rowOrColumnVector(node, a_zp, "a_zero_point", p.s.m, true);
  p.b_zp_count = rowOrColumnVector(node, b_zp, "b_zero_point", p.s.n, false);
  p.rows_per_task = productRowsPerTask(p.s.m, p.s.k, p.s.n);
  return p;
}

// Emits every output of the tasks' rows: for each row i and strip [j0, j0 +
// width) of columns, acc[0, width) = sum_k (A(i, k) - za) * (B(k, j) - zb);
// then finish(i, j0, width, acc, y_row) with y_row the output index of (i, 0).
void emitIntegerProduct(
    KernelBuilder& kb, const ProductPlan& p,
    const std::function<void(llvm::Value* i, llvm::Value* j0, llvm::Value* width, llvm::Value* acc,
                             llvm::Value* y_row)>& finish) {
  const IntegerProductShape& s = p.s;
  if (s.batches * s.m * s.n == 0) return;
  const Node& node = kb.node;
  llvm::IRBuilder<>& b = kb.b;
  auto c = [&](int64_t v) { return b.getInt64(v); };
  DType ad = node.inputs[p.a]->type.dtype, bd = node.inputs[p.b]->type.dtype;
  llvm::Value* a = kb.input(p.a);
  llvm::Value* bm = kb.input(p.b);
  llvm::Value* a_zp = kb.input(p.a_zp);
  llvm::Value* b_zp = kb.input(p.b_zp);
  constexpr int64_t kRows = 4;  // rows per pass (measured: 4 rows x 4 k beat 2, 8 and other k)
  llvm::Value* acc = stripAlloca(kb, kRows);
  llvm::Value* zb_tensor =
      p.b_zp_count == 1 ? zeroPointAt(b, node, b_zp, p.b_zp, 1, c(0)) : nullptr;
  const int64_t strips = (s.n + kStrip - 1) / kStrip;
  emitLoop(
      b, kb.task_begin, kb.task_end,
      [&](llvm::Value* t) {
        llvm::Value* batch = b.CreateUDiv(t, c(p.blocks()));
        llvm::Value* row_begin = b.CreateMul(b.CreateURem(t, c(p.blocks())), c(p.rows_per_task));
        llvm::Value* row_end = smin(b, b.CreateAdd(row_begin, c(p.rows_per_task)), c(s.m));
        llvm::Value* a_base = c(0);
        llvm::Value* b_base = c(0);
        llvm::Value* rest = batch;
        for (size_t d = s.batch.size(); d-- > 0;) {
          llvm::Value* at = b.CreateURem(rest, c(s.batch[d]));
          rest = b.CreateUDiv(rest, c(s.batch[d]));
          a_base = b.CreateAdd(a_base, b.CreateMul(at, c(s.a_batch_stride[d])));
          b_base = b.CreateAdd(b_base, b.CreateMul(at, c(s.b_batch_stride[d])));
        }
        llvm::Value* y_base = b.CreateMul(batch, c(s.m * s.n));
        // `rows` rows from i0 share each pass over B's rows: one load of B
        // feeds `rows` multiply-adds.
        auto emitRows = [&](llvm::Value* i0, int64_t rows) {
          std::vector<llvm::Value*> za(rows), a_row(rows), acc_row(rows);
          for (int64_t r = 0; r < rows; ++r) {
            llvm::Value* i = b.CreateAdd(i0, c(r));
            za[r] = zeroPointAt(b, node, a_zp, p.a_zp, p.a_zp_count, i);
            a_row[r] = b.CreateAdd(a_base, b.CreateMul(i, c(s.k)));
            acc_row[r] = accPtr(b, acc, c(r * kStrip));
          }
          emitLoop(
              b, 0, strips,
              [&](llvm::Value* strip) {
                llvm::Value* j0 = b.CreateMul(strip, c(kStrip));
                llvm::Value* width = smin(b, c(kStrip), b.CreateSub(c(s.n), j0));
                emitLoop(
                    b, c(0), width,
                    [&](llvm::Value* j) {
                      for (int64_t r = 0; r < rows; ++r)
                        b.CreateStore(b.getInt32(0), accPtr(b, acc_row[r], j));
                    },
                    "zero");
                // `taps` consecutive k per pass over the strip: the
                // accumulators are loaded and stored once per `taps` products.
                auto accumulate = [&](llvm::Value* k0, int64_t taps) {
                  std::vector<std::vector<llvm::Value*>> av(rows);
                  std::vector<llvm::Value*> b_rows;
                  for (int64_t u = 0; u < taps; ++u) {
                    llvm::Value* k = b.CreateAdd(k0, c(u));
                    for (int64_t r = 0; r < rows; ++r)
                      av[r].push_back(
                          b.CreateSub(loadI32(b, ad, a, b.CreateAdd(a_row[r], k)), za[r]));
                    b_rows.push_back(b.CreateAdd(b_base, b.CreateAdd(b.CreateMul(k, c(s.n)), j0)));
                  }
                  emitLoop(
                      b, c(0), width,
                      [&](llvm::Value* j) {
                        llvm::Value* zb = zb_tensor ? zb_tensor
                                                    : zeroPointAt(b, node, b_zp, p.b_zp,
                                                                  p.b_zp_count, b.CreateAdd(j0, j));
                        std::vector<llvm::Value*> bv;
                        for (int64_t u = 0; u < taps; ++u)
                          bv.push_back(
                              b.CreateSub(loadI32(b, bd, bm, b.CreateAdd(b_rows[u], j)), zb));
                        for (int64_t r = 0; r < rows; ++r) {
                          llvm::Value* at = accPtr(b, acc_row[r], j);
                          llvm::Value* sum = b.CreateLoad(b.getInt32Ty(), at);
                          for (int64_t u = 0; u < taps; ++u)
                            sum = b.CreateAdd(sum, b.CreateMul(av[r][u], bv[u]));
                          b.CreateStore(sum, at);
                        }
                      },
                      "j");
                };
                constexpr int64_t unroll = 4;
                if (s.k / unroll > 0)
                  emitLoop(
                      b, 0, s.k / unroll,
                      [&](llvm::Value* kk) { accumulate(b.CreateMul(kk, c(unroll)), unroll); },
                      "k");
                if (s.k % unroll) accumulate(c(s.k / unroll * unroll), s.k % unroll);
                for (int64_t r = 0; r < rows; ++r) {
                  llvm::Value* i = b.CreateAdd(i0, c(r));
                  finish(i, j0, width, acc_row[r], b.CreateAdd(y_base, b.CreateMul(i, c(s.n))));
                }
              },
              "strip");
        };
        llvm::Value* groups = b.CreateUDiv(b.CreateSub(row_end, row_begin), c(kRows));
        emitLoop(
            b, c(0), groups,
            [&](llvm::Value* g) {
              emitRows(b.CreateAdd(row_begin, b.CreateMul(g, c(kRows))), kRows);
            },
            "rows");
        emitLoop(
            b, b.CreateAdd(row_begin, b.CreateMul(groups, c(kRows))), row_end,
            [&](llvm::Value* i) { emitRows(i, 1); }, "row");
      },
      "task");
}

Lowering makeMatMulIntegerLowering() {
  return {[](const Node& node) { return productPlan(node, 0, 2, 1, 3).tasks(); },
          [](KernelBuilder& kb) {
            ProductPlan p = productPlan(kb.node, 0, 2, 1, 3);
            llvm::IRBuilder<>& b = kb.b;
            emitIntegerProduct(kb, p,
                               [&](llvm::Value*, llvm::Value* j0, llvm::Value* width,
                                   llvm::Value* acc, llvm::Value* y_row) {
                                 llvm::Value* y0 = b.CreateAdd(y_row, j0);
                                 emitLoop(
                                     b, b.getInt64(0), width,
                                     [&](llvm::Value* j) {
                                       storeElement(b, DType::I32,
                                                    b.CreateLoad(b.getInt32Ty(), accPtr(b, acc, j)),
                                                    kb.output(0), b.CreateAdd(y0, j));
                                     },
                                     "store");
                               });
          }};
}

Lowering makeQLinearMatMulLowering() {
  return {[](const Node& node) { return productPlan(node, 0, 2, 3, 5).tasks(); },
          [](KernelBuilder& kb) {
            const Node& node = kb.node;
            ProductPlan p = productPlan(node, 0, 2, 3, 5);
            llvm::IRBuilder<>& b = kb.b;
            Requantize r = makeRequantize(kb, 1, 6, 7);
            int64_t a_count = rowOrColumnVector(node, 1, "a_scale", p.s.m, true);
            int64_t b_count = rowOrColumnVector(node, 4, "b_scale", p.s.n, false);
            auto scaleAt = [&](size_t operand, int64_t count, llvm::Value* index) {
              return r.loadScale(b, kb.input(operand), count == 1 ? b.getInt64(0) : index);
            };
            emitIntegerProduct(
                kb, p,
                [&](llvm::Value* i, llvm::Value* j0, llvm::Value* width, llvm::Value* acc,
                    llvm::Value* y_row) {
                  llvm::Value* a_scale = scaleAt(1, a_count, i);
                  llvm::Value* row_mult =
                      b_count == 1 ? r.multiplier(b, a_scale, scaleAt(4, 1, nullptr)) : nullptr;
                  llvm::Value* y0 = b.CreateAdd(y_row, j0);
                  emitLoop(
                      b, b.getInt64(0), width,
                      [&](llvm::Value* j) {
                        llvm::Value* mult =
                            row_mult
                                ? row_mult
                                : r.multiplier(b, a_scale, scaleAt(4, b_count, b.CreateAdd(j0, j)));
                        llvm::Value* v =
                            r.apply(b, b.CreateLoad(b.getInt32Ty(), accPtr(b, acc, j)), mult);
                        storeElement(b, r.out, v, kb.output(0), b.CreateAdd(y0, j));
                      },
                      "requantize");
                });
          }};
}

// ---------------------------------------------------------------- conv

struct ConvPlan {
  IntegerConvShape s;
  size_t x, x_zp, w, w_zp, bias;
  int64_t w_zp_count = 1;
  int64_t outer = 1;     // output positions per (n, m) plane before the last spatial dim
  int64_t channels = 1;  // output channels per pass over x (all of one group)
  RowTasks tasks;
};

ConvPlan convPlan(const Node& node, size_t x, size_t x_zp, size_t w, size_t w_zp, size_t bias) {
  ConvPlan p;
  p.s = integerConvShape(node, x, w);
  p.x = x, p.x_zp = x_zp, p.w = w, p.w_zp = w_zp, p.bias = bias;
  p.w_zp_count = scalarOrVector(node, w_zp, "w_zero_point", p.s.m, "output channel");
  const size_t k = p.s.out.size();
  p.outer = product(p.s.out, 0, k - 1);
  // Four channels share each load of x where the groups divide into fours.
  p.channels = p.s.mPerGroup() % 4 == 0 ? 4 : 1;
  // Tasks of about kTaskElements multiply-adds.
  int64_t per_output =
      std::max<int64_t>(1, p.channels * p.s.cPerGroup() * product(p.s.kernel, 0, k));
  p.tasks = splitRows(p.s.n * (p.s.m / p.channels) * p.outer, p.s.out[k - 1],
                      std::max<int64_t>(64, kTaskElements / per_output));
  return p;
}

// The taps t of a window dim whose input position o * stride - pad + t *
// dilation lies in [0, in): [ceil(max(pad - o*stride, 0) / dilation),
// min(kernel, ceil(max(in + pad - o*stride, 0) / dilation))).
std::pair<llvm::Value*, llvm::Value*> validTaps(llvm::IRBuilder<>& b, llvm::Value* o, int64_t in,
                                                int64_t kernel, int64_t stride, int64_t dilation,
                                                int64_t pad) {
  llvm::Value* start = b.CreateMul(o, b.getInt64(stride));
  auto ceilDiv = [&](llvm::Value* num) {
    num = smax(b, num, b.getInt64(0));
    return b.CreateUDiv(b.CreateAdd(num, b.getInt64(dilation - 1)), b.getInt64(dilation));
  };
  llvm::Value* lo = ceilDiv(b.CreateSub(b.getInt64(pad), start));
  llvm::Value* hi = smin(b, ceilDiv(b.CreateSub(b.getInt64(in + pad), start)), b.getInt64(kernel));
  return {lo, hi};
}

// Emits every output of the tasks: per output row (n, block of p.channels
// output channels m, position in all but the last spatial dim) and strip [j0,
// j0 + width) of its last dim, acc(m) = bias + sum over the group's input
// channels and in-input taps of (x - zx) * (w - zw); then, per m, finish(m,
// width, acc(m), y_at) with y_at the output index of j0.
void emitIntegerConv(KernelBuilder& kb, const ConvPlan& p,
                     const std::function<void(llvm::Value* m, llvm::Value* width, llvm::Value* acc,
                                              llvm::Value* y_at)>& finish) {
  const IntegerConvShape& s = p.s;
  const Node& node = kb.node;
  llvm::IRBuilder<>& b = kb.b;
  auto c = [&](int64_t v) { return b.getInt64(v); };
  const size_t k = s.out.size();
  const int64_t cols = s.out[k - 1];
  DType xd = node.inputs[p.x]->type.dtype, wd = node.inputs[p.w]->type.dtype;
  llvm::Value* x = kb.input(p.x);
  llvm::Value* w = kb.input(p.w);
  llvm::Value* bias = p.bias < node.inputs.size() ? kb.input(p.bias) : nullptr;
  const int64_t channels = p.channels, blocks = s.m / p.channels;
  llvm::Value* acc = stripAlloca(kb, channels);
  llvm::Value* zx = zeroPointAt(b, node, kb.input(p.x_zp), p.x_zp, 1, c(0));
  const int64_t in_plane = product(s.in, 0, k), taps = product(s.kernel, 0, k);
  std::vector<int64_t> in_stride(k, 1), tap_stride(k, 1);
  for (size_t d = k - 1; d-- > 0;) {
    in_stride[d] = in_stride[d + 1] * s.in[d + 1];
    tap_stride[d] = tap_stride[d + 1] * s.kernel[d + 1];
  }
  emitRowTasks(kb, p.tasks, [&](llvm::Value* row, llvm::Value* col_begin, llvm::Value* col_end) {
    llvm::Value* plane = b.CreateUDiv(row, c(p.outer));  // n * blocks + block
    llvm::Value* n = b.CreateUDiv(plane, c(blocks));
    llvm::Value* m0 = b.CreateMul(b.CreateURem(plane, c(blocks)), c(channels));
    llvm::Value* opos = b.CreateURem(row, c(p.outer));
    std::vector<llvm::Value*> pos(k - 1);
    llvm::Value* rest = opos;
    for (size_t d = k - 1; d-- > 0;) {
      pos[d] = b.CreateURem(rest, c(s.out[d]));
      rest = b.CreateUDiv(rest, c(s.out[d]));
    }
    llvm::Value* g = b.CreateUDiv(m0, c(s.mPerGroup()));
    std::vector<llvm::Value*> ms(channels), zw(channels), init(channels), acc_m(channels);
    for (int64_t r = 0; r < channels; ++r) {
      ms[r] = b.CreateAdd(m0, c(r));
      zw[r] = zeroPointAt(b, node, kb.input(p.w_zp), p.w_zp, p.w_zp_count, ms[r]);
      init[r] = bias ? loadElement(b, DType::I32, bias, ms[r]) : b.getInt32(0);
      acc_m[r] = accPtr(b, acc, c(r * kStrip));
    }
    llvm::Value* x_channel0 = b.CreateAdd(b.CreateMul(n, c(s.c)), b.CreateMul(g, c(s.cPerGroup())));
    llvm::Value* strips =
        b.CreateUDiv(b.CreateAdd(b.CreateSub(col_end, col_begin), c(kStrip - 1)), c(kStrip));
    emitLoop(
        b, c(0), strips,
        [&](llvm::Value* strip) {
          llvm::Value* j0 = b.CreateAdd(col_begin, b.CreateMul(strip, c(kStrip)));
          llvm::Value* j1 = smin(b, b.CreateAdd(j0, c(kStrip)), col_end);
          llvm::Value* width = b.CreateSub(j1, j0);
          emitLoop(
              b, c(0), width,
              [&](llvm::Value* j) {
                for (int64_t r = 0; r < channels; ++r)
                  b.CreateStore(init[r], accPtr(b, acc_m[r], j));
              },
              "init");
          emitLoop(
              b, 0, s.cPerGroup(),
              [&](llvm::Value* ch) {
                llvm::Value* x_plane = b.CreateMul(b.CreateAdd(x_channel0, ch), c(in_plane));
                std::vector<llvm::Value*> w_base(channels);
                for (int64_t r = 0; r < channels; ++r)
                  w_base[r] =
                      b.CreateMul(b.CreateAdd(b.CreateMul(ms[r], c(s.cPerGroup())), ch), c(taps));
                // Window dims before the last: loops over their in-input taps.
                std::function<void(size_t, llvm::Value*, llvm::Value*)> dims =
                    [&](size_t d, llvm::Value* x_at, llvm::Value* w_at) {
                      if (d + 1 < k) {
                        auto [lo, hi] = validTaps(b, pos[d], s.in[d], s.kernel[d], s.strides[d],
                                                  s.dilations[d], s.pads[d]);
                        emitLoop(
                            b, lo, hi,
                            [&](llvm::Value* t) {
                              llvm::Value* at = b.CreateAdd(
                                  b.CreateSub(b.CreateMul(pos[d], c(s.strides[d])), c(s.pads[d])),
                                  b.CreateMul(t, c(s.dilations[d])));
                              dims(d + 1, b.CreateAdd(x_at, b.CreateMul(at, c(in_stride[d]))),
                                   b.CreateAdd(w_at, b.CreateMul(t, c(tap_stride[d]))));
                            },
                            "tap");
                        return;
                      }
                      // The last dim: per tap, the outputs of the strip whose
                      // input is inside, then a branch-free run over them.
                      emitLoop(
                          b, 0, s.kernel[d],
                          [&](llvm::Value* t) {
                            llvm::Value* off =
                                b.CreateSub(b.CreateMul(t, c(s.dilations[d])), c(s.pads[d]));
                            auto ceilDiv = [&](llvm::Value* num) {
                              num = smax(b, num, c(0));
                              return b.CreateUDiv(b.CreateAdd(num, c(s.strides[d] - 1)),
                                                  c(s.strides[d]));
                            };
                            llvm::Value* lo = smax(b, ceilDiv(b.CreateSub(c(0), off)), j0);
                            llvm::Value* hi = smin(b, ceilDiv(b.CreateSub(c(s.in[d]), off)), j1);
                            std::vector<llvm::Value*> wv(channels);
                            for (int64_t r = 0; r < channels; ++r)
                              wv[r] = b.CreateSub(
                                  loadI32(b, wd, w, b.CreateAdd(w_base[r], b.CreateAdd(w_at, t))),
                                  zw[r]);
                            llvm::Value* x_row = b.CreateAdd(x_plane, b.CreateAdd(x_at, off));
                            emitLoop(
                                b, lo, hi,
                                [&](llvm::Value* o) {
                                  llvm::Value* xv = b.CreateSub(
                                      loadI32(b, xd, x,
                                              b.CreateAdd(x_row, b.CreateMul(o, c(s.strides[d])))),
                                      zx);
                                  for (int64_t r = 0; r < channels; ++r) {
                                    llvm::Value* a = accPtr(b, acc_m[r], b.CreateSub(o, j0));
                                    b.CreateStore(b.CreateAdd(b.CreateLoad(b.getInt32Ty(), a),
                                                              b.CreateMul(wv[r], xv)),
                                                  a);
                                  }
                                },
                                "o");
                          },
                          "tap");
                    };
                dims(0, c(0), c(0));
              },
              "c");
          for (int64_t r = 0; r < channels; ++r) {
            // Output row ((n * M + m) * outer + opos).
            llvm::Value* out_row = b.CreateAdd(
                b.CreateMul(b.CreateAdd(b.CreateMul(n, c(s.m)), ms[r]), c(p.outer)), opos);
            finish(ms[r], width, acc_m[r], b.CreateAdd(b.CreateMul(out_row, c(cols)), j0));
          }
        },
        "strip");
  });
}

Lowering makeConvIntegerLowering() {
  return {[](const Node& node) { return convPlan(node, 0, 2, 1, 3, SIZE_MAX).tasks.count(); },
          [](KernelBuilder& kb) {
            ConvPlan p = convPlan(kb.node, 0, 2, 1, 3, SIZE_MAX);
            llvm::IRBuilder<>& b = kb.b;
            emitIntegerConv(
                kb, p, [&](llvm::Value*, llvm::Value* width, llvm::Value* acc, llvm::Value* y_at) {
                  emitLoop(
                      b, b.getInt64(0), width,
                      [&](llvm::Value* j) {
                        storeElement(b, DType::I32, b.CreateLoad(b.getInt32Ty(), accPtr(b, acc, j)),
                                     kb.output(0), b.CreateAdd(y_at, j));
                      },
                      "store");
                });
          }};
}

Lowering makeQLinearConvLowering() {
  return {
      [](const Node& node) { return convPlan(node, 0, 2, 3, 5, 8).tasks.count(); },
      [](KernelBuilder& kb) {
        const Node& node = kb.node;
        ConvPlan p = convPlan(node, 0, 2, 3, 5, 8);
        llvm::IRBuilder<>& b = kb.b;
        Requantize r = makeRequantize(kb, 1, 6, 7);
        int64_t w_count = scalarOrVector(node, 4, "w_scale", p.s.m, "output channel");
        llvm::Value* x_scale = r.loadScale(b, kb.input(1), b.getInt64(0));
        emitIntegerConv(
            kb, p, [&](llvm::Value* m, llvm::Value* width, llvm::Value* acc, llvm::Value* y_at) {
              llvm::Value* w_scale = r.loadScale(b, kb.input(4), w_count == 1 ? b.getInt64(0) : m);
              llvm::Value* mult = r.multiplier(b, x_scale, w_scale);
              emitLoop(
                  b, b.getInt64(0), width,
                  [&](llvm::Value* j) {
                    llvm::Value* v =
                        r.apply(b, b.CreateLoad(b.getInt32Ty(), accPtr(b, acc, j)), mult);
                    storeElement(b, r.out, v, kb.output(0), b.CreateAdd(y_at, j));
                  },
                  "requantize");
            });
      }};
}

}  // namespace

std::vector<std::pair<std::string, Lowering>> quantizationProductLowerings() {
  std::vector<std::pair<std::string, Lowering>> list;
  list.emplace_back("MatMulInteger", makeMatMulIntegerLowering());
  list.emplace_back("QLinearMatMul", makeQLinearMatMulLowering());
  list.emplace_back("ConvInteger", makeConvIntegerLowering());
  list.emplace_back("QLinearConv", makeQLinearConvLowering());
  return list;
}

}  // namespace nanoc::cpu
