// CPU lowering of IR ops to LLVM IR kernels with nanort's kernel ABI:
//   void k(const nanort_kernel_args* args, uint64_t task_begin, uint64_t task_end)
// args->buffers holds one pointer per *present* node input (absent optional
// inputs take no slot), then one per node output, all dense row-major tensors
// of the node's types. The kernel computes tasks [task_begin, task_end) of its
// parallel iteration space; task ranges are disjoint, so no two tasks may
// write the same output element.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"

namespace nanoc::cpu {

// What a lowering's `emit` gets: the kernel function (already created, with
// its entry block as the insert point) and typed access to its operands.
struct KernelBuilder {
  llvm::Module& module;
  llvm::Function* fn;
  llvm::IRBuilder<>& b;
  const Node& node;
  llvm::Value* task_begin;  // i64
  llvm::Value* task_end;    // i64

  // Pointer (opaque `ptr`) to node input `i`; nullptr if that optional input
  // is absent. Outputs never overlap inputs (the arena plan guarantees it),
  // except output 0 and the input that Lowering::in_place_input names, which
  // may be one buffer; two inputs may be the same buffer (Add(x, x)). Only
  // element alignment may be assumed: inputs and outputs are the caller's
  // pointers.
  llvm::Value* input(size_t i) const;
  llvm::Value* output(size_t i) const;
  // This worker's scratch: Lowering::scratch_bytes bytes, 64-byte aligned,
  // its contents undefined at each call (nanort_kernel_args::scratch).
  llvm::Value* scratch = nullptr;
  // With kNextWeightsAttribute: the weights that the kernel after this one
  // reads first (its largest constant), next_weights_bytes of them, for the
  // lowering to prefetch while it ends (Lowering::prefetches_next_weights);
  // nullptr and 0 otherwise. Only a prefetch may touch them.
  llvm::Value* next_weights = nullptr;
  int64_t next_weights_bytes = 0;

  // Set up by emitKernel.
  std::vector<llvm::Value*> input_ptrs, output_ptrs;
};

struct Lowering {
  // Size of the node's parallel iteration space (>= 1). Keep tasks coarse
  // (e.g. one per output row or per (n, out-channel) plane), not per element.
  std::function<uint64_t(const Node&)> task_count;
  // Emits the body computing tasks [task_begin, task_end). Must leave the
  // builder in a block without a terminator; emitKernel adds `ret void`.
  std::function<void(KernelBuilder&)> emit;
  // Bytes of per-worker scratch the kernel uses (KernelBuilder::scratch);
  // empty: none. Every ISA variant gets the same.
  std::function<uint64_t(const Node&)> scratch_bytes;
  // The input whose arena slot the node's output may take (plan/arena_plan.h's
  // InPlaceInput): a kernel that reads each element of it only to make the
  // same element of output 0, before storing that element, on every target
  // and thread count, and that never gives LLVM its operands as not aliasing
  // (operand_alias.h); empty or -1: none.
  std::function<int(const Node&)> in_place_input;
  // Whether the kernel may prefetch the next kernel's weights (nanoc passes
  // them, KernelBuilder::next_weights); empty: never.
  std::function<bool(const Node&)> prefetches_next_weights;
};

// The function attribute (a decimal byte count) that gives a kernel one more
// buffer, after its inputs: the next kernel's weights (KernelBuilder::
// next_weights), which nanoc passes where Lowering::prefetches_next_weights.
constexpr const char* kNextWeightsAttribute = "nanoc-next-weights-bytes";

// The function attribute (nanoc --denormals flush) whose value, "x86" or
// "aarch64" (denormalsFamily), names the control register the kernel sets
// on entry, flush-to-zero and denormals-are-zero (x86's MXCSR FTZ and DAZ,
// AArch64's FPCR.FZ), restoring the caller's value before it returns: f32
// and f64 results and operands below the normal range are 0 inside the
// kernel, and cost no microcode assist.
constexpr const char* kFlushDenormalsAttribute = "nanoc-flush-denormals";
// The kFlushDenormalsAttribute value for a target triple, or null where
// nanoc sets no such mode (RISC-V's F extension has none; 32-bit Arm and
// the others: not yet).
const char* denormalsFamily(const std::string& triple);

// Finds the lowering for an op name, nullptr if it has none (Reshape and
// Identity have none: they become copy thunks).
const Lowering* findLowering(std::string_view op);

// The input that node's CPU lowering may write output 0 over
// (Lowering::in_place_input), -1 for none: the arena plan's InPlaceInput, as
// nanoc and the GPU emulator's runs plan memory.
int inPlaceInput(const Node& node);

// Creates `void symbol(ptr args, i64 begin, i64 end)` with internal linkage in
// `module`, loads the buffer pointers and calls the op's lowering. The string
// function `attributes` (target-cpu, target-features, ...) are set before the
// lowering runs, so that it can consult them (hasDoubleFloatUnit).
llvm::Function* emitKernel(const Node& node, llvm::Module& module, const std::string& symbol,
                           const std::vector<std::pair<std::string, std::string>>& attributes = {});

// Whether f64 arithmetic is hardware for `fn`: false where its target-features
// turn Arm's fp64 off (Cortex-M4: a single-precision FPU, so f64 is libgcc's
// soft float); true with no target-features (the host).
bool hasDoubleFloatUnit(const llvm::Function& fn);

}  // namespace nanoc::cpu
