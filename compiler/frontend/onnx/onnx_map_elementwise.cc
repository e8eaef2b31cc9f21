// ONNX -> IR mappings of the elementwise operators.
#include "compiler/frontend/onnx/onnx_mapping_util.h"

namespace nanoc::onnx_import {

MappingList elementwiseMappings() { return {}; }

}  // namespace nanoc::onnx_import
