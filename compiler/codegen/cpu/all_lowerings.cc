// The table of CPU lowerings, by IR op name. Each lower_<op>.cc defines its
// make<Op>Lowering(); listing them here (rather than static registration)
// keeps a static library from dropping any.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/lowering.h"

namespace nanoc::cpu {

// lower_softmax.cc, lower_batch_normalization.cc, lower_global_average_pool.cc,
// lower_transpose.cc, lower_concat.cc
Lowering makeSoftmaxLowering();
Lowering makeBatchNormalizationLowering();
Lowering makeGlobalAveragePoolLowering();
Lowering makeTransposeLowering();
Lowering makeConcatLowering();
// lower_matmul.cc, lower_gemm.cc, lower_conv.cc, lower_pool.cc
Lowering makeMatMulLowering();
Lowering makeGemmLowering();
Lowering makeConvLowering();
Lowering makeMaxPoolLowering();
Lowering makeAveragePoolLowering();
// lower_pool.cc, lower_global_max_pool.cc, lower_conv_transpose.cc, lower_resize.cc
Lowering makeMaxPoolWithIndicesLowering();
Lowering makeLpPoolLowering();
Lowering makeGlobalMaxPoolLowering();
Lowering makeConvTransposeLowering();
Lowering makeResizeLowering();
Lowering makeWinogradLowering();   // lower_winograd.cc
Lowering makeScanWriteLowering();  // lower_control_flow.cc
Lowering makeZerosLowering();      // lower_control_flow.cc
// Families of operators list their lowerings in one function each.
using LoweringList = std::vector<std::pair<std::string, Lowering>>;
LoweringList elementwiseTableLowerings();  // lower_elementwise.cc
LoweringList reductionLowerings();         // lower_reductions.cc
LoweringList dataMovementLowerings();      // lower_data_movement.cc
LoweringList normalizationLowerings();     // lower_normalizations.cc
LoweringList quantizationLowerings();      // lower_quantization.cc
LoweringList samplingLowerings();          // lower_grid_sample.cc
LoweringList convGemmLowerings();          // lower_conv_gemm.cc
LoweringList nchwcLowerings();             // lower_nchwc.cc
LoweringList nchwcPoolLowerings();         // lower_nchwc_pool.cc

const Lowering* findLowering(std::string_view op) {
  static const std::map<std::string, Lowering, std::less<>> table = [] {
    std::map<std::string, Lowering, std::less<>> t = {
        {"Softmax", makeSoftmaxLowering()},
        {"BatchNormalization", makeBatchNormalizationLowering()},
        {"GlobalAveragePool", makeGlobalAveragePoolLowering()},
        {"Transpose", makeTransposeLowering()},
        {"Concat", makeConcatLowering()},
        {"MatMul", makeMatMulLowering()},
        {"Gemm", makeGemmLowering()},
        {"Conv", makeConvLowering()},
        {"MaxPool", makeMaxPoolLowering()},
        {"AveragePool", makeAveragePoolLowering()},
        {"MaxPoolWithIndices", makeMaxPoolWithIndicesLowering()},
        {"LpPool", makeLpPoolLowering()},
        {"GlobalMaxPool", makeGlobalMaxPoolLowering()},
        {"ConvTranspose", makeConvTransposeLowering()},
        {"Resize", makeResizeLowering()},
        {"nanoc.Winograd", makeWinogradLowering()},
        {"nanoc.ScanWrite", makeScanWriteLowering()},
        {"nanoc.Zeros", makeZerosLowering()},
    };
    for (LoweringList (*family)() :
         {elementwiseTableLowerings, reductionLowerings, dataMovementLowerings,
          normalizationLowerings, quantizationLowerings, samplingLowerings, convGemmLowerings,
          nchwcLowerings, nchwcPoolLowerings})
      for (auto& [name, lowering] : family()) t.emplace(name, std::move(lowering));
    return t;
  }();
  auto it = table.find(op);
  return it == table.end() ? nullptr : &it->second;
}

int inPlaceInput(const Node& node) {
  const Lowering* lowering = findLowering(node.op);
  return lowering && lowering->in_place_input ? lowering->in_place_input(node) : -1;
}

}  // namespace nanoc::cpu
