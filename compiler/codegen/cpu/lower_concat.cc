// Concat of any dtype along `axis`, as byte copies. Each output row (one index
// of the dims before `axis`) is the inputs' chunks side by side; tasks split
// the output as rows x bytes, and each task copies, per input, the part of its
// chunk that falls in the task's byte range: one memcpy per input and row
// where chunks are long (a byte loop where they are a few elements), and a
// single large row (axis 0) still splits into several tasks.
#include <algorithm>

#include "compiler/codegen/cpu/index_loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/operand_alias.h"
#include "compiler/codegen/cpu/row_tasks.h"
#include "compiler/ir/error.h"

namespace nanoc::cpu {
namespace {

// Bytes per task: a memcpy of 64 KiB amortizes the task's fixed cost.
constexpr int64_t kTaskBytes = 4 * kTaskElements;

struct ConcatLayout {
  int64_t outer = 1;
  int64_t row_bytes = 0;
  std::vector<int64_t> chunk_bytes;  // per input
};

ConcatLayout concatLayout(const Node& node) {
  const TensorType& y = node.outputs[0]->type;
  int64_t axis = node.i("axis");
  if (axis < 0 || axis >= static_cast<int64_t>(y.rank()))
    throw CompileError("node '" + node.name + "' (Concat): axis " + std::to_string(axis) +
                       " out of range for " + y.str());
  ConcatLayout layout;
  for (int64_t d = 0; d < axis; ++d) layout.outer *= y.dims[d];
  for (const Value* in : node.inputs) {
    const TensorType& t = in->type;
    if (t.dtype != y.dtype || t.rank() != y.rank())
      throw CompileError("node '" + node.name + "' (Concat): input " + t.str() +
                         " does not match output " + y.str());
    int64_t bytes = dtypeSize(t.dtype);
    for (size_t d = axis; d < t.rank(); ++d) bytes *= t.dims[d];
    layout.chunk_bytes.push_back(bytes);
    layout.row_bytes += bytes;
  }
  return layout;
}

RowTasks concatTasks(const ConcatLayout& layout) {
  return splitRows(layout.outer, layout.row_bytes, kTaskBytes);
}

}  // namespace

Lowering makeConcatLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) { return concatTasks(concatLayout(node)).count(); };
  lowering.emit = [](KernelBuilder& kb) {
    ConcatLayout layout = concatLayout(kb.node);
    llvm::IRBuilder<>& b = kb.b;
    auto c = [&](int64_t v) { return b.getInt64(v); };
    emitRowTasks(
        kb, concatTasks(layout), [&](llvm::Value* row, llvm::Value* begin, llvm::Value* end) {
          llvm::Value* dst_row = b.CreateInBoundsGEP(b.getInt8Ty(), kb.output(0),
                                                     b.CreateMul(row, c(layout.row_bytes)));
          int64_t at = 0;
          for (size_t i = 0; i < layout.chunk_bytes.size(); ++i) {
            int64_t chunk = layout.chunk_bytes[i];
            if (chunk == 0) continue;
            // This input owns output bytes [at, at + chunk) of the row.
            llvm::Value* lo = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, begin, c(at));
            llvm::Value* hi = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, end, c(at + chunk));
            hi = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, hi, lo);
            // Input i's row holds output bytes [at, at + chunk): a memcpy when
            // the chunk is long, a byte loop when it is a few elements.
            llvm::Value* src_row =
                b.CreateSub(b.CreateMul(row, c(chunk)), c(at));  // byte j of the row at src_row + j
            emitCopyRun(b, DType::U8, dst_row, c(0), kb.input(i), src_row, lo, hi, chunk);
            at += chunk;
          }
        });
    addOperandAliasScopes(kb);
  };
  return lowering;
}

}  // namespace nanoc::cpu
