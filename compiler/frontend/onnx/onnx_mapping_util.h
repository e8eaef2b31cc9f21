// Helpers shared by the ONNX op mappings (onnx_op_mappings.cc and the
// per-family onnx_map_*.cc files), and the per-family mapping lists that
// findOpMapping merges into one table.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/frontend/onnx/onnx_node_importer.h"

namespace nanoc::onnx_import {

// Bounds window attributes so that (k - 1) * d + 1 and the pad arithmetic
// cannot overflow, whatever the model says.
constexpr int64_t kMaxWindowAttr = int64_t{1} << 30;

inline int64_t rankOf(const Value* v) { return static_cast<int64_t>(v->type.rank()); }

// "[1,3,8,8]"
std::string dimsStr(const std::vector<int64_t>& dims);

// `axis` in [-rank, rank) (or [-rank, rank] with `inclusive_end`) -> [0, rank).
int64_t normalizeAxis(const NodeImporter& n, int64_t axis, int64_t rank,
                      bool inclusive_end = false);

// The product of dims[begin, end); throws CompileError when the product of
// its nonzero dims overflows, whether or not a zero dim makes it 0.
int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end);

// The values of a constant 1-D int64 input (a shape, axes, pads, ...); fails
// naming `role` when the input is computed at run time or has another type.
// `scalar_ok`: a 0-D tensor is one value too (axes: ONNX's own function
// bodies, AffineGrid's, pass Unsqueeze a scalar axis, which ONNX Runtime
// and the reference implementation take).
std::vector<int64_t> constantInts(const NodeImporter& n, const Value* v, const char* role,
                                  bool scalar_ok = false);

using MappingList = std::vector<std::pair<std::string_view, OpMapping>>;

// One list per family of operators, each defined in its onnx_map_<family>.cc.
MappingList elementwiseMappings();
MappingList reductionMappings();
MappingList dataMovementMappings();
MappingList normalizationMappings();
MappingList spatialMappings();
MappingList shapeMappings();
MappingList quantizationMappings();
MappingList recurrentMappings();
MappingList samplingMappings();  // onnx_map_sampling.cc
MappingList miscMappings();      // onnx_map_misc.cc

}  // namespace nanoc::onnx_import
