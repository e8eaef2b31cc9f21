// CPU lowerings of the data movement operators.
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/lowering.h"

namespace nanoc::cpu {

std::vector<std::pair<std::string, Lowering>> dataMovementLowerings() { return {}; }

}  // namespace nanoc::cpu
