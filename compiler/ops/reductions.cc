// The reduction family: Reduce* (one table row each, see reduce.h), ArgMax,
// ArgMin, CumSum, CumProd and TopK. Shape rules and host references.
//
// References compute f16/bf16 through f32 storage and every float dtype with
// a double accumulator; integers wrap (modular arithmetic) like the kernels.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <type_traits>
#include <vector>

#include "compiler/ir/op_registry.h"
#include "compiler/ops/float_elements.h"
#include "compiler/ops/reduce.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc {

const std::vector<ReduceKind>& reduceKinds() {
  using M = ReduceMap;
  using C = ReduceCombine;
  using F = ReduceFinish;
  static const std::vector<ReduceKind> kinds = {
      // op                 map            combine  finish              ints   bools
      {"ReduceSum", M::Identity, C::Add, F::None, true, false},
      {"ReduceMean", M::Identity, C::Add, F::DivideByCount, true, false},
      {"ReduceMax", M::Identity, C::Max, F::None, true, true},
      {"ReduceMin", M::Identity, C::Min, F::None, true, true},
      {"ReduceProd", M::Identity, C::Mul, F::None, true, false},
      {"ReduceL1", M::Abs, C::Add, F::None, true, false},
      {"ReduceL2", M::Square, C::Add, F::Sqrt, true, false},
      {"ReduceLogSum", M::Identity, C::Add, F::Log, false, false},
      {"ReduceLogSumExp", M::ExpShifted, C::Add, F::LogPlusShift, false, false},
      {"ReduceSumSquare", M::Square, C::Add, F::None, true, false},
  };
  return kinds;
}

const ReduceKind* findReduceKind(std::string_view op) {
  for (const ReduceKind& k : reduceKinds())
    if (k.op == op) return &k;
  return nullptr;
}

namespace {

bool isIntegerDType(DType d) { return !isFloatDType(d) && d != DType::Bool; }

const std::vector<int64_t>& checkedAxes(const Node& node, size_t rank) {
  const std::vector<int64_t>& axes = node.ints("axes");
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= static_cast<int64_t>(rank))
      failNode(node, "attribute 'axes' " + dimsStr(axes) + " is out of range for rank " +
                         std::to_string(rank));
    if (i > 0 && axes[i] <= axes[i - 1])
      failNode(node, "attribute 'axes' " + dimsStr(axes) + " must be sorted and distinct");
  }
  return axes;
}

int64_t checkedAxis(const Node& node, const TensorType& x) {
  int64_t axis = node.i("axis");
  if (axis < 0 || axis >= static_cast<int64_t>(x.rank()))
    failNode(node, "attribute 'axis' is " + std::to_string(axis) + ", must be in [0, " +
                       std::to_string(x.rank()) + ") for " + x.str());
  return axis;
}

}  // namespace

ReduceGeometry reduceGeometry(const Node& node) {
  const TensorType& x = inputType(node, 0);
  const std::vector<int64_t>& axes = checkedAxes(node, x.rank());
  struct Run {
    ReduceRun run;
    bool reduced;
  };
  std::vector<Run> runs;
  for (size_t d = 0; d < x.rank(); ++d) {
    if (x.dims[d] == 1) continue;
    bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d));
    int64_t stride = product(x.dims, d + 1, x.rank());
    if (!runs.empty() && runs.back().reduced == reduced) {
      runs.back().run.size *= x.dims[d];
      runs.back().run.stride = stride;
    } else {
      runs.push_back({{x.dims[d], stride}, reduced});
    }
  }
  ReduceGeometry g;
  if (!runs.empty() && !runs.back().reduced) {
    g.inner = runs.back().run.size;
    runs.pop_back();
  }
  for (const Run& r : runs) {
    if (r.reduced) {
      g.reduced.push_back(r.run);
      g.reduced_count *= r.run.size;
    } else {
      g.outer_kept.push_back(r.run);
      g.outer *= r.run.size;
    }
  }
  return g;
}

std::vector<int64_t> reduceOutputDims(const Node& node) {
  const TensorType& x = inputType(node, 0);
  const std::vector<int64_t>& axes = checkedAxes(node, x.rank());
  bool keep = boolAttr(node, "keepdims") != 0;
  std::vector<int64_t> dims;
  for (size_t d = 0; d < x.rank(); ++d) {
    if (!std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d)))
      dims.push_back(x.dims[d]);
    else if (keep)
      dims.push_back(1);
  }
  return dims;
}

int64_t runOffset(const std::vector<ReduceRun>& runs, int64_t index) {
  int64_t offset = 0;
  for (size_t i = runs.size(); i-- > 0;) {
    offset += (index % runs[i].size) * runs[i].stride;
    index /= runs[i].size;
  }
  return offset;
}

AxisGeometry axisGeometry(const Node& node, int64_t axis) {
  const TensorType& x = inputType(node, 0);
  auto a = static_cast<size_t>(axis);
  return {product(x.dims, 0, a), x.dims[a], product(x.dims, a + 1, x.rank())};
}

namespace {

// Runs `body` with a typed pointer tag for `dtype`: f16/bf16 buffers are
// widened to f32 around the call, so bodies see float, double or integers.
template <typename Body>
void withHostType(DType dtype, const std::vector<const void*>& in, int64_t in_numel,
                  const std::vector<void*>& out, const std::vector<int64_t>& out_numel,
                  const std::vector<bool>& out_is_value, Body&& body) {
  auto run = [&](auto tag) { body(tag, in, out); };
  switch (dtype) {
    case DType::F32:
      return run(float{});
    case DType::F64:
      return run(double{});
    case DType::I8:
      return run(int8_t{});
    case DType::U8:
    case DType::Bool:
      return run(uint8_t{});
    case DType::I16:
      return run(int16_t{});
    case DType::U16:
      return run(uint16_t{});
    case DType::I32:
      return run(int32_t{});
    case DType::U32:
      return run(uint32_t{});
    case DType::I64:
      return run(int64_t{});
    case DType::U64:
      return run(uint64_t{});
    case DType::F16:
    case DType::BF16: {
      bool half = dtype == DType::F16;
      std::vector<float> x(static_cast<size_t>(in_numel));
      const auto* src = static_cast<const uint16_t*>(in[0]);
      for (int64_t i = 0; i < in_numel; ++i)
        x[i] = half ? halfToFloat(src[i]) : bf16ToFloat(src[i]);
      std::vector<const void*> wide_in = in;
      wide_in[0] = x.data();
      std::vector<std::vector<float>> outs(out.size());
      std::vector<void*> wide_out = out;
      for (size_t i = 0; i < out.size(); ++i)
        if (out_is_value[i]) {
          outs[i].resize(static_cast<size_t>(out_numel[i]));
          wide_out[i] = outs[i].data();
        }
      body(float{}, wide_in, wide_out);
      for (size_t i = 0; i < out.size(); ++i)
        if (out_is_value[i]) {
          auto* dst = static_cast<uint16_t*>(out[i]);
          for (int64_t j = 0; j < out_numel[i]; ++j)
            dst[j] = half ? floatToHalf(outs[i][j]) : floatToBf16(outs[i][j]);
        }
      return;
    }
  }
}

// Float -> integer like LLVM's fptosi.sat / fptoui.sat: saturating, NaN -> 0.
template <typename T>
T saturatingCast(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<T>::lowest()))
    return std::numeric_limits<T>::lowest();
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

// ---- Reduce* ----

template <typename T>
void reduceTyped(const ReduceKind& kind, const ReduceGeometry& g, bool is_bool, const T* x, T* y) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  // Floats accumulate in double; integers in uint64 (wrapping, truncated to
  // T at the end, which equals wrapping in T) except Max/Min, which compare.
  using Acc = std::conditional_t<kFloat, double, uint64_t>;
  auto init = [&]() -> Acc {
    switch (kind.combine) {
      case ReduceCombine::Add:
        return 0;
      case ReduceCombine::Mul:
        return 1;
      case ReduceCombine::Max:
        if constexpr (kFloat) return -std::numeric_limits<double>::infinity();
        return static_cast<Acc>(std::numeric_limits<T>::lowest());
      case ReduceCombine::Min:
        if constexpr (kFloat) return std::numeric_limits<double>::infinity();
        return static_cast<Acc>(is_bool ? T{1} : std::numeric_limits<T>::max());
    }
    return 0;
  };
  auto combine = [&](Acc acc, Acc v) -> Acc {
    switch (kind.combine) {
      case ReduceCombine::Add:
        return acc + v;
      case ReduceCombine::Mul:
        return acc * v;
      case ReduceCombine::Max:
        if constexpr (kFloat) return std::isnan(v) || std::isnan(acc) ? NAN : std::max(acc, v);
        return static_cast<Acc>(std::max(static_cast<T>(acc), static_cast<T>(v)));
      case ReduceCombine::Min:
        if constexpr (kFloat) return std::isnan(v) || std::isnan(acc) ? NAN : std::min(acc, v);
        return static_cast<Acc>(std::min(static_cast<T>(acc), static_cast<T>(v)));
    }
    return acc;
  };
  auto map = [&](T v, double shift) -> Acc {
    switch (kind.map) {
      case ReduceMap::Identity:
        return static_cast<Acc>(v);
      case ReduceMap::Abs:
        if constexpr (kFloat)
          return std::fabs(static_cast<double>(v));
        else
          return v < 0 ? Acc{0} - static_cast<Acc>(v) : static_cast<Acc>(v);
      case ReduceMap::Square:
        return static_cast<Acc>(v) * static_cast<Acc>(v);
      case ReduceMap::ExpShifted:
        if constexpr (kFloat) return std::exp(static_cast<double>(v) - shift);
        return 0;
    }
    return 0;
  };
  auto finish = [&](Acc acc, double shift) -> T {
    if constexpr (kFloat) {
      switch (kind.finish) {
        case ReduceFinish::None:
          return static_cast<T>(acc);
        case ReduceFinish::DivideByCount:
          return static_cast<T>(acc / static_cast<double>(g.reduced_count));
        case ReduceFinish::Sqrt:
          return static_cast<T>(std::sqrt(acc));
        case ReduceFinish::Log:
          return static_cast<T>(std::log(acc));
        case ReduceFinish::LogPlusShift:
          return static_cast<T>(std::log(acc) + shift);
      }
      return 0;
    } else {
      T v = static_cast<T>(acc);
      switch (kind.finish) {
        case ReduceFinish::DivideByCount:
          if (g.reduced_count == 0) return 0;  // the kernels' choice: no trap
          if constexpr (std::is_signed_v<T>)
            return static_cast<T>(static_cast<int64_t>(v) / g.reduced_count);
          else
            return static_cast<T>(static_cast<uint64_t>(v) /
                                  static_cast<uint64_t>(g.reduced_count));
        case ReduceFinish::Sqrt:
          return saturatingCast<T>(std::sqrt(static_cast<double>(v)));
        default:
          return v;
      }
    }
  };
  for (int64_t o = 0; o < g.outer; ++o) {
    int64_t base = runOffset(g.outer_kept, o);
    for (int64_t j = 0; j < g.inner; ++j) {
      auto at = [&](int64_t r) { return x[base + runOffset(g.reduced, r) + j]; };
      double shift = 0;
      if (kind.needsShift()) {
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t r = 0; r < g.reduced_count; ++r) m = std::max(m, static_cast<double>(at(r)));
        shift = std::isfinite(m) ? m : 0.0;
      }
      Acc acc = init();
      for (int64_t r = 0; r < g.reduced_count; ++r) acc = combine(acc, map(at(r), shift));
      y[o * g.inner + j] = finish(acc, shift);
    }
  }
}

OpSchema makeReduceSchema(const ReduceKind& kind) {
  OpSchema schema;
  schema.name = std::string(kind.op);
  schema.infer = [&kind](const Node& node) {
    const TensorType& x = inputType(node, 0);
    bool ok = isFloatDType(x.dtype) || (kind.integers && isIntegerDType(x.dtype)) ||
              (kind.booleans && x.dtype == DType::Bool);
    if (!ok)
      failNode(node, "input is " + x.str() + "; " + std::string(kind.op) + " supports " +
                         (kind.booleans   ? "float, integer and bool"
                          : kind.integers ? "float and integer"
                                          : "float") +
                         " dtypes");
    reduceGeometry(node);
    return std::vector<TensorType>{{x.dtype, reduceOutputDims(node)}};
  };
  schema.reference = [&kind](const Node& node, const std::vector<const void*>& in,
                             const std::vector<void*>& out) {
    ReduceGeometry g = reduceGeometry(node);
    const TensorType& x = node.inputs[0]->type;
    withHostType(x.dtype, in, x.numel(), out, {node.outputs[0]->type.numel()}, {true},
                 [&](auto tag, const std::vector<const void*>& i, const std::vector<void*>& o) {
                   using T = decltype(tag);
                   reduceTyped<T>(kind, g, x.dtype == DType::Bool, static_cast<const T*>(i[0]),
                                  static_cast<T*>(o[0]));
                 });
  };
  return schema;
}

// ---- ArgMax / ArgMin ----

OpSchema makeArgSchema(const char* op, bool largest) {
  OpSchema schema;
  schema.name = op;
  schema.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    int64_t axis = checkedAxis(node, x);
    if (x.dims[static_cast<size_t>(axis)] == 0)
      failNode(node, "axis " + std::to_string(axis) + " of " + x.str() +
                         " is empty: there is no index to return");
    bool keep = boolAttr(node, "keepdims") != 0;
    boolAttr(node, "select_last_index");
    std::vector<int64_t> dims;
    for (size_t d = 0; d < x.rank(); ++d)
      if (static_cast<int64_t>(d) != axis)
        dims.push_back(x.dims[d]);
      else if (keep)
        dims.push_back(1);
    return std::vector<TensorType>{{DType::I64, dims}};
  };
  schema.reference = [largest](const Node& node, const std::vector<const void*>& in,
                               const std::vector<void*>& out) {
    const TensorType& x = node.inputs[0]->type;
    AxisGeometry g = axisGeometry(node, node.i("axis"));
    bool last = node.i("select_last_index") != 0;
    withHostType(x.dtype, in, x.numel(), out, {0}, {false},
                 [&](auto tag, const std::vector<const void*>& i, const std::vector<void*>& o) {
                   using T = decltype(tag);
                   const T* xs = static_cast<const T*>(i[0]);
                   auto* ys = static_cast<int64_t*>(o[0]);
                   for (int64_t a = 0; a < g.outer; ++a)
                     for (int64_t j = 0; j < g.inner; ++j) {
                       const T* row = xs + a * g.n * g.inner + j;
                       T best = row[0];
                       int64_t index = 0;
                       for (int64_t k = 1; k < g.n; ++k) {
                         T v = row[k * g.inner];
                         bool better = largest ? (last ? v >= best : v > best)
                                               : (last ? v <= best : v < best);
                         if (better) best = v, index = k;
                       }
                       ys[a * g.inner + j] = index;
                     }
                 });
  };
  return schema;
}

// ---- CumSum / CumProd ----

OpSchema makeCumulativeSchema(const char* op, bool product) {
  OpSchema schema;
  schema.name = op;
  schema.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    if (x.dtype == DType::Bool)
      failNode(node, "input is " + x.str() + "; float and integer dtypes only");
    checkedAxis(node, x);
    boolAttr(node, "exclusive");
    boolAttr(node, "reverse");
    return std::vector<TensorType>{x};
  };
  schema.reference = [product](const Node& node, const std::vector<const void*>& in,
                               const std::vector<void*>& out) {
    const TensorType& x = node.inputs[0]->type;
    AxisGeometry g = axisGeometry(node, node.i("axis"));
    bool exclusive = node.i("exclusive") != 0, reverse = node.i("reverse") != 0;
    withHostType(x.dtype, in, x.numel(), out, {x.numel()}, {true},
                 [&](auto tag, const std::vector<const void*>& i, const std::vector<void*>& o) {
                   using T = decltype(tag);
                   using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
                   const T* xs = static_cast<const T*>(i[0]);
                   T* ys = static_cast<T*>(o[0]);
                   for (int64_t a = 0; a < g.outer; ++a)
                     for (int64_t j = 0; j < g.inner; ++j) {
                       Acc acc = product ? 1 : 0;
                       for (int64_t s = 0; s < g.n; ++s) {
                         int64_t k = reverse ? g.n - 1 - s : s;
                         int64_t at = (a * g.n + k) * g.inner + j;
                         Acc v = static_cast<Acc>(xs[at]);
                         if (exclusive) ys[at] = static_cast<T>(acc);
                         acc = product ? acc * v : acc + v;
                         if (!exclusive) ys[at] = static_cast<T>(acc);
                       }
                     }
                 });
  };
  return schema;
}

// ---- TopK ----

OpSchema makeTopKSchema() {
  OpSchema schema;
  schema.name = "TopK";
  schema.num_outputs = 2;
  schema.infer = [](const Node& node) {
    const TensorType& x = inputType(node, 0);
    if (x.dtype == DType::Bool)
      failNode(node, "input is " + x.str() + "; float and integer dtypes only");
    int64_t axis = checkedAxis(node, x);
    int64_t k = node.i("k");
    int64_t n = x.dims[static_cast<size_t>(axis)];
    if (k < 0 || k > n)
      failNode(node, "attribute 'k' is " + std::to_string(k) + ", must be in [0, " +
                         std::to_string(n) + "] for axis " + std::to_string(axis) + " of " +
                         x.str());
    boolAttr(node, "largest");
    boolAttr(node, "sorted");
    std::vector<int64_t> dims = x.dims;
    dims[static_cast<size_t>(axis)] = k;
    return std::vector<TensorType>{{x.dtype, dims}, {DType::I64, dims}};
  };
  schema.reference = [](const Node& node, const std::vector<const void*>& in,
                        const std::vector<void*>& out) {
    const TensorType& x = node.inputs[0]->type;
    AxisGeometry g = axisGeometry(node, node.i("axis"));
    int64_t k = node.i("k");
    bool largest = node.i("largest") != 0;
    withHostType(x.dtype, in, x.numel(), out, {node.outputs[0]->type.numel(), 0}, {true, false},
                 [&](auto tag, const std::vector<const void*>& i, const std::vector<void*>& o) {
                   using T = decltype(tag);
                   const T* xs = static_cast<const T*>(i[0]);
                   T* values = static_cast<T*>(o[0]);
                   auto* indices = static_cast<int64_t*>(o[1]);
                   std::vector<int64_t> order(static_cast<size_t>(g.n));
                   for (int64_t a = 0; a < g.outer; ++a)
                     for (int64_t j = 0; j < g.inner; ++j) {
                       auto at = [&](int64_t e) { return xs[(a * g.n + e) * g.inner + j]; };
                       std::iota(order.begin(), order.end(), 0);
                       // Equal values keep their input order: lower index first.
                       std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
                         return largest ? at(p) > at(q) : at(p) < at(q);
                       });
                       for (int64_t e = 0; e < k; ++e) {
                         int64_t dst = (a * k + e) * g.inner + j;
                         values[dst] = at(order[static_cast<size_t>(e)]);
                         indices[dst] = order[static_cast<size_t>(e)];
                       }
                     }
                 });
  };
  return schema;
}

}  // namespace

std::vector<OpSchema> lossSchemas();  // losses.cc

std::vector<OpSchema> reductionSchemas() {
  std::vector<OpSchema> schemas;
  for (const ReduceKind& kind : reduceKinds()) schemas.push_back(makeReduceSchema(kind));
  schemas.push_back(makeArgSchema("ArgMax", true));
  schemas.push_back(makeArgSchema("ArgMin", false));
  schemas.push_back(makeCumulativeSchema("CumSum", false));
  schemas.push_back(makeCumulativeSchema("CumProd", true));
  schemas.push_back(makeTopKSchema());
  for (OpSchema& schema : lossSchemas()) schemas.push_back(std::move(schema));
  return schemas;
}

}  // namespace nanoc
