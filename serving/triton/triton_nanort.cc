// libtriton_nanort.so: a Triton Inference Server backend that serves models
// compiled by nanoc (docs/SERVING.md).
//
//   model repository/NAME/config.pbtxt     backend: "nanort"
//   model repository/NAME/VERSION/model.so nanoc's shared object
//
// ModelInitialize loads model.so once (nanort_model_load_file) and checks the
// config's inputs and outputs against the model's. Each model instance owns
// one nanort session; its threads are the machine's cores divided by the
// model's instance count (parameter nanort_num_threads overrides). Execute
// runs the requests of a batch one row at a time on the compiled batch-1
// program, reading each row straight from Triton's input buffer and writing
// straight into the output buffer Triton gives the response: nothing is
// allocated on that path (a per-instance scratch row, allocated at instance
// creation, is used only for an input that arrives split over several
// buffers or misaligned). nanort's errors become Triton errors carrying
// nanort's message.
#include <nanort/nanort.h>
#include <rapidjson/document.h>
#include <time.h>
#include <unistd.h>

// Models compiled for a GPU target (nanoc --target sm_XY) run their GPU part
// through nanort's CUDA offload, which a program links only when it asks.
#if defined(__linux__)
NANORT_LINK_CUDA_OFFLOAD();
#endif

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "triton_backend_api.h"

namespace {

// ---- small helpers -------------------------------------------------------

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

TRITONSERVER_Error* Err(TRITONSERVER_Error_Code code, const std::string& msg) {
  return TRITONSERVER_ErrorNew(code, ("nanort backend: " + msg).c_str());
}

void Log(TRITONSERVER_LogLevel level, const std::string& msg) {
  TRITONSERVER_Error* e = TRITONSERVER_LogMessage(level, __FILE__, __LINE__, msg.c_str());
  if (e != nullptr) TRITONSERVER_ErrorDelete(e);
}

void LogIfError(TRITONSERVER_Error* e, const char* what) {
  if (e == nullptr) return;
  Log(TRITONSERVER_LOG_ERROR, std::string(what) + ": " + TRITONSERVER_ErrorMessage(e));
  TRITONSERVER_ErrorDelete(e);
}

#define NANORT_RETURN_IF_ERROR(expr)    \
  do {                                  \
    TRITONSERVER_Error* err__ = (expr); \
    if (err__ != nullptr) return err__; \
  } while (0)

TRITONSERVER_Error_Code TritonCode(nanort_status_code code) {
  switch (code) {
    case NANORT_INVALID_ARGUMENT:
    case NANORT_SHAPE_MISMATCH:
      return TRITONSERVER_ERROR_INVALID_ARG;
    case NANORT_NOT_FOUND:
      return TRITONSERVER_ERROR_NOT_FOUND;
    case NANORT_UNSUPPORTED_VERSION:
    case NANORT_UNSUPPORTED_TARGET:
      return TRITONSERVER_ERROR_UNSUPPORTED;
    case NANORT_UNAVAILABLE:
      return TRITONSERVER_ERROR_UNAVAILABLE;
    default:
      return TRITONSERVER_ERROR_INTERNAL;
  }
}

// A Triton error with nanort's own message, e.g.
// "nanort: SHAPE_MISMATCH: input 'x' ...".
TRITONSERVER_Error* NanortError(const nanort_status& st) {
  std::string msg = "nanort: ";
  msg += nanort_status_code_name(st.code);
  msg += ": ";
  msg += st.message;
  return TRITONSERVER_ErrorNew(TritonCode(st.code), msg.c_str());
}

struct DtypeName {
  nanort_dtype nanort;
  TRITONSERVER_DataType triton;
  const char* config;  // model config's data_type
};
constexpr DtypeName kDtypes[] = {
    {NANORT_F32, TRITONSERVER_TYPE_FP32, "TYPE_FP32"},
    {NANORT_F16, TRITONSERVER_TYPE_FP16, "TYPE_FP16"},
    {NANORT_BF16, TRITONSERVER_TYPE_BF16, "TYPE_BF16"},
    {NANORT_F64, TRITONSERVER_TYPE_FP64, "TYPE_FP64"},
    {NANORT_I8, TRITONSERVER_TYPE_INT8, "TYPE_INT8"},
    {NANORT_U8, TRITONSERVER_TYPE_UINT8, "TYPE_UINT8"},
    {NANORT_I16, TRITONSERVER_TYPE_INT16, "TYPE_INT16"},
    {NANORT_U16, TRITONSERVER_TYPE_UINT16, "TYPE_UINT16"},
    {NANORT_I32, TRITONSERVER_TYPE_INT32, "TYPE_INT32"},
    {NANORT_U32, TRITONSERVER_TYPE_UINT32, "TYPE_UINT32"},
    {NANORT_I64, TRITONSERVER_TYPE_INT64, "TYPE_INT64"},
    {NANORT_U64, TRITONSERVER_TYPE_UINT64, "TYPE_UINT64"},
    {NANORT_BOOL, TRITONSERVER_TYPE_BOOL, "TYPE_BOOL"},
};
const DtypeName* FindDtype(nanort_dtype d) {
  for (const DtypeName& n : kDtypes)
    if (n.nanort == d) return &n;
  return nullptr;
}

std::string DimsString(const int64_t* dims, size_t n) {
  std::string s = "[";
  for (size_t i = 0; i < n; ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// ---- the model configuration, as JSON (rapidjson) -----------------------
// Triton hands the backend its model configuration as protobuf's JSON form;
// the backend reads the handful of fields it needs.

using JsonValue = rapidjson::Value;

// Member `key` of an object, or null when `v` is no object or has none.
const JsonValue* Member(const JsonValue& v, const char* key) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(key);
  return it == v.MemberEnd() ? nullptr : &it->value;
}

// A number, or a string holding one (protobuf writes int64 as strings).
bool AsInt(const JsonValue& v, int64_t* out) {
  if (v.IsInt64()) {
    *out = v.GetInt64();
    return true;
  }
  if (v.IsString() && v.GetStringLength() > 0) {
    char* end = nullptr;
    errno = 0;
    long long x = std::strtoll(v.GetString(), &end, 10);
    if (*end != '\0' || errno != 0) return false;
    *out = x;
    return true;
  }
  return false;
}

// A string value, or "" when `v` is null or no string.
std::string AsString(const JsonValue* v) {
  return v != nullptr && v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : "";
}

// A string parameter of the model configuration (parameters { key: ..
// value { string_value: .. } }), or "" when absent.
std::string Parameter(const JsonValue& config, const char* key) {
  const JsonValue* params = Member(config, "parameters");
  const JsonValue* p = params != nullptr ? Member(*params, key) : nullptr;
  return p != nullptr ? AsString(Member(*p, "string_value")) : "";
}

// ---- model and instance state -----------------------------------------------

struct Tensor {
  std::string name;
  nanort_dtype dtype;
  TRITONSERVER_DataType triton_dtype;
  std::vector<int64_t> dims;  // the compiled program's (batch 1 when batching)
  uint64_t row_bytes;         // one batch row (the whole tensor without batching)
  size_t elem_size;
};

struct ModelState {
  std::string name;
  nanort_model* model = nullptr;
  int64_t max_batch_size = 0;  // 0: no batch dimension in the config
  uint32_t num_threads = 1;
  std::vector<Tensor> inputs, outputs;

  ~ModelState() {
    if (model != nullptr) nanort_model_release(model);
  }
};

struct InstanceState {
  ModelState* model = nullptr;
  std::string name;
  nanort_session* session = nullptr;
  // Sized at creation; Execute only writes into them.
  std::vector<nanort_tensor> in_tensors, out_tensors;
  std::vector<std::vector<int64_t>> out_shapes;  // Triton's shape of each output
  std::vector<TRITONBACKEND_Input*> in_handles;
  std::vector<const char*> in_base;  // a request's single contiguous buffer, or null
  std::vector<uint32_t> in_buffers;
  std::vector<char*> out_base;
  std::vector<bool> out_requested;
  // One aligned scratch row per input and output (see the file comment).
  std::vector<void*> in_scratch, out_scratch;

  ~InstanceState() {
    if (session != nullptr) nanort_session_release(session);
    for (void* p : in_scratch) std::free(p);
    for (void* p : out_scratch) std::free(p);
  }
};

void* AlignedRow(uint64_t bytes) {
  size_t n = static_cast<size_t>((bytes + 63) / 64 * 64);
  return std::aligned_alloc(64, n == 0 ? 64 : n);
}

// Reads the model's inputs/outputs and checks the config's against them.
TRITONSERVER_Error* DescribeTensors(ModelState* st, const JsonValue& config, bool inputs) {
  const char* kind = inputs ? "input" : "output";
  size_t n = inputs ? nanort_model_input_count(st->model) : nanort_model_output_count(st->model);
  std::vector<Tensor>& list = inputs ? st->inputs : st->outputs;
  for (size_t i = 0; i < n; ++i) {
    nanort_tensor_info info;
    nanort_status_code code = inputs ? nanort_model_input_info(st->model, i, &info)
                                     : nanort_model_output_info(st->model, i, &info);
    if (code != NANORT_OK) return Err(TRITONSERVER_ERROR_INTERNAL, "cannot read tensor info");
    const DtypeName* dt = FindDtype(info.dtype);
    if (dt == nullptr)
      return Err(TRITONSERVER_ERROR_UNSUPPORTED,
                 std::string(kind) + " '" + info.name + "' has dtype " +
                     nanort_dtype_name(info.dtype) + ", which Triton has no type for");
    Tensor t;
    t.name = info.name;
    t.dtype = info.dtype;
    t.triton_dtype = dt->triton;
    t.dims.assign(info.dims, info.dims + info.rank);
    t.elem_size = nanort_dtype_size(info.dtype);
    t.row_bytes = info.size_bytes;
    if (st->max_batch_size > 0) {
      if (info.rank == 0 || info.dims[0] != 1)
        return Err(TRITONSERVER_ERROR_INVALID_ARG,
                   "max_batch_size " + std::to_string(st->max_batch_size) + " needs a program " +
                       "compiled for batch 1, but " + kind + " '" + info.name + "' has shape " +
                       DimsString(info.dims, info.rank) +
                       " (set max_batch_size: 0 and give the full shape in dims)");
    }
    list.push_back(std::move(t));
  }

  // Every tensor the config names must be the model's, with its dtype and
  // shape (less the batch dimension when max_batch_size > 0).
  const JsonValue* cfg = Member(config, inputs ? "input" : "output");
  size_t cfg_count = cfg != nullptr && cfg->IsArray() ? cfg->Size() : 0;
  if (inputs && cfg_count != list.size())
    return Err(TRITONSERVER_ERROR_INVALID_ARG, "config.pbtxt lists " + std::to_string(cfg_count) +
                                                   " inputs; the model has " +
                                                   std::to_string(list.size()));
  for (size_t i = 0; i < cfg_count; ++i) {
    const JsonValue& c = (*cfg)[static_cast<rapidjson::SizeType>(i)];
    const std::string name = AsString(Member(c, "name"));
    if (name.empty())
      return Err(TRITONSERVER_ERROR_INVALID_ARG, std::string("config ") + kind + " without a name");
    const Tensor* t = nullptr;
    for (const Tensor& x : list)
      if (x.name == name) t = &x;
    if (t == nullptr)
      return Err(TRITONSERVER_ERROR_INVALID_ARG,
                 std::string("config ") + kind + " '" + name + "' is not one of the model's");
    const JsonValue* dtype = Member(c, "data_type");
    const char* want = FindDtype(t->dtype)->config;
    if (AsString(dtype) != want)
      return Err(TRITONSERVER_ERROR_INVALID_ARG,
                 std::string(kind) + " '" + t->name + "': config data_type " +
                     (dtype ? AsString(dtype) : std::string("(none)")) + ", model " + want);
    std::vector<int64_t> cfg_dims;
    const JsonValue* dims = Member(c, "dims");
    if (dims != nullptr && dims->IsArray())
      for (const JsonValue& d : dims->GetArray()) {
        int64_t v = 0;
        if (!AsInt(d, &v)) return Err(TRITONSERVER_ERROR_INVALID_ARG, "bad dims in config");
        cfg_dims.push_back(v);
      }
    size_t skip = st->max_batch_size > 0 ? 1 : 0;
    std::vector<int64_t> want_dims(t->dims.begin() + static_cast<ptrdiff_t>(skip), t->dims.end());
    if (cfg_dims != want_dims)
      return Err(TRITONSERVER_ERROR_INVALID_ARG,
                 std::string(kind) + " '" + t->name + "': config dims " +
                     DimsString(cfg_dims.data(), cfg_dims.size()) + ", the model's " +
                     DimsString(want_dims.data(), want_dims.size()) +
                     (skip ? " (the batch dimension left out, max_batch_size > 0)" : ""));
  }
  return nullptr;
}

TRITONSERVER_Error* ModelStateCreate(TRITONBACKEND_Model* triton_model, ModelState** out) {
  std::unique_ptr<ModelState> st(new ModelState);
  const char* name = nullptr;
  uint64_t version = 0;
  TRITONBACKEND_ArtifactType artifact;
  const char* location = nullptr;
  NANORT_RETURN_IF_ERROR(TRITONBACKEND_ModelName(triton_model, &name));
  NANORT_RETURN_IF_ERROR(TRITONBACKEND_ModelVersion(triton_model, &version));
  NANORT_RETURN_IF_ERROR(TRITONBACKEND_ModelRepository(triton_model, &artifact, &location));
  st->name = name;
  if (artifact != TRITONBACKEND_ARTIFACT_FILESYSTEM)
    return Err(TRITONSERVER_ERROR_UNSUPPORTED, "model repository must be a file system");

  TRITONSERVER_Message* message = nullptr;
  NANORT_RETURN_IF_ERROR(TRITONBACKEND_ModelConfig(triton_model, 1, &message));
  const char* base = nullptr;
  size_t size = 0;
  TRITONSERVER_Error* e = TRITONSERVER_MessageSerializeToJson(message, &base, &size);
  rapidjson::Document config;
  bool parsed = e == nullptr && !config.Parse(base, size).HasParseError() && config.IsObject();
  LogIfError(TRITONSERVER_MessageDelete(message), "deleting the model config");
  if (e != nullptr) return e;
  if (!parsed) return Err(TRITONSERVER_ERROR_INTERNAL, "cannot parse the model config JSON");

  const JsonValue* mbs = Member(config, "max_batch_size");
  if (mbs != nullptr && !AsInt(*mbs, &st->max_batch_size))
    return Err(TRITONSERVER_ERROR_INVALID_ARG, "bad max_batch_size");

  // Threads per session: the cores shared by every instance of the model.
  int64_t instances = 0;
  const JsonValue* groups = Member(config, "instance_group");
  if (groups != nullptr && groups->IsArray())
    for (const JsonValue& g : groups->GetArray()) {
      int64_t count = 1;
      const JsonValue* c = Member(g, "count");
      if (c != nullptr) AsInt(*c, &count);
      instances += count > 0 ? count : 1;
    }
  if (instances <= 0) instances = 1;
  int64_t cores = static_cast<int64_t>(std::thread::hardware_concurrency());
  if (cores <= 0) cores = 1;
  int64_t threads = cores / instances > 0 ? cores / instances : 1;
  std::string threads_param = Parameter(config, "nanort_num_threads");
  if (!threads_param.empty()) {
    char* end = nullptr;
    long v = std::strtol(threads_param.c_str(), &end, 10);
    if (*end != '\0' || v < 1 || v > 1024)
      return Err(TRITONSERVER_ERROR_INVALID_ARG,
                 "parameter nanort_num_threads must be 1..1024, not '" + threads_param + "'");
    threads = v;
  }
  st->num_threads = static_cast<uint32_t>(threads);

  // <repository>/<model>/<version>/model.so (or default_model_filename).
  std::string file = "model.so";
  if (std::string dmf = AsString(Member(config, "default_model_filename")); !dmf.empty())
    file = dmf;
  std::string path = std::string(location) + "/" + std::to_string(version) + "/" + file;
  // The model's symbol prefix: nanoc's --name (NAME_model), parameter
  // nanort_model_name; without it, taken from the file name (model.so:
  // compiled with --name model).
  std::string symbol = Parameter(config, "nanort_model_name");
  nanort_status status;
  if (nanort_model_load_file(path.c_str(), symbol.empty() ? nullptr : symbol.c_str(),
                             nanort_allocator_system(), &st->model, &status) != NANORT_OK) {
    TRITONSERVER_Error* err = NanortError(status);
    std::string msg = "loading " + path + ": " + TRITONSERVER_ErrorMessage(err);
    TRITONSERVER_ErrorDelete(err);
    return Err(TritonCode(status.code), msg);
  }
  NANORT_RETURN_IF_ERROR(DescribeTensors(st.get(), config, true));
  NANORT_RETURN_IF_ERROR(DescribeTensors(st.get(), config, false));
  Log(TRITONSERVER_LOG_INFO, "nanort backend: model '" + st->name + "' loaded from " + path +
                                 " (cpu " + nanort_model_cpu(st->model) + ", max_batch_size " +
                                 std::to_string(st->max_batch_size) + ", " +
                                 std::to_string(instances) + " instance(s), " +
                                 std::to_string(st->num_threads) + " thread(s) each)");
  *out = st.release();
  return nullptr;
}

TRITONSERVER_Error* InstanceStateCreate(ModelState* model, const char* name, InstanceState** out) {
  std::unique_ptr<InstanceState> st(new InstanceState);
  st->model = model;
  st->name = name;
  nanort_session_options options;
  std::memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.num_threads = model->num_threads;
  nanort_status status;
  if (nanort_session_create_with_options(model->model, nullptr, 0, nanort_allocator_system(),
                                         &options, &st->session, &status) != NANORT_OK)
    return NanortError(status);
  size_t ni = model->inputs.size(), no = model->outputs.size();
  st->in_tensors.resize(ni);
  st->out_tensors.resize(no);
  st->in_handles.resize(ni);
  st->in_base.resize(ni);
  st->in_buffers.resize(ni);
  st->out_base.resize(no);
  st->out_requested.resize(no);
  st->out_shapes.resize(no);
  for (size_t i = 0; i < ni; ++i) {
    const Tensor& t = model->inputs[i];
    st->in_tensors[i] =
        nanort_tensor{nullptr, t.dtype, static_cast<uint32_t>(t.dims.size()), t.dims.data()};
    st->in_scratch.push_back(AlignedRow(t.row_bytes));
  }
  for (size_t i = 0; i < no; ++i) {
    const Tensor& t = model->outputs[i];
    st->out_tensors[i] =
        nanort_tensor{nullptr, t.dtype, static_cast<uint32_t>(t.dims.size()), t.dims.data()};
    st->out_shapes[i] = t.dims;
    st->out_scratch.push_back(AlignedRow(t.row_bytes));
  }
  for (void* p : st->in_scratch)
    if (p == nullptr) return Err(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  for (void* p : st->out_scratch)
    if (p == nullptr) return Err(TRITONSERVER_ERROR_INTERNAL, "out of memory");
  *out = st.release();
  return nullptr;
}

// Bytes [offset, offset + n) of an input spread over `buffers` Triton buffers,
// copied into `dst`.
TRITONSERVER_Error* GatherInput(TRITONBACKEND_Input* input, uint32_t buffers, uint64_t offset,
                                uint64_t n, char* dst) {
  uint64_t pos = 0;
  for (uint32_t b = 0; b < buffers && n > 0; ++b) {
    const void* buf = nullptr;
    uint64_t size = 0;
    TRITONSERVER_MemoryType mem = TRITONSERVER_MEMORY_CPU;
    int64_t mem_id = 0;
    NANORT_RETURN_IF_ERROR(TRITONBACKEND_InputBuffer(input, b, &buf, &size, &mem, &mem_id));
    if (mem == TRITONSERVER_MEMORY_GPU)
      return Err(TRITONSERVER_ERROR_UNSUPPORTED, "input in GPU memory");
    if (offset < pos + size) {
      uint64_t from = offset - pos;
      uint64_t take = size - from < n ? size - from : n;
      std::memcpy(dst, static_cast<const char*>(buf) + from, take);
      dst += take;
      offset += take;
      n -= take;
    }
    pos += size;
  }
  if (n != 0) return Err(TRITONSERVER_ERROR_INVALID_ARG, "input shorter than its shape");
  return nullptr;
}

bool Aligned(const void* p, size_t elem) {
  return elem <= 1 || reinterpret_cast<uintptr_t>(p) % elem == 0;
}

// Runs one request: its rows one after the other on the batch-1 program.
TRITONSERVER_Error* RunRequest(InstanceState* st, TRITONBACKEND_Request* request,
                               TRITONBACKEND_Response* response, uint64_t* batch_out) {
  const ModelState& m = *st->model;
  const bool batching = m.max_batch_size > 0;
  int64_t batch = 1;
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const Tensor& t = m.inputs[i];
    TRITONBACKEND_Input* input = nullptr;
    NANORT_RETURN_IF_ERROR(TRITONBACKEND_RequestInput(request, t.name.c_str(), &input));
    TRITONSERVER_DataType dtype;
    const int64_t* shape = nullptr;
    uint32_t rank = 0, buffers = 0;
    uint64_t bytes = 0;
    NANORT_RETURN_IF_ERROR(
        TRITONBACKEND_InputProperties(input, nullptr, &dtype, &shape, &rank, &bytes, &buffers));
    int64_t b = batching && rank > 0 ? shape[0] : 1;
    if (i == 0) batch = b;
    if (b != batch || b < 1)
      return Err(TRITONSERVER_ERROR_INVALID_ARG, "inputs disagree on the batch size");
    // The row's shape as the program sees it; nanort_run checks it (and the
    // dtype) against the model's and reports a mismatch in its own words.
    if (rank != t.dims.size())
      return Err(TRITONSERVER_ERROR_INVALID_ARG,
                 "input '" + t.name + "' has shape " + DimsString(shape, rank) + ", the model's " +
                     DimsString(t.dims.data(), t.dims.size()) + (batching ? " (batch first)" : ""));
    if (bytes != static_cast<uint64_t>(batch) * t.row_bytes)
      return Err(TRITONSERVER_ERROR_INVALID_ARG, "input '" + t.name + "' has " +
                                                     std::to_string(bytes) + " bytes for shape " +
                                                     DimsString(shape, rank));
    st->in_tensors[i].dims = batching ? t.dims.data() : shape;
    if (batching) {
      for (uint32_t d = 1; d < rank; ++d)
        if (shape[d] != t.dims[d]) st->in_tensors[i].dims = shape;  // nanort reports it
    }
    if (dtype != t.triton_dtype)
      return Err(TRITONSERVER_ERROR_INVALID_ARG, "input '" + t.name +
                                                     "' has the wrong datatype (the model's is " +
                                                     FindDtype(t.dtype)->config + ")");
    st->in_handles[i] = input;
    st->in_buffers[i] = buffers;
    st->in_base[i] = nullptr;
    if (buffers == 1) {
      const void* buf = nullptr;
      uint64_t size = 0;
      TRITONSERVER_MemoryType mem = TRITONSERVER_MEMORY_CPU;
      int64_t mem_id = 0;
      NANORT_RETURN_IF_ERROR(TRITONBACKEND_InputBuffer(input, 0, &buf, &size, &mem, &mem_id));
      if (mem == TRITONSERVER_MEMORY_GPU)
        return Err(TRITONSERVER_ERROR_UNSUPPORTED, "input in GPU memory");
      st->in_base[i] = static_cast<const char*>(buf);
    }
  }
  if (batching && batch > m.max_batch_size)
    return Err(TRITONSERVER_ERROR_INVALID_ARG, "batch " + std::to_string(batch) +
                                                   " over max_batch_size " +
                                                   std::to_string(m.max_batch_size));

  // Which outputs the request asked for (Triton fills in all of them when
  // the client names none); the others go to the scratch row.
  uint32_t requested = 0;
  NANORT_RETURN_IF_ERROR(TRITONBACKEND_RequestOutputCount(request, &requested));
  for (size_t o = 0; o < m.outputs.size(); ++o) {
    st->out_requested[o] = false;
    for (uint32_t r = 0; r < requested; ++r) {
      const char* name = nullptr;
      NANORT_RETURN_IF_ERROR(TRITONBACKEND_RequestOutputName(request, r, &name));
      if (m.outputs[o].name == name) st->out_requested[o] = true;
    }
  }
  for (size_t o = 0; o < m.outputs.size(); ++o) {
    st->out_base[o] = nullptr;
    if (!st->out_requested[o]) continue;
    const Tensor& t = m.outputs[o];
    std::vector<int64_t>& shape = st->out_shapes[o];  // sized at creation
    if (batching) shape[0] = batch;
    TRITONBACKEND_Output* output = nullptr;
    NANORT_RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &output, t.name.c_str(),
                                                        t.triton_dtype, shape.data(),
                                                        static_cast<uint32_t>(shape.size())));
    void* buf = nullptr;
    TRITONSERVER_MemoryType mem = TRITONSERVER_MEMORY_CPU;
    int64_t mem_id = 0;
    NANORT_RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(
        output, &buf, static_cast<uint64_t>(batch) * t.row_bytes, &mem, &mem_id));
    if (mem == TRITONSERVER_MEMORY_GPU)
      return Err(TRITONSERVER_ERROR_UNSUPPORTED, "output buffer in GPU memory");
    st->out_base[o] = static_cast<char*>(buf);
  }

  for (int64_t row = 0; row < batch; ++row) {
    for (size_t i = 0; i < m.inputs.size(); ++i) {
      const Tensor& t = m.inputs[i];
      uint64_t offset = static_cast<uint64_t>(row) * t.row_bytes;
      const char* p = st->in_base[i] != nullptr ? st->in_base[i] + offset : nullptr;
      if (p == nullptr || !Aligned(p, t.elem_size)) {
        char* scratch = static_cast<char*>(st->in_scratch[i]);
        if (p != nullptr)
          std::memcpy(scratch, p, t.row_bytes);
        else
          NANORT_RETURN_IF_ERROR(
              GatherInput(st->in_handles[i], st->in_buffers[i], offset, t.row_bytes, scratch));
        p = scratch;
      }
      st->in_tensors[i].data = const_cast<char*>(p);
    }
    for (size_t o = 0; o < m.outputs.size(); ++o) {
      const Tensor& t = m.outputs[o];
      char* p = st->out_base[o] != nullptr
                    ? st->out_base[o] + static_cast<uint64_t>(row) * t.row_bytes
                    : nullptr;
      st->out_tensors[o].data = p != nullptr && Aligned(p, t.elem_size) ? p : st->out_scratch[o];
    }
    nanort_status status;
    if (nanort_run(st->session, st->in_tensors.data(), st->in_tensors.size(),
                   st->out_tensors.data(), st->out_tensors.size(), &status) != NANORT_OK)
      return NanortError(status);
    for (size_t o = 0; o < m.outputs.size(); ++o) {
      char* p = st->out_base[o] != nullptr
                    ? st->out_base[o] + static_cast<uint64_t>(row) * m.outputs[o].row_bytes
                    : nullptr;
      if (p != nullptr && st->out_tensors[o].data != p)
        std::memcpy(p, st->out_tensors[o].data, m.outputs[o].row_bytes);
    }
  }
  *batch_out = static_cast<uint64_t>(batch);
  return nullptr;
}

}  // namespace

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* /*backend*/) {
  uint32_t major = 0, minor = 0;
  NANORT_RETURN_IF_ERROR(TRITONBACKEND_ApiVersion(&major, &minor));
  if (major != NANORT_TRITONBACKEND_API_VERSION_MAJOR ||
      minor < NANORT_TRITONBACKEND_API_VERSION_MINOR)
    return Err(TRITONSERVER_ERROR_UNSUPPORTED,
               "Triton's backend API is " + std::to_string(major) + "." + std::to_string(minor) +
                   "; this backend needs " +
                   std::to_string(NANORT_TRITONBACKEND_API_VERSION_MAJOR) +
                   ".x with x >= " + std::to_string(NANORT_TRITONBACKEND_API_VERSION_MINOR));
  Log(TRITONSERVER_LOG_INFO,
      "nanort backend: TRITONBACKEND API " + std::to_string(major) + "." + std::to_string(minor));
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  ModelState* st = nullptr;
  NANORT_RETURN_IF_ERROR(ModelStateCreate(model, &st));
  TRITONSERVER_Error* e = TRITONBACKEND_ModelSetState(model, st);
  if (e != nullptr) delete st;
  return e;
}

TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  void* st = nullptr;
  NANORT_RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &st));
  delete static_cast<ModelState*>(st);
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance) {
  const char* name = nullptr;
  TRITONBACKEND_Model* model = nullptr;
  void* model_state = nullptr;
  NANORT_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceName(instance, &name));
  NANORT_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceModel(instance, &model));
  NANORT_RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &model_state));
  InstanceState* st = nullptr;
  NANORT_RETURN_IF_ERROR(InstanceStateCreate(static_cast<ModelState*>(model_state), name, &st));
  TRITONSERVER_Error* e = TRITONBACKEND_ModelInstanceSetState(instance, st);
  if (e != nullptr) delete st;
  return e;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* instance) {
  void* st = nullptr;
  NANORT_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceState(instance, &st));
  delete static_cast<InstanceState*>(st);
  return nullptr;
}

// Every request gets a response (its outputs, or the error) and is released
// here, so this returns an error only when it could not even read its state.
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests,
                                                       const uint32_t request_count) {
  void* state = nullptr;
  NANORT_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceState(instance, &state));
  InstanceState* st = static_cast<InstanceState*>(state);
  const uint64_t exec_start = NowNs();
  uint64_t total_batch = 0;
  uint64_t compute_start = 0, compute_end = 0;
  for (uint32_t r = 0; r < request_count; ++r) {
    TRITONBACKEND_Request* request = requests[r];
    const uint64_t request_start = NowNs();
    TRITONBACKEND_Response* response = nullptr;
    TRITONSERVER_Error* err = TRITONBACKEND_ResponseNew(&response, request);
    uint64_t batch = 0;
    const uint64_t run_start = NowNs();
    if (err == nullptr) err = RunRequest(st, request, response, &batch);
    const uint64_t run_end = NowNs();
    if (compute_start == 0) compute_start = run_start;
    compute_end = run_end;
    if (response != nullptr) {
      LogIfError(TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, err),
                 "sending a response");
    } else {
      Log(TRITONSERVER_LOG_ERROR, std::string("nanort backend: cannot create a response: ") +
                                      TRITONSERVER_ErrorMessage(err));
    }
    const bool ok = err == nullptr;
    if (err != nullptr) TRITONSERVER_ErrorDelete(err);
    if (ok) total_batch += batch;
    LogIfError(TRITONBACKEND_ModelInstanceReportStatistics(instance, request, ok, request_start,
                                                           run_start, run_end, NowNs()),
               "reporting request statistics");
    LogIfError(TRITONBACKEND_RequestRelease(request, TRITONSERVER_REQUEST_RELEASE_ALL),
               "releasing a request");
  }
  if (total_batch > 0)
    LogIfError(TRITONBACKEND_ModelInstanceReportBatchStatistics(
                   instance, total_batch, exec_start, compute_start, compute_end, NowNs()),
               "reporting batch statistics");
  return nullptr;
}

}  // extern "C"
