// A SIMT emulator for nanoc's GPU kernels, so that their numerics are proven
// on a machine without a GPU (issue #12, item 4): the kernels' own LLVM IR,
// the module that goes to NVPTX, is compiled for the host instead, with each
// NVVM intrinsic (thread and block indices, the block barrier, warp
// shuffles) a call into this emulator, and JIT-run over the launch's whole
// grid.
//
// Each GPU thread of a block runs on a fiber of its own (ucontext); a thread
// runs until it finishes or blocks, at the block barrier or at a warp
// shuffle. A warp's shuffle completes when every live lane of the warp has
// reached it (its value computed from the lanes' operands as PTX's shfl.sync
// defines it); the barrier when every live thread of the block has. A
// barrier that some thread of the block never reaches (it returned, or waits
// on a shuffle) is reported as a divergent barrier: the kernel is wrong on a
// real GPU too. Blocks run one after another, so shared memory (addrspace(3)
// globals) is one instance, filled with NaNs (0xff bytes) before each
// block. Every load and store whose IR declares an alignment checks it: an
// address that does not hold it (a fault on a GPU, where NVPTX turns an
// `align 16` float4 into one vector access) is an error naming the kernel,
// the alignment and the address.
#pragma once

#include <llvm/IR/Module.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/gpu/gpu_lowering.h"

namespace nanoc::simt {

class Emulator {
 public:
  // Takes the kernels' module (nvptx64; not modified) and prepares a host
  // copy for the JIT. Throws CompileError for an NVVM intrinsic the
  // emulator does not know, naming it.
  explicit Emulator(const llvm::Module& gpu_module);
  ~Emulator();
  Emulator(const Emulator&) = delete;
  Emulator& operator=(const Emulator&) = delete;

  // Runs kernel `name` over `launch` with one pointer a parameter. Throws
  // CompileError for a divergent barrier, a deadlock or a misaligned access,
  // naming the kernel.
  void launch(const std::string& name, const gpu::GpuLaunch& launch,
              const std::vector<void*>& args);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace nanoc::simt
