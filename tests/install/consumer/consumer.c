/* Runs the affine model (affine.nir) on a fixed input and compares with the
 * same arithmetic in C. Prints "consumer: ok" and exits 0 when they match. */
#include <math.h>
#include <stdio.h>

#include "affine.h"

static const float kW[4][3] = {
    {0.5f, -1.0f, 0.25f}, {1.5f, 0.75f, -0.5f}, {-2.0f, 0.125f, 1.0f}, {0.25f, 0.5f, -0.75f}};
static const float kB[3] = {0.1f, -0.2f, 0.3f};

int main(void) {
  float x[2][4] = {{1.0f, -2.0f, 0.5f, 3.0f}, {-1.5f, 0.25f, 2.0f, -0.5f}};
  float y[2][3] = {{0}};
  nanort_status st;
  nanort_model* model = NULL;
  nanort_session* session = NULL;
  if (nanort_model_load(&affine_model, nanort_allocator_system(), &model, &st) != NANORT_OK ||
      nanort_session_create(model, NULL, 0, nanort_allocator_system(), &session, &st) !=
          NANORT_OK) {
    fprintf(stderr, "consumer: %s\n", st.message);
    return 1;
  }
  const int64_t x_dims[] = AFFINE_INPUT0_DIMS;
  const int64_t y_dims[] = AFFINE_OUTPUT0_DIMS;
  nanort_tensor in = {x, NANORT_F32, 2, x_dims};
  nanort_tensor out = {y, NANORT_F32, 2, y_dims};
  if (nanort_run(session, &in, 1, &out, 1, &st) != NANORT_OK) {
    fprintf(stderr, "consumer: %s\n", st.message);
    return 1;
  }
  int bad = 0;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      float want = kB[j];
      for (int k = 0; k < 4; ++k) want += x[i][k] * kW[k][j];
      if (want < 0) want = 0;
      if (fabsf(y[i][j] - want) > 1e-5f * (1 + fabsf(want))) {
        fprintf(stderr, "consumer: y[%d][%d] = %g, want %g\n", i, j, y[i][j], want);
        bad = 1;
      }
    }
  nanort_session_release(session);
  nanort_model_release(model);
  if (!bad) printf("consumer: ok\n");
  return bad;
}
