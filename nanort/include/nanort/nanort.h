/* nanort: the embedded runtime for programs compiled by nanoc.
 *
 * Life cycle:
 *   nanort_model_load(&NAME_model, ...)       -> nanort_model*   (verify + CPU check)
 *   nanort_session_create(model, arena, ...)  -> nanort_session* (arena bound once)
 *   nanort_run(session, inputs, outputs, ...) (any number of times; allocates
 *                                              nothing, takes no lock, touches no file)
 *   nanort_session_release / nanort_model_release
 *
 * Errors: every call that can fail returns a nanort_status_code and, when the
 * caller passes a nanort_status*, fills its message with what failed and where
 * (which input, which buffer, which feature). Messages are truncated to fit.
 *
 * Threads: a model may be shared by sessions on different threads; a session
 * is used by one thread at a time. A session may split each kernel over
 * several threads (nanort_session_create_with_options).
 */
#ifndef NANORT_NANORT_H_
#define NANORT_NANORT_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Program format written by nanoc (schema/program.fbs). A program with a newer
 * major version is refused; a newer minor version is read. */
#define NANORT_FORMAT_MAJOR 1u
#define NANORT_FORMAT_MINOR 4u
/* Calling convention of compiled kernels and layout of the object's kernel
 * table (nanort_kernel_fn, nanort_kernel below). 2: every table entry carries
 * its kernel's signature; 3: kernels get per-worker scratch (scratch_bytes,
 * nanort_kernel_args::scratch); 4: nanort_model_def ends with the GPU seal
 * (nanort_gpu_seal). An object of another ABI is refused. */
#define NANORT_KERNEL_ABI_VERSION 4u

/* ---- status ------------------------------------------------------------ */

typedef enum nanort_status_code {
  NANORT_OK = 0,
  NANORT_INVALID_ARGUMENT = 1,    /* a NULL or out-of-range argument */
  NANORT_INVALID_PROGRAM = 2,     /* fails verification: corrupt or truncated */
  NANORT_UNSUPPORTED_VERSION = 3, /* format major or kernel ABI newer than this runtime */
  NANORT_UNSUPPORTED_TARGET = 4,  /* built for a CPU/GPU this machine is not */
  NANORT_ARENA_TOO_SMALL = 5,     /* caller's arena smaller or less aligned than needed */
  NANORT_SHAPE_MISMATCH = 6,      /* an input/output of the wrong dtype, shape or size */
  NANORT_NOT_FOUND = 7,           /* a file, symbol, input or output name not found */
  NANORT_OUT_OF_MEMORY = 8,       /* the allocator returned NULL */
  NANORT_UNAVAILABLE = 9          /* a facility this build or platform lacks (e.g. dlopen) */
} nanort_status_code;

#define NANORT_STATUS_MESSAGE_SIZE 256

typedef struct nanort_status {
  nanort_status_code code;
  char message[NANORT_STATUS_MESSAGE_SIZE]; /* NUL-terminated */
} nanort_status;

/* A short fixed name for a code, e.g. "INVALID_PROGRAM". Never NULL. */
const char* nanort_status_code_name(nanort_status_code code);

/* ---- dtypes (same numbering as schema/program.fbs DType) ---------------- */

typedef enum nanort_dtype {
  NANORT_F32 = 0,
  NANORT_F16 = 1,
  NANORT_BF16 = 2,
  NANORT_I8 = 3,
  NANORT_U8 = 4,
  NANORT_I32 = 5,
  NANORT_I64 = 6,
  NANORT_BOOL = 7,
  NANORT_F64 = 8,
  NANORT_I16 = 9,
  NANORT_U16 = 10,
  NANORT_U32 = 11,
  NANORT_U64 = 12,
  NANORT_F8E4M3FN = 13,
  NANORT_F8E4M3FNUZ = 14,
  NANORT_F8E5M2 = 15,
  NANORT_F8E5M2FNUZ = 16,
  /* Sub-byte types, one element a byte: the code in the low bits (two's
     complement for I4 and I2), the high bits zero, as ml_dtypes holds them. */
  NANORT_I4 = 17,
  NANORT_U4 = 18,
  NANORT_I2 = 19,
  NANORT_U2 = 20,
  NANORT_F4E2M1 = 21
} nanort_dtype;

/* "f32", "i64", ...; "?" for an unknown value. */
const char* nanort_dtype_name(nanort_dtype dtype);
/* Size in bytes of one element; 0 for an unknown value. */
size_t nanort_dtype_size(nanort_dtype dtype);

/* ---- allocation -------------------------------------------------------- */

/* Every create/load call takes the allocator it uses; nanort has no global
 * allocator. `alloc` returns memory aligned to `alignment` (a power of two) or
 * NULL. nanort calls it only at load and session creation, never in run. */
typedef struct nanort_allocator {
  void* self;
  void* (*alloc)(void* self, size_t size, size_t alignment);
  void (*free)(void* self, void* ptr);
} nanort_allocator;

/* An allocator over the C library's aligned_alloc/free. In bare-metal builds
 * (NANORT_PLATFORM=none) there is no heap to assume: its alloc always returns
 * NULL, so pass your own allocator and, usually, your own arena. */
nanort_allocator nanort_allocator_system(void);

/* ---- what nanoc's object file exports ------------------------------------ */

/* Arguments of a compiled kernel: buffers[i] is the i-th buffer named by the
 * kernel thunk's args (inputs first, then outputs, in the IR node's order;
 * a kernel that prefetches the next kernel's weights has those, a constant,
 * after its inputs). */
typedef struct nanort_kernel_args {
  void* const* buffers;
  uint64_t num_buffers;
  /* This worker's scratch, 64-byte aligned, of the model's per-worker
   * scratch bytes (the most any of its kernels declares in scratch_bytes):
   * worker 0's follows the program's buffers in the arena, every further
   * thread's comes from the allocator at session creation. Two calls that
   * may run at once never get the same scratch. A kernel that declares no
   * scratch must not use it. */
  void* scratch;
} nanort_kernel_args;

/* Every compiled CPU kernel. It computes the tasks [task_begin, task_end) of
 * its parallel iteration space; disjoint ranges may run concurrently. */
typedef void (*nanort_kernel_fn)(const nanort_kernel_args* args, uint64_t task_begin,
                                 uint64_t task_end);

/* One entry of the object's kernel table: a kernel and the signature nanoc
 * compiled it for. The kernel's code assumes exactly these sizes, so at load
 * every thunk that names the kernel must match its signature (argument count,
 * outputs, the bytes of each argument's buffer, task count) or the program is
 * refused (NANORT_INVALID_PROGRAM): the program bytes are not trusted, the
 * compiled object is. In an artifact of several CPU variants, a kernel's
 * entries in every variant hold the same signature and the same arg_bytes
 * pointer. */
typedef struct nanort_kernel {
  nanort_kernel_fn fn;
  const uint64_t* arg_bytes; /* num_args entries: the bytes of each argument's buffer */
  uint64_t task_count;       /* the size of its parallel iteration space */
  uint32_t num_args;
  uint32_t num_outputs;   /* the last num_outputs arguments are written */
  uint64_t scratch_bytes; /* of args->scratch it uses (0: none), at most 1 GiB */
} nanort_kernel;

/* In an object whose program has a GPU part (nanoc --target sm_XY), the
 * SHA-256 digests of that part as nanoc wrote it (nanort/src/cuda/gpu_seal.h
 * says which bytes): the kernel table with the device arena, and each image
 * in the program's order. The program's bytes are not trusted, this is: a
 * load refuses a GPU module whose kernel table, or whose image chosen for the
 * device, does not match (NANORT_INVALID_PROGRAM), before the driver sees
 * it. */
typedef struct nanort_gpu_seal {
  uint8_t kernels_sha256[32];
  uint32_t num_images;
  const uint8_t* images_sha256; /* num_images * 32 bytes */
} nanort_gpu_seal;

/* The one symbol a compiled model exports: `NAME_model`, declared in NAME.h.
 * All pointers point into the object's read-only data, which outlives any
 * model loaded from it. */
typedef struct nanort_model_def {
  uint32_t kernel_abi; /* NANORT_KERNEL_ABI_VERSION it was compiled for */
  uint32_t num_kernels;
  const uint8_t* program; /* flatbuffer, file identifier "NRTP" */
  uint64_t program_size;
  const uint8_t* constants; /* read-only constants blob, used in place */
  uint64_t constants_size;
  const nanort_kernel* kernels; /* num_kernels entries, by kernel index */
  const nanort_gpu_seal* gpu;   /* NULL unless the program has a GPU part */
} nanort_model_def;

/* ---- models -------------------------------------------------------------- */

typedef struct nanort_model nanort_model;

/* Verifies def's program (flatbuffers verifier, then the program's own
 * invariants: every buffer inside its blob or the arena, the arena exactly what
 * its buffers need, every kernel index bound and every kernel thunk matching
 * its kernel's signature, every thunk operand defined before use), checks that
 * this machine can run it (CPU features), and returns a model that borrows
 * def's data. On failure *out_model is NULL.
 * Cost: time linear in program_size, and at most about 7 * program_size bytes
 * from `allocator` here and at session creation (besides the arena): a
 * program whose tables or vectors are shared so that they would count more
 * than once is refused (docs/SAFETY.md). */
nanort_status_code nanort_model_load(const nanort_model_def* def, nanort_allocator allocator,
                                     nanort_model** out_model, nanort_status* status);

/* Loads a model from a shared object written by nanoc (NAME.so) with dlopen.
 * `name` is the model's prefix; NULL takes it from the file name (dir/NAME.so).
 * The shared object stays loaded until nanort_model_release. Returns
 * NANORT_UNAVAILABLE in builds without dynamic loading (NANORT_WITH_DLOPEN=OFF,
 * or NANORT_PLATFORM=none). */
nanort_status_code nanort_model_load_file(const char* path, const char* name,
                                          nanort_allocator allocator, nanort_model** out_model,
                                          nanort_status* status);

void nanort_model_release(nanort_model* model);

typedef struct nanort_tensor_info {
  const char* name; /* owned by the model */
  nanort_dtype dtype;
  uint32_t rank;
  const int64_t* dims; /* rank entries, owned by the model */
  uint64_t size_bytes;
} nanort_tensor_info;

size_t nanort_model_input_count(const nanort_model* model);
size_t nanort_model_output_count(const nanort_model* model);
nanort_status_code nanort_model_input_info(const nanort_model* model, size_t index,
                                           nanort_tensor_info* out_info);
nanort_status_code nanort_model_output_info(const nanort_model* model, size_t index,
                                            nanort_tensor_info* out_info);
/* The LLVM CPU name of the target whose kernels this model runs: the
 * program's target, or, for an artifact compiled for several CPUs
 * (nanoc --target x86-64-v3,x86-64-v4), the variant with the most features
 * that this CPU supports, chosen at load. Owned by the model. */
const char* nanort_model_cpu(const nanort_model* model);

/* GPU offload (format 1.3, nanoc --target sm_XY): what this model runs its
 * GPU thunks with, chosen at load, e.g. "sm_80 cubin on NVIDIA compute
 * capability 8.6" or "PTX 8.0 for sm_80, JIT-compiled for NVIDIA compute
 * capability 12.0"; NULL for a CPU-only model. Owned by the model.
 *
 * Loading a program with a GPU module loads the CUDA driver (dlopen of
 * libcuda.so.1, or of the path in the environment variable
 * NANORT_CUDA_DRIVER; nanort never links libcuda or cudart), takes device 0
 * and picks one of the program's images for its compute capability: a cubin
 * of variant "a" for exactly that capability, else a cubin of the same major
 * version and the highest minor not above the device's, else the PTX for the
 * highest SM not above it whose PTX ISA the driver can JIT. Refused:
 *   NANORT_UNSUPPORTED_TARGET  no image runs on this device (the message
 *                              names the device's compute capability and
 *                              every image in the program);
 *   NANORT_UNAVAILABLE         no driver, the toolkit's stub library, no
 *                              device, a driver older than CUDA 12.0 or too
 *                              old for every image that would fit, or a
 *                              nanort built without NANORT_WITH_CUDA.
 * Sessions of such a model hold the GPU's primary context, the image's
 * module, one device allocation (the device arena and the constants the
 * kernels read, uploaded once), a stream, and each run of consecutive GPU
 * kernel launches captured once as a CUDA graph; a run copies inputs in,
 * launches each graph once, copies outputs out and synchronizes once (and
 * before any host thunk that follows GPU work). */
const char* nanort_model_gpu(const nanort_model* model);

/* The CUDA offload code's entry table, in builds with NANORT_WITH_CUDA (the
 * default on Linux). nanort refers to it weakly, so a statically linked
 * program carries the CUDA code only when something refers to this symbol:
 * nanoc's objects for GPU targets do; a program that loads GPU models some
 * other way (e.g. nanort_model_load_file) writes NANORT_LINK_CUDA_OFFLOAD();
 * once at file scope. Without it, loading a GPU program returns
 * NANORT_UNAVAILABLE saying so. */
struct nanort_gpu_offload;
extern const struct nanort_gpu_offload nanort_cuda_offload;
/* A file-scope reference to it; each use names its own (so that several
 * models' headers may expand it in one file). */
#define NANORT_LINK_CUDA_OFFLOAD() NANORT_LINK_CUDA_OFFLOAD_AT_(__COUNTER__)
#define NANORT_LINK_CUDA_OFFLOAD_AT_(n) \
  NANORT_LINK_CUDA_OFFLOAD_NAMED_(nanort_link_cuda_offload_, n)
#define NANORT_LINK_CUDA_OFFLOAD_NAMED_(prefix, n) \
  __attribute__((used)) static const void* const prefix##n = &nanort_cuda_offload

/* Arena bytes and alignment a session needs (both also in NAME.h): the
 * program's buffers, then one worker's scratch (nanort_kernel_args). */
uint64_t nanort_model_arena_size(const nanort_model* model);
uint32_t nanort_model_arena_alignment(const nanort_model* model);

/* One thunk of the model's entry: a step of nanort_run, which runs them in
 * index order. For profilers and debuggers (nanort-run --profile). */
typedef struct nanort_thunk_info {
  const char* node; /* the model node it computes; "" if unnamed; owned by the model */
  const char* op;   /* that node's operator, e.g. "Conv"; "" if unnamed; owned by the model */
  int is_copy;      /* 1: a byte copy (on the host, or between host and GPU memory);
                       0: a call of compiled kernel `kernel` or a GPU kernel launch */
  uint32_t kernel;  /* kernel index in the program (variant 0's numbering; for a GPU
                       launch, in the program's GPU module); 0 for a copy */
  int control;      /* format 1.4's run-time control flow: NANORT_THUNK_IF or
                       NANORT_THUNK_LOOP (is_copy and kernel 0), else 0 */
  uint32_t level;   /* nesting level: 0 for the entry's thunks, 1 for those in an If's
                       branch or a Loop's body at level 0, and so on */
} nanort_thunk_info;

#define NANORT_THUNK_IF 1
#define NANORT_THUNK_LOOP 2

/* Thunks are numbered in pre-order: the entry's thunks in order, each
 * IfThunk followed by the thunks of its then branch and then those of its
 * else branch, each LoopThunk by its body's (recursively), before the next
 * thunk of its own sequence. A program without control flow is numbered as
 * its entry lists its thunks. The count is of all of them; looking one up
 * in a program with control flow walks the program (linear in the index). */

size_t nanort_model_thunk_count(const nanort_model* model);
/* NANORT_INVALID_ARGUMENT for a NULL model or out_info, or index >= the count. */
nanort_status_code nanort_model_thunk_info(const nanort_model* model, size_t index,
                                           nanort_thunk_info* out_info);

/* ---- sessions ----------------------------------------------------------- */

typedef struct nanort_session nanort_session;

/* Creates a session. If `arena` is NULL, nanort allocates the arena once here
 * with `allocator` and frees it at release; otherwise the caller keeps
 * ownership of `arena`, which must hold `arena_size` >= the model's arena size
 * bytes at the model's arena alignment (else NANORT_ARENA_TOO_SMALL), and must
 * outlive the session. The model must outlive the session. */
nanort_status_code nanort_session_create(const nanort_model* model, void* arena, size_t arena_size,
                                         nanort_allocator allocator, nanort_session** out_session,
                                         nanort_status* status);

/* ---- threads ------------------------------------------------------------ */

/* A caller's parallel-for: it must call fn(ctx, i) exactly once for every i in
 * [0, n), on any threads (the calling thread may run some or all of them), and
 * return only when every call has returned. The calls of one parallel_for are
 * independent of each other. nanort calls it from inside nanort_run, on the
 * thread that called nanort_run, once per kernel thunk that it splits (a
 * kernel of 2 or more tasks), with n = the number of chunks (num_threads, at
 * most the kernel's task count); chunk i runs a contiguous slice of the
 * kernel's tasks. It is never called concurrently for one session, and fn
 * neither allocates, locks nor blocks. */
typedef void (*nanort_parallel_for_fn)(void* pool_user_data, size_t n,
                                       void (*fn)(void* ctx, size_t i), void* ctx);

/* Options of nanort_session_create_with_options. Set struct_size to
 * sizeof(nanort_session_options) and every other byte to 0 first, e.g.
 *   nanort_session_options o; memset(&o, 0, sizeof o); o.struct_size = sizeof o;
 * Fields added later go at the end, and a runtime reads only the first
 * struct_size bytes (treating the rest as 0), so a caller built against an
 * older header keeps working. Refused: a struct_size smaller than this first
 * version's or over 4096 (NANORT_INVALID_ARGUMENT), and one larger than this
 * runtime knows with a non-zero byte beyond what it knows, i.e. a newer
 * option it cannot honour (NANORT_UNSUPPORTED_VERSION). */
typedef struct nanort_session_options {
  size_t struct_size;
  /* Threads a run uses, the calling thread included: each kernel of n tasks
   * is split into min(num_threads, n) contiguous chunks of tasks, which run
   * concurrently; thunks still run one after the other. 0 or 1: everything
   * runs on the calling thread. Outputs are bitwise the same for every
   * value. */
  uint32_t num_threads;
  /* NULL: with num_threads > 1, nanort starts num_threads - 1 workers of its
   * own at session creation (NANORT_UNAVAILABLE in builds without
   * NANORT_WITH_THREADS, e.g. bare metal); they sleep between runs (a short
   * bounded spin after each kernel, then a futex or condition-variable wait),
   * the calling thread runs the first chunk, and session release joins them.
   * Non-NULL: the chunks go to the caller's own pool through parallel_for
   * (see nanort_parallel_for_fn) with pool_user_data, and nanort starts no
   * thread. */
  nanort_parallel_for_fn parallel_for;
  void* pool_user_data;
} nanort_session_options;

/* nanort_session_create with options (NULL options: the same as
 * nanort_session_create, which runs everything on the calling thread). The
 * session's tables and, with nanort's own pool, the pool's state come from
 * `allocator` here (the C library's pthread_create allocates each worker's
 * stack and, through the dynamic loader, its thread-local storage); run allocates nothing and its
 * only synchronisation is the wake-up of the workers and the wait for them at the end of each split
 * kernel. The arena holds the calling thread's scratch; with num_threads > 1
 * and a model whose kernels use scratch, the other num_threads - 1 threads'
 * scratch (num_threads - 1 times the per-worker bytes) also comes from
 * `allocator` here, once. */
nanort_status_code nanort_session_create_with_options(const nanort_model* model, void* arena,
                                                      size_t arena_size, nanort_allocator allocator,
                                                      const nanort_session_options* options,
                                                      nanort_session** out_session,
                                                      nanort_status* status);

void nanort_session_release(nanort_session* session);

/* A caller's tensor: data plus the dtype and shape it claims to have. */
typedef struct nanort_tensor {
  void* data;
  nanort_dtype dtype;
  uint32_t rank;
  const int64_t* dims;
} nanort_tensor;

/* Runs the model's entry on the caller's tensors, in the entry's order.
 * Each tensor's dtype and shape must equal the model's (else
 * NANORT_SHAPE_MISMATCH naming the input or output). Data must be non-NULL
 * (unless the tensor has 0 bytes) and aligned to the dtype's element size,
 * and no output may overlap an input or another output (else
 * NANORT_INVALID_ARGUMENT). Outputs are written in place; inputs are only
 * read. A program with a Loop (format 1.4) whose inputs would make it start
 * iteration max_trips fails with NANORT_INVALID_ARGUMENT naming the loop and
 * the bound; its outputs and arena then hold partial results, and a later
 * run with other inputs is unaffected. */
nanort_status_code nanort_run(nanort_session* session, const nanort_tensor* inputs,
                              size_t num_inputs, const nanort_tensor* outputs, size_t num_outputs,
                              nanort_status* status);

/* Where a caller's tensor lives. */
typedef enum nanort_memory {
  NANORT_MEMORY_HOST = 0, /* host memory (what nanort_run takes) */
  /* CUDA device memory, data = (void*)(uintptr_t)CUdeviceptr: an allocation
   * the caller made (cuMemAlloc, cudaMalloc, a framework's tensor, ...) on
   * device 0, in a context that shares its address space with the primary
   * context nanort uses (the primary context itself, as the CUDA runtime
   * and PyTorch use). */
  NANORT_MEMORY_CUDA = 1,
  NANORT_MEMORY_MAX_ENUM_ = 0x7fffffff /* any int is a value (checked at run) */
} nanort_memory;

/* nanort_run with each tensor's memory given: input_memory[i] for inputs[i]
 * and output_memory[o] for outputs[o] (a NULL array: all in host memory).
 * In a session of a GPU model (nanort_model_gpu), an input in CUDA memory is
 * copied device to device into the device arena instead of from the host,
 * and an output in CUDA memory is written device to device: no host staging
 * and no PCIe round trip, as a caller that keeps its data on the GPU wants.
 * Refused with NANORT_INVALID_ARGUMENT, naming the tensor, before anything
 * runs: an unknown memory value; CUDA memory for a model that runs no GPU
 * (or a build without NANORT_WITH_CUDA); CUDA memory for a tensor this
 * program reads or writes on the host (nanort_model_tensor_memory says which
 * tensors may be on the device); a pointer that is not CUDA device memory,
 * or whose tensor runs past the end of its allocation (checked with
 * cuMemGetAddressRange on every run). The run's device reads of the inputs
 * and writes of the outputs happen on nanort's own stream during the call:
 * whatever the caller queued on other streams that writes an input must be
 * complete before the call, and the outputs are complete when it returns. */
nanort_status_code nanort_run_with_memory(nanort_session* session, const nanort_tensor* inputs,
                                          const nanort_memory* input_memory, size_t num_inputs,
                                          const nanort_tensor* outputs,
                                          const nanort_memory* output_memory, size_t num_outputs,
                                          nanort_status* status);

/* Which memory input `index` (is_output 0) or output `index` (is_output 1)
 * of `model` may be in: a bit mask of 1 << NANORT_MEMORY_HOST (always) and
 * 1 << NANORT_MEMORY_CUDA (in a GPU model, for a tensor that only crosses
 * between the host and the GPU: read only by copies to the device, or written
 * only by copies from it). 0 for a NULL model or an index out of range. */
uint32_t nanort_model_tensor_memory(const nanort_model* model, int is_output, size_t index);

/* ---- observing a run (profilers) ----------------------------------------- */

typedef enum nanort_thunk_event {
  NANORT_THUNK_BEGIN = 0, /* thunk `thunk_index` is about to run */
  NANORT_THUNK_END = 1    /* thunk `thunk_index` has finished */
} nanort_thunk_event;

/* Called by nanort_run around every thunk it runs, in index order: BEGIN and
 * END for thunk 0, then for thunk 1, ..., once each per run (see
 * nanort_model_thunk_count and nanort_model_thunk_info for what each is). It
 * is called on the thread that called nanort_run, around each whole thunk
 * (also when the session splits kernels over threads), after the inputs and
 * outputs were checked, so a run whose arguments are refused calls it never.
 * It must not use the session it observes.
 *
 * With control flow (format 1.4), `thunk_index` is the thunk's pre-order
 * number (see nanort_model_thunk_info): an If or Loop gets BEGIN, then the
 * events of the thunks it runs, then END; the thunks of the branch not taken
 * get none, those of a loop body a BEGIN and END per iteration. A run that
 * fails inside (a loop past its max_trips) gets no END for the control
 * thunks it was in. */
typedef void (*nanort_thunk_observer)(void* user_data, size_t thunk_index,
                                      nanort_thunk_event event);

/* In a session of a GPU model (nanort_model_gpu), host thunks and GPU copies
 * are observed as above; the launches of one captured CUDA graph get their
 * BEGIN events before the graph is launched and their END events after, and
 * the launch is asynchronous: the GPU's time shows up in the next thunk that
 * waits for it (a host thunk, or the run's end).
 *
 * Sets the observer of `session`'s later runs, or with observer NULL removes
 * it; a session starts with none. Without an observer a run is unchanged.
 * Returns NANORT_UNAVAILABLE in builds without observers
 * (NANORT_WITH_THUNK_OBSERVER=OFF, the default for NANORT_PLATFORM=none,
 * where every byte counts). */
nanort_status_code nanort_session_set_thunk_observer(nanort_session* session,
                                                     nanort_thunk_observer observer,
                                                     void* user_data, nanort_status* status);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NANORT_NANORT_H_ */
