// ONNX -> IR mappings of the normalization operators.
#include "compiler/frontend/onnx/onnx_mapping_util.h"

namespace nanoc::onnx_import {

MappingList normalizationMappings() { return {}; }

}  // namespace nanoc::onnx_import
