// nanort._nanort: a thin nanobind layer over nanort's C API. It loads a model
// from nanoc's shared object, keeps one session, and runs it on the caller's
// buffers (the NumPy arrays' own memory, passed as addresses by nanort/
// __init__.py, which keeps the arrays alive) with the GIL released. Every
// nanort status other than NANORT_OK becomes the Python exception registered
// by set_error_type (nanort.NanortError), carrying the code, its name and
// nanort's message.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "nanort/nanort.h"

namespace nb = nanobind;

// Models compiled for a GPU target (nanoc --target sm_XY) run their GPU part
// through nanort's CUDA offload, which a program links only when it asks.
#if defined(__linux__)
NANORT_LINK_CUDA_OFFLOAD();
#endif

namespace {

nb::object g_error_type;  // nanort.NanortError, set at import

struct StatusError {
  nanort_status_code code;
  std::string message;
};

void Check(nanort_status_code code, const nanort_status& status) {
  if (code != NANORT_OK) throw StatusError{code, status.message};
}

using TensorInfo = std::tuple<std::string, int, std::vector<int64_t>>;
// An argument of run: the data's address, the dtype it holds (nanort_dtype),
// its shape, as NumPy (or a CUDA array's __cuda_array_interface__) states
// them, and where it lives (nanort_memory: 0 host, 1 CUDA device memory).
using TensorArg = std::tuple<uintptr_t, int, std::vector<int64_t>, int>;

class Model {
 public:
  Model(const std::string& path, const std::string& name, size_t threads) {
    nanort_status st;
    Check(nanort_model_load_file(path.c_str(), name.empty() ? nullptr : name.c_str(),
                                 nanort_allocator_system(), &model_, &st),
          st);
    nanort_session_options options;
    memset(&options, 0, sizeof options);
    options.struct_size = sizeof options;
    options.num_threads = static_cast<uint32_t>(threads);
    nanort_status_code code = nanort_session_create_with_options(
        model_, nullptr, 0, nanort_allocator_system(), &options, &session_, &st);
    if (code != NANORT_OK) {
      nanort_model_release(model_);
      model_ = nullptr;
      Check(code, st);
    }
  }
  ~Model() {
    if (session_) nanort_session_release(session_);
    if (model_) nanort_model_release(model_);
  }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  std::vector<TensorInfo> Inputs() const { return Infos(true); }
  std::vector<TensorInfo> Outputs() const { return Infos(false); }
  std::string Cpu() const { return nanort_model_cpu(model_); }
  // "" for a CPU-only model.
  std::string Gpu() const {
    const char* gpu = nanort_model_gpu(model_);
    return gpu != nullptr ? gpu : "";
  }
  uint32_t TensorMemory(bool is_output, size_t index) const {
    return nanort_model_tensor_memory(model_, is_output ? 1 : 0, index);
  }
  uint64_t ArenaSize() const { return nanort_model_arena_size(model_); }

  void Run(const std::vector<TensorArg>& inputs, const std::vector<TensorArg>& outputs) {
    std::vector<nanort_tensor> in = Tensors(inputs), out = Tensors(outputs);
    std::vector<nanort_memory> in_memory = Memory(inputs), out_memory = Memory(outputs);
    nanort_status st;
    nanort_status_code code;
    {
      // A session runs on one thread at a time; nanort itself takes no lock.
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex_);
      code = nanort_run_with_memory(session_, in.data(), in_memory.data(), in.size(), out.data(),
                                    out_memory.data(), out.size(), &st);
    }
    Check(code, st);
  }

 private:
  std::vector<TensorInfo> Infos(bool inputs) const {
    std::vector<TensorInfo> infos;
    size_t n = inputs ? nanort_model_input_count(model_) : nanort_model_output_count(model_);
    for (size_t i = 0; i < n; ++i) {
      nanort_tensor_info info;
      nanort_status st{};
      Check(inputs ? nanort_model_input_info(model_, i, &info)
                   : nanort_model_output_info(model_, i, &info),
            st);
      infos.emplace_back(info.name, static_cast<int>(info.dtype),
                         std::vector<int64_t>(info.dims, info.dims + info.rank));
    }
    return infos;
  }

  // The dims vectors stay in `args` (the caller's) while the run reads them.
  static std::vector<nanort_tensor> Tensors(const std::vector<TensorArg>& args) {
    std::vector<nanort_tensor> tensors;
    for (const TensorArg& a : args)
      tensors.push_back({reinterpret_cast<void*>(std::get<0>(a)),
                         static_cast<nanort_dtype>(std::get<1>(a)),
                         static_cast<uint32_t>(std::get<2>(a).size()), std::get<2>(a).data()});
    return tensors;
  }

  static std::vector<nanort_memory> Memory(const std::vector<TensorArg>& args) {
    std::vector<nanort_memory> memory;
    for (const TensorArg& a : args) memory.push_back(static_cast<nanort_memory>(std::get<3>(a)));
    return memory;
  }

  nanort_model* model_ = nullptr;
  nanort_session* session_ = nullptr;
  std::mutex mutex_;
};

}  // namespace

NB_MODULE(_nanort, m) {
  m.doc() = "nanort's C API for the nanort package (use nanort.load)";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      nb::object error = g_error_type.is_valid() ? g_error_type : nb::borrow(PyExc_RuntimeError);
      nb::object args =
          nb::make_tuple(static_cast<int>(e.code), nanort_status_code_name(e.code), e.message);
      PyErr_SetObject(error.ptr(), args.ptr());
    }
  });
  m.def("set_error_type", [](nb::object type) { g_error_type = type; });
  m.def("status_code_name", [](int code) {
    return std::string(nanort_status_code_name(static_cast<nanort_status_code>(code)));
  });
  m.def("dtype_name",
        [](int dtype) { return std::string(nanort_dtype_name(static_cast<nanort_dtype>(dtype))); });
  nb::class_<Model>(m, "Model")
      .def(nb::init<const std::string&, const std::string&, size_t>(), nb::arg("path"),
           nb::arg("name"), nb::arg("threads"))
      .def("inputs", &Model::Inputs)
      .def("outputs", &Model::Outputs)
      .def("cpu", &Model::Cpu)
      .def("gpu", &Model::Gpu)
      .def("tensor_memory", &Model::TensorMemory, nb::arg("is_output"), nb::arg("index"))
      .def("arena_size", &Model::ArenaSize)
      .def("run", &Model::Run, nb::arg("inputs"), nb::arg("outputs"));
}
