// nanoc.ToDevice and nanoc.ToHost: the same tensor on the other side of the
// host/GPU boundary. The GPU placement pass (passes/gpu_placement.h) inserts
// them where a value made on one side is read on the other; each runs as a
// GpuCopyThunk (compile.cc), and the arena plan puts ToDevice's result in the
// device arena and ToHost's in the host arena (or the caller's output).
#include <cstring>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

std::vector<OpSchema> deviceCopySchemas() {
  std::vector<OpSchema> out;
  for (const char* name : {"nanoc.ToDevice", "nanoc.ToHost"}) {
    OpSchema schema;
    schema.name = name;
    schema.infer = [](const Node& node) { return std::vector<TensorType>{inputType(node, 0)}; };
    schema.reference = [](const Node& node, const std::vector<const void*>& in,
                          const std::vector<void*>& out) {
      if (const uint64_t bytes = node.outputs[0]->type.bytes()) std::memcpy(out[0], in[0], bytes);
    };
    out.push_back(std::move(schema));
  }
  return out;
}

}  // namespace nanoc
