#include "model.h"

#include <inttypes.h>
#include <string.h>

#include "allocator.h"
#include "program_verifier.h"
#include "status.h"
#include "target_check.h"

// Defined by src/cuda/ (NANORT_WITH_CUDA); weak, so that referring to it
// here links none of that code (gpu_offload.h). NULL when nothing else in
// the binary referred to it.
#if NANORT_WITH_CUDA
#pragma weak nanort_cuda_offload
#endif

namespace nanort {
namespace {

size_t CountTensors(const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>* tensors) {
  return tensors != nullptr ? tensors->size() : 0;
}

// Fills `infos` from verified tensors, copying dims into `dims`; returns the
// first dim slot not used.
int64_t* FillInfos(const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>* tensors,
                   nanort_tensor_info* infos, int64_t* dims) {
  for (flatbuffers::uoffset_t i = 0; i < CountTensors(tensors); ++i) {
    const fb::Tensor& tensor = *tensors->Get(i);
    const auto* shape = tensor.shape();
    const uint32_t rank = shape != nullptr ? shape->size() : 0;
    nanort_tensor_info& info = infos[i];
    info.name = tensor.name() != nullptr ? tensor.name()->c_str() : "";
    info.dtype = static_cast<nanort_dtype>(tensor.dtype());
    info.rank = rank;
    info.dims = dims;
    if (rank != 0) memcpy(dims, shape->Data(), rank * sizeof(int64_t));
    TensorByteSize(tensor.dtype(), shape, &info.size_bytes);
    dims += rank;
  }
  return dims;
}

void FreeModel(nanort_model* model) {
  const nanort_allocator allocator = model->allocator;
#if NANORT_WITH_CUDA
  if (model->gpu != nullptr) model->gpu_offload->release_model(model->gpu, allocator);
#endif
  void* library = model->library;
  void (*close_library)(void*) = model->close_library;
  if (model->owned_program != nullptr) allocator.free(allocator.self, model->owned_program);
  allocator.free(allocator.self, model);
  // Last: the def and the program may live in the library.
  if (library != nullptr && close_library != nullptr) close_library(library);
}

// The variant this CPU runs: for a one-variant program its target, checked;
// for several, the one with the most features among those this CPU supports.
// When none runs here, variant 0's refusal says why.
nanort_status_code SelectVariant(const fb::Program& program, uint32_t* variant,
                                 nanort_status* status) {
  const auto* variants = program.variants();
  const uint32_t listed = flatbuffers::VectorLength(variants);
  const uint32_t count = listed > 1 ? listed : 1;
  auto target_of = [&](uint32_t v) { return listed > 1 ? variants->Get(v) : program.target(); };
  bool found = false;
  uint32_t best_features = 0;
  *variant = 0;
  for (uint32_t v = 0; v < count; ++v) {
    nanort_status scratch;
    const fb::Target* target = target_of(v);
    if (CheckTargetRunsHere(target, &scratch) != NANORT_OK) continue;
    const uint32_t features = flatbuffers::VectorLength(target->features());
    if (!found || features > best_features) {
      *variant = v;
      best_features = features;
      found = true;
    }
  }
  if (found) return SetOk(status);
  return CheckTargetRunsHere(target_of(0), status);
}

}  // namespace
}  // namespace nanort

using namespace nanort;  // NOLINT: the C API below is this file's only content.

extern "C" nanort_status_code nanort_model_load(const nanort_model_def* def,
                                                nanort_allocator allocator,
                                                nanort_model** out_model, nanort_status* status) {
  NANORT_CHECK_OR_RETURN(out_model != nullptr, status, NANORT_INVALID_ARGUMENT,
                         "out_model is NULL");
  *out_model = nullptr;
  NANORT_CHECK_OR_RETURN(def != nullptr, status, NANORT_INVALID_ARGUMENT, "model def is NULL");
  NANORT_CHECK_OR_RETURN(IsValidAllocator(allocator), status, NANORT_INVALID_ARGUMENT,
                         "allocator has a NULL alloc or free function");
  NANORT_REFUSE_BARE_METAL_SYSTEM_ALLOCATOR(allocator, status);
  NANORT_CHECK_OR_RETURN(
      def->kernel_abi == NANORT_KERNEL_ABI_VERSION, status, NANORT_UNSUPPORTED_VERSION,
      "model was compiled for kernel ABI %" PRIu32 ", this runtime calls ABI %" PRIu32,
      def->kernel_abi, static_cast<uint32_t>(NANORT_KERNEL_ABI_VERSION));
  NANORT_CHECK_OR_RETURN(def->program != nullptr, status, NANORT_INVALID_ARGUMENT,
                         "model def has a NULL program");

  // A program embedded in an object file is normally aligned; one read from
  // elsewhere may not be, and the flatbuffer's scalars are read in place.
  const uint8_t* bytes = def->program;
  void* owned_program = nullptr;
  if (!IsAligned(bytes, kProgramAlignment)) {
    NANORT_CHECK_OR_RETURN(def->program_size <= SIZE_MAX, status, NANORT_INVALID_PROGRAM,
                           "program too large");
    owned_program =
        allocator.alloc(allocator.self, static_cast<size_t>(def->program_size), kProgramAlignment);
    NANORT_CHECK_OR_RETURN(owned_program != nullptr, status, NANORT_OUT_OF_MEMORY,
                           "allocator returned NULL for a %llu-byte aligned program copy",
                           static_cast<unsigned long long>(def->program_size));
    memcpy(owned_program, bytes, static_cast<size_t>(def->program_size));
    bytes = static_cast<const uint8_t*>(owned_program);
  }

  const fb::Program* program = nullptr;
  ProgramTotals totals;
  nanort_status_code code = VerifyProgramBuffer(bytes, def->program_size, &program, status);
  if (code == NANORT_OK) code = VerifyProgramInvariants(*program, *def, allocator, &totals, status);
  uint32_t variant = 0;
  if (code == NANORT_OK) code = SelectVariant(*program, &variant, status);
  if (code != NANORT_OK) {
    if (owned_program != nullptr) allocator.free(allocator.self, owned_program);
    return code;
  }

  const fb::Entry* entry = program->entries()->Get(0);
  const size_t num_inputs = CountTensors(entry->inputs());
  const size_t num_outputs = CountTensors(entry->outputs());
  BlockLayout layout;
  const size_t model_at = layout.Add<nanort_model>(1);
  const size_t infos_at = layout.Add<nanort_tensor_info>(num_inputs + num_outputs);
  const size_t dims_at = layout.Add<int64_t>(totals.dims);
  void* block = layout.overflow()
                    ? nullptr
                    : allocator.alloc(allocator.self, layout.size(), layout.alignment());
  if (block == nullptr) {
    if (owned_program != nullptr) allocator.free(allocator.self, owned_program);
    return NANORT_FAIL(status, NANORT_OUT_OF_MEMORY,
                       "allocator returned NULL for the model (%zu bytes)", layout.size());
  }
  uint8_t* base = static_cast<uint8_t*>(block);
  nanort_model* model = reinterpret_cast<nanort_model*>(base + model_at);
  memset(model, 0, sizeof(*model));
  model->allocator = allocator;
  model->def = *def;
  // The chosen variant's kernels: the table is variant-major.
  model->def.kernels +=
      static_cast<size_t>(variant) * flatbuffers::VectorLength(program->kernels());
  model->def.num_kernels = flatbuffers::VectorLength(program->kernels());
  model->variant = variant;
  const fb::Target* target = flatbuffers::VectorLength(program->variants()) > 1
                                 ? program->variants()->Get(variant)
                                 : program->target();
  model->cpu = target->cpu() != nullptr ? target->cpu()->c_str() : "";
  model->program = program;
  model->entry = entry;
  model->owned_program = owned_program;
  model->arena_size = static_cast<size_t>(program->arena_size());
  model->arena_alignment = program->arena_alignment();
  model->arena_rounded_size = totals.arena_rounded_size;
  model->scratch_offset = totals.scratch_offset;
  model->scratch_size = totals.scratch_size;
  if (totals.scratch_size != 0) model->arena_size = totals.scratch_offset + totals.scratch_size;
  model->inputs = reinterpret_cast<nanort_tensor_info*>(base + infos_at);
  model->num_inputs = num_inputs;
  model->outputs = model->inputs + num_inputs;
  model->num_outputs = num_outputs;
  model->num_slots = totals.slots;
  model->num_patches = totals.patches;
#if NANORT_WITH_CONTROL_FLOW
  model->num_thunks = totals.thunks;
  model->num_controls = totals.controls;
#endif
  int64_t* dims = reinterpret_cast<int64_t*>(base + dims_at);
  dims = FillInfos(entry->inputs(), model->inputs, dims);
  FillInfos(entry->outputs(), model->outputs, dims);

  if (program->gpu() != nullptr) {
    // The verifier refused GPU programs in builds without GPU offload.
#if NANORT_WITH_CUDA
    const nanort_gpu_offload* offload = &nanort_cuda_offload;
    if (offload == nullptr) {
      FreeModel(model);
      return NANORT_FAIL(status, NANORT_UNAVAILABLE,
                         "program offloads to an NVIDIA GPU, but this binary does not link "
                         "nanort's GPU offload: refer to nanort_cuda_offload "
                         "(NANORT_LINK_CUDA_OFFLOAD() in nanort.h)");
    }
    model->gpu_offload = offload;
    const nanort_status_code code = offload->load(*model, &model->gpu, status);
    if (code != NANORT_OK) {
      model->gpu = nullptr;
      FreeModel(model);
      return code;
    }
#endif
  }

  *out_model = model;
  return SetOk(status);
}

extern "C" const char* nanort_model_gpu(const nanort_model* model) {
#if NANORT_WITH_CUDA
  if (model != nullptr && model->gpu != nullptr) return model->gpu_offload->describe(model->gpu);
#endif
  (void)model;
  return nullptr;
}

extern "C" uint32_t nanort_model_tensor_memory(const nanort_model* model, int is_output,
                                               size_t index) {
  if (model == nullptr || index >= (is_output ? model->num_outputs : model->num_inputs)) return 0;
#if NANORT_WITH_CUDA
  if (model->gpu != nullptr) {
    return model->gpu_offload->tensor_memory(model->gpu,
                                             is_output ? model->num_inputs + index : index);
  }
#endif
  return 1u << NANORT_MEMORY_HOST;
}

extern "C" void nanort_model_release(nanort_model* model) {
  if (model != nullptr) FreeModel(model);
}

extern "C" size_t nanort_model_input_count(const nanort_model* model) {
  return model != nullptr ? model->num_inputs : 0;
}

extern "C" size_t nanort_model_output_count(const nanort_model* model) {
  return model != nullptr ? model->num_outputs : 0;
}

namespace {

nanort_status_code TensorInfo(const nanort_tensor_info* infos, size_t count, size_t index,
                              nanort_tensor_info* out_info) {
  if (out_info == nullptr || index >= count) return NANORT_INVALID_ARGUMENT;
  *out_info = infos[index];
  return NANORT_OK;
}

}  // namespace

extern "C" nanort_status_code nanort_model_input_info(const nanort_model* model, size_t index,
                                                      nanort_tensor_info* out_info) {
  if (model == nullptr) return NANORT_INVALID_ARGUMENT;
  return TensorInfo(model->inputs, model->num_inputs, index, out_info);
}

extern "C" nanort_status_code nanort_model_output_info(const nanort_model* model, size_t index,
                                                       nanort_tensor_info* out_info) {
  if (model == nullptr) return NANORT_INVALID_ARGUMENT;
  return TensorInfo(model->outputs, model->num_outputs, index, out_info);
}

extern "C" const char* nanort_model_cpu(const nanort_model* model) {
  return model != nullptr ? model->cpu : "";
}

extern "C" uint64_t nanort_model_arena_size(const nanort_model* model) {
  return model != nullptr ? model->arena_size : 0;
}

extern "C" uint32_t nanort_model_arena_alignment(const nanort_model* model) {
  return model != nullptr ? model->arena_alignment : 0;
}

#if NANORT_WITH_CONTROL_FLOW
namespace nanort {
namespace {

using ThunkList = flatbuffers::Vector<flatbuffers::Offset<fb::Thunk>>;

// Counts *index down over `thunks` and what they nest, in pre-order; the
// verifier bounded the recursion (kMaxControlDepth).
const fb::Thunk* FindInPreOrder(const ThunkList* thunks, size_t* index, uint32_t level,
                                uint32_t* out_level) {
  for (flatbuffers::uoffset_t i = 0; i < flatbuffers::VectorLength(thunks); ++i) {
    const fb::Thunk* thunk = thunks->Get(i);
    if (*index == 0) {
      *out_level = level;
      return thunk;
    }
    --*index;
    const fb::Thunk* found = nullptr;
    if (const fb::IfThunk* branch = thunk->kind_as_IfThunk()) {
      found = FindInPreOrder(branch->then_thunks(), index, level + 1, out_level);
      if (found == nullptr) {
        found = FindInPreOrder(branch->else_thunks(), index, level + 1, out_level);
      }
    } else if (const fb::LoopThunk* loop = thunk->kind_as_LoopThunk()) {
      found = FindInPreOrder(loop->body(), index, level + 1, out_level);
    }
    if (found != nullptr) return found;
  }
  return nullptr;
}

}  // namespace

const fb::Thunk* ThunkInPreOrder(const nanort_model& model, size_t index, uint32_t* level) {
  *level = 0;
  if (model.num_controls == 0) {
    return index < flatbuffers::VectorLength(model.entry->thunks())
               ? model.entry->thunks()->Get(static_cast<flatbuffers::uoffset_t>(index))
               : nullptr;
  }
  return FindInPreOrder(model.entry->thunks(), &index, 0, level);
}

}  // namespace nanort
#endif

extern "C" size_t nanort_model_thunk_count(const nanort_model* model) {
#if NANORT_WITH_CONTROL_FLOW
  return model != nullptr ? model->num_thunks : 0;
#else
  return model != nullptr ? flatbuffers::VectorLength(model->entry->thunks()) : 0;
#endif
}

extern "C" nanort_status_code nanort_model_thunk_info(const nanort_model* model, size_t index,
                                                      nanort_thunk_info* out_info) {
  if (out_info == nullptr || index >= nanort_model_thunk_count(model))
    return NANORT_INVALID_ARGUMENT;
#if NANORT_WITH_CONTROL_FLOW
  uint32_t level = 0;
  const nanort::fb::Thunk& thunk = *nanort::ThunkInPreOrder(*model, index, &level);
  out_info->level = level;
  out_info->control = thunk.kind_type() == nanort::fb::ThunkKind::IfThunk     ? NANORT_THUNK_IF
                      : thunk.kind_type() == nanort::fb::ThunkKind::LoopThunk ? NANORT_THUNK_LOOP
                                                                              : 0;
#else
  const nanort::fb::Thunk& thunk =
      *model->entry->thunks()->Get(static_cast<flatbuffers::uoffset_t>(index));
  out_info->level = 0;
  out_info->control = 0;
#endif
  // Flatbuffers strings end in a NUL, which the verifier checked.
  out_info->node = thunk.node() != nullptr ? thunk.node()->c_str() : "";
  out_info->op = thunk.op() != nullptr ? thunk.op()->c_str() : "";
  const nanort::fb::KernelThunk* kernel = thunk.kind_as_KernelThunk();
  out_info->is_copy = kernel == nullptr && out_info->control == 0;
  out_info->kernel = kernel != nullptr ? kernel->kernel() : 0;
#if NANORT_WITH_CUDA
  if (const nanort::fb::GpuLaunchThunk* launch = thunk.kind_as_GpuLaunchThunk()) {
    out_info->is_copy = 0;
    out_info->kernel = launch->kernel();
  }
#endif
  return NANORT_OK;
}
