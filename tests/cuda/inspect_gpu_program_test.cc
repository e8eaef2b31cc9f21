// nanort-inspect on a format 1.3 program: GPU thunks, device buffers and the
// GPU module (images, kernels, device arena) in the text and JSON reports.
#include <gtest/gtest.h>
#include <stdio.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "test_program.h"

namespace nanort::test {
namespace {

std::string Inspect(const std::string& args) {
  std::string output;
  FILE* pipe = popen((std::string(NANORT_INSPECT) + " " + args + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  char chunk[4096];
  for (size_t n; (n = fread(chunk, 1, sizeof(chunk), pipe)) > 0;) output.append(chunk, n);
  pclose(pipe);
  return output;
}

class InspectGpuProgram : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "gpu_chain_" + std::to_string(getpid()) + ".nrt";
    ProgramSpec spec = GpuChainSpec();
    spec.gpu.images.push_back({fb::GpuImageFormat::Cubin, 90, "a", 80, FakeCubin("sm_90a")});
    spec.gpu.images.push_back({fb::GpuImageFormat::Ptx, 80, "", 85, FakePtx(".version 8.5")});
    spec.gpu.kernels[1].grid = {2, 3, 1};
    spec.gpu.kernels[1].shared_bytes = 4096;
    const std::vector<uint8_t> bytes = BuildProgram(spec);
    std::ofstream(path_, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
  void TearDown() override { remove(path_.c_str()); }
  std::string path_;
};

TEST_F(InspectGpuProgram, TextReportShowsGpuThunksBuffersAndModule) {
  const std::string text = Inspect(path_);
  for (
      const char* line : {
          "    0: node \"x\" op \"CopyToDevice\": gpu copy src 0 dst 2 size 16 (host to device)\n",
          "    1: node \"add0\" op \"Add\": gpu launch kernel 0 (\"add_f32\") args [2,5,3] outputs "
          "1\n",
          "    3: node \"y\" op \"CopyToHost\": gpu copy src 4 dst 1 size 16 (device to host)\n",
          "  2: device index 0 offset 0 size 16 alignment 64 name \"dx\"\n",
          "  5: deviceconstant index 0 offset 0 size 16 alignment 64 name \"w\"\n",
          "gpu device arena: 528 bytes, alignment 256\n",
          "gpu images: 3\n",
          "  0: cubin sm_80, ptx isa 8.0, 10 bytes\n",
          "  1: cubin sm_90a, ptx isa 8.0, 11 bytes\n",
          "  2: ptx sm_80, ptx isa 8.5, 12 bytes\n",
          "gpu kernels: 2\n",
          "  0: \"add_f32\" arg bytes [16,16,16] outputs 1 grid [1,1,1] block [128,1,1] shared 0\n",
          "  1: \"scale_f32\" arg bytes [16,4,16] outputs 1 grid [2,3,1] block [128,1,1] shared "
          "4096\n",
      }) {
    EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line << "in:\n" << text;
  }
}

TEST_F(InspectGpuProgram, JsonReportHasTheGpuModule) {
  const std::string json = Inspect("--json " + path_);
  for (
      const char* part : {
          "\"kind\": \"gpu_launch\", \"kernel\": 1, \"kernel_name\": \"scale_f32\", \"args\": [3, "
          "6, 4], \"num_outputs\": 1",
          "\"kind\": \"gpu_copy\", \"src\": 4, \"dst\": 1, \"size\": 16, \"direction\": \"device "
          "to host\"",
          "\"gpu\": {\"device_arena_size\": 528, \"device_arena_alignment\": 256",
          "{\"format\": \"cubin\", \"sm\": 90, \"variant\": \"a\", \"ptx_isa\": 80, \"bytes\": 11}",
          "{\"name\": \"scale_f32\", \"arg_bytes\": [16, 4, 16], \"num_outputs\": 1, \"grid\": [2, "
          "3, 1], \"block\": [128, 1, 1], \"shared_bytes\": 4096}",
      }) {
    EXPECT_NE(json.find(part), std::string::npos) << "missing: " << part << "\nin:\n" << json;
  }
}

}  // namespace
}  // namespace nanort::test
