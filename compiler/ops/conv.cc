// Conv: 2-D NCHW cross-correlation with groups, explicit pads (top, left,
// bottom, right), strides and dilations. X [N, C, H, W], W [M, C/group, kH, kW],
// optional B [M].
#include "compiler/ir/op_registry.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {
namespace {

struct ConvShape {
  int64_t n, c, h, w;  // input
  int64_t m, oh, ow;   // output channels and spatial size
  int64_t group, kh, kw;
  std::vector<int64_t> pads, strides, dilations;
};

ConvShape convShape(const Node& node) {
  requireRank(node, 0, "X", 4);
  requireRank(node, 1, "W", 4);
  requireF32(node);
  const std::vector<int64_t>& x = node.inputs[0]->type.dims;
  const std::vector<int64_t>& w = node.inputs[1]->type.dims;
  ConvShape s;
  s.group = node.i("group");
  if (s.group < 1) failNode(node, "attribute 'group' must be >= 1, got " + std::to_string(s.group));
  const std::vector<int64_t>& kernel = intsAttr(node, "kernel_shape", 2, 1);
  s.pads = intsAttr(node, "pads", 4, 0);
  s.strides = intsAttr(node, "strides", 2, 1);
  s.dilations = intsAttr(node, "dilations", 2, 1);
  s.n = x[0], s.c = x[1], s.h = x[2], s.w = x[3];
  s.m = w[0], s.kh = w[2], s.kw = w[3];
  if (kernel[0] != s.kh || kernel[1] != s.kw)
    failNode(node, "kernel_shape " + dimsStr(kernel) + " differs from W " + dimsStr(w));
  if (s.c % s.group != 0 || s.m % s.group != 0)
    failNode(node, "group " + std::to_string(s.group) + " does not divide input channels " +
                       std::to_string(s.c) + " and output channels " + std::to_string(s.m));
  if (w[1] * s.group != s.c)
    failNode(node, "W " + dimsStr(w) + " expects " + std::to_string(w[1] * s.group) +
                       " input channels, X " + dimsStr(x) + " has " + std::to_string(s.c));
  if (node.inputs.size() > 2 && node.inputs[2]) {
    const TensorType& b = node.inputs[2]->type;
    if (b.dims != std::vector<int64_t>{s.m})
      failNode(node, "B must be [" + std::to_string(s.m) + "], got " + b.str());
  }
  auto outSize = [&](int64_t in, int64_t k, int64_t pb, int64_t pe, int64_t st, int64_t dil,
                     const char* axis) {
    int64_t eff = (k - 1) * dil + 1;
    if (in + pb + pe < eff)
      failNode(node, std::string("dilated kernel (") + std::to_string(eff) +
                         ") is larger than the padded input along " + axis + " (" +
                         std::to_string(in + pb + pe) + ")");
    return (in + pb + pe - eff) / st + 1;
  };
  s.oh = outSize(s.h, s.kh, s.pads[0], s.pads[2], s.strides[0], s.dilations[0], "H");
  s.ow = outSize(s.w, s.kw, s.pads[1], s.pads[3], s.strides[1], s.dilations[1], "W");
  return s;
}

}  // namespace

OpSchema makeConvSchema() {
  OpSchema schema;
  schema.name = "Conv";
  schema.min_inputs = 2;
  schema.max_inputs = 3;
  schema.infer = [](const Node& node) {
    ConvShape s = convShape(node);
    return std::vector<TensorType>{{DType::F32, {s.n, s.m, s.oh, s.ow}}};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    ConvShape s = convShape(node);
    const float* x = static_cast<const float*>(in[0]);
    const float* w = static_cast<const float*>(in[1]);
    const float* bias = in.size() > 2 ? static_cast<const float*>(in[2]) : nullptr;
    float* y = static_cast<float*>(out[0]);
    int64_t cg = s.c / s.group, mg = s.m / s.group;
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t m = 0; m < s.m; ++m) {
        int64_t g = m / mg;
        for (int64_t oh = 0; oh < s.oh; ++oh)
          for (int64_t ow = 0; ow < s.ow; ++ow) {
            double acc = bias ? bias[m] : 0.0;
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t i = 0; i < s.kh; ++i) {
                int64_t ih = oh * s.strides[0] - s.pads[0] + i * s.dilations[0];
                if (ih < 0 || ih >= s.h) continue;
                for (int64_t j = 0; j < s.kw; ++j) {
                  int64_t iw = ow * s.strides[1] - s.pads[1] + j * s.dilations[1];
                  if (iw < 0 || iw >= s.w) continue;
                  float xv = x[((n * s.c + g * cg + ci) * s.h + ih) * s.w + iw];
                  float wv = w[((m * cg + ci) * s.kh + i) * s.kw + j];
                  acc += static_cast<double>(xv) * wv;
                }
              }
            y[((n * s.m + m) * s.oh + oh) * s.ow + ow] = static_cast<float>(acc);
          }
      }
  };
  return schema;
}

}  // namespace nanoc
