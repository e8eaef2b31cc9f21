// ONNX -> IR mappings of NegativeLogLikelihoodLoss (opsets 12, 13, 22) and
// SoftmaxCrossEntropyLoss (12, 13): reduction defaults to "mean"; an absent
// ignore_index becomes -1, which no valid target (in [0, C)) equals.
#include "compiler/frontend/onnx/onnx_mapping_util.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc::onnx_import {
namespace {

std::map<std::string, Attr> lossAttrs(const NodeImporter& n) {
  std::string reduction = n.stringAttr("reduction").value_or("mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    n.fail("reduction '" + reduction + "' is not one of none, sum, mean");
  return {{"reduction", reduction}, {"ignore_index", n.intAttr("ignore_index", -1)}};
}

void mapNll(NodeImporter& n) {
  n.emitResult("NegativeLogLikelihoodLoss",
               {n.requiredInput(0, "input"), n.requiredInput(1, "target"), n.input(2)},
               lossAttrs(n));
}

// Two results (loss, log_prob): built and typed here as emit() does for one.
void mapSce(NodeImporter& n) {
  std::vector<std::string> names;
  for (int i = 0; i < 2; ++i)
    names.push_back(i < n.proto().output_size() ? n.proto().output(i) : "");
  if (names[0].empty()) n.fail("has no output");
  Node* node = n.graph().addNode(
      "SoftmaxCrossEntropyLoss", n.name(),
      {n.requiredInput(0, "scores"), n.requiredInput(1, "labels"), n.input(2)}, 2, names);
  node->attrs = lossAttrs(n);
  inferNode(*node);
  for (size_t i = 0; i < 2 && i < static_cast<size_t>(n.proto().output_size()); ++i)
    if (!names[i].empty()) n.setOutput(i, node->outputs[i]);
}

}  // namespace

MappingList lossMappings() {
  return {{"NegativeLogLikelihoodLoss", mapNll}, {"SoftmaxCrossEntropyLoss", mapSce}};
}

}  // namespace nanoc::onnx_import
