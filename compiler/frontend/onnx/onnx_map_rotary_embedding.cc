// ONNX RotaryEmbedding (opset 23) -> IR RotaryEmbedding
// (compiler/ops/rotary_embedding.cc): 4-D X [B, H, S, D] as it is, 3-D X
// [B, S, H * D] reshaped to [B, S, H, D] (heads_first = 0) and back.
#include "compiler/frontend/onnx/onnx_mapping_util.h"

namespace nanoc::onnx_import {

void mapRotaryEmbedding(NodeImporter& n) {
  Value* x = n.requiredInput(0, "X");
  Value* cos = n.requiredInput(1, "cos_cache");
  Value* sin = n.requiredInput(2, "sin_cache");
  Value* positions = n.input(3);
  int64_t rank = rankOf(x);
  if (rank != 3 && rank != 4) n.fail("X must be 3-D or 4-D, got " + x->type.str());
  std::vector<int64_t> dims = x->type.dims;
  if (rank == 3) {
    int64_t heads = n.intAttr("num_heads", 0);
    if (heads < 1 || dims[2] % heads != 0)
      n.fail("3-D X " + x->type.str() + " needs num_heads dividing its hidden size, got " +
             std::to_string(heads));
    x = n.emit("Reshape", {x},
               {{"shape", std::vector<int64_t>{dims[0], dims[1], heads, dims[2] / heads}}},
               "heads");
  }
  int64_t rot = n.intAttr("rotary_embedding_dim", 0);
  if (rot == 0) rot = x->type.dims[3];
  std::map<std::string, Attr> attrs = {{"interleaved", n.intAttr("interleaved", 0)},
                                       {"rotary_dim", rot},
                                       {"heads_first", int64_t{rank == 4 ? 1 : 0}}};
  std::vector<Value*> inputs = {x, cos, sin};
  if (positions) inputs.push_back(positions);
  if (rank == 4) {
    n.emitResult("RotaryEmbedding", inputs, attrs);
    return;
  }
  Value* y = n.emit("RotaryEmbedding", inputs, attrs);
  n.emitResult("Reshape", {y}, {{"shape", dims}}, "merge");
}

}  // namespace nanoc::onnx_import
