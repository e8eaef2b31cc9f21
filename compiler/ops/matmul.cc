// MatMul: numpy matmul semantics. A 1-D A is promoted to [1, K] and a 1-D B to
// [K, 1], the added dim is removed from the result, and the batch dims (all
// but the last two) broadcast.
#include <algorithm>
#include <optional>
#include <vector>

#include "compiler/ir/error.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ops/broadcast.h"
#include "compiler/ops/epilogue.h"
#include "compiler/ops/operand_view.h"
#include "compiler/ops/schema_checks.h"
#include "compiler/ops/split_k.h"

namespace nanoc {
namespace {

struct MatMulShape {
  std::vector<int64_t> batch_a, batch_b, batch;  // batch = broadcast(batch_a, batch_b)
  int64_t m = 0, k = 0, n = 0;
  std::vector<int64_t> out;
};

MatMulShape matmulShape(const Node& node) {
  // A view (ops/operand_view.h) gives the operand's dims.
  const TensorType a = operandType(node, 0);
  const TensorType b = operandType(node, 1);
  requireF32(node);
  if (a.rank() < 1 || b.rank() < 1)
    failNode(node, "operands must have rank >= 1, got " + a.str() + " and " + b.str());
  std::vector<int64_t> da = a.dims, db = b.dims;
  if (da.size() == 1) da.insert(da.begin(), 1);
  if (db.size() == 1) db.push_back(1);
  MatMulShape s;
  s.m = da[da.size() - 2];
  s.k = da.back();
  s.n = db.back();
  if (db[db.size() - 2] != s.k) failNode(node, "inner dims differ: " + a.str() + " x " + b.str());
  s.batch_a.assign(da.begin(), da.end() - 2);
  s.batch_b.assign(db.begin(), db.end() - 2);
  try {
    s.batch = broadcastShapes(s.batch_a, s.batch_b);
  } catch (const CompileError& e) {
    failNode(node, std::string("batch dims: ") + e.what());
  }
  s.out = s.batch;
  if (a.rank() > 1) s.out.push_back(s.m);
  if (b.rank() > 1) s.out.push_back(s.n);
  return s;
}

}  // namespace

OpSchema makeMatMulSchema() {
  OpSchema schema;
  schema.name = "MatMul";
  // A, B, then optionally a fused bias at 2 (passes/fuse_epilogue.h: the
  // Add of a constant row vector after the product, Y[..., i, j] += bias[j],
  // f32 [N] or [1, ..., 1, N], added to the product rounded to f32) and a
  // fused residual (ops/epilogue.h) at 3. With split_k_chunk (ops/split_k.h)
  // the partial sums [S, Y's dims...] over slices of K. A and B may be read
  // through views of inputs 0 and 1 (ops/operand_view.h).
  schema.min_inputs = 2;
  schema.max_inputs = 4;
  schema.infer = [](const Node& node) {
    MatMulShape s = matmulShape(node);
    if (node.inputs.size() > 2 && node.inputs[2]) {
      const TensorType& bias = node.inputs[2]->type;
      bool row = bias.dtype == DType::F32 && bias.rank() >= 1 && bias.dims.back() == s.n &&
                 bias.rank() <= s.out.size();
      for (size_t d = 0; row && d + 1 < bias.rank(); ++d) row = bias.dims[d] == 1;
      if (!row)
        failNode(node, "bias (input 2) must be f32 [" + std::to_string(s.n) + "] or [1, ..., 1, " +
                           std::to_string(s.n) + "], got " + bias.str());
    }
    TensorType y{DType::F32, s.out};
    checkEpilogue(node, y);
    addSplitKSlices(node, s.k, y);
    return std::vector<TensorType>{y};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    MatMulShape s = matmulShape(node);
    const float* a = static_cast<const float*>(in[0]);
    const float* b = static_cast<const float*>(in[1]);
    // Operands read through views: gathered dense first.
    std::vector<float> a_dense, b_dense;
    if (std::optional<OperandView> v = operandView(node, 0)) {
      a_dense.resize(static_cast<size_t>(product(v->shape, 0, v->shape.size())));
      gatherOperandView(*v, a, a_dense.data());
      a = a_dense.data();
    }
    if (std::optional<OperandView> v = operandView(node, 1)) {
      b_dense.resize(static_cast<size_t>(product(v->shape, 0, v->shape.size())));
      gatherOperandView(*v, b, b_dense.data());
      b = b_dense.data();
    }
    const float* bias = in.size() > 2 ? static_cast<const float*>(in[2]) : nullptr;
    float* y = static_cast<float*>(out[0]);
    // Batch strides count whole matrices; 0 where an operand is broadcast.
    std::vector<int64_t> sa = broadcastStrides(s.batch_a, s.batch);
    std::vector<int64_t> sb = broadcastStrides(s.batch_b, s.batch);
    int64_t batches = product(s.batch, 0, s.batch.size());
    // Split along K: slice `slice` of [0, K) into y's slice-th matrix stack.
    const KSlices ks = kSlicesOf(node, s.k);
    for (int64_t slice = 0; slice < ks.count; ++slice)
      for (int64_t bi = 0; bi < batches; ++bi) {
        int64_t oa = 0, ob = 0, rest = bi;
        for (size_t d = s.batch.size(); d-- > 0;) {
          int64_t idx = rest % s.batch[d];
          rest /= s.batch[d];
          oa += idx * sa[d];
          ob += idx * sb[d];
        }
        const float* am = a + oa * s.m * s.k;
        const float* bm = b + ob * s.k * s.n;
        float* ym = y + (slice * batches + bi) * s.m * s.n;
        const int64_t k_end = std::min(s.k, (slice + 1) * ks.chunk);
        for (int64_t i = 0; i < s.m; ++i)
          for (int64_t j = 0; j < s.n; ++j) {
            double acc = 0;
            for (int64_t p = slice * ks.chunk; p < k_end; ++p)
              acc += static_cast<double>(am[i * s.k + p]) * bm[p * s.n + j];
            ym[i * s.n + j] = static_cast<float>(acc);
            if (bias) ym[i * s.n + j] += bias[j];
          }
      }
    applyEpilogue(
        epilogueSpec(node), y,
        in.size() > kResidualInput ? static_cast<const float*>(in[kResidualInput]) : nullptr,
        batches * s.m * s.n);
  };
  return schema;
}

}  // namespace nanoc
