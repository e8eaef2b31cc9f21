/* A fake CUDA driver for nanort's GPU offload tests: built as libcuda.so.1
 * in a directory of its own and loaded through NANORT_CUDA_DRIVER. It exports
 * only cuGetProcAddress_v2 (and cuGetProcAddress), as the real driver's
 * loader path needs, and implements every entry point nanort resolves:
 *
 *   FAKE_CUDA_CC              compute capability, "86" is 8.6, "120" 12.0 (default 86)
 *   FAKE_CUDA_DRIVER_VERSION  cuDriverGetVersion's answer (default 13000)
 *   FAKE_CUDA_INIT_ERROR      a CUresult cuInit returns (e.g. 100: no device)
 *   FAKE_CUDA_FAIL            the name of one entry point that returns 999
 *   FAKE_CUDA_LOG             a file each call appends one line to: its name
 *                             and, for some, what it was given
 *
 * Device memory is host memory (so copies really copy); launches and graph
 * launches only log. cuModuleLoadData logs the image's first bytes, with
 * anything not printable as '.', so tests can tell which image was chosen. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

#define EXPORT __attribute__((visibility("default")))

static void Log(const char* format, ...) {
  const char* path = getenv("FAKE_CUDA_LOG");
  if (path == NULL || path[0] == '\0') return;
  FILE* file = fopen(path, "a");
  if (file == NULL) return;
  va_list args;
  va_start(args, format);
  vfprintf(file, format, args);
  va_end(args);
  fputc('\n', file);
  fclose(file);
}

static int EnvInt(const char* name, int fallback) {
  const char* value = getenv(name);
  return value != NULL && value[0] != '\0' ? atoi(value) : fallback;
}

/* 999 when FAKE_CUDA_FAIL names `call`, else 0. */
static CUresult Injected(const char* call) {
  const char* fail = getenv("FAKE_CUDA_FAIL");
  return fail != NULL && strcmp(fail, call) == 0 ? 999 : 0;
}

#define ENTER(name)                     \
  Log("%s", name);                      \
  do {                                  \
    CUresult injected = Injected(name); \
    if (injected != 0) return injected; \
  } while (0)

static CUresult cuGetErrorName(CUresult error, const char** name) {
  switch (error) {
    case 0:
      *name = "CUDA_SUCCESS";
      return 0;
    case 1:
      *name = "CUDA_ERROR_INVALID_VALUE";
      return 0;
    case 2:
      *name = "CUDA_ERROR_OUT_OF_MEMORY";
      return 0;
    case 100:
      *name = "CUDA_ERROR_NO_DEVICE";
      return 0;
    case 500:
      *name = "CUDA_ERROR_NOT_FOUND";
      return 0;
    case 999:
      *name = "CUDA_ERROR_UNKNOWN";
      return 0;
    default:
      *name = NULL;
      return 1;
  }
}

static CUresult cuInit(unsigned flags) {
  (void)flags;
  ENTER("cuInit");
  return EnvInt("FAKE_CUDA_INIT_ERROR", 0);
}

static CUresult cuDriverGetVersion(int* version) {
  ENTER("cuDriverGetVersion");
  *version = EnvInt("FAKE_CUDA_DRIVER_VERSION", 13000);
  return 0;
}

static CUresult cuDeviceGetCount(int* count) {
  ENTER("cuDeviceGetCount");
  *count = 1;
  return 0;
}

static CUresult cuDeviceGet(int* device, int ordinal) {
  ENTER("cuDeviceGet");
  if (ordinal != 0) return 101; /* CUDA_ERROR_INVALID_DEVICE */
  *device = 0;
  return 0;
}

static CUresult cuDeviceGetAttribute(int* value, int attribute, int device) {
  ENTER("cuDeviceGetAttribute");
  const int cc = EnvInt("FAKE_CUDA_CC", 86);
  if (device != 0) return 101;
  if (attribute == 75)
    *value = cc / 10;
  else if (attribute == 76)
    *value = cc % 10;
  else
    return 1;
  return 0;
}

static int g_context; /* the one primary context's handle */

static CUresult cuDevicePrimaryCtxRetain(void** context, int device) {
  (void)device;
  ENTER("cuDevicePrimaryCtxRetain");
  *context = &g_context;
  return 0;
}

static CUresult cuDevicePrimaryCtxRelease(int device) {
  (void)device;
  ENTER("cuDevicePrimaryCtxRelease");
  return 0;
}

static CUresult cuCtxPushCurrent(void* context) {
  ENTER("cuCtxPushCurrent");
  return context == &g_context ? 0 : 201; /* CUDA_ERROR_INVALID_CONTEXT */
}

static CUresult cuCtxSetCurrent(void* context) {
  ENTER("cuCtxSetCurrent");
  return context == &g_context ? 0 : 201;
}

static CUresult cuCtxPopCurrent(void** context) {
  ENTER("cuCtxPopCurrent");
  *context = &g_context;
  return 0;
}

static CUresult cuModuleLoadData(void** module, const void* image) {
  /* The first bytes, printable: the fake images carry their tag up front. */
  char shown[41];
  const unsigned char* bytes = (const unsigned char*)image;
  size_t n = 0;
  for (; n < sizeof(shown) - 1 && bytes[n] != 0; ++n) {
    shown[n] = bytes[n] >= 0x20 && bytes[n] < 0x7f ? (char)bytes[n] : '.';
  }
  shown[n] = '\0';
  Log("cuModuleLoadData %s", shown);
  CUresult injected = Injected("cuModuleLoadData");
  if (injected != 0) return injected;
  *module = malloc(1);
  return 0;
}

static CUresult cuModuleUnload(void* module) {
  ENTER("cuModuleUnload");
  free(module);
  return 0;
}

static int g_functions[1];

static CUresult cuModuleGetFunction(void** function, void* module, const char* name) {
  (void)module;
  Log("cuModuleGetFunction %s", name);
  const char* missing = getenv("FAKE_CUDA_MISSING_KERNEL");
  if (missing != NULL && strcmp(missing, name) == 0) return 500; /* CUDA_ERROR_NOT_FOUND */
  *function = g_functions;
  return 0;
}

static CUresult cuFuncSetAttribute(void* function, int attribute, int value) {
  (void)function;
  Log("cuFuncSetAttribute %d %d", attribute, value);
  return 0;
}

/* The live allocations, for cuMemGetAddressRange (a test makes a few). */
static struct {
  CUdeviceptr base;
  size_t size;
} g_allocations[64];

static CUresult cuMemAlloc(CUdeviceptr* pointer, size_t bytes) {
  Log("cuMemAlloc %zu", bytes);
  CUresult injected = Injected("cuMemAlloc");
  if (injected != 0) return injected;
  if (bytes == 0) return 1;
  void* memory = aligned_alloc(256, (bytes + 255) & ~(size_t)255);
  if (memory == NULL) return 2;
  *pointer = (CUdeviceptr)(uintptr_t)memory;
  for (size_t i = 0; i < sizeof(g_allocations) / sizeof(g_allocations[0]); ++i) {
    if (g_allocations[i].base == 0) {
      g_allocations[i].base = *pointer;
      g_allocations[i].size = bytes;
      break;
    }
  }
  return 0;
}

static CUresult cuMemFree(CUdeviceptr pointer) {
  ENTER("cuMemFree");
  for (size_t i = 0; i < sizeof(g_allocations) / sizeof(g_allocations[0]); ++i) {
    if (g_allocations[i].base == pointer) g_allocations[i].base = 0;
  }
  free((void*)(uintptr_t)pointer);
  return 0;
}

/* CUDA_ERROR_NOT_FOUND (500) for an address no allocation holds, as the
 * real driver answers for host memory. */
static CUresult cuMemGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr pointer) {
  ENTER("cuMemGetAddressRange");
  for (size_t i = 0; i < sizeof(g_allocations) / sizeof(g_allocations[0]); ++i) {
    const CUdeviceptr begin = g_allocations[i].base;
    if (begin != 0 && pointer >= begin && pointer < begin + g_allocations[i].size) {
      *base = begin;
      *size = g_allocations[i].size;
      return 0;
    }
  }
  return 500;
}

static CUresult cuMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
  Log("cuMemcpyHtoD %zu", bytes);
  memcpy((void*)(uintptr_t)dst, src, bytes);
  return 0;
}

static CUresult cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
  Log("cuMemcpyDtoH %zu", bytes);
  memcpy(dst, (const void*)(uintptr_t)src, bytes);
  return 0;
}

static CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t bytes, void* stream) {
  (void)stream;
  Log("cuMemcpyHtoDAsync %zu", bytes);
  memcpy((void*)(uintptr_t)dst, src, bytes);
  return 0;
}

static CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes, void* stream) {
  (void)stream;
  Log("cuMemcpyDtoHAsync %zu", bytes);
  CUresult injected = Injected("cuMemcpyDtoHAsync");
  if (injected != 0) return injected;
  memcpy(dst, (const void*)(uintptr_t)src, bytes);
  return 0;
}

static CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, void* stream) {
  (void)stream;
  Log("cuMemcpyDtoDAsync %zu", bytes);
  memmove((void*)(uintptr_t)dst, (const void*)(uintptr_t)src, bytes);
  return 0;
}

static int g_stream;

static CUresult cuStreamCreate(void** stream, unsigned flags) {
  (void)flags;
  ENTER("cuStreamCreate");
  *stream = &g_stream;
  return 0;
}

static CUresult cuStreamDestroy(void* stream) {
  (void)stream;
  ENTER("cuStreamDestroy");
  return 0;
}

static CUresult cuStreamSynchronize(void* stream) {
  (void)stream;
  ENTER("cuStreamSynchronize");
  return 0;
}

static CUresult cuStreamBeginCapture(void* stream, int mode) {
  (void)stream;
  Log("cuStreamBeginCapture %d", mode);
  return 0;
}

static CUresult cuStreamEndCapture(void* stream, void** graph) {
  (void)stream;
  ENTER("cuStreamEndCapture");
  *graph = malloc(1);
  return 0;
}

static CUresult cuLaunchKernel(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shared, void* stream,
                               void** params, void** extra) {
  (void)function, (void)stream, (void)params, (void)extra;
  Log("cuLaunchKernel grid %u,%u,%u block %u,%u,%u shared %u", gx, gy, gz, bx, by, bz, shared);
  return Injected("cuLaunchKernel");
}

static CUresult cuGraphInstantiateWithFlags(void** exec, void* graph, unsigned long long flags) {
  (void)graph, (void)flags;
  ENTER("cuGraphInstantiateWithFlags");
  *exec = malloc(1);
  return 0;
}

static CUresult cuGraphLaunch(void* exec, void* stream) {
  (void)exec, (void)stream;
  ENTER("cuGraphLaunch");
  return 0;
}

static CUresult cuGraphExecDestroy(void* exec) {
  ENTER("cuGraphExecDestroy");
  free(exec);
  return 0;
}

static CUresult cuGraphDestroy(void* graph) {
  ENTER("cuGraphDestroy");
  free(graph);
  return 0;
}

struct Entry {
  const char* name;
  void* fn;
};

#define E(name, fn) \
  { name, (void*)fn }
static const struct Entry kEntries[] = {
    E("cuGetErrorName", cuGetErrorName),
    E("cuInit", cuInit),
    E("cuDriverGetVersion", cuDriverGetVersion),
    E("cuDeviceGetCount", cuDeviceGetCount),
    E("cuDeviceGet", cuDeviceGet),
    E("cuDeviceGetAttribute", cuDeviceGetAttribute),
    E("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain),
    E("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease),
    E("cuCtxPushCurrent", cuCtxPushCurrent),
    E("cuCtxPopCurrent", cuCtxPopCurrent),
    E("cuCtxSetCurrent", cuCtxSetCurrent),
    E("cuModuleLoadData", cuModuleLoadData),
    E("cuModuleUnload", cuModuleUnload),
    E("cuModuleGetFunction", cuModuleGetFunction),
    E("cuFuncSetAttribute", cuFuncSetAttribute),
    E("cuMemAlloc", cuMemAlloc),
    E("cuMemFree", cuMemFree),
    E("cuMemGetAddressRange", cuMemGetAddressRange),
    E("cuMemcpyHtoD", cuMemcpyHtoD),
    E("cuMemcpyDtoH", cuMemcpyDtoH),
    E("cuMemcpyHtoDAsync", cuMemcpyHtoDAsync),
    E("cuMemcpyDtoHAsync", cuMemcpyDtoHAsync),
    E("cuMemcpyDtoDAsync", cuMemcpyDtoDAsync),
    E("cuStreamCreate", cuStreamCreate),
    E("cuStreamDestroy", cuStreamDestroy),
    E("cuStreamSynchronize", cuStreamSynchronize),
    E("cuStreamBeginCapture", cuStreamBeginCapture),
    E("cuStreamEndCapture", cuStreamEndCapture),
    E("cuLaunchKernel", cuLaunchKernel),
    E("cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags),
    E("cuGraphLaunch", cuGraphLaunch),
    E("cuGraphExecDestroy", cuGraphExecDestroy),
    E("cuGraphDestroy", cuGraphDestroy),
};

/* As the real driver: names without the version suffix, the version picked
 * by cuda_version (the fake has one of each and wants 12.0 or later). */
EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version,
                                    unsigned long long flags, int* symbol_status) {
  (void)flags;
  *pfn = NULL;
  for (size_t i = 0; i < sizeof(kEntries) / sizeof(kEntries[0]); ++i) {
    if (strcmp(kEntries[i].name, symbol) != 0) continue;
    if (cuda_version < 12000) {
      if (symbol_status != NULL) *symbol_status = 2; /* VERSION_NOT_SUFFICIENT */
      return 500;
    }
    *pfn = kEntries[i].fn;
    if (symbol_status != NULL) *symbol_status = 0;
    return 0;
  }
  if (symbol_status != NULL) *symbol_status = 1; /* SYMBOL_NOT_FOUND */
  return 500;
}

EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cuda_version,
                                 unsigned long long flags, int* symbol_status) {
  return cuGetProcAddress_v2(symbol, pfn, cuda_version, flags, symbol_status);
}
