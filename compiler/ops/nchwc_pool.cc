// nanoc.MaxPoolNCHWc: see nchwc.h.
//
// X [N, Cb, H, W, b] -> Y [N, Cb, OH, OW, b], f32, with kernel_shape,
// strides, dilations (2 entries each, >= 1), pads (top, left, bottom, right,
// >= 0) and output_spatial = [OH, OW]. Y[n, cb, oh, ow, l] is the f32
// MaxPool's result for channel cb * b + l (ops/pool.cc): from the lowest
// float, taps (i, j) in row-major order with ih = oh * sh - top + i * dh in
// [0, H) and iw = ow * sw - left + j * dw in [0, W), each replacing the
// maximum only where it is greater (so a NaN is never taken, and of +0 and
// -0 the first wins); a window with no tap inside X gives the lowest float.
//
// The shape rule takes, along each axis, what MaxPool's takes (ops/pool.cc:
// pads below the kernel, a dilated kernel no larger than the padded input)
// and an output extent in [1, ceil_mode's]: MaxPool's own output with or
// without ceil_mode, or fewer windows. So every window starts inside X or in
// its leading padding and ends inside X or in its trailing padding (its first
// row and column at or before X's last, its last at or after X's first): none
// lies wholly in the padding but, with dilation, the taps may step over X
// (the lowest float, as MaxPool). Every attribute is at most 2^24 and the
// block 1 to 64 lanes.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/nchwc.h"
#include "compiler/ops/pool.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {
namespace {

constexpr int64_t kLimit = int64_t{1} << 24;
constexpr int64_t kMaxBlock = 64;

struct PoolNchwcShape {
  int64_t n = 0, cb = 0, b = 1;
  PoolAxis rows{}, cols{};  // H and W
  int64_t oh = 0, ow = 0;
};

PoolNchwcShape poolNchwcShape(const Node& node) {
  requireF32(node);
  requireRank(node, 0, "X", 5);
  const std::vector<int64_t>& x = inputType(node, 0).dims;
  PoolNchwcShape s;
  s.n = x[0], s.cb = x[1], s.b = x[4];
  if (s.b < 1 || s.b > kMaxBlock)
    failNode(node, "X " + dimsStr(x) + " must have blocks of 1 to " + std::to_string(kMaxBlock) +
                       " lanes");
  const std::vector<int64_t>& kernel = intsAttr(node, "kernel_shape", 2, 1);
  const std::vector<int64_t>& strides = intsAttr(node, "strides", 2, 1);
  const std::vector<int64_t>& dilations = intsAttr(node, "dilations", 2, 1);
  const std::vector<int64_t>& pads = intsAttr(node, "pads", 4, 0);
  const std::vector<int64_t>& out = intsAttr(node, "output_spatial", 2, 1);
  for (const std::vector<int64_t>* list : {&kernel, &strides, &dilations, &pads, &out})
    for (int64_t v : *list)
      if (v > kLimit) failNode(node, "window attributes out of range (at most 2^24)");
  s.rows = {x[2], kernel[0], dilations[0], strides[0], pads[0], pads[2]};
  s.cols = {x[3], kernel[1], dilations[1], strides[1], pads[1], pads[3]};
  s.oh = out[0], s.ow = out[1];
  const char* names[] = {"rows", "columns"};
  const PoolAxis* axes[] = {&s.rows, &s.cols};
  const int64_t extents[] = {s.oh, s.ow};
  for (int i = 0; i < 2; ++i) {
    const PoolAxis& a = *axes[i];
    const std::string axis = std::string(" along the ") + names[i];
    if (a.pad_begin >= a.kernel || a.pad_end >= a.kernel)
      failNode(node, "pads " + dimsStr(pads) + " must be smaller than kernel_shape " +
                         dimsStr(kernel) + axis);
    if (a.size + a.pad_begin + a.pad_end < a.effectiveKernel())
      failNode(node, "dilated kernel (" + std::to_string(a.effectiveKernel()) +
                         ") is larger than the padded input (" +
                         std::to_string(a.size + a.pad_begin + a.pad_end) + ")" + axis);
    const int64_t most = poolOutputSize(a, /*ceil_mode=*/true);
    if (extents[i] > most)
      failNode(node, "output_spatial " + dimsStr(out) + " has more windows than fit (" +
                         std::to_string(most) + ", ceil_mode's)" + axis);
  }
  return s;
}

OpSchema makeMaxPoolNchwcSchema() {
  OpSchema schema;
  schema.name = "nanoc.MaxPoolNCHWc";
  schema.infer = [](const Node& node) {
    PoolNchwcShape s = poolNchwcShape(node);
    return std::vector<TensorType>{{DType::F32, {s.n, s.cb, s.oh, s.ow, s.b}}};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const PoolNchwcShape s = poolNchwcShape(node);
    const int64_t H = s.rows.size, W = s.cols.size, b = s.b;
    const float* x = static_cast<const float*>(in[0]);
    float* y = static_cast<float*>(out[0]);
    for (int64_t plane = 0; plane < s.n * s.cb; ++plane)
      for (int64_t oh = 0; oh < s.oh; ++oh)
        for (int64_t ow = 0; ow < s.ow; ++ow)
          for (int64_t l = 0; l < b; ++l) {
            float m = std::numeric_limits<float>::lowest();
            for (int64_t i = 0; i < s.rows.kernel; ++i) {
              const int64_t ih = oh * s.rows.stride - s.rows.pad_begin + i * s.rows.dilation;
              if (ih < 0 || ih >= H) continue;
              for (int64_t j = 0; j < s.cols.kernel; ++j) {
                const int64_t iw = ow * s.cols.stride - s.cols.pad_begin + j * s.cols.dilation;
                if (iw < 0 || iw >= W) continue;
                const float v = x[((plane * H + ih) * W + iw) * b + l];
                if (v > m) m = v;
              }
            }
            y[((plane * s.oh + oh) * s.ow + ow) * b + l] = m;
          }
  };
  return schema;
}

}  // namespace

std::vector<OpSchema> nchwcPoolSchemas() { return {makeMaxPoolNchwcSchema()}; }

}  // namespace nanoc
