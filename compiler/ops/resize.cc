// Resize: nearest, linear and cubic interpolation of every axis of X onto
// the output dims `sizes`, with ONNX's coordinate transformations, nearest
// rounding modes, cubic coefficient, exclude_outside, antialiasing and
// tf_crop_and_resize's roi and extrapolation value. Separable: the taps of
// each axis are computed once (resize.h) and the output is the sum over the
// product of the axes' taps.
#include "compiler/ops/resize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {
namespace {

// Entries in one axis's tap tables, beyond which a model is refused (a
// 1/1000 antialiased downscale of a large axis would otherwise take gigabytes).
constexpr int64_t kMaxAxisTaps = int64_t{1} << 24;

bool oneOf(const std::string& s, std::initializer_list<const char*> options) {
  for (const char* o : options)
    if (s == o) return true;
  return false;
}

bool isClose(double a, double b) {
  return std::fabs(a - b) <= std::max(1e-9 * std::max(std::fabs(a), std::fabs(b)), 0.0);
}

std::vector<double> nearestCoeffs(double ratio, const std::string& mode) {
  if (ratio == std::floor(ratio)) return {0, 1};
  if (mode == "round_prefer_floor") return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
  if (mode == "round_prefer_ceil") return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
  if (mode == "floor") return {1, 0};
  return {0, 1};  // ceil
}

std::vector<double> cubicCoeffs(double r, double A) {
  double s = 1 - r;
  return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
          ((A + 2) * r - (A + 3)) * r * r + 1, ((A + 2) * s - (A + 3)) * s * s + 1,
          ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A};
}

std::vector<double> normalized(std::vector<double> c) {
  double sum = 0;
  for (double v : c) sum += v;
  for (double& v : c) v /= sum;
  return c;
}

std::vector<double> cubicCoeffsAntialias(double ratio, double scale, double A) {
  scale = std::min(scale, 1.0);
  auto coeff = [&](double x) {
    x = std::fabs(x);
    double x2 = x * x, x3 = x * x2;
    if (x <= 1) return (A + 2) * x3 - (A + 3) * x2 + 1;
    if (x < 2) return A * x3 - 5 * A * x2 + 8 * A * x - 4 * A;
    return 0.0;
  };
  auto start = static_cast<int64_t>(std::floor(-2 / scale) + 1);
  std::vector<double> c;
  for (int64_t i = start; i < 2 - start; ++i) c.push_back(coeff(scale * (i - ratio)));
  return normalized(std::move(c));
}

std::vector<double> linearCoeffsAntialias(double ratio, double scale) {
  scale = std::min(scale, 1.0);
  auto start = static_cast<int64_t>(std::floor(-1 / scale) + 1);
  int64_t footprint = 2 - 2 * start;
  std::vector<double> c;
  for (int64_t i = start; i < start + footprint; ++i)
    c.push_back(std::clamp(1 - std::fabs((i - ratio) * scale), 0.0, 1.0));
  return normalized(std::move(c));
}

// The number of taps per output position, which depends only on the mode and
// the scale (the same count the reference's coefficient functions return).
int64_t tapCount(const ResizeParams& p, double scale) {
  if (p.mode == "nearest") return 2;
  if (!p.antialias) return p.mode == "linear" ? 2 : 4;
  double s = std::min(scale, 1.0);
  auto start = static_cast<int64_t>(std::floor((p.mode == "linear" ? -1 : -2) / s) + 1);
  return 2 - 2 * start;
}

std::vector<double> coeffs(const ResizeParams& p, double ratio, double scale) {
  if (p.mode == "nearest") return nearestCoeffs(ratio, p.nearest_mode);
  if (p.mode == "linear")
    return p.antialias ? linearCoeffsAntialias(ratio, scale)
                       : std::vector<double>{1 - ratio, ratio};
  return p.antialias ? cubicCoeffsAntialias(ratio, scale, p.cubic_coeff_a)
                     : cubicCoeffs(ratio, p.cubic_coeff_a);
}

}  // namespace

ResizeParams resizeParams(const Node& node) {
  const TensorType& x = inputType(node, 0);
  ResizeParams p;
  p.mode = node.s("mode");
  p.coordinate_transformation_mode = node.s("coordinate_transformation_mode");
  p.nearest_mode = node.s("nearest_mode");
  p.cubic_coeff_a = node.f("cubic_coeff_a");
  p.exclude_outside = boolAttr(node, "exclude_outside") != 0;
  p.extrapolation_value = node.f("extrapolation_value");
  p.antialias = boolAttr(node, "antialias") != 0;
  p.sizes = node.ints("sizes");
  p.scales = node.floats("scales");
  p.roi = node.floats("roi");
  if (!oneOf(p.mode, {"nearest", "linear", "cubic"}))
    failNode(node, "mode '" + p.mode + "' is not nearest, linear or cubic");
  if (!oneOf(p.coordinate_transformation_mode,
             {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
              "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"}))
    failNode(node, "coordinate_transformation_mode '" + p.coordinate_transformation_mode +
                       "' is unknown");
  if (!oneOf(p.nearest_mode, {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}))
    failNode(node, "nearest_mode '" + p.nearest_mode + "' is unknown");
  if (p.antialias && p.mode == "nearest")
    failNode(node, "antialias applies to linear and cubic modes only");
  if (x.rank() < 1) failNode(node, "X must have rank >= 1, got " + x.str());
  if (p.mode != "nearest" && x.dtype != DType::F32 && x.dtype != DType::F64)
    failNode(node, "mode " + p.mode + " supports f32 and f64 only, X is " + x.str());
  if (p.sizes.size() != x.rank() || p.scales.size() != x.rank() || p.roi.size() != 2 * x.rank())
    failNode(node, "sizes, scales and roi must have " + std::to_string(x.rank()) + ", " +
                       std::to_string(x.rank()) + " and " + std::to_string(2 * x.rank()) +
                       " entries for X " + x.str());
  for (size_t a = 0; a < x.rank(); ++a) {
    if (p.sizes[a] < 0 || p.sizes[a] > (int64_t{1} << 40))
      failNode(node, "sizes " + dimsStr(p.sizes) + " has an out-of-range entry");
    if (!(p.scales[a] > 0) || !std::isfinite(p.scales[a]))
      failNode(node, "scales must be positive and finite");
    if (!std::isfinite(p.roi[a]) || !std::isfinite(p.roi[a + x.rank()]))
      failNode(node, "roi must be finite");
  }
  return p;
}

ResizeAxis resizeAxis(const Node& node, const ResizeParams& p, size_t axis, int64_t in) {
  const size_t rank = p.sizes.size();
  const int64_t out = p.sizes[axis];
  const double scale = p.scales[axis];
  const double roi0 = p.roi[axis], roi1 = p.roi[axis + rank];
  ResizeAxis r;
  // As the reference does, an axis that keeps its size at scale 1 (with the
  // whole roi) is left alone.
  if (isClose(scale, 1.0) && out == in && isClose(roi0, 0.0) && isClose(roi1, 1.0)) {
    r.identity = true;
    return r;
  }
  if (out == 0) return r;
  if (in == 0)
    failNode(node,
             "cannot resize an empty axis " + std::to_string(axis) + " to " + std::to_string(out));
  const std::string& ctm = p.coordinate_transformation_mode;
  const double out_width = scale * static_cast<double>(in);
  const int64_t n = tapCount(p, scale);
  if (n > kMaxAxisTaps / std::max<int64_t>(out, 1))
    failNode(node, "axis " + std::to_string(axis) + " would need " + std::to_string(out) +
                       " output positions x " + std::to_string(n) + " taps, over the limit of " +
                       std::to_string(kMaxAxisTaps) + " table entries");
  const bool nearest = p.mode == "nearest";
  r.taps = nearest ? 1 : n;
  r.index.resize(static_cast<size_t>(out * r.taps));
  r.weight.resize(r.index.size());
  const double in_d = static_cast<double>(in);
  for (int64_t o = 0; o < out; ++o) {
    const double y = static_cast<double>(o);
    double x = 0;
    bool outside = false;
    if (ctm == "align_corners") {
      x = out_width == 1 ? 0.0 : y * (in_d - 1) / (out_width - 1);
    } else if (ctm == "asymmetric") {
      x = y / scale;
    } else if (ctm == "tf_crop_and_resize") {
      x = out_width == 1 ? (roi1 - roi0) * (in_d - 1) / 2
                         : y * (roi1 - roi0) * (in_d - 1) / (out_width - 1);
      x = x + roi0 * (in_d - 1);
      outside = x < 0 || x > in_d - 1;
    } else if (ctm == "pytorch_half_pixel") {
      x = out_width == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
    } else if (ctm == "half_pixel") {
      x = (y + 0.5) / scale - 0.5;
    } else if (ctm == "tf_half_pixel_for_nn") {
      x = (y + 0.5) / scale;
    } else {  // half_pixel_symmetric
      double adjustment = static_cast<double>(out) / out_width;
      double center = in_d / 2;
      double offset = center * (1 - adjustment);
      x = offset + (y + 0.5) / scale - 0.5;
    }
    if (!std::isfinite(x) || std::fabs(x) > 1e15)
      failNode(node, "the coordinate transformation of axis " + std::to_string(axis) +
                         " is out of range");
    if (outside) {
      if (r.outside.empty()) r.outside.assign(static_cast<size_t>(out), 0);
      r.outside[static_cast<size_t>(o)] = 1;
    }
    // ratio in (0, 1]: the pixel left of x is preferred.
    double x_floor = std::floor(x);
    double ratio = x == x_floor ? 1.0 : x - x_floor;
    std::vector<double> c = coeffs(p, ratio, scale);
    // The n input positions nearest x, ties to the smaller, in the input
    // padded by ceil(n / 2) on each side (edge padding: clamped below).
    int64_t pad = (n + 1) / 2;
    double xp = x + static_cast<double>(pad);
    double p_floor = std::floor(xp);
    double frac = xp - p_floor;
    auto start = static_cast<int64_t>(p_floor);
    if (n % 2 == 0)
      start += frac == 0 ? -(n / 2) : -(n / 2) + 1;
    else
      start += frac <= 0.5 ? -((n - 1) / 2) : -((n - 1) / 2) + 1;
    start -= pad;
    if (p.exclude_outside) {
      double sum = 0;
      for (int64_t t = 0; t < n; ++t) {
        int64_t i = start + t;
        if (i < 0 || i >= in) c[static_cast<size_t>(t)] = 0;
        sum += c[static_cast<size_t>(t)];
      }
      if (sum == 0) sum = 1;
      for (double& v : c) v /= sum;
    }
    for (int64_t t = 0; t < n; ++t) {
      int64_t i = std::clamp<int64_t>(start + t, 0, in - 1);
      double w = c[static_cast<size_t>(t)];
      if (nearest) {
        // One-hot coefficients: keep the chosen position only.
        if (w != 0) r.index[static_cast<size_t>(o)] = i;
        r.weight[static_cast<size_t>(o)] = 1;
        continue;
      }
      r.index[static_cast<size_t>(o * n + t)] = i;
      r.weight[static_cast<size_t>(o * n + t)] = w;
    }
  }
  return r;
}

namespace {

std::vector<TensorType> inferResize(const Node& node) {
  ResizeParams p = resizeParams(node);
  const TensorType& x = node.inputs[0]->type;
  for (size_t a = 0; a < x.rank(); ++a) resizeAxis(node, p, a, x.dims[a]);
  return {{x.dtype, p.sizes}};
}

// y = sum over the product of the axes' taps of their weights times x.
void referenceResize(const Node& node, const std::vector<const void*>& in,
                     const std::vector<void*>& out) {
  ResizeParams p = resizeParams(node);
  const TensorType& xt = node.inputs[0]->type;
  const size_t rank = xt.rank();
  std::vector<ResizeAxis> axes;
  for (size_t a = 0; a < rank; ++a) axes.push_back(resizeAxis(node, p, a, xt.dims[a]));
  std::vector<int64_t> x_strides(rank, 1);
  for (size_t a = rank - 1; a > 0; --a) x_strides[a - 1] = x_strides[a] * xt.dims[a];
  const int64_t total = product(p.sizes, 0, rank);
  const size_t elem = dtypeSize(xt.dtype);
  const auto* x = static_cast<const uint8_t*>(in[0]);
  auto* y = static_cast<uint8_t*>(out[0]);
  auto load = [&](int64_t i) {
    if (xt.dtype == DType::F64) return reinterpret_cast<const double*>(x)[i];
    return static_cast<double>(reinterpret_cast<const float*>(x)[i]);
  };
  std::vector<int64_t> o(rank, 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t rem = flat;
    for (size_t a = rank; a-- > 0;) {
      o[a] = rem % p.sizes[a];
      rem /= p.sizes[a];
    }
    bool outside = false;
    for (size_t a = 0; a < rank; ++a)
      if (!axes[a].outside.empty() && axes[a].outside[static_cast<size_t>(o[a])]) outside = true;
    if (p.mode == "nearest") {
      int64_t src = 0;
      for (size_t a = 0; a < rank; ++a)
        src += (axes[a].identity ? o[a] : axes[a].index[static_cast<size_t>(o[a])]) * x_strides[a];
      if (outside) {
        // Only float dtypes can hold an arbitrary extrapolation value.
        if (xt.dtype == DType::F64)
          reinterpret_cast<double*>(y)[flat] = p.extrapolation_value;
        else if (xt.dtype == DType::F32)
          reinterpret_cast<float*>(y)[flat] = static_cast<float>(p.extrapolation_value);
        else
          std::memset(y + flat * elem, 0, elem);
      } else {
        std::memcpy(y + flat * elem, x + src * static_cast<int64_t>(elem), elem);
      }
      continue;
    }
    double acc = 0;
    if (!outside) {
      // Odometer over the taps of every axis.
      std::vector<int64_t> t(rank, 0);
      for (;;) {
        double w = 1;
        int64_t src = 0;
        for (size_t a = 0; a < rank; ++a) {
          const ResizeAxis& ax = axes[a];
          if (ax.identity) {
            src += o[a] * x_strides[a];
            continue;
          }
          auto k = static_cast<size_t>(o[a] * ax.taps + t[a]);
          src += ax.index[k] * x_strides[a];
          w *= ax.weight[k];
        }
        acc += w * load(src);
        bool done = true;
        for (size_t a = rank; a-- > 0;) {
          if (++t[a] < (axes[a].identity ? 1 : axes[a].taps)) {
            done = false;
            break;
          }
          t[a] = 0;
        }
        if (done) break;
      }
    } else {
      acc = p.extrapolation_value;
    }
    if (xt.dtype == DType::F64)
      reinterpret_cast<double*>(y)[flat] = acc;
    else
      reinterpret_cast<float*>(y)[flat] = static_cast<float>(acc);
  }
}

}  // namespace

OpSchema makeResizeSchema() {
  OpSchema schema;
  schema.name = "Resize";
  schema.infer = inferResize;
  schema.reference = referenceResize;
  return schema;
}

}  // namespace nanoc
