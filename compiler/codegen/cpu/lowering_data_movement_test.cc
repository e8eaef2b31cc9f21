// The data movement lowerings against their ops' references, JIT-compiled for
// this machine, over several dtypes and shapes large enough to split into
// several tasks. Index operands are filled with random bytes, so most
// indices are out of range: the kernels must follow the references' clamping
// policy and never read or write outside their buffers.
#include <gtest/gtest.h>

#include "compiler/codegen/cpu/kernel_test_util.h"

namespace nanoc::cpu {
namespace {

using testing::AlignedBuffer;
using testing::expectLoweringMatchesReference;
using Dims = std::vector<int64_t>;
using Attrs = std::map<std::string, Attr>;

const DType kAllDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::I8,  DType::U8,
                            DType::I32, DType::I64, DType::Bool, DType::F64, DType::I16,
                            DType::U16, DType::U32, DType::U64};

TensorType t(DType dtype, Dims dims) { return {dtype, std::move(dims)}; }

Attrs sliceAttrs(Dims starts, Dims ends, Dims steps) {
  return {{"starts", starts}, {"ends", ends}, {"steps", steps}};
}

TEST(SliceLowering, EveryDtypeWithStepsBothWays) {
  for (DType d : kAllDTypes) {
    expectLoweringMatchesReference("Slice", {t(d, {5, 6, 7})},
                                   sliceAttrs({1, 5, 0}, {5, -1, 7}, {2, -2, 1}), 1);
    expectLoweringMatchesReference("Slice", {t(d, {5, 6, 7})},
                                   sliceAttrs({0, 1, 6}, {5, 6, 0}, {1, 1, -3}), 2);
  }
}

TEST(SliceLowering, LargeContiguousAndEmptySlices) {
  expectLoweringMatchesReference("Slice", {t(DType::F32, {4, 300, 200})},
                                 sliceAttrs({1, 10, 0}, {4, 290, 200}, {1, 1, 1}), 3);
  expectLoweringMatchesReference("Slice", {t(DType::I16, {3, 70000})},
                                 sliceAttrs({0, 3}, {3, 70000}, {1, 3}), 4);
  expectLoweringMatchesReference("Slice", {t(DType::F32, {4, 5})},
                                 sliceAttrs({3, 0}, {1, 5}, {1, 1}), 5);
}

TEST(TransposeLowering, EveryDtypeAndContiguousRuns) {
  for (DType d : kAllDTypes) {
    expectLoweringMatchesReference("Transpose", {t(d, {2, 3, 4, 5})}, {{"perm", Dims{0, 2, 3, 1}}},
                                   6);
    expectLoweringMatchesReference("Transpose", {t(d, {6, 5, 70})}, {{"perm", Dims{1, 0, 2}}}, 7);
  }
  expectLoweringMatchesReference("Transpose", {t(DType::F16, {3, 64, 65, 7})},
                                 {{"perm", Dims{3, 1, 0, 2}}}, 8);
}

TEST(ConcatLowering, EveryDtype) {
  for (DType d : kAllDTypes)
    expectLoweringMatchesReference("Concat", {t(d, {2, 3, 4}), t(d, {2, 1, 4}), t(d, {2, 5, 4})},
                                   {{"axis", int64_t{1}}}, 9);
}

TEST(ExpandLowering, BroadcastDimsAnywhere) {
  for (DType d : {DType::F32, DType::U8, DType::I64, DType::Bool}) {
    expectLoweringMatchesReference("Expand", {t(d, {3, 1})}, {{"shape", Dims{2, 3, 4}}}, 10);
    expectLoweringMatchesReference("Expand", {t(d, {1, 300, 1})}, {{"shape", Dims{40, 300, 70}}},
                                   11);
    expectLoweringMatchesReference("Expand", {t(d, {5})}, {{"shape", Dims{3, 5}}}, 12);
  }
}

TEST(PadLowering, EveryModeWithCropsAndValues) {
  for (const char* mode : {"constant", "edge", "reflect", "wrap"})
    for (DType d : {DType::F32, DType::F16, DType::I8, DType::I64}) {
      Attrs attrs = {{"pads", Dims{1, -1, 3, 2, 2, 5}}, {"mode", std::string(mode)}};
      expectLoweringMatchesReference("Pad", {t(d, {4, 5, 6})}, attrs, 13);
      if (std::string(mode) == "constant")
        expectLoweringMatchesReference("Pad", {t(d, {4, 5, 6}), t(d, {})}, attrs, 14);
    }
  expectLoweringMatchesReference("Pad", {t(DType::F32, {3, 4})},
                                 {{"pads", Dims{7, 9, 8, 10}}, {"mode", std::string("reflect")}},
                                 15);
  expectLoweringMatchesReference("Pad", {t(DType::U32, {})},
                                 {{"pads", Dims{}}, {"mode", std::string("edge")}}, 17);
  expectLoweringMatchesReference("Pad", {t(DType::U32, {7})},
                                 {{"pads", Dims{9, 20}}, {"mode", std::string("wrap")}}, 18);
  expectLoweringMatchesReference(
      "Pad", {t(DType::F32, {2, 3, 40000})},
      {{"pads", Dims{1, 0, 3, 0, 2, 5}}, {"mode", std::string("constant")}}, 19);
  expectLoweringMatchesReference("Pad", {t(DType::F32, {0, 4})},
                                 {{"pads", Dims{1, 0, 1, 0}}, {"mode", std::string("constant")}},
                                 16);
}

TEST(GatherLowering, EveryAxisAndIndexDtype) {
  for (DType index : {DType::I32, DType::I64})
    for (int64_t axis = 0; axis < 3; ++axis) {
      expectLoweringMatchesReference("Gather", {t(DType::F32, {4, 5, 6}), t(index, {2, 3})},
                                     {{"axis", axis}}, 17);
      expectLoweringMatchesReference("Gather", {t(DType::U16, {4, 5, 6}), t(index, {})},
                                     {{"axis", axis}}, 18);
    }
  expectLoweringMatchesReference("Gather", {t(DType::F32, {50, 40000}), t(DType::I64, {3})},
                                 {{"axis", int64_t{0}}}, 19);
}

TEST(GatherElementsLowering, ClampsRandomIndices) {
  for (int64_t axis = 0; axis < 3; ++axis)
    expectLoweringMatchesReference("GatherElements",
                                   {t(DType::BF16, {4, 5, 6}), t(DType::I64, {4, 3, 6})},
                                   {{"axis", axis}}, 20);
}

TEST(GatherNDLowering, BatchDims) {
  expectLoweringMatchesReference("GatherND", {t(DType::F32, {2, 3, 4, 5}), t(DType::I64, {3, 2})},
                                 {{"batch_dims", int64_t{0}}}, 21);
  expectLoweringMatchesReference("GatherND",
                                 {t(DType::I8, {2, 3, 4, 5}), t(DType::I32, {2, 3, 2, 1})},
                                 {{"batch_dims", int64_t{2}}}, 22);
}

TEST(ScatterLowering, EveryReduction) {
  for (const char* r : {"none", "add", "mul", "max", "min"})
    for (DType d : {DType::F32, DType::I32, DType::U8, DType::I64}) {
      expectLoweringMatchesReference("ScatterND",
                                     {t(d, {4, 5, 3}), t(DType::I64, {6, 1}), t(d, {6, 5, 3})},
                                     {{"reduction", std::string(r)}}, 23);
      expectLoweringMatchesReference("ScatterElements",
                                     {t(d, {4, 5}), t(DType::I32, {3, 5}), t(d, {3, 5})},
                                     {{"axis", int64_t{0}}, {"reduction", std::string(r)}}, 24);
    }
}

TEST(TriluLowering, UpperAndLower) {
  for (int64_t upper : {0, 1})
    for (int64_t k : {int64_t{-2}, int64_t{0}, int64_t{3}, INT64_MAX})
      expectLoweringMatchesReference("Trilu", {t(DType::F64, {2, 4, 5})},
                                     {{"upper", upper}, {"k", k}}, 25);
}

TEST(OneHotLowering, AxesAndIndexDtypes) {
  for (int64_t axis = 0; axis < 3; ++axis) {
    expectLoweringMatchesReference("OneHot", {t(DType::F32, {3, 4}), t(DType::F32, {2})},
                                   {{"axis", axis}, {"depth", int64_t{5}}}, 26, -7.0f, 7.0f);
    expectLoweringMatchesReference("OneHot", {t(DType::I8, {3, 4}), t(DType::I64, {2})},
                                   {{"axis", axis}, {"depth", int64_t{200}}}, 27);
  }
}

TEST(ReverseSequenceLowering, BothAxisOrders) {
  expectLoweringMatchesReference("ReverseSequence", {t(DType::F32, {4, 3, 2}), t(DType::I64, {3})},
                                 {{"batch_axis", int64_t{1}}, {"time_axis", int64_t{0}}}, 28);
  expectLoweringMatchesReference("ReverseSequence", {t(DType::U8, {3, 4}), t(DType::I64, {3})},
                                 {{"batch_axis", int64_t{0}}, {"time_axis", int64_t{1}}}, 29);
}

TEST(ReverseSequenceLowering, HandPickedLengths) {
  auto g =
      testing::makeSingleNodeGraph("ReverseSequence", {t(DType::F32, {2, 4}), t(DType::I64, {2})},
                                   {{"batch_axis", int64_t{0}}, {"time_axis", int64_t{1}}});
  std::vector<AlignedBuffer> in;
  in.emplace_back(8 * sizeof(float));
  in.emplace_back(2 * sizeof(int64_t));
  for (int i = 0; i < 8; ++i) reinterpret_cast<float*>(in[0].data())[i] = static_cast<float>(i);
  reinterpret_cast<int64_t*>(in[1].data())[0] = -5;
  reinterpret_cast<int64_t*>(in[1].data())[1] = 3;
  testing::expectLoweringMatchesReference(*g->node, in, "ReverseSequence hand-picked");
}

}  // namespace
}  // namespace nanoc::cpu
