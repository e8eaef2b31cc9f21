// Helpers shared by the runtime tests.
#ifndef NANORT_TESTS_RUNTIME_TEST_UTIL_H_
#define NANORT_TESTS_RUNTIME_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <string>

#include "cpu_features.h"
#include "nanort/nanort.h"
#include "test_program.h"

namespace nanort::test {

struct LoadResult {
  nanort_status_code code;
  std::string message;
};

// Loads and releases `def`, returning what load said.
inline LoadResult LoadDef(const nanort_model_def& def) {
  nanort_status status;
  nanort_model* model = nullptr;
  const nanort_status_code code =
      nanort_model_load(&def, nanort_allocator_system(), &model, &status);
  EXPECT_EQ(code, status.code);
  EXPECT_EQ(code == NANORT_OK, model != nullptr);
  nanort_model_release(model);
  return {code, status.message};
}

// An ISA feature this runtime detects and this machine lacks, or "" when it
// has every candidate. The list spans vendors and generations (Sapphire Rapids
// has avx512fp16 and AMX but not avx512vp2intersect; Zen 4 the reverse of
// some), so every machine we know of lacks one.
inline std::string AbsentFeature() {
  const char* candidates[] = {
#if defined(__x86_64__)
    "amx-int8",
    "amx-bf16",
    "avx512fp16",
    "avx512vp2intersect",
    "avx512bf16",
    "avx512vbmi2",
    "avx512ifma",
    "avxvnni",
    "avx512f",
    "sha",
    "gfni",
    "vaes",
    "avx2",
#elif defined(__aarch64__)
    "sve2",
    "i8mm",
    "bf16",
    "sve",
    "sm4",
    "sha3",
    "dotprod",
#elif defined(__riscv)
    "v",
    "c",
    "d",
#endif
    nullptr
  };
  const HostCpuFeatures host = HostCpuFeatures::Detect();
  for (const char** name = candidates; *name != nullptr; ++name) {
    if (host.Lookup(*name) == CpuFeature::kAbsent) return *name;
  }
  return "";
}

inline LoadResult LoadSpec(const ProgramSpec& spec) {
  ChainModel chain(spec);
  return LoadDef(chain.def);
}

}  // namespace nanort::test

#endif  // NANORT_TESTS_RUNTIME_TEST_UTIL_H_
