// ONNX -> IR mappings of the data movement operators.
#include "compiler/frontend/onnx/onnx_mapping_util.h"

namespace nanoc::onnx_import {

MappingList dataMovementMappings() { return {}; }

}  // namespace nanoc::onnx_import
