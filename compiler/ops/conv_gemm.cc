// nanoc.Im2Col and nanoc.ConvGemm: see conv_gemm.h.
#include "compiler/ops/conv_gemm.h"

#include <algorithm>
#include <string>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/epilogue.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

Im2ColShape im2colShape(const Node& node) {
  requireF32(node);
  requireRank(node, 0, "X", 4);
  const std::vector<int64_t>& x = inputType(node, 0).dims;
  Im2ColShape s;
  s.n = x[0], s.c = x[1], s.h = x[2], s.w = x[3];
  const std::vector<int64_t>& kernel = intsAttr(node, "kernel_shape", 2, 1);
  const std::vector<int64_t>& pads = intsAttr(node, "pads", 4, 0);
  const std::vector<int64_t>& strides = intsAttr(node, "strides", 2, 1);
  const std::vector<int64_t>& dilations = intsAttr(node, "dilations", 2, 1);
  s.kh = kernel[0], s.kw = kernel[1];
  s.sh = strides[0], s.sw = strides[1];
  s.dh = dilations[0], s.dw = dilations[1];
  s.pad_h = pads[0], s.pad_w = pads[1];
  s.panel = node.i("panel");
  constexpr int64_t kLimit = int64_t{1} << 24;
  for (int64_t v : {s.kh, s.kw, s.sh, s.sw, s.dh, s.dw, pads[0], pads[1], pads[2], pads[3]})
    if (v > kLimit) failNode(node, "window attributes out of range");
  if (s.panel < 1 || s.panel > 1024)
    failNode(node, "attribute 'panel' must be in [1, 1024], got " + std::to_string(s.panel));
  int64_t eff_h = (s.kh - 1) * s.dh + 1, eff_w = (s.kw - 1) * s.dw + 1;
  int64_t padded_h = s.h + pads[0] + pads[2], padded_w = s.w + pads[1] + pads[3];
  if (padded_h < eff_h || padded_w < eff_w)
    failNode(node, "dilated kernel is larger than the padded input");
  s.oh = (padded_h - eff_h) / s.sh + 1;
  s.ow = (padded_w - eff_w) / s.sw + 1;
  return s;
}

ConvGemmShape convGemmShape(const Node& node) {
  requireF32(node);
  requireRank(node, 0, "B", 4);
  ConvGemmShape s;
  s.grouped_w = node.has("out_channels");
  requireRank(node, 1, "W", s.grouped_w ? 3 : 4);
  const std::vector<int64_t>& bd = inputType(node, 0).dims;
  const std::vector<int64_t>& wd = inputType(node, 1).dims;
  s.panel = node.i("panel");
  const std::vector<int64_t>& spatial = intsAttr(node, "output_spatial", 2, 0);
  s.oh = spatial[0], s.ow = spatial[1];
  s.n = bd[0];
  if (node.has("pixel_rows")) {
    s.pixel_rows = node.i("pixel_rows");
    if (!s.grouped_w) failNode(node, "attribute 'pixel_rows' needs 'out_channels'");
    if (s.pixel_rows < 1 || s.pixel_rows > 1024)
      failNode(node,
               "attribute 'pixel_rows' must be in [1, 1024], got " + std::to_string(s.pixel_rows));
    s.w_group = s.pixel_rows;
  }
  if (s.grouped_w) {
    s.m = node.i("out_channels");
    s.k = wd[1];
    if (s.pixel_rows == 0) {
      // W's rows in groups of the tile's mr (or a multiple): one divisor of
      // kPackedRowQuantum, so that a task's block of rows holds whole groups.
      s.w_group = wd[2];
      if (s.w_group < 1 || kWeightRowGroup % s.w_group != 0)
        failNode(node, "grouped W " + dimsStr(wd) + ": its row group " + std::to_string(wd[2]) +
                           " must divide " + std::to_string(kWeightRowGroup));
    }
    if (s.m < 1 || s.m > (int64_t{1} << 24))
      failNode(node, "attribute 'out_channels' must be in [1, 2^24]");
    const int64_t groups = weightRowGroups(s.m, s.w_group);
    if (wd[0] != groups || wd[2] != s.w_group)
      failNode(node, "grouped W " + dimsStr(wd) + " must be [" + std::to_string(groups) + ", K, " +
                         std::to_string(s.w_group) + "]");
  } else {
    s.m = wd[0], s.k = product(wd, 1, 4);
  }
  if (node.has("kernel_shape")) {
    s.packs = true;
    s.window = im2colShape(node);
    const Im2ColShape& x = s.window;
    if (s.grouped_w) {
      if (s.k != x.k())
        failNode(node, "grouped W " + dimsStr(wd) + " must have K = " + std::to_string(x.k()));
    } else if (wd[1] != x.c || wd[2] != x.kh || wd[3] != x.kw)
      failNode(node, "W " + dimsStr(wd) + " must be [M, " + std::to_string(x.c) + ", " +
                         std::to_string(x.kh) + ", " + std::to_string(x.kw) + "]");
    if (s.oh != x.oh || s.ow != x.ow)
      failNode(node, "output_spatial must be [" + std::to_string(x.oh) + ", " +
                         std::to_string(x.ow) + "]");
    if (s.pixel_rows > 0 && (x.kh != 1 || x.kw != 1 || x.pad_h != 0 || x.pad_w != 0 ||
                             intsAttr(node, "pads", 4, 0) != std::vector<int64_t>(4, 0)))
      failNode(node, "attribute 'pixel_rows' with a window needs a 1x1 window without padding");
  } else if (s.panel == 0) {
    if (bd[1] != s.k || bd[2] != s.oh || bd[3] != s.ow)
      failNode(node, "B " + dimsStr(bd) + " must be X [N, " + std::to_string(s.k) + ", " +
                         std::to_string(s.oh) + ", " + std::to_string(s.ow) + "]");
  } else {
    int64_t panels = s.pixels() == 0 ? 0 : (s.pixels() + s.panel - 1) / s.panel;
    if (s.panel < 0 || bd[1] != panels || bd[2] != s.k || bd[3] != s.panel)
      failNode(node, "B " + dimsStr(bd) + " must be Im2Col panels [N, " + std::to_string(panels) +
                         ", " + std::to_string(s.k) + ", " + std::to_string(s.panel) + "]");
  }
  if (node.inputs.size() > 2 && node.inputs[2]) {
    if (node.inputs[2]->type.dims != std::vector<int64_t>{s.m})
      failNode(node,
               "bias must be [" + std::to_string(s.m) + "], got " + node.inputs[2]->type.str());
    s.has_bias = true;
  }
  if (node.inputs.size() > kChannelScaleInput && node.inputs[kChannelScaleInput]) {
    if (s.pixel_rows > 0) failNode(node, "a channel scale needs a ConvGemm without pixel_rows");
    if (s.packs || s.panel != 0)
      failNode(node, "a channel scale needs a pointwise ConvGemm (panel 0, B is X)");
    const std::vector<int64_t> want = {s.n, s.k, 1, 1};
    const TensorType& st = node.inputs[kChannelScaleInput]->type;
    if (st.dtype != DType::F32 || st.dims != want)
      failNode(node, "channel scale must be f32" + dimsStr(want) + ", got " + st.str());
    s.has_scale = true;
  }
  return s;
}

namespace {

OpSchema makeIm2ColSchema() {
  OpSchema schema;
  schema.name = "nanoc.Im2Col";
  schema.infer = [](const Node& node) {
    return std::vector<TensorType>{{DType::F32, im2colShape(node).outputDims()}};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    Im2ColShape s = im2colShape(node);
    const float* x = static_cast<const float*>(in[0]);
    float* col = static_cast<float*>(out[0]);
    const int64_t P = s.pixels(), K = s.k(), panels = s.panels();
    std::fill(col, col + s.n * panels * K * s.panel, 0.0f);
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t k = 0; k < K; ++k) {
        int64_t c = k / (s.kh * s.kw), i = k / s.kw % s.kh, j = k % s.kw;
        for (int64_t p = 0; p < P; ++p) {
          int64_t ih = p / s.ow * s.sh - s.pad_h + i * s.dh;
          int64_t iw = p % s.ow * s.sw - s.pad_w + j * s.dw;
          if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) continue;
          col[((n * panels + p / s.panel) * K + k) * s.panel + p % s.panel] =
              x[((n * s.c + c) * s.h + ih) * s.w + iw];
        }
      }
  };
  return schema;
}

OpSchema makeConvGemmSchema() {
  OpSchema schema;
  schema.name = "nanoc.ConvGemm";
  schema.min_inputs = 2;
  // B, W, bias?, the fused residual? (ops/epilogue.h), the channel scale?
  schema.max_inputs = 5;
  schema.infer = [](const Node& node) {
    ConvGemmShape s = convGemmShape(node);
    TensorType y{DType::F32, {s.n, s.m, s.oh, s.ow}};
    checkEpilogue(node, y);
    return std::vector<TensorType>{y};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    ConvGemmShape s = convGemmShape(node);
    const float* bm = static_cast<const float*>(in[0]);
    const float* w = static_cast<const float*>(in[1]);
    const float* bias = s.has_bias ? static_cast<const float*>(in[2]) : nullptr;
    const float* scale = s.has_scale ? static_cast<const float*>(in[kChannelScaleInput]) : nullptr;
    float* y = static_cast<float*>(out[0]);
    const int64_t P = s.pixels(), K = s.k;
    const int64_t panels = s.panel ? (P + s.panel - 1) / s.panel : 0;
    const Im2ColShape& x = s.window;
    auto at = [&](int64_t n, int64_t k, int64_t p) {
      if (s.packs) {
        int64_t c = k / (x.kh * x.kw), i = k / x.kw % x.kh, j = k % x.kw;
        int64_t ih = p / x.ow * x.sh - x.pad_h + i * x.dh;
        int64_t iw = p % x.ow * x.sw - x.pad_w + j * x.dw;
        if (ih < 0 || ih >= x.h || iw < 0 || iw >= x.w) return 0.0f;
        return bm[((n * x.c + c) * x.h + ih) * x.w + iw];
      }
      if (s.panel == 0) return bm[(n * K + k) * P + p];
      return bm[((n * panels + p / s.panel) * K + k) * s.panel + p % s.panel];
    };
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t m = 0; m < s.m; ++m)
        for (int64_t p = 0; p < P; ++p) {
          double acc = bias ? bias[m] : 0.0;
          for (int64_t k = 0; k < K; ++k) {
            // The kernel's weight: W[m, k] * S[n, k] rounded to f32.
            const float wk = scale ? w[s.wIndex(m, k)] * scale[n * K + k] : w[s.wIndex(m, k)];
            acc += static_cast<double>(wk) * at(n, k, p);
          }
          y[(n * s.m + m) * P + p] = static_cast<float>(acc);
        }
    applyEpilogue(
        epilogueSpec(node), y,
        in.size() > kResidualInput ? static_cast<const float*>(in[kResidualInput]) : nullptr,
        s.n * s.m * P);
  };
  return schema;
}

}  // namespace

std::vector<OpSchema> convGemmSchemas() { return {makeIm2ColSchema(), makeConvGemmSchema()}; }

}  // namespace nanoc
