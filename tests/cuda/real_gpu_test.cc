// nanort's GPU offload on a real GPU through the real driver (libcuda.so.1),
// where one is present: the GPU chain (tests/runtime/test_program.h) with
// hand-written kernels (chain_kernels.ptx) as PTX and, where the toolkit's
// ptxas made them at build time, as sm_80 and sm_90 cubins. Each test skips,
// saying why, on a machine without a driver or a GPU.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "nanort/nanort.h"
#include "test_program.h"

NANORT_LINK_CUDA_OFFLOAD();

namespace nanort::test {
namespace {

// `path`, or its file name in the directory NANORT_TEST_IMAGE_DIR names (for
// running the binary on another machine, where the build's paths differ).
std::vector<uint8_t> ReadFile(const char* path) {
  std::string where = path;
  if (const char* dir = getenv("NANORT_TEST_IMAGE_DIR")) {
    where = std::string(dir) + "/" + where.substr(where.rfind('/') + 1);
  }
  std::ifstream file(where, std::ios::binary);
  EXPECT_TRUE(file) << "cannot read " << where;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(file),
                              std::istreambuf_iterator<char>());
}

// Runs the chain with `images` on x = {1, 2, 3, 4}; the chain's constants
// are w = {10, 20, 30, 40}, s = 0.5.
void RunChain(std::vector<GpuImageSpec> images, const std::string& expected_gpu_prefix) {
  unsetenv("NANORT_CUDA_DRIVER");
  ProgramSpec spec = GpuChainSpec();
  spec.gpu.images = std::move(images);
  ChainModel chain(spec);
  nanort_model* model = nullptr;
  nanort_status status;
  const nanort_status_code load =
      nanort_model_load(&chain.def, nanort_allocator_system(), &model, &status);
  if (load == NANORT_UNAVAILABLE) GTEST_SKIP() << "no GPU here: " << status.message;
  ASSERT_EQ(load, NANORT_OK) << status.message;
  const std::string gpu = nanort_model_gpu(model);
  printf("nanort_model_gpu: %s\n", gpu.c_str());
  EXPECT_EQ(gpu.rfind(expected_gpu_prefix, 0), 0u) << gpu;
  nanort_session* session = nullptr;
  ASSERT_EQ(nanort_session_create(model, nullptr, 0, nanort_allocator_system(), &session, &status),
            NANORT_OK)
      << status.message;
  static const int64_t kDims[] = {1, 4};
  for (int run = 0; run < 3; ++run) {
    const float x[4] = {1.f + run, 2, 3, 4};
    float y[4] = {-1, -1, -1, -1};
    const nanort_tensor in{const_cast<float*>(x), NANORT_F32, 2, kDims};
    const nanort_tensor out{y, NANORT_F32, 2, kDims};
    ASSERT_EQ(nanort_run(session, &in, 1, &out, 1, &status), NANORT_OK) << status.message;
    EXPECT_EQ(y[0], (11.f + run) * 0.5f) << "run " << run;
    EXPECT_EQ(y[1], 11.f);
    EXPECT_EQ(y[2], 16.5f);
    EXPECT_EQ(y[3], 22.f);
  }
  // What a run costs on this GPU: two copies, one graph launch, one
  // synchronize (reported, not asserted).
  const float x[4] = {1, 2, 3, 4};
  float y[4];
  const nanort_tensor in{const_cast<float*>(x), NANORT_F32, 2, kDims};
  const nanort_tensor out{y, NANORT_F32, 2, kDims};
  constexpr int kRuns = 2000;
  const auto start = std::chrono::steady_clock::now();
  for (int run = 0; run < kRuns; ++run) nanort_run(session, &in, 1, &out, 1, nullptr);
  const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
  printf("%s: %.1f us per nanort_run (mean of %d)\n", gpu.c_str(), took.count() / kRuns, kRuns);
  nanort_session_release(session);
  nanort_model_release(model);
}

GpuImageSpec PtxImage() {
  return {fb::GpuImageFormat::Ptx, 75, "", 70, ReadFile(NANORT_CHAIN_PTX)};
}

TEST(RealGpu, RunsTheChainFromPtx) { RunChain({PtxImage()}, "PTX 7.0 for sm_75, JIT-compiled"); }

TEST(RealGpu, RunsTheChainFromACubinWhereOneFits) {
#ifdef NANORT_CHAIN_CUBIN_SM80
  RunChain({{fb::GpuImageFormat::Cubin, 80, "", 70, ReadFile(NANORT_CHAIN_CUBIN_SM80)},
            {fb::GpuImageFormat::Cubin, 90, "", 70, ReadFile(NANORT_CHAIN_CUBIN_SM90)},
            PtxImage()},
           "");
#else
  GTEST_SKIP() << "no ptxas at build time: no cubins";
#endif
}

}  // namespace
}  // namespace nanort::test
