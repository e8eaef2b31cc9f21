// CPU lowerings of the normalizations operators.
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/lowering.h"

namespace nanoc::cpu {

std::vector<std::pair<std::string, Lowering>> normalizationLowerings() { return {}; }

}  // namespace nanoc::cpu
