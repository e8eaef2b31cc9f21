/* digits_bm: the digits MLP, compiled by nanoc for cortex-m4, run by nanort
 * built with NANORT_PLATFORM=none, on a Cortex-M4F under QEMU. The held-out
 * images, their labels and ONNX Runtime's classes are compiled in
 * (digits_data.h); output goes through semihosting.
 *
 * nanort is built with NANORT_MESSAGES=short, as firmware would ship it:
 * the firmware also checks that bad input (a damaged program, a wrong input
 * shape) still gets its status code and a "check FILE:LINE" message.
 *
 * Exit status (semihosting SYS_EXIT): 0 when accuracy >= MIN_ACCURACY,
 * every class equals ONNX Runtime's and bad input is refused; 1 otherwise or
 * on any error. */
#include <nanort/nanort.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digits_data.h"
#include "digits_mlp.h"

#define MIN_ACCURACY 0.95
#define NUM_CLASSES 10

_Static_assert(DIGITS_MLP_INPUT0_NUMEL == 64, "mlp input is one 8x8 image");
_Static_assert(DIGITS_MLP_OUTPUT0_NUMEL == NUM_CLASSES, "mlp output is 10 probabilities");

/* No heap is assumed: load and session creation take memory from this
 * static pool through a bump allocator, and the arena is static too. */
static uint8_t pool[8192] __attribute__((aligned(16)));
static size_t pool_used;
static uint8_t arena[DIGITS_MLP_ARENA_SIZE] __attribute__((aligned(DIGITS_MLP_ARENA_ALIGNMENT)));

static void* pool_alloc(void* self, size_t size, size_t alignment) {
  (void)self;
  size_t begin = (pool_used + alignment - 1) & ~(alignment - 1);
  if (alignment == 0 || begin < pool_used || begin > sizeof pool || size > sizeof pool - begin)
    return NULL;
  pool_used = begin + size;
  return pool + begin;
}

/* A bump allocator frees nothing; the firmware releases nothing anyway. */
static void pool_free(void* self, void* ptr) {
  (void)self;
  (void)ptr;
}

static int argmax(const float* p, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (p[i] > p[best]) best = i;
  return best;
}

static int fail(const char* what, const nanort_status* status) {
  printf("digits_bm: error: %s: %s: %s\n", what, nanort_status_code_name(status->code),
         status->message);
  return 1;
}

/* Whether `code` and the message are what a short-message nanort reports
 * for a check that failed: the code and "check FILE.cc:LINE". */
static int refused_as(nanort_status_code got, const nanort_status* status, nanort_status_code want,
                      const char* what) {
  const char* m = status->message;
  int shaped = strncmp(m, "check ", 6) == 0 && strstr(m, ".cc:") != NULL &&
               m[strlen(m) - 1] >= '0' && m[strlen(m) - 1] <= '9';
  if (got == want && status->code == want && shaped) {
    printf("digits_bm: %s refused: %s: %s\n", what, nanort_status_code_name(got), m);
    return 0;
  }
  printf("digits_bm: error: %s: got %s (%s), want %s and \"check FILE:LINE\"\n", what,
         nanort_status_code_name(got), m, nanort_status_code_name(want));
  return 1;
}

/* A copy of the program with its file identifier broken. */
static uint8_t damaged[4096] __attribute__((aligned(8)));

int main(void) {
  nanort_status status;
  /* This build has no OS: the system allocator must refuse, and loading a
   * file must say it is unavailable. */
  nanort_allocator system = nanort_allocator_system();
  if (system.alloc(system.self, 16, 16) != NULL) {
    printf("digits_bm: error: nanort_allocator_system allocated on bare metal\n");
    return 1;
  }
  nanort_model* model = NULL;
  if (nanort_model_load_file("digits_mlp.so", NULL, system, &model, &status) !=
      NANORT_UNAVAILABLE) {
    printf("digits_bm: error: nanort_model_load_file did not return UNAVAILABLE\n");
    return 1;
  }

  nanort_allocator alloc = {NULL, pool_alloc, pool_free};
  if (nanort_model_load(&digits_mlp_model, alloc, &model, &status) != NANORT_OK)
    return fail("load", &status);
  if (digits_mlp_model.program_size > sizeof damaged) {
    printf("digits_bm: error: program of %u bytes exceeds the test's copy\n",
           (unsigned)digits_mlp_model.program_size);
    return 1;
  }
  nanort_model_def bad_def = digits_mlp_model;
  memcpy(damaged, digits_mlp_model.program, (size_t)digits_mlp_model.program_size);
  damaged[4] ^= 0x20; /* "NRTP" -> "nRTP" */
  bad_def.program = damaged;
  nanort_model* bad_model = NULL;
  if (refused_as(nanort_model_load(&bad_def, alloc, &bad_model, &status), &status,
                 NANORT_INVALID_PROGRAM, "damaged program"))
    return 1;

  nanort_session* session = NULL;
  if (nanort_session_create(model, arena, sizeof arena, alloc, &session, &status) != NANORT_OK)
    return fail("session", &status);

  static const int64_t in_dims[] = DIGITS_MLP_INPUT0_DIMS;
  static const int64_t out_dims[] = DIGITS_MLP_OUTPUT0_DIMS;
  float probs[NUM_CLASSES];
  nanort_tensor out = {probs, DIGITS_MLP_OUTPUT0_DTYPE, DIGITS_MLP_OUTPUT0_RANK, out_dims};
  static const int64_t wrong_dims[] = {1, 63};
  nanort_tensor wrong = {(void*)digits_x[0], DIGITS_MLP_INPUT0_DTYPE, 2, wrong_dims};
  if (refused_as(nanort_run(session, &wrong, 1, &out, 1, &status), &status, NANORT_SHAPE_MISMATCH,
                 "input of shape [1,63]"))
    return 1;

  unsigned correct = 0, mismatches = 0;
  for (unsigned i = 0; i < DIGITS_COUNT; ++i) {
    /* nanort only reads inputs, so the images are passed in place. */
    nanort_tensor in = {(void*)digits_x[i], DIGITS_MLP_INPUT0_DTYPE, DIGITS_MLP_INPUT0_RANK,
                        in_dims};
    if (nanort_run(session, &in, 1, &out, 1, &status) != NANORT_OK) return fail("run", &status);
    int cls = argmax(probs, NUM_CLASSES);
    correct += cls == digits_y[i];
    if (cls != digits_ort[i]) {
      if (++mismatches <= 5)
        printf("digits_bm: image %u: nanort says %d, ONNX Runtime %d (label %d)\n", i, cls,
               digits_ort[i], digits_y[i]);
    }
  }
  /* Integer per-mille: newlib-nano's printf has no %f unless asked. */
  unsigned permille = (unsigned)((correct * 1000u + DIGITS_COUNT / 2) / DIGITS_COUNT);
  printf(
      "digits_bm: cortex-m4: accuracy %u.%03u (%u/%u), classes differing from ONNX Runtime: %u, "
      "pool %u bytes, arena %u bytes\n",
      permille / 1000, permille % 1000, correct, DIGITS_COUNT, mismatches, (unsigned)pool_used,
      (unsigned)sizeof arena);
  int failed = 0;
  if ((double)correct < MIN_ACCURACY * DIGITS_COUNT) {
    printf("digits_bm: error: accuracy below %u per mille\n", (unsigned)(MIN_ACCURACY * 1000));
    failed = 1;
  }
  if (mismatches) {
    printf("digits_bm: error: %u classes differ from ONNX Runtime's\n", mismatches);
    failed = 1;
  }
  nanort_session_release(session);
  nanort_model_release(model);
  return failed;
}
