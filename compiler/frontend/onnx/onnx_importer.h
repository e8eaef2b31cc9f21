// ONNX -> IR. Maps each ONNX node (opset-aware) onto the canonical IR ops of
// compiler/ops/README.md, with every attribute explicit. Initializers become
// constants; Constant nodes become constants too.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "compiler/ir/graph.h"

namespace nanoc {

// Reads and imports `path`. Throws CompileError for an unreadable or malformed
// file, a dynamic or missing input shape, and for unsupported operators: one
// error listing every unsupported node with its name, op type and opset.
std::unique_ptr<Graph> importOnnxFile(const std::string& path);

// The same from bytes in memory (for tests and fuzzers); `source` names them
// in errors.
std::unique_ptr<Graph> importOnnxBytes(const void* data, size_t size, const std::string& source);

}  // namespace nanoc
