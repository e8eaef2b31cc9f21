// CPU lowerings of the reductions operators.
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/lowering.h"

namespace nanoc::cpu {

std::vector<std::pair<std::string, Lowering>> reductionLowerings() { return {}; }

}  // namespace nanoc::cpu
