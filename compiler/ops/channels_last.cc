// The channels-last forms: see channels_last.h.
#include "compiler/ops/channels_last.h"

#include <algorithm>
#include <utility>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/conv.h"
#include "compiler/ops/data_movement.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {
namespace {

constexpr const char* kForms[][2] = {{"Conv", "nanoc.ConvNHWC"},
                                     {"MaxPool", "nanoc.MaxPoolNHWC"},
                                     {"AveragePool", "nanoc.AveragePoolNHWC"},
                                     {"GlobalAveragePool", "nanoc.GlobalAveragePoolNHWC"},
                                     {"ConvTranspose", "nanoc.ConvTransposeNHWC"},
                                     {"Resize", "nanoc.ResizeNHWC"}};

// How the base op lays out input `index` of a channels-last node, from how
// the channels-last node holds it: X channels-first, Conv's W from
// kernel-major, anything else (Conv's bias) as it is.
std::vector<int64_t> inputToBase(const std::string& base, size_t index, size_t rank) {
  if (index == 0) return toChannelsFirst(rank);
  if (index == 1 && base == "Conv") return fromKernelMajor(rank);
  // Conv's fused residual (ops/epilogue.h) has the output's layout.
  if (index == 3 && base == "Conv") return toChannelsFirst(rank);
  std::vector<int64_t> same(rank);
  for (size_t i = 0; i < rank; ++i) same[i] = static_cast<int64_t>(i);
  return same;
}

// K = taps * C / group of the Conv a view stands for.
int64_t convK(const Node& conv) {
  ConvShape s = convShape(conv);
  return product(s.kernel, 0, s.rank()) * s.cPerGroup();
}

// P[s] of a split ConvNHWC (channels_last.h), summed directly in double:
// X [N, in..., C], W [K, M] (k = tap * C/G + ci), P [S, N, out..., M].
void partialConvReference(const Node& node, const std::vector<const void*>& in,
                          const std::vector<void*>& out) {
  std::unique_ptr<ChannelsFirstView> view = channelsFirstView(node);
  const ConvShape cs = convShape(view->node);
  const size_t rank = cs.rank();
  const int64_t taps = product(cs.kernel, 0, rank);
  const int64_t cpg = cs.cPerGroup(), mpg = cs.mPerGroup(), k_total = taps * cpg;
  const KSlices ks = kSlicesOf(node, k_total);
  const int64_t outs = product(cs.out, 0, rank);
  const int64_t in_plane = product(cs.in, 0, rank);
  const std::vector<int64_t> in_stride = convStridesOf(cs.in);
  const auto* x = static_cast<const float*>(in[0]);
  const auto* w = static_cast<const float*>(in[1]);
  auto* p = static_cast<float*>(out[0]);
  std::vector<int64_t> pixel(static_cast<size_t>(taps));  // per tap: -1 in the padding
  std::vector<int64_t> o(rank);
  for (int64_t img = 0; img < cs.n; ++img)
    for (int64_t pos = 0; pos < outs; ++pos) {
      for (int64_t r = pos, d = static_cast<int64_t>(rank); d-- > 0;) {
        o[static_cast<size_t>(d)] = r % cs.out[static_cast<size_t>(d)];
        r /= cs.out[static_cast<size_t>(d)];
      }
      for (int64_t tap = 0; tap < taps; ++tap) {
        int64_t at = 0, r = tap;
        bool inside = true;
        for (size_t d = rank; d-- > 0;) {
          const int64_t td = r % cs.kernel[d];
          r /= cs.kernel[d];
          const int64_t q = o[d] * cs.strides[d] - cs.pads[d] + td * cs.dilations[d];
          inside = inside && q >= 0 && q < cs.in[d];
          at += q * in_stride[d];
        }
        pixel[static_cast<size_t>(tap)] = inside ? img * in_plane + at : -1;
      }
      for (int64_t s = 0; s < ks.count; ++s)
        for (int64_t g = 0; g < cs.group; ++g)
          for (int64_t n = 0; n < mpg; ++n) {
            double acc = 0.0;
            for (int64_t k = s * ks.chunk; k < std::min(k_total, (s + 1) * ks.chunk); ++k) {
              const int64_t px = pixel[static_cast<size_t>(k / cpg)];
              if (px < 0) continue;
              acc += static_cast<double>(x[px * cs.c + g * cpg + k % cpg]) *
                     static_cast<double>(w[k * cs.m + g * mpg + n]);
            }
            p[((s * cs.n + img) * outs + pos) * cs.m + g * mpg + n] = static_cast<float>(acc);
          }
    }
}

OpSchema makeChannelsLastSchema(const std::string& base, const std::string& name) {
  OpSchema schema;
  schema.name = name;
  // Conv: X, W, B?, the fused residual? (channels-last, as the output);
  // ConvTranspose: X, W, B?; the pools and Resize: X.
  schema.min_inputs = base == "Conv" || base == "ConvTranspose" ? 2 : 1;
  schema.max_inputs = base == "Conv" ? 4 : base == "ConvTranspose" ? 3 : 1;
  // The base op's schema is looked up when used: the table is still being
  // built when this one is made.
  schema.infer = [base](const Node& node) {
    for (size_t i = 0; i < node.inputs.size() && i < 2; ++i)
      if (node.inputs[i] && node.inputs[i]->type.rank() < 3)
        failNode(node, "operand " + std::to_string(i) + " must have rank >= 3, got " +
                           inputType(node, i).str());
    if (splitKChunk(node) != 0 && base != "Conv")
      failNode(node, "only nanoc.ConvNHWC of the channels-last ops splits K");
    std::unique_ptr<ChannelsFirstView> view = channelsFirstView(node);
    std::vector<TensorType> types = findOp(base)->infer(view->node);
    for (TensorType& t : types) t.dims = permuteDims(t.dims, toChannelsLast(t.rank()));
    if (base == "Conv") addSplitKSlices(node, convK(view->node), types[0]);
    return types;
  };
  schema.reference = [base](const Node& node, const std::vector<const void*>& in,
                            const std::vector<void*>& out) {
    if (splitKChunk(node) != 0) return partialConvReference(node, in, out);
    std::unique_ptr<ChannelsFirstView> view = channelsFirstView(node);
    std::vector<std::vector<uint8_t>> in_bytes(in.size()), out_bytes(out.size());
    std::vector<const void*> base_in(in.size(), nullptr);
    std::vector<void*> base_out(out.size());
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i] || !node.inputs[i]) continue;
      const TensorType& t = node.inputs[i]->type;
      in_bytes[i] = permuteTensor(t, in[i], inputToBase(base, i, t.rank()));
      base_in[i] = in_bytes[i].data();
    }
    for (size_t o = 0; o < out.size(); ++o) {
      out_bytes[o].resize(node.outputs[o]->type.bytes());
      base_out[o] = out_bytes[o].data();
    }
    findOp(base)->reference(view->node, base_in, base_out);
    for (size_t o = 0; o < out.size(); ++o) {
      const TensorType& t = view->node.outputs[o]->type;
      std::vector<uint8_t> bytes = permuteTensor(t, out_bytes[o].data(), toChannelsLast(t.rank()));
      std::copy(bytes.begin(), bytes.end(), static_cast<uint8_t*>(out[o]));
    }
  };
  return schema;
}

}  // namespace

std::string channelsFirstOp(const std::string& op) {
  for (const auto& form : kForms)
    if (op == form[1]) return form[0];
  return "";
}

std::string channelsLastOp(const std::string& op) {
  for (const auto& form : kForms)
    if (op == form[0]) return form[1];
  return "";
}

std::vector<int64_t> toChannelsLast(size_t rank) {
  std::vector<int64_t> perm = {0};
  for (size_t i = 2; i < rank; ++i) perm.push_back(static_cast<int64_t>(i));
  perm.push_back(1);
  return perm;
}

std::vector<int64_t> toChannelsFirst(size_t rank) {
  std::vector<int64_t> perm = {0, static_cast<int64_t>(rank) - 1};
  for (size_t i = 1; i + 1 < rank; ++i) perm.push_back(static_cast<int64_t>(i));
  return perm;
}

std::vector<int64_t> toKernelMajor(size_t rank) {
  std::vector<int64_t> perm;
  for (size_t i = 2; i < rank; ++i) perm.push_back(static_cast<int64_t>(i));
  perm.push_back(1);
  perm.push_back(0);
  return perm;
}

std::vector<int64_t> fromKernelMajor(size_t rank) {
  std::vector<int64_t> perm = {static_cast<int64_t>(rank) - 1, static_cast<int64_t>(rank) - 2};
  for (size_t i = 0; i + 2 < rank; ++i) perm.push_back(static_cast<int64_t>(i));
  return perm;
}

std::vector<int64_t> permuteDims(const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& perm) {
  std::vector<int64_t> out;
  for (int64_t p : perm) out.push_back(dims[static_cast<size_t>(p)]);
  return out;
}

std::vector<uint8_t> permuteTensor(const TensorType& type, const void* data,
                                   const std::vector<int64_t>& perm) {
  std::vector<uint8_t> out(type.bytes());
  if (out.empty()) return out;
  std::vector<int64_t> in_strides = stridesOf(type.dims), strides;
  for (int64_t p : perm) strides.push_back(in_strides[static_cast<size_t>(p)]);
  copyStrided(data, out.data(), dtypeSize(type.dtype), permuteDims(type.dims, perm), 0, strides);
  return out;
}

std::unique_ptr<ChannelsFirstView> channelsFirstView(const Node& node) {
  const std::string base = channelsFirstOp(node.op);
  if (base.empty()) failNode(node, "not a channels-last op");
  auto view = std::make_unique<ChannelsFirstView>();
  view->node.op = base;
  view->node.name = node.name;
  view->node.attrs = node.attrs;
  const bool split = view->node.attrs.erase(kSplitKChunkAttribute) != 0;
  auto value = [&](const Value* v, const std::vector<int64_t>& perm) {
    auto copy = std::make_unique<Value>();
    copy->name = v->name;
    copy->type = {v->type.dtype, permuteDims(v->type.dims, perm)};
    copy->typed = v->typed;
    view->values.push_back(std::move(copy));
    return view->values.back().get();
  };
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Value* in = node.inputs[i];
    view->node.inputs.push_back(in ? value(in, inputToBase(base, i, in->type.rank())) : nullptr);
  }
  for (const Value* out : node.outputs) {
    if (split && out->typed) {
      // The whole product's type: P's without the leading S.
      Value whole = *out;
      whole.type.dims.erase(whole.type.dims.begin());
      view->node.outputs.push_back(value(&whole, toChannelsFirst(whole.type.rank())));
      continue;
    }
    view->node.outputs.push_back(
        value(out, out->typed ? toChannelsFirst(out->type.rank()) : std::vector<int64_t>{}));
  }
  return view;
}

std::vector<OpSchema> channelsLastSchemas() {
  std::vector<OpSchema> schemas;
  for (const auto& form : kForms) schemas.push_back(makeChannelsLastSchema(form[0], form[1]));
  return schemas;
}

}  // namespace nanoc
