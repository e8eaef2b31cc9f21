#include "compiler/passes/conv_to_gemm.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "compiler/ops/conv.h"

namespace nanoc {
namespace {

// Patch matrices beyond this many bytes keep the direct Conv (the arena
// would hold them whole).
constexpr int64_t kMaxPatchBytes = int64_t{256} << 20;

bool rewritable(const Node& conv, const ConvShape& s) {
  const Value* w = conv.inputs[1];
  return s.rank() == 2 && s.group == 1 && w && w->isConstant() &&
         conv.inputs[0]->type.dtype == DType::F32 && w->type.dtype == DType::F32 && s.n > 0 &&
         s.m > 0 && s.c > 0;
}

bool isPointwise(const ConvShape& s) {
  for (size_t i = 0; i < 2; ++i)
    if (s.kernel[i] != 1 || s.strides[i] != 1 || s.pads[i] != 0 || s.pads[2 + i] != 0) return false;
  return true;
}

}  // namespace

int convToGemm(Graph& graph, int64_t panel) {
  if (panel <= 0) return 0;
  int rewritten = 0;
  for (size_t at = 0; at < graph.nodes.size(); ++at) {
    Node* conv = graph.nodes[at].get();
    if (conv->op != "Conv") continue;
    ConvShape s = convShape(*conv);
    if (!rewritable(*conv, s)) continue;
    const int64_t pixels = s.out[0] * s.out[1];
    const int64_t k = s.c * s.kernel[0] * s.kernel[1];
    const int64_t panels = (pixels + panel - 1) / panel;
    std::map<std::string, Attr> attrs;
    for (const auto& [key, value] : conv->attrs)
      if (key.rfind("fused_", 0) == 0) attrs.emplace(key, value);
    attrs["output_spatial"] = std::vector<int64_t>{s.out[0], s.out[1]};
    if (isPointwise(s)) {
      attrs["panel"] = int64_t{0};
    } else {
      if (s.n * panels * k * panel * 4 > kMaxPatchBytes) continue;
      auto im2col = std::make_unique<Node>();
      im2col->op = "nanoc.Im2Col";
      im2col->name = graph.uniqueNodeName(conv->name + ".im2col");
      im2col->inputs = {conv->inputs[0]};
      im2col->attrs = {{"kernel_shape", s.kernel},
                       {"pads", s.pads},
                       {"strides", s.strides},
                       {"dilations", s.dilations},
                       {"panel", panel}};
      Value* col = graph.newValue(conv->outputs[0]->name + "_patches");
      col->type = {DType::F32, {s.n, panels, k, panel}};
      col->typed = true;
      col->producer = im2col.get();
      im2col->outputs = {col};
      conv->inputs[0] = col;
      attrs["panel"] = panel;
      graph.nodes.insert(graph.nodes.begin() + static_cast<std::ptrdiff_t>(at), std::move(im2col));
      ++at;
    }
    conv->op = "nanoc.ConvGemm";
    conv->attrs = std::move(attrs);
    ++rewritten;
  }
  return rewritten;
}

}  // namespace nanoc
