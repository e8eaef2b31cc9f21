#include "compiler/codegen/cpu/index_loops.h"

#include "compiler/codegen/cpu/loops.h"

namespace nanoc::cpu {

llvm::Type* bitsType(llvm::IRBuilder<>& b, DType dtype) {
  return b.getIntNTy(8 * dtypeSize(dtype));
}

llvm::Value* bitsPtr(llvm::IRBuilder<>& b, DType dtype, llvm::Value* base, llvm::Value* index) {
  return b.CreateGEP(bitsType(b, dtype), base, index);
}

llvm::Value* loadIndex(llvm::IRBuilder<>& b, DType dtype, llvm::Value* base, llvm::Value* index) {
  llvm::Value* v = b.CreateLoad(bitsType(b, dtype), bitsPtr(b, dtype, base, index));
  if (v->getType()->getIntegerBitWidth() == 64) return v;
  bool is_signed = dtype == DType::I8 || dtype == DType::I16 || dtype == DType::I32;
  return is_signed ? b.CreateSExt(v, b.getInt64Ty()) : b.CreateZExt(v, b.getInt64Ty());
}

llvm::Value* emitClampIndex(llvm::IRBuilder<>& b, llvm::Value* index, int64_t dim) {
  llvm::Value* wrapped = b.CreateSelect(b.CreateICmpSLT(index, b.getInt64(0)),
                                        b.CreateAdd(index, b.getInt64(dim)), index);
  llvm::Value* low = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, wrapped, b.getInt64(0));
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, low, b.getInt64(dim - 1));
}

RowTasks elementTasks(const std::vector<int64_t>& dims) {
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < dims.size(); ++d) rows *= dims[d];
  return splitRows(rows, dims.empty() ? 1 : dims.back());
}

void emitElementTasks(
    KernelBuilder& kb, const std::vector<int64_t>& dims,
    const std::function<void(const std::vector<llvm::Value*>& index, llvm::Value* linear)>& body) {
  llvm::IRBuilder<>& b = kb.b;
  RowTasks tasks = elementTasks(dims);
  emitRowTasks(kb, tasks, [&](llvm::Value* row, llvm::Value* col_begin, llvm::Value* col_end) {
    std::vector<llvm::Value*> index(dims.size());
    llvm::Value* rest = row;
    for (size_t d = dims.size() - (dims.empty() ? 0 : 1); d-- > 0;) {
      index[d] = d == 0 ? rest : b.CreateURem(rest, b.getInt64(dims[d]));
      if (d > 0) rest = b.CreateUDiv(rest, b.getInt64(dims[d]));
    }
    llvm::Value* row_base = b.CreateMul(row, b.getInt64(tasks.cols));
    emitLoop(
        b, col_begin, col_end,
        [&](llvm::Value* col) {
          if (!dims.empty()) index.back() = col;
          body(index, b.CreateAdd(row_base, col));
        },
        "col");
  });
}

StridedCopy simplifyStridedCopy(const std::vector<int64_t>& dims,
                                const std::vector<int64_t>& strides, int64_t base) {
  StridedCopy copy;
  copy.base = base;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    // Output dim d continues the previous one's input run: merge them.
    if (!copy.dims.empty() && copy.strides.back() == strides[d] * dims[d]) {
      copy.dims.back() *= dims[d];
      copy.strides.back() = strides[d];
    } else {
      copy.dims.push_back(dims[d]);
      copy.strides.push_back(strides[d]);
    }
  }
  if (copy.dims.empty()) {
    copy.dims.push_back(1);
    copy.strides.push_back(1);
  }
  copy.tasks = elementTasks(copy.dims);
  return copy;
}

// Shorter runs are copied by the element loop, which the vectorizer handles
// better than a call per row.
constexpr int64_t kMinMemcpyBytes = 128;

void emitCopyRun(llvm::IRBuilder<>& b, DType dtype, llvm::Value* dst, llvm::Value* dst_at,
                 llvm::Value* src, llvm::Value* src_at, llvm::Value* begin, llvm::Value* end,
                 int64_t run_elements) {
  llvm::Type* element = bitsType(b, dtype);
  int64_t esize = dtypeSize(dtype);
  if (run_elements * esize >= kMinMemcpyBytes) {
    b.CreateMemCpy(b.CreateGEP(element, dst, b.CreateAdd(dst_at, begin)), llvm::MaybeAlign(esize),
                   b.CreateGEP(element, src, b.CreateAdd(src_at, begin)), llvm::MaybeAlign(esize),
                   b.CreateMul(b.CreateSub(end, begin), b.getInt64(esize)));
    return;
  }
  emitLoop(
      b, begin, end,
      [&](llvm::Value* i) {
        llvm::Value* v = b.CreateLoad(element, b.CreateGEP(element, src, b.CreateAdd(src_at, i)));
        b.CreateStore(v, b.CreateGEP(element, dst, b.CreateAdd(dst_at, i)));
      },
      "run");
}

void emitStridedCopy(KernelBuilder& kb, DType dtype, const StridedCopy& copy) {
  llvm::IRBuilder<>& b = kb.b;
  llvm::Type* element = bitsType(b, dtype);
  auto c = [&](int64_t v) { return b.getInt64(v); };
  size_t k = copy.dims.size();
  int64_t inner_stride = copy.strides[k - 1];
  emitRowTasks(kb, copy.tasks, [&](llvm::Value* row, llvm::Value* col_begin, llvm::Value* col_end) {
    llvm::Value* in_base = c(copy.base);
    llvm::Value* rest = row;
    for (size_t d = k - 1; d-- > 0;) {
      llvm::Value* idx = d == 0 ? rest : b.CreateURem(rest, c(copy.dims[d]));
      if (d > 0) rest = b.CreateUDiv(rest, c(copy.dims[d]));
      in_base = b.CreateAdd(in_base, b.CreateMul(idx, c(copy.strides[d])));
    }
    llvm::Value* out_base = b.CreateMul(row, c(copy.dims.back()));
    if (inner_stride == 1) {
      emitCopyRun(b, dtype, kb.output(0), out_base, kb.input(0), in_base, col_begin, col_end,
                  copy.dims.back());
      return;
    }
    emitLoop(
        b, col_begin, col_end,
        [&](llvm::Value* col) {
          llvm::Value* from = b.CreateAdd(in_base, b.CreateMul(col, c(inner_stride)));
          llvm::Value* v = b.CreateLoad(element, b.CreateGEP(element, kb.input(0), from));
          b.CreateStore(v, b.CreateGEP(element, kb.output(0), b.CreateAdd(out_base, col)));
        },
        "col");
  });
}

}  // namespace nanoc::cpu
