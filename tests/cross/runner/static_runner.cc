// nanort-static-run: runs ONE model linked in statically, the way a deployed
// binary does, on .npy inputs, and writes its outputs as .npy. It is the
// cross-target counterpart of nanort-run, which needs dlopen and the model's
// .so; here the model's NAME.o is linked in and bound through a stub that
// returns &NAME_model (run_cross.py writes it from NAME.h):
//
//   const nanort_model_def* nanort_runner_model(void) { return &NAME_model; }
//
//   nanort-static-run --input NAME=FILE.npy ... --output-dir DIR
//
// Each output goes to DIR/OUTPUT.npy, OUTPUT being its name with every
// character outside [A-Za-z0-9_.-] replaced by '_' (as nanort-run does).
// Exit status 0 on success; 1 with "nanort-static-run: error: ..." otherwise,
// including nanort's status name and message when it refuses the model.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "file_bytes.h"
#include "nanort/nanort.h"
#include "npy.h"

extern "C" const nanort_model_def* nanort_runner_model(void);

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "nanort-static-run: error: %s\n", message.c_str());
  return 1;
}

int FailStatus(const char* what, const nanort_status& status) {
  return Fail(std::string(what) + ": " + nanort_status_code_name(status.code) + ": " +
              status.message);
}

// Kernels may assume 64-byte aligned caller buffers (the program's default
// buffer alignment); std::vector only promises 16.
struct AlignedFree {
  void operator()(uint8_t* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<uint8_t, AlignedFree>;

AlignedBuffer AllocateAligned(size_t size) {
  const size_t rounded = (size + 63) / 64 * 64 + 64;
  AlignedBuffer buffer(static_cast<uint8_t*>(std::aligned_alloc(64, rounded)));
  if (buffer) std::memset(buffer.get(), 0, rounded);
  return buffer;
}

struct ModelDeleter {
  void operator()(nanort_model* m) const { nanort_model_release(m); }
};
struct SessionDeleter {
  void operator()(nanort_session* s) const { nanort_session_release(s); }
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> input_specs;
  std::string output_dir;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--input" || arg == "--output-dir") && i + 1 < argc) {
      (arg == "--input" ? input_specs.emplace_back() : output_dir) = argv[++i];
    } else {
      return Fail("usage: nanort-static-run --input NAME=FILE.npy ... --output-dir DIR (got '" +
                  arg + "')");
    }
  }
  if (output_dir.empty()) return Fail("--output-dir is required");

  nanort_status status{};
  const nanort_allocator allocator = nanort_allocator_system();
  nanort_model* raw_model = nullptr;
  if (nanort_model_load(nanort_runner_model(), allocator, &raw_model, &status) != NANORT_OK) {
    return FailStatus("load", status);
  }
  std::unique_ptr<nanort_model, ModelDeleter> model(raw_model);

  const size_t num_inputs = nanort_model_input_count(model.get());
  const size_t num_outputs = nanort_model_output_count(model.get());
  std::vector<nanort_tensor_info> input_info(num_inputs), output_info(num_outputs);
  for (size_t i = 0; i < num_inputs; ++i) {
    if (nanort_model_input_info(model.get(), i, &input_info[i]) != NANORT_OK)
      return Fail("cannot read the model's input " + std::to_string(i));
  }
  for (size_t i = 0; i < num_outputs; ++i) {
    if (nanort_model_output_info(model.get(), i, &output_info[i]) != NANORT_OK)
      return Fail("cannot read the model's output " + std::to_string(i));
  }

  // A name may itself hold '=': the longest model input name followed by '='
  // wins.
  std::vector<std::string> input_files(num_inputs);
  for (const std::string& spec : input_specs) {
    size_t match = num_inputs, match_len = 0;
    for (size_t i = 0; i < num_inputs; ++i) {
      const size_t len = std::strlen(input_info[i].name);
      if (spec.size() > len && spec.compare(0, len, input_info[i].name) == 0 && spec[len] == '=' &&
          (match == num_inputs || len > match_len)) {
        match = i;
        match_len = len;
      }
    }
    if (match == num_inputs) return Fail("--input '" + spec + "' names no input of the model");
    if (!input_files[match].empty())
      return Fail(std::string("input '") + input_info[match].name + "' is given twice");
    input_files[match] = spec.substr(match_len + 1);
  }

  std::vector<AlignedBuffer> buffers;
  std::vector<std::vector<int64_t>> input_dims(num_inputs);
  std::vector<nanort_tensor> inputs(num_inputs), outputs(num_outputs);
  for (size_t i = 0; i < num_inputs; ++i) {
    if (input_files[i].empty())
      return Fail(std::string("missing --input for '") + input_info[i].name + "'");
    nanort::tools::NpyArray array;
    std::string error;
    if (!nanort::tools::ReadNpy(input_files[i], &array, &error))
      return Fail(std::string("input '") + input_info[i].name + "': " + error);
    buffers.push_back(AllocateAligned(array.data.size()));
    if (!buffers.back()) return Fail("out of memory");
    if (!array.data.empty())
      std::memcpy(buffers.back().get(), array.data.data(), array.data.size());
    input_dims[i] = array.shape;
    // nanort_run checks the dtype and shape against the model's.
    inputs[i] = {buffers.back().get(), array.dtype, static_cast<uint32_t>(input_dims[i].size()),
                 input_dims[i].data()};
  }
  for (size_t i = 0; i < num_outputs; ++i) {
    buffers.push_back(AllocateAligned(output_info[i].size_bytes));
    if (!buffers.back()) return Fail("out of memory");
    outputs[i] = {buffers.back().get(), output_info[i].dtype, output_info[i].rank,
                  output_info[i].dims};
  }

  nanort_session* raw_session = nullptr;
  if (nanort_session_create(model.get(), nullptr, 0, allocator, &raw_session, &status) !=
      NANORT_OK) {
    return FailStatus("session", status);
  }
  std::unique_ptr<nanort_session, SessionDeleter> session(raw_session);
  if (nanort_run(session.get(), inputs.data(), num_inputs, outputs.data(), num_outputs, &status) !=
      NANORT_OK) {
    return FailStatus("run", status);
  }

  for (size_t i = 0; i < num_outputs; ++i) {
    const nanort_tensor_info& info = output_info[i];
    nanort::tools::NpyArray array;
    array.dtype = info.dtype;
    array.shape.assign(info.dims, info.dims + info.rank);
    const uint8_t* data = static_cast<const uint8_t*>(outputs[i].data);
    array.data.assign(data, data + info.size_bytes);
    std::string error;
    const std::string path = output_dir + "/" + nanort::tools::SafeFileName(info.name) + ".npy";
    if (!nanort::tools::WriteNpy(path, array, &error))
      return Fail(std::string("output '") + info.name + "': " + error);
  }
  return 0;
}
