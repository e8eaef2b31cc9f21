#include "compiler/ir/text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "compiler/ir/error.h"

namespace nanoc {
namespace {

template <typename T>
std::vector<uint8_t> bytesOf(const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

TensorType type(DType dtype, std::vector<int64_t> dims) {
  return TensorType{dtype, std::move(dims)};
}

const Value* findValue(const Graph& g, const std::string& name) {
  for (const auto& v : g.values)
    if (v->name == name) return v.get();
  return nullptr;
}

// Parses `text` and expects the CompileError message to be exactly `message`.
void expectParseError(const std::string& text, const std::string& message) {
  try {
    parseGraph(text, "t.nir");
    ADD_FAILURE() << "parsed without error:\n" << text;
  } catch (const CompileError& e) {
    EXPECT_EQ(e.what(), message) << text;
  }
}

// Every printed graph must read back into one that prints the same.
std::unique_ptr<Graph> roundTrip(const Graph& g) {
  std::string text = printGraph(g);
  std::unique_ptr<Graph> parsed = parseGraph(text);
  EXPECT_EQ(printGraph(*parsed), text);
  return parsed;
}

TEST(TextPrint, SmallGraphPrintsInTheDocumentedForm) {
  Graph g;
  g.name = "mlp";
  Value* x = g.addInput("x", type(DType::F32, {1, 4}));
  Value* w = g.addConstant("w", type(DType::F32, {4, 2}),
                           bytesOf<float>({0.5f, -1.f, 0.1f, 2.f, 3.f, 4.f, 1e-5f, 1e20f}));
  Node* gemm = g.addNode("Gemm", "fc1", {x, w, nullptr}, 1, {"h"});
  gemm->attrs = {{"alpha", 1.0}, {"beta", 1.0}, {"transA", int64_t{0}}, {"transB", int64_t{0}}};
  gemm->outputs[0]->type = type(DType::F32, {1, 2});
  gemm->outputs[0]->typed = true;
  Node* relu = g.addNode("Relu", "relu", {gemm->outputs[0]}, 1, {"y"});
  g.outputs = {relu->outputs[0]};

  EXPECT_EQ(printGraph(g),
            "graph @mlp(%x: f32[1,4]) -> (%y) {\n"
            "  %w = constant f32[4,2] dense<[0.5, -1.0, 0.1, 2.0, 3.0, 4.0, 1e-05, 1e+20]>\n"
            "  %h = Gemm(%x, %w, _) {alpha = 1.0, beta = 1.0, transA = 0, transB = 0} name "
            "\"fc1\" : f32[1,2]\n"
            "  %y = Relu(%h) name \"relu\"\n"
            "}\n");
}

TEST(TextRoundTrip, ConstantsOfEveryDtypeKeepTheirBytes) {
  Graph g;
  const float f32_nan_payload = [] {
    uint32_t bits = 0xffc00123;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }();
  g.addConstant("f32", type(DType::F32, {9}),
                bytesOf<float>({0.1f, -0.f, std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity(), f32_nan_payload,
                                std::numeric_limits<float>::denorm_min(),
                                std::numeric_limits<float>::max(), 123456789.f, 3.f}));
  g.addConstant("f16", type(DType::F16, {3}), bytesOf<uint16_t>({0x3c00, 0x7e01, 0x8000}));
  g.addConstant("bf16", type(DType::BF16, {2}), bytesOf<uint16_t>({0x3f80, 0xffff}));
  g.addConstant("i8", type(DType::I8, {3}), bytesOf<int8_t>({-128, 0, 127}));
  g.addConstant("u8", type(DType::U8, {2}), bytesOf<uint8_t>({0, 255}));
  g.addConstant(
      "i32", type(DType::I32, {2}),
      bytesOf<int32_t>({std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()}));
  g.addConstant(
      "i64", type(DType::I64, {2, 1}),
      bytesOf<int64_t>({std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}));
  g.addConstant("bool", type(DType::Bool, {3}), bytesOf<uint8_t>({1, 0, 2}));
  g.addConstant("i4", type(DType::I4, {3}), bytesOf<uint8_t>({0x08, 0x0f, 0x07}));
  g.addConstant("u2", type(DType::U2, {2}), bytesOf<uint8_t>({0, 3}));
  g.addConstant("f4", type(DType::F4E2M1, {2}), bytesOf<uint8_t>({0x7, 0xf}));
  g.addConstant("scalar", type(DType::I64, {}), bytesOf<int64_t>({-7}));
  g.addConstant("empty", type(DType::F32, {0, 3}), {});
  g.addConstant("splat", type(DType::F32, {2, 3}), bytesOf<float>(std::vector<float>(6, 0.25f)));
  std::vector<float> big(100);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i) / 7.f;
  g.addConstant("big", type(DType::F32, {10, 10}), bytesOf(big));
  g.outputs = {g.values[0].get()};

  std::string text = printGraph(g);
  EXPECT_NE(text.find("%f32 = constant f32[9] dense<[0.1, -0.0, inf, -inf, 0xffc00123, 1e-45, "
                      "3.4028235e+38, 123456792.0, 3.0]>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%f16 = constant f16[3] dense<[0x3c00, 0x7e01, 0x8000]>"), std::string::npos);
  EXPECT_NE(text.find("%bool = constant bool[3] dense<[true, false, 2]>"), std::string::npos);
  EXPECT_NE(text.find("%i4 = constant i4[3] dense<[-8, -1, 7]>"), std::string::npos) << text;
  EXPECT_NE(text.find("%u2 = constant u2[2] dense<[0, 3]>"), std::string::npos);
  EXPECT_NE(text.find("%f4 = constant f4e2m1[2] dense<[0x7, 0xf]>"), std::string::npos);
  EXPECT_NE(text.find("%scalar = constant i64[] dense<[-7]>"), std::string::npos);
  EXPECT_NE(text.find("%empty = constant f32[0,3] dense<[]>"), std::string::npos);
  EXPECT_NE(text.find("%splat = constant f32[2,3] dense<0.25>"), std::string::npos);
  EXPECT_NE(text.find("%big = constant f32[10,10] dense_hex<\"00000000"), std::string::npos);

  std::unique_ptr<Graph> parsed = roundTrip(g);
  ASSERT_EQ(parsed->values.size(), g.values.size());
  for (const auto& original : g.values) {
    SCOPED_TRACE(original->name);
    const Value* v = findValue(*parsed, original->name);
    ASSERT_NE(v, nullptr);
    ASSERT_TRUE(v->isConstant());
    EXPECT_TRUE(v->typed);
    EXPECT_EQ(v->type, original->type);
    EXPECT_EQ(*v->data, *original->data);
  }
  ASSERT_EQ(parsed->outputs.size(), 1u);
  EXPECT_EQ(parsed->outputs[0]->name, "f32");
}

TEST(TextRoundTrip, EveryAttributeKindKeepsItsKindAndValue) {
  Graph g;
  Value* x = g.addInput("x", type(DType::F32, {2}));
  Node* n = g.addNode("Custom", "n", {x}, 1, {"y"});
  n->attrs = {
      {"int", int64_t{-3}},
      {"int_min", std::numeric_limits<int64_t>::min()},
      {"whole_float", 2.0},
      {"tenth", 0.1},
      {"tiny", 1e-300},
      {"neg_zero", -0.0},
      {"inf", -std::numeric_limits<double>::infinity()},
      {"nan", std::numeric_limits<double>::quiet_NaN()},
      {"str", std::string("say \"hi\"\\\n\t\x01 é")},
      {"empty_str", std::string()},
      {"ints", std::vector<int64_t>{1, -2, 3}},
      {"no_ints", std::vector<int64_t>{}},
      {"floats", std::vector<double>{0.5, 1.0, 1e10}},
      {"no_floats", std::vector<double>{}},
      {"odd key/1", int64_t{1}},
  };
  g.outputs = {n->outputs[0]};

  std::string text = printGraph(g);
  EXPECT_NE(text.find("whole_float = 2.0"), std::string::npos) << text;
  EXPECT_NE(text.find("tenth = 0.1,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"odd key/1\" = 1"), std::string::npos) << text;
  EXPECT_NE(text.find("str = \"say \\\"hi\\\"\\\\\\n\\t\\01 é\""), std::string::npos) << text;
  EXPECT_NE(text.find("no_ints = []"), std::string::npos) << text;
  EXPECT_NE(text.find("no_floats = floats[]"), std::string::npos) << text;
  EXPECT_NE(text.find("floats = [0.5, 1.0, 1e+10]"), std::string::npos) << text;

  std::unique_ptr<Graph> parsed = roundTrip(g);
  ASSERT_EQ(parsed->nodes.size(), 1u);
  const Node& p = *parsed->nodes[0];
  ASSERT_EQ(p.attrs.size(), n->attrs.size());
  for (const auto& [key, attr] : n->attrs) {
    SCOPED_TRACE(key);
    ASSERT_TRUE(p.has(key));
    ASSERT_EQ(p.attrs.at(key).index(), attr.index());
    if (key == "nan")
      EXPECT_TRUE(std::isnan(p.f(key)));
    else
      EXPECT_TRUE(p.attrs.at(key) == attr);
  }
  EXPECT_TRUE(std::signbit(p.f("neg_zero")));
}

TEST(TextRoundTrip, NamesThatNeedQuotingAreQuoted) {
  Graph g;
  g.name = "my model";
  Value* a = g.addInput("conv/1:0", type(DType::F32, {1}));
  Value* b = g.addInput("a b", type(DType::F32, {1}));
  Value* c = g.addInput("plain_name.1", type(DType::F32, {1}));
  Node* n = g.addNode("Add", "node \"q\"", {a, b}, 1, {"out\\x"});
  Node* m = g.addNode("my.Op-2", "m", {n->outputs[0], c}, 1, {"0"});
  g.outputs = {m->outputs[0], a};

  std::string text = printGraph(g);
  EXPECT_NE(text.find("graph @\"my model\"(%\"conv/1:0\": f32[1], %\"a b\": f32[1], "
                      "%plain_name.1: f32[1]) -> (%0, %\"conv/1:0\")"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%\"out\\\\x\" = Add(%\"conv/1:0\", %\"a b\") name \"node \\\"q\\\"\""),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%0 = \"my.Op-2\"(%\"out\\\\x\", %plain_name.1)"), std::string::npos) << text;

  std::unique_ptr<Graph> parsed = roundTrip(g);
  EXPECT_EQ(parsed->name, "my model");
  ASSERT_EQ(parsed->inputs.size(), 3u);
  EXPECT_EQ(parsed->inputs[0]->name, "conv/1:0");
  EXPECT_EQ(parsed->inputs[1]->name, "a b");
  ASSERT_EQ(parsed->nodes.size(), 2u);
  EXPECT_EQ(parsed->nodes[0]->name, "node \"q\"");
  EXPECT_EQ(parsed->nodes[0]->outputs[0]->name, "out\\x");
  EXPECT_EQ(parsed->nodes[1]->op, "my.Op-2");
  EXPECT_EQ(parsed->outputs[1], parsed->inputs[0]);
}

TEST(TextRoundTrip, AbsentOptionalInputsAndMultipleResults) {
  Graph g;
  Value* x = g.addInput("x", type(DType::F32, {4}));
  Node* split = g.addNode("Split", "split", {x, nullptr}, 3, {"a", "b", "c"});
  split->outputs[0]->type = type(DType::F32, {1});
  split->outputs[0]->typed = true;
  split->outputs[2]->type = type(DType::F32, {3});
  split->outputs[2]->typed = true;
  Node* all = g.addNode("Split", "split2", {x}, 2, {"d", "e"});
  for (Value* v : all->outputs) {
    v->type = type(DType::F32, {2});
    v->typed = true;
  }
  Node* sink = g.addNode("Sink", "sink", {nullptr, split->outputs[1]}, 0);
  (void)sink;
  g.outputs = {split->outputs[0], split->outputs[2], all->outputs[1]};

  std::string text = printGraph(g);
  EXPECT_NE(text.find("  %a, %b, %c = Split(%x, _) name \"split\" : (f32[1], ?, f32[3])\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  %d, %e = Split(%x) name \"split2\" : (f32[2], f32[2])\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  Sink(_, %b) name \"sink\"\n"), std::string::npos) << text;

  std::unique_ptr<Graph> parsed = roundTrip(g);
  ASSERT_EQ(parsed->nodes.size(), 3u);
  const Node& p = *parsed->nodes[0];
  ASSERT_EQ(p.inputs.size(), 2u);
  EXPECT_EQ(p.inputs[1], nullptr);
  ASSERT_EQ(p.outputs.size(), 3u);
  EXPECT_TRUE(p.outputs[0]->typed);
  EXPECT_FALSE(p.outputs[1]->typed);
  EXPECT_EQ(p.outputs[2]->type, type(DType::F32, {3}));
  EXPECT_EQ(p.outputs[1]->producer, &p);
  EXPECT_TRUE(parsed->nodes[2]->outputs.empty());
  EXPECT_EQ(parsed->nodes[2]->inputs[0], nullptr);
}

TEST(TextParse, AcceptsCommentsUntypedNodesAndMissingNames) {
  std::unique_ptr<Graph> g = parseGraph(R"(
// RUN: nanoc %s --emit=ir | FileCheck %s
// CHECK: Relu

graph @g(%x: f32[2,2]) -> (%z) {
  %c = constant f32[2,2] dense<1.5>   // a splat
  %y = Add(%x, %c)
  %z = Relu(%y) : f32[2,2]
  %w = Relu(%z) name "Relu_9"
}
// trailing comment
)");
  EXPECT_EQ(g->name, "g");
  ASSERT_EQ(g->nodes.size(), 3u);
  EXPECT_EQ(g->nodes[0]->name, "Add");  // named after its op
  EXPECT_EQ(g->nodes[1]->name, "Relu");
  EXPECT_EQ(g->nodes[2]->name, "Relu_9");
  EXPECT_FALSE(g->nodes[0]->outputs[0]->typed);
  EXPECT_TRUE(g->nodes[1]->outputs[0]->typed);
  EXPECT_EQ(g->nodes[1]->outputs[0]->type, type(DType::F32, {2, 2}));
  const Value* c = findValue(*g, "c");
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->data->size(), 16u);
  EXPECT_EQ(c->as<float>()[3], 1.5f);
  EXPECT_EQ(g->outputs[0], g->nodes[1]->outputs[0]);
}

TEST(TextParse, ReadsAlternativeSpellings) {
  std::unique_ptr<Graph> g = parseGraph(
      "graph @g() -> () { %a = constant bf16[2] dense<[0x3F80, 0x0]> "
      "%b = constant bool[2] dense<[1, false]> "
      "%c = constant f32[3] dense<[1, -2, nan]> "
      "%d = \"constant\"(%a) {l = ints[], f = floats[1, 2], e = 1e3, n = -inf} : (f32[1]) }");
  const Value* a = findValue(*g, "a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->as<uint16_t>()[0], 0x3f80);
  EXPECT_EQ(findValue(*g, "b")->as<uint8_t>()[0], 1);
  EXPECT_EQ(findValue(*g, "c")->as<float>()[1], -2.f);
  EXPECT_TRUE(std::isnan(findValue(*g, "c")->as<float>()[2]));
  ASSERT_EQ(g->nodes.size(), 1u);
  const Node& n = *g->nodes[0];
  EXPECT_EQ(n.op, "constant");
  EXPECT_TRUE(n.ints("l").empty());
  EXPECT_EQ(n.floats("f"), (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(n.f("e"), 1000.0);
  EXPECT_EQ(n.f("n"), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(n.outputs[0]->typed);
}

TEST(TextParse, ErrorsNameTheLineAndColumn) {
  const std::string head = "graph @g(%x: f32[2]) -> (%y) {\n";
  expectParseError(head + "  %y = Relu(%q)\n}\n", "t.nir:2:13: use of undefined value %q");
  expectParseError(head + "  %y = Relu(%x)\n  %y = Relu(%x)\n}\n",
                   "t.nir:3:3: redefinition of value %y");
  expectParseError(head + "  %x = Relu(%x)\n}\n", "t.nir:2:3: redefinition of value %x");
  expectParseError(head + "  %a, %a = Split(%x)\n}\n", "t.nir:2:7: redefinition of value %a");
  // Graph turns an empty name hint into a generated one, so "" can never be kept.
  expectParseError("graph @g(%\"\": f32[2]) -> () {}", "t.nir:1:10: a value name cannot be empty");
  expectParseError("graph @g(%x: f32[2], %x: f32[2]) -> () {}",
                   "t.nir:1:22: redefinition of value %x");
  expectParseError(head + "  %y = Relu(%x) : f33[2]\n}\n", "t.nir:2:19: unknown dtype 'f33'");
  expectParseError(head + "  %y = Relu(%x\n}\n",
                   "t.nir:3:1: expected ',' or ')' after an operand, found '}'");
  expectParseError(head + "  %y = Relu(%x) name \"relu\n}\n", "t.nir:2:22: unterminated string");
  expectParseError(head + "  %y = Relu(%x) {a = 1, a = 2}\n}\n",
                   "t.nir:2:25: duplicate attribute 'a'");
  expectParseError(head + "  %y = Relu(%x) {a = 99999999999999999999}\n}\n",
                   "t.nir:2:22: integer 99999999999999999999 is out of range");
  expectParseError(head + "  %y = Relu(%x) {a = 1e999}\n}\n",
                   "t.nir:2:22: number 1e999 is out of range");
  expectParseError(head + "  %y = Relu(%x) {a = [1, \"s\"]}\n}\n",
                   "t.nir:2:26: expected a number in the list, found a string");
  expectParseError(head + "  %a = Relu(%x) name \"n\"\n  %y = Relu(%a) name \"n\"\n}\n",
                   "t.nir:3:22: node name \"n\" is already used (a node without a name clause "
                   "takes its op's name)");
  expectParseError(head + "  %a, %y = Split(%x) : f32[1]\n}\n",
                   "t.nir:2:22: 1 result types for 2 results");
  expectParseError("graph @g() -> (%nope) {\n}\n", "t.nir:1:16: use of undefined value %nope");
  expectParseError("graph @g() -> () {}\nextra", "t.nir:2:1: unexpected 'extra' after the graph");
  expectParseError("graph @g() -> () {", "t.nir:1:19: expected an op name, found end of input");
  expectParseError("", "t.nir:1:1: expected 'graph', found end of input");
  expectParseError("graph @g() -> () { $ }", "t.nir:1:20: unexpected character '$'");
  expectParseError("graph @g() -> () { %a = Relu(%\x01) }",
                   "t.nir:1:30: expected a value name after '%'");
  expectParseError("graph @g() -> () { %a = Op() {s = \"\\q\"} }",
                   "t.nir:1:36: invalid escape in string (use \\\", \\\\, \\n, \\t or \\XX)");
}

TEST(TextParse, ConstantErrorsNameTheLineAndColumn) {
  const std::string head = "graph @g() -> () {\n";
  expectParseError(head + "  %c = constant f32[3] dense<[1.0, 2.0]>\n}",
                   "t.nir:2:39: constant has 2 elements, type f32[3] has 3");
  expectParseError(head + "  %c = constant f32[1] dense<[1.0, 2.0, 3.0]>\n}",
                   "t.nir:2:36: constant has 3 elements, type f32[1] has 1");
  expectParseError(head + "  %c = constant i8[1] dense<[128]>\n}",
                   "t.nir:2:30: value 128 is out of range for i8");
  expectParseError(head + "  %c = constant u8[1] dense<[-1]>\n}",
                   "t.nir:2:30: value -1 is out of range for u8");
  expectParseError(head + "  %c = constant i32[1] dense<[1.5]>\n}",
                   "t.nir:2:31: invalid integer '1.5'");
  expectParseError(head + "  %c = constant f16[1] dense<[1.0]>\n}",
                   "t.nir:2:31: f16 elements are written as bit patterns such as 0x3c00");
  expectParseError(head + "  %c = constant bf16[1] dense<[0x10000]>\n}",
                   "t.nir:2:32: bit pattern 0x10000 is wider than 16 bits");
  expectParseError(head + "  %c = constant f32[1] dense<[0xzz]>\n}",
                   "t.nir:2:31: invalid hex number '0xzz'");
  expectParseError(head + "  %c = constant f32[1] dense<[true]>\n}",
                   "t.nir:2:31: expected a number, found 'true'");
  expectParseError(head + "  %c = constant u8[2] dense_hex<\"0g00\">\n}",
                   "t.nir:2:33: dense_hex holds a character that is not a hex digit");
  expectParseError(head + "  %c = constant u8[2] dense_hex<\"000\">\n}",
                   "t.nir:2:33: dense_hex holds 1 bytes, type u8[2] needs 2");
  expectParseError(head + "  %c = constant u8[2] sparse<[1, 2]>\n}",
                   "t.nir:2:23: expected dense<...> or dense_hex<\"...\">, found 'sparse'");
  expectParseError(head + "  %c = constant f32[-1] dense<[]>\n}",
                   "t.nir:2:21: negative dimension -1");
  expectParseError(head + "  %c = constant f32[4294967296,4294967296] dense<[]>\n}",
                   "t.nir:2:32: type f32[...] is too large");
  expectParseError(head + "  %c = constant f32[0,4294967296,4294967296] dense<[]>\n}",
                   "t.nir:2:34: type f32[...] is too large");
  expectParseError(head + "  %c = constant u8[65536,65536] dense<0>\n}",
                   "t.nir:2:39: splat constant of type u8[65536,65536] is too large to expand");
  expectParseError(head + "  %a, %b = constant f32[] dense<0.0>\n}",
                   "t.nir:2:12: a constant defines exactly one value");
}

// The parser faces untrusted text (fuzzers, hand-edited files): every prefix
// and every single-byte corruption of a valid file must either parse or throw
// CompileError, never crash or throw anything else.
TEST(TextParse, NeverCrashesOnTruncatedOrCorruptedInput) {
  const std::string text = R"(graph @"g 1"(%x: f32[1,2], %"a/b": i64[]) -> (%y, %"a/b") {
  %c = constant f32[2] dense<[0.5, -1e-05]>
  %h = constant u8[80] dense_hex<"00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000ff">
  %s, %t = Split(%x, _) {axis = 1, f = [1.0, inf], n = "x\"y", p = [0, -1]} name "s" : (f32[1,1], ?)
  %y = Add(%s, %c) name "add" : f32[1,2]
}
)";
  ASSERT_NO_THROW(parseGraph(text));
  auto tryParse = [](const std::string& input) {
    try {
      parseGraph(input);
    } catch (const CompileError&) {
    }
  };
  for (size_t n = 0; n <= text.size(); ++n) tryParse(text.substr(0, n));
  std::mt19937 rng(1234);
  const std::string alphabet = "%@\"\\[](){}<>,:=?-_.0123456789ex \n/\x01\xff";
  for (int round = 0; round < 3000; ++round) {
    std::string corrupted = text;
    for (int k = 0; k < 3; ++k)
      corrupted[rng() % corrupted.size()] = alphabet[rng() % alphabet.size()];
    tryParse(corrupted);
  }
}

}  // namespace
}  // namespace nanoc
