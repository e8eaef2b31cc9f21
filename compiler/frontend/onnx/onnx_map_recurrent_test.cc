// The ONNX mappings of RNN, GRU and LSTM (onnx_map_recurrent.cc), unrolled
// at import. With every input an initializer the whole recurrence folds at
// import, so its outputs are constants compared here with a direct
// implementation of the ONNX equations; the other tests check the emitted
// graph and the refusals.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <functional>
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
  void input(const std::string& name, const Dims& dims,
             onnx::TensorProto::DataType type = onnx::TensorProto::FLOAT) {
    onnx::ValueInfoProto* v = graph()->add_input();
    v->set_name(name);
    onnx::TypeProto::Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  void floats(const std::string& name, const Dims& dims, const std::vector<float>& data) {
    onnx::TensorProto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float f : data) t->add_float_data(f);
  }
  void int32s(const std::string& name, const std::vector<int32_t>& data) {
    onnx::TensorProto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT32);
    t->add_dims(static_cast<int64_t>(data.size()));
    for (int32_t v : data) t->add_int32_data(v);
  }
  void output(const std::string& name) { graph()->add_output()->set_name(name); }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs) {
    onnx::NodeProto* n = graph()->add_node();
    n->set_op_type(op);
    n->set_name("cell");
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
  onnx::GraphProto* graph() { return model_.mutable_graph(); }
  onnx::ModelProto model_;
};

void setInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void setFloat(onnx::NodeProto* n, const std::string& name, float v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
void setFloats(onnx::NodeProto* n, const std::string& name, const std::vector<float>& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}
void setString(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}
void setStrings(onnx::NodeProto* n, const std::string& name, const std::vector<std::string>& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRINGS);
  for (const std::string& s : v) a->add_strings(s);
}

int count(const Graph& g, const std::string& op) {
  return static_cast<int>(
      std::count_if(g.nodes.begin(), g.nodes.end(), [&](const auto& n) { return n->op == op; }));
}

// Deterministic values in [-scale, scale].
std::vector<float> values(size_t n, uint32_t seed, float scale = 1.0f) {
  std::vector<float> out(n);
  uint32_t s = seed * 2654435761u + 1;
  for (float& v : out) {
    s = s * 1664525u + 1013904223u;
    v = scale * (static_cast<float>(s >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f);
  }
  return out;
}

using Fn = std::function<double(double)>;
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// The ONNX equations, directly: time-major X [T, B, I]; weights as ONNX
// lays them out; outputs Y [T, D, B, H], Y_h and Y_c [D, B, H].
struct Reference {
  enum Cell { Rnn, Gru, Lstm } cell;
  int64_t T, B, I, H, D;
  bool reverse_only = false, linear_before_reset = false, input_forget = false;
  double clip = 0;    // 0: none
  std::vector<Fn> f;  // per direction: f, g, h as the cell uses them
  std::vector<float> x, w, r, b, h0, c0, p;
  std::vector<int32_t> lens;  // empty: all T

  std::vector<float> y, yh, yc;

  void run() {
    int64_t G = cell == Lstm  ? 4
                : cell == Gru ? 3
                              : 1,
            acts = cell == Lstm  ? 3
                   : cell == Gru ? 2
                                 : 1;
    y.assign(static_cast<size_t>(T * D * B * H), 0.0f);
    yh.assign(static_cast<size_t>(D * B * H), 0.0f);
    yc = yh;
    auto cl = [&](double v) { return clip > 0 ? std::min(clip, std::max(-clip, v)) : v; };
    for (int64_t d = 0; d < D; ++d) {
      bool rev = reverse_only || d == 1;
      const Fn* fn = &f[static_cast<size_t>(d * acts)];
      for (int64_t e = 0; e < B; ++e) {
        int64_t len = lens.empty() ? T : lens[static_cast<size_t>(e)];
        std::vector<double> h(static_cast<size_t>(H), 0.0), c(static_cast<size_t>(H), 0.0);
        for (int64_t j = 0; j < H; ++j) {
          if (!h0.empty()) h[j] = h0[static_cast<size_t>((d * B + e) * H + j)];
          if (!c0.empty()) c[j] = c0[static_cast<size_t>((d * B + e) * H + j)];
        }
        for (int64_t k = 0; k < len; ++k) {
          int64_t t = rev ? len - 1 - k : k;
          // xw[g*H + j] = x·W^T + Wb, hr = h·R^T + Rb
          std::vector<double> xw(static_cast<size_t>(G * H)), hr(static_cast<size_t>(G * H));
          for (int64_t gj = 0; gj < G * H; ++gj) {
            double a = 0, bb = 0;
            for (int64_t i = 0; i < I; ++i)
              a += double(x[static_cast<size_t>((t * B + e) * I + i)]) *
                   w[static_cast<size_t>((d * G * H + gj) * I + i)];
            for (int64_t i = 0; i < H; ++i)
              bb += h[static_cast<size_t>(i)] * r[static_cast<size_t>((d * G * H + gj) * H + i)];
            if (!b.empty()) {
              a += b[static_cast<size_t>(d * 2 * G * H + gj)];
              bb += b[static_cast<size_t>(d * 2 * G * H + G * H + gj)];
            }
            xw[gj] = a;
            hr[gj] = bb;
          }
          std::vector<double> hn(static_cast<size_t>(H)), cn(static_cast<size_t>(H));
          for (int64_t j = 0; j < H; ++j) {
            if (cell == Rnn) {
              hn[j] = fn[0](cl(xw[j] + hr[j]));
            } else if (cell == Gru) {
              double z = fn[0](cl(xw[j] + hr[j]));
              double rr = fn[0](cl(xw[H + j] + hr[H + j]));
              double pre;
              if (linear_before_reset) {
                pre = xw[2 * H + j] + rr * hr[2 * H + j];
              } else {
                // (r (.) h)·Rh^T + Rbh needs every r; computed below.
                pre = 0;
              }
              hn[j] = pre;  // finished below
              cn[j] = z;    // z, kept for the blend
            } else {
              auto P = [&](int g) {
                return p.empty() ? 0.0 : p[static_cast<size_t>(d * 3 * H + g * H + j)];
              };
              double i = fn[0](cl(xw[j] + hr[j] + P(0) * c[j]));
              double fg =
                  input_forget ? 1 - i : fn[0](cl(xw[2 * H + j] + hr[2 * H + j] + P(2) * c[j]));
              double cc = fn[1](cl(xw[3 * H + j] + hr[3 * H + j]));
              cn[j] = fg * c[j] + i * cc;
              double o = fn[0](cl(xw[H + j] + hr[H + j] + P(1) * cn[j]));
              hn[j] = o * fn[2](cn[j]);
            }
          }
          if (cell == Gru) {
            for (int64_t j = 0; j < H; ++j) {
              double pre = hn[j];
              if (!linear_before_reset) {
                double acc = xw[2 * H + j];
                for (int64_t i = 0; i < H; ++i) {
                  double ri = fn[0](cl(xw[H + i] + hr[H + i]));
                  acc += ri * h[i] * r[static_cast<size_t>((d * G * H + 2 * H + j) * H + i)];
                }
                if (!b.empty()) acc += b[static_cast<size_t>(d * 2 * G * H + G * H + 2 * H + j)];
                pre = acc;
              }
              double hh = fn[1](cl(pre));
              double z = cn[j];
              hn[j] = (1 - z) * hh + z * h[j];
            }
          }
          h = hn;
          if (cell == Lstm) c = cn;
          for (int64_t j = 0; j < H; ++j)
            y[static_cast<size_t>(((t * D + d) * B + e) * H + j)] = static_cast<float>(h[j]);
        }
        for (int64_t j = 0; j < H; ++j) {
          yh[static_cast<size_t>((d * B + e) * H + j)] = len ? static_cast<float>(h[j]) : 0.0f;
          yc[static_cast<size_t>((d * B + e) * H + j)] = len ? static_cast<float>(c[j]) : 0.0f;
        }
      }
    }
  }
};

void expectNear(const Value* v, const std::vector<float>& want, const std::string& what) {
  ASSERT_TRUE(v->isConstant()) << what << " did not fold";
  ASSERT_EQ(static_cast<size_t>(v->type.numel()), want.size()) << what;
  const float* got = v->as<float>();
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 2e-5 + 2e-5 * std::fabs(want[i])) << what << " element " << i;
}

const Value* output(const Graph& g, const std::string& name) {
  for (const Value* v : g.outputs)
    if (v->name == name) return v;
  ADD_FAILURE() << "no output " << name;
  return nullptr;
}

Fn tanhFn = [](double v) { return std::tanh(v); };
Fn sigmoidFn = sigmoid;

// A model whose inputs are all initializers from `ref`; the node is returned
// for its attributes.
onnx::NodeProto* constantModel(Model& m, const Reference& ref, const std::string& op) {
  int64_t G = ref.cell == Reference::Lstm ? 4 : ref.cell == Reference::Gru ? 3 : 1;
  m.floats("X", {ref.T, ref.B, ref.I}, ref.x);
  m.floats("W", {ref.D, G * ref.H, ref.I}, ref.w);
  m.floats("R", {ref.D, G * ref.H, ref.H}, ref.r);
  std::vector<std::string> in = {"X", "W", "R", "", "", "", "", ""};
  if (!ref.b.empty()) m.floats("B", {ref.D, 2 * G * ref.H}, ref.b), in[3] = "B";
  if (!ref.lens.empty()) m.int32s("lens", ref.lens), in[4] = "lens";
  if (!ref.h0.empty()) m.floats("h0", {ref.D, ref.B, ref.H}, ref.h0), in[5] = "h0";
  if (!ref.c0.empty()) m.floats("c0", {ref.D, ref.B, ref.H}, ref.c0), in[6] = "c0";
  if (!ref.p.empty()) m.floats("P", {ref.D, 3 * ref.H}, ref.p), in[7] = "P";
  while (!in.empty() && in.back().empty()) in.pop_back();
  std::vector<std::string> out = {"Y", "Y_h"};
  if (ref.cell == Reference::Lstm) out.push_back("Y_c");
  for (const std::string& o : out) m.output(o);
  return m.node(op, in, out);
}

Reference makeReference(Reference::Cell cell, int64_t T, int64_t B, int64_t I, int64_t H, int64_t D,
                        uint32_t seed) {
  Reference ref;
  ref.cell = cell;
  ref.T = T, ref.B = B, ref.I = I, ref.H = H, ref.D = D;
  int64_t G = cell == Reference::Lstm ? 4 : cell == Reference::Gru ? 3 : 1;
  ref.x = values(static_cast<size_t>(T * B * I), seed);
  ref.w = values(static_cast<size_t>(D * G * H * I), seed + 1, 0.6f);
  ref.r = values(static_cast<size_t>(D * G * H * H), seed + 2, 0.6f);
  return ref;
}

TEST(OnnxRecurrent, RnnForwardWithBiasAndInitialState) {
  Reference ref = makeReference(Reference::Rnn, 4, 2, 3, 5, 1, 1);
  ref.b = values(10, 7, 0.3f);
  ref.h0 = values(10, 8);
  ref.f = {tanhFn};
  ref.run();
  Model m(7);
  constantModel(m, ref, "RNN");
  auto g = m.import();
  expectNear(output(*g, "Y"), ref.y, "Y");
  expectNear(output(*g, "Y_h"), ref.yh, "Y_h");
}

TEST(OnnxRecurrent, RnnReverseScaledTanhWithClip) {
  Reference ref = makeReference(Reference::Rnn, 3, 2, 3, 4, 1, 2);
  ref.reverse_only = true;
  ref.clip = 0.7;
  // ScaledTanh(alpha 1.5, beta 0.5) = 1.5 * tanh(0.5 x)
  ref.f = {[](double v) { return 1.5 * std::tanh(0.5 * v); }};
  ref.run();
  Model m(14);
  onnx::NodeProto* n = constantModel(m, ref, "RNN");
  setString(n, "direction", "reverse");
  setFloat(n, "clip", 0.7f);
  setStrings(n, "activations", {"ScaledTanh"});
  setFloats(n, "activation_alpha", {1.5f});
  setFloats(n, "activation_beta", {0.5f});
  auto g = m.import();
  expectNear(output(*g, "Y"), ref.y, "Y");
  expectNear(output(*g, "Y_h"), ref.yh, "Y_h");
}

TEST(OnnxRecurrent, GruBidirectionalWithSequenceLengths) {
  for (int lbr : {0, 1}) {
    SCOPED_TRACE("linear_before_reset " + std::to_string(lbr));
    Reference ref = makeReference(Reference::Gru, 4, 3, 3, 4, 2, 3);
    ref.linear_before_reset = lbr;
    ref.b = values(2 * 24, 11, 0.4f);
    ref.h0 = values(2 * 3 * 4, 12);
    ref.lens = {4, 2, 0};
    ref.f = {sigmoidFn, tanhFn, sigmoidFn, tanhFn};
    ref.run();
    Model m(14);
    onnx::NodeProto* n = constantModel(m, ref, "GRU");
    setString(n, "direction", "bidirectional");
    setInt(n, "linear_before_reset", lbr);
    setInt(n, "hidden_size", 4);
    auto g = m.import();
    expectNear(output(*g, "Y"), ref.y, "Y");
    expectNear(output(*g, "Y_h"), ref.yh, "Y_h");
  }
}

TEST(OnnxRecurrent, LstmPeepholesInputForgetAndActivations) {
  for (int input_forget : {0, 1}) {
    SCOPED_TRACE("input_forget " + std::to_string(input_forget));
    Reference ref = makeReference(Reference::Lstm, 3, 2, 3, 4, 2, 4);
    ref.input_forget = input_forget;
    ref.b = values(2 * 32, 21, 0.4f);
    ref.h0 = values(2 * 2 * 4, 22);
    ref.c0 = values(2 * 2 * 4, 23);
    ref.p = values(2 * 12, 24, 0.5f);
    ref.lens = {3, 2};
    ref.clip = 2.0;
    // Forward: HardSigmoid(0.3, 0.6), Elu(0.8), Affine(2, 0.1); reverse: the defaults.
    Fn hard = [](double v) { return std::min(1.0, std::max(0.0, 0.3 * v + 0.6)); };
    Fn elu = [](double v) { return v >= 0 ? v : 0.8 * (std::exp(v) - 1); };
    Fn affine = [](double v) { return 2 * v + 0.1; };
    ref.f = {hard, elu, affine, sigmoidFn, tanhFn, tanhFn};
    ref.run();
    Model m(7);
    onnx::NodeProto* n = constantModel(m, ref, "LSTM");
    setString(n, "direction", "bidirectional");
    setInt(n, "input_forget", input_forget);
    setFloat(n, "clip", 2.0f);
    setStrings(n, "activations", {"HardSigmoid", "Elu", "Affine", "Sigmoid", "Tanh", "Tanh"});
    setFloats(n, "activation_alpha", {0.3f, 0.8f, 2.0f});
    setFloats(n, "activation_beta", {0.6f, 0.1f});
    auto g = m.import();
    expectNear(output(*g, "Y"), ref.y, "Y");
    expectNear(output(*g, "Y_h"), ref.yh, "Y_h");
    expectNear(output(*g, "Y_c"), ref.yc, "Y_c");
  }
}

TEST(OnnxRecurrent, LayoutOneIsBatchMajor) {
  Reference ref = makeReference(Reference::Lstm, 3, 2, 3, 4, 2, 5);
  ref.h0 = values(16, 31);
  ref.f = {sigmoidFn, tanhFn, tanhFn, sigmoidFn, tanhFn, tanhFn};
  ref.run();
  // The same cell batch-major: X [B, T, I], initial_h [B, D, H].
  std::vector<float> xb(ref.x.size()), h0b(ref.h0.size());
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t e = 0; e < 2; ++e)
      for (int64_t i = 0; i < 3; ++i) xb[(e * 3 + t) * 3 + i] = ref.x[(t * 2 + e) * 3 + i];
  for (int64_t d = 0; d < 2; ++d)
    for (int64_t e = 0; e < 2; ++e)
      for (int64_t j = 0; j < 4; ++j) h0b[(e * 2 + d) * 4 + j] = ref.h0[(d * 2 + e) * 4 + j];
  Model m(14);
  m.floats("X", {2, 3, 3}, xb);
  m.floats("W", {2, 16, 3}, ref.w);
  m.floats("R", {2, 16, 4}, ref.r);
  m.floats("h0", {2, 2, 4}, h0b);
  for (const char* o : {"Y", "Y_h", "Y_c"}) m.output(o);
  onnx::NodeProto* n = m.node("LSTM", {"X", "W", "R", "", "", "h0"}, {"Y", "Y_h", "Y_c"});
  setString(n, "direction", "bidirectional");
  setInt(n, "layout", 1);
  auto g = m.import();
  // Y [B, T, D, H], Y_h and Y_c [B, D, H].
  std::vector<float> y(ref.y.size()), yh(ref.yh.size()), yc(ref.yc.size());
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t d = 0; d < 2; ++d)
      for (int64_t e = 0; e < 2; ++e)
        for (int64_t j = 0; j < 4; ++j)
          y[((e * 3 + t) * 2 + d) * 4 + j] = ref.y[((t * 2 + d) * 2 + e) * 4 + j];
  for (int64_t d = 0; d < 2; ++d)
    for (int64_t e = 0; e < 2; ++e)
      for (int64_t j = 0; j < 4; ++j) {
        yh[(e * 2 + d) * 4 + j] = ref.yh[(d * 2 + e) * 4 + j];
        yc[(e * 2 + d) * 4 + j] = ref.yc[(d * 2 + e) * 4 + j];
      }
  EXPECT_EQ(output(*g, "Y")->type.str(), "f32[2,3,2,4]");
  EXPECT_EQ(output(*g, "Y_h")->type.str(), "f32[2,2,4]");
  expectNear(output(*g, "Y"), y, "Y");
  expectNear(output(*g, "Y_h"), yh, "Y_h");
  expectNear(output(*g, "Y_c"), yc, "Y_c");
}

TEST(OnnxRecurrent, RunTimeInputsUnrollIntoGemmsPerStep) {
  // Weights computed at run time: transposed once per direction; one Gemm
  // for the input projection and one per later step (the first step's
  // recurrent product is zero without initial_h and is left out).
  Model m(22);
  m.input("x", {5, 2, 3});
  m.input("w", {1, 16, 3});
  m.input("r", {1, 16, 4});
  m.output("y_h");
  m.output("y_c");
  m.node("LSTM", {"x", "w", "r"}, {"", "y_h", "y_c"});
  auto g = m.import();
  EXPECT_EQ(count(*g, "Gemm"), 1 + 4);
  EXPECT_EQ(count(*g, "Where"), 0);
  EXPECT_EQ(count(*g, "Transpose"), 2);
  ASSERT_EQ(g->outputs.size(), 2u);
  EXPECT_EQ(g->outputs[0]->name, "y_h");
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[1,2,4]");
  EXPECT_EQ(g->outputs[1]->name, "y_c");
  EXPECT_NO_THROW(verifyGraph(*g));
}

TEST(OnnxRecurrent, EveryOpsetImports) {
  // RNN, GRU and LSTM 1, 7, 14, 22 (and GRU 3): the same equations; opset 1's
  // output_sequence only says whether Y may be omitted.
  for (const char* op : {"RNN", "GRU", "LSTM"})
    for (int64_t opset : {1, 3, 7, 14, 22}) {
      SCOPED_TRACE(std::string(op) + " opset " + std::to_string(opset));
      int64_t gates = std::string(op) == "LSTM" ? 4 : std::string(op) == "GRU" ? 3 : 1;
      Model m(opset);
      m.input("x", {2, 1, 3});
      m.input("w", {1, gates * 2, 3});
      m.input("r", {1, gates * 2, 2});
      m.output("y");
      m.output("y_h");
      onnx::NodeProto* n = m.node(op, {"x", "w", "r"}, {"y", "y_h"});
      if (opset == 1) setInt(n, "output_sequence", 1);
      auto g = m.import();
      EXPECT_EQ(g->outputs[0]->type.str(), "f32[2,1,1,2]");
      EXPECT_EQ(g->outputs[1]->type.str(), "f32[1,1,2]");
      EXPECT_NO_THROW(verifyGraph(*g));
    }
}

TEST(OnnxRecurrent, ConstantWeightsFoldAndFullLengthsNeedNoMask) {
  Model m(14);
  m.input("x", {3, 2, 3});
  m.floats("W", {1, 12, 3}, values(36, 1));
  m.floats("R", {1, 12, 4}, values(48, 2));
  m.floats("B", {1, 24}, values(24, 3));
  m.int32s("lens", {3, 3});
  m.output("y");
  m.node("GRU", {"x", "W", "R", "B", "lens"}, {"y"});
  auto g = m.import();
  EXPECT_EQ(count(*g, "Transpose"), 0);  // W^T and R^T are constants
  EXPECT_EQ(count(*g, "Where"), 0);
  EXPECT_EQ(g->outputs[0]->type.str(), "f32[3,1,2,4]");
  EXPECT_NO_THROW(verifyGraph(*g));
}

TEST(OnnxRecurrent, ShorterLengthsMaskWithWhere) {
  Model m(14);
  m.input("x", {3, 2, 3});
  m.floats("W", {1, 4, 3}, values(12, 1));
  m.floats("R", {1, 4, 4}, values(16, 2));
  m.int32s("lens", {3, 1});
  m.output("y");
  m.node("RNN", {"x", "W", "R", "", "lens"}, {"y", ""});
  auto g = m.import();
  // Steps 1 and 2 mask the state and Y of entry 1.
  EXPECT_EQ(count(*g, "Where"), 4);
  EXPECT_NO_THROW(verifyGraph(*g));
}

TEST(OnnxRecurrent, Refusals) {
  auto base = [](Model& m) {
    m.input("x", {3, 2, 3});
    m.input("w", {1, 4, 3});
    m.input("r", {1, 4, 4});
    m.output("y");
  };
  {
    Model m(14);
    base(m);
    m.input("lens", {2}, onnx::TensorProto::INT32);
    m.node("RNN", {"x", "w", "r", "", "lens"}, {"y"});
    std::string e = m.importError();
    EXPECT_NE(e.find("sequence_lens input 'lens' is computed at run time"), std::string::npos) << e;
  }
  {
    Model m(14);
    base(m);
    setStrings(m.node("RNN", {"x", "w", "r"}, {"y"}), "activations", {"Gelu"});
    std::string e = m.importError();
    EXPECT_NE(e.find("activation 'Gelu' is unsupported"), std::string::npos) << e;
  }
  {
    Model m(14);
    base(m);
    setStrings(m.node("RNN", {"x", "w", "r"}, {"y"}), "activations", {"Tanh", "Tanh"});
    std::string e = m.importError();
    EXPECT_NE(e.find("lists 2 functions"), std::string::npos) << e;
  }
  {
    Model m(14);
    base(m);
    setString(m.node("RNN", {"x", "w", "r"}, {"y"}), "direction", "bidirectional");
    std::string e = m.importError();
    EXPECT_NE(e.find("W is f32[1,4,3]; expected [2,4,3]"), std::string::npos) << e;
  }
  {
    Model m(14);
    base(m);
    setInt(m.node("RNN", {"x", "w", "r"}, {"y"}), "hidden_size", 5);
    std::string e = m.importError();
    EXPECT_NE(e.find("hidden_size 5 differs"), std::string::npos) << e;
  }
  {
    Model m(14);
    m.input("x", {3, 2, 3}, onnx::TensorProto::DOUBLE);
    m.input("w", {1, 4, 3}, onnx::TensorProto::DOUBLE);
    m.input("r", {1, 4, 4}, onnx::TensorProto::DOUBLE);
    m.output("y");
    m.node("RNN", {"x", "w", "r"}, {"y"});
    std::string e = m.importError();
    EXPECT_NE(e.find("f32 only"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace nanoc
