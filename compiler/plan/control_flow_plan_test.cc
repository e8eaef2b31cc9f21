// The arena plan of control flow spliced in (passes/control_flow.h): what a
// loop body reads from before the loop stays alive to the loop's end, and a
// loop's next state that reads a view of another state value is copied
// aside before any state is overwritten.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/passes/control_flow.h"
#include "compiler/passes/shape_inference.h"
#include "compiler/plan/arena_plan.h"

namespace nanoc {
namespace {

TensorType f32(std::vector<int64_t> dims) { return {DType::F32, std::move(dims)}; }

Value* op(Graph& g, const std::string& name, std::vector<Value*> in,
          std::map<std::string, Attr> attrs = {}) {
  Node* n = g.addNode(name, "", std::move(in), 1);
  n->attrs = std::move(attrs);
  inferNode(*n);
  return n->outputs[0];
}

// A Loop body with its iteration and condition inputs; the caller adds the
// rest.
std::shared_ptr<Graph> loopBody() {
  auto body = std::make_shared<Graph>();
  body->name = "body";
  body->addInput("iteration", {DType::I64, {}});
  body->addInput("cond", {DType::Bool, {}});
  return body;
}

// Loop(m, no condition, operands...) over `body`, the first `carried`
// operands its state, at most 100 trips.
Node* addLoop(Graph& g, Value* m, const std::vector<Value*>& operands, int64_t carried,
              std::shared_ptr<Graph> body) {
  std::vector<Value*> in = {m, nullptr};
  in.insert(in.end(), operands.begin(), operands.end());
  Node* loop = g.addNode("Loop", "loop", std::move(in), static_cast<size_t>(carried));
  loop->attrs = {{"num_carried", carried}, {"max_trips", int64_t{100}}};
  loop->subgraphs = {std::move(body)};
  inferNode(*loop);
  return loop;
}

bool sameBytes(const BufferSlice& a, const BufferSlice& b) {
  return a.kind == BufferKind::Arena && b.kind == BufferKind::Arena &&
         a.offset < b.offset + b.size && b.offset < a.offset + a.size;
}

// Loop(m) { v <- Neg(v + t) } with t = Tanh(x) computed before the loop.
TEST(ControlFlowPlan, AValueABodyReadsLivesToTheLoopsEnd) {
  Graph g;
  Value* x = g.addInput("x", f32({16}));
  Value* m = g.addInput("m", {DType::I64, {}});
  Value* t = op(g, "Tanh", {x});
  std::shared_ptr<Graph> body = loopBody();
  Value* v = body->addInput("v", f32({16}));
  Value* t_in = body->addInput("t", f32({16}));
  Value* sum = op(*body, "Add", {v, t_in});
  Value* next = op(*body, "Neg", {sum});
  body->outputs = {body->inputs[1], next};
  // The Loop node goes with the splice: keep its result.
  Value* state = addLoop(g, m, {x, t}, 1, body)->outputs[0];
  g.outputs = {op(g, "Neg", {state})};
  verifyGraph(g);

  flattenControlFlow(g);
  ArenaPlan plan = planBuffers(g);
  // Without the loop's extension, the body's later values could take t's
  // bytes after its one read, and the next iteration would read them.
  EXPECT_FALSE(sameBytes(plan.at(t), plan.at(sum)));
  EXPECT_FALSE(sameBytes(plan.at(t), plan.at(next)));
  EXPECT_FALSE(sameBytes(plan.at(state), plan.at(next)));
  std::vector<std::string> ops;
  for (const auto& n : g.nodes) ops.push_back(n->op);
  EXPECT_EQ(ops, (std::vector<std::string>{"Tanh", "Identity", "nanoc.Loop", "Add", "Neg",
                                           "Identity", "nanoc.EndLoop", "Neg"}));
}

// Loop(m) { (a, b) <- (Reshape(b), Reshape(a)) }: each next value is a view
// of the other state value, so one is copied aside first.
TEST(ControlFlowPlan, ASwapThroughViewsIsCopiedAsideFirst) {
  Graph g;
  Value* x = g.addInput("x", f32({4}));
  Value* y = g.addInput("y", f32({4}));
  Value* m = g.addInput("m", {DType::I64, {}});
  std::shared_ptr<Graph> body = loopBody();
  Value* a = body->addInput("a", f32({4}));
  Value* b = body->addInput("b", f32({4}));
  Value* next_a = op(*body, "Reshape", {b}, {{"shape", std::vector<int64_t>{4}}});
  Value* next_b = op(*body, "Reshape", {a}, {{"shape", std::vector<int64_t>{4}}});
  body->outputs = {body->inputs[1], next_a, next_b};
  Node* loop = addLoop(g, m, {x, y}, 2, body);
  Value* state_a = loop->outputs[0];
  Value* state_b = loop->outputs[1];
  g.outputs = {op(g, "Neg", {state_a}), op(g, "Neg", {state_b})};
  verifyGraph(g);

  flattenControlFlow(g);
  // The copies at the body's end: every copy aside before the first copy
  // into the state.
  int aside = 0, first_carry = -1, last_aside = -1;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const std::string& name = g.nodes[n]->name;
    if (name.find("/next_") != std::string::npos) {
      ++aside;
      last_aside = static_cast<int>(n);
    }
    if (name.find("/carry_") != std::string::npos && first_carry < 0)
      first_carry = static_cast<int>(n);
  }
  EXPECT_EQ(aside, 2);
  ASSERT_GE(first_carry, 0);
  EXPECT_LT(last_aside, first_carry);
  ArenaPlan plan = planBuffers(g);
  EXPECT_FALSE(sameBytes(plan.at(state_a), plan.at(state_b)));
}

}  // namespace
}  // namespace nanoc
