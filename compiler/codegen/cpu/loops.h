// Small IRBuilder helpers shared by the lowerings: counted loops and typed
// element access over the dense row-major buffers of a kernel.
#pragma once

#include <llvm/IR/IRBuilder.h>

#include <cstdint>
#include <functional>

namespace nanoc::cpu {

// Emits `for (i = begin; i < end; ++i) body(i)` with i64 bounds. The body is
// emitted with the builder inside the loop; on return the builder sits in the
// loop's exit block. Empty ranges run the body zero times.
void emitLoop(llvm::IRBuilder<>& b, llvm::Value* begin, llvm::Value* end,
              const std::function<void(llvm::Value* i)>& body, const char* name = "i");
inline void emitLoop(llvm::IRBuilder<>& b, int64_t begin, int64_t end,
                     const std::function<void(llvm::Value* i)>& body, const char* name = "i") {
  emitLoop(b, b.getInt64(begin), b.getInt64(end), body, name);
}

// Emits a loop carrying one value: acc = init; for i: acc = body(i, acc).
// Returns the final value, usable after the loop.
llvm::Value* emitReduction(
    llvm::IRBuilder<>& b, llvm::Value* begin, llvm::Value* end, llvm::Value* init,
    const std::function<llvm::Value*(llvm::Value* i, llvm::Value* acc)>& body,
    const char* name = "r");

// Address of element `index` (i64) of an f32 buffer, and load/store of it.
llvm::Value* f32Ptr(llvm::IRBuilder<>& b, llvm::Value* base, llvm::Value* index);
llvm::Value* loadF32(llvm::IRBuilder<>& b, llvm::Value* base, llvm::Value* index);
void storeF32(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* base, llvm::Value* index);

}  // namespace nanoc::cpu
