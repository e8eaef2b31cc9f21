// MaxPool, MaxPoolWithIndices, AveragePool and LpPool over [N, C, spatial...]
// planes, with the output sizes, the ceil_mode rule and the count_include_pad
// divisors of compiler/ops/README.md (ONNX Runtime's behaviour).
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/gemm_microkernel.h"
#include "compiler/codegen/cpu/linalg.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/ops/pool.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::cpu {

namespace {

// The decoded window, checked against the node's output, with the per-dim
// lists emitWindowTapsND takes.
struct LoweredPool {
  PoolShape shape;
  std::vector<int64_t> in, kernel, strides, dilations, pads;
};

LoweredPool loweredPool(const Node& node) {
  LoweredPool p;
  p.shape = poolShape(node);
  const size_t k = p.shape.axes.size();
  p.pads.resize(2 * k);
  for (size_t i = 0; i < k; ++i) {
    const PoolAxis& a = p.shape.axes[i];
    p.in.push_back(a.size);
    p.kernel.push_back(a.kernel);
    p.strides.push_back(a.stride);
    p.dilations.push_back(a.dilation);
    p.pads[i] = a.pad_begin;
    p.pads[k + i] = a.pad_end;
  }
  std::vector<int64_t> y = p.shape.outputDims();
  for (const Value* out : node.outputs)
    if (out->type.dims != y) failNode(node, "outputs must be " + dimsStr(y));
  return p;
}

uint64_t planeCount(const Node& node) {
  PoolShape s = poolShape(node);
  return static_cast<uint64_t>(std::max<int64_t>(1, s.planes()));
}

// Per output position along one axis, the factor of the window's count that
// the average divides by (compiler/ops/pool.h). An axis with no taps inside
// the input (possible only with dilation) leaves the sum 0, the result the
// reference gives: its factor is 1 instead of 0 so that 0 / 0 does not make it
// NaN.
std::vector<float> divisorsAlongAxis(const PoolAxis& axis, int64_t out, bool count_include_pad) {
  int64_t lo = count_include_pad ? -axis.pad_begin : 0;
  int64_t hi = count_include_pad ? axis.size + axis.pad_end : axis.size;
  std::vector<float> counts(out);
  for (int64_t o = 0; o < out; ++o)
    counts[o] = static_cast<float>(std::max<int64_t>(1, poolTapsWithin(axis, o, lo, hi)));
  return counts;
}

llvm::Value* constantTable(KernelBuilder& kb, const std::vector<float>& values,
                           const std::string& what) {
  llvm::Constant* init = llvm::ConstantDataArray::get(kb.module.getContext(), values);
  return new llvm::GlobalVariable(kb.module, init->getType(), /*isConstant=*/true,
                                  llvm::GlobalValue::PrivateLinkage, init,
                                  kb.fn->getName() + "." + what);
}

// The sweep of one task's planes: `init(y_plane)` fills each output plane,
// `fold(x_at, y_at)` folds each input element under a window tap into its
// output, `finish(y_plane)` runs on the plane afterwards (may be empty).
void emitPool(KernelBuilder& kb, const LoweredPool& p,
              const std::function<void(llvm::Value* y_plane, llvm::Value* x_plane)>& init,
              const std::function<void(llvm::Value* x_at, llvm::Value* y_at)>& fold,
              const std::function<void(llvm::Value* y_plane, llvm::Value* x_plane)>& finish) {
  const PoolShape& s = p.shape;
  if (s.planes() == 0) return;
  llvm::IRBuilder<>& b = kb.b;
  emitLoop(
      b, kb.task_begin, kb.task_end,
      [&](llvm::Value* t) {
        llvm::Value* y_plane = b.CreateMul(t, b.getInt64(s.outPlane()));
        llvm::Value* x_plane = b.CreateMul(t, b.getInt64(s.inPlane()));
        init(y_plane, x_plane);
        emitWindowTapsND(
            b, p.in, s.out, p.kernel, p.strides, p.dilations, p.pads, x_plane, y_plane, {},
            [&](llvm::Value*, llvm::Value* x_at, llvm::Value* y_at) { fold(x_at, y_at); });
        if (finish) finish(y_plane, x_plane);
      },
      "task");
}

// Fills every element of one output plane with `value`.
void emitFill(llvm::IRBuilder<>& b, DType dtype, llvm::Value* y, llvm::Value* y_plane,
              int64_t count, llvm::Value* value) {
  emitLoop(
      b, 0, count,
      [&](llvm::Value* i) { storeElement(b, dtype, value, y, b.CreateAdd(y_plane, i)); }, "p");
}

// The value no element is below: lowest() for floats, the minimum for ints.
llvm::Value* lowestValue(llvm::IRBuilder<>& b, DType dtype) {
  llvm::Type* t = storageType(b.getContext(), dtype);
  if (dtype == DType::F32)
    return llvm::ConstantFP::get(t, static_cast<double>(std::numeric_limits<float>::lowest()));
  if (dtype == DType::F64) return llvm::ConstantFP::get(t, std::numeric_limits<double>::lowest());
  if (dtype == DType::F16 || dtype == DType::BF16)
    return llvm::ConstantFP::get(t, llvm::APFloat::getLargest(t->getFltSemantics(), true));
  if (isSigned(dtype))
    return llvm::ConstantInt::get(t, llvm::APInt::getSignedMinValue(t->getIntegerBitWidth()));
  return llvm::ConstantInt::get(t, 0);
}

// v > acc in the dtype's order; false for a NaN v, so NaN never wins.
llvm::Value* greater(llvm::IRBuilder<>& b, DType dtype, llvm::Value* v, llvm::Value* acc) {
  if (isFloat(dtype)) return b.CreateFCmpOGT(v, acc);
  return isSigned(dtype) ? b.CreateICmpSGT(v, acc) : b.CreateICmpUGT(v, acc);
}

// The p-th root of s >= 0 for integer p: exact intrinsics for p = 1, 2, 4;
// otherwise Newton's iteration y <- ((p - 1) y + s / y^(p-1)) / p from an
// exponent-halving guess (the bits of s scaled toward 1.0 by 1/p), which
// gains f32 precision in five steps. s = 0 gives 0, s = inf gives inf.
llvm::Value* emitRoot(llvm::IRBuilder<>& b, llvm::Value* s, int64_t p) {
  llvm::Type* f32 = b.getFloatTy();
  if (p == 1) return s;
  auto sqrt = [&](llvm::Value* v) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, v); };
  if (p == 2) return sqrt(s);
  if (p == 4) return sqrt(sqrt(s));
  llvm::Value* one_bits = b.getInt32(0x3f800000);
  llvm::Value* bits = b.CreateBitCast(s, b.getInt32Ty());
  llvm::Value* guess_bits =
      b.CreateAdd(one_bits, b.CreateSDiv(b.CreateSub(bits, one_bits), b.getInt32(p)));
  llvm::Value* y = b.CreateBitCast(guess_bits, f32);
  llvm::Value* pm1 = llvm::ConstantFP::get(f32, static_cast<double>(p - 1));
  llvm::Value* inv_p = llvm::ConstantFP::get(f32, 1.0 / static_cast<double>(p));
  for (int i = 0; i < 6; ++i) {
    llvm::Value* pow = y;
    for (int64_t j = 2; j < p; ++j) pow = b.CreateFMul(pow, y);
    llvm::Value* next = b.CreateFMul(
        b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {f32}, {pm1, y, b.CreateFDiv(s, pow)}), inv_p);
    y = next;
  }
  llvm::Value* zero = llvm::ConstantFP::get(f32, 0.0);
  llvm::Value* inf = llvm::ConstantFP::getInfinity(f32);
  y = b.CreateSelect(b.CreateFCmpOEQ(s, zero), zero, y);
  return b.CreateSelect(b.CreateFCmpOEQ(s, inf), inf, y);
}

// 2-D f32 MaxPool on vector targets: per output row, the columns whose
// whole window lies inside the row run V at a time (a load per tap, stride 2
// as a 2V load and its even lanes; the last few with masked loads and a
// masked store), every tap unrolled with the maximum in registers (a tap row
// in the padding reads a row inside and is not taken); the other columns one
// by one with each tap's column clamped into the row and masked. Taps in (kh, kw) order and `v >
// max` as the generic loop has them, so the results are the same bits. False (the generic loop) for
// other dtypes, ranks, dilations, column strides other than 1 and 2, windows
// over 64 taps or scalar targets.
bool emitMaxPoolRows(KernelBuilder& kb, const LoweredPool& p) {
  const PoolShape& s = p.shape;
  const int64_t V = registerTile(*kb.fn).width;
  if (kb.node.inputs[0]->type.dtype != DType::F32 || s.axes.size() != 2 || V < 4) return false;
  const int64_t H = p.in[0], W = p.in[1], KH = p.kernel[0], KW = p.kernel[1];
  const int64_t SH = p.strides[0], SW = p.strides[1], PH = p.pads[0], PW = p.pads[1];
  const int64_t OH = s.out[0], OW = s.out[1];
  if (p.dilations[0] != 1 || p.dilations[1] != 1 || (SW != 1 && SW != 2) || KH * KW > 64)
    return false;
  if (s.planes() == 0 || OH * OW == 0) return true;
  // Vector columns: ow * SW - PW >= 0 and the last lane read, ow * SW - PW +
  // KW - 1 + (SW - 1), inside the row (stride 2 loads one lane past the
  // window's end).
  const int64_t lo = std::min(OW, (PW + SW - 1) / SW);
  const int64_t last = W - KW - (SW - 1) + PW;  // the largest ow * SW allowed
  const int64_t hi = last < 0 ? lo : std::max(lo, std::min(OW, last / SW + 1));
  const int64_t chunks = (hi - lo) / V;
  llvm::IRBuilder<>& b = kb.b;
  llvm::Type* f32 = b.getFloatTy();
  llvm::Value* x = kb.input(0);
  llvm::Value* y = kb.output(0);
  llvm::Value* lowest = lowestValue(b, DType::F32);
  auto i64 = [&](int64_t v) { return b.getInt64(v); };
  auto maxOf = [&](llvm::Value* v, llvm::Value* acc) {
    return b.CreateSelect(b.CreateFCmpOGT(v, acc), v, acc);
  };
  // Whether index i lies in [0, n), and i clamped into it (an address that
  // is always in bounds, its value not taken where i is outside).
  auto clampInto = [&](llvm::Value* i, int64_t n) {
    llvm::Value* inside = b.CreateAnd(b.CreateICmpSGE(i, i64(0)), b.CreateICmpSLT(i, i64(n)));
    llvm::Value* clamped = b.CreateBinaryIntrinsic(
        llvm::Intrinsic::smin, b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, i, i64(0)),
        i64(n - 1));
    return std::make_pair(inside, clamped);
  };
  emitLoop(
      b, kb.task_begin, kb.task_end,
      [&](llvm::Value* t) {
        llvm::Value* x_plane = b.CreateMul(t, i64(H * W));
        llvm::Value* y_plane = b.CreateMul(t, i64(OH * OW));
        emitLoop(
            b, 0, OH,
            [&](llvm::Value* oh) {
              llvm::Value* ih0 = b.CreateSub(b.CreateMul(oh, i64(SH)), i64(PH));
              llvm::Value* kh_lo =
                  b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, b.CreateSub(i64(0), ih0), i64(0));
              llvm::Value* kh_hi =
                  b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b.CreateSub(i64(H), ih0), i64(KH));
              kh_hi = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, kh_hi, kh_lo);
              llvm::Value* y_row = b.CreateAdd(y_plane, b.CreateMul(oh, i64(OW)));
              auto rowOf = [&](llvm::Value* kh) {
                return b.CreateAdd(x_plane, b.CreateMul(b.CreateAdd(ih0, kh), i64(W)));
              };
              // One output column, taps clamped into the row and masked.
              auto column = [&](llvm::Value* ow) {
                llvm::Value* acc_ptr = f32Ptr(b, y, b.CreateAdd(y_row, ow));
                b.CreateStore(lowest, acc_ptr);
                llvm::Value* iw0 = b.CreateSub(b.CreateMul(ow, i64(SW)), i64(PW));
                emitLoop(
                    b, kh_lo, kh_hi,
                    [&](llvm::Value* kh) {
                      llvm::Value* row = rowOf(kh);
                      llvm::Value* acc = b.CreateLoad(f32, acc_ptr);
                      for (int64_t kw = 0; kw < KW; ++kw) {
                        auto [inside, at] = clampInto(b.CreateAdd(iw0, i64(kw)), W);
                        llvm::Value* v = loadF32(b, x, b.CreateAdd(row, at));
                        acc = b.CreateSelect(inside, maxOf(v, acc), acc);
                      }
                      b.CreateStore(acc, acc_ptr);
                    },
                    "kh");
              };
              emitLoop(b, 0, lo, column, "ow");
              llvm::Type* ltype = llvm::FixedVectorType::get(f32, V * SW);
              std::vector<int> even;
              for (int64_t l = 0; l < V; ++l) even.push_back(static_cast<int>(l * SW));
              // `lanes` output columns from ow0, every tap unrolled with the
              // maximum in registers: a tap row in the padding reads the
              // nearest row inside (always in bounds) and is not taken.
              auto chunk = [&](llvm::Value* ow0, int64_t lanes) {
                llvm::Value* iw0 = b.CreateSub(b.CreateMul(ow0, i64(SW)), i64(PW));
                std::vector<llvm::Constant*> bits;
                for (int64_t l = 0; l < V * SW; ++l)
                  bits.push_back(b.getInt1(l < SW * (lanes - 1) + 1));
                llvm::Value* load_mask = llvm::ConstantVector::get(bits);
                llvm::Value* acc = b.CreateVectorSplat(V, lowest);
                for (int64_t kh = 0; kh < KH; ++kh) {
                  auto [valid, clamped] = clampInto(b.CreateAdd(ih0, i64(kh)), H);
                  llvm::Value* row =
                      b.CreateAdd(b.CreateAdd(x_plane, b.CreateMul(clamped, i64(W))), iw0);
                  for (int64_t kw = 0; kw < KW; ++kw) {
                    llvm::Value* ptr = f32Ptr(b, x, b.CreateAdd(row, i64(kw)));
                    llvm::Value* v = nullptr;
                    if (lanes == V)
                      v = b.CreateAlignedLoad(ltype, ptr, llvm::Align(4));
                    else
                      v = b.CreateMaskedLoad(ltype, ptr, llvm::Align(4), load_mask,
                                             llvm::Constant::getNullValue(ltype));
                    if (SW != 1) v = b.CreateShuffleVector(v, even);
                    acc = b.CreateSelect(valid, maxOf(v, acc), acc);
                  }
                }
                storeLanes(b, acc, y, b.CreateAdd(y_row, ow0), lanes);
              };
              emitLoop(
                  b, 0, chunks,
                  [&](llvm::Value* ci) { chunk(b.CreateAdd(i64(lo), b.CreateMul(ci, i64(V))), V); },
                  "chunk");
              // The window-inside columns past the whole chunks: one chunk
              // with fewer lanes (a masked load per tap, a masked store).
              if (hi - lo - chunks * V > 0) chunk(i64(lo + chunks * V), hi - lo - chunks * V);
              emitLoop(b, i64(hi), i64(OW), column, "ow");
            },
            "oh");
      },
      "task");
  return true;
}

}  // namespace

// One task per (n, c) plane. Padding never wins: a window's maximum is over
// its taps inside the input only, and a window with none is the lowest value.
// A NaN input is skipped, as ONNX Runtime's `if (x > max) max = x` does.
Lowering makeMaxPoolLowering() {
  return {planeCount, [](KernelBuilder& kb) {
            LoweredPool p = loweredPool(kb.node);
            if (emitMaxPoolRows(kb, p)) return;
            llvm::IRBuilder<>& b = kb.b;
            const DType dtype = kb.node.inputs[0]->type.dtype;
            llvm::Value* x = kb.input(0);
            llvm::Value* y = kb.output(0);
            emitPool(
                kb, p,
                [&](llvm::Value* y_plane, llvm::Value*) {
                  emitFill(b, dtype, y, y_plane, p.shape.outPlane(), lowestValue(b, dtype));
                },
                [&](llvm::Value* x_at, llvm::Value* y_at) {
                  llvm::Value* acc = loadElement(b, dtype, y, y_at);
                  llvm::Value* v = loadElement(b, dtype, x, x_at);
                  storeElement(b, dtype, b.CreateSelect(greater(b, dtype, v, acc), v, acc), y,
                               y_at);
                },
                {});
          }};
}

// MaxPool with the index of each maximum: Indices holds the running argmax
// (X's flat row-major index) beside the running maximum; with storage_order
// 1 a last pass rewrites each index's spatial part column-major.
Lowering makeMaxPoolWithIndicesLowering() {
  return {planeCount, [](KernelBuilder& kb) {
            LoweredPool p = loweredPool(kb.node);
            const PoolShape& s = p.shape;
            llvm::IRBuilder<>& b = kb.b;
            const DType dtype = kb.node.inputs[0]->type.dtype;
            const bool column_major = boolAttr(kb.node, "storage_order") != 0;
            llvm::Value* x = kb.input(0);
            llvm::Value* y = kb.output(0);
            llvm::Value* indices = kb.output(1);
            emitPool(
                kb, p,
                [&](llvm::Value* y_plane, llvm::Value* x_plane) {
                  emitFill(b, dtype, y, y_plane, s.outPlane(), lowestValue(b, dtype));
                  emitFill(b, DType::I64, indices, y_plane, s.outPlane(), x_plane);
                },
                [&](llvm::Value* x_at, llvm::Value* y_at) {
                  llvm::Value* acc = loadElement(b, dtype, y, y_at);
                  llvm::Value* v = loadElement(b, dtype, x, x_at);
                  llvm::Value* wins = greater(b, dtype, v, acc);
                  storeElement(b, dtype, b.CreateSelect(wins, v, acc), y, y_at);
                  llvm::Value* arg = loadElement(b, DType::I64, indices, y_at);
                  storeElement(b, DType::I64, b.CreateSelect(wins, x_at, arg), indices, y_at);
                },
                [&](llvm::Value* y_plane, llvm::Value* x_plane) {
                  if (!column_major) return;
                  const size_t k = s.axes.size();
                  emitLoop(
                      b, 0, s.outPlane(),
                      [&](llvm::Value* o) {
                        llvm::Value* at = b.CreateAdd(y_plane, o);
                        llvm::Value* rem =
                            b.CreateSub(loadElement(b, DType::I64, indices, at), x_plane);
                        std::vector<llvm::Value*> pos(k);
                        for (size_t i = k; i-- > 0;) {
                          pos[i] = b.CreateURem(rem, b.getInt64(s.axes[i].size));
                          rem = b.CreateUDiv(rem, b.getInt64(s.axes[i].size));
                        }
                        llvm::Value* cm = x_plane;
                        int64_t stride = 1;
                        for (size_t i = 0; i < k; ++i) {
                          cm = b.CreateAdd(cm, b.CreateMul(pos[i], b.getInt64(stride)));
                          stride *= s.axes[i].size;
                        }
                        storeElement(b, DType::I64, cm, indices, at);
                      },
                      "o");
                });
          }};
}

// One task per (n, c) plane: sums the taps inside the input, then divides
// each output by its window's count (the product of the per-dim counts: the
// window is a box).
Lowering makeAveragePoolLowering() {
  return {
      planeCount, [](KernelBuilder& kb) {
        LoweredPool p = loweredPool(kb.node);
        const PoolShape& s = p.shape;
        bool include_pad = boolAttr(kb.node, "count_include_pad") != 0;
        llvm::IRBuilder<>& b = kb.b;
        llvm::Type* f32 = b.getFloatTy();
        const size_t k = s.axes.size();
        std::vector<llvm::Value*> divisors;
        for (size_t i = 0; i < k; ++i)
          divisors.push_back(
              constantTable(kb, divisorsAlongAxis(s.axes[i], s.out[i], include_pad),
                            k == 2 ? (i == 0 ? "rows" : "cols") : "dim" + std::to_string(i)));
        llvm::Value* x = kb.input(0);
        llvm::Value* y = kb.output(0);
        emitPool(
            kb, p,
            [&](llvm::Value* y_plane, llvm::Value*) {
              emitFill(b, DType::F32, y, y_plane, s.outPlane(), llvm::ConstantFP::get(f32, 0.0));
            },
            [&](llvm::Value* x_at, llvm::Value* y_at) {
              storeF32(b, b.CreateFAdd(loadF32(b, y, y_at), loadF32(b, x, x_at)), y, y_at);
            },
            [&](llvm::Value* y_plane, llvm::Value*) {
              // Nested loops over the output dims, the count a running product.
              std::function<void(size_t, llvm::Value*, llvm::Value*)> dim =
                  [&](size_t d, llvm::Value* y_at, llvm::Value* count) {
                    emitLoop(
                        b, 0, s.out[d],
                        [&](llvm::Value* o) {
                          llvm::Value* c = loadF32(b, divisors[d], o);
                          c = count ? b.CreateFMul(count, c) : c;
                          llvm::Value* at = b.CreateAdd(b.CreateMul(y_at, b.getInt64(s.out[d])), o);
                          if (d + 1 < k) return dim(d + 1, at, c);
                          at = b.CreateAdd(y_plane, at);
                          storeF32(b, b.CreateFDiv(loadF32(b, y, at), c), y, at);
                        },
                        "o");
                  };
              dim(0, b.getInt64(0), nullptr);
            });
      }};
}

// LpPool: the sum of |x|^p over the taps inside the input (padding adds 0),
// then its p-th root per output.
Lowering makeLpPoolLowering() {
  return {
      planeCount, [](KernelBuilder& kb) {
        LoweredPool p = loweredPool(kb.node);
        const PoolShape& s = p.shape;
        const int64_t power = kb.node.i("p");
        llvm::IRBuilder<>& b = kb.b;
        llvm::Type* f32 = b.getFloatTy();
        llvm::Value* x = kb.input(0);
        llvm::Value* y = kb.output(0);
        emitPool(
            kb, p,
            [&](llvm::Value* y_plane, llvm::Value*) {
              emitFill(b, DType::F32, y, y_plane, s.outPlane(), llvm::ConstantFP::get(f32, 0.0));
            },
            [&](llvm::Value* x_at, llvm::Value* y_at) {
              llvm::Value* v = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, loadF32(b, x, x_at));
              llvm::Value* pow = v;
              for (int64_t j = 1; j < power; ++j) pow = b.CreateFMul(pow, v);
              storeF32(b, b.CreateFAdd(loadF32(b, y, y_at), pow), y, y_at);
            },
            [&](llvm::Value* y_plane, llvm::Value*) {
              emitLoop(
                  b, 0, s.outPlane(),
                  [&](llvm::Value* o) {
                    llvm::Value* at = b.CreateAdd(y_plane, o);
                    storeF32(b, emitRoot(b, loadF32(b, y, at), power), y, at);
                  },
                  "o");
            });
      }};
}

}  // namespace nanoc::cpu
