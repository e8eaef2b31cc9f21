// The normalization operators: shape rules and references. Each normalizes
// rows of a row-major view of X (mean and variance over a row, then an affine
// map), so they share one reference, normalizeRows.
//   LayerNormalization   rows = X.dims[:axis], a row = X.dims[axis:]; scale and
//                        bias per row element; also outputs the row statistics
//   RMSNormalization     same rows, no centering: x / sqrt(mean(x^2) + eps)
//   InstanceNormalization rows = (n, c), a row = the spatial dims
//   GroupNormalization   rows = (n, g), a row = C / G channels x spatial dims
//   MeanVarianceNormalization  rows = X.dims[:axis]: (x - mean) / (std + 1e-9)
// These take f32, f16 or bf16 (statistics in f32, LayerNormalization's Mean
// and InvStdDev outputs f32), and so does LpNormalization, which scales by a
// norm along one axis; LRN, by a norm across channels, is f32.
#include <algorithm>
#include <cmath>
#include <vector>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/float_elements.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

OpSchema makeLogSoftmaxSchema();       // softmax.cc
OpSchema makeHardmaxSchema();          // softmax.cc
OpSchema makeAttentionSchema();        // attention.cc
OpSchema makeAttentionScoresSchema();  // attention.cc
OpSchema makeRotaryEmbeddingSchema();  // rotary_embedding.cc

namespace {

// The affine map after normalization of element `k` of row `row`:
// y = normalized * scale + bias.
struct Affine {
  double scale = 1, bias = 0;
};

struct RowNorm {
  int64_t rows = 0, len = 0;
  bool center = true;           // subtract the mean (all but RMSNormalization)
  double epsilon = 0;           // added to the variance under the square root...
  bool eps_after_sqrt = false;  // ...or to the standard deviation (MVN)
};

// Double-precision two-pass reference. `affine(row, k)` gives the map of
// element k of a row; mean and inv_std (when not null) get one value per row.
template <typename AffineFn>
void normalizeRows(const RowNorm& r, DType dtype, const void* x, void* y, AffineFn affine,
                   float* mean_out = nullptr, float* inv_std_out = nullptr) {
  std::vector<double> xr(static_cast<size_t>(r.len));
  for (int64_t row = 0; row < r.rows; ++row) {
    for (int64_t k = 0; k < r.len; ++k) xr[k] = loadFloat(dtype, x, row * r.len + k);
    double mean = 0;
    if (r.center) {
      for (int64_t k = 0; k < r.len; ++k) mean += xr[k];
      mean /= static_cast<double>(r.len);
    }
    double var = 0;
    for (int64_t k = 0; k < r.len; ++k) var += (xr[k] - mean) * (xr[k] - mean);
    var /= static_cast<double>(r.len);
    double inv_std =
        r.eps_after_sqrt ? 1.0 / (std::sqrt(var) + r.epsilon) : 1.0 / std::sqrt(var + r.epsilon);
    for (int64_t k = 0; k < r.len; ++k) {
      Affine a = affine(row, k);
      storeFloat(dtype, y, row * r.len + k, (xr[k] - mean) * inv_std * a.scale + a.bias);
    }
    if (mean_out) mean_out[row] = static_cast<float>(mean);
    if (inv_std_out) inv_std_out[row] = static_cast<float>(inv_std);
  }
}

double epsilonAttr(const Node& node) {
  double eps = node.f("epsilon");
  if (!(eps >= 0) || !std::isfinite(eps))
    failNode(node, "attribute 'epsilon' must be finite and >= 0, got " + std::to_string(eps));
  return eps;
}

int64_t axisAttr(const Node& node, const TensorType& x) {
  int64_t axis = node.i("axis");
  if (axis < 0 || axis >= static_cast<int64_t>(x.rank()))
    failNode(node, "attribute 'axis' is " + std::to_string(axis) + ", must be in [0, " +
                       std::to_string(x.rank()) + ") for " + x.str());
  return axis;
}

// Operand `index` must have exactly `dims` (named `operand` in the error).
void requireDims(const Node& node, size_t index, const char* operand,
                 const std::vector<int64_t>& dims) {
  const TensorType& t = inputType(node, index);
  if (t.dims != dims)
    failNode(node, std::string(operand) + " must be " + dimsStr(dims) + " for X " +
                       inputType(node, 0).str() + ", got " + t.str());
}

const float* f32In(const std::vector<const void*>& in, size_t i) {
  return i < in.size() ? static_cast<const float*>(in[i]) : nullptr;
}

// Operand i of a float dtype as doubles; absent() when the operand is.
struct FloatIn {
  DType dtype;
  const void* data;
  bool absent() const { return data == nullptr; }
  double operator[](int64_t i) const { return loadFloat(dtype, data, i); }
};

FloatIn floatIn(const Node& node, const std::vector<const void*>& in, size_t i) {
  if (i >= in.size() || !in[i] || !node.inputs[i]) return {DType::F32, nullptr};
  return {node.inputs[i]->type.dtype, in[i]};
}

// The row normalizations take f32, f16 or bf16 (computed in f32), every
// float operand of X's dtype.
void requireNormFloat(const Node& node) {
  DType t = inputType(node, 0).dtype;
  if (t != DType::F32 && t != DType::F16 && t != DType::BF16)
    failNode(node, "X must be f32, f16 or bf16, got " + inputType(node, 0).str());
  for (size_t i = 1; i < node.inputs.size(); ++i)
    if (node.inputs[i] && node.inputs[i]->type.dtype != t)
      failNode(node, "operand " + std::to_string(i) + " '" + node.inputs[i]->name + "' is " +
                         node.inputs[i]->type.str() + ", X is " + inputType(node, 0).str());
}

// ---- LayerNormalization, RMSNormalization ----

// Scale (and B) must broadcast to a row, X.dims[axis:], aligned at the end.
void checkRowAffine(const Node& node, const TensorType& x, int64_t axis, bool with_bias) {
  requireNormFloat(node);
  std::vector<int64_t> row_dims(x.dims.begin() + axis, x.dims.end());
  for (size_t i = 1; i < (with_bias ? 3 : 2) && i < node.inputs.size(); ++i) {
    if (!node.inputs[i]) continue;
    const TensorType& t = node.inputs[i]->type;
    bool ok = t.rank() <= row_dims.size();
    for (size_t d = 0; ok && d < t.rank(); ++d) {
      int64_t want = row_dims[row_dims.size() - t.rank() + d];
      ok = t.dims[d] == want || t.dims[d] == 1;
    }
    if (!ok)
      failNode(node, std::string(i == 1 ? "Scale" : "B") + " " + t.str() +
                         " does not broadcast to the normalized dims " + dimsStr(row_dims) +
                         " of X " + x.str());
  }
}

// For each element of a row (X.dims[axis:]), its element in `operand`, which
// broadcasts to the row.
std::vector<int64_t> rowBroadcastIndex(const std::vector<int64_t>& x_dims, size_t axis,
                                       const std::vector<int64_t>& operand) {
  std::vector<int64_t> row(x_dims.begin() + static_cast<std::ptrdiff_t>(axis), x_dims.end());
  std::vector<int64_t> index(static_cast<size_t>(product(row, 0, row.size())));
  size_t lead = row.size() - operand.size();
  for (size_t k = 0; k < index.size(); ++k) {
    int64_t rest = static_cast<int64_t>(k), at = 0, stride = 1;
    for (size_t d = row.size(); d-- > 0;) {
      int64_t coord = rest % row[d];
      rest /= row[d];
      if (d >= lead && operand[d - lead] != 1) {
        at += coord * stride;
        stride *= operand[d - lead];
      }
    }
    index[k] = at;
  }
  return index;
}

OpSchema makeLayerNormalizationSchema() {
  OpSchema schema;
  schema.name = "LayerNormalization";
  schema.min_inputs = 2;
  schema.max_inputs = 3;
  schema.num_outputs = 3;
  schema.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    int64_t axis = axisAttr(node, x);
    checkRowAffine(node, x, axis, true);
    epsilonAttr(node);
    TensorType stats{DType::F32, x.dims};  // ONNX's stash_type 1: float
    for (size_t d = static_cast<size_t>(axis); d < x.rank(); ++d) stats.dims[d] = 1;
    return std::vector<TensorType>{x, stats, stats};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const std::vector<int64_t>& dims = node.inputs[0]->type.dims;
    auto axis = static_cast<size_t>(node.i("axis"));
    RowNorm r{product(dims, 0, axis), product(dims, axis, dims.size()), true, node.f("epsilon")};
    FloatIn scale = floatIn(node, in, 1);
    FloatIn bias = floatIn(node, in, 2);
    std::vector<int64_t> si = rowBroadcastIndex(dims, axis, node.inputs[1]->type.dims);
    std::vector<int64_t> bi = !bias.absent()
                                  ? rowBroadcastIndex(dims, axis, node.inputs[2]->type.dims)
                                  : std::vector<int64_t>();
    normalizeRows(
        r, node.inputs[0]->type.dtype, in[0], out[0],
        [&](int64_t, int64_t k) {
          return Affine{scale[si[k]], bias.absent() ? 0.0 : bias[bi[k]]};
        },
        static_cast<float*>(out[1]), static_cast<float*>(out[2]));
  };
  return schema;
}

OpSchema makeRMSNormalizationSchema() {
  OpSchema schema;
  schema.name = "RMSNormalization";
  schema.min_inputs = schema.max_inputs = 2;
  schema.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    checkRowAffine(node, x, axisAttr(node, x), false);
    epsilonAttr(node);
    return std::vector<TensorType>{x};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const std::vector<int64_t>& dims = node.inputs[0]->type.dims;
    auto axis = static_cast<size_t>(node.i("axis"));
    RowNorm r{product(dims, 0, axis), product(dims, axis, dims.size()), false, node.f("epsilon")};
    FloatIn scale = floatIn(node, in, 1);
    std::vector<int64_t> si = rowBroadcastIndex(dims, axis, node.inputs[1]->type.dims);
    normalizeRows(r, node.inputs[0]->type.dtype, in[0], out[0], [&](int64_t, int64_t k) {
      return Affine{scale[si[k]], 0.0};
    });
  };
  return schema;
}

// ---- InstanceNormalization, GroupNormalization ----

// X [N, C, spatial...] with scale and B [C].
void checkChannelAffine(const Node& node) {
  const TensorType& x = inputType(node, 0);
  requireNormFloat(node);
  if (x.rank() < 2) failNode(node, "X must have rank >= 2 ([N, C, ...]), got " + x.str());
  requireDims(node, 1, "scale", {x.dims[1]});
  requireDims(node, 2, "B", {x.dims[1]});
  epsilonAttr(node);
}

// GroupNormalization's scale and B: both [C] or both [num_groups].
int64_t groupsAttr(const Node& node) {
  const TensorType& x = inputType(node, 0);
  requireNormFloat(node);
  if (x.rank() < 2) failNode(node, "X must have rank >= 2 ([N, C, ...]), got " + x.str());
  int64_t groups = node.i("num_groups");
  if (groups < 1 || x.dims[1] % groups != 0)
    failNode(node, "attribute 'num_groups' is " + std::to_string(groups) +
                       ", must be >= 1 and divide the channel count " + std::to_string(x.dims[1]));
  const TensorType& scale = inputType(node, 1);
  if (scale.dims != std::vector<int64_t>{x.dims[1]} && scale.dims != std::vector<int64_t>{groups})
    failNode(node, "scale must be [C] = [" + std::to_string(x.dims[1]) + "] or [num_groups] = [" +
                       std::to_string(groups) + "], got " + scale.str());
  requireDims(node, 2, "B", scale.dims);
  epsilonAttr(node);
  return groups;
}

OpSchema makeInstanceNormalizationSchema() {
  OpSchema schema;
  schema.name = "InstanceNormalization";
  schema.min_inputs = schema.max_inputs = 3;
  schema.infer = [](const Node& node) {
    checkChannelAffine(node);
    return std::vector<TensorType>{inputType(node, 0)};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const std::vector<int64_t>& dims = node.inputs[0]->type.dims;
    int64_t channels = dims[1];
    RowNorm r{dims[0] * channels, product(dims, 2, dims.size()), true, node.f("epsilon")};
    FloatIn scale = floatIn(node, in, 1);
    FloatIn bias = floatIn(node, in, 2);
    normalizeRows(r, node.inputs[0]->type.dtype, in[0], out[0], [&](int64_t row, int64_t) {
      return Affine{scale[row % channels], bias[row % channels]};
    });
  };
  return schema;
}

OpSchema makeGroupNormalizationSchema() {
  OpSchema schema;
  schema.name = "GroupNormalization";
  schema.min_inputs = schema.max_inputs = 3;
  schema.infer = [](const Node& node) {
    groupsAttr(node);
    return std::vector<TensorType>{inputType(node, 0)};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const std::vector<int64_t>& dims = node.inputs[0]->type.dims;
    int64_t groups = node.i("num_groups");
    int64_t per_group = dims[1] / groups;
    int64_t spatial = product(dims, 2, dims.size());
    RowNorm r{dims[0] * groups, per_group * spatial, true, node.f("epsilon")};
    FloatIn scale = floatIn(node, in, 1);
    FloatIn bias = floatIn(node, in, 2);
    bool per_channel = node.inputs[1]->type.dims[0] == dims[1];
    normalizeRows(r, node.inputs[0]->type.dtype, in[0], out[0], [&](int64_t row, int64_t k) {
      int64_t c = per_channel ? (row % groups) * per_group + k / spatial : row % groups;
      return Affine{scale[c], bias[c]};
    });
  };
  return schema;
}

// ---- MeanVarianceNormalization ----

OpSchema makeMeanVarianceNormalizationSchema() {
  OpSchema schema;
  schema.name = "MeanVarianceNormalization";
  schema.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    requireNormFloat(node);
    axisAttr(node, x);
    return std::vector<TensorType>{x};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const std::vector<int64_t>& dims = node.inputs[0]->type.dims;
    auto axis = static_cast<size_t>(node.i("axis"));
    RowNorm r{product(dims, 0, axis), product(dims, axis, dims.size()), true, 1e-9, true};
    normalizeRows(r, node.inputs[0]->type.dtype, in[0], out[0],
                  [](int64_t, int64_t) { return Affine{}; });
  };
  return schema;
}

// ---- LpNormalization, LRN ----

OpSchema makeLpNormalizationSchema() {
  OpSchema schema;
  schema.name = "LpNormalization";
  schema.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    requireNormFloat(node);
    axisAttr(node, x);
    int64_t p = node.i("p");
    if (p != 1 && p != 2) failNode(node, "attribute 'p' must be 1 or 2, got " + std::to_string(p));
    return std::vector<TensorType>{x};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const std::vector<int64_t>& dims = node.inputs[0]->type.dims;
    auto axis = static_cast<size_t>(node.i("axis"));
    int64_t outer = product(dims, 0, axis), n = dims[axis];
    int64_t inner = product(dims, axis + 1, dims.size());
    bool l1 = node.i("p") == 1;
    FloatIn x = floatIn(node, in, 0);
    DType t = node.inputs[0]->type.dtype;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t base = o * n * inner + i;
        double norm = 0;
        for (int64_t a = 0; a < n; ++a) {
          double v = x[base + a * inner];
          norm += l1 ? std::fabs(v) : v * v;
        }
        if (!l1) norm = std::sqrt(norm);
        // A zero norm means a zero vector, which stays zero.
        for (int64_t a = 0; a < n; ++a)
          storeFloat(t, out[0], base + a * inner, norm == 0 ? 0.0 : x[base + a * inner] / norm);
      }
  };
  return schema;
}

// y = x / (bias + alpha / size * sum of x^2 over the channel window)^beta,
// the window of channel c being [c - (size - 1) / 2, c + size / 2] clipped.
OpSchema makeLRNSchema() {
  OpSchema schema;
  schema.name = "LRN";
  schema.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    requireF32(node);
    if (x.rank() < 2) failNode(node, "X must have rank >= 2 ([N, C, ...]), got " + x.str());
    int64_t size = node.i("size");
    if (size < 1 || size > (int64_t{1} << 30))
      failNode(node, "attribute 'size' must be in [1, 2^30], got " + std::to_string(size));
    for (const char* key : {"alpha", "beta", "bias"})
      if (!std::isfinite(node.f(key)))
        failNode(node, std::string("attribute '") + key + "' must be finite");
    return std::vector<TensorType>{x};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const std::vector<int64_t>& dims = node.inputs[0]->type.dims;
    int64_t channels = dims[1], spatial = product(dims, 2, dims.size());
    int64_t size = node.i("size");
    double alpha = node.f("alpha"), beta = node.f("beta"), bias = node.f("bias");
    const float* x = f32In(in, 0);
    auto* y = static_cast<float*>(out[0]);
    for (int64_t n = 0; n < dims[0]; ++n)
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t s = 0; s < spatial; ++s) {
          double sum = 0;
          int64_t lo = std::max<int64_t>(0, c - (size - 1) / 2);
          int64_t hi = std::min<int64_t>(channels - 1, c + size / 2);
          for (int64_t k = lo; k <= hi; ++k) {
            double v = x[(n * channels + k) * spatial + s];
            sum += v * v;
          }
          int64_t at = (n * channels + c) * spatial + s;
          y[at] = static_cast<float>(x[at] / std::pow(bias + alpha / size * sum, beta));
        }
  };
  return schema;
}

}  // namespace

std::vector<OpSchema> normalizationSchemas() {
  return {makeLayerNormalizationSchema(),
          makeRMSNormalizationSchema(),
          makeInstanceNormalizationSchema(),
          makeGroupNormalizationSchema(),
          makeMeanVarianceNormalizationSchema(),
          makeLpNormalizationSchema(),
          makeLRNSchema(),
          makeLogSoftmaxSchema(),
          makeHardmaxSchema(),
          makeAttentionSchema(),
          makeAttentionScoresSchema(),
          makeRotaryEmbeddingSchema()};
}

}  // namespace nanoc
