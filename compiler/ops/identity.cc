// Identity: a copy. Any dtype. legalizeOutputs inserts it where a graph output
// needs a producing node of its own.
#include <cstring>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

OpSchema makeIdentitySchema() {
  OpSchema schema;
  schema.name = "Identity";
  schema.infer = [](const Node& node) { return std::vector<TensorType>{inputType(node, 0)}; };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    // A zero-element constant may have no storage (in[0] NULL): memcpy's
    // pointers must be valid even for 0 bytes.
    if (const uint64_t bytes = node.outputs[0]->type.bytes()) std::memcpy(out[0], in[0], bytes);
  };
  return schema;
}

}  // namespace nanoc
