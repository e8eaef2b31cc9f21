// ONNX -> IR. Maps each ONNX node (opset-aware) onto the canonical IR ops of
// compiler/ops/README.md, with every attribute explicit. Initializers become
// constants; Constant nodes and shape computations (Shape, Size, and every node
// whose inputs are all constants) become constants too, as they are imported.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace nanoc {

// What fixes the graph inputs' open (symbolic or unknown) dims.
struct OnnxImportOptions {
  // The most bytes of constants the importer itself makes from small model
  // data (ConstantOfShape, Range, a recurrence's zero state): 4 GiB
  // (kMaxMadeConstantBytes), twice what a model file can hold. The fuzzers
  // ask for less, to stay under their memory limit.
  uint64_t max_made_constant_bytes = uint64_t{4} << 30;
  // The most nodes the graph may reach, the importer's unrolled recurrences
  // and the passes' additions included (Graph::max_nodes).
  size_t max_nodes = kMaxGraphNodes;
  // nanoc's --input-shape NAME=d0,d1,...: every dim of graph input NAME. The
  // rank must match the model's and a static dim must agree with it.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // nanoc's --dim PARAM=VALUE: every input dim whose dim_param is PARAM.
  std::map<std::string, int64_t> dim_params;
  // nanoc's --bind NAME=FILE.pb: graph input NAME is the constant that FILE
  // (a serialized onnx TensorProto, as ONNX's test data stores inputs) holds,
  // compiled in like an initializer. For inputs that decide shapes (a
  // Reshape's shape, Slice's starts, TopK's k) where the deployment feeds one
  // fixed value; its dtype and static dims must agree with the declaration.
  std::map<std::string, std::string> bound_inputs;  // name -> TensorProto bytes
};

// Reads and imports `path`. Throws CompileError for an unreadable or malformed
// file (truncated, a cycle, a value defined twice or never), an input dim that
// is open and not fixed by `options`, and for nodes nanoc cannot import: one
// error listing every unsupported operator and every node with an unsupported
// attribute or dtype, each with its name, op type and opset.
std::unique_ptr<Graph> importOnnxFile(const std::string& path,
                                      const OnnxImportOptions& options = {});

// The same from bytes in memory (for tests and fuzzers); `source` names them
// in errors.
std::unique_ptr<Graph> importOnnxBytes(const void* data, size_t size, const std::string& source,
                                       const OnnxImportOptions& options = {});

}  // namespace nanoc
