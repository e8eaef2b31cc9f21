// GPU offload as the core sees it: one table of functions, defined by the
// CUDA code in src/cuda/ (NANORT_WITH_CUDA) as the symbol nanort_cuda_offload
// and reached from load, session creation, run and release only through
// that table. The core refers to the symbol weakly, so a static link pulls
// the CUDA code in only when something else references it strongly (nanoc's
// objects for GPU targets, or NANORT_LINK_CUDA_OFFLOAD() in nanort.h): a
// CPU-only program links none of it, as one that never asks for threads
// links no pool.
#ifndef NANORT_SRC_GPU_OFFLOAD_H_
#define NANORT_SRC_GPU_OFFLOAD_H_

#include <stddef.h>
#include <stdint.h>

#include "nanort/nanort.h"

namespace nanort {

struct GpuModel;    // the driver, the device and the image chosen at load
struct GpuSession;  // context, module, device memory, stream and graphs
struct ExecutableThunk;

// Runs host thunk `thunk` of `session` (a kernel or copy thunk), as the
// session's own loop would: split over its threads when it has some.
typedef void (*HostThunkRunner)(const nanort_session& session, size_t thunk);
// Reports `event` for thunk `thunk` to the session's observer, if it has one.
typedef void (*ThunkEventHook)(const nanort_session& session, size_t thunk,
                               nanort_thunk_event event);

// A run's tensors and where each lives (nanort_run_with_memory); the
// pointers are the caller's, already checked for shape, alignment and
// overlap. input_memory / output_memory NULL: all on the host.
struct RunMemory {
  const nanort_tensor* inputs;
  const nanort_memory* input_memory;
  const nanort_tensor* outputs;
  const nanort_memory* output_memory;
};

}  // namespace nanort

struct nanort_gpu_offload {
  // Loads the driver, picks the device's image; *out is the model's GPU part.
  nanort_status_code (*load)(const nanort_model& model, nanort::GpuModel** out,
                             nanort_status* status);
  void (*release_model)(nanort::GpuModel* gpu, nanort_allocator allocator);
  // "sm_80 cubin on NVIDIA compute capability 8.6": owned by `gpu`.
  const char* (*describe)(const nanort::GpuModel* gpu);
  // Everything a run needs on the device, from `allocator`; `thunks` are the
  // session's (a GpuCopyThunk's host side is its slot there, patched per run).
  nanort_status_code (*create_session)(const nanort_model& model,
                                       const nanort::ExecutableThunk* thunks,
                                       nanort_allocator allocator, nanort::GpuSession** out,
                                       nanort_status* status);
  void (*release_session)(const nanort_model& model, nanort::GpuSession* gpu,
                          nanort_allocator allocator);
  // The whole entry: host thunks through run_host, the device's through the
  // driver; returns when every output is written.
  // Tensors in CUDA memory are checked (their thunks, their allocations)
  // before anything runs.
  nanort_status_code (*run)(const nanort_model& model, nanort::GpuSession* gpu,
                            const nanort_session& session, const nanort::RunMemory& memory,
                            nanort::HostThunkRunner run_host, nanort::ThunkEventHook observe,
                            nanort_status* status);
  // nanort_model_tensor_memory's mask for tensor `tensor` (inputs, then
  // outputs).
  uint32_t (*tensor_memory)(const nanort::GpuModel* gpu, size_t tensor);
};

#endif  // NANORT_SRC_GPU_OFFLOAD_H_
