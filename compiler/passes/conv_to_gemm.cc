#include "compiler/passes/conv_to_gemm.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/error.h"
#include "compiler/ops/conv.h"
#include "compiler/ops/weight_rows.h"
#include "compiler/ops/winograd.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc {
namespace {

// Convs whose panel of patches (K x panel floats) is larger keep the direct
// loop: a worker's scratch holds at least one.
constexpr int64_t kMaxPanelBytes = int64_t{64} << 20;

// Pointwise Convs on maps of at least this many pixels pack X's columns
// into panels per task (as larger windows do) instead of reading them in
// place: in place, a tile's K loop reads one line from each of K rows
// (56 x 56: 12 KiB apart, a page each), which the TLB does not hold.
// resnet50's 56 x 56 layers on an AVX-512 Xeon, one thread, in the model
// (us): 256 -> 64 1370 -> 995, 64 -> 256 1041 -> 843; 28 x 28 maps
// measured no faster packed.
constexpr int64_t kPackPointwisePixels = 2048;
// Pointwise Convs on maps of fewer pixels than this (14 x 14, 13 x 13, 7 x
// 7) take the transposed product (pixel_rows: the pixels as rows, output
// channels as vector lanes). resnet50 on an AVX-512 Xeon, one thread, in
// the model (us): 14 x 14 1024 -> 256 about 730 -> 680, 256 -> 1024 760 ->
// 715; 7 x 7 2048 -> 512 865 -> 742, 512 -> 2048 960 -> 820; squeezenet1_1's
// 13 x 13 classifier 1049 -> 921. 28 x 28 ran slower (640 -> 745).
constexpr int64_t kPointwisePixelRows = 256;

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

// The transposed product (ops/conv_gemm.h's pixel_rows) for Convs that would
// pack patches (strided or larger windows) on maps of fewer than 64 pixels
// that leave 16-lane vectors part empty, with at least a panel of output
// channels to fill the lanes instead. In the model, one thread, before ->
// after (us): resnet18's 3x3 stride-2 256 -> 512 on 7 x 7 1330 -> 1077 + 70
// (its Im2Col), its 1x1 stride-2 downsample 218 -> 155; resnet50's 3x3
// stride-2 512 layer 2690 -> 2163 + 155, its 1024 -> 2048 downsample 2812 ->
// 2158. Unit-stride 1x1 layers keep Y's rows as channels: on 7 x 7 they ran
// as fast either way (930 and 947 us alone for 512 -> 2048). Windows larger
// than 1x1 also on maps of fewer than 256 pixels (14 x 14), their Im2Col
// included, on an AVX-512 Xeon (two copies of each build, interleaved):
// resnet18's 3x3 stride-2 128 -> 256 758 -> 624 + 60 us, resnet50's 256 ->
// 256 1520 -> 1309 + 134; strided 1x1 windows there ran 1.0-1.1x slower.
bool pixelRows(const ConvShape& s, int64_t panel) {
  const int64_t P = s.out[0] * s.out[1];
  const bool window_1x1 = s.kernel[0] == 1 && s.kernel[1] == 1;
  return P > 0 && P < (window_1x1 ? 64 : 256) && P % 16 != 0 && s.m >= panel;
}

// Winograd's products transposed (ops/winograd.h's tile_rows: the tiles as
// rows, output channels as vector lanes) where the output channels fill a
// panel: a block of 16 tiles (a 7 x 7 map's F(2x2), a 14 x 14 map's F(4x4),
// and the blocks of larger maps) no longer leaves half of each 32-column
// register tile empty, and the weights stream as vectors. In resnet18 on an
// AVX-512 Xeon, one thread (us): 7 x 7 2500 -> 1530, 14 x 14 1600 -> 1100,
// 28 x 28 915 -> 690, 56 x 56 770 -> 708.
int64_t tileRows(int64_t M, int64_t panel) { return M >= panel ? panel : 0; }

bool winogradWindow(const ConvShape& s) {
  for (size_t i = 0; i < 2; ++i)
    if (s.kernel[i] != 3 || s.strides[i] != 1 || s.dilations[i] != 1) return false;
  for (int64_t p : s.pads)
    if (p < 0 || p > 2) return false;
  return true;
}

}  // namespace

int64_t winogradTile(int64_t C, int64_t M, int64_t OH, int64_t OW) {
  constexpr int64_t kMinChannels = 16, kMinTiles = 16;
  if (C < kMinChannels || M < kMinChannels) return 0;
  // F(4x4) where its tiles are many and mostly inside the output (a 13 x 13
  // map's 16 tiles cover 256 outputs for 169: F(2x2)'s 49 tiles cover 196,
  // 1.25x faster in squeezenet1_1; 14 x 14's 196 of 256 stay F(4x4), 1.3x
  // faster than F(2x2) in resnet18).
  const int64_t tiles4 = (OH + 3) / 4 * ((OW + 3) / 4);
  if (tiles4 >= kMinTiles && 4 * OH * OW >= 3 * 16 * tiles4) return 4;
  if ((OH + 1) / 2 * ((OW + 1) / 2) >= kMinTiles) return 2;
  return 0;
}

int convToGemm(Graph& graph, int64_t panel, bool winograd, int64_t row_group) {
  if (panel <= 0) return 0;
  if (row_group < 1 || kWeightRowGroup % row_group != 0)
    throw CompileError("internal error: convToGemm's row group " + std::to_string(row_group) +
                       " does not divide " + std::to_string(kWeightRowGroup));
  int rewritten = 0;
  // Each weight constant's transformed copy, made once for every Conv that
  // shares it (keyed by the weights and the form: 0 grouped rows, -panel
  // W^T's panels, else the Winograd tile, whose U layout the weights' own M
  // decides).
  std::map<std::pair<const Value*, int64_t>, Value*> transformed_weights;
  auto weightsOnce = [&](const Value* w, int64_t form, const char* suffix,
                         std::vector<int64_t> dims,
                         const std::function<std::vector<float>()>& transform) {
    Value*& copy = transformed_weights[{w, form}];
    if (!copy)
      copy =
          graph.addConstant(w->name + suffix, {DType::F32, std::move(dims)}, f32Bytes(transform()));
    return copy;
  };
  for (size_t at = 0; at < graph.nodes.size(); ++at) {
    Node* conv = graph.nodes[at].get();
    if (conv->op != "Conv") continue;
    ConvShape s = convShape(*conv);
    if (!rewritable(*conv, s)) continue;
    const int64_t k = s.c * s.kernel[0] * s.kernel[1];
    std::map<std::string, Attr> attrs;
    for (const auto& [key, value] : conv->attrs)
      if (key.rfind("fused_", 0) == 0) attrs.emplace(key, value);
    attrs["output_spatial"] = std::vector<int64_t>{s.out[0], s.out[1]};
    const int64_t tile =
        winograd && winogradWindow(s) ? winogradTile(s.c, s.m, s.out[0], s.out[1]) : 0;
    constexpr int64_t kLimit = int64_t{1} << 31;
    if (tile > 0 && s.n * s.c * product(conv->inputs[0]->type.dims, 2, 4) < kLimit &&
        s.n * s.m * s.out[0] * s.out[1] < kLimit) {
      const Value* w = conv->inputs[1];
      const int64_t tile_rows = tileRows(s.m, panel);
      const int64_t g = tile_rows > 0 ? tile_rows : kWeightRowGroup;
      conv->inputs[1] =
          weightsOnce(w, tile, "_winograd", winogradWeightDims(s.m, s.c, tile, g),
                      [&] { return winogradWeights(w->as<float>(), s.m, s.c, tile, g); });
      if (tile_rows > 0) attrs["tile_rows"] = tile_rows;
      attrs["tile"] = tile;
      attrs["out_channels"] = s.m;
      attrs["pads"] = s.pads;
      attrs["panel"] = panel;
      conv->op = "nanoc.Winograd";
      conv->attrs = std::move(attrs);
      ++rewritten;
      continue;
    }
    // W in groups of row_group rows for 1x1 windows: the micro-kernel reads
    // a tile's weights as one stream (13-15% faster on 1x1 layers of 7 x 7 and
    // 14 x 14 maps, whose few pixels reuse W little; resnet18's stride-2
    // downsample to 14 x 14, whose weights come cold from memory in the
    // model, went from 151 to 136 us). Larger windows keep W's rows (a 3x3
    // stride-2 512-channel layer ran 1.17x slower grouped).
    // W in groups of g rows: row_group for the micro-kernel's A (a tile's
    // rows dense in each line: 4% faster resnet50 on an AVX-512 Xeon, one
    // thread, with groups of 12 rather than 24), `panel` for the transposed
    // product's B (W^T's packed panels).
    auto groupRows = [&](int64_t g) {
      const Value* w = conv->inputs[1];
      const bool rows = g == row_group;
      conv->inputs[1] =
          weightsOnce(w, rows ? 0 : -g, rows ? "_rows" : "_panels", {weightRowGroups(s.m, g), k, g},
                      [&] { return groupWeightRows(w->as<float>(), s.m, k, g); });
      attrs["out_channels"] = s.m;
    };
    const std::map<std::string, Attr> window = {{"kernel_shape", s.kernel},
                                                {"pads", s.pads},
                                                {"strides", s.strides},
                                                {"dilations", s.dilations}};
    const bool kernel_1x1 = s.kernel[0] == 1 && s.kernel[1] == 1;
    const bool window_1x1 =
        kernel_1x1 && std::all_of(s.pads.begin(), s.pads.end(), [](int64_t v) { return v == 0; });
    // An Im2Col's patches for the transposed product, in panels of
    // row_group pixels (whole tiles of rows on every target's ISA).
    const int64_t col_panels = (s.out[0] * s.out[1] + row_group - 1) / row_group;
    if (!isPointwise(s) && pixelRows(s, panel) &&
        (window_1x1 || s.n * col_panels * k * row_group * 4 <= kMaxPanelBytes)) {
      groupRows(panel);
      attrs["pixel_rows"] = panel;
      attrs["panel"] = row_group;
      if (window_1x1) {
        // Strided: the kernel reads the pixels from X in place.
        attrs.insert(window.begin(), window.end());
      } else {
        // The patches in the arena: an Im2Col before the product.
        Node* im2col = graph.addNode("nanoc.Im2Col", conv->name + "_im2col", {conv->inputs[0]}, 1);
        im2col->attrs = window;
        im2col->attrs["panel"] = row_group;
        inferNode(*im2col);
        conv->inputs[0] = im2col->outputs[0];
        std::unique_ptr<Node> moved = std::move(graph.nodes.back());
        graph.nodes.pop_back();
        graph.nodes.insert(graph.nodes.begin() + static_cast<std::ptrdiff_t>(at), std::move(moved));
        ++at;
      }
    } else if (isPointwise(s) && s.out[0] * s.out[1] < kPointwisePixelRows && s.m >= panel) {
      // The transposed product, X read in place: A's row tile is a line of
      // a channel's row, W^T's panels stream as vectors.
      groupRows(panel);
      attrs["pixel_rows"] = panel;
      attrs["panel"] = int64_t{0};
    } else if (isPointwise(s) && s.out[0] * s.out[1] < kPackPointwisePixels) {
      groupRows(row_group);
      attrs["panel"] = int64_t{0};
    } else {
      // The kernel packs Im2Col panels per task into its worker's scratch:
      // at least K x panel floats.
      if (k * panel * 4 > kMaxPanelBytes) continue;
      if (kernel_1x1) groupRows(row_group);
      attrs.insert(window.begin(), window.end());
      attrs["panel"] = panel;
    }
    conv->op = "nanoc.ConvGemm";
    conv->attrs = std::move(attrs);
    ++rewritten;
  }
  // The weights the rewritten nodes read transformed instead.
  if (rewritten) graph.removeUnusedValues();
  return rewritten;
}

}  // namespace nanoc
