// nanoc.Elementwise: see fused_elementwise.h.
#include "compiler/ops/fused_elementwise.h"

#include <sstream>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

bool fusableElementwise(const ElementwiseOp& op) {
  // Pow's exponent may have another dtype in general; every operand of a
  // fused node is f32, so it is fusable.
  return op.result == ResultDType::SameAsInput && !op.mixed_operand0 &&
         (op.accepts == DTypeClass::Float || op.accepts == DTypeClass::Signed ||
          op.accepts == DTypeClass::Numeric || op.accepts == DTypeClass::Any);
}

ElementwiseProgram decodeElementwise(const Node& node, const TensorType& y) {
  if (node.inputs.empty() || node.inputs.size() > kMaxElementwiseInputs)
    failNode(node, "takes 1 to " + std::to_string(kMaxElementwiseInputs) + " inputs");
  for (size_t i = 0; i < node.inputs.size(); ++i)
    if (!node.inputs[i] || inputType(node, i).dtype != DType::F32)
      failNode(node, "input " + std::to_string(i) + " must be f32");
  std::vector<std::string> names;
  {
    std::stringstream ss(node.s("ops"));
    std::string name;
    while (std::getline(ss, name, ',')) names.push_back(name);
  }
  const std::vector<int64_t>& arity = node.ints("arity");
  const std::vector<int64_t>& operands = node.ints("operands");
  if (names.empty() || names.size() > kMaxElementwiseSteps || arity.size() != names.size())
    failNode(node, "needs 1 to " + std::to_string(kMaxElementwiseSteps) + " steps, one arity each");
  ElementwiseProgram program;
  size_t next = 0;
  for (size_t s = 0; s < names.size(); ++s) {
    ElementwiseProgram::Step step;
    step.op = findElementwise(names[s]);
    if (!step.op || !fusableElementwise(*step.op))
      failNode(node, "step " + std::to_string(s) + ": '" + names[s] +
                         "' is not an elementwise op that can be fused");
    if (arity[s] < step.op->min_inputs || arity[s] > step.op->max_inputs ||
        next + static_cast<size_t>(arity[s]) > operands.size())
      failNode(node, "step " + std::to_string(s) + " (" + names[s] + "): arity " +
                         std::to_string(arity[s]) + " out of range");
    step.node = std::make_unique<Node>();
    step.node->op = names[s];
    step.node->name = node.name + "." + std::to_string(s);
    const std::string prefix = "s" + std::to_string(s) + ".";
    for (const auto& [key, value] : node.attrs)
      if (key.compare(0, prefix.size(), prefix) == 0)
        step.node->attrs[key.substr(prefix.size())] = value;
    for (int64_t a = 0; a < arity[s]; ++a) {
      const int64_t r = operands[next++];
      if (r >= static_cast<int64_t>(node.inputs.size()) || -r - 1 >= static_cast<int64_t>(s))
        failNode(node, "step " + std::to_string(s) + ": operand " + std::to_string(r) +
                           " is neither an input nor an earlier step");
      step.operands.push_back(r);
      step.node->inputs.push_back(r >= 0 ? node.inputs[r] : program.results[-r - 1].get());
    }
    auto result = std::make_unique<Value>();
    result->name = step.node->name;
    result->type = y;
    result->typed = true;
    step.node->outputs.push_back(result.get());
    program.results.push_back(std::move(result));
    program.steps.push_back(std::move(step));
  }
  if (next != operands.size()) failNode(node, "operands left over after the last step");
  return program;
}

namespace {

OpSchema makeSchema() {
  OpSchema schema;
  schema.name = "nanoc.Elementwise";
  schema.min_inputs = 1;
  schema.max_inputs = static_cast<int>(kMaxElementwiseInputs);
  schema.infer = [](const Node& node) {
    TensorType y{DType::F32, broadcastInputDims(node)};
    decodeElementwise(node, y);  // checks the program
    return std::vector<TensorType>{y};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    ElementwiseProgram program = decodeElementwise(node, node.outputs[0]->type);
    std::vector<Scalar> inputs(node.inputs.size()), results(program.steps.size()), args;
    forEachBroadcastElement(node, [&](int64_t i, const std::vector<int64_t>& offset) {
      for (size_t x = 0; x < inputs.size(); ++x)
        inputs[x] = loadScalar(DType::F32, in[x], offset[x]);
      for (size_t s = 0; s < program.steps.size(); ++s) {
        const ElementwiseProgram::Step& step = program.steps[s];
        args.clear();
        for (int64_t r : step.operands) args.push_back(r >= 0 ? inputs[r] : results[-r - 1]);
        // Rounded to f32, as the unfused op stored it.
        results[s] = Scalar::ofFloat(
            static_cast<float>(step.op->reference(*step.node, args.data()).asDouble()));
      }
      storeScalar(DType::F32, results.back(), out[0], i);
    });
  };
  return schema;
}

}  // namespace

std::vector<OpSchema> fusedElementwiseSchemas() { return {makeSchema()}; }

}  // namespace nanoc
