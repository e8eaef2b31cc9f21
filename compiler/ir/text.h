// The IR's text format (.nir), for tests and `nanoc --emit=ir`. Printing then
// parsing gives back the same graph, and parse then print gives back the same
// text for any printed graph (print ∘ parse is the identity).
//
//   graph @mlp(%x: f32[1,64]) -> (%y) {
//     %w = constant f32[64,10] dense_hex<"0000003f...">
//     %h = Gemm(%x, %w, _) {alpha = 1.0, beta = 1.0, transA = 0, transB = 1} name "fc1" : f32[1,10]
//     %y = Relu(%h) name "relu" : f32[1,10]
//   }
//
// Names. `%name` and `@name` are bare when the name is [A-Za-z0-9_.]+ and
// quoted otherwise (`%"conv/1:0"`); op names and attribute keys are bare when
// they are identifiers ([A-Za-z_][A-Za-z0-9_.]*). Strings escape `\"`, `\\`,
// `\n`, `\t` and other control bytes as `\XX` (two hex digits).
//
// Statements, one per value definition, in any layout (newlines are not
// significant); `//` starts a comment to the end of the line.
//   %c = constant TYPE DATA
//   %a, %b = Op(%x, _, %y) {key = value, ...} name "node" : (TYPE, TYPE)
// `_` is an absent optional input. The attribute block is left out when empty.
// `name "..."` is always printed; a node parsed without it takes its op's name
// made unique. `: type` after a node is optional on input (shape inference
// fills it in) and printed when known; several results take `(t1, t2)`, with
// `?` for a result still untyped. A node with no results is written `Op(...)`.
// Constants print before all nodes. Every value must be defined before use;
// graph outputs may name any value.
//
// Types: `f32[1,3,8,8]`, `i64[]` for a scalar; the dtype names of dtype.h.
//
// Constant data, elements in row-major order:
//   dense<[e0, e1, ...]>   a list; printed for constants of <= 64 elements
//   dense<e>               a splat: every element equal (printed when numel > 1)
//   dense_hex<"0a1b...">   the raw little-endian bytes; printed for larger ones
// Elements: f32 as the shortest decimal that reads back to the same float
// (`0.1`, `1e-05`, `inf`), NaN as its bit pattern (`0x7fc00000`); f16 and bf16
// always as bit patterns (`0x3c00`); integers in decimal; bool as true/false.
//
// Attribute values: int `3`, float `1.0` / `1e-05` / `inf` / `nan` (always with
// a '.', an exponent or a name, the shortest text that reads back to the same
// double), string `"same_upper"`, int list `[1, 2]`, float list `[0.5, 1.0]`;
// an empty list `[]` is ints, `floats[]` is an empty float list.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "compiler/ir/graph.h"

namespace nanoc {

std::string printGraph(const Graph& graph);

// Throws CompileError "<source>:<line>:<col>: message" on a syntax error, an
// undefined or redefined value or node name, an unknown dtype or malformed
// constant data. Builds the graph only: runs neither shape inference nor the
// verifier.
std::unique_ptr<Graph> parseGraph(std::string_view text, const std::string& source = "<input>");

}  // namespace nanoc
