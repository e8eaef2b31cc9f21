// The data movement operators: shape rules and references.
#include <vector>

#include "compiler/ir/op_registry.h"

namespace nanoc {

std::vector<OpSchema> dataMovementSchemas() { return {}; }

}  // namespace nanoc
