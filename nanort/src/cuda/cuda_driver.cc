#include "cuda/cuda_driver.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>

#include "status.h"

namespace nanort::cuda {
namespace {

// The name cuGetProcAddress_v2 knows each entry point by (without the
// version suffix: kCudaApiVersion picks the version) and where it goes.
struct EntryPoint {
  const char* name;
  size_t offset;  // of its pointer in CudaDriver
};

#define NANORT_ENTRY(field, name) \
  { name, offsetof(CudaDriver, field) }
constexpr EntryPoint kEntryPoints[] = {
    NANORT_ENTRY(cuGetErrorName, "cuGetErrorName"),
    NANORT_ENTRY(cuInit, "cuInit"),
    NANORT_ENTRY(cuDriverGetVersion, "cuDriverGetVersion"),
    NANORT_ENTRY(cuDeviceGetCount, "cuDeviceGetCount"),
    NANORT_ENTRY(cuDeviceGet, "cuDeviceGet"),
    NANORT_ENTRY(cuDeviceGetAttribute, "cuDeviceGetAttribute"),
    NANORT_ENTRY(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    NANORT_ENTRY(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease"),
    NANORT_ENTRY(cuCtxPushCurrent, "cuCtxPushCurrent"),
    NANORT_ENTRY(cuCtxPopCurrent, "cuCtxPopCurrent"),
    NANORT_ENTRY(cuModuleLoadData, "cuModuleLoadData"),
    NANORT_ENTRY(cuModuleUnload, "cuModuleUnload"),
    NANORT_ENTRY(cuModuleGetFunction, "cuModuleGetFunction"),
    NANORT_ENTRY(cuFuncSetAttribute, "cuFuncSetAttribute"),
    NANORT_ENTRY(cuMemAlloc, "cuMemAlloc"),
    NANORT_ENTRY(cuMemFree, "cuMemFree"),
    NANORT_ENTRY(cuMemGetAddressRange, "cuMemGetAddressRange"),
    NANORT_ENTRY(cuMemcpyHtoD, "cuMemcpyHtoD"),
    NANORT_ENTRY(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync"),
    NANORT_ENTRY(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync"),
    NANORT_ENTRY(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync"),
    NANORT_ENTRY(cuStreamCreate, "cuStreamCreate"),
    NANORT_ENTRY(cuStreamDestroy, "cuStreamDestroy"),
    NANORT_ENTRY(cuStreamSynchronize, "cuStreamSynchronize"),
    NANORT_ENTRY(cuStreamBeginCapture, "cuStreamBeginCapture"),
    NANORT_ENTRY(cuStreamEndCapture, "cuStreamEndCapture"),
    NANORT_ENTRY(cuLaunchKernel, "cuLaunchKernel"),
    NANORT_ENTRY(cuGraphInstantiate, "cuGraphInstantiateWithFlags"),
    NANORT_ENTRY(cuGraphLaunch, "cuGraphLaunch"),
    NANORT_ENTRY(cuGraphExecDestroy, "cuGraphExecDestroy"),
    NANORT_ENTRY(cuGraphDestroy, "cuGraphDestroy"),
};
#undef NANORT_ENTRY

constexpr const char kStubAdvice[] =
    "is the CUDA toolkit's stub library (CUDA_ERROR_STUB_LIBRARY), not a driver: this machine "
    "has no NVIDIA driver installed";

}  // namespace

uint32_t MaxPtxIsaOfDriver(int version) {
  const int major = version / 1000, minor = (version % 1000) / 10;
  if (major < 11) return 0;
  if (major == 11) return 70 + static_cast<uint32_t>(minor > 8 ? 8 : minor);
  if (major == 12) {
    // 12.6 kept PTX 8.5; from 12.7 the minor runs one behind.
    static const uint8_t kIsa[] = {80, 81, 82, 83, 84, 85, 85, 86, 87, 88};
    return kIsa[minor > 9 ? 9 : minor];
  }
  // 13.x reads PTX 9.x. A later major is newer than this table: it reads
  // at least what the newest 13.x does that this runtime knows of.
  return 90 + static_cast<uint32_t>(major == 13 ? (minor > 9 ? 9 : minor) : 9);
}

const char* CudaErrorName(const CudaDriver& driver, CUresult result) {
  // The text lives in the driver; one static buffer for results it does not
  // name would race between threads, so those get a fixed word.
  const char* name = nullptr;
  if (driver.cuGetErrorName != nullptr && driver.cuGetErrorName(result, &name) == CUDA_SUCCESS &&
      name != nullptr) {
    return name;
  }
  if (result == CUDA_ERROR_STUB_LIBRARY) return "CUDA_ERROR_STUB_LIBRARY";
  if (result == CUDA_ERROR_NO_DEVICE) return "CUDA_ERROR_NO_DEVICE";
  return "an unnamed CUresult";
}

nanort_status_code LoadCudaDriver(CudaDriver* driver, nanort_status* status) {
  *driver = CudaDriver();
  const char* path = getenv("NANORT_CUDA_DRIVER");
  if (path == nullptr || path[0] == '\0') path = "libcuda.so.1";
  // RTLD_LOCAL: the driver's symbols stay out of the program's namespace.
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    return NANORT_FAIL(status, NANORT_UNAVAILABLE,
                       "no CUDA driver: cannot load %s (%s); the program offloads to an NVIDIA GPU",
                       path, why != nullptr ? why : "dlopen failed");
  }
  driver->library = library;
  auto* get_proc = reinterpret_cast<PFN_cuGetProcAddress_v2>(dlsym(library, "cuGetProcAddress_v2"));
  NANORT_CHECK_OR_RETURN(get_proc != nullptr, status, NANORT_UNAVAILABLE,
                         "CUDA driver %s is too old: it has no cuGetProcAddress_v2 (CUDA 12.0 or "
                         "newer needed)",
                         path);
  for (const EntryPoint& entry : kEntryPoints) {
    void* pfn = nullptr;
    int found = -1;
    const CUresult result =
        get_proc(entry.name, &pfn, kCudaApiVersion, CU_GET_PROC_ADDRESS_DEFAULT, &found);
    NANORT_CHECK_OR_RETURN(result != CUDA_ERROR_STUB_LIBRARY, status, NANORT_UNAVAILABLE,
                           "CUDA driver %s %s", path, kStubAdvice);
    NANORT_CHECK_OR_RETURN(
        result == CUDA_SUCCESS && found == CU_GET_PROC_ADDRESS_SUCCESS && pfn != nullptr, status,
        NANORT_UNAVAILABLE,
        "CUDA driver %s lacks %s (cuGetProcAddress_v2 returned %d, status %d): too old a driver",
        path, entry.name, result, found);
    __builtin_memcpy(reinterpret_cast<char*>(driver) + entry.offset, &pfn, sizeof(pfn));
  }
  const CUresult init = driver->cuInit(0);
  NANORT_CHECK_OR_RETURN(init != CUDA_ERROR_STUB_LIBRARY, status, NANORT_UNAVAILABLE,
                         "CUDA driver %s %s", path, kStubAdvice);
  NANORT_CHECK_OR_RETURN(init != CUDA_ERROR_NO_DEVICE, status, NANORT_UNAVAILABLE,
                         "no CUDA device: the driver (%s) finds no NVIDIA GPU "
                         "(CUDA_ERROR_NO_DEVICE)",
                         path);
  NANORT_CHECK_OR_RETURN(init == CUDA_SUCCESS, status, NANORT_UNAVAILABLE,
                         "CUDA driver %s: cuInit failed with %s", path,
                         CudaErrorName(*driver, init));
  const CUresult version = driver->cuDriverGetVersion(&driver->version);
  NANORT_CHECK_OR_RETURN(version == CUDA_SUCCESS, status, NANORT_UNAVAILABLE,
                         "CUDA driver %s: cuDriverGetVersion failed with %s", path,
                         CudaErrorName(*driver, version));
  return SetOk(status);
}

}  // namespace nanort::cuda
