// Transpose: output dim i = input dim perm[i]. Any dtype.
#include <cstring>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

OpSchema makeTransposeSchema() {
  OpSchema schema;
  schema.name = "Transpose";
  schema.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    const std::vector<int64_t>& perm = node.ints("perm");
    if (perm.size() != x.rank())
      failNode(node, "attribute 'perm' " + dimsStr(perm) + " has " + std::to_string(perm.size()) +
                         " entries for " + x.str());
    std::vector<bool> seen(x.rank(), false);
    TensorType y{x.dtype, {}};
    for (int64_t p : perm) {
      if (p < 0 || p >= static_cast<int64_t>(x.rank()) || seen[p])
        failNode(node, "attribute 'perm' " + dimsStr(perm) + " is not a permutation of [0, " +
                           std::to_string(x.rank()) + ")");
      seen[p] = true;
      y.dims.push_back(x.dims[p]);
    }
    return std::vector<TensorType>{y};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const TensorType& x = node.inputs[0]->type;
    const std::vector<int64_t>& perm = node.ints("perm");
    const std::vector<int64_t>& ydims = node.outputs[0]->type.dims;
    size_t rank = x.rank();
    size_t esize = dtypeSize(x.dtype);
    // Input strides seen from the output: output dim i walks input dim perm[i].
    std::vector<int64_t> xstride(rank, 1), stride(rank);
    for (size_t d = rank; d-- > 1;) xstride[d - 1] = xstride[d] * x.dims[d];
    for (size_t i = 0; i < rank; ++i) stride[i] = xstride[perm[i]];
    const uint8_t* src = static_cast<const uint8_t*>(in[0]);
    uint8_t* dst = static_cast<uint8_t*>(out[0]);
    int64_t n = x.numel();
    std::vector<int64_t> index(rank, 0);
    int64_t offset = 0;
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(dst + i * esize, src + offset * esize, esize);
      for (size_t d = rank; d-- > 0;) {
        offset += stride[d];
        if (++index[d] < ydims[d]) break;
        offset -= stride[d] * ydims[d];
        index[d] = 0;
      }
    }
  };
  return schema;
}

}  // namespace nanoc
