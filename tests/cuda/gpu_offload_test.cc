// nanort's GPU offload against a fake CUDA driver (fake_cuda_driver.c, loaded
// through NANORT_CUDA_DRIVER): which image load picks for each compute
// capability and driver version, what session creation and run ask of the
// driver (read back from the fake's call log), that copies really move the
// caller's bytes, and how nanort refuses the toolkit's stub library, a
// missing driver and driver errors.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "cuda/sha256.h"
#include "nanort/nanort.h"
#include "test_program.h"

// This binary loads GPU programs from its own defs: it links the offload.
// (Twice, as two models' headers would: each use names its own reference.)
NANORT_LINK_CUDA_OFFLOAD();
NANORT_LINK_CUDA_OFFLOAD();

namespace nanort::test {
namespace {

class GpuOffload : public ::testing::Test {
 protected:
  void SetUp() override {
    log_ = ::testing::TempDir() + "fake_cuda_" + std::to_string(getpid()) + ".log";
    remove(log_.c_str());
    setenv("NANORT_CUDA_DRIVER", NANORT_FAKE_CUDA_DRIVER, 1);
    setenv("FAKE_CUDA_LOG", log_.c_str(), 1);
    setenv("FAKE_CUDA_CC", "86", 1);
    for (const char* name : {"FAKE_CUDA_DRIVER_VERSION", "FAKE_CUDA_INIT_ERROR", "FAKE_CUDA_FAIL",
                             "FAKE_CUDA_MISSING_KERNEL"}) {
      unsetenv(name);
    }
  }
  void TearDown() override {
    remove(log_.c_str());
    unsetenv("FAKE_CUDA_LOG");
  }

  std::vector<std::string> Log() const {
    std::vector<std::string> lines;
    std::ifstream file(log_);
    for (std::string line; std::getline(file, line);) lines.push_back(line);
    return lines;
  }
  void ClearLog() const { remove(log_.c_str()); }
  // Calls whose log line is `call` or starts with `call` and a space.
  int Count(const std::string& call) const {
    int count = 0;
    for (const std::string& line : Log()) {
      count += line == call || line.rfind(call + " ", 0) == 0;
    }
    return count;
  }
  std::string Joined() const {
    std::string text;
    for (const std::string& line : Log()) text += line + "\n";
    return text;
  }

  std::string log_;
};

struct Loaded {
  nanort_status_code code;
  std::string message;
  std::string gpu;  // nanort_model_gpu, "" when NULL
};

Loaded LoadOnly(const ProgramSpec& spec) {
  ChainModel chain(spec);
  nanort_model* model = nullptr;
  nanort_status status;
  const nanort_status_code code =
      nanort_model_load(&chain.def, nanort_allocator_system(), &model, &status);
  Loaded loaded{code, status.message, ""};
  if (model != nullptr && nanort_model_gpu(model) != nullptr) loaded.gpu = nanort_model_gpu(model);
  nanort_model_release(model);
  return loaded;
}

ProgramSpec WithImages(std::vector<GpuImageSpec> images) {
  ProgramSpec spec = GpuChainSpec();
  spec.gpu.images = std::move(images);
  return spec;
}

GpuImageSpec Cubin(uint32_t sm, std::string variant = "") {
  const std::string tag = "sm_" + std::to_string(sm) + variant;
  return {fb::GpuImageFormat::Cubin, sm, variant, 78, FakeCubin(tag)};
}

GpuImageSpec Ptx(uint32_t sm, uint32_t isa) {
  const std::string tag = "ptx" + std::to_string(isa) + ":sm_" + std::to_string(sm);
  return {fb::GpuImageFormat::Ptx, sm, "", isa, FakePtx(tag)};
}

// A model and a session on it, released in order.
class Session {
 public:
  explicit Session(const ProgramSpec& spec) : chain_(spec) {
    load_ = nanort_model_load(&chain_.def, nanort_allocator_system(), &model_, &status_);
    if (load_ != NANORT_OK) return;
    create_ =
        nanort_session_create(model_, nullptr, 0, nanort_allocator_system(), &session_, &status_);
  }
  ~Session() {
    nanort_session_release(session_);
    nanort_model_release(model_);
  }
  void Release() {
    nanort_session_release(session_);
    session_ = nullptr;
  }
  // Runs x -> y on [1,4] f32 tensors.
  nanort_status_code Run(const float* x, float* y) {
    static const int64_t kDims[] = {1, 4};
    const nanort_tensor in{const_cast<float*>(x), NANORT_F32, 2, kDims};
    const nanort_tensor out{y, NANORT_F32, 2, kDims};
    return nanort_run(session_, &in, 1, &out, 1, &status_);
  }

  nanort_status_code load_ = NANORT_UNAVAILABLE, create_ = NANORT_UNAVAILABLE;
  nanort_status status_{};
  ChainModel chain_;
  nanort_model* model_ = nullptr;
  nanort_session* session_ = nullptr;
};

// ---- image selection ----

TEST_F(GpuOffload, Device86PicksTheSm80CubinOverSm75AndPtx) {
  Session s(WithImages({Cubin(75), Ptx(80, 80), Cubin(80), Cubin(89)}));
  ASSERT_EQ(s.load_, NANORT_OK) << s.status_.message;
  EXPECT_STREQ(nanort_model_gpu(s.model_), "sm_80 cubin on NVIDIA compute capability 8.6");
  ASSERT_EQ(s.create_, NANORT_OK) << s.status_.message;
  EXPECT_EQ(Count("cuModuleLoadData .ELF:sm_80"), 1) << Joined();
  EXPECT_EQ(Count("cuModuleLoadData"), 1) << Joined();
}

TEST_F(GpuOffload, Device90PicksTheSm90aCubin) {
  setenv("FAKE_CUDA_CC", "90", 1);
  Session s(WithImages({Cubin(80), Cubin(90), Cubin(90, "a"), Ptx(90, 80)}));
  ASSERT_EQ(s.load_, NANORT_OK) << s.status_.message;
  EXPECT_STREQ(nanort_model_gpu(s.model_), "sm_90a cubin on NVIDIA compute capability 9.0");
  ASSERT_EQ(s.create_, NANORT_OK) << s.status_.message;
  EXPECT_EQ(Count("cuModuleLoadData .ELF:sm_90a"), 1) << Joined();
}

TEST_F(GpuOffload, AnSm90aCubinDoesNotRunOnDevice100) {
  setenv("FAKE_CUDA_CC", "100", 1);
  const Loaded loaded = LoadOnly(WithImages({Cubin(90, "a"), Ptx(90, 80)}));
  ASSERT_EQ(loaded.code, NANORT_OK) << loaded.message;
  EXPECT_EQ(loaded.gpu, "PTX 8.0 for sm_90, JIT-compiled for NVIDIA compute capability 10.0");
}

TEST_F(GpuOffload, Device120WithOnlySm80AndSm90CubinsPicksThePtx) {
  setenv("FAKE_CUDA_CC", "120", 1);
  Session s(WithImages({Cubin(80), Cubin(90), Ptx(80, 80)}));
  ASSERT_EQ(s.load_, NANORT_OK) << s.status_.message;
  EXPECT_STREQ(nanort_model_gpu(s.model_),
               "PTX 8.0 for sm_80, JIT-compiled for NVIDIA compute capability 12.0");
  ASSERT_EQ(s.create_, NANORT_OK) << s.status_.message;
  // The PTX reaches the driver NUL-terminated (the fake reads to the NUL).
  EXPECT_EQ(Count("cuModuleLoadData ptx80:sm_80"), 1) << Joined();
}

TEST_F(GpuOffload, ThePtxForTheHighestSmTheDriverReadsWins) {
  setenv("FAKE_CUDA_CC", "120", 1);
  setenv("FAKE_CUDA_DRIVER_VERSION", "12040", 1);  // PTX ISA up to 8.4
  const Loaded loaded = LoadOnly(WithImages({Ptx(75, 78), Ptx(80, 80), Ptx(90, 85)}));
  ASSERT_EQ(loaded.code, NANORT_OK) << loaded.message;
  EXPECT_EQ(loaded.gpu, "PTX 8.0 for sm_80, JIT-compiled for NVIDIA compute capability 12.0");
}

TEST_F(GpuOffload, Device70IsRefusedNamingItsCapabilityAndTheImages) {
  setenv("FAKE_CUDA_CC", "70", 1);
  const Loaded loaded = LoadOnly(WithImages({Cubin(80), Cubin(90, "a"), Ptx(80, 80)}));
  EXPECT_EQ(loaded.code, NANORT_UNSUPPORTED_TARGET);
  EXPECT_EQ(loaded.message,
            "GPU compute capability 7.0; the program has sm_80 cubin, sm_90a cubin, PTX 8.0 for "
            "sm_80");
}

TEST_F(GpuOffload, ADriverTooOldForThePtxIsUnavailable) {
  setenv("FAKE_CUDA_CC", "120", 1);
  setenv("FAKE_CUDA_DRIVER_VERSION", "12020", 1);  // PTX ISA up to 8.2
  const Loaded loaded = LoadOnly(WithImages({Cubin(80), Ptx(80, 85)}));
  EXPECT_EQ(loaded.code, NANORT_UNAVAILABLE);
  EXPECT_NE(loaded.message.find("CUDA driver 12.2 is too old"), std::string::npos)
      << loaded.message;
  EXPECT_NE(loaded.message.find("up to ISA 8.2"), std::string::npos) << loaded.message;
  EXPECT_NE(loaded.message.find("PTX 8.5 for sm_80"), std::string::npos) << loaded.message;
}

// ---- refusals without a usable driver ----

TEST_F(GpuOffload, NoDriverIsUnavailable) {
  setenv("NANORT_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  const Loaded loaded = LoadOnly(GpuChainSpec());
  EXPECT_EQ(loaded.code, NANORT_UNAVAILABLE);
  EXPECT_EQ(loaded.message.rfind("no CUDA driver: cannot load /nonexistent/libcuda.so.1", 0), 0u)
      << loaded.message;
}

TEST_F(GpuOffload, TheToolkitsStubLibraryIsUnavailable) {
  if (access(NANORT_CUDA_STUB_DRIVER, R_OK) != 0) {
    GTEST_SKIP() << "no CUDA toolkit stub at " << NANORT_CUDA_STUB_DRIVER;
  }
  setenv("NANORT_CUDA_DRIVER", NANORT_CUDA_STUB_DRIVER, 1);
  const Loaded loaded = LoadOnly(GpuChainSpec());
  EXPECT_EQ(loaded.code, NANORT_UNAVAILABLE);
  EXPECT_NE(loaded.message.find("stub library (CUDA_ERROR_STUB_LIBRARY)"), std::string::npos)
      << loaded.message;
  EXPECT_NE(loaded.message.find("no NVIDIA driver installed"), std::string::npos) << loaded.message;
}

TEST_F(GpuOffload, NoDeviceIsUnavailable) {
  setenv("FAKE_CUDA_INIT_ERROR", "100", 1);
  const Loaded loaded = LoadOnly(GpuChainSpec());
  EXPECT_EQ(loaded.code, NANORT_UNAVAILABLE);
  EXPECT_NE(loaded.message.find("no CUDA device"), std::string::npos) << loaded.message;
  EXPECT_NE(loaded.message.find("CUDA_ERROR_NO_DEVICE"), std::string::npos) << loaded.message;
}

TEST_F(GpuOffload, ACpuModelNeverLoadsTheDriver) {
  ChainModel chain;
  nanort_model* model = nullptr;
  ASSERT_EQ(nanort_model_load(&chain.def, nanort_allocator_system(), &model, nullptr), NANORT_OK);
  EXPECT_EQ(nanort_model_gpu(model), nullptr);
  nanort_model_release(model);
  EXPECT_EQ(Count("cuInit"), 0);
}

// ---- sessions ----

TEST_F(GpuOffload, ASessionMakesOneDeviceAllocationAndCapturesTheLaunchesOnce) {
  Session s(GpuChainSpec());
  ASSERT_EQ(s.create_, NANORT_OK) << s.status_.message;
  EXPECT_EQ(Count("cuMemAlloc"), 1) << Joined();
  // The device arena (528 bytes) rounded to 256, then the constants w and s
  // (blob bytes [0, 68)).
  EXPECT_EQ(Count("cuMemAlloc 836"), 1) << Joined();
  EXPECT_EQ(Count("cuMemcpyHtoD 68"), 1) << Joined();
  EXPECT_EQ(Count("cuStreamCreate"), 1);
  EXPECT_EQ(Count("cuStreamBeginCapture 1"), 1);
  EXPECT_EQ(Count("cuLaunchKernel grid 1,1,1 block 128,1,1 shared 0"), 2);
  EXPECT_EQ(Count("cuGraphInstantiateWithFlags"), 1);
  EXPECT_EQ(Count("cuModuleGetFunction add_f32"), 1);
  EXPECT_EQ(Count("cuModuleGetFunction scale_f32"), 1);
  EXPECT_EQ(Count("cuGraphLaunch"), 0);

  Session second(GpuChainSpec());
  ASSERT_EQ(second.create_, NANORT_OK) << second.status_.message;
  EXPECT_EQ(Count("cuMemAlloc"), 2) << Joined();
}

TEST_F(GpuOffload, AnAllGpuRunIsCopiesOneGraphLaunchAndOneSynchronize) {
  Session s(GpuChainSpec());
  ASSERT_EQ(s.create_, NANORT_OK) << s.status_.message;
  const float x[4] = {1, 2, 3, 4};
  float y[4] = {};
  for (int run = 0; run < 3; ++run) {
    ClearLog();
    ASSERT_EQ(s.Run(x, y), NANORT_OK) << s.status_.message;
    const std::vector<std::string> expected = {
        "cuCtxPushCurrent",     "cuMemcpyHtoDAsync 16", "cuGraphLaunch",
        "cuMemcpyDtoHAsync 16", "cuStreamSynchronize",  "cuCtxPopCurrent",
    };
    EXPECT_EQ(Log(), expected) << "run " << run;
  }
}

// A device-to-device copy between two launches splits them into two graphs.
TEST_F(GpuOffload, ACopyBetweenLaunchesMakesTwoGraphs) {
  using K = fb::BufferKind;
  ProgramSpec spec = GpuChainSpec();
  spec.buffers.push_back({K::Device, 0, 768, 16, "dt2"});
  spec.gpu.device_arena_size = 784;
  ThunkSpec copy;
  copy.kind = fb::ThunkKind::GpuCopyThunk, copy.src = 3, copy.dst = 7, copy.size = 16;
  spec.thunks[2].args = {7, 6, 4};
  spec.thunks.insert(spec.thunks.begin() + 2, copy);
  Session s(spec);
  ASSERT_EQ(s.create_, NANORT_OK) << s.status_.message;
  EXPECT_EQ(Count("cuStreamBeginCapture"), 2);
  EXPECT_EQ(Count("cuGraphInstantiateWithFlags"), 2);
  ClearLog();
  const float x[4] = {1, 2, 3, 4};
  float y[4] = {};
  ASSERT_EQ(s.Run(x, y), NANORT_OK) << s.status_.message;
  const std::vector<std::string> expected = {
      "cuCtxPushCurrent", "cuMemcpyHtoDAsync 16", "cuGraphLaunch",       "cuMemcpyDtoDAsync 16",
      "cuGraphLaunch",    "cuMemcpyDtoHAsync 16", "cuStreamSynchronize", "cuCtxPopCurrent",
  };
  EXPECT_EQ(Log(), expected);
}

// x -> d -> y through one device buffer and two GPU copies.
ProgramSpec RoundTripSpec() {
  using K = fb::BufferKind;
  ProgramSpec spec = GpuChainSpec();
  spec.buffers = {
      {K::Input, 0, 0, 16, "x"}, {K::Output, 0, 0, 16, "y"}, {K::Device, 0, 256, 16, "d"}};
  ThunkSpec in, out;
  in.kind = out.kind = fb::ThunkKind::GpuCopyThunk;
  in.src = 0, in.dst = 2, in.size = 16;
  out.src = 2, out.dst = 1, out.size = 16;
  spec.thunks = {in, out};
  spec.gpu.device_arena_size = 272;
  return spec;
}

// x -> device -> y: the fake's device memory is host memory, so the bytes
// arrive only if nanort copied from the caller's input and into its output.
TEST_F(GpuOffload, HostToDeviceToHostCopiesRoundTripTheBytes) {
  Session s(RoundTripSpec());
  ASSERT_EQ(s.create_, NANORT_OK) << s.status_.message;
  const float x[4] = {1.5f, -2.25f, 3e9f, 0.125f};
  float y[4] = {};
  ASSERT_EQ(s.Run(x, y), NANORT_OK) << s.status_.message;
  EXPECT_EQ(memcmp(x, y, sizeof(x)), 0);
  const float x2[4] = {7, 8, 9, 10};
  ASSERT_EQ(s.Run(x2, y), NANORT_OK) << s.status_.message;
  EXPECT_EQ(memcmp(x2, y, sizeof(x2)), 0);
  // No launches: no graph.
  EXPECT_EQ(Count("cuStreamBeginCapture"), 0);
  EXPECT_EQ(Count("cuGraphLaunch"), 0);
}

// ---- the GPU seal (nanort_gpu_seal): the object's digests of the GPU part ----

std::string Hex(const uint8_t* digest) {
  std::string text;
  for (int i = 0; i < 32; ++i) {
    static const char kDigits[] = "0123456789abcdef";
    text += kDigits[digest[i] >> 4];
    text += kDigits[digest[i] & 15];
  }
  return text;
}

std::string Sha256Of(const std::string& text) {
  cuda::Sha256 sha;
  sha.Update(text.data(), text.size());
  uint8_t digest[32];
  sha.Final(digest);
  return Hex(digest);
}

TEST(Sha256, MatchesFips180Vectors) {
  EXPECT_EQ(Sha256Of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // A million 'a's, fed in uneven pieces (the buffering across blocks).
  cuda::Sha256 sha;
  const std::string piece(997, 'a');
  size_t fed = 0;
  for (; fed + piece.size() <= 1000000; fed += piece.size()) sha.Update(piece.data(), piece.size());
  sha.Update(piece.data(), 1000000 - fed);
  uint8_t digest[32];
  sha.Final(digest);
  EXPECT_EQ(Hex(digest), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// `chain` keeps the seal of the program it was made for; def.program points
// at `other` (a program nanoc did not seal).
Loaded LoadWithProgram(ChainModel& chain, const std::vector<uint8_t>& other) {
  chain.def.program = other.data();
  chain.def.program_size = other.size();
  nanort_model* model = nullptr;
  nanort_status status;
  const nanort_status_code code =
      nanort_model_load(&chain.def, nanort_allocator_system(), &model, &status);
  Loaded loaded{code, status.message, ""};
  nanort_model_release(model);
  return loaded;
}

TEST_F(GpuOffload, AKernelTableOtherThanTheSealedOneIsRefusedBeforeTheDriverLoads) {
  ChainModel chain(GpuChainSpec());
  ProgramSpec bigger = GpuChainSpec();
  bigger.gpu.kernels[0].grid = {2, 1, 1};  // twice the threads: what a tamperer would want
  const std::vector<uint8_t> other = BuildProgram(bigger);
  ClearLog();
  const Loaded loaded = LoadWithProgram(chain, other);
  EXPECT_EQ(loaded.code, NANORT_INVALID_PROGRAM);
  EXPECT_EQ(loaded.message,
            "the program's GPU kernel table is not the one nanoc compiled into this object "
            "(SHA-256 differs from its seal)");
  EXPECT_EQ(Count("cuInit"), 0) << Joined();
  // The same program, sealed, loads.
  chain.SetProgram(other);
  EXPECT_EQ(LoadOnly(bigger).code, NANORT_OK);
}

TEST_F(GpuOffload, AnImageOtherThanTheSealedOneNeverReachesTheDriver) {
  ProgramSpec spec = WithImages({Cubin(80), Ptx(75, 70)});
  ChainModel chain(spec);
  ProgramSpec changed = spec;
  changed.gpu.images[0].data.back() ^= 1;  // the sm_80 cubin a device 8.6 picks
  ClearLog();
  Loaded loaded = LoadWithProgram(chain, BuildProgram(changed));
  EXPECT_EQ(loaded.code, NANORT_INVALID_PROGRAM);
  EXPECT_EQ(loaded.message,
            "the program's GPU image 0 is not the one nanoc compiled into this object (SHA-256 "
            "differs from its seal)");
  EXPECT_EQ(Count("cuModuleLoadData"), 0) << Joined();
  // An image the device does not pick is not read at load: a changed PTX for
  // sm_75 loads on 8.6 (its cubin is chosen) and is refused where it is the
  // one chosen (no cubin fits 12.0).
  changed = spec;
  changed.gpu.images[1].data.back() ^= 1;
  const std::vector<uint8_t> other_ptx = BuildProgram(changed);
  EXPECT_EQ(LoadWithProgram(chain, other_ptx).code, NANORT_OK);
  setenv("FAKE_CUDA_CC", "120", 1);
  loaded = LoadWithProgram(chain, other_ptx);
  EXPECT_EQ(loaded.code, NANORT_INVALID_PROGRAM) << loaded.message;
  EXPECT_NE(loaded.message.find("GPU image 1 is not the one"), std::string::npos);
}

TEST_F(GpuOffload, AGpuProgramWithoutASealIsRefused) {
  ChainModel chain(GpuChainSpec());
  chain.def.gpu = nullptr;
  nanort_model* model = nullptr;
  nanort_status status;
  EXPECT_EQ(nanort_model_load(&chain.def, nanort_allocator_system(), &model, &status),
            NANORT_INVALID_PROGRAM);
  EXPECT_STREQ(status.message,
               "the program has a GPU part, but the object carries no GPU seal for it "
               "(nanort_model_def.gpu is NULL)");
  ChainModel second(WithImages({Cubin(80), Cubin(90)}));
  nanort_gpu_seal fewer = *second.def.gpu;
  fewer.num_images = 1;
  second.def.gpu = &fewer;
  EXPECT_EQ(nanort_model_load(&second.def, nanort_allocator_system(), &model, &status),
            NANORT_INVALID_PROGRAM);
  EXPECT_STREQ(status.message, "the program's GPU module has 2 images, the object's seal 1");
}

// ---- inputs and outputs in CUDA memory (nanort_run_with_memory) ----

// Device memory from the fake driver itself, as a caller's cuMemAlloc would
// make it (the fake's device memory is host memory, so a test reads and
// writes it directly).
class FakeDeviceMemory {
 public:
  explicit FakeDeviceMemory(size_t bytes) {
    void* library = dlopen(NANORT_FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(library, nullptr) << dlerror();
    if (library == nullptr) return;
    using GetProc = int (*)(const char*, void**, int, unsigned long long, int*);
    auto get = reinterpret_cast<GetProc>(dlsym(library, "cuGetProcAddress_v2"));
    void* alloc = nullptr;
    get("cuMemAlloc", &alloc, 12000, 0, nullptr);
    get("cuMemFree", reinterpret_cast<void**>(&free_), 12000, 0, nullptr);
    unsigned long long pointer = 0;
    EXPECT_EQ(reinterpret_cast<int (*)(unsigned long long*, size_t)>(alloc)(&pointer, bytes), 0);
    data_ = reinterpret_cast<float*>(static_cast<uintptr_t>(pointer));
  }
  ~FakeDeviceMemory() {
    if (data_ != nullptr)
      free_(static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(data_)));
  }
  float* data() const { return data_; }

 private:
  float* data_ = nullptr;
  int (*free_)(unsigned long long) = nullptr;
};

nanort_status_code RunWithMemory(Session& s, const float* x, nanort_memory x_memory, float* y,
                                 nanort_memory y_memory) {
  static const int64_t kDims[] = {1, 4};
  const nanort_tensor in{const_cast<float*>(x), NANORT_F32, 2, kDims};
  const nanort_tensor out{y, NANORT_F32, 2, kDims};
  return nanort_run_with_memory(s.session_, &in, &x_memory, 1, &out, &y_memory, 1, &s.status_);
}

TEST_F(GpuOffload, InputsAndOutputsInCudaMemoryAreCopiedDeviceToDevice) {
  Session s(RoundTripSpec());
  ASSERT_EQ(s.create_, NANORT_OK) << s.status_.message;
  EXPECT_EQ(nanort_model_tensor_memory(s.model_, 0, 0), 3u);
  EXPECT_EQ(nanort_model_tensor_memory(s.model_, 1, 0), 3u);
  FakeDeviceMemory x(16), y(16);
  const float values[4] = {1.5f, -2.25f, 3e9f, 0.125f};
  memcpy(x.data(), values, sizeof(values));
  ClearLog();
  ASSERT_EQ(RunWithMemory(s, x.data(), NANORT_MEMORY_CUDA, y.data(), NANORT_MEMORY_CUDA), NANORT_OK)
      << s.status_.message;
  EXPECT_EQ(memcmp(values, y.data(), sizeof(values)), 0);
  const std::vector<std::string> expected = {
      "cuCtxPushCurrent",     "cuMemGetAddressRange", "cuMemGetAddressRange",
      "cuMemcpyDtoDAsync 16", "cuMemcpyDtoDAsync 16", "cuStreamSynchronize",
      "cuCtxPopCurrent",
  };
  EXPECT_EQ(Log(), expected);

  // Mixed: a device input, a host output; then both on the host again.
  float host[4] = {};
  ClearLog();
  ASSERT_EQ(RunWithMemory(s, x.data(), NANORT_MEMORY_CUDA, host, NANORT_MEMORY_HOST), NANORT_OK)
      << s.status_.message;
  EXPECT_EQ(memcmp(values, host, sizeof(values)), 0);
  EXPECT_EQ(Count("cuMemcpyDtoDAsync 16"), 1) << Joined();
  EXPECT_EQ(Count("cuMemcpyDtoHAsync 16"), 1) << Joined();
  const float again[4] = {4, 3, 2, 1};
  ClearLog();
  ASSERT_EQ(RunWithMemory(s, again, NANORT_MEMORY_HOST, host, NANORT_MEMORY_HOST), NANORT_OK)
      << s.status_.message;
  EXPECT_EQ(memcmp(again, host, sizeof(again)), 0);
  EXPECT_EQ(Count("cuMemGetAddressRange"), 0) << Joined();
  EXPECT_EQ(Count("cuMemcpyDtoDAsync"), 0) << Joined();
}

TEST_F(GpuOffload, HostMemoryPassedAsCudaMemoryIsRefusedBeforeAnyCopy) {
  Session s(RoundTripSpec());
  ASSERT_EQ(s.create_, NANORT_OK) << s.status_.message;
  const float x[4] = {1, 2, 3, 4};
  float y[4] = {};
  ClearLog();
  EXPECT_EQ(RunWithMemory(s, x, NANORT_MEMORY_CUDA, y, NANORT_MEMORY_HOST),
            NANORT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(s.status_.message).find("input 'x' is said to be in CUDA memory"),
            std::string::npos)
      << s.status_.message;
  EXPECT_NE(std::string(s.status_.message).find("CUDA_ERROR_NOT_FOUND"), std::string::npos)
      << s.status_.message;
  EXPECT_EQ(Count("cuMemcpy"), 0) << Joined();
  EXPECT_EQ(Count("cuMemcpyDtoDAsync"), 0) << Joined();
  EXPECT_EQ(Count("cuCtxPopCurrent"), 1) << Joined();
}

TEST_F(GpuOffload, ACudaTensorPastTheEndOfItsAllocationIsRefused) {
  Session s(RoundTripSpec());
  ASSERT_EQ(s.create_, NANORT_OK) << s.status_.message;
  FakeDeviceMemory small(12), big(32), x(16);
  float y[4] = {};
  ClearLog();
  EXPECT_EQ(RunWithMemory(s, small.data(), NANORT_MEMORY_CUDA, y, NANORT_MEMORY_HOST),
            NANORT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(s.status_.message).find("input 'x': its 16 bytes at "), std::string::npos)
      << s.status_.message;
  EXPECT_NE(
      std::string(s.status_.message).find("run past the end of its CUDA allocation (12 bytes"),
      std::string::npos)
      << s.status_.message;
  // 16 bytes from byte 16 of 32 fit; from byte 20 they do not.
  EXPECT_EQ(RunWithMemory(s, x.data(), NANORT_MEMORY_CUDA, big.data() + 4, NANORT_MEMORY_CUDA),
            NANORT_OK)
      << s.status_.message;
  EXPECT_EQ(RunWithMemory(s, x.data(), NANORT_MEMORY_CUDA, big.data() + 5, NANORT_MEMORY_CUDA),
            NANORT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(s.status_.message).find("output 'y': its 16 bytes"), std::string::npos)
      << s.status_.message;
  EXPECT_EQ(Count("cuMemcpyDtoDAsync"), 2) << Joined();  // only the run that fit
}

TEST_F(GpuOffload, ATensorTheHostTouchesMustBeInHostMemory) {
  using K = fb::BufferKind;
  // x -> dx; add; scale; dy -> t; host copy t -> y: y is written on the host.
  ProgramSpec spec = GpuChainSpec();
  spec.buffers.push_back({K::Arena, 0, 0, 16, "t"});
  spec.arena_size = 16;
  spec.thunks[3].dst = 7;
  ThunkSpec host;
  host.kind = fb::ThunkKind::CopyThunk, host.src = 7, host.dst = 1, host.size = 16;
  spec.thunks.push_back(host);
  Session s(spec);
  ASSERT_EQ(s.create_, NANORT_OK) << s.status_.message;
  EXPECT_EQ(nanort_model_tensor_memory(s.model_, 0, 0), 3u);  // x: host or CUDA
  EXPECT_EQ(nanort_model_tensor_memory(s.model_, 1, 0), 1u);  // y: host only
  EXPECT_EQ(nanort_model_tensor_memory(s.model_, 1, 1), 0u);  // no such output
  FakeDeviceMemory x(16), y(16);
  float host_y[4] = {};
  EXPECT_EQ(RunWithMemory(s, x.data(), NANORT_MEMORY_CUDA, y.data(), NANORT_MEMORY_CUDA),
            NANORT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(s.status_.message)
                .find("output 'y' is in CUDA memory, but this program writes it on the host "
                      "(thunk 4"),
            std::string::npos)
      << s.status_.message;
  const float values[4] = {1, 2, 3, 4};
  memcpy(x.data(), values, sizeof(values));
  ASSERT_EQ(RunWithMemory(s, x.data(), NANORT_MEMORY_CUDA, host_y, NANORT_MEMORY_HOST), NANORT_OK)
      << s.status_.message;
}

TEST_F(GpuOffload, CudaMemoryForACpuModelAndUnknownKindsAreRefused) {
  ChainModel chain;
  nanort_model* model = nullptr;
  nanort_session* session = nullptr;
  nanort_status status;
  ASSERT_EQ(nanort_model_load(&chain.def, nanort_allocator_system(), &model, &status), NANORT_OK);
  ASSERT_EQ(nanort_session_create(model, nullptr, 0, nanort_allocator_system(), &session, &status),
            NANORT_OK);
  EXPECT_EQ(nanort_model_tensor_memory(model, 0, 0), 1u);
  EXPECT_EQ(nanort_model_tensor_memory(nullptr, 0, 0), 0u);
  static const int64_t kDims[] = {1, 4};
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  const nanort_tensor in{x, NANORT_F32, 2, kDims};
  const nanort_tensor out{y, NANORT_F32, 2, kDims};
  const nanort_memory cuda = NANORT_MEMORY_CUDA, host = NANORT_MEMORY_HOST;
  const nanort_memory unknown = static_cast<nanort_memory>(7);
  EXPECT_EQ(nanort_run_with_memory(session, &in, &cuda, 1, &out, &host, 1, &status),
            NANORT_INVALID_ARGUMENT);
  EXPECT_STREQ(status.message, "input 'x' is in CUDA memory, but this model runs nothing on a GPU");
  EXPECT_EQ(nanort_run_with_memory(session, &in, &host, 1, &out, &unknown, 1, &status),
            NANORT_INVALID_ARGUMENT);
  EXPECT_STREQ(status.message, "output 'y': unknown memory kind 7");
  EXPECT_EQ(nanort_run_with_memory(session, &in, &host, 1, &out, &host, 1, &status), NANORT_OK)
      << status.message;
  EXPECT_EQ(nanort_run_with_memory(session, &in, nullptr, 1, &out, nullptr, 1, &status), NANORT_OK)
      << status.message;
  nanort_session_release(session);
  nanort_model_release(model);
}

// Logs "host kernel" to the fake's log, then copies its input to its output.
void LoggingCopy(const nanort_kernel_args* args, uint64_t, uint64_t) {
  if (FILE* file = fopen(getenv("FAKE_CUDA_LOG"), "a")) {
    fputs("host kernel\n", file);
    fclose(file);
  }
  memcpy(args->buffers[2], args->buffers[0], 16);
}

TEST_F(GpuOffload, AHostThunkAfterGpuWorkWaitsForIt) {
  using K = fb::BufferKind;
  ProgramSpec spec = GpuChainSpec();
  spec.buffers.push_back({K::Arena, 0, 0, 16, "t"});
  spec.arena_size = 16;
  // x -> dx; add; scale; dy -> t (host arena); host add(t, w) -> y.
  spec.buffers.push_back({K::Constant, 0, 0, 16, "w_host"});
  spec.thunks[3].dst = 7;
  ThunkSpec host;
  host.kernel = 0, host.args = {7, 8, 1}, host.task_count = kChainLength;
  spec.thunks.push_back(host);
  ChainModel chain(spec);
  chain.kernels[0].fn = LoggingCopy;
  nanort_model* model = nullptr;
  nanort_status status;
  ASSERT_EQ(nanort_model_load(&chain.def, nanort_allocator_system(), &model, &status), NANORT_OK)
      << status.message;
  nanort_session* session = nullptr;
  ASSERT_EQ(nanort_session_create(model, nullptr, 0, nanort_allocator_system(), &session, &status),
            NANORT_OK)
      << status.message;
  ClearLog();
  static const int64_t kDims[] = {1, 4};
  const float x[4] = {1, 2, 3, 4};
  float y[4] = {};
  const nanort_tensor in{const_cast<float*>(x), NANORT_F32, 2, kDims};
  const nanort_tensor out{y, NANORT_F32, 2, kDims};
  ASSERT_EQ(nanort_run(session, &in, 1, &out, 1, &status), NANORT_OK) << status.message;
  const std::vector<std::string> expected = {
      "cuCtxPushCurrent",    "cuMemcpyHtoDAsync 16", "cuGraphLaunch",   "cuMemcpyDtoHAsync 16",
      "cuStreamSynchronize", "host kernel",          "cuCtxPopCurrent",
  };
  EXPECT_EQ(Log(), expected);
  nanort_session_release(session);
  nanort_model_release(model);
}

TEST_F(GpuOffload, SessionReleaseFreesEverythingItMade) {
  Session s(GpuChainSpec());
  ASSERT_EQ(s.create_, NANORT_OK) << s.status_.message;
  s.Release();
  EXPECT_EQ(Count("cuGraphExecDestroy"), Count("cuGraphInstantiateWithFlags"));
  EXPECT_EQ(Count("cuGraphDestroy"), Count("cuStreamEndCapture"));
  EXPECT_EQ(Count("cuMemFree"), 1);
  EXPECT_EQ(Count("cuStreamDestroy"), 1);
  EXPECT_EQ(Count("cuModuleUnload"), 1);
  EXPECT_EQ(Count("cuDevicePrimaryCtxRelease"), Count("cuDevicePrimaryCtxRetain"));
  EXPECT_EQ(Count("cuCtxPopCurrent"), Count("cuCtxPushCurrent"));
}

// ---- driver errors ----

TEST_F(GpuOffload, ADriverErrorAtSessionCreationNamesTheCallAndReleasesWhatWasMade) {
  setenv("FAKE_CUDA_FAIL", "cuMemAlloc", 1);
  Session s(GpuChainSpec());
  ASSERT_EQ(s.load_, NANORT_OK);
  EXPECT_EQ(s.create_, NANORT_UNAVAILABLE);
  EXPECT_STREQ(s.status_.message, "GPU session: cuMemAlloc failed with CUDA_ERROR_UNKNOWN");
  EXPECT_EQ(s.session_, nullptr);
  EXPECT_EQ(Count("cuModuleUnload"), 1) << Joined();
  EXPECT_EQ(Count("cuDevicePrimaryCtxRelease"), 1) << Joined();
  EXPECT_EQ(Count("cuCtxPopCurrent"), Count("cuCtxPushCurrent")) << Joined();
}

TEST_F(GpuOffload, AKernelMissingFromTheImageIsAnInvalidProgram) {
  setenv("FAKE_CUDA_MISSING_KERNEL", "scale_f32", 1);
  Session s(GpuChainSpec());
  EXPECT_EQ(s.create_, NANORT_INVALID_PROGRAM);
  EXPECT_STREQ(s.status_.message,
               "GPU session: the image has no kernel 'scale_f32' (cuModuleGetFunction: "
               "CUDA_ERROR_NOT_FOUND)");
}

TEST_F(GpuOffload, AFailedCaptureIsReported) {
  setenv("FAKE_CUDA_FAIL", "cuLaunchKernel", 1);
  Session s(GpuChainSpec());
  EXPECT_EQ(s.create_, NANORT_UNAVAILABLE);
  EXPECT_STREQ(s.status_.message,
               "GPU session: cuLaunchKernel (captured) failed with CUDA_ERROR_UNKNOWN");
  EXPECT_EQ(Count("cuStreamEndCapture"), 1) << Joined();
  EXPECT_EQ(Count("cuGraphDestroy"), 1) << Joined();
}

TEST_F(GpuOffload, ADriverErrorAtRunNamesTheThunkAndTheError) {
  Session s(GpuChainSpec());
  ASSERT_EQ(s.create_, NANORT_OK) << s.status_.message;
  setenv("FAKE_CUDA_FAIL", "cuMemcpyDtoHAsync", 1);
  const float x[4] = {1, 2, 3, 4};
  float y[4] = {};
  EXPECT_EQ(s.Run(x, y), NANORT_UNAVAILABLE);
  EXPECT_STREQ(s.status_.message,
               "thunk 3 (node 'y', op 'CopyToHost'): cuMemcpyDtoHAsync failed with "
               "CUDA_ERROR_UNKNOWN");
  // What was queued before the failure is waited for.
  unsetenv("FAKE_CUDA_FAIL");
  ClearLog();
  EXPECT_EQ(s.Run(x, y), NANORT_OK) << s.status_.message;
}

TEST_F(GpuOffload, PtxIsaOfEachDriverVersion) {
  // Through the refusal message, which names the driver's PTX ISA.
  setenv("FAKE_CUDA_CC", "120", 1);
  const std::pair<const char*, const char*> cases[] = {
      {"12000", "12.0 is too old for this program: it JIT-compiles PTX up to ISA 8.0,"},
      {"12060", "12.6 is too old for this program: it JIT-compiles PTX up to ISA 8.5,"},
      {"12080", "12.8 is too old for this program: it JIT-compiles PTX up to ISA 8.7,"},
      {"12090", "12.9 is too old for this program: it JIT-compiles PTX up to ISA 8.8,"},
      {"13000", "13.0 is too old for this program: it JIT-compiles PTX up to ISA 9.0,"},
  };
  for (const auto& [version, expected] : cases) {
    setenv("FAKE_CUDA_DRIVER_VERSION", version, 1);
    const Loaded loaded = LoadOnly(WithImages({Ptx(80, 99)}));
    EXPECT_EQ(loaded.code, NANORT_UNAVAILABLE) << version;
    EXPECT_NE(loaded.message.find(expected), std::string::npos) << loaded.message;
  }
}

// Every single-byte change of the GPU chain's program either is refused
// cleanly or loads, creates a session and runs on the fake driver (whose
// device memory is host memory, so a copy or address outside what the
// verifier allowed lands outside an allocation, which ASan reports in
// cuda.asan.*). The GPU parts (images, kernel signatures, launch shapes,
// device slices) are in the damaged bytes too.
TEST_F(GpuOffload, EveryByteChangeOfTheGpuChainFailsCleanlyOrRunsSafely) {
  setenv("FAKE_CUDA_LOG", "", 1);  // millions of lines otherwise
  ProgramSpec spec = GpuChainSpec();
  spec.gpu.images.push_back({fb::GpuImageFormat::Ptx, 75, "", 70, FakePtx("ptx70:sm_75")});
  ChainModel chain(spec);
  const std::vector<uint8_t> full = chain.program;
  int loaded = 0, ran = 0, refused = 0;
  for (size_t at = 0; at < full.size(); ++at) {
    for (uint8_t mask : {0xff, 0x01, 0x80}) {
      std::vector<uint8_t> damaged = full;
      damaged[at] ^= mask;
      chain.def.program = damaged.data();
      chain.def.program_size = damaged.size();
      nanort_model* model = nullptr;
      nanort_status status;
      const nanort_status_code code =
          nanort_model_load(&chain.def, nanort_allocator_system(), &model, &status);
      if (code != NANORT_OK) {
        ++refused;
        ASSERT_TRUE(code == NANORT_INVALID_PROGRAM || code == NANORT_UNSUPPORTED_VERSION ||
                    code == NANORT_UNSUPPORTED_TARGET || code == NANORT_UNAVAILABLE)
            << "byte " << at << " ^ " << int{mask} << ": " << status.message;
        ASSERT_EQ(model, nullptr);
        continue;
      }
      ++loaded;
      nanort_session* session = nullptr;
      if (nanort_session_create(model, nullptr, 0, nanort_allocator_system(), &session, &status) ==
          NANORT_OK) {
        // The entry may have been damaged into other shapes: run what it
        // says it takes, from buffers of exactly those sizes.
        std::vector<std::vector<uint8_t>> data;
        std::vector<nanort_tensor> tensors;
        const size_t inputs = nanort_model_input_count(model);
        const size_t count = inputs + nanort_model_output_count(model);
        for (size_t i = 0; i < count; ++i) {
          nanort_tensor_info info;
          if (i < inputs) {
            nanort_model_input_info(model, i, &info);
          } else {
            nanort_model_output_info(model, i - inputs, &info);
          }
          data.emplace_back(info.size_bytes + 64);
          tensors.push_back({nullptr, info.dtype, info.rank, info.dims});
        }
        for (size_t i = 0; i < count; ++i) {
          uint8_t* p = data[i].data();
          tensors[i].data = p + (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64;
        }
        if (count <= 8 && nanort_run(session, tensors.data(), inputs, tensors.data() + inputs,
                                     count - inputs, &status) == NANORT_OK) {
          ++ran;
        }
        nanort_session_release(session);
      }
      nanort_model_release(model);
    }
  }
  // Both outcomes occur: names, tags and padding can change freely.
  EXPECT_GT(ran, 0);
  EXPECT_GT(refused, 0);
  printf("%d loaded (%d ran), %d refused\n", loaded, ran, refused);
}

}  // namespace
}  // namespace nanort::test
