// Slice: along every axis d, the elements starts[d], starts[d] + steps[d], ...
// up to but excluding ends[d]. The frontend resolves ONNX's negative and
// out-of-range starts and ends, so each is clamped already: for steps[d] > 0,
// 0 <= starts[d], ends[d] <= dim; for steps[d] < 0, -1 <= starts[d], ends[d]
// <= dim - 1 (ends[d] = -1 runs through element 0); 0 < |steps[d]| <=
// max(dim, 1), a longer step taking the same one element. Any dtype.
#include "compiler/ir/op_registry.h"
#include "compiler/ops/data_movement.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {
namespace {

// Output dims from the canonical attributes; fails on any out of range.
std::vector<int64_t> sliceDims(const Node& node) {
  const TensorType& x = inputType(node, 0);
  size_t rank = x.rank();
  const std::vector<int64_t>& starts = intsAttr(node, "starts", rank, INT64_MIN);
  const std::vector<int64_t>& ends = intsAttr(node, "ends", rank, INT64_MIN);
  const std::vector<int64_t>& steps = intsAttr(node, "steps", rank, INT64_MIN);
  std::vector<int64_t> dims(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t dim = x.dims[d], s = starts[d], e = ends[d], step = steps[d];
    int64_t max_step = dim > 1 ? dim : 1;
    bool ok = step > 0 ? (s >= 0 && s <= dim && e >= 0 && e <= dim && step <= max_step)
                       : (step < 0 && step >= -max_step && s >= -1 && s <= dim - 1 && e >= -1 &&
                          e <= dim - 1);
    if (!ok)
      failNode(node, "axis " + std::to_string(d) + " of " + x.str() + ": start " +
                         std::to_string(s) + ", end " + std::to_string(e) + ", step " +
                         std::to_string(step) + " are not clamped to the axis");
    // ceil((e - s) / step) elements when positive; the operands are small.
    int64_t span = step > 0 ? e - s : s - e;
    int64_t abs_step = step > 0 ? step : -step;
    dims[d] = span <= 0 ? 0 : (span - 1) / abs_step + 1;
  }
  return dims;
}

}  // namespace

OpSchema makeSliceSchema() {
  OpSchema schema;
  schema.name = "Slice";
  schema.infer = [](const Node& node) {
    return std::vector<TensorType>{{inputType(node, 0).dtype, sliceDims(node)}};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const TensorType& x = node.inputs[0]->type;
    const TensorType& y = node.outputs[0]->type;
    if (y.numel() == 0) return;
    StridedView view = sliceView(node);
    copyStrided(in[0], out[0], dtypeSize(x.dtype), y.dims, view.base, view.strides);
  };
  return schema;
}

}  // namespace nanoc
