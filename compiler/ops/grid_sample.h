// GridSample's canonical attributes and the per-axis sampling rule, shared by
// the shape rule, the host reference and the CPU lowering. The rule follows
// onnx/reference/ops/op_grid_sample.py (PyTorch's grid_sampler): a grid value
// g in [-1, 1] is denormalized onto the axis, rounded to even in nearest mode,
// moved into the padding's borders only when outside them, and then read
// through 1 (nearest), 2 (linear) or 4 (cubic, Keys a = -0.75) taps whose
// indices are padded again (zeros: outside reads 0; border: clamped;
// reflection: mirrored).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "compiler/ir/graph.h"

namespace nanoc {

enum class GridMode { Nearest, Linear, Cubic };
enum class GridPadding { Zeros, Border, Reflection };

struct GridSampleParams {
  GridMode mode = GridMode::Linear;
  GridPadding padding = GridPadding::Zeros;
  bool align_corners = false;
  size_t spatial = 2;  // spatial rank r: X is [N, C, D1..Dr], grid [N, O1..Or, r]

  int64_t taps() const { return mode == GridMode::Nearest ? 1 : mode == GridMode::Linear ? 2 : 4; }
};

// Reads and validates the attributes and operand types; fails naming the node.
GridSampleParams gridSampleParams(const Node& node);

// The scalar rule, in the compute type T (float for f32 and narrower, double
// for f64), exactly as the lowering emits it.
namespace grid_sample {

template <typename T>
T denormalize(T g, int64_t d, bool align_corners) {
  T len = static_cast<T>(d);
  return align_corners ? (g + 1) / 2 * (len - 1) : ((g + 1) * len - 1) / 2;
}

// Reflects x into [lo, hi] by its nearer border, repeatedly.
template <typename T>
T reflect(T x, T lo, T hi) {
  T range = hi - lo;
  if (!(range > 0)) return lo;
  if (x < lo || x > hi) {
    bool below = x < lo;
    T dx = below ? lo - x : x - hi;
    T n = std::trunc(dx / range);
    T r = dx - n * range;
    T half = n * T(0.5);
    bool even = std::floor(half) == half;
    return below == even ? lo + r : hi - r;
  }
  return x;
}

// Round half to even, as np.rint.
template <typename T>
T roundEven(T x) {
  T r = std::floor(x + T(0.5));
  if (r - x == T(0.5)) {
    T half = r * T(0.5);
    if (std::floor(half) != half) r -= 1;
  }
  return r;
}

// The sampling coordinate of one axis (size d) for grid value g: denormalized,
// rounded in nearest mode, moved inside the borders when outside them.
template <typename T>
T coordinate(const GridSampleParams& p, T g, int64_t d) {
  T x = denormalize(g, d, p.align_corners);
  if (p.mode == GridMode::Nearest) x = roundEven(x);
  T lo = p.align_corners ? T(0) : T(-0.5);
  T hi = p.align_corners ? static_cast<T>(d - 1) : static_cast<T>(d) - T(0.5);
  if (x < lo || x > hi) {
    if (p.padding == GridPadding::Border)
      x = std::fmin(std::fmax(x, T(0)), static_cast<T>(d - 1));
    else if (p.padding == GridPadding::Reflection)
      x = reflect(x, lo, hi);
  }
  return x;
}

// Keys cubic coefficients (a = -0.75) for the fraction t in [0, 1).
template <typename T>
void cubicCoeffs(T t, T* c) {
  const T a = T(-0.75);
  T x = t + 1;
  c[0] = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  c[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  T s = 1 - t;
  c[2] = ((a + 2) * s - (a + 3)) * s * s + 1;
  x = 2 - t;
  c[3] = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}

// The reflection of an integer index into [0, d): period 2d about -0.5 and
// d - 0.5, or period 2(d - 1) about 0 and d - 1 with align_corners.
inline int64_t reflectIndex(int64_t i, int64_t d, bool align_corners) {
  int64_t period = align_corners ? 2 * (d - 1) : 2 * d;
  if (period <= 0) return 0;
  int64_t m = i % period;
  if (m < 0) m += period;
  if (m >= d) m = period - 1 - m + (align_corners ? 1 : 0);
  return m;
}

// Where the index may be outside [0, d): the padded index and whether it
// reads X at all (zeros padding reads 0 outside).
inline int64_t padIndex(const GridSampleParams& p, int64_t i, int64_t d, bool* inside) {
  *inside = true;
  if (p.padding == GridPadding::Zeros) {
    *inside = i >= 0 && i < d;
    return *inside ? i : 0;
  }
  if (p.padding == GridPadding::Border) return i < 0 ? 0 : i >= d ? d - 1 : i;
  return reflectIndex(i, d, p.align_corners);
}

}  // namespace grid_sample
}  // namespace nanoc
