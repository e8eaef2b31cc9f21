// The elementwise operators: one table row each, found by the op's name. A
// row gives what the shape rule needs (arity, which dtypes it accepts, the
// result's dtype; shapes broadcast numpy-style over every operand) and the
// scalar reference that constant folding and the tests run. The CPU lowering
// keeps its scalar emitter under the same name (codegen/cpu/
// lower_elementwise.cc), used alone or, later, inside a fused region.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/float_elements.h"

namespace nanoc {

// One operand or result element, widened: floats (f16, bf16, f32, f64) as
// double, signed ints as int64, unsigned ints and bools as uint64.
struct Scalar {
  enum Kind : uint8_t { Float, Signed, Unsigned } kind = Float;
  double f = 0;
  int64_t i = 0;
  uint64_t u = 0;

  static Scalar ofFloat(double v) { return {Float, v, 0, 0}; }
  static Scalar ofSigned(int64_t v) { return {Signed, 0, v, 0}; }
  static Scalar ofUnsigned(uint64_t v) { return {Unsigned, 0, 0, v}; }
  static Scalar ofBool(bool v) { return ofUnsigned(v ? 1 : 0); }
  double asDouble() const;
  bool truthy() const;
};

// Which operand dtypes a row accepts.
enum class DTypeClass : uint8_t {
  Float,     // f16, bf16, f32, f64
  Signed,    // floats and signed ints (Neg, Abs, Sign)
  Numeric,   // every dtype but bool
  Integer,   // signed and unsigned ints (bitwise ops, BitShift)
  Unsigned,  // unsigned ints
  Bool,      // bool only (Not, And, Or, Xor)
  Any,       // every dtype (Cast, Identity-like)
};

// The result's dtype.
enum class ResultDType : uint8_t {
  SameAsInput,  // the dtype of operand `same_as`
  Bool,         // comparisons, IsNaN, IsInf
  FromTo,       // Cast: the `to` attribute (a DType number)
};

struct ElementwiseOp {
  std::string_view name;
  int min_inputs = 1, max_inputs = 1;
  DTypeClass accepts = DTypeClass::Float;
  // Operands whose dtype must equal operand `same_as`'s: every operand but
  // Where's condition (0) and Pow's exponent (1).
  bool mixed_operand0 = false;  // Where: operand 0 is bool, the rest share T
  bool mixed_operand1 = false;  // Pow: the exponent may have another numeric dtype
  ResultDType result = ResultDType::SameAsInput;
  size_t same_as = 0;
  // The scalar reference: operands widened per their dtype; returns the
  // result widened per the result's dtype.
  Scalar (*reference)(const Node& node, const Scalar* args) = nullptr;
};

// The numpy broadcast shape of all of `node`'s inputs (failing naming the
// node), the shape rule of the table's ops and of nanoc.Elementwise.
std::vector<int64_t> broadcastInputDims(const Node& node);
// Calls fn(i, offsets) for each element i of `node`'s result in row-major
// order, offsets[x] being input x's element read there under broadcasting:
// the references' loop.
void forEachBroadcastElement(const Node& node,
                             const std::function<void(int64_t, const std::vector<int64_t>&)>& fn);

// The row for `name`, or null when it is not an elementwise op.
const ElementwiseOp* findElementwise(std::string_view name);
const std::vector<ElementwiseOp>& elementwiseOps();

// Reads element `index` of a dense buffer of `dtype`, widened; and the
// inverse, narrowing (floats round to nearest even, ints wrap, bool is != 0;
// float8 saturates to its largest finite value unless told not to, f4e2m1
// always; a sub-byte int is read from and written to its byte's low bits).
Scalar loadScalar(DType dtype, const void* data, int64_t index);
void storeScalar(DType dtype, const Scalar& value, void* data, int64_t index, bool saturate = true);
// Converts between kinds as Cast does (float to int truncates toward zero).
Scalar convertScalar(const Scalar& value, DType to);

// isFloatDType (float_elements.h): the float types that compute (f16, bf16,
// f32, f64); the float8 types and f4e2m1 only convert (Cast, Equal, Where),
// and load as Scalar::Float; the sub-byte ints (i4, u4, i2, u2) likewise,
// loading as Signed or Unsigned, and are in none of the three classes below.
bool isSignedDType(DType dtype);    // signed ints
bool isUnsignedDType(DType dtype);  // unsigned ints and bool

}  // namespace nanoc
