// The channels-last forms: see channels_last.h.
#include "compiler/ops/channels_last.h"

#include <utility>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/data_movement.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {
namespace {

constexpr const char* kForms[][2] = {{"Conv", "nanoc.ConvNHWC"},
                                     {"MaxPool", "nanoc.MaxPoolNHWC"},
                                     {"AveragePool", "nanoc.AveragePoolNHWC"},
                                     {"GlobalAveragePool", "nanoc.GlobalAveragePoolNHWC"}};

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

OpSchema makeChannelsLastSchema(const std::string& base, const std::string& name) {
  OpSchema schema;
  schema.name = name;
  // Conv: X, W, B?, the fused residual? (channels-last, as the output); the
  // pools: X.
  schema.min_inputs = base == "Conv" ? 2 : 1;
  schema.max_inputs = base == "Conv" ? 4 : 1;
  // The base op's schema is looked up when used: the table is still being
  // built when this one is made.
  schema.infer = [base](const Node& node) {
    for (size_t i = 0; i < node.inputs.size() && i < 2; ++i)
      if (node.inputs[i] && node.inputs[i]->type.rank() < 3)
        failNode(node, "operand " + std::to_string(i) + " must have rank >= 3, got " +
                           inputType(node, i).str());
    std::unique_ptr<ChannelsFirstView> view = channelsFirstView(node);
    std::vector<TensorType> types = findOp(base)->infer(view->node);
    for (TensorType& t : types) t.dims = permuteDims(t.dims, toChannelsLast(t.rank()));
    return types;
  };
  schema.reference = [base](const Node& node, const std::vector<const void*>& in,
                            const std::vector<void*>& out) {
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
