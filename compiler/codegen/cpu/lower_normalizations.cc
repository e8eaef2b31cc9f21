// CPU lowerings of the row normalizations: LayerNormalization,
// RMSNormalization, InstanceNormalization, GroupNormalization and
// MeanVarianceNormalization. Each normalizes the contiguous rows of X (see
// compiler/ops/normalizations.cc) in two passes over a row:
//   1. one read for both statistics: the sums of d and d^2 with d = x - x[0]
//      (shifting by the row's first element keeps E[d^2] - E[d]^2 from
//      cancelling when the mean is large against the spread), in f32 with
//      reassociation allowed, so the loop vectorizes;
//   2. y = (d - E[d]) * a + b (d again, which keeps the small E[d] exact where
//      the mean itself would round), with a and b per row element (LayerNormalization's
//      Scale and B) or per channel segment of the row (Instance- and
//      GroupNormalization), hoisted out of the unit-stride inner loop.
// A task takes whole rows, about kTaskElements elements of them.
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ir/error.h"

namespace nanoc::cpu {

Lowering makeLogSoftmaxLowering();  // lower_axis_ops.cc
Lowering makeHardmaxLowering();
Lowering makeLpNormalizationLowering();
Lowering makeLRNLowering();              // lower_lrn.cc
Lowering makeAttentionLowering();        // lower_attention.cc
Lowering makeRotaryEmbeddingLowering();  // lower_rotary_embedding.cc

namespace {

enum class AffineKind {
  None,        // MeanVarianceNormalization
  PerElement,  // Layer-/RMSNormalization: Scale (and B) broadcast to the row
  PerSegment,  // Instance-/GroupNormalization: the row is `segments` channels
};

struct RowNormShape {
  int64_t rows = 0, len = 0;
  bool center = true;
  bool eps_after_sqrt = false;
  double epsilon = 0;
  AffineKind affine = AffineKind::None;
  // PerSegment: the row is `segments` runs of `segment_len` elements; row r,
  // segment s uses channel (r % channel_groups) * segments + s.
  int64_t segments = 1, segment_len = 0, channel_groups = 1;
  bool stats = false;        // LayerNormalization's Mean and InvStdDev outputs (f32)
  DType dtype = DType::F32;  // of X, Y, scale and bias; computed in f32
};

[[noreturn]] void fail(const Node& node, const std::string& message) {
  throw CompileError("node '" + node.name + "' (" + node.op + "): " + message);
}

RowNormShape rowNormShape(const Node& node) {
  const TensorType& x = node.inputs[0]->type;
  DType t = x.dtype;
  if (t != DType::F32 && t != DType::F16 && t != DType::BF16)
    fail(node, "the CPU lowering takes f32, f16 or bf16, got " + x.str());
  for (const Value* in : node.inputs)
    if (in && in->type.dtype != t)
      fail(node, "operand " + in->type.str() + " does not have X's dtype " + x.str());
  RowNormShape s;
  s.dtype = t;
  const std::vector<int64_t>& d = x.dims;
  auto prod = [&](size_t begin, size_t end) {
    int64_t p = 1;
    for (size_t i = begin; i < end; ++i) p *= d[i];
    return p;
  };
  if (node.op == "LayerNormalization" || node.op == "RMSNormalization" ||
      node.op == "MeanVarianceNormalization") {
    int64_t axis = node.i("axis");
    if (axis < 0 || axis >= static_cast<int64_t>(x.rank()))
      fail(node, "axis " + std::to_string(axis) + " out of range for " + x.str());
    s.rows = prod(0, static_cast<size_t>(axis));
    s.len = prod(static_cast<size_t>(axis), d.size());
    s.center = node.op != "RMSNormalization";
    s.stats = node.op == "LayerNormalization";
    if (node.op == "MeanVarianceNormalization") {
      s.epsilon = 1e-9;
      s.eps_after_sqrt = true;
    } else {
      s.epsilon = node.f("epsilon");
      s.affine = AffineKind::PerElement;
    }
    return s;
  }
  if (x.rank() < 2) fail(node, "X " + x.str() + " has no channel axis");
  int64_t spatial = prod(2, d.size());
  s.epsilon = node.f("epsilon");
  s.affine = AffineKind::PerSegment;
  if (node.op == "InstanceNormalization") {
    s.rows = d[0] * d[1];
    s.len = s.segment_len = spatial;
    s.channel_groups = d[1];
    return s;
  }
  int64_t groups = node.i("num_groups");
  if (groups < 1 || d[1] % groups != 0)
    fail(node, "num_groups " + std::to_string(groups) + " does not divide " + x.str());
  s.rows = d[0] * groups;
  s.len = d[1] / groups * spatial;
  s.channel_groups = groups;
  if (node.inputs[1]->type.numel() == d[1]) {
    s.segments = d[1] / groups;
    s.segment_len = spatial;
  } else {  // scale and B per group: the whole row is one segment
    s.segment_len = s.len;
  }
  return s;
}

RowTasks rowNormTasks(const RowNormShape& s) {
  return splitRows(s.rows, 1, std::max<int64_t>(1, kTaskElements / std::max<int64_t>(s.len, 1)));
}

// Lets the vectorizer reorder a reduction's additions.
llvm::Value* reassoc(llvm::Value* v) {
  if (auto* inst = llvm::dyn_cast<llvm::Instruction>(v)) inst->setHasAllowReassoc(true);
  return v;
}

// A loop carrying two f32 sums: returns {s1, s2} after
// for k in [begin, end): (s1, s2) = body(k, s1, s2).
std::pair<llvm::Value*, llvm::Value*> emitTwoSums(
    llvm::IRBuilder<>& b, llvm::Value* begin, llvm::Value* end,
    const std::function<std::pair<llvm::Value*, llvm::Value*>(llvm::Value*, llvm::Value*,
                                                              llvm::Value*)>& body) {
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  llvm::LLVMContext& ctx = b.getContext();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx, "sums.header", fn);
  llvm::BasicBlock* loop = llvm::BasicBlock::Create(ctx, "sums.body", fn);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, "sums.exit", fn);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode* k = b.CreatePHI(b.getInt64Ty(), 2, "k");
  llvm::PHINode* s1 = b.CreatePHI(b.getFloatTy(), 2, "s1");
  llvm::PHINode* s2 = b.CreatePHI(b.getFloatTy(), 2, "s2");
  llvm::Value* zero = llvm::ConstantFP::get(b.getFloatTy(), 0.0);
  k->addIncoming(begin, pre);
  s1->addIncoming(zero, pre);
  s2->addIncoming(zero, pre);
  b.CreateCondBr(b.CreateICmpSLT(k, end), loop, exit);
  b.SetInsertPoint(loop);
  auto [n1, n2] = body(k, s1, s2);
  llvm::BasicBlock* latch = b.GetInsertBlock();
  k->addIncoming(b.CreateAdd(k, b.getInt64(1), "k.next", true, true), latch);
  s1->addIncoming(n1, latch);
  s2->addIncoming(n2, latch);
  b.CreateBr(header);
  b.SetInsertPoint(exit);
  return {s1, s2};
}

// Element k of a row (dims `row`) -> its element in `operand`, which
// broadcasts to the row aligned at the end.
llvm::Value* broadcastIndex(llvm::IRBuilder<>& b, llvm::Value* k, const std::vector<int64_t>& row,
                            const std::vector<int64_t>& operand) {
  int64_t row_numel = 1, operand_numel = 1;
  for (int64_t d : row) row_numel *= d;
  for (int64_t d : operand) operand_numel *= d;
  if (operand_numel == row_numel) return k;
  if (operand_numel == 1) return b.getInt64(0);
  llvm::Value* at = b.getInt64(0);
  int64_t row_stride = 1, stride = 1;
  size_t lead = row.size() - operand.size();
  for (size_t d = row.size(); d-- > 0;) {
    if (d >= lead && operand[d - lead] != 1) {
      llvm::Value* coord =
          b.CreateURem(b.CreateUDiv(k, b.getInt64(row_stride)), b.getInt64(row[d]));
      at = b.CreateAdd(at, b.CreateMul(coord, b.getInt64(stride)));
      stride *= operand[d - lead];
    }
    row_stride *= row[d];
  }
  return at;
}

void emitRowNorm(KernelBuilder& kb, const RowNormShape& s) {
  llvm::IRBuilder<>& b = kb.b;
  const Node& node = kb.node;
  llvm::Value* x = kb.input(0);
  llvm::Value* y = kb.output(0);
  llvm::Type* f32 = b.getFloatTy();
  auto kf = [&](double v) { return llvm::ConstantFP::get(f32, v); };
  llvm::Value* len = b.getInt64(s.len);
  llvm::Value* inv_len = kf(1.0 / static_cast<double>(s.len));
  std::vector<int64_t> row_dims;
  if (s.affine == AffineKind::PerElement) {
    const std::vector<int64_t>& d = node.inputs[0]->type.dims;
    row_dims.assign(d.begin() + node.i("axis"), d.end());
  }
  emitRowTasks(kb, rowNormTasks(s), [&](llvm::Value* row, llvm::Value*, llvm::Value*) {
    llvm::Value* base = b.CreateMul(row, len);
    llvm::Value* shift = s.center ? loadCompute(b, s.dtype, x, base) : kf(0.0);
    auto [s1, s2] =
        emitTwoSums(b, b.getInt64(0), len, [&](llvm::Value* k, llvm::Value* a1, llvm::Value* a2) {
          llvm::Value* v = b.CreateFSub(loadCompute(b, s.dtype, x, b.CreateAdd(base, k)), shift);
          llvm::Value* sq = b.CreateFMul(v, v);
          return std::make_pair(reassoc(b.CreateFAdd(a1, v)), reassoc(b.CreateFAdd(a2, sq)));
        });
    // Uncentered (RMSNormalization): the mean square stands for the variance
    // and the mean is 0.
    llvm::Value* mean_d = s.center ? b.CreateFMul(s1, inv_len) : kf(0.0);
    llvm::Value* var = b.CreateFSub(b.CreateFMul(s2, inv_len), b.CreateFMul(mean_d, mean_d));
    var = b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, var, kf(0.0));
    llvm::Value* mean = s.center ? b.CreateFAdd(shift, mean_d) : kf(0.0);
    llvm::Value* std_dev =
        s.eps_after_sqrt
            ? b.CreateFAdd(b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, var), kf(s.epsilon))
            : b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, b.CreateFAdd(var, kf(s.epsilon)));
    llvm::Value* inv_std = b.CreateFDiv(kf(1.0), std_dev);
    if (s.stats) {
      storeF32(b, mean, kb.output(1), row);
      storeF32(b, inv_std, kb.output(2), row);
    }
    if (s.affine == AffineKind::PerSegment) {
      llvm::Value* group = b.CreateURem(row, b.getInt64(s.channel_groups));
      emitLoop(
          b, b.getInt64(0), b.getInt64(s.segments),
          [&](llvm::Value* seg) {
            llvm::Value* c = b.CreateAdd(b.CreateMul(group, b.getInt64(s.segments)), seg);
            llvm::Value* a = b.CreateFMul(loadCompute(b, s.dtype, kb.input(1), c), inv_std);
            llvm::Value* shift_c =
                b.CreateFSub(loadCompute(b, s.dtype, kb.input(2), c), b.CreateFMul(mean_d, a));
            llvm::Value* seg_base = b.CreateAdd(base, b.CreateMul(seg, b.getInt64(s.segment_len)));
            emitLoop(
                b, b.getInt64(0), b.getInt64(s.segment_len),
                [&](llvm::Value* k) {
                  llvm::Value* at = b.CreateAdd(seg_base, k);
                  storeCompute(
                      b, s.dtype,
                      b.CreateIntrinsic(
                          llvm::Intrinsic::fmuladd, {f32},
                          {b.CreateFSub(loadCompute(b, s.dtype, x, at), shift), a, shift_c}),
                      y, at);
                },
                "k");
          },
          "seg");
      return;
    }
    emitLoop(
        b, b.getInt64(0), len,
        [&](llvm::Value* k) {
          llvm::Value* at = b.CreateAdd(base, k);
          llvm::Value* d =
              b.CreateFSub(b.CreateFSub(loadCompute(b, s.dtype, x, at), shift), mean_d);
          llvm::Value* v = b.CreateFMul(d, inv_std);
          if (s.affine == AffineKind::PerElement) {
            llvm::Value* scale = loadCompute(
                b, s.dtype, kb.input(1), broadcastIndex(b, k, row_dims, node.inputs[1]->type.dims));
            llvm::Value* bias = kf(0.0);
            if (node.inputs.size() > 2 && node.inputs[2])
              bias = loadCompute(b, s.dtype, kb.input(2),
                                 broadcastIndex(b, k, row_dims, node.inputs[2]->type.dims));
            v = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {f32}, {v, scale, bias});
          }
          storeCompute(b, s.dtype, v, y, at);
        },
        "k");
  });
}

Lowering makeRowNormLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return rowNormTasks(rowNormShape(node)).count(); };
  lowering.emit = [](KernelBuilder& kb) {
    RowNormShape s = rowNormShape(kb.node);
    if (s.rows > 0 && s.len > 0) emitRowNorm(kb, s);
    if (s.rows > 0 && s.len == 0 && s.stats) {
      // Empty rows: Y is empty, their statistics 0 / 0, as in the reference.
      llvm::Value* nan = llvm::ConstantFP::getNaN(kb.b.getFloatTy());
      emitRowTasks(kb, rowNormTasks(s), [&](llvm::Value* row, llvm::Value*, llvm::Value*) {
        storeF32(kb.b, nan, kb.output(1), row);
        storeF32(kb.b, nan, kb.output(2), row);
      });
    }
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace

std::vector<std::pair<std::string, Lowering>> normalizationLowerings() {
  return {{"LayerNormalization", makeRowNormLowering()},
          {"RMSNormalization", makeRowNormLowering()},
          {"InstanceNormalization", makeRowNormLowering()},
          {"GroupNormalization", makeRowNormLowering()},
          {"MeanVarianceNormalization", makeRowNormLowering()},
          {"LogSoftmax", makeLogSoftmaxLowering()},
          {"Hardmax", makeHardmaxLowering()},
          {"LpNormalization", makeLpNormalizationLowering()},
          {"LRN", makeLRNLowering()},
          {"Attention", makeAttentionLowering()},
          {"AttentionScores", makeAttentionLowering()},
          {"RotaryEmbedding", makeRotaryEmbeddingLowering()}};
}

}  // namespace nanoc::cpu
