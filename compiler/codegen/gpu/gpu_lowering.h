// GPU lowering of IR ops to NVPTX kernels (nanoc --target sm_XY), beside the
// CPU one (codegen/cpu/lowering.h), for the ops that have one.
//
// Kernel ABI: `void @symbol(ptr addrspace(1) %arg0, ..., ptr addrspace(1)
// %argN)`, a PTX entry (`ptx_kernel` calling convention), one device pointer
// per *present* node input (absent optional inputs take no slot) then one per
// node output, all dense row-major tensors of the node's types, 256-byte
// aligned (the device arena's slices and the uploaded constants). The launch
// shape is fixed at compile time (GpuLaunch); the kernel must compute its
// whole output for that grid and block, reading nothing outside its inputs'
// bytes and writing nothing outside its outputs'. Every kernel's shared
// memory is static (GpuLaunch::shared_bytes is 0 for all of them today).
//
// The lowerings (codegen/gpu/*.cc; README.md there lists ops, dtypes and
// launch shapes): the elementwise table and nanoc.Elementwise; MatMul, Gemm
// and Conv (f32 SIMT GEMM); Softmax, LogSoftmax, LayerNormalization,
// RMSNormalization, InstanceNormalization, GroupNormalization,
// BatchNormalization; MaxPool, AveragePool, GlobalAveragePool,
// GlobalMaxPool; the Reduce* ops; Transpose, Slice, Expand, Concat, Gather.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"

namespace llvm {
class TargetMachine;
}

namespace nanoc::cpu {
struct TargetProfile;
}

namespace nanoc::gpu {

struct GpuLaunch {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_bytes = 0;  // dynamic shared memory per block
};

// What a lowering's `emit` gets: the kernel (already created, its entry block
// the insert point) and its parameters.
struct GpuKernelBuilder {
  llvm::Module& module;
  llvm::Function* fn;
  llvm::IRBuilder<>& b;
  const Node& node;
  GpuLaunch launch;
  std::vector<llvm::Value*> input_ptrs;   // addrspace(1), nullptr for an absent input
  std::vector<llvm::Value*> output_ptrs;  // addrspace(1)
};

struct GpuLowering {
  // Whether this lowering handles `node` (its dtypes, attributes, ranks);
  // a node it does not runs on the host CPU.
  std::function<bool(const Node&)> supports;
  std::function<GpuLaunch(const Node&)> launch;
  // Emits the body. Must leave the builder in a block without a terminator;
  // emitGpuKernel adds `ret void`.
  std::function<void(GpuKernelBuilder&)> emit;
};

// The lowering for an op name, nullptr when it has none.
const GpuLowering* findGpuLowering(std::string_view op);
// findGpuLowering(node.op) and its supports(node).
bool hasGpuLowering(const Node& node);

// Creates the kernel `symbol` in `module` (whose triple is nvptx64-nvidia-cuda)
// and calls the node's lowering.
llvm::Function* emitGpuKernel(const Node& node, llvm::Module& module, const std::string& symbol);

// The K chunk to split `node` along (passes/gpu_split_k.h), 0 to leave it
// whole: a GEMM-kernel nanoc.ConvNHWC, a MatMul or a Gemm (alpha 1, C a row
// with beta 1) whose blocks do not fill an H100 (132 SMs: 264 tiles of
// 64 x 64, 132 of 128 x 128) is split into slices of K of at least 128, a
// multiple of 16, up to that many blocks.
int64_t chooseSplitK(const Node& node);

// One SM target: from targets/gpu/NAME.json.
struct SmTarget {
  uint32_t sm = 0;           // 90 for sm_90
  std::string variant;       // "", "a" or "f"
  uint32_t ptx_isa = 0;      // 78 for PTX 7.8: at least what the SM needs
  std::string name() const;  // "sm_90a"
};

// The lowest PTX ISA version LLVM's NVPTX backend takes for `target`'s SM
// and variant (63 for sm_75, 70 for sm_80, 78 for sm_90, 80 for sm_90a, 86
// for sm_100, 87 for sm_120, ...); 0 for an SM this table does not know.
// createGpuTargetMachine refuses a lower ptx_isa (LLVM would abort on it).
uint32_t minimumPtxIsa(const SmTarget& target);

// The SM target of a GPU profile (targets/gpu/NAME.json: its sm, ptx_isa, and
// the variant after the digits of its name). Throws CompileError for a CPU
// profile.
SmTarget smTargetOf(const cpu::TargetProfile& profile);

// A fresh module for GPU kernels: nvptx64-nvidia-cuda, NVPTX's data layout.
std::unique_ptr<llvm::Module> createGpuModule(const std::string& name, llvm::LLVMContext& context);

// LLVM's NVPTX TargetMachine for `target` (CPU "sm_XY[a]", feature +ptxNN).
std::unique_ptr<llvm::TargetMachine> createGpuTargetMachine(const SmTarget& target);

// `target` with its PTX ISA raised to what `module`'s instructions need
// beyond the SM's minimum: mma.sync.m16n8k8 .f16 (nanoc --gpu-precision f16
// on sm_75) needs PTX 6.5. Everything else: `target` unchanged.
SmTarget withModuleNeeds(const SmTarget& target, const llvm::Module& module);

// Optimizes a copy of `module` (O3) and prints it as PTX for
// withModuleNeeds(target, module).
std::string emitPtx(const llvm::Module& module, const SmTarget& target);

// Assembles `ptx` into a cubin for `target` with the CUDA toolkit's ptxas
// (--warn-on-spills; -arch=sm_XY[a]). Throws CompileError with ptxas's
// message when it refuses (e.g. an SM this toolkit does not know) or warns of
// spills. `ptxas_path` empty: ptxasPath().
std::vector<uint8_t> runPtxas(const std::string& ptx, const SmTarget& target,
                              const std::string& ptxas_path = "");

// What ptxas -v reported for one kernel.
struct PtxasKernelInfo {
  std::string name;
  uint32_t registers = 0;     // per thread
  uint32_t shared_bytes = 0;  // static shared memory per block
  uint32_t stack_bytes = 0;   // local stack frame
  uint32_t spill_bytes = 0;   // spill stores + loads (runPtxas refuses any)
};
struct PtxasResult {
  std::vector<uint8_t> cubin;
  std::vector<PtxasKernelInfo> kernels;  // in ptxas's order
  std::string log;                       // ptxas's own output
};
// runPtxas, also giving ptxas -v's resource usage per kernel.
PtxasResult assemblePtx(const std::string& ptx, const SmTarget& target,
                        const std::string& ptxas_path = "");

// $NANOC_PTXAS when set, else the ptxas CMake found at configure time
// (NANOC_PTXAS_PATH), else "ptxas" on PATH; empty when none is found.
std::string ptxasPath();

}  // namespace nanoc::gpu
