// The cache sizes of a target: every CPU profile of targets/ states them,
// the host's come from sysfs, and a kernel function carries them as string
// attributes that the GEMM reads back (with defaults where absent).
#include "compiler/codegen/cpu/target_profiles.h"

#include <gtest/gtest.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "compiler/codegen/cpu/gemm_microkernel.h"
#include "compiler/codegen/cpu/target.h"
#include "compiler/ir/error.h"

namespace nanoc::cpu {
namespace {

TEST(TargetProfiles, EveryCpuProfileStatesItsCaches) {
  std::map<std::string, TargetProfile> cpu;
  for (const TargetProfile& p : loadTargetProfiles(defaultTargetsDir()))
    if (p.kind == "cpu") cpu[p.name] = p;
  ASSERT_GE(cpu.size(), 10u);
  for (const auto& [name, p] : cpu) {
    SCOPED_TRACE(name);
    EXPECT_LE(p.cache.l1d, 128u * 1024);
    EXPECT_TRUE(p.cache.l2 == 0 || p.cache.l2 >= p.cache.l1d) << p.cache.l2;
    // Every vector CPU has a data cache to block for.
    if (p.vector_bits != 0) EXPECT_GT(p.cache.l1d, 0u);
    CpuTarget target = cpuTargetOf(p);
    ASSERT_TRUE(target.cache.has_value());
    EXPECT_EQ(target.cache->l1d, p.cache.l1d);
    EXPECT_EQ(target.cache->l2, p.cache.l2);
  }
  EXPECT_EQ(cpu.at("x86-64-v4").cache.l1d, 32u * 1024);
  EXPECT_EQ(cpu.at("x86-64-v4").cache.l2, 1024u * 1024);
  EXPECT_EQ(cpu.at("sapphirerapids").cache.l1d, 48u * 1024);
  EXPECT_EQ(cpu.at("sapphirerapids").cache.l2, 2048u * 1024);
  EXPECT_EQ(cpu.at("cortex-m4").cache.l1d, 0u);  // no data cache
  EXPECT_EQ(cpu.at("cortex-m7").cache.l2, 0u);
}

// Full-rate 16-lane multiply-adds (the blocked layout's Winograd rule,
// nchwc_layout.cc): the named AVX-512 Xeons and Zen 5, not Zen 4 (two
// 256-bit pipes), not the portable x86-64-v4 (it runs on a Zen 4 too), not
// 8-lane or NEON targets, and all of a program's targets or none.
TEST(TargetProfiles, FullRateWideMultiplyAddsNeedANamedAvx512CoreOtherThanZen4) {
  std::map<std::string, CpuTarget> cpu;
  for (const TargetProfile& p : loadTargetProfiles(defaultTargetsDir()))
    if (p.kind == "cpu") cpu[p.name] = cpuTargetOf(p);
  const std::string x86 = "x86_64-unknown-linux-gnu";
  EXPECT_TRUE(fullRateWideFma({cpu.at("sapphirerapids")}));
  EXPECT_TRUE(fullRateWideFma({cpu.at("skylake-avx512")}));
  EXPECT_TRUE(fullRateWideFma({makeTarget(x86, "znver5", "")}));
  EXPECT_FALSE(fullRateWideFma({makeTarget(x86, "znver4", "")}));
  EXPECT_FALSE(fullRateWideFma({cpu.at("x86-64-v4")}));
  EXPECT_FALSE(fullRateWideFma({cpu.at("x86-64-v3")}));
  EXPECT_FALSE(fullRateWideFma({cpu.at("neoverse-v1")}));
  EXPECT_FALSE(fullRateWideFma({cpu.at("sapphirerapids"), cpu.at("x86-64-v4")}));
  EXPECT_FALSE(fullRateWideFma({}));
}

TEST(TargetProfiles, AProfileWithoutCachesIsAnErrorNamingTheField) {
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "profiles_no_cache";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "cpu");
  std::filesystem::create_directories(dir / "gpu");
  std::ofstream(dir / "cpu" / "board.json")
      << R"({"name": "board", "kind": "cpu", "description": "d", "triple": "x86_64-unknown-linux-gnu",
             "cpu": "x86-64", "features": [], "vector_bits": 0})";
  try {
    loadTargetProfiles(dir.string());
    ADD_FAILURE() << "loaded a profile without 'cache'";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("board.json: 'cache' must be an object"),
              std::string::npos)
        << e.what();
  }
  std::ofstream(dir / "cpu" / "board.json")
      << R"({"name": "board", "kind": "cpu", "description": "d", "triple": "x86_64-unknown-linux-gnu",
             "cpu": "x86-64", "features": [], "vector_bits": 0, "cache": {"l1d": 32768}})";
  try {
    loadTargetProfiles(dir.string());
    ADD_FAILURE() << "loaded a profile without 'cache.l2'";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("'l2' must be an integer"), std::string::npos) << e.what();
  }
}

TEST(TargetProfiles, HostCachesComeFromSysfs) {
  if (!std::filesystem::exists("/sys/devices/system/cpu/cpu0/cache/index0/size"))
    GTEST_SKIP() << "no sysfs cache listing on this machine";
  CpuTarget host = hostTarget();
  ASSERT_TRUE(host.cache.has_value());
  EXPECT_GE(host.cache->l1d, 4u * 1024);
  EXPECT_GE(host.cache->l2, host.cache->l1d);
}

TEST(CacheAttributes, KernelsReadThemBackOrAssumeTheDefaults) {
  llvm::LLVMContext ctx;
  llvm::Module module("m", ctx);
  auto function = [&](std::vector<std::pair<std::string, std::string>> attributes) {
    auto* fn = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), false),
                                      llvm::Function::InternalLinkage, "f", module);
    for (const auto& [k, v] : attributes) fn->addFnAttr(k, v);
    return fn;
  };
  CpuTarget::CacheSizes c =
      cacheSizes(*function({{kL1DataCacheAttribute, "49152"}, {kL2CacheAttribute, "2097152"}}));
  EXPECT_EQ(c.l1d, 49152u);
  EXPECT_EQ(c.l2, 2097152u);
  c = cacheSizes(*function({{kL1DataCacheAttribute, "0"}, {kL2CacheAttribute, "0"}}));
  EXPECT_EQ(c.l1d, 0u);  // no cache, not the default
  EXPECT_EQ(c.l2, 0u);
  c = cacheSizes(*function({}));
  EXPECT_EQ(c.l1d, kDefaultCacheSizes.l1d);
  EXPECT_EQ(c.l2, kDefaultCacheSizes.l2);
  c = cacheSizes(*function({{kL1DataCacheAttribute, "32K"}}));
  EXPECT_EQ(c.l1d, kDefaultCacheSizes.l1d);
}

}  // namespace
}  // namespace nanoc::cpu
