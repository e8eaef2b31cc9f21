// Gemm: Y = alpha * op(A) * op(B) + beta * C, A and B 2-D, op = optional
// transpose, C absent or unidirectionally broadcastable to [M, N].
#include "compiler/ops/gemm.h"

#include <algorithm>
#include <cmath>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/broadcast.h"
#include "compiler/ops/epilogue.h"
#include "compiler/ops/schema_checks.h"
#include "compiler/ops/split_k.h"

namespace nanoc {

GemmShape gemmShape(const Node& node) {
  requireRank(node, 0, "A", 2);
  requireRank(node, 1, "B", 2);
  requireF32(node);
  for (const char* key : {"alpha", "beta"})
    if (!std::isfinite(node.f(key)))
      failNode(node, std::string("attribute '") + key + "' is not finite");
  GemmShape s;
  s.trans_a = boolAttr(node, "transA");
  s.trans_b = boolAttr(node, "transB");
  const std::vector<int64_t>& a = node.inputs[0]->type.dims;
  const std::vector<int64_t>& b = node.inputs[1]->type.dims;
  s.m = s.trans_a ? a[1] : a[0];
  s.k = s.trans_a ? a[0] : a[1];
  int64_t kb = s.trans_b ? b[1] : b[0];
  s.n = s.trans_b ? b[0] : b[1];
  if (kb != s.k)
    failNode(node, "inner dims differ: op(A) is [" + std::to_string(s.m) + "," +
                       std::to_string(s.k) + "], op(B) is [" + std::to_string(kb) + "," +
                       std::to_string(s.n) + "]");
  if (node.inputs.size() > 2 && node.inputs[2]) {
    const TensorType& c = node.inputs[2]->type;
    std::vector<int64_t> mn = {s.m, s.n};
    bool ok = c.rank() <= 2;
    // Unidirectional: C may only be stretched, never [M, N] itself.
    for (size_t i = 0; ok && i < c.rank(); ++i) {
      int64_t dc = c.dims[c.rank() - 1 - i];
      ok = dc == 1 || dc == mn[1 - i];
    }
    if (!ok) failNode(node, "C " + c.str() + " does not broadcast to " + dimsStr(mn));
  }
  return s;
}

OpSchema makeGemmSchema() {
  OpSchema schema;
  schema.name = "Gemm";
  schema.min_inputs = 2;
  schema.max_inputs = 4;  // A, B, C?, the fused residual? (ops/epilogue.h)
  schema.infer = [](const Node& node) {
    GemmShape s = gemmShape(node);
    TensorType y{DType::F32, {s.m, s.n}};
    checkEpilogue(node, y);
    // Split along K (ops/split_k.h): the partial sums [S, M, N].
    addSplitKSlices(node, s.k, y);
    return std::vector<TensorType>{y};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    GemmShape s = gemmShape(node);
    double alpha = node.f("alpha"), beta = node.f("beta");
    const float* a = static_cast<const float*>(in[0]);
    const float* b = static_cast<const float*>(in[1]);
    const float* c = in.size() > 2 ? static_cast<const float*>(in[2]) : nullptr;
    std::vector<int64_t> sc = {0, 0};
    if (c) sc = broadcastStrides(node.inputs[2]->type.dims, {s.m, s.n});
    // Split along K: slice `slice` of [0, K) into Y's slice-th matrix.
    const KSlices ks = kSlicesOf(node, s.k);
    for (int64_t slice = 0; slice < ks.count; ++slice) {
      float* y = static_cast<float*>(out[0]) + slice * s.m * s.n;
      const int64_t k_end = std::min(s.k, (slice + 1) * ks.chunk);
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; ++j) {
          double acc = 0;
          for (int64_t p = slice * ks.chunk; p < k_end; ++p) {
            float av = s.trans_a ? a[p * s.m + i] : a[i * s.k + p];
            float bv = s.trans_b ? b[j * s.k + p] : b[p * s.n + j];
            acc += static_cast<double>(av) * bv;
          }
          double v = alpha * acc;
          if (c) v += beta * c[i * sc[0] + j * sc[1]];
          y[i * s.n + j] = static_cast<float>(v);
        }
    }
    applyEpilogue(
        epilogueSpec(node), static_cast<float*>(out[0]),
        in.size() > kResidualInput ? static_cast<const float*>(in[kResidualInput]) : nullptr,
        s.m * s.n);
  };
  return schema;
}

}  // namespace nanoc
