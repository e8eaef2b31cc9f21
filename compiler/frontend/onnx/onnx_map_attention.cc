// ONNX Attention (opsets 23-25) -> IR Attention / AttentionScores
// (compiler/ops/attention.cc), which take 4-D [batch, heads, sequence, head
// size] operands. 3-D inputs [batch, sequence, heads * head size] are split
// into heads with Reshape + Transpose and Y is merged back; a KV cache is
// concatenated in front of K and V (that concatenation is present_key and
// present_value); qk_matmul_output, when read, is an AttentionScores node.
#include <cmath>

#include "compiler/frontend/onnx/onnx_mapping_util.h"

namespace nanoc::onnx_import {
namespace {

// [B, S, H * D] -> [B, H, S, D].
Value* splitHeads(NodeImporter& n, Value* x, int64_t heads, const char* role) {
  const std::vector<int64_t>& d = x->type.dims;
  if (heads < 1 || d[2] % heads != 0)
    n.fail(std::string(role) + " " + x->type.str() + ": its hidden size is not a multiple of " +
           std::to_string(heads) + " heads");
  Value* r =
      n.emit("Reshape", {x}, {{"shape", std::vector<int64_t>{d[0], d[1], heads, d[2] / heads}}},
             std::string(role) + "_heads");
  return n.emit("Transpose", {r}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}},
                std::string(role) + "_bhsd");
}

std::string outputName(const NodeImporter& n, int i) {
  return i < n.proto().output_size() ? n.proto().output(i) : "";
}

}  // namespace

void mapAttention(NodeImporter& n) {
  Value* q = n.requiredInput(0, "Q");
  Value* k = n.requiredInput(1, "K");
  Value* v = n.requiredInput(2, "V");
  Value* mask = n.input(3);
  Value* past_key = n.input(4);
  Value* past_value = n.input(5);
  Value* nonpad = n.input(6);
  int64_t rank = rankOf(q);
  if (rank != rankOf(k) || rank != rankOf(v) || (rank != 3 && rank != 4))
    n.fail("Q, K and V must all be 3-D or all 4-D, got " + q->type.str() + ", " + k->type.str() +
           ", " + v->type.str());
  if (!past_key != !past_value) n.fail("past_key and past_value must be given together");
  if (past_key && nonpad) n.fail("nonpad_kv_seqlen cannot be combined with past_key/past_value");
  if (rank == 3) {
    std::optional<int64_t> q_heads = n.intAttr("q_num_heads");
    std::optional<int64_t> kv_heads = n.intAttr("kv_num_heads");
    if (!q_heads || !kv_heads)
      n.fail("3-D inputs need the q_num_heads and kv_num_heads attributes");
    q = splitHeads(n, q, *q_heads, "Q");
    k = splitHeads(n, k, *kv_heads, "K");
    v = splitHeads(n, v, *kv_heads, "V");
  }
  int64_t past_len = 0;
  if (past_key) {
    past_len = past_key->type.rank() == 4 ? past_key->type.dims[2] : 0;
    k = n.emit("Concat", {past_key, k}, {{"axis", int64_t{2}}}, "present_key", outputName(n, 1));
    v = n.emit("Concat", {past_value, v}, {{"axis", int64_t{2}}}, "present_value",
               outputName(n, 2));
  }
  for (int i : {1, 2}) {
    if (!n.outputUsed(static_cast<size_t>(i))) continue;
    Value* present = i == 1 ? k : v;
    if (!past_key)  // the cache is K (V) itself, under the output's name
      present = n.emit("Identity", {present}, {}, i == 1 ? "present_key" : "present_value",
                       outputName(n, i));
    n.setOutput(static_cast<size_t>(i), present);
  }
  double head = static_cast<double>(q->type.dims[3]);
  std::optional<double> scale = n.floatAttr("scale");
  std::map<std::string, Attr> attrs = {
      {"scale", scale ? *scale : 1.0 / std::sqrt(head)},
      {"softcap", n.floatAttr("softcap", 0.0)},
      {"is_causal", n.intAttr("is_causal", 0)},
      {"past_len", past_len},
      {"left_window", n.intAttr("left_window_size", -1)},
      {"right_window", n.intAttr("right_window_size", -1)},
  };
  std::vector<Value*> inputs = {q, k, v};
  if (mask || nonpad) inputs.push_back(mask);
  if (nonpad) inputs.push_back(nonpad);
  if (n.outputUsed(3)) {
    int64_t mode = n.intAttr("qk_matmul_output_mode", 0);
    std::map<std::string, Attr> scores = attrs;
    scores["mode"] = mode;
    n.setOutput(3, n.emit("AttentionScores", inputs, scores, "qk_matmul_output", outputName(n, 3)));
  }
  if (rank == 4) {
    n.emitResult("Attention", inputs, attrs);
    return;
  }
  Value* y = n.emit("Attention", inputs, attrs);
  Value* yt = n.emit("Transpose", {y}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}, "Y_bshd");
  const std::vector<int64_t>& d = yt->type.dims;
  n.emitResult("Reshape", {yt}, {{"shape", std::vector<int64_t>{d[0], d[1], d[2] * d[3]}}},
               "Y_merge");
}

}  // namespace nanoc::onnx_import
