// Kernels call no library function but memcpy/memmove/memset (and the ARM
// RTABI's aliases of them): a bare-metal link has no libm, and a model must
// not need one on any target. LLVM lowers some float intrinsics to libm calls
// where the target has no instruction for them (llvm.floor -> floorf,
// llvm.maxnum -> fmaxf on a Cortex-M4, ...); this rewrites those into exact
// inline IR (compares, selects and the 2^mantissa rounding trick) before the
// backend sees them, per function and per the function's own subtarget.
#pragma once

namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace nanoc::cpu {

// Rewrites, in every function of `module`, each call of llvm.{maxnum,
// minnum,maximum,minimum,floor,ceil,trunc,round,roundeven,rint,nearbyint}
// whose element type the function's subtarget cannot compute without a
// library call. Results are bit-exact with the intrinsics' definitions (NaN
// handling and signed zeros included; rint/nearbyint round to nearest even,
// the only rounding mode kernels run in). Returns the number rewritten.
int inlineLibcallIntrinsics(llvm::Module& module, const llvm::TargetMachine& machine);

}  // namespace nanoc::cpu
