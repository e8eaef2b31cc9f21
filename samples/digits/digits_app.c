/* digits_app: classifies the held-out 8x8 digits with two models compiled by
 * nanoc and linked in statically (digits_mlp and digits_cnn), through nanort's
 * C API.
 *
 *   digits_app DATA_DIR [--repeat N]
 *
 * DATA_DIR holds what train.py wrote: test_x.f32 (float32 [N, 64]), test_y.u8
 * (labels), ort_mlp.u8 and ort_cnn.u8 (ONNX Runtime's classes). For each model
 * it prints the accuracy, the number of classes that differ from ONNX
 * Runtime's, and the latency of one inference (median over every image and
 * repeat, in microseconds).
 *
 * Exit status: 0 when both models reach MIN_ACCURACY and agree with ONNX
 * Runtime on every image; 1 otherwise or on any error.
 */
#define _POSIX_C_SOURCE 199309L

#include <nanort/nanort.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "digits_cnn.h"
#include "digits_mlp.h"

#define MIN_ACCURACY 0.95
#define NUM_PIXELS 64
#define NUM_CLASSES 10

/* The app's buffers are sized from these; a model trained differently must
 * fail to build here rather than read past them at run time. */
_Static_assert(DIGITS_MLP_NUM_INPUTS == 1 && DIGITS_MLP_NUM_OUTPUTS == 1, "mlp: 1 in, 1 out");
_Static_assert(DIGITS_CNN_NUM_INPUTS == 1 && DIGITS_CNN_NUM_OUTPUTS == 1, "cnn: 1 in, 1 out");
_Static_assert(DIGITS_MLP_INPUT0_NUMEL == NUM_PIXELS, "mlp input is one 8x8 image");
_Static_assert(DIGITS_CNN_INPUT0_NUMEL == NUM_PIXELS, "cnn input is one 8x8 image");
_Static_assert(DIGITS_MLP_OUTPUT0_NUMEL == NUM_CLASSES, "mlp output is 10 probabilities");
_Static_assert(DIGITS_CNN_OUTPUT0_NUMEL == NUM_CLASSES, "cnn output is 10 probabilities");

typedef struct classifier {
  const char* name;
  const nanort_model_def* def;
  const char* ort_classes_file;
  nanort_dtype input_dtype, output_dtype;
  uint32_t input_rank, output_rank;
  const int64_t* input_dims;
  const int64_t* output_dims;
} classifier;

static const int64_t mlp_input_dims[] = DIGITS_MLP_INPUT0_DIMS;
static const int64_t mlp_output_dims[] = DIGITS_MLP_OUTPUT0_DIMS;
static const int64_t cnn_input_dims[] = DIGITS_CNN_INPUT0_DIMS;
static const int64_t cnn_output_dims[] = DIGITS_CNN_OUTPUT0_DIMS;

/* Reads a whole file into malloc'd memory; the caller frees it. */
static void* read_file(const char* dir, const char* name, size_t* out_size) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) {
    fprintf(stderr, "digits_app: error: path too long: %s/%s\n", dir, name);
    return NULL;
  }
  FILE* f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return NULL;
  }
  void* data = NULL;
  long size = -1;
  if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
    data = malloc(size > 0 ? (size_t)size : 1);
    if (data && fread(data, 1, (size_t)size, f) != (size_t)size) {
      free(data);
      data = NULL;
    }
  }
  fclose(f);
  if (!data) {
    fprintf(stderr, "digits_app: error: cannot read %s\n", path);
    return NULL;
  }
  *out_size = (size_t)size;
  return data;
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int compare_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static int argmax(const float* p, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (p[i] > p[best]) best = i;
  return best;
}

/* Classifies every image `repeat` times; returns 0 when the model passes. */
static int evaluate(const classifier* c, const char* dir, const float* images,
                    const uint8_t* labels, size_t n, int repeat) {
  size_t ort_size = 0;
  uint8_t* ort = read_file(dir, c->ort_classes_file, &ort_size);
  if (!ort) return 1;
  if (ort_size != n) {
    fprintf(stderr, "digits_app: error: %s has %zu classes for %zu images\n", c->ort_classes_file,
            ort_size, n);
    free(ort);
    return 1;
  }

  int failed = 1;
  nanort_status status;
  nanort_allocator alloc = nanort_allocator_system();
  nanort_model* model = NULL;
  nanort_session* session = NULL;
  double* latency = malloc(n * (size_t)repeat * sizeof *latency);
  if (!latency) {
    fprintf(stderr, "digits_app: error: out of memory\n");
    goto done;
  }
  if (nanort_model_load(c->def, alloc, &model, &status) != NANORT_OK ||
      nanort_session_create(model, NULL, 0, alloc, &session, &status) != NANORT_OK) {
    fprintf(stderr, "digits_app: error: %s: %s: %s\n", c->name,
            nanort_status_code_name(status.code), status.message);
    goto done;
  }

  float probs[NUM_CLASSES];
  nanort_tensor out = {probs, c->output_dtype, c->output_rank, c->output_dims};
  size_t correct = 0, mismatches = 0, runs = 0;
  for (int r = 0; r < repeat; ++r) {
    for (size_t i = 0; i < n; ++i) {
      /* nanort only reads inputs, so the held-out set is passed in place. */
      nanort_tensor in = {(void*)(images + i * NUM_PIXELS), c->input_dtype, c->input_rank,
                          c->input_dims};
      double t0 = now_us();
      nanort_status_code code = nanort_run(session, &in, 1, &out, 1, &status);
      double t1 = now_us();
      if (code != NANORT_OK) {
        fprintf(stderr, "digits_app: error: %s: image %zu: %s: %s\n", c->name, i,
                nanort_status_code_name(code), status.message);
        goto done;
      }
      latency[runs++] = t1 - t0;
      if (r == 0) {
        int cls = argmax(probs, NUM_CLASSES);
        correct += cls == labels[i];
        if (cls != ort[i]) {
          ++mismatches;
          if (mismatches <= 5)
            fprintf(stderr, "%s: image %zu: nanort says %d, ONNX Runtime %d (label %d)\n", c->name,
                    i, cls, ort[i], labels[i]);
        }
      }
    }
  }
  qsort(latency, runs, sizeof *latency, compare_double);
  double accuracy = (double)correct / (double)n;
  printf(
      "%s: accuracy %.4f (%zu/%zu), classes differing from ONNX Runtime: %zu, "
      "latency median %.2f us min %.2f us (%zu runs)\n",
      c->name, accuracy, correct, n, mismatches, latency[runs / 2], latency[0], runs);
  failed = 0;
  if (accuracy < MIN_ACCURACY) {
    fprintf(stderr, "digits_app: error: %s: accuracy %.4f < %.2f\n", c->name, accuracy,
            MIN_ACCURACY);
    failed = 1;
  }
  if (mismatches) {
    fprintf(stderr, "digits_app: error: %s: %zu classes differ from ONNX Runtime's\n", c->name,
            mismatches);
    failed = 1;
  }

done:
  if (session) nanort_session_release(session);
  if (model) nanort_model_release(model);
  free(latency);
  free(ort);
  return failed;
}

int main(int argc, char** argv) {
  const char* dir = NULL;
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      repeat = atoi(argv[++i]);
      if (repeat < 1 || repeat > 10000) {
        fprintf(stderr, "digits_app: error: --repeat wants 1..10000\n");
        return 1;
      }
    } else if (!dir && argv[i][0] != '-') {
      dir = argv[i];
    } else {
      dir = NULL;
      break;
    }
  }
  if (!dir) {
    fprintf(stderr, "usage: digits_app DATA_DIR [--repeat N]\n");
    return 1;
  }

  size_t x_size = 0, y_size = 0;
  float* images = read_file(dir, "test_x.f32", &x_size);
  uint8_t* labels = read_file(dir, "test_y.u8", &y_size);
  int status = 1;
  if (!images || !labels) goto done;
  size_t n = y_size;
  if (n == 0 || x_size != n * NUM_PIXELS * sizeof(float)) {
    fprintf(stderr,
            "digits_app: error: test_x.f32 has %zu bytes, expected %zu images x %d float32\n",
            x_size, n, NUM_PIXELS);
    goto done;
  }

  const classifier models[] = {
      {"digits_mlp", &digits_mlp_model, "ort_mlp.u8", DIGITS_MLP_INPUT0_DTYPE,
       DIGITS_MLP_OUTPUT0_DTYPE, DIGITS_MLP_INPUT0_RANK, DIGITS_MLP_OUTPUT0_RANK, mlp_input_dims,
       mlp_output_dims},
      {"digits_cnn", &digits_cnn_model, "ort_cnn.u8", DIGITS_CNN_INPUT0_DTYPE,
       DIGITS_CNN_OUTPUT0_DTYPE, DIGITS_CNN_INPUT0_RANK, DIGITS_CNN_OUTPUT0_RANK, cnn_input_dims,
       cnn_output_dims},
  };
  status = 0;
  for (size_t m = 0; m < sizeof models / sizeof models[0]; ++m)
    status |= evaluate(&models[m], dir, images, labels, n, repeat);

done:
  free(images);
  free(labels);
  return status;
}
