// Every GPU lowering x every SM profile of targets/gpu: the kernel is emitted
// and verified, printed as PTX for the SM and assembled by the CUDA toolkit's
// ptxas with --warn-on-spills; ptxas -v's registers and shared memory must
// fit the profile's limits and the launch's block. Numerics need a GPU (or
// the SIMT emulator, later); these tests check that every kernel compiles
// for every SM, within its resources. Where no ptxas is found, the PTX is
// still emitted and the ptxas part is skipped, saying so.
#include <gtest/gtest.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/kernel_test_util.h"
#include "compiler/codegen/cpu/target_profiles.h"
#include "compiler/codegen/gpu/gpu_lowering.h"
#include "compiler/codegen/gpu/gpu_test_cases.h"
#include "compiler/ir/error.h"
#include "compiler/ops/elementwise_table.h"

#ifndef NANOC_SOURCE_TARGETS_DIR
#define NANOC_SOURCE_TARGETS_DIR "targets"
#endif

namespace nanoc::gpu {
namespace {

using cpu::testing::makeSingleNodeGraph;
using cpu::testing::makeSingleNodeGraphWithAbsent;
using testing::elementwiseCases;
using testing::f32;
using testing::Ints;
using testing::KernelCase;
using testing::linalgCases;
using testing::rowCases;

std::vector<cpu::TargetProfile> gpuProfiles() {
  std::vector<cpu::TargetProfile> out;
  for (cpu::TargetProfile& p : cpu::loadTargetProfiles(NANOC_SOURCE_TARGETS_DIR))
    if (p.kind == "gpu") out.push_back(std::move(p));
  return out;
}

std::vector<std::string> gpuProfileNames() {
  std::vector<std::string> names;
  for (const cpu::TargetProfile& p : gpuProfiles()) names.push_back(p.name);
  return names;
}

cpu::TargetProfile profileNamed(const std::string& name) {
  for (cpu::TargetProfile& p : gpuProfiles())
    if (p.name == name) return p;
  throw CompileError("no GPU profile " + name);
}

// Emits `cases` into one module for `profile`'s SM, assembles it and checks
// each kernel's resources. Returns ptxas's info by kernel symbol.
std::map<std::string, PtxasKernelInfo> checkOnSm(const std::vector<KernelCase>& cases,
                                                 const cpu::TargetProfile& profile) {
  SmTarget sm = smTargetOf(profile);
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> module = createGpuModule("kernels", ctx);
  std::vector<GpuLaunch> launches;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Node& node = *cases[i].graph->node;
    EXPECT_TRUE(hasGpuLowering(node)) << cases[i].label;
    if (!hasGpuLowering(node)) continue;
    const GpuLowering* lowering = findGpuLowering(node.op);
    launches.push_back(lowering->launch(node));
    llvm::Function* fn = emitGpuKernel(node, *module, "k" + std::to_string(i));
    std::string errors;
    llvm::raw_string_ostream err(errors);
    EXPECT_FALSE(llvm::verifyFunction(*fn, &err)) << cases[i].label << ": " << errors;
    EXPECT_EQ(fn->getCallingConv(), llvm::CallingConv::PTX_Kernel);
    const GpuLaunch& l = launches.back();
    EXPECT_LE(int64_t{l.block[0]} * l.block[1] * l.block[2],
              profile.limits.at("max_threads_per_block"))
        << cases[i].label;
    EXPECT_GE(l.grid[0], 1u);
    EXPECT_LE(l.grid[1], 65535u);
    EXPECT_LE(l.grid[2], 65535u);
  }
  std::string errors;
  llvm::raw_string_ostream err(errors);
  EXPECT_FALSE(llvm::verifyModule(*module, &err)) << errors;
  std::string ptx = emitPtx(*module, sm);
  EXPECT_NE(ptx.find(".target " + sm.name()), std::string::npos);
  std::map<std::string, PtxasKernelInfo> by_symbol;
  if (ptxasPath().empty()) return by_symbol;
  PtxasResult result = assemblePtx(ptx, sm);
  EXPECT_FALSE(result.cubin.empty());
  for (const PtxasKernelInfo& k : result.kernels) by_symbol[k.name] = k;
  const int64_t max_regs = profile.limits.at("registers_per_thread");
  const int64_t max_shared = profile.limits.at("shared_memory_per_block_kib") * 1024;
  for (size_t i = 0, l = 0; i < cases.size(); ++i) {
    if (!hasGpuLowering(*cases[i].graph->node)) continue;
    const GpuLaunch& launch = launches[l++];
    auto it = by_symbol.find("k" + std::to_string(i));
    if (it == by_symbol.end()) {
      ADD_FAILURE() << cases[i].label << ": ptxas reported nothing for k" << i;
      continue;
    }
    const PtxasKernelInfo& info = it->second;
    int64_t threads = int64_t{launch.block[0]} * launch.block[1] * launch.block[2];
    EXPECT_GT(info.registers, 0u) << cases[i].label;
    EXPECT_LE(info.registers, max_regs) << cases[i].label;
    EXPECT_LE(info.shared_bytes + launch.shared_bytes, max_shared) << cases[i].label;
    // Every SM from 7.5 to 12.0 has 64 Ki 32-bit registers per block.
    EXPECT_LE(info.registers * threads, 65536) << cases[i].label;
    EXPECT_EQ(info.spill_bytes, 0u) << cases[i].label;
    EXPECT_EQ(info.stack_bytes, 0u) << cases[i].label;
  }
  return by_symbol;
}

class GpuKernels : public ::testing::TestWithParam<std::string> {
 protected:
  void run(const std::vector<KernelCase>& cases, const char* what) {
    cpu::TargetProfile profile = profileNamed(GetParam());
    std::map<std::string, PtxasKernelInfo> info = checkOnSm(cases, profile);
    if (ptxasPath().empty())
      GTEST_SKIP() << "PTX emitted for " << GetParam() << ", but no ptxas found (CUDA toolkit, "
                   << "or NANOC_PTXAS) to assemble it";
    std::cout << what << " on " << GetParam() << ":";
    for (size_t i = 0; i < cases.size(); ++i) {
      auto it = info.find("k" + std::to_string(i));
      if (it != info.end() && (cases.size() < 40 || i % 25 == 0))
        std::cout << " [" << cases[i].label << ": " << it->second.registers << " regs, "
                  << it->second.shared_bytes << " B smem]";
    }
    // The most registers per label suffix (" [tf32]" ...; "" for none).
    std::map<std::string, uint32_t> most;
    for (size_t i = 0; i < cases.size(); ++i) {
      auto it = info.find("k" + std::to_string(i));
      if (it == info.end()) continue;
      const std::string& label = cases[i].label;
      const size_t open = label.rfind(" [");
      uint32_t& m = most[open == std::string::npos ? "" : label.substr(open + 1)];
      m = std::max(m, it->second.registers);
    }
    for (const auto& [suffix, regs] : most)
      std::cout << " max" << (suffix.empty() ? "" : " ") << suffix << ": " << regs << " regs;";
    std::cout << "\n";
  }
};

TEST_P(GpuKernels, Elementwise) { run(elementwiseCases(), "elementwise"); }
TEST_P(GpuKernels, MatMulGemm) { run(linalgCases(), "matmul/gemm"); }
// The tensor-core GEMMs: tf32, bf16 and f16 (m16n8k16) on sm_80 and newer;
// f16 m16n8k8 everywhere (sm_75's only mma shape with f32 accumulate).
TEST_P(GpuKernels, MatMulGemmMma) {
  std::vector<KernelCase> cases = testing::mmaCases("f16", "m16n8k8");
  if (smTargetOf(profileNamed(GetParam())).sm >= 80)
    for (const char* p : {"tf32", "bf16", "f16"})
      for (KernelCase& c : testing::mmaCases(p)) cases.push_back(std::move(c));
  run(cases, "mma matmul/gemm");
}
TEST_P(GpuKernels, SoftmaxNorm) { run(rowCases(), "rows"); }
TEST_P(GpuKernels, Pool) { run(testing::poolCases(), "pools"); }
TEST_P(GpuKernels, Reduce) { run(testing::reduceCases(), "reductions"); }
TEST_P(GpuKernels, DataMovement) { run(testing::dataMovementCases(), "data movement"); }
TEST_P(GpuKernels, Upsample) { run(testing::upsampleCases(), "upsampling"); }

INSTANTIATE_TEST_SUITE_P(Sm, GpuKernels, ::testing::ValuesIn(gpuProfileNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(GpuTarget, ProfilesAndTargetMachines) {
  std::vector<cpu::TargetProfile> profiles = gpuProfiles();
  EXPECT_GE(profiles.size(), 8u);
  for (const cpu::TargetProfile& p : profiles) {
    SmTarget sm = smTargetOf(p);
    EXPECT_EQ(sm.name(), p.name);
    EXPECT_GT(sm.ptx_isa, 0u);
    std::unique_ptr<llvm::TargetMachine> tm = createGpuTargetMachine(sm);
    ASSERT_NE(tm, nullptr);
    EXPECT_EQ(tm->getTargetCPU().str(), sm.name());
    EXPECT_EQ(tm->getTargetFeatureString().str(), "+ptx" + std::to_string(sm.ptx_isa));
  }
  llvm::LLVMContext ctx;
  auto module = createGpuModule("m", ctx);
  EXPECT_EQ(module->getTargetTriple().str(), "nvptx64-nvidia-cuda");
  EXPECT_FALSE(module->getDataLayoutStr().empty());
  SmTarget sm90a{90, "a", 80};
  EXPECT_EQ(sm90a.name(), "sm_90a");
  EXPECT_NE(createGpuTargetMachine(sm90a), nullptr);
  // Below the SM's lowest PTX ISA: refused (LLVM itself would abort).
  EXPECT_THROW(createGpuTargetMachine(SmTarget{90, "a", 78}), CompileError);
  EXPECT_THROW(createGpuTargetMachine(SmTarget{120, "", 80}), CompileError);
  EXPECT_EQ(minimumPtxIsa(SmTarget{75, "", 0}), 63u);
  EXPECT_EQ(minimumPtxIsa(SmTarget{90, "a", 0}), 80u);
  // Every profile asks for at least its SM's lowest PTX ISA.
  for (const cpu::TargetProfile& p : profiles)
    EXPECT_GE(p.ptx_isa, minimumPtxIsa(smTargetOf(p))) << p.name;
  EXPECT_THROW(createGpuTargetMachine(SmTarget{42, "", 78}), CompileError);
}

// The kernel ABI as PTX: an .entry per kernel with one .u64 pointer per
// present input and output, .maxntid from the launch, bar.sync in the GEMM,
// shfl.sync in the row ops, no local memory.
TEST(GpuTarget, PtxShape) {
  llvm::LLVMContext ctx;
  auto module = createGpuModule("m", ctx);
  auto add = makeSingleNodeGraph("Add", {f32({4, 19}), f32({19})}, {});
  auto mm = makeSingleNodeGraph("MatMul", {f32({70, 33}), f32({33, 65})}, {});
  auto sm = makeSingleNodeGraph("Softmax", {f32({8, 100})}, {{"axis", int64_t{1}}});
  auto ln =
      makeSingleNodeGraphWithAbsent("LayerNormalization", {f32({4, 64}), f32({64}), std::nullopt},
                                    {{"axis", int64_t{1}}, {"epsilon", 1e-5}});
  emitGpuKernel(*add->node, *module, "add");
  emitGpuKernel(*mm->node, *module, "mm");
  emitGpuKernel(*sm->node, *module, "softmax");
  llvm::Function* f = emitGpuKernel(*ln->node, *module, "ln");
  EXPECT_EQ(f->arg_size(), 2u + 3u);  // X, Scale; Y, Mean, InvStdDev
  std::string ptx = emitPtx(*module, SmTarget{80, "", 70});
  EXPECT_NE(ptx.find(".version 7.0"), std::string::npos) << ptx.substr(0, 400);
  EXPECT_NE(ptx.find(".target sm_80"), std::string::npos);
  for (const char* entry : {".entry add(", ".entry mm(", ".entry softmax(", ".entry ln("})
    EXPECT_NE(ptx.find(entry), std::string::npos) << entry;
  EXPECT_NE(ptx.find(".maxntid 256, 1, 1"), std::string::npos);
  EXPECT_NE(ptx.find(".minnctapersm 1"), std::string::npos);
  EXPECT_NE(ptx.find("bar.sync"), std::string::npos);
  EXPECT_NE(ptx.find("shfl.sync.bfly.b32"), std::string::npos);
  EXPECT_NE(ptx.find(".shared"), std::string::npos);
  EXPECT_EQ(ptx.find(".local"), std::string::npos);
  GpuLaunch l = findGpuLowering("MatMul")->launch(*mm->node);
  EXPECT_EQ(l.grid[0], 3u);  // ceil(65 / 32): 32 x 32 tiles for a small product
  EXPECT_EQ(l.grid[1], 3u);  // ceil(70 / 32)
  EXPECT_EQ(l.grid[2], 1u);
  EXPECT_EQ(l.block[0], 256u);
  GpuLaunch e = findGpuLowering("Add")->launch(*add->node);
  EXPECT_EQ(e.grid[0], 1u);
  EXPECT_EQ(e.block[0], 256u);
}

TEST(GpuTarget, WhatHasNoGpuLowering) {
  EXPECT_EQ(findGpuLowering("DeformConv"), nullptr);
  EXPECT_NE(findGpuLowering("Add"), nullptr);
  EXPECT_NE(findGpuLowering("nanoc.Elementwise"), nullptr);
  // A LayerNormalization whose Scale broadcasts partly over the row: not on
  // the GPU (the CPU runs it).
  auto ln = makeSingleNodeGraphWithAbsent("LayerNormalization",
                                          {f32({2, 3, 4}), f32({3, 1}), std::nullopt},
                                          {{"axis", int64_t{1}}, {"epsilon", 1e-5}});
  EXPECT_FALSE(hasGpuLowering(*ln->node));
  llvm::LLVMContext ctx;
  auto module = createGpuModule("m", ctx);
  EXPECT_THROW(emitGpuKernel(*ln->node, *module, "ln"), CompileError);
  // A reduction of f16 stays on the CPU.
  auto sum = makeSingleNodeGraph("ReduceSum", {TensorType{DType::F16, {4, 5}}},
                                 {{"axes", Ints{1}}, {"keepdims", int64_t{1}}});
  EXPECT_FALSE(hasGpuLowering(*sum->node));
  EXPECT_EQ(findGpuLowering("Hardmax"), nullptr);
}

// ptxas refuses an SM this toolkit does not know, and runPtxas says so.
TEST(GpuPtxas, RefusesUnknownSm) {
  if (ptxasPath().empty()) GTEST_SKIP() << "no ptxas found (CUDA toolkit, or NANOC_PTXAS)";
  llvm::LLVMContext ctx;
  auto module = createGpuModule("m", ctx);
  auto add = makeSingleNodeGraph("Add", {f32({4}), f32({4})}, {});
  emitGpuKernel(*add->node, *module, "add");
  std::string ptx = emitPtx(*module, SmTarget{75, "", 63});
  EXPECT_FALSE(runPtxas(ptx, SmTarget{75, "", 63}).empty());
  for (SmTarget old : {SmTarget{70, "", 63}, SmTarget{101, "", 86}}) {
    try {
      runPtxas(ptx, old);
      ADD_FAILURE() << "ptxas accepted " << old.name();
    } catch (const CompileError& e) {
      std::string message = e.what();
      EXPECT_NE(message.find("ptxas"), std::string::npos) << message;
      EXPECT_NE(message.find(old.name()), std::string::npos) << message;
    }
  }
  EXPECT_THROW(runPtxas(ptx, SmTarget{75, "", 63}, "/nonexistent/ptxas"), CompileError);
}

}  // namespace
}  // namespace nanoc::gpu

namespace nanoc::gpu {
namespace {

// The same kernels give the same PTX and the same cubin (DESIGN.md:
// byte-identical artifacts for the same model and flags).
TEST(GpuTarget, PtxAndCubinAreDeterministic) {
  auto build = [] {
    llvm::LLVMContext ctx;
    auto module = createGpuModule("m", ctx);
    std::vector<KernelCase> cases = linalgCases();
    for (size_t i = 0; i < cases.size(); ++i)
      emitGpuKernel(*cases[i].graph->node, *module, "k" + std::to_string(i));
    return emitPtx(*module, SmTarget{90, "", 78});
  };
  std::string a = build(), b = build();
  EXPECT_EQ(a, b);
  if (ptxasPath().empty()) GTEST_SKIP() << "no ptxas found (CUDA toolkit, or NANOC_PTXAS)";
  EXPECT_EQ(runPtxas(a, SmTarget{90, "", 78}), runPtxas(b, SmTarget{90, "", 78}));
}

}  // namespace
}  // namespace nanoc::gpu

namespace nanoc::gpu {
namespace {

// A multiply then an add stay two roundings, as on the CPU (no FMA
// contraction: NVPTX writes mul.rn / add.rn, which ptxas does not fuse
// either), so the GPU computes the elementwise chains' exact values.
TEST(GpuTarget, NoFmaContraction) {
  llvm::LLVMContext ctx;
  auto module = createGpuModule("m", ctx);
  auto chain = makeSingleNodeGraph(
      "nanoc.Elementwise", {f32({64}), f32({64}), f32({64})},
      {{"ops", std::string("Mul,Add")}, {"arity", Ints{2, 2}}, {"operands", Ints{0, 1, -1, 2}}});
  emitGpuKernel(*chain->node, *module, "mul_add");
  std::string ptx = emitPtx(*module, SmTarget{90, "", 78});
  EXPECT_NE(ptx.find("mul.rn.f32"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("add.rn.f32"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("fma.rn.f32"), std::string::npos) << ptx;
}

}  // namespace
}  // namespace nanoc::gpu
