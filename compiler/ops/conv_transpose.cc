// ConvTranspose over [N, C, spatial...]: X [N, C, in...], W [C, M/group,
// kernel...], optional B [M], with groups, explicit pads (begins, then ends),
// strides, dilations and output_padding (compiler/ops/README.md).
#include "compiler/ir/op_registry.h"
#include "compiler/ops/conv.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

ConvShape convTransposeShape(const Node& node) {
  ConvShape s = decodeConvWindow(node, true);
  const size_t k = s.rank();
  s.output_padding = intsAttr(node, "output_padding", k, 0);
  for (size_t i = 0; i < k; ++i) {
    if (s.output_padding[i] > (int64_t{1} << 30)) failNode(node, "output_padding out of range");
    int64_t eff = (s.kernel[i] - 1) * s.dilations[i] + 1;
    int64_t out =
        s.strides[i] * (s.in[i] - 1) + eff - s.pads[i] - s.pads[k + i] + s.output_padding[i];
    if (s.in[i] < 1 || out < 1)
      failNode(node, "the output along spatial dim " + std::to_string(i) + " would be empty (" +
                         std::to_string(out) + ")");
    s.out.push_back(out);
  }
  return s;
}

// ConvTranspose: the adjoint of Conv's gather, a scatter of each input
// position through the kernel; output positions past the last contribution
// (output_padding) hold the bias.
OpSchema makeConvTransposeSchema() {
  OpSchema schema;
  schema.name = "ConvTranspose";
  schema.min_inputs = 2;
  schema.max_inputs = 3;
  schema.infer = [](const Node& node) {
    return std::vector<TensorType>{{DType::F32, convTransposeShape(node).outputDims()}};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    ConvShape s = convTransposeShape(node);
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
        int64_t g = m / mg, mi = m % mg;
        std::fill(acc.begin(), acc.end(), bias ? bias[m] : 0.0);
        for (int64_t ci = 0; ci < cg; ++ci) {
          int64_t c = g * cg + ci;
          const float* xp = x + (n * s.c + c) * in_plane;
          const float* wp = w + (c * mg + mi) * taps;
          forEachConvTap(s, true, [&](int64_t i, int64_t t, int64_t o) {
            acc[static_cast<size_t>(o)] += static_cast<double>(xp[i]) * wp[t];
          });
        }
        for (int64_t o = 0; o < out_plane; ++o)
          y[(n * s.m + m) * out_plane + o] = static_cast<float>(acc[static_cast<size_t>(o)]);
      }
  };
  return schema;
}

}  // namespace nanoc
