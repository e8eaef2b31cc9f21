// nanort-run: runs a compiled model (NAME.so from nanoc) on .npy inputs,
// writes its outputs as .npy, and reports a checksum per output and the run
// latency. A thin shell over the public C API, so what it reports is what an
// application linking nanort would see.
#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "file_bytes.h"
#include "model_file.h"
#include "nanort/nanort.h"
#include "npy.h"

// GPU models (nanoc --target sm_XY) loaded from shared objects run through
// the GPU offload, which a binary links only when it refers to it.
#if NANORT_RUN_WITH_CUDA
NANORT_LINK_CUDA_OFFLOAD();
#endif

namespace {

using nanort::tools::NpyArray;

// Device memory for --cuda-io, through the driver this tool loads itself
// (as an application with its own CUDA code would): allocations in device
// 0's primary context, the one nanort's sessions use.
class CudaMemory {
 public:
  // "" when ready, else why not.
  std::string Open() {
    // The driver nanort loads: NANORT_CUDA_DRIVER overrides it (tests).
    const char* path = std::getenv("NANORT_CUDA_DRIVER");
    if (path == nullptr || path[0] == '\0') path = "libcuda.so.1";
    void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) return std::string("cannot load ") + path;
    using GetProc = int (*)(const char*, void**, int, unsigned long long, int*);
    auto get = reinterpret_cast<GetProc>(dlsym(library, "cuGetProcAddress_v2"));
    if (get == nullptr) return std::string(path) + " has no cuGetProcAddress_v2";
    const std::pair<const char*, void**> entries[] = {
        {"cuInit", reinterpret_cast<void**>(&init_)},
        {"cuDeviceGet", reinterpret_cast<void**>(&device_get_)},
        {"cuDevicePrimaryCtxRetain", reinterpret_cast<void**>(&retain_)},
        {"cuCtxSetCurrent", reinterpret_cast<void**>(&set_current_)},
        {"cuMemAlloc", reinterpret_cast<void**>(&alloc_)},
        {"cuMemFree", reinterpret_cast<void**>(&free_)},
        {"cuMemcpyHtoD", reinterpret_cast<void**>(&to_device_)},
        {"cuMemcpyDtoH", reinterpret_cast<void**>(&to_host_)},
    };
    for (const auto& [name, fn] : entries) {
      if (get(name, fn, 12000, 0, nullptr) != 0 || *fn == nullptr) {
        return std::string(path) + " has no " + name;
      }
    }
    int device = 0;
    void* context = nullptr;
    int result = init_(0);
    if (result == 0) result = device_get_(&device, 0);
    if (result == 0) result = retain_(&context, device);
    if (result == 0) result = set_current_(context);
    if (result != 0)
      return "cannot make device 0's primary context current: CUresult " + std::to_string(result);
    return "";
  }
  ~CudaMemory() {
    for (unsigned long long pointer : allocations_) free_(pointer);
  }
  // A device copy of bytes[0, size) (at least one byte allocated), or NULL.
  void* Upload(const uint8_t* bytes, size_t size) {
    unsigned long long pointer = 0;
    if (alloc_(&pointer, size != 0 ? size : 1) != 0) return nullptr;
    allocations_.push_back(pointer);
    if (size != 0 && to_device_(pointer, bytes, size) != 0) return nullptr;
    return reinterpret_cast<void*>(static_cast<uintptr_t>(pointer));
  }
  bool Download(void* device, uint8_t* bytes, size_t size) {
    return size == 0 ||
           to_host_(bytes, static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(device)),
                    size) == 0;
  }

 private:
  int (*init_)(unsigned) = nullptr;
  int (*device_get_)(int*, int) = nullptr;
  int (*retain_)(void**, int) = nullptr;
  int (*set_current_)(void*) = nullptr;
  int (*alloc_)(unsigned long long*, size_t) = nullptr;
  int (*free_)(unsigned long long) = nullptr;
  int (*to_device_)(unsigned long long, const void*, size_t) = nullptr;
  int (*to_host_)(void*, unsigned long long, size_t) = nullptr;
  std::vector<unsigned long long> allocations_;
};

constexpr char kUsage[] =
    "usage: nanort-run MODEL.so --input NAME=FILE.npy ... [--output-dir DIR]\n"
    "                  [--repeat N] [--warmup N] [--threads N] [--name NAME]\n"
    "                  [--profile] [--cuda-io]\n"
    "\n"
    "Loads a model compiled by nanoc, runs it on the given inputs, writes each\n"
    "output to DIR/OUTPUT.npy and prints, per output, a line\n"
    "  output NAME DTYPE[D0,D1,...] checksum=SUM\n"
    "(SUM: the sum of its elements), then\n"
    "  latency_us median=X min=Y runs=N\n"
    "  startup_us load=L session=S\n"
    "(L: nanort_model_load_file's microseconds, the file opened, its program\n"
    "verified and its CPU checked; S: the session's creation, its arena and\n"
    "its thread pool included)\n"
    "\n"
    "  MODEL.so                 the shared object nanoc wrote (not its .o or .nrt),\n"
    "                           for this machine's architecture\n"
    "  --name NAME              the model's name (nanoc --name), whose NAME_model\n"
    "                           the shared object exports (default: the file name\n"
    "                           up to its first '.', so a renamed file needs it)\n"
    "  --input NAME=FILE.npy    the model input NAME, read from FILE.npy (C order,\n"
    "                           dtype <f4 <f8 <f2 |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8\n"
    "                           |b1, <V2 for bf16 and |V1 for a float8, 4-bit or\n"
    "                           2-bit type, as numpy saves ml_dtypes' arrays, one\n"
    "                           byte an element). Every model\n"
    "                           input must be given exactly once; its dtype and\n"
    "                           shape must equal the model's\n"
    "  --output-dir DIR         where outputs are written (default: the current\n"
    "                           directory; created if missing). OUTPUT is the\n"
    "                           output's name with every character outside\n"
    "                           [A-Za-z0-9_.-] replaced by '_'\n"
    "  --repeat N               timed runs after the first run, which makes the\n"
    "                           outputs (default 10; 0 reports the first run's time)\n"
    "  --warmup N               untimed runs before the timed ones (default 0)\n"
    "  --threads N              threads a run uses, this one included: each kernel's\n"
    "                           tasks are split over nanort's own pool of N - 1\n"
    "                           workers (default 1: no pool); outputs are the same\n"
    "                           for every N\n"
    "  --profile                after the timed runs, max(N, 1) more runs that time\n"
    "                           every thunk (a kernel call or a copy) and print,\n"
    "                           slowest first, a line per thunk and per operator:\n"
    "                             profile runs=N thunks=T thunk_us=U\n"
    "                             thunk I us=X share=P% op=OP node=NODE\n"
    "                             op OP thunks=K us=X share=P%\n"
    "                           (X: mean microseconds a run; P: share of U, the\n"
    "                           mean a run of all thunks together). Thunks are\n"
    "                           numbered in pre-order; an If's or a Loop's line\n"
    "                           holds its nested thunks' time (all iterations),\n"
    "                           which U and the op lines count once, not again\n"
    "  --cuda-io                for a GPU model: every input and output that may be\n"
    "                           in CUDA memory (nanort_model_tensor_memory) lives in\n"
    "                           a device allocation of its own, inputs copied there\n"
    "                           once before the runs, outputs read back after the\n"
    "                           first, so the latency is the model's without host\n"
    "                           staging (nanort_run_with_memory); prints\n"
    "                             cuda_io inputs=K/N outputs=K/N\n"
    "  --version                print the version, the program format and the\n"
    "                           kernel ABI this nanort-run reads\n"
    "  --help                   print this help\n"
    "\n"
    "Flags also take the form --flag=VALUE. Exit status: 0 on success, 1 on any\n"
    "failure, with a message 'nanort-run: error: ...'.\n";

int Fail(const std::string& message) {
  std::fprintf(stderr, "nanort-run: error: %s\n", message.c_str());
  return 1;
}

int FailStatus(const nanort_status& status) {
  return Fail(std::string(nanort_status_code_name(status.code)) + ": " + status.message);
}

struct ModelDeleter {
  void operator()(nanort_model* m) const { nanort_model_release(m); }
};
struct SessionDeleter {
  void operator()(nanort_session* s) const { nanort_session_release(s); }
};

// Tensor memory at the alignment compiled kernels may assume for caller
// buffers (schema Buffer.alignment defaults to 64); a std::vector only
// guarantees 16.
class AlignedBytes {
 public:
  static constexpr size_t kAlignment = 64;
  explicit AlignedBytes(size_t size) : size_(size) {
    const size_t rounded =
        std::max<size_t>(kAlignment, (size + kAlignment - 1) / kAlignment * kAlignment);
    data_.reset(static_cast<uint8_t*>(std::aligned_alloc(kAlignment, rounded)));
    if (data_) std::memset(data_.get(), 0, rounded);
  }
  uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }
  bool ok() const { return data_ != nullptr; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t size_;
};

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000 | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal half: normalize into a float exponent.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400) == 0);
    bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

double Checksum(nanort_dtype dtype, const uint8_t* data, uint64_t count) {
  double sum = 0;
  for (uint64_t i = 0; i < count; ++i) {
    switch (dtype) {
      case NANORT_F32:
        sum += Load<float>(data + 4 * i);
        break;
      case NANORT_F16:
        sum += HalfToFloat(Load<uint16_t>(data + 2 * i));
        break;
      case NANORT_BF16: {
        const uint32_t bits = static_cast<uint32_t>(Load<uint16_t>(data + 2 * i)) << 16;
        sum += Load<float>(reinterpret_cast<const uint8_t*>(&bits));
        break;
      }
      case NANORT_I8:
        sum += static_cast<int8_t>(data[i]);
        break;
      case NANORT_U8:
        sum += data[i];
        break;
      case NANORT_I32:
        sum += Load<int32_t>(data + 4 * i);
        break;
      case NANORT_I64:
        sum += static_cast<double>(Load<int64_t>(data + 8 * i));
        break;
      case NANORT_BOOL:
        sum += data[i] != 0 ? 1 : 0;
        break;
      case NANORT_F64:
        sum += Load<double>(data + 8 * i);
        break;
      case NANORT_I16:
        sum += Load<int16_t>(data + 2 * i);
        break;
      case NANORT_U16:
        sum += Load<uint16_t>(data + 2 * i);
        break;
      case NANORT_U32:
        sum += Load<uint32_t>(data + 4 * i);
        break;
      case NANORT_U64:
        sum += static_cast<double>(Load<uint64_t>(data + 8 * i));
        break;
      case NANORT_F8E4M3FN:
      case NANORT_F8E4M3FNUZ:
      case NANORT_F8E5M2:
      case NANORT_F8E5M2FNUZ:
      case NANORT_I4:
      case NANORT_U4:
      case NANORT_I2:
      case NANORT_U2:
      case NANORT_F4E2M1:
        sum += data[i];  // the codes: a checksum, not a value
        break;
    }
  }
  return sum;
}

std::string Dims(uint32_t rank, const int64_t* dims) {
  std::string s;
  for (uint32_t i = 0; i < rank; ++i) {
    if (i > 0) s += ',';
    s += std::to_string(dims[i]);
  }
  return s;
}

bool ParseCount(const std::string& flag, const std::string& text, int* out, std::string* error) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < 0 || v > 100000000) {
    *error = flag + " takes a count from 0 to 100000000, not '" + text + "'";
    return false;
  }
  *out = static_cast<int>(v);
  return true;
}

double NowMicros() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

// How numpy names a dtype, for the fix a message suggests: np.float32, or
// ml_dtypes' type for those numpy lacks.
std::string NumpyType(nanort_dtype dtype) {
  switch (dtype) {
    case NANORT_F32:
      return "np.float32";
    case NANORT_F16:
      return "np.float16";
    case NANORT_F64:
      return "np.float64";
    case NANORT_BF16:
      return "ml_dtypes.bfloat16";
    case NANORT_I8:
      return "np.int8";
    case NANORT_U8:
      return "np.uint8";
    case NANORT_I16:
      return "np.int16";
    case NANORT_U16:
      return "np.uint16";
    case NANORT_I32:
      return "np.int32";
    case NANORT_U32:
      return "np.uint32";
    case NANORT_I64:
      return "np.int64";
    case NANORT_U64:
      return "np.uint64";
    case NANORT_BOOL:
      return "np.bool_";
    case NANORT_F8E4M3FN:
      return "ml_dtypes.float8_e4m3fn";
    case NANORT_F8E4M3FNUZ:
      return "ml_dtypes.float8_e4m3fnuz";
    case NANORT_F8E5M2:
      return "ml_dtypes.float8_e5m2";
    case NANORT_F8E5M2FNUZ:
      return "ml_dtypes.float8_e5m2fnuz";
    case NANORT_I4:
      return "ml_dtypes.int4";
    case NANORT_U4:
      return "ml_dtypes.uint4";
    case NANORT_I2:
      return "ml_dtypes.int2";
    case NANORT_U2:
      return "ml_dtypes.uint2";
    case NANORT_F4E2M1:
      return "ml_dtypes.float4_e2m1fn";
  }
  return nanort_dtype_name(dtype);
}

// Per-thunk time, summed over the profiled runs. The observer is called on
// nanort_run's thread and allocates nothing: both vectors are sized first.
struct ThunkClock {
  std::vector<uint64_t> begin_ns;
  std::vector<uint64_t> total_ns;
};

uint64_t NowNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

void ObserveThunk(void* user_data, size_t thunk, nanort_thunk_event event) {
  const uint64_t now = NowNanos();
  ThunkClock& clock = *static_cast<ThunkClock*>(user_data);
  if (event == NANORT_THUNK_BEGIN) {
    clock.begin_ns[thunk] = now;
  } else {
    clock.total_ns[thunk] += now - clock.begin_ns[thunk];
  }
}

// Prints the profile lines (see kUsage) for `runs` runs timed into `clock`.
void PrintProfile(const nanort_model* model, const ThunkClock& clock, int runs) {
  const size_t count = clock.total_ns.size();
  std::vector<nanort_thunk_info> info(count);
  for (size_t t = 0; t < count; ++t) {
    if (nanort_model_thunk_info(model, t, &info[t]) != NANORT_OK) info[t] = {"?", "?", 0, 0};
  }
  auto mean_us = [runs](uint64_t ns) { return static_cast<double>(ns) / 1e3 / runs; };
  // An If's or Loop's time holds its nested thunks' (format 1.4): the total
  // and the per-op lines count kernel and copy thunks only, so nothing is
  // counted twice; each control thunk still gets its line (thunks are
  // numbered in pre-order, and a loop body's are timed over all iterations).
  uint64_t all_ns = 0;
  for (size_t t = 0; t < count; ++t) {
    if (info[t].control == 0) all_ns += clock.total_ns[t];
  }
  auto share = [all_ns](uint64_t ns) {
    return all_ns == 0 ? 0.0 : 100.0 * static_cast<double>(ns) / static_cast<double>(all_ns);
  };
  std::printf("profile runs=%d thunks=%zu thunk_us=%.3f\n", runs, count, mean_us(all_ns));

  // Slowest first; equal times in run order, so the output is stable.
  std::vector<size_t> order(count);
  for (size_t t = 0; t < count; ++t) order[t] = t;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return clock.total_ns[a] > clock.total_ns[b]; });
  for (size_t t : order) {
    std::printf("thunk %zu us=%.3f share=%.1f%% op=%s node=%s\n", t, mean_us(clock.total_ns[t]),
                share(clock.total_ns[t]), info[t].op, info[t].node);
  }

  struct OpTotal {
    std::string op;
    size_t thunks = 0;
    uint64_t ns = 0;
  };
  std::vector<OpTotal> ops;  // in order of first appearance
  for (size_t t = 0; t < count; ++t) {
    if (info[t].control != 0) continue;
    auto it =
        std::find_if(ops.begin(), ops.end(), [&](const OpTotal& o) { return o.op == info[t].op; });
    if (it == ops.end()) it = ops.insert(ops.end(), OpTotal{info[t].op});
    ++it->thunks;
    it->ns += clock.total_ns[t];
  }
  std::stable_sort(ops.begin(), ops.end(),
                   [](const OpTotal& a, const OpTotal& b) { return a.ns > b.ns; });
  for (const OpTotal& o : ops) {
    std::printf("op %s thunks=%zu us=%.3f share=%.1f%%\n", o.op.c_str(), o.thunks, mean_us(o.ns),
                share(o.ns));
  }
}

struct Options {
  std::string model_path;
  std::string name;  // empty: from the file name
  bool profile = false;
  bool cuda_io = false;
  std::vector<std::string> inputs;  // NAME=FILE, split once the names are known
  std::string output_dir = ".";
  int repeat = 10;
  int warmup = 0;
  int threads = 1;
};

// Returns 0 to go on, 1 after printing an error, -1 after printing help.
int ParseOptions(int argc, char** argv, Options* opt) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return -1;
    }
    if (arg == "--version") {
      std::printf("nanort-run %s (program format %u.%u, kernel ABI %u)\n", NANORT_PROJECT_VERSION,
                  NANORT_FORMAT_MAJOR, NANORT_FORMAT_MINOR, NANORT_KERNEL_ABI_VERSION);
      return -1;
    }
    if (arg == "--profile") {
      opt->profile = true;
      continue;
    }
    if (arg == "--cuda-io") {
      opt->cuda_io = true;
      continue;
    }
    std::string value;
    bool has_value = false;
    if (arg.rfind("--", 0) == 0) {
      const size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_value = true;
      }
      if (arg != "--input" && arg != "--output-dir" && arg != "--repeat" && arg != "--warmup" &&
          arg != "--name" && arg != "--threads") {
        return Fail("unknown option '" + arg + "' (see --help)");
      }
      if (!has_value) {
        if (i + 1 >= argc) return Fail(arg + " needs a value (see --help)");
        value = argv[++i];
      }
      std::string error;
      if (arg == "--input") {
        opt->inputs.push_back(value);
      } else if (arg == "--output-dir") {
        if (value.empty()) return Fail("--output-dir is empty");
        opt->output_dir = value;
      } else if (arg == "--name") {
        if (value.empty()) return Fail("--name is empty");
        opt->name = value;
      } else if (arg == "--threads") {
        if (!ParseCount(arg, value, &opt->threads, &error)) return Fail(error);
        if (opt->threads < 1 || opt->threads > 1024) {
          return Fail("--threads takes a count from 1 to 1024, not '" + value + "'");
        }
      } else if (!ParseCount(arg, value, arg == "--repeat" ? &opt->repeat : &opt->warmup, &error)) {
        return Fail(error);
      }
    } else if (arg.size() > 1 && arg[0] == '-') {
      return Fail("unknown option '" + arg + "' (see --help)");
    } else if (opt->model_path.empty()) {
      opt->model_path = arg;
    } else {
      return Fail("more than one model given ('" + opt->model_path + "' and '" + arg + "')");
    }
  }
  if (opt->model_path.empty()) return Fail("no MODEL.so given (see --help)");
  return 0;
}

int Run(const Options& opt) {
  // What the file is, before dlopen: its own messages for a .nrt, a .o, another
  // architecture's .so or a renamed one do not say what to do.
  {
    nanort::tools::ModelFile file;
    std::string error;
    if (!nanort::tools::ReadModelFile(opt.model_path, &file, &error)) return Fail(error);
    const std::string name =
        opt.name.empty() ? nanort::tools::ModelNameFromPath(opt.model_path) : opt.name;
    const std::string problem = nanort::tools::ModelFileProblem(opt.model_path, file, name);
    if (!problem.empty()) return Fail(problem);
  }
  nanort_status status{};
  const nanort_allocator allocator = nanort_allocator_system();
  nanort_model* raw_model = nullptr;
  const double load_start = NowMicros();
  if (nanort_model_load_file(opt.model_path.c_str(), opt.name.empty() ? nullptr : opt.name.c_str(),
                             allocator, &raw_model, &status) != NANORT_OK) {
    return FailStatus(status);
  }
  const double load_us = NowMicros() - load_start;
  std::unique_ptr<nanort_model, ModelDeleter> model(raw_model);

  const size_t num_inputs = nanort_model_input_count(model.get());
  const size_t num_outputs = nanort_model_output_count(model.get());
  std::vector<nanort_tensor_info> input_info(num_inputs), output_info(num_outputs);
  for (size_t i = 0; i < num_inputs; ++i) {
    if (nanort_model_input_info(model.get(), i, &input_info[i]) != NANORT_OK) {
      return Fail("cannot read the model's input " + std::to_string(i));
    }
  }
  for (size_t i = 0; i < num_outputs; ++i) {
    if (nanort_model_output_info(model.get(), i, &output_info[i]) != NANORT_OK) {
      return Fail("cannot read the model's output " + std::to_string(i));
    }
  }
  std::string input_list;
  for (const nanort_tensor_info& info : input_info) {
    input_list += std::string(input_list.empty() ? "" : ", ") + info.name + " " +
                  nanort_dtype_name(info.dtype) + "[" + Dims(info.rank, info.dims) + "]";
  }
  if (input_list.empty()) input_list = "none";

  // Match each --input to a model input. A name may itself hold '=', so the
  // longest model input name followed by '=' wins; otherwise the name ends at
  // the first '='.
  std::vector<std::string> input_files(num_inputs);
  for (const std::string& spec : opt.inputs) {
    size_t match = num_inputs, match_len = 0;
    for (size_t i = 0; i < num_inputs; ++i) {
      const size_t len = std::strlen(input_info[i].name);
      if (spec.size() > len && spec.compare(0, len, input_info[i].name) == 0 && spec[len] == '=' &&
          (match == num_inputs || len > match_len)) {
        match = i;
        match_len = len;
      }
    }
    if (match == num_inputs) {
      const size_t eq = spec.find('=');
      if (eq == std::string::npos) {
        return Fail("--input '" + spec + "' is not NAME=FILE.npy");
      }
      return Fail("the model has no input '" + spec.substr(0, eq) + "'; its inputs: " + input_list);
    }
    if (!input_files[match].empty()) {
      return Fail(std::string("input '") + input_info[match].name + "' is given more than once");
    }
    input_files[match] = spec.substr(match_len + 1);
    if (input_files[match].empty()) {
      return Fail(std::string("--input ") + input_info[match].name + "= names no file");
    }
  }
  std::string missing;
  for (size_t i = 0; i < num_inputs; ++i) {
    if (input_files[i].empty())
      missing += std::string(missing.empty() ? "" : ", ") + input_info[i].name;
  }
  if (!missing.empty()) return Fail("missing --input for model input(s): " + missing);

  // Decide the output files before running, so that a clash costs nothing.
  std::vector<std::string> output_paths(num_outputs);
  std::map<std::string, size_t> taken;
  for (size_t i = 0; i < num_outputs; ++i) {
    const std::string file = nanort::tools::SafeFileName(output_info[i].name) + ".npy";
    auto [it, inserted] = taken.emplace(file, i);
    if (!inserted) {
      return Fail(std::string("outputs '") + output_info[it->second].name + "' and '" +
                  output_info[i].name + "' would both be written to " + file);
    }
    output_paths[i] = (std::filesystem::path(opt.output_dir) / file).string();
  }

  std::vector<AlignedBytes> input_data;
  std::vector<std::vector<int64_t>> input_dims(num_inputs);
  std::vector<nanort_tensor> inputs(num_inputs);
  input_data.reserve(num_inputs);
  for (size_t i = 0; i < num_inputs; ++i) {
    NpyArray array;
    std::string error;
    if (!nanort::tools::ReadNpy(input_files[i], &array, &error)) {
      return Fail(std::string("input '") + input_info[i].name + "': " + error);
    }
    input_data.emplace_back(array.data.size());
    if (!input_data.back().ok())
      return Fail("out of memory for input " + std::string(input_info[i].name));
    if (!array.data.empty())
      std::memcpy(input_data.back().data(), array.data.data(), array.data.size());
    input_dims[i] = array.shape;
    // A one-byte void '|V1' (or '<f1') is any float8 or sub-byte type (ml_dtypes'
    // arrays): the model's says which.
    auto is_raw_byte = [](nanort_dtype d) { return d >= NANORT_F8E4M3FN && d <= NANORT_F4E2M1; };
    if (is_raw_byte(array.dtype) && is_raw_byte(input_info[i].dtype))
      array.dtype = input_info[i].dtype;
    if (array.dtype != input_info[i].dtype) {
      const std::string want = NumpyType(input_info[i].dtype);
      return Fail(std::string("input '") + input_info[i].name + "': " + input_files[i] + " holds " +
                  nanort_dtype_name(array.dtype) + " (" + NumpyType(array.dtype) +
                  "), the model takes " + nanort_dtype_name(input_info[i].dtype) + ": save it as " +
                  want + ", e.g. np.save(path, x.astype(" + want + "))");
    }
    inputs[i] = {input_data.back().data(), array.dtype, static_cast<uint32_t>(input_dims[i].size()),
                 input_dims[i].data()};
  }
  std::vector<AlignedBytes> output_data;
  std::vector<nanort_tensor> outputs(num_outputs);
  output_data.reserve(num_outputs);
  for (size_t i = 0; i < num_outputs; ++i) {
    output_data.emplace_back(output_info[i].size_bytes);
    if (!output_data.back().ok()) {
      return Fail("out of memory for output " + std::string(output_info[i].name));
    }
    outputs[i] = {output_data.back().data(), output_info[i].dtype, output_info[i].rank,
                  output_info[i].dims};
  }

  nanort_session* raw_session = nullptr;
  nanort_session_options session_options;
  std::memset(&session_options, 0, sizeof(session_options));
  session_options.struct_size = sizeof(session_options);
  session_options.num_threads = static_cast<uint32_t>(opt.threads);
  const double session_start = NowMicros();
  if (nanort_session_create_with_options(model.get(), nullptr, 0, allocator, &session_options,
                                         &raw_session, &status) != NANORT_OK) {
    return FailStatus(status);
  }
  const double session_us = NowMicros() - session_start;
  std::unique_ptr<nanort_session, SessionDeleter> session(raw_session);

  // --cuda-io: the tensors that may be in CUDA memory move there, the run
  // reads and writes them there.
  std::vector<nanort_memory> input_memory(num_inputs, NANORT_MEMORY_HOST);
  std::vector<nanort_memory> output_memory(num_outputs, NANORT_MEMORY_HOST);
  std::vector<nanort_tensor> run_inputs = inputs, run_outputs = outputs;
  CudaMemory cuda;
  if (opt.cuda_io) {
    if (nanort_model_gpu(model.get()) == nullptr) return Fail("--cuda-io: not a GPU model");
    const std::string why = cuda.Open();
    if (!why.empty()) return Fail("--cuda-io: " + why);
    size_t on_device_in = 0, on_device_out = 0;
    for (size_t i = 0; i < num_inputs; ++i) {
      if (!(nanort_model_tensor_memory(model.get(), 0, i) & (1u << NANORT_MEMORY_CUDA))) continue;
      void* device = cuda.Upload(input_data[i].data(), input_data[i].size());
      if (device == nullptr) return Fail("--cuda-io: cannot copy input to the device");
      run_inputs[i].data = device;
      input_memory[i] = NANORT_MEMORY_CUDA;
      ++on_device_in;
    }
    for (size_t i = 0; i < num_outputs; ++i) {
      if (!(nanort_model_tensor_memory(model.get(), 1, i) & (1u << NANORT_MEMORY_CUDA))) continue;
      void* device = cuda.Upload(output_data[i].data(), output_data[i].size());
      if (device == nullptr) return Fail("--cuda-io: cannot allocate an output on the device");
      run_outputs[i].data = device;
      output_memory[i] = NANORT_MEMORY_CUDA;
      ++on_device_out;
    }
    std::printf("cuda_io inputs=%zu/%zu outputs=%zu/%zu\n", on_device_in, num_inputs, on_device_out,
                num_outputs);
  }
  auto run = [&]() {
    return nanort_run_with_memory(session.get(), run_inputs.data(), input_memory.data(), num_inputs,
                                  run_outputs.data(), output_memory.data(), num_outputs, &status);
  };
  const double first_start = NowMicros();
  if (run() != NANORT_OK) return FailStatus(status);
  const double first_us = NowMicros() - first_start;
  for (size_t i = 0; i < num_outputs; ++i) {
    if (output_memory[i] == NANORT_MEMORY_CUDA &&
        !cuda.Download(run_outputs[i].data, output_data[i].data(), output_data[i].size())) {
      return Fail("--cuda-io: cannot copy output " + std::string(output_info[i].name) +
                  " back from the device");
    }
  }

  std::error_code ec;
  std::filesystem::create_directories(opt.output_dir, ec);
  if (ec) return Fail("cannot create --output-dir " + opt.output_dir + ": " + ec.message());
  for (size_t i = 0; i < num_outputs; ++i) {
    const nanort_tensor_info& info = output_info[i];
    NpyArray array;
    array.dtype = info.dtype;
    array.shape.assign(info.dims, info.dims + info.rank);
    array.data.assign(output_data[i].data(), output_data[i].data() + output_data[i].size());
    std::string error;
    if (!nanort::tools::WriteNpy(output_paths[i], array, &error)) {
      return Fail(std::string("output '") + info.name + "': " + error);
    }
  }

  for (int i = 0; i < opt.warmup; ++i) {
    if (run() != NANORT_OK) return FailStatus(status);
  }
  std::vector<double> times;
  times.reserve(opt.repeat);
  for (int i = 0; i < opt.repeat; ++i) {
    const double start = NowMicros();
    if (run() != NANORT_OK) return FailStatus(status);
    times.push_back(NowMicros() - start);
  }
  if (times.empty()) times.push_back(first_us);

  // Which CPU's kernels ran: an artifact may carry several (nanoc --target a,b).
  std::printf("target cpu=%s\n", nanort_model_cpu(model.get()));
  if (const char* gpu = nanort_model_gpu(model.get())) std::printf("target gpu=%s\n", gpu);
  for (size_t i = 0; i < num_outputs; ++i) {
    const nanort_tensor_info& info = output_info[i];
    const size_t elem = nanort_dtype_size(info.dtype);
    const uint64_t count = elem ? info.size_bytes / elem : 0;
    std::printf("output %s %s[%s] checksum=%.9g\n", info.name, nanort_dtype_name(info.dtype),
                Dims(info.rank, info.dims).c_str(),
                Checksum(info.dtype, output_data[i].data(), count));
  }
  std::sort(times.begin(), times.end());
  const size_t n = times.size();
  const double median = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
  std::printf("latency_us median=%.3f min=%.3f runs=%zu\n", median, times.front(), n);
  std::printf("startup_us load=%.3f session=%.3f\n", load_us, session_us);

  if (opt.profile) {
    // Runs of their own: observing costs two clock reads a thunk, which the
    // latency above does not include.
    const size_t num_thunks = nanort_model_thunk_count(model.get());
    ThunkClock clock{std::vector<uint64_t>(num_thunks), std::vector<uint64_t>(num_thunks)};
    if (nanort_session_set_thunk_observer(session.get(), &ObserveThunk, &clock, &status) !=
        NANORT_OK) {
      return FailStatus(status);
    }
    const int runs = std::max(opt.repeat, 1);
    for (int i = 0; i < runs; ++i) {
      if (run() != NANORT_OK) return FailStatus(status);
    }
    PrintProfile(model.get(), clock, runs);
  }
  return std::fflush(stdout) == 0 ? 0 : Fail("cannot write to stdout");
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  const int parsed = ParseOptions(argc, argv, &opt);
  if (parsed != 0) return parsed < 0 ? 0 : 1;
  return Run(opt);
}
