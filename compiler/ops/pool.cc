// MaxPool, MaxPoolWithIndices, AveragePool and LpPool: pooling over
// [N, C, spatial...] with explicit pads (begins, then ends), strides,
// dilations and ceil_mode; AveragePool adds count_include_pad, LpPool p,
// MaxPoolWithIndices storage_order. Output sizes and divisors follow ONNX
// Runtime (pool.h).
#include "compiler/ops/pool.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/float_elements.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

int64_t poolOutputSize(const PoolAxis& a, bool ceil_mode) {
  int64_t span = a.size + a.pad_begin + a.pad_end - a.effectiveKernel();
  int64_t out = (ceil_mode ? (span + a.stride - 1) / a.stride : span / a.stride) + 1;
  if (ceil_mode && (out - 1) * a.stride >= a.size + a.pad_begin) --out;
  return out;
}

int64_t poolTapsWithin(const PoolAxis& a, int64_t out, int64_t lo, int64_t hi) {
  int64_t start = out * a.stride - a.pad_begin;
  int64_t count = 0;
  for (int64_t j = 0; j < a.kernel; ++j) {
    int64_t pos = start + j * a.dilation;
    count += pos >= lo && pos < hi;
  }
  return count;
}

int64_t PoolShape::inPlane() const {
  int64_t p = 1;
  for (const PoolAxis& a : axes) p *= a.size;
  return p;
}

int64_t PoolShape::outPlane() const { return product(out, 0, out.size()); }

std::vector<int64_t> PoolShape::outputDims() const {
  std::vector<int64_t> dims = {n, c};
  dims.insert(dims.end(), out.begin(), out.end());
  return dims;
}

PoolShape poolShape(const Node& node) {
  const TensorType& xt = inputType(node, 0);
  if (xt.rank() < 3) failNode(node, "X must have rank >= 3 ([N, C, spatial...]), got " + xt.str());
  const size_t k = xt.rank() - 2;
  const std::vector<int64_t>& x = xt.dims;
  const std::vector<int64_t>& kernel = intsAttr(node, "kernel_shape", k, 1);
  const std::vector<int64_t>& pads = intsAttr(node, "pads", 2 * k, 0);
  const std::vector<int64_t>& strides = intsAttr(node, "strides", k, 1);
  const std::vector<int64_t>& dilations = intsAttr(node, "dilations", k, 1);
  PoolShape s;
  s.ceil_mode = boolAttr(node, "ceil_mode");
  s.n = x[0];
  s.c = x[1];
  for (size_t i = 0; i < k; ++i) {
    PoolAxis a{x[2 + i], kernel[i], dilations[i], strides[i], pads[i], pads[k + i]};
    std::string axis = "spatial dim " + std::to_string(i);
    // ONNX Runtime refuses these too; it keeps most windows non-empty.
    if (a.pad_begin >= a.kernel || a.pad_end >= a.kernel)
      failNode(node, "pads " + dimsStr(pads) + " must be smaller than kernel_shape " +
                         dimsStr(kernel) + " along " + axis);
    if (a.kernel > (int64_t{1} << 30) || a.dilation > (int64_t{1} << 30) ||
        a.stride > (int64_t{1} << 30))
      failNode(node, "window attributes out of range along " + axis);
    if (a.size + a.pad_begin + a.pad_end < a.effectiveKernel())
      failNode(node, "dilated kernel (" + std::to_string(a.effectiveKernel()) +
                         ") is larger than the padded input along " + axis + " (" +
                         std::to_string(a.size + a.pad_begin + a.pad_end) + ")");
    s.axes.push_back(a);
    s.out.push_back(poolOutputSize(a, s.ceil_mode));
  }
  return s;
}

namespace {

// Calls fn(plane, o, window) for every output element, `o` its flat index in
// the output plane; window(visit) calls visit(x_index) for each of the
// window's taps inside the input, in row-major tap order (x_index counts
// from the start of the plane).
template <typename Fn>
void forEachWindow(const PoolShape& s, Fn fn) {
  const size_t k = s.axes.size();
  std::vector<int64_t> in_stride(k, 1);
  for (size_t i = k - 1; i > 0; --i) in_stride[i - 1] = in_stride[i] * s.axes[i].size;
  std::vector<int64_t> pos(k), tap(k);
  for (int64_t plane = 0; plane < s.planes(); ++plane)
    for (int64_t o = 0; o < s.outPlane(); ++o) {
      int64_t rem = o;
      for (size_t i = k; i-- > 0;) {
        pos[i] = rem % s.out[i];
        rem /= s.out[i];
      }
      auto window = [&](auto visit) {
        std::fill(tap.begin(), tap.end(), 0);
        for (;;) {
          int64_t at = 0;
          bool inside = true;
          for (size_t i = 0; i < k && inside; ++i) {
            const PoolAxis& a = s.axes[i];
            int64_t p = pos[i] * a.stride - a.pad_begin + tap[i] * a.dilation;
            inside = p >= 0 && p < a.size;
            at += p * in_stride[i];
          }
          if (inside) visit(at);
          size_t i = k;
          while (i > 0 && ++tap[i - 1] == s.axes[i - 1].kernel) tap[--i] = 0;
          if (i == 0) break;
        }
      };
      fn(plane, o, window);
    }
}

void requireDType(const Node& node, std::initializer_list<DType> allowed) {
  const TensorType& x = inputType(node, 0);
  for (DType d : allowed)
    if (x.dtype == d) return;
  failNode(node, "X is " + x.str() + ", a dtype this op does not support");
}

// The dtypes MaxPool compares: floats and integers.
const std::initializer_list<DType> kMaxPoolDTypes = {
    DType::F16, DType::BF16, DType::F32, DType::F64, DType::I8,  DType::U8,
    DType::I16, DType::U16,  DType::I32, DType::U32, DType::I64, DType::U64};

// T is the storage type, `key` its value for comparison (identity but for
// f16 and bf16), `lowest` the storage of the lowest value.
template <typename T, typename Key>
void maxPoolTyped(const PoolShape& s, const void* in, void* out, int64_t* indices,
                  bool column_major, Key key, T lowest) {
  const T* x = static_cast<const T*>(in);
  T* y = static_cast<T*>(out);
  const int64_t in_plane = s.inPlane(), out_plane = s.outPlane();
  const size_t k = s.axes.size();
  forEachWindow(s, [&](int64_t plane, int64_t o, auto window) {
    // Padding never wins; a window with no input taps (possible only with
    // dilation) gives lowest(), as in ONNX Runtime. NaN never wins either.
    T m = lowest;
    auto m_key = key(m);
    int64_t arg = 0;
    window([&](int64_t at) {
      T v = x[plane * in_plane + at];
      auto v_key = key(v);
      if (v_key > m_key) m = v, m_key = v_key, arg = at;
    });
    y[plane * out_plane + o] = m;
    if (!indices) return;
    if (column_major) {
      // The spatial position in column-major order (first dim fastest).
      int64_t rem = arg, cm = 0, stride = 1;
      std::vector<int64_t> p(k);
      for (size_t i = k; i-- > 0;) {
        p[i] = rem % s.axes[i].size;
        rem /= s.axes[i].size;
      }
      for (size_t i = 0; i < k; ++i) {
        cm += p[i] * stride;
        stride *= s.axes[i].size;
      }
      arg = cm;
    }
    indices[plane * out_plane + o] = plane * in_plane + arg;
  });
}

void maxPool(const Node& node, const std::vector<const void*>& in, const std::vector<void*>& out,
             int64_t* indices, bool column_major) {
  PoolShape s = poolShape(node);
  auto same = [](auto v) { return v; };
  auto run = [&](auto lowest, auto key) {
    maxPoolTyped(s, in[0], out[0], indices, column_major, key, lowest);
  };
  auto lowestOf = [](auto v) { return std::numeric_limits<decltype(v)>::lowest(); };
  switch (node.inputs[0]->type.dtype) {
    case DType::F32:
      return run(lowestOf(float{}), same);
    case DType::F64:
      return run(lowestOf(double{}), same);
    case DType::F16:
      return run(uint16_t{0xfbff}, halfToFloat);
    case DType::BF16:
      return run(uint16_t{0xff7f}, bf16ToFloat);
    case DType::I8:
      return run(lowestOf(int8_t{}), same);
    case DType::U8:
      return run(lowestOf(uint8_t{}), same);
    case DType::I16:
      return run(lowestOf(int16_t{}), same);
    case DType::U16:
      return run(lowestOf(uint16_t{}), same);
    case DType::I32:
      return run(lowestOf(int32_t{}), same);
    case DType::U32:
      return run(lowestOf(uint32_t{}), same);
    case DType::I64:
      return run(lowestOf(int64_t{}), same);
    case DType::U64:
      return run(lowestOf(uint64_t{}), same);
    default:
      failNode(node, "unsupported dtype");
  }
}

}  // namespace

OpSchema makeMaxPoolSchema() {
  OpSchema schema;
  schema.name = "MaxPool";
  schema.infer = [](const Node& node) {
    requireDType(node, kMaxPoolDTypes);
    return std::vector<TensorType>{{node.inputs[0]->type.dtype, poolShape(node).outputDims()}};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) { maxPool(node, in, out, nullptr, false); };
  return schema;
}

// MaxPool's two-output form: Y and the flat index into X of each maximum,
// row-major (storage_order 0) or with the spatial dims column-major (1).
OpSchema makeMaxPoolWithIndicesSchema() {
  OpSchema schema;
  schema.name = "MaxPoolWithIndices";
  schema.num_outputs = 2;
  schema.infer = [](const Node& node) {
    requireDType(node, kMaxPoolDTypes);
    boolAttr(node, "storage_order");
    std::vector<int64_t> dims = poolShape(node).outputDims();
    return std::vector<TensorType>{{node.inputs[0]->type.dtype, dims}, {DType::I64, dims}};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    maxPool(node, in, out, static_cast<int64_t*>(out[1]), boolAttr(node, "storage_order") != 0);
  };
  return schema;
}

OpSchema makeAveragePoolSchema() {
  OpSchema schema;
  schema.name = "AveragePool";
  schema.infer = [](const Node& node) {
    requireF32(node);
    boolAttr(node, "count_include_pad");
    return std::vector<TensorType>{{DType::F32, poolShape(node).outputDims()}};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    PoolShape s = poolShape(node);
    bool include_pad = boolAttr(node, "count_include_pad");
    const auto* x = static_cast<const float*>(in[0]);
    float* y = static_cast<float*>(out[0]);
    const size_t k = s.axes.size();
    forEachWindow(s, [&](int64_t plane, int64_t o, auto window) {
      double sum = 0;
      window([&](int64_t at) { sum += x[plane * s.inPlane() + at]; });
      int64_t count = 1, rem = o;
      for (size_t i = k; i-- > 0;) {
        const PoolAxis& a = s.axes[i];
        int64_t p = rem % s.out[i];
        rem /= s.out[i];
        count *= include_pad ? poolTapsWithin(a, p, -a.pad_begin, a.size + a.pad_end)
                             : poolTapsWithin(a, p, 0, a.size);
      }
      // An empty window (dilation only) gives 0, as in ONNX Runtime.
      y[plane * s.outPlane() + o] = count ? static_cast<float>(sum / count) : 0.0f;
    });
  };
  return schema;
}

// LpPool: (sum over the window of |x|^p)^(1/p); padding adds nothing.
OpSchema makeLpPoolSchema() {
  OpSchema schema;
  schema.name = "LpPool";
  schema.infer = [](const Node& node) {
    requireF32(node);
    int64_t p = node.i("p");
    if (p < 1 || p > 64) failNode(node, "p must be in [1, 64], got " + std::to_string(p));
    return std::vector<TensorType>{{DType::F32, poolShape(node).outputDims()}};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    PoolShape s = poolShape(node);
    const auto p = static_cast<double>(node.i("p"));
    const auto* x = static_cast<const float*>(in[0]);
    float* y = static_cast<float*>(out[0]);
    forEachWindow(s, [&](int64_t plane, int64_t o, auto window) {
      double sum = 0;
      window([&](int64_t at) { sum += std::pow(std::fabs(x[plane * s.inPlane() + at]), p); });
      y[plane * s.outPlane() + o] = static_cast<float>(std::pow(sum, 1.0 / p));
    });
  };
  return schema;
}

}  // namespace nanoc
