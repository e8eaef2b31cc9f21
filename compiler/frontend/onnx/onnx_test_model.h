// A small ONNX model builder for the importer's mapping tests (tests only):
// graph inputs, initializers, nodes with attributes, and the import itself.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/ir/error.h"

namespace nanoc::onnx_import::testing {

using Dims = std::vector<int64_t>;

class Model {
 public:
  explicit Model(int64_t opset) {
    model_.set_ir_version(8);
    onnx::OperatorSetIdProto* id = model_.add_opset_import();
    id->set_domain("");
    id->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  void input(const std::string& name, const Dims& dims) {
    onnx::ValueInfoProto* v = model_.mutable_graph()->add_input();
    v->set_name(name);
    onnx::TypeProto::Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  void output(const std::string& name) { model_.mutable_graph()->add_output()->set_name(name); }
  void floats(const std::string& name, const Dims& dims, const std::vector<float>& data) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float f : data) t->add_float_data(f);
  }
  void ints(const std::string& name, const Dims& data) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(data.size()));
    for (int64_t v : data) t->add_int64_data(v);
  }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs) {
    onnx::NodeProto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name("n");
    for (const std::string& in : inputs) n->add_input(in);
    for (const std::string& out : outputs) n->add_output(out);
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

inline onnx::AttributeProto* attr(onnx::NodeProto* n, const std::string& name,
                                  onnx::AttributeProto::AttributeType type) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}
inline void setInts(onnx::NodeProto* n, const std::string& name, const Dims& v) {
  onnx::AttributeProto* a = attr(n, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void setInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
  attr(n, name, onnx::AttributeProto::INT)->set_i(v);
}
inline void setFloats(onnx::NodeProto* n, const std::string& name, const std::vector<float>& v) {
  onnx::AttributeProto* a = attr(n, name, onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}
inline void setString(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  attr(n, name, onnx::AttributeProto::STRING)->set_s(v);
}

inline const Node& onlyNode(const Graph& g) {
  EXPECT_EQ(g.nodes.size(), 1u);
  return *g.nodes.at(0);
}

}  // namespace nanoc::onnx_import::testing
