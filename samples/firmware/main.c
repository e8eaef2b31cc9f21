/* firmware: the digits MLP, compiled by `nanoc --target cortex-m4`, run by
 * nanort built for bare metal (NANORT_PLATFORM=none) on a Cortex-M4F; under
 * QEMU (mps2-an386) here, on your board once the linker script says where
 * its flash and RAM are. The held-out images, their labels and ONNX
 * Runtime's classes are linked in (digits_data.S); output goes through
 * semihosting (newlib's rdimon), so a debugger or QEMU prints it.
 *
 * There is no heap: nanort_allocator_system() allocates nothing on bare
 * metal, so the model and session take their few hundred bytes of tables
 * from a static pool through a bump allocator, and the arena, whose size
 * nanoc wrote into the model's header, is a static array too.
 *
 * Exit status (semihosting SYS_EXIT, which QEMU returns): 0 when accuracy >=
 * MIN_ACCURACY and every class equals ONNX Runtime's; 1 otherwise or on any
 * error. check_refusals() also checks that bad input (a damaged program, a
 * wrong input shape) is refused with its status code and, in the
 * short-message build (NANORT_MESSAGES=short, as firmware ships), a
 * "check FILE:LINE" message; your firmware can leave it out. */
#include <nanort/nanort.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "digits_mlp.h" /* from nanoc, in MODEL_DIR */

#define MIN_ACCURACY_PERMILLE 950u
#define NUM_CLASSES 10

_Static_assert(DIGITS_MLP_INPUT0_NUMEL == 64, "mlp input is one 8x8 image");
_Static_assert(DIGITS_MLP_OUTPUT0_NUMEL == NUM_CLASSES, "mlp output is 10 probabilities");

/* digits_data.S: float32 [N][64] images, N labels, N ONNX Runtime classes. */
extern const float digits_x[][64];
extern const uint8_t digits_x_end[], digits_y[], digits_y_end[], digits_ort[], digits_ort_end[];

/* ---- memory: a static pool with a bump allocator, and a static arena ---- */

/* The model and session tables (a few hundred bytes for this model: the
 * sample prints how much it used). */
static uint8_t pool[4096] __attribute__((aligned(16)));
static size_t pool_used;
static uint8_t arena[DIGITS_MLP_ARENA_SIZE] __attribute__((aligned(DIGITS_MLP_ARENA_ALIGNMENT)));

static void* pool_alloc(void* self, size_t size, size_t alignment) {
  (void)self;
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) return NULL;
  size_t begin = (pool_used + alignment - 1) & ~(alignment - 1);
  if (begin < pool_used || begin > sizeof pool || size > sizeof pool - begin) return NULL;
  pool_used = begin + size;
  return pool + begin;
}

/* A bump allocator frees nothing; firmware that loads once releases nothing. */
static void pool_free(void* self, void* ptr) {
  (void)self;
  (void)ptr;
}

static const nanort_allocator pool_allocator = {NULL, pool_alloc, pool_free};

/* ---- the sample's self-checks ---- */

static int fail(const char* what, const nanort_status* status) {
  printf("firmware: error: %s: %s: %s\n", what, nanort_status_code_name(status->code),
         status->message);
  return 1;
}

/* Whether the call returned `want`, and (short-message build) its message is
 * "check FILE.cc:LINE". */
static int refused_as(nanort_status_code got, const nanort_status* status, nanort_status_code want,
                      const char* what) {
  const char* m = status->message;
  size_t n = strlen(m);
#ifdef FIRMWARE_SHORT_MESSAGES
  int shaped = strncmp(m, "check ", 6) == 0 && strstr(m, ".cc:") != NULL && n > 0 &&
               m[n - 1] >= '0' && m[n - 1] <= '9';
#else
  int shaped = n > 0;
#endif
  if (got == want && status->code == want && shaped) {
    printf("firmware: %s refused: %s: %s\n", what, nanort_status_code_name(got), m);
    return 0;
  }
  printf("firmware: error: %s: got %s (%s), want %s\n", what, nanort_status_code_name(got), m,
         nanort_status_code_name(want));
  return 1;
}

/* A copy of the program with its file identifier broken. */
static uint8_t damaged[4096] __attribute__((aligned(16)));

static int check_refusals(nanort_session* session, float* probs) {
  nanort_status status;
  /* No OS: the system allocator has nothing to give and says so, and there
   * are no files to load a model from. */
  nanort_model* model = NULL;
  if (refused_as(nanort_model_load(&digits_mlp_model, nanort_allocator_system(), &model, &status),
                 &status, NANORT_OUT_OF_MEMORY, "nanort_allocator_system()"))
    return 1;
  if (refused_as(nanort_model_load_file("digits_mlp.so", NULL, pool_allocator, &model, &status),
                 &status, NANORT_UNAVAILABLE, "nanort_model_load_file"))
    return 1;

  if (digits_mlp_model.program_size > sizeof damaged) {
    printf("firmware: error: program of %lu bytes exceeds the check's copy\n",
           (unsigned long)digits_mlp_model.program_size);
    return 1;
  }
  nanort_model_def bad_def = digits_mlp_model;
  memcpy(damaged, digits_mlp_model.program, (size_t)digits_mlp_model.program_size);
  damaged[4] ^= 0x20; /* "NRTP" -> "nRTP" */
  bad_def.program = damaged;
  if (refused_as(nanort_model_load(&bad_def, pool_allocator, &model, &status), &status,
                 NANORT_INVALID_PROGRAM, "damaged program"))
    return 1;

  static const int64_t out_dims[] = DIGITS_MLP_OUTPUT0_DIMS;
  static const int64_t wrong_dims[] = {1, 63};
  nanort_tensor out = {probs, DIGITS_MLP_OUTPUT0_DTYPE, DIGITS_MLP_OUTPUT0_RANK, out_dims};
  nanort_tensor wrong = {(void*)digits_x[0], DIGITS_MLP_INPUT0_DTYPE, 2, wrong_dims};
  return refused_as(nanort_run(session, &wrong, 1, &out, 1, &status), &status,
                    NANORT_SHAPE_MISMATCH, "input of shape [1,63]");
}

static unsigned argmax(const float* p, unsigned n) {
  unsigned best = 0;
  for (unsigned i = 1; i < n; ++i)
    if (p[i] > p[best]) best = i;
  return best;
}

int main(void) {
  const unsigned count = (unsigned)(digits_y_end - digits_y);
  if (count == 0 ||
      (size_t)(digits_x_end - (const uint8_t*)digits_x) != count * sizeof digits_x[0] ||
      (unsigned)(digits_ort_end - digits_ort) != count) {
    printf("firmware: error: digits_data.S: the images, labels and classes disagree in count\n");
    return 1;
  }

  /* Load: verifies the program in place (in flash) and checks that this
   * build's CPU can run it. */
  nanort_status status;
  nanort_model* model = NULL;
  if (nanort_model_load(&digits_mlp_model, pool_allocator, &model, &status) != NANORT_OK)
    return fail("load", &status);
  nanort_session* session = NULL;
  if (nanort_session_create(model, arena, sizeof arena, pool_allocator, &session, &status) !=
      NANORT_OK)
    return fail("session", &status);

  float probs[NUM_CLASSES];
  if (check_refusals(session, probs)) return 1;

  static const int64_t in_dims[] = DIGITS_MLP_INPUT0_DIMS;
  static const int64_t out_dims[] = DIGITS_MLP_OUTPUT0_DIMS;
  nanort_tensor out = {probs, DIGITS_MLP_OUTPUT0_DTYPE, DIGITS_MLP_OUTPUT0_RANK, out_dims};
  unsigned correct = 0, mismatches = 0;
  for (unsigned i = 0; i < count; ++i) {
    /* nanort only reads inputs, so the images are passed in place. */
    nanort_tensor in = {(void*)digits_x[i], DIGITS_MLP_INPUT0_DTYPE, DIGITS_MLP_INPUT0_RANK,
                        in_dims};
    if (nanort_run(session, &in, 1, &out, 1, &status) != NANORT_OK) return fail("run", &status);
    unsigned cls = argmax(probs, NUM_CLASSES);
    correct += cls == digits_y[i];
    if (cls != digits_ort[i] && ++mismatches <= 5)
      printf("firmware: image %u: nanort says %u, ONNX Runtime %u (label %u)\n", i, cls,
             (unsigned)digits_ort[i], (unsigned)digits_y[i]);
  }
  /* Integer per-mille: newlib-nano's printf has no %f unless asked. */
  unsigned permille = (correct * 1000u + count / 2) / count;
  printf(
      "firmware: cortex-m4: accuracy %u.%03u (%u/%u), classes differing from ONNX Runtime: %u, "
      "pool %u bytes, arena %u bytes\n",
      permille / 1000, permille % 1000, correct, count, mismatches, (unsigned)pool_used,
      (unsigned)sizeof arena);
  int failed = 0;
  if (correct * 1000u < MIN_ACCURACY_PERMILLE * count) {
    printf("firmware: error: accuracy below %u per mille\n", MIN_ACCURACY_PERMILLE);
    failed = 1;
  }
  if (mismatches) {
    printf("firmware: error: %u classes differ from ONNX Runtime's\n", mismatches);
    failed = 1;
  }
  nanort_session_release(session);
  nanort_model_release(model);
  return failed;
}
