// GPU offload through the CUDA driver (NANORT_WITH_CUDA): image selection at
// load; at session creation the module, one device allocation, the constants
// uploaded once, a stream and each run of consecutive kernel launches
// captured once as a CUDA graph; at run, copies, graph launches and one
// synchronization. The core reaches all of it through nanort_cuda_offload
// (gpu_offload.h).
#include <inttypes.h>
#include <string.h>

#include "allocator.h"
#include "cuda/cuda_driver.h"
#include "cuda/gpu_seal.h"
#include "cuda/sha256.h"
#include "gpu_offload.h"
#include "model.h"
#include "program_verifier.h"
#include "session_internal.h"
#include "status.h"

namespace nanort {

using cuda::CudaDriver;
using cuda::CUdeviceptr;
using cuda::CUresult;

struct GpuModel {
  CudaDriver driver;
  cuda::CUdevice device;
  uint32_t compute_capability;  // major * 10 + minor, as GpuImage.sm
  uint32_t image;               // the chosen one, in Program.gpu.images
  char description[112];
  // Per tensor (inputs, then outputs): the first thunk that reads or writes
  // it on the host, kNoThunk when only GPU copies touch it (so that it may
  // be in CUDA memory).
  uint32_t* host_thunk;
};

namespace {

constexpr uint32_t kNoThunk = UINT32_MAX;
constexpr uint32_t kNoTensor = UINT32_MAX;

enum class StepKind : uint8_t { kHost, kToDevice, kToHost, kOnDevice, kGraph };

// One step of a GPU session's run: a host thunk, a copy, or a captured run
// of launches.
struct GpuStep {
  StepKind kind;
  uint32_t thunk;  // the (first) thunk it runs
  uint32_t count;  // kGraph: how many launches the graph holds; else 1
  uint32_t graph;  // kGraph: its executable graph
  CUdeviceptr device;
  CUdeviceptr device_src;  // kOnDevice: the source (device is the destination)
  void* const* host;       // kToDevice, kToHost: the host side's slot
  size_t bytes;
  // kToDevice, kToHost: the caller's tensor the host side is in (inputs,
  // then outputs), kNoTensor for the host arena.
  uint32_t tensor;
};

}  // namespace

struct GpuSession {
  cuda::CUcontext context;  // the device's primary context, retained
  cuda::CUmodule module;
  CUdeviceptr memory;  // the device arena, then the device constants; 0 if empty
  cuda::CUstream stream;
  cuda::CUgraphExec* execs;
  size_t num_execs;
  GpuStep* steps;
  size_t num_steps;
  cuda::CUfunction* functions;  // by GPU kernel index
  CUdeviceptr* params;          // every launch's args' addresses, thunk by thunk
  void** param_pointers;        // &params[i]: cuLaunchKernel's kernelParams
};

namespace {

const char* TextOf(const flatbuffers::String* text) { return text != nullptr ? text->c_str() : ""; }

// Appends to out[0..size) at *used, keeping it NUL-terminated.
__attribute__((format(printf, 4, 5))) void Append(char* out, size_t size, size_t* used,
                                                  const char* format, ...) {
  if (*used + 1 >= size) return;
  va_list args;
  va_start(args, format);
  const int length = FormatV(out + *used, size - *used, format, args);
  va_end(args);
  *used += static_cast<size_t>(length);
  if (*used >= size) *used = size - 1;
}

// "sm_90a cubin" or "PTX 8.0 for sm_80".
void AppendImage(const fb::GpuImage& image, char* out, size_t size, size_t* used) {
  const uint32_t sm = image.sm();
  if (image.format() == fb::GpuImageFormat::Cubin) {
    Append(out, size, used, "sm_%" PRIu32 "%s cubin", sm, TextOf(image.variant()));
  } else {
    Append(out, size, used, "PTX %" PRIu32 ".%" PRIu32 " for sm_%" PRIu32 "%s",
           image.ptx_isa() / 10, image.ptx_isa() % 10, sm, TextOf(image.variant()));
  }
}

// The image to run on a device of compute capability `cc` (major * 10 +
// minor) with a driver that JITs PTX up to `max_isa`: an "a" cubin for
// exactly cc; else the plain or family cubin of cc's major with the highest
// minor up to cc's; else the PTX for the highest SM up to cc (an "a" PTX only
// for exactly cc) whose ISA the driver reads. -1 when none; *ptx_too_new
// says whether a PTX image would have fitted but for the driver.
int SelectImage(const fb::GpuModule& gpu, uint32_t cc, uint32_t max_isa, bool* ptx_too_new) {
  const auto* images = gpu.images();
  int exact = -1, cubin = -1, ptx = -1;
  *ptx_too_new = false;
  for (flatbuffers::uoffset_t i = 0; i < images->size(); ++i) {
    const fb::GpuImage& image = *images->Get(i);
    const char variant = TextOf(image.variant())[0];
    const uint32_t sm = image.sm();
    const bool same_major_not_newer = sm / 10 == cc / 10 && sm % 10 <= cc % 10;
    if (image.format() == fb::GpuImageFormat::Cubin) {
      if (variant == 'a') {
        if (sm == cc) exact = static_cast<int>(i);
      } else if (same_major_not_newer &&
                 (cubin < 0 ||
                  sm > images->Get(static_cast<flatbuffers::uoffset_t>(cubin))->sm())) {
        cubin = static_cast<int>(i);
      }
      continue;
    }
    const bool fits = variant == 'a' ? sm == cc : variant == 'f' ? same_major_not_newer : sm <= cc;
    if (!fits) continue;
    if (image.ptx_isa() > max_isa) {
      *ptx_too_new = true;
      continue;
    }
    if (ptx >= 0) {
      const fb::GpuImage& best = *images->Get(static_cast<flatbuffers::uoffset_t>(ptx));
      if (sm < best.sm() || (sm == best.sm() && image.ptx_isa() <= best.ptx_isa())) continue;
    }
    ptx = static_cast<int>(i);
  }
  return exact >= 0 ? exact : cubin >= 0 ? cubin : ptx;
}

// The caller's tensor (inputs, then outputs) `buffer` lies in, or kNoTensor.
uint32_t TensorOf(const nanort_model& model, const fb::Buffer& buffer) {
  if (buffer.kind() == fb::BufferKind::Input) return buffer.index();
  if (buffer.kind() == fb::BufferKind::Output) {
    return static_cast<uint32_t>(model.num_inputs) + buffer.index();
  }
  return kNoTensor;
}

// Fills host_thunk[0 .. inputs + outputs): a tensor is used on the host by
// every thunk that names one of its buffers, except a GPU copy that reads an
// input to the device or writes an output from it.
void FindHostUses(const nanort_model& model, uint32_t* host_thunk) {
  const size_t num_tensors = model.num_inputs + model.num_outputs;
  for (size_t i = 0; i < num_tensors; ++i) host_thunk[i] = kNoThunk;
  const auto* buffers = model.program->buffers();
  const auto* thunks = model.entry->thunks();
  auto use = [&](uint32_t t, uint32_t buffer) {
    const uint32_t tensor = TensorOf(model, *buffers->Get(buffer));
    if (tensor != kNoTensor && host_thunk[tensor] == kNoThunk) host_thunk[tensor] = t;
  };
  for (flatbuffers::uoffset_t t = 0; t < flatbuffers::VectorLength(thunks); ++t) {
    const fb::Thunk& thunk = *thunks->Get(t);
    if (const fb::KernelThunk* kernel = thunk.kind_as_KernelThunk()) {
      for (flatbuffers::uoffset_t a = 0; a < flatbuffers::VectorLength(kernel->args()); ++a) {
        use(t, kernel->args()->Get(a));
      }
    } else if (const fb::CopyThunk* copy = thunk.kind_as_CopyThunk()) {
      use(t, copy->src());
      use(t, copy->dst());
    } else if (const fb::GpuCopyThunk* copy = thunk.kind_as_GpuCopyThunk()) {
      // An input's copy to the device, an output's from it: no host use.
      if (buffers->Get(copy->src())->kind() != fb::BufferKind::Input) use(t, copy->src());
      if (buffers->Get(copy->dst())->kind() != fb::BufferKind::Output) use(t, copy->dst());
    }
  }
}

bool SameDigest(const uint8_t* a, const uint8_t* b) {
  uint8_t differ = 0;
  for (int i = 0; i < 32; ++i) differ |= a[i] ^ b[i];
  return differ == 0;
}

// The kernel table and the device arena against the object's seal.
nanort_status_code CheckKernelsSeal(const nanort_model& model, nanort_status* status) {
  const nanort_gpu_seal* seal = model.def.gpu;
  const fb::GpuModule& gpu = *model.program->gpu();
  NANORT_CHECK_OR_RETURN(seal != nullptr, status, NANORT_INVALID_PROGRAM,
                         "the program has a GPU part, but the object carries no GPU seal for it "
                         "(nanort_model_def.gpu is NULL)");
  NANORT_CHECK_OR_RETURN(
      seal->num_images == flatbuffers::VectorLength(gpu.images()) && seal->images_sha256 != nullptr,
      status, NANORT_INVALID_PROGRAM,
      "the program's GPU module has %zu images, the object's seal %" PRIu32,
      static_cast<size_t>(flatbuffers::VectorLength(gpu.images())), seal->num_images);
  uint8_t digest[32];
  gpu_seal::DigestKernels<cuda::Sha256>(gpu, digest);
  NANORT_CHECK_OR_RETURN(SameDigest(digest, seal->kernels_sha256), status, NANORT_INVALID_PROGRAM,
                         "the program's GPU kernel table is not the one nanoc compiled into this "
                         "object (SHA-256 differs from its seal)");
  return NANORT_OK;
}

nanort_status_code CheckImageSeal(const nanort_model& model, uint32_t index,
                                  nanort_status* status) {
  uint8_t digest[32];
  gpu_seal::DigestImage<cuda::Sha256>(*model.program->gpu()->images()->Get(index), digest);
  NANORT_CHECK_OR_RETURN(SameDigest(digest, model.def.gpu->images_sha256 + 32 * size_t{index}),
                         status, NANORT_INVALID_PROGRAM,
                         "the program's GPU image %" PRIu32
                         " is not the one nanoc compiled into this object (SHA-256 differs from "
                         "its seal)",
                         index);
  return NANORT_OK;
}

nanort_status_code LoadGpuModel(const nanort_model& model, GpuModel** out, nanort_status* status) {
  *out = nullptr;
  NANORT_RETURN_IF_ERROR(CheckKernelsSeal(model, status));
  const fb::GpuModule& module = *model.program->gpu();
  const nanort_allocator allocator = model.allocator;
  BlockLayout layout;
  const size_t gpu_at = layout.Add<GpuModel>(1);
  const size_t host_thunk_at = layout.Add<uint32_t>(model.num_inputs + model.num_outputs);
  uint8_t* block = layout.overflow() ? nullptr
                                     : static_cast<uint8_t*>(allocator.alloc(
                                           allocator.self, layout.size(), layout.alignment()));
  NANORT_CHECK_OR_RETURN(block != nullptr, status, NANORT_OUT_OF_MEMORY,
                         "allocator returned NULL for the model's GPU state (%zu bytes)",
                         layout.size());
  static_assert(alignof(GpuModel) >= alignof(uint32_t), "");
  GpuModel* gpu = reinterpret_cast<GpuModel*>(block + gpu_at);
  memset(gpu, 0, sizeof(*gpu));
  gpu->host_thunk = reinterpret_cast<uint32_t*>(block + host_thunk_at);
  FindHostUses(model, gpu->host_thunk);
  auto fail = [&](nanort_status_code code) {
    allocator.free(allocator.self, gpu);
    return code;
  };
  nanort_status_code code = cuda::LoadCudaDriver(&gpu->driver, status);
  if (code != NANORT_OK) return fail(code);
  const CudaDriver& driver = gpu->driver;
  int count = 0;
  CUresult result = driver.cuDeviceGetCount(&count);
  if (result != cuda::CUDA_SUCCESS || count < 1) {
    return fail(NANORT_FAIL(status, NANORT_UNAVAILABLE, "no CUDA device (cuDeviceGetCount: %s, %d)",
                            cuda::CudaErrorName(driver, result), count));
  }
  int major = 0, minor = 0;
  result = driver.cuDeviceGet(&gpu->device, 0);
  if (result == cuda::CUDA_SUCCESS) {
    result = driver.cuDeviceGetAttribute(&major, cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                         gpu->device);
  }
  if (result == cuda::CUDA_SUCCESS) {
    result = driver.cuDeviceGetAttribute(&minor, cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                         gpu->device);
  }
  if (result != cuda::CUDA_SUCCESS || major < 1 || major > 99 || minor < 0 || minor > 9) {
    return fail(NANORT_FAIL(status, NANORT_UNAVAILABLE,
                            "cannot read CUDA device 0's compute capability (%s, %d.%d)",
                            cuda::CudaErrorName(driver, result), major, minor));
  }
  const uint32_t cc = static_cast<uint32_t>(major * 10 + minor);
  gpu->compute_capability = cc;
  const uint32_t max_isa = cuda::MaxPtxIsaOfDriver(driver.version);
  bool ptx_too_new = false;
  const int chosen = SelectImage(module, cc, max_isa, &ptx_too_new);
  if (chosen < 0) {
    char images[200];
    size_t used = 0;
    images[0] = '\0';
    for (flatbuffers::uoffset_t i = 0; i < module.images()->size(); ++i) {
      if (i != 0) Append(images, sizeof(images), &used, ", ");
      AppendImage(*module.images()->Get(i), images, sizeof(images), &used);
    }
    if (ptx_too_new) {
      return fail(NANORT_FAIL(
          status, NANORT_UNAVAILABLE,
          "CUDA driver %d.%d is too old for this program: it JIT-compiles PTX up to ISA "
          "%" PRIu32 ".%" PRIu32 ", and GPU compute capability %d.%d needs one of: %s",
          driver.version / 1000, (driver.version % 1000) / 10, max_isa / 10, max_isa % 10, major,
          minor, images));
    }
    return fail(NANORT_FAIL(status, NANORT_UNSUPPORTED_TARGET,
                            "GPU compute capability %d.%d; the program has %s", major, minor,
                            images));
  }
  gpu->image = static_cast<uint32_t>(chosen);
  code = CheckImageSeal(model, gpu->image, status);
  if (code != NANORT_OK) return fail(code);
  const fb::GpuImage& image = *module.images()->Get(gpu->image);
  size_t used = 0;
  AppendImage(image, gpu->description, sizeof(gpu->description), &used);
  Append(gpu->description, sizeof(gpu->description), &used,
         image.format() == fb::GpuImageFormat::Ptx ? ", JIT-compiled for NVIDIA compute "
                                                     "capability %d.%d"
                                                   : " on NVIDIA compute capability %d.%d",
         major, minor);
  *out = gpu;
  return SetOk(status);
}

void ReleaseGpuModel(GpuModel* gpu, nanort_allocator allocator) {
  // The driver library stays loaded (cuda_driver.h).
  allocator.free(allocator.self, gpu);
}

const char* DescribeGpuModel(const GpuModel* gpu) { return gpu->description; }

uint32_t GpuTensorMemory(const GpuModel* gpu, size_t tensor) {
  return (1u << NANORT_MEMORY_HOST) |
         (gpu->host_thunk[tensor] == kNoThunk ? 1u << NANORT_MEMORY_CUDA : 0u);
}

nanort_status_code DriverFailure(const CudaDriver& driver, CUresult result, const char* call,
                                 nanort_status* status) {
  // CUDA_ERROR_OUT_OF_MEMORY is 2.
  return NANORT_FAIL(status, result == 2 ? NANORT_OUT_OF_MEMORY : NANORT_UNAVAILABLE,
                     "GPU session: %s failed with %s", call, cuda::CudaErrorName(driver, result));
}

// Frees what `gpu` holds, whatever creation reached (the fields it did not
// reach are 0), then gpu itself.
void ReleaseGpuSession(const nanort_model& model, GpuSession* gpu, nanort_allocator allocator) {
  const CudaDriver& driver = model.gpu->driver;
  if (gpu->context != nullptr) {
    driver.cuCtxPushCurrent(gpu->context);
    for (size_t g = 0; g < gpu->num_execs; ++g) {
      if (gpu->execs[g] != nullptr) driver.cuGraphExecDestroy(gpu->execs[g]);
    }
    if (gpu->stream != nullptr) driver.cuStreamDestroy(gpu->stream);
    if (gpu->memory != 0) driver.cuMemFree(gpu->memory);
    if (gpu->module != nullptr) driver.cuModuleUnload(gpu->module);
    cuda::CUcontext popped;
    driver.cuCtxPopCurrent(&popped);
    driver.cuDevicePrimaryCtxRelease(model.gpu->device);
  }
  allocator.free(allocator.self, gpu);
}

// Loads the chosen image. The driver reads PTX up to a NUL, which the
// program's bytes lack, and an ELF at 8-byte alignment, which a flatbuffer's
// bytes need not have: such images go through a copy from the allocator.
CUresult LoadModule(const CudaDriver& driver, const fb::GpuImage& image, nanort_allocator allocator,
                    cuda::CUmodule* module, bool* out_of_memory) {
  const auto* data = image.data();
  const bool ptx = image.format() == fb::GpuImageFormat::Ptx;
  *out_of_memory = false;
  if (!ptx && IsAligned(data->Data(), 8)) return driver.cuModuleLoadData(module, data->Data());
  uint8_t* copy = static_cast<uint8_t*>(allocator.alloc(allocator.self, data->size() + 1, 8));
  if (copy == nullptr) {
    *out_of_memory = true;
    return cuda::CUDA_SUCCESS;
  }
  memcpy(copy, data->Data(), data->size());
  copy[data->size()] = 0;
  const CUresult result = driver.cuModuleLoadData(module, copy);
  allocator.free(allocator.self, copy);
  return result;
}

// Inside CreateGpuSession: a failing driver call fails the creation.
#define NANORT_CU(call, name)                              \
  do {                                                     \
    const CUresult result_ = (call);                       \
    if (result_ != cuda::CUDA_SUCCESS) {                   \
      code = DriverFailure(driver, result_, name, status); \
      goto fail;                                           \
    }                                                      \
  } while (0)

nanort_status_code CreateGpuSession(const nanort_model& model, const ExecutableThunk* thunks,
                                    nanort_allocator allocator, GpuSession** out,
                                    nanort_status* status) {
  *out = nullptr;
  const CudaDriver& driver = model.gpu->driver;
  const fb::Program& program = *model.program;
  const fb::GpuModule& module = *program.gpu();
  const auto* buffers = program.buffers();
  const auto* thunk_list = model.entry->thunks();
  const size_t num_thunks = flatbuffers::VectorLength(thunk_list);
  const size_t num_kernels = flatbuffers::VectorLength(module.kernels());
  size_t num_params = 0;
  for (size_t t = 0; t < num_thunks; ++t) {
    const auto* launch =
        thunk_list->Get(static_cast<flatbuffers::uoffset_t>(t))->kind_as_GpuLaunchThunk();
    if (launch != nullptr) num_params += flatbuffers::VectorLength(launch->args());
  }

  BlockLayout layout;
  const size_t session_at = layout.Add<GpuSession>(1);
  const size_t steps_at = layout.Add<GpuStep>(num_thunks);
  const size_t execs_at = layout.Add<cuda::CUgraphExec>(num_thunks);
  const size_t functions_at = layout.Add<cuda::CUfunction>(num_kernels);
  const size_t params_at = layout.Add<CUdeviceptr>(num_params);
  const size_t pointers_at = layout.Add<void*>(num_params);
  NANORT_CHECK_OR_RETURN(!layout.overflow(), status, NANORT_OUT_OF_MEMORY,
                         "GPU session tables too large");
  uint8_t* block =
      static_cast<uint8_t*>(allocator.alloc(allocator.self, layout.size(), layout.alignment()));
  NANORT_CHECK_OR_RETURN(block != nullptr, status, NANORT_OUT_OF_MEMORY,
                         "allocator returned NULL for the GPU session (%zu bytes)", layout.size());
  memset(block, 0, layout.size());
  GpuSession* gpu = reinterpret_cast<GpuSession*>(block + session_at);
  gpu->steps = reinterpret_cast<GpuStep*>(block + steps_at);
  gpu->execs = reinterpret_cast<cuda::CUgraphExec*>(block + execs_at);
  gpu->functions = reinterpret_cast<cuda::CUfunction*>(block + functions_at);
  gpu->params = reinterpret_cast<CUdeviceptr*>(block + params_at);
  gpu->param_pointers = reinterpret_cast<void**>(block + pointers_at);
  nanort_status_code code = NANORT_OK;

  // The device constants: one span from the first DeviceConstant buffer's
  // start, rounded down to kMaxDeviceAlignment so that every buffer keeps its
  // alignment, to the last one's end; placed after the device arena.
  uint64_t span_begin = UINT64_MAX, span_end = 0;
  for (flatbuffers::uoffset_t b = 0; b < flatbuffers::VectorLength(buffers); ++b) {
    const fb::Buffer& buffer = *buffers->Get(b);
    if (buffer.kind() != fb::BufferKind::DeviceConstant || buffer.size() == 0) continue;
    if (buffer.offset() < span_begin) span_begin = buffer.offset();
    if (buffer.offset() + buffer.size() > span_end) span_end = buffer.offset() + buffer.size();
  }
  if (span_end == 0) span_begin = 0;
  span_begin &= ~uint64_t{kMaxDeviceAlignment - 1};
  // The verifier bounded the device arena by 2^47 and the span lies in the
  // constants blob, which this machine holds.
  const uint64_t constants_at =
      (module.device_arena_size() + kMaxDeviceAlignment - 1) & ~uint64_t{kMaxDeviceAlignment - 1};
  const uint64_t device_bytes = constants_at + (span_end - span_begin);
  auto address = [&](const fb::Buffer& buffer) -> CUdeviceptr {
    return buffer.kind() == fb::BufferKind::Device
               ? gpu->memory + buffer.offset()
               : gpu->memory + constants_at + (buffer.offset() - span_begin);
  };

  {
    NANORT_CU(driver.cuDevicePrimaryCtxRetain(&gpu->context, model.gpu->device),
              "cuDevicePrimaryCtxRetain");
    const CUresult pushed = driver.cuCtxPushCurrent(gpu->context);
    if (pushed != cuda::CUDA_SUCCESS) {
      code = DriverFailure(driver, pushed, "cuCtxPushCurrent", status);
      driver.cuDevicePrimaryCtxRelease(model.gpu->device);
      gpu->context = nullptr;
      goto fail;
    }
  }
  {
    bool out_of_memory = false;
    const fb::GpuImage& image = *module.images()->Get(model.gpu->image);
    const CUresult loaded = LoadModule(driver, image, allocator, &gpu->module, &out_of_memory);
    if (out_of_memory) {
      code = NANORT_FAIL(status, NANORT_OUT_OF_MEMORY,
                         "allocator returned NULL for a copy of the GPU image (%" PRIu32 " bytes)",
                         image.data()->size() + 1);
      goto fail;
    }
    NANORT_CU(loaded, image.format() == fb::GpuImageFormat::Ptx ? "cuModuleLoadData (PTX JIT)"
                                                                : "cuModuleLoadData (cubin)");
  }
  for (size_t k = 0; k < num_kernels; ++k) {
    const fb::GpuKernel& kernel = *module.kernels()->Get(static_cast<flatbuffers::uoffset_t>(k));
    const CUresult found =
        driver.cuModuleGetFunction(&gpu->functions[k], gpu->module, kernel.name()->c_str());
    if (found != cuda::CUDA_SUCCESS) {
      code = NANORT_FAIL(status, NANORT_INVALID_PROGRAM,
                         "GPU session: the image has no kernel '%s' (cuModuleGetFunction: %s)",
                         kernel.name()->c_str(), cuda::CudaErrorName(driver, found));
      goto fail;
    }
    // Past 48 KB, dynamic shared memory must be asked for per kernel.
    if (kernel.shared_bytes() > 48 * 1024) {
      NANORT_CU(driver.cuFuncSetAttribute(gpu->functions[k],
                                          cuda::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                          static_cast<int>(kernel.shared_bytes())),
                "cuFuncSetAttribute (dynamic shared memory)");
    }
  }
  if (device_bytes != 0) {
    NANORT_CU(driver.cuMemAlloc(&gpu->memory, static_cast<size_t>(device_bytes)), "cuMemAlloc");
    if (span_end != 0) {
      NANORT_CU(driver.cuMemcpyHtoD(gpu->memory + constants_at, model.def.constants + span_begin,
                                    static_cast<size_t>(span_end - span_begin)),
                "cuMemcpyHtoD (device constants)");
    }
  }
  NANORT_CU(driver.cuStreamCreate(&gpu->stream, cuda::CU_STREAM_NON_BLOCKING), "cuStreamCreate");

  // The steps, and each run of consecutive launches captured as a graph.
  {
    size_t param = 0;
    for (size_t t = 0; t < num_thunks; ++t) {
      const fb::Thunk& thunk = *thunk_list->Get(static_cast<flatbuffers::uoffset_t>(t));
      GpuStep* last = gpu->num_steps != 0 ? &gpu->steps[gpu->num_steps - 1] : nullptr;
      if (const fb::GpuLaunchThunk* launch = thunk.kind_as_GpuLaunchThunk()) {
        const auto* args = launch->args();
        for (flatbuffers::uoffset_t a = 0; a < flatbuffers::VectorLength(args); ++a) {
          gpu->params[param + a] = address(*buffers->Get(args->Get(a)));
          gpu->param_pointers[param + a] = &gpu->params[param + a];
        }
        param += flatbuffers::VectorLength(args);
        if (last != nullptr && last->kind == StepKind::kGraph && last->thunk + last->count == t) {
          ++last->count;
          continue;
        }
        GpuStep& step = gpu->steps[gpu->num_steps++];
        step.kind = StepKind::kGraph;
        step.thunk = static_cast<uint32_t>(t);
        step.count = 1;
        step.graph = static_cast<uint32_t>(gpu->num_execs++);
        continue;
      }
      GpuStep& step = gpu->steps[gpu->num_steps++];
      step.thunk = static_cast<uint32_t>(t);
      step.count = 1;
      step.tensor = kNoTensor;
      const fb::GpuCopyThunk* copy = thunk.kind_as_GpuCopyThunk();
      if (copy == nullptr) {
        step.kind = StepKind::kHost;
        continue;
      }
      const fb::Buffer& src = *buffers->Get(copy->src());
      const fb::Buffer& dst = *buffers->Get(copy->dst());
      const bool src_device =
          src.kind() == fb::BufferKind::Device || src.kind() == fb::BufferKind::DeviceConstant;
      const bool dst_device = dst.kind() == fb::BufferKind::Device;
      step.bytes = static_cast<size_t>(copy->size());
      if (src_device && dst_device) {
        step.kind = StepKind::kOnDevice;
        step.device = address(dst);
        step.device_src = address(src);
      } else if (dst_device) {
        step.kind = StepKind::kToDevice;
        step.device = address(dst);
        step.host = &thunks[t].args.buffers[0];
        step.tensor = TensorOf(model, src);
      } else {
        step.kind = StepKind::kToHost;
        step.device = address(src);
        step.host = &thunks[t].args.buffers[1];
        step.tensor = TensorOf(model, dst);
      }
    }
    param = 0;
    for (size_t s = 0; s < gpu->num_steps; ++s) {
      const GpuStep& step = gpu->steps[s];
      if (step.kind != StepKind::kGraph) continue;
      NANORT_CU(driver.cuStreamBeginCapture(gpu->stream, cuda::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                "cuStreamBeginCapture");
      CUresult launched = cuda::CUDA_SUCCESS;
      for (uint32_t t = step.thunk; t < step.thunk + step.count && launched == 0; ++t) {
        const fb::GpuLaunchThunk& launch = *thunk_list->Get(t)->kind_as_GpuLaunchThunk();
        const fb::GpuKernel& kernel = *module.kernels()->Get(launch.kernel());
        const auto* grid = kernel.grid();
        const auto* block_dims = kernel.block();
        launched = driver.cuLaunchKernel(
            gpu->functions[launch.kernel()], grid->Get(0), grid->Get(1), grid->Get(2),
            block_dims->Get(0), block_dims->Get(1), block_dims->Get(2), kernel.shared_bytes(),
            gpu->stream,
            flatbuffers::VectorLength(launch.args()) != 0 ? &gpu->param_pointers[param] : nullptr,
            nullptr);
        param += flatbuffers::VectorLength(launch.args());
      }
      // The capture ends whatever happened, so the stream is usable again.
      cuda::CUgraph graph = nullptr;
      const CUresult ended = driver.cuStreamEndCapture(gpu->stream, &graph);
      CUresult instantiated = cuda::CUDA_SUCCESS;
      if (launched == cuda::CUDA_SUCCESS && ended == cuda::CUDA_SUCCESS) {
        instantiated = driver.cuGraphInstantiate(&gpu->execs[step.graph], graph, 0);
      }
      // The executable graph is independent of the graph it came from.
      if (graph != nullptr) driver.cuGraphDestroy(graph);
      NANORT_CU(launched, "cuLaunchKernel (captured)");
      NANORT_CU(ended, "cuStreamEndCapture");
      NANORT_CU(instantiated, "cuGraphInstantiateWithFlags");
    }
  }
  {
    cuda::CUcontext popped;
    driver.cuCtxPopCurrent(&popped);
  }
  *out = gpu;
  return SetOk(status);

fail:
  if (gpu->context != nullptr) {
    // ReleaseGpuSession pushes the context again.
    cuda::CUcontext popped;
    driver.cuCtxPopCurrent(&popped);
  }
  ReleaseGpuSession(model, gpu, allocator);
  return code;
}
#undef NANORT_CU

// "thunk 3 (node 'conv1', op 'Conv'): cuGraphLaunch failed with ...".
__attribute__((cold, noinline)) nanort_status_code RunFailure(const nanort_model& model, uint32_t t,
                                                              const char* call, CUresult result,
                                                              nanort_status* status) {
  const fb::Thunk& thunk = *model.entry->thunks()->Get(t);
  return NANORT_FAIL(status, NANORT_UNAVAILABLE,
                     "thunk %" PRIu32 " (node '%s', op '%s'): %s failed with %s", t,
                     TextOf(thunk.node()), TextOf(thunk.op()), call,
                     cuda::CudaErrorName(model.gpu->driver, result));
}

// Whether tensor `tensor` (inputs, then outputs) is in CUDA memory.
inline bool InCudaMemory(const RunMemory& memory, size_t num_inputs, uint32_t tensor) {
  if (tensor == kNoTensor) return false;
  const nanort_memory* kinds = tensor < num_inputs ? memory.input_memory : memory.output_memory;
  const size_t index = tensor < num_inputs ? tensor : tensor - num_inputs;
  return kinds != nullptr && kinds[index] == NANORT_MEMORY_CUDA;
}

// With the session's context current: every tensor in CUDA memory must be
// touched only by GPU copies and lie inside one device allocation.
nanort_status_code CheckCudaTensors(const nanort_model& model, const RunMemory& memory,
                                    nanort_status* status) {
  if (memory.input_memory == nullptr && memory.output_memory == nullptr) return NANORT_OK;
  const CudaDriver& driver = model.gpu->driver;
  const size_t num_tensors = model.num_inputs + model.num_outputs;
  for (uint32_t tensor = 0; tensor < num_tensors; ++tensor) {
    if (!InCudaMemory(memory, model.num_inputs, tensor)) continue;
    const bool input = tensor < model.num_inputs;
    const char* what = input ? "input" : "output";
    const nanort_tensor_info& info = model.inputs[tensor];  // outputs follow inputs
    const uint32_t host = model.gpu->host_thunk[tensor];
    if (host != kNoThunk) {
      const fb::Thunk& thunk = *model.entry->thunks()->Get(host);
      return NANORT_FAIL(status, NANORT_INVALID_ARGUMENT,
                         "%s '%s' is in CUDA memory, but this program %s it on the host (thunk "
                         "%" PRIu32 ", node '%s', op '%s'): pass it in host memory",
                         what, info.name, input ? "reads" : "writes", host, TextOf(thunk.node()),
                         TextOf(thunk.op()));
    }
    if (info.size_bytes == 0) continue;
    const void* data =
        input ? memory.inputs[tensor].data : memory.outputs[tensor - model.num_inputs].data;
    const CUdeviceptr pointer = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(data));
    CUdeviceptr base = 0;
    size_t size = 0;
    const CUresult result = driver.cuMemGetAddressRange(&base, &size, pointer);
    if (result != cuda::CUDA_SUCCESS) {
      return NANORT_FAIL(status, NANORT_INVALID_ARGUMENT,
                         "%s '%s' is said to be in CUDA memory, but %p is not CUDA device "
                         "memory of this context (cuMemGetAddressRange: %s)",
                         what, info.name, data, cuda::CudaErrorName(driver, result));
    }
    // pointer lies in [base, base + size), so the subtraction is exact.
    if (info.size_bytes > size - (pointer - base)) {
      return NANORT_FAIL(status, NANORT_INVALID_ARGUMENT,
                         "%s '%s': its %llu bytes at %p run past the end of its CUDA allocation "
                         "(%zu bytes at 0x%llx)",
                         what, info.name, static_cast<unsigned long long>(info.size_bytes), data,
                         size, static_cast<unsigned long long>(base));
    }
  }
  return NANORT_OK;
}

nanort_status_code RunGpuSession(const nanort_model& model, GpuSession* gpu,
                                 const nanort_session& session, const RunMemory& memory,
                                 HostThunkRunner run_host, ThunkEventHook observe,
                                 nanort_status* status) {
  const CudaDriver& driver = model.gpu->driver;
  CUresult result = driver.cuCtxPushCurrent(gpu->context);
  if (result != cuda::CUDA_SUCCESS) {
    return NANORT_FAIL(status, NANORT_UNAVAILABLE, "run: cuCtxPushCurrent failed with %s",
                       cuda::CudaErrorName(driver, result));
  }
  {
    const nanort_status_code checked = CheckCudaTensors(model, memory, status);
    if (checked != NANORT_OK) {
      cuda::CUcontext popped;
      driver.cuCtxPopCurrent(&popped);
      return checked;
    }
  }
  // Whether the stream has work the host has not waited for.
  bool pending = false;
  const char* call = nullptr;
  uint32_t failed = 0;
  for (size_t s = 0; s < gpu->num_steps && call == nullptr; ++s) {
    const GpuStep& step = gpu->steps[s];
    if (step.kind == StepKind::kHost) {
      if (pending) {
        pending = false;
        result = driver.cuStreamSynchronize(gpu->stream);
        if (result != cuda::CUDA_SUCCESS) {
          call = "cuStreamSynchronize (before this host thunk)";
          failed = step.thunk;
          break;
        }
      }
      observe(session, step.thunk, NANORT_THUNK_BEGIN);
      run_host(session, step.thunk);
      observe(session, step.thunk, NANORT_THUNK_END);
      continue;
    }
    for (uint32_t t = step.thunk; t < step.thunk + step.count; ++t) {
      observe(session, t, NANORT_THUNK_BEGIN);
    }
    if (step.bytes != 0 || step.kind == StepKind::kGraph) {
      switch (step.kind) {
        case StepKind::kToDevice:
          if (InCudaMemory(memory, model.num_inputs, step.tensor)) {
            result = driver.cuMemcpyDtoDAsync(
                step.device, static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(*step.host)),
                step.bytes, gpu->stream);
            call = "cuMemcpyDtoDAsync (a CUDA-memory input)";
          } else {
            result = driver.cuMemcpyHtoDAsync(step.device, *step.host, step.bytes, gpu->stream);
            call = "cuMemcpyHtoDAsync";
          }
          break;
        case StepKind::kToHost:
          if (InCudaMemory(memory, model.num_inputs, step.tensor)) {
            result = driver.cuMemcpyDtoDAsync(
                static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(*step.host)), step.device,
                step.bytes, gpu->stream);
            call = "cuMemcpyDtoDAsync (a CUDA-memory output)";
          } else {
            result = driver.cuMemcpyDtoHAsync(*step.host, step.device, step.bytes, gpu->stream);
            call = "cuMemcpyDtoHAsync";
          }
          break;
        case StepKind::kOnDevice:
          result = driver.cuMemcpyDtoDAsync(step.device, step.device_src, step.bytes, gpu->stream);
          call = "cuMemcpyDtoDAsync";
          break;
        default:
          result = driver.cuGraphLaunch(gpu->execs[step.graph], gpu->stream);
          call = "cuGraphLaunch";
          break;
      }
      pending = true;
      if (result == cuda::CUDA_SUCCESS) call = nullptr;
      failed = step.thunk;
    }
    for (uint32_t t = step.thunk; t < step.thunk + step.count; ++t) {
      observe(session, t, NANORT_THUNK_END);
    }
  }
  if (call == nullptr && pending) {
    result = driver.cuStreamSynchronize(gpu->stream);
    if (result != cuda::CUDA_SUCCESS) {
      call = "cuStreamSynchronize (end of run)";
      failed = gpu->steps[gpu->num_steps - 1].thunk;
    }
    pending = false;
  }
  // On failure, wait for what was queued: it may still read or write the
  // caller's tensors.
  if (pending) driver.cuStreamSynchronize(gpu->stream);
  cuda::CUcontext popped;
  driver.cuCtxPopCurrent(&popped);
  if (call != nullptr) return RunFailure(model, failed, call, result, status);
  return SetOk(status);
}

}  // namespace
}  // namespace nanort

extern "C" const nanort_gpu_offload nanort_cuda_offload = {
    nanort::LoadGpuModel,     nanort::ReleaseGpuModel,   nanort::DescribeGpuModel,
    nanort::CreateGpuSession, nanort::ReleaseGpuSession, nanort::RunGpuSession,
    nanort::GpuTensorMemory,
};
