#include "compiler/codegen/cpu/loops.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/float8.h"
#include "compiler/ir/subbyte.h"

namespace nanoc::cpu {

void emitIf(llvm::IRBuilder<>& b, llvm::Value* cond, const std::function<void()>& then,
            const char* name) {
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::LLVMContext& ctx = b.getContext();
  auto* yes = llvm::BasicBlock::Create(ctx, std::string(name) + ".then", fn);
  auto* done = llvm::BasicBlock::Create(ctx, std::string(name) + ".end", fn);
  b.CreateCondBr(cond, yes, done);
  b.SetInsertPoint(yes);
  then();
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

void emitLoop(llvm::IRBuilder<>& b, llvm::Value* begin, llvm::Value* end,
              const std::function<void(llvm::Value* i)>& body, const char* name, LoopHint hint) {
  emitReduction(
      b, begin, end, nullptr,
      [&](llvm::Value* i, llvm::Value*) -> llvm::Value* {
        body(i);
        return nullptr;
      },
      name, hint);
}

std::vector<llvm::Value*> emitCarriedLoop(
    llvm::IRBuilder<>& b, llvm::Value* begin, llvm::Value* end,
    const std::vector<llvm::Value*>& init,
    const std::function<std::vector<llvm::Value*>(llvm::Value* i,
                                                  const std::vector<llvm::Value*>& acc)>& body,
    const char* name, LoopHint hint) {
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::LLVMContext& ctx = b.getContext();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx, std::string(name) + ".header", fn);
  llvm::BasicBlock* loop = llvm::BasicBlock::Create(ctx, std::string(name) + ".body", fn);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, std::string(name) + ".exit", fn);
  b.CreateBr(header);

  b.SetInsertPoint(header);
  llvm::PHINode* iv = b.CreatePHI(b.getInt64Ty(), 2, name);
  iv->addIncoming(begin, pre);
  std::vector<llvm::PHINode*> phis;
  std::vector<llvm::Value*> acc;
  for (llvm::Value* v : init) {
    phis.push_back(b.CreatePHI(v->getType(), 2, std::string(name) + ".acc"));
    phis.back()->addIncoming(v, pre);
    acc.push_back(phis.back());
  }
  b.CreateCondBr(b.CreateICmpSLT(iv, end), loop, exit);

  b.SetInsertPoint(loop);
  std::vector<llvm::Value*> next_acc = body(iv, acc);
  // The body may have created blocks of its own: the back edge leaves from
  // wherever it ended.
  llvm::BasicBlock* latch = b.GetInsertBlock();
  llvm::Value* next = b.CreateAdd(iv, b.getInt64(1), std::string(name) + ".next", true, true);
  iv->addIncoming(next, latch);
  for (size_t k = 0; k < phis.size(); ++k) phis[k]->addIncoming(next_acc[k], latch);
  llvm::BranchInst* back = b.CreateBr(header);
  if (hint != LoopHint::None) {
    llvm::Metadata* property[] = {
        llvm::MDString::get(ctx, hint == LoopHint::FoldTail ? "llvm.loop.vectorize.predicate.enable"
                                                            : "llvm.loop.vectorize.enable"),
        llvm::ConstantAsMetadata::get(hint == LoopHint::FoldTail ? b.getTrue() : b.getFalse())};
    llvm::TempMDTuple self = llvm::MDNode::getTemporary(ctx, {});
    std::vector<llvm::Metadata*> ops = {self.get(), llvm::MDNode::get(ctx, property)};
    if (hint == LoopHint::NoUnroll)
      ops.push_back(llvm::MDNode::get(ctx, {llvm::MDString::get(ctx, "llvm.loop.unroll.disable")}));
    llvm::MDNode* loop_id = llvm::MDNode::getDistinct(ctx, ops);
    loop_id->replaceOperandWith(0, loop_id);
    back->setMetadata(llvm::LLVMContext::MD_loop, loop_id);
  }

  b.SetInsertPoint(exit);
  return acc;
}

llvm::Value* emitReduction(
    llvm::IRBuilder<>& b, llvm::Value* begin, llvm::Value* end, llvm::Value* init,
    const std::function<llvm::Value*(llvm::Value* i, llvm::Value* acc)>& body, const char* name,
    LoopHint hint) {
  std::vector<llvm::Value*> init_values;
  if (init) init_values.push_back(init);
  std::vector<llvm::Value*> out = emitCarriedLoop(
      b, begin, end, init_values,
      [&](llvm::Value* i, const std::vector<llvm::Value*>& acc) -> std::vector<llvm::Value*> {
        llvm::Value* next = body(i, acc.empty() ? nullptr : acc[0]);
        if (acc.empty()) return {};
        return {next};
      },
      name, hint);
  return out.empty() ? nullptr : out[0];
}

llvm::Value* f32Ptr(llvm::IRBuilder<>& b, llvm::Value* base, llvm::Value* index) {
  return b.CreateInBoundsGEP(b.getFloatTy(), base, index);
}

llvm::Value* loadF32(llvm::IRBuilder<>& b, llvm::Value* base, llvm::Value* index) {
  return b.CreateLoad(b.getFloatTy(), f32Ptr(b, base, index));
}

void storeF32(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* base, llvm::Value* index) {
  b.CreateStore(value, f32Ptr(b, base, index));
}

WindowSource emitWindowSource(llvm::IRBuilder<>& b, llvm::Value* pos, llvm::Value* k, int64_t pad,
                              int64_t dilation, int64_t stride, int64_t extent) {
  llvm::Value* t =
      b.CreateSub(b.CreateAdd(pos, b.getInt64(pad)), b.CreateMul(k, b.getInt64(dilation)));
  llvm::Value* ok = b.CreateICmpSGE(t, b.getInt64(0));
  llvm::Value* l = b.CreateSelect(ok, t, b.getInt64(0));
  if (stride != 1) {
    ok = b.CreateAnd(ok, b.CreateICmpEQ(b.CreateURem(l, b.getInt64(stride)), b.getInt64(0)));
    l = b.CreateUDiv(l, b.getInt64(stride));
  }
  return {l, b.CreateAnd(ok, b.CreateICmpSLT(l, b.getInt64(extent)))};
}

void prefetchF32(llvm::IRBuilder<>& b, llvm::Value* base, llvm::Value* index, bool write,
                 int locality) {
  b.CreateIntrinsic(
      llvm::Intrinsic::prefetch, {base->getType()},
      {f32Ptr(b, base, index), b.getInt32(write ? 1 : 0), b.getInt32(locality), b.getInt32(1)});
}

llvm::Type* storageType(llvm::LLVMContext& ctx, DType dtype) {
  switch (dtype) {
    case DType::F32:
      return llvm::Type::getFloatTy(ctx);
    case DType::F16:
      return llvm::Type::getHalfTy(ctx);
    case DType::BF16:
      return llvm::Type::getBFloatTy(ctx);
    case DType::F64:
      return llvm::Type::getDoubleTy(ctx);
    case DType::I8:
    case DType::U8:
    case DType::Bool:
    case DType::F8E4M3FN:
    case DType::F8E4M3FNUZ:
    case DType::F8E5M2:
    case DType::F8E5M2FNUZ:
    case DType::I4:
    case DType::U4:
    case DType::I2:
    case DType::U2:
    case DType::F4E2M1:
      return llvm::Type::getInt8Ty(ctx);
    case DType::I16:
    case DType::U16:
      return llvm::Type::getInt16Ty(ctx);
    case DType::I32:
    case DType::U32:
      return llvm::Type::getInt32Ty(ctx);
    case DType::I64:
    case DType::U64:
      return llvm::Type::getInt64Ty(ctx);
  }
  return llvm::Type::getInt8Ty(ctx);
}

llvm::Value* elementPtr(llvm::IRBuilder<>& b, DType dtype, llvm::Value* base, llvm::Value* index) {
  return b.CreateInBoundsGEP(storageType(b.getContext(), dtype), base, index);
}

llvm::Value* loadElement(llvm::IRBuilder<>& b, DType dtype, llvm::Value* base, llvm::Value* index) {
  return b.CreateLoad(storageType(b.getContext(), dtype), elementPtr(b, dtype, base, index));
}

void storeElement(llvm::IRBuilder<>& b, DType dtype, llvm::Value* value, llvm::Value* base,
                  llvm::Value* index) {
  b.CreateStore(value, elementPtr(b, dtype, base, index));
}

bool isFloat(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16 ||
         dtype == DType::F64 || isFloat8(dtype) || dtype == DType::F4E2M1;
}

bool isSigned(DType dtype) {
  return dtype == DType::I8 || dtype == DType::I16 || dtype == DType::I32 || dtype == DType::I64 ||
         dtype == DType::I4 || dtype == DType::I2;
}

llvm::Type* computeType(llvm::LLVMContext& ctx, DType dtype) {
  if (dtype == DType::F16 || dtype == DType::BF16 || isFloat8(dtype) || dtype == DType::F4E2M1)
    return llvm::Type::getFloatTy(ctx);
  return storageType(ctx, dtype);
}

namespace {

// A float8 or float4 code's value: a lookup in a 256- or 16-entry table (a
// float4 byte's high bits masked off), one internal constant per format and
// module.
llvm::Value* float8ToF32(llvm::IRBuilder<>& b, DType dtype, llvm::Value* code) {
  llvm::Module& module = *b.GetInsertBlock()->getModule();
  std::string name = "nanoc." + std::string(dtypeName(dtype)) + ".values";
  llvm::GlobalVariable* table = module.getGlobalVariable(name, true);
  const bool f4 = dtype == DType::F4E2M1;
  const int entries = f4 ? 16 : 256;
  llvm::Type* array = llvm::ArrayType::get(b.getFloatTy(), static_cast<uint64_t>(entries));
  if (f4) code = b.CreateAnd(code, b.getInt8(0xf));
  if (!table) {
    std::vector<llvm::Constant*> values;
    for (int c = 0; c < entries; ++c) {
      const auto byte = static_cast<uint8_t>(c);
      const double v = f4 ? float4e2m1ToDouble(byte) : float8ToDouble(byte, dtype);
      values.push_back(llvm::ConstantFP::get(b.getFloatTy(), static_cast<float>(v)));
    }
    table = new llvm::GlobalVariable(
        module, array, true, llvm::GlobalValue::InternalLinkage,
        llvm::ConstantArray::get(llvm::cast<llvm::ArrayType>(array), values), name);
    table->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  }
  llvm::Value* index = b.CreateZExt(code, b.getInt64Ty());
  return b.CreateLoad(b.getFloatTy(), b.CreateInBoundsGEP(b.getFloatTy(), table, index));
}

// doubleToFloat8 (compiler/ir/float8.cc) in IR, on an f32 value.
llvm::Value* f32ToFloat8(llvm::IRBuilder<>& b, DType dtype, llvm::Value* x, bool saturate) {
  const Float8Format& f = float8Format(dtype);
  llvm::Type* i32 = b.getInt32Ty();
  auto ki = [&](int64_t v) { return llvm::ConstantInt::get(i32, static_cast<uint64_t>(v), true); };
  auto kf = [&](double v) { return llvm::ConstantFP::get(b.getFloatTy(), v); };
  llvm::Value* bits = b.CreateBitCast(x, i32);
  llvm::Value* sign = b.CreateAnd(b.CreateLShr(bits, 24), ki(0x80));
  llvm::Value* a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  // exp = max(floor(log2 a), 1 - bias), read from the exponent field (f32
  // subnormals are far below every float8 and take the clamp).
  llvm::Value* abits = b.CreateBitCast(a, i32);
  llvm::Value* exp = b.CreateSub(b.CreateLShr(abits, 23), ki(127));
  exp = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, exp, ki(1 - f.bias));
  // q = roundeven(a * 2^(man_bits - exp)), exact scaling by a power of two.
  llvm::Value* scale =
      b.CreateBitCast(b.CreateShl(b.CreateSub(ki(127 + f.man_bits), exp), 23), b.getFloatTy());
  llvm::Value* q = b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, b.CreateFMul(a, scale));
  llvm::Value* unscale =
      b.CreateBitCast(b.CreateShl(b.CreateAdd(exp, ki(127 - f.man_bits)), 23), b.getFloatTy());
  llvm::Value* overflow = b.CreateFCmpUGT(b.CreateFMul(q, unscale), kf(f.max));  // inf too
  llvm::Value* code = b.CreateAdd(b.CreateShl(b.CreateAdd(exp, ki(f.bias - 1)), f.man_bits),
                                  b.CreateFPToSI(b.CreateSelect(overflow, kf(0), q), i32));
  llvm::Value* over_code = saturate ? ki(f.max_code) : (f.has_inf ? ki(0x7c) : ki(f.nan_code));
  bool over_signed = saturate || f.has_inf;
  code = b.CreateSelect(overflow, over_code, code);
  llvm::Value* signed_code = b.CreateOr(code, sign);
  if (f.fnuz) signed_code = b.CreateSelect(b.CreateICmpEQ(code, ki(0)), ki(0), signed_code);
  if (!over_signed) signed_code = b.CreateSelect(overflow, code, signed_code);
  signed_code = b.CreateSelect(b.CreateFCmpUNO(x, x), ki(f.nan_code), signed_code);
  return b.CreateTrunc(signed_code, b.getInt8Ty());
}

// doubleToFloat4e2m1 (compiler/ir/subbyte.cc) in IR, on an f32 value: the
// code counts the midpoints |x| lies above (ties to the even code).
llvm::Value* f32ToFloat4(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* i8 = b.getInt8Ty();
  llvm::Value* a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value* code = b.getInt8(0);
  const std::pair<double, bool> midpoints[] = {{0.25, false}, {0.75, true}, {1.25, false},
                                               {1.75, true},  {2.5, false}, {3.5, true},
                                               {5.0, false}};
  for (auto [m, up] : midpoints) {
    llvm::Value* k = llvm::ConstantFP::get(x->getType(), m);
    code = b.CreateAdd(code, b.CreateZExt(up ? b.CreateFCmpOGE(a, k) : b.CreateFCmpOGT(a, k), i8));
  }
  // The sign bit, flipped for a NaN (which the comparisons count as 0).
  llvm::Value* sign = b.CreateTrunc(
      b.CreateAnd(b.CreateLShr(b.CreateBitCast(x, b.getInt32Ty()), 28), b.getInt32(8)), i8);
  sign = b.CreateSelect(b.CreateFCmpUNO(x, x), b.CreateXor(sign, b.getInt8(8)), sign);
  return b.CreateOr(code, sign);
}

// A sub-byte int's byte as its value in i8 (sign-extended from the low bits
// for I4 and I2, masked for U4 and U2), and an i8 value as its byte.
llvm::Value* subByteIntToI8(llvm::IRBuilder<>& b, DType dtype, llvm::Value* byte) {
  const int bits = subByteBits(dtype);
  if (dtype == DType::U4 || dtype == DType::U2)
    return b.CreateAnd(byte, b.getInt8(static_cast<uint8_t>((1 << bits) - 1)));
  const auto shift = static_cast<uint64_t>(8 - bits);
  return b.CreateAShr(b.CreateShl(byte, shift), shift);
}

llvm::Value* i8ToSubByteInt(llvm::IRBuilder<>& b, DType dtype, llvm::Value* value) {
  return b.CreateAnd(value, b.getInt8(static_cast<uint8_t>((1 << subByteBits(dtype)) - 1)));
}

// f32 -> bf16 bits, rounding to nearest even, NaN kept quiet: integer
// arithmetic on the bits, where fptrunc to bfloat is a library call on most
// targets.
llvm::Value* f32ToBf16Bits(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* i32 = b.getInt32Ty();
  llvm::Value* bits = b.CreateBitCast(x, i32);
  llvm::Value* lsb = b.CreateAnd(b.CreateLShr(bits, 16), llvm::ConstantInt::get(i32, 1));
  llvm::Value* rounded =
      b.CreateLShr(b.CreateAdd(bits, b.CreateAdd(lsb, llvm::ConstantInt::get(i32, 0x7fff))), 16);
  llvm::Value* nan = b.CreateOr(b.CreateLShr(bits, 16), llvm::ConstantInt::get(i32, 0x40));
  llvm::Value* r = b.CreateSelect(b.CreateFCmpUNO(x, x), nan, rounded);
  return b.CreateTrunc(r, b.getInt16Ty());
}

}  // namespace

llvm::Value* loadCompute(llvm::IRBuilder<>& b, DType dtype, llvm::Value* base, llvm::Value* index) {
  llvm::Value* v = loadElement(b, dtype, base, index);
  if (isFloat8(dtype) || dtype == DType::F4E2M1) return float8ToF32(b, dtype, v);
  if (isSubByteInt(dtype)) return subByteIntToI8(b, dtype, v);
  if (dtype == DType::BF16) {
    // bf16 is the top half of an f32: a shift, never a library call.
    llvm::Value* bits =
        b.CreateShl(b.CreateZExt(b.CreateBitCast(v, b.getInt16Ty()), b.getInt32Ty()), 16);
    return b.CreateBitCast(bits, b.getFloatTy());
  }
  if (dtype == DType::F16) return b.CreateFPExt(v, b.getFloatTy());
  return v;
}

void storeCompute(llvm::IRBuilder<>& b, DType dtype, llvm::Value* value, llvm::Value* base,
                  llvm::Value* index, bool saturate) {
  llvm::Type* storage = storageType(b.getContext(), dtype);
  if (isFloat8(dtype))
    value = f32ToFloat8(b, dtype, value, saturate);
  else if (dtype == DType::F4E2M1)
    value = f32ToFloat4(b, value);
  else if (isSubByteInt(dtype))
    value = i8ToSubByteInt(b, dtype, value);
  else if (dtype == DType::BF16)
    value = b.CreateBitCast(f32ToBf16Bits(b, value), storage);
  else if (dtype == DType::F16)
    value = b.CreateFPTrunc(value, storage);
  else if (dtype == DType::Bool && value->getType()->isIntegerTy(1))
    value = b.CreateZExt(value, storage);
  storeElement(b, dtype, value, base, index);
}

llvm::Value* convertCompute(llvm::IRBuilder<>& b, llvm::Value* value, DType from, DType to) {
  llvm::LLVMContext& ctx = b.getContext();
  llvm::Type* dst = computeType(ctx, to);
  llvm::Type* src = value->getType();
  if (to == DType::Bool) {
    llvm::Value* nz = src->isFloatingPointTy()
                          ? b.CreateFCmpUNE(value, llvm::ConstantFP::get(src, 0.0))
                          : b.CreateICmpNE(value, llvm::ConstantInt::get(src, 0));
    return b.CreateZExt(nz, dst);
  }
  if (isSubByteInt(to)) {
    // Float -> int truncates toward zero (saturating to i64, NaN -> 0); then
    // the value wraps to the type's width, as ONNX's integer narrowing (and
    // ml_dtypes' float -> int4) does.
    if (src->isFloatingPointTy())
      value = b.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {b.getInt64Ty(), src}, {value});
    value = b.CreateIntCast(value, dst, isSigned(from));
    return subByteIntToI8(b, to, value);
  }
  if (src == dst) return value;
  if (src->isFloatingPointTy() && dst->isFloatingPointTy())
    return src->getPrimitiveSizeInBits() < dst->getPrimitiveSizeInBits()
               ? b.CreateFPExt(value, dst)
               : b.CreateFPTrunc(value, dst);
  if (src->isFloatingPointTy())
    return b.CreateIntrinsic(
        isSigned(to) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat, {dst, src},
        {value});
  if (dst->isFloatingPointTy())
    return isSigned(from) ? b.CreateSIToFP(value, dst) : b.CreateUIToFP(value, dst);
  return b.CreateIntCast(value, dst, isSigned(from));
}

}  // namespace nanoc::cpu
