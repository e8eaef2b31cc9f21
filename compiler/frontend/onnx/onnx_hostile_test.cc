// Hostile shapes (issue #14): zero-element tensors must not hide dims whose
// product overflows, and zero-element constants fold without undefined
// behaviour (memcpy from a NULL constant).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/frontend/onnx/onnx_mapping_util.h"
#include "compiler/ir/error.h"
#include "compiler/ops/broadcast.h"
#include "compiler/ops/schema_checks.h"
#include "compiler/passes/pipeline.h"

namespace nanoc {
namespace {

constexpr int64_t kHuge = int64_t{1} << 32;

onnx::ModelProto OneNodeModel(const std::string& op, std::vector<int64_t> input_dims) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  onnx::OperatorSetIdProto* id = model.add_opset_import();
  id->set_domain("");
  id->set_version(17);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("hostile");
  onnx::ValueInfoProto* in = g->add_input();
  in->set_name("x");
  onnx::TypeProto::Tensor* t = in->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : input_dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name("n0");
  n->add_input("x");
  n->add_output("y");
  g->add_output()->set_name("y");
  return model;
}

std::string ImportError(const onnx::ModelProto& model) {
  const std::string bytes = model.SerializeAsString();
  try {
    std::unique_ptr<Graph> graph = importOnnxBytes(bytes.data(), bytes.size(), "hostile.onnx");
    runPipeline(*graph);
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

TEST(HostileShapes, AZeroDimDoesNotHideAnOverflowingInputShape) {
  // f32[0, 2^32, 2^32] has no elements, but its dims multiply past int64:
  // Flatten once made it Reshape to [0, 0] silently.
  const std::string error = ImportError(OneNodeModel("Flatten", {0, kHuge, kHuge}));
  EXPECT_NE(error.find("too large to address"), std::string::npos) << error;
}

TEST(HostileShapes, ShapeProductsAreCheckedPastAZeroDim) {
  const std::vector<int64_t> dims = {0, kHuge, kHuge};
  EXPECT_THROW(product(dims, 0, 3), CompileError);
  EXPECT_THROW(onnx_import::product(dims, 0, 3), CompileError);
  EXPECT_THROW(broadcastStrides(dims, dims), CompileError);
  EXPECT_EQ(product(dims, 0, 2), 0);
  EXPECT_EQ(onnx_import::product({0, 3, 5}, 1, 3), 15);
}

TEST(HostileShapes, ZeroElementConstantsFoldThroughReshapeAndIdentity) {
  for (const char* op : {"Identity", "Reshape"}) {
    onnx::ModelProto model = OneNodeModel(op, {2});
    onnx::GraphProto* g = model.mutable_graph();
    // x becomes a zero-element initializer (no data at all), folded away.
    g->clear_input();
    onnx::TensorProto* x = g->add_initializer();
    x->set_name("x");
    x->set_data_type(onnx::TensorProto::FLOAT);
    x->add_dims(0);
    x->add_dims(3);
    if (std::string(op) == "Reshape") {
      onnx::TensorProto* shape = g->add_initializer();
      shape->set_name("shape");
      shape->set_data_type(onnx::TensorProto::INT64);
      shape->add_dims(2);
      shape->add_int64_data(3);
      shape->add_int64_data(0);
      onnx::AttributeProto* allow = g->mutable_node(0)->add_attribute();
      allow->set_name("allowzero");
      allow->set_type(onnx::AttributeProto::INT);
      allow->set_i(1);
      g->mutable_node(0)->add_input("shape");
    }
    // Either it compiles, or it is refused with a message; never UB (run
    // under -fsanitize=undefined to see it).
    const std::string error = ImportError(model);
    EXPECT_EQ(error, "") << op;
  }
}

}  // namespace
}  // namespace nanoc
