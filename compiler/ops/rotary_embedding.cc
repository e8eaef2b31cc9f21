// RotaryEmbedding (ONNX opset 23) on X [B, H, S, D] (heads_first = 1) or
// [B, S, H, D] (heads_first = 0). The first rotary_dim = R elements of each
// head row are rotated pairwise, the rest copied: with c, s the row
// (b, seq) of cos and sin ([B, S, R/2], or [P, R/2] indexed by
// position_ids[b, seq] when given, clamped to [0, P)), pair k is
// (x[k], x[k + R/2]), or (x[2k], x[2k + 1]) when interleaved, and becomes
// (c_k x1 - s_k x2, s_k x1 + c_k x2).
#include <algorithm>
#include <vector>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

OpSchema makeRotaryEmbeddingSchema() {
  OpSchema schema;
  schema.name = "RotaryEmbedding";
  schema.min_inputs = 3;
  schema.max_inputs = 4;
  schema.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    for (size_t i = 0; i < 3; ++i)
      if (inputType(node, i).dtype != DType::F32)
        failNode(node, "X, cos_cache and sin_cache must be f32, operand " + std::to_string(i) +
                           " is " + inputType(node, i).str());
    requireRank(node, 0, "X", 4);
    boolAttr(node, "interleaved");
    bool heads_first = boolAttr(node, "heads_first") != 0;
    int64_t rot = node.i("rotary_dim");
    if (rot < 2 || rot % 2 != 0 || rot > x.dims[3])
      failNode(node, "attribute 'rotary_dim' is " + std::to_string(rot) +
                         ", must be even, >= 2 and at most the head size " +
                         std::to_string(x.dims[3]));
    int64_t batch = x.dims[0], seq = x.dims[heads_first ? 2 : 1];
    const TensorType& cos = inputType(node, 1);
    bool positions = node.inputs.size() > 3 && node.inputs[3];
    if (positions) {
      const TensorType& p = node.inputs[3]->type;
      if (p.dtype != DType::I64 || p.dims != std::vector<int64_t>{batch, seq})
        failNode(node, "position_ids must be i64" + dimsStr({batch, seq}) + ", got " + p.str());
      if (cos.rank() != 2 || cos.dims[1] != rot / 2 || cos.dims[0] < 1)
        failNode(node, "with position_ids, cos_cache must be [positions >= 1, " +
                           std::to_string(rot / 2) + "], got " + cos.str());
    } else if (cos.dims != std::vector<int64_t>{batch, seq, rot / 2}) {
      failNode(node, "without position_ids, cos_cache must be " + dimsStr({batch, seq, rot / 2}) +
                         ", got " + cos.str());
    }
    if (inputType(node, 2).dims != cos.dims)
      failNode(node,
               "sin_cache " + inputType(node, 2).str() + " must match cos_cache " + cos.str());
    return std::vector<TensorType>{x};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const std::vector<int64_t>& d = node.inputs[0]->type.dims;
    bool heads_first = node.i("heads_first") != 0, interleaved = node.i("interleaved") != 0;
    int64_t rot = node.i("rotary_dim"), half = rot / 2;
    int64_t heads = d[heads_first ? 1 : 2], seq = d[heads_first ? 2 : 1], head = d[3];
    const float* x = static_cast<const float*>(in[0]);
    const float* cos = static_cast<const float*>(in[1]);
    const float* sin = static_cast<const float*>(in[2]);
    const auto* pos =
        node.inputs.size() > 3 && node.inputs[3] ? static_cast<const int64_t*>(in[3]) : nullptr;
    int64_t positions = node.inputs[1]->type.dims[0];
    float* y = static_cast<float*>(out[0]);
    for (int64_t b = 0; b < d[0]; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t s = 0; s < seq; ++s) {
          int64_t row = heads_first ? (b * heads + h) * seq + s : (b * seq + s) * heads + h;
          int64_t cs = pos ? std::clamp<int64_t>(pos[b * seq + s], 0, positions - 1) : b * seq + s;
          const float* xr = x + row * head;
          float* yr = y + row * head;
          for (int64_t k = 0; k < half; ++k) {
            int64_t i1 = interleaved ? 2 * k : k, i2 = interleaved ? 2 * k + 1 : k + half;
            double c = cos[cs * half + k], sn = sin[cs * half + k];
            yr[i1] = static_cast<float>(c * xr[i1] - sn * xr[i2]);
            yr[i2] = static_cast<float>(sn * xr[i1] + c * xr[i2]);
          }
          for (int64_t k = rot; k < head; ++k) yr[k] = xr[k];
        }
  };
  return schema;
}

}  // namespace nanoc
