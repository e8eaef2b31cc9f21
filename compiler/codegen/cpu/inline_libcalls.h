// Kernels call no library function but memcpy/memmove/memset (and the ARM
// RTABI's aliases of them): a bare-metal link has no libm, and a model must
// not need one on any target. LLVM lowers some float intrinsics to libm calls
// where the target has no instruction for them (llvm.floor -> floorf,
// llvm.maxnum -> fmaxf on a Cortex-M4, ...); this rewrites those into exact
// inline IR (compares, selects and the 2^mantissa rounding trick) before the
// backend sees them, per function and per the function's own subtarget. On a
// 32-bit target (no legal i64: Cortex-M) 64-bit division and conversions
// between i64 and f32/f64 are libgcc calls (__aeabi_ldivmod, __aeabi_f2lz,
// __aeabi_l2f, ...); those become inline integer code too.
#pragma once

namespace llvm {
class Function;
class Module;
class TargetMachine;
}  // namespace llvm

namespace nanoc::cpu {

// Rewrites, in every function of `module`, each call of llvm.{maxnum,
// minnum,maximum,minimum,floor,ceil,trunc,round,roundeven,rint,nearbyint}
// whose element type the function's subtarget cannot compute without a
// library call. Results are bit-exact with the intrinsics' definitions (NaN
// handling and signed zeros included; rint/nearbyint round to nearest even,
// the only rounding mode kernels run in). In every function whose subtarget
// has no legal i64 type it also rewrites what expandWideIntegerOps does.
// Returns the number rewritten.
int inlineLibcallIntrinsics(llvm::Module& module, const llvm::TargetMachine& machine);

// Rewrites, in `fn`, whatever its target: 64-bit sdiv/udiv/srem/urem (by LLVM's
// IntegerDivision expansion; as a 32-bit division when both operands are known
// to fit in 32 bits and `narrow_to_i32`; left alone when the divisor is a
// constant that the backend divides by without a call: a power of two, or for
// unsigned ones an odd factor of 2^32 - 1 times a power of two), and
// fptosi/fptoui, llvm.fptosi.sat/fptoui.sat from f32/f64 to i64 and
// sitofp/uitofp from i64 to f32/f64 (integer code on the bits: truncation
// toward zero, round to nearest even, saturation and NaN -> 0 for .sat; an
// out-of-range fptosi gives INT64_MIN, as x86 does, an out-of-range fptoui an
// unspecified value: LLVM leaves both poison). Vector ones are scalarized
// first. Bit-exact with the instructions wherever they are defined (the unit
// test runs it on the host against the native instructions). Returns the
// number rewritten.
int expandWideIntegerOps(llvm::Function& fn, bool narrow_to_i32 = true);

}  // namespace nanoc::cpu
