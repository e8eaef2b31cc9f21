// RoiAlign: Y[r, c] pools X[batch_indices[r], c] over the ROI rois[r] (x1, y1,
// x2, y2, scaled by spatial_scale) into output_height x output_width bins of
// bilinear samples (roi_align.h). A batch index outside [0, N) reads batch 0
// or N - 1 (clamped) rather than outside X.
#include "compiler/ops/roi_align.h"

#include <algorithm>
#include <vector>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/elementwise_table.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

RoiAlignParams roiAlignParams(const Node& node) {
  const TensorType& x = inputType(node, 0);
  const TensorType& rois = inputType(node, 1);
  const TensorType& idx = inputType(node, 2);
  RoiAlignParams p;
  const std::string& mode = node.s("mode");
  if (mode != "avg" && mode != "max") failNode(node, "mode '" + mode + "' is not avg or max");
  p.max_mode = mode == "max";
  p.half_pixel = boolAttr(node, "half_pixel") != 0;
  p.output_height = node.i("output_height");
  p.output_width = node.i("output_width");
  p.sampling_ratio = node.i("sampling_ratio");
  p.spatial_scale = node.f("spatial_scale");
  if (p.output_height < 1 || p.output_width < 1 || p.output_height > (int64_t{1} << 20) ||
      p.output_width > (int64_t{1} << 20))
    failNode(node, "output_height and output_width must be in [1, 2^20]");
  if (p.sampling_ratio < 0 || p.sampling_ratio > 4096)
    failNode(node, "sampling_ratio must be in [0, 4096]");
  if (!std::isfinite(p.spatial_scale)) failNode(node, "spatial_scale must be finite");
  if (x.rank() != 4) failNode(node, "X must be [N, C, H, W], got " + x.str());
  if (rois.rank() != 2 || rois.dims[1] != 4)
    failNode(node, "rois must be [num_rois, 4], got " + rois.str());
  if (idx.rank() != 1 || idx.dims[0] != rois.dims[0] || idx.dtype != DType::I64)
    failNode(node,
             "batch_indices must be i64[" + std::to_string(rois.dims[0]) + "], got " + idx.str());
  for (DType t : {x.dtype, rois.dtype})
    if (t != DType::F32 && t != DType::F64 && t != DType::F16 && t != DType::BF16)
      failNode(node,
               "X and rois must be f16, bf16, f32 or f64, got " + x.str() + " and " + rois.str());
  if (rois.dims[0] > 0 && (x.dims[0] == 0 || x.dims[2] == 0 || x.dims[3] == 0))
    failNode(node, "X " + x.str() + " is empty");
  return p;
}

namespace {

std::vector<TensorType> inferRoiAlign(const Node& node) {
  RoiAlignParams p = roiAlignParams(node);
  const TensorType& x = node.inputs[0]->type;
  return {{x.dtype, {node.inputs[1]->type.dims[0], x.dims[1], p.output_height, p.output_width}}};
}

void referenceRoiAlign(const Node& node, const std::vector<const void*>& in,
                       const std::vector<void*>& out) {
  const RoiAlignParams p = roiAlignParams(node);
  const TensorType& xt = node.inputs[0]->type;
  const TensorType& rt = node.inputs[1]->type;
  const int64_t N = xt.dims[0], C = xt.dims[1], H = xt.dims[2], W = xt.dims[3];
  const int64_t R = rt.dims[0], PH = p.output_height, PW = p.output_width;
  const auto* batch = static_cast<const int64_t*>(in[2]);
  const double hd = static_cast<double>(H), wd = static_cast<double>(W);
  for (int64_t r = 0; r < R; ++r) {
    auto roi = [&](int64_t k) { return loadScalar(rt.dtype, in[1], r * 4 + k).f; };
    const double offset = p.half_pixel ? 0.5 : 0.0;
    double start_w = roi(0) * p.spatial_scale - offset;
    double start_h = roi(1) * p.spatial_scale - offset;
    double end_w = roi(2) * p.spatial_scale - offset;
    double end_h = roi(3) * p.spatial_scale - offset;
    double roi_w = end_w - start_w, roi_h = end_h - start_h;
    if (!p.half_pixel) {
      roi_w = std::max(roi_w, 1.0);
      roi_h = std::max(roi_h, 1.0);
    }
    double bin_h = roi_h / static_cast<double>(PH), bin_w = roi_w / static_cast<double>(PW);
    auto gridCount = [&](double v) {  // ceil, kept within [0, 4096]
      double c = std::ceil(v);
      return static_cast<int64_t>(std::isnan(c) ? 0.0 : std::clamp(c, 0.0, 4096.0));
    };
    int64_t grid_h = p.sampling_ratio > 0 ? p.sampling_ratio : gridCount(bin_h);
    int64_t grid_w = p.sampling_ratio > 0 ? p.sampling_ratio : gridCount(bin_w);
    double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
    int64_t b = std::clamp<int64_t>(batch[r], 0, N - 1);
    for (int64_t c = 0; c < C; ++c) {
      const int64_t base = (b * C + c) * H * W;
      auto at = [&](int64_t i) { return loadScalar(xt.dtype, in[0], base + i).f; };
      for (int64_t ph = 0; ph < PH; ++ph)
        for (int64_t pw = 0; pw < PW; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < grid_h; ++iy) {
            double yy = start_h + static_cast<double>(ph) * bin_h +
                        (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
            for (int64_t ix = 0; ix < grid_w; ++ix) {
              double xx = start_w + static_cast<double>(pw) * bin_w +
                          (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
              double w1 = 0, w2 = 0, w3 = 0, w4 = 0;
              int64_t p1 = 0, p2 = 0, p3 = 0, p4 = 0;
              if (!(yy < -1.0 || yy > hd || xx < -1.0 || xx > wd)) {
                // Clamped below at 0 (NaN to 0, as the lowering does).
                double y = yy > 0 ? yy : 0.0, x = xx > 0 ? xx : 0.0;
                auto y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x);
                int64_t y_high, x_high;
                if (y_low >= H - 1) {
                  y_high = y_low = H - 1;
                  y = static_cast<double>(y_low);
                } else {
                  y_high = y_low + 1;
                }
                if (x_low >= W - 1) {
                  x_high = x_low = W - 1;
                  x = static_cast<double>(x_low);
                } else {
                  x_high = x_low + 1;
                }
                double ly = y - static_cast<double>(y_low), lx = x - static_cast<double>(x_low);
                double hy = 1 - ly, hx = 1 - lx;
                w1 = hy * hx;
                w2 = hy * lx;
                w3 = ly * hx;
                w4 = ly * lx;
                p1 = y_low * W + x_low;
                p2 = y_low * W + x_high;
                p3 = y_high * W + x_low;
                p4 = y_high * W + x_high;
              }
              if (p.max_mode) {
                double v = std::max(std::max(w1 * at(p1), w2 * at(p2)),
                                    std::max(w3 * at(p3), w4 * at(p4)));
                acc = first ? v : std::max(acc, v);
                first = false;
              } else {
                acc += w1 * at(p1) + w2 * at(p2) + w3 * at(p3) + w4 * at(p4);
              }
            }
          }
          if (!p.max_mode) acc /= count;
          storeScalar(xt.dtype, Scalar::ofFloat(acc), out[0], ((r * C + c) * PH + ph) * PW + pw);
        }
    }
  }
}

}  // namespace

OpSchema makeRoiAlignSchema() {
  OpSchema schema;
  schema.name = "RoiAlign";
  schema.min_inputs = 3;
  schema.max_inputs = 3;
  schema.infer = inferRoiAlign;
  schema.reference = referenceRoiAlign;
  return schema;
}

}  // namespace nanoc
