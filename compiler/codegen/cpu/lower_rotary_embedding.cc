// RotaryEmbedding (compiler/ops/rotary_embedding.cc): a task takes whole head
// rows; each row looks up its cos/sin row once, rotates its R/2 pairs in one
// loop and copies the rest.
#include <algorithm>

#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ir/error.h"

namespace nanoc::cpu {
namespace {

struct RotaryShape {
  int64_t batch = 0, heads = 0, seq = 0, head = 0, rot = 0, positions = 0;
  bool heads_first = true, interleaved = false, has_positions = false;
};

RotaryShape rotaryShape(const Node& node) {
  const TensorType& x = node.inputs[0]->type;
  if (x.rank() != 4 || x.dtype != DType::F32)
    throw CompileError("node '" + node.name +
                       "' (RotaryEmbedding): the CPU lowering needs f32 4-D X");
  RotaryShape s;
  s.heads_first = node.i("heads_first") != 0;
  s.interleaved = node.i("interleaved") != 0;
  s.batch = x.dims[0];
  s.heads = x.dims[s.heads_first ? 1 : 2];
  s.seq = x.dims[s.heads_first ? 2 : 1];
  s.head = x.dims[3];
  s.rot = node.i("rotary_dim");
  s.has_positions = node.inputs.size() > 3 && node.inputs[3];
  s.positions = node.inputs[1]->type.dims[0];
  return s;
}

RowTasks rotaryTasks(const RotaryShape& s) {
  return splitRows(s.batch * s.heads * s.seq, 1,
                   std::max<int64_t>(1, kTaskElements / std::max<int64_t>(s.head, 1)));
}

}  // namespace

Lowering makeRotaryEmbeddingLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return rotaryTasks(rotaryShape(node)).count(); };
  lowering.emit = [](KernelBuilder& kb) {
    RotaryShape s = rotaryShape(kb.node);
    llvm::IRBuilder<>& b = kb.b;
    auto c = [&](int64_t v) { return b.getInt64(v); };
    int64_t half = s.rot / 2;
    if (s.batch > 0 && s.heads > 0 && s.seq > 0 && s.head > 0)
      emitRowTasks(kb, rotaryTasks(s), [&](llvm::Value* row, llvm::Value*, llvm::Value*) {
        // (b, seq) of this row, in either layout.
        llvm::Value* bs;
        if (s.heads_first) {
          llvm::Value* seq = b.CreateURem(row, c(s.seq));
          llvm::Value* batch = b.CreateUDiv(row, c(s.heads * s.seq));
          bs = b.CreateAdd(b.CreateMul(batch, c(s.seq)), seq);
        } else {
          bs = b.CreateUDiv(row, c(s.heads));
        }
        llvm::Value* cs = bs;
        if (s.has_positions) {
          llvm::Value* p =
              b.CreateLoad(b.getInt64Ty(), b.CreateInBoundsGEP(b.getInt64Ty(), kb.input(3), bs));
          p = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, p, c(0));
          cs = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, p, c(s.positions - 1));
        }
        llvm::Value* cs_base = b.CreateMul(cs, c(half));
        llvm::Value* base = b.CreateMul(row, c(s.head));
        emitLoop(
            b, c(0), c(half),
            [&](llvm::Value* k) {
              llvm::Value* i1 = s.interleaved ? b.CreateMul(k, c(2)) : k;
              llvm::Value* i2 = s.interleaved ? b.CreateAdd(i1, c(1)) : b.CreateAdd(k, c(half));
              llvm::Value* co = loadF32(b, kb.input(1), b.CreateAdd(cs_base, k));
              llvm::Value* si = loadF32(b, kb.input(2), b.CreateAdd(cs_base, k));
              llvm::Value* x1 = loadF32(b, kb.input(0), b.CreateAdd(base, i1));
              llvm::Value* x2 = loadF32(b, kb.input(0), b.CreateAdd(base, i2));
              storeF32(b, b.CreateFSub(b.CreateFMul(co, x1), b.CreateFMul(si, x2)), kb.output(0),
                       b.CreateAdd(base, i1));
              storeF32(b, b.CreateFAdd(b.CreateFMul(si, x1), b.CreateFMul(co, x2)), kb.output(0),
                       b.CreateAdd(base, i2));
            },
            "pair");
        emitLoop(
            b, c(s.rot), c(s.head),
            [&](llvm::Value* k) {
              llvm::Value* at = b.CreateAdd(base, k);
              storeF32(b, loadF32(b, kb.input(0), at), kb.output(0), at);
            },
            "copy");
      });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
