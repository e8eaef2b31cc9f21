// The CUDA driver, loaded at run time: dlopen("libcuda.so.1") (or the path in
// NANORT_CUDA_DRIVER), cuGetProcAddress_v2 by dlsym, every other entry point
// through it. nanort links neither libcuda nor cudart, so a binary with GPU
// offload still starts on a machine without a driver and says why it cannot
// offload.
#ifndef NANORT_SRC_CUDA_CUDA_DRIVER_H_
#define NANORT_SRC_CUDA_CUDA_DRIVER_H_

#include "cuda/cuda_driver_api.h"
#include "nanort/nanort.h"

namespace nanort::cuda {

// The entry points nanort calls, resolved once per model load. The library
// stays loaded for the life of the process (as cudart does): the driver's
// own threads may outlive every model.
struct CudaDriver {
  void* library;
  int version;  // cuDriverGetVersion: 1000 * major + 10 * minor (12080 is 12.8)
  PFN_cuGetErrorName cuGetErrorName;
  PFN_cuInit cuInit;
  PFN_cuDriverGetVersion cuDriverGetVersion;
  PFN_cuDeviceGetCount cuDeviceGetCount;
  PFN_cuDeviceGet cuDeviceGet;
  PFN_cuDeviceGetAttribute cuDeviceGetAttribute;
  PFN_cuDevicePrimaryCtxRetain cuDevicePrimaryCtxRetain;
  PFN_cuDevicePrimaryCtxRelease_v2 cuDevicePrimaryCtxRelease;
  PFN_cuCtxPushCurrent_v2 cuCtxPushCurrent;
  PFN_cuCtxPopCurrent_v2 cuCtxPopCurrent;
  PFN_cuModuleLoadData cuModuleLoadData;
  PFN_cuModuleUnload cuModuleUnload;
  PFN_cuModuleGetFunction cuModuleGetFunction;
  PFN_cuFuncSetAttribute cuFuncSetAttribute;
  PFN_cuMemAlloc_v2 cuMemAlloc;
  PFN_cuMemFree_v2 cuMemFree;
  PFN_cuMemGetAddressRange_v2 cuMemGetAddressRange;
  PFN_cuMemcpyHtoD_v2 cuMemcpyHtoD;
  PFN_cuMemcpyHtoDAsync_v2 cuMemcpyHtoDAsync;
  PFN_cuMemcpyDtoHAsync_v2 cuMemcpyDtoHAsync;
  PFN_cuMemcpyDtoDAsync_v2 cuMemcpyDtoDAsync;
  PFN_cuStreamCreate cuStreamCreate;
  PFN_cuStreamDestroy_v2 cuStreamDestroy;
  PFN_cuStreamSynchronize cuStreamSynchronize;
  PFN_cuStreamBeginCapture_v2 cuStreamBeginCapture;
  PFN_cuStreamEndCapture cuStreamEndCapture;
  PFN_cuLaunchKernel cuLaunchKernel;
  PFN_cuGraphInstantiateWithFlags cuGraphInstantiate;
  PFN_cuGraphLaunch cuGraphLaunch;
  PFN_cuGraphExecDestroy cuGraphExecDestroy;
  PFN_cuGraphDestroy cuGraphDestroy;
};

// Loads the driver and resolves every entry point above, then cuInit(0) and
// cuDriverGetVersion. NANORT_UNAVAILABLE, saying which, when there is no
// driver library, it is older than CUDA 12.0 (no cuGetProcAddress_v2) or
// lacks an entry point, it is the toolkit's stub (CUDA_ERROR_STUB_LIBRARY:
// no NVIDIA driver installed), or cuInit fails (CUDA_ERROR_NO_DEVICE: no
// GPU). Never crashes on a bad library.
nanort_status_code LoadCudaDriver(CudaDriver* driver, nanort_status* status);

// "CUDA_ERROR_OUT_OF_MEMORY" for `result`, or "CUresult N" when the driver
// does not know it. Never NULL.
const char* CudaErrorName(const CudaDriver& driver, CUresult result);

// The newest PTX ISA (major * 10 + minor) a driver of `version`
// (cuDriverGetVersion's) can JIT, from NVIDIA's PTX ISA release history:
// CUDA 11.x reads PTX 7.x, 12.0-12.5 read 8.0-8.5, 12.6 8.5, 12.7 8.6,
// 12.8 8.7, 12.9 8.8, 13.x 9.x. 0 below CUDA 11.0.
uint32_t MaxPtxIsaOfDriver(int version);

}  // namespace nanort::cuda

#endif  // NANORT_SRC_CUDA_CUDA_DRIVER_H_
