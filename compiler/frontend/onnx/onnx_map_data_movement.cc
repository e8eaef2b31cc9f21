// ONNX -> IR mappings of the data movement operators. Index, shape and pad
// operands that decide an output's shape (Slice's starts/ends/axes/steps,
// Split's split, Pad's pads and axes, Tile's repeats, Expand's shape, Range,
// OneHot's depth, Trilu's k) must be constants; a node whose inputs are all
// small constants is evaluated right away (NodeImporter::emit), so the shape
// arithmetic of exported models (Shape -> Gather -> Unsqueeze -> Concat ->
// Reshape) becomes constants that later mappings can read.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <type_traits>

#include "compiler/frontend/onnx/onnx_mapping_util.h"
#include "compiler/frontend/onnx/onnx_tensor.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ops/data_movement.h"

namespace nanoc::onnx_import {
namespace {

// Elements of a constant integer tensor (any integer dtype, any rank), as
// int64; fails naming `role` when it is computed at run time.
std::vector<int64_t> constantIndexValues(const NodeImporter& n, const Value* v, const char* role) {
  if (!v->isConstant())
    n.fail(std::string(role) + " input '" + v->name +
           "' is computed at run time; nanoc needs it constant (an initializer or a Constant "
           "node) to know the static shape");
  DType t = v->type.dtype;
  if (t != DType::I64 && t != DType::I32 && t != DType::I16 && t != DType::I8 && t != DType::U8 &&
      t != DType::U16 && t != DType::U32)
    n.fail(std::string(role) + " input '" + v->name + "' must be an integer tensor, not " +
           v->type.str());
  std::vector<int64_t> out(static_cast<size_t>(v->type.numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = readInt(t, v->data->data(), i);
  return out;
}

// A constant scalar (or one-element tensor) of any integer or float dtype, as
// a double.
double constantNumber(const NodeImporter& n, const Value* v, const char* role) {
  if (!v->isConstant())
    n.fail(std::string(role) + " input '" + v->name +
           "' is computed at run time; nanoc needs it constant (an initializer or a Constant "
           "node) to know the static shape");
  if (v->type.numel() != 1)
    n.fail(std::string(role) + " input '" + v->name + "' must have one element, not " +
           v->type.str());
  const uint8_t* p = v->data->data();
  switch (v->type.dtype) {
    case DType::F32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::F64: {
      double f;
      std::memcpy(&f, p, 8);
      return f;
    }
    case DType::F16:
    case DType::BF16: {
      uint16_t bits;
      std::memcpy(&bits, p, 2);
      return v->type.dtype == DType::F16 ? halfToFloat(bits) : bf16ToFloat(bits);
    }
    case DType::Bool:
      n.fail(std::string(role) + " input has unsupported type " + v->type.str());
    default:
      return static_cast<double>(constantIndexValues(n, v, role)[0]);
  }
}

void setConstantResult(NodeImporter& n, const TensorType& type, std::vector<uint8_t> bytes) {
  if (n.proto().output_size() < 1 || n.proto().output(0).empty()) n.fail("has no output");
  n.setOutput(0, n.graph().addConstant(n.proto().output(0), type, std::move(bytes)));
}

// The bytes of `value` as one element of `dtype` (f16 and bf16 rounded to
// nearest).
std::vector<uint8_t> scalarBytes(DType dtype, double value) {
  std::vector<uint8_t> b(dtypeSize(dtype));
  auto put = [&](auto x) { std::memcpy(b.data(), &x, sizeof x); };
  switch (dtype) {
    case DType::F32:
      put(static_cast<float>(value));
      break;
    case DType::F64:
      put(value);
      break;
    case DType::F16:
      put(floatToHalf(static_cast<float>(value)));
      break;
    case DType::BF16:
      put(floatToBf16(static_cast<float>(value)));
      break;
    case DType::I8:
      put(static_cast<int8_t>(value));
      break;
    case DType::U8:
      put(static_cast<uint8_t>(value));
      break;
    case DType::I16:
      put(static_cast<int16_t>(value));
      break;
    case DType::U16:
      put(static_cast<uint16_t>(value));
      break;
    case DType::I32:
      put(static_cast<int32_t>(value));
      break;
    case DType::U32:
      put(static_cast<uint32_t>(value));
      break;
    case DType::I64:
      put(static_cast<int64_t>(value));
      break;
    case DType::U64:
      put(static_cast<uint64_t>(value));
      break;
    case DType::Bool:
      put(static_cast<uint8_t>(value != 0));
      break;
  }
  return b;
}

// ---- Slice, Split ----

struct SliceAttrs {
  std::vector<int64_t> starts, ends, steps;
};

// Resolves ONNX's (starts, ends, axes, steps) over `x` into the canonical
// per-axis form: negative values count from the end, then clamp to the axis.
SliceAttrs resolveSlice(const NodeImporter& n, const Value* x, const std::vector<int64_t>& starts,
                        const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                        std::vector<int64_t> steps) {
  int64_t rank = rankOf(x);
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    n.fail("starts " + dimsStr(starts) + ", ends " + dimsStr(ends) + ", axes " + dimsStr(axes) +
           " and steps " + dimsStr(steps) + " differ in length");
  SliceAttrs s;
  s.starts.assign(rank, 0);
  s.ends = x->type.dims;
  s.steps.assign(rank, 1);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    auto a = static_cast<size_t>(normalizeAxis(n, axes[i], rank));
    if (seen[a]) n.fail("axes " + dimsStr(axes) + " repeat an axis");
    seen[a] = true;
    int64_t dim = x->type.dims[a], step = steps[i];
    if (step == 0) n.fail("steps " + dimsStr(steps) + " has a zero step");
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
    } else {
      start = std::min(std::max<int64_t>(start, 0), dim - 1);  // -1 when dim = 0
      end = std::clamp<int64_t>(end, -1, dim - 1);
    }
    // A step longer than the axis takes one element, as the axis' size does;
    // bounding it keeps every stride computation in range.
    int64_t max_step = std::max<int64_t>(dim, 1);
    s.starts[a] = start;
    s.ends[a] = end;
    s.steps[a] = std::clamp(step, -max_step, max_step);
  }
  return s;
}

void mapSlice(NodeImporter& n) {
  Value* x = n.requiredInput(0, "data");
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset() < 10) {
    std::optional<std::vector<int64_t>> s = n.intsAttr("starts"), e = n.intsAttr("ends");
    if (!s || !e) n.fail("attributes starts and ends are required");
    starts = *s;
    ends = *e;
    axes = n.intsAttr("axes").value_or(std::vector<int64_t>{});
  } else {
    starts = constantIndexValues(n, n.requiredInput(1, "starts"), "starts");
    ends = constantIndexValues(n, n.requiredInput(2, "ends"), "ends");
    if (Value* a = n.input(3)) axes = constantIndexValues(n, a, "axes");
    if (Value* st = n.input(4)) steps = constantIndexValues(n, st, "steps");
  }
  SliceAttrs s = resolveSlice(n, x, starts, ends, axes, steps);
  n.emitResult("Slice", {x}, {{"starts", s.starts}, {"ends", s.ends}, {"steps", s.steps}});
}

void mapSplit(NodeImporter& n) {
  Value* x = n.requiredInput(0, "input");
  int64_t rank = rankOf(x);
  auto axis = static_cast<size_t>(normalizeAxis(n, n.intAttr("axis", 0), rank));
  int64_t dim = x->type.dims[axis];
  size_t outputs = static_cast<size_t>(n.proto().output_size());
  if (outputs == 0) n.fail("has no outputs");
  std::optional<std::vector<int64_t>> split;
  if (n.opset() >= 13 || n.input(1)) {
    if (Value* s = n.input(1)) split = constantIndexValues(n, s, "split");
  } else {
    split = n.intsAttr("split");
  }
  if (split && split->empty()) split.reset();
  std::vector<int64_t> sizes;
  if (split) {
    sizes = *split;
    int64_t total = 0;
    for (int64_t v : sizes)
      if (v < 0 || __builtin_add_overflow(total, v, &total)) n.fail("split has a negative size");
    if (sizes.size() != outputs || total != dim)
      n.fail("split " + dimsStr(sizes) + " does not divide axis " + std::to_string(axis) + " of " +
             x->type.str() + " into " + std::to_string(outputs) + " outputs");
  } else {
    if (n.opset() >= 18) {
      std::optional<int64_t> num = n.intAttr("num_outputs");
      if (!num || *num != static_cast<int64_t>(outputs))
        n.fail("num_outputs must be given and equal the " + std::to_string(outputs) + " outputs");
      // Chunks of ceil(dim / num); the last one takes what is left.
      int64_t chunk = (dim + *num - 1) / *num;
      for (size_t i = 0; i < outputs; ++i) {
        int64_t begin = std::min<int64_t>(dim, chunk * static_cast<int64_t>(i));
        sizes.push_back(std::min<int64_t>(dim, begin + chunk) - begin);
      }
    } else {
      if (dim % static_cast<int64_t>(outputs) != 0)
        n.fail("axis " + std::to_string(axis) + " of " + x->type.str() +
               " does not split evenly into " + std::to_string(outputs) + " outputs");
      sizes.assign(outputs, dim / static_cast<int64_t>(outputs));
    }
  }
  int64_t at = 0;
  for (size_t i = 0; i < outputs; ++i) {
    const std::string& name = n.proto().output(static_cast<int>(i));
    SliceAttrs s;
    s.starts.assign(rank, 0);
    s.ends = x->type.dims;
    s.steps.assign(rank, 1);
    s.starts[axis] = at;
    s.ends[axis] = at + sizes[i];
    at += sizes[i];
    if (name.empty()) continue;
    n.setOutput(i,
                n.emit("Slice", {x}, {{"starts", s.starts}, {"ends", s.ends}, {"steps", s.steps}},
                       "split_" + std::to_string(i), name));
  }
}

// ---- Gather family, Scatter family ----

// Constant indices are checked here, where an out-of-range one is the model's
// error (ONNX's rule: [-dim, dim)); indices computed at run time follow the
// clamping policy of compiler/ops/data_movement.h instead. `dim_of` gives the
// axis size for the index at flat position i.
void checkConstantIndices(const NodeImporter& n, const Value* indices,
                          const std::function<int64_t(int64_t)>& dim_of) {
  if (!indices->isConstant() ||
      (indices->type.dtype != DType::I32 && indices->type.dtype != DType::I64))
    return;
  std::vector<int64_t> v = constantIndexValues(n, indices, "indices");
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t dim = dim_of(static_cast<int64_t>(i));
    if (v[i] < -dim || v[i] >= dim)
      n.fail("index " + std::to_string(v[i]) + " (element " + std::to_string(i) + " of '" +
             indices->name + "') is out of range for an axis of size " + std::to_string(dim));
  }
}

void mapGather(NodeImporter& n) {
  Value* data = n.requiredInput(0, "data");
  Value* indices = n.requiredInput(1, "indices");
  int64_t axis = normalizeAxis(n, n.intAttr("axis", 0), rankOf(data));
  checkConstantIndices(n, indices, [&](int64_t) { return data->type.dims[axis]; });
  n.emitResult("Gather", {data, indices}, {{"axis", axis}});
}

void mapGatherElements(NodeImporter& n) {
  Value* data = n.requiredInput(0, "data");
  Value* indices = n.requiredInput(1, "indices");
  int64_t axis = normalizeAxis(n, n.intAttr("axis", 0), rankOf(data));
  checkConstantIndices(n, indices, [&](int64_t) { return data->type.dims[axis]; });
  n.emitResult("GatherElements", {data, indices}, {{"axis", axis}});
}

// The axis size of each entry of a GatherND / ScatterND index tuple: tuple
// component k indexes data dim `first + k`.
std::function<int64_t(int64_t)> tupleDims(const Value* data, const Value* indices, int64_t first) {
  int64_t m = indices->type.rank() ? indices->type.dims.back() : 1;
  return [data, m, first](int64_t i) {
    auto d = static_cast<size_t>(first + i % std::max<int64_t>(m, 1));
    return d < data->type.rank() ? data->type.dims[d] : int64_t{0};
  };
}

void mapGatherND(NodeImporter& n) {
  Value* data = n.requiredInput(0, "data");
  Value* indices = n.requiredInput(1, "indices");
  int64_t batch_dims = n.opset() >= 12 ? n.intAttr("batch_dims", 0) : 0;
  if (batch_dims >= 0 && batch_dims < rankOf(data))
    checkConstantIndices(n, indices, tupleDims(data, indices, batch_dims));
  n.emitResult("GatherND", {data, indices}, {{"batch_dims", batch_dims}});
}

std::string reduction(const NodeImporter& n) {
  std::string r = n.opset() >= 16 ? n.stringAttr("reduction").value_or("none") : "none";
  bool ok =
      r == "none" || r == "add" || r == "mul" || (n.opset() >= 18 && (r == "max" || r == "min"));
  if (!ok) n.fail("reduction '" + r + "' is not defined in this opset");
  return r;
}

void mapScatterND(NodeImporter& n) {
  n.emitResult(
      "ScatterND",
      {n.requiredInput(0, "data"), n.requiredInput(1, "indices"), n.requiredInput(2, "updates")},
      {{"reduction", reduction(n)}});
}

// ScatterElements, and Scatter (opsets 9 and 10), its earlier name.
void mapScatterElements(NodeImporter& n) {
  Value* data = n.requiredInput(0, "data");
  int64_t axis = normalizeAxis(n, n.intAttr("axis", 0), rankOf(data));
  checkConstantIndices(n, n.requiredInput(1, "indices"),
                       [&](int64_t) { return data->type.dims[axis]; });
  n.emitResult(
      "ScatterElements", {data, n.requiredInput(1, "indices"), n.requiredInput(2, "updates")},
      {{"axis", normalizeAxis(n, n.intAttr("axis", 0), rankOf(data))},
       {"reduction", n.proto().op_type() == "Scatter" ? std::string("none") : reduction(n)}});
}

// ---- Pad, Expand, Tile ----

void mapPad(NodeImporter& n) {
  Value* x = n.requiredInput(0, "data");
  int64_t rank = rankOf(x);
  std::string mode = n.stringAttr("mode").value_or("constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      !(mode == "wrap" && n.opset() >= 19))
    n.fail("mode '" + mode + "' is not defined in this opset");
  std::vector<int64_t> pads;
  Value* value = nullptr;
  if (n.opset() < 11) {
    std::optional<std::vector<int64_t>> p = n.intsAttr(n.opset() < 2 ? "paddings" : "pads");
    if (!p) n.fail("attribute pads is missing");
    pads = *p;
    double v = n.floatAttr("value", 0.0);
    if (v != 0 && mode == "constant")
      value = n.graph().addConstant(n.name() + "/value", {x->type.dtype, {}},
                                    scalarBytes(x->type.dtype, v));
  } else {
    pads = constantIndexValues(n, n.requiredInput(1, "pads"), "pads");
    if (Value* v = n.input(2)) {
      if (v->type.numel() != 1 || v->type.dtype != x->type.dtype)
        n.fail("constant_value " + v->type.str() + " must be one element of " + x->type.str() +
               "'s dtype");
      if (v->type.rank() != 0)
        v = n.emit("Reshape", {v}, {{"shape", std::vector<int64_t>{}}}, "value");
      value = v;
    }
    if (Value* a = n.input(3)) {
      std::vector<int64_t> axes = constantIndexValues(n, a, "axes");
      if (pads.size() != 2 * axes.size())
        n.fail("pads " + dimsStr(pads) + " must have two entries per axis of " + dimsStr(axes));
      std::vector<int64_t> full(2 * rank, 0);
      std::vector<bool> seen(rank, false);
      for (size_t i = 0; i < axes.size(); ++i) {
        auto d = static_cast<size_t>(normalizeAxis(n, axes[i], rank));
        if (seen[d]) n.fail("axes " + dimsStr(axes) + " repeat an axis");
        seen[d] = true;
        full[d] = pads[i];
        full[rank + d] = pads[axes.size() + i];
      }
      pads = full;
    }
  }
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    n.fail("pads " + dimsStr(pads) + " must have " + std::to_string(2 * rank) + " entries for " +
           x->type.str());
  std::vector<Value*> inputs = {x};
  if (value && mode == "constant") inputs.push_back(value);
  n.emitResult("Pad", inputs, {{"pads", pads}, {"mode", mode}});
}

void mapExpand(NodeImporter& n) {
  Value* x = n.requiredInput(0, "input");
  std::vector<int64_t> shape = constantIndexValues(n, n.requiredInput(1, "shape"), "shape");
  // Bidirectional broadcasting of x's dims with `shape`.
  size_t rank = std::max(shape.size(), x->type.rank());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = i + x->type.rank() >= rank ? x->type.dims[i + x->type.rank() - rank] : 1;
    int64_t b = i + shape.size() >= rank ? shape[i + shape.size() - rank] : 1;
    if (a != b && a != 1 && b != 1)
      n.fail("cannot broadcast " + x->type.str() + " with shape " + dimsStr(shape));
    out[i] = a == 1 ? b : a;
    if (out[i] < 0) n.fail("shape " + dimsStr(shape) + " has a negative dim");
  }
  if (out == x->type.dims) {
    n.emitResult("Identity", {x}, {});
    return;
  }
  n.emitResult("Expand", {x}, {{"shape", out}});
}

// Tile is an Expand of x with a broadcast dim in front of each of its dims:
// [d0, d1] -> [1, d0, 1, d1] -> [r0, d0, r1, d1] -> [r0 * d0, r1 * d1].
void mapTile(NodeImporter& n) {
  Value* x = n.requiredInput(0, "input");
  std::vector<int64_t> repeats;
  if (n.opset() < 6) {
    // Tile-1: `tiles` copies along the one axis `axis`, both constant inputs.
    std::vector<int64_t> tiles = constantIndexValues(n, n.requiredInput(1, "tiles"), "tiles");
    std::vector<int64_t> axis = constantIndexValues(n, n.requiredInput(2, "axis"), "axis");
    if (tiles.size() != 1 || axis.size() != 1) n.fail("tiles and axis must hold one value each");
    repeats.assign(x->type.rank(), 1);
    repeats[static_cast<size_t>(normalizeAxis(n, axis[0], rankOf(x)))] = tiles[0];
  } else {
    repeats = constantIndexValues(n, n.requiredInput(1, "repeats"), "repeats");
  }
  if (repeats.size() != x->type.rank())
    n.fail("repeats " + dimsStr(repeats) + " must have one entry per dim of " + x->type.str());
  std::vector<int64_t> split, expanded, out;
  for (size_t d = 0; d < repeats.size(); ++d) {
    if (repeats[d] < 0) n.fail("repeats " + dimsStr(repeats) + " has a negative entry");
    int64_t o;
    if (__builtin_mul_overflow(repeats[d], x->type.dims[d], &o))
      n.fail("repeats " + dimsStr(repeats) + " is too large for " + x->type.str());
    split.insert(split.end(), {1, x->type.dims[d]});
    expanded.insert(expanded.end(), {repeats[d], x->type.dims[d]});
    out.push_back(o);
  }
  checkedNumel(out, x->type.dtype, "node '" + n.name() + "' (Tile) output");
  if (out == x->type.dims) {
    n.emitResult("Identity", {x}, {});
    return;
  }
  Value* s = n.emit("Reshape", {x}, {{"shape", split}}, "split_dims");
  Value* e = n.emit("Expand", {s}, {{"shape", expanded}}, "repeat");
  n.emitResult("Reshape", {e}, {{"shape", out}});
}

// ---- DepthToSpace, SpaceToDepth: a Reshape, a Transpose and a Reshape ----

void requireNCHW(const NodeImporter& n, const Value* x) {
  if (x->type.rank() != 4) n.fail("input " + x->type.str() + " must be 4-D NCHW");
}

void mapDepthToSpace(NodeImporter& n) {
  Value* x = n.requiredInput(0, "input");
  requireNCHW(n, x);
  std::optional<int64_t> bs = n.intAttr("blocksize");
  if (!bs || *bs < 1 || *bs > kMaxWindowAttr) n.fail("attribute blocksize must be >= 1");
  int64_t b = *bs;
  std::string mode = n.opset() >= 11 ? n.stringAttr("mode").value_or("DCR") : "DCR";
  const std::vector<int64_t>& d = x->type.dims;
  if (d[1] % (b * b) != 0)
    n.fail("channels of " + x->type.str() + " are not a multiple of blocksize^2");
  int64_t c = d[1] / (b * b);
  std::vector<int64_t> shape, perm;
  if (mode == "DCR") {
    shape = {d[0], b, b, c, d[2], d[3]};
    perm = {0, 3, 4, 1, 5, 2};
  } else if (mode == "CRD") {
    shape = {d[0], c, b, b, d[2], d[3]};
    perm = {0, 1, 4, 2, 5, 3};
  } else {
    n.fail("mode '" + mode + "' is not DCR or CRD");
  }
  Value* r = n.emit("Reshape", {x}, {{"shape", shape}}, "blocks");
  Value* t = n.emit("Transpose", {r}, {{"perm", perm}}, "move");
  n.emitResult("Reshape", {t}, {{"shape", std::vector<int64_t>{d[0], c, d[2] * b, d[3] * b}}});
}

void mapSpaceToDepth(NodeImporter& n) {
  Value* x = n.requiredInput(0, "input");
  requireNCHW(n, x);
  std::optional<int64_t> bs = n.intAttr("blocksize");
  if (!bs || *bs < 1 || *bs > kMaxWindowAttr) n.fail("attribute blocksize must be >= 1");
  int64_t b = *bs;
  const std::vector<int64_t>& d = x->type.dims;
  if (d[2] % b != 0 || d[3] % b != 0)
    n.fail("height and width of " + x->type.str() + " are not multiples of blocksize");
  // Opset 28 added CRD mode: channels vary slowest in the output's depth.
  std::string mode = n.stringAttr("mode").value_or("DCR");
  if (mode != "DCR" && mode != "CRD") n.fail("mode '" + mode + "' is not DCR or CRD");
  std::vector<int64_t> shape = {d[0], d[1], d[2] / b, b, d[3] / b, b};
  std::vector<int64_t> perm = mode == "DCR" ? std::vector<int64_t>{0, 3, 5, 1, 2, 4}
                                            : std::vector<int64_t>{0, 1, 3, 5, 2, 4};
  Value* r = n.emit("Reshape", {x}, {{"shape", shape}}, "blocks");
  Value* t = n.emit("Transpose", {r}, {{"perm", perm}}, "move");
  n.emitResult("Reshape", {t},
               {{"shape", std::vector<int64_t>{d[0], d[1] * b * b, d[2] / b, d[3] / b}}});
}

// ---- constants from shapes: Range, EyeLike ----

// start + i * delta for i in [0, count): in T for floats, with wrap-around
// (never undefined behaviour) for integers.
template <typename T, typename S>
std::vector<uint8_t> rangeBytes(S start, S delta, int64_t count) {
  std::vector<uint8_t> bytes(static_cast<size_t>(count) * sizeof(T));
  for (int64_t i = 0; i < count; ++i) {
    T v;
    if constexpr (std::is_floating_point_v<T>)
      v = static_cast<T>(static_cast<T>(start) + static_cast<T>(i) * static_cast<T>(delta));
    else
      v = static_cast<T>(static_cast<uint64_t>(start) +
                         static_cast<uint64_t>(i) * static_cast<uint64_t>(delta));
    std::memcpy(bytes.data() + i * sizeof(T), &v, sizeof(T));
  }
  return bytes;
}

// A Range's element count computed in a narrower float type.
int64_t floatCount(const NodeImporter& n, float steps) {
  if (!(steps <= float{1 << 30})) n.fail("the range has too many elements");
  return steps > 0 ? static_cast<int64_t>(steps) : 0;
}

void mapRange(NodeImporter& n) {
  Value* s = n.requiredInput(0, "start");
  Value* l = n.requiredInput(1, "limit");
  Value* d = n.requiredInput(2, "delta");
  DType t = s->type.dtype;
  if (l->type.dtype != t || d->type.dtype != t) n.fail("start, limit and delta differ in type");
  if (t == DType::Bool || t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64)
    n.fail("type " + s->type.str() + " is not a float or signed integer type");
  double start = constantNumber(n, s, "start"), limit = constantNumber(n, l, "limit"),
         delta = constantNumber(n, d, "delta");
  if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta))
    n.fail("delta is zero or a bound is not finite");
  double steps = std::ceil((limit - start) / delta);
  if (steps > double{1 << 30}) n.fail("the range has too many elements");
  int64_t count = steps > 0 ? static_cast<int64_t>(steps) : 0;
  std::vector<uint8_t> bytes;
  if (t == DType::F16 || t == DType::BF16) {
    // Computed in f32, each element rounded once.
    auto fs = static_cast<float>(start), fd = static_cast<float>(delta);
    count = floatCount(n, std::ceil((static_cast<float>(limit) - fs) / fd));
    n.reserveMadeConstant(static_cast<uint64_t>(count) * 2, "Range output");
    for (int64_t i = 0; i < count; ++i) {
      float v = fs + static_cast<float>(i) * fd;
      uint16_t bits = t == DType::F16 ? floatToHalf(v) : floatToBf16(v);
      bytes.push_back(static_cast<uint8_t>(bits));
      bytes.push_back(static_cast<uint8_t>(bits >> 8));
    }
  } else if (t == DType::F32 || t == DType::F64) {
    // Exactly ONNX's count for floats: from the values in their own type.
    if (t == DType::F32) {
      auto fs = static_cast<float>(start), fl = static_cast<float>(limit),
           fd = static_cast<float>(delta);
      count = floatCount(n, std::ceil((fl - fs) / fd));
      n.reserveMadeConstant(static_cast<uint64_t>(count) * 4, "Range output");
      bytes = rangeBytes<float, float>(fs, fd, count);
    } else {
      n.reserveMadeConstant(static_cast<uint64_t>(count) * 8, "Range output");
      bytes = rangeBytes<double, double>(start, delta, count);
    }
  } else {
    // Integers exactly, in 128 bits: ceil((limit - start) / delta).
    int64_t is = constantIndexValues(n, s, "start")[0], il = constantIndexValues(n, l, "limit")[0],
            id = constantIndexValues(n, d, "delta")[0];
    __int128 span = static_cast<__int128>(il) - is;
    __int128 c = span / id + ((span % id != 0) && ((span > 0) == (id > 0)) ? 1 : 0);
    if (c > (1 << 30)) n.fail("the range has too many elements");
    count = c > 0 ? static_cast<int64_t>(c) : 0;
    n.reserveMadeConstant(static_cast<uint64_t>(count) * dtypeSize(t), "Range output");
    if (t == DType::I8) bytes = rangeBytes<int8_t, int64_t>(is, id, count);
    if (t == DType::I16) bytes = rangeBytes<int16_t, int64_t>(is, id, count);
    if (t == DType::I32) bytes = rangeBytes<int32_t, int64_t>(is, id, count);
    if (t == DType::I64) bytes = rangeBytes<int64_t, int64_t>(is, id, count);
  }
  setConstantResult(n, {t, {count}}, std::move(bytes));
}

void mapEyeLike(NodeImporter& n) {
  Value* x = n.requiredInput(0, "input");
  if (x->type.rank() != 2) n.fail("input " + x->type.str() + " must be 2-D");
  DType t = x->type.dtype;
  if (std::optional<int64_t> dt = n.intAttr("dtype")) {
    std::optional<DType> d = dtypeFromOnnx(static_cast<int32_t>(*dt));
    if (!d) n.fail("dtype " + std::to_string(*dt) + " is unsupported");
    t = *d;
  }
  int64_t k = n.intAttr("k", 0);
  TensorType type{t, x->type.dims};
  std::vector<uint8_t> bytes(type.bytes(), 0);
  std::vector<uint8_t> one = scalarBytes(t, 1.0);
  int64_t rows = x->type.dims[0], cols = x->type.dims[1];
  for (int64_t r = 0; r < rows; ++r) {
    // Column r + k, computed without overflow for any k.
    if (k >= cols || k <= -rows) break;
    int64_t col = r + k;
    if (col >= 0 && col < cols)
      std::memcpy(bytes.data() + (r * cols + col) * one.size(), one.data(), one.size());
  }
  setConstantResult(n, type, std::move(bytes));
}

// ---- Trilu, OneHot, ReverseSequence ----

void mapTrilu(NodeImporter& n) {
  int64_t k = 0;
  if (Value* kv = n.input(1)) {
    std::vector<int64_t> v = constantIndexValues(n, kv, "k");
    if (v.size() != 1) n.fail("k must hold one value");
    k = v[0];
  }
  n.emitResult("Trilu", {n.requiredInput(0, "input")},
               {{"upper", int64_t{n.intAttr("upper", 1) != 0}}, {"k", k}});
}

void mapOneHot(NodeImporter& n) {
  Value* indices = n.requiredInput(0, "indices");
  double depth = constantNumber(n, n.requiredInput(1, "depth"), "depth");
  if (!(depth >= 0) || depth > double{int64_t{1} << 40}) n.fail("depth is out of range");
  Value* values = n.requiredInput(2, "values");
  int64_t out_rank = rankOf(indices) + 1;
  int64_t axis = normalizeAxis(n, n.intAttr("axis", -1), out_rank);
  if (values->type.rank() != 1)
    values = n.emit("Reshape", {values}, {{"shape", std::vector<int64_t>{values->type.numel()}}},
                    "values");
  n.emitResult("OneHot", {indices, values},
               {{"axis", axis}, {"depth", static_cast<int64_t>(depth)}});
}

void mapReverseSequence(NodeImporter& n) {
  n.emitResult(
      "ReverseSequence", {n.requiredInput(0, "input"), n.requiredInput(1, "sequence_lens")},
      {{"batch_axis", n.intAttr("batch_axis", 1)}, {"time_axis", n.intAttr("time_axis", 0)}});
}

}  // namespace

MappingList dataMovementMappings() {
  return {{"DepthToSpace", mapDepthToSpace},
          {"Expand", mapExpand},
          {"EyeLike", mapEyeLike},
          {"Gather", mapGather},
          {"GatherElements", mapGatherElements},
          {"GatherND", mapGatherND},
          {"OneHot", mapOneHot},
          {"Pad", mapPad},
          {"Range", mapRange},
          {"ReverseSequence", mapReverseSequence},
          {"Scatter", mapScatterElements},
          {"ScatterElements", mapScatterElements},
          {"ScatterND", mapScatterND},
          {"Slice", mapSlice},
          {"SpaceToDepth", mapSpaceToDepth},
          {"Split", mapSplit},
          {"Tile", mapTile},
          {"Trilu", mapTrilu}};
}

}  // namespace nanoc::onnx_import
