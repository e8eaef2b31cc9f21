// ONNX -> IR mappings of small operators composed onto existing IR ops:
// SwiGLU (Swish then Mul), BitCast (the IR's BitCast), CenterCropPad (one Pad:
// negative pads crop), the window functions and MelWeightMatrix (constants),
// Compress (a Gather of constant indices), MaxUnpool (a ScatterElements over
// zeros), TensorScatter (one ScatterElements), Det up
// to 3x3 (its cofactor formula), CausalConvWithState (Concat or Pad, a
// depthwise Conv, Swish), DFT and STFT (MatMuls with twiddle matrices) and
// Einsum (diagonals by a strided Slice, sums by
// ReduceSum, products by MatMul or Mul + ReduceSum, Transpose/Reshape around).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_mapping_util.h"
#include "compiler/frontend/onnx/onnx_tensor.h"
#include "compiler/ops/elementwise_table.h"

namespace nanoc::onnx_import {
namespace {

// SwiGLU-28: Y = Swish_alpha(A) * B; A and B have one shape.
void mapSwiGLU(NodeImporter& n) {
  Value* a = n.requiredInput(0, "A");
  Value* b = n.requiredInput(1, "B");
  if (a->type.dims != b->type.dims)
    n.fail("A " + a->type.str() + " and B " + b->type.str() + " must have one shape");
  Value* gate = n.emit("Swish", {a}, {{"alpha", n.floatAttr("alpha", 1.0)}}, "swish");
  n.emitResult("Mul", {gate, b});
}

void mapBitCast(NodeImporter& n) {
  Value* x = n.requiredInput(0, "input");
  std::optional<int64_t> to = n.intAttr("to");
  if (!to) n.fail("attribute 'to' is missing");
  std::optional<DType> d = dtypeFromOnnx(static_cast<int32_t>(*to));
  if (!d)
    n.fail("target type " + std::to_string(*to) + " is unsupported (nanoc has no such dtype)");
  if (dtypeSize(*d) != dtypeSize(x->type.dtype))
    n.fail("cannot reinterpret " + x->type.str() + " as " + std::string(dtypeName(*d)) +
           ": the element sizes differ");
  n.emitResult("BitCast", {x}, {{"to", static_cast<int64_t>(*d)}});
}

// CenterCropPad-18: per listed axis, a centred crop (start rounded down) or a
// zero pad (the odd pixel on the right): one Pad, negative pads cropping.
void mapCenterCropPad(NodeImporter& n) {
  Value* x = n.requiredInput(0, "input_data");
  Value* shape_v = n.requiredInput(1, "shape");
  std::vector<int64_t> shape = constantInts(n, shape_v, "shape");
  const int64_t rank = rankOf(x);
  std::vector<int64_t> axes;
  if (std::optional<std::vector<int64_t>> a = n.intsAttr("axes")) {
    for (int64_t axis : *a) axes.push_back(normalizeAxis(n, axis, rank));
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  if (shape.size() != axes.size())
    n.fail("shape " + dimsStr(shape) + " must have one entry per axis (" +
           std::to_string(axes.size()) + ")");
  std::vector<int64_t> pads(2 * static_cast<size_t>(rank), 0);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    auto d = static_cast<size_t>(axes[i]);
    if (seen[d]) n.fail("axes repeat axis " + std::to_string(d));
    seen[d] = true;
    int64_t have = x->type.dims[d], want = shape[i];
    if (want < 0) n.fail("shape " + dimsStr(shape) + " has a negative entry");
    if (have >= want) {
      int64_t start = (have - want) / 2;
      pads[d] = -start;
      pads[static_cast<size_t>(rank) + d] = -(have - want - start);
    } else {
      int64_t begin = (want - have) / 2;
      pads[d] = begin;
      pads[static_cast<size_t>(rank) + d] = want - have - begin;
    }
  }
  n.emitResult("Pad", {x}, {{"pads", pads}, {"mode", std::string("constant")}});
}

// HannWindow, HammingWindow, BlackmanWindow (opset 17): a constant of
// `size` elements (a constant scalar), computed here in double and rounded
// to output_datatype. Periodic windows divide by size, symmetric by size - 1.
void mapWindow(NodeImporter& n) {
  Value* size_v = n.requiredInput(0, "size");
  if (!size_v->isConstant())
    n.fail("size input '" + size_v->name +
           "' is computed at run time; nanoc needs it constant (an initializer or a Constant "
           "node) to know the static shape");
  if (size_v->type.numel() != 1 ||
      (size_v->type.dtype != DType::I32 && size_v->type.dtype != DType::I64))
    n.fail("size input '" + size_v->name + "' must be an int32 or int64 scalar, not " +
           size_v->type.str());
  Scalar sz = loadScalar(size_v->type.dtype, size_v->data->data(), 0);
  if (sz.i < 0 || sz.i > (int64_t{1} << 24))
    n.fail("size " + std::to_string(sz.i) + " is out of range [0, 2^24]");
  const int64_t size = sz.i;
  std::optional<DType> dtype = dtypeFromOnnx(static_cast<int32_t>(n.intAttr("output_datatype", 1)));
  if (!dtype || *dtype == DType::Bool)
    n.fail("output_datatype " + std::to_string(n.intAttr("output_datatype", 1)) +
           " is unsupported");
  const bool periodic = n.intAttr("periodic", 1) != 0;
  const double denom = static_cast<double>(periodic ? size : size - 1);
  const std::string& op = n.proto().op_type();
  TensorType type{*dtype, {size}};
  n.reserveMadeConstant(type.bytes(), "output " + type.str());
  std::vector<uint8_t> bytes(type.bytes());
  for (int64_t i = 0; i < size; ++i) {
    const double t = 2.0 * M_PI * static_cast<double>(i) / denom;
    double w;
    if (op == "HannWindow")
      w = 0.5 - 0.5 * std::cos(t);
    else if (op == "HammingWindow")
      w = 25.0 / 46.0 - (1.0 - 25.0 / 46.0) * std::cos(t);
    else
      w = 0.42 - 0.5 * std::cos(t) + 0.08 * std::cos(2.0 * t);
    if (denom == 0) w = 1.0;  // a symmetric window of one element
    storeScalar(*dtype, convertScalar(Scalar::ofFloat(w), *dtype), bytes.data(), i);
  }
  n.setConstantOutput(0, type, std::move(bytes));
}

// Compress with a constant condition (graph inputs bound at compile time):
// a Gather of the selected indices, along `axis` or over the flattened input.
void mapCompress(NodeImporter& n) {
  Value* x = n.requiredInput(0, "input");
  Value* cond = n.requiredInput(1, "condition");
  if (!cond->isConstant())
    n.fail("condition input '" + cond->name +
           "' is computed at run time; nanoc needs it constant (an initializer or a Constant "
           "node) to know the static shape");
  if (cond->type.rank() != 1) n.fail("condition " + cond->type.str() + " must be 1-D");
  std::optional<int64_t> axis_attr = n.intAttr("axis");
  int64_t axis = 0;
  if (axis_attr) {
    axis = normalizeAxis(n, *axis_attr, rankOf(x));
  } else {
    x = n.emit("Reshape", {x}, {{"shape", std::vector<int64_t>{x->type.numel()}}}, "flatten");
  }
  const int64_t dim = x->type.dims[static_cast<size_t>(axis)];
  std::vector<int64_t> picked;
  for (int64_t i = 0; i < cond->type.numel(); ++i)
    if (loadScalar(cond->type.dtype, cond->data->data(), i).truthy()) {
      if (i >= dim)
        n.fail("condition selects index " + std::to_string(i) + " of an axis of " +
               std::to_string(dim));
      picked.push_back(i);
    }
  TensorType t{DType::I64, {static_cast<int64_t>(picked.size())}};
  std::vector<uint8_t> bytes(t.bytes());
  if (!picked.empty()) std::memcpy(bytes.data(), picked.data(), bytes.size());
  Value* indices = n.constant("indices", t, std::move(bytes));
  n.emitResult("Gather", {x, indices}, {{"axis", axis}});
}

// MaxUnpool: X's values scattered at I (flat indices into the unpooled
// tensor, as MaxPool gives them) over zeros: Expand of a zero, one
// ScatterElements on the flat tensor, Reshape; a larger output_shape (a
// constant) pads zeros after each dim, as ONNX's reference does.
void mapMaxUnpool(NodeImporter& n) {
  Value* x = n.requiredInput(0, "X");
  Value* idx = n.requiredInput(1, "I");
  if (x->type.rank() < 3) n.fail("X " + x->type.str() + " must be [N, C, spatial...]");
  const size_t k = x->type.rank() - 2;
  if (idx->type.dims != x->type.dims || idx->type.dtype != DType::I64)
    n.fail("I " + idx->type.str() + " must be int64 of X's shape " + dimsStr(x->type.dims));
  std::optional<std::vector<int64_t>> kernel = n.intsAttr("kernel_shape");
  if (!kernel || kernel->size() != k)
    n.fail("kernel_shape must have " + std::to_string(k) + " entries");
  std::vector<int64_t> strides = n.intsAttr("strides").value_or(std::vector<int64_t>(k, 1));
  std::vector<int64_t> pads = n.intsAttr("pads").value_or(std::vector<int64_t>(2 * k, 0));
  if (strides.size() != k || pads.size() != 2 * k)
    n.fail("strides and pads must have " + std::to_string(k) + " and " + std::to_string(2 * k) +
           " entries");
  std::vector<int64_t> inferred = {x->type.dims[0], x->type.dims[1]};
  for (size_t d = 0; d < k; ++d) {
    if ((*kernel)[d] < 1 || (*kernel)[d] > kMaxWindowAttr || strides[d] < 1 ||
        strides[d] > kMaxWindowAttr || pads[d] < 0 || pads[d] > kMaxWindowAttr || pads[k + d] < 0 ||
        pads[k + d] > kMaxWindowAttr)
      n.fail("kernel_shape, strides and pads must be positive and in range");
    int64_t dim = (x->type.dims[d + 2] - 1) * strides[d] - pads[d] - pads[k + d] + (*kernel)[d];
    if (dim < 0) n.fail("the unpooled shape has a negative dim");
    inferred.push_back(dim);
  }
  std::vector<int64_t> out = inferred;
  if (Value* shape = n.input(2)) {
    out = constantInts(n, shape, "output_shape");
    if (out.size() != inferred.size())
      n.fail("output_shape " + dimsStr(out) + " must have " + std::to_string(inferred.size()) +
             " entries");
    for (size_t d = 0; d < out.size(); ++d)
      if (out[d] < inferred[d])
        n.fail("output_shape " + dimsStr(out) + " is smaller than the unpooled shape " +
               dimsStr(inferred));
  }
  const int64_t total = product(inferred, 0, inferred.size());
  Value* zero = n.constant("zero", TensorType{x->type.dtype, {}},
                           std::vector<uint8_t>(dtypeSize(x->type.dtype), 0));
  Value* zeros = n.emit("Expand", {zero}, {{"shape", std::vector<int64_t>{total}}}, "zeros");
  const std::vector<int64_t> flat = {x->type.numel()};
  Value* xf = n.emit("Reshape", {x}, {{"shape", flat}}, "flat_x");
  Value* idf = n.emit("Reshape", {idx}, {{"shape", flat}}, "flat_i");
  Value* scattered = n.emit("ScatterElements", {zeros, idf, xf},
                            {{"axis", int64_t{0}}, {"reduction", std::string("none")}}, "scatter");
  if (out == inferred) {
    n.emitResult("Reshape", {scattered}, {{"shape", inferred}});
    return;
  }
  Value* shaped = n.emit("Reshape", {scattered}, {{"shape", inferred}}, "unpooled");
  std::vector<int64_t> padding(2 * out.size(), 0);
  for (size_t d = 0; d < out.size(); ++d) padding[out.size() + d] = out[d] - inferred[d];
  n.emitResult("Pad", {shaped}, {{"pads", padding}, {"mode", std::string("constant")}});
}

// TensorScatter-24 (a KV cache update): one ScatterElements along `axis`,
// its indices write_indices[batch] + position (mod the cache length when
// circular), built from a constant ramp broadcast against write_indices.
void mapTensorScatter(NodeImporter& n) {
  Value* past = n.requiredInput(0, "past_cache");
  Value* update = n.requiredInput(1, "update");
  Value* write = n.input(2);
  const int64_t rank = rankOf(past);
  if (rank < 2 || rankOf(update) != rank)
    n.fail("past_cache " + past->type.str() + " and update " + update->type.str() +
           " must have one rank, at least 2");
  const int64_t axis = normalizeAxis(n, n.intAttr("axis", -2), rank);
  if (axis == 0) n.fail("axis must not be the batch axis");
  const std::string mode = n.stringAttr("mode").value_or("linear");
  if (mode != "linear" && mode != "circular")
    n.fail("mode '" + mode + "' is not 'linear' or 'circular'");
  const auto a = static_cast<size_t>(axis);
  for (size_t d = 0; d < static_cast<size_t>(rank); ++d)
    if (d != a && past->type.dims[d] != update->type.dims[d])
      n.fail("update " + update->type.str() + " must match past_cache " + past->type.str() +
             " outside axis " + std::to_string(axis));
  const int64_t seq = update->type.dims[a], max_seq = past->type.dims[a];
  if (seq > max_seq)
    n.fail("update " + update->type.str() + " is longer than past_cache " + past->type.str());
  // The ramp 0..seq-1 along axis, [1, .., seq, .., 1].
  std::vector<int64_t> ramp_dims(static_cast<size_t>(rank), 1);
  ramp_dims[a] = seq;
  std::vector<int64_t> ramp(static_cast<size_t>(seq));
  for (int64_t i = 0; i < seq; ++i) ramp[static_cast<size_t>(i)] = i;
  TensorType rt{DType::I64, ramp_dims};
  std::vector<uint8_t> bytes(rt.bytes());
  if (!ramp.empty()) std::memcpy(bytes.data(), ramp.data(), bytes.size());
  Value* indices = n.constant("ramp", rt, std::move(bytes));
  if (write) {
    if (write->type.dims != std::vector<int64_t>{past->type.dims[0]} ||
        (write->type.dtype != DType::I64 && write->type.dtype != DType::I32))
      n.fail("write_indices " + write->type.str() + " must be int64 [batch]");
    if (write->type.dtype != DType::I64)
      write =
          n.emit("Cast", {write},
                 {{"to", static_cast<int64_t>(DType::I64)}, {"saturate", int64_t{1}}}, "write_i64");
    std::vector<int64_t> wd(static_cast<size_t>(rank), 1);
    wd[0] = past->type.dims[0];
    Value* w = n.emit("Reshape", {write}, {{"shape", wd}}, "write_bcast");
    indices = n.emit("Add", {w, indices}, {}, "positions");
    if (mode == "circular" && max_seq > 0) {
      std::vector<uint8_t> len_bytes(sizeof(int64_t));
      std::memcpy(len_bytes.data(), &max_seq, sizeof(int64_t));
      Value* len = n.constant("cache_len", TensorType{DType::I64, {}}, std::move(len_bytes));
      indices = n.emit("Mod", {indices, len}, {{"fmod", int64_t{0}}}, "wrap");
    }
  }
  indices = n.emit("Expand", {indices}, {{"shape", update->type.dims}}, "indices");
  n.emitResult("ScatterElements", {past, indices, update},
               {{"axis", axis}, {"reduction", std::string("none")}});
}

// Det of [*, M, M] for M <= 3 by its cofactor formula (M = 3: the rule of
// Sarrus) on single elements sliced from the flattened matrices; larger
// matrices need an LU lowering nanoc does not have yet.
void mapDet(NodeImporter& n) {
  Value* x = n.requiredInput(0, "X");
  const size_t r = x->type.rank();
  if (r < 2 || x->type.dims[r - 1] != x->type.dims[r - 2])
    n.fail("X " + x->type.str() + " must be [*, M, M]");
  if (x->type.dtype != DType::F32 && x->type.dtype != DType::F16 && x->type.dtype != DType::BF16 &&
      x->type.dtype != DType::F64)
    n.fail("X " + x->type.str() + " must be a float type");
  const int64_t m = x->type.dims[r - 1];
  if (m < 1 || m > 3)
    n.fail("X " + x->type.str() +
           ": Det is supported for matrices up to 3x3 (a cofactor formula); larger ones need an "
           "LU lowering");
  std::vector<int64_t> batch(x->type.dims.begin(), x->type.dims.end() - 2);
  std::vector<int64_t> flat = batch;
  flat.push_back(m * m);
  Value* xf = n.emit("Reshape", {x}, {{"shape", flat}}, "flat");
  auto at = [&](int64_t i, int64_t j) {
    std::vector<int64_t> starts(flat.size(), 0), ends = flat, steps(flat.size(), 1);
    starts.back() = i * m + j;
    ends.back() = i * m + j + 1;
    return n.emit("Slice", {xf}, {{"starts", starts}, {"ends", ends}, {"steps", steps}},
                  "x" + std::to_string(i) + std::to_string(j));
  };
  auto mul = [&](Value* a, Value* b) { return n.emit("Mul", {a, b}, {}, "mul"); };
  Value* det;
  if (m == 1) {
    det = at(0, 0);
  } else if (m == 2) {
    det = n.emit("Sub", {mul(at(0, 0), at(1, 1)), mul(at(0, 1), at(1, 0))}, {}, "det");
  } else {
    Value* plus = nullptr;
    Value* minus = nullptr;
    for (int64_t k = 0; k < 3; ++k) {
      Value* p = mul(mul(at(0, k), at(1, (k + 1) % 3)), at(2, (k + 2) % 3));
      Value* q = mul(mul(at(0, k), at(1, (k + 2) % 3)), at(2, (k + 1) % 3));
      plus = plus ? n.emit("Add", {plus, p}, {}, "plus") : p;
      minus = minus ? n.emit("Add", {minus, q}, {}, "minus") : q;
    }
    det = n.emit("Sub", {plus, minus}, {}, "det");
  }
  n.emitResult("Reshape", {det}, {{"shape", batch}});
}

// CausalConvWithState (opset 27): the input left-extended by past_state (or
// k - 1 zeros), a depthwise Conv (group C, no padding) with the optional
// bias, an optional SiLU (Swish, alpha 1); present_state is the extended
// input's last k - 1 positions. f16 and bf16 convolve in f32.
void mapCausalConvWithState(NodeImporter& n) {
  Value* x = n.requiredInput(0, "input");
  Value* w = n.requiredInput(1, "weight");
  Value* bias = n.input(2);
  Value* past = n.input(3);
  const std::string act = n.stringAttr("activation").value_or("none");
  if (act != "none" && act != "silu" && act != "swish")
    n.fail("activation '" + act + "' is not 'none', 'silu' or 'swish'");
  if (x->type.rank() != 3 || w->type.rank() != 3)
    n.fail("input " + x->type.str() + " and weight " + w->type.str() + " must be rank 3");
  const int64_t b = x->type.dims[0], c = x->type.dims[1], len = x->type.dims[2];
  const int64_t k = w->type.dims[2];
  if (w->type.dims[0] != c || w->type.dims[1] != 1 || k < 1)
    n.fail("weight " + w->type.str() + " must be [C, 1, k] for input " + x->type.str());
  const DType dtype = x->type.dtype;
  if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16)
    n.fail("input " + x->type.str() + " must be f32, f16 or bf16");
  Value* padded;
  if (past) {
    if (past->type.dims != std::vector<int64_t>{b, c, k - 1})
      n.fail("past_state " + past->type.str() +
             " must be [B, C, k - 1] = " + dimsStr({b, c, k - 1}));
    padded = n.emit("Concat", {past, x}, {{"axis", int64_t{2}}}, "extend");
  } else {
    padded = n.emit(
        "Pad", {x},
        {{"pads", std::vector<int64_t>{0, 0, k - 1, 0, 0, 0}}, {"mode", std::string("constant")}},
        "extend");
  }
  if (n.outputUsed(1)) {
    const int64_t total = len + k - 1;
    n.setOutput(1, n.emit("Slice", {padded},
                          {{"starts", std::vector<int64_t>{0, 0, len}},
                           {"ends", std::vector<int64_t>{b, c, total}},
                           {"steps", std::vector<int64_t>{1, 1, 1}}},
                          "present_state", n.proto().output(1)));
  }
  auto f32 = [&](Value* v, const char* suffix) {
    if (!v || v->type.dtype == DType::F32) return v;
    return n.emit("Cast", {v}, {{"to", static_cast<int64_t>(DType::F32)}, {"saturate", int64_t{1}}},
                  suffix);
  };
  std::vector<Value*> conv_in = {f32(padded, "x_f32"), f32(w, "w_f32")};
  if (bias) conv_in.push_back(f32(bias, "b_f32"));
  const std::map<std::string, Attr> conv_attrs = {{"group", c},
                                                  {"kernel_shape", std::vector<int64_t>{k}},
                                                  {"pads", std::vector<int64_t>{0, 0}},
                                                  {"strides", std::vector<int64_t>{1}},
                                                  {"dilations", std::vector<int64_t>{1}}};
  const bool silu = act != "none";
  const std::map<std::string, Attr> round = {{"to", static_cast<int64_t>(dtype)},
                                             {"saturate", int64_t{1}}};
  if (dtype == DType::F32 && !silu) {
    n.emitResult("Conv", conv_in, conv_attrs);
    return;
  }
  Value* y = n.emit("Conv", conv_in, conv_attrs, "conv");
  if (!silu) {
    n.emitResult("Cast", {y}, round);
    return;
  }
  // Rounded to the input's dtype once before the activation, as ONNX's
  // reference does.
  if (dtype != DType::F32) y = n.emit("Cast", {y}, round, "conv_round");
  n.emitResult("Swish", {y}, {{"alpha", 1.0}});
}

// A constant scalar input, widened (floats as double, ints as int64).
Scalar constantScalar(const NodeImporter& n, size_t i, const char* role) {
  Value* v = n.requiredInput(i, role);
  if (!v->isConstant())
    n.fail(std::string(role) + " input '" + v->name +
           "' is computed at run time; nanoc needs it constant (an initializer or a Constant "
           "node) to know the static shape");
  if (v->type.numel() != 1 || v->type.dtype == DType::Bool)
    n.fail(std::string(role) + " input '" + v->name + "' must be a numeric scalar, not " +
           v->type.str());
  return loadScalar(v->type.dtype, v->data->data(), 0);
}

int64_t scalarInt(const Scalar& s) {
  return s.kind == Scalar::Signed     ? s.i
         : s.kind == Scalar::Unsigned ? static_cast<int64_t>(s.u)
                                      : static_cast<int64_t>(s.f);
}

// MelWeightMatrix-17 from constant inputs: ONNX's reference, computed here
// in double ([dft_length / 2 + 1, num_mel_bins] triangular filters).
void mapMelWeightMatrix(NodeImporter& n) {
  const int64_t mels = scalarInt(constantScalar(n, 0, "num_mel_bins"));
  const int64_t dft = scalarInt(constantScalar(n, 1, "dft_length"));
  const int64_t rate = scalarInt(constantScalar(n, 2, "sample_rate"));
  const double lower = constantScalar(n, 3, "lower_edge_hertz").asDouble();
  const double upper = constantScalar(n, 4, "upper_edge_hertz").asDouble();
  if (mels < 1 || mels > (1 << 16) || dft < 1 || dft > (1 << 24) || rate < 1)
    n.fail("num_mel_bins, dft_length and sample_rate must be positive and in range");
  std::optional<DType> dtype = dtypeFromOnnx(static_cast<int32_t>(n.intAttr("output_datatype", 1)));
  if (!dtype || *dtype == DType::Bool)
    n.fail("output_datatype " + std::to_string(n.intAttr("output_datatype", 1)) +
           " is unsupported");
  const int64_t spec = dft / 2 + 1;
  const double low_mel = 2595.0 * std::log1p(lower / 700.0) / std::log(10.0);
  const double high_mel = 2595.0 * std::log1p(upper / 700.0) / std::log(10.0);
  const double step = (high_mel - low_mel) / static_cast<double>(mels + 2);
  std::vector<int64_t> bins(static_cast<size_t>(mels + 2));
  for (int64_t k = 0; k < mels + 2; ++k) {
    double hz =
        700.0 * std::expm1((static_cast<double>(k) * step + low_mel) / 2595.0 * std::log(10.0));
    double bin = std::floor(static_cast<double>(dft + 1) * hz / static_cast<double>(rate));
    if (!(bin >= 0 && bin < static_cast<double>(spec)))
      n.fail("the mel bands reach past the spectrogram's " + std::to_string(spec) + " bins");
    bins[static_cast<size_t>(k)] = static_cast<int64_t>(bin);
  }
  TensorType type{*dtype, {spec, mels}};
  n.reserveMadeConstant(type.bytes(), "output " + type.str());
  std::vector<double> w(static_cast<size_t>(spec * mels), 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& { return w[static_cast<size_t>(j * mels + i)]; };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t lo = bins[static_cast<size_t>(i)], mid = bins[static_cast<size_t>(i + 1)],
                  hi = bins[static_cast<size_t>(i + 2)];
    if (mid == lo) {
      at(mid, i) = 1.0;
    } else {
      for (int64_t j = lo; j <= mid; ++j)
        at(j, i) = static_cast<double>(j - lo) / static_cast<double>(mid - lo);
    }
    if (hi > mid)
      for (int64_t j = mid; j < hi; ++j)
        at(j, i) = static_cast<double>(hi - j) / static_cast<double>(hi - mid);
  }
  std::vector<uint8_t> bytes(type.bytes());
  for (size_t e = 0; e < w.size(); ++e)
    storeScalar(*dtype, convertScalar(Scalar::ofFloat(w[e]), *dtype), bytes.data(),
                static_cast<int64_t>(e));
  n.setConstantOutput(0, type, std::move(bytes));
}

// DFT (opsets 17-20) with a constant dft_length and axis: a linear map along
// the axis, so MatMuls with constant cosine/sine matrices [N, K] (f32) on the
// real and imaginary parts (the last dim, 1 or 2), as numpy's fft, ifft, rfft
// (onesided) and irfft (inverse and onesided: a real result, last dim 1).
// emitDFT: the DFT of x [..., 1|2] along `axis` with length L, emitted as the
// node's result.
void emitDFT(NodeImporter& n, Value* x, int64_t axis, int64_t L, bool inverse, bool onesided) {
  const int64_t rank = rankOf(x);
  const auto a = static_cast<size_t>(axis);
  const int64_t len_in = x->type.dims[a];
  const bool complex_in = x->type.dims.back() == 2;
  const bool real_out = inverse && onesided;
  const int64_t k_out = !inverse && onesided ? L / 2 + 1 : L;
  // Coefficients per (input n, output k): re_out = re*A + im*B, im_out = re*C + im*D.
  const int64_t used = std::min(len_in, real_out ? L / 2 + 1 : L);
  std::vector<float> A(static_cast<size_t>(len_in * k_out), 0.0f), B = A, C = A, D = A;
  for (int64_t i = 0; i < used; ++i)
    for (int64_t k = 0; k < k_out; ++k) {
      const double t = 2.0 * M_PI * static_cast<double>((i * k) % L) / static_cast<double>(L);
      const double c = std::cos(t), sn = std::sin(t);
      const auto e = static_cast<size_t>(i * k_out + k);
      if (!inverse) {
        A[e] = static_cast<float>(c), B[e] = static_cast<float>(sn);
        C[e] = static_cast<float>(-sn), D[e] = static_cast<float>(c);
      } else if (!onesided) {
        const double s = 1.0 / static_cast<double>(L);
        A[e] = static_cast<float>(c * s), B[e] = static_cast<float>(-sn * s);
        C[e] = static_cast<float>(sn * s), D[e] = static_cast<float>(c * s);
      } else {
        // Hermitian: bins 1 .. ceil(L/2) - 1 count twice; 0 and L/2 (even L)
        // once, their imaginary parts ignored.
        const bool edge = i == 0 || 2 * i == L;
        const double w = (edge ? 1.0 : 2.0) / static_cast<double>(L);
        A[e] = static_cast<float>(c * w);
        B[e] = edge ? 0.0f : static_cast<float>(-sn * w);
      }
    }
  auto matrix = [&](const std::vector<float>& m, const char* name) {
    TensorType t{DType::F32, {len_in, k_out}};
    std::vector<uint8_t> bytes(t.bytes());
    if (!m.empty()) std::memcpy(bytes.data(), m.data(), bytes.size());
    return n.constant(name, t, std::move(bytes));
  };
  // The parts as [rest, N] rows: the axis moved last.
  std::vector<int64_t> dims(x->type.dims.begin(), x->type.dims.end() - 1);
  std::vector<int64_t> perm, moved;
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != axis) perm.push_back(d), moved.push_back(dims[static_cast<size_t>(d)]);
  perm.push_back(axis);
  const int64_t rest = product(moved, 0, moved.size());
  auto part = [&](int64_t index, const char* name) {
    std::vector<int64_t> starts(static_cast<size_t>(rank), 0), ends = x->type.dims,
                                                               steps(static_cast<size_t>(rank), 1);
    starts.back() = index;
    ends.back() = index + 1;
    Value* v = x;
    if (complex_in)
      v = n.emit("Slice", {x}, {{"starts", starts}, {"ends", ends}, {"steps", steps}}, name);
    v = n.emit("Reshape", {v}, {{"shape", dims}}, std::string(name) + "_squeeze");
    v = n.emit("Transpose", {v}, {{"perm", perm}}, std::string(name) + "_move");
    return n.emit("Reshape", {v}, {{"shape", std::vector<int64_t>{rest, len_in}}},
                  std::string(name) + "_rows");
  };
  Value* re = part(0, "re");
  Value* im = complex_in ? part(1, "im") : nullptr;
  auto combine = [&](const std::vector<float>& mr, const std::vector<float>& mi, const char* name) {
    Value* r = n.emit("MatMul", {re, matrix(mr, name)}, {}, std::string(name) + "_from_re");
    if (!im) return r;
    Value* i = n.emit("MatMul", {im, matrix(mi, name)}, {}, std::string(name) + "_from_im");
    return n.emit("Add", {r, i}, {}, std::string(name) + "_sum");
  };
  // Back to the input's layout, the axis of k_out, and a last dim of 1.
  std::vector<int64_t> back_dims = moved, inverse_perm(perm.size());
  back_dims.push_back(k_out);
  for (size_t d = 0; d < perm.size(); ++d)
    inverse_perm[static_cast<size_t>(perm[d])] = static_cast<int64_t>(d);
  std::vector<int64_t> out_dims = dims;
  out_dims[a] = k_out;
  out_dims.push_back(1);
  auto restore = [&](Value* v, const char* name) {
    v = n.emit("Reshape", {v}, {{"shape", back_dims}}, std::string(name) + "_split");
    v = n.emit("Transpose", {v}, {{"perm", inverse_perm}}, std::string(name) + "_back");
    return v;
  };
  Value* out_re = restore(combine(A, B, "real"), "real");
  if (real_out) {
    n.emitResult("Reshape", {out_re}, {{"shape", out_dims}});
    return;
  }
  Value* out_im = restore(combine(C, D, "imag"), "imag");
  out_re = n.emit("Reshape", {out_re}, {{"shape", out_dims}}, "real_last");
  out_im = n.emit("Reshape", {out_im}, {{"shape", out_dims}}, "imag_last");
  n.emitResult("Concat", {out_re, out_im}, {{"axis", rank - 1}});
}

void mapDFT(NodeImporter& n) {
  Value* x = n.requiredInput(0, "input");
  const int64_t rank = rankOf(x);
  if (rank < 2 || (x->type.dims.back() != 1 && x->type.dims.back() != 2))
    n.fail("input " + x->type.str() + " must end in a dim of 1 (real) or 2 (complex)");
  if (x->type.dtype != DType::F32) n.fail("input " + x->type.str() + " must be f32");
  int64_t axis = n.opset() >= 20 ? -2 : n.intAttr("axis", 1);
  if (n.opset() >= 20 && n.input(2)) axis = scalarInt(constantScalar(n, 2, "axis"));
  axis = normalizeAxis(n, axis, rank);
  if (axis == rank - 1) n.fail("axis must not be the last (real, imaginary) dim");
  const bool inverse = n.intAttr("inverse", 0) != 0, onesided = n.intAttr("onesided", 0) != 0;
  const int64_t len_in = x->type.dims[static_cast<size_t>(axis)];
  int64_t L = inverse && onesided ? 2 * (len_in - 1) : len_in;
  if (n.input(1)) L = scalarInt(constantScalar(n, 1, "dft_length"));
  if (L < 1 || L > (1 << 16)) n.fail("dft_length " + std::to_string(L) + " is out of range");
  emitDFT(n, x, axis, L, inverse, onesided);
}

// STFT-17 with a constant frame_step (and frame_length): the frames gathered
// by constant indices [frames, W] along the signal, times the window (a run
// time input is fine), then the DFT of each frame (length W).
void mapSTFT(NodeImporter& n) {
  Value* x = n.requiredInput(0, "signal");
  if (x->type.rank() != 3 || (x->type.dims[2] != 1 && x->type.dims[2] != 2))
    n.fail("signal " + x->type.str() + " must be [batch, length, 1 or 2]");
  if (x->type.dtype != DType::F32) n.fail("signal " + x->type.str() + " must be f32");
  const int64_t step = scalarInt(constantScalar(n, 1, "frame_step"));
  Value* window = n.input(2);
  const int64_t len = x->type.dims[1];
  int64_t w = window ? window->type.numel() : len;
  if (n.input(3)) w = scalarInt(constantScalar(n, 3, "frame_length"));
  if (window && (window->type.rank() != 1 || window->type.dims[0] != w))
    n.fail("window " + window->type.str() + " must be [frame_length] = [" + std::to_string(w) +
           "]");
  if (step < 1 || w < 1 || w > len)
    n.fail("frame_step and frame_length must be positive, frame_length at most the signal's " +
           std::to_string(len));
  const int64_t frames = 1 + (len - w) / step;
  TensorType it{DType::I64, {frames, w}};
  n.reserveMadeConstant(it.bytes(), "frame indices " + it.str());
  std::vector<int64_t> idx(static_cast<size_t>(frames * w));
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t j = 0; j < w; ++j) idx[static_cast<size_t>(f * w + j)] = f * step + j;
  std::vector<uint8_t> bytes(it.bytes());
  std::memcpy(bytes.data(), idx.data(), bytes.size());
  Value* framed = n.emit("Gather", {x, n.constant("frame_indices", it, std::move(bytes))},
                         {{"axis", int64_t{1}}}, "frames");  // [batch, frames, W, 1|2]
  if (window) {
    Value* wr =
        n.emit("Reshape", {window}, {{"shape", std::vector<int64_t>{1, 1, w, 1}}}, "window_bcast");
    framed = n.emit("Mul", {framed, wr}, {}, "windowed");
  }
  emitDFT(n, framed, 2, w, false, n.intAttr("onesided", 1) != 0);
}

// ---- Einsum ----

// A label: a letter's character code, or kEllipsis + i for the i-th dim of
// the broadcast ellipsis (counted from the left of the widest one).
constexpr int kEllipsis = 1000;

struct Term {
  Value* v = nullptr;
  std::vector<int> labels;  // one per dim of v
};

class Einsum {
 public:
  explicit Einsum(NodeImporter& n) : n_(n) {}

  void run() {
    std::optional<std::string> eq = n_.stringAttr("equation");
    if (!eq) n_.fail("attribute 'equation' is missing");
    std::string s;
    for (char c : *eq)
      if (c != ' ') s += c;
    std::string lhs = s, rhs;
    bool explicit_out = false;
    if (size_t arrow = s.find("->"); arrow != std::string::npos) {
      lhs = s.substr(0, arrow);
      rhs = s.substr(arrow + 2);
      explicit_out = true;
    }
    std::vector<std::string> specs;
    for (size_t start = 0;;) {
      size_t comma = lhs.find(',', start);
      specs.push_back(lhs.substr(start, comma == std::string::npos ? comma : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (specs.size() != n_.numInputs())
      n_.fail("equation '" + *eq + "' names " + std::to_string(specs.size()) +
              " operands, the node has " + std::to_string(n_.numInputs()));
    // Ellipsis widths first: the widest sets the broadcast ellipsis.
    std::vector<int64_t> widths;
    for (size_t i = 0; i < specs.size(); ++i) {
      Value* v = n_.requiredInput(i, "Inputs");
      int64_t letters = 0;
      bool ell = false;
      checkSpec(specs[i], *eq, &letters, &ell);
      int64_t w = rankOf(v) - letters;
      if ((!ell && w != 0) || w < 0)
        n_.fail("operand " + std::to_string(i) + " " + v->type.str() + " does not match '" +
                specs[i] + "'");
      widths.push_back(w);
      ell_width_ = std::max(ell_width_, w);
    }
    std::vector<Term> terms;
    for (size_t i = 0; i < specs.size(); ++i) {
      Term t;
      t.v = n_.input(i);
      for (size_t c = 0; c < specs[i].size(); ++c) {
        if (specs[i][c] == '.') {
          for (int64_t j = 0; j < widths[i]; ++j)
            t.labels.push_back(kEllipsis + static_cast<int>(ell_width_ - widths[i] + j));
          c += 2;
        } else {
          t.labels.push_back(specs[i][c]);
        }
      }
      terms.push_back(t);
    }
    // The output's labels.
    std::vector<int> out;
    if (explicit_out) {
      int64_t letters = 0;
      bool ell = false;
      checkSpec(rhs, *eq, &letters, &ell);
      for (size_t c = 0; c < rhs.size(); ++c) {
        if (rhs[c] == '.') {
          for (int64_t j = 0; j < ell_width_; ++j) out.push_back(kEllipsis + static_cast<int>(j));
          c += 2;
        } else {
          out.push_back(rhs[c]);
        }
      }
    } else {
      for (int64_t j = 0; j < ell_width_; ++j) out.push_back(kEllipsis + static_cast<int>(j));
      std::map<int, int> count;
      for (const Term& t : terms)
        for (int l : t.labels)
          if (l < kEllipsis) ++count[l];
      for (auto [l, c] : count)
        if (c == 1) out.push_back(l);
    }
    for (size_t i = 0; i < out.size(); ++i) {
      if (std::count(out.begin(), out.end(), out[i]) > 1)
        n_.fail("equation '" + *eq + "' repeats an output label");
      bool found = false;
      for (const Term& t : terms) found |= std::count(t.labels.begin(), t.labels.end(), out[i]) > 0;
      if (!found)
        n_.fail("equation '" + *eq + "': output label '" + labelName(out[i]) +
                "' is in no operand");
    }
    const std::set<int> out_set(out.begin(), out.end());

    // Each operand alone: diagonals, then sums over labels no one else needs.
    for (size_t i = 0; i < terms.size(); ++i) {
      terms[i] = diagonals(terms[i], i);
      std::set<int> needed = out_set;
      for (size_t j = 0; j < terms.size(); ++j)
        if (j != i) needed.insert(terms[j].labels.begin(), terms[j].labels.end());
      terms[i] = sumOut(terms[i], needed, i);
    }
    // Products, left to right.
    Term acc = terms[0];
    for (size_t i = 1; i < terms.size(); ++i) {
      std::set<int> keep = out_set;
      for (size_t j = i + 1; j < terms.size(); ++j)
        keep.insert(terms[j].labels.begin(), terms[j].labels.end());
      acc = contract(acc, terms[i], keep, i);
    }
    // A product of one operand's labels may still hold labels to sum.
    acc = sumOut(acc, out_set, terms.size());
    std::vector<int64_t> perm;
    for (int l : out) {
      auto it = std::find(acc.labels.begin(), acc.labels.end(), l);
      perm.push_back(it - acc.labels.begin());
    }
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int64_t>(i);
    if (!identity)
      n_.emitResult("Transpose", {acc.v}, {{"perm", perm}});
    else
      n_.emitResult("Reshape", {acc.v}, {{"shape", acc.v->type.dims}});
  }

 private:
  NodeImporter& n_;
  int64_t ell_width_ = 0;

  static std::string labelName(int l) {
    return l >= kEllipsis ? "..." : std::string(1, static_cast<char>(l));
  }

  void checkSpec(const std::string& spec, const std::string& eq, int64_t* letters, bool* ell) {
    for (size_t c = 0; c < spec.size(); ++c) {
      char ch = spec[c];
      if (ch == '.') {
        if (*ell || spec.compare(c, 3, "...") != 0)
          n_.fail("equation '" + eq + "' has a malformed or repeated ellipsis");
        *ell = true;
        c += 2;
      } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
        ++*letters;
      } else {
        n_.fail("equation '" + eq + "' has an invalid character '" + std::string(1, ch) + "'");
      }
    }
  }

  std::string tag(size_t i, const char* what) { return "op" + std::to_string(i) + "_" + what; }

  Value* transpose(Value* v, const std::vector<int64_t>& perm, const std::string& suffix) {
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != static_cast<int64_t>(i))
        return n_.emit("Transpose", {v}, {{"perm", perm}}, suffix);
    return v;
  }
  Value* reshape(Value* v, const std::vector<int64_t>& dims, const std::string& suffix) {
    if (v->type.dims == dims) return v;
    return n_.emit("Reshape", {v}, {{"shape", dims}}, suffix);
  }

  // A label repeated within one operand takes the diagonal: its dims moved
  // last and merged, then every (1 + n + n^2 ...)-th element.
  Term diagonals(Term t, size_t i) {
    for (;;) {
      int rep = -1;
      for (int l : t.labels)
        if (std::count(t.labels.begin(), t.labels.end(), l) > 1) {
          rep = l;
          break;
        }
      if (rep < 0) return t;
      std::vector<int64_t> perm, dims;
      std::vector<int> labels;
      int64_t size = -1, k = 0;
      for (size_t d = 0; d < t.labels.size(); ++d) {
        if (t.labels[d] == rep) {
          int64_t dim = t.v->type.dims[d];
          if (size >= 0 && dim != size)
            n_.fail("label '" + labelName(rep) + "' has dims " + std::to_string(size) + " and " +
                    std::to_string(dim) + " in one operand");
          size = dim;
          ++k;
          continue;
        }
        perm.push_back(static_cast<int64_t>(d));
        dims.push_back(t.v->type.dims[d]);
        labels.push_back(t.labels[d]);
      }
      for (size_t d = 0; d < t.labels.size(); ++d)
        if (t.labels[d] == rep) perm.push_back(static_cast<int64_t>(d));
      int64_t total = 1, step = 0;
      for (int64_t j = 0; j < k; ++j) {
        step += total;
        total *= size;
      }
      if (size <= 1) step = 1;
      Value* v = transpose(t.v, perm, tag(i, "diag_move"));
      std::vector<int64_t> merged = dims;
      merged.push_back(total);
      v = reshape(v, merged, tag(i, "diag_merge"));
      std::vector<int64_t> starts(merged.size(), 0), ends = merged, steps(merged.size(), 1);
      steps.back() = step;
      v = n_.emit("Slice", {v}, {{"starts", starts}, {"ends", ends}, {"steps", steps}},
                  tag(i, "diag"));
      labels.push_back(rep);
      t = {v, labels};
    }
  }

  // Sums the labels of `t` that `needed` lacks.
  Term sumOut(Term t, const std::set<int>& needed, size_t i) {
    std::vector<int64_t> axes;
    std::vector<int> labels;
    for (size_t d = 0; d < t.labels.size(); ++d) {
      if (needed.count(t.labels[d]))
        labels.push_back(t.labels[d]);
      else
        axes.push_back(static_cast<int64_t>(d));
    }
    if (axes.empty()) return t;
    Value* v =
        n_.emit("ReduceSum", {t.v}, {{"axes", axes}, {"keepdims", int64_t{0}}}, tag(i, "sum"));
    return {v, labels};
  }

  Value* cast(Value* v, DType to, const std::string& suffix) {
    if (v->type.dtype == to) return v;
    return n_.emit("Cast", {v}, {{"to", static_cast<int64_t>(to)}, {"saturate", int64_t{1}}},
                   suffix);
  }

  // The product of two operands, summing the shared labels `keep` lacks:
  // A as [batch..., left, k], B as [batch..., k, right], one batched matmul
  // (batch dims broadcast as numpy's), split back to [batch..., left..., right...].
  Term contract(const Term& a, const Term& b, const std::set<int>& keep, size_t i) {
    auto in = [](const Term& t, int l) {
      return std::find(t.labels.begin(), t.labels.end(), l) != t.labels.end();
    };
    auto dimOf = [](const Term& t, int l) {
      auto it = std::find(t.labels.begin(), t.labels.end(), l);
      return t.v->type.dims[static_cast<size_t>(it - t.labels.begin())];
    };
    std::vector<int> batch, left, con, right;
    for (int l : a.labels) {
      if (!in(b, l))
        left.push_back(l);
      else if (keep.count(l))
        batch.push_back(l);
      else
        con.push_back(l);
    }
    for (int l : b.labels)
      if (!in(a, l)) right.push_back(l);
    int64_t m = 1, k = 1, r = 1;
    std::vector<int64_t> a_dims, b_dims, out_dims;
    std::vector<int64_t> a_perm, b_perm;
    auto pos = [](const Term& t, int l) {
      return static_cast<int64_t>(std::find(t.labels.begin(), t.labels.end(), l) -
                                  t.labels.begin());
    };
    for (int l : batch) {
      int64_t da = dimOf(a, l), db = dimOf(b, l);
      if (da != db && da != 1 && db != 1)
        n_.fail("label '" + labelName(l) + "' has dims " + std::to_string(da) + " and " +
                std::to_string(db));
      a_perm.push_back(pos(a, l));
      b_perm.push_back(pos(b, l));
      a_dims.push_back(da);
      b_dims.push_back(db);
      out_dims.push_back(da == 1 ? db : da);
    }
    for (int l : left) {
      a_perm.push_back(pos(a, l));
      m *= dimOf(a, l);
      out_dims.push_back(dimOf(a, l));
    }
    for (int l : con) {
      int64_t da = dimOf(a, l), db = dimOf(b, l);
      if (da != db)
        n_.fail("summed label '" + labelName(l) + "' has dims " + std::to_string(da) + " and " +
                std::to_string(db));
      a_perm.push_back(pos(a, l));
      k *= da;
    }
    for (int l : con) b_perm.push_back(pos(b, l));
    for (int l : right) {
      b_perm.push_back(pos(b, l));
      r *= dimOf(b, l);
      out_dims.push_back(dimOf(b, l));
    }
    DType dtype = a.v->type.dtype;
    if (b.v->type.dtype != dtype)
      n_.fail("operands " + a.v->type.str() + " and " + b.v->type.str() + " differ in dtype");
    Value* av = transpose(a.v, a_perm, tag(i, "a_move"));
    Value* bv = transpose(b.v, b_perm, tag(i, "b_move"));
    std::vector<int64_t> a3 = a_dims, b3 = b_dims;
    Value* prod;
    if (dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16) {
      // MatMul (f32; f16 and bf16 through f32, as ONNX's reference computes).
      a3.insert(a3.end(), {m, k});
      b3.insert(b3.end(), {k, r});
      av = cast(reshape(av, a3, tag(i, "a_3d")), DType::F32, tag(i, "a_f32"));
      bv = cast(reshape(bv, b3, tag(i, "b_3d")), DType::F32, tag(i, "b_f32"));
      prod = cast(n_.emit("MatMul", {av, bv}, {}, tag(i, "matmul")), dtype, tag(i, "back"));
    } else {
      // f64 and integers in their own arithmetic: [.., m, 1, k] * [.., 1, r, k],
      // summed over k.
      a3.insert(a3.end(), {m, 1, k});
      b3.insert(b3.end(), {k, r});
      av = reshape(av, a3, tag(i, "a_3d"));
      bv = reshape(bv, b3, tag(i, "b_3d"));
      std::vector<int64_t> swap;
      for (size_t d = 0; d < b_dims.size(); ++d) swap.push_back(static_cast<int64_t>(d));
      swap.push_back(static_cast<int64_t>(b_dims.size()) + 1);
      swap.push_back(static_cast<int64_t>(b_dims.size()));
      bv = transpose(bv, swap, tag(i, "b_rk"));
      std::vector<int64_t> b4 = b_dims;
      b4.insert(b4.end(), {1, r, k});
      bv = reshape(bv, b4, tag(i, "b_4d"));
      Value* mul = n_.emit("Mul", {av, bv}, {}, tag(i, "mul"));
      prod = n_.emit("ReduceSum", {mul},
                     {{"axes", std::vector<int64_t>{rankOf(mul) - 1}}, {"keepdims", int64_t{0}}},
                     tag(i, "dot"));
    }
    prod = reshape(prod, out_dims, tag(i, "split"));
    std::vector<int> labels = batch;
    labels.insert(labels.end(), left.begin(), left.end());
    labels.insert(labels.end(), right.begin(), right.end());
    return {prod, labels};
  }
};

void mapEinsum(NodeImporter& n) { Einsum(n).run(); }

}  // namespace

MappingList miscMappings() {
  MappingList list;
  list.emplace_back("SwiGLU", mapSwiGLU);
  list.emplace_back("BitCast", mapBitCast);
  list.emplace_back("CenterCropPad", mapCenterCropPad);
  list.emplace_back("Compress", mapCompress);
  list.emplace_back("MaxUnpool", mapMaxUnpool);
  list.emplace_back("TensorScatter", mapTensorScatter);
  list.emplace_back("Det", mapDet);
  list.emplace_back("CausalConvWithState", mapCausalConvWithState);
  list.emplace_back("MelWeightMatrix", mapMelWeightMatrix);
  list.emplace_back("DFT", mapDFT);
  list.emplace_back("STFT", mapSTFT);
  list.emplace_back("Einsum", mapEinsum);
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    list.emplace_back(op, mapWindow);
  return list;
}

}  // namespace nanoc::onnx_import
