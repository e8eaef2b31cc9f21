// ONNX -> IR mappings of the reduction operators: Reduce* (every opset: axes
// as an attribute, then as a constant input from ReduceSum-13 and the others'
// opset 18), ArgMax/ArgMin, CumSum/CumProd and TopK. The IR forms are in
// compiler/ops/README.md: axes sorted and normalized, every flag explicit.
#include <algorithm>
#include <cstring>

#include "compiler/frontend/onnx/onnx_mapping_util.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc::onnx_import {
namespace {

// A constant integer scalar (or one-element 1-D tensor) of int32 or int64:
// CumSum's axis, TopK's K.
int64_t constantScalarInt(const NodeImporter& n, const Value* v, const char* role) {
  if (!v->isConstant())
    n.fail(std::string(role) + " input '" + v->name +
           "' is computed at run time; nanoc needs it constant (an initializer or a Constant "
           "node)");
  bool int32 = v->type.dtype == DType::I32;
  if ((!int32 && v->type.dtype != DType::I64) || v->type.numel() != 1 || v->type.rank() > 1)
    n.fail(std::string(role) + " input '" + v->name +
           "' must be an int32 or int64 scalar or one-element 1-D tensor, not " + v->type.str());
  if (int32) {
    int32_t x;
    std::memcpy(&x, v->data->data(), sizeof x);
    return x;
  }
  int64_t x;
  std::memcpy(&x, v->data->data(), sizeof x);
  return x;
}

// Reduce* took axes as an attribute until ReduceSum-13 and the others' 18.
bool axesAreAnInput(const NodeImporter& n) {
  return n.proto().op_type() == "ReduceSum" ? n.opset() >= 13 : n.opset() >= 18;
}

void mapReduce(NodeImporter& n) {
  Value* x = n.requiredInput(0, "data");
  int64_t rank = rankOf(x);
  std::vector<int64_t> axes;
  bool noop = false;
  if (axesAreAnInput(n)) {
    if (Value* a = n.input(1)) axes = constantInts(n, a, "axes", true);
    noop = n.intAttr("noop_with_empty_axes", 0) != 0;
  } else {
    axes = n.intsAttr("axes").value_or(std::vector<int64_t>{});
  }
  for (int64_t& a : axes) a = normalizeAxis(n, a, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    n.fail("axes " + dimsStr(axes) + " name an axis twice");
  // Empty axes reduce everything, unless noop_with_empty_axes: then each
  // element is reduced alone (ReduceSumSquare still squares, as ONNX's
  // reference and ONNX Runtime do), which is the IR's empty axes.
  if (axes.empty() && !noop)
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  n.emitResult(n.proto().op_type(), {x},
               {{"axes", axes}, {"keepdims", int64_t{n.intAttr("keepdims", 1) != 0}}});
}

void mapArg(NodeImporter& n) {
  Value* x = n.requiredInput(0, "data");
  int64_t last = n.opset() >= 12 ? n.intAttr("select_last_index", 0) != 0 : 0;
  n.emitResult(n.proto().op_type(), {x},
               {{"axis", normalizeAxis(n, n.intAttr("axis", 0), rankOf(x))},
                {"keepdims", int64_t{n.intAttr("keepdims", 1) != 0}},
                {"select_last_index", last}});
}

void mapCumulative(NodeImporter& n) {
  Value* x = n.requiredInput(0, "x");
  int64_t axis = constantScalarInt(n, n.requiredInput(1, "axis"), "axis");
  n.emitResult(n.proto().op_type(), {x},
               {{"axis", normalizeAxis(n, axis, rankOf(x))},
                {"exclusive", int64_t{n.intAttr("exclusive", 0) != 0}},
                {"reverse", int64_t{n.intAttr("reverse", 0) != 0}}});
}

void mapTopK(NodeImporter& n) {
  Value* x = n.requiredInput(0, "X");
  int64_t k;
  if (n.opset() < 10) {
    std::optional<int64_t> attr = n.intAttr("k");
    if (!attr) n.fail("attribute k is missing");
    k = *attr;
  } else {
    k = constantScalarInt(n, n.requiredInput(1, "K"), "K");
  }
  int64_t largest = n.opset() >= 11 ? n.intAttr("largest", 1) != 0 : 1;
  int64_t sorted = n.opset() >= 11 ? n.intAttr("sorted", 1) != 0 : 1;
  // Two results: the one-output emit() does not fit, so the node is built
  // and typed here the same way.
  std::vector<std::string> names;
  for (int i = 0; i < 2; ++i)
    names.push_back(i < n.proto().output_size() ? n.proto().output(i) : "");
  Node* node = n.graph().addNode("TopK", n.name(), {x}, 2, names);
  node->attrs = {{"axis", normalizeAxis(n, n.intAttr("axis", -1), rankOf(x))},
                 {"k", k},
                 {"largest", largest},
                 {"sorted", sorted}};
  inferNode(*node);
  for (size_t i = 0; i < 2 && i < static_cast<size_t>(n.proto().output_size()); ++i)
    if (!n.proto().output(static_cast<int>(i)).empty()) n.setOutput(i, node->outputs[i]);
}

}  // namespace

MappingList lossMappings();  // onnx_map_loss.cc

MappingList reductionMappings() {
  MappingList list;
  for (std::string_view op :
       {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
    list.emplace_back(op, mapReduce);
  list.emplace_back("ArgMax", mapArg);
  list.emplace_back("ArgMin", mapArg);
  list.emplace_back("CumSum", mapCumulative);
  list.emplace_back("CumProd", mapCumulative);
  list.emplace_back("TopK", mapTopK);
  for (const auto& entry : lossMappings()) list.push_back(entry);
  return list;
}

}  // namespace nanoc::onnx_import
