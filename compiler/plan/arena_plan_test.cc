#include "compiler/plan/arena_plan.h"

#include <gtest/gtest.h>

#include <random>

#include "compiler/ir/error.h"
#include "compiler/passes/gpu_placement.h"

namespace nanoc {
namespace {

TensorType f32(std::vector<int64_t> dims) { return {DType::F32, std::move(dims)}; }

// Adds a one-output node and types its result, as shape inference would.
Value* add(Graph& g, const std::string& op, std::vector<Value*> in, TensorType type) {
  Node* n = g.addNode(op, "", std::move(in), 1);
  n->outputs[0]->type = std::move(type);
  n->outputs[0]->typed = true;
  return n->outputs[0];
}

// Node index of each value's producer, and of its last reader.
std::map<const Value*, std::pair<int, int>> lifetimes(const Graph& g) {
  std::map<const Value*, std::pair<int, int>> life;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    for (const Value* in : g.nodes[n]->inputs)
      if (life.count(in)) life[in].second = static_cast<int>(n);
    for (const Value* out : g.nodes[n]->outputs) life[out] = {int(n), int(n)};
  }
  return life;
}

void expectNoLiveOverlap(const Graph& g, const ArenaPlan& plan) {
  std::map<const Value*, std::pair<int, int>> life = lifetimes(g);
  for (const auto& [a, la] : life)
    for (const auto& [b, lb] : life) {
      if (a >= b) continue;
      const BufferSlice& sa = plan.at(a);
      const BufferSlice& sb = plan.at(b);
      if (sa.kind != BufferKind::Arena || sb.kind != BufferKind::Arena) continue;
      bool same_time = la.first <= lb.second && lb.first <= la.second;
      bool same_bytes = sa.offset < sb.offset + sb.size && sb.offset < sa.offset + sa.size;
      EXPECT_FALSE(same_time && same_bytes) << a->name << " and " << b->name << " overlap";
    }
}

TEST(ArenaPlan, ChainReusesSpaceAndSizeIsExact) {
  Graph g;
  Value* x = g.addInput("x", f32({16}));  // 64 bytes each
  Value* a = add(g, "Relu", {x}, f32({16}));
  Value* b = add(g, "Relu", {a}, f32({16}));
  Value* c = add(g, "Relu", {b}, f32({16}));
  Value* y = add(g, "Relu", {c}, f32({16}));
  g.outputs = {y};
  ArenaPlan plan = planBuffers(g);
  // a and b are alive together at node 1, b and c at node 2; a and c never.
  EXPECT_EQ(plan.at(a).kind, BufferKind::Arena);
  EXPECT_NE(plan.at(a).offset, plan.at(b).offset);
  EXPECT_NE(plan.at(b).offset, plan.at(c).offset);
  EXPECT_EQ(plan.at(a).offset, plan.at(c).offset);
  EXPECT_EQ(plan.arena_size, 128u);
  EXPECT_EQ(plan.at(x).kind, BufferKind::Input);
  EXPECT_EQ(plan.at(y).kind, BufferKind::Output);
  EXPECT_EQ(plan.at(y).index, 0u);
}

TEST(ArenaPlan, ArenaSizeIsTheEndOfTheHighestSliceNotRoundedUp) {
  Graph g;
  Value* x = g.addInput("x", f32({3}));
  Value* a = add(g, "Relu", {x}, f32({3}));    // 12 bytes
  Value* b = add(g, "Add", {a, x}, f32({3}));  // 12 bytes, alive with a
  g.outputs = {add(g, "Add", {a, b}, f32({3}))};
  ArenaPlan plan = planBuffers(g);
  EXPECT_EQ(plan.arena_size, 64u + 12u);
  EXPECT_EQ(plan.at(a).offset % ArenaPlan::kAlignment, 0u);
  EXPECT_EQ(plan.at(b).offset % ArenaPlan::kAlignment, 0u);
}

TEST(ArenaPlan, ConstantsAreAlignedSlicesOfTheBlob) {
  Graph g;
  Value* x = g.addInput("x", f32({2}));
  Value* c1 = g.addConstant("c1", f32({1}), {1, 2, 3, 4});
  Value* c2 = g.addConstant("c2", f32({2}), {5, 6, 7, 8, 9, 10, 11, 12});
  Value* a = add(g, "Add", {x, c1}, f32({2}));
  g.outputs = {add(g, "Mul", {a, c2}, f32({2}))};
  ArenaPlan plan = planBuffers(g);
  ASSERT_EQ(plan.at(c1).kind, BufferKind::Constant);
  EXPECT_EQ(plan.at(c1).offset, 0u);
  EXPECT_EQ(plan.at(c2).offset, 64u);
  EXPECT_EQ(plan.constants_size, 72u);
  EXPECT_EQ(plan.constants[64], 5);
  EXPECT_EQ(plan.constants[71], 12);
}

TEST(ArenaPlan, ReshapeIsAViewThatKeepsItsOwnerAlive) {
  Graph g;
  Value* x = g.addInput("x", f32({2, 8}));
  Value* a = add(g, "Relu", {x}, f32({2, 8}));
  Value* r = add(g, "Reshape", {a}, f32({16}));
  Value* b = add(g, "Relu", {x}, f32({2, 8}));  // must not take a's bytes
  g.outputs = {add(g, "Add", {r, b}, f32({16}))};
  ArenaPlan plan = planBuffers(g);
  ASSERT_EQ(plan.aliased.size(), 1u);
  EXPECT_EQ(plan.at(r).offset, plan.at(a).offset);
  EXPECT_NE(plan.at(b).offset, plan.at(a).offset);
}

TEST(ArenaPlan, ReshapeThatIsAGraphOutputIsNotAView) {
  Graph g;
  Value* x = g.addInput("x", f32({2, 8}));
  Value* a = add(g, "Relu", {x}, f32({2, 8}));
  Value* r = add(g, "Reshape", {a}, f32({16}));
  g.outputs = {r};
  ArenaPlan plan = planBuffers(g);
  EXPECT_TRUE(plan.aliased.empty());
  EXPECT_EQ(plan.at(r).kind, BufferKind::Output);
}

Value* concat(Graph& g, std::vector<Value*> in, int64_t axis, TensorType type) {
  Value* out = add(g, "Concat", std::move(in), std::move(type));
  out->producer->attrs["axis"] = axis;
  return out;
}

// A Concat of arena values along an axis with only 1s before it: its inputs
// are slices of its result, side by side, which lives from its first input's
// producer on (a buffer made in between must not take its bytes).
TEST(ArenaPlan, ConcatInputsAreSlicesOfItsResult) {
  Graph g;
  Value* x = g.addInput("x", f32({1, 4, 8}));
  Value* a = add(g, "Relu", {x}, f32({1, 4, 8}));
  Value* t = add(g, "Neg", {x}, f32({1, 4, 8}));  // alive across a's and b's definitions
  Value* b = add(g, "Exp", {t}, f32({1, 12, 8}));
  Value* c = concat(g, {a, b}, 1, f32({1, 16, 8}));
  g.outputs = {add(g, "Relu", {c}, f32({1, 16, 8}))};
  ArenaPlan plan = planBuffers(g);
  ASSERT_EQ(plan.aliased.size(), 1u);
  EXPECT_EQ(plan.aliased[0], c->producer);
  EXPECT_EQ(plan.at(a).offset, plan.at(c).offset);
  EXPECT_EQ(plan.at(b).offset, plan.at(c).offset + 4 * 8 * 4);
  EXPECT_EQ(plan.at(b).size, 12u * 8 * 4);
  // t is alive from before a to b: it must not share c's bytes.
  const BufferSlice& ts = plan.at(t);
  EXPECT_TRUE(ts.offset + ts.size <= plan.at(c).offset ||
              plan.at(c).offset + plan.at(c).size <= ts.offset);
}

// Where an input is read elsewhere too, is a graph input or output, appears
// twice, would start off a 64-byte boundary, or a dim before the axis is not
// 1, or the result is a graph output: the Concat copies.
TEST(ArenaPlan, ConcatCopiesWhenItsInputsCannotBeSlices) {
  auto planOf = [](int which) {
    Graph g;
    Value* x = g.addInput("x", f32({2, 4, 8}));
    Value* a = add(g, "Relu", {x}, f32({2, 4, 8}));
    Value* b = add(g, "Neg", {x}, f32({2, 4, 8}));
    Value* c = nullptr;
    switch (which) {
      case 0:  // a dim before the axis is 2
        c = concat(g, {a, b}, 1, f32({2, 8, 8}));
        g.outputs = {add(g, "Relu", {c}, f32({2, 8, 8}))};
        break;
      case 1:  // axis 0: fine, as the control
        c = concat(g, {a, b}, 0, f32({4, 4, 8}));
        g.outputs = {add(g, "Relu", {c}, f32({4, 4, 8}))};
        break;
      case 2:  // a is read by another node too
        c = concat(g, {a, b}, 0, f32({4, 4, 8}));
        g.outputs = {add(g, "Add", {c, c}, f32({4, 4, 8})), add(g, "Exp", {a}, f32({2, 4, 8}))};
        break;
      case 3:  // a graph input
        c = concat(g, {x, b}, 0, f32({4, 4, 8}));
        g.outputs = {add(g, "Relu", {c}, f32({4, 4, 8}))};
        break;
      case 4:  // the result is a graph output
        c = concat(g, {a, b}, 0, f32({4, 4, 8}));
        g.outputs = {c};
        break;
      case 5: {  // the second input starts 36 bytes in
        Value* s = add(g, "Relu", {x}, f32({1, 1, 9}));
        Value* t = add(g, "Neg", {x}, f32({1, 1, 16}));
        c = concat(g, {s, t}, 2, f32({1, 1, 25}));
        g.outputs = {add(g, "Relu", {c}, f32({1, 1, 25}))};
        break;
      }
      default: {  // the same value twice
        c = concat(g, {a, a}, 0, f32({4, 4, 8}));
        g.outputs = {add(g, "Relu", {c}, f32({4, 4, 8})), add(g, "Relu", {b}, f32({2, 4, 8}))};
        break;
      }
    }
    return planBuffers(g).aliased.size();
  };
  EXPECT_EQ(planOf(0), 0u);
  EXPECT_EQ(planOf(1), 1u);
  for (int which : {2, 3, 4, 5, 6}) EXPECT_EQ(planOf(which), 0u) << which;
}

// A Concat on the GPU: its result is a device buffer on a 256-byte
// boundary, and a part that starts 64 bytes in keeps only 64 of it (nanort
// refuses a buffer whose offset is not a multiple of its alignment: a
// shufflenet_v2 compiled for sm_90 was, on an H100).
TEST(ArenaPlan, DeviceConcatPartsKeepTheAlignmentOfTheirStart) {
  Graph g;
  Value* x = g.addInput("x", f32({1, 16}));
  auto gpu = [](Value* v) {
    v->producer->attrs[kDeviceAttribute] = std::string(kGpuDevice);
    return v;
  };
  Value* up = gpu(add(g, "nanoc.ToDevice", {x}, f32({1, 16})));
  Value* a = gpu(add(g, "Relu", {up}, f32({1, 16})));  // 64 bytes
  Value* b = gpu(add(g, "Neg", {up}, f32({1, 48})));   // starts 64 bytes in
  Value* c = gpu(concat(g, {a, b}, 1, f32({1, 64})));
  c = gpu(add(g, "Relu", {c}, f32({1, 64})));
  g.outputs = {add(g, "nanoc.ToHost", {c}, f32({1, 64}))};
  ArenaPlan plan = planBuffers(g);
  ASSERT_EQ(plan.aliased.size(), 1u);
  const BufferSlice& whole = plan.at(b->producer->outputs[0]);
  EXPECT_EQ(whole.kind, BufferKind::Device);
  EXPECT_EQ(whole.offset, plan.at(a).offset + 64);
  EXPECT_EQ(plan.at(a).alignment, ArenaPlan::kDeviceAlignment);
  EXPECT_EQ(whole.alignment, 64u);
  for (const auto& [v, slice] : plan.slices)
    if (slice.alignment != 0) EXPECT_EQ(slice.offset % slice.alignment, 0u) << v->name;
}

// 3 to 22 Adds of earlier values, of random sizes (with `like_rhs`, half of
// them the size of their input 1, so that an Add may run in place over it);
// the last is the graph's output.
void randomAdds(Graph& g, std::mt19937& rng, bool like_rhs) {
  std::vector<Value*> values = {g.addInput("x", f32({4}))};
  int nodes = 3 + static_cast<int>(rng() % 20);
  for (int n = 0; n < nodes; ++n) {
    Value* lhs = values[rng() % values.size()];
    Value* rhs = values[rng() % values.size()];
    const int64_t size =
        like_rhs && rng() % 2 ? rhs->type.dims[0] : 1 + static_cast<int64_t>(rng() % 64);
    values.push_back(add(g, "Add", {lhs, rhs}, f32({size})));
  }
  g.outputs = {values.back()};
}

TEST(ArenaPlan, RandomGraphsNeverOverlapLiveBuffers) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 50; ++trial) {
    Graph g;
    randomAdds(g, rng, false);
    ArenaPlan plan = planBuffers(g);
    expectNoLiveOverlap(g, plan);
    uint64_t end = 0;
    for (const auto& [v, s] : plan.slices)
      if (s.kind == BufferKind::Arena) {
        EXPECT_EQ(s.offset % ArenaPlan::kAlignment, 0u);
        end = std::max(end, s.offset + s.size);
      }
    EXPECT_EQ(plan.arena_size, end);
  }
}

// Adds write their output over input 1 where the planner lets them.
const InPlaceInput kAddOverInput1 = [](const Node& node) { return node.op == "Add" ? 1 : -1; };

TEST(ArenaPlan, InPlaceOutputTakesTheSlotOfAnInputThatDiesThere) {
  Graph g;
  Value* x = g.addInput("x", f32({16}));  // 64 bytes each
  Value* a = add(g, "Relu", {x}, f32({16}));
  Value* b = add(g, "Neg", {x}, f32({16}));
  Value* c = add(g, "Add", {b, a}, f32({16}));  // a dies here: c over a
  Value* d = add(g, "Add", {b, c}, f32({16}));  // and d over c, the same slot
  g.outputs = {add(g, "Relu", {d}, f32({16}))};
  ArenaPlan plan = planBuffers(g, GreedyBySizePlanner(), kAddOverInput1);
  EXPECT_EQ(plan.at(c).offset, plan.at(a).offset);
  EXPECT_EQ(plan.at(d).offset, plan.at(a).offset);
  EXPECT_NE(plan.at(b).offset, plan.at(a).offset);
  EXPECT_EQ(plan.arena_size, 128u);
  // Without it, each Add's output is a slot apart from its inputs.
  ArenaPlan apart = planBuffers(g);
  EXPECT_NE(apart.at(c).offset, apart.at(a).offset);
  EXPECT_NE(apart.at(d).offset, apart.at(c).offset);
}

TEST(ArenaPlan, InPlaceOnlyWhereTheInputDiesAndNothingElseSharesIt) {
  for (int which = 0; which < 6; ++which) {
    Graph g;
    Value* x = g.addInput("x", f32({16}));
    Value* a = add(g, "Relu", {x}, f32({16}));
    Value* b = add(g, "Neg", {x}, f32({16}));
    Value* c = nullptr;
    switch (which) {
      case 0:  // a is read after the Add
        c = add(g, "Add", {b, a}, f32({16}));
        g.outputs = {add(g, "Mul", {c, a}, f32({16}))};
        break;
      case 1:  // the other input is a too
        c = add(g, "Add", {a, a}, f32({16}));
        g.outputs = {add(g, "Relu", {c}, f32({16}))};
        break;
      case 2: {  // the other input is a view of a
        Value* v = add(g, "Reshape", {a}, f32({16}));
        c = add(g, "Add", {v, a}, f32({16}));
        g.outputs = {add(g, "Relu", {c}, f32({16}))};
        break;
      }
      case 3:  // another type
        c = add(g, "Add", {b, a}, f32({4, 4}));
        g.outputs = {add(g, "Relu", {c}, f32({4, 4}))};
        break;
      case 4:  // the input is the graph's (the caller's tensor)
        c = add(g, "Add", {b, x}, f32({16}));
        g.outputs = {add(g, "Relu", {c}, f32({16})), add(g, "Relu", {a}, f32({16}))};
        break;
      default:  // the output is the graph's
        c = add(g, "Add", {b, a}, f32({16}));
        g.outputs = {c};
        break;
    }
    ArenaPlan plan = planBuffers(g, GreedyBySizePlanner(), kAddOverInput1);
    if (which != 2) expectNoLiveOverlap(g, plan);  // (a view shares its owner's bytes)
    const BufferSlice& cs = plan.at(c);
    EXPECT_FALSE(cs.kind == BufferKind::Arena &&
                 cs.offset == plan.at(c->producer->inputs[1]).offset &&
                 plan.at(c->producer->inputs[1]).kind == BufferKind::Arena)
        << which;
  }
}

TEST(ArenaPlan, RandomGraphsInPlaceShareOnlyWithADyingInput) {
  std::mt19937 rng(4321);
  int shared = 0;
  for (int trial = 0; trial < 100; ++trial) {
    Graph g;
    randomAdds(g, rng, true);
    ArenaPlan plan = planBuffers(g, GreedyBySizePlanner(), kAddOverInput1);
    // Two values alive together on the same bytes: only an Add's output over
    // its input 1, which no later node reads.
    std::map<const Value*, std::pair<int, int>> life = lifetimes(g);
    for (const auto& [a, la] : life)
      for (const auto& [b, lb] : life) {
        if (a == b) continue;
        const BufferSlice& sa = plan.at(a);
        const BufferSlice& sb = plan.at(b);
        if (sa.kind != BufferKind::Arena || sb.kind != BufferKind::Arena) continue;
        if (!(la.first <= lb.second && lb.first <= la.second)) continue;
        if (!(sa.offset < sb.offset + sb.size && sb.offset < sa.offset + sa.size)) continue;
        if (a >= b) continue;
        const Value* in = la.first < lb.first ? a : b;
        const Value* out = in == a ? b : a;
        const Node* node = out->producer;
        EXPECT_TRUE(node->inputs[1] == in && node->inputs[0] != in &&
                    life[in].second == life[out].first && sa.offset == sb.offset &&
                    in->type == out->type)
            << in->name << " and " << out->name << " overlap";
        ++shared;
      }
  }
  EXPECT_GT(shared, 0);  // the trials do reach the in-place case
}

TEST(ArenaPlan, GraphOutputWithoutItsOwnProducerIsRejected) {
  Graph g;
  Value* x = g.addInput("x", f32({4}));
  g.outputs = {x};
  EXPECT_THROW(planBuffers(g), CompileError);
}

}  // namespace
}  // namespace nanoc
