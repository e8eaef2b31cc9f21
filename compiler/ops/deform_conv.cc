// DeformConv (2-D): Y[n, oc, i, j] = B[oc] + sum over the group's input
// channels and the kernel taps of W * mask * X sampled bilinearly at the
// tap's position moved by its offset (deform_conv.h).
#include "compiler/ops/deform_conv.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/elementwise_table.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

DeformConvParams deformConvParams(const Node& node) {
  const TensorType& x = inputType(node, 0);
  const TensorType& w = inputType(node, 1);
  const TensorType& off = inputType(node, 2);
  DeformConvParams p;
  if (x.rank() != 4) failNode(node, "X must be [N, C, H, W] (2-D only), got " + x.str());
  if (w.rank() != 4 || off.rank() != 4)
    failNode(node, "W and offset must be 4-D, got " + w.str() + " and " + off.str());
  p.N = x.dims[0];
  p.C = x.dims[1];
  p.H = x.dims[2];
  p.W = x.dims[3];
  p.OC = w.dims[0];
  p.Cg = w.dims[1];
  p.kH = w.dims[2];
  p.kW = w.dims[3];
  p.OH = off.dims[2];
  p.OW = off.dims[3];
  p.group = node.i("group");
  p.offset_group = node.i("offset_group");
  p.dilations = intsAttr(node, "dilations", 2, 1);
  p.strides = intsAttr(node, "strides", 2, 1);
  p.pads = intsAttr(node, "pads", 4, 0);
  for (const auto* v : {&p.dilations, &p.strides, &p.pads})
    for (int64_t e : *v)
      if (e > (int64_t{1} << 30)) failNode(node, "dilations, strides or pads too large");
  if (p.group < 1 || p.offset_group < 1) failNode(node, "group and offset_group must be >= 1");
  // Neither group may exceed the channels (a hostile one must not wrap the
  // products below).
  if (p.group > std::max<int64_t>(p.C, 1) || p.offset_group > std::max<int64_t>(p.C, 1))
    failNode(node, "group " + std::to_string(p.group) + " or offset_group " +
                       std::to_string(p.offset_group) + " exceeds the channels of X " + x.str());
  if (p.C != p.Cg * p.group || p.OC % p.group != 0)
    failNode(node, "W " + w.str() + " does not fit X " + x.str() + " with group " +
                       std::to_string(p.group));
  if (p.C % p.offset_group != 0)
    failNode(node, "the channels of X " + x.str() + " do not divide into offset_group " +
                       std::to_string(p.offset_group));
  const int64_t K = p.kH * p.kW;
  if (off.dims[0] != p.N || off.dims[1] != p.offset_group * K * 2)
    failNode(node, "offset must be [" + std::to_string(p.N) + ", " +
                       std::to_string(p.offset_group * K * 2) + ", OH, OW], got " + off.str());
  int64_t oh = (p.H + p.pads[0] + p.pads[2] - ((p.kH - 1) * p.dilations[0] + 1));
  int64_t ow = (p.W + p.pads[1] + p.pads[3] - ((p.kW - 1) * p.dilations[1] + 1));
  if (oh < 0 || ow < 0 || p.OH != oh / p.strides[0] + 1 || p.OW != ow / p.strides[1] + 1)
    failNode(node,
             "offset " + off.str() + " does not match the output of the window over X " + x.str());
  if (node.inputs.size() > 3 && node.inputs[3]) {
    p.has_bias = true;
    const TensorType& b = node.inputs[3]->type;
    if (b.dims != std::vector<int64_t>{p.OC} || b.dtype != x.dtype)
      failNode(node, "B must be [" + std::to_string(p.OC) + "] of X's dtype, got " + b.str());
  }
  if (node.inputs.size() > 4 && node.inputs[4]) {
    p.has_mask = true;
    const TensorType& m = node.inputs[4]->type;
    if (m.dims != std::vector<int64_t>{p.N, p.offset_group * K, p.OH, p.OW} || m.dtype != x.dtype)
      failNode(node, "mask must be [" + std::to_string(p.N) + ", " +
                         std::to_string(p.offset_group * K) + ", OH, OW] of X's dtype, got " +
                         m.str());
  }
  for (const TensorType* t : {&x, &w, &off})
    if (t->dtype != x.dtype)
      failNode(node, "X, W and offset must share a dtype, got " + x.str() + ", " + w.str() + ", " +
                         off.str());
  if (x.dtype != DType::F32 && x.dtype != DType::F64 && x.dtype != DType::F16 &&
      x.dtype != DType::BF16)
    failNode(node, "X must be f16, bf16, f32 or f64, got " + x.str());
  return p;
}

namespace {

std::vector<TensorType> inferDeformConv(const Node& node) {
  DeformConvParams p = deformConvParams(node);
  return {{node.inputs[0]->type.dtype, {p.N, p.OC, p.OH, p.OW}}};
}

void referenceDeformConv(const Node& node, const std::vector<const void*>& in,
                         const std::vector<void*>& out) {
  const DeformConvParams p = deformConvParams(node);
  const DType dt = node.inputs[0]->type.dtype;
  auto ld = [&](size_t i, int64_t at) { return loadScalar(dt, in[i], at).f; };
  const int64_t K = p.kH * p.kW, ocg = p.OC / p.group, cpog = p.C / p.offset_group;
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t oc = 0; oc < p.OC; ++oc)
      for (int64_t i = 0; i < p.OH; ++i)
        for (int64_t j = 0; j < p.OW; ++j) {
          double acc = p.has_bias ? ld(3, oc) : 0.0;
          const int64_t g = oc / ocg;
          for (int64_t cg = 0; cg < p.Cg; ++cg) {
            const int64_t c = g * p.Cg + cg;
            const int64_t og = c / cpog;
            for (int64_t k = 0; k < K; ++k) {
              const int64_t kh = k / p.kW, kw = k % p.kW;
              const int64_t oplane = ((n * p.offset_group + og) * K + k) * 2;
              double oy = ld(2, (oplane * p.OH + i) * p.OW + j);
              double ox = ld(2, ((oplane + 1) * p.OH + i) * p.OW + j);
              double m = p.has_mask
                             ? ld(4, (((n * p.offset_group + og) * K + k) * p.OH + i) * p.OW + j)
                             : 1.0;
              double y =
                  static_cast<double>(i * p.strides[0] - p.pads[0] + kh * p.dilations[0]) + oy;
              double x =
                  static_cast<double>(j * p.strides[1] - p.pads[1] + kw * p.dilations[1]) + ox;
              double y0 = std::floor(y), x0 = std::floor(x);
              double ty = y - y0, tx = x - x0;
              double v = 0;
              for (int dy = 0; dy < 2; ++dy)
                for (int dx = 0; dx < 2; ++dx) {
                  double yy = y0 + dy, xx = x0 + dx;
                  if (!(yy >= 0 && yy < static_cast<double>(p.H) && xx >= 0 &&
                        xx < static_cast<double>(p.W)))
                    continue;
                  double wgt = (dy ? ty : 1 - ty) * (dx ? tx : 1 - tx);
                  v += wgt * ld(0, ((n * p.C + c) * p.H + static_cast<int64_t>(yy)) * p.W +
                                       static_cast<int64_t>(xx));
                }
              acc += ld(1, ((oc * p.Cg + cg) * p.kH + kh) * p.kW + kw) * m * v;
            }
          }
          storeScalar(dt, Scalar::ofFloat(acc), out[0], ((n * p.OC + oc) * p.OH + i) * p.OW + j);
        }
}

}  // namespace

OpSchema makeDeformConvSchema() {
  OpSchema schema;
  schema.name = "DeformConv";
  schema.min_inputs = 3;
  schema.max_inputs = 5;
  schema.infer = inferDeformConv;
  schema.reference = referenceDeformConv;
  return schema;
}

}  // namespace nanoc
