// The few CUDA driver API types, values and signatures nanort uses, declared
// here rather than taken from the toolkit's cuda.h: nanort never links the
// driver (it dlopens libcuda.so.1 at load) and cross builds have no toolkit.
// tests/cuda/driver_api_abi_test.cc checks every value and size against the
// real cuda.h where one is installed.
//
// Each signature is the one cuGetProcAddress_v2 returns for the name in
// CudaDriver's table (cuda_driver.h) when asked with kCudaApiVersion: the
// latest version of each entry point (cuMemAlloc_v2, cuCtxPushCurrent_v2,
// cuStreamBeginCapture_v2, cuDevicePrimaryCtxRelease_v2, ...).
#ifndef NANORT_SRC_CUDA_CUDA_DRIVER_API_H_
#define NANORT_SRC_CUDA_CUDA_DRIVER_API_H_

#include <stddef.h>
#include <stdint.h>

namespace nanort::cuda {

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;  // CUdeviceptr_v2 on 64-bit hosts
typedef uint64_t cuuint64_t;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;
typedef struct CUgraph_st* CUgraph;
typedef struct CUgraphExec_st* CUgraphExec;

// CUresult values nanort tells apart.
constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;

// CUdevice_attribute
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
// CUfunction_attribute: dynamic shared memory past 48 KB must be asked for.
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
// CUstream_flags
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
// CUstreamCaptureMode: thread-local, so another thread's unrelated CUDA
// calls during a session's capture neither fail nor break it.
constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
// CUdriverProcAddress_flags and CUdriverProcAddressQueryResult
constexpr cuuint64_t CU_GET_PROC_ADDRESS_DEFAULT = 0;
constexpr int CU_GET_PROC_ADDRESS_SUCCESS = 0;

// The CUDA version nanort asks cuGetProcAddress_v2 for (12.0: every entry
// point at its latest version; the driver must be 12.0 or newer to have
// cuGetProcAddress_v2 at all).
constexpr int kCudaApiVersion = 12000;

typedef CUresult (*PFN_cuGetProcAddress_v2)(const char* symbol, void** pfn, int cuda_version,
                                            cuuint64_t flags, int* symbol_status);
typedef CUresult (*PFN_cuGetErrorName)(CUresult error, const char** name);
typedef CUresult (*PFN_cuInit)(unsigned flags);
typedef CUresult (*PFN_cuDriverGetVersion)(int* version);
typedef CUresult (*PFN_cuDeviceGetCount)(int* count);
typedef CUresult (*PFN_cuDeviceGet)(CUdevice* device, int ordinal);
typedef CUresult (*PFN_cuDeviceGetAttribute)(int* value, int attribute, CUdevice device);
typedef CUresult (*PFN_cuDevicePrimaryCtxRetain)(CUcontext* context, CUdevice device);
typedef CUresult (*PFN_cuDevicePrimaryCtxRelease_v2)(CUdevice device);
typedef CUresult (*PFN_cuCtxPushCurrent_v2)(CUcontext context);
typedef CUresult (*PFN_cuCtxPopCurrent_v2)(CUcontext* context);
typedef CUresult (*PFN_cuModuleLoadData)(CUmodule* module, const void* image);
typedef CUresult (*PFN_cuModuleUnload)(CUmodule module);
typedef CUresult (*PFN_cuModuleGetFunction)(CUfunction* function, CUmodule module,
                                            const char* name);
typedef CUresult (*PFN_cuFuncSetAttribute)(CUfunction function, int attribute, int value);
typedef CUresult (*PFN_cuMemAlloc_v2)(CUdeviceptr* pointer, size_t bytes);
typedef CUresult (*PFN_cuMemFree_v2)(CUdeviceptr pointer);
typedef CUresult (*PFN_cuMemGetAddressRange_v2)(CUdeviceptr* base, size_t* size,
                                                CUdeviceptr pointer);
typedef CUresult (*PFN_cuMemcpyHtoD_v2)(CUdeviceptr dst, const void* src, size_t bytes);
typedef CUresult (*PFN_cuMemcpyHtoDAsync_v2)(CUdeviceptr dst, const void* src, size_t bytes,
                                             CUstream stream);
typedef CUresult (*PFN_cuMemcpyDtoHAsync_v2)(void* dst, CUdeviceptr src, size_t bytes,
                                             CUstream stream);
typedef CUresult (*PFN_cuMemcpyDtoDAsync_v2)(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                             CUstream stream);
typedef CUresult (*PFN_cuStreamCreate)(CUstream* stream, unsigned flags);
typedef CUresult (*PFN_cuStreamDestroy_v2)(CUstream stream);
typedef CUresult (*PFN_cuStreamSynchronize)(CUstream stream);
typedef CUresult (*PFN_cuStreamBeginCapture_v2)(CUstream stream, int mode);
typedef CUresult (*PFN_cuStreamEndCapture)(CUstream stream, CUgraph* graph);
typedef CUresult (*PFN_cuLaunchKernel)(CUfunction function, unsigned grid_x, unsigned grid_y,
                                       unsigned grid_z, unsigned block_x, unsigned block_y,
                                       unsigned block_z, unsigned shared_bytes, CUstream stream,
                                       void** params, void** extra);
typedef CUresult (*PFN_cuGraphInstantiateWithFlags)(CUgraphExec* exec, CUgraph graph,
                                                    unsigned long long flags);
typedef CUresult (*PFN_cuGraphLaunch)(CUgraphExec exec, CUstream stream);
typedef CUresult (*PFN_cuGraphExecDestroy)(CUgraphExec exec);
typedef CUresult (*PFN_cuGraphDestroy)(CUgraph graph);

}  // namespace nanort::cuda

#endif  // NANORT_SRC_CUDA_CUDA_DRIVER_API_H_
