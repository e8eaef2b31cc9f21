// CPU lowering of Attention and AttentionScores (compiler/ops/attention.cc).
// A task takes whole query rows (b, h, i). Attention visits only the keys that
// causal, window and padding leave to the row, in chunks of kChunk, with an
// online softmax accumulating into the output row (f32) or an f32 row of
// scratch: per chunk, the logits x_j = s_j + bias_j and their max, then
// p_j = e^(x_j - m') in one vectorized loop with m' = max(m, chunk max), then
// y = y e^(m - m') + sum p_j v_j and l = l e^(m - m') + sum p_j; at the end
// y /= l (0 for a fully masked row). Scratch is one chunk, whatever the key
// length, and every inner loop (the q·k dot product, e^x over the chunk, the
// update of y over the value head) is unit-stride. AttentionScores writes the
// row of scores (mode 0-2) or of probabilities (mode 3) instead.
#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/math_functions.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ir/error.h"

namespace nanoc::cpu {
namespace {

using Builder = llvm::IRBuilder<>;

// Keys per chunk of the online softmax: the chunk's logits live in a stack
// array (512 bytes), its e^x is one vectorized loop.
constexpr int64_t kChunk = 128;

struct AttentionShape {
  int64_t batch = 0, q_heads = 0, kv_heads = 1, q_len = 0, kv_len = 0, head = 0, v_head = 0;
  int64_t mask_dims[4] = {1, 1, 1, 1};  // aligned at the end to [B, Hq, Sq, M]
  bool has_mask = false, bool_mask = false, has_nonpad = false, causal = false;
  int64_t past_len = 0, left = -1, right = -1, mode = -1;  // mode -1: Y
  double scale = 1, softcap = 0;
  DType dtype = DType::F32;  // of Q, K, V, a float mask and the output; computed in f32
};

AttentionShape attentionShape(const Node& node) {
  for (size_t i = 0; i < 3; ++i)
    if (!isFloat(node.inputs[i]->type.dtype) || node.inputs[i]->type.dtype == DType::F64 ||
        node.inputs[i]->type.rank() != 4)
      throw CompileError("node '" + node.name + "' (" + node.op +
                         "): the CPU lowering needs 4-D f32, f16 or bf16 Q, K and V");
  AttentionShape s;
  s.dtype = node.inputs[0]->type.dtype;
  const std::vector<int64_t>& q = node.inputs[0]->type.dims;
  const std::vector<int64_t>& k = node.inputs[1]->type.dims;
  s.batch = q[0];
  s.q_heads = q[1];
  s.q_len = q[2];
  s.head = q[3];
  s.kv_heads = std::max<int64_t>(k[1], 1);
  s.kv_len = k[2];
  s.v_head = node.inputs[2]->type.dims[3];
  if (node.inputs.size() > 3 && node.inputs[3]) {
    const TensorType& m = node.inputs[3]->type;
    s.has_mask = true;
    s.bool_mask = m.dtype == DType::Bool;
    for (size_t d = 0; d < m.rank(); ++d) s.mask_dims[4 - m.rank() + d] = m.dims[d];
  }
  s.has_nonpad = node.inputs.size() > 4 && node.inputs[4];
  s.causal = node.i("is_causal") != 0;
  s.past_len = node.i("past_len");
  s.left = node.i("left_window");
  s.right = node.i("right_window");
  s.scale = node.f("scale");
  s.softcap = node.f("softcap");
  if (node.op == "AttentionScores") s.mode = node.i("mode");
  return s;
}

RowTasks attentionTasks(const AttentionShape& s) {
  int64_t row_work = std::max<int64_t>(1, s.kv_len * (s.head + std::max<int64_t>(s.v_head, 1)));
  return splitRows(s.batch * s.q_heads * s.q_len, 1,
                   std::max<int64_t>(1, kTaskElements / row_work));
}

llvm::Value* reassoc(llvm::Value* v) {
  if (auto* inst = llvm::dyn_cast<llvm::Instruction>(v)) inst->setHasAllowReassoc(true);
  return v;
}

struct RowContext {
  llvm::Value* q_base;     // element offset of q_i
  llvm::Value* k_base;     // of k_0 of this row's key head
  llvm::Value* v_base;     // of v_0
  llvm::Value* mask_base;  // of the mask's row (b, h, i), before j
  llvm::Value* i;          // query index
  llvm::Value* offset;     // causal / window offset
  llvm::Value* valid_len;  // nonpad_kv_seqlen[b], or T
};

class AttentionEmitter {
 public:
  AttentionEmitter(KernelBuilder& kb, const AttentionShape& s) : kb_(kb), b_(kb.b), s_(s) {}

  void emit() {
    emitRowTasks(kb_, attentionTasks(s_), [&](llvm::Value* row, llvm::Value*, llvm::Value*) {
      RowContext r = rowContext(row);
      if (s_.mode < 0)
        emitOutputRow(r, row);
      else
        emitScoresRow(r, row);
    });
  }

 private:
  llvm::Value* c(int64_t v) { return b_.getInt64(v); }
  llvm::Value* f(double v) { return llvm::ConstantFP::get(b_.getFloatTy(), v); }
  llvm::Value* negInf() { return f(-std::numeric_limits<double>::infinity()); }

  RowContext rowContext(llvm::Value* row) {
    RowContext r;
    r.i = b_.CreateURem(row, c(s_.q_len));
    llvm::Value* bh = b_.CreateUDiv(row, c(s_.q_len));
    llvm::Value* h = b_.CreateURem(bh, c(s_.q_heads));
    llvm::Value* batch = b_.CreateUDiv(bh, c(s_.q_heads));
    llvm::Value* kh = b_.CreateUDiv(h, c(s_.q_heads / s_.kv_heads));
    llvm::Value* kv_head = b_.CreateAdd(b_.CreateMul(batch, c(s_.kv_heads)), kh);
    r.q_base = b_.CreateMul(row, c(s_.head));
    r.k_base = b_.CreateMul(kv_head, c(s_.kv_len * s_.head));
    r.v_base = b_.CreateMul(kv_head, c(s_.kv_len * s_.v_head));
    r.mask_base = c(0);
    if (s_.has_mask) {
      const int64_t* md = s_.mask_dims;
      llvm::Value* coords[3] = {batch, h, r.i};
      int64_t stride = md[3];
      for (int a = 2; a >= 0; --a) {
        if (md[a] != 1) r.mask_base = b_.CreateAdd(r.mask_base, b_.CreateMul(coords[a], c(stride)));
        stride *= md[a];
      }
    }
    if (s_.has_nonpad) {
      llvm::Value* len = b_.CreateLoad(b_.getInt64Ty(),
                                       b_.CreateInBoundsGEP(b_.getInt64Ty(), kb_.input(4), batch));
      r.valid_len = len;
      r.offset = b_.CreateSub(len, c(s_.q_len));
    } else {
      r.valid_len = c(s_.kv_len);
      r.offset = c(s_.past_len);
    }
    return r;
  }

  // The additive bias of key j: the mask's term, -inf where causal, window or
  // padding exclude j.
  llvm::Value* bias(const RowContext& r, llvm::Value* j) {
    llvm::Value* v = f(0.0);
    if (s_.has_mask && s_.mask_dims[3] == 0) {
      v = negInf();  // an empty mask row masks every key (all padding)
    } else if (s_.has_mask) {
      int64_t m = s_.mask_dims[3];
      llvm::Value* jm =
          m < s_.kv_len ? b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, j, c(m - 1)) : j;
      llvm::Value* at = b_.CreateAdd(r.mask_base, jm);
      if (s_.bool_mask) {
        llvm::Value* bit = loadElement(b_, DType::Bool, kb_.input(3), at);
        v = b_.CreateSelect(b_.CreateICmpNE(bit, b_.getInt8(0)), f(0.0), negInf());
      } else {
        v = loadCompute(b_, s_.dtype, kb_.input(3), at);
      }
      if (m < s_.kv_len) v = b_.CreateSelect(b_.CreateICmpSLT(j, c(m)), v, negInf());
    }
    llvm::Value* allowed = b_.getTrue();
    llvm::Value* diff = b_.CreateSub(b_.CreateAdd(r.i, r.offset), j);
    if (s_.causal) allowed = b_.CreateAnd(allowed, b_.CreateICmpSGE(diff, c(0)));
    if (s_.left >= 0) allowed = b_.CreateAnd(allowed, b_.CreateICmpSLE(diff, c(s_.left)));
    if (s_.right >= 0)
      allowed = b_.CreateAnd(allowed, b_.CreateICmpSLE(b_.CreateNeg(diff), c(s_.right)));
    if (s_.has_nonpad) allowed = b_.CreateAnd(allowed, b_.CreateICmpSLT(j, r.valid_len));
    return b_.CreateSelect(allowed, v, negInf());
  }

  // scale · q_i · k_j, soft-capped.
  llvm::Value* score(const RowContext& r, llvm::Value* j) {
    llvm::Value* k_row = b_.CreateAdd(r.k_base, b_.CreateMul(j, c(s_.head)));
    llvm::Value* dot = emitReduction(
        b_, c(0), c(s_.head), f(0.0),
        [&](llvm::Value* d, llvm::Value* acc) {
          llvm::Value* prod =
              b_.CreateFMul(loadCompute(b_, s_.dtype, kb_.input(0), b_.CreateAdd(r.q_base, d)),
                            loadCompute(b_, s_.dtype, kb_.input(1), b_.CreateAdd(k_row, d)));
          return reassoc(b_.CreateFAdd(acc, prod));
        },
        "dot");
    llvm::Value* sc = b_.CreateFMul(dot, f(s_.scale));
    if (s_.softcap > 0)
      sc = b_.CreateFMul(emitTanh(b_, b_.CreateFMul(sc, f(1.0 / s_.softcap))), f(s_.softcap));
    return sc;
  }

  // The keys [begin, end) that causal, window and padding leave to query i:
  // every key outside has bias -inf, so the loops never visit them.
  std::pair<llvm::Value*, llvm::Value*> keyRange(const RowContext& r) {
    auto smin = [&](llvm::Value* a, llvm::Value* x) {
      return b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, a, x);
    };
    auto smax = [&](llvm::Value* a, llvm::Value* x) {
      return b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, a, x);
    };
    llvm::Value* pos = b_.CreateAdd(r.i, r.offset);  // the query's position among the keys
    llvm::Value* begin = c(0);
    llvm::Value* end = c(s_.kv_len);
    if (s_.causal) end = smin(end, smax(c(0), b_.CreateAdd(pos, c(1))));
    if (s_.right >= 0) end = smin(end, smax(c(0), b_.CreateAdd(pos, c(s_.right + 1))));
    if (s_.has_nonpad) end = smin(end, smax(c(0), r.valid_len));
    if (s_.left >= 0) begin = smin(c(s_.kv_len), smax(c(0), b_.CreateSub(pos, c(s_.left))));
    return {begin, end};
  }

  // kChunk f32 of stack for one chunk's logits and probabilities.
  llvm::Value* chunkScratch() {
    llvm::IRBuilder<> entry(&kb_.fn->getEntryBlock(), kb_.fn->getEntryBlock().begin());
    return entry.CreateAlloca(llvm::ArrayType::get(b_.getFloatTy(), kChunk), nullptr, "chunk");
  }

  void emitOutputRow(const RowContext& r, llvm::Value* row) {
    // The f32 accumulator: the output row itself, or for half-precision
    // outputs a row of scratch, rounded once into the output at the end.
    bool f32_out = s_.dtype == DType::F32;
    llvm::Value* y = f32_out ? kb_.output(0) : scratch(s_.v_head);
    llvm::Value* y_base = f32_out ? b_.CreateMul(row, c(s_.v_head)) : c(0);
    auto y_at = [&](llvm::Value* d) { return b_.CreateAdd(y_base, d); };
    emitLoop(
        b_, c(0), c(s_.v_head), [&](llvm::Value* d) { storeF32(b_, f(0.0), y, y_at(d)); }, "zero");
    llvm::LLVMContext& ctx = b_.getContext();
    auto [kv_begin, kv_end] = keyRange(r);
    llvm::Value* len =
        b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, c(0), b_.CreateSub(kv_end, kv_begin));
    llvm::Value* chunks = b_.CreateUDiv(b_.CreateAdd(len, c(kChunk - 1)), c(kChunk));
    llvm::Value* p_buf = chunkScratch();
    auto fmuladd = [&](llvm::Value* a, llvm::Value* m, llvm::Value* add) {
      return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {b_.getFloatTy()}, {a, m, add});
    };
    std::vector<llvm::Value*> ml = emitCarriedLoop(
        b_, c(0), chunks, {negInf(), f(0.0)},
        [&](llvm::Value* chunk, const std::vector<llvm::Value*>& acc) -> std::vector<llvm::Value*> {
          llvm::Value* j0 = b_.CreateAdd(kv_begin, b_.CreateMul(chunk, c(kChunk)));
          llvm::Value* width =
              b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, c(kChunk), b_.CreateSub(kv_end, j0));
          // 1. The chunk's logits s_j + bias_j (-inf where masked) and their max.
          llvm::Value* chunk_max = emitReduction(
              b_, c(0), width, negInf(),
              [&](llvm::Value* jj, llvm::Value* mx) {
                llvm::Value* j = b_.CreateAdd(j0, jj);
                llvm::Value* bj = bias(r, j);
                llvm::Value* x = b_.CreateSelect(b_.CreateFCmpOEQ(bj, negInf()), negInf(),
                                                 b_.CreateFAdd(score(r, j), bj));
                storeF32(b_, x, p_buf, jj);
                return b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, mx, x);
              },
              "logit");
          llvm::Value* m_new = b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, acc[0], chunk_max);
          // Nothing attended yet (every key so far masked): skip the chunk.
          llvm::BasicBlock* from = b_.GetInsertBlock();
          llvm::BasicBlock* attend = llvm::BasicBlock::Create(ctx, "attend", kb_.fn);
          llvm::BasicBlock* merge = llvm::BasicBlock::Create(ctx, "attend.merge", kb_.fn);
          b_.CreateCondBr(b_.CreateFCmpOEQ(m_new, negInf()), merge, attend);
          b_.SetInsertPoint(attend);
          // 2. p_j = e^(x_j - m'), exactly 0 where masked, and their sum.
          llvm::Value* chunk_sum = emitReduction(
              b_, c(0), width, f(0.0),
              [&](llvm::Value* jj, llvm::Value* sum) {
                llvm::Value* x = loadF32(b_, p_buf, jj);
                llvm::Value* p = b_.CreateSelect(b_.CreateFCmpOEQ(x, negInf()), f(0.0),
                                                 emitExp(b_, b_.CreateFSub(x, m_new)));
                storeF32(b_, p, p_buf, jj);
                return reassoc(b_.CreateFAdd(sum, p));
              },
              "exp");
          // 3. Rescale what was accumulated against the old max (by a tiny
          // factor times 0 before the first attended key), add p_j v_j.
          llvm::Value* corr = emitExp(b_, b_.CreateFSub(acc[0], m_new));
          llvm::Value* l_new = fmuladd(acc[1], corr, chunk_sum);
          emitLoop(
              b_, c(0), c(s_.v_head),
              [&](llvm::Value* d) {
                storeF32(b_, b_.CreateFMul(loadF32(b_, y, y_at(d)), corr), y, y_at(d));
              },
              "rescale");
          emitLoop(
              b_, c(0), width,
              [&](llvm::Value* jj) {
                llvm::Value* p = loadF32(b_, p_buf, jj);
                llvm::Value* v_row = b_.CreateMul(b_.CreateAdd(j0, jj), c(s_.v_head));
                v_row = b_.CreateAdd(r.v_base, v_row);
                emitLoop(
                    b_, c(0), c(s_.v_head),
                    [&](llvm::Value* d) {
                      llvm::Value* v =
                          loadCompute(b_, s_.dtype, kb_.input(2), b_.CreateAdd(v_row, d));
                      storeF32(b_, fmuladd(p, v, loadF32(b_, y, y_at(d))), y, y_at(d));
                    },
                    "update");
              },
              "key");
          llvm::BasicBlock* attended = b_.GetInsertBlock();
          b_.CreateBr(merge);
          b_.SetInsertPoint(merge);
          llvm::PHINode* m_phi = b_.CreatePHI(b_.getFloatTy(), 2, "m");
          m_phi->addIncoming(acc[0], from);
          m_phi->addIncoming(m_new, attended);
          llvm::PHINode* l_phi = b_.CreatePHI(b_.getFloatTy(), 2, "l");
          l_phi->addIncoming(acc[1], from);
          l_phi->addIncoming(l_new, attended);
          return {m_phi, l_phi};
        },
        "chunk");
    // A fully masked row attended nothing: l = 0 and y stays 0.
    llvm::Value* l = ml[1];
    llvm::Value* inv =
        b_.CreateSelect(b_.CreateFCmpOGT(l, f(0.0)), b_.CreateFDiv(f(1.0), l), f(0.0));
    emitLoop(
        b_, c(0), c(s_.v_head),
        [&](llvm::Value* d) {
          llvm::Value* out_at = b_.CreateAdd(b_.CreateMul(row, c(s_.v_head)), d);
          storeCompute(b_, s_.dtype, b_.CreateFMul(loadF32(b_, y, y_at(d)), inv), kb_.output(0),
                       out_at);
        },
        "normalize");
  }

  // A stack array of n f32 (allocated once per call, in the entry block).
  llvm::Value* scratch(int64_t n) {
    llvm::IRBuilder<> entry(&kb_.fn->getEntryBlock(), kb_.fn->getEntryBlock().begin());
    return entry.CreateAlloca(llvm::ArrayType::get(b_.getFloatTy(), static_cast<uint64_t>(n)),
                              nullptr, "acc");
  }

  void emitScoresRow(const RowContext& r, llvm::Value* row) {
    // An f32 output row holds the logits and then the exponentials between
    // passes; a half-precision one is written once, in the last pass, the
    // logits computed again in each pass (no scratch of the key length).
    bool keep = s_.dtype == DType::F32;
    llvm::Value* o = kb_.output(0);
    llvm::Value* o_base = b_.CreateMul(row, c(s_.kv_len));
    auto o_at = [&](llvm::Value* j) { return b_.CreateAdd(o_base, j); };
    auto maxnum = [&](llvm::Value* a, llvm::Value* x) {
      return b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, a, x);
    };
    // Mode 0, 1: the scores; 2, 3: scores plus bias.
    auto logit = [&](llvm::Value* j) {
      llvm::Value* sc = score(r, j);
      return s_.mode <= 1 ? sc : b_.CreateFAdd(sc, bias(r, j));
    };
    if (s_.mode != 3) {
      emitLoop(
          b_, c(0), c(s_.kv_len),
          [&](llvm::Value* j) { storeCompute(b_, s_.dtype, logit(j), o, o_at(j)); }, "key");
      return;
    }
    // The logits' max and the max bias (-inf: every key masked).
    std::vector<llvm::Value*> maxes = emitCarriedLoop(
        b_, c(0), c(s_.kv_len), {negInf(), negInf()},
        [&](llvm::Value* j, const std::vector<llvm::Value*>& acc) -> std::vector<llvm::Value*> {
          llvm::Value* bj = bias(r, j);
          llvm::Value* x = b_.CreateFAdd(score(r, j), bj);
          if (keep) storeF32(b_, x, o, o_at(j));
          return {maxnum(acc[0], x), maxnum(acc[1], bj)};
        },
        "key");
    llvm::Value* max = maxes[0];
    llvm::Value* all_masked = b_.CreateFCmpOEQ(maxes[1], negInf());
    // e^(x - max), exactly 0 for masked keys (emitExp(-inf) is merely tiny)
    // and for every key of a fully masked row.
    auto expOf = [&](llvm::Value* x) {
      return b_.CreateSelect(b_.CreateOr(all_masked, b_.CreateFCmpOEQ(x, negInf())), f(0.0),
                             emitExp(b_, b_.CreateFSub(x, max)));
    };
    llvm::Value* sum = emitReduction(
        b_, c(0), c(s_.kv_len), f(0.0),
        [&](llvm::Value* j, llvm::Value* acc) {
          llvm::Value* e = expOf(keep ? loadF32(b_, o, o_at(j)) : logit(j));
          if (keep) storeF32(b_, e, o, o_at(j));
          return reassoc(b_.CreateFAdd(acc, e));
        },
        "sum");
    llvm::Value* inv =
        b_.CreateSelect(b_.CreateFCmpOGT(sum, f(0.0)), b_.CreateFDiv(f(1.0), sum), f(0.0));
    emitLoop(
        b_, c(0), c(s_.kv_len),
        [&](llvm::Value* j) {
          llvm::Value* e = keep ? loadF32(b_, o, o_at(j)) : expOf(logit(j));
          storeCompute(b_, s_.dtype, b_.CreateFMul(e, inv), o, o_at(j));
        },
        "normalize");
  }

  KernelBuilder& kb_;
  Builder& b_;
  const AttentionShape& s_;
};

}  // namespace

Lowering makeAttentionLowering() {  // Attention and AttentionScores
  Lowering lowering;
  lowering.task_count = [](const Node& node) {
    return attentionTasks(attentionShape(node)).count();
  };
  lowering.emit = [](KernelBuilder& kb) {
    AttentionShape s = attentionShape(kb.node);
    if (s.batch > 0 && s.q_heads > 0 && s.q_len > 0) AttentionEmitter(kb, s).emit();
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
