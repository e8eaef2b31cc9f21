// CPU lowerings of the reduction family (compiler/ops/reduce.h).
//
// Reduce*: one lowering interprets the op's ReduceKind row. Through
// ReduceGeometry the input is [outer, reduced..., inner]:
//  - inner == 1 (the innermost axis is reduced): a task takes whole output
//    elements, each a nest of loops whose innermost runs unit-stride over the
//    last reduced run, accumulating in one register (vectorizable: the
//    combine is marked reassociable).
//  - inner > 1: a task takes strips of kStrip output columns of one outer
//    index; the strip's accumulators live in a stack array and every reduced
//    row is added to it by a unit-stride loop over the strip.
// f16/bf16 accumulate in f32; Mean divides once at the end; LogSumExp takes
// a first pass for the max, so no exp overflows.
//
// ArgMax/ArgMin, CumSum/CumProd: the same strip scheme over [outer, n, inner];
// ArgMax/ArgMin over contiguous rows find the extreme with a vector reduction
// first, then scan for its index.
// TopK: per (outer, inner) column, an insertion into the k outputs; on
// contiguous rows a vector compare skips blocks that cannot enter.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/float_log_exp.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/math_functions.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ir/error.h"
#include "compiler/ops/reduce.h"

namespace nanoc::cpu {
namespace {

constexpr int64_t kStrip = 256;
// TopK's vector filter width, in elements.
constexpr unsigned kTopKBlock = 16;

using llvm::Value;

const ReduceKind& kindOf(const Node& node) {
  const ReduceKind* kind = findReduceKind(node.op);
  if (!kind) throw CompileError("node '" + node.name + "' (" + node.op + "): not a Reduce op");
  return *kind;
}

Value* reassoc(Value* v) {
  if (auto* inst = llvm::dyn_cast<llvm::Instruction>(v)) inst->setHasAllowReassoc(true);
  return v;
}

// ---- one ReduceKind row, as IR ----

struct ReduceEmitter {
  const ReduceKind& kind;
  DType dtype;
  llvm::Type* ct;  // compute type
  int64_t count;   // reduced_count

  bool isFp() const { return isFloat(dtype); }
  bool isSgn() const { return isSigned(dtype); }

  Value* init(llvm::IRBuilder<>& b) const {
    double inf = std::numeric_limits<double>::infinity();
    switch (kind.combine) {
      case ReduceCombine::Add:
        return llvm::Constant::getNullValue(ct);
      case ReduceCombine::Mul:
        return isFp() ? llvm::ConstantFP::get(ct, 1.0) : llvm::ConstantInt::get(ct, 1);
      case ReduceCombine::Max:
        if (isFp()) return llvm::ConstantFP::get(ct, -inf);
        if (dtype == DType::Bool) return llvm::ConstantInt::get(ct, 0);
        return isSgn() ? llvm::ConstantInt::get(
                             ct, llvm::APInt::getSignedMinValue(ct->getIntegerBitWidth()))
                       : llvm::ConstantInt::get(ct, 0);
      case ReduceCombine::Min:
        if (isFp()) return llvm::ConstantFP::get(ct, inf);
        if (dtype == DType::Bool) return llvm::ConstantInt::get(ct, 1);
        return isSgn()
                   ? llvm::ConstantInt::get(
                         ct, llvm::APInt::getSignedMaxValue(ct->getIntegerBitWidth()))
                   : llvm::ConstantInt::get(ct, llvm::APInt::getMaxValue(ct->getIntegerBitWidth()));
    }
    return llvm::Constant::getNullValue(ct);
  }

  Value* map(llvm::IRBuilder<>& b, Value* x, Value* shift) const {
    switch (kind.map) {
      case ReduceMap::Identity:
        return x;
      case ReduceMap::Abs:
        if (isFp()) return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
        if (!isSgn()) return x;
        return b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b.getFalse());
      case ReduceMap::Square:
        return isFp() ? b.CreateFMul(x, x) : b.CreateMul(x, x);
      case ReduceMap::ExpShifted:
        return emitExpAnyFloat(b, b.CreateFSub(x, shift));
    }
    return x;
  }

  Value* combine(llvm::IRBuilder<>& b, Value* acc, Value* v) const {
    switch (kind.combine) {
      case ReduceCombine::Add:
        return isFp() ? reassoc(b.CreateFAdd(acc, v)) : b.CreateAdd(acc, v);
      case ReduceCombine::Mul:
        return isFp() ? reassoc(b.CreateFMul(acc, v)) : b.CreateMul(acc, v);
      case ReduceCombine::Max:
        return b.CreateBinaryIntrinsic(isFp()    ? llvm::Intrinsic::maximum
                                       : isSgn() ? llvm::Intrinsic::smax
                                                 : llvm::Intrinsic::umax,
                                       acc, v);
      case ReduceCombine::Min:
        return b.CreateBinaryIntrinsic(isFp()    ? llvm::Intrinsic::minimum
                                       : isSgn() ? llvm::Intrinsic::smin
                                                 : llvm::Intrinsic::umin,
                                       acc, v);
    }
    return acc;
  }

  Value* finish(llvm::IRBuilder<>& b, Value* acc, Value* shift) const {
    switch (kind.finish) {
      case ReduceFinish::None:
        return acc;
      case ReduceFinish::DivideByCount:
        if (isFp()) return b.CreateFDiv(acc, llvm::ConstantFP::get(ct, static_cast<double>(count)));
        if (count == 0) return llvm::Constant::getNullValue(ct);
        {
          // In i64: the count need not fit the element type.
          Value* wide = b.CreateIntCast(acc, b.getInt64Ty(), isSgn());
          Value* q = isSgn() ? b.CreateSDiv(wide, b.getInt64(count))
                             : b.CreateUDiv(wide, b.getInt64(count));
          return b.CreateTrunc(q, ct);
        }
      case ReduceFinish::Sqrt:
        if (isFp()) return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, acc);
        return convertCompute(b,
                              b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt,
                                                     convertCompute(b, acc, dtype, DType::F64)),
                              DType::F64, dtype);
      case ReduceFinish::Log:
        return emitLogAnyFloat(b, acc);
      case ReduceFinish::LogPlusShift:
        return b.CreateFAdd(emitLogAnyFloat(b, acc), shift);
    }
    return acc;
  }

  // The shift of log-sum-exp: the max if finite, else 0 (all -inf gives
  // log 0 + 0 = -inf; a +inf stays +inf).
  Value* shiftOf(llvm::IRBuilder<>& b, Value* max) const {
    Value* finite = b.CreateFCmpONE(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, max),
                                    llvm::ConstantFP::getInfinity(ct));
    return b.CreateSelect(finite, max, llvm::ConstantFP::get(ct, 0.0));
  }
  Value* maxCombine(llvm::IRBuilder<>& b, Value* acc, Value* v) const {
    return b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, acc, v);
  }
};

// Emits loops over runs[from, to) (row-major), calling body(offset, acc)
// with offset = base + sum(index_i * stride_i) and carrying acc (may be null).
Value* emitRunNest(llvm::IRBuilder<>& b, const std::vector<ReduceRun>& runs, size_t from, size_t to,
                   Value* base, Value* acc,
                   const std::function<Value*(Value* offset, Value* acc)>& body) {
  if (from == to) return body(base, acc);
  const ReduceRun& run = runs[from];
  return emitReduction(
      b, b.getInt64(0), b.getInt64(run.size), acc,
      [&](Value* i, Value* a) {
        Value* off = b.CreateAdd(base, b.CreateMul(i, b.getInt64(run.stride), "", true, true), "",
                                 true, true);
        return emitRunNest(b, runs, from + 1, to, off, a, body);
      },
      "red");
}

// Input offset of outer index `o` over `runs` (constant divisors).
Value* emitRunOffset(llvm::IRBuilder<>& b, const std::vector<ReduceRun>& runs, Value* o) {
  Value* offset = b.getInt64(0);
  for (size_t i = runs.size(); i-- > 0;) {
    Value* size = b.getInt64(runs[i].size);
    Value* idx = i == 0 ? o : b.CreateURem(o, size);
    offset = b.CreateAdd(offset, b.CreateMul(idx, b.getInt64(runs[i].stride)));
    if (i > 0) o = b.CreateUDiv(o, size);
  }
  return offset;
}

RowTasks reduceTasks(const ReduceGeometry& g) {
  int64_t work = std::max<int64_t>(g.reduced_count, 1);
  if (g.contiguous()) return splitRows(g.outer, 1, std::max<int64_t>(1, kTaskElements / work));
  int64_t strips = (g.inner + kStrip - 1) / kStrip;
  return splitRows(g.outer, strips, std::max<int64_t>(1, kTaskElements / (work * kStrip)));
}

// A stack array of kStrip elements of `type`, allocated once per call.
Value* stripBuffer(KernelBuilder& kb, llvm::Type* type, const char* name) {
  llvm::IRBuilder<> entry(&kb.fn->getEntryBlock(), kb.fn->getEntryBlock().begin());
  return entry.CreateAlloca(llvm::ArrayType::get(type, kStrip), nullptr, name);
}

Value* bufAt(llvm::IRBuilder<>& b, llvm::Type* type, Value* buf, Value* j) {
  return b.CreateInBoundsGEP(type, buf, j);
}

// j0 and width of strip `strip` over `inner` columns; the width is a
// constant when one strip covers the row.
std::pair<Value*, Value*> stripRange(llvm::IRBuilder<>& b, Value* strip, int64_t inner) {
  if (inner <= kStrip) return {b.getInt64(0), b.getInt64(inner)};
  Value* j0 = b.CreateMul(strip, b.getInt64(kStrip));
  Value* width = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b.getInt64(kStrip),
                                         b.CreateSub(b.getInt64(inner), j0));
  return {j0, width};
}

void emitReduceContiguous(KernelBuilder& kb, const ReduceGeometry& g, const ReduceEmitter& r,
                          const RowTasks& tasks) {
  llvm::IRBuilder<>& b = kb.b;
  Value* x = kb.input(0);
  Value* y = kb.output(0);
  size_t last = g.reduced.size() - 1;
  int64_t len = g.reduced.back().size;
  auto reduceAll = [&](Value* base, Value* init, const auto& step) {
    return emitRunNest(b, g.reduced, 0, last, base, init, [&](Value* off, Value* acc) {
      return emitReduction(
          b, b.getInt64(0), b.getInt64(len), acc,
          [&](Value* i, Value* a) {
            return step(a, loadCompute(b, r.dtype, x, b.CreateAdd(off, i, "", true, true)));
          },
          "r");
    });
  };
  emitRowTasks(kb, tasks, [&](Value* o, Value*, Value*) {
    Value* base = emitRunOffset(b, g.outer_kept, o);
    Value* shift = nullptr;
    if (r.kind.needsShift())
      shift = r.shiftOf(b, reduceAll(base, llvm::ConstantFP::getInfinity(r.ct, true),
                                     [&](Value* a, Value* v) { return r.maxCombine(b, a, v); }));
    Value* acc = reduceAll(base, r.init(b),
                           [&](Value* a, Value* v) { return r.combine(b, a, r.map(b, v, shift)); });
    storeCompute(b, r.dtype, r.finish(b, acc, shift), y, o);
  });
}

void emitReduceStrips(KernelBuilder& kb, const ReduceGeometry& g, const ReduceEmitter& r,
                      const RowTasks& tasks) {
  llvm::IRBuilder<>& b = kb.b;
  Value* x = kb.input(0);
  Value* y = kb.output(0);
  Value* acc_buf = stripBuffer(kb, r.ct, "strip_acc");
  Value* shift_buf = r.kind.needsShift() ? stripBuffer(kb, r.ct, "strip_shift") : nullptr;
  emitRowTasks(kb, tasks, [&](Value* o, Value* strip_begin, Value* strip_end) {
    Value* base = emitRunOffset(b, g.outer_kept, o);
    emitLoop(
        b, strip_begin, strip_end,
        [&](Value* strip) {
          auto [j0, width] = stripRange(b, strip, g.inner);
          Value* row = b.CreateAdd(base, j0);
          auto fill = [&](Value* buf, Value* v) {
            emitLoop(
                b, b.getInt64(0), width,
                [&](Value* j) { b.CreateStore(v, bufAt(b, r.ct, buf, j)); }, "j");
          };
          // acc[j] = step(acc[j], x[row + offset + j]) for every reduced offset.
          auto accumulate = [&](Value* buf, const auto& step) {
            emitRunNest(b, g.reduced, 0, g.reduced.size(), row, nullptr,
                        [&](Value* off, Value*) -> Value* {
                          emitLoop(
                              b, b.getInt64(0), width,
                              [&](Value* j) {
                                Value* p = bufAt(b, r.ct, buf, j);
                                Value* v = loadCompute(b, r.dtype, x, b.CreateAdd(off, j));
                                b.CreateStore(step(b.CreateLoad(r.ct, p), v, j), p);
                              },
                              "j");
                          return nullptr;
                        });
          };
          if (shift_buf) {
            fill(shift_buf, llvm::ConstantFP::getInfinity(r.ct, true));
            accumulate(shift_buf,
                       [&](Value* a, Value* v, Value*) { return r.maxCombine(b, a, v); });
            emitLoop(
                b, b.getInt64(0), width,
                [&](Value* j) {
                  Value* p = bufAt(b, r.ct, shift_buf, j);
                  b.CreateStore(r.shiftOf(b, b.CreateLoad(r.ct, p)), p);
                },
                "j");
          }
          auto shiftAt = [&](Value* j) -> Value* {
            return shift_buf ? b.CreateLoad(r.ct, bufAt(b, r.ct, shift_buf, j)) : nullptr;
          };
          fill(acc_buf, r.init(b));
          accumulate(acc_buf, [&](Value* a, Value* v, Value* j) {
            return r.combine(b, a, r.map(b, v, shiftAt(j)));
          });
          Value* out_row = b.CreateAdd(b.CreateMul(o, b.getInt64(g.inner)), j0);
          emitLoop(
              b, b.getInt64(0), width,
              [&](Value* j) {
                Value* acc = b.CreateLoad(r.ct, bufAt(b, r.ct, acc_buf, j));
                storeCompute(b, r.dtype, r.finish(b, acc, shiftAt(j)), y, b.CreateAdd(out_row, j));
              },
              "j");
        },
        "strip");
  });
}

Lowering makeReduceLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return reduceTasks(reduceGeometry(node)).count(); };
  lowering.emit = [](KernelBuilder& kb) {
    const ReduceKind& kind = kindOf(kb.node);
    ReduceGeometry g = reduceGeometry(kb.node);
    DType dtype = kb.node.inputs[0]->type.dtype;
    ReduceEmitter r{kind, dtype, computeType(kb.b.getContext(), dtype), g.reduced_count};
    RowTasks tasks = reduceTasks(g);
    if (g.outer > 0 && g.inner > 0) {
      if (g.contiguous())
        emitReduceContiguous(kb, g, r, tasks);
      else
        emitReduceStrips(kb, g, r, tasks);
    }
    addOperandAliasScopes(kb);
  };
  return lowering;
}

// ---- ArgMax / ArgMin ----

RowTasks axisTasks(const AxisGeometry& g, int64_t per_element) {
  int64_t strips = (g.inner + kStrip - 1) / kStrip;
  int64_t work = std::max<int64_t>(1, per_element) * kStrip;
  return splitRows(g.outer, strips, std::max<int64_t>(1, kTaskElements / work));
}

Value* emitBetter(llvm::IRBuilder<>& b, DType dtype, bool largest, bool or_equal, Value* v,
                  Value* best) {
  if (isFloat(dtype))
    return b.CreateFCmp(largest ? (or_equal ? llvm::CmpInst::FCMP_OGE : llvm::CmpInst::FCMP_OGT)
                                : (or_equal ? llvm::CmpInst::FCMP_OLE : llvm::CmpInst::FCMP_OLT),
                        v, best);
  bool sgn = isSigned(dtype);
  llvm::CmpInst::Predicate p =
      largest ? (or_equal ? (sgn ? llvm::CmpInst::ICMP_SGE : llvm::CmpInst::ICMP_UGE)
                          : (sgn ? llvm::CmpInst::ICMP_SGT : llvm::CmpInst::ICMP_UGT))
              : (or_equal ? (sgn ? llvm::CmpInst::ICMP_SLE : llvm::CmpInst::ICMP_ULE)
                          : (sgn ? llvm::CmpInst::ICMP_SLT : llvm::CmpInst::ICMP_ULT));
  return b.CreateICmp(p, v, best);
}

// Contiguous rows, in two passes: the extreme value by a vectorizable
// reduction (maxnum/minnum skip NaNs), then a scan for its first (or last)
// index. Same result as comparing in order from element 0 as the strips do
// (and ONNX Runtime does): a NaN at element 0 wins, later NaNs never do.
void emitArgContiguous(KernelBuilder& kb, const AxisGeometry& g, DType dtype, bool largest,
                       bool last) {
  llvm::IRBuilder<>& b = kb.b;
  llvm::LLVMContext& ctx = b.getContext();
  llvm::Type* ct = computeType(ctx, dtype);
  Value* x = kb.input(0);
  Value* y = kb.output(0);
  bool fp = isFloat(dtype), sgn = isSigned(dtype);
  unsigned bits = fp ? 0 : ct->getIntegerBitWidth();
  Value* init =
      fp ? llvm::ConstantFP::getInfinity(ct, largest)
         : llvm::ConstantInt::get(
               ct,
               largest
                   ? (sgn ? llvm::APInt::getSignedMinValue(bits) : llvm::APInt::getMinValue(bits))
                   : (sgn ? llvm::APInt::getSignedMaxValue(bits) : llvm::APInt::getMaxValue(bits)));
  llvm::Intrinsic::ID pick = fp ? (largest ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum)
                                : (largest ? (sgn ? llvm::Intrinsic::smax : llvm::Intrinsic::umax)
                                           : (sgn ? llvm::Intrinsic::smin : llvm::Intrinsic::umin));
  emitRowTasks(kb, axisTasks(g, g.n), [&](Value* o, Value*, Value*) {
    Value* row = b.CreateMul(o, b.getInt64(g.n));
    Value* extreme = emitReduction(
        b, b.getInt64(0), b.getInt64(g.n), init,
        [&](Value* i, Value* acc) {
          return reassoc(
              b.CreateBinaryIntrinsic(pick, acc, loadCompute(b, dtype, x, b.CreateAdd(row, i))));
        },
        "ext");
    // Scan from the chosen end until an element equals the extreme (found
    // unless every element is NaN; then x[0] is NaN and 0 is the answer).
    llvm::BasicBlock* pre = b.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx, "arg.scan", kb.fn);
    auto* body = llvm::BasicBlock::Create(ctx, "arg.test", kb.fn);
    auto* exit = llvm::BasicBlock::Create(ctx, "arg.found", kb.fn);
    b.CreateBr(header);
    b.SetInsertPoint(header);
    llvm::PHINode* step = b.CreatePHI(b.getInt64Ty(), 2, "step");
    step->addIncoming(b.getInt64(0), pre);
    b.CreateCondBr(b.CreateICmpSLT(step, b.getInt64(g.n)), body, exit);
    b.SetInsertPoint(body);
    Value* i = last ? b.CreateSub(b.getInt64(g.n - 1), step) : step;
    Value* v = loadCompute(b, dtype, x, b.CreateAdd(row, i));
    Value* hit = fp ? b.CreateFCmpOEQ(v, extreme) : b.CreateICmpEQ(v, extreme);
    Value* next = b.CreateAdd(step, b.getInt64(1));
    step->addIncoming(next, body);
    b.CreateCondBr(hit, exit, header);
    b.SetInsertPoint(exit);
    llvm::PHINode* found = b.CreatePHI(b.getInt64Ty(), 2, "found");
    found->addIncoming(b.getInt64(0), header);
    found->addIncoming(i, body);
    Value* index = found;
    if (fp) {
      Value* x0 = loadCompute(b, dtype, x, row);
      index = b.CreateSelect(b.CreateFCmpUNO(x0, x0), b.getInt64(0), found);
    }
    b.CreateStore(index, b.CreateInBoundsGEP(b.getInt64Ty(), y, o));
  });
}

Lowering makeArgLowering(bool largest) {
  Lowering lowering;
  lowering.task_count = [](const Node& node) {
    AxisGeometry g = axisGeometry(node, node.i("axis"));
    return axisTasks(g, g.n).count();
  };
  lowering.emit = [largest](KernelBuilder& kb) {
    AxisGeometry g = axisGeometry(kb.node, kb.node.i("axis"));
    bool last = kb.node.i("select_last_index") != 0;
    DType dtype = kb.node.inputs[0]->type.dtype;
    llvm::IRBuilder<>& b = kb.b;
    llvm::Type* ct = computeType(b.getContext(), dtype);
    Value* x = kb.input(0);
    Value* y = kb.output(0);
    if (g.outer > 0 && g.n > 0 && g.inner == 1) {
      emitArgContiguous(kb, g, dtype, largest, last);
    } else if (g.outer > 0 && g.inner > 0 && g.n > 0) {
      Value* best_buf = stripBuffer(kb, ct, "strip_best");
      Value* index_buf = stripBuffer(kb, b.getInt64Ty(), "strip_index");
      emitRowTasks(kb, axisTasks(g, g.n), [&](Value* o, Value* strip_begin, Value* strip_end) {
        emitLoop(
            b, strip_begin, strip_end,
            [&](Value* strip) {
              auto [j0, width] = stripRange(b, strip, g.inner);
              Value* row = b.CreateAdd(b.CreateMul(o, b.getInt64(g.n * g.inner)), j0);
              auto at = [&](Value* a, Value* j) {
                return b.CreateAdd(row, b.CreateAdd(b.CreateMul(a, b.getInt64(g.inner)), j));
              };
              emitLoop(
                  b, b.getInt64(0), width,
                  [&](Value* j) {
                    b.CreateStore(loadCompute(b, dtype, x, b.CreateAdd(row, j)),
                                  bufAt(b, ct, best_buf, j));
                    b.CreateStore(b.getInt64(0), bufAt(b, b.getInt64Ty(), index_buf, j));
                  },
                  "j");
              emitLoop(
                  b, b.getInt64(1), b.getInt64(g.n),
                  [&](Value* a) {
                    emitLoop(
                        b, b.getInt64(0), width,
                        [&](Value* j) {
                          Value* pb = bufAt(b, ct, best_buf, j);
                          Value* pi = bufAt(b, b.getInt64Ty(), index_buf, j);
                          Value* v = loadCompute(b, dtype, x, at(a, j));
                          Value* best = b.CreateLoad(ct, pb);
                          Value* better = emitBetter(b, dtype, largest, last, v, best);
                          b.CreateStore(b.CreateSelect(better, v, best), pb);
                          b.CreateStore(b.CreateSelect(better, a, b.CreateLoad(b.getInt64Ty(), pi)),
                                        pi);
                        },
                        "j");
                  },
                  "a");
              Value* out_row = b.CreateAdd(b.CreateMul(o, b.getInt64(g.inner)), j0);
              emitLoop(
                  b, b.getInt64(0), width,
                  [&](Value* j) {
                    b.CreateStore(
                        b.CreateLoad(b.getInt64Ty(), bufAt(b, b.getInt64Ty(), index_buf, j)),
                        b.CreateInBoundsGEP(b.getInt64Ty(), y, b.CreateAdd(out_row, j)));
                  },
                  "j");
            },
            "strip");
      });
    }
    addOperandAliasScopes(kb);
  };
  return lowering;
}

// ---- CumSum / CumProd ----

Lowering makeCumulativeLowering(bool product) {
  Lowering lowering;
  lowering.task_count = [](const Node& node) {
    AxisGeometry g = axisGeometry(node, node.i("axis"));
    return axisTasks(g, g.n).count();
  };
  lowering.emit = [product](KernelBuilder& kb) {
    AxisGeometry g = axisGeometry(kb.node, kb.node.i("axis"));
    bool exclusive = kb.node.i("exclusive") != 0, reverse = kb.node.i("reverse") != 0;
    DType dtype = kb.node.inputs[0]->type.dtype;
    llvm::IRBuilder<>& b = kb.b;
    llvm::Type* ct = computeType(b.getContext(), dtype);
    bool fp = isFloat(dtype);
    Value* x = kb.input(0);
    Value* y = kb.output(0);
    if (g.outer > 0 && g.inner > 0 && g.n > 0) {
      Value* acc_buf = stripBuffer(kb, ct, "strip_acc");
      Value* init = product ? (fp ? llvm::ConstantFP::get(ct, 1.0) : llvm::ConstantInt::get(ct, 1))
                            : llvm::Constant::getNullValue(ct);
      emitRowTasks(kb, axisTasks(g, g.n), [&](Value* o, Value* strip_begin, Value* strip_end) {
        emitLoop(
            b, strip_begin, strip_end,
            [&](Value* strip) {
              auto [j0, width] = stripRange(b, strip, g.inner);
              Value* row = b.CreateAdd(b.CreateMul(o, b.getInt64(g.n * g.inner)), j0);
              emitLoop(
                  b, b.getInt64(0), width,
                  [&](Value* j) { b.CreateStore(init, bufAt(b, ct, acc_buf, j)); }, "j");
              emitLoop(
                  b, b.getInt64(0), b.getInt64(g.n),
                  [&](Value* s) {
                    Value* a = reverse ? b.CreateSub(b.getInt64(g.n - 1), s) : s;
                    Value* a_row = b.CreateAdd(row, b.CreateMul(a, b.getInt64(g.inner)));
                    emitLoop(
                        b, b.getInt64(0), width,
                        [&](Value* j) {
                          Value* p = bufAt(b, ct, acc_buf, j);
                          Value* at = b.CreateAdd(a_row, j);
                          Value* old = b.CreateLoad(ct, p);
                          Value* v = loadCompute(b, dtype, x, at);
                          Value* next = product ? (fp ? b.CreateFMul(old, v) : b.CreateMul(old, v))
                                                : (fp ? b.CreateFAdd(old, v) : b.CreateAdd(old, v));
                          b.CreateStore(next, p);
                          storeCompute(b, dtype, exclusive ? old : next, y, at);
                        },
                        "j");
                  },
                  "a");
            },
            "strip");
      });
    }
    addOperandAliasScopes(kb);
  };
  return lowering;
}

// ---- TopK ----

// One task per group of (outer, inner) columns; each column is an insertion
// of its n elements into its k sorted output slots (O(n k), fine for the
// small k of top-k heads).
RowTasks topKTasks(const AxisGeometry& g, int64_t k) {
  int64_t work = std::max<int64_t>(1, g.n) * std::max<int64_t>(1, std::min<int64_t>(k, 16));
  return splitRows(g.outer * g.inner, 1, std::max<int64_t>(1, kTaskElements / work));
}

Lowering makeTopKLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) {
    return topKTasks(axisGeometry(node, node.i("axis")), node.i("k")).count();
  };
  lowering.emit = [](KernelBuilder& kb) {
    AxisGeometry g = axisGeometry(kb.node, kb.node.i("axis"));
    int64_t k = kb.node.i("k");
    bool largest = kb.node.i("largest") != 0;
    DType dtype = kb.node.inputs[0]->type.dtype;
    llvm::IRBuilder<>& b = kb.b;
    llvm::LLVMContext& ctx = b.getContext();
    llvm::Type* i64 = b.getInt64Ty();
    Value* x = kb.input(0);
    Value* values = kb.output(0);
    Value* indices = kb.output(1);
    if (g.outer * g.inner > 0 && k > 0) {
      llvm::IRBuilder<> entry(&kb.fn->getEntryBlock(), kb.fn->getEntryBlock().begin());
      Value* count_slot = entry.CreateAlloca(i64, nullptr, "filled");
      emitRowTasks(kb, topKTasks(g, k), [&](Value* column, Value*, Value*) {
        Value* o = b.CreateUDiv(column, b.getInt64(g.inner));
        Value* j = b.CreateURem(column, b.getInt64(g.inner));
        Value* in_base = b.CreateAdd(b.CreateMul(o, b.getInt64(g.n * g.inner)), j);
        Value* out_base = b.CreateAdd(b.CreateMul(o, b.getInt64(k * g.inner)), j);
        auto outAt = [&](Value* slot) {
          return b.CreateAdd(out_base, b.CreateMul(slot, b.getInt64(g.inner)));
        };
        b.CreateStore(b.getInt64(0), count_slot);
        // Inserts element `a` (value v) into the sorted slots filled so far.
        auto insert = [&](Value* v, Value* a) {
          Value* filled = b.CreateLoad(i64, count_slot);
          // Walk p down from `filled` while v beats slot p - 1, moving
          // each beaten slot one down (off the end when p == k).
          llvm::Function* fn = kb.fn;
          llvm::BasicBlock* pre = b.GetInsertBlock();
          auto* header = llvm::BasicBlock::Create(ctx, "topk.header", fn);
          auto* check = llvm::BasicBlock::Create(ctx, "topk.check", fn);
          auto* move = llvm::BasicBlock::Create(ctx, "topk.move", fn);
          auto* copy = llvm::BasicBlock::Create(ctx, "topk.copy", fn);
          auto* next = llvm::BasicBlock::Create(ctx, "topk.next", fn);
          auto* done = llvm::BasicBlock::Create(ctx, "topk.done", fn);
          auto* place = llvm::BasicBlock::Create(ctx, "topk.place", fn);
          auto* after = llvm::BasicBlock::Create(ctx, "topk.after", fn);
          b.CreateBr(header);
          b.SetInsertPoint(header);
          llvm::PHINode* p = b.CreatePHI(i64, 2, "p");
          p->addIncoming(filled, pre);
          b.CreateCondBr(b.CreateICmpSGT(p, b.getInt64(0)), check, done);
          b.SetInsertPoint(check);
          Value* prev = b.CreateSub(p, b.getInt64(1));
          Value* w = loadCompute(b, dtype, values, outAt(prev));
          b.CreateCondBr(emitBetter(b, dtype, largest, false, v, w), move, done);
          b.SetInsertPoint(move);
          b.CreateCondBr(b.CreateICmpSLT(p, b.getInt64(k)), copy, next);
          b.SetInsertPoint(copy);
          storeElement(b, dtype, loadElement(b, dtype, values, outAt(prev)), values, outAt(p));
          b.CreateStore(b.CreateLoad(i64, b.CreateInBoundsGEP(i64, indices, outAt(prev))),
                        b.CreateInBoundsGEP(i64, indices, outAt(p)));
          b.CreateBr(next);
          b.SetInsertPoint(next);
          p->addIncoming(prev, next);
          b.CreateBr(header);
          b.SetInsertPoint(done);
          llvm::PHINode* at = b.CreatePHI(i64, 2, "slot");
          at->addIncoming(p, header);
          at->addIncoming(p, check);
          b.CreateCondBr(b.CreateICmpSLT(at, b.getInt64(k)), place, after);
          b.SetInsertPoint(place);
          storeCompute(b, dtype, v, values, outAt(at));
          b.CreateStore(a, b.CreateInBoundsGEP(i64, indices, outAt(at)));
          b.CreateBr(after);
          b.SetInsertPoint(after);
          b.CreateStore(b.CreateBinaryIntrinsic(llvm::Intrinsic::smin,
                                                b.CreateAdd(filled, b.getInt64(1)), b.getInt64(k)),
                        count_slot);
        };
        auto insertAt = [&](Value* a) {
          insert(
              loadCompute(b, dtype, x, b.CreateAdd(in_base, b.CreateMul(a, b.getInt64(g.inner)))),
              a);
        };
        int64_t blocks = g.inner == 1 ? (g.n - k) / kTopKBlock : 0;
        if (blocks == 0) {
          emitLoop(b, b.getInt64(0), b.getInt64(g.n), insertAt, "a");
        } else {
          // Contiguous rows: after the first k, most elements lose to the
          // current k-th; a vector compare against it skips whole blocks.
          emitLoop(b, b.getInt64(0), b.getInt64(k), insertAt, "a");
          llvm::Type* storage = storageType(ctx, dtype);
          auto* vec_type = llvm::FixedVectorType::get(storage, kTopKBlock);
          llvm::Type* ct = computeType(ctx, dtype);
          emitLoop(
              b, b.getInt64(0), b.getInt64(blocks),
              [&](Value* blk) {
                Value* a0 = b.CreateAdd(b.getInt64(k), b.CreateMul(blk, b.getInt64(kTopKBlock)));
                Value* vec =
                    b.CreateAlignedLoad(vec_type, elementPtr(b, dtype, x, b.CreateAdd(in_base, a0)),
                                        llvm::Align(dtypeSize(dtype)));
                if (ct != storage)
                  vec = b.CreateFPExt(vec, llvm::FixedVectorType::get(ct, kTopKBlock));
                Value* worst = loadCompute(b, dtype, values, outAt(b.getInt64(k - 1)));
                Value* any = b.CreateOrReduce(emitBetter(b, dtype, largest, false, vec,
                                                         b.CreateVectorSplat(kTopKBlock, worst)));
                llvm::BasicBlock* scan = llvm::BasicBlock::Create(ctx, "topk.scan", kb.fn);
                llvm::BasicBlock* skip = llvm::BasicBlock::Create(ctx, "topk.skip", kb.fn);
                b.CreateCondBr(any, scan, skip);
                b.SetInsertPoint(scan);
                emitLoop(
                    b, b.getInt64(0), b.getInt64(kTopKBlock),
                    [&](Value* e) { insertAt(b.CreateAdd(a0, e)); }, "e");
                b.CreateBr(skip);
                b.SetInsertPoint(skip);
              },
              "block");
          emitLoop(b, b.getInt64(k + blocks * kTopKBlock), b.getInt64(g.n), insertAt, "a");
        }
      });
    }
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace

std::vector<std::pair<std::string, Lowering>> lossLowerings();  // lower_losses.cc

std::vector<std::pair<std::string, Lowering>> reductionLowerings() {
  std::vector<std::pair<std::string, Lowering>> list;
  for (const ReduceKind& kind : reduceKinds())
    list.emplace_back(std::string(kind.op), makeReduceLowering());
  list.emplace_back("ArgMax", makeArgLowering(true));
  list.emplace_back("ArgMin", makeArgLowering(false));
  list.emplace_back("CumSum", makeCumulativeLowering(false));
  list.emplace_back("CumProd", makeCumulativeLowering(true));
  list.emplace_back("TopK", makeTopKLowering());
  for (auto& entry : lossLowerings()) list.push_back(std::move(entry));
  return list;
}

}  // namespace nanoc::cpu
