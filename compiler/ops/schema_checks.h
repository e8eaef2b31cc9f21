// Checks shared by the op files' shape rules. Every failure is a CompileError
// that names the node and op ("node 'conv1' (Conv): ..."), so a rejected model
// points at the place to look.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace nanoc {

[[noreturn]] void failNode(const Node& node, const std::string& message);

// The type of a required operand; fails if the node lacks it.
const TensorType& inputType(const Node& node, size_t index);

// Compute ops are f32 only in this version: fails naming the first present
// operand of another dtype.
void requireF32(const Node& node);

void requireRank(const Node& node, size_t index, const char* operand, size_t rank);

// An int attribute restricted to 0 or 1.
int64_t boolAttr(const Node& node, const std::string& key);

// An ints attribute with exactly `count` entries, each >= `min_value`.
const std::vector<int64_t>& intsAttr(const Node& node, const std::string& key, size_t count,
                                     int64_t min_value);

// "[1,3,8,8]"
std::string dimsStr(const std::vector<int64_t>& dims);

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end);

}  // namespace nanoc
