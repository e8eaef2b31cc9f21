// BitCast: the same bytes read as another dtype of the same element size
// (ONNX BitCast-26), so the same shape. The attribute `to` is a DType number.
// It runs as a copy thunk (compile.cc), as Identity does.
#include <cstring>
#include <string>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

OpSchema makeBitCastSchema() {
  OpSchema schema;
  schema.name = "BitCast";
  schema.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    int64_t to = node.i("to");
    if (to < 0 || to > static_cast<int64_t>(DType::F8E5M2FNUZ))
      failNode(node, "attribute 'to' (" + std::to_string(to) + ") is not a dtype");
    DType d = static_cast<DType>(to);
    if (dtypeSize(d) != dtypeSize(x.dtype))
      failNode(node, "cannot reinterpret " + std::string(dtypeName(x.dtype)) + " as " +
                         std::string(dtypeName(d)) + ": the element sizes differ");
    return std::vector<TensorType>{{d, x.dims}};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    if (const uint64_t bytes = node.outputs[0]->type.bytes()) std::memcpy(out[0], in[0], bytes);
  };
  return schema;
}

}  // namespace nanoc
