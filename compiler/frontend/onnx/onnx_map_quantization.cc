// ONNX -> IR mappings of the quantization family (compiler/ops/
// quantization.h): QuantizeLinear and DequantizeLinear with their granularity
// (per-tensor, per-axis, blocked), output dtype and division precision made
// explicit; DynamicQuantizeLinear; the integer products MatMulInteger,
// QLinearMatMul, ConvInteger and QLinearConv with Conv's window attributes
// resolved (auto_pad into pads). Q and DQ take the float8 types and the
// sub-byte types (int4, uint4, int2, uint2, float4e2m1) too.
#include <algorithm>
#include <optional>
#include <string>

#include "compiler/frontend/onnx/onnx_mapping_util.h"
#include "compiler/frontend/onnx/onnx_tensor.h"
#include "compiler/ir/float8.h"
#include "compiler/passes/shape_inference.h"

namespace nanoc::onnx_import {
namespace {

// An ONNX data-type attribute as an IR dtype; fails naming it when the IR has
// no such dtype.
DType dtypeAttr(const NodeImporter& n, const char* key, int64_t onnx_type) {
  std::optional<DType> d = dtypeFromOnnx(static_cast<int32_t>(onnx_type));
  if (!d)
    n.fail(std::string(key) + " " + onnxTypeName(static_cast<int32_t>(onnx_type)) +
           " is not supported (nanoc has no such dtype)");
  return *d;
}

bool isFloat(DType d) {
  return d == DType::F32 || d == DType::F16 || d == DType::BF16 || d == DType::F64;
}

// axis and block_size, canonical: per-tensor (a one-element scale) is axis 0,
// block_size 0; otherwise the axis is normalized against x.
std::map<std::string, Attr> granularityAttrs(const NodeImporter& n, const Value* x,
                                             const Value* scale) {
  int64_t block = n.opset() >= 21 ? n.intAttr("block_size", 0) : 0;
  if (scale->type.numel() == 1) return {{"axis", int64_t{0}}, {"block_size", int64_t{0}}};
  if (n.opset() < 13)
    n.fail("scale " + scale->type.str() + " is not a scalar: per-axis quantization needs opset 13");
  if (scale->type.rank() > 1 && n.opset() < 21)
    n.fail("scale " + scale->type.str() + " is not 1-D: blocked quantization needs opset 21");
  if (block < 0) n.fail("block_size " + std::to_string(block) + " is negative");
  return {{"axis", normalizeAxis(n, n.intAttr("axis", 1), rankOf(x))}, {"block_size", block}};
}

void mapQuantizeLinear(NodeImporter& n) {
  Value* x = n.requiredInput(0, "x");
  Value* scale = n.requiredInput(1, "y_scale");
  Value* zp = n.input(2);
  // The output dtype: the zero point's, else output_dtype (opset 21), else u8.
  DType out = zp ? zp->type.dtype : DType::U8;
  if (int64_t attr = n.opset() >= 21 ? n.intAttr("output_dtype", 0) : 0) {
    DType d = dtypeAttr(n, "output_dtype", attr);
    if (zp && d != zp->type.dtype)
      n.fail("output_dtype " + std::string(dtypeName(d)) + " differs from y_zero_point " +
             zp->type.str());
    out = d;
  }
  // The division's precision: the precision attribute (opset 23), else the
  // scale's dtype (f64 for an i32 scale).
  DType precision = isFloat(scale->type.dtype) ? scale->type.dtype : DType::F64;
  if (int64_t attr = n.opset() >= 23 ? n.intAttr("precision", 0) : 0) {
    precision = dtypeAttr(n, "precision", attr);
    if (!isFloat(precision))
      n.fail("precision " + std::string(dtypeName(precision)) + " is not a float dtype");
  }
  std::map<std::string, Attr> attrs = granularityAttrs(n, x, scale);
  attrs["output_dtype"] = static_cast<int64_t>(out);
  attrs["precision"] = static_cast<int64_t>(precision);
  // saturate (opset 19) matters only for float8 outputs; default 1.
  if (isFloat8(out)) attrs["saturate"] = int64_t{n.opset() < 19 || n.intAttr("saturate", 1) != 0};
  n.emitResult("QuantizeLinear", {x, scale, zp}, attrs);
}

void mapDequantizeLinear(NodeImporter& n) {
  Value* x = n.requiredInput(0, "x");
  Value* scale = n.requiredInput(1, "x_scale");
  DType out = scale->type.dtype;
  if (int64_t attr = n.opset() >= 23 ? n.intAttr("output_dtype", 0) : 0)
    out = dtypeAttr(n, "output_dtype", attr);
  std::map<std::string, Attr> attrs = granularityAttrs(n, x, scale);
  attrs["output_dtype"] = static_cast<int64_t>(out);
  n.emitResult("DequantizeLinear", {x, scale, n.input(2)}, attrs);
}

// Three outputs (y, y_scale, y_zero_point), each named as in the model.
void mapDynamicQuantizeLinear(NodeImporter& n) {
  const onnx::NodeProto& proto = n.proto();
  std::vector<std::string> names;
  for (int i = 0; i < 3; ++i) {
    if (i >= proto.output_size() || proto.output(i).empty()) {
      if (i == 0) n.fail("has no output");
      names.push_back(n.name() + (i == 1 ? "/y_scale" : "/y_zero_point"));
    } else {
      names.push_back(proto.output(i));
    }
  }
  Node* node =
      n.graph().addNode("DynamicQuantizeLinear", n.name(), {n.requiredInput(0, "x")}, 3, names);
  inferNode(*node);
  for (size_t i = 0; i < 3 && i < static_cast<size_t>(proto.output_size()); ++i)
    n.setOutput(i, node->outputs[i]);
}

void mapMatMulInteger(NodeImporter& n) {
  n.emitResult("MatMulInteger",
               {n.requiredInput(0, "A"), n.requiredInput(1, "B"), n.input(2), n.input(3)});
}

void mapQLinearMatMul(NodeImporter& n) {
  n.emitResult("QLinearMatMul", {n.requiredInput(0, "a"), n.requiredInput(1, "a_scale"), n.input(2),
                                 n.requiredInput(3, "b"), n.requiredInput(4, "b_scale"), n.input(5),
                                 n.requiredInput(6, "y_scale"), n.input(7)});
}

// ---- convolutions: Conv's window attributes ----

std::vector<int64_t> windowInts(const NodeImporter& n, const char* key, size_t size,
                                std::vector<int64_t> fallback, int64_t min) {
  std::vector<int64_t> v = n.intsAttr(key).value_or(std::move(fallback));
  if (v.size() != size)
    n.fail(std::string(key) + " " + dimsStr(v) + " must have " + std::to_string(size) +
           " values for the input's spatial dims");
  for (int64_t x : v)
    if (x < min || x > kMaxWindowAttr)
      n.fail(std::string(key) + " " + dimsStr(v) + " has an out-of-range value");
  return v;
}

// group, kernel_shape, pads (every begin, then every end), strides and
// dilations of a convolution of x [N, C, spatial...] by w [M, C/group,
// kernel...], auto_pad resolved into pads as for Conv.
std::map<std::string, Attr> convAttrs(const NodeImporter& n, const Value* x, const Value* w) {
  if (x->type.rank() < 3)
    n.fail("x " + x->type.str() + " must be [N, C, spatial...] with at least one spatial dim");
  if (w->type.rank() != x->type.rank())
    n.fail("w " + w->type.str() + " must have the rank of x " + x->type.str());
  const size_t k = x->type.rank() - 2;
  std::vector<int64_t> kernel(w->type.dims.begin() + 2, w->type.dims.end());
  if (n.intsAttr("kernel_shape").value_or(kernel) != kernel)
    n.fail("kernel_shape " + dimsStr(*n.intsAttr("kernel_shape")) + " does not match w " +
           w->type.str());
  for (int64_t d : kernel)
    if (d < 1 || d > kMaxWindowAttr) n.fail("w " + w->type.str() + " has an empty kernel");
  int64_t group = n.intAttr("group", 1);
  if (group < 1) n.fail("group " + std::to_string(group) + " must be >= 1");
  std::vector<int64_t> strides = windowInts(n, "strides", k, std::vector<int64_t>(k, 1), 1);
  std::vector<int64_t> dilations = windowInts(n, "dilations", k, std::vector<int64_t>(k, 1), 1);
  std::optional<std::vector<int64_t>> explicit_pads;
  if (n.hasAttr("pads")) explicit_pads = windowInts(n, "pads", 2 * k, {}, 0);
  std::string auto_pad = n.stringAttr("auto_pad").value_or("NOTSET");
  std::vector<int64_t> pads(2 * k, 0);
  if (auto_pad == "NOTSET") {
    if (explicit_pads) pads = *explicit_pads;
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    // The output has ceil(in / stride) elements; the padding that needs is
    // split evenly, the odd one at the end (UPPER) or the beginning (LOWER).
    for (size_t i = 0; i < k; ++i) {
      int64_t in = x->type.dims[2 + i];
      int64_t out = (in + strides[i] - 1) / strides[i];
      int64_t eff = (kernel[i] - 1) * dilations[i] + 1;
      int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + eff - in);
      int64_t begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[i] = begin;
      pads[i + k] = total - begin;
    }
  } else if (auto_pad != "VALID") {
    n.fail("auto_pad '" + auto_pad + "' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER");
  }
  return {{"group", group},
          {"kernel_shape", kernel},
          {"pads", pads},
          {"strides", strides},
          {"dilations", dilations}};
}

void mapConvInteger(NodeImporter& n) {
  Value* x = n.requiredInput(0, "x");
  Value* w = n.requiredInput(1, "w");
  n.emitResult("ConvInteger", {x, w, n.input(2), n.input(3)}, convAttrs(n, x, w));
}

void mapQLinearConv(NodeImporter& n) {
  Value* x = n.requiredInput(0, "x");
  Value* w = n.requiredInput(3, "w");
  n.emitResult("QLinearConv",
               {x, n.requiredInput(1, "x_scale"), n.input(2), w, n.requiredInput(4, "w_scale"),
                n.input(5), n.requiredInput(6, "y_scale"), n.input(7), n.input(8)},
               convAttrs(n, x, w));
}

}  // namespace

MappingList quantizationMappings() {
  return {{"QuantizeLinear", mapQuantizeLinear},
          {"DequantizeLinear", mapDequantizeLinear},
          {"DynamicQuantizeLinear", mapDynamicQuantizeLinear},
          {"MatMulInteger", mapMatMulInteger},
          {"QLinearMatMul", mapQLinearMatMul},
          {"ConvInteger", mapConvInteger},
          {"QLinearConv", mapQLinearConv}};
}

}  // namespace nanoc::onnx_import
