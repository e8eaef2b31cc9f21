// Trilu: keeps the upper (upper = 1: column - row >= k) or lower (upper = 0:
// column - row <= k) triangle of each matrix in the last two dims and zeroes
// the rest. Rank >= 2, any dtype.
#include <cstring>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/data_movement.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

OpSchema makeTriluSchema() {
  OpSchema schema;
  schema.name = "Trilu";
  schema.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    boolAttr(node, "upper");
    node.i("k");
    if (x.rank() < 2) failNode(node, "input " + x.str() + " must have rank >= 2");
    return std::vector<TensorType>{x};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const TensorType& x = node.inputs[0]->type;
    bool upper = node.i("upper") != 0;
    int64_t k = node.i("k");
    int64_t rows = x.dims[x.rank() - 2], cols = x.dims[x.rank() - 1];
    int64_t esize = dtypeSize(x.dtype);
    int64_t n = x.numel();
    const auto* src = static_cast<const uint8_t*>(in[0]);
    auto* dst = static_cast<uint8_t*>(out[0]);
    for (int64_t i = 0; i < n; ++i) {
      // k may be any int64: compare without forming column - row - k.
      int64_t col = i % cols, row = (i / cols) % rows;
      bool keep = upper ? col - row >= k : col - row <= k;
      if (keep)
        std::memcpy(dst + i * esize, src + i * esize, esize);
      else
        std::memset(dst + i * esize, 0, esize);
    }
  };
  return schema;
}

}  // namespace nanoc
