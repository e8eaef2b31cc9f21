// Folds an inference BatchNormalization into the Conv that feeds it:
//   BN(Conv(x, W, B)) = Conv(x, W * s, (B - mean) * s + bias),  s = scale / sqrt(var + eps)
// per output channel, when W, B and the BN parameters are constants and the
// Conv's result has no other use. One kernel and one pass over the
// activations instead of two.
#pragma once

#include "compiler/ir/graph.h"

namespace nanoc {

// Returns the number of BatchNormalization nodes folded. The Conv takes over
// the BN's result value (its name included); the folded BN nodes are left
// dead for dead-code elimination to drop.
int foldBatchNormIntoConv(Graph& graph);

}  // namespace nanoc
