// The small composed mappings (onnx_map_misc.cc). Einsum and CenterCropPad on
// constant operands fold at import through the IR ops' references, so their
// values check the composition against a brute-force einsum here.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/ir/error.h"

namespace nanoc {
namespace {

using Dims = std::vector<int64_t>;

class Model {
 public:
  explicit Model(int64_t opset) {
    model_.set_ir_version(8);
    onnx::OperatorSetIdProto* id = model_.add_opset_import();
    id->set_domain("");
    id->set_version(opset);
  }
  void input(const std::string& name, Dims dims, int32_t type = onnx::TensorProto::FLOAT) {
    onnx::ValueInfoProto* v = graph()->add_input();
    v->set_name(name);
    onnx::TypeProto::Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  void output(const std::string& name) { graph()->add_output()->set_name(name); }
  template <typename T>
  void init(const std::string& name, int32_t type, Dims dims, std::vector<T> data) {
    onnx::TensorProto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(
        std::string(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(T)));
  }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> in,
                        std::vector<std::string> out) {
    onnx::NodeProto* n = graph()->add_node();
    n->set_op_type(op);
    n->set_name(op + "_node");
    for (const auto& s : in) n->add_input(s);
    for (const auto& s : out) n->add_output(s);
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
  onnx::GraphProto* graph() { return model_.mutable_graph(); }
  onnx::ModelProto model_;
};

void setString(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}
void setInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void setInts(onnx::NodeProto* n, const std::string& name, Dims v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

std::vector<std::string> ops(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& n : g.nodes) out.push_back(n->op);
  return out;
}

template <typename T>
std::vector<T> constantValues(const Value* v) {
  EXPECT_TRUE(v->isConstant()) << v->name;
  if (!v->isConstant()) return {};
  std::vector<T> out(v->data->size() / sizeof(T));
  std::memcpy(out.data(), v->data->data(), v->data->size());
  return out;
}

int64_t numel(const Dims& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}

// A brute-force einsum over letter-only specs ("ij,jk->ik").
template <typename T>
std::vector<T> bruteEinsum(const std::vector<std::string>& specs, const std::string& out,
                           const std::vector<Dims>& dims, const std::vector<std::vector<T>>& data,
                           Dims* out_dims) {
  std::map<char, int64_t> size;
  for (size_t i = 0; i < specs.size(); ++i)
    for (size_t d = 0; d < specs[i].size(); ++d) size[specs[i][d]] = dims[i][d];
  std::vector<char> labels;
  for (auto [l, s] : size) labels.push_back(l);
  out_dims->clear();
  for (char c : out) out_dims->push_back(size[c]);
  std::vector<T> result(static_cast<size_t>(numel(*out_dims)), T(0));
  std::map<char, int64_t> at;
  for (char l : labels) at[l] = 0;
  auto offset = [&](const std::string& spec, const Dims& d) {
    int64_t o = 0;
    for (size_t k = 0; k < spec.size(); ++k) o = o * d[k] + at[spec[k]];
    return o;
  };
  for (;;) {
    T p = T(1);
    for (size_t i = 0; i < specs.size(); ++i) p *= data[i][offset(specs[i], dims[i])];
    result[static_cast<size_t>(offset(out, *out_dims))] += p;
    size_t k = 0;
    for (; k < labels.size(); ++k) {
      if (++at[labels[k]] < size[labels[k]]) break;
      at[labels[k]] = 0;
    }
    if (k == labels.size()) break;
  }
  return result;
}

template <typename T>
void checkEinsum(const std::string& equation, const std::vector<Dims>& dims,
                 const std::vector<std::string>& letter_specs, const std::string& letter_out) {
  const int32_t type =
      sizeof(T) == 8 ? onnx::TensorProto::DOUBLE : static_cast<int32_t>(onnx::TensorProto::FLOAT);
  Model m(12);
  std::vector<std::string> names;
  std::vector<std::vector<T>> data;
  for (size_t i = 0; i < dims.size(); ++i) {
    std::vector<T> v(static_cast<size_t>(numel(dims[i])));
    for (size_t j = 0; j < v.size(); ++j) v[j] = static_cast<T>((j * 7 + i * 3) % 11) - T(5);
    names.push_back("x" + std::to_string(i));
    m.init(names.back(), type, dims[i], v);
    data.push_back(v);
  }
  setString(m.node("Einsum", names, {"y"}), "equation", equation);
  m.output("y");
  auto g = m.import();
  Dims want_dims;
  std::vector<T> want = bruteEinsum<T>(letter_specs, letter_out, dims, data, &want_dims);
  EXPECT_EQ(g->outputs[0]->type.dims, want_dims) << equation;
  std::vector<T> got = constantValues<T>(g->outputs[0]);
  ASSERT_EQ(got.size(), want.size()) << equation;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-4) << equation << " " << i;
}

TEST(OnnxMisc, EinsumFormsMatchABruteForceEinsum) {
  for (int pass = 0; pass < 2; ++pass) {
    auto check = [&](const std::string& eq, const std::vector<Dims>& dims,
                     const std::vector<std::string>& specs, const std::string& out) {
      if (pass == 0)
        checkEinsum<float>(eq, dims, specs, out);
      else
        checkEinsum<double>(eq, dims, specs, out);
    };
    check("ij->ji", {{3, 4}}, {"ij"}, "ji");
    check("ij->i", {{3, 4}}, {"ij"}, "i");
    check("...ii ->...i", {{3, 5, 5}}, {"aii"}, "ai");
    check("ii", {{4, 4}}, {"ii"}, "");
    check("iii->i", {{3, 3, 3}}, {"iii"}, "i");
    check("i,i", {{5}, {5}}, {"i", "i"}, "");
    check("i,j", {{3}, {4}}, {"i", "j"}, "ij");
    check("bij, bjk -> bik", {{5, 2, 3}, {5, 3, 4}}, {"bij", "bjk"}, "bik");
    check("ij,jk", {{2, 3}, {3, 4}}, {"ij", "jk"}, "ik");
    check("bhqd,bhkd->bhqk", {{2, 3, 4, 5}, {2, 3, 6, 5}}, {"bhqd", "bhkd"}, "bhqk");
    check("bqhd,bkhd->bhqk", {{2, 4, 3, 5}, {2, 6, 3, 5}}, {"bqhd", "bkhd"}, "bhqk");
    check("...ij,...jk->...ik", {{2, 3, 4}, {2, 4, 5}}, {"aij", "ajk"}, "aik");
    check("ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}, {"ij", "jk", "kl"}, "il");
    check("ijk,k->ij", {{2, 3, 4}, {4}}, {"ijk", "k"}, "ij");
    check("ij,ij->ij", {{3, 4}, {3, 4}}, {"ij", "ij"}, "ij");
    check("ij->", {{3, 4}}, {"ij"}, "");
  }
}

TEST(OnnxMisc, EinsumScalarAndBroadcastBatch) {
  Model m(12);
  m.init("x", onnx::TensorProto::FLOAT, {}, std::vector<float>{5.0f});
  setString(m.node("Einsum", {"x"}, {"y"}), "equation", "->");
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(constantValues<float>(g->outputs[0]), std::vector<float>{5.0f});

  // A batch dim of 1 broadcasts against 3, as numpy's einsum does.
  Model b(12);
  b.input("a", {1, 2, 3});
  b.input("c", {3, 3, 4});
  setString(b.node("Einsum", {"a", "c"}, {"y"}), "equation", "bij,bjk->bik");
  b.output("y");
  EXPECT_EQ(b.import()->outputs[0]->type.str(), "f32[3,2,4]");
}

TEST(OnnxMisc, EinsumF32ProductsAreOneMatMul) {
  Model m(12);
  m.input("a", {5, 2, 3});
  m.input("b", {5, 3, 4});
  setString(m.node("Einsum", {"a", "b"}, {"y"}), "equation", "bij,bjk->bik");
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(ops(*g), (std::vector<std::string>{"MatMul", "Reshape"}));
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[5,2,4]");
}

TEST(OnnxMisc, EinsumRejectsMalformedEquations) {
  for (const char* eq : {"ij,jk", "i.j->i", "ij->k", "ij->ii", "i1->i"}) {
    Model m(12);
    m.input("a", {2, 3});
    setString(m.node("Einsum", {"a"}, {"y"}), "equation", eq);
    m.output("y");
    EXPECT_NE(m.importError(), "") << eq;
  }
}

TEST(OnnxMisc, CenterCropPadCropsAndPadsAroundTheCentre) {
  Model m(18);
  std::vector<float> x(5 * 2);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i + 1);
  m.init("x", onnx::TensorProto::FLOAT, {5, 2}, x);
  m.init("s", onnx::TensorProto::INT64, {2}, std::vector<int64_t>{2, 5});
  m.node("CenterCropPad", {"x", "s"}, {"y"});
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[2,5]");
  // Rows 1..2 (start (5-2)/2 = 1); columns padded 1 left, 2 right.
  EXPECT_EQ(constantValues<float>(g->outputs[0]),
            (std::vector<float>{0, 3, 4, 0, 0, 0, 5, 6, 0, 0}));

  Model a(18);
  a.input("x", {4, 6, 3});
  a.init("s", onnx::TensorProto::INT64, {2}, std::vector<int64_t>{3, 9});
  setInts(a.node("CenterCropPad", {"x", "s"}, {"y"}), "axes", {-3, -2});
  a.output("y");
  auto h = a.import();
  ASSERT_EQ(ops(*h), (std::vector<std::string>{"Pad"}));
  EXPECT_EQ(h->nodes[0]->ints("pads"), (Dims{0, 1, 0, -1, 2, 0}));
  EXPECT_EQ(h->outputs[0]->type.str(), "f32[3,9,3]");
}

TEST(OnnxMisc, BitCastKeepsTheBytes) {
  Model m(26);
  m.init("x", onnx::TensorProto::FLOAT, {2}, std::vector<float>{1.0f, -2.0f});
  setInt(m.node("BitCast", {"x"}, {"y"}), "to", onnx::TensorProto::INT32);
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(g->outputs[0]->type.str(), "i32[2]");
  int32_t one, minus_two;
  float f1 = 1.0f, f2 = -2.0f;
  std::memcpy(&one, &f1, 4);
  std::memcpy(&minus_two, &f2, 4);
  EXPECT_EQ(constantValues<int32_t>(g->outputs[0]), (std::vector<int32_t>{one, minus_two}));

  Model bad(26);
  bad.input("x", {2});
  setInt(bad.node("BitCast", {"x"}, {"y"}), "to", onnx::TensorProto::INT64);
  bad.output("y");
  EXPECT_NE(bad.importError().find("element sizes differ"), std::string::npos);
}

TEST(OnnxMisc, CompressWithAConstantConditionIsAGather) {
  Model m(11);
  m.input("x", {3, 2});
  m.init("c", onnx::TensorProto::BOOL, {2}, std::vector<uint8_t>{0, 1});
  setInt(m.node("Compress", {"x", "c"}, {"y"}), "axis", -1);
  m.output("y");
  auto g = m.import();
  ASSERT_EQ(ops(*g), (std::vector<std::string>{"Gather"}));
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[3,1]");
  EXPECT_EQ(constantValues<int64_t>(g->nodes[0]->inputs[1]), (std::vector<int64_t>{1}));

  // No axis: over the flattened input; a shorter condition drops the rest.
  Model f(11);
  f.init("x", onnx::TensorProto::FLOAT, {2, 2}, std::vector<float>{1, 2, 3, 4});
  f.init("c", onnx::TensorProto::BOOL, {3}, std::vector<uint8_t>{1, 0, 1});
  f.node("Compress", {"x", "c"}, {"y"});
  f.output("y");
  EXPECT_EQ(constantValues<float>(f.import()->outputs[0]), (std::vector<float>{1, 3}));

  Model r(11);
  r.input("x", {3, 2});
  r.input("c", {2}, onnx::TensorProto::BOOL);
  r.node("Compress", {"x", "c"}, {"y"});
  r.output("y");
  EXPECT_NE(r.importError().find("computed at run time"), std::string::npos);
}

TEST(OnnxMisc, Col2ImSumsOverlappingBlocks) {
  Model m(18);
  // Blocks of [1, 2] over a [1, 3] image: two blocks, columns 0-1 and 1-2.
  m.init("x", onnx::TensorProto::FLOAT, {1, 2, 2}, std::vector<float>{1, 2, 3, 4});
  m.init("image", onnx::TensorProto::INT64, {2}, std::vector<int64_t>{1, 3});
  m.init("block", onnx::TensorProto::INT64, {2}, std::vector<int64_t>{1, 2});
  m.node("Col2Im", {"x", "image", "block"}, {"y"});
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[1,1,1,3]");
  EXPECT_EQ(constantValues<float>(g->outputs[0]), (std::vector<float>{1, 5, 4}));
}

TEST(OnnxMisc, MaxUnpoolScattersOverZerosAndPadsToOutputShape) {
  Model m(22);
  m.init("x", onnx::TensorProto::FLOAT, {1, 1, 1, 2}, std::vector<float>{7, 8});
  m.init("i", onnx::TensorProto::INT64, {1, 1, 1, 2}, std::vector<int64_t>{1, 2});
  m.init("s", onnx::TensorProto::INT64, {4}, std::vector<int64_t>{1, 1, 2, 5});
  onnx::NodeProto* n = m.node("MaxUnpool", {"x", "i", "s"}, {"y"});
  setInts(n, "kernel_shape", {1, 2});
  setInts(n, "strides", {1, 2});
  m.output("y");
  auto g = m.import();
  // Unpooled [1, 1, 1, 4], then zeros after: [1, 1, 2, 5].
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[1,1,2,5]");
  EXPECT_EQ(constantValues<float>(g->outputs[0]),
            (std::vector<float>{0, 7, 8, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(OnnxMisc, AffineGridOfTheIdentityIsTheBaseGrid) {
  Model m(20);
  m.init("theta", onnx::TensorProto::FLOAT, {1, 2, 3}, std::vector<float>{1, 0, 0, 0, 1, 0});
  m.init("size", onnx::TensorProto::INT64, {4}, std::vector<int64_t>{1, 1, 2, 2});
  m.node("AffineGrid", {"theta", "size"}, {"y"});
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[1,2,2,2]");
  // (x, y) per position, x along the width.
  EXPECT_EQ(constantValues<float>(g->outputs[0]),
            (std::vector<float>{-0.5, -0.5, 0.5, -0.5, -0.5, 0.5, 0.5, 0.5}));
}

TEST(OnnxMisc, TensorScatterWritesEachBatchAtItsIndexCircularly) {
  Model m(24);
  m.init("past", onnx::TensorProto::FLOAT, {2, 4}, std::vector<float>(8, 0.0f));
  m.init("update", onnx::TensorProto::FLOAT, {2, 2}, std::vector<float>{1, 2, 3, 4});
  m.init("write", onnx::TensorProto::INT64, {2}, std::vector<int64_t>{1, 3});
  onnx::NodeProto* n = m.node("TensorScatter", {"past", "update", "write"}, {"y"});
  setString(n, "mode", "circular");
  setInt(n, "axis", 1);
  m.output("y");
  auto g = m.import();
  EXPECT_EQ(constantValues<float>(g->outputs[0]), (std::vector<float>{0, 1, 2, 0, 4, 0, 0, 3}));
}

TEST(OnnxMisc, DetOfSmallMatrices) {
  Model m(22);
  m.init("a", onnx::TensorProto::FLOAT, {2, 2, 2}, std::vector<float>{1, 2, 3, 4, 2, 0, 0, 5});
  m.init("b", onnx::TensorProto::DOUBLE, {3, 3}, std::vector<double>{2, -3, 1, 2, 0, -1, 1, 4, 5});
  m.init("c", onnx::TensorProto::FLOAT, {1, 1}, std::vector<float>{-7});
  m.node("Det", {"a"}, {"da"});
  m.node("Det", {"b"}, {"db"});
  m.node("Det", {"c"}, {"dc"});
  m.output("da");
  m.output("db");
  m.output("dc");
  auto g = m.import();
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[2]");
  EXPECT_EQ(constantValues<float>(g->outputs[0]), (std::vector<float>{-2, 10}));
  EXPECT_EQ(constantValues<double>(g->outputs[1]), (std::vector<double>{49}));
  EXPECT_EQ(constantValues<float>(g->outputs[2]), (std::vector<float>{-7}));

  Model big(22);
  big.input("x", {4, 4});
  big.node("Det", {"x"}, {"y"});
  big.output("y");
  EXPECT_NE(big.importError().find("up to 3x3"), std::string::npos);
}

TEST(OnnxMisc, CausalConvWithStateExtendsConvolvesAndKeepsTheTail) {
  Model m(27);
  // One channel, kernel [1, 2, 3] over past [10, 20] then input [1, 2, 3].
  m.init("x", onnx::TensorProto::FLOAT, {1, 1, 3}, std::vector<float>{1, 2, 3});
  m.init("w", onnx::TensorProto::FLOAT, {1, 1, 3}, std::vector<float>{1, 2, 3});
  m.init("past", onnx::TensorProto::FLOAT, {1, 1, 2}, std::vector<float>{10, 20});
  m.node("CausalConvWithState", {"x", "w", "", "past"}, {"y", "state"});
  m.output("y");
  m.output("state");
  auto g = m.import();
  // [10, 20, 1, 2, 3]: 10 + 40 + 3, 20 + 2 + 6, 1 + 4 + 9.
  EXPECT_EQ(constantValues<float>(g->outputs[0]), (std::vector<float>{53, 28, 14}));
  EXPECT_EQ(constantValues<float>(g->outputs[1]), (std::vector<float>{2, 3}));

  Model s(27);
  s.input("x", {2, 4, 5});
  s.input("w", {4, 1, 3});
  onnx::NodeProto* n = s.node("CausalConvWithState", {"x", "w"}, {"y", "state"});
  setString(n, "activation", "silu");
  s.output("y");
  s.output("state");
  auto h = s.import();
  EXPECT_EQ(ops(*h), (std::vector<std::string>{"Pad", "Slice", "Conv", "Swish"}));
  EXPECT_EQ(h->outputs[0]->type.str(), "f32[2,4,5]");
  EXPECT_EQ(h->outputs[1]->type.str(), "f32[2,4,2]");
}

TEST(OnnxMisc, WindowsAndMelWeightsAreConstants) {
  Model m(17);
  m.init("n", onnx::TensorProto::INT64, {}, std::vector<int64_t>{4});
  m.node("HannWindow", {"n"}, {"hann"});
  setInt(m.node("HannWindow", {"n"}, {"sym"}), "periodic", 0);
  m.init("mels", onnx::TensorProto::INT64, {}, std::vector<int64_t>{2});
  m.init("dft", onnx::TensorProto::INT64, {}, std::vector<int64_t>{16});
  m.init("rate", onnx::TensorProto::INT64, {}, std::vector<int64_t>{8000});
  m.init("lo", onnx::TensorProto::FLOAT, {}, std::vector<float>{0});
  m.init("hi", onnx::TensorProto::FLOAT, {}, std::vector<float>{4000});
  m.node("MelWeightMatrix", {"mels", "dft", "rate", "lo", "hi"}, {"mel"});
  m.output("hann");
  m.output("sym");
  m.output("mel");
  auto g = m.import();
  std::vector<float> hann = constantValues<float>(g->outputs[0]);
  std::vector<float> want = {0, 0.5f, 1, 0.5f};
  ASSERT_EQ(hann.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(hann[i], want[i], 1e-7);
  std::vector<float> sym = constantValues<float>(g->outputs[1]);
  want = {0, 0.75f, 0.75f, 0};
  ASSERT_EQ(sym.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(sym[i], want[i], 1e-7);
  // ONNX's reference for these inputs.
  EXPECT_EQ(g->outputs[2]->type.str(), "f32[9,2]");
  EXPECT_EQ(constantValues<float>(g->outputs[2]),
            (std::vector<float>{1, 0, 0.5, 0.5, 0, 1, 0, 0.5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(OnnxMisc, DFTIsMatMulsWithTwiddleMatrices) {
  Model m(17);
  m.init("x", onnx::TensorProto::FLOAT, {1, 4, 1}, std::vector<float>{1, 2, 3, 4});
  m.node("DFT", {"x"}, {"y"});
  onnx::NodeProto* r = m.node("DFT", {"x"}, {"half"});
  setInt(r, "onesided", 1);
  m.output("y");
  m.output("half");
  auto g = m.import();
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[1,4,2]");
  EXPECT_EQ(g->outputs[1]->type.str(), "f32[1,3,2]");
  std::vector<float> want = {10, 0, -2, 2, -2, 0, -2, -2};
  std::vector<float> got = constantValues<float>(g->outputs[0]);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;

  // irfft of the half spectrum gives the signal back, real (last dim 1).
  Model inv(17);
  inv.init("h", onnx::TensorProto::FLOAT, {1, 3, 2}, std::vector<float>{10, 0, -2, 2, -2, 0});
  onnx::NodeProto* n = inv.node("DFT", {"h"}, {"x"});
  setInt(n, "onesided", 1);
  setInt(n, "inverse", 1);
  inv.output("x");
  auto h = inv.import();
  EXPECT_EQ(h->outputs[0]->type.str(), "f32[1,4,1]");
  got = constantValues<float>(h->outputs[0]);
  want = {1, 2, 3, 4};
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
}

TEST(OnnxMisc, STFTIsTheDFTOfGatheredFrames) {
  Model m(17);
  m.init("x", onnx::TensorProto::FLOAT, {1, 5, 1}, std::vector<float>{1, 2, 3, 4, 5});
  m.init("step", onnx::TensorProto::INT64, {}, std::vector<int64_t>{2});
  m.init("len", onnx::TensorProto::INT64, {}, std::vector<int64_t>{2});
  m.node("STFT", {"x", "step", "", "len"}, {"y"});
  m.output("y");
  auto g = m.import();
  // Frames [1, 2] and [3, 4]; onesided bins: sum and difference.
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[1,2,2,2]");
  std::vector<float> got = constantValues<float>(g->outputs[0]);
  std::vector<float> want = {3, 0, -1, 0, 7, 0, -1, 0};
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
}

TEST(OnnxMisc, SwiGLUIsSwishTimesTheValue) {
  Model m(28);
  m.input("a", {2, 4});
  m.input("b", {2, 4});
  onnx::NodeProto* n = m.node("SwiGLU", {"a", "b"}, {"y"});
  onnx::AttributeProto* alpha = n->add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(onnx::AttributeProto::FLOAT);
  alpha->set_f(0.5f);
  m.output("y");
  auto g = m.import();
  ASSERT_EQ(ops(*g), (std::vector<std::string>{"Swish", "Mul"}));
  EXPECT_DOUBLE_EQ(g->nodes[0]->f("alpha"), 0.5);
}

}  // namespace
}  // namespace nanoc
