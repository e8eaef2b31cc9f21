#include "compiler/passes/nchwc_layout.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ops/conv.h"
#include "compiler/ops/nchwc.h"
#include "compiler/ops/schema_checks.h"
#include "compiler/ops/weight_rows.h"
#include "compiler/ops/winograd.h"
#include "compiler/passes/conv_to_gemm.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc {
namespace {

// Dense: a Conv of one group reading X blocked (the direct form's kernel).
enum class Kind {
  Plain,
  Pointwise,
  Depthwise,
  Direct,
  Dense,
  Winograd,
  Pool,
  MaxPool,
  Concat,
  Elementwise
};

constexpr int64_t kMinConvs = 4;
constexpr int64_t kMaxConversions = 2;
constexpr int64_t kDirectMaxChannels = 4;
// Output maps of at most this many pixels (7 x 7) run the direct loop rather
// than Winograd: F(2,3)'s 16 tiles cover 64 pixels and its U streams 16/9
// of the weights from memory, where the direct loop prefetches a block's
// weights during the block before (resnet18's 512 -> 512 3x3 layers on
// 7 x 7: 0.77-0.79x the time on one thread, 0.66-0.72x on two; resnet50's
// 0.83-0.87x; AVX2 0.97-1.03x).
constexpr int64_t kWinogradMinPixels = 49;
// Winograd's U (the transformed weights, 4x the 3x3 weights' bytes for
// F(4x4)) is read once per run and each of its elements feeds one
// multiply-add per tile: 4 / tiles bytes a multiply-add, whatever the
// channels. On a map of at most kStreamBoundTiles tiles (F(4x4) on 14 x 14)
// a U that stays in cache between runs is read fast enough, but one that
// does not (over kCachedWinogradBytes) streams from memory slower than the
// blocked direct loop, which reads 1/4 of the bytes and prefetches each
// block's weights during the block before, computes its 2.25x the
// multiply-adds, where the targets run them at full rate on 16 lanes
// (NchwcOptions::full_rate_fma). On an AVX-512 Xeon VM, one thread:
// resnet18's and resnet50's 256 -> 256 layers on 14 x 14 (9 MiB of U) took
// 0.82-0.88x the time direct (the models 0.95-0.98x and 0.94-0.97x; two
// threads 0.97-1.00x and 0.96x), while squeezenet1_1's 13 x 13 layers
// (F(2x2), 49 tiles, 1 MiB of U) took 1.24-1.40x, and the same resnet18
// layers compiled for x86-64-v3 (8 lanes: half the multiply-adds a cycle,
// as AVX-512 on Zen 4) 1.40-1.43x. So Winograd stays wherever the rate is
// half or unknown: 8 lanes, Zen 4, a portable x86-64-v4 artifact.
constexpr int64_t kStreamBoundTiles = 16;
constexpr int64_t kCachedWinogradBytes = 4 << 20;

bool isConv(Kind k) {
  return k == Kind::Pointwise || k == Kind::Depthwise || k == Kind::Direct || k == Kind::Dense ||
         k == Kind::Winograd;
}

// conv_to_gemm's Winograd window and tile rule: such a Conv runs blocked by
// Winograd (F(4x4, 3x3) does 2.25x fewer multiply-adds than the blocked
// direct loop) where its output channels fill a panel.
bool winogradConv(const ConvShape& s) {
  for (size_t i = 0; i < 2; ++i)
    if (s.kernel[i] != 3 || s.strides[i] != 1 || s.dilations[i] != 1) return false;
  for (int64_t p : s.pads)
    if (p < 0 || p > 2) return false;
  return s.group == 1 && winogradTile(s.c, s.m, s.out[0], s.out[1]) > 0;
}

// Whether a Winograd Conv's U, in panels of `panel` output channels as
// convertConv lays it out, streams from memory on too few tiles to outrun
// the direct loop (kStreamBoundTiles).
bool winogradStreamBound(const ConvShape& s, int64_t panel) {
  const int64_t t = winogradTile(s.c, s.m, s.out[0], s.out[1]);
  if (t <= 0) return false;
  const int64_t tiles = (s.out[0] + t - 1) / t * ((s.out[1] + t - 1) / t);
  const std::vector<int64_t> u = winogradWeightDims(s.m, s.c, t, panel);
  return tiles <= kStreamBoundTiles && product(u, 0, u.size()) * 4 > kCachedWinogradBytes;
}

bool transparentUnary(const std::string& op) {
  return op == "Relu" || op == "Clip" || op == "Sigmoid" || op == "HardSigmoid" ||
         op == "HardSwish" || op == "LeakyRelu" || op == "Tanh";
}

bool transparentBinary(const std::string& op) { return op == "Add" || op == "Sub" || op == "Mul"; }

// dims right-aligned to rank 4 ([C, 1, 1] -> [1, C, 1, 1]); empty above rank 4.
std::vector<int64_t> asRank4(const std::vector<int64_t>& dims) {
  if (dims.size() > 4) return {};
  std::vector<int64_t> out(4 - dims.size(), 1);
  out.insert(out.end(), dims.begin(), dims.end());
  return out;
}

bool isScalar(const Value* v) { return v->type.numel() == 1 && v->type.rank() <= 4; }

bool perChannel(const Value* v, int64_t channels) {
  std::vector<int64_t> d = asRank4(v->type.dims);
  return !d.empty() && d[0] == 1 && d[1] == channels && d[2] == 1 && d[3] == 1;
}

int64_t pixels(const Value* v) {
  return v->type.rank() == 4 ? v->type.dims[2] * v->type.dims[3] : 1;
}

class NchwcLayout {
 public:
  NchwcLayout(Graph& graph, int64_t block, int64_t panel, const NchwcOptions& options)
      : graph_(graph), b_(block), panel_(panel), options_(options) {}

  int run() {
    if (b_ < 2 || panel_ < b_ || panel_ % b_ != 0) return 0;
    int64_t convs = 0, converted = 0;
    for (auto& node : graph_.nodes) {
      Kind k = classify(*node);
      kind_[node.get()] = k;
      if (node->op == "Conv") ++convs;
      if (isConv(k)) ++converted;
      if (k != Kind::Plain)
        for (Value* out : node->outputs) blocked_.insert(out);
    }
    if (!options_.always && (converted < kMinConvs || 3 * converted < 2 * convs)) return 0;
    if (converted == 0) return 0;
    // Conversions: Packs before blocked ops of plain inputs, Unpacks after
    // blocked values read otherwise.
    std::set<const Value*> packs, unpacks;
    for (auto& node : graph_.nodes) {
      Kind k = kind_[node.get()];
      for (Value* in : node->inputs) {
        if (!in) continue;
        if ((k == Kind::Pointwise || k == Kind::Depthwise || k == Kind::Dense ||
             k == Kind::Winograd) &&
            in == node->inputs[0] && !blocked_.count(in))
          packs.insert(in);
        if (k == Kind::Plain && blocked_.count(in)) unpacks.insert(in);
      }
    }
    for (Value* out : graph_.outputs)
      if (blocked_.count(out)) unpacks.insert(out);
    int64_t large = 0;
    for (const Value* v : packs) large += pixels(v) > 1;
    for (const Value* v : unpacks) large += pixels(v) > 1;
    if (!options_.always && large > kMaxConversions) return 0;
    rewrite(packs, unpacks);
    return static_cast<int>(converted);
  }

 private:
  Kind classify(const Node& node) {
    const std::string& op = node.op;
    if (op == "Conv") return classifyConv(node);
    auto f32Rank4 = [](const Value* v) {
      return v && v->type.dtype == DType::F32 && v->type.rank() == 4;
    };
    if (op == "GlobalAveragePool")
      return f32Rank4(node.inputs[0]) && blocked_.count(node.inputs[0]) ? Kind::Pool : Kind::Plain;
    if (op == "MaxPool")
      return f32Rank4(node.inputs[0]) && blocked_.count(node.inputs[0]) &&
                     node.outputs.size() == 1 && node.ints("kernel_shape").size() == 2
                 ? Kind::MaxPool
                 : Kind::Plain;
    if (op == "Concat") {
      // Along the channels, every input blocked, each but the last whole
      // blocks: the blocked tensors concatenate along their block axis.
      if (node.i("axis") != 1 || node.outputs.size() != 1 || !f32Rank4(node.outputs[0]))
        return Kind::Plain;
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        const Value* in = node.inputs[i];
        if (!in || !blocked_.count(in) || !f32Rank4(in)) return Kind::Plain;
        if (i + 1 < node.inputs.size() && in->type.dims[1] % b_ != 0) return Kind::Plain;
      }
      return Kind::Concat;
    }
    if (node.outputs.size() != 1 || !f32Rank4(node.outputs[0])) return Kind::Plain;
    const std::vector<int64_t>& out = node.outputs[0]->type.dims;
    if (transparentUnary(op)) {
      if (!blocked_.count(node.inputs[0]) || node.inputs[0]->type != node.outputs[0]->type)
        return Kind::Plain;
      for (size_t i = 1; i < node.inputs.size(); ++i)
        if (node.inputs[i] && !(node.inputs[i]->isConstant() && isScalar(node.inputs[i])))
          return Kind::Plain;
      return Kind::Elementwise;
    }
    if (transparentBinary(op) && node.inputs.size() == 2) {
      bool any_blocked = false;
      for (const Value* in : node.inputs) {
        if (!in || in->type.dtype != DType::F32) return Kind::Plain;
        if (blocked_.count(in)) {
          const std::vector<int64_t>& d = in->type.dims;
          if (d != out &&
              !(d.size() == 4 && d[0] == out[0] && d[1] == out[1] && d[2] == 1 && d[3] == 1))
            return Kind::Plain;
          any_blocked = true;
        } else if (!in->isConstant() || !(isScalar(in) || perChannel(in, out[1]))) {
          return Kind::Plain;
        }
      }
      return any_blocked ? Kind::Elementwise : Kind::Plain;
    }
    return Kind::Plain;
  }

  Kind classifyConv(const Node& node) {
    if (node.inputs.size() < 2 || !node.inputs[1] || !node.inputs[1]->isConstant())
      return Kind::Plain;
    if (node.inputs.size() > 2 && node.inputs[2] && !node.inputs[2]->isConstant())
      return Kind::Plain;
    for (const Value* in : node.inputs)
      if (in && in->type.dtype != DType::F32) return Kind::Plain;
    for (const auto& [key, value] : node.attrs)
      if (key.rfind("fused_", 0) == 0) return Kind::Plain;
    ConvShape s = convShape(node);
    conv_shapes_[&node] = s;
    if (s.rank() != 2 || s.n < 1 || s.c < 1 || s.m < 1) return Kind::Plain;
    if (s.dilations[0] != 1 || s.dilations[1] != 1) return Kind::Plain;
    const bool in_blocked = blocked_.count(node.inputs[0]) != 0;
    // A strided 1x1 too: the pixels it reads are sliced out of the blocked
    // X first (rewrite).
    if (s.group == 1 && s.kernel[0] == 1 && s.kernel[1] == 1 && s.pads[0] == 0 && s.pads[1] == 0 &&
        s.pads[2] == 0 && s.pads[3] == 0)
      return Kind::Pointwise;
    if (s.group == s.c && s.m == s.c) return Kind::Depthwise;
    if (s.group != 1) return Kind::Plain;
    if (s.c <= kDirectMaxChannels && !in_blocked) return Kind::Direct;
    // A dense Conv runs by Winograd on the blocked X (nanoc.Winograd with
    // `block`) where Winograd takes it, its output channels fill a panel,
    // its map is larger than kWinogradMinPixels and, on targets of
    // full-rate multiply-adds, its U does not stream from memory on a few
    // tiles (winogradStreamBound); else the blocked direct loop (a stride-2
    // 3x3, a padded 1x1, a 7x7 kernel, a 7 x 7 map, 256 -> 256 on 14 x 14
    // for an AVX-512 Xeon).
    if (options_.winograd && winogradConv(s) && s.m >= panel_ &&
        s.out[0] * s.out[1] > kWinogradMinPixels &&
        !(options_.full_rate_fma && winogradStreamBound(s, panel_)))
      return Kind::Winograd;
    return Kind::Dense;
  }

  Value* constant(const std::string& hint, std::vector<int64_t> dims, const std::vector<float>& v) {
    return graph_.addConstant(hint, {DType::F32, std::move(dims)}, f32Bytes(v));
  }

  // The Conv as a nanoc.ConvNCHWc of `form`, its weights reordered.
  void convertConv(Node& node, Kind k) {
    const ConvShape& s = conv_shapes_.at(&node);
    const int64_t b = b_, ocb = channelBlocks(s.m, b), ocp = ocb * b;
    const int64_t kh = s.kernel[0], kw = s.kernel[1];
    const float* w = node.inputs[1]->as<float>();
    std::vector<float> packed;
    std::vector<int64_t> dims;
    std::string form;
    std::map<std::string, Attr> attrs;
    if (k == Kind::Winograd) {
      // U [t*t, ceil(M / panel), C, panel]: the products' B in panels of
      // output channels, as conv_to_gemm's transposed Winograd has it.
      const int64_t tile = winogradTile(s.c, s.m, s.out[0], s.out[1]);
      dims = winogradWeightDims(s.m, s.c, tile, panel_);
      packed = winogradWeights(w, s.m, s.c, tile, panel_);
      attrs = {{"tile", tile},
               {"tile_rows", panel_},
               {"panel", panel_},
               {"output_spatial", std::vector<int64_t>{s.out[0], s.out[1]}}};
    } else if (k == Kind::Pointwise) {
      form = "pointwise";
      const int64_t S = panel_;
      dims = {channelBlocks(ocp, S), s.c, S};
      packed.assign(dims[0] * s.c * S, 0.0f);
      for (int64_t m = 0; m < s.m; ++m)
        for (int64_t c = 0; c < s.c; ++c) packed[((m / S) * s.c + c) * S + m % S] = w[m * s.c + c];
    } else if (k == Kind::Depthwise) {
      form = "depthwise";
      dims = {ocb, kh, kw, b};
      packed.assign(ocb * kh * kw * b, 0.0f);
      for (int64_t m = 0; m < s.m; ++m)
        for (int64_t i = 0; i < kh * kw; ++i)
          packed[((m / b) * kh * kw + i) * b + m % b] = w[m * kh * kw + i];
    } else {  // Direct and Dense: X plain or blocked, W the same
      form = "direct";
      dims = {ocb, s.c, kh, kw, b};
      packed.assign(ocb * s.c * kh * kw * b, 0.0f);
      for (int64_t m = 0; m < s.m; ++m)
        for (int64_t i = 0; i < s.c * kh * kw; ++i)
          packed[((m / b) * s.c * kh * kw + i) * b + m % b] = w[m * s.c * kh * kw + i];
    }
    std::vector<Value*> inputs = {node.inputs[0],
                                  constant(node.inputs[1]->name + "_nchwc", dims, packed)};
    if (node.inputs.size() > 2 && node.inputs[2]) {
      std::vector<float> bias(ocp, 0.0f);
      const float* src = node.inputs[2]->as<float>();
      std::copy(src, src + s.m, bias.begin());
      inputs.push_back(constant(node.inputs[2]->name + "_nchwc", {ocp}, bias));
    }
    if (k == Kind::Winograd) {
      attrs["block"] = b;
      attrs["out_channels"] = s.m;
      attrs["pads"] = s.pads;
      node.op = "nanoc.Winograd";
      node.attrs = std::move(attrs);
      node.inputs = std::move(inputs);
      return;
    }
    attrs["form"] = form;
    attrs["block"] = b;
    attrs["out_channels"] = s.m;
    attrs["kernel_shape"] = s.kernel;
    attrs["strides"] = s.strides;
    attrs["pads"] = s.pads;
    if (k == Kind::Pointwise) attrs["panel"] = panel_;
    node.op = "nanoc.ConvNCHWc";
    node.attrs = std::move(attrs);
    node.inputs = std::move(inputs);
  }

  // A node of one input and one output, `out` produced by it, for the
  // rewrite's order.
  std::unique_ptr<Node> makeNode(const std::string& op, const std::string& hint, Value* in,
                                 Value* out, std::map<std::string, Attr> attrs) {
    auto n = std::make_unique<Node>();
    n->op = op;
    n->name = graph_.uniqueNodeName(hint);
    n->inputs = {in};
    n->outputs = {out};
    n->attrs = std::move(attrs);
    out->producer = n.get();
    return n;
  }

  // A strided 1x1 Conv reads every sh-th row and sw-th column of X: those
  // pixels, sliced out of the blocked X by a Slice (steps sh and sw, each
  // pixel's b lanes one run), become its X and its strides 1, so that it
  // runs as the pointwise product on contiguous pixels. Against the direct
  // loop reading X in place, resnet50's three downsamples took 0.7-0.8x the
  // time, their slices included.
  void subsampleStrided(Node& node, std::vector<std::unique_ptr<Node>>& order) {
    const ConvShape& s = conv_shapes_.at(&node);
    if (s.strides[0] == 1 && s.strides[1] == 1) return;
    Value* x = node.inputs[0];  // [N, Cb, H, W, b]
    Value* sliced = graph_.newValue(x->name + "_subsampled");
    order.push_back(makeNode(
        "Slice", node.name + "_subsample", x, sliced,
        {{"starts", std::vector<int64_t>{0, 0, 0, 0, 0}},
         {"ends",
          std::vector<int64_t>{s.n, channelBlocks(s.c, b_), (s.out[0] - 1) * s.strides[0] + 1,
                               (s.out[1] - 1) * s.strides[1] + 1, b_}},
         {"steps", std::vector<int64_t>{1, 1, s.strides[0], s.strides[1], 1}}}));
    node.inputs[0] = sliced;
    conv_shapes_.at(&node).strides = {1, 1};
  }

  void rewrite(const std::set<const Value*>& packs, const std::set<const Value*>& unpacks) {
    std::map<const Value*, Value*> blocked_of;  // original value -> its blocked copy
    std::vector<std::unique_ptr<Node>> order;
    std::vector<std::unique_ptr<Node>> old = std::move(graph_.nodes);
    for (std::unique_ptr<Node>& node : old) {
      const Kind k = kind_[node.get()];
      if (k == Kind::Plain) {
        order.push_back(std::move(node));
        continue;
      }
      // Blocked inputs read the blocked copies; a plain one of a Conv's X is
      // packed first (once).
      for (size_t i = 0; i < node->inputs.size(); ++i) {
        Value* in = node->inputs[i];
        if (!in) continue;
        auto it = blocked_of.find(in);
        if (it != blocked_of.end()) {
          node->inputs[i] = it->second;
          continue;
        }
        if (i == 0 && packs.count(in) && k != Kind::Direct) {
          Value* packed = graph_.newValue(in->name + "_nchwc");
          order.push_back(makeNode("nanoc.Pack", in->name + "_pack", in, packed, {{"block", b_}}));
          blocked_of[in] = packed;
          node->inputs[i] = packed;
          continue;
        }
        if (k == Kind::Elementwise && in->isConstant() && !isScalar(in)) {
          // A per-channel constant: [1, Cb, 1, 1, b], 0 past C.
          const int64_t c = node->outputs[0]->type.dims[1], cb = channelBlocks(c, b_);
          std::vector<float> v(cb * b_, 0.0f);
          std::copy(in->as<float>(), in->as<float>() + c, v.begin());
          node->inputs[i] = constant(in->name + "_nchwc", {1, cb, 1, 1, b_}, v);
        }
      }
      if (k == Kind::Pointwise) subsampleStrided(*node, order);
      if (isConv(k)) convertConv(*node, k);
      if (k == Kind::Pool) node->op = "nanoc.GlobalAveragePoolNCHWc";
      if (k == Kind::MaxPool) {
        // The MaxPool's own output extents (ceil_mode's included).
        const std::vector<int64_t>& out_dims = node->outputs[0]->type.dims;
        std::map<std::string, Attr> attrs;
        attrs["kernel_shape"] = node->ints("kernel_shape");
        attrs["strides"] = node->ints("strides");
        attrs["pads"] = node->ints("pads");
        attrs["dilations"] = node->ints("dilations");
        attrs["output_spatial"] = std::vector<int64_t>{out_dims[2], out_dims[3]};
        node->op = "nanoc.MaxPoolNCHWc";
        node->attrs = std::move(attrs);
      }
      Value* out = node->outputs[0];
      Value* blocked = graph_.newValue(out->name + "_nchwc");
      blocked->producer = node.get();
      node->outputs[0] = blocked;
      blocked_of[out] = blocked;
      const int64_t channels = out->type.dims[1];
      const std::string name = node->name;
      order.push_back(std::move(node));
      if (unpacks.count(out))
        order.push_back(
            makeNode("nanoc.Unpack", name + "_unpack", blocked, out, {{"channels", channels}}));
      else
        out->producer = nullptr;
    }
    graph_.nodes = std::move(order);
    graph_.removeUnusedValues();
    inferShapes(graph_);
  }

  Graph& graph_;
  const int64_t b_, panel_;
  const NchwcOptions options_;
  std::map<const Node*, Kind> kind_;
  std::map<const Node*, ConvShape> conv_shapes_;  // read before the rewrite retypes X
  std::set<const Value*> blocked_;                // results of ops that run blocked
};

}  // namespace

int convertToNchwc(Graph& graph, int64_t block, int64_t panel, const NchwcOptions& options) {
  return NchwcLayout(graph, block, panel, options).run();
}

}  // namespace nanoc
