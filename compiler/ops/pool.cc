// MaxPool and AveragePool: 2-D NCHW pooling with explicit pads (top, left,
// bottom, right), strides, dilations and ceil_mode; AveragePool adds
// count_include_pad. Output sizes and divisors follow ONNX Runtime (pool.h).
#include "compiler/ops/pool.h"

#include <limits>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

int64_t poolOutputSize(const PoolAxis& a, bool ceil_mode) {
  int64_t span = a.size + a.pad_begin + a.pad_end - a.effectiveKernel();
  int64_t out = (ceil_mode ? (span + a.stride - 1) / a.stride : span / a.stride) + 1;
  if (ceil_mode && (out - 1) * a.stride >= a.size + a.pad_begin) --out;
  return out;
}

int64_t poolTapsWithin(const PoolAxis& a, int64_t out, int64_t lo, int64_t hi) {
  int64_t start = out * a.stride - a.pad_begin;
  int64_t count = 0;
  for (int64_t j = 0; j < a.kernel; ++j) {
    int64_t pos = start + j * a.dilation;
    count += pos >= lo && pos < hi;
  }
  return count;
}

namespace {

struct PoolShape {
  int64_t n, c;
  PoolAxis h, w;
  int64_t oh, ow;
  bool ceil_mode;
};

PoolShape poolShape(const Node& node) {
  requireRank(node, 0, "X", 4);
  requireF32(node);
  const std::vector<int64_t>& x = node.inputs[0]->type.dims;
  const std::vector<int64_t>& k = intsAttr(node, "kernel_shape", 2, 1);
  const std::vector<int64_t>& pads = intsAttr(node, "pads", 4, 0);
  const std::vector<int64_t>& strides = intsAttr(node, "strides", 2, 1);
  const std::vector<int64_t>& dilations = intsAttr(node, "dilations", 2, 1);
  PoolShape s;
  s.ceil_mode = boolAttr(node, "ceil_mode");
  s.n = x[0];
  s.c = x[1];
  s.h = {x[2], k[0], dilations[0], strides[0], pads[0], pads[2]};
  s.w = {x[3], k[1], dilations[1], strides[1], pads[1], pads[3]};
  for (const PoolAxis* a : {&s.h, &s.w}) {
    const char* axis = a == &s.h ? "H" : "W";
    // ONNX Runtime refuses these too; it keeps most windows non-empty.
    if (a->pad_begin >= a->kernel || a->pad_end >= a->kernel)
      failNode(node, std::string("pads ") + dimsStr(pads) + " must be smaller than kernel_shape " +
                         dimsStr(k) + " along " + axis);
    if (a->size + a->pad_begin + a->pad_end < a->effectiveKernel())
      failNode(node, "dilated kernel (" + std::to_string(a->effectiveKernel()) +
                         ") is larger than the padded input along " + axis + " (" +
                         std::to_string(a->size + a->pad_begin + a->pad_end) + ")");
  }
  s.oh = poolOutputSize(s.h, s.ceil_mode);
  s.ow = poolOutputSize(s.w, s.ceil_mode);
  return s;
}

std::vector<TensorType> inferPool(const Node& node) {
  PoolShape s = poolShape(node);
  return {{DType::F32, {s.n, s.c, s.oh, s.ow}}};
}

// Calls fn(plane, oh, ow, taps) for every output element, where `taps` visits
// the window's in-input elements as fn(value).
template <typename Fn>
void forEachWindow(const PoolShape& s, const float* x, Fn fn) {
  for (int64_t plane = 0; plane < s.n * s.c; ++plane) {
    const float* xp = x + plane * s.h.size * s.w.size;
    for (int64_t oh = 0; oh < s.oh; ++oh)
      for (int64_t ow = 0; ow < s.ow; ++ow) {
        auto taps = [&](auto visit) {
          for (int64_t i = 0; i < s.h.kernel; ++i) {
            int64_t ih = oh * s.h.stride - s.h.pad_begin + i * s.h.dilation;
            if (ih < 0 || ih >= s.h.size) continue;
            for (int64_t j = 0; j < s.w.kernel; ++j) {
              int64_t iw = ow * s.w.stride - s.w.pad_begin + j * s.w.dilation;
              if (iw >= 0 && iw < s.w.size) visit(xp[ih * s.w.size + iw]);
            }
          }
        };
        fn(plane, oh, ow, taps);
      }
  }
}

}  // namespace

OpSchema makeMaxPoolSchema() {
  OpSchema schema;
  schema.name = "MaxPool";
  schema.infer = inferPool;
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    PoolShape s = poolShape(node);
    float* y = static_cast<float*>(out[0]);
    forEachWindow(s, static_cast<const float*>(in[0]),
                  [&](int64_t plane, int64_t oh, int64_t ow, auto taps) {
                    // Padding never wins; a window with no input taps (possible only with
                    // dilation) gives lowest(), as in ONNX Runtime.
                    float m = std::numeric_limits<float>::lowest();
                    taps([&](float v) { m = v > m ? v : m; });
                    y[(plane * s.oh + oh) * s.ow + ow] = m;
                  });
  };
  return schema;
}

OpSchema makeAveragePoolSchema() {
  OpSchema schema;
  schema.name = "AveragePool";
  schema.infer = [](const Node& node) {
    boolAttr(node, "count_include_pad");
    return inferPool(node);
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    PoolShape s = poolShape(node);
    bool include_pad = boolAttr(node, "count_include_pad");
    float* y = static_cast<float*>(out[0]);
    forEachWindow(
        s, static_cast<const float*>(in[0]), [&](int64_t plane, int64_t oh, int64_t ow, auto taps) {
          double sum = 0;
          taps([&](float v) { sum += v; });
          int64_t count_h = include_pad
                                ? poolTapsWithin(s.h, oh, -s.h.pad_begin, s.h.size + s.h.pad_end)
                                : poolTapsWithin(s.h, oh, 0, s.h.size);
          int64_t count_w = include_pad
                                ? poolTapsWithin(s.w, ow, -s.w.pad_begin, s.w.size + s.w.pad_end)
                                : poolTapsWithin(s.w, ow, 0, s.w.size);
          int64_t count = count_h * count_w;
          // An empty window (dilation only) gives 0, as in ONNX Runtime.
          y[(plane * s.oh + oh) * s.ow + ow] = count ? static_cast<float>(sum / count) : 0.0f;
        });
  };
  return schema;
}

}  // namespace nanoc
