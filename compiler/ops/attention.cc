// Attention (ONNX opsets 23-25) in 4-D form, and AttentionScores, its
// qk_matmul_output. Per batch b, query head h, query row i and key j < T:
//   s_j  = scale · q_i · k_j, then softcap · tanh(s_j / softcap) when softcap > 0
//   bias = mask term + causal + window + padding, each 0 or -inf except the
//          float mask's own values:
//          mask   attn_mask broadcast (aligned at the end) to [B, Hq, Sq, T],
//                 its last dim padded to T with -inf (false); bool: true -> 0,
//                 false -> -inf
//          causal is_causal: j <= i + offset
//          window i + offset - j <= left_window (when >= 0) and
//                 j - i - offset <= right_window (when >= 0)
//          padding with nonpad_kv_seqlen: j < nonpad_kv_seqlen[b]
//          where offset = nonpad_kv_seqlen[b] - Sq with nonpad_kv_seqlen, else
//          past_len (the cached keys in front of K)
//   p    = softmax_j(s_j + bias_j); all 0 where every bias_j is -inf
//   Y[b, h, i] = sum_j p_j v_j, with key head h / (Hq / Hkv) (grouped queries)
// AttentionScores outputs, per mode: 0 and 1 s_j, 2 s_j + bias_j, 3 p_j.
// Q, K, V, a float mask and the outputs share one dtype, f32, f16 or bf16;
// half precision is computed in f32 and rounded once.
#include <cmath>
#include <limits>
#include <vector>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/float_elements.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {
namespace {

struct AttentionDims {
  int64_t batch, q_heads, kv_heads, q_len, kv_len, head, v_head;
};

AttentionDims attentionDims(const Node& node) {
  const std::vector<int64_t>& q = node.inputs[0]->type.dims;
  const std::vector<int64_t>& k = node.inputs[1]->type.dims;
  const std::vector<int64_t>& v = node.inputs[2]->type.dims;
  return {q[0], q[1], k[1], q[2], k[2], q[3], v[3]};
}

std::vector<TensorType> inferAttention(const Node& node, bool scores) {
  DType dtype = inputType(node, 0).dtype;
  if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16)
    failNode(node, "Q must be f32, f16 or bf16, got " + inputType(node, 0).str());
  for (size_t i = 0; i < 3; ++i) {
    const TensorType& t = inputType(node, i);
    if (t.dtype != dtype)
      failNode(node,
               "K and V must have Q's dtype, operand " + std::to_string(i) + " is " + t.str());
    if (t.rank() != 4)
      failNode(node, "Q, K and V must be [batch, heads, sequence, head size], operand " +
                         std::to_string(i) + " is " + t.str());
  }
  const std::vector<int64_t>& q = inputType(node, 0).dims;
  const std::vector<int64_t>& k = inputType(node, 1).dims;
  const std::vector<int64_t>& v = inputType(node, 2).dims;
  if (k[0] != q[0] || v[0] != q[0] || v[1] != k[1] || v[2] != k[2] || k[3] != q[3])
    failNode(node, "Q " + dimsStr(q) + ", K " + dimsStr(k) + " and V " + dimsStr(v) +
                       " do not agree (batch, key heads, key length, head size)");
  if (k[1] < 1 || q[1] % k[1] != 0)
    failNode(node, "the query heads (" + std::to_string(q[1]) +
                       ") must be a multiple of the key heads (" + std::to_string(k[1]) + ")");
  if (node.inputs.size() > 3 && node.inputs[3]) {
    const TensorType& m = node.inputs[3]->type;
    if (m.dtype != dtype && m.dtype != DType::Bool)
      failNode(node, "attn_mask must be bool or Q's dtype, got " + m.str());
    std::vector<int64_t> full = {q[0], q[1], q[2], k[2]};
    bool ok = m.rank() >= 1 && m.rank() <= 4 && m.dims.back() <= k[2];
    for (size_t d = 0; ok && d + 1 < m.rank(); ++d) {
      int64_t want = full[4 - m.rank() + d];
      ok = m.dims[d] == want || m.dims[d] == 1;
    }
    if (!ok)
      failNode(node, "attn_mask " + m.str() + " does not broadcast to " + dimsStr(full) +
                         " (its last dim may be shorter, padded as masked)");
  }
  if (node.inputs.size() > 4 && node.inputs[4]) {
    const TensorType& n = node.inputs[4]->type;
    if (n.dtype != DType::I64 || n.dims != std::vector<int64_t>{q[0]})
      failNode(node, "nonpad_kv_seqlen must be i64[" + std::to_string(q[0]) + "], got " + n.str());
  }
  double scale = node.f("scale"), softcap = node.f("softcap");
  if (!std::isfinite(scale)) failNode(node, "attribute 'scale' must be finite");
  if (!(softcap >= 0) || !std::isfinite(softcap))
    failNode(node, "attribute 'softcap' must be finite and >= 0 (0: none)");
  boolAttr(node, "is_causal");
  int64_t past = node.i("past_len");
  if (past < 0 || past > k[2])
    failNode(node, "attribute 'past_len' is " + std::to_string(past) + ", must be in [0, " +
                       std::to_string(k[2]) + "]");
  for (const char* key : {"left_window", "right_window"})
    if (node.i(key) < -1)
      failNode(node, std::string("attribute '") + key + "' must be >= -1 (-1: unbounded)");
  if (scores) {
    int64_t mode = node.i("mode");
    if (mode < 0 || mode > 3)
      failNode(node, "attribute 'mode' must be in [0, 3], got " + std::to_string(mode));
    return {TensorType{dtype, {q[0], q[1], q[2], k[2]}}};
  }
  return {TensorType{dtype, {q[0], q[1], q[2], v[3]}}};
}

// The reference: per (b, h, i) row, the scores and biases of every key, then
// Y or the requested scores.
void referenceAttention(const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out, bool scores) {
  AttentionDims d = attentionDims(node);
  DType t = node.inputs[0]->type.dtype;
  auto q = [&](int64_t i) { return loadFloat(t, in[0], i); };
  auto k = [&](int64_t i) { return loadFloat(t, in[1], i); };
  auto v = [&](int64_t i) { return loadFloat(t, in[2], i); };
  const Value* mask = node.inputs.size() > 3 ? node.inputs[3] : nullptr;
  const auto* nonpad =
      node.inputs.size() > 4 && node.inputs[4] ? static_cast<const int64_t*>(in[4]) : nullptr;
  auto y = [&](int64_t i, double value) { storeFloat(t, out[0], i, value); };
  double scale = node.f("scale"), softcap = node.f("softcap");
  bool causal = node.i("is_causal") != 0;
  int64_t left = node.i("left_window"), right = node.i("right_window");
  int64_t mode = scores ? node.i("mode") : -1;
  const double inf = std::numeric_limits<double>::infinity();
  // The mask's strides in [B, Hq, Sq, M] terms (0 where broadcast).
  std::vector<int64_t> mdims, mstride(4, 0);
  if (mask) {
    mdims = mask->type.dims;
    mdims.insert(mdims.begin(), 4 - mdims.size(), 1);
    int64_t stride = 1;
    for (int a = 3; a >= 0; --a) {
      mstride[a] = mdims[a] == 1 && a < 3 ? 0 : stride;
      stride *= mdims[a];
    }
  }
  std::vector<double> s(d.kv_len), bias(d.kv_len);
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.q_heads; ++h)
      for (int64_t i = 0; i < d.q_len; ++i) {
        int64_t kh = h / (d.q_heads / d.kv_heads);
        int64_t qi = ((b * d.q_heads + h) * d.q_len + i) * d.head;
        int64_t offset = nonpad ? nonpad[b] - d.q_len : node.i("past_len");
        bool all_masked = true;
        for (int64_t j = 0; j < d.kv_len; ++j) {
          int64_t kj = ((b * d.kv_heads + kh) * d.kv_len + j) * d.head;
          double dot = 0;
          for (int64_t c = 0; c < d.head; ++c) dot += q(qi + c) * k(kj + c);
          s[j] = dot * scale;
          if (softcap > 0) s[j] = softcap * std::tanh(s[j] / softcap);
          double bj = 0;
          if (mask) {
            if (j >= mdims[3]) {
              bj = -inf;
            } else {
              int64_t at = (mdims[0] == 1 ? 0 : b) * mstride[0] +
                           (mdims[1] == 1 ? 0 : h) * mstride[1] +
                           (mdims[2] == 1 ? 0 : i) * mstride[2] + j;
              if (mask->type.dtype == DType::Bool)
                bj = static_cast<const uint8_t*>(in[3])[at] ? 0.0 : -inf;
              else
                bj = loadFloat(t, in[3], at);
            }
          }
          int64_t diff = i + offset - j;
          if (causal && diff < 0) bj = -inf;
          if ((left >= 0 && diff > left) || (right >= 0 && -diff > right)) bj = -inf;
          if (nonpad && j >= nonpad[b]) bj = -inf;
          bias[j] = bj;
          all_masked = all_masked && bj == -inf;
        }
        int64_t row = (b * d.q_heads + h) * d.q_len + i;
        if (mode == 0 || mode == 1 || mode == 2) {
          for (int64_t j = 0; j < d.kv_len; ++j)
            y(row * d.kv_len + j, mode == 2 ? s[j] + bias[j] : s[j]);
          continue;
        }
        double max = -inf;
        for (int64_t j = 0; j < d.kv_len; ++j) max = std::max(max, s[j] + bias[j]);
        double sum = 0;
        for (int64_t j = 0; j < d.kv_len; ++j) {
          s[j] = all_masked ? 0.0 : std::exp(s[j] + bias[j] - max);
          sum += s[j];
        }
        for (int64_t j = 0; j < d.kv_len; ++j) s[j] = sum > 0 ? s[j] / sum : 0.0;
        if (mode == 3) {
          for (int64_t j = 0; j < d.kv_len; ++j) y(row * d.kv_len + j, s[j]);
          continue;
        }
        for (int64_t c = 0; c < d.v_head; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < d.kv_len; ++j)
            acc += s[j] * v(((b * d.kv_heads + kh) * d.kv_len + j) * d.v_head + c);
          y(row * d.v_head + c, acc);
        }
      }
}

}  // namespace

OpSchema makeAttentionSchema() {
  OpSchema schema;
  schema.name = "Attention";
  schema.min_inputs = 3;
  schema.max_inputs = 5;
  schema.infer = [](const Node& node) { return inferAttention(node, false); };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    referenceAttention(node, in, out, false);
  };
  return schema;
}

OpSchema makeAttentionScoresSchema() {
  OpSchema schema;
  schema.name = "AttentionScores";
  schema.min_inputs = 3;
  schema.max_inputs = 5;
  schema.infer = [](const Node& node) { return inferAttention(node, true); };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) { referenceAttention(node, in, out, true); };
  return schema;
}

}  // namespace nanoc
