#include "compiler/codegen/cpu/inline_libcalls.h"

#include <llvm/Analysis/ValueTracking.h>
#include <llvm/CodeGen/ISDOpcodes.h>
#include <llvm/CodeGen/TargetLowering.h>
#include <llvm/CodeGen/TargetSubtargetInfo.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/KnownBits.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/Utils/IntegerDivision.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace nanoc::cpu {
namespace {

// The SelectionDAG node an intrinsic becomes, or 0 for one left alone.
unsigned isdOf(llvm::Intrinsic::ID id) {
  switch (id) {
    case llvm::Intrinsic::maxnum:
      return llvm::ISD::FMAXNUM;
    case llvm::Intrinsic::minnum:
      return llvm::ISD::FMINNUM;
    case llvm::Intrinsic::maximum:
      return llvm::ISD::FMAXIMUM;
    case llvm::Intrinsic::minimum:
      return llvm::ISD::FMINIMUM;
    case llvm::Intrinsic::floor:
      return llvm::ISD::FFLOOR;
    case llvm::Intrinsic::ceil:
      return llvm::ISD::FCEIL;
    case llvm::Intrinsic::trunc:
      return llvm::ISD::FTRUNC;
    case llvm::Intrinsic::round:
      return llvm::ISD::FROUND;
    case llvm::Intrinsic::roundeven:
      return llvm::ISD::FROUNDEVEN;
    case llvm::Intrinsic::rint:
      return llvm::ISD::FRINT;
    case llvm::Intrinsic::nearbyint:
      return llvm::ISD::FNEARBYINT;
    default:
      return 0;
  }
}

llvm::Value* isNan(llvm::IRBuilder<>& b, llvm::Value* x) { return b.CreateFCmpUNO(x, x); }

// maxnum/minnum: the other operand when one is NaN; maximum/minimum: NaN when
// either is, and +0 above -0 (the sign bits of equal operands combined).
llvm::Value* emitMinMax(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id, llvm::Value* x,
                        llvm::Value* y) {
  bool is_max = id == llvm::Intrinsic::maxnum || id == llvm::Intrinsic::maximum;
  bool propagate_nan = id == llvm::Intrinsic::maximum || id == llvm::Intrinsic::minimum;
  llvm::Value* x_wins = is_max ? b.CreateFCmpOGT(x, y) : b.CreateFCmpOLT(x, y);
  x_wins = b.CreateOr(x_wins, propagate_nan ? isNan(b, x) : isNan(b, y));
  llvm::Value* picked = b.CreateSelect(x_wins, x, y);
  if (!propagate_nan) return picked;
  llvm::Type* bits = x->getType()->getWithNewBitWidth(x->getType()->getScalarSizeInBits());
  llvm::Value* xb = b.CreateBitCast(x, bits);
  llvm::Value* yb = b.CreateBitCast(y, bits);
  llvm::Value* zeros =
      b.CreateBitCast(is_max ? b.CreateAnd(xb, yb) : b.CreateOr(xb, yb), x->getType());
  return b.CreateSelect(b.CreateFCmpOEQ(x, y), zeros, picked);
}

// The rounding functions. For |x| < 2^m (m the mantissa's bits), (|x| + 2^m)
// - 2^m is |x| rounded to the nearest integer, ties to even, exactly (the sum
// has unit spacing); floor/ceil/trunc/round step from it. |x| >= 2^m, infinite
// or NaN: x itself, already integral (or NaN). The sign is x's (so -0.3 gives
// -0, as the functions do).
llvm::Value* emitRounding(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id, llvm::Value* x) {
  llvm::Type* t = x->getType();
  const llvm::fltSemantics& sem = t->getScalarType()->getFltSemantics();
  double big = std::ldexp(1.0, static_cast<int>(llvm::APFloat::semanticsPrecision(sem)) - 1);
  llvm::Value* k = llvm::ConstantFP::get(t, big);
  llvm::Value* one = llvm::ConstantFP::get(t, 1.0);
  llvm::Value* ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value* small = b.CreateFCmpOLT(ax, k);
  llvm::Value* even = b.CreateFSub(b.CreateFAdd(ax, k), k);  // |x| to nearest, ties even
  llvm::Value* r = nullptr;
  auto copysign = [&](llvm::Value* v) {
    return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, v, x);
  };
  switch (id) {
    case llvm::Intrinsic::roundeven:
    case llvm::Intrinsic::rint:
    case llvm::Intrinsic::nearbyint:
      r = copysign(even);
      break;
    case llvm::Intrinsic::trunc:
    case llvm::Intrinsic::round: {
      llvm::Value* t0 = b.CreateSelect(b.CreateFCmpOGT(even, ax), b.CreateFSub(even, one), even);
      if (id == llvm::Intrinsic::round) {  // halves away from zero
        llvm::Value* half = llvm::ConstantFP::get(t, 0.5);
        t0 = b.CreateSelect(b.CreateFCmpOGE(b.CreateFSub(ax, t0), half), b.CreateFAdd(t0, one), t0);
      }
      r = copysign(t0);
      break;
    }
    case llvm::Intrinsic::floor:
    case llvm::Intrinsic::ceil: {
      llvm::Value* s = copysign(even);
      llvm::Value* v = id == llvm::Intrinsic::floor
                           ? b.CreateSelect(b.CreateFCmpOGT(s, x), b.CreateFSub(s, one), s)
                           : b.CreateSelect(b.CreateFCmpOLT(s, x), b.CreateFAdd(s, one), s);
      r = copysign(v);
      break;
    }
    default:
      return nullptr;
  }
  return b.CreateSelect(small, r, x);
}

// ------------------------------------------------ 64-bit integer operations

bool isDivRem(unsigned opcode) {
  return opcode == llvm::Instruction::SDiv || opcode == llvm::Instruction::UDiv ||
         opcode == llvm::Instruction::SRem || opcode == llvm::Instruction::URem;
}

bool isI64(llvm::Type* t) { return t->getScalarType()->isIntegerTy(64); }

// f32 and f64, and the 16-bit formats as sources (widened to f32 exactly).
bool isConvertibleFloat(llvm::Type* t, bool as_source) {
  llvm::Type* s = t->getScalarType();
  return s->isFloatTy() || s->isDoubleTy() || (as_source && (s->isHalfTy() || s->isBFloatTy()));
}

// An instruction expandWideIntegerOps rewrites (scalar or vector).
bool isWideOp(llvm::Instruction& inst) {
  switch (inst.getOpcode()) {
    case llvm::Instruction::SDiv:
    case llvm::Instruction::UDiv:
    case llvm::Instruction::SRem:
    case llvm::Instruction::URem:
      return isI64(inst.getType());
    case llvm::Instruction::FPToSI:
    case llvm::Instruction::FPToUI:
      return isI64(inst.getType()) && isConvertibleFloat(inst.getOperand(0)->getType(), true);
    case llvm::Instruction::SIToFP:
    case llvm::Instruction::UIToFP:
      return isI64(inst.getOperand(0)->getType()) && isConvertibleFloat(inst.getType(), false);
    default:
      break;
  }
  auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst);
  return call &&
         (call->getIntrinsicID() == llvm::Intrinsic::fptosi_sat ||
          call->getIntrinsicID() == llvm::Intrinsic::fptoui_sat) &&
         isI64(call->getType()) && isConvertibleFloat(call->getArgOperand(0)->getType(), true);
}

// Replaces a vector `inst` by one scalar instruction per element, appended
// to `out`.
void scalarize(llvm::Instruction* inst, std::vector<llvm::Instruction*>& out) {
  auto* vt = llvm::cast<llvm::FixedVectorType>(inst->getType());
  llvm::IRBuilder<> b(inst);
  llvm::Value* result = llvm::PoisonValue::get(vt);
  auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(inst);
  for (unsigned i = 0; i < vt->getNumElements(); ++i) {
    llvm::Value* x = b.CreateExtractElement(inst->getOperand(0), i);
    llvm::Value* v;
    if (auto* op = llvm::dyn_cast<llvm::BinaryOperator>(inst))
      v = b.CreateBinOp(op->getOpcode(), x, b.CreateExtractElement(op->getOperand(1), i));
    else if (call)
      v = b.CreateIntrinsic(call->getIntrinsicID(), {vt->getElementType(), x->getType()}, {x});
    else
      v = b.CreateCast(llvm::cast<llvm::CastInst>(inst)->getOpcode(), x, vt->getElementType());
    if (auto* vi = llvm::dyn_cast<llvm::Instruction>(v)) {
      if (!call) vi->copyIRFlags(inst);
      out.push_back(vi);
    }
    result = b.CreateInsertElement(result, v, i);
  }
  inst->replaceAllUsesWith(result);
  inst->eraseFromParent();
}

// A constant divisor SelectionDAG divides a 64-bit value by without a call on
// a 32-bit target: a power of two (shifts; negated for signed ones), and for
// unsigned division one below 2^32 that is a power of two times an odd factor
// of 2^32 - 1 (3, 5, 6, 15, 17, 96, 255, 257, 65537, ...:
// TargetLowering::expandDIVREMByConstant's sum-of-halves remainder). Checked
// with llc 22 for Cortex-M4 over every divisor in [-300, 300], 3 * 2^k and
// other factors of 2^32 - 1.
bool backendDividesInline(const llvm::BinaryOperator& op) {
  auto* c = llvm::dyn_cast<llvm::ConstantInt>(op.getOperand(1));
  if (!c || c->isZero()) return false;
  bool is_signed =
      op.getOpcode() == llvm::Instruction::SDiv || op.getOpcode() == llvm::Instruction::SRem;
  const llvm::APInt& d = c->getValue();
  if (is_signed) return d.abs().isPowerOf2();  // abs(INT64_MIN) is 2^63 unsigned
  if (d.isPowerOf2()) return true;
  if (d.getActiveBits() > 32) return false;
  return 0xffffffffu % d.lshr(d.countr_zero()).getZExtValue() == 0;
}

// The division in 32 bits when both operands are known to fit (so the 32-bit
// one cannot overflow: a signed dividend fits in 31 bits); nullptr otherwise.
llvm::Value* narrowDivRem(llvm::IRBuilder<>& b, llvm::BinaryOperator& op,
                          const llvm::DataLayout& dl) {
  llvm::Value* x = op.getOperand(0);
  llvm::Value* y = op.getOperand(1);
  bool is_signed =
      op.getOpcode() == llvm::Instruction::SDiv || op.getOpcode() == llvm::Instruction::SRem;
  if (is_signed) {
    if (llvm::ComputeNumSignBits(x, dl, nullptr, &op) < 34 ||
        llvm::ComputeNumSignBits(y, dl, nullptr, &op) < 33)
      return nullptr;
  } else if (llvm::computeKnownBits(x, dl, nullptr, &op).countMaxActiveBits() > 32 ||
             llvm::computeKnownBits(y, dl, nullptr, &op).countMaxActiveBits() > 32) {
    return nullptr;
  }
  llvm::Value* r = b.CreateBinOp(op.getOpcode(), b.CreateTrunc(x, b.getInt32Ty()),
                                 b.CreateTrunc(y, b.getInt32Ty()));
  return is_signed ? b.CreateSExt(r, op.getType()) : b.CreateZExt(r, op.getType());
}

// An IEEE binary format: its width, significand precision (the implicit bit
// included) and exponent bias.
struct FloatFormat {
  unsigned width, precision, bias;
  explicit FloatFormat(llvm::Type* t)
      : width(t->getPrimitiveSizeInBits()),
        precision(llvm::APFloat::semanticsPrecision(t->getFltSemantics())),
        bias((1u << (width - precision - 1)) - 1) {}
  unsigned exponentMask() const { return (1u << (width - precision)) - 1; }
};

// fptosi/fptoui (and the .sat intrinsics) of f32/f64 `x` to i64, on its
// bits: the significand m (implicit bit set) times 2^t, t = exponent - bias -
// (precision - 1), shifted left or right (truncation toward zero). No float
// instruction: on a Cortex-M4 even an f64 NaN test is a libgcc call.
llvm::Value* emitFloatToI64(llvm::IRBuilder<>& b, llvm::Value* x, bool is_signed, bool saturating) {
  // x is used several times: one value for all of them.
  if (!llvm::isGuaranteedNotToBeUndefOrPoison(x)) x = b.CreateFreeze(x);
  if (!x->getType()->isFloatTy() && !x->getType()->isDoubleTy())
    x = b.CreateFPExt(x, b.getFloatTy());  // half/bfloat: exact
  FloatFormat f(x->getType());
  llvm::IntegerType* it = b.getIntNTy(f.width);
  llvm::IntegerType* i64 = b.getInt64Ty();
  llvm::IntegerType* i32 = b.getInt32Ty();
  llvm::Value* bits = b.CreateBitCast(x, it);
  llvm::Value* negative = b.CreateICmpSLT(bits, llvm::ConstantInt::get(it, 0));
  llvm::Value* e =
      b.CreateAnd(b.CreateZExtOrTrunc(b.CreateLShr(bits, f.precision - 1), i32), f.exponentMask());
  llvm::APInt implicit = llvm::APInt::getOneBitSet(f.width, f.precision - 1);
  llvm::Value* m =
      b.CreateZExtOrTrunc(b.CreateOr(b.CreateAnd(bits, llvm::ConstantInt::get(it, implicit - 1)),
                                     llvm::ConstantInt::get(it, implicit)),
                          i64);
  llvm::Value* t = b.CreateSub(e, b.getInt32(f.bias + f.precision - 1));
  llvm::Value* left = b.CreateShl(m, b.CreateZExt(b.CreateAnd(t, 63), i64));
  // |x| < 1 shifts right by 63 or more: 0 (m < 2^53).
  llvm::Value* right_by =
      b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b.CreateNeg(t), b.getInt32(63));
  llvm::Value* right = b.CreateLShr(m, b.CreateZExt(right_by, i64));
  llvm::Value* magnitude = b.CreateSelect(b.CreateICmpSGE(t, b.getInt32(0)), left, right);
  // |x| >= 2^63 (2^64 unsigned), infinities and NaN.
  llvm::Value* too_big = b.CreateICmpUGE(e, b.getInt32(f.bias + (is_signed ? 63 : 64)));
  llvm::Value* r;
  if (is_signed) {
    r = b.CreateSelect(negative, b.CreateNeg(magnitude), magnitude);
    llvm::Value* min = b.getInt64(std::numeric_limits<int64_t>::min());
    llvm::Value* max = b.getInt64(std::numeric_limits<int64_t>::max());
    r = b.CreateSelect(too_big, saturating ? b.CreateSelect(negative, min, max) : min, r);
  } else {
    r = magnitude;  // -1 < x <= -0 gives 0; x <= -1 is poison (or 0 saturated)
    if (saturating)
      r = b.CreateSelect(negative, b.getInt64(0),
                         b.CreateSelect(too_big, b.getInt64(~uint64_t{0}), r));
  }
  if (!saturating) return r;
  // NaN: above infinity's bits once the sign is cleared.
  llvm::APInt inf = llvm::APInt::getBitsSet(f.width, f.precision - 1, f.width - 1);
  llvm::Value* abs_bits =
      b.CreateAnd(bits, llvm::ConstantInt::get(it, llvm::APInt::getSignedMaxValue(f.width)));
  llvm::Value* is_nan = b.CreateICmpUGT(abs_bits, llvm::ConstantInt::get(it, inf));
  return b.CreateSelect(is_nan, b.getInt64(0), r);
}

// sitofp/uitofp of i64 `v` to f32/f64, rounding to nearest even: |v|
// normalized (leading one at bit 63), its top `precision` bits kept and
// rounded up when the rest is above half, or exactly half and the kept bits
// odd; the exponent field is added, so a carry out of the significand bumps it.
llvm::Value* emitI64ToFloat(llvm::IRBuilder<>& b, llvm::Value* v, bool is_signed,
                            llvm::Type* type) {
  FloatFormat f(type);
  if (!llvm::isGuaranteedNotToBeUndefOrPoison(v)) v = b.CreateFreeze(v);
  llvm::IntegerType* i64 = b.getInt64Ty();
  llvm::Value* zero = b.getInt64(0);
  llvm::Value* negative = is_signed ? b.CreateICmpSLT(v, zero) : b.getFalse();
  llvm::Value* a = is_signed ? b.CreateSelect(negative, b.CreateNeg(v), v) : v;  // |v|, unsigned
  llvm::Value* n = b.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, a, b.getFalse());  // 64 for 0
  llvm::Value* normal = b.CreateShl(a, b.CreateAnd(n, 63));
  llvm::Value* kept = b.CreateLShr(normal, 64 - f.precision);
  llvm::Value* rest = b.CreateShl(normal, f.precision);
  llvm::Value* half = b.getInt64(uint64_t{1} << 63);
  llvm::Value* odd = b.CreateICmpNE(b.CreateAnd(kept, 1), zero);
  llvm::Value* up =
      b.CreateOr(b.CreateICmpUGT(rest, half), b.CreateAnd(b.CreateICmpEQ(rest, half), odd));
  kept = b.CreateAdd(kept, b.CreateZExt(up, i64));
  // The biased exponent is bias + 63 - n; the significand's leading one adds
  // one to the field, so it is stored one less.
  llvm::Value* field = b.CreateSub(b.getInt64(f.bias + 62), n);
  llvm::Value* r = b.CreateAdd(b.CreateShl(field, f.precision - 1), kept);
  if (is_signed) r = b.CreateOr(r, b.CreateShl(b.CreateZExt(negative, i64), f.width - 1));
  r = b.CreateSelect(b.CreateICmpEQ(a, zero), zero, r);
  return b.CreateBitCast(b.CreateZExtOrTrunc(r, b.getIntNTy(f.width)), type);
}

}  // namespace

int inlineLibcallIntrinsics(llvm::Module& module, const llvm::TargetMachine& machine) {
  int rewritten = 0;
  const llvm::DataLayout& dl = module.getDataLayout();
  for (llvm::Function& fn : module) {
    if (fn.isDeclaration()) continue;
    const llvm::TargetLowering* tli = machine.getSubtargetImpl(fn)->getTargetLowering();
    std::vector<llvm::IntrinsicInst*> calls;
    for (llvm::Instruction& inst : llvm::instructions(fn)) {
      auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst);
      if (!call) continue;
      unsigned isd = isdOf(call->getIntrinsicID());
      llvm::Type* elem = call->getType()->getScalarType();
      if (isd == 0 || !elem->isFloatingPointTy()) continue;
      // A vector op the target lacks is split into scalar ones: what matters
      // is whether the element type has it.
      llvm::EVT vt = tli->getValueType(dl, elem);
      if (vt.isSimple() && tli->isOperationLegalOrCustom(isd, vt)) continue;
      calls.push_back(call);
    }
    for (llvm::IntrinsicInst* call : calls) {
      llvm::IRBuilder<> b(call);
      b.setFastMathFlags(llvm::FastMathFlags());  // the rounding trick needs exact arithmetic
      llvm::Intrinsic::ID id = call->getIntrinsicID();
      llvm::Value* v = call->arg_size() == 2
                           ? emitMinMax(b, id, call->getArgOperand(0), call->getArgOperand(1))
                           : emitRounding(b, id, call->getArgOperand(0));
      call->replaceAllUsesWith(v);
      call->eraseFromParent();
      ++rewritten;
    }
    // No legal i64: i64 division and conversions would be libgcc calls.
    if (!tli->isTypeLegal(llvm::MVT::i64))
      rewritten +=
          expandWideIntegerOps(fn, tli->isOperationLegal(llvm::ISD::SDIV, llvm::MVT::i32) &&
                                       tli->isOperationLegal(llvm::ISD::UDIV, llvm::MVT::i32));
  }
  return rewritten;
}

int expandWideIntegerOps(llvm::Function& fn, bool narrow_to_i32) {
  const llvm::DataLayout& dl = fn.getDataLayout();
  std::vector<llvm::Instruction*> found, work;
  for (llvm::Instruction& inst : llvm::instructions(fn))
    if (isWideOp(inst)) found.push_back(&inst);
  for (llvm::Instruction* inst : found) {
    if (inst->getType()->isVectorTy())
      scalarize(inst, work);
    else
      work.push_back(inst);
  }
  int rewritten = 0;
  for (llvm::Instruction* inst : work) {
    if (auto* op = llvm::dyn_cast<llvm::BinaryOperator>(inst); op && isDivRem(op->getOpcode())) {
      if (backendDividesInline(*op)) continue;
      ++rewritten;
      llvm::IRBuilder<> b(op);
      if (llvm::Value* v = narrow_to_i32 ? narrowDivRem(b, *op, dl) : nullptr) {
        op->replaceAllUsesWith(v);
        op->eraseFromParent();
      } else if (op->getOpcode() == llvm::Instruction::SDiv ||
                 op->getOpcode() == llvm::Instruction::UDiv) {
        llvm::expandDivision(op);
      } else {
        llvm::expandRemainder(op);
      }
      continue;
    }
    llvm::IRBuilder<> b(inst);
    llvm::Value* v = nullptr;
    auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(inst);
    switch (inst->getOpcode()) {
      case llvm::Instruction::FPToSI:
      case llvm::Instruction::FPToUI:
        v = emitFloatToI64(b, inst->getOperand(0), inst->getOpcode() == llvm::Instruction::FPToSI,
                           false);
        break;
      case llvm::Instruction::SIToFP:
      case llvm::Instruction::UIToFP:
        v = emitI64ToFloat(b, inst->getOperand(0), inst->getOpcode() == llvm::Instruction::SIToFP,
                           inst->getType());
        break;
      default:
        v = emitFloatToI64(b, call->getArgOperand(0),
                           call->getIntrinsicID() == llvm::Intrinsic::fptosi_sat, true);
        break;
    }
    inst->replaceAllUsesWith(v);
    inst->eraseFromParent();
    ++rewritten;
  }
  return rewritten;
}

}  // namespace nanoc::cpu
