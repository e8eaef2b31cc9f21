// Pad: output dim d is dims[d] + pads[d] + pads[rank + d]. Negative pads crop
// the axis first; then output element o reads coordinate i = o - (positive
// begin pad) of the cropped axis, and where i is outside it, `mode` decides:
//   constant: the element is `value` (input 1, a scalar of X's dtype; absent
//             means 0),
//   edge:     i is clamped to the axis,
//   reflect:  i is reflected about the first and last element, repeating
//             (numpy's 'reflect'); an axis of size 1 reads element 0,
//   wrap:     i is taken modulo the axis size.
// Any dtype.
#include "compiler/ops/pad.h"

#include <cstring>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/data_movement.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

PadMode padMode(const Node& node) {
  const std::string& mode = node.s("mode");
  if (mode == "constant") return PadMode::Constant;
  if (mode == "edge") return PadMode::Edge;
  if (mode == "reflect") return PadMode::Reflect;
  if (mode == "wrap") return PadMode::Wrap;
  failNode(node, "attribute 'mode' is '" + mode + "', not constant, edge, reflect or wrap");
}

int64_t padSource(PadMode mode, int64_t i, int64_t dim) {
  if (i >= 0 && i < dim) return i;
  switch (mode) {
    case PadMode::Constant:
      return -1;
    case PadMode::Edge:
      return i < 0 ? 0 : dim - 1;
    case PadMode::Wrap:
      return ((i % dim) + dim) % dim;
    case PadMode::Reflect: {
      if (dim == 1) return 0;
      int64_t period = 2 * (dim - 1);
      int64_t m = ((i % period) + period) % period;
      return m >= dim ? period - m : m;
    }
  }
  return -1;
}

PadAxis padAxis(int64_t dim, int64_t begin, int64_t end) {
  PadAxis a;
  a.pad_begin = begin > 0 ? begin : 0;
  a.crop_begin = begin < 0 ? -begin : 0;
  a.kept = dim - a.crop_begin - (end < 0 ? -end : 0);
  return a;
}

OpSchema makePadSchema() {
  OpSchema schema;
  schema.name = "Pad";
  schema.min_inputs = 1;
  schema.max_inputs = 2;
  schema.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    PadMode mode = padMode(node);
    // Bounded so that no pad arithmetic can overflow.
    constexpr int64_t kMaxPad = int64_t{1} << 40;
    const std::vector<int64_t>& pads = intsAttr(node, "pads", 2 * x.rank(), -kMaxPad);
    for (int64_t p : pads)
      if (p > kMaxPad) failNode(node, "attribute 'pads' " + dimsStr(pads) + " is out of range");
    if (node.inputs.size() > 1 && node.inputs[1]) {
      const TensorType& v = node.inputs[1]->type;
      if (v.dtype != x.dtype || v.numel() != 1)
        failNode(node, "value must be one element of " + x.str() + "'s dtype, got " + v.str());
    }
    TensorType y{x.dtype, x.dims};
    int64_t numel = 1;
    for (size_t d = 0; d < x.rank(); ++d) {
      int64_t out = 0;
      if (__builtin_add_overflow(x.dims[d], pads[d], &out) ||
          __builtin_add_overflow(out, pads[x.rank() + d], &out) || out < 0 ||
          __builtin_mul_overflow(numel, out, &numel))
        failNode(node, "attribute 'pads' " + dimsStr(pads) + " is out of range for " + x.str());
      PadAxis a = padAxis(x.dims[d], pads[d], pads[x.rank() + d]);
      if (a.kept < 0 || (a.kept == 0 && out > 0 && mode != PadMode::Constant))
        failNode(node, "pads " + dimsStr(pads) + " leave nothing of axis " + std::to_string(d) +
                           " of " + x.str() + " to pad from in mode " + node.s("mode"));
      y.dims[d] = out;
    }
    return std::vector<TensorType>{y};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const TensorType& x = node.inputs[0]->type;
    const TensorType& y = node.outputs[0]->type;
    PadMode mode = padMode(node);
    const std::vector<int64_t>& pads = node.ints("pads");
    size_t esize = dtypeSize(x.dtype);
    std::vector<uint8_t> fill(esize, 0);
    if (in.size() > 1 && in[1]) std::memcpy(fill.data(), in[1], esize);
    std::vector<int64_t> xs = stridesOf(x.dims);
    const auto* src = static_cast<const uint8_t*>(in[0]);
    auto* dst = static_cast<uint8_t*>(out[0]);
    forEachIndex(y.dims, [&](const std::vector<int64_t>& index, int64_t i) {
      int64_t at = 0;
      for (size_t d = 0; d < x.rank() && at >= 0; ++d) {
        PadAxis a = padAxis(x.dims[d], pads[d], pads[x.rank() + d]);
        int64_t s = padSource(mode, index[d] - a.pad_begin, a.kept);
        at = s < 0 ? -1 : at + (a.crop_begin + s) * xs[d];
      }
      std::memcpy(dst + i * esize, at < 0 ? fill.data() : src + at * esize, esize);
    });
  };
  return schema;
}

}  // namespace nanoc
