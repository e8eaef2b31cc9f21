/* gpu_fallback_app: one model compiled twice and linked in statically, run on
 * the GPU where there is one and on the CPU where there is not. This is what
 * a deployed program for a Jetson (aarch64 + an sm_87 GPU) does:
 *
 *   nanoc MODEL.onnx --name m_gpu --target sm_87      -o out/  (Cortex-A78 host part, sm_87 cubin)
 *   nanoc MODEL.onnx --name m_cpu --target cortex-a76 -o out/  (the same model, CPU only; the
 *                                                               A78 has every A76 feature)
 *   cc -Iout -Inanort/include -c gpu_fallback_app.c
 *   c++ -static gpu_fallback_app.o out/m_gpu.o out/m_cpu.o libnanort.a -o gpu_fallback_app
 *
 * A fully static binary's dlopen (nanort's of libcuda.so.1) needs, at run
 * time, the glibc it was linked with (the linker warns so): on a board whose
 * glibc differs, link glibc dynamically instead (-static-libstdc++
 * -static-libgcc, which leaves libc.so.6 as the only library it needs).
 *
 *   gpu_fallback_app [INPUT_DIR [OUTPUT_DIR]]
 *
 * It loads m_gpu first. nanort opens the CUDA driver (libcuda.so.1) at load;
 * on a machine without a usable driver or GPU the load returns
 * NANORT_UNAVAILABLE with a message saying why (and NANORT_UNSUPPORTED_TARGET
 * when the GPU is one that no image in the program fits). The app prints that
 * message and falls back to m_cpu, which needs nothing but the CPU. A
 * production app would do exactly this: try the GPU model, keep its status
 * message for the log, and serve from the CPU model; any other error (a
 * corrupt program, a CPU that lacks the program's features) is a real
 * failure.
 *
 * Inputs: INPUT_DIR/NAME.bin for each model input NAME (its raw bytes, exactly
 * the input's size; every byte of NAME outside [A-Za-z0-9_.-] becomes '_');
 * without INPUT_DIR every f32 input is filled with a fixed ramp. Each output
 * is printed (name, shape, its first values) and, given OUTPUT_DIR, written
 * to OUTPUT_DIR/NAME.bin.
 *
 * Lines it prints for scripts:
 *   gpu: OK IMAGE | gpu: CODE MESSAGE   the GPU model's load
 *   running on: gpu (IMAGE) | cpu (CPU NAME)
 *   output NAME [DIMS]: VALUES...
 * Exit status: 0 when one of the two models ran; 1 otherwise.
 */
#include <nanort/nanort.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "m_cpu.h"
#include "m_gpu.h"

/* The app's buffers follow the CPU model's signature; both copies must be
 * the same model. */
_Static_assert(M_GPU_NUM_INPUTS == M_CPU_NUM_INPUTS, "m_gpu and m_cpu differ in inputs");
_Static_assert(M_GPU_NUM_OUTPUTS == M_CPU_NUM_OUTPUTS, "m_gpu and m_cpu differ in outputs");

#define MAX_TENSORS 16
#define PRINT_VALUES 8

static void safe_name(const char* name, char* out, size_t out_size) {
  size_t i = 0;
  for (; name[i] != '\0' && i + 1 < out_size; ++i) {
    const char c = name[i];
    const int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                   c == '_' || c == '.' || c == '-';
    out[i] = ok ? c : '_';
  }
  out[i] = '\0';
}

static int tensor_path(const char* dir, const char* name, char* path, size_t path_size) {
  char file[256];
  safe_name(name, file, sizeof file);
  return snprintf(path, path_size, "%s/%s.bin", dir, file) < (int)path_size;
}

static int read_input(const char* dir, const nanort_tensor_info* info, void* data) {
  char path[4096];
  if (!tensor_path(dir, info->name, path, sizeof path)) return 0;
  FILE* f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return 0;
  }
  const size_t got = fread(data, 1, info->size_bytes, f);
  const int extra = fgetc(f) != EOF;
  fclose(f);
  if (got != info->size_bytes || extra) {
    fprintf(stderr, "gpu_fallback_app: error: %s does not hold exactly %llu bytes\n", path,
            (unsigned long long)info->size_bytes);
    return 0;
  }
  return 1;
}

static int write_output(const char* dir, const nanort_tensor_info* info, const void* data) {
  char path[4096];
  if (!tensor_path(dir, info->name, path, sizeof path)) return 0;
  FILE* f = fopen(path, "wb");
  if (!f) {
    perror(path);
    return 0;
  }
  const int ok = fwrite(data, 1, info->size_bytes, f) == info->size_bytes;
  return fclose(f) == 0 && ok;
}

static void print_output(const nanort_tensor_info* info, const void* data) {
  printf("output %s [", info->name);
  for (uint32_t d = 0; d < info->rank; ++d)
    printf("%s%lld", d ? ", " : "", (long long)info->dims[d]);
  printf("]:");
  if (info->dtype == NANORT_F32) {
    const float* v = (const float*)data;
    const size_t n = info->size_bytes / sizeof(float);
    for (size_t i = 0; i < n && i < PRINT_VALUES; ++i) printf(" %.6g", v[i]);
    if (n > PRINT_VALUES) printf(" ...");
  } else {
    printf(" (%s, %llu bytes)", nanort_dtype_name(info->dtype),
           (unsigned long long)info->size_bytes);
  }
  printf("\n");
}

/* Runs `model` once on the inputs and prints (and writes) its outputs. */
static int run_model(const nanort_model* model, const char* in_dir, const char* out_dir) {
  const size_t num_inputs = nanort_model_input_count(model);
  const size_t num_outputs = nanort_model_output_count(model);
  if (num_inputs > MAX_TENSORS || num_outputs > MAX_TENSORS) {
    fprintf(stderr, "gpu_fallback_app: error: more than %d inputs or outputs\n", MAX_TENSORS);
    return 0;
  }
  nanort_tensor_info in_info[MAX_TENSORS], out_info[MAX_TENSORS];
  nanort_tensor inputs[MAX_TENSORS], outputs[MAX_TENSORS];
  void* buffers[2 * MAX_TENSORS] = {0};
  size_t num_buffers = 0;
  int ok = 1;
  for (size_t i = 0; ok && i < num_inputs + num_outputs; ++i) {
    const int is_input = i < num_inputs;
    nanort_tensor_info* info = is_input ? &in_info[i] : &out_info[i - num_inputs];
    ok = (is_input ? nanort_model_input_info(model, i, info)
                   : nanort_model_output_info(model, i - num_inputs, info)) == NANORT_OK;
    /* 64-byte aligned, as kernels may assume of the caller's buffers. */
    void* data = ok ? aligned_alloc(64, (info->size_bytes + 64) / 64 * 64) : NULL;
    if (!data) {
      ok = 0;
      break;
    }
    memset(data, 0, info->size_bytes);
    buffers[num_buffers++] = data;
    nanort_tensor t = {data, info->dtype, info->rank, info->dims};
    if (is_input) {
      inputs[i] = t;
      if (in_dir) {
        ok = read_input(in_dir, info, data);
      } else if (info->dtype == NANORT_F32) {
        float* v = (float*)data;
        for (size_t k = 0; k < info->size_bytes / sizeof(float); ++k)
          v[k] = (float)(k % 17) / 16.0f - 0.5f;
      }
    } else {
      outputs[i - num_inputs] = t;
    }
  }
  nanort_session* session = NULL;
  nanort_status status;
  if (ok && (nanort_session_create(model, NULL, 0, nanort_allocator_system(), &session, &status) !=
                 NANORT_OK ||
             nanort_run(session, inputs, num_inputs, outputs, num_outputs, &status) != NANORT_OK)) {
    fprintf(stderr, "gpu_fallback_app: error: %s: %s\n", nanort_status_code_name(status.code),
            status.message);
    ok = 0;
  }
  for (size_t i = 0; ok && i < num_outputs; ++i) {
    print_output(&out_info[i], outputs[i].data);
    if (out_dir) ok = write_output(out_dir, &out_info[i], outputs[i].data);
  }
  nanort_session_release(session);
  for (size_t i = 0; i < num_buffers; ++i) free(buffers[i]);
  return ok;
}

int main(int argc, char** argv) {
  const char* in_dir = argc > 1 ? argv[1] : NULL;
  const char* out_dir = argc > 2 ? argv[2] : NULL;
  const nanort_allocator allocator = nanort_allocator_system();
  nanort_status status;

  nanort_model* model = NULL;
  const nanort_status_code gpu_code = nanort_model_load(&m_gpu_model, allocator, &model, &status);
  if (gpu_code == NANORT_OK) {
    printf("gpu: OK %s\n", nanort_model_gpu(model));
    printf("running on: gpu (%s)\n", nanort_model_gpu(model));
  } else if (gpu_code == NANORT_UNAVAILABLE || gpu_code == NANORT_UNSUPPORTED_TARGET) {
    /* No driver, no GPU, a driver too old, or a GPU no image fits: the CPU
     * copy of the model serves instead. */
    printf("gpu: %s %s\n", nanort_status_code_name(gpu_code), status.message);
    if (nanort_model_load(&m_cpu_model, allocator, &model, &status) != NANORT_OK) {
      fprintf(stderr, "gpu_fallback_app: error: the CPU model: %s: %s\n",
              nanort_status_code_name(status.code), status.message);
      return 1;
    }
    if (nanort_model_gpu(model) != NULL) {
      fprintf(stderr, "gpu_fallback_app: error: m_cpu has GPU parts\n");
      nanort_model_release(model);
      return 1;
    }
    printf("running on: cpu (%s)\n", nanort_model_cpu(model));
  } else {
    fprintf(stderr, "gpu_fallback_app: error: the GPU model: %s: %s\n",
            nanort_status_code_name(gpu_code), status.message);
    return 1;
  }
  const int ok = run_model(model, in_dir, out_dir);
  nanort_model_release(model);
  return ok ? 0 : 1;
}
