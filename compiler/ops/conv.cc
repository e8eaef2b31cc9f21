// Conv: NCHW-style cross-correlation over any number of spatial dims, with
// groups, explicit pads (begins, then ends), strides and dilations.
// X [N, C, in...], W [M, C/group, kernel...], optional B [M].
#include "compiler/ops/conv.h"

#include "compiler/ir/op_registry.h"
#include "compiler/ops/epilogue.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

std::vector<int64_t> ConvShape::outputDims() const {
  std::vector<int64_t> dims = {n, m};
  dims.insert(dims.end(), out.begin(), out.end());
  return dims;
}

ConvShape decodeConvWindow(const Node& node, bool transpose) {
  requireF32(node);
  const TensorType& xt = inputType(node, 0);
  const TensorType& wt = inputType(node, 1);
  if (xt.rank() < 3) failNode(node, "X must have rank >= 3 ([N, C, spatial...]), got " + xt.str());
  if (wt.rank() != xt.rank())
    failNode(node, "W " + wt.str() + " must have the rank of X " + xt.str());
  const size_t k = xt.rank() - 2;
  const std::vector<int64_t>& x = xt.dims;
  const std::vector<int64_t>& w = wt.dims;
  ConvShape s;
  s.group = node.i("group");
  if (s.group < 1) failNode(node, "attribute 'group' must be >= 1, got " + std::to_string(s.group));
  s.kernel = intsAttr(node, "kernel_shape", k, 1);
  s.pads = intsAttr(node, "pads", 2 * k, 0);
  s.strides = intsAttr(node, "strides", k, 1);
  s.dilations = intsAttr(node, "dilations", k, 1);
  for (size_t i = 0; i < k; ++i)
    if (s.kernel[i] > (int64_t{1} << 30) || s.strides[i] > (int64_t{1} << 30) ||
        s.dilations[i] > (int64_t{1} << 30) || s.pads[i] > (int64_t{1} << 30) ||
        s.pads[k + i] > (int64_t{1} << 30))
      failNode(node, "window attributes out of range");
  s.n = x[0];
  s.c = x[1];
  s.in.assign(x.begin() + 2, x.end());
  if (std::vector<int64_t>(w.begin() + 2, w.end()) != s.kernel)
    failNode(node, "kernel_shape " + dimsStr(s.kernel) + " differs from W " + dimsStr(w));
  // W's per-group channels times the groups (a hostile group must not wrap).
  int64_t w_channels = 0;
  if (__builtin_mul_overflow(w[1], s.group, &w_channels))
    failNode(node, "group " + std::to_string(s.group) + " times W's " + std::to_string(w[1]) +
                       " channels overflows");
  if (transpose) {
    s.m = w_channels;
    if (w[0] != s.c)
      failNode(node, "W " + dimsStr(w) + " must have the " + std::to_string(s.c) +
                         " input channels of X " + dimsStr(x) + " first");
    if (s.c % s.group != 0)
      failNode(node, "group " + std::to_string(s.group) + " does not divide input channels " +
                         std::to_string(s.c));
  } else {
    s.m = w[0];
    if (s.c % s.group != 0 || s.m % s.group != 0)
      failNode(node, "group " + std::to_string(s.group) + " does not divide input channels " +
                         std::to_string(s.c) + " and output channels " + std::to_string(s.m));
    if (w_channels != s.c)
      failNode(node, "W " + dimsStr(w) + " expects " + std::to_string(w_channels) +
                         " input channels, X " + dimsStr(x) + " has " + std::to_string(s.c));
  }
  if (node.inputs.size() > 2 && node.inputs[2]) {
    const TensorType& b = node.inputs[2]->type;
    if (b.dims != std::vector<int64_t>{s.m})
      failNode(node, "B must be [" + std::to_string(s.m) + "], got " + b.str());
    s.has_bias = true;
  }
  return s;
}

ConvShape convShape(const Node& node) {
  ConvShape s = decodeConvWindow(node, false);
  const size_t k = s.rank();
  for (size_t i = 0; i < k; ++i) {
    int64_t eff = (s.kernel[i] - 1) * s.dilations[i] + 1;
    int64_t padded = s.in[i] + s.pads[i] + s.pads[k + i];
    if (padded < eff)
      failNode(node, "dilated kernel (" + std::to_string(eff) +
                         ") is larger than the padded input along spatial dim " +
                         std::to_string(i) + " (" + std::to_string(padded) + ")");
    s.out.push_back((padded - eff) / s.strides[i] + 1);
  }
  return s;
}

OpSchema makeConvSchema() {
  OpSchema schema;
  schema.name = "Conv";
  schema.min_inputs = 2;
  schema.max_inputs = 4;  // X, W, B?, the fused residual? (ops/epilogue.h)
  schema.infer = [](const Node& node) {
    TensorType y{DType::F32, convShape(node).outputDims()};
    checkEpilogue(node, y);
    return std::vector<TensorType>{y};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    ConvShape s = convShape(node);
    const float* x = static_cast<const float*>(in[0]);
    const float* w = static_cast<const float*>(in[1]);
    const float* bias = in.size() > 2 ? static_cast<const float*>(in[2]) : nullptr;
    float* y = static_cast<float*>(out[0]);
    const int64_t cg = s.cPerGroup(), mg = s.mPerGroup();
    const int64_t in_plane = product(s.in, 0, s.rank()), out_plane = product(s.out, 0, s.rank());
    const int64_t taps = product(s.kernel, 0, s.rank());
    std::vector<double> acc(static_cast<size_t>(out_plane));
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t m = 0; m < s.m; ++m) {
        int64_t g = m / mg;
        std::fill(acc.begin(), acc.end(), bias ? bias[m] : 0.0);
        for (int64_t ci = 0; ci < cg; ++ci) {
          const float* xp = x + (n * s.c + g * cg + ci) * in_plane;
          const float* wp = w + (m * cg + ci) * taps;
          forEachConvTap(s, false, [&](int64_t o, int64_t t, int64_t at) {
            acc[static_cast<size_t>(o)] += static_cast<double>(xp[at]) * wp[t];
          });
        }
        for (int64_t o = 0; o < out_plane; ++o)
          y[(n * s.m + m) * out_plane + o] = static_cast<float>(acc[static_cast<size_t>(o)]);
      }
    applyEpilogue(
        epilogueSpec(node), y,
        in.size() > kResidualInput ? static_cast<const float*>(in[kResidualInput]) : nullptr,
        s.n * s.m * out_plane);
  };
  return schema;
}

}  // namespace nanoc
