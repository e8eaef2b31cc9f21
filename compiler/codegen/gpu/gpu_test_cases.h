// The GPU kernel cases (tests and tools only): a small node of each op kind
// each GPU lowering handles, shared by the ptxas tests (gpu_kernels_test.cc)
// and the on-GPU numerics bundle (tools/gpu_bundle_main.cc).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/kernel_test_util.h"
#include "compiler/ir/error.h"
#include "compiler/ops/elementwise_table.h"

namespace nanoc::gpu::testing {

using cpu::testing::makeSingleNodeGraphWithAbsent;
using cpu::testing::resizeAttrs;
using cpu::testing::SingleNodeGraph;
using Attrs = std::map<std::string, Attr>;
using Ints = std::vector<int64_t>;

inline TensorType f32(std::vector<int64_t> dims) { return TensorType{DType::F32, std::move(dims)}; }

struct KernelCase {
  std::string label;
  std::unique_ptr<SingleNodeGraph> graph;
  // The inputs' random range for numerics (Pow's base: [0.5, 3]).
  float lo = -3.0f, hi = 3.0f;
};

inline void addCase(std::vector<KernelCase>& cases, const std::string& label, const std::string& op,
                    const std::vector<std::optional<TensorType>>& inputs, const Attrs& attrs) {
  cases.push_back({label, makeSingleNodeGraphWithAbsent(op, inputs, attrs)});
  if (op == "Pow") cases.back().lo = 0.5f;
}

// Every row of the elementwise table on every dtype it accepts (as the CPU
// lowering's test: a matrix, a row and a scalar, three broadcast patterns),
// and fused chains.
inline std::vector<KernelCase> elementwiseCases() {
  const std::vector<DType>& dtypes = cpu::testing::elementwiseTestDtypes();
  const auto& attrs = cpu::testing::elementwiseTestAttrs();
  std::vector<KernelCase> cases;
  for (const ElementwiseOp& op : elementwiseOps()) {
    for (DType dtype : dtypes) {
      std::vector<std::optional<TensorType>> inputs;
      for (int i = 0; i < op.min_inputs; ++i) {
        std::vector<int64_t> dims = i == 0   ? std::vector<int64_t>{4, 19}
                                    : i == 1 ? std::vector<int64_t>{19}
                                             : std::vector<int64_t>{};
        DType d = (i == 0 && op.mixed_operand0) ? DType::Bool : dtype;
        inputs.push_back(TensorType{d, dims});
      }
      Attrs a;
      if (auto it = attrs.find(std::string(op.name)); it != attrs.end()) a = it->second;
      if (op.name == "Cast") {
        a["to"] = int64_t{static_cast<int64_t>(DType::I32)};
        a["saturate"] = int64_t{1};
      }
      std::string label = std::string(op.name) + "/" + std::string(dtypeName(dtype));
      try {
        addCase(cases, label, std::string(op.name), inputs, a);
      } catch (const CompileError&) {
        continue;  // a dtype this row does not accept
      }
    }
  }
  // Broadcasting over rank 4, and large shapes (i32 and i64 indexing).
  addCase(cases, "Add/rank4", "Add", {f32({2, 1, 4, 1}), f32({1, 3, 1, 5})}, {});
  addCase(cases, "Mul/2^31 elements", "Mul", {f32({int64_t{1} << 31}), f32({})}, {});
  addCase(cases, "Sub/2^31 broadcast", "Sub",
          {f32({int64_t{1} << 16, 1, 1}), f32({1 << 8, 1 << 7})}, {});
  // Empty outputs, three-way broadcasting, a scalar result.
  addCase(cases, "Add/empty", "Add", {f32({0, 5}), f32({5})}, {});
  addCase(cases, "Where/three shapes", "Where",
          {TensorType{DType::Bool, {3, 1, 5}}, f32({4, 1}), f32({1, 4, 5})}, {});
  addCase(cases, "Mul/scalars", "Mul", {f32({}), f32({})}, {});
  // Fused chains: GELU's Div, Erf, Add, Mul, Mul and a broadcast one.
  addCase(cases, "Elementwise/gelu", "nanoc.Elementwise", {f32({3, 37}), f32({}), f32({})},
          {{"ops", std::string("Div,Erf,Add,Mul,Mul")},
           {"arity", Ints{2, 1, 2, 2, 2}},
           {"operands", Ints{0, 1, -1, -2, 2, 0, -3, -4, 2}}});
  addCase(cases, "Elementwise/broadcast", "nanoc.Elementwise", {f32({4, 1, 9}), f32({5, 1})},
          {{"ops", std::string("Add,Tanh")}, {"arity", Ints{2, 1}}, {"operands", Ints{0, 1, -1}}});
  return cases;
}

inline std::vector<KernelCase> linalgCases() {
  std::vector<KernelCase> cases;
  addCase(cases, "MatMul/2d", "MatMul", {f32({5, 7}), f32({7, 13})}, {});
  addCase(cases, "MatMul/big", "MatMul", {f32({300, 200}), f32({200, 129})}, {});
  addCase(cases, "MatMul/batched", "MatMul", {f32({3, 5, 20}), f32({3, 20, 19})}, {});
  addCase(cases, "MatMul/broadcast batch", "MatMul", {f32({2, 1, 5, 20}), f32({4, 20, 19})}, {});
  addCase(cases, "MatMul/B 2-D", "MatMul", {f32({2, 7, 20}), f32({20, 19})}, {});
  addCase(cases, "MatMul/1-D A", "MatMul", {f32({20}), f32({3, 20, 19})}, {});
  addCase(cases, "MatMul/1-D B", "MatMul", {f32({3, 5, 20}), f32({20})}, {});
  addCase(cases, "MatMul/bias relu", "MatMul", {f32({2, 7, 20}), f32({20, 19}), f32({19})},
          {{"fused_activation", std::string("Relu")}});
  addCase(cases, "MatMul/residual", "MatMul",
          {f32({3, 5, 20}), f32({3, 20, 19}), std::nullopt, f32({3, 5, 19})},
          {{"fused_activation", std::string("Tanh")}});
  for (int64_t ta : {0, 1})
    for (int64_t tb : {0, 1}) {
      std::vector<int64_t> a = ta ? std::vector<int64_t>{70, 33} : std::vector<int64_t>{33, 70};
      std::vector<int64_t> b = tb ? std::vector<int64_t>{65, 70} : std::vector<int64_t>{70, 65};
      addCase(cases, "Gemm/trans " + std::to_string(ta) + std::to_string(tb), "Gemm",
              {f32(a), f32(b), f32({65})},
              {{"alpha", 0.5}, {"beta", 2.0}, {"transA", ta}, {"transB", tb}});
    }
  // Each SIMT tile (pinned by gpu_tile: 128 x 128, 64 x 64; the product's
  // own choice, 32 x 32): every transposition, partial tiles on every side.
  for (int64_t tile : {128, 64, 0})
    for (int64_t ta : {0, 1})
      for (int64_t tb : {0, 1}) {
        std::vector<int64_t> a = ta ? std::vector<int64_t>{37, 130} : std::vector<int64_t>{130, 37};
        std::vector<int64_t> b = tb ? std::vector<int64_t>{257, 37} : std::vector<int64_t>{37, 257};
        Attrs attrs = {{"alpha", 1.5}, {"beta", -1.0}, {"transA", ta}, {"transB", tb}};
        std::string label = "Gemm/large trans " + std::to_string(ta) + std::to_string(tb);
        if (tile) attrs["gpu_tile"] = tile, label += " tile " + std::to_string(tile);
        addCase(cases, label, "Gemm", {f32(a), f32(b), f32({130, 1})}, attrs);
      }
  addCase(cases, "MatMul/large batched", "MatMul", {f32({2, 129, 33}), f32({2, 33, 140})}, {});
  for (int64_t tile : {64, 0}) {
    Attrs attrs = {{"fused_activation", std::string("LeakyRelu")}, {"fused_alpha", 0.1}};
    if (tile) attrs["gpu_tile"] = tile;
    addCase(cases, std::string("MatMul/large residual") + (tile ? " tile 64" : ""), "MatMul",
            {f32({256, 64}), f32({64, 128}), f32({128}), f32({256, 128})}, attrs);
  }
  for (const char* act : {"Clip", "Sigmoid", "HardSigmoid", "HardSwish", "SiLU"}) {
    Attrs a = {{"fused_activation", std::string(act)}};
    if (std::string(act) == "Clip") a["fused_alpha"] = -0.5, a["fused_beta"] = 0.5;
    if (std::string(act) == "HardSigmoid") a["fused_alpha"] = 0.2, a["fused_beta"] = 0.5;
    addCase(cases, std::string("MatMul/") + act, "MatMul", {f32({9, 20}), f32({20, 7})}, a);
  }
  // Conv as an implicit GEMM: 1, 2 and 3 spatial dims, pads, strides,
  // dilations, groups (depthwise too), bias, the epilogue.
  auto conv = [](int64_t group, Ints kernel, Ints pads, Ints strides, Ints dilations) {
    return Attrs{{"group", group},
                 {"kernel_shape", std::move(kernel)},
                 {"pads", std::move(pads)},
                 {"strides", std::move(strides)},
                 {"dilations", std::move(dilations)}};
  };
  addCase(cases, "Conv/1-D", "Conv", {f32({2, 3, 17}), f32({4, 3, 3}), f32({4})},
          conv(1, {3}, {1, 2}, {2}, {1}));
  addCase(cases, "Conv/1-D groups dilated", "Conv", {f32({1, 4, 15}), f32({6, 2, 4})},
          conv(2, {4}, {0, 0}, {1}, {2}));
  addCase(cases, "Conv/3x3 p1", "Conv", {f32({2, 8, 14, 14}), f32({16, 8, 3, 3}), f32({16})},
          conv(1, {3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}));
  addCase(cases, "Conv/7x7 s2 p3", "Conv", {f32({1, 3, 32, 32}), f32({130, 3, 7, 7})},
          conv(1, {7, 7}, {3, 3, 3, 3}, {2, 2}, {1, 1}));
  addCase(cases, "Conv/1x1 large", "Conv", {f32({2, 64, 12, 12}), f32({128, 64, 1, 1})},
          conv(1, {1, 1}, {0, 0, 0, 0}, {1, 1}, {1, 1}));
  addCase(cases, "Conv/depthwise", "Conv", {f32({1, 16, 9, 9}), f32({16, 1, 3, 3}), f32({16})},
          conv(16, {3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1}));
  addCase(cases, "Conv/3-D", "Conv", {f32({1, 2, 5, 6, 7}), f32({3, 2, 2, 3, 3}), f32({3})},
          conv(1, {2, 3, 3}, {1, 0, 1, 0, 1, 1}, {2, 1, 2}, {1, 2, 1}));
  {
    Attrs a = conv(1, {3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1});
    a["fused_activation"] = std::string("Relu");
    addCase(cases, "Conv/bias residual relu", "Conv",
            {f32({1, 8, 10, 10}), f32({8, 8, 3, 3}), f32({8}), f32({1, 8, 10, 10})}, a);
  }
  // nanoc.ConvNHWC (X [N, H, W, C], W [kH, kW, C / group, M]): the implicit
  // GEMM over pixels x channels (a 3 x 3, the 7 x 7 stride-2 stem of 3
  // channels, a 1 x 1 of 64 -> 128, a 3 x 3 with partial tiles along both M
  // and N, odd sizes with uneven pads, strides and
  // dilations, groups of 16 channels), and the direct kernel of narrow
  // groups (depthwise, a channel multiplier, groups of 2).
  addCase(cases, "ConvNHWC/3x3 p1", "nanoc.ConvNHWC",
          {f32({2, 14, 14, 8}), f32({3, 3, 8, 16}), f32({16})},
          conv(1, {3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}));
  addCase(cases, "ConvNHWC/7x7 s2 p3 stem", "nanoc.ConvNHWC",
          {f32({1, 32, 32, 3}), f32({7, 7, 3, 130}), f32({130})},
          conv(1, {7, 7}, {3, 3, 3, 3}, {2, 2}, {1, 1}));
  addCase(cases, "ConvNHWC/1x1 large", "nanoc.ConvNHWC",
          {f32({2, 12, 12, 64}), f32({1, 1, 64, 128})},
          conv(1, {1, 1}, {0, 0, 0, 0}, {1, 1}, {1, 1}));
  addCase(cases, "ConvNHWC/3x3 partial tiles", "nanoc.ConvNHWC",
          {f32({1, 19, 21, 24}), f32({3, 3, 24, 150}), f32({150})},
          conv(1, {3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}));
  addCase(cases, "ConvNHWC/odd sizes", "nanoc.ConvNHWC",
          {f32({3, 13, 11, 5}), f32({3, 2, 5, 7}), f32({7})},
          conv(1, {3, 2}, {2, 1, 0, 1}, {2, 1}, {2, 2}));
  addCase(cases, "ConvNHWC/groups of 16", "nanoc.ConvNHWC",
          {f32({1, 9, 9, 32}), f32({3, 3, 8, 64}), f32({64})},
          conv(4, {3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}));
  addCase(cases, "ConvNHWC/depthwise s2", "nanoc.ConvNHWC",
          {f32({2, 9, 9, 16}), f32({3, 3, 1, 16}), f32({16})},
          conv(16, {3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1}));
  addCase(cases, "ConvNHWC/depthwise multiplier", "nanoc.ConvNHWC",
          {f32({1, 7, 8, 6}), f32({3, 3, 1, 12})}, conv(6, {3, 3}, {0, 1, 2, 1}, {1, 2}, {2, 1}));
  addCase(cases, "ConvNHWC/groups of 2", "nanoc.ConvNHWC",
          {f32({1, 6, 6, 8}), f32({1, 1, 2, 8}), f32({8})},
          conv(4, {1, 1}, {0, 0, 0, 0}, {1, 1}, {1, 1}));
  // The fused epilogue (gpu_nhwc_layout, then fuse_epilogue on the GPU):
  // the GEMM plan with a residual and Relu, the direct kernel with a residual
  // and Clip (mobilenet's Relu6), and without a residual.
  {
    Attrs a = conv(1, {3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1});
    a["fused_activation"] = std::string("Relu");
    addCase(cases, "ConvNHWC/bias residual relu", "nanoc.ConvNHWC",
            {f32({1, 10, 10, 8}), f32({3, 3, 8, 24}), f32({24}), f32({1, 10, 10, 24})}, a);
    a = conv(16, {3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1});
    a["fused_activation"] = std::string("Clip");
    a["fused_alpha"] = 0.0, a["fused_beta"] = 0.5;
    addCase(cases, "ConvNHWC/depthwise residual clip", "nanoc.ConvNHWC",
            {f32({2, 7, 7, 16}), f32({3, 3, 1, 16}), f32({16}), f32({2, 7, 7, 16})}, a);
    a.erase("fused_alpha"), a.erase("fused_beta");
    a["fused_activation"] = std::string("HardSwish");
    addCase(cases, "ConvNHWC/depthwise hardswish", "nanoc.ConvNHWC",
            {f32({1, 7, 7, 16}), f32({3, 3, 1, 16}), f32({16})}, a);
  }
  // Split along K (passes/gpu_split_k.h: split_k_chunk, the partial sums
  // P [S, N, H, W, M]): four slices of 144 of a 3 x 3's K = 576 with a
  // partial tile along N, the last slice short (K = 9 * 24 = 216 in slices
  // of 64: 64, 64, 64, 24), and groups (block z = group + groups * slice).
  {
    Attrs a = conv(1, {3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1});
    a["split_k_chunk"] = int64_t{144};
    addCase(cases, "ConvNHWC/split K 4 x 144", "nanoc.ConvNHWC",
            {f32({1, 7, 7, 64}), f32({3, 3, 64, 40})}, a);
    a = conv(1, {3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1});
    a["split_k_chunk"] = int64_t{64};
    addCase(cases, "ConvNHWC/split K short last slice s2", "nanoc.ConvNHWC",
            {f32({2, 9, 10, 24}), f32({3, 3, 24, 70})}, a);
    a = conv(2, {3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1});
    a["split_k_chunk"] = int64_t{48};
    addCase(cases, "ConvNHWC/split K groups of 16", "nanoc.ConvNHWC",
            {f32({1, 6, 6, 32}), f32({3, 3, 16, 32})}, a);
  }
  // MatMul and Gemm split along K (P [S, Y's dims...]): a short last slice
  // (150 = 64 + 64 + 22), broadcast batches, a 1-D A, Gemm with transB.
  addCase(cases, "MatMul/split K short last slice", "MatMul", {f32({70, 150}), f32({150, 65})},
          {{"split_k_chunk", int64_t{64}}});
  addCase(cases, "MatMul/split K batched broadcast", "MatMul",
          {f32({2, 3, 20, 96}), f32({3, 96, 17})}, {{"split_k_chunk", int64_t{32}}});
  addCase(cases, "MatMul/split K 1-D A", "MatMul", {f32({100}), f32({100, 30})},
          {{"split_k_chunk", int64_t{32}}});
  addCase(cases, "Gemm/split K transB", "Gemm", {f32({9, 100}), f32({40, 100})},
          {{"alpha", 1.0},
           {"beta", 1.0},
           {"transA", int64_t{0}},
           {"transB", int64_t{1}},
           {"split_k_chunk", int64_t{48}}});
  addCase(cases, "Gemm/C column", "Gemm", {f32({9, 4}), f32({4, 6}), f32({9, 1})},
          {{"alpha", 1.0}, {"beta", 1.0}, {"transA", int64_t{0}}, {"transB", int64_t{0}}});
  addCase(cases, "Gemm/no C", "Gemm", {f32({9, 4}), f32({4, 6})},
          {{"alpha", 1.0}, {"beta", 1.0}, {"transA", int64_t{0}}, {"transB", int64_t{0}}});
  addCase(cases, "MatMul/M=0", "MatMul", {f32({0, 7}), f32({7, 5})}, {});
  addCase(cases, "MatMul/N=0", "MatMul", {f32({3, 7}), f32({7, 0})}, {});
  addCase(cases, "Gemm/K=0", "Gemm", {f32({9, 0}), f32({0, 6}), f32({})},
          {{"alpha", 1.0}, {"beta", 1.0}, {"transA", int64_t{0}}, {"transB", int64_t{0}}});
  // (Last, so that the cases above keep their random inputs.) One row a
  // batch (matrix-vector): B's k contiguous (transB) with C,
  // alpha, beta and an activation; B [K, N] with batches, a bias, a residual
  // and an activation; a transposed A; K and N not multiples of the block's.
  addCase(cases, "Gemm/one row transB", "Gemm", {f32({1, 300}), f32({77, 300}), f32({77})},
          {{"alpha", 0.5},
           {"beta", 2.0},
           {"transA", int64_t{0}},
           {"transB", int64_t{1}},
           {"fused_activation", std::string("Relu")}});
  addCase(cases, "Gemm/one row transA", "Gemm", {f32({300, 1}), f32({300, 77}), f32({1, 77})},
          {{"alpha", 1.0}, {"beta", 1.0}, {"transA", int64_t{1}}, {"transB", int64_t{0}}});
  addCase(cases, "MatMul/one row residual", "MatMul",
          {f32({2, 1, 300}), f32({2, 300, 77}), f32({77}), f32({2, 1, 77})},
          {{"fused_activation", std::string("Tanh")}});
  // Operands read in place through views (ops/operand_view.h): attention's
  // heads out of one [1, 40, 96] projection (2 heads of 16: Q at 0, K at 32
  // read transposed, V at 64), on each tile and as matrix-vector products
  // (B's k contiguous, then B's n).
  auto view = [](Attrs a, int input, Ints shape, Ints strides, int64_t offset) {
    const std::string p = input == 0 ? "a_view_" : "b_view_";
    a[p + "shape"] = shape;
    a[p + "strides"] = strides;
    a[p + "offset"] = offset;
    return a;
  };
  for (int64_t tile : {128, 64, 0}) {
    Attrs a = view(view({}, 0, {1, 2, 40, 16}, {3840, 16, 96, 1}, 0), 1, {1, 2, 16, 40},
                   {3840, 16, 1, 96}, 32);
    if (tile) a["gpu_tile"] = tile;
    addCase(cases, "MatMul/views QK" + (tile ? " tile " + std::to_string(tile) : std::string()),
            "MatMul", {f32({1, 40, 96}), f32({1, 40, 96})}, a);
  }
  addCase(cases, "MatMul/views PV", "MatMul", {f32({1, 2, 40, 40}), f32({1, 40, 96})},
          view({}, 1, {1, 2, 40, 16}, {3840, 16, 96, 1}, 64));
  // A view split along K (K = 256 in 2 slices of 128): each slice's rows
  // read from the view's own strides.
  {
    Attrs a = view({}, 0, {1, 2, 40, 256}, {20480, 256, 512, 1}, 0);
    a["split_k_chunk"] = int64_t{128};
    addCase(cases, "MatMul/views split K", "MatMul", {f32({1, 40, 512}), f32({1, 2, 256, 24})}, a);
  }
  addCase(cases, "MatMul/one row views K", "MatMul", {f32({1, 96}), f32({1, 40, 96})},
          view(view({}, 0, {2, 1, 16}, {16, 96, 1}, 0), 1, {2, 16, 40}, {16, 1, 96}, 32));
  addCase(cases, "MatMul/one row views V", "MatMul", {f32({2, 1, 40}), f32({1, 40, 96})},
          view({}, 1, {2, 40, 16}, {16, 96, 1}, 64));
  return cases;
}

// linalgCases() with nanoc --gpu-precision's attribute on every product
// (gpu_precision = "tf32" | "bf16" | "f16"; `shape` "m16n8k8" for sm_75's f16
// shape), labels suffixed " [precision]", plus a K that is no multiple of 16
// and a long K.
inline std::vector<KernelCase> mmaCases(const std::string& precision,
                                        const std::string& shape = "") {
  std::vector<KernelCase> cases = linalgCases();
  addCase(cases, "MatMul/K=37", "MatMul", {f32({70, 37}), f32({37, 65})}, {});
  addCase(cases, "MatMul/large K=515", "MatMul", {f32({130, 515}), f32({515, 200})}, {});
  for (KernelCase& c : cases) {
    c.graph->node->attrs["gpu_precision"] = precision;
    if (!shape.empty()) c.graph->node->attrs["gpu_mma_shape"] = shape;
    c.label += " [" + precision + (shape.empty() ? "" : " " + shape) + "]";
  }
  return cases;
}

inline std::vector<KernelCase> rowCases() {
  std::vector<KernelCase> cases;
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    addCase(cases, std::string(op) + "/last", op, {f32({4, 1000})}, {{"axis", int64_t{1}}});
    addCase(cases, std::string(op) + "/middle", op, {f32({2, 7, 5})}, {{"axis", int64_t{1}}});
    addCase(cases, std::string(op) + "/f16", op, {TensorType{DType::F16, {3, 33}}},
            {{"axis", int64_t{1}}});
  }
  addCase(cases, "Softmax/no rows", "Softmax", {f32({0, 10})}, {{"axis", int64_t{1}}});
  addCase(cases, "Softmax/one element rows", "Softmax", {f32({5, 1})}, {{"axis", int64_t{1}}});
  addCase(cases, "LayerNormalization/row", "LayerNormalization",
          {f32({6, 768}), f32({768}), f32({768})}, {{"axis", int64_t{1}}, {"epsilon", 1e-5}});
  addCase(cases, "LayerNormalization/two dims", "LayerNormalization",
          {f32({2, 3, 4, 5}), f32({4, 5}), std::nullopt},
          {{"axis", int64_t{2}}, {"epsilon", 1e-5}});
  addCase(cases, "LayerNormalization/bf16", "LayerNormalization",
          {TensorType{DType::BF16, {5, 64}}, TensorType{DType::BF16, {64}},
           TensorType{DType::BF16, {1}}},
          {{"axis", int64_t{1}}, {"epsilon", 1e-5}});
  addCase(cases, "InstanceNormalization/2-D", "InstanceNormalization",
          {f32({2, 3, 5, 7}), f32({3}), f32({3})}, {{"epsilon", 1e-5}});
  addCase(cases, "InstanceNormalization/f16 1-D", "InstanceNormalization",
          {TensorType{DType::F16, {2, 4, 40}}, TensorType{DType::F16, {4}},
           TensorType{DType::F16, {4}}},
          {{"epsilon", 1e-5}});
  addCase(cases, "GroupNormalization/per channel", "GroupNormalization",
          {f32({2, 6, 4, 5}), f32({6}), f32({6})}, {{"epsilon", 1e-5}, {"num_groups", int64_t{3}}});
  addCase(cases, "GroupNormalization/per group", "GroupNormalization",
          {f32({2, 8, 9}), f32({2}), f32({2})}, {{"epsilon", 1e-5}, {"num_groups", int64_t{2}}});
  addCase(cases, "BatchNormalization/2-D", "BatchNormalization",
          {f32({2, 3, 5, 7}), f32({3}), f32({3}), f32({3}), f32({3})}, {{"epsilon", 1e-5}});
  cases.back().lo = 0.1f;  // a positive variance
  addCase(cases, "BatchNormalization/[N, C]", "BatchNormalization",
          {f32({4, 6}), f32({6}), f32({6}), f32({6}), f32({6})}, {{"epsilon", 1e-3}});
  cases.back().lo = 0.1f;
  addCase(cases, "RMSNormalization/row", "RMSNormalization", {f32({6, 512}), f32({512})},
          {{"axis", int64_t{1}}, {"epsilon", 1e-6}});
  return cases;
}

inline Attrs poolAttrs(Ints kernel, Ints pads, Ints strides, Ints dilations, int64_t ceil_mode) {
  return {{"kernel_shape", std::move(kernel)},
          {"pads", std::move(pads)},
          {"strides", std::move(strides)},
          {"dilations", std::move(dilations)},
          {"ceil_mode", ceil_mode}};
}

// Pooling: one and three spatial dims with pads, strides, dilations and
// ceil_mode (as the CPU lowering's tests), the usual 2-D 3 x 3 / 2 ones, and
// the global pools.
inline std::vector<KernelCase> poolCases() {
  std::vector<KernelCase> cases;
  for (int64_t ceil_mode : {0, 1}) {
    Attrs one = poolAttrs({3}, {1, 2}, {2}, {2}, ceil_mode);
    Attrs three = poolAttrs({2, 3, 2}, {1, 1, 0, 0, 2, 1}, {2, 2, 1}, {1, 1, 2}, ceil_mode);
    std::string ceil = " ceil " + std::to_string(ceil_mode);
    addCase(cases, "MaxPool/1-D" + ceil, "MaxPool", {f32({2, 3, 19})}, one);
    addCase(cases, "MaxPool/3-D" + ceil, "MaxPool", {f32({1, 2, 6, 7, 8})}, three);
    for (int64_t include_pad : {0, 1}) {
      one["count_include_pad"] = include_pad;
      three["count_include_pad"] = include_pad;
      std::string pad = ceil + " pad " + std::to_string(include_pad);
      addCase(cases, "AveragePool/1-D" + pad, "AveragePool", {f32({2, 3, 19})}, one);
      addCase(cases, "AveragePool/3-D" + pad, "AveragePool", {f32({1, 2, 6, 7, 8})}, three);
    }
  }
  addCase(cases, "MaxPool/3x3 s2 p1", "MaxPool", {f32({2, 8, 33, 33})},
          poolAttrs({3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1}, 0));
  addCase(cases, "MaxPool/dilated, empty windows", "MaxPool", {f32({1, 2, 12, 12})},
          poolAttrs({3, 3}, {2, 2, 2, 2}, {1, 1}, {2, 2}, 0));
  Attrs avg = poolAttrs({2, 2}, {0, 0, 0, 0}, {2, 2}, {1, 1}, 1);
  avg["count_include_pad"] = int64_t{0};
  addCase(cases, "AveragePool/2x2 s2 ceil", "AveragePool", {f32({1, 4, 17, 33})}, avg);
  addCase(cases, "GlobalAveragePool/7x7", "GlobalAveragePool", {f32({2, 64, 7, 7})}, {});
  addCase(cases, "GlobalAveragePool/1-D", "GlobalAveragePool", {f32({3, 5, 100})}, {});
  // The channels-last forms (X [N, H, W, C]).
  addCase(cases, "MaxPoolNHWC/3x3 s2 p1", "nanoc.MaxPoolNHWC", {f32({2, 33, 33, 8})},
          poolAttrs({3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1}, 0));
  addCase(cases, "MaxPoolNHWC/3x3 s2 ceil", "nanoc.MaxPoolNHWC", {f32({1, 14, 13, 5})},
          poolAttrs({3, 3}, {0, 0, 0, 0}, {2, 2}, {1, 1}, 1));
  addCase(cases, "AveragePoolNHWC/2x2 s2 ceil", "nanoc.AveragePoolNHWC", {f32({1, 17, 33, 4})},
          avg);
  avg["count_include_pad"] = int64_t{1};
  avg["pads"] = Ints{1, 0, 1, 1};
  addCase(cases, "AveragePoolNHWC/pads counted", "nanoc.AveragePoolNHWC", {f32({2, 9, 10, 7})},
          avg);
  addCase(cases, "GlobalAveragePoolNHWC/7x7", "nanoc.GlobalAveragePoolNHWC", {f32({2, 7, 7, 64})},
          {});
  addCase(cases, "GlobalAveragePoolNHWC/13x13 odd channels", "nanoc.GlobalAveragePoolNHWC",
          {f32({1, 13, 13, 1000})}, {});
  addCase(cases, "GlobalMaxPool/7x7", "GlobalMaxPool", {f32({2, 64, 7, 7})}, {});
  addCase(cases, "GlobalMaxPool/3-D", "GlobalMaxPool", {f32({1, 3, 4, 5, 6})}, {});
  return cases;
}

inline Attrs convTransposeAttrs(Ints kernel, Ints pads, Ints strides, Ints dilations,
                                Ints output_padding, int64_t group) {
  return {{"kernel_shape", std::move(kernel)},
          {"pads", std::move(pads)},
          {"strides", std::move(strides)},
          {"dilations", std::move(dilations)},
          {"output_padding", std::move(output_padding)},
          {"group", group}};
}

// ConvTranspose (a U-Net's 2 x 2 stride-2 up-convolution with a bias; pads,
// output_padding and groups; 1-D dilated; 3-D) and Resize (linear,
// nearest, cubic, antialiased linear downscale, tf_crop_and_resize's
// extrapolation), as a U-Net's decoder runs them; and their channels-last
// forms.
inline std::vector<KernelCase> upsampleCases() {
  std::vector<KernelCase> cases;
  addCase(cases, "ConvTranspose/2x2 s2 bias", "ConvTranspose",
          {f32({1, 8, 5, 6}), f32({8, 4, 2, 2}), f32({4})},
          convTransposeAttrs({2, 2}, {0, 0, 0, 0}, {2, 2}, {1, 1}, {0, 0}, 1));
  addCase(cases, "ConvTranspose/3x3 s2 pads output_padding groups", "ConvTranspose",
          {f32({2, 4, 5, 5}), f32({4, 3, 3, 3})},
          convTransposeAttrs({3, 3}, {1, 0, 1, 2}, {2, 2}, {1, 1}, {1, 0}, 2));
  addCase(cases, "ConvTranspose/1-D s3 dilated", "ConvTranspose",
          {f32({1, 3, 7}), f32({3, 2, 3}), f32({2})},
          convTransposeAttrs({3}, {1, 1}, {3}, {2}, {0}, 1));
  addCase(cases, "ConvTranspose/3-D", "ConvTranspose", {f32({1, 2, 3, 3, 3}), f32({2, 2, 2, 2, 2})},
          convTransposeAttrs({2, 2, 2}, {0, 0, 0, 0, 0, 0}, {2, 2, 2}, {1, 1, 1}, {0, 0, 0}, 1));
  addCase(cases, "Resize/linear half_pixel 2x", "Resize", {f32({1, 5, 7, 9})},
          resizeAttrs("linear", "half_pixel", {1, 5, 14, 18}, {1, 1, 2, 2}));
  addCase(cases, "Resize/nearest asymmetric 3x", "Resize", {f32({2, 3, 4, 5})},
          resizeAttrs("nearest", "asymmetric", {2, 3, 12, 15}, {1, 1, 3, 3}));
  addCase(cases, "Resize/cubic align_corners", "Resize", {f32({1, 2, 6, 7})},
          resizeAttrs("cubic", "align_corners", {1, 2, 11, 5}, {1, 1, 11.0 / 6, 5.0 / 7}));
  Attrs antialias = resizeAttrs("linear", "pytorch_half_pixel", {1, 3, 5, 4}, {1, 1, 0.5, 0.4});
  antialias["antialias"] = int64_t{1};
  addCase(cases, "Resize/linear antialiased down", "Resize", {f32({1, 3, 10, 10})}, antialias);
  Attrs crop = resizeAttrs("linear", "tf_crop_and_resize", {1, 2, 6, 6}, {1, 1, 1.5, 1.5},
                           {0, 0, -0.25, 0.1, 1, 1, 1.2, 0.9});
  crop["extrapolation_value"] = 7.5;
  addCase(cases, "Resize/tf_crop_and_resize outside", "Resize", {f32({1, 2, 4, 4})}, crop);
  // The channels-last forms (X [N, H, W, C]; Resize's lists stay NCHW's).
  addCase(cases, "ConvTransposeNHWC/2x2 s2 bias", "nanoc.ConvTransposeNHWC",
          {f32({1, 5, 6, 8}), f32({8, 4, 2, 2}), f32({4})},
          convTransposeAttrs({2, 2}, {0, 0, 0, 0}, {2, 2}, {1, 1}, {0, 0}, 1));
  addCase(cases, "ConvTransposeNHWC/3x3 s2 pads output_padding groups", "nanoc.ConvTransposeNHWC",
          {f32({2, 5, 5, 4}), f32({4, 3, 3, 3})},
          convTransposeAttrs({3, 3}, {1, 0, 1, 2}, {2, 2}, {1, 1}, {1, 0}, 2));
  addCase(cases, "ResizeNHWC/linear half_pixel 2x", "nanoc.ResizeNHWC", {f32({1, 7, 9, 5})},
          resizeAttrs("linear", "half_pixel", {1, 5, 14, 18}, {1, 1, 2, 2}));
  addCase(cases, "ResizeNHWC/cubic align_corners", "nanoc.ResizeNHWC", {f32({2, 6, 7, 3})},
          resizeAttrs("cubic", "align_corners", {2, 3, 11, 5}, {1, 1, 11.0 / 6, 5.0 / 7}));
  return cases;
}

// Every Reduce* kind over every structure of the CPU lowering's tests
// (contiguous rows, strips, reduced runs between kept ones, size-1 dims,
// everything, nothing, an empty reduced set), in ranges each is defined on.
// nanoc.SplitKSum (ops/split_k.h): the slices summed, with a bias, a
// residual and Relu (the split Conv's epilogue), and bare.
inline void addSplitKSumCases(std::vector<KernelCase>& cases) {
  addCase(cases, "SplitKSum/bias residual relu", "nanoc.SplitKSum",
          {f32({4, 1, 7, 7, 40}), f32({40}), f32({1, 7, 7, 40})},
          {{"fused_activation", std::string("Relu")}});
  addCase(cases, "SplitKSum/bare", "nanoc.SplitKSum", {f32({3, 5, 9})}, {});
  addCase(cases, "SplitKSum/bias clip", "nanoc.SplitKSum", {f32({2, 2, 3, 3, 8}), f32({8})},
          {{"fused_activation", std::string("Clip")}, {"fused_alpha", 0.0}, {"fused_beta", 1.0}});
}

inline std::vector<KernelCase> reduceCases() {
  const char* const ops[] = {"ReduceSum",       "ReduceMean",     "ReduceMax", "ReduceMin",
                             "ReduceProd",      "ReduceL1",       "ReduceL2",  "ReduceLogSum",
                             "ReduceLogSumExp", "ReduceSumSquare"};
  struct Shape {
    Ints dims, axes;
  };
  const Shape shapes[] = {
      {{37}, {0}},          {{5, 300}, {1}},        {{300, 5}, {0}},        {{3, 5, 600}, {1}},
      {{4, 7, 33}, {0, 2}}, {{3, 5, 7, 9}, {1, 3}}, {{3, 5, 7, 9}, {0, 2}}, {{3, 5, 7, 9}, {1, 2}},
      {{6, 1, 8}, {1}},     {{6, 1, 8}, {0, 1}},    {{2, 3, 4}, {0, 1, 2}}, {{2, 3, 4}, {}},
      {{2, 0, 4}, {1}},
  };
  std::vector<KernelCase> cases;
  int64_t n = 0;
  for (const char* op : ops)
    for (const Shape& shape : shapes) {
      std::string label = std::string(op) + "/" + std::to_string(n);
      addCase(cases, label, op, {f32(shape.dims)}, {{"axes", shape.axes}, {"keepdims", n++ % 2}});
      if (std::string(op) == "ReduceLogSum") cases.back().lo = 0.1f, cases.back().hi = 2.0f;
      if (std::string(op) == "ReduceProd") cases.back().lo = 0.7f, cases.back().hi = 1.3f;
    }
  addCase(cases, "ReduceSum/long rows", "ReduceSum", {f32({2, 40000})},
          {{"axes", Ints{1}}, {"keepdims", int64_t{1}}});
  addCase(cases, "ReduceLogSumExp/wide", "ReduceLogSumExp", {f32({17, 1100})},
          {{"axes", Ints{1}}, {"keepdims", int64_t{1}}});
  cases.back().lo = -50.0f, cases.back().hi = 50.0f;
  addCase(cases, "ReduceMax/columns", "ReduceMax", {f32({64, 3000})},
          {{"axes", Ints{0}}, {"keepdims", int64_t{0}}});
  addSplitKSumCases(cases);
  return cases;
}

// Data movement: Transpose, Slice (steps both ways, empty), Expand, Concat,
// Gather (both index dtypes, every axis; random indices in [-3, 3], so
// negative and out-of-range ones too), over dtypes of every width.
inline std::vector<KernelCase> dataMovementCases() {
  std::vector<KernelCase> cases;
  auto t = [](DType d, Ints dims) { return TensorType{d, std::move(dims)}; };
  // Transpose: every dtype width, merged runs, size-1 dims.
  for (DType d : {DType::F32, DType::F16, DType::I64, DType::Bool, DType::U8, DType::F64})
    addCase(cases, "Transpose/" + std::string(dtypeName(d)), "Transpose",
            {TensorType{d, {2, 3, 4, 5}}}, {{"perm", Ints{0, 2, 3, 1}}});
  addCase(cases, "Transpose/2-D", "Transpose", {f32({33, 65})}, {{"perm", Ints{1, 0}}});
  addCase(cases, "Transpose/ones", "Transpose", {f32({1, 7, 1, 9, 4})},
          {{"perm", Ints{4, 2, 1, 0, 3}}});
  addCase(cases, "Transpose/empty", "Transpose", {f32({0, 3})}, {{"perm", Ints{1, 0}}});
  addCase(cases, "Transpose/identity", "Transpose", {f32({3, 4})}, {{"perm", Ints{0, 1}}});
  auto slice = [](Ints starts, Ints ends, Ints steps) {
    return Attrs{
        {"starts", std::move(starts)}, {"ends", std::move(ends)}, {"steps", std::move(steps)}};
  };
  for (DType d : {DType::F32, DType::F16, DType::I64, DType::Bool, DType::U8}) {
    std::string dn(dtypeName(d));
    addCase(cases, "Slice/steps " + dn, "Slice", {t(d, {5, 6, 7})},
            slice({1, 5, 0}, {5, -1, 7}, {2, -2, 1}));
    addCase(cases, "Slice/reversed " + dn, "Slice", {t(d, {5, 6, 7})},
            slice({0, 1, 6}, {5, 6, 0}, {1, 1, -3}));
    addCase(cases, "Concat/" + dn, "Concat", {t(d, {2, 3, 4}), t(d, {2, 1, 4}), t(d, {2, 5, 4})},
            {{"axis", int64_t{1}}});
    addCase(cases, "Expand/" + dn, "Expand", {t(d, {3, 1})}, {{"shape", Ints{2, 3, 4}}});
  }
  addCase(cases, "Slice/large", "Slice", {f32({4, 300, 200})},
          slice({1, 10, 0}, {4, 290, 200}, {1, 1, 1}));
  addCase(cases, "Slice/empty", "Slice", {f32({4, 5})}, slice({3, 0}, {1, 5}, {1, 1}));
  addCase(cases, "Expand/middle", "Expand", {f32({1, 300, 1})}, {{"shape", Ints{40, 300, 70}}});
  addCase(cases, "Concat/axis 0, an empty operand", "Concat",
          {f32({2, 3}), f32({0, 3}), f32({1, 3})}, {{"axis", int64_t{0}}});
  addCase(cases, "Concat/last axis", "Concat", {f32({4, 3}), f32({4, 7})}, {{"axis", int64_t{1}}});
  for (DType index : {DType::I32, DType::I64})
    for (int64_t axis = 0; axis < 3; ++axis) {
      std::string label = std::string(dtypeName(index)) + " axis " + std::to_string(axis);
      addCase(cases, "Gather/" + label, "Gather", {f32({4, 5, 6}), t(index, {2, 3})},
              {{"axis", axis}});
      addCase(cases, "Gather/scalar " + label, "Gather", {t(DType::U16, {4, 5, 6}), t(index, {})},
              {{"axis", axis}});
    }
  addCase(cases, "Gather/rows", "Gather", {f32({50, 4000}), t(DType::I64, {3})},
          {{"axis", int64_t{0}}});
  return cases;
}

}  // namespace nanoc::gpu::testing
