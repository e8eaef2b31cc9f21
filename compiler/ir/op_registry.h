// One place per op that knows its semantics: compiler/ops/<op>.cc registers an
// OpSchema here (shape rule, reference implementation), found by name. The CPU
// lowering lives in compiler/codegen/cpu and is found by the same name.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"

namespace nanoc {

struct OpSchema {
  std::string name;
  int min_inputs = 1;
  int max_inputs = 1;
  int num_outputs = 1;
  // Computes the output types from the (typed) inputs and attributes. Throws
  // CompileError naming the node on invalid input.
  std::function<std::vector<TensorType>(const Node&)> infer;
  // Host reference implementation, used by constant folding and tests. Inputs
  // and outputs are dense row-major buffers of the node's types; an absent
  // optional input is nullptr. Empty when the op has none yet.
  std::function<void(const Node&, const std::vector<const void*>& inputs,
                     const std::vector<void*>& outputs)>
      reference;
};

// The table is filled on first use by compiler/ops/all_ops.cc, which calls
// each op file's `OpSchema make<Op>Schema()` (explicit, so a static library
// drops nothing). Returns null for an unknown op.
const OpSchema* findOp(std::string_view name);
std::vector<std::string> registeredOps();  // sorted

}  // namespace nanoc
