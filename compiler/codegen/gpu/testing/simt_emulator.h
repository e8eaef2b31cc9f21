// A small SIMT emulator for the GPU kernels' own LLVM IR (tests only): the
// kernels of a GPU module, compiled for the host with their NVVM intrinsics
// (thread and block indices, the block barrier, warp shuffles) turned into
// calls into this emulator, run one block at a time with one fiber per GPU
// thread. A barrier yields until every thread of the block has reached it; a
// shuffle yields until all 32 lanes of its warp have offered their value. A
// kernel that would deadlock on a GPU (a barrier some thread skips, a shuffle
// some lane misses) fails here too, with a message.
//
// The IR that passes here is the IR that goes to NVPTX: only the intrinsic
// calls are replaced, after the kernel was emitted.
#pragma once

#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/Module.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/gpu/gpu_lowering.h"

namespace nanoc::gpu::testing {

class SimtModule {
 public:
  // Takes a GPU module (createGpuModule + emitGpuKernel) and JIT-compiles it
  // for the host. Throws CompileError on an intrinsic it does not emulate.
  SimtModule(std::unique_ptr<llvm::Module> gpu_module, std::unique_ptr<llvm::LLVMContext> ctx);
  ~SimtModule();

  // Runs kernel `symbol` over `launch`'s grid on `buffers` (one pointer per
  // kernel parameter). Throws CompileError on a barrier or shuffle deadlock.
  void launch(const std::string& symbol, const GpuLaunch& launch,
              const std::vector<void*>& buffers);

 private:
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::vector<std::unique_ptr<uint8_t[]>> stacks_;  // one per thread of a block
};

}  // namespace nanoc::gpu::testing
