// Shape rules and references of the data movement ops on hand-computed cases,
// and the errors their shape rules give.
#include "compiler/ops/data_movement.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <optional>

#include "compiler/ir/error.h"
#include "compiler/ir/op_registry.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc {
namespace {

using Dims = std::vector<int64_t>;
using Attrs = std::map<std::string, Attr>;

// A typed operand with its data as raw bytes.
struct Operand {
  TensorType type;
  std::vector<uint8_t> bytes;
};

template <typename T>
Operand operand(DType dtype, Dims dims, std::vector<T> values) {
  Operand o{{dtype, std::move(dims)}, std::vector<uint8_t>(values.size() * sizeof(T))};
  if (!values.empty()) std::memcpy(o.bytes.data(), values.data(), o.bytes.size());
  return o;
}
Operand f32(Dims dims, std::vector<float> v) { return operand(DType::F32, std::move(dims), v); }
Operand i64(Dims dims, std::vector<int64_t> v) { return operand(DType::I64, std::move(dims), v); }
Operand i32(Dims dims, std::vector<int32_t> v) { return operand(DType::I32, std::move(dims), v); }
Operand u8(Dims dims, std::vector<uint8_t> v) { return operand(DType::U8, std::move(dims), v); }

std::vector<float> iota(int64_t n, float start = 0.0f) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

// One node over graph inputs (nullopt: an absent optional input).
struct OneNode {
  Graph graph;
  Node* node = nullptr;
  OneNode(const std::string& op, const std::vector<std::optional<TensorType>>& inputs, Attrs attrs,
          const std::string& name = "n") {
    std::vector<Value*> in;
    for (size_t i = 0; i < inputs.size(); ++i)
      in.push_back(inputs[i] ? graph.addInput("x" + std::to_string(i), *inputs[i]) : nullptr);
    node = graph.addNode(op, name, in, static_cast<size_t>(findOp(op)->num_outputs));
    node->attrs = std::move(attrs);
  }
};

TensorType inferOne(const std::string& op, const std::vector<std::optional<TensorType>>& inputs,
                    Attrs attrs) {
  OneNode one(op, inputs, std::move(attrs));
  inferNode(*one.node);
  return one.node->outputs[0]->type;
}

void expectInferError(const std::string& op, const std::vector<std::optional<TensorType>>& inputs,
                      Attrs attrs, const std::string& what) {
  OneNode one(op, inputs, std::move(attrs), "bad_node");
  try {
    inferNode(*one.node);
    FAIL() << op << ": expected a CompileError containing '" << what << "'";
  } catch (const CompileError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("node 'bad_node' (" + op + ")"), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
}

// Runs the reference; returns the output's type and bytes.
Operand run(const std::string& op, const std::vector<std::optional<Operand>>& inputs, Attrs attrs) {
  std::vector<std::optional<TensorType>> types;
  for (const auto& in : inputs) types.push_back(in ? std::optional(in->type) : std::nullopt);
  OneNode one(op, types, std::move(attrs));
  inferNode(*one.node);
  Operand out{one.node->outputs[0]->type, {}};
  out.bytes.assign(out.type.bytes(), 0xee);
  std::vector<const void*> in;
  for (const auto& o : inputs) in.push_back(o ? o->bytes.data() : nullptr);
  findOp(op)->reference(*one.node, in, {out.bytes.data()});
  return out;
}

template <typename T>
std::vector<T> values(const Operand& o) {
  std::vector<T> v(o.bytes.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), o.bytes.data(), o.bytes.size());
  return v;
}

Attrs sliceAttrs(Dims starts, Dims ends, Dims steps) {
  return {{"starts", starts}, {"ends", ends}, {"steps", steps}};
}

// ---- Slice ----

TEST(Slice, ShapeCountsStepsBothWays) {
  TensorType x{DType::F32, {10, 4}};
  EXPECT_EQ(inferOne("Slice", {x}, sliceAttrs({1, 0}, {10, 4}, {3, 1})).dims, (Dims{3, 4}));
  EXPECT_EQ(inferOne("Slice", {x}, sliceAttrs({9, 3}, {-1, 0}, {-4, -1})).dims, (Dims{3, 3}));
  EXPECT_EQ(inferOne("Slice", {x}, sliceAttrs({5, 0}, {2, 4}, {1, 1})).dims, (Dims{0, 4}));
}

TEST(Slice, RejectsUnclampedBoundsAndZeroSteps) {
  TensorType x{DType::F32, {10, 4}};
  expectInferError("Slice", {x}, sliceAttrs({0, 0}, {11, 4}, {1, 1}), "not clamped");
  expectInferError("Slice", {x}, sliceAttrs({10, 0}, {0, 4}, {-1, 1}), "not clamped");
  expectInferError("Slice", {x}, sliceAttrs({0, 0}, {10, 4}, {0, 1}), "not clamped");
  expectInferError("Slice", {x}, sliceAttrs({0}, {10}, {1}), "must have 2 entries");
}

TEST(Slice, ReferenceStepsAndReverses) {
  Operand x = f32({3, 4}, iota(12));
  EXPECT_EQ(values<float>(run("Slice", {x}, sliceAttrs({0, 3}, {3, -1}, {2, -2}))),
            (std::vector<float>{3, 1, 11, 9}));
}

TEST(Slice, ReferenceMovesAnyDtype) {
  Operand x = u8({5}, {1, 2, 3, 4, 5});
  Operand y = run("Slice", {x}, sliceAttrs({4}, {-1}, {-1}));
  EXPECT_EQ(y.type.dtype, DType::U8);
  EXPECT_EQ(values<uint8_t>(y), (std::vector<uint8_t>{5, 4, 3, 2, 1}));
}

// ---- Expand ----

TEST(Expand, BroadcastsOnesAndAddsLeadingDims) {
  EXPECT_EQ(inferOne("Expand", {TensorType{DType::I64, {3, 1}}}, {{"shape", Dims{2, 3, 4}}}),
            (TensorType{DType::I64, {2, 3, 4}}));
  expectInferError("Expand", {TensorType{DType::F32, {3, 2}}}, {{"shape", Dims{3, 4}}},
                   "cannot broadcast");
  expectInferError("Expand", {TensorType{DType::F32, {3}}}, {{"shape", Dims{}}},
                   "cannot broadcast");
  Operand x = i64({2, 1}, {7, 9});
  EXPECT_EQ(values<int64_t>(run("Expand", {x}, {{"shape", Dims{2, 3}}})),
            (std::vector<int64_t>{7, 7, 7, 9, 9, 9}));
}

// ---- Pad ----

Attrs padAttrs(Dims pads, const std::string& mode) { return {{"pads", pads}, {"mode", mode}}; }

TEST(Pad, ShapeAddsBothSidesAndCrops) {
  TensorType x{DType::F32, {3, 4}};
  EXPECT_EQ(inferOne("Pad", {x}, padAttrs({1, -1, 2, 0}, "constant")).dims, (Dims{6, 3}));
  expectInferError("Pad", {x}, padAttrs({1, 2}, "constant"), "must have 4 entries");
  expectInferError("Pad", {x}, padAttrs({0, 0, 0, 0}, "mirror"), "not constant, edge");
  expectInferError("Pad", {x}, padAttrs({-4, 0, 0, 0}, "constant"), "out of range");
  expectInferError("Pad", {x}, padAttrs({-3, 0, 1, 0}, "edge"), "leave nothing");
  expectInferError("Pad", {x, TensorType{DType::I64, {}}}, padAttrs({0, 0, 0, 0}, "constant"),
                   "value must be one element");
}

TEST(Pad, ReferenceModes) {
  Operand x = f32({4}, {1, 2, 3, 4});
  Dims pads = {3, 2};
  EXPECT_EQ(values<float>(run("Pad", {x}, padAttrs(pads, "constant"))),
            (std::vector<float>{0, 0, 0, 1, 2, 3, 4, 0, 0}));
  EXPECT_EQ(values<float>(run("Pad", {x, f32({}, {9})}, padAttrs(pads, "constant"))),
            (std::vector<float>{9, 9, 9, 1, 2, 3, 4, 9, 9}));
  EXPECT_EQ(values<float>(run("Pad", {x}, padAttrs(pads, "edge"))),
            (std::vector<float>{1, 1, 1, 1, 2, 3, 4, 4, 4}));
  EXPECT_EQ(values<float>(run("Pad", {x}, padAttrs(pads, "reflect"))),
            (std::vector<float>{4, 3, 2, 1, 2, 3, 4, 3, 2}));
  EXPECT_EQ(values<float>(run("Pad", {x}, padAttrs(pads, "wrap"))),
            (std::vector<float>{2, 3, 4, 1, 2, 3, 4, 1, 2}));
}

TEST(Pad, NegativePadsCropBeforeWrapping) {
  // Crop one from the front, leaving [2, 3, 4], then wrap two at the end.
  Operand x = f32({4}, {1, 2, 3, 4});
  EXPECT_EQ(values<float>(run("Pad", {x}, padAttrs({-1, 2}, "wrap"))),
            (std::vector<float>{2, 3, 4, 2, 3}));
}

// ---- Gather family ----

TEST(Gather, ShapeInsertsIndexDims) {
  TensorType data{DType::F16, {4, 5, 6}};
  EXPECT_EQ(inferOne("Gather", {data, TensorType{DType::I32, {2, 3}}}, {{"axis", int64_t{1}}}),
            (TensorType{DType::F16, {4, 2, 3, 6}}));
  EXPECT_EQ(inferOne("Gather", {data, TensorType{DType::I64, {}}}, {{"axis", int64_t{0}}}).dims,
            (Dims{5, 6}));
  expectInferError("Gather", {data, TensorType{DType::F32, {2}}}, {{"axis", int64_t{0}}},
                   "must be i32 or i64");
  expectInferError("Gather", {data, TensorType{DType::I64, {2}}}, {{"axis", int64_t{3}}},
                   "attribute 'axis'");
  expectInferError("Gather", {TensorType{DType::F32, {0, 2}}, TensorType{DType::I64, {1}}},
                   {{"axis", int64_t{0}}}, "empty axis");
}

TEST(Gather, ReferenceWrapsNegativeAndClampsOutOfRangeIndices) {
  Operand data = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  Operand idx = i64({4}, {-1, 0, 7, -9});  // last row, first, clamped to 2, clamped to 0
  EXPECT_EQ(values<float>(run("Gather", {data, idx}, {{"axis", int64_t{0}}})),
            (std::vector<float>{5, 6, 1, 2, 5, 6, 1, 2}));
  Operand idx32 = i32({2}, {1, -2});
  EXPECT_EQ(values<float>(run("Gather", {data, idx32}, {{"axis", int64_t{1}}})),
            (std::vector<float>{2, 1, 4, 3, 6, 5}));
}

TEST(GatherElements, ReferencePicksAlongTheAxis) {
  Operand data = f32({2, 2}, {1, 2, 3, 4});
  Operand idx = i64({2, 2}, {0, 0, 1, 0});
  EXPECT_EQ(values<float>(run("GatherElements", {data, idx}, {{"axis", int64_t{1}}})),
            (std::vector<float>{1, 1, 4, 3}));
  expectInferError("GatherElements", {data.type, TensorType{DType::I64, {3, 2}}},
                   {{"axis", int64_t{1}}}, "do not fit");
}

TEST(GatherND, ShapeAndReferenceWithBatchDims) {
  Operand data = f32({2, 2, 2}, iota(8));
  EXPECT_EQ(inferOne("GatherND", {data.type, TensorType{DType::I64, {3, 2}}},
                     {{"batch_dims", int64_t{0}}})
                .dims,
            (Dims{3, 2}));
  Operand idx = i64({2, 1}, {1, 0});
  EXPECT_EQ(values<float>(run("GatherND", {data, idx}, {{"batch_dims", int64_t{1}}})),
            (std::vector<float>{2, 3, 4, 5}));
  expectInferError("GatherND", {data.type, TensorType{DType::I64, {2, 4}}},
                   {{"batch_dims", int64_t{0}}}, "last dim of indices");
  expectInferError("GatherND", {data.type, TensorType{DType::I64, {3, 1}}},
                   {{"batch_dims", int64_t{1}}}, "batch dim 0");
}

// ---- Scatter family ----

TEST(ScatterND, ReferenceCombinesRepeatedIndicesInOrder) {
  Operand data = f32({4}, {1, 2, 3, 4});
  Operand idx = i64({3, 1}, {1, 3, 1});
  Operand upd = f32({3}, {10, 20, 30});
  auto scatter = [&](const char* r) {
    return values<float>(run("ScatterND", {data, idx, upd}, {{"reduction", std::string(r)}}));
  };
  EXPECT_EQ(scatter("none"), (std::vector<float>{1, 30, 3, 20}));
  EXPECT_EQ(scatter("add"), (std::vector<float>{1, 42, 3, 24}));
  EXPECT_EQ(scatter("mul"), (std::vector<float>{1, 600, 3, 80}));
  EXPECT_EQ(scatter("max"), (std::vector<float>{1, 30, 3, 20}));
  EXPECT_EQ(scatter("min"), (std::vector<float>{1, 2, 3, 4}));
  expectInferError("ScatterND", {data.type, idx.type, TensorType{DType::F32, {2}}},
                   {{"reduction", std::string("none")}}, "updates");
  expectInferError("ScatterND", {data.type, idx.type, upd.type},
                   {{"reduction", std::string("sum")}}, "attribute 'reduction'");
}

TEST(ScatterElements, ReferenceWritesAlongTheAxis) {
  Operand data = i64({2, 3}, {0, 0, 0, 0, 0, 0});
  Operand idx = i64({2, 1}, {2, -3});
  Operand upd = i64({2, 1}, {5, 7});
  EXPECT_EQ(values<int64_t>(run("ScatterElements", {data, idx, upd},
                                {{"axis", int64_t{1}}, {"reduction", std::string("add")}})),
            (std::vector<int64_t>{0, 0, 5, 7, 0, 0}));
}

// ---- Trilu, OneHot, ReverseSequence ----

TEST(Trilu, KeepsUpperOrLowerTriangleFromDiagonalK) {
  Operand x = f32({3, 3}, iota(9, 1));
  auto trilu = [&](int64_t upper, int64_t k) {
    return values<float>(run("Trilu", {x}, {{"upper", upper}, {"k", k}}));
  };
  EXPECT_EQ(trilu(1, 0), (std::vector<float>{1, 2, 3, 0, 5, 6, 0, 0, 9}));
  EXPECT_EQ(trilu(0, -1), (std::vector<float>{0, 0, 0, 4, 0, 0, 7, 8, 0}));
  EXPECT_EQ(trilu(1, INT64_MIN), iota(9, 1));
  expectInferError("Trilu", {TensorType{DType::F32, {3}}},
                   {{"upper", int64_t{1}}, {"k", int64_t{0}}}, "rank >= 2");
}

TEST(OneHot, NegativeIndicesCountFromDepthAndOutOfRangeIsAllOff) {
  Operand idx = i64({3}, {1, -1, 5});
  Operand vals = f32({2}, {0, 9});
  Operand y = run("OneHot", {idx, vals}, {{"axis", int64_t{1}}, {"depth", int64_t{3}}});
  EXPECT_EQ(y.type.dims, (Dims{3, 3}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{0, 9, 0, 0, 0, 9, 0, 0, 0}));
  Operand y0 = run("OneHot", {idx, vals}, {{"axis", int64_t{0}}, {"depth", int64_t{3}}});
  EXPECT_EQ(values<float>(y0), (std::vector<float>{0, 0, 0, 9, 0, 0, 0, 9, 0}));
}

TEST(ReverseSequence, ReversesEachBatchEntrysPrefixAndClampsLengths) {
  Operand x = f32({2, 4}, iota(8));  // batch_axis 0, time_axis 1
  Operand lens = i64({2}, {3, 99});
  EXPECT_EQ(values<float>(run("ReverseSequence", {x, lens},
                              {{"batch_axis", int64_t{0}}, {"time_axis", int64_t{1}}})),
            (std::vector<float>{2, 1, 0, 3, 7, 6, 5, 4}));
  expectInferError("ReverseSequence", {x.type, TensorType{DType::I64, {3}}},
                   {{"batch_axis", int64_t{0}}, {"time_axis", int64_t{1}}}, "sequence_lens");
}

// ---- helpers ----

TEST(DataMovementHelpers, ClampIndexPolicy) {
  EXPECT_EQ(clampIndex(-1, 5), 4);
  EXPECT_EQ(clampIndex(-5, 5), 0);
  EXPECT_EQ(clampIndex(-6, 5), 0);
  EXPECT_EQ(clampIndex(5, 5), 4);
  EXPECT_EQ(clampIndex(INT64_MIN, 5), 0);
}

TEST(DataMovementHelpers, HalfConversionsRoundToNearestEven) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);            // rounds to infinity
  EXPECT_EQ(floatToHalf(1.0f + 1.0f / 2048), 0x3c00);  // tie, to even
  EXPECT_EQ(halfToFloat(0x0001), 1.0f / 16777216.0f);
  EXPECT_EQ(floatToHalf(1.0f / 16777216.0f), 0x0001);
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16ToFloat(0xc000), -2.0f);
}

}  // namespace
}  // namespace nanoc
