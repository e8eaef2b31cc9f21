// Operand views for the GPU's MatMuls: see gpu_operand_views.h.
#include "compiler/passes/gpu_operand_views.h"

#include <map>
#include <string>
#include <vector>

#include "compiler/ops/data_movement.h"
#include "compiler/ops/operand_view.h"
#include "compiler/ops/schema_checks.h"
#include "compiler/ops/split_k.h"
#include "compiler/passes/dead_code_elimination.h"
#include "compiler/passes/gpu_placement.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc {

std::vector<int64_t> reshapedViewStrides(const std::vector<int64_t>& dims,
                                         const std::vector<int64_t>& strides,
                                         const std::vector<int64_t>& new_dims) {
  const int64_t numel = product(dims, 0, dims.size());
  if (numel != product(new_dims, 0, new_dims.size())) return {};
  if (new_dims.empty()) return {};
  if (numel == 0 || dims.empty()) return stridesOf(new_dims);
  std::vector<int64_t> out(new_dims.size(), 0);
  // Chunks of the old dims whose strides nest (each dim's stride the next
  // one's times its size, dims of size 1 aside) map to runs of new dims with
  // the chunk's innermost stride (PyTorch's computeStride).
  int64_t view_d = static_cast<int64_t>(new_dims.size()) - 1;
  int64_t chunk_base_stride = strides.back(), tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(dims.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= dims[static_cast<size_t>(tensor_d)];
    if (tensor_d == 0 ||
        (dims[static_cast<size_t>(tensor_d - 1)] != 1 &&
         strides[static_cast<size_t>(tensor_d - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 &&
             (view_numel < tensor_numel || new_dims[static_cast<size_t>(view_d)] == 1)) {
        out[static_cast<size_t>(view_d)] = view_numel * chunk_base_stride;
        view_numel *= new_dims[static_cast<size_t>(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return {};
      if (tensor_d > 0) {
        chunk_base_stride = strides[static_cast<size_t>(tensor_d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return {};
  return out;
}

namespace {

// The view after one step of the chain, false where it has none.
bool apply(const Node& step, OperandView& v) {
  const std::vector<int64_t>& out = step.outputs[0]->type.dims;
  if (step.op == "Transpose") {
    const std::vector<int64_t>& perm = step.ints("perm");
    if (perm.size() != v.shape.size()) return false;
    OperandView t;
    t.offset = v.offset;
    for (int64_t p : perm) {
      if (p < 0 || static_cast<size_t>(p) >= v.shape.size()) return false;
      t.shape.push_back(v.shape[static_cast<size_t>(p)]);
      t.strides.push_back(v.strides[static_cast<size_t>(p)]);
    }
    v = t;
    return t.shape == out;
  }
  if (step.op == "Reshape") {
    if (out.empty()) return false;
    std::vector<int64_t> strides = reshapedViewStrides(v.shape, v.strides, out);
    if (strides.empty()) return false;
    v.shape = out;
    v.strides = strides;
    return true;
  }
  return false;
}

}  // namespace

size_t foldGpuOperandViews(Graph& graph) {
  // Each value's uses (node inputs, and graph outputs counted as a use).
  std::map<const Value*, int> uses;
  for (const auto& node : graph.nodes)
    for (const Value* v : node->inputs)
      if (v) ++uses[v];
  for (const Value* v : graph.outputs) uses[v] += 2;
  size_t folded = 0;
  for (const auto& node : graph.nodes) {
    if (node->op != "MatMul" || !isGpuNode(*node) || node->outputs.size() != 1 ||
        node->has(kSplitKChunkAttribute) || node->inputs.size() < 2)
      continue;
    for (int input = 0; input < 2; ++input) {
      Value* operand = node->inputs[static_cast<size_t>(input)];
      if (!operand || operand->type.dtype != DType::F32 || operandView(*node, input)) continue;
      // The chain back from the operand: steps[0] makes it.
      std::vector<const Node*> steps;
      for (Value* cur = operand; cur->producer && uses[cur] == 1;) {
        const Node* p = cur->producer;
        if (!isGpuNode(*p) || p->outputs.size() != 1 || p->inputs.empty() || !p->inputs[0] ||
            (p->op != "Transpose" && p->op != "Reshape" && p->op != "Slice"))
          break;
        steps.push_back(p);
        cur = p->inputs[0];
        if (p->op == "Slice") break;  // only on the chain's dense start
      }
      // The longest chain with a kernel in it whose view exists.
      for (size_t len = steps.size(); len > 0; --len) {
        bool kernel = false;
        for (size_t j = 0; j < len; ++j) kernel = kernel || steps[j]->op != "Reshape";
        if (!kernel) break;
        Value* base = steps[len - 1]->inputs[0];
        OperandView v;
        size_t j = len;
        if (steps[len - 1]->op == "Slice") {
          const StridedView sv = sliceView(*steps[len - 1]);
          v.shape = steps[len - 1]->outputs[0]->type.dims;
          v.strides = sv.strides;
          v.offset = sv.base;
          bool ok = !v.shape.empty() && v.offset >= 0;
          for (int64_t s : v.strides) ok = ok && s >= 0;
          if (!ok) continue;
          --j;
        } else {
          v.shape = base->type.dims;
          v.strides = stridesOf(v.shape);
          if (v.shape.empty()) continue;
        }
        bool ok = true;
        while (ok && j-- > 0) ok = apply(*steps[j], v);
        if (!ok || v.shape != operand->type.dims) continue;
        --uses[operand];
        ++uses[base];
        node->inputs[static_cast<size_t>(input)] = base;
        setOperandView(*node, input, v);
        ++folded;
        break;
      }
    }
  }
  if (folded > 0) {
    eliminateDeadCode(graph);
    inferShapes(graph);
  }
  return folded;
}

}  // namespace nanoc
