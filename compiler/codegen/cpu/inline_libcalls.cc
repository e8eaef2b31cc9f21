#include "compiler/codegen/cpu/inline_libcalls.h"

#include <llvm/CodeGen/ISDOpcodes.h>
#include <llvm/CodeGen/TargetLowering.h>
#include <llvm/CodeGen/TargetSubtargetInfo.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <cmath>
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
  }
  return rewritten;
}

}  // namespace nanoc::cpu
