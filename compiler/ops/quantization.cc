// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear: shape rules and
// references, and the geometry the whole quantization family shares
// (quantization.h). The integer products are in quantization_products.cc.
#include "compiler/ops/quantization.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "compiler/ir/float8.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ir/subbyte.h"
#include "compiler/ops/elementwise_table.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

std::vector<OpSchema> quantizationProductSchemas();  // quantization_products.cc

QuantGranularity quantGranularity(const Node& node) {
  const TensorType& x = inputType(node, 0);
  const TensorType& scale = inputType(node, 1);
  const Value* zp = node.inputs.size() > 2 ? node.inputs[2] : nullptr;
  // One-element scale and zero point are per-tensor whatever their ranks
  // (ONNX's tests pair a scalar scale with a [1] zero point).
  if (zp && zp->type.dims != scale.dims && !(zp->type.numel() == 1 && scale.numel() == 1))
    failNode(node, "zero point " + zp->type.str() + " must have the shape of scale " + scale.str());
  int64_t axis = node.i("axis");
  int64_t block = node.i("block_size");
  if (block < 0) failNode(node, "block_size must be >= 0, got " + std::to_string(block));
  QuantGranularity g;
  if (scale.numel() == 1) {  // per-tensor
    g.inner = x.numel();
    return g;
  }
  const std::vector<int64_t>& d = x.dims;
  if (axis < 0 || axis >= static_cast<int64_t>(d.size()))
    failNode(node, "axis " + std::to_string(axis) + " is out of range for x " + x.str() +
                       " (scale " + scale.str() + " is not per-tensor)");
  auto ax = static_cast<size_t>(axis);
  g.outer = product(d, 0, ax);
  g.axis_dim = d[ax];
  g.inner = product(d, ax + 1, d.size());
  if (block == 0) {
    if (scale.rank() != 1 || scale.dims[0] != g.axis_dim)
      failNode(node, "per-axis scale " + scale.str() + " must be [" + std::to_string(g.axis_dim) +
                         "] (x " + x.str() + ", axis " + std::to_string(axis) +
                         "); blocked quantization needs block_size");
    g.axis_stride = 1;
    return g;
  }
  std::vector<int64_t> want = d;
  want[ax] = g.axis_dim == 0 ? 0 : (g.axis_dim - 1) / block + 1;  // ceil, without overflow
  if (scale.dims != want)
    failNode(node, "blocked scale " + scale.str() + " must be " + dimsStr(want) + " (x " + x.str() +
                       ", axis " + std::to_string(axis) + ", block_size " + std::to_string(block) +
                       ")");
  g.block = block;
  g.inner_stride = 1;
  g.axis_stride = g.inner;
  g.outer_stride = want[ax] * g.inner;
  return g;
}

QuantRange quantRange(const Node& node, DType dtype) {
  switch (dtype) {
    case DType::I8:
      return {-128, 127};
    case DType::U8:
      return {0, 255};
    case DType::I16:
      return {-32768, 32767};
    case DType::U16:
      return {0, 65535};
    case DType::I32:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case DType::I4:
      return {-8, 7};
    case DType::U4:
      return {0, 15};
    case DType::I2:
      return {-2, 1};
    case DType::U2:
      return {0, 3};
    default:
      failNode(node, "dtype " + std::string(dtypeName(dtype)) +
                         " is not a supported quantized type (i8, u8, i16, u16, i32, i4, u4, i2, "
                         "u2, the float8 types, f4e2m1)");
  }
}

bool isQuantizedFloat(DType dtype) { return isFloat8(dtype) || dtype == DType::F4E2M1; }

double roundHalfEven(double v) {
  double r = std::round(v);  // ties away from zero
  if (std::fabs(v - std::trunc(v)) == 0.5) r = 2.0 * std::round(v / 2.0);
  return r;
}

double roundTo(DType dtype, double v) {
  if (dtype == DType::F64) return v;
  uint64_t bits = 0;
  storeScalar(dtype, Scalar::ofFloat(v), &bits, 0);
  return loadScalar(dtype, &bits, 0).f;
}

int64_t saturateQuantized(double v, QuantRange range) {
  if (std::isnan(v)) return range.lo;
  return static_cast<int64_t>(
      std::clamp(v, static_cast<double>(range.lo), static_cast<double>(range.hi)));
}

int64_t scalarOrVector(const Node& node, size_t index, const char* role, int64_t count,
                       const char* count_what) {
  if (index >= node.inputs.size() || !node.inputs[index]) return 1;
  const TensorType& t = node.inputs[index]->type;
  if (t.numel() == 1) return 1;
  if (t.rank() == 1 && t.dims[0] == count) return count;
  failNode(node, std::string(role) + " " + t.str() + " must be a scalar or [" +
                     std::to_string(count) + "] (one per " + count_what + ")");
}

int64_t rowOrColumnVector(const Node& node, size_t index, const char* role, int64_t count,
                          bool row) {
  if (index < node.inputs.size() && node.inputs[index]) {
    const std::vector<int64_t>& d = node.inputs[index]->type.dims;
    size_t r = d.size();
    if (r >= 2 && d[r - 2] == (row ? count : 1) && d[r - 1] == (row ? 1 : count) &&
        product(d, 0, r - 2) == 1)
      return count;
  }
  return scalarOrVector(node, index, role, count, row ? "row of a" : "column of b");
}

namespace {

bool isQuantFloat(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16; }

DType dtypeAttr(const Node& node, const char* key) {
  int64_t v = node.i(key);
  if (v < 0 || v > static_cast<int64_t>(DType::F4E2M1))
    failNode(node, std::string("attribute '") + key + "' is not a dtype: " + std::to_string(v));
  return static_cast<DType>(v);
}

void requireDType(const Node& node, size_t index, const char* role, bool ok) {
  if (!ok)
    failNode(node, std::string(role) + " " + node.inputs[index]->type.str() +
                       " has an unsupported dtype for this op");
}

// ---- QuantizeLinear: y = saturate(round(x / scale) + zero_point) ----
// X, scale, zero_point?; axis, block_size, output_dtype, precision (the dtype
// the division rounds to), saturate (float8 outputs only; default 1).
// To an integer type, round half to even and clamp to the type's range; to a
// float8 type or f4e2m1, x / scale + zero_point converted as Cast does (round
// to nearest even; float8 past its range: saturate, or inf/NaN with saturate
// 0; f4e2m1 always saturates).

OpSchema makeQuantizeLinearSchema() {
  OpSchema s;
  s.name = "QuantizeLinear";
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    const TensorType& scale = inputType(node, 1);
    requireDType(node, 0, "x", isQuantFloat(x.dtype) || x.dtype == DType::I32);
    requireDType(node, 1, "scale", isQuantFloat(scale.dtype) || scale.dtype == DType::I32);
    DType out = dtypeAttr(node, "output_dtype");
    if (out == DType::I32) failNode(node, "output_dtype i32 is not a QuantizeLinear output type");
    if (!isQuantizedFloat(out)) quantRange(node, out);
    DType precision = dtypeAttr(node, "precision");
    if (!isQuantFloat(precision) && precision != DType::F64)
      failNode(node, "precision " + std::string(dtypeName(precision)) +
                         " must be a float dtype (f32, f16, bf16, f64)");
    if (node.inputs.size() > 2 && node.inputs[2] && node.inputs[2]->type.dtype != out)
      failNode(node, "zero point " + node.inputs[2]->type.str() + " must have the output dtype " +
                         std::string(dtypeName(out)));
    quantGranularity(node);
    return std::vector<TensorType>{{out, x.dims}};
  };
  s.reference = [](const Node& node, const std::vector<const void*>& in,
                   const std::vector<void*>& out) {
    QuantGranularity g = quantGranularity(node);
    DType xd = node.inputs[0]->type.dtype, sd = node.inputs[1]->type.dtype;
    DType od = static_cast<DType>(node.i("output_dtype"));
    DType precision = static_cast<DType>(node.i("precision"));
    const bool to_float = isQuantizedFloat(od);
    const bool saturate = !node.has("saturate") || node.i("saturate") != 0;
    QuantRange range = to_float ? QuantRange{} : quantRange(node, od);
    const void* zp = in.size() > 2 ? in[2] : nullptr;
    int64_t idx = 0;
    for (int64_t o = 0; o < g.outer; ++o)
      for (int64_t a = 0; a < g.axis_dim; ++a)
        for (int64_t i = 0; i < g.inner; ++i, ++idx) {
          int64_t si = g.scaleIndex(o, a, i);
          double x = roundTo(precision, loadScalar(xd, in[0], idx).asDouble());
          double scale = roundTo(precision, loadScalar(sd, in[1], si).asDouble());
          if (to_float) {
            // The sum in the division's compute type (f64 for f64, else
            // f32), as the generated code adds.
            double q = roundTo(precision, x / scale);
            if (zp)
              q = roundTo(precision == DType::F64 ? DType::F64 : DType::F32,
                          q + loadScalar(od, zp, si).asDouble());
            storeScalar(od, Scalar::ofFloat(q), out[0], idx, saturate);
            continue;
          }
          double q = roundHalfEven(roundTo(precision, x / scale));
          if (zp) q += loadScalar(od, zp, si).asDouble();
          storeScalar(od, Scalar::ofSigned(saturateQuantized(q, range)), out[0], idx);
        }
  };
  return s;
}

// ---- DequantizeLinear: y = (x - zero_point) * scale ----
// X, scale, zero_point?; axis, block_size, output_dtype. The difference is
// exact, converted to f32 once, multiplied in f32 and rounded to the output.
// From a float8 type or f4e2m1, x and the zero point are decoded to f32 and
// the difference taken in f32.

OpSchema makeDequantizeLinearSchema() {
  OpSchema s;
  s.name = "DequantizeLinear";
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    if (!isQuantizedFloat(x.dtype)) quantRange(node, x.dtype);
    requireDType(node, 1, "scale", isQuantFloat(inputType(node, 1).dtype));
    DType out = dtypeAttr(node, "output_dtype");
    if (!isQuantFloat(out))
      failNode(node, "output_dtype " + std::string(dtypeName(out)) + " must be f32, f16 or bf16");
    if (node.inputs.size() > 2 && node.inputs[2] && node.inputs[2]->type.dtype != x.dtype)
      failNode(node, "zero point " + node.inputs[2]->type.str() + " must have x's dtype " +
                         std::string(dtypeName(x.dtype)));
    quantGranularity(node);
    return std::vector<TensorType>{{out, x.dims}};
  };
  s.reference = [](const Node& node, const std::vector<const void*>& in,
                   const std::vector<void*>& out) {
    QuantGranularity g = quantGranularity(node);
    DType xd = node.inputs[0]->type.dtype, sd = node.inputs[1]->type.dtype;
    DType od = node.outputs[0]->type.dtype;
    const void* zp = in.size() > 2 ? in[2] : nullptr;
    int64_t idx = 0;
    for (int64_t o = 0; o < g.outer; ++o)
      for (int64_t a = 0; a < g.axis_dim; ++a)
        for (int64_t i = 0; i < g.inner; ++i, ++idx) {
          int64_t si = g.scaleIndex(o, a, i);
          if (isQuantizedFloat(xd)) {
            auto v = static_cast<float>(loadScalar(xd, in[0], idx).f);
            if (zp) v -= static_cast<float>(loadScalar(xd, zp, si).f);
            float y = v * static_cast<float>(loadScalar(sd, in[1], si).f);
            storeScalar(od, Scalar::ofFloat(y), out[0], idx);
            continue;
          }
          int64_t diff = convertScalar(loadScalar(xd, in[0], idx), DType::I64).i;
          if (zp) diff -= convertScalar(loadScalar(xd, zp, si), DType::I64).i;
          float scale = static_cast<float>(loadScalar(sd, in[1], si).f);
          float y = static_cast<float>(diff) * scale;
          storeScalar(od, Scalar::ofFloat(y), out[0], idx);
        }
  };
  return s;
}

// ---- DynamicQuantizeLinear: x f32 -> y u8, y_scale f32[], y_zero_point u8[] ----
// The range [min(0, min x), max(0, max x)] maps onto [0, 255]:
// scale = (max - min) / 255 (1 / 255 when the range is empty),
// zero_point = round(clamp(-min / scale, 0, 255)),
// y = clamp(round(x / scale) + zero_point, 0, 255).

OpSchema makeDynamicQuantizeLinearSchema() {
  OpSchema s;
  s.name = "DynamicQuantizeLinear";
  s.min_inputs = s.max_inputs = 1;
  s.num_outputs = 3;
  s.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    if (x.dtype != DType::F32) failNode(node, "x " + x.str() + " must be f32");
    return std::vector<TensorType>{{DType::U8, x.dims}, {DType::F32, {}}, {DType::U8, {}}};
  };
  s.reference = [](const Node& node, const std::vector<const void*>& in,
                   const std::vector<void*>& out) {
    int64_t n = node.inputs[0]->type.numel();
    const float* x = static_cast<const float*>(in[0]);
    float lo = 0, hi = 0;
    for (int64_t i = 0; i < n; ++i) {
      lo = std::min(lo, x[i]);
      hi = std::max(hi, x[i]);
    }
    float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
    float zp_f = std::clamp(0.0f - lo / scale, 0.0f, 255.0f);
    auto zp = static_cast<uint8_t>(roundHalfEven(zp_f));
    auto* y = static_cast<uint8_t*>(out[0]);
    for (int64_t i = 0; i < n; ++i)
      y[i] = static_cast<uint8_t>(
          saturateQuantized(roundHalfEven(x[i] / scale) + static_cast<double>(zp), {0, 255}));
    *static_cast<float*>(out[1]) = scale;
    *static_cast<uint8_t*>(out[2]) = zp;
  };
  return s;
}

}  // namespace

std::vector<OpSchema> quantizationSchemas() {
  std::vector<OpSchema> list = quantizationProductSchemas();
  list.push_back(makeQuantizeLinearSchema());
  list.push_back(makeDequantizeLinearSchema());
  list.push_back(makeDynamicQuantizeLinearSchema());
  return list;
}

}  // namespace nanoc
