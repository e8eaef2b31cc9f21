// Add, Sub, Mul, Div: f32 elementwise with numpy multidirectional broadcasting.
#include <functional>

#include "compiler/ir/error.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ops/broadcast.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {
namespace {

template <typename Fn>
OpSchema makeBinary(const char* name, Fn fn) {
  OpSchema schema;
  schema.name = name;
  schema.min_inputs = schema.max_inputs = 2;
  schema.infer = [](const Node& node) {
    const TensorType& a = inputType(node, 0);
    const TensorType& b = inputType(node, 1);
    requireF32(node);
    try {
      return std::vector<TensorType>{{DType::F32, broadcastShapes(a.dims, b.dims)}};
    } catch (const CompileError& e) {
      failNode(node, e.what());
    }
  };
  schema.reference = [fn](const Node& node, const std::vector<const void*>& in,
                          const std::vector<void*>& out) {
    const std::vector<int64_t>& dims = node.outputs[0]->type.dims;
    std::vector<int64_t> sa = broadcastStrides(node.inputs[0]->type.dims, dims);
    std::vector<int64_t> sb = broadcastStrides(node.inputs[1]->type.dims, dims);
    const float* a = static_cast<const float*>(in[0]);
    const float* b = static_cast<const float*>(in[1]);
    float* y = static_cast<float*>(out[0]);
    int64_t n = node.outputs[0]->type.numel();
    // Odometer over the output index, carrying both operand offsets along.
    std::vector<int64_t> index(dims.size(), 0);
    int64_t ia = 0, ib = 0;
    for (int64_t i = 0; i < n; ++i) {
      y[i] = fn(a[ia], b[ib]);
      for (size_t d = dims.size(); d-- > 0;) {
        ia += sa[d];
        ib += sb[d];
        if (++index[d] < dims[d]) break;
        ia -= sa[d] * dims[d];
        ib -= sb[d] * dims[d];
        index[d] = 0;
      }
    }
  };
  return schema;
}

}  // namespace

OpSchema makeAddSchema() { return makeBinary("Add", std::plus<float>()); }
OpSchema makeSubSchema() { return makeBinary("Sub", std::minus<float>()); }
OpSchema makeMulSchema() { return makeBinary("Mul", std::multiplies<float>()); }
OpSchema makeDivSchema() { return makeBinary("Div", std::divides<float>()); }

}  // namespace nanoc
