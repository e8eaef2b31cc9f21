// The channel-blocked layout's ops: see nchwc.h.
#include "compiler/ops/nchwc.h"

#include <algorithm>
#include <string>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/conv_gemm.h"
#include "compiler/ops/epilogue.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {
namespace {

constexpr int64_t kLimit = int64_t{1} << 24;

int64_t blockAttr(const Node& node) {
  const int64_t b = node.i("block");
  if (b < 1 || b > 64 || (b & (b - 1)) != 0)
    failNode(node, "attribute 'block' must be a power of two in [1, 64], got " + std::to_string(b));
  return b;
}

void requireDims(const Node& node, size_t index, const char* operand,
                 const std::vector<int64_t>& want) {
  const TensorType& t = inputType(node, index);
  if (t.dims != want)
    failNode(node, std::string(operand) + " must be " + dimsStr(want) + ", got " + t.str());
}

OpSchema makePackSchema() {
  OpSchema schema;
  schema.name = "nanoc.Pack";
  schema.infer = [](const Node& node) {
    requireF32(node);
    requireRank(node, 0, "X", 4);
    const std::vector<int64_t>& x = inputType(node, 0).dims;
    const int64_t b = blockAttr(node);
    return std::vector<TensorType>{{DType::F32, {x[0], channelBlocks(x[1], b), x[2], x[3], b}}};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const std::vector<int64_t>& x = node.inputs[0]->type.dims;
    const int64_t b = node.i("block"), cb = channelBlocks(x[1], b), hw = x[2] * x[3];
    const float* src = static_cast<const float*>(in[0]);
    float* dst = static_cast<float*>(out[0]);
    for (int64_t n = 0; n < x[0]; ++n)
      for (int64_t c = 0; c < cb * b; ++c)
        for (int64_t p = 0; p < hw; ++p)
          dst[((n * cb + c / b) * hw + p) * b + c % b] =
              c < x[1] ? src[(n * x[1] + c) * hw + p] : 0.0f;
  };
  return schema;
}

OpSchema makeUnpackSchema() {
  OpSchema schema;
  schema.name = "nanoc.Unpack";
  schema.infer = [](const Node& node) {
    requireF32(node);
    requireRank(node, 0, "X", 5);
    const std::vector<int64_t>& x = inputType(node, 0).dims;
    const int64_t c = node.i("channels");
    if (c < 1 || channelBlocks(c, x[4]) != x[1])
      failNode(node, "attribute 'channels' (" + std::to_string(c) + ") must fill the last of " +
                         std::to_string(x[1]) + " blocks of " + std::to_string(x[4]));
    return std::vector<TensorType>{{DType::F32, {x[0], c, x[2], x[3]}}};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const std::vector<int64_t>& x = node.inputs[0]->type.dims;
    const int64_t c = node.i("channels"), b = x[4], hw = x[2] * x[3];
    const float* src = static_cast<const float*>(in[0]);
    float* dst = static_cast<float*>(out[0]);
    for (int64_t n = 0; n < x[0]; ++n)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t p = 0; p < hw; ++p)
          dst[(n * c + ch) * hw + p] = src[((n * x[1] + ch / b) * hw + p) * b + ch % b];
  };
  return schema;
}

OpSchema makeGlobalAveragePoolNchwcSchema() {
  OpSchema schema;
  schema.name = "nanoc.GlobalAveragePoolNCHWc";
  schema.infer = [](const Node& node) {
    requireF32(node);
    requireRank(node, 0, "X", 5);
    std::vector<int64_t> y = inputType(node, 0).dims;
    y[2] = y[3] = 1;
    return std::vector<TensorType>{{DType::F32, y}};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const std::vector<int64_t>& x = node.inputs[0]->type.dims;
    const int64_t planes = x[0] * x[1], hw = x[2] * x[3], b = x[4];
    const float* src = static_cast<const float*>(in[0]);
    float* dst = static_cast<float*>(out[0]);
    for (int64_t q = 0; q < planes; ++q)
      for (int64_t l = 0; l < b; ++l) {
        double sum = 0;
        for (int64_t p = 0; p < hw; ++p) sum += src[(q * hw + p) * b + l];
        dst[q * b + l] = hw ? static_cast<float>(sum / hw) : 0.0f;
      }
  };
  return schema;
}

}  // namespace

ConvNchwcShape convNchwcShape(const Node& node) {
  requireF32(node);
  ConvNchwcShape s;
  const std::string& form = node.s("form");
  if (form == "pointwise")
    s.form = NchwcForm::Pointwise;
  else if (form == "depthwise")
    s.form = NchwcForm::Depthwise;
  else if (form == "direct")
    s.form = NchwcForm::Direct;
  else
    failNode(node, "attribute 'form' must be pointwise, depthwise or direct, got '" + form + "'");
  s.block = blockAttr(node);
  const int64_t b = s.block;
  const std::vector<int64_t>& x = inputType(node, 0).dims;
  if (s.form != NchwcForm::Direct)
    requireRank(node, 0, "X", 5);
  else if (x.size() != 4 && x.size() != 5)
    failNode(node, "a direct ConvNCHWc's X must have rank 4 or 5, got " + inputType(node, 0).str());
  s.n = x[0], s.h = x[2], s.w = x[3];
  if (s.form == NchwcForm::Direct && x.size() == 4) {
    s.c = x[1];
  } else if (s.form == NchwcForm::Direct) {
    // Channel-blocked X: its real channels are W's.
    if (x[4] != b)
      failNode(node, "X " + dimsStr(x) + " must have blocks of " + std::to_string(b) + " lanes");
    requireRank(node, 1, "W", 5);
    s.c = inputType(node, 1).dims[1];
    if (s.c < 1 || channelBlocks(s.c, b) != x[1])
      failNode(node, "W's input channels (" + std::to_string(s.c) + ") must end in X's last of " +
                         std::to_string(x[1]) + " blocks");
    s.blocked_input = true;
  } else {
    if (x[4] != b)
      failNode(node, "X " + dimsStr(x) + " must have blocks of " + std::to_string(b) + " lanes");
    s.c = x[1] * b;
  }
  s.oc = node.i("out_channels");
  if (s.oc < 1 || s.oc > kLimit) failNode(node, "attribute 'out_channels' must be in [1, 2^24]");
  s.ocb = channelBlocks(s.oc, b);
  const std::vector<int64_t>& kernel = intsAttr(node, "kernel_shape", 2, 1);
  const std::vector<int64_t>& strides = intsAttr(node, "strides", 2, 1);
  const std::vector<int64_t>& pads = intsAttr(node, "pads", 4, 0);
  for (int64_t v :
       {kernel[0], kernel[1], strides[0], strides[1], pads[0], pads[1], pads[2], pads[3]})
    if (v > kLimit) failNode(node, "window attributes out of range");
  s.kh = kernel[0], s.kw = kernel[1], s.sh = strides[0], s.sw = strides[1];
  s.pad_h = pads[0], s.pad_w = pads[1];
  const int64_t padded_h = s.h + pads[0] + pads[2], padded_w = s.w + pads[1] + pads[3];
  if (padded_h < s.kh || padded_w < s.kw) failNode(node, "kernel is larger than the padded input");
  s.oh = (padded_h - s.kh) / s.sh + 1;
  s.ow = (padded_w - s.kw) / s.sw + 1;
  switch (s.form) {
    case NchwcForm::Pointwise: {
      if (s.kh != 1 || s.kw != 1 || s.sh != 1 || s.sw != 1 || pads[0] || pads[1] || pads[2] ||
          pads[3])
        failNode(node, "a pointwise ConvNCHWc has a 1x1 kernel, unit strides and no padding");
      s.panel = node.i("panel");
      if (s.panel < b || s.panel > 1024 || s.panel % b != 0)
        failNode(node, "attribute 'panel' must be a multiple of the block in [block, 1024]");
      requireRank(node, 1, "W", 3);
      s.k = inputType(node, 1).dims[1];
      if (s.k < 1 || channelBlocks(s.k, b) * b != s.c)
        failNode(node, "W's input channels (" + std::to_string(s.k) + ") must end in X's last of " +
                           std::to_string(s.c / b) + " blocks");
      requireDims(node, 1, "W", {channelBlocks(s.outPadded(), s.panel), s.k, s.panel});
      break;
    }
    case NchwcForm::Depthwise:
      if (s.ocb * b != s.c)
        failNode(node, "a depthwise ConvNCHWc has as many output channels as X (" +
                           std::to_string(s.c) + " lanes), got " + std::to_string(s.oc));
      requireDims(node, 1, "W", {s.ocb, s.kh, s.kw, b});
      break;
    case NchwcForm::Direct:
      requireDims(node, 1, "W", {s.ocb, s.c, s.kh, s.kw, b});
      break;
  }
  if (node.inputs.size() > 2 && node.inputs[2]) {
    requireDims(node, 2, "bias", {s.outPadded()});
    s.has_bias = true;
  }
  if (node.inputs.size() > kChannelScaleInput && node.inputs[kChannelScaleInput]) {
    if (s.form != NchwcForm::Pointwise) failNode(node, "a channel scale needs the pointwise form");
    requireDims(node, kChannelScaleInput, "channel scale", {s.n, s.c / b, 1, 1, b});
    s.has_scale = true;
  }
  return s;
}

namespace {

OpSchema makeConvNchwcSchema() {
  OpSchema schema;
  schema.name = "nanoc.ConvNCHWc";
  schema.min_inputs = 2;
  // X, W, bias?, residual? (ops/epilogue.h), channel scale?
  schema.max_inputs = 5;
  schema.infer = [](const Node& node) {
    ConvNchwcShape s = convNchwcShape(node);
    TensorType y{DType::F32, s.outputDims()};
    checkEpilogue(node, y);
    return std::vector<TensorType>{y};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    ConvNchwcShape s = convNchwcShape(node);
    const int64_t b = s.block, OCp = s.outPadded(), P = s.oh * s.ow;
    const float* x = static_cast<const float*>(in[0]);
    const float* w = static_cast<const float*>(in[1]);
    const float* bias = s.has_bias ? static_cast<const float*>(in[2]) : nullptr;
    const float* scale = s.has_scale ? static_cast<const float*>(in[kChannelScaleInput]) : nullptr;
    float* y = static_cast<float*>(out[0]);
    // X's element of channel c at input pixel (ih, iw), 0 in the padding.
    const bool plain = s.form == NchwcForm::Direct && !s.blocked_input;
    const int64_t xcb = channelBlocks(s.c, b);  // a blocked X's blocks
    auto at = [&](int64_t n, int64_t c, int64_t ih, int64_t iw) -> double {
      if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) return 0.0;
      if (plain) return x[((n * s.c + c) * s.h + ih) * s.w + iw];
      return x[(((n * xcb + c / b) * s.h + ih) * s.w + iw) * b + c % b];
    };
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t m = 0; m < OCp; ++m)
        for (int64_t oh = 0; oh < s.oh; ++oh)
          for (int64_t ow = 0; ow < s.ow; ++ow) {
            double acc = bias ? bias[m] : 0.0;
            const int64_t ih0 = oh * s.sh - s.pad_h, iw0 = ow * s.sw - s.pad_w;
            if (s.form == NchwcForm::Pointwise) {
              for (int64_t k = 0; k < s.k; ++k) {
                // The kernel's weight: W^T(k, m) * S[n, k] rounded to f32.
                float wk = w[((m / s.panel) * s.k + k) * s.panel + m % s.panel];
                if (scale) wk *= scale[n * s.c + k];
                acc += static_cast<double>(wk) * at(n, k, ih0, iw0);
              }
            } else if (s.form == NchwcForm::Depthwise) {
              for (int64_t i = 0; i < s.kh; ++i)
                for (int64_t j = 0; j < s.kw; ++j)
                  acc += static_cast<double>(w[(((m / b) * s.kh + i) * s.kw + j) * b + m % b]) *
                         at(n, m, ih0 + i, iw0 + j);
            } else {
              for (int64_t c = 0; c < s.c; ++c)
                for (int64_t i = 0; i < s.kh; ++i)
                  for (int64_t j = 0; j < s.kw; ++j)
                    acc += static_cast<double>(
                               w[((((m / b) * s.c + c) * s.kh + i) * s.kw + j) * b + m % b]) *
                           at(n, c, ih0 + i, iw0 + j);
            }
            y[((n * s.ocb + m / b) * P + oh * s.ow + ow) * b + m % b] = static_cast<float>(acc);
          }
    applyEpilogue(
        epilogueSpec(node), y,
        in.size() > kResidualInput ? static_cast<const float*>(in[kResidualInput]) : nullptr,
        s.n * OCp * P);
    if (s.form == NchwcForm::Pointwise)  // the last block's lanes past out_channels
      for (int64_t n = 0; n < s.n; ++n)
        for (int64_t q = 0; q < P; ++q)
          for (int64_t l = s.oc - (s.ocb - 1) * b; l < b; ++l)
            y[((n * s.ocb + s.ocb - 1) * P + q) * b + l] = 0.0f;
  };
  return schema;
}

}  // namespace

std::vector<OpSchema> nchwcSchemas() {
  return {makePackSchema(), makeUnpackSchema(), makeGlobalAveragePoolNchwcSchema(),
          makeConvNchwcSchema()};
}

}  // namespace nanoc
