// The GPU kernels' numerics without a GPU: each case of gpu_test_cases.h
// (those under 16 MiB) emitted as for NVPTX, run by the SIMT emulator
// (testing/simt_emulator.h: one fiber per GPU thread, barriers and warp
// shuffles emulated) on random inputs, and compared with its op's reference
// by the CPU lowering tests' tolerances. Also checks that every kernel
// writes every output element (outputs start as NaN bytes).
#include <gtest/gtest.h>
#include <llvm/IR/LLVMContext.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/kernel_test_util.h"
#include "compiler/codegen/gpu/gpu_ir.h"
#include "compiler/codegen/gpu/gpu_lowering.h"
#include "compiler/codegen/gpu/gpu_test_cases.h"
#include "compiler/codegen/gpu/testing/simt_emulator.h"
#include "compiler/ir/op_registry.h"
#include "compiler/passes/gpu_placement.h"

namespace nanoc::gpu {
namespace {

using cpu::testing::AlignedBuffer;
using testing::KernelCase;

constexpr uint64_t kMaxCaseBytes = 16u << 20;

uint64_t caseBytes(const Node& node) {
  uint64_t bytes = 0;
  for (const Value* v : node.inputs) bytes += v ? v->type.bytes() : 0;
  for (const Value* v : node.outputs) bytes += v->type.bytes();
  return bytes;
}

// normwise > 0: each f32 output is compared normwise, ||got - want||_2 <=
// normwise * ||want||_2 (the tensor-core modes), not elementwise.
// Returns the largest normwise error seen (0 unless normwise > 0).
double expectCasesMatchReference(const std::vector<KernelCase>& cases, uint64_t seed,
                                 double normwise = 0) {
  double worst = 0;
  auto ctx = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> module = createGpuModule("simt", *ctx);
  std::vector<size_t> run;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Node& node = *cases[i].graph->node;
    if (caseBytes(node) > kMaxCaseBytes || !hasGpuLowering(node)) continue;
    emitGpuKernel(node, *module, "k" + std::to_string(i));
    run.push_back(i);
  }
  simt::Emulator simt(*module);
  std::mt19937_64 rng(seed);
  for (size_t i : run) {
    const Node& node = *cases[i].graph->node;
    const std::string& what = cases[i].label;
    std::vector<AlignedBuffer> inputs, got, want;
    std::vector<const void*> ref_in;
    std::vector<void*> ref_out, buffers;
    for (const Value* v : node.inputs) {
      if (!v) {
        ref_in.push_back(nullptr);
        continue;
      }
      inputs.emplace_back(v->type.bytes());
      cpu::testing::fillRandom(inputs.back(), v->type, rng, cases[i].lo, cases[i].hi);
      ref_in.push_back(inputs.back().data());
      buffers.push_back(inputs.back().data());
    }
    for (const Value* v : node.outputs) {
      got.emplace_back(v->type.bytes());
      want.emplace_back(v->type.bytes());
      std::memset(got.back().data(), 0xff, got.back().size());
      ref_out.push_back(want.back().data());
      buffers.push_back(got.back().data());
    }
    findOp(node.op)->reference(node, ref_in, ref_out);
    GpuLaunch launch = findGpuLowering(node.op)->launch(node);
    try {
      simt.launch("k" + std::to_string(i), launch, buffers);
    } catch (const CompileError& e) {
      ADD_FAILURE() << what << ": " << e.what();
      continue;
    }
    for (size_t o = 0; normwise > 0 && o < node.outputs.size(); ++o) {
      const int64_t n = node.outputs[o]->type.numel();
      const float* g = reinterpret_cast<const float*>(got[o].data());
      const float* w = reinterpret_cast<const float*>(want[o].data());
      double diff = 0, norm = 0;
      for (int64_t e = 0; e < n; ++e) {
        diff += (double(g[e]) - w[e]) * (double(g[e]) - w[e]);
        norm += double(w[e]) * w[e];
      }
      EXPECT_TRUE(std::isfinite(diff)) << what;
      if (norm > 0) worst = std::max(worst, std::sqrt(diff / norm));
      EXPECT_LE(std::sqrt(diff), normwise * std::sqrt(norm))
          << what << ": normwise error " << std::sqrt(diff / norm);
    }
    for (size_t o = 0; normwise == 0 && o < node.outputs.size(); ++o)
      cpu::testing::expectOutputMatches(node.outputs[o]->type, got[o], want[o],
                                        what + " output " + std::to_string(o));
  }
  EXPECT_FALSE(run.empty());
  if (normwise > 0) std::cout << "worst normwise error " << worst << "\n";
  return worst;
}

TEST(GpuSimt, Elementwise) { expectCasesMatchReference(testing::elementwiseCases(), 1); }
TEST(GpuSimt, MatMulGemm) { expectCasesMatchReference(testing::linalgCases(), 2); }
// The tensor-core GEMMs (nanoc --gpu-precision), normwise against the f32
// reference. Each product a * b is exact in f32 after the operands' rounding
// (relative error <= u each, u = 2^-11 for tf32 (10 stored mantissa bits,
// round to nearest) and f16, 2^-8 for bf16 (7 bits; 2^-9 with RNE)); the
// f32 accumulation adds ~K * 2^-24. For random signed operands the errors
// are independent, so the normwise error is about sqrt(2) u (~7e-4 tf32 and
// f16, ~3e-3 bf16): bounds 2e-3 (tf32, f16) and 1e-2 (bf16) hold with margin
// for any K, while the exact kernel's error stays ~1e-6.
// Each also checks that the worst error is above f32's (~1e-7): the
// operands really were rounded, the tensor-core path ran.
TEST(GpuSimt, MatMulGemmTf32) {
  EXPECT_GT(expectCasesMatchReference(testing::mmaCases("tf32"), 7, 2e-3), 5e-5);
}
TEST(GpuSimt, MatMulGemmBf16) {
  EXPECT_GT(expectCasesMatchReference(testing::mmaCases("bf16"), 8, 1e-2), 5e-4);
}
TEST(GpuSimt, MatMulGemmF16) {
  EXPECT_GT(expectCasesMatchReference(testing::mmaCases("f16"), 9, 2e-3), 5e-5);
}
TEST(GpuSimt, MatMulGemmF16M16N8K8) {
  EXPECT_GT(expectCasesMatchReference(testing::mmaCases("f16", "m16n8k8"), 10, 2e-3), 5e-5);
}

// nanoc --gpu-precision's attribute: on the GPU's products only, and only
// where every target SM has the mode (the lowest SM decides).
TEST(GpuSimt, PlacementSetsGpuPrecision) {
  struct Want {
    std::string mode;
    uint32_t min_sm;
    std::string precision, shape;  // "" for absent
  };
  for (const Want& w :
       {Want{"tf32", 80, "tf32", ""}, Want{"bf16", 90, "bf16", ""}, Want{"f16", 80, "f16", ""},
        Want{"f16", 75, "f16", "m16n8k8"}, Want{"tf32", 75, "", ""}, Want{"bf16", 75, "", ""},
        Want{"exact", 90, "", ""}}) {
    for (const char* op : {"MatMul", "Add"}) {
      auto g = cpu::testing::makeSingleNodeGraphWithAbsent(
          op, {testing::f32({16, 16}), testing::f32({16, 16})}, {});
      ASSERT_EQ(placeOnGpu(g->graph, hasGpuLowering, GpuOffload::All, {w.mode, w.min_sm}), 1u);
      const Node& node = *g->node;
      const bool product = std::string(op) == "MatMul";
      EXPECT_EQ(node.has(kGpuPrecisionAttribute), product && !w.precision.empty())
          << w.mode << " sm_" << w.min_sm << " " << op;
      if (node.has(kGpuPrecisionAttribute)) EXPECT_EQ(node.s(kGpuPrecisionAttribute), w.precision);
      EXPECT_EQ(node.has(kGpuMmaShapeAttribute), product && !w.shape.empty());
    }
  }
  EXPECT_TRUE(isGpuPrecision("bf16"));
  EXPECT_FALSE(isGpuPrecision("fp8"));
}

TEST(GpuSimt, SoftmaxNorm) { expectCasesMatchReference(testing::rowCases(), 3); }
TEST(GpuSimt, Pool) { expectCasesMatchReference(testing::poolCases(), 4); }
TEST(GpuSimt, Reduce) { expectCasesMatchReference(testing::reduceCases(), 5); }
TEST(GpuSimt, DataMovement) { expectCasesMatchReference(testing::dataMovementCases(), 6); }
TEST(GpuSimt, Upsample) {
  // Every case has a GPU kernel (expectCasesMatchReference skips those that
  // do not).
  for (const KernelCase& c : testing::upsampleCases())
    EXPECT_TRUE(hasGpuLowering(*c.graph->node)) << c.label;
  expectCasesMatchReference(testing::upsampleCases(), 7);
}

// The emulator fails what would hang a GPU: a barrier that half the block
// skips, a shuffle that half a warp skips; and runs the same kernel with
// the barrier and the shuffle in uniform control flow.
TEST(GpuSimt, EmulatorRefusesDivergentBarriersAndShuffles) {
  for (int variant = 0; variant < 4; ++variant) {
    const bool divergent = variant >= 2, shuffle = variant % 2 == 1;
    auto ctx = std::make_unique<llvm::LLVMContext>();
    auto module = createGpuModule("m", *ctx);
    llvm::Type* ptr = llvm::PointerType::get(*ctx, kGlobalSpace);
    auto* fn =
        llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(*ctx), {ptr}, false),
                               llvm::GlobalValue::ExternalLinkage, "k", *module);
    fn->setCallingConv(llvm::CallingConv::PTX_Kernel);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(*ctx, "entry", fn));
    llvm::Value* tid = threadIdX(b);
    llvm::Value* value = b.CreateUIToFP(tid, b.getFloatTy());
    llvm::Value* slot = b.CreateInBoundsGEP(b.getFloatTy(), fn->getArg(0), tid);
    b.CreateStore(value, slot);
    auto sync = [&] {
      if (shuffle)
        b.CreateStore(shuffleXorF32(b, value, 1), slot);
      else
        barrier(b);
    };
    if (divergent)
      emitIf(b, b.CreateICmpULT(tid, b.getInt32(16)), sync);
    else
      sync();
    b.CreateRetVoid();
    simt::Emulator simt(*module);
    std::vector<float> out(64, -1.0f);
    GpuLaunch launch;
    launch.block[0] = 64;
    if (divergent) {
      EXPECT_THROW(simt.launch("k", launch, {out.data()}), CompileError) << variant;
    } else {
      EXPECT_NO_THROW(simt.launch("k", launch, {out.data()})) << variant;
      for (uint32_t t = 0; t < 64; ++t)
        EXPECT_EQ(out[t], static_cast<float>(shuffle ? (t ^ 1) : t)) << variant << " " << t;
    }
  }
}

}  // namespace
}  // namespace nanoc::gpu
