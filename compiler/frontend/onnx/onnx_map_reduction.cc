// ONNX -> IR mappings of the reduction operators.
#include "compiler/frontend/onnx/onnx_mapping_util.h"

namespace nanoc::onnx_import {

MappingList reductionMappings() { return {}; }

}  // namespace nanoc::onnx_import
