// Fuzz target: the ONNX importer and nanoc's front half (the pass pipeline
// and the arena plan) on the model it imports. Every malformed or
// unsupported model must end in a CompileError; any other exception, crash,
// sanitizer report, hang or unbounded allocation is a bug.
//
// Besides libFuzzer's byte mutations, a structured mutator changes a model
// that parses as an onnx ModelProto in the ways real models go wrong: a
// node's op type, an attribute's value, an input renamed or dropped, a dim
// or a dtype, a tensor's data cut short. Half the mutations are libFuzzer's
// own on the raw bytes, which reach the protobuf decoder's errors.
#include <onnx/onnx_pb.h>
#include <stddef.h>
#include <stdint.h>

#include <cstring>
#include <random>
#include <string>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/ir/error.h"
#include "front_half.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

// Values that break shape arithmetic: zero, negatives, the edges of int64.
int64_t NastyInt(std::mt19937_64& rng) {
  static const int64_t kValues[] = {0,
                                    1,
                                    -1,
                                    2,
                                    3,
                                    7,
                                    64,
                                    -2,
                                    1 << 20,
                                    INT32_MAX,
                                    INT32_MIN,
                                    INT64_MAX,
                                    INT64_MIN,
                                    INT64_MAX / 2,
                                    int64_t{1} << 40};
  return kValues[rng() % (sizeof(kValues) / sizeof(kValues[0]))];
}

// Every value name the graph mentions, to rewire inputs to.
std::vector<std::string> ValueNames(const onnx::GraphProto& g) {
  std::vector<std::string> names;
  for (const auto& v : g.input()) names.push_back(v.name());
  for (const auto& t : g.initializer()) names.push_back(t.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) names.push_back(o);
  names.push_back("");  // an absent optional input
  return names;
}

const char* const kOps[] = {"Add",
                            "Conv",
                            "MatMul",
                            "Gemm",
                            "Relu",
                            "Reshape",
                            "Transpose",
                            "Concat",
                            "Slice",
                            "Gather",
                            "Softmax",
                            "MaxPool",
                            "Resize",
                            "Pad",
                            "ReduceMean",
                            "Expand",
                            "Tile",
                            "Split",
                            "Cast",
                            "Where",
                            "LayerNormalization",
                            "Attention",
                            "If",
                            "Loop",
                            "TopK",
                            "ConstantOfShape",
                            "Range",
                            "Einsum",
                            "ConvTranspose",
                            "LSTM"};

void MutateTensor(onnx::TensorProto* t, std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0:
      if (t->dims_size() > 0) t->set_dims(rng() % t->dims_size(), NastyInt(rng));
      break;
    case 1:
      t->set_data_type(static_cast<int32_t>(rng() % 27));
      break;
    case 2:
      if (!t->raw_data().empty()) t->mutable_raw_data()->resize(rng() % t->raw_data().size());
      break;
    default:
      t->add_dims(NastyInt(rng));
      break;
  }
}

// One structured change; false when the model has nothing of that kind.
bool MutateModel(onnx::ModelProto* m, std::mt19937_64& rng) {
  onnx::GraphProto* g = m->mutable_graph();
  const int nodes = g->node_size();
  switch (rng() % 8) {
    case 0: {  // another operator
      if (nodes == 0) return false;
      g->mutable_node(rng() % nodes)->set_op_type(kOps[rng() % (sizeof(kOps) / sizeof(kOps[0]))]);
      return true;
    }
    case 1: {  // an attribute's value
      if (nodes == 0) return false;
      onnx::NodeProto* n = g->mutable_node(rng() % nodes);
      if (n->attribute_size() == 0) return false;
      onnx::AttributeProto* a = n->mutable_attribute(rng() % n->attribute_size());
      if (a->ints_size() > 0 && rng() % 2)
        a->set_ints(rng() % a->ints_size(), NastyInt(rng));
      else if (rng() % 3 == 0)
        a->add_ints(NastyInt(rng));
      else if (a->has_t())
        MutateTensor(a->mutable_t(), rng);
      else
        a->set_i(NastyInt(rng));
      return true;
    }
    case 2: {  // an input wired to another value, or dropped
      if (nodes == 0) return false;
      onnx::NodeProto* n = g->mutable_node(rng() % nodes);
      std::vector<std::string> names = ValueNames(*g);
      if (n->input_size() > 0 && rng() % 4)
        n->set_input(rng() % n->input_size(), names[rng() % names.size()]);
      else if (n->input_size() > 0)
        n->mutable_input()->RemoveLast();
      else
        n->add_input(names[rng() % names.size()]);
      return true;
    }
    case 3: {  // an initializer's dims, dtype or data
      if (g->initializer_size() == 0) return false;
      MutateTensor(g->mutable_initializer(rng() % g->initializer_size()), rng);
      return true;
    }
    case 4: {  // a graph input's declared dims
      if (g->input_size() == 0) return false;
      auto* type = g->mutable_input(rng() % g->input_size())->mutable_type();
      auto* shape = type->mutable_tensor_type()->mutable_shape();
      if (shape->dim_size() > 0 && rng() % 3)
        shape->mutable_dim(rng() % shape->dim_size())->set_dim_value(NastyInt(rng));
      else
        shape->add_dim()->set_dim_value(NastyInt(rng));
      return true;
    }
    case 5: {  // a node duplicated (a value defined twice) or removed
      if (nodes == 0) return false;
      if (rng() % 2)
        *g->add_node() = g->node(rng() % nodes);
      else
        g->mutable_node()->DeleteSubrange(rng() % nodes, 1);
      return true;
    }
    case 6: {  // the opset
      if (m->opset_import_size() == 0) return false;
      m->mutable_opset_import(0)->set_version(static_cast<int64_t>(rng() % 30));
      return true;
    }
    default: {  // nodes swapped (an edge backwards, maybe a cycle)
      if (nodes < 2) return false;
      g->mutable_node()->SwapElements(rng() % nodes, rng() % nodes);
      return true;
    }
  }
}

// Tighter than nanoc's own limits (4 GiB of made constants, 2^20 nodes), so
// that a model that reaches them is refused inside the fuzzer's 2 GiB and
// 10 s (the node limit also bounds unrolled Loop and Scan iterations).
nanoc::OnnxImportOptions ImportLimits() {
  nanoc::OnnxImportOptions options;
  options.max_made_constant_bytes = uint64_t{256} << 20;
  options.max_nodes = 20000;
  return options;
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  std::mt19937_64 rng(seed);
  onnx::ModelProto model;
  if (rng() % 2 && model.ParseFromArray(data, static_cast<int>(size))) {
    for (int tries = 0; tries < 4; ++tries)
      if (MutateModel(&model, rng)) break;
    std::string bytes;
    if (model.SerializeToString(&bytes) && bytes.size() <= max_size) {
      memcpy(data, bytes.data(), bytes.size());
      return bytes.size();
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    std::unique_ptr<nanoc::Graph> graph =
        nanoc::importOnnxBytes(data, size, "fuzz.onnx", ImportLimits());
    nanort::fuzz::RunFrontHalf(*graph, size);
  } catch (const nanoc::CompileError&) {
  }
  return 0;
}
