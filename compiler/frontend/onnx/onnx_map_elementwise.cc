// ONNX -> IR mappings of the elementwise operators (compiler/ops/
// elementwise_table.h): defaults filled in, legacy broadcasting made numpy's,
// variadic ops (Sum, Min, Max, Mean) unrolled into binary ones, Clip's bounds
// and CastLike's target made explicit.
#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/frontend/onnx/onnx_mapping_util.h"
#include "compiler/frontend/onnx/onnx_tensor.h"
#include "compiler/ops/elementwise_table.h"

namespace nanoc::onnx_import {
namespace {

void mapUnary(NodeImporter& n) {
  // Opsets before 6 carry `consumed_inputs`, a legacy in-place hint with no
  // effect on the result.
  n.emitResult(n.proto().op_type(), {n.requiredInput(0, "X")});
}

// Unary ops with float attributes: ONNX's defaults, made explicit.
void mapUnaryWithAlpha(NodeImporter& n) {
  const std::string& op = n.proto().op_type();
  std::map<std::string, Attr> attrs;
  if (op == "Elu" || op == "Celu" || op == "ThresholdedRelu" || op == "Swish") {
    attrs["alpha"] = n.floatAttr("alpha", 1.0);
  } else if (op == "LeakyRelu") {
    attrs["alpha"] = n.floatAttr("alpha", floatToAttr(0.01f));
  } else if (op == "Selu") {
    attrs["alpha"] = n.floatAttr("alpha", floatToAttr(1.67326319217681884765625f));
    attrs["gamma"] = n.floatAttr("gamma", floatToAttr(1.05070102214813232421875f));
  } else if (op == "Shrink") {
    attrs["lambd"] = n.floatAttr("lambd", floatToAttr(0.5f));
    attrs["bias"] = n.floatAttr("bias", 0.0);
  } else if (op == "HardSigmoid") {
    attrs["alpha"] = n.floatAttr("alpha", floatToAttr(0.2f));
    attrs["beta"] = n.floatAttr("beta", floatToAttr(0.5f));
  }
  n.emitResult(op, {n.requiredInput(0, "X")}, attrs);
}

void mapGelu(NodeImporter& n) {
  std::string approximate = n.stringAttr("approximate").value_or("none");
  if (approximate != "none" && approximate != "tanh")
    n.fail("approximate '" + approximate + "' is not 'none' or 'tanh'");
  n.emitResult("Gelu", {n.requiredInput(0, "X")},
               {{"approximate_tanh", int64_t{approximate == "tanh"}}});
}

void mapIsInf(NodeImporter& n) {
  n.emitResult("IsInf", {n.requiredInput(0, "X")},
               {{"detect_negative", int64_t{n.intAttr("detect_negative", 1) != 0}},
                {"detect_positive", int64_t{n.intAttr("detect_positive", 1) != 0}}});
}

// Before opset 7, broadcasting was opt-in (broadcast = 1) and aligned B's
// dims with A's starting at `axis` instead of at the end.
Value* legacyBroadcastB(NodeImporter& n, Value* a, Value* b) {
  if (n.opset() >= 7) return b;
  if (n.intAttr("broadcast", 0) == 0) {
    if (a->type.dims != b->type.dims)
      n.fail("inputs have different shapes " + a->type.str() + " and " + b->type.str() +
             " and broadcast = 0");
  } else if (std::optional<int64_t> axis = n.intAttr("axis")) {
    int64_t ra = rankOf(a), rb = rankOf(b);
    int64_t ax = *axis < 0 ? *axis + ra : *axis;
    if (rb > ra || ax < 0 || ax + rb > ra)
      n.fail("legacy broadcast of " + b->type.str() + " onto " + a->type.str() + " at axis " +
             std::to_string(*axis) + " is out of range");
    // Trailing 1s turn the axis-aligned form into numpy broadcasting.
    if (int64_t trailing = ra - ax - rb; trailing > 0) {
      std::vector<int64_t> dims = b->type.dims;
      dims.resize(dims.size() + static_cast<size_t>(trailing), 1);
      return n.emit("Reshape", {b}, {{"shape", dims}}, "broadcast_b");
    }
  }
  return b;
}

void mapBinary(NodeImporter& n) {
  Value* a = n.requiredInput(0, "A");
  Value* b = legacyBroadcastB(n, a, n.requiredInput(1, "B"));
  const std::string& op = n.proto().op_type();
  std::map<std::string, Attr> attrs;
  if (op == "Mod") attrs["fmod"] = int64_t{n.intAttr("fmod", 0) != 0};
  if (op == "BitShift") {
    std::optional<std::string> dir = n.stringAttr("direction");
    if (!dir || (*dir != "LEFT" && *dir != "RIGHT"))
      n.fail("attribute direction must be 'LEFT' or 'RIGHT'");
    attrs["direction"] = *dir;
  }
  n.emitResult(op, {a, b}, attrs);
}

// Sum, Min, Max, Mean: a chain of binary ops, the last named after the node.
void mapVariadic(NodeImporter& n) {
  const std::string& op = n.proto().op_type();
  if (n.numInputs() == 0) n.fail("has no inputs");
  const std::string binary = op == "Sum" || op == "Mean" ? "Add" : op;
  Value* acc = n.requiredInput(0, "data_0");
  size_t count = n.numInputs();
  for (size_t i = 1; i < count; ++i) {
    Value* next = n.requiredInput(i, "data");
    if (i + 1 == count && op != "Mean") {
      n.emitResult(binary, {acc, next});
      return;
    }
    acc = n.emit(binary, {acc, next}, {}, binary + "_" + std::to_string(i));
  }
  if (op != "Mean") {
    n.emitResult("Identity", {acc});
    return;
  }
  if (!isFloatDType(acc->type.dtype)) n.fail("Mean takes float inputs, not " + acc->type.str());
  std::vector<uint8_t> bytes(dtypeSize(acc->type.dtype));
  storeScalar(acc->type.dtype, Scalar::ofFloat(static_cast<double>(count)), bytes.data(), 0);
  Value* divisor = n.graph().addConstant(n.graph().uniqueName(n.name() + "/count"),
                                         {acc->type.dtype, {}}, std::move(bytes));
  n.emitResult("Div", {acc, divisor});
}

Value* scalarConstant(NodeImporter& n, DType dtype, const Scalar& value, const char* suffix) {
  std::vector<uint8_t> bytes(dtypeSize(dtype));
  storeScalar(dtype, value, bytes.data(), 0);
  return n.graph().addConstant(n.graph().uniqueName(n.name() + "/" + suffix), {dtype, {}},
                               std::move(bytes));
}

// Clip(x, min, max) with both bounds explicit: absent ones become the
// dtype's extremes (-inf/+inf for floats), attributes before opset 11.
void mapClip(NodeImporter& n) {
  Value* x = n.requiredInput(0, "input");
  DType t = x->type.dtype;
  Value* lo = nullptr;
  Value* hi = nullptr;
  if (n.opset() < 11) {
    lo = scalarConstant(n, t, Scalar::ofFloat(n.floatAttr("min", -INFINITY)), "min");
    hi = scalarConstant(n, t, Scalar::ofFloat(n.floatAttr("max", INFINITY)), "max");
  } else {
    lo = n.input(1);
    hi = n.input(2);
    auto extreme = [&](bool low) {
      if (isFloatDType(t)) return Scalar::ofFloat(low ? -INFINITY : INFINITY);
      if (isSignedDType(t)) {
        int bits = static_cast<int>(dtypeSize(t)) * 8;
        int64_t max =
            bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
        return Scalar::ofSigned(low ? -max - 1 : max);
      }
      int bits = static_cast<int>(dtypeSize(t)) * 8;
      uint64_t max = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
      return Scalar::ofUnsigned(low ? 0 : max);
    };
    if (!lo) lo = scalarConstant(n, t, extreme(true), "min");
    if (!hi) hi = scalarConstant(n, t, extreme(false), "max");
    for (const Value* bound : {lo, hi})
      if (bound->type.numel() != 1)
        n.fail("bound '" + bound->name + "' must be a scalar, not " + bound->type.str());
  }
  n.emitResult("Clip", {x, lo, hi});
}

void mapWhere(NodeImporter& n) {
  n.emitResult("Where",
               {n.requiredInput(0, "condition"), n.requiredInput(1, "X"), n.requiredInput(2, "Y")});
}

// `saturate` (opset 19) only matters for float8 results; default 1.
void emitCast(NodeImporter& n, Value* x, DType to) {
  n.emitResult(
      "Cast", {x},
      {{"to", static_cast<int64_t>(to)}, {"saturate", int64_t{n.intAttr("saturate", 1) != 0}}});
}

void mapCast(NodeImporter& n) {
  Value* x = n.requiredInput(0, "input");
  std::optional<int64_t> to = n.intAttr("to");
  if (!to) {
    // Opsets 1-5 spell `to` as a string ("FLOAT", "INT64", ...).
    std::optional<std::string> name = n.stringAttr("to");
    onnx::TensorProto::DataType parsed;
    if (!name || !onnx::TensorProto::DataType_Parse(*name, &parsed))
      n.fail("attribute 'to' is missing or not a data type");
    to = parsed;
  }
  std::optional<DType> dtype = dtypeFromOnnx(static_cast<int32_t>(*to));
  if (!dtype)
    n.fail("cast to " + onnxTypeName(static_cast<int32_t>(*to)) +
           " is unsupported (nanoc has no such dtype)");
  emitCast(n, x, *dtype);
}

void mapCastLike(NodeImporter& n) {
  emitCast(n, n.requiredInput(0, "input"), n.requiredInput(1, "target_type")->type.dtype);
}

}  // namespace

MappingList elementwiseMappings() {
  MappingList list;
  for (const char* op :
       {"Exp",       "Log",  "Sqrt",     "Reciprocal", "Sin",   "Cos",   "Tan",   "Asin",
        "Acos",      "Atan", "Sinh",     "Cosh",       "Asinh", "Acosh", "Atanh", "Erf",
        "Sigmoid",   "Tanh", "Softplus", "Softsign",   "Floor", "Ceil",  "Round", "Mish",
        "HardSwish", "Relu", "Abs",      "Neg",        "Sign",  "IsNaN", "Not",   "BitwiseNot"})
    list.emplace_back(op, mapUnary);
  for (const char* op :
       {"Elu", "Celu", "Selu", "LeakyRelu", "ThresholdedRelu", "HardSigmoid", "Swish", "Shrink"})
    list.emplace_back(op, mapUnaryWithAlpha);
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "PRelu", "BitShift",
                         "BitwiseAnd", "BitwiseOr", "BitwiseXor", "And", "Or", "Xor", "Equal",
                         "Less", "LessOrEqual", "Greater", "GreaterOrEqual"})
    list.emplace_back(op, mapBinary);
  for (const char* op : {"Sum", "Min", "Max", "Mean"}) list.emplace_back(op, mapVariadic);
  list.emplace_back("Gelu", mapGelu);
  list.emplace_back("IsInf", mapIsInf);
  list.emplace_back("Clip", mapClip);
  list.emplace_back("Where", mapWhere);
  list.emplace_back("Cast", mapCast);
  list.emplace_back("CastLike", mapCastLike);
  return list;
}

}  // namespace nanoc::onnx_import
