// The Attention and AttentionScores lowering (lower_attention.cc) against the
// reference (compiler/ops/attention.cc) on random inputs, one feature at a
// time and combined: grouped heads, float and bool masks (short ones padded),
// causal with a cache offset, windows, nonpad_kv_seqlen, softcap, every
// qk_matmul_output mode, and rows with every key masked. Then RotaryEmbedding
// (lower_rotary_embedding.cc), the other transformer-block op.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "compiler/codegen/cpu/kernel_test_util.h"

namespace nanoc::cpu {
namespace {

using testing::AlignedBuffer;
using Attrs = std::map<std::string, Attr>;

TensorType f32(std::vector<int64_t> dims) { return {DType::F32, std::move(dims)}; }

Attrs attentionAttrs(int64_t causal = 0, double softcap = 0, int64_t past_len = 0,
                     int64_t left = -1, int64_t right = -1) {
  return {{"scale", 0.35},        {"softcap", softcap},  {"is_causal", causal},
          {"past_len", past_len}, {"left_window", left}, {"right_window", right}};
}

// Runs Attention and AttentionScores in every mode on random Q, K, V and
// mask, with `nonpad` as nonpad_kv_seqlen when not empty.
void expectAttentionMatches(const std::vector<int64_t>& q, const std::vector<int64_t>& k,
                            int64_t v_head, std::optional<TensorType> mask, Attrs attrs,
                            uint64_t seed, std::vector<int64_t> nonpad = {}) {
  std::vector<TensorType> types = {f32(q), f32(k), f32({k[0], k[1], k[2], v_head})};
  if (mask || !nonpad.empty()) types.push_back(mask ? *mask : f32({1}));
  if (!nonpad.empty()) types.push_back({DType::I64, {q[0]}});
  for (int64_t mode = -1; mode <= 3; ++mode) {
    std::string op = mode < 0 ? "Attention" : "AttentionScores";
    Attrs a = attrs;
    if (mode >= 0) a["mode"] = mode;
    std::string what = testing::describe(op, types) + " mode " + std::to_string(mode);
    SCOPED_TRACE(what);
    auto g = testing::makeSingleNodeGraph(op, types, a);
    if (!mask && !nonpad.empty()) g->node->inputs[3] = nullptr;  // absent mask
    std::mt19937_64 rng(seed);
    std::vector<AlignedBuffer> data;
    for (size_t i = 0; i < types.size(); ++i) {
      if (i == 3 && !mask) continue;
      data.emplace_back(types[i].bytes());
      testing::fillRandom(data.back(), types[i], rng);
    }
    if (!nonpad.empty())
      std::memcpy(data.back().data(), nonpad.data(), nonpad.size() * sizeof(int64_t));
    if (mask || nonpad.empty()) {
      testing::expectLoweringMatchesReference(*g->node, data, what);
      continue;
    }
    // An absent mask takes no kernel buffer but is a null reference input,
    // which expectLoweringMatchesReference does not model: compare here.
    testing::JitKernel kernel = testing::compileKernel(*g->node);
    const TensorType& out = g->node->outputs[0]->type;
    AlignedBuffer got(out.bytes()), want(out.bytes());
    std::vector<void*> buffers = {data[0].data(), data[1].data(), data[2].data(), data[3].data(),
                                  got.data()};
    testing::runKernel(kernel, buffers);
    findOp(op)->reference(*g->node,
                          {data[0].data(), data[1].data(), data[2].data(), nullptr, data[3].data()},
                          {want.data()});
    testing::expectOutputMatches(out, got, want, what);
  }
}

TEST(AttentionLowering, PlainAndGroupedHeads) {
  expectAttentionMatches({2, 3, 4, 8}, {2, 3, 6, 8}, 8, std::nullopt, attentionAttrs(), 1);
  expectAttentionMatches({2, 6, 5, 16}, {2, 2, 7, 16}, 10, std::nullopt, attentionAttrs(), 2);
  expectAttentionMatches({1, 2, 40, 64}, {1, 2, 300, 64}, 64, std::nullopt, attentionAttrs(), 3);
}

TEST(AttentionLowering, FloatAndBoolMasksBroadcastAndPadded) {
  expectAttentionMatches({2, 3, 4, 8}, {2, 3, 6, 8}, 8, f32({4, 6}), attentionAttrs(), 4);
  expectAttentionMatches({2, 3, 4, 8}, {2, 3, 6, 8}, 8, f32({2, 1, 4, 4}), attentionAttrs(), 5);
  expectAttentionMatches({2, 3, 4, 8}, {2, 3, 6, 8}, 8, TensorType{DType::Bool, {3, 4, 6}},
                         attentionAttrs(), 6);
  expectAttentionMatches({2, 3, 4, 8}, {2, 3, 6, 8}, 8, TensorType{DType::Bool, {5}},
                         attentionAttrs(1), 7);
  // An empty mask row pads every key as masked: Y is 0.
  expectAttentionMatches({1, 1, 2, 4}, {1, 1, 3, 4}, 4, f32({2, 0}), attentionAttrs(), 17);
}

TEST(AttentionLowering, CausalWithCacheOffsetWindowsAndSoftcap) {
  expectAttentionMatches({2, 3, 4, 8}, {2, 3, 6, 8}, 8, std::nullopt, attentionAttrs(1), 8);
  expectAttentionMatches({2, 3, 4, 8}, {2, 3, 10, 8}, 8, std::nullopt, attentionAttrs(1, 0, 6), 9);
  expectAttentionMatches({2, 3, 4, 8}, {2, 3, 10, 8}, 8, f32({4, 10}),
                         attentionAttrs(1, 2.0, 6, 2, -1), 10);
  expectAttentionMatches({1, 1, 5, 4}, {1, 1, 5, 4}, 4, std::nullopt, attentionAttrs(0, 0, 0, 1, 2),
                         11);
}

TEST(AttentionLowering, SeveralChunksOfKeys) {
  // 300 keys: two full chunks and a partial one, each row's key range cut by
  // the causal frontier (offset 260), the left window, a padded bool mask or
  // nonpad_kv_seqlen.
  expectAttentionMatches({1, 2, 40, 32}, {1, 2, 300, 32}, 16, std::nullopt,
                         attentionAttrs(1, 0, 260), 14);
  expectAttentionMatches({1, 2, 40, 32}, {1, 2, 300, 32}, 16, TensorType{DType::Bool, {40, 290}},
                         attentionAttrs(1, 1.5, 260, 150), 15);
  expectAttentionMatches({2, 2, 3, 16}, {2, 2, 300, 16}, 16, f32({1, 1, 3, 300}), attentionAttrs(0),
                         16, {300, 130});
}

TEST(AttentionLowering, NonpadKvSeqlenAndFullyMaskedRows) {
  // Batch 1 has 2 valid keys; with causal and 4 queries, its offset is -2 and
  // its first two query rows see no key at all.
  expectAttentionMatches({2, 2, 4, 8}, {2, 2, 6, 8}, 8, std::nullopt, attentionAttrs(1), 12,
                         {6, 2});
  expectAttentionMatches({2, 2, 3, 8}, {2, 2, 6, 8}, 8, TensorType{DType::Bool, {2, 1, 3, 6}},
                         attentionAttrs(1), 13, {5, 3});
}

Attrs rotaryAttrs(int64_t interleaved, int64_t rot, int64_t heads_first) {
  return {{"interleaved", interleaved}, {"rotary_dim", rot}, {"heads_first", heads_first}};
}

TEST(RotaryEmbeddingLowering, BothLayoutsHalvesAndInterleavedPartialRotation) {
  for (int64_t heads_first : {0, 1})
    for (int64_t interleaved : {0, 1})
      for (int64_t rot : {4, 8}) {
        std::vector<int64_t> x =
            heads_first ? std::vector<int64_t>{2, 3, 5, 8} : std::vector<int64_t>{2, 5, 3, 8};
        testing::expectLoweringMatchesReference(
            "RotaryEmbedding", {f32(x), f32({2, 5, rot / 2}), f32({2, 5, rot / 2})},
            rotaryAttrs(interleaved, rot, heads_first), 20 + rot + interleaved);
      }
}

TEST(RotaryEmbeddingLowering, PositionIdsPickCacheRowsClampedToTheCache) {
  std::vector<TensorType> types = {f32({2, 2, 3, 8}), f32({10, 4}), f32({10, 4}),
                                   TensorType{DType::I64, {2, 3}}};
  auto g = testing::makeSingleNodeGraph("RotaryEmbedding", types, rotaryAttrs(0, 8, 1));
  std::mt19937_64 rng(30);
  std::vector<AlignedBuffer> data;
  for (size_t i = 0; i < 3; ++i) {
    data.emplace_back(types[i].bytes());
    testing::fillRandom(data.back(), types[i], rng);
  }
  std::vector<int64_t> positions = {0, 9, 4, -3, 12, 7};  // -3 and 12 clamp to 0 and 9
  data.emplace_back(types[3].bytes());
  std::memcpy(data.back().data(), positions.data(), types[3].bytes());
  testing::expectLoweringMatchesReference(*g->node, data, "RotaryEmbedding with position_ids");
}

}  // namespace
}  // namespace nanoc::cpu
