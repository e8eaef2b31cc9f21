// Placeholder until the real lowering lands: the registry links, and compiling
// a model that uses these ops fails with a clear error.
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/ir/error.h"

namespace nanoc::cpu {

Lowering makeSoftmaxLowering() {
  return {
      [](const Node&) -> uint64_t { return 1; },
      [](KernelBuilder& kb) -> void {
        throw CompileError("node '" + kb.node.name + "' (Softmax): CPU lowering not written yet");
      }};
}

}  // namespace nanoc::cpu
