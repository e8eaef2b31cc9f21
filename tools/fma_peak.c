// One core's f32 FMA peak on x86 with AVX-512 (the figure SGEMM is measured
// against in docs/BENCHMARKS.md): 12 independent FMA chains per vector width,
// no memory operands; GFLOP/s = R * chains * lanes * 2 / seconds.
//   cc -O2 -mavx512f -mfma -o /tmp/fma_peak tools/fma_peak.c && /tmp/fma_peak
#include <immintrin.h>
#include <stdio.h>
#include <time.h>
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
#define R 100000000L
int main(void) {
  {
    __m512 a0 = _mm512_set1_ps(0.0f), a1 = _mm512_set1_ps(1.0f), a2 = _mm512_set1_ps(2.0f),
           a3 = _mm512_set1_ps(3.0f), a4 = _mm512_set1_ps(4.0f), a5 = _mm512_set1_ps(5.0f),
           a6 = _mm512_set1_ps(6.0f), a7 = _mm512_set1_ps(7.0f), a8 = _mm512_set1_ps(8.0f),
           a9 = _mm512_set1_ps(9.0f), a10 = _mm512_set1_ps(10.0f), a11 = _mm512_set1_ps(11.0f);
    __m512 x = _mm512_set1_ps(1.0000001f), y = _mm512_set1_ps(0.9999999f);
    double t0 = now();
    for (long r = 0; r < R; ++r) {
      a0 = _mm512_fmadd_ps(a0, x, y);
      a1 = _mm512_fmadd_ps(a1, x, y);
      a2 = _mm512_fmadd_ps(a2, x, y);
      a3 = _mm512_fmadd_ps(a3, x, y);
      a4 = _mm512_fmadd_ps(a4, x, y);
      a5 = _mm512_fmadd_ps(a5, x, y);
      a6 = _mm512_fmadd_ps(a6, x, y);
      a7 = _mm512_fmadd_ps(a7, x, y);
      a8 = _mm512_fmadd_ps(a8, x, y);
      a9 = _mm512_fmadd_ps(a9, x, y);
      a10 = _mm512_fmadd_ps(a10, x, y);
      a11 = _mm512_fmadd_ps(a11, x, y);
    }
    double dt = now() - t0;
    __m512 s = a0;
    s = _mm512_add_ps(s, a1);
    s = _mm512_add_ps(s, a2);
    s = _mm512_add_ps(s, a3);
    s = _mm512_add_ps(s, a4);
    s = _mm512_add_ps(s, a5);
    s = _mm512_add_ps(s, a6);
    s = _mm512_add_ps(s, a7);
    s = _mm512_add_ps(s, a8);
    s = _mm512_add_ps(s, a9);
    s = _mm512_add_ps(s, a10);
    s = _mm512_add_ps(s, a11);
    float o[16];
    _mm512_storeu_ps(o, s);
    printf("__m512: %.1f GFLOP/s (%g)\n", R * 12.0 * 16 * 2 / dt / 1e9, o[0]);
  }
  {
    __m256 a0 = _mm256_set1_ps(0.0f), a1 = _mm256_set1_ps(1.0f), a2 = _mm256_set1_ps(2.0f),
           a3 = _mm256_set1_ps(3.0f), a4 = _mm256_set1_ps(4.0f), a5 = _mm256_set1_ps(5.0f),
           a6 = _mm256_set1_ps(6.0f), a7 = _mm256_set1_ps(7.0f), a8 = _mm256_set1_ps(8.0f),
           a9 = _mm256_set1_ps(9.0f), a10 = _mm256_set1_ps(10.0f), a11 = _mm256_set1_ps(11.0f);
    __m256 x = _mm256_set1_ps(1.0000001f), y = _mm256_set1_ps(0.9999999f);
    double t0 = now();
    for (long r = 0; r < R; ++r) {
      a0 = _mm256_fmadd_ps(a0, x, y);
      a1 = _mm256_fmadd_ps(a1, x, y);
      a2 = _mm256_fmadd_ps(a2, x, y);
      a3 = _mm256_fmadd_ps(a3, x, y);
      a4 = _mm256_fmadd_ps(a4, x, y);
      a5 = _mm256_fmadd_ps(a5, x, y);
      a6 = _mm256_fmadd_ps(a6, x, y);
      a7 = _mm256_fmadd_ps(a7, x, y);
      a8 = _mm256_fmadd_ps(a8, x, y);
      a9 = _mm256_fmadd_ps(a9, x, y);
      a10 = _mm256_fmadd_ps(a10, x, y);
      a11 = _mm256_fmadd_ps(a11, x, y);
    }
    double dt = now() - t0;
    __m256 s = a0;
    s = _mm256_add_ps(s, a1);
    s = _mm256_add_ps(s, a2);
    s = _mm256_add_ps(s, a3);
    s = _mm256_add_ps(s, a4);
    s = _mm256_add_ps(s, a5);
    s = _mm256_add_ps(s, a6);
    s = _mm256_add_ps(s, a7);
    s = _mm256_add_ps(s, a8);
    s = _mm256_add_ps(s, a9);
    s = _mm256_add_ps(s, a10);
    s = _mm256_add_ps(s, a11);
    float o[8];
    _mm256_storeu_ps(o, s);
    printf("__m256: %.1f GFLOP/s (%g)\n", R * 12.0 * 8 * 2 / dt / 1e9, o[0]);
  }
}
