// nanoc.MaxPoolNCHWc (lower_nchwc_pool.cc) against the op's reference, bit
// for bit, on every register tile this machine runs, at blocks of 4, 8 and
// 16 lanes (and 1, 3, 32): resnet's 3x3 stride 2 pad 1 (rows 112 wide),
// squeezenet's 3x3 stride 2 in ceil mode (55 -> 27, and 54 -> 27 with a
// partial last window), 2x2 stride 2, 5x5 stride 1 pad 2, dilations (empty
// windows among them), asymmetric pads and mixed strides, a 1x1 map, two
// images; the shapes that take the run-time kernel rows (too many taps),
// the border loops (a map narrower than the window) and the kernel-column
// loops (a kernel row too wide to unroll); empty tensors; X between
// no-access pages (a read outside X faults). Inputs holding NaN, -inf, +inf
// and signed zeros; the op's reference against MaxPool's on the same
// channels; and the shape rule's refusals.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/kernel_test_util.h"
#include "compiler/ir/error.h"
#include "compiler/ops/nchwc.h"
#include "compiler/ops/pool.h"
#include "compiler/ops/schema_checks.h"

namespace nanoc::cpu {
namespace {

using Attrs = std::map<std::string, Attr>;
using Dims = std::vector<int64_t>;

constexpr float kLowest = std::numeric_limits<float>::lowest();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TensorType f32(Dims dims) { return {DType::F32, std::move(dims)}; }

struct Window {
  Dims kernel, strides, pads, dilations = {1, 1};  // pads: top, left, bottom, right
  bool ceil_mode = false;
};

// X [N, Cb, H, W, b] pooled by `w`, its output extents MaxPool's (with or
// without ceil_mode).
struct Pool {
  Dims x;
  Window w;
};

Dims outputSpatial(const Pool& p) {
  Dims out;
  for (size_t i = 0; i < 2; ++i) {
    PoolAxis a{p.x[2 + i],     p.w.kernel[i], p.w.dilations[i],
               p.w.strides[i], p.w.pads[i],   p.w.pads[2 + i]};
    out.push_back(poolOutputSize(a, p.w.ceil_mode));
  }
  return out;
}

Attrs attrs(const Window& w, const Dims& out) {
  return {{"kernel_shape", w.kernel},
          {"strides", w.strides},
          {"pads", w.pads},
          {"dilations", w.dilations},
          {"output_spatial", out}};
}

std::string describe(const Pool& p) {
  return "MaxPoolNCHWc X " + dimsStr(p.x) + " kernel " + dimsStr(p.w.kernel) + " strides " +
         dimsStr(p.w.strides) + " pads " + dimsStr(p.w.pads) + " dilations " +
         dimsStr(p.w.dilations) + (p.w.ceil_mode ? " ceil" : "") + " -> " +
         dimsStr(outputSpatial(p));
}

std::unique_ptr<testing::SingleNodeGraph> graphOf(const Pool& p) {
  return testing::makeSingleNodeGraph("nanoc.MaxPoolNCHWc", {f32(p.x)},
                                      attrs(p.w, outputSpatial(p)));
}

// Y's element i of the kernel and of the reference, the same bits (a max
// takes no rounding: any difference is a wrong tap, order or NaN rule).
void expectSameBits(const float* got, const float* want, int64_t count, const std::string& what) {
  int64_t bad = 0;
  for (int64_t i = 0; i < count; ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0 && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", reference " << want[i];
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << count << " elements differ";
}

// The node on X's data, on every tile of testing::tileTargets() (the kernel
// over its tasks in uneven chunks, out of order, Y filled with NaN first, as
// testing::expectMatchesOnEveryTile runs it), Y compared bit for bit.
void expectMatchesOn(const Node& node, const testing::AlignedBuffer& x, const std::string& what) {
  SCOPED_TRACE(what);
  const TensorType& out = node.outputs[0]->type;
  testing::AlignedBuffer want(out.bytes()), got(out.bytes());
  findOp(node.op)->reference(node, {x.data()}, {want.data()});
  for (const testing::KernelAttributes& target : testing::tileTargets()) {
    SCOPED_TRACE("target-features " + (target.empty() ? "none" : target[1].second.substr(0, 40)));
    testing::JitKernel kernel = testing::compileKernel(node, target);
    std::memset(got.data(), 0xff, got.size());
    testing::runKernel(kernel, {x.data(), got.data()});
    expectSameBits(reinterpret_cast<const float*>(got.data()),
                   reinterpret_cast<const float*>(want.data()), out.numel(), what);
  }
}

// Random X in [-2, 2].
void expectMatches(const Pool& p, uint64_t seed) {
  auto g = graphOf(p);
  const TensorType& type = g->node->inputs[0]->type;
  testing::AlignedBuffer x(type.bytes());
  std::mt19937_64 rng(seed);
  testing::fillRandom(x, type, rng);
  expectMatchesOn(*g->node, x, describe(p));
}

const Window k3s2p1{{3, 3}, {2, 2}, {1, 1, 1, 1}};
const Window k3s2ceil{{3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true};
const Window k2s2{{2, 2}, {2, 2}, {0, 0, 0, 0}};
const Window k5s1p2{{5, 5}, {1, 1}, {2, 2, 2, 2}};

// resnet's stem pool at each block: rows of 112 pixels (two input rows,
// one output row: the top edge's run-time kernel rows) and a 13x13 map.
TEST(MaxPoolNchwcLowering, ResnetWindow) {
  uint64_t seed = 1;
  for (int64_t b : {4, 8, 16}) {
    expectMatches({{1, 2, 2, 112, b}, k3s2p1}, seed++);
    expectMatches({{1, 1, 13, 13, b}, k3s2p1}, seed++);
  }
  // The stem's own shape through the random-input harness (tolerance
  // compare), once: 112x112 -> 56x56.
  Pool stem{{1, 1, 112, 112, 16}, k3s2p1};
  auto g = graphOf(stem);
  EXPECT_EQ(g->node->outputs[0]->type.dims, (Dims{1, 1, 56, 56, 16}));
  testing::expectMatchesOnEveryTile(*g->node, seed, describe(stem));
}

// squeezenet's 3x3 stride 2 in ceil mode: 55 -> 27 (every window whole) and
// 54 -> 27 (the last row's and column's window one tap short).
TEST(MaxPoolNchwcLowering, SqueezenetCeilMode) {
  uint64_t seed = 10;
  for (int64_t b : {4, 8, 16}) {
    Pool whole{{1, 1, 55, 55, b}, k3s2ceil};
    Pool partial{{1, 1, 54, 54, b}, k3s2ceil};
    EXPECT_EQ(outputSpatial(whole), (Dims{27, 27}));
    EXPECT_EQ(outputSpatial(partial), (Dims{27, 27}));
    expectMatches(whole, seed++);
    expectMatches(partial, seed++);
  }
  // A ceil-mode window past the end of a row that the floor keeps whole,
  // with padding: 7 + 1 + 1 at stride 2.
  expectMatches({{1, 1, 7, 8, 8}, {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true}}, seed++);
}

// Every window on small maps, the block cycling through 4, 8 and 16.
TEST(MaxPoolNchwcLowering, WindowsAndMaps) {
  const std::vector<Window> windows = {
      k3s2p1,
      k3s2ceil,
      k2s2,
      {{2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true},  // 2x2 stride 2, ceil: odd maps' last column
      k5s1p2,
      {{3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}},  // dilated, stride 1
      {{3, 3}, {2, 1}, {1, 0, 2, 1}, {2, 3}},  // dilated, asymmetric
      {{3, 3}, {1, 2}, {2, 0, 1, 2}},          // asymmetric pads, mixed strides
      {{3, 2}, {3, 1}, {0, 1, 2, 0}, {1, 1}, true},
      {{1, 1}, {1, 1}, {0, 0, 0, 0}},
  };
  const std::vector<Dims> maps = {{1, 1}, {2, 2}, {5, 7}, {9, 9}, {2, 30}};
  const int64_t blocks[] = {4, 8, 16};
  uint64_t seed = 100;
  for (const Dims& map : maps)
    for (const Window& w : windows) {
      bool fits = true;
      for (size_t i = 0; i < 2; ++i)
        fits &= map[i] + w.pads[i] + w.pads[2 + i] >= (w.kernel[i] - 1) * w.dilations[i] + 1;
      if (!fits) continue;  // no output
      const int64_t b = blocks[seed % 3];
      expectMatches({{1, 1, map[0], map[1], b}, w}, seed);
      ++seed;
    }
}

// Two images of several blocks; blocks of 1, 3 and 32 lanes.
TEST(MaxPoolNchwcLowering, ImagesAndBlocks) {
  expectMatches({{2, 3, 9, 10, 8}, k3s2p1}, 200);
  expectMatches({{2, 2, 6, 6, 4}, k2s2}, 201);
  expectMatches({{1, 2, 7, 7, 1}, k3s2p1}, 202);
  expectMatches({{1, 2, 7, 7, 3}, k5s1p2}, 203);
  expectMatches({{1, 1, 7, 9, 32}, k3s2p1}, 204);
}

// Dilated windows whose taps step over X: -FLT_MAX where no tap is inside.
TEST(MaxPoolNchwcLowering, EmptyWindows) {
  // Rows: taps at -1 and 2 of a 2-row map; columns as well.
  Pool p{{1, 1, 2, 2, 4}, {{2, 2}, {1, 1}, {1, 1, 1, 1}, {3, 3}}};
  auto g = graphOf(p);
  const TensorType& type = g->node->inputs[0]->type;
  testing::AlignedBuffer x(type.bytes());
  std::mt19937_64 rng(300);
  testing::fillRandom(x, type, rng);
  expectMatchesOn(*g->node, x, describe(p));
  const TensorType& out = g->node->outputs[0]->type;
  testing::AlignedBuffer want(out.bytes());
  findOp(g->node->op)->reference(*g->node, {x.data()}, {want.data()});
  EXPECT_EQ(reinterpret_cast<const float*>(want.data())[0], kLowest);
  expectMatches({{1, 1, 5, 9, 8}, {{2, 3}, {1, 2}, {1, 1, 1, 2}, {3, 4}, true}}, 301);
}

// The other plans: more taps than unrolled (9x9: every row's kernel rows at
// run time), a map narrower than the window (borders of more pixels than
// unrolled: the border loop), a kernel row too wide to unroll (the
// kernel-column loop), a tall kernel with unrolled columns.
TEST(MaxPoolNchwcLowering, LoopedPlans) {
  expectMatches({{1, 1, 12, 11, 8}, {{9, 9}, {1, 2}, {4, 4, 4, 4}}}, 400);
  expectMatches({{1, 1, 4, 5, 4}, {{3, 12}, {1, 1}, {1, 11, 1, 11}}}, 401);
  expectMatches({{1, 1, 3, 80, 16}, {{2, 70}, {1, 3}, {1, 30, 0, 30}, {1, 1}, true}}, 402);
  expectMatches({{1, 2, 3, 40, 4}, {{1, 66}, {1, 1}, {0, 20, 0, 20}, {1, 1}}}, 403);
  expectMatches({{1, 1, 40, 9, 8}, {{33, 3}, {2, 2}, {16, 1, 16, 1}, {1, 2}}}, 404);
}

// X's bytes in a mapping of their own, with no-access pages right before and
// right after, X's first byte on the first page (at_end false) or its last
// byte on the last (true): a kernel that reads before or past X faults.
class GuardedX {
 public:
  GuardedX(size_t bytes, bool at_end) {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t pages = (bytes + page_ - 1) / page_;
    size_ = (pages + 2) * page_;
    void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
    base_ = static_cast<uint8_t*>(p);
    mprotect(base_, page_, PROT_NONE);
    mprotect(base_ + (pages + 1) * page_, page_, PROT_NONE);
    data_ = base_ + page_ + (at_end ? pages * page_ - bytes : 0);
  }
  GuardedX(const GuardedX&) = delete;
  GuardedX& operator=(const GuardedX&) = delete;
  ~GuardedX() { munmap(base_, size_); }
  uint8_t* data() const { return data_; }

 private:
  size_t page_ = 0, size_ = 0;
  uint8_t* base_ = nullptr;
  uint8_t* data_ = nullptr;
};

// The kernel reads X only: X between no-access pages, at both ends of its
// mapping in turn, on the shapes of every plan with padding on every side.
TEST(MaxPoolNchwcLowering, ReadsOnlyX) {
  const std::vector<Pool> pools = {
      {{1, 1, 13, 13, 16}, k3s2p1},
      {{1, 2, 11, 54, 8}, k3s2ceil},
      {{1, 1, 7, 8, 4}, {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true}},
      {{1, 1, 9, 8, 8}, {{3, 3}, {2, 1}, {1, 0, 2, 1}, {2, 3}}},
      {{1, 1, 12, 11, 4}, {{9, 9}, {1, 2}, {4, 4, 4, 4}}},
      {{1, 1, 4, 5, 16}, {{3, 12}, {1, 1}, {1, 11, 1, 11}}},
      {{1, 1, 3, 80, 4}, {{2, 70}, {1, 3}, {1, 30, 0, 30}, {1, 1}, true}},
  };
  uint64_t seed = 550;
  for (const Pool& p : pools) {
    auto g = graphOf(p);
    const TensorType& type = g->node->inputs[0]->type;
    const TensorType& out = g->node->outputs[0]->type;
    testing::AlignedBuffer random(type.bytes()), want(out.bytes()), got(out.bytes());
    std::mt19937_64 rng(seed++);
    testing::fillRandom(random, type, rng);
    GuardedX first(type.bytes(), false), last(type.bytes(), true);
    std::memcpy(first.data(), random.data(), type.bytes());
    std::memcpy(last.data(), random.data(), type.bytes());
    findOp(g->node->op)->reference(*g->node, {random.data()}, {want.data()});
    for (const testing::KernelAttributes& target : testing::tileTargets()) {
      SCOPED_TRACE("target-features " + (target.empty() ? "none" : target[1].second.substr(0, 40)));
      testing::JitKernel kernel = testing::compileKernel(*g->node, target);
      for (const GuardedX* x : {&first, &last}) {
        const std::string what =
            describe(p) + (x == &last ? " X at a page's end" : " X at a page's start");
        std::memset(got.data(), 0xff, got.size());
        testing::runKernel(kernel, {x->data(), got.data()});
        expectSameBits(reinterpret_cast<const float*>(got.data()),
                       reinterpret_cast<const float*>(want.data()), out.numel(), what);
      }
    }
  }
}

// Zero images or blocks (no task does anything), a map of no rows (every
// window in the padding: -FLT_MAX).
TEST(MaxPoolNchwcLowering, EmptyTensors) {
  expectMatches({{0, 2, 5, 5, 8}, k3s2p1}, 500);
  expectMatches({{1, 0, 5, 5, 8}, k3s2p1}, 501);
  expectMatches({{1, 1, 0, 6, 4}, {{3, 3}, {1, 1}, {2, 1, 2, 1}}}, 502);
}

// NaN, -inf, +inf, -FLT_MAX and signed zeros set by hand among random
// values: a NaN never taken, a window of NaN and -inf only giving -FLT_MAX,
// of +0 and -0 the first in (kh, kw) order winning.
TEST(MaxPoolNchwcLowering, SpecialValues) {
  uint64_t seed = 600;
  for (const Pool& p : {Pool{{1, 2, 6, 8, 4}, k3s2p1}, Pool{{1, 1, 7, 7, 16}, k3s2ceil},
                        Pool{{2, 1, 6, 6, 8}, k2s2}, Pool{{1, 1, 9, 19, 8}, k5s1p2}}) {
    auto g = graphOf(p);
    const TensorType& type = g->node->inputs[0]->type;
    const int64_t H = p.x[2], W = p.x[3], b = p.x[4], numel = type.numel();
    testing::AlignedBuffer x(type.bytes());
    std::mt19937_64 rng(seed++);
    testing::fillRandom(x, type, rng);
    auto* v = reinterpret_cast<float*>(x.data());
    // Scattered specials.
    const float specials[] = {kNaN, -kNaN, -kInf, kInf, kLowest, 0.0f, -0.0f};
    std::uniform_int_distribution<int64_t> at(0, numel - 1);
    for (int k = 0; k < numel / 8; ++k) v[at(rng)] = specials[k % 7];
    // The first 2x2 pixels of plane 0: lane 0 NaN and -inf only (-FLT_MAX
    // where a window holds no other tap), lane 1 -0 then +0 (-0 first),
    // lane 2 +0 then -0, lane 3 all NaN.
    for (int64_t ih = 0; ih < 2; ++ih)
      for (int64_t iw = 0; iw < 2; ++iw) {
        float* px = v + (ih * W + iw) * b;
        const bool first = ih == 0 && iw == 0;
        px[0] = (ih + iw) % 2 ? -kInf : kNaN;
        px[1] = first ? -0.0f : 0.0f;
        px[2] = first ? 0.0f : -0.0f;
        px[3] = kNaN;
      }
    // A whole row of NaN in the last block, lane 0 of every pixel of row 1.
    if (H > 1)
      for (int64_t iw = 0; iw < W; ++iw) v[(((p.x[0] * p.x[1] - 1) * H + 1) * W + iw) * b] = kNaN;
    expectMatchesOn(*g->node, x, describe(p) + " with NaN, inf and signed zeros");
  }
  // Every pixel NaN: -FLT_MAX everywhere.
  Pool p{{1, 1, 5, 5, 4}, k3s2p1};
  auto g = graphOf(p);
  const TensorType& type = g->node->inputs[0]->type;
  testing::AlignedBuffer x(type.bytes());
  auto* v = reinterpret_cast<float*>(x.data());
  for (int64_t i = 0; i < type.numel(); ++i) v[i] = kNaN;
  expectMatchesOn(*g->node, x, describe(p) + " all NaN");
  const TensorType& out = g->node->outputs[0]->type;
  testing::AlignedBuffer want(out.bytes());
  findOp(g->node->op)->reference(*g->node, {x.data()}, {want.data()});
  for (int64_t i = 0; i < out.numel(); ++i)
    ASSERT_EQ(reinterpret_cast<const float*>(want.data())[i], kLowest) << i;
}

// The op's reference is f32 MaxPool's on the same channels: X [N, C, H, W]
// (C not a whole number of blocks) pooled by MaxPool with and without
// ceil_mode, against X packed into blocks and pooled by MaxPoolNCHWc with
// MaxPool's output extents, bit for bit, NaN and signed zeros included.
TEST(MaxPoolNchwcLowering, ReferenceIsMaxPools) {
  struct Case {
    Dims image;  // N, C, H, W
    int64_t block;
    Window w;
  };
  const std::vector<Case> cases = {
      {{1, 6, 13, 13}, 4, k3s2p1},
      {{2, 5, 54, 11}, 8, k3s2ceil},
      {{1, 3, 7, 7}, 16, {{2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true}},
      {{1, 9, 9, 8}, 8, {{3, 3}, {2, 1}, {1, 0, 2, 1}, {2, 3}}},
      {{1, 4, 2, 2}, 4, {{2, 2}, {1, 1}, {1, 1, 1, 1}, {3, 3}}},
  };
  uint64_t seed = 700;
  for (const Case& c : cases) {
    const int64_t N = c.image[0], C = c.image[1], H = c.image[2], W = c.image[3], b = c.block;
    const int64_t Cb = channelBlocks(C, b);
    Attrs pool_attrs = {{"kernel_shape", c.w.kernel},
                        {"strides", c.w.strides},
                        {"pads", c.w.pads},
                        {"dilations", c.w.dilations},
                        {"ceil_mode", int64_t{c.w.ceil_mode}}};
    auto plain = testing::makeSingleNodeGraph("MaxPool", {f32(c.image)}, pool_attrs);
    const Dims& y = plain->node->outputs[0]->type.dims;
    const int64_t OH = y[2], OW = y[3];
    auto blocked = testing::makeSingleNodeGraph("nanoc.MaxPoolNCHWc", {f32({N, Cb, H, W, b})},
                                                attrs(c.w, {OH, OW}));
    const std::string what = "MaxPool " + dimsStr(c.image) + " block " + std::to_string(b);
    ASSERT_EQ(blocked->node->outputs[0]->type.dims, (Dims{N, Cb, OH, OW, b})) << what;

    std::vector<float> x(static_cast<size_t>(N * C * H * W));
    std::mt19937_64 rng(seed++);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    const float specials[] = {kNaN, -kInf, 0.0f, -0.0f};
    for (size_t i = 0; i < x.size(); ++i) x[i] = i % 5 == 0 ? specials[i / 5 % 4] : dist(rng);
    std::vector<float> xb(static_cast<size_t>(N * Cb * H * W * b), 0.0f);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t ch = 0; ch < C; ++ch)
        for (int64_t p = 0; p < H * W; ++p)
          xb[static_cast<size_t>(((n * Cb + ch / b) * H * W + p) * b + ch % b)] =
              x[static_cast<size_t>((n * C + ch) * H * W + p)];
    std::vector<float> want(static_cast<size_t>(N * C * OH * OW));
    std::vector<float> got(static_cast<size_t>(N * Cb * OH * OW * b));
    findOp("MaxPool")->reference(*plain->node, {x.data()}, {want.data()});
    findOp("nanoc.MaxPoolNCHWc")->reference(*blocked->node, {xb.data()}, {got.data()});
    std::vector<float> got_plain(want.size());
    for (int64_t n = 0; n < N; ++n)
      for (int64_t ch = 0; ch < C; ++ch)
        for (int64_t q = 0; q < OH * OW; ++q)
          got_plain[static_cast<size_t>((n * C + ch) * OH * OW + q)] =
              got[static_cast<size_t>(((n * Cb + ch / b) * OH * OW + q) * b + ch % b)];
    expectSameBits(got_plain.data(), want.data(), static_cast<int64_t>(want.size()), what);
  }
}

// The shape rule's refusals, each a CompileError.
TEST(MaxPoolNchwcLowering, ShapeRuleRefusals) {
  const Window w = k3s2p1;
  auto make = [](const TensorType& x, const Attrs& a) {
    return testing::makeSingleNodeGraph("nanoc.MaxPoolNCHWc", {x}, a);
  };
  const Attrs good = attrs(w, {4, 4});
  EXPECT_NO_THROW(make(f32({1, 2, 7, 7, 8}), good));
  // X: rank, dtype, block lanes.
  EXPECT_THROW(make(f32({1, 16, 7, 7}), good), CompileError);
  EXPECT_THROW(make(f32({1, 2, 7, 7, 8, 1}), good), CompileError);
  EXPECT_THROW(make({DType::I32, {1, 2, 7, 7, 8}}, good), CompileError);
  EXPECT_THROW(make(f32({1, 2, 7, 7, 0}), good), CompileError);
  EXPECT_THROW(make(f32({1, 2, 7, 7, 65}), good), CompileError);
  // Attributes: each one absent, of the wrong count, below its minimum, too large.
  for (const char* key : {"kernel_shape", "strides", "pads", "dilations", "output_spatial"}) {
    SCOPED_TRACE(key);
    Attrs a = good;
    a.erase(key);
    EXPECT_THROW(make(f32({1, 2, 7, 7, 8}), a), CompileError);
    a = good;
    Dims v = std::get<Dims>(good.at(key));
    v.push_back(1);
    a[key] = v;
    EXPECT_THROW(make(f32({1, 2, 7, 7, 8}), a), CompileError);
    a = good;
    v = std::get<Dims>(good.at(key));
    v[0] = std::string(key) == "pads" ? -1 : 0;
    a[key] = v;
    EXPECT_THROW(make(f32({1, 2, 7, 7, 8}), a), CompileError);
    a = good;
    v = std::get<Dims>(good.at(key));
    v[1] = (int64_t{1} << 24) + 1;
    a[key] = v;
    EXPECT_THROW(make(f32({1, 2, 7, 7, 8}), a), CompileError);
    a = good;
    a[key] = int64_t{3};  // not a list
    EXPECT_THROW(make(f32({1, 2, 7, 7, 8}), a), CompileError);
  }
  // Pads as wide as the kernel (MaxPool's rule), a kernel larger than the
  // padded map (dilated too).
  EXPECT_THROW(make(f32({1, 2, 7, 7, 8}), attrs({{3, 3}, {2, 2}, {3, 1, 1, 1}}, {5, 4})),
               CompileError);
  EXPECT_THROW(make(f32({1, 2, 7, 7, 8}), attrs({{3, 3}, {2, 2}, {1, 1, 1, 3}}, {4, 5})),
               CompileError);
  EXPECT_THROW(make(f32({1, 2, 2, 7, 8}), attrs({{5, 3}, {1, 1}, {1, 1, 1, 1}}, {1, 7})),
               CompileError);
  EXPECT_THROW(make(f32({1, 2, 7, 7, 8}), attrs({{3, 3}, {1, 1}, {0, 0, 0, 0}, {4, 1}}, {1, 5})),
               CompileError);
  // More output windows than ceil_mode gives (one starting past X's end):
  // 55 at 3x3 stride 2 is 27 with or without ceil_mode; 54 is 26 or 27.
  EXPECT_NO_THROW(make(f32({1, 1, 55, 54, 4}), attrs(k3s2ceil, {27, 27})));
  EXPECT_NO_THROW(make(f32({1, 1, 55, 54, 4}), attrs(k3s2ceil, {27, 26})));
  EXPECT_THROW(make(f32({1, 1, 55, 54, 4}), attrs(k3s2ceil, {28, 27})), CompileError);
  EXPECT_THROW(make(f32({1, 1, 55, 54, 4}), attrs(k3s2ceil, {27, 28})), CompileError);
  // A ceil-mode window that would start in the end padding is not one.
  EXPECT_THROW(make(f32({1, 1, 5, 5, 4}), attrs({{2, 2}, {2, 2}, {0, 0, 1, 1}}, {4, 3})),
               CompileError);
  EXPECT_NO_THROW(make(f32({1, 1, 5, 5, 4}), attrs({{2, 2}, {2, 2}, {0, 0, 1, 1}}, {3, 3})));
}

}  // namespace
}  // namespace nanoc::cpu
