// Programs with several CPU variants (nanoc --target a,b): the kernel table
// holds variants x kernels entries, and load picks the variant with the most
// features among those this CPU runs.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "cpu_features.h"
#include "nanort/nanort.h"
#include "test_util.h"

namespace nanort::test {
namespace {

// Variant 1's scale kernel scales twice, so the output says which ran.
void ScaleTwiceF32(const nanort_kernel_args* args, uint64_t task_begin, uint64_t task_end) {
  if (args->num_buffers != 3) return;
  const float* x = static_cast<const float*>(args->buffers[0]);
  const float scale = *static_cast<const float*>(args->buffers[1]);
  float* out = static_cast<float*>(args->buffers[2]);
  for (uint64_t i = task_begin; i < task_end && i < kChainLength; ++i) out[i] = 2 * x[i] * scale;
}

const char* PresentFeature() {
#if defined(__x86_64__)
  return "sse2";
#elif defined(__aarch64__)
  return "neon";
#else
  return "m";
#endif
}

struct VariantModel {
  explicit VariantModel(std::vector<VariantSpec> variants) {
    ProgramSpec spec = ChainSpec();
    spec.variants = std::move(variants);
    chain = std::make_unique<ChainModel>(spec);
    table[0] = AddF32Entry(), table[1] = ScaleF32Entry(), table[2] = AddF32Entry();
    table[3] = ChainEntry(&ScaleTwiceF32, true);
    chain->def.kernels = table;
    chain->def.num_kernels = 2 * static_cast<uint32_t>(spec.variants.size());
  }
  std::unique_ptr<ChainModel> chain;
  nanort_kernel table[4];
};

// Loads and runs the chain on x = {1, 2, 3, 4}; returns y[0] and the CPU name.
nanort_status_code LoadAndRun(const nanort_model_def& def, float* y0, std::string* cpu,
                              nanort_status* status) {
  nanort_model* model = nullptr;
  nanort_status_code code = nanort_model_load(&def, nanort_allocator_system(), &model, status);
  if (code != NANORT_OK) return code;
  *cpu = nanort_model_cpu(model);
  nanort_session* session = nullptr;
  code = nanort_session_create(model, nullptr, 0, nanort_allocator_system(), &session, status);
  if (code == NANORT_OK) {
    float x[4] = {1, 2, 3, 4}, y[4] = {};
    const int64_t dims[2] = {1, 4};
    nanort_tensor in = {x, NANORT_F32, 2, dims}, out = {y, NANORT_F32, 2, dims};
    code = nanort_run(session, &in, 1, &out, 1, status);
    *y0 = y[0];
  }
  nanort_session_release(session);
  nanort_model_release(model);
  return code;
}

TEST(ModelVariants, RunsTheVariantWithTheMostFeaturesThisCpuHas) {
  VariantModel m({{"base", {}}, {"better", {PresentFeature()}}});
  float y0 = 0;
  std::string cpu;
  nanort_status status;
  ASSERT_EQ(LoadAndRun(m.chain->def, &y0, &cpu, &status), NANORT_OK) << status.message;
  EXPECT_EQ(cpu, "better");
  EXPECT_EQ(y0, 2 * (1 + 10) * 0.5f);
}

TEST(ModelVariants, SkipsAVariantThisCpuLacks) {
  const std::string absent = AbsentFeature();
  if (absent.empty()) GTEST_SKIP() << "this CPU has every candidate feature; nothing to miss";
  VariantModel m({{"base", {PresentFeature()}}, {"needs-more", {PresentFeature(), absent}}});
  float y0 = 0;
  std::string cpu;
  nanort_status status;
  ASSERT_EQ(LoadAndRun(m.chain->def, &y0, &cpu, &status), NANORT_OK) << status.message;
  EXPECT_EQ(cpu, "base");
  EXPECT_EQ(y0, (1 + 10) * 0.5f);
}

TEST(ModelVariants, RefusesWhenNoVariantRunsHereNamingWhatIsMissing) {
  const std::string absent = AbsentFeature();
  if (absent.empty()) GTEST_SKIP() << "this CPU has every candidate feature; nothing to miss";
  VariantModel m({{"a", {absent}}, {"b", {PresentFeature(), absent}}});
  float y0 = 0;
  std::string cpu;
  nanort_status status;
  EXPECT_EQ(LoadAndRun(m.chain->def, &y0, &cpu, &status), NANORT_UNSUPPORTED_TARGET);
  EXPECT_NE(std::string(status.message).find("lacks: " + absent), std::string::npos)
      << status.message;
}

TEST(ModelVariants, RefusesAKernelTableThatIsNotVariantsTimesKernels) {
  VariantModel m({{"base", {}}, {"better", {PresentFeature()}}});
  m.chain->def.num_kernels = 2;
  float y0 = 0;
  std::string cpu;
  nanort_status status;
  EXPECT_EQ(LoadAndRun(m.chain->def, &y0, &cpu, &status), NANORT_INVALID_PROGRAM);
}

TEST(ModelVariants, RefusesAKernelTableWhoseVariantsDisagreeOnASignature) {
  for (int field = 0; field < 5; ++field) {
    VariantModel m({{"base", {}}, {"better", {PresentFeature()}}});
    nanort_kernel& scale_v1 = m.table[3];
    static const uint64_t kOtherBytes[] = {16, 4, 16};  // equal sizes, another array
    if (field == 0) scale_v1.task_count = 3;
    if (field == 1) scale_v1.num_outputs = 2;
    if (field == 2) scale_v1.arg_bytes = kOtherBytes;
    if (field == 3) scale_v1.fn = nullptr;
    if (field == 4) scale_v1.scratch_bytes = 64;
    float y0 = 0;
    std::string cpu;
    nanort_status status;
    EXPECT_EQ(LoadAndRun(m.chain->def, &y0, &cpu, &status), NANORT_INVALID_PROGRAM) << field;
    EXPECT_STREQ(status.message,
                 "kernel 1 of variant 1 is NULL, differs from variant 0's or declares over 1 GiB "
                 "of scratch in the object file's kernel table");
  }
}

// Every variant's signature holds: a thunk that matches variant 0's kernel
// matches the variant this CPU runs, which is checked against it.
TEST(ModelVariants, AThunkOffItsKernelsSignatureIsRefusedWhicheverVariantRuns) {
  ProgramSpec spec = ChainSpec();
  spec.variants = {{"base", {}}, {"better", {PresentFeature()}}};
  spec.thunks[1].task_count = 8;
  VariantModel m(spec.variants);
  m.chain->SetProgram(BuildProgram(spec));
  float y0 = 0;
  std::string cpu;
  nanort_status status;
  EXPECT_EQ(LoadAndRun(m.chain->def, &y0, &cpu, &status), NANORT_INVALID_PROGRAM);
}

TEST(ModelVariants, AOneVariantProgramReportsItsTargetCpu) {
  ChainModel chain;
  float y0 = 0;
  std::string cpu;
  nanort_status status;
  ASSERT_EQ(LoadAndRun(chain.def, &y0, &cpu, &status), NANORT_OK) << status.message;
  EXPECT_EQ(cpu, "generic");
}

}  // namespace
}  // namespace nanort::test
