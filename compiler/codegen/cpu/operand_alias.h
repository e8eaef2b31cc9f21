// Tells LLVM what the kernel ABI guarantees: no output overlaps an input or
// another output (inputs may alias each other: Add(x, x)), except the input a
// lowering names in_place_input (lowering.h), which such a lowering does not
// annotate. Without it the vectorizer versions every loop with run-time
// overlap checks and LICM cannot hoist a broadcast operand's load out of a
// loop that stores.
#pragma once

#include "compiler/codegen/cpu/lowering.h"

namespace nanoc::cpu {

// Annotates every load and store of kb.fn whose address derives from an
// operand pointer with alias-scope metadata. Call after the body is emitted.
void addOperandAliasScopes(KernelBuilder& kb);

}  // namespace nanoc::cpu
