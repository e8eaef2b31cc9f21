// CPU lowerings of QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear
// (compiler/ops/quantization.cc has their semantics). Q and DQ walk x as
// [outer, axis_dim, inner] rows (QuantGranularity): the scale and zero point
// are loaded once per row when they do not vary along it (per-tensor,
// per-axis), else read unit-stride beside x (blocked), so the inner loop
// vectorizes either way. The integer products are in
// lower_quantization_products.cc.
#include <llvm/IR/Intrinsics.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/quantization_emit.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ops/quantization.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::cpu {

std::vector<std::pair<std::string, Lowering>> quantizationProductLowerings();

llvm::Value* roundToDType(llvm::IRBuilder<>& b, llvm::Value* v, DType dtype) {
  if (dtype != DType::F16 && dtype != DType::BF16) return v;
  return b.CreateFPExt(b.CreateFPTrunc(v, storageType(b.getContext(), dtype)), v->getType());
}

llvm::Value* emitSaturate(llvm::IRBuilder<>& b, llvm::Value* v, QuantRange range, DType out) {
  llvm::Type* t = v->getType();
  v = b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, v,
                              llvm::ConstantFP::get(t, static_cast<double>(range.lo)));
  v = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, v,
                              llvm::ConstantFP::get(t, static_cast<double>(range.hi)));
  return b.CreateIntCast(b.CreateFPToSI(v, b.getInt32Ty()), storageType(b.getContext(), out), true);
}

namespace {

RowTasks quantTasks(const QuantGranularity& g) { return splitRows(g.outer * g.axis_dim, g.inner); }

// Runs element(idx, params) over every element of x, where params =
// load_params(scale index) is loaded once per row when the scale index does
// not vary along the row.
void emitQuantRows(
    KernelBuilder& kb, const QuantGranularity& g,
    const std::function<std::vector<llvm::Value*>(llvm::Value* scale_index)>& load_params,
    const std::function<void(llvm::Value* idx, const std::vector<llvm::Value*>& params)>& element) {
  llvm::IRBuilder<>& b = kb.b;
  auto c = [&](int64_t v) { return b.getInt64(v); };
  emitRowTasks(
      kb, quantTasks(g), [&](llvm::Value* row, llvm::Value* col_begin, llvm::Value* col_end) {
        llvm::Value* o = b.CreateUDiv(row, c(g.axis_dim));
        llvm::Value* a = b.CreateURem(row, c(g.axis_dim));
        llvm::Value* scale_row =
            b.CreateAdd(b.CreateMul(o, c(g.outer_stride)),
                        b.CreateMul(b.CreateUDiv(a, c(g.block)), c(g.axis_stride)));
        llvm::Value* base = b.CreateMul(row, c(g.inner));
        if (g.inner_stride == 0) {
          std::vector<llvm::Value*> params = load_params(scale_row);
          emitLoop(
              b, col_begin, col_end, [&](llvm::Value* i) { element(b.CreateAdd(base, i), params); },
              "i");
          return;
        }
        emitLoop(
            b, col_begin, col_end,
            [&](llvm::Value* i) {
              element(b.CreateAdd(base, i),
                      load_params(b.CreateAdd(scale_row, b.CreateMul(i, c(g.inner_stride)))));
            },
            "i");
      });
}

// The float type a division in `precision` is computed in (f16 and bf16 are
// emulated in f32, rounded after each step).
DType computeFloat(DType precision) { return precision == DType::F64 ? DType::F64 : DType::F32; }

Lowering makeQuantizeLinearLowering() {
  return {[](const Node& node) { return quantTasks(quantGranularity(node)).count(); },
          [](KernelBuilder& kb) {
            const Node& node = kb.node;
            QuantGranularity g = quantGranularity(node);
            llvm::IRBuilder<>& b = kb.b;
            DType xd = node.inputs[0]->type.dtype, sd = node.inputs[1]->type.dtype;
            DType od = node.outputs[0]->type.dtype;
            auto precision = static_cast<DType>(node.i("precision"));
            DType ct = computeFloat(precision);
            // To a float8 type or f4e2m1: x / scale (+ zero point) converted
            // as Cast does, no rounding to an integer.
            const bool to_float = isQuantizedFloat(od);
            const bool saturate = !node.has("saturate") || node.i("saturate") != 0;
            QuantRange range = to_float ? QuantRange{} : quantRange(node, od);
            llvm::Value* zp = kb.input(2);
            auto toCompute = [&](llvm::Value* v, DType from) {
              return roundToDType(b, convertCompute(b, v, from, ct), precision);
            };
            emitQuantRows(
                kb, g,
                [&](llvm::Value* si) {
                  llvm::Value* scale = toCompute(loadCompute(b, sd, kb.input(1), si), sd);
                  llvm::Value* z = zp ? convertCompute(b, loadCompute(b, od, zp, si), od, ct)
                                      : llvm::ConstantFP::get(computeType(b.getContext(), ct), 0.0);
                  return std::vector<llvm::Value*>{scale, z};
                },
                [&](llvm::Value* idx, const std::vector<llvm::Value*>& p) {
                  llvm::Value* x = toCompute(loadCompute(b, xd, kb.input(0), idx), xd);
                  llvm::Value* q = roundToDType(b, b.CreateFDiv(x, p[0]), precision);
                  if (to_float) {
                    // Without a zero point nothing is added (x / scale may be -0).
                    if (zp) q = b.CreateFAdd(q, p[1]);
                    storeCompute(b, od, convertCompute(b, q, ct, od), kb.output(0), idx, saturate);
                    return;
                  }
                  q = b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, q);
                  // storeCompute: a sub-byte int keeps its low bits.
                  storeCompute(b, od, emitSaturate(b, b.CreateFAdd(q, p[1]), range, od),
                               kb.output(0), idx);
                });
          }};
}

Lowering makeDequantizeLinearLowering() {
  return {[](const Node& node) { return quantTasks(quantGranularity(node)).count(); },
          [](KernelBuilder& kb) {
            const Node& node = kb.node;
            QuantGranularity g = quantGranularity(node);
            llvm::IRBuilder<>& b = kb.b;
            DType xd = node.inputs[0]->type.dtype, sd = node.inputs[1]->type.dtype;
            DType od = node.outputs[0]->type.dtype;
            llvm::Value* zp = kb.input(2);
            if (isQuantizedFloat(xd)) {
              // From a float8 type or f4e2m1: decoded to f32, the difference
              // and the product in f32.
              emitQuantRows(
                  kb, g,
                  [&](llvm::Value* si) {
                    llvm::Value* scale =
                        convertCompute(b, loadCompute(b, sd, kb.input(1), si), sd, DType::F32);
                    std::vector<llvm::Value*> params{scale};
                    if (zp) params.push_back(loadCompute(b, xd, zp, si));
                    return params;
                  },
                  [&](llvm::Value* idx, const std::vector<llvm::Value*>& p) {
                    llvm::Value* x = loadCompute(b, xd, kb.input(0), idx);
                    if (zp) x = b.CreateFSub(x, p[1]);
                    storeCompute(b, od, b.CreateFMul(x, p[0]), kb.output(0), idx);
                  });
              return;
            }
            // Differences of 8- and 16-bit values fit i32 (vectorizes with
            // i32 -> f32 conversions); i32 needs i64.
            DType diff_type = xd == DType::I32 ? DType::I64 : DType::I32;
            emitQuantRows(
                kb, g,
                [&](llvm::Value* si) {
                  llvm::Value* scale =
                      convertCompute(b, loadCompute(b, sd, kb.input(1), si), sd, DType::F32);
                  // loadCompute: a sub-byte int's byte decoded to its value.
                  llvm::Value* z =
                      zp ? convertCompute(b, loadCompute(b, xd, zp, si), xd, diff_type)
                         : llvm::ConstantInt::get(computeType(b.getContext(), diff_type), 0);
                  return std::vector<llvm::Value*>{scale, z};
                },
                [&](llvm::Value* idx, const std::vector<llvm::Value*>& p) {
                  llvm::Value* x =
                      convertCompute(b, loadCompute(b, xd, kb.input(0), idx), xd, diff_type);
                  llvm::Value* diff = b.CreateSIToFP(b.CreateSub(x, p[1]), b.getFloatTy());
                  storeCompute(b, od, b.CreateFMul(diff, p[0]), kb.output(0), idx);
                });
          }};
}

// One task: the range needs every element before any is quantized.
Lowering makeDynamicQuantizeLinearLowering() {
  return {[](const Node&) -> uint64_t { return 1; },
          [](KernelBuilder& kb) {
            llvm::IRBuilder<>& b = kb.b;
            int64_t n = kb.node.inputs[0]->type.numel();
            llvm::Type* f32 = b.getFloatTy();
            auto k = [&](double v) { return llvm::ConstantFP::get(f32, v); };
            llvm::Value* x = kb.input(0);
            // Skipped when the task range is empty.
            emitIf(b, b.CreateICmpULT(kb.task_begin, kb.task_end), [&] {
              auto extreme = [&](llvm::Intrinsic::ID id, const char* name) {
                return emitReduction(
                    b, b.getInt64(0), b.getInt64(n), k(0.0),
                    [&](llvm::Value* i, llvm::Value* acc) {
                      return b.CreateBinaryIntrinsic(id, acc, loadF32(b, x, i));
                    },
                    name);
              };
              llvm::Value* lo = extreme(llvm::Intrinsic::minnum, "min");
              llvm::Value* hi = extreme(llvm::Intrinsic::maxnum, "max");
              llvm::Value* range =
                  b.CreateSelect(b.CreateFCmpOEQ(hi, lo), k(1.0), b.CreateFSub(hi, lo));
              llvm::Value* scale = b.CreateFDiv(range, k(255.0));
              llvm::Value* zp = b.CreateFSub(k(0.0), b.CreateFDiv(lo, scale));
              zp = b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, zp, k(0.0));
              zp = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, zp, k(255.0));
              zp = b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, zp);
              emitLoop(
                  b, 0, n,
                  [&](llvm::Value* i) {
                    llvm::Value* q = b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven,
                                                            b.CreateFDiv(loadF32(b, x, i), scale));
                    storeElement(b, DType::U8,
                                 emitSaturate(b, b.CreateFAdd(q, zp), {0, 255}, DType::U8),
                                 kb.output(0), i);
                  },
                  "q");
              storeF32(b, scale, kb.output(1), b.getInt64(0));
              storeElement(b, DType::U8, b.CreateFPToUI(zp, b.getInt8Ty()), kb.output(2),
                           b.getInt64(0));
            });
          }};
}

}  // namespace

std::vector<std::pair<std::string, Lowering>> quantizationLowerings() {
  std::vector<std::pair<std::string, Lowering>> list = quantizationProductLowerings();
  list.emplace_back("QuantizeLinear", makeQuantizeLinearLowering());
  list.emplace_back("DequantizeLinear", makeDequantizeLinearLowering());
  list.emplace_back("DynamicQuantizeLinear", makeDynamicQuantizeLinearLowering());
  return list;
}

}  // namespace nanoc::cpu
