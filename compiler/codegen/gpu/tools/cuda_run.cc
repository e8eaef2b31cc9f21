// Runs the kernels of a nanoc_gpu_bundle directory on this machine's GPU
// (tools only): the CUDA driver loaded with dlopen (nothing linked), the
// cubin loaded, each kernel launched with its compile-time grid and block on
// its buffers (outputs pre-filled with 0xff bytes, so an element a kernel
// never writes reads NaN), its outputs written to OUT; a kernel with more
// than one iteration is timed with events (inputs filled here, for
// performance cases).
//
//   nanoc_gpu_cuda_run DIR OUT
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;
using Handle = void*;

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(int*, int);
  CUresult (*cuDeviceGetAttribute)(int*, int, int);
  CUresult (*cuDevicePrimaryCtxRetain)(Handle*, int);
  CUresult (*cuCtxSetCurrent)(Handle);
  CUresult (*cuModuleLoadData)(Handle*, const void*);
  CUresult (*cuModuleGetFunction)(Handle*, Handle, const char*);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuLaunchKernel)(Handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, Handle, void**, void**);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuEventCreate)(Handle*, unsigned);
  CUresult (*cuEventRecord)(Handle, Handle);
  CUresult (*cuEventSynchronize)(Handle);
  CUresult (*cuEventElapsedTime)(float*, Handle, Handle);
  CUresult (*cuGetErrorString)(CUresult, const char**);
};

Driver d;

template <typename F>
void load(void* lib, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn) {
    std::fprintf(stderr, "libcuda has no %s\n", name);
    std::exit(2);
  }
}

void check(CUresult r, const char* what) {
  if (r == 0) return;
  const char* s = "?";
  if (d.cuGetErrorString) d.cuGetErrorString(r, &s);
  std::fprintf(stderr, "%s failed: %d %s\n", what, r, s);
  std::exit(3);
}

std::vector<char> readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: nanoc_gpu_cuda_run DIR OUT\n");
    return 2;
  }
  std::string dir = argv[1], out = argv[2];
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) {
    std::fprintf(stderr, "no libcuda.so.1: %s\n", dlerror());
    return 2;
  }
  load(lib, d.cuInit, "cuInit");
  load(lib, d.cuDeviceGet, "cuDeviceGet");
  load(lib, d.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  load(lib, d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  load(lib, d.cuCtxSetCurrent, "cuCtxSetCurrent");
  load(lib, d.cuModuleLoadData, "cuModuleLoadData");
  load(lib, d.cuModuleGetFunction, "cuModuleGetFunction");
  load(lib, d.cuMemAlloc, "cuMemAlloc_v2");
  load(lib, d.cuMemFree, "cuMemFree_v2");
  load(lib, d.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  load(lib, d.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  load(lib, d.cuMemsetD8, "cuMemsetD8_v2");
  load(lib, d.cuLaunchKernel, "cuLaunchKernel");
  load(lib, d.cuCtxSynchronize, "cuCtxSynchronize");
  load(lib, d.cuEventCreate, "cuEventCreate");
  load(lib, d.cuEventRecord, "cuEventRecord");
  load(lib, d.cuEventSynchronize, "cuEventSynchronize");
  load(lib, d.cuEventElapsedTime, "cuEventElapsedTime");
  load(lib, d.cuGetErrorString, "cuGetErrorString");
  check(d.cuInit(0), "cuInit");
  int dev = 0, major = 0, minor = 0;
  check(d.cuDeviceGet(&dev, 0), "cuDeviceGet");
  d.cuDeviceGetAttribute(&major, 75, dev);  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
  d.cuDeviceGetAttribute(&minor, 76, dev);
  std::printf("device compute capability %d.%d\n", major, minor);
  Handle ctx = nullptr;
  check(d.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  std::vector<char> cubin = readFile(dir + "/kernels.cubin");
  Handle module = nullptr;
  check(d.cuModuleLoadData(&module, cubin.data()), "cuModuleLoadData");
  Handle start = nullptr, stop = nullptr;
  check(d.cuEventCreate(&start, 0), "cuEventCreate");
  check(d.cuEventCreate(&stop, 0), "cuEventCreate");

  std::ifstream manifest(dir + "/manifest.txt");
  std::string line;
  int kernels = 0;
  while (std::getline(manifest, line)) {
    std::istringstream in(line);
    std::string tag, symbol;
    unsigned g[3], b[3], shared, iters, nbuf;
    in >> tag >> symbol >> g[0] >> g[1] >> g[2] >> b[0] >> b[1] >> b[2] >> shared >> iters >> nbuf;
    std::string label;
    std::getline(in, label);
    Handle fn = nullptr;
    check(d.cuModuleGetFunction(&fn, module, symbol.c_str()), symbol.c_str());
    std::vector<CUdeviceptr> ptrs;
    std::vector<std::pair<size_t, std::string>> outs;  // buffer index, file
    std::vector<size_t> sizes;
    for (unsigned k = 0; k < nbuf; ++k) {
      std::getline(manifest, line);
      std::istringstream bl(line);
      std::string kind, file;
      size_t bytes = 0;
      bl >> kind >> bytes >> file;
      CUdeviceptr p = 0;
      check(d.cuMemAlloc(&p, bytes < 256 ? 256 : bytes), "cuMemAlloc");
      if (kind == "in") {
        if (file == "-") {
          // Values in [-1, 1): a simple generator, f32 as the perf cases are.
          std::vector<float> v(bytes / 4);
          uint32_t s = 12345u + k;
          for (float& x : v) {
            s = s * 1664525u + 1013904223u;
            x = static_cast<float>(s >> 8) / 8388608.0f - 1.0f;
          }
          check(d.cuMemcpyHtoD(p, v.data(), v.size() * 4), "cuMemcpyHtoD");
        } else {
          std::vector<char> data = readFile(dir + "/" + file);
          if (data.size() != bytes) {
            std::fprintf(stderr, "%s: %zu bytes, want %zu\n", file.c_str(), data.size(), bytes);
            return 4;
          }
          check(d.cuMemcpyHtoD(p, data.data(), bytes), "cuMemcpyHtoD");
        }
      } else {
        check(d.cuMemsetD8(p, 0xff, bytes < 256 ? 256 : bytes), "cuMemsetD8");
        if (file != "-") outs.push_back({ptrs.size(), file});
      }
      ptrs.push_back(p);
      sizes.push_back(bytes);
    }
    std::vector<void*> args;
    for (CUdeviceptr& p : ptrs) args.push_back(&p);
    check(d.cuLaunchKernel(fn, g[0], g[1], g[2], b[0], b[1], b[2], shared, nullptr, args.data(),
                           nullptr),
          (symbol + label).c_str());
    check(d.cuCtxSynchronize(), (symbol + label).c_str());
    if (iters > 1) {
      check(d.cuEventRecord(start, nullptr), "cuEventRecord");
      for (unsigned it = 0; it < iters; ++it)
        check(d.cuLaunchKernel(fn, g[0], g[1], g[2], b[0], b[1], b[2], shared, nullptr, args.data(),
                               nullptr),
              "launch");
      check(d.cuEventRecord(stop, nullptr), "cuEventRecord");
      check(d.cuEventSynchronize(stop), "cuEventSynchronize");
      float ms = 0;
      check(d.cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
      size_t bytes = 0;
      for (size_t s : sizes) bytes += s;
      std::printf("PERF%s: %.4f ms per launch, %.1f GB/s of its buffers, grid %u,%u,%u\n",
                  label.c_str(), ms / iters, bytes / (ms / iters * 1e-3) / 1e9, g[0], g[1], g[2]);
    }
    for (auto& [index, file] : outs) {
      std::vector<char> host(sizes[index]);
      check(d.cuMemcpyDtoH(host.data(), ptrs[index], host.size()), "cuMemcpyDtoH");
      std::ofstream(out + "/" + file, std::ios::binary).write(host.data(), host.size());
    }
    for (CUdeviceptr p : ptrs) d.cuMemFree(p);
    ++kernels;
  }
  std::printf("%d kernels ran\n", kernels);
  return 0;
}
