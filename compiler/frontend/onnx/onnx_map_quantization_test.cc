// The quantization mappings per opset: QuantizeLinear (10, 13, 21, 23) and
// DequantizeLinear (10, 19, 23) with their granularity, output dtype and
// precision made explicit; DynamicQuantizeLinear's three outputs; the integer
// products with their optional zero points and Conv's window attributes; and
// their errors.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/ir/error.h"

namespace nanoc::onnx_import {
namespace {

using Dims = std::vector<int64_t>;
using TP = onnx::TensorProto;

class Model {
 public:
  explicit Model(int64_t opset) {
    model_.set_ir_version(8);
    onnx::OperatorSetIdProto* id = model_.add_opset_import();
    id->set_domain("");
    id->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  void input(const std::string& name, const Dims& dims, int32_t elem_type = TP::FLOAT) {
    onnx::ValueInfoProto* v = model_.mutable_graph()->add_input();
    v->set_name(name);
    onnx::TypeProto::Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem_type);
    onnx::TensorShapeProto* shape = t->mutable_shape();  // present even for a scalar
    for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
  }
  void output(const std::string& name) { model_.mutable_graph()->add_output()->set_name(name); }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs) {
    onnx::NodeProto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name("n");
    for (const std::string& in : inputs) n->add_input(in);
    for (const std::string& out : outputs) {
      n->add_output(out);
      output(out);
    }
    return n;
  }
  std::unique_ptr<Graph> import() const {
    std::string bytes = model_.SerializeAsString();
    return importOnnxBytes(bytes.data(), bytes.size(), "model.onnx");
  }
  std::string importError() const {
    try {
      import();
    } catch (const CompileError& e) {
      return e.what();
    }
    return "";
  }

 private:
  onnx::ModelProto model_;
};

void setInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void setInts(onnx::NodeProto* n, const std::string& name, const Dims& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void setString(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

const Node& onlyNode(const Graph& g) {
  EXPECT_EQ(g.nodes.size(), 1u);
  return *g.nodes.at(0);
}

int64_t dt(DType d) { return static_cast<int64_t>(d); }

void expectError(const Model& m, const std::string& what) {
  std::string err = m.importError();
  EXPECT_NE(err.find(what), std::string::npos) << err;
}

// ---- QuantizeLinear ----

TEST(OnnxQuantization, QuantizeLinear10IsPerTensorToU8ByDefault) {
  Model m(10);
  m.input("x", {2, 3});
  m.input("s", {});
  m.node("QuantizeLinear", {"x", "s"}, {"y"});
  auto g = m.import();
  const Node& q = onlyNode(*g);
  EXPECT_EQ(q.op, "QuantizeLinear");
  EXPECT_EQ(q.i("axis"), 0);
  EXPECT_EQ(q.i("block_size"), 0);
  EXPECT_EQ(q.i("output_dtype"), dt(DType::U8));
  EXPECT_EQ(q.i("precision"), dt(DType::F32));
  ASSERT_EQ(q.inputs.size(), 3u);
  EXPECT_EQ(q.inputs[2], nullptr);
  EXPECT_EQ(g->outputs[0]->type.str(), "u8[2,3]");
}

TEST(OnnxQuantization, QuantizeLinear13NormalizesThePerAxisAxis) {
  Model m(13);
  m.input("x", {2, 3, 4});
  m.input("s", {4});
  m.input("z", {4}, TP::INT8);
  setInt(m.node("QuantizeLinear", {"x", "s", "z"}, {"y"}), "axis", -1);
  auto g = m.import();
  EXPECT_EQ(onlyNode(*g).i("axis"), 2);
  EXPECT_EQ(g->outputs[0]->type.str(), "i8[2,3,4]");
}

TEST(OnnxQuantization, QuantizeLinear21BlockedWithOutputDtype) {
  Model m(21);
  m.input("x", {3, 4});
  m.input("s", {3, 2});
  onnx::NodeProto* n = m.node("QuantizeLinear", {"x", "s"}, {"y"});
  setInt(n, "axis", 1);
  setInt(n, "block_size", 2);
  setInt(n, "output_dtype", TP::INT16);
  auto g = m.import();
  EXPECT_EQ(onlyNode(*g).i("block_size"), 2);
  EXPECT_EQ(onlyNode(*g).i("output_dtype"), dt(DType::I16));
  EXPECT_EQ(g->outputs[0]->type.str(), "i16[3,4]");
}

TEST(OnnxQuantization, QuantizeLinear23PrecisionDefaultsToTheScaleDtype) {
  Model m(23);
  m.input("x", {4});
  m.input("s", {}, TP::FLOAT16);
  m.node("QuantizeLinear", {"x", "s"}, {"y"});
  EXPECT_EQ(onlyNode(*m.import()).i("precision"), dt(DType::F16));
  Model p(23);
  p.input("x", {4});
  p.input("s", {});
  setInt(p.node("QuantizeLinear", {"x", "s"}, {"y"}), "precision", TP::BFLOAT16);
  EXPECT_EQ(onlyNode(*p.import()).i("precision"), dt(DType::BF16));
}

TEST(OnnxQuantization, QuantizeLinearErrors) {
  Model per_axis(10);
  per_axis.input("x", {2, 3});
  per_axis.input("s", {3});
  per_axis.node("QuantizeLinear", {"x", "s"}, {"y"});
  expectError(per_axis, "per-axis quantization needs opset 13");

  Model blocked(19);
  blocked.input("x", {2, 4});
  blocked.input("s", {2, 2});
  blocked.node("QuantizeLinear", {"x", "s"}, {"y"});
  expectError(blocked, "blocked quantization needs opset 21");

  Model mismatch(21);
  mismatch.input("x", {4});
  mismatch.input("s", {});
  mismatch.input("z", {}, TP::UINT8);
  setInt(mismatch.node("QuantizeLinear", {"x", "s", "z"}, {"y"}), "output_dtype", TP::INT8);
  expectError(mismatch, "output_dtype i8 differs from y_zero_point u8[]");
}

// ---- DequantizeLinear ----

TEST(OnnxQuantization, DequantizeLinearOutputFollowsTheScaleOrOutputDtype) {
  Model m(19);
  m.input("x", {2, 3}, TP::INT8);
  m.input("s", {3}, TP::FLOAT16);
  m.input("z", {3}, TP::INT8);
  m.node("DequantizeLinear", {"x", "s", "z"}, {"y"});
  auto g = m.import();
  EXPECT_EQ(onlyNode(*g).i("axis"), 1);
  EXPECT_EQ(g->outputs[0]->type.str(), "f16[2,3]");

  Model out(23);
  out.input("x", {4}, TP::UINT16);
  out.input("s", {}, TP::FLOAT16);
  setInt(out.node("DequantizeLinear", {"x", "s"}, {"y"}), "output_dtype", TP::FLOAT);
  EXPECT_EQ(out.import()->outputs[0]->type.str(), "f32[4]");
}

TEST(OnnxQuantization, SubByteAndFloat8TypesQuantize) {
  Model dq(21);
  dq.input("x", {4}, 22);  // INT4
  dq.input("s", {});
  dq.node("DequantizeLinear", {"x", "s"}, {"y"});
  auto g = dq.import();
  EXPECT_EQ(g->inputs[0]->type.str(), "i4[4]");
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[4]");

  // A float8 output carries saturate (default 1); other outputs do not.
  Model f8(21);
  f8.input("x", {4});
  f8.input("s", {});
  onnx::NodeProto* q = f8.node("QuantizeLinear", {"x", "s"}, {"y"});
  setInt(q, "output_dtype", 17);  // FLOAT8E4M3FN
  setInt(q, "saturate", 0);
  g = f8.import();
  EXPECT_EQ(g->outputs[0]->type.str(), "f8e4m3fn[4]");
  EXPECT_EQ(onlyNode(*g).i("saturate"), 0);

  Model u2(21);
  u2.input("x", {4});
  u2.input("s", {});
  setInt(u2.node("QuantizeLinear", {"x", "s"}, {"y"}), "output_dtype", 25);  // UINT2
  g = u2.import();
  EXPECT_EQ(g->outputs[0]->type.str(), "u2[4]");
  EXPECT_FALSE(onlyNode(*g).has("saturate"));
}

TEST(OnnxQuantization, DequantizeLinearOfAnUnsupportedInputNamesTheDtype) {
  Model m(21);
  m.input("x", {4}, 24);  // FLOAT8E8M0
  m.input("s", {});
  m.node("DequantizeLinear", {"x", "s"}, {"y"});
  expectError(m, "FLOAT8E8M0, which nanoc does not support");
}

// ---- DynamicQuantizeLinear ----

TEST(OnnxQuantization, DynamicQuantizeLinearKeepsItsThreeOutputs) {
  Model m(11);
  m.input("x", {3, 4});
  m.node("DynamicQuantizeLinear", {"x"}, {"y", "y_scale", "y_zero_point"});
  auto g = m.import();
  const Node& n = onlyNode(*g);
  EXPECT_EQ(n.op, "DynamicQuantizeLinear");
  ASSERT_EQ(g->outputs.size(), 3u);
  EXPECT_EQ(g->outputs[0]->name, "y");
  EXPECT_EQ(g->outputs[0]->type.str(), "u8[3,4]");
  EXPECT_EQ(g->outputs[1]->name, "y_scale");
  EXPECT_EQ(g->outputs[1]->type.str(), "f32[]");
  EXPECT_EQ(g->outputs[2]->name, "y_zero_point");
  EXPECT_EQ(g->outputs[2]->type.str(), "u8[]");
}

// ---- integer products ----

TEST(OnnxQuantization, MatMulIntegerZeroPointsAreOptional) {
  Model m(10);
  m.input("a", {4, 3}, TP::UINT8);
  m.input("b", {3, 2}, TP::INT8);
  m.input("bz", {2}, TP::INT8);
  m.node("MatMulInteger", {"a", "b", "", "bz"}, {"y"});
  auto g = m.import();
  const Node& n = onlyNode(*g);
  ASSERT_EQ(n.inputs.size(), 4u);
  EXPECT_EQ(n.inputs[2], nullptr);
  EXPECT_NE(n.inputs[3], nullptr);
  EXPECT_EQ(g->outputs[0]->type.str(), "i32[4,2]");
}

TEST(OnnxQuantization, QLinearMatMul10And21) {
  for (int32_t scale : {TP::FLOAT, TP::FLOAT16}) {
    Model m(scale == TP::FLOAT ? 10 : 21);
    m.input("a", {2, 2, 4}, TP::INT8);
    m.input("b", {2, 4, 3}, TP::INT8);
    for (const char* s : {"as", "bs", "ys"}) m.input(s, {1}, scale);
    for (const char* z : {"az", "bz", "yz"}) m.input(z, {1}, TP::INT8);
    m.node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"});
    EXPECT_EQ(m.import()->outputs[0]->type.str(), "i8[2,2,3]");
  }
}

TEST(OnnxQuantization, ConvIntegerResolvesAutoPadAndDefaults) {
  Model m(10);
  m.input("x", {1, 2, 5, 5}, TP::UINT8);
  m.input("w", {4, 2, 2, 2}, TP::UINT8);
  onnx::NodeProto* n = m.node("ConvInteger", {"x", "w"}, {"y"});
  setString(n, "auto_pad", "SAME_UPPER");
  setInts(n, "strides", {2, 2});
  auto g = m.import();
  const Node& c = onlyNode(*g);
  EXPECT_EQ(c.i("group"), 1);
  EXPECT_EQ(c.ints("kernel_shape"), (Dims{2, 2}));
  // out = ceil(5 / 2) = 3 needs (3 - 1) * 2 + 2 - 5 = 1 pad: at the end.
  EXPECT_EQ(c.ints("pads"), (Dims{0, 0, 1, 1}));
  EXPECT_EQ(c.ints("dilations"), (Dims{1, 1}));
  EXPECT_EQ(g->outputs[0]->type.str(), "i32[1,4,3,3]");
}

TEST(OnnxQuantization, QLinearConvWithBiasAndOneSpatialDim) {
  Model m(10);
  m.input("x", {1, 4, 9}, TP::UINT8);
  m.input("w", {6, 2, 3}, TP::INT8);
  m.input("B", {6}, TP::INT32);
  for (const char* s : {"xs", "ys"}) m.input(s, {});
  m.input("ws", {6});
  m.input("xz", {}, TP::UINT8);
  m.input("wz", {6}, TP::INT8);
  m.input("yz", {}, TP::UINT8);
  onnx::NodeProto* n =
      m.node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "B"}, {"y"});
  setInt(n, "group", 2);
  setInts(n, "pads", {1, 1});
  auto g = m.import();
  EXPECT_EQ(onlyNode(*g).ints("pads"), (Dims{1, 1}));
  EXPECT_EQ(g->outputs[0]->type.str(), "u8[1,6,9]");
}

TEST(OnnxQuantization, ConvIntegerErrors) {
  Model kernel(10);
  kernel.input("x", {1, 1, 5, 5}, TP::UINT8);
  kernel.input("w", {1, 1, 2, 2}, TP::UINT8);
  setInts(kernel.node("ConvInteger", {"x", "w"}, {"y"}), "kernel_shape", {3, 3});
  expectError(kernel, "kernel_shape [3,3] does not match w u8[1,1,2,2]");

  Model pad(10);
  pad.input("x", {1, 1, 5, 5}, TP::UINT8);
  pad.input("w", {1, 1, 2, 2}, TP::UINT8);
  setString(pad.node("ConvInteger", {"x", "w"}, {"y"}), "auto_pad", "SAME");
  expectError(pad, "auto_pad 'SAME' is not one of");
}

}  // namespace
}  // namespace nanoc::onnx_import
