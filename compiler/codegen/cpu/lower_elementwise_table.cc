// CPU lowerings of the elementwise table's operators.
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/lowering.h"

namespace nanoc::cpu {

std::vector<std::pair<std::string, Lowering>> elementwiseTableLowerings() { return {}; }

}  // namespace nanoc::cpu
