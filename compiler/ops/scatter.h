// The reduction of ScatterND and ScatterElements, decoded once for the shape
// rules, the references and the CPU lowering.
#pragma once

#include <cstdint>

#include "compiler/ir/graph.h"

namespace nanoc {

enum class ScatterReduction { None, Add, Mul, Max, Min };

// The node's `reduction` attribute; fails naming the node when unknown.
ScatterReduction scatterReduction(const Node& node);

// dst[i] = dst[i] <reduction> src[i] for `count` elements of `dtype`
// (None: dst[i] = src[i]). Integers wrap around; f16 and bf16 are computed
// in f32 and rounded once, as the lowering does; bool adds as "or" and
// multiplies as "and".
void scatterCombine(ScatterReduction reduction, DType dtype, void* dst, const void* src,
                    int64_t count);

}  // namespace nanoc
