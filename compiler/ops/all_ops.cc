// The op table. Each op file defines its make<Op>Schema(); listing them here,
// rather than registering from static initializers, keeps every op in a
// static-library link.
#include <algorithm>
#include <map>

#include "compiler/ir/op_registry.h"

namespace nanoc {

OpSchema makeMatMulSchema();
OpSchema makeGemmSchema();
OpSchema makeConvSchema();
OpSchema makeMaxPoolSchema();
OpSchema makeAveragePoolSchema();
OpSchema makeGlobalAveragePoolSchema();
OpSchema makeBatchNormalizationSchema();
OpSchema makeSoftmaxSchema();
OpSchema makeReshapeSchema();
OpSchema makeTransposeSchema();
OpSchema makeConcatSchema();
OpSchema makeIdentitySchema();
OpSchema makeMaxPoolWithIndicesSchema();
OpSchema makeLpPoolSchema();
OpSchema makeGlobalMaxPoolSchema();
OpSchema makeConvTransposeSchema();
OpSchema makeResizeSchema();
OpSchema makeBitCastSchema();  // bitcast.cc
// Families of operators list their schemas in one function each.
std::vector<OpSchema> elementwiseSchemas();       // elementwise_table.cc
std::vector<OpSchema> reductionSchemas();         // reductions.cc
std::vector<OpSchema> dataMovementSchemas();      // data_movement.cc
std::vector<OpSchema> normalizationSchemas();     // normalizations.cc
std::vector<OpSchema> quantizationSchemas();      // quantization.cc
std::vector<OpSchema> samplingSchemas();          // grid_sample.cc
std::vector<OpSchema> convGemmSchemas();          // conv_gemm.cc
std::vector<OpSchema> winogradSchemas();          // winograd.cc
std::vector<OpSchema> fusedElementwiseSchemas();  // fused_elementwise.cc
std::vector<OpSchema> nchwcSchemas();             // nchwc.cc
std::vector<OpSchema> nchwcPoolSchemas();         // nchwc_pool.cc
std::vector<OpSchema> deviceCopySchemas();        // device_copy.cc
std::vector<OpSchema> channelsLastSchemas();      // channels_last.cc
std::vector<OpSchema> controlFlowSchemas();       // control_flow.cc
std::vector<OpSchema> splitKSchemas();            // split_k.cc

namespace {

// Built once, thread-safely (function-local static); never modified after.
const std::map<std::string, OpSchema, std::less<>>& opTable() {
  static const std::map<std::string, OpSchema, std::less<>> table = [] {
    std::map<std::string, OpSchema, std::less<>> t;
    for (OpSchema (*make)() :
         {makeMatMulSchema, makeGemmSchema, makeConvSchema, makeMaxPoolSchema,
          makeAveragePoolSchema, makeGlobalAveragePoolSchema, makeBatchNormalizationSchema,
          makeSoftmaxSchema, makeReshapeSchema, makeTransposeSchema, makeConcatSchema,
          makeIdentitySchema, makeMaxPoolWithIndicesSchema, makeLpPoolSchema,
          makeGlobalMaxPoolSchema, makeConvTransposeSchema, makeResizeSchema, makeBitCastSchema}) {
      OpSchema schema = make();
      std::string name = schema.name;
      t.emplace(std::move(name), std::move(schema));
    }
    for (std::vector<OpSchema> (*family)() :
         {elementwiseSchemas, reductionSchemas, dataMovementSchemas, normalizationSchemas,
          quantizationSchemas, samplingSchemas, convGemmSchemas, winogradSchemas,
          fusedElementwiseSchemas, nchwcSchemas, nchwcPoolSchemas, deviceCopySchemas,
          channelsLastSchemas, controlFlowSchemas, splitKSchemas})
      for (OpSchema& schema : family()) {
        std::string name = schema.name;
        t.emplace(std::move(name), std::move(schema));
      }
    return t;
  }();
  return table;
}

}  // namespace

const OpSchema* findOp(std::string_view name) {
  const auto& table = opTable();
  auto it = table.find(name);
  return it == table.end() ? nullptr : &it->second;
}

std::vector<std::string> registeredOps() {
  std::vector<std::string> names;
  for (const auto& [name, schema] : opTable()) names.push_back(name);
  return names;  // std::map iterates in sorted order
}

}  // namespace nanoc
