// The IR's text format (.nir), for tests and `nanoc --emit=ir`. Printing then
// parsing gives back the same graph, and parse then print gives back the same
// text for any printed graph (print ∘ parse is the identity).
//
//   graph @mlp(%x: f32[1,64]) -> (%y) {
//     %w = constant f32[64,10] dense<[0.5, -1, ...]>
//     %h = Gemm(%x, %w, _) {alpha = 1.0, beta = 1.0, transA = 0, transB = 1} name "fc1" : f32[1,10]
//     %y = Relu(%h) name "relu" : f32[1,10]
//   }
//
// `_` is an absent optional input; `: type` after a node is optional on input
// (shape inference fills it in) and always printed when known.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "compiler/ir/graph.h"

namespace nanoc {

std::string printGraph(const Graph& graph);

// Throws CompileError "<source>:<line>:<col>: message" on a syntax error or an
// undefined value.
std::unique_ptr<Graph> parseGraph(std::string_view text, const std::string& source = "<input>");

}  // namespace nanoc
