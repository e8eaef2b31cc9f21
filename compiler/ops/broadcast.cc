#include "compiler/ops/broadcast.h"

#include <algorithm>

#include "compiler/ir/error.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

std::vector<int64_t> broadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Counted from the right: missing leading dims act as 1.
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      throw CompileError("shapes " + dimsStr(a) + " and " + dimsStr(b) + " do not broadcast");
    out[rank - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t>& shape,
                                      const std::vector<int64_t>& out) {
  if (shape.size() > out.size())
    throw CompileError("shape " + dimsStr(shape) + " has more dims than " + dimsStr(out));
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    size_t s = shape.size() - 1 - i;
    size_t o = out.size() - 1 - i;
    strides[o] = shape[s] == 1 ? 0 : stride;
    // Zero dims count as one: strides past a zero dim must not overflow.
    if (shape[s] < 0 || __builtin_mul_overflow(stride, shape[s] == 0 ? 1 : shape[s], &stride))
      throw CompileError("shape " + dimsStr(shape) + ": the product of its dims overflows");
  }
  return strides;
}

}  // namespace nanoc
