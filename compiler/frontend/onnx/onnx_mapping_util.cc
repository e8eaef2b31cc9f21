#include "compiler/frontend/onnx/onnx_mapping_util.h"

#include <cstring>

#include "compiler/ir/error.h"

namespace nanoc::onnx_import {

std::string dimsStr(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

int64_t normalizeAxis(const NodeImporter& n, int64_t axis, int64_t rank, bool inclusive_end) {
  int64_t upper = inclusive_end ? rank : rank - 1;
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a > upper)
    n.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return a;
}

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  // Zero dims count as one in the overflow check: a zero-element tensor must
  // not hide dims whose product (a flattened size, a stride) overflows.
  int64_t p = 1, span = 1;
  for (size_t i = begin; i < end; ++i) {
    if (dims[i] < 0 || __builtin_mul_overflow(span, dims[i] == 0 ? 1 : dims[i], &span))
      throw CompileError("shape " + dimsStr(dims) + ": the product of its dims overflows");
    p *= dims[i];
  }
  return p;
}

std::vector<int64_t> constantInts(const NodeImporter& n, const Value* v, const char* role,
                                  bool scalar_ok) {
  if (!v->isConstant())
    n.fail(std::string(role) + " input '" + v->name +
           "' is computed at run time; nanoc needs it constant (an initializer or a Constant "
           "node) to know the static shape");
  if (v->type.dtype != DType::I64 || !(v->type.rank() == 1 || (scalar_ok && v->type.rank() == 0)))
    n.fail(std::string(role) + " input '" + v->name + "' must be a 1-D int64 tensor, not " +
           v->type.str());
  std::vector<int64_t> out(static_cast<size_t>(v->type.numel()));
  if (!out.empty()) std::memcpy(out.data(), v->data->data(), out.size() * sizeof(int64_t));
  return out;
}

}  // namespace nanoc::onnx_import
