// Folding at import: a node whose inputs are all small constants is evaluated
// with its op's reference as soon as a mapping emits it, so the shape
// arithmetic of exported models (Shape -> Gather -> Unsqueeze -> Concat ->
// Reshape) turns into constants that later mappings can read as shapes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_node_importer.h"

namespace nanoc::onnx_import {

// Results up to this size are computed at import; larger ones are left to the
// constant-folding pass.
inline constexpr uint64_t kImportFoldBytes = 1 << 20;

// When `v`'s producer is the graph's last node, has only constant inputs, a
// reference and a small result, evaluates it now: its outputs become
// constants (keeping their names) and the node is removed. Returns `v`.
Value* foldIfConstant(NodeImporter& n, Value* v);

// emitResult, then foldIfConstant on the result.
void emitResultFolded(NodeImporter& n, const std::string& op, std::vector<Value*> inputs,
                      std::map<std::string, Attr> attrs = {});

// emit, then foldIfConstant.
Value* emitFolded(NodeImporter& n, const std::string& op, std::vector<Value*> inputs,
                  std::map<std::string, Attr> attrs, const std::string& suffix,
                  const std::string& output_name = "");

}  // namespace nanoc::onnx_import
