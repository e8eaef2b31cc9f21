// expandWideIntegerOps against the native instructions: each case is built
// twice in one module, once as is (ref_*, compiled natively for this machine)
// and once rewritten by the expansion as on a 32-bit target (exp_*), both
// JIT-compiled with ORC and compared bit for bit over edge and random values
// (every divisor sign and bit length, INT64_MIN / -1 excluded; every float
// exponent, ties of the i64 -> float rounding, NaN and infinities where the
// result is defined). Then a Cortex-M4 object of the same cases calls no
// libgcc helper.
#include "compiler/codegen/cpu/inline_libcalls.h"

#include <gtest/gtest.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/target.h"

namespace nanoc::cpu {
namespace {

using Builder = llvm::IRBuilder<>;

enum class Kind { I64, F32, F64 };

llvm::Type* typeOf(llvm::LLVMContext& ctx, Kind k) {
  return k == Kind::I64   ? llvm::Type::getInt64Ty(ctx)
         : k == Kind::F32 ? llvm::Type::getFloatTy(ctx)
                          : llvm::Type::getDoubleTy(ctx);
}

// A case: `ret name(arg a, i64 b)` (b unused by the unary ones).
struct Case {
  std::string name;
  Kind arg, ret;
  std::function<llvm::Value*(Builder&, llvm::Value* a, llvm::Value* b)> emit;
};

llvm::Value* intrinsic(Builder& b, llvm::Intrinsic::ID id, llvm::Value* x) {
  return b.CreateIntrinsic(id, {b.getInt64Ty(), x->getType()}, {x});
}

llvm::Value* k(Builder& b, int64_t v) { return b.getInt64(v); }

std::vector<Case> cases() {
  using B = Builder;
  using V = llvm::Value*;
  std::vector<Case> c = {
      {"sdiv", Kind::I64, Kind::I64, [](B& b, V x, V y) { return b.CreateSDiv(x, y); }},
      {"udiv", Kind::I64, Kind::I64, [](B& b, V x, V y) { return b.CreateUDiv(x, y); }},
      {"srem", Kind::I64, Kind::I64, [](B& b, V x, V y) { return b.CreateSRem(x, y); }},
      {"urem", Kind::I64, Kind::I64, [](B& b, V x, V y) { return b.CreateURem(x, y); }},
      // Operands known to fit in 32 bits (31 for a signed dividend): i32 ones.
      {"udiv_narrow", Kind::I64, Kind::I64,
       [](B& b, V x, V y) {
         return b.CreateUDiv(b.CreateAnd(x, k(b, 0xffffffff)), b.CreateAnd(y, k(b, 0xffffffff)));
       }},
      {"srem_narrow", Kind::I64, Kind::I64,
       [](B& b, V x, V y) { return b.CreateSRem(b.CreateAShr(x, 33), b.CreateAShr(y, 32)); }},
      // Constant divisors: 7, 100 and signed 7, -3 are expanded; 8, -8 and 3,
      // 96 (a power of two times a factor of 2^32 - 1) left to the backend.
      {"udiv7", Kind::I64, Kind::I64, [](B& b, V x, V) { return b.CreateUDiv(x, k(b, 7)); }},
      {"urem100", Kind::I64, Kind::I64, [](B& b, V x, V) { return b.CreateURem(x, k(b, 100)); }},
      {"sdiv7", Kind::I64, Kind::I64, [](B& b, V x, V) { return b.CreateSDiv(x, k(b, 7)); }},
      {"srem_m3", Kind::I64, Kind::I64, [](B& b, V x, V) { return b.CreateSRem(x, k(b, -3)); }},
      {"sdiv8", Kind::I64, Kind::I64, [](B& b, V x, V) { return b.CreateSDiv(x, k(b, 8)); }},
      {"srem_m8", Kind::I64, Kind::I64, [](B& b, V x, V) { return b.CreateSRem(x, k(b, -8)); }},
      {"udiv3", Kind::I64, Kind::I64, [](B& b, V x, V) { return b.CreateUDiv(x, k(b, 3)); }},
      {"urem96", Kind::I64, Kind::I64, [](B& b, V x, V) { return b.CreateURem(x, k(b, 96)); }},
      // <2 x i64>: scalarized, then expanded. x / y + (y | 1) / x's lanes.
      {"udiv_v2", Kind::I64, Kind::I64,
       [](B& b, V x, V y) {
         auto* vt = llvm::FixedVectorType::get(b.getInt64Ty(), 2);
         V n = b.CreateInsertElement(
             b.CreateInsertElement(llvm::PoisonValue::get(vt), x, uint64_t{0}), y, uint64_t{1});
         V d = b.CreateInsertElement(
             b.CreateInsertElement(llvm::PoisonValue::get(vt), y, uint64_t{0}),
             b.CreateOr(x, k(b, 1)), uint64_t{1});
         V q = b.CreateUDiv(n, d);
         return b.CreateAdd(b.CreateExtractElement(q, uint64_t{0}),
                            b.CreateMul(b.CreateExtractElement(q, uint64_t{1}), k(b, 3)));
       }},
  };
  for (Kind f : {Kind::F32, Kind::F64}) {
    std::string t = f == Kind::F32 ? "f32" : "f64";
    c.push_back({"fptosi_" + t, f, Kind::I64,
                 [](B& b, V x, V) { return b.CreateFPToSI(x, b.getInt64Ty()); }});
    c.push_back({"fptoui_" + t, f, Kind::I64,
                 [](B& b, V x, V) { return b.CreateFPToUI(x, b.getInt64Ty()); }});
    c.push_back({"fptosi_sat_" + t, f, Kind::I64,
                 [](B& b, V x, V) { return intrinsic(b, llvm::Intrinsic::fptosi_sat, x); }});
    c.push_back({"fptoui_sat_" + t, f, Kind::I64,
                 [](B& b, V x, V) { return intrinsic(b, llvm::Intrinsic::fptoui_sat, x); }});
    c.push_back({"sitofp_" + t, Kind::I64, f,
                 [f](B& b, V x, V) { return b.CreateSIToFP(x, typeOf(b.getContext(), f)); }});
    c.push_back({"uitofp_" + t, Kind::I64, f,
                 [f](B& b, V x, V) { return b.CreateUIToFP(x, typeOf(b.getContext(), f)); }});
  }
  return c;
}

// Every case as `prefix + name`, externally visible.
void addCases(llvm::Module& module, const std::string& prefix,
              std::vector<llvm::Function*>* made = nullptr) {
  llvm::LLVMContext& ctx = module.getContext();
  for (const Case& c : cases()) {
    auto* type = llvm::FunctionType::get(typeOf(ctx, c.ret),
                                         {typeOf(ctx, c.arg), llvm::Type::getInt64Ty(ctx)}, false);
    auto* fn =
        llvm::Function::Create(type, llvm::Function::ExternalLinkage, prefix + c.name, module);
    Builder b(llvm::BasicBlock::Create(ctx, "entry", fn));
    b.CreateRet(c.emit(b, fn->getArg(0), fn->getArg(1)));
    if (made) made->push_back(fn);
  }
}

// What is left that a 32-bit target would call libgcc for.
std::vector<std::string> wideOpsLeft(llvm::Function& fn) {
  std::vector<std::string> left;
  for (llvm::Instruction& inst : llvm::instructions(fn)) {
    bool i64 = inst.getType()->getScalarType()->isIntegerTy(64);
    bool from_i64 = inst.getNumOperands() > 0 &&
                    inst.getOperand(0)->getType()->getScalarType()->isIntegerTy(64);
    bool wide = false;
    switch (inst.getOpcode()) {
      case llvm::Instruction::SDiv:
      case llvm::Instruction::UDiv:
      case llvm::Instruction::SRem:
      case llvm::Instruction::URem:
        wide = i64 && !llvm::isa<llvm::ConstantInt>(inst.getOperand(1));
        break;
      case llvm::Instruction::FPToSI:
      case llvm::Instruction::FPToUI:
        wide = i64;
        break;
      case llvm::Instruction::SIToFP:
      case llvm::Instruction::UIToFP:
        wide = from_i64;
        break;
      case llvm::Instruction::Call:
        wide = llvm::isa<llvm::IntrinsicInst>(inst) &&
               llvm::StringRef(llvm::cast<llvm::CallBase>(inst).getCalledFunction()->getName())
                   .starts_with("llvm.fpto");
        break;
      default:
        break;
    }
    if (wide) {
      std::string s;
      llvm::raw_string_ostream os(s);
      inst.print(os);
      left.push_back(s);
    }
  }
  return left;
}

// ref_* and exp_* of every case, JIT-compiled for this machine.
class Compiled {
 public:
  Compiled() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto ctx = std::make_unique<llvm::LLVMContext>();
    auto module = std::make_unique<llvm::Module>("wide_ops", *ctx);
    addCases(*module, "ref_");
    std::vector<llvm::Function*> expanded;
    addCases(*module, "exp_", &expanded);
    for (llvm::Function* fn : expanded) {
      expandWideIntegerOps(*fn);
      for (const std::string& s : wideOpsLeft(*fn))
        ADD_FAILURE() << fn->getName().str() << " keeps " << s;
    }
    std::string errors;
    llvm::raw_string_ostream es(errors);
    EXPECT_FALSE(llvm::verifyModule(*module, &es)) << errors;
    auto jit = llvm::orc::LLJITBuilder().create();
    EXPECT_TRUE(static_cast<bool>(jit));
    jit_ = std::move(*jit);
    module->setDataLayout(jit_->getDataLayout());
    llvm::cantFail(
        jit_->addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(ctx))));
  }

  template <typename F>
  F* get(const std::string& name) {
    return llvm::cantFail(jit_->lookup(name)).toPtr<F*>();
  }

 private:
  std::unique_ptr<llvm::orc::LLJIT> jit_;
};

Compiled& compiled() {
  static Compiled c;
  return c;
}

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Edge integers: 0, +-1, small ones, +-2^k and +-2^k +- 1 for every k, the
// extremes.
std::vector<int64_t> edgeIntegers() {
  std::vector<int64_t> v = {0, 1, -1, 2, -2, 3, -3, 7, -7, 10, 100, -100, kMin, kMax, kMin + 1};
  for (int e = 1; e < 64; ++e) {
    uint64_t p = uint64_t{1} << e;
    for (uint64_t d : {p - 1, p, p + 1})
      for (uint64_t s : {d, uint64_t{0} - d}) v.push_back(static_cast<int64_t>(s));
  }
  return v;
}

// Random integers of every bit length and sign.
int64_t randomInteger(std::mt19937_64& rng) {
  uint64_t r = rng() >> (rng() % 64);
  return static_cast<int64_t>(rng() % 2 ? r : uint64_t{0} - r);
}

TEST(InlineLibcallsTest, DivisionMatchesNative) {
  using Fn = int64_t(int64_t, int64_t);
  std::vector<int64_t> edges = edgeIntegers();
  std::mt19937_64 rng(13);
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int64_t a : edges)
    for (int64_t b : edges) pairs.emplace_back(a, b);
  for (int i = 0; i < 300000; ++i) pairs.emplace_back(randomInteger(rng), randomInteger(rng));
  for (int i = 0; i < 20000; ++i)
    pairs.emplace_back(randomInteger(rng), edges[rng() % edges.size()]);
  for (const Case& c : cases()) {
    if (c.arg != Kind::I64 || c.ret != Kind::I64) continue;
    Fn* ref = compiled().get<Fn>("ref_" + c.name);
    Fn* exp = compiled().get<Fn>("exp_" + c.name);
    int failures = 0;
    for (auto [a, b] : pairs) {
      // Skip what traps natively: a zero divisor and INT64_MIN / -1.
      bool is_signed = c.name[0] == 's';
      if (c.name == "sdiv" || c.name == "srem" || c.name == "udiv" || c.name == "urem") {
        if (b == 0 || (is_signed && a == kMin && b == -1)) continue;
      } else if (c.name == "udiv_narrow") {
        if ((b & 0xffffffff) == 0) continue;
      } else if (c.name == "srem_narrow") {
        if ((b >> 32) == 0) continue;
      }
      if (c.name == "udiv_v2" && b == 0) continue;
      int64_t want = ref(a, b), got = exp(a, b);
      if (want != got && ++failures <= 5)
        ADD_FAILURE() << c.name << "(" << a << ", " << b << "): native " << want << ", inline "
                      << got;
    }
  }
}

// f32/f64 bit patterns: every exponent with edge and random significands,
// and random patterns.
template <typename F, typename U>
std::vector<F> edgeAndRandomFloats(std::mt19937_64& rng, int count) {
  constexpr int kBits = sizeof(F) * 8;
  constexpr int kMant = std::numeric_limits<F>::digits - 1;
  constexpr U kMantMask = (U{1} << kMant) - 1;
  std::vector<F> v;
  for (U e = 0; e < (U{1} << (kBits - 1 - kMant)); ++e)
    for (U m : {U{0}, U{1}, U{1} << (kMant - 1), kMantMask, static_cast<U>(rng()) & kMantMask,
                static_cast<U>(rng()) & kMantMask})
      for (U s : {U{0}, U{1}})
        v.push_back(std::bit_cast<F>(static_cast<U>((s << (kBits - 1)) | (e << kMant) | m)));
  for (F x : {F(0.5), F(1.5), F(2.5), F(-0.5), F(-1.5), F(0.99999), F(-0.99999), F(-1)})
    v.push_back(x);
  for (int i = 0; i < count; ++i) v.push_back(std::bit_cast<F>(static_cast<U>(rng())));
  return v;
}

template <typename F>
void checkFloatToInt(const std::vector<F>& inputs, const std::string& t) {
  using Fn = int64_t(F, int64_t);
  for (std::string op : {"fptosi_", "fptoui_", "fptosi_sat_", "fptoui_sat_"}) {
    Fn* ref = compiled().get<Fn>("ref_" + op + t);
    Fn* exp = compiled().get<Fn>("exp_" + op + t);
    bool sat = op.find("sat") != std::string::npos, is_signed = op[4] == 's';
    int failures = 0, compared = 0;
    for (F x : inputs) {
      // Without .sat, only where the result is defined (LLVM: poison).
      if (!sat && !(is_signed ? (x >= F(-0x1p63) && x < F(0x1p63)) : (x > F(-1) && x < F(0x1p64))))
        continue;
      ++compared;
      int64_t want = ref(x, 0), got = exp(x, 0);
      if (want != got && ++failures <= 5)
        ADD_FAILURE() << op << t << "(" << x << " = 0x" << std::hex
                      << std::bit_cast<std::conditional_t<sizeof(F) == 4, uint32_t, uint64_t>>(x)
                      << std::dec << "): native " << want << ", inline " << got;
    }
    EXPECT_GT(compared, 1000) << op << t;
  }
}

TEST(InlineLibcallsTest, FloatToInt64MatchesNative) {
  std::mt19937_64 rng(14);
  checkFloatToInt(edgeAndRandomFloats<float, uint32_t>(rng, 400000), "f32");
  checkFloatToInt(edgeAndRandomFloats<double, uint64_t>(rng, 400000), "f64");
}

// i64s around the rounding of an f32/f64 significand: odd and even kept bits,
// the dropped bits below, at and above half, at every shift; plus the edges and
// random ones.
std::vector<int64_t> roundingIntegers(std::mt19937_64& rng) {
  std::vector<int64_t> v = edgeIntegers();
  for (int precision : {24, 53})
    for (int drop = 1; precision + drop <= 64; ++drop) {
      uint64_t half = uint64_t{1} << (drop - 1);
      for (int i = 0; i < 8; ++i) {
        uint64_t kept =
            (uint64_t{1} << (precision - 1)) | (rng() & ((uint64_t{1} << (precision - 1)) - 1));
        if (i == 0) kept = (uint64_t{1} << precision) - 1;  // carries out when rounded up
        for (uint64_t low : {uint64_t{0}, half - 1, half, half + 1, 2 * half - 1}) {
          uint64_t x = (kept << drop) | (low & (2 * half - 1));
          v.push_back(static_cast<int64_t>(x));
          v.push_back(static_cast<int64_t>(uint64_t{0} - x));
        }
      }
    }
  for (int i = 0; i < 400000; ++i) v.push_back(randomInteger(rng));
  return v;
}

template <typename F>
void checkIntToFloat(const std::vector<int64_t>& inputs, const std::string& t) {
  using Fn = F(int64_t, int64_t);
  using U = std::conditional_t<sizeof(F) == 4, uint32_t, uint64_t>;
  for (std::string op : {"sitofp_", "uitofp_"}) {
    Fn* ref = compiled().get<Fn>("ref_" + op + t);
    Fn* exp = compiled().get<Fn>("exp_" + op + t);
    int failures = 0;
    for (int64_t x : inputs) {
      U want = std::bit_cast<U>(ref(x, 0)), got = std::bit_cast<U>(exp(x, 0));
      if (want != got && ++failures <= 5)
        ADD_FAILURE() << op << t << "(" << x << "): native 0x" << std::hex << want << ", inline 0x"
                      << got;
    }
  }
}

TEST(InlineLibcallsTest, Int64ToFloatMatchesNative) {
  std::mt19937_64 rng(15);
  std::vector<int64_t> inputs = roundingIntegers(rng);
  checkIntToFloat<float>(inputs, "f32");
  checkIntToFloat<double>(inputs, "f64");
}

// For a Cortex-M4 (no legal i64) the O3 pipeline rewrites them all, and the
// object calls no __aeabi_ helper.
TEST(InlineLibcallsTest, CortexM4CallsNoHelper) {
  CpuTarget m4 = makeTarget("thumbv7em-none-eabihf", "cortex-m4", "");
  std::unique_ptr<llvm::TargetMachine> machine = createTargetMachine(m4);
  llvm::LLVMContext ctx;
  llvm::Module module("m4", ctx);
  addCases(module, "m4_");
  optimizeModule(module, *machine);
  for (llvm::Function& fn : module)
    if (!fn.isDeclaration())
      for (const std::string& s : wideOpsLeft(fn))
        ADD_FAILURE() << fn.getName().str() << " keeps " << s;
  std::string asm_text = emitAssembly(module, *machine);
  EXPECT_EQ(asm_text.find("__aeabi_"), std::string::npos) << asm_text;
  EXPECT_EQ(asm_text.find("\tbl\t"), std::string::npos) << asm_text;  // no call at all
  EXPECT_EQ(asm_text.find("\tblx\t"), std::string::npos) << asm_text;
  // The operands known to fit in 32 bits use the M4's divide instructions.
  EXPECT_NE(asm_text.find("\tudiv\t"), std::string::npos) << asm_text;
  EXPECT_NE(asm_text.find("\tsdiv\t"), std::string::npos) << asm_text;
}

}  // namespace
}  // namespace nanoc::cpu
