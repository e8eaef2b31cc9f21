// The integer products of the quantization family: MatMulInteger and
// ConvInteger (i32 results), QLinearMatMul and QLinearConv (requantized
// results). Every product accumulates (x - x_zero_point) * (w - w_zero_point)
// in i32, wrapping as two's complement like ONNX Runtime's kernels; the QLinear
// ops then requantize: y = saturate(round(acc * multiplier) + y_zero_point)
// with multiplier = a_scale * b_scale / y_scale, each step rounded to the
// scales' dtype, the last product in f64 (as ONNX's reference computes it).
// The rounding is of the product alone, ties to even, as the spec and ONNX
// Runtime have it (ONNX's Python reference adds the zero point first, which
// differs at ties when the zero point is odd).
#include <algorithm>
#include <string>

#include "compiler/ir/error.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ops/broadcast.h"
#include "compiler/ops/elementwise_table.h"
#include "compiler/ops/quantization.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

IntegerProductShape integerProductShape(const Node& node, size_t a_index, size_t b_index) {
  const TensorType& a = inputType(node, a_index);
  const TensorType& b = inputType(node, b_index);
  if (a.rank() < 1 || b.rank() < 1)
    failNode(node, "operands must have rank >= 1, got " + a.str() + " and " + b.str());
  std::vector<int64_t> da = a.dims, db = b.dims;
  if (da.size() == 1) da.insert(da.begin(), 1);
  if (db.size() == 1) db.push_back(1);
  IntegerProductShape s;
  s.m = da[da.size() - 2];
  s.k = da.back();
  s.n = db.back();
  if (db[db.size() - 2] != s.k) failNode(node, "inner dims differ: " + a.str() + " x " + b.str());
  std::vector<int64_t> batch_a(da.begin(), da.end() - 2), batch_b(db.begin(), db.end() - 2);
  try {
    s.batch = broadcastShapes(batch_a, batch_b);
  } catch (const CompileError& e) {
    failNode(node, std::string("batch dims: ") + e.what());
  }
  s.a_batch_stride = broadcastStrides(batch_a, s.batch);
  s.b_batch_stride = broadcastStrides(batch_b, s.batch);
  for (int64_t& st : s.a_batch_stride) st *= s.m * s.k;
  for (int64_t& st : s.b_batch_stride) st *= s.k * s.n;
  s.batches = product(s.batch, 0, s.batch.size());
  s.out = s.batch;
  if (a.rank() > 1) s.out.push_back(s.m);
  if (b.rank() > 1) s.out.push_back(s.n);
  return s;
}

IntegerConvShape integerConvShape(const Node& node, size_t x_index, size_t w_index) {
  const TensorType& x = inputType(node, x_index);
  const TensorType& w = inputType(node, w_index);
  if (x.rank() < 3)
    failNode(node, "x " + x.str() + " must be [N, C, spatial...] with a spatial dim");
  if (w.rank() != x.rank()) failNode(node, "w " + w.str() + " must have the rank of x " + x.str());
  const size_t k = x.rank() - 2;
  IntegerConvShape s;
  s.n = x.dims[0];
  s.c = x.dims[1];
  s.m = w.dims[0];
  s.group = node.i("group");
  if (s.group < 1 || s.c % s.group != 0 || s.m % s.group != 0)
    failNode(node, "group " + std::to_string(s.group) + " must divide the " + std::to_string(s.c) +
                       " input and " + std::to_string(s.m) + " output channels");
  int64_t w_channels = 0;
  if (__builtin_mul_overflow(w.dims[1], s.group, &w_channels) || w_channels != s.c)
    failNode(node, "w " + w.str() + " with group " + std::to_string(s.group) +
                       " does not fit the " + std::to_string(s.c) + " input channels of x " +
                       x.str());
  s.kernel = intsAttr(node, "kernel_shape", k, 1);
  s.pads = intsAttr(node, "pads", 2 * k, 0);
  s.strides = intsAttr(node, "strides", k, 1);
  s.dilations = intsAttr(node, "dilations", k, 1);
  for (size_t d = 0; d < k; ++d) {
    if (s.kernel[d] != w.dims[2 + d])
      failNode(node, "kernel_shape " + dimsStr(s.kernel) + " differs from w " + w.str());
    int64_t in = x.dims[2 + d];
    int64_t eff = (s.kernel[d] - 1) * s.dilations[d] + 1;
    int64_t padded = in + s.pads[d] + s.pads[k + d];
    if (padded < eff)
      failNode(node, "the dilated kernel (" + std::to_string(eff) +
                         ") is larger than the padded input (" + std::to_string(padded) +
                         ") along spatial dim " + std::to_string(d));
    s.in.push_back(in);
    s.out.push_back((padded - eff) / s.strides[d] + 1);
  }
  return s;
}

namespace {

bool isInt8(DType d) { return d == DType::I8 || d == DType::U8; }
bool isScaleFloat(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16; }

const Value* optionalInput(const Node& node, size_t i) {
  return i < node.inputs.size() ? node.inputs[i] : nullptr;
}

void requireInt8(const Node& node, size_t i, const char* role) {
  const TensorType& t = inputType(node, i);
  if (!isInt8(t.dtype)) failNode(node, std::string(role) + " " + t.str() + " must be i8 or u8");
}

// A zero point, when present, has its operand's dtype.
void requireZeroPointOf(const Node& node, size_t zp, size_t of, const char* role) {
  const Value* v = optionalInput(node, zp);
  if (v && v->type.dtype != inputType(node, of).dtype)
    failNode(node, std::string(role) + " " + v->type.str() + " must have the dtype of operand " +
                       std::to_string(of) + " " + inputType(node, of).str());
}

// Element `i` of an optional integer operand with `count` elements (1: every
// index reads element 0), widened; 0 when absent.
int64_t zeroPoint(const Node& node, const std::vector<const void*>& in, size_t index, int64_t count,
                  int64_t i) {
  if (index >= in.size() || !in[index]) return 0;
  return convertScalar(loadScalar(node.inputs[index]->type.dtype, in[index], count == 1 ? 0 : i),
                       DType::I64)
      .i;
}

int32_t wrapI32(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }

// Scales of a QLinear op: the same float dtype for all.
void requireScales(const Node& node, const std::vector<size_t>& indices) {
  DType d = inputType(node, indices[0]).dtype;
  if (!isScaleFloat(d))
    failNode(node, "scale " + inputType(node, indices[0]).str() + " must be f32, f16 or bf16");
  for (size_t i : indices)
    if (inputType(node, i).dtype != d)
      failNode(node, "scales must share one dtype, got " + inputType(node, indices[0]).str() +
                         " and " + inputType(node, i).str());
}

// The per-element multiplier a_scale * b_scale / y_scale, rounded like the
// scales' dtype at each step.
double multiplier(DType scale_dtype, double a_scale, double b_scale, double y_scale) {
  return roundTo(scale_dtype, roundTo(scale_dtype, a_scale * b_scale) / y_scale);
}

double scaleAt(const Node& node, const std::vector<const void*>& in, size_t index, int64_t count,
               int64_t i) {
  return loadScalar(node.inputs[index]->type.dtype, in[index], count == 1 ? 0 : i).asDouble();
}

// The output dtype of a QLinear op: its y_zero_point's (x's when absent).
DType qlinearOutput(const Node& node, size_t y_zp, size_t x) {
  const Value* v = optionalInput(node, y_zp);
  return v ? v->type.dtype : inputType(node, x).dtype;
}

// ---- matrix products ----

struct ProductOperands {
  size_t a, a_zp, b, b_zp;
};

struct ProductZeroPoints {
  int64_t a_count = 1, b_count = 1;  // 1 (per-tensor), M (per row of A) or N (per column of B)
};

ProductZeroPoints checkProduct(const Node& node, const ProductOperands& op,
                               const IntegerProductShape& s) {
  requireInt8(node, op.a, "a");
  requireInt8(node, op.b, "b");
  requireZeroPointOf(node, op.a_zp, op.a, "a_zero_point");
  requireZeroPointOf(node, op.b_zp, op.b, "b_zero_point");
  return {rowOrColumnVector(node, op.a_zp, "a_zero_point", s.m, true),
          rowOrColumnVector(node, op.b_zp, "b_zero_point", s.n, false)};
}

// Calls finish(output index, row i, column j, acc) for every output element.
template <typename Finish>
void integerProduct(const Node& node, const std::vector<const void*>& in, const ProductOperands& op,
                    Finish finish) {
  IntegerProductShape s = integerProductShape(node, op.a, op.b);
  ProductZeroPoints zp = checkProduct(node, op, s);
  DType ad = node.inputs[op.a]->type.dtype, bd = node.inputs[op.b]->type.dtype;
  for (int64_t batch = 0; batch < s.batches; ++batch) {
    int64_t a_base = 0, b_base = 0, rest = batch;
    for (size_t d = s.batch.size(); d-- > 0;) {
      int64_t at = rest % s.batch[d];
      rest /= s.batch[d];
      a_base += at * s.a_batch_stride[d];
      b_base += at * s.b_batch_stride[d];
    }
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        uint32_t acc = 0;
        for (int64_t p = 0; p < s.k; ++p) {
          int64_t av = convertScalar(loadScalar(ad, in[op.a], a_base + i * s.k + p), DType::I64).i -
                       zeroPoint(node, in, op.a_zp, zp.a_count, i);
          int64_t bv = convertScalar(loadScalar(bd, in[op.b], b_base + p * s.n + j), DType::I64).i -
                       zeroPoint(node, in, op.b_zp, zp.b_count, j);
          acc += static_cast<uint32_t>(av * bv);
        }
        finish((batch * s.m + i) * s.n + j, i, j, static_cast<int32_t>(acc));
      }
  }
}

// MatMulInteger: A, B, a_zero_point?, b_zero_point? -> i32.
OpSchema makeMatMulIntegerSchema() {
  OpSchema s;
  s.name = "MatMulInteger";
  s.min_inputs = 2;
  s.max_inputs = 4;
  s.infer = [](const Node& node) {
    IntegerProductShape shape = integerProductShape(node, 0, 1);
    checkProduct(node, {0, 2, 1, 3}, shape);
    return std::vector<TensorType>{{DType::I32, shape.out}};
  };
  s.reference = [](const Node& node, const std::vector<const void*>& in,
                   const std::vector<void*>& out) {
    auto* y = static_cast<int32_t*>(out[0]);
    integerProduct(node, in, {0, 2, 1, 3},
                   [&](int64_t at, int64_t, int64_t, int32_t acc) { y[at] = acc; });
  };
  return s;
}

// QLinearMatMul: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
// y_zero_point. Scales and zero points of a: scalar or per row; of b: scalar
// or per column; of y: scalar.
OpSchema makeQLinearMatMulSchema() {
  OpSchema s;
  s.name = "QLinearMatMul";
  s.min_inputs = 7;
  s.max_inputs = 8;
  s.infer = [](const Node& node) {
    IntegerProductShape shape = integerProductShape(node, 0, 3);
    checkProduct(node, {0, 2, 3, 5}, shape);
    requireScales(node, {1, 4, 6});
    rowOrColumnVector(node, 1, "a_scale", shape.m, true);
    rowOrColumnVector(node, 4, "b_scale", shape.n, false);
    scalarOrVector(node, 6, "y_scale", 1, "tensor");
    scalarOrVector(node, 7, "y_zero_point", 1, "tensor");
    DType out = qlinearOutput(node, 7, 0);
    if (!isInt8(out)) failNode(node, "y_zero_point must be i8 or u8");
    return std::vector<TensorType>{{out, shape.out}};
  };
  s.reference = [](const Node& node, const std::vector<const void*>& in,
                   const std::vector<void*>& out) {
    IntegerProductShape shape = integerProductShape(node, 0, 3);
    int64_t a_count = rowOrColumnVector(node, 1, "a_scale", shape.m, true);
    int64_t b_count = rowOrColumnVector(node, 4, "b_scale", shape.n, false);
    DType sd = node.inputs[1]->type.dtype;
    DType od = node.outputs[0]->type.dtype;
    QuantRange range = quantRange(node, od);
    double y_scale = scaleAt(node, in, 6, 1, 0);
    double y_zp = static_cast<double>(zeroPoint(node, in, 7, 1, 0));
    integerProduct(node, in, {0, 2, 3, 5}, [&](int64_t at, int64_t i, int64_t j, int32_t acc) {
      double m = multiplier(sd, scaleAt(node, in, 1, a_count, i), scaleAt(node, in, 4, b_count, j),
                            y_scale);
      double v = roundHalfEven(static_cast<double>(acc) * m) + y_zp;
      storeScalar(od, Scalar::ofSigned(saturateQuantized(v, range)), out[0], at);
    });
  };
  return s;
}

// ---- convolutions ----

struct ConvOperands {
  size_t x, x_zp, w, w_zp;
  size_t bias;  // SIZE_MAX: none
};

void checkConv(const Node& node, const ConvOperands& op, const IntegerConvShape& s) {
  requireInt8(node, op.x, "x");
  requireInt8(node, op.w, "w");
  requireZeroPointOf(node, op.x_zp, op.x, "x_zero_point");
  requireZeroPointOf(node, op.w_zp, op.w, "w_zero_point");
  scalarOrVector(node, op.x_zp, "x_zero_point", 1, "tensor");
  scalarOrVector(node, op.w_zp, "w_zero_point", s.m, "output channel");
  if (const Value* b = optionalInput(node, op.bias)) {
    if (b->type.dtype != DType::I32 || b->type.dims != std::vector<int64_t>{s.m})
      failNode(node, "B " + b->type.str() + " must be i32[" + std::to_string(s.m) + "]");
  }
}

std::vector<int64_t> convOutDims(const IntegerConvShape& s) {
  std::vector<int64_t> dims = {s.n, s.m};
  dims.insert(dims.end(), s.out.begin(), s.out.end());
  return dims;
}

// Calls finish(output index, output channel m, acc) for every output element.
template <typename Finish>
void integerConv(const Node& node, const std::vector<const void*>& in, const ConvOperands& op,
                 Finish finish) {
  IntegerConvShape s = integerConvShape(node, op.x, op.w);
  int64_t w_count = scalarOrVector(node, op.w_zp, "w_zero_point", s.m, "output channel");
  DType xd = node.inputs[op.x]->type.dtype, wd = node.inputs[op.w]->type.dtype;
  const size_t k = s.in.size();
  int64_t in_plane = product(s.in, 0, k), out_plane = product(s.out, 0, k);
  int64_t taps = product(s.kernel, 0, k);
  int64_t x_zp = zeroPoint(node, in, op.x_zp, 1, 0);
  const void* bias = op.bias < in.size() ? in[op.bias] : nullptr;
  std::vector<int64_t> pos(k), tap(k);
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t m = 0; m < s.m; ++m) {
      int64_t g = m / s.mPerGroup();
      int64_t w_zp = zeroPoint(node, in, op.w_zp, w_count, m);
      for (int64_t o = 0; o < out_plane; ++o) {
        for (size_t d = k, rest = static_cast<size_t>(o); d-- > 0;) {
          pos[d] = static_cast<int64_t>(rest) % s.out[d];
          rest /= static_cast<size_t>(s.out[d]);
        }
        uint32_t acc = bias ? static_cast<uint32_t>(static_cast<const int32_t*>(bias)[m]) : 0;
        for (int64_t c = 0; c < s.cPerGroup(); ++c) {
          int64_t x_plane = (n * s.c + g * s.cPerGroup() + c) * in_plane;
          int64_t w_base = (m * s.cPerGroup() + c) * taps;
          for (int64_t t = 0; t < taps; ++t) {
            int64_t x_at = 0;
            bool inside = true;
            for (size_t d = k, rest = static_cast<size_t>(t); d-- > 0;) {
              tap[d] = static_cast<int64_t>(rest) % s.kernel[d];
              rest /= static_cast<size_t>(s.kernel[d]);
            }
            for (size_t d = 0; d < k; ++d) {
              int64_t at = pos[d] * s.strides[d] - s.pads[d] + tap[d] * s.dilations[d];
              inside = inside && at >= 0 && at < s.in[d];
              x_at = x_at * s.in[d] + at;
            }
            if (!inside) continue;  // padding holds the zero point: it adds 0
            int64_t xv = convertScalar(loadScalar(xd, in[op.x], x_plane + x_at), DType::I64).i;
            int64_t wv = convertScalar(loadScalar(wd, in[op.w], w_base + t), DType::I64).i;
            acc += static_cast<uint32_t>((xv - x_zp) * (wv - w_zp));
          }
        }
        finish((n * s.m + m) * out_plane + o, m, static_cast<int32_t>(acc));
      }
    }
}

// ConvInteger: x, w, x_zero_point?, w_zero_point? -> i32.
OpSchema makeConvIntegerSchema() {
  OpSchema s;
  s.name = "ConvInteger";
  s.min_inputs = 2;
  s.max_inputs = 4;
  s.infer = [](const Node& node) {
    IntegerConvShape shape = integerConvShape(node, 0, 1);
    checkConv(node, {0, 2, 1, 3, SIZE_MAX}, shape);
    return std::vector<TensorType>{{DType::I32, convOutDims(shape)}};
  };
  s.reference = [](const Node& node, const std::vector<const void*>& in,
                   const std::vector<void*>& out) {
    auto* y = static_cast<int32_t*>(out[0]);
    integerConv(node, in, {0, 2, 1, 3, SIZE_MAX},
                [&](int64_t at, int64_t, int32_t acc) { y[at] = acc; });
  };
  return s;
}

// QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
// y_zero_point, B?; w's scale and zero point scalar or per output channel.
OpSchema makeQLinearConvSchema() {
  OpSchema s;
  s.name = "QLinearConv";
  s.min_inputs = 7;
  s.max_inputs = 9;
  s.infer = [](const Node& node) {
    IntegerConvShape shape = integerConvShape(node, 0, 3);
    checkConv(node, {0, 2, 3, 5, 8}, shape);
    requireScales(node, {1, 4, 6});
    scalarOrVector(node, 1, "x_scale", 1, "tensor");
    scalarOrVector(node, 4, "w_scale", shape.m, "output channel");
    scalarOrVector(node, 6, "y_scale", 1, "tensor");
    scalarOrVector(node, 7, "y_zero_point", 1, "tensor");
    DType out = qlinearOutput(node, 7, 0);
    if (!isInt8(out)) failNode(node, "y_zero_point must be i8 or u8");
    return std::vector<TensorType>{{out, convOutDims(shape)}};
  };
  s.reference = [](const Node& node, const std::vector<const void*>& in,
                   const std::vector<void*>& out) {
    IntegerConvShape shape = integerConvShape(node, 0, 3);
    int64_t w_count = scalarOrVector(node, 4, "w_scale", shape.m, "output channel");
    DType sd = node.inputs[1]->type.dtype;
    DType od = node.outputs[0]->type.dtype;
    QuantRange range = quantRange(node, od);
    double x_scale = scaleAt(node, in, 1, 1, 0), y_scale = scaleAt(node, in, 6, 1, 0);
    double y_zp = static_cast<double>(zeroPoint(node, in, 7, 1, 0));
    integerConv(node, in, {0, 2, 3, 5, 8}, [&](int64_t at, int64_t m, int32_t acc) {
      double mult = multiplier(sd, x_scale, scaleAt(node, in, 4, w_count, m), y_scale);
      double v = roundHalfEven(static_cast<double>(acc) * mult) + y_zp;
      storeScalar(od, Scalar::ofSigned(saturateQuantized(v, range)), out[0], at);
    });
  };
  return s;
}

}  // namespace

std::vector<OpSchema> quantizationProductSchemas() {
  std::vector<OpSchema> list;
  list.push_back(makeMatMulIntegerSchema());
  list.push_back(makeQLinearMatMulSchema());
  list.push_back(makeConvIntegerSchema());
  list.push_back(makeQLinearConvSchema());
  return list;
}

}  // namespace nanoc
