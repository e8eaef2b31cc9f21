#include "cpu_features.h"

#include <gtest/gtest.h>
#include <string.h>

namespace nanort {
namespace {

TEST(HostCpuFeatures, NamesThisBuildsArchitecture) {
#if defined(__x86_64__)
  EXPECT_STREQ(HostArchitecture(), "x86_64");
#elif defined(__aarch64__)
  EXPECT_STREQ(HostArchitecture(), "aarch64");
#endif
}

TEST(HostCpuFeatures, ReportsTheBaselineOfThisArchitectureAsPresent) {
  const HostCpuFeatures host = HostCpuFeatures::Detect();
#if defined(__x86_64__)
  EXPECT_EQ(host.Lookup("sse2"), CpuFeature::kPresent);
  EXPECT_EQ(host.Lookup("64bit"), CpuFeature::kPresent);
#if defined(__AVX2__)
  EXPECT_EQ(host.Lookup("avx2"), CpuFeature::kPresent);  // this test binary already uses it
#endif
#elif defined(__aarch64__)
  EXPECT_EQ(host.Lookup("neon"), CpuFeature::kPresent);
#endif
}

TEST(HostCpuFeatures, TuningFlagsAreUnknownNotAbsent) {
  const HostCpuFeatures host = HostCpuFeatures::Detect();
  EXPECT_EQ(host.Lookup("fast-variable-perm"), CpuFeature::kUnknown);
  EXPECT_EQ(host.Lookup(""), CpuFeature::kUnknown);
  // Lookup compares whole names, not prefixes.
  EXPECT_EQ(host.Lookup("sse4.1x"), CpuFeature::kUnknown);
}

TEST(HostCpuFeatures, LookupTakesNamesThatAreNotNulTerminated) {
  const HostCpuFeatures host = HostCpuFeatures::Detect();
#if defined(__x86_64__)
  const char* text = "sse2,avx";
  EXPECT_EQ(host.Lookup(text, 4), host.Lookup("sse2"));
#endif
}

}  // namespace
}  // namespace nanort

#if defined(__x86_64__) && defined(__linux__)
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace nanort {
namespace {

// The kernel's view of the CPU (it hides features whose state it does not
// save), as an independent witness for cpuid + xgetbv.
std::set<std::string> ProcCpuinfoFlags() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string word; words >> word;) flags.insert(word);
    return flags;
  }
  return {};
}

TEST(HostCpuFeatures, AgreesWithProcCpuinfo) {
  const std::set<std::string> flags = ProcCpuinfoFlags();
  if (flags.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  const struct {
    const char* llvm;
    const char* linux_flag;
  } pairs[] = {
      {"sse2", "sse2"},
      {"ssse3", "ssse3"},
      {"sse4.1", "sse4_1"},
      {"sse4.2", "sse4_2"},
      {"popcnt", "popcnt"},
      {"pclmul", "pclmulqdq"},
      {"aes", "aes"},
      {"movbe", "movbe"},
      {"lzcnt", "abm"},
      {"bmi", "bmi1"},
      {"bmi2", "bmi2"},
      {"adx", "adx"},
      {"sha", "sha_ni"},
      {"avx", "avx"},
      {"avx2", "avx2"},
      {"fma", "fma"},
      {"f16c", "f16c"},
      {"gfni", "gfni"},
      {"vaes", "vaes"},
      {"vpclmulqdq", "vpclmulqdq"},
      {"avxvnni", "avx_vnni"},
      {"avx512f", "avx512f"},
      {"avx512bw", "avx512bw"},
      {"avx512cd", "avx512cd"},
      {"avx512dq", "avx512dq"},
      {"avx512vl", "avx512vl"},
      {"avx512vnni", "avx512_vnni"},
      {"avx512bf16", "avx512_bf16"},
      {"avx512fp16", "avx512_fp16"},
      {"avx512ifma", "avx512ifma"},
      {"avx512vbmi", "avx512vbmi"},
      {"avx512vbmi2", "avx512_vbmi2"},
      {"avx512bitalg", "avx512_bitalg"},
      {"avx512vpopcntdq", "avx512_vpopcntdq"},
      {"amx-tile", "amx_tile"},
      {"amx-int8", "amx_int8"},
      {"amx-bf16", "amx_bf16"},
  };
  const HostCpuFeatures host = HostCpuFeatures::Detect();
  for (const auto& pair : pairs) {
    const bool linux_has = flags.count(pair.linux_flag) != 0;
    EXPECT_EQ(host.Lookup(pair.llvm) == CpuFeature::kPresent, linux_has)
        << pair.llvm << " vs /proc/cpuinfo '" << pair.linux_flag << "'";
  }
}

}  // namespace
}  // namespace nanort
#endif
