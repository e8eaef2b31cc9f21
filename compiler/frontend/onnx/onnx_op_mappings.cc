// ONNX op -> canonical IR op (compiler/ops/README.md), one function per op,
// each covering every opset whose semantics the IR op can express. Defaults
// are filled in here so the IR never depends on an opset.
#include <algorithm>
#include <cstring>
#include <map>
#include <string_view>

#include "compiler/frontend/onnx/onnx_mapping_util.h"
#include "compiler/frontend/onnx/onnx_node_importer.h"
#include "compiler/frontend/onnx/onnx_tensor.h"
#include "compiler/ir/error.h"
#include "compiler/ops/elementwise_table.h"

namespace nanoc::onnx_import {
namespace {

// ---- matrix products ----

void mapMatMul(NodeImporter& n) {
  Value* a = n.requiredInput(0, "A");
  Value* b = n.requiredInput(1, "B");
  const DType t = a->type.dtype;
  if ((t == DType::F16 || t == DType::BF16) && b->type.dtype == t) {
    // The IR's MatMul is f32: a half-precision product computes in f32 and
    // rounds once, as ONNX Runtime's CPU kernels and ONNX's reference do.
    auto cast = [&](Value* v, DType to, const char* suffix) {
      return n.emit("Cast", {v}, {{"to", static_cast<int64_t>(to)}, {"saturate", int64_t{1}}},
                    suffix);
    };
    Value* y =
        n.emit("MatMul", {cast(a, DType::F32, "a_f32"), cast(b, DType::F32, "b_f32")}, {}, "f32");
    n.emitResult("Cast", {y}, {{"to", static_cast<int64_t>(t)}, {"saturate", int64_t{1}}});
    return;
  }
  n.emitResult("MatMul", {a, b});
}

void mapGemm(NodeImporter& n) {
  // C is required before opset 11 and optional since; `broadcast` (opsets
  // < 7) only allowed what the IR's unidirectional broadcast also allows.
  n.emitResult("Gemm", {n.requiredInput(0, "A"), n.requiredInput(1, "B"), n.input(2)},
               {{"alpha", n.floatAttr("alpha", 1.0)},
                {"beta", n.floatAttr("beta", 1.0)},
                {"transA", int64_t{n.intAttr("transA", 0) != 0}},
                {"transB", int64_t{n.intAttr("transB", 0) != 0}}});
}

// ---- normalization ----

// training_mode = 1 (opset 14+): the batch's own statistics normalize X
// (the population variance, as ONNX's reference computes it), and outputs 1
// and 2 are the running statistics updated with `momentum`.
void mapBatchNormalizationTraining(NodeImporter& n) {
  Value* x = n.requiredInput(0, "X");
  if (x->type.dtype != DType::F32 || x->type.rank() < 2)
    n.fail("training_mode = 1 needs an f32 X of rank >= 2, not " + x->type.str());
  const int64_t c = x->type.dims[1];
  std::vector<int64_t> axes, channel_shape(x->type.rank(), 1);
  channel_shape[1] = c;
  for (int64_t a = 0; a < static_cast<int64_t>(x->type.rank()); ++a)
    if (a != 1) axes.push_back(a);
  auto scalar = [&](const char* name, double v) {
    float f = static_cast<float>(v);
    std::vector<uint8_t> bytes(sizeof f);
    std::memcpy(bytes.data(), &f, sizeof f);
    return n.constant(name, {DType::F32, {}}, std::move(bytes));
  };
  auto perChannel = [&](Value* v, const char* role) {
    if (v->type.dims != std::vector<int64_t>{c})
      n.fail(std::string(role) + " must be [" + std::to_string(c) + "], not " + v->type.str());
    return n.emit("Reshape", {v}, {{"shape", channel_shape}}, std::string(role) + "_channels");
  };
  const std::map<std::string, Attr> reduce = {{"axes", axes}, {"keepdims", int64_t{1}}};
  Value* mean = n.emit("ReduceMean", {x}, reduce, "batch_mean");
  Value* centered = n.emit("Sub", {x, mean}, {}, "centered");
  Value* var = n.emit("ReduceMean", {n.emit("Mul", {centered, centered}, {}, "squares")}, reduce,
                      "batch_var");
  Value* std_dev =
      n.emit("Sqrt",
             {n.emit("Add", {var, scalar("epsilon", n.floatAttr("epsilon", 1e-5))}, {}, "var_eps")},
             {}, "std");
  Value* normed = n.emit("Div", {centered, std_dev}, {}, "normalized");
  Value* scaled =
      n.emit("Mul", {normed, perChannel(n.requiredInput(1, "scale"), "scale")}, {}, "scaled");
  const std::string& y_name = n.proto().output(0);
  n.setOutput(0,
              n.emit("Add", {scaled, perChannel(n.requiredInput(2, "B"), "B")}, {}, "y", y_name));
  const double momentum = n.floatAttr("momentum", 0.9);
  Value* keep = scalar("momentum", momentum);
  Value* take = scalar("one_minus_momentum", 1.0 - momentum);
  const char* roles[] = {"input_mean", "input_var"};
  Value* batch[] = {mean, var};
  for (size_t i = 1; i < 3 && i < static_cast<size_t>(n.proto().output_size()); ++i) {
    if (!n.outputUsed(i)) continue;
    Value* running = n.requiredInput(2 + i, roles[i - 1]);
    perChannel(running, roles[i - 1]);  // checks its shape
    Value* stat = n.emit("Reshape", {batch[i - 1]}, {{"shape", std::vector<int64_t>{c}}},
                         std::string(roles[i - 1]) + "_batch");
    Value* updated =
        n.emit("Add",
               {n.emit("Mul", {running, keep}, {}, std::string(roles[i - 1]) + "_kept"),
                n.emit("Mul", {stat, take}, {}, std::string(roles[i - 1]) + "_taken")},
               {}, std::string(roles[i - 1]) + "_running", n.proto().output(static_cast<int>(i)));
    n.setOutput(i, updated);
  }
}

void mapBatchNormalization(NodeImporter& n) {
  if (n.opset() < 9 && n.intAttr("spatial", 1) != 1)
    n.fail("spatial = 0 (per-activation statistics) is unsupported");
  if (n.opset() >= 14 && n.intAttr("training_mode", 0) != 0)
    return mapBatchNormalizationTraining(n);
  // Older opsets declare running-statistics outputs that inference never
  // computes; they are fine as long as nothing reads them.
  for (size_t i = 1; i < static_cast<size_t>(n.proto().output_size()); ++i)
    if (n.outputUsed(i))
      n.fail("output " + std::to_string(i) + " ('" + n.proto().output(static_cast<int>(i)) +
             "', a training statistic) is used: nanoc compiles inference only");
  n.emitResult("BatchNormalization",
               {n.requiredInput(0, "X"), n.requiredInput(1, "scale"), n.requiredInput(2, "B"),
                n.requiredInput(3, "mean"), n.requiredInput(4, "var")},
               {{"epsilon", n.floatAttr("epsilon", 1e-5)}});
}

// ---- shape and layout ----

void mapFlatten(NodeImporter& n) {
  Value* x = n.requiredInput(0, "input");
  const std::vector<int64_t>& dims = x->type.dims;
  auto axis = static_cast<size_t>(
      normalizeAxis(n, n.intAttr("axis", 1), rankOf(x), /*inclusive_end=*/true));
  std::vector<int64_t> shape = {product(dims, 0, axis), product(dims, axis, dims.size())};
  n.emitResult("Reshape", {x}, {{"shape", shape}});
}

void mapReshape(NodeImporter& n) {
  Value* x = n.requiredInput(0, "data");
  std::vector<int64_t> spec;
  if (n.opset() < 5) {
    std::optional<std::vector<int64_t>> attr = n.intsAttr("shape");
    if (!attr) n.fail("attribute shape is missing");
    spec = *attr;
  } else {
    spec = constantInts(n, n.requiredInput(1, "shape"), "shape");
  }
  bool allowzero = n.opset() >= 14 && n.intAttr("allowzero", 0) != 0;
  const int64_t total = x->type.numel();
  std::vector<int64_t> shape(spec.size());
  int64_t known = 1;
  std::optional<size_t> inferred;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == -1) {
      if (inferred) n.fail("shape " + dimsStr(spec) + " has more than one -1");
      inferred = i;
      continue;
    }
    if (d < -1) n.fail("shape " + dimsStr(spec) + " has a negative dim");
    if (d == 0 && !allowzero) {
      if (i >= x->type.rank())
        n.fail("shape " + dimsStr(spec) + " copies dim " + std::to_string(i) + " (0) of " +
               x->type.str() + ", which has no such dim");
      d = x->type.dims[i];
    }
    shape[i] = d;
    if (__builtin_mul_overflow(known, d, &known))
      n.fail("shape " + dimsStr(spec) + " is too large");
  }
  if (inferred) {
    if (known == 0)
      n.fail("shape " + dimsStr(spec) + " has a -1 next to a zero dim, which leaves it undefined");
    if (total % known != 0)
      n.fail("cannot reshape " + x->type.str() + " to " + dimsStr(spec) +
             ": the element count does not divide");
    shape[*inferred] = total / known;
  } else if (known != total) {
    n.fail("cannot reshape " + x->type.str() + " to " + dimsStr(spec) +
           ": the element counts differ");
  }
  n.emitResult("Reshape", {x}, {{"shape", shape}});
}

// Axes moved from an attribute to an input in opset 13.
std::optional<std::vector<int64_t>> squeezeAxes(const NodeImporter& n) {
  if (n.opset() < 13) return n.intsAttr("axes");
  if (Value* axes = n.input(1)) return constantInts(n, axes, "axes", true);
  return std::nullopt;
}

void mapUnsqueeze(NodeImporter& n) {
  Value* x = n.requiredInput(0, "data");
  std::optional<std::vector<int64_t>> axes = squeezeAxes(n);
  if (!axes) n.fail("axes are missing");
  int64_t out_rank = rankOf(x) + static_cast<int64_t>(axes->size());
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t axis : *axes) {
    auto a = static_cast<size_t>(normalizeAxis(n, axis, out_rank));
    if (inserted[a]) n.fail("axes " + dimsStr(*axes) + " repeat an axis");
    inserted[a] = true;
  }
  std::vector<int64_t> shape;
  size_t next = 0;
  for (bool ins : inserted) shape.push_back(ins ? 1 : x->type.dims[next++]);
  n.emitResult("Reshape", {x}, {{"shape", shape}});
}

void mapSqueeze(NodeImporter& n) {
  Value* x = n.requiredInput(0, "data");
  int64_t rank = rankOf(x);
  std::vector<bool> removed(static_cast<size_t>(rank), false);
  if (std::optional<std::vector<int64_t>> axes = squeezeAxes(n)) {
    for (int64_t axis : *axes) {
      auto a = static_cast<size_t>(normalizeAxis(n, axis, rank));
      if (x->type.dims[a] != 1)
        n.fail("cannot squeeze axis " + std::to_string(axis) + " of " + x->type.str() +
               ": its size is not 1");
      removed[a] = true;
    }
  } else {
    for (size_t a = 0; a < removed.size(); ++a) removed[a] = x->type.dims[a] == 1;
  }
  std::vector<int64_t> shape;
  for (size_t a = 0; a < removed.size(); ++a)
    if (!removed[a]) shape.push_back(x->type.dims[a]);
  n.emitResult("Reshape", {x}, {{"shape", shape}});
}

void mapTranspose(NodeImporter& n) {
  Value* x = n.requiredInput(0, "data");
  int64_t rank = rankOf(x);
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = rank - 1 - i;
  if (std::optional<std::vector<int64_t>> attr = n.intsAttr("perm")) {
    std::vector<int64_t> sorted = *attr;
    std::sort(sorted.begin(), sorted.end());
    bool ok = static_cast<int64_t>(sorted.size()) == rank;
    for (int64_t i = 0; ok && i < rank; ++i) ok = sorted[static_cast<size_t>(i)] == i;
    if (!ok) n.fail("perm " + dimsStr(*attr) + " is not a permutation of " + x->type.str());
    perm = *attr;
  }
  n.emitResult("Transpose", {x}, {{"perm", perm}});
}

void mapConcat(NodeImporter& n) {
  if (n.numInputs() == 0) n.fail("has no inputs");
  std::vector<Value*> inputs;
  for (size_t i = 0; i < n.numInputs(); ++i) inputs.push_back(n.requiredInput(i, "inputs"));
  std::optional<int64_t> axis = n.intAttr("axis");
  if (!axis) {
    if (n.opset() >= 4) n.fail("attribute axis is missing");
    axis = 1;  // the default before opset 4
  }
  n.emitResult("Concat", inputs, {{"axis", normalizeAxis(n, *axis, rankOf(inputs[0]))}});
}

void mapSoftmax(NodeImporter& n) {
  Value* x = n.requiredInput(0, "input");
  int64_t rank = rankOf(x);
  if (n.opset() >= 13) {
    n.emitResult("Softmax", {x}, {{"axis", normalizeAxis(n, n.intAttr("axis", -1), rank)}});
    return;
  }
  // Before opset 13, Softmax flattens the input to 2-D at `axis` and
  // normalizes over everything from `axis` on. With axis = rank - 1 that is
  // the one-axis form; otherwise the IR spells the flattening out.
  int64_t axis = normalizeAxis(n, n.intAttr("axis", 1), rank, /*inclusive_end=*/true);
  if (axis == rank - 1) {
    n.emitResult("Softmax", {x}, {{"axis", axis}});
    return;
  }
  const std::vector<int64_t>& dims = x->type.dims;
  auto a = static_cast<size_t>(axis);
  std::vector<int64_t> flat = {product(dims, 0, a), product(dims, a, dims.size())};
  Value* x2d = n.emit("Reshape", {x}, {{"shape", flat}}, "to_2d");
  Value* y2d = n.emit("Softmax", {x2d}, {{"axis", int64_t{1}}});
  n.emitResult("Reshape", {y2d}, {{"shape", dims}}, "from_2d");
}

// ---- identities ----

void mapIdentity(NodeImporter& n) { n.emitResult("Identity", {n.requiredInput(0, "input")}); }

// True when input `i` is a constant scalar equal to zero (a bool false, a
// ratio of 0).
bool isConstantZero(const Value* v) {
  if (!v || !v->isConstant() || v->type.numel() != 1) return false;
  return loadScalar(v->type.dtype, v->data->data(), 0).asDouble() == 0;
}

void mapDropout(NodeImporter& n) {
  // Inference: Dropout passes its input through and its mask is all true.
  // Opset 12 made training mode an input: it must be a constant (a graph
  // input is "computed at run time"), and true only with a constant ratio of
  // 0, the one training case without random numbers.
  Value* data = n.requiredInput(0, "data");
  if (Value* training = n.input(2)) {
    if (!training->isConstant())
      n.fail("training_mode input '" + training->name +
             "' is computed at run time; nanoc compiles inference only and needs it constant");
    Value* ratio = n.input(1);
    if (!isConstantZero(training) && ratio && !ratio->isConstant())
      n.fail("ratio input '" + ratio->name +
             "' is computed at run time; with training_mode true nanoc needs it constant (0)");
    if (!isConstantZero(training) && !isConstantZero(ratio))
      n.fail(
          "training_mode is true with a ratio that is not a constant 0: that Dropout draws "
          "random numbers, and nanoc compiles inference only");
  }
  n.emitResult("Identity", {data});
  if (n.outputUsed(1)) {
    TensorType mask{DType::Bool, data->type.dims};
    n.setOutput(
        1, n.graph().addConstant(n.proto().output(1), mask, std::vector<uint8_t>(mask.bytes(), 1)));
  }
}

// ---- constants ----

ConstantTensor listTensor(DType dtype, const void* data, size_t count, size_t elem_size,
                          bool scalar) {
  ConstantTensor t;
  t.type.dtype = dtype;
  if (!scalar) t.type.dims = {static_cast<int64_t>(count)};
  t.bytes.resize(count * elem_size);
  if (count) std::memcpy(t.bytes.data(), data, t.bytes.size());
  return t;
}

void mapConstant(NodeImporter& n) {
  if (n.proto().attribute_size() != 1)
    n.fail("must have exactly one value attribute, has " +
           std::to_string(n.proto().attribute_size()));
  const onnx::AttributeProto& a = n.proto().attribute(0);
  ConstantTensor t;
  if (a.name() == "value") {
    if (!a.has_t()) n.fail("attribute value holds no tensor");
    t = decodeTensor(a.t(), "value");
  } else if (a.name() == "value_float") {
    float v = a.f();
    t = listTensor(DType::F32, &v, 1, sizeof v, /*scalar=*/true);
  } else if (a.name() == "value_floats") {
    std::vector<float> v(a.floats().begin(), a.floats().end());
    t = listTensor(DType::F32, v.data(), v.size(), sizeof(float), false);
  } else if (a.name() == "value_int") {
    int64_t v = a.i();
    t = listTensor(DType::I64, &v, 1, sizeof v, /*scalar=*/true);
  } else if (a.name() == "value_ints") {
    std::vector<int64_t> v(a.ints().begin(), a.ints().end());
    t = listTensor(DType::I64, v.data(), v.size(), sizeof(int64_t), false);
  } else {
    n.fail("attribute " + a.name() + " is unsupported (sparse and string constants)");
  }
  n.setConstantOutput(0, t.type, std::move(t.bytes));
}

// ConstantOfShape with a constant shape (a Shape subgraph folds to one) is a
// constant; exporters emit it for zero-filled buffers and initial states.
// With a computed shape it is rejected like any other dynamic shape.
void mapConstantOfShape(NodeImporter& n) {
  std::vector<int64_t> dims = constantInts(n, n.requiredInput(0, "input"), "shape");
  ConstantTensor fill;
  fill.type.dtype = DType::F32;
  fill.bytes.assign(sizeof(float), 0);  // the default: a float 0
  if (const onnx::AttributeProto* a = n.findAttr("value")) {
    if (!a->has_t()) n.fail("attribute value holds no tensor");
    fill = decodeTensor(a->t(), "value");
    if (fill.type.numel() != 1)
      n.fail("value must hold exactly one element, not " + fill.type.str());
  }
  TensorType type{fill.type.dtype, dims};
  int64_t numel = checkedNumel(dims, type.dtype, "output " + dimsStr(dims));
  n.reserveMadeConstant(type.bytes(), "output " + type.str());
  std::vector<uint8_t> bytes(static_cast<size_t>(type.bytes()));
  for (int64_t i = 0; i < numel; ++i)
    std::memcpy(bytes.data() + i * static_cast<int64_t>(fill.bytes.size()), fill.bytes.data(),
                fill.bytes.size());
  n.setConstantOutput(0, type, std::move(bytes));
}

const std::map<std::string_view, OpMapping>& mappings() {
  static const std::map<std::string_view, OpMapping> table = [] {
    std::map<std::string_view, OpMapping> t = {
        {"BatchNormalization", mapBatchNormalization},
        {"Concat", mapConcat},
        {"Constant", mapConstant},
        {"ConstantOfShape", mapConstantOfShape},
        {"Dropout", mapDropout},
        {"Flatten", mapFlatten},
        {"Gemm", mapGemm},
        {"Identity", mapIdentity},
        {"MatMul", mapMatMul},
        {"Reshape", mapReshape},
        {"Softmax", mapSoftmax},
        {"Squeeze", mapSqueeze},
        {"Transpose", mapTranspose},
        {"Unsqueeze", mapUnsqueeze},
    };
    // Each family of operators lists its own mappings (onnx_map_*.cc).
    for (const auto& family :
         {elementwiseMappings(), reductionMappings(), dataMovementMappings(),
          normalizationMappings(), spatialMappings(), shapeMappings(), quantizationMappings(),
          recurrentMappings(), samplingMappings(), miscMappings()})
      for (const auto& [op, mapping] : family) t.emplace(op, mapping);
    return t;
  }();
  return table;
}

}  // namespace

OpMapping findOpMapping(std::string_view op_type) {
  auto it = mappings().find(op_type);
  return it == mappings().end() ? nullptr : it->second;
}

}  // namespace nanoc::onnx_import
