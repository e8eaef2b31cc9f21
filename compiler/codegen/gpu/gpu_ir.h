// IR helpers of the GPU lowerings (internal to codegen/gpu): thread and block
// indices, barriers and warp shuffles as NVVM intrinsics only (no inline
// asm), so that a SIMT emulator on the CPU can run the same IR; counted loops
// in a given index type; shared memory in addrspace(3).
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/gpu/gpu_lowering.h"

namespace nanoc::gpu {

constexpr unsigned kGlobalSpace = 1, kSharedSpace = 3;
constexpr uint32_t kWarpSize = 32;

// The 32-bit special registers.
llvm::Value* threadIdX(llvm::IRBuilder<>& b);
llvm::Value* blockIdX(llvm::IRBuilder<>& b);
llvm::Value* blockIdY(llvm::IRBuilder<>& b);
llvm::Value* blockIdZ(llvm::IRBuilder<>& b);

// bar.sync 0 for the whole block: every thread of the block must reach it.
void barrier(llvm::IRBuilder<>& b);
// shfl.sync.bfly.b32 over the full warp (every lane must execute it).
llvm::Value* shuffleXorF32(llvm::IRBuilder<>& b, llvm::Value* v, uint32_t lane_mask);
// The sum of v over the warp's 32 lanes, in every lane: butterfly shuffles
// (lane masks 16, 8, 4, 2, 1), so a fixed order.
llvm::Value* warpSumF32(llvm::IRBuilder<>& b, llvm::Value* v);

// for (i = begin; i < end; i += step) body(i), in begin's integer type (step
// a constant or a value of that type). Leaves the builder after the loop.
void emitStridedLoop(llvm::IRBuilder<>& b, llvm::Value* begin, llvm::Value* end, llvm::Value* step,
                     const std::function<void(llvm::Value*)>& body, const char* name = "i");
// The same carrying values (a phi each); returns their final values.
std::vector<llvm::Value*> emitCarriedStridedLoop(
    llvm::IRBuilder<>& b, llvm::Value* begin, llvm::Value* end, llvm::Value* step,
    const std::vector<llvm::Value*>& init,
    const std::function<std::vector<llvm::Value*>(llvm::Value*, const std::vector<llvm::Value*>&)>&
        body,
    const char* name = "i");

// The launch's grid-stride loop over [0, total), in i64: body(i) from this
// thread's global x index (blockIdx.x * blockDim.x + threadIdx.x) on, a
// whole grid's threads (grid.x * block.x) a step.
void emitGridStrideLoop(GpuKernelBuilder& kb, int64_t total,
                        const std::function<void(llvm::Value*)>& body, const char* name = "elem");

// if (cond) then(); the CPU lowerings' (cpu/loops.h).
using cpu::emitIf;

// A static shared-memory array of `count` floats, named after the kernel.
llvm::GlobalVariable* sharedF32Array(llvm::Module& module, llvm::Function* fn,
                                     const std::string& name, uint64_t count);

// The index type of a kernel over `count` elements: i32 when every index
// (and index + one grid's stride) fits, else i64.
llvm::IntegerType* indexType(llvm::IRBuilder<>& b, int64_t count);

// The launch of a kernel with a thread per element, grid-stride: blocks of
// 256 threads, ceil(n / 256) of them, at most 8192; by node, n is its first
// output's element count.
GpuLaunch perElementLaunch(int64_t n);
GpuLaunch outputElementLaunch(const Node& node);

// nanoc.ConvNHWC with groups of fewer than 16 output channels (depthwise):
// too narrow for the GEMM's 64-column tiles, so gpu_conv_direct.cc's kernel
// (a thread per output element) runs it; gpu_gemm.cc dispatches.
bool isDirectConv(const Node& node);
GpuLowering directConvGpuLowering();

// Lowerings by op name, the registry's entries (gpu_lowering.cc).
std::vector<std::pair<std::string, GpuLowering>> elementwiseGpuLowerings();
std::vector<std::pair<std::string, GpuLowering>> matmulGpuLowerings();
std::vector<std::pair<std::string, GpuLowering>> rowGpuLowerings();
std::vector<std::pair<std::string, GpuLowering>> poolGpuLowerings();
std::vector<std::pair<std::string, GpuLowering>> reduceGpuLowerings();
std::vector<std::pair<std::string, GpuLowering>> transposeGpuLowerings();
std::vector<std::pair<std::string, GpuLowering>> dataMovementGpuLowerings();
std::vector<std::pair<std::string, GpuLowering>> batchNormGpuLowerings();
std::vector<std::pair<std::string, GpuLowering>> upsampleGpuLowerings();  // ConvTranspose, Resize

}  // namespace nanoc::gpu
