// Row ops on the GPU, one warp per row with warp-shuffle reductions (no
// shared memory, no block barrier):
//   Softmax, LogSoftmax   over `axis` (opset 13: one axis), the tensor viewed
//                         as [outer, n, inner]; a row is n elements inner apart
//   LayerNormalization,   rows = X.dims[:axis], a row = X.dims[axis:]; Scale
//   RMSNormalization      (and B) either a whole row or one element
//   InstanceNormalization rows = (n, c), Scale and B per channel
//   GroupNormalization    rows = (n, g), Scale and B per channel or per group
//   GlobalAveragePool,    f32 [N, C, spatial...], a row per (n, c) plane
//   GlobalMaxPool
// Each lane walks the row's elements lane, lane + 32, ...; the warp combines
// its lanes' partial max / sum with shfl.sync.bfly (every lane of the warp
// runs each shuffle: the row loop's condition depends on the warp alone).
// Computed in f32 (f16 and bf16 widened on load, rounded once on store).
//
// Launch: 256 threads (8 warps, 8 rows) per block, ceil(rows / 8) blocks up
// to 8192 (the row loop covers the rest). Indices are i64.
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/math_functions.h"
#include "compiler/codegen/gpu/gpu_ir.h"
#include "compiler/ir/error.h"

namespace nanoc::gpu {
namespace {

constexpr uint32_t kBlock = 256, kWarpsPerBlock = kBlock / kWarpSize, kMaxGrid = 8192;

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t d = begin; d < end; ++d) p *= dims[d];
  return p;
}

bool computesInF32(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// rows x len, each row's element j at row_base(row) + j * step.
struct RowView {
  int64_t rows = 0, len = 0, inner = 1;
};

GpuLaunch rowLaunch(int64_t rows) {
  GpuLaunch launch;
  launch.block[0] = kBlock;
  launch.grid[0] = static_cast<uint32_t>(std::clamp<int64_t>(
      (rows + kWarpsPerBlock - 1) / kWarpsPerBlock, 1, static_cast<int64_t>(kMaxGrid)));
  return launch;
}

llvm::Value* warpReduce(llvm::IRBuilder<>& b, llvm::Value* v, bool max) {
  if (!max) return warpSumF32(b, v);
  for (uint32_t mask = kWarpSize / 2; mask > 0; mask /= 2) {
    llvm::Value* other = shuffleXorF32(b, v, mask);
    v = b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, v, other);
  }
  return v;
}

// for each row of this warp: body(row, lane), all i64.
void emitWarpRows(GpuKernelBuilder& kb, int64_t rows,
                  const std::function<void(llvm::Value* row, llvm::Value* lane)>& body) {
  llvm::IRBuilder<>& b = kb.b;
  llvm::Value* tid = threadIdX(b);
  llvm::Value* lane = b.CreateZExt(b.CreateAnd(tid, b.getInt32(kWarpSize - 1)), b.getInt64Ty());
  llvm::Value* warp = b.CreateZExt(b.CreateLShr(tid, b.getInt32(5)), b.getInt64Ty());
  llvm::Value* block = b.CreateZExt(blockIdX(b), b.getInt64Ty());
  llvm::Value* first = b.CreateAdd(b.CreateMul(block, b.getInt64(kWarpsPerBlock)), warp);
  emitStridedLoop(
      b, first, b.getInt64(rows), b.getInt64(int64_t{kb.launch.grid[0]} * kWarpsPerBlock),
      [&](llvm::Value* row) { body(row, lane); }, "row");
}

// The warp's reduction of f(j) over j = lane, lane + 32, ... < len.
// max starts at -inf, or at `max_init`.
llvm::Value* emitRowReduce(llvm::IRBuilder<>& b, llvm::Value* lane, int64_t len, bool max,
                           const std::function<llvm::Value*(llvm::Value* j)>& f,
                           double max_init = -INFINITY) {
  llvm::Type* f32 = b.getFloatTy();
  llvm::Value* init = llvm::ConstantFP::get(f32, max ? max_init : 0.0);
  llvm::Value* partial = emitCarriedStridedLoop(
      b, lane, b.getInt64(len), b.getInt64(kWarpSize), {init},
      [&](llvm::Value* j, const std::vector<llvm::Value*>& acc) {
        llvm::Value* v = f(j);
        return std::vector<llvm::Value*>{
            max ? b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, acc[0], v)
                : b.CreateFAdd(acc[0], v)};
      },
      "j")[0];
  return warpReduce(b, partial, max);
}

// ---- Softmax, LogSoftmax ----

RowView softmaxView(const Node& node) {
  const TensorType& x = node.inputs[0]->type;
  int64_t axis = node.i("axis");
  if (axis < 0 || axis >= static_cast<int64_t>(x.rank()))
    throw CompileError("node '" + node.name + "' (" + node.op + "): axis out of range");
  RowView v;
  v.len = x.dims[axis];
  v.inner = product(x.dims, axis + 1, x.rank());
  v.rows = product(x.dims, 0, axis) * v.inner;
  return v;
}

GpuLowering makeSoftmaxLowering(bool log) {
  GpuLowering lowering;
  lowering.supports = [](const Node& node) {
    if (node.inputs.size() != 1 || !node.inputs[0] || node.outputs.size() != 1) return false;
    if (!computesInF32(node.inputs[0]->type.dtype)) return false;
    softmaxView(node);
    return true;
  };
  lowering.launch = [](const Node& node) { return rowLaunch(softmaxView(node).rows); };
  lowering.emit = [log](GpuKernelBuilder& kb) {
    RowView v = softmaxView(kb.node);
    if (v.rows == 0 || v.len == 0) return;
    llvm::IRBuilder<>& b = kb.b;
    DType dtype = kb.node.inputs[0]->type.dtype;
    llvm::Value* X = kb.input_ptrs[0];
    llvm::Value* Y = kb.output_ptrs[0];
    emitWarpRows(kb, v.rows, [&](llvm::Value* row, llvm::Value* lane) {
      // Row (o, i) starts at o * len * inner + i; its elements are inner apart.
      llvm::Value* base = v.inner == 1
                              ? b.CreateMul(row, b.getInt64(v.len))
                              : b.CreateAdd(b.CreateMul(b.CreateUDiv(row, b.getInt64(v.inner)),
                                                        b.getInt64(v.len * v.inner)),
                                            b.CreateURem(row, b.getInt64(v.inner)));
      auto at = [&](llvm::Value* j) {
        return v.inner == 1 ? b.CreateAdd(base, j)
                            : b.CreateAdd(base, b.CreateMul(j, b.getInt64(v.inner)));
      };
      auto load = [&](llvm::Value* j) { return cpu::loadCompute(b, dtype, X, at(j)); };
      llvm::Value* max = emitRowReduce(b, lane, v.len, true, load);
      llvm::Value* sum = emitRowReduce(b, lane, v.len, false, [&](llvm::Value* j) {
        return cpu::emitExp(b, b.CreateFSub(load(j), max));
      });
      llvm::Value* log_sum = log ? cpu::emitLog(b, sum) : nullptr;
      emitStridedLoop(
          b, lane, b.getInt64(v.len), b.getInt64(kWarpSize),
          [&](llvm::Value* j) {
            llvm::Value* d = b.CreateFSub(load(j), max);
            llvm::Value* y = log ? b.CreateFSub(d, log_sum) : b.CreateFDiv(cpu::emitExp(b, d), sum);
            cpu::storeCompute(b, dtype, y, Y, at(j));
          },
          "j");
    });
  };
  return lowering;
}

// ---- LayerNormalization, RMSNormalization, InstanceNormalization,
// GroupNormalization ----

enum class NormKind { Layer, Rms, Instance, Group };

// The rows and, per row element, which element of Scale and B applies.
struct NormView {
  RowView rows;
  NormKind kind = NormKind::Layer;
  bool scale_row = false, bias_row = false;  // Layer/Rms: a whole row (else one element)
  int64_t channels = 1, groups = 1, spatial = 1;
  bool per_channel = false;  // Group: Scale and B are [C] (else [num_groups])
};

// Layer/Rms: Scale or B a whole row (its element k for the row's k) or one
// element.
bool rowOperandFits(const Value* operand, int64_t len) {
  return !operand || operand->type.numel() == len || operand->type.numel() == 1;
}

NormView normView(const Node& node, NormKind kind) {
  const TensorType& x = node.inputs[0]->type;
  NormView v;
  v.kind = kind;
  if (kind == NormKind::Layer || kind == NormKind::Rms) {
    int64_t axis = node.i("axis");
    if (axis < 0 || axis >= static_cast<int64_t>(x.rank()))
      throw CompileError("node '" + node.name + "' (" + node.op + "): axis out of range");
    v.rows.rows = product(x.dims, 0, axis);
    v.rows.len = product(x.dims, axis, x.rank());
    auto whole = [&](size_t i) {
      return i < node.inputs.size() && node.inputs[i] &&
             node.inputs[i]->type.numel() == v.rows.len && v.rows.len != 1;
    };
    v.scale_row = whole(1);
    v.bias_row = whole(2);
    return v;
  }
  if (x.rank() < 2) throw CompileError("node '" + node.name + "' (" + node.op + "): rank < 2");
  v.channels = x.dims[1];
  v.spatial = product(x.dims, 2, x.rank());
  if (kind == NormKind::Instance) {
    v.rows.rows = x.dims[0] * v.channels;
    v.rows.len = v.spatial;
  } else {
    v.groups = node.i("num_groups");
    if (v.groups < 1 || v.channels % v.groups != 0)
      throw CompileError("node '" + node.name + "' (GroupNormalization): num_groups");
    v.rows.rows = x.dims[0] * v.groups;
    v.rows.len = v.channels / v.groups * v.spatial;
    v.per_channel = node.inputs[1]->type.numel() == v.channels;
  }
  return v;
}

GpuLowering makeNormLowering(NormKind kind) {
  GpuLowering lowering;
  lowering.supports = [kind](const Node& node) {
    if (node.inputs.size() < 2 || !node.inputs[0] || !node.inputs[1]) return false;
    DType t = node.inputs[0]->type.dtype;
    if (!computesInF32(t)) return false;
    NormView v = normView(node, kind);
    for (size_t i = 1; i < node.inputs.size(); ++i) {
      if (!node.inputs[i]) continue;
      if (node.inputs[i]->type.dtype != t) return false;
      if ((kind == NormKind::Layer || kind == NormKind::Rms) &&
          !rowOperandFits(node.inputs[i], v.rows.len))
        return false;
    }
    if (kind == NormKind::Instance || kind == NormKind::Group)
      if (node.inputs.size() != 3 || !node.inputs[2]) return false;
    for (size_t o = 1; o < node.outputs.size(); ++o)
      if (node.outputs[o] && (node.outputs[o]->type.dtype != DType::F32 ||
                              node.outputs[o]->type.numel() != v.rows.rows))
        return false;
    return true;
  };
  lowering.launch = [kind](const Node& node) { return rowLaunch(normView(node, kind).rows.rows); };
  lowering.emit = [kind](GpuKernelBuilder& kb) {
    const NormView nv = normView(kb.node, kind);
    const RowView& v = nv.rows;
    if (v.rows == 0) return;
    const bool center = kind != NormKind::Rms;
    llvm::IRBuilder<>& b = kb.b;
    llvm::Type* f32 = b.getFloatTy();
    const Node& node = kb.node;
    DType dtype = node.inputs[0]->type.dtype;
    llvm::Value* X = kb.input_ptrs[0];
    llvm::Value* Y = kb.output_ptrs[0];
    llvm::Value* scale = kb.input_ptrs[1];
    llvm::Value* bias = node.inputs.size() > 2 && node.inputs[2] ? kb.input_ptrs[2] : nullptr;
    llvm::Value* mean_out = node.outputs.size() > 1 ? kb.output_ptrs[1] : nullptr;
    llvm::Value* inv_std_out = node.outputs.size() > 2 ? kb.output_ptrs[2] : nullptr;
    const double eps = node.f("epsilon");
    emitWarpRows(kb, v.rows, [&](llvm::Value* row, llvm::Value* lane) {
      llvm::Value* base = b.CreateMul(row, b.getInt64(v.len));
      auto load = [&](llvm::Value* j) {
        return cpu::loadCompute(b, dtype, X, b.CreateAdd(base, j));
      };
      // Scale's and B's element for row element j (whole_row: Layer/Rms).
      auto affineAt = [&](llvm::Value* j, bool whole_row) -> llvm::Value* {
        switch (kind) {
          case NormKind::Layer:
          case NormKind::Rms:
            return whole_row ? j : b.getInt64(0);
          case NormKind::Instance:
            return b.CreateURem(row, b.getInt64(nv.channels));
          case NormKind::Group: {
            llvm::Value* g = b.CreateURem(row, b.getInt64(nv.groups));
            if (!nv.per_channel) return g;
            return b.CreateAdd(b.CreateMul(g, b.getInt64(nv.channels / nv.groups)),
                               b.CreateUDiv(j, b.getInt64(nv.spatial)));
          }
        }
        return b.getInt64(0);
      };
      llvm::Value* n = llvm::ConstantFP::get(f32, static_cast<double>(v.len));
      llvm::Value* mean = llvm::ConstantFP::get(f32, 0.0);
      if (center) mean = b.CreateFDiv(emitRowReduce(b, lane, v.len, false, load), n);
      llvm::Value* var = b.CreateFDiv(emitRowReduce(b, lane, v.len, false,
                                                    [&](llvm::Value* j) {
                                                      llvm::Value* d = b.CreateFSub(load(j), mean);
                                                      return b.CreateFMul(d, d);
                                                    }),
                                      n);
      llvm::Value* inv_std =
          b.CreateFDiv(llvm::ConstantFP::get(f32, 1.0),
                       b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt,
                                              b.CreateFAdd(var, llvm::ConstantFP::get(f32, eps))));
      emitStridedLoop(
          b, lane, b.getInt64(v.len), b.getInt64(kWarpSize),
          [&](llvm::Value* j) {
            llvm::Value* y = b.CreateFMul(b.CreateFSub(load(j), mean), inv_std);
            y = b.CreateFMul(y, cpu::loadCompute(b, dtype, scale, affineAt(j, nv.scale_row)));
            if (bias)
              y = b.CreateFAdd(y, cpu::loadCompute(b, dtype, bias, affineAt(j, nv.bias_row)));
            cpu::storeCompute(b, dtype, y, Y, b.CreateAdd(base, j));
          },
          "j");
      if (mean_out || inv_std_out)
        emitIf(b, b.CreateICmpEQ(lane, b.getInt64(0)), [&] {
          if (mean_out) cpu::storeF32(b, mean, mean_out, row);
          if (inv_std_out) cpu::storeF32(b, inv_std, inv_std_out, row);
        });
    });
  };
  return lowering;
}

// ---- GlobalAveragePool, GlobalMaxPool ----

// [N, C, spatial...]: a row per (n, c) plane, f32.
RowView planeView(const Node& node) {
  const TensorType& x = node.inputs[0]->type;
  if (x.rank() < 3 || x.dtype != DType::F32)
    throw CompileError("node '" + node.name + "' (" + node.op + "): X must be f32 [N, C, ...]");
  RowView v;
  v.rows = x.dims[0] * x.dims[1];
  v.len = product(x.dims, 2, x.rank());
  return v;
}

GpuLowering makeGlobalPoolLowering(bool max) {
  GpuLowering lowering;
  lowering.supports = [](const Node& node) {
    if (node.inputs.size() != 1 || !node.inputs[0] || node.outputs.size() != 1) return false;
    planeView(node);
    return true;
  };
  lowering.launch = [](const Node& node) { return rowLaunch(planeView(node).rows); };
  lowering.emit = [max](GpuKernelBuilder& kb) {
    RowView v = planeView(kb.node);
    if (v.rows == 0) return;
    llvm::IRBuilder<>& b = kb.b;
    llvm::Value* X = kb.input_ptrs[0];
    llvm::Value* Y = kb.output_ptrs[0];
    emitWarpRows(kb, v.rows, [&](llvm::Value* row, llvm::Value* lane) {
      llvm::Value* base = b.CreateMul(row, b.getInt64(v.len));
      auto load = [&](llvm::Value* j) { return cpu::loadF32(b, X, b.CreateAdd(base, j)); };
      // The mean of an empty plane is 0; its maximum the lowest float.
      llvm::Value* r = emitRowReduce(b, lane, v.len, max, load, -FLT_MAX);
      if (!max)
        r = v.len ? b.CreateFDiv(r, llvm::ConstantFP::get(b.getFloatTy(), double(v.len)))
                  : llvm::ConstantFP::get(b.getFloatTy(), 0.0);
      emitIf(b, b.CreateICmpEQ(lane, b.getInt64(0)), [&] { cpu::storeF32(b, r, Y, row); });
    });
  };
  return lowering;
}

}  // namespace

std::vector<std::pair<std::string, GpuLowering>> rowGpuLowerings() {
  return {{"Softmax", makeSoftmaxLowering(false)},
          {"LogSoftmax", makeSoftmaxLowering(true)},
          {"LayerNormalization", makeNormLowering(NormKind::Layer)},
          {"RMSNormalization", makeNormLowering(NormKind::Rms)},
          {"InstanceNormalization", makeNormLowering(NormKind::Instance)},
          {"GroupNormalization", makeNormLowering(NormKind::Group)},
          {"GlobalAveragePool", makeGlobalPoolLowering(false)},
          {"GlobalMaxPool", makeGlobalPoolLowering(true)}};
}

}  // namespace nanoc::gpu
