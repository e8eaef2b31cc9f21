/* The f32 FMA peak of this machine, the figure tools/nanort_bench.py (and
 * docs/BENCHMARKS.md's SGEMM rows) divide by: 16 independent FMA chains per
 * thread, no memory operands, the best of 20 runs of ITERS steps;
 * GFLOP/s = 2 * lanes * chains * ITERS * THREADS / seconds.
 *   cc -O2 -march=native -pthread -o /tmp/fma_peak tools/fma_peak.c
 *   /tmp/fma_peak WIDTH THREADS ITERS    (WIDTH 256 or 512; prints GFLOP/s of
 *                                         all threads together, or
 *                                         "unsupported" for 512 without AVX-512)
 *   /tmp/fma_peak tile WIDTH ITERS       one thread: a GEMM register tile
 *                                         whose operands are loaded from L1
 *                                         (12 x 32 at 512 bits, 6 x 16 at
 *                                         256: nanoc's tiles), ITERS passes
 *                                         over 128 K steps
 * The tile's rate against the loop's shows what loads cost on this host at
 * the time: on a shared machine that share moves while the loop's does not.
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHAINS 16
static long iters;
static int width;
static volatile float sink;

#define STEP(i) acc##i = FMADD(acc##i, a, b)
#define ALL \
  STEP(0);  \
  STEP(1);  \
  STEP(2);  \
  STEP(3);  \
  STEP(4);  \
  STEP(5);  \
  STEP(6);  \
  STEP(7);  \
  STEP(8);  \
  STEP(9);  \
  STEP(10); \
  STEP(11); \
  STEP(12); \
  STEP(13); \
  STEP(14); \
  STEP(15)
#define DECL(T, SET)                                                                               \
  T acc0 = SET(0.f), acc1 = SET(1.f), acc2 = SET(2.f), acc3 = SET(3.f), acc4 = SET(4.f),           \
    acc5 = SET(5.f), acc6 = SET(6.f), acc7 = SET(7.f), acc8 = SET(8.f), acc9 = SET(9.f),           \
    acc10 = SET(10.f), acc11 = SET(11.f), acc12 = SET(12.f), acc13 = SET(13.f), acc14 = SET(14.f), \
    acc15 = SET(15.f);
#define SUM(ADD)                                                                         \
  ADD(ADD(ADD(ADD(acc0, acc1), ADD(acc2, acc3)), ADD(ADD(acc4, acc5), ADD(acc6, acc7))), \
      ADD(ADD(ADD(acc8, acc9), ADD(acc10, acc11)), ADD(ADD(acc12, acc13), ADD(acc14, acc15))))

#ifdef __AVX512F__
static float run512(void) {
#define FMADD _mm512_fmadd_ps
  __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  DECL(__m512, _mm512_set1_ps)
  for (long i = 0; i < iters; ++i) {
    ALL;
  }
  __m512 s = SUM(_mm512_add_ps);
#undef FMADD
  return _mm512_reduce_add_ps(s);
}
#endif

static float run256(void) {
#define FMADD _mm256_fmadd_ps
  __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  DECL(__m256, _mm256_set1_ps)
  for (long i = 0; i < iters; ++i) {
    ALL;
  }
  __m256 s = SUM(_mm256_add_ps);
#undef FMADD
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[7];
}

static void* worker(void* arg) {
  (void)arg;
#ifdef __AVX512F__
  if (width == 512) {
    sink = run512();
    return NULL;
  }
#endif
  sink = run256();
  return NULL;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* The register tile: ROWS rows of two vectors of accumulators; per K step
 * two vectors of B and ROWS broadcasts of A, all from L1. */
#define TILE_K 128
#define TILE_BODY(VEC, LANES, ROWS, LOAD, SET1, FMADD, SETZERO)                \
  static float a[TILE_K * ROWS] __attribute__((aligned(64)));                  \
  static float b[TILE_K * 2 * LANES] __attribute__((aligned(64)));             \
  for (int i = 0; i < TILE_K * ROWS; ++i) a[i] = 1e-6f * (float)(i % 97);      \
  for (int i = 0; i < TILE_K * 2 * LANES; ++i) b[i] = 1e-6f * (float)(i % 89); \
  VEC acc[2 * ROWS];                                                           \
  for (int i = 0; i < 2 * ROWS; ++i) acc[i] = SETZERO();                       \
  double best = 0;                                                             \
  for (int rep = 0; rep < 20; ++rep) {                                         \
    double t0 = now();                                                         \
    for (long it = 0; it < iters; ++it) {                                      \
      const float* pa = a;                                                     \
      const float* pb = b;                                                     \
      for (int k = 0; k < TILE_K; ++k, pa += ROWS, pb += 2 * LANES) {          \
        VEC b0 = LOAD(pb), b1 = LOAD(pb + LANES);                              \
        _Pragma("GCC unroll 16") for (int r = 0; r < ROWS; ++r) {              \
          VEC x = SET1(pa[r]);                                                 \
          acc[2 * r] = FMADD(x, b0, acc[2 * r]);                               \
          acc[2 * r + 1] = FMADD(x, b1, acc[2 * r + 1]);                       \
        }                                                                      \
      }                                                                        \
    }                                                                          \
    double s = now() - t0;                                                     \
    double flops = 2.0 * 2 * LANES * ROWS * TILE_K * (double)iters;            \
    if (flops / s > best) best = flops / s;                                    \
  }                                                                            \
  float out[LANES];                                                            \
  VEC sum = acc[0];                                                            \
  for (int i = 1; i < 2 * ROWS; ++i) sum = ADD(sum, acc[i]);                   \
  memcpy(out, &sum, sizeof(out));                                              \
  sink = out[0];                                                               \
  return best;

static double now(void);

#ifdef __AVX512F__
static double tile512(void) {
#define ADD _mm512_add_ps
  TILE_BODY(__m512, 16, 12, _mm512_load_ps, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_setzero_ps)
#undef ADD
}
#endif

static double tile256(void) {
#define ADD _mm256_add_ps
  TILE_BODY(__m256, 8, 6, _mm256_load_ps, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_setzero_ps)
#undef ADD
}

/* fma_peak WIDTH THREADS ITERS: prints GFLOP/s of all threads together.
 * fma_peak tile WIDTH ITERS: the tile's GFLOP/s on one thread. */
int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[1], "tile") == 0) {
    width = atoi(argv[2]);
    iters = atol(argv[3]);
#ifdef __AVX512F__
    if (width == 512) {
      printf("%.2f\n", tile512() / 1e9);
      return 0;
    }
#else
    if (width == 512) {
      printf("unsupported\n");
      return 0;
    }
#endif
    printf("%.2f\n", tile256() / 1e9);
    return 0;
  }
  if (argc != 4) return 2;
  width = atoi(argv[1]);
  int threads = atoi(argv[2]);
  iters = atol(argv[3]);
#ifndef __AVX512F__
  if (width == 512) {
    printf("unsupported\n");
    return 0;
  }
#endif
  pthread_t tid[64];
  double best = 0;
  for (int rep = 0; rep < 20; ++rep) {
    double t0 = now();
    for (int t = 0; t < threads; ++t) pthread_create(&tid[t], NULL, worker, NULL);
    for (int t = 0; t < threads; ++t) pthread_join(tid[t], NULL);
    double s = now() - t0;
    double flops = 2.0 * (width / 32) * CHAINS * (double)iters * threads;
    if (flops / s > best) best = flops / s;
  }
  printf("%.2f\n", best / 1e9);
  return 0;
}
