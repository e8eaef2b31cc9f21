// The normalizations operators: shape rules and references.
#include <vector>

#include "compiler/ir/op_registry.h"

namespace nanoc {

std::vector<OpSchema> normalizationSchemas() { return {}; }

}  // namespace nanoc
