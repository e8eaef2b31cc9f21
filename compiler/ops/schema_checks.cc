#include "compiler/ops/schema_checks.h"

#include "compiler/ir/error.h"

namespace nanoc {

void failNode(const Node& node, const std::string& message) {
  throw CompileError("node '" + node.name + "' (" + node.op + "): " + message);
}

const TensorType& inputType(const Node& node, size_t index) {
  if (index >= node.inputs.size() || !node.inputs[index])
    failNode(node, "required operand " + std::to_string(index) + " is missing");
  return node.inputs[index]->type;
}

void requireF32(const Node& node) {
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Value* in = node.inputs[i];
    if (in && in->type.dtype != DType::F32)
      failNode(node, "operand " + std::to_string(i) + " '" + in->name + "' is " + in->type.str() +
                         ", this op supports f32 only");
  }
}

void requireRank(const Node& node, size_t index, const char* operand, size_t rank) {
  const TensorType& t = inputType(node, index);
  if (t.rank() != rank)
    failNode(node,
             std::string(operand) + " must have rank " + std::to_string(rank) + ", got " + t.str());
}

int64_t boolAttr(const Node& node, const std::string& key) {
  int64_t v = node.i(key);
  if (v != 0 && v != 1)
    failNode(node, "attribute '" + key + "' must be 0 or 1, got " + std::to_string(v));
  return v;
}

const std::vector<int64_t>& intsAttr(const Node& node, const std::string& key, size_t count,
                                     int64_t min_value) {
  const std::vector<int64_t>& v = node.ints(key);
  if (v.size() != count)
    failNode(node, "attribute '" + key + "' must have " + std::to_string(count) + " entries, got " +
                       dimsStr(v));
  for (int64_t x : v)
    if (x < min_value)
      failNode(node, "attribute '" + key + "' entries must be >= " + std::to_string(min_value) +
                         ", got " + dimsStr(v));
  return v;
}

std::string dimsStr(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  // Zero dims count as one in the overflow check: a zero-element tensor must
  // not hide dims whose product (a flattened size, a stride) overflows.
  int64_t n = 1, span = 1;
  for (size_t i = begin; i < end; ++i) {
    if (dims[i] < 0 || __builtin_mul_overflow(span, dims[i] == 0 ? 1 : dims[i], &span))
      throw CompileError("shape " + dimsStr(dims) + ": the product of its dims overflows");
    n *= dims[i];
  }
  return n;
}

}  // namespace nanoc
