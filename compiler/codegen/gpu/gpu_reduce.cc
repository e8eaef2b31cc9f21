// The Reduce* ops (ops/reduce.h's table: ReduceSum, ReduceMean, ReduceMax,
// ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum,
// ReduceLogSumExp) on f32 on the GPU, through the op's ReduceGeometry: each
// output element (o, j) combines reduced_count inputs at
// runOffset(outer_kept, o) + runOffset(reduced, r) + j.
//   inner == 1 (the reduced elements of an output are a contiguous tail):
//     one warp per output, its lanes striding over r, combined with
//     shfl.sync.bfly; launch 256 threads (8 outputs) per block.
//   inner > 1: one thread per output, r walked in order (neighbouring
//     threads read neighbouring inputs); launch 256 threads per block.
// Blocks: as many as the outputs need, up to 8192 (grid-stride loops).
// Computed in f32 (the reference in double): Max/Min propagate NaN as the
// reference; ReduceLogSumExp shifts by the (finite) maximum first.
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <cmath>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/math_functions.h"
#include "compiler/codegen/gpu/gpu_ir.h"
#include "compiler/ir/error.h"
#include "compiler/ops/reduce.h"

namespace nanoc::gpu {
namespace {

constexpr uint32_t kBlock = 256, kWarpsPerBlock = kBlock / kWarpSize, kMaxGrid = 8192;

bool supportsReduce(const Node& node) {
  if (!findReduceKind(node.op) || node.inputs.empty() || !node.inputs[0] ||
      node.outputs.size() != 1)
    return false;
  if (node.inputs[0]->type.dtype != DType::F32) return false;
  for (size_t i = 1; i < node.inputs.size(); ++i)
    if (node.inputs[i]) return false;  // axes as an input: not canonical
  reduceGeometry(node);
  return true;
}

bool warpPerOutput(const ReduceGeometry& g) { return g.inner == 1; }

GpuLaunch reduceLaunch(const Node& node) {
  ReduceGeometry g = reduceGeometry(node);
  int64_t outputs = g.outer * g.inner;
  int64_t per_block = warpPerOutput(g) ? kWarpsPerBlock : kBlock;
  GpuLaunch launch;
  launch.block[0] = kBlock;
  launch.grid[0] = static_cast<uint32_t>(std::clamp<int64_t>((outputs + per_block - 1) / per_block,
                                                             1, static_cast<int64_t>(kMaxGrid)));
  return launch;
}

// The input offset of index `index` over `runs` (mixed radix, as runOffset).
llvm::Value* emitRunOffset(llvm::IRBuilder<>& b, const std::vector<ReduceRun>& runs,
                           llvm::Value* index) {
  llvm::Value* offset = b.getInt64(0);
  for (size_t i = runs.size(); i-- > 0;) {
    llvm::Value* at = i == 0 ? index : b.CreateURem(index, b.getInt64(runs[i].size));
    if (i > 0) index = b.CreateUDiv(index, b.getInt64(runs[i].size));
    offset = b.CreateAdd(offset, b.CreateMul(at, b.getInt64(runs[i].stride)));
  }
  return offset;
}

llvm::Value* combine(llvm::IRBuilder<>& b, ReduceCombine c, llvm::Value* acc, llvm::Value* v) {
  switch (c) {
    case ReduceCombine::Add:
      return b.CreateFAdd(acc, v);
    case ReduceCombine::Mul:
      return b.CreateFMul(acc, v);
    case ReduceCombine::Max:  // NaN wins, as the reference
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, acc, v);
    case ReduceCombine::Min:
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, acc, v);
  }
  return acc;
}

double initialValue(ReduceCombine c) {
  switch (c) {
    case ReduceCombine::Add:
      return 0.0;
    case ReduceCombine::Mul:
      return 1.0;
    case ReduceCombine::Max:
      return -INFINITY;
    case ReduceCombine::Min:
      return INFINITY;
  }
  return 0.0;
}

void emitReduce(GpuKernelBuilder& kb) {
  const ReduceKind& kind = *findReduceKind(kb.node.op);
  const ReduceGeometry g = reduceGeometry(kb.node);
  const int64_t outputs = g.outer * g.inner;
  if (outputs == 0) return;
  llvm::IRBuilder<>& b = kb.b;
  llvm::Type* f32 = b.getFloatTy();
  auto c = [&](int64_t v) { return b.getInt64(v); };
  auto k = [&](double v) { return llvm::ConstantFP::get(f32, v); };
  llvm::Value* X = kb.input_ptrs[0];
  llvm::Value* Y = kb.output_ptrs[0];
  const bool warp = warpPerOutput(g);
  llvm::Value* tid = threadIdX(b);
  llvm::Value* lane =
      warp ? b.CreateZExt(b.CreateAnd(tid, b.getInt32(kWarpSize - 1)), b.getInt64Ty()) : c(0);
  llvm::Value* unit = b.CreateZExt(warp ? b.CreateLShr(tid, b.getInt32(5)) : tid, b.getInt64Ty());
  const int64_t per_block = warp ? kWarpsPerBlock : kBlock;
  llvm::Value* first =
      b.CreateAdd(b.CreateMul(b.CreateZExt(blockIdX(b), b.getInt64Ty()), c(per_block)), unit);
  const int64_t r_step = warp ? kWarpSize : 1;

  // Combines f(r) over this unit's r (lanes stride by 32), then across the
  // warp.
  auto reduce = [&](llvm::Value* base, ReduceCombine how, double init,
                    const std::function<llvm::Value*(llvm::Value*)>& f, bool ignore_nan_max) {
    llvm::Value* acc = emitCarriedStridedLoop(
        b, lane, c(g.reduced_count), c(r_step), {k(init)},
        [&](llvm::Value* r, const std::vector<llvm::Value*>& in) {
          llvm::Value* x = cpu::loadF32(b, X, b.CreateAdd(base, emitRunOffset(b, g.reduced, r)));
          llvm::Value* v = f(x);
          llvm::Value* next = ignore_nan_max
                                  ? b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, in[0], v)
                                  : combine(b, how, in[0], v);
          return std::vector<llvm::Value*>{next};
        },
        "r")[0];
    if (!warp) return acc;
    for (uint32_t mask = kWarpSize / 2; mask > 0; mask /= 2) {
      llvm::Value* other = shuffleXorF32(b, acc, mask);
      acc = ignore_nan_max ? b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, acc, other)
                           : combine(b, how, acc, other);
    }
    return acc;
  };

  emitStridedLoop(
      b, first, c(outputs), c(int64_t{kb.launch.grid[0]} * per_block),
      [&](llvm::Value* out) {
        llvm::Value* o = b.CreateUDiv(out, c(g.inner));
        llvm::Value* j = b.CreateURem(out, c(g.inner));
        llvm::Value* base = b.CreateAdd(emitRunOffset(b, g.outer_kept, o), j);
        llvm::Value* shift = k(0.0);
        if (kind.needsShift()) {
          // The maximum, NaN ignored (std::max's), 0 where not finite.
          llvm::Value* m = reduce(
              base, ReduceCombine::Max, -INFINITY, [](llvm::Value* x) { return x; }, true);
          llvm::Value* finite =
              b.CreateFCmpOLT(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, m), k(INFINITY));
          shift = b.CreateSelect(finite, m, k(0.0));
        }
        llvm::Value* acc = reduce(
            base, kind.combine, initialValue(kind.combine),
            [&](llvm::Value* x) -> llvm::Value* {
              switch (kind.map) {
                case ReduceMap::Identity:
                  return x;
                case ReduceMap::Abs:
                  return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
                case ReduceMap::Square:
                  return b.CreateFMul(x, x);
                case ReduceMap::ExpShifted:
                  return cpu::emitExp(b, b.CreateFSub(x, shift));
              }
              return x;
            },
            false);
        llvm::Value* y = acc;
        switch (kind.finish) {
          case ReduceFinish::None:
            break;
          case ReduceFinish::DivideByCount:
            y = b.CreateFDiv(acc, k(static_cast<double>(g.reduced_count)));
            break;
          case ReduceFinish::Sqrt:
            y = b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, acc);
            break;
          case ReduceFinish::Log:
            y = cpu::emitLog(b, acc);
            break;
          case ReduceFinish::LogPlusShift:
            y = b.CreateFAdd(cpu::emitLog(b, acc), shift);
            break;
        }
        if (warp)
          emitIf(b, b.CreateICmpEQ(lane, c(0)), [&] { cpu::storeF32(b, y, Y, out); });
        else
          cpu::storeF32(b, y, Y, out);
      },
      "out");
}

}  // namespace

std::vector<std::pair<std::string, GpuLowering>> reduceGpuLowerings() {
  std::vector<std::pair<std::string, GpuLowering>> out;
  for (const ReduceKind& kind : reduceKinds()) {
    GpuLowering lowering;
    lowering.supports = supportsReduce;
    lowering.launch = reduceLaunch;
    lowering.emit = emitReduce;
    out.emplace_back(std::string(kind.op), std::move(lowering));
  }
  return out;
}

}  // namespace nanoc::gpu
