// nanort declares the CUDA driver API it calls itself
// (nanort/src/cuda/cuda_driver_api.h): every value and size it declares must
// equal the toolkit's cuda.h, and every function type must be the one cuda.h
// gives the entry point cuGetProcAddress_v2 returns. Checked at compile time
// where the toolkit is installed (NANORT_HAVE_CUDA_H).
#include <gtest/gtest.h>

#include <type_traits>

#include "cuda/cuda_driver_api.h"

#if NANORT_HAVE_CUDA_H
#include <cuda.h>

namespace ours = nanort::cuda;

static_assert(sizeof(ours::CUresult) == sizeof(CUresult), "CUresult");
static_assert(sizeof(ours::CUdevice) == sizeof(CUdevice), "CUdevice");
static_assert(std::is_same_v<ours::CUdeviceptr, CUdeviceptr>, "CUdeviceptr (v2)");
static_assert(std::is_same_v<ours::cuuint64_t, cuuint64_t>, "cuuint64_t");
static_assert(sizeof(ours::CUcontext) == sizeof(CUcontext), "CUcontext");
static_assert(sizeof(ours::CUgraphExec) == sizeof(CUgraphExec), "CUgraphExec");

static_assert(ours::CUDA_SUCCESS == CUDA_SUCCESS, "CUDA_SUCCESS");
static_assert(ours::CUDA_ERROR_STUB_LIBRARY == CUDA_ERROR_STUB_LIBRARY, "stub library");
static_assert(ours::CUDA_ERROR_NO_DEVICE == CUDA_ERROR_NO_DEVICE, "no device");
static_assert(ours::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ==
                  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
              "CC major");
static_assert(ours::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ==
                  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
              "CC minor");
static_assert(ours::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES ==
                  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
              "dynamic shared memory attribute");
static_assert(ours::CU_STREAM_NON_BLOCKING == CU_STREAM_NON_BLOCKING, "non-blocking stream");
static_assert(ours::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
              "capture mode");
static_assert(ours::CU_GET_PROC_ADDRESS_DEFAULT == CU_GET_PROC_ADDRESS_DEFAULT, "proc flags");
static_assert(ours::CU_GET_PROC_ADDRESS_SUCCESS == CU_GET_PROC_ADDRESS_SUCCESS, "proc status");
static_assert(sizeof(CUdriverProcAddressQueryResult) == sizeof(int), "symbol status is an int");
static_assert(sizeof(CUdevice_attribute) == sizeof(int) &&
                  sizeof(CUstreamCaptureMode) == sizeof(int) &&
                  sizeof(CUfunction_attribute) == sizeof(int),
              "enums passed as int");

// Same parameter and return types, enums and opaque handles taken as the
// ints and pointers nanort declares them as.
template <typename Ours, typename Theirs>
struct SameShape : std::false_type {};
template <typename R1, typename... A1, typename R2, typename... A2>
struct SameShape<R1 (*)(A1...), R2 (*)(A2...)>
    : std::bool_constant<sizeof...(A1) == sizeof...(A2) && sizeof(R1) == sizeof(R2) &&
                         ((sizeof(A1) == sizeof(A2) &&
                           std::is_pointer_v<A1> == std::is_pointer_v<A2>)&&...)> {};

#define SAME(ours_type, function) \
  static_assert(SameShape<ours::ours_type, decltype(&function)>::value, #function " type")

SAME(PFN_cuGetProcAddress_v2, cuGetProcAddress_v2);
SAME(PFN_cuGetErrorName, cuGetErrorName);
SAME(PFN_cuInit, cuInit);
SAME(PFN_cuDriverGetVersion, cuDriverGetVersion);
SAME(PFN_cuDeviceGetCount, cuDeviceGetCount);
SAME(PFN_cuDeviceGet, cuDeviceGet);
SAME(PFN_cuDeviceGetAttribute, cuDeviceGetAttribute);
SAME(PFN_cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain);
SAME(PFN_cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease_v2);
SAME(PFN_cuCtxPushCurrent_v2, cuCtxPushCurrent_v2);
SAME(PFN_cuCtxPopCurrent_v2, cuCtxPopCurrent_v2);
SAME(PFN_cuModuleLoadData, cuModuleLoadData);
SAME(PFN_cuModuleUnload, cuModuleUnload);
SAME(PFN_cuModuleGetFunction, cuModuleGetFunction);
SAME(PFN_cuFuncSetAttribute, cuFuncSetAttribute);
SAME(PFN_cuMemAlloc_v2, cuMemAlloc_v2);
SAME(PFN_cuMemFree_v2, cuMemFree_v2);
SAME(PFN_cuMemGetAddressRange_v2, cuMemGetAddressRange_v2);
SAME(PFN_cuMemcpyHtoD_v2, cuMemcpyHtoD_v2);
SAME(PFN_cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2);
SAME(PFN_cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2);
SAME(PFN_cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2);
SAME(PFN_cuStreamCreate, cuStreamCreate);
SAME(PFN_cuStreamDestroy_v2, cuStreamDestroy_v2);
SAME(PFN_cuStreamSynchronize, cuStreamSynchronize);
SAME(PFN_cuStreamBeginCapture_v2, cuStreamBeginCapture_v2);
SAME(PFN_cuStreamEndCapture, cuStreamEndCapture);
SAME(PFN_cuLaunchKernel, cuLaunchKernel);
SAME(PFN_cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags);
SAME(PFN_cuGraphLaunch, cuGraphLaunch);
SAME(PFN_cuGraphExecDestroy, cuGraphExecDestroy);
SAME(PFN_cuGraphDestroy, cuGraphDestroy);

TEST(CudaDriverApi, DeclarationsMatchTheToolkitsCudaH) {
  SUCCEED() << "checked at compile time against CUDA " << CUDA_VERSION;
}

#else

TEST(CudaDriverApi, DeclarationsMatchTheToolkitsCudaH) {
  GTEST_SKIP() << "no CUDA toolkit cuda.h to check nanort/src/cuda/cuda_driver_api.h against";
}

#endif
