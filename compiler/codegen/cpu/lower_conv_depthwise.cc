// Depthwise 2-D Conv: each output plane is its input plane convolved with its
// channel's KH x KW taps. Planes are NCHW, so the kernel runs along the output
// row, V outputs per vector (the register tile's width), one task per plane:
//  - the taps and the bias are loaded once per plane, as splats;
//  - rows are split at compile time into runs that read the same taps (the
//    top and bottom rows skip the rows of taps that fall in the padding);
//  - each row is split at compile time into chunks of V outputs: the full
//    ones (every tap of every lane inside the row) run in a loop, U chunks a
//    step with one accumulator each to hide the multiply-add latency; the
//    few at the row's ends read with constant lane masks and skip the taps
//    that no lane needs, several rows' together (a small plane: all of its
//    chunks at compile time), and a partial last one ends at the row's end;
//  - the taps are unrolled (the kernel shape is static), as llvm.fmuladd (an
//    FMA where the target has one, as in the GEMM micro-kernel). Column
//    stride 1 reads a tap with one unaligned load, which x86 folds into the
//    FMA; stride 2 loads 2V lanes and keeps the even ones (and the odd ones
//    for the next tap).
// Every output sums the bias then its taps in (kh, kw) order, whichever chunk
// computes it, so results do not depend on the task split.
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/conv_kernels.h"
#include "compiler/codegen/cpu/epilogue.h"
#include "compiler/codegen/cpu/gemm_microkernel.h"
#include "compiler/codegen/cpu/loops.h"

namespace nanoc::cpu {

namespace {

// More edge chunks than this on one side of a row (pads many vectors wide):
// the generic loop, rather than that much unrolled code.
constexpr int64_t kMaxEdgeChunks = 8;
// A flat plane's vectors times taps, unrolled, at most.
constexpr int64_t kMaxFlatTaps = 1024;
// Planes of at most this many rows and chunks are unrolled whole.
constexpr int64_t kMaxUnrolledRows = 16, kMaxUnrolledChunks = 32;

// The taps [lo, hi) of one dimension that read inside an input of extent n
// for output o (contiguous: the input position grows with the tap).
std::pair<int64_t, int64_t> validTaps(int64_t o, int64_t n, int64_t k, int64_t s, int64_t d,
                                      int64_t pad) {
  int64_t lo = k, hi = 0;
  for (int64_t t = 0; t < k; ++t) {
    int64_t i = o * s - pad + t * d;
    if (i >= 0 && i < n) lo = std::min(lo, t), hi = t + 1;
  }
  return lo < hi ? std::make_pair(lo, hi) : std::make_pair(int64_t{0}, int64_t{0});
}

// Output rows [begin, end) that read taps rows [kh_lo, kh_hi).
struct RowRun {
  int64_t begin, end, kh_lo, kh_hi;
};

// V outputs of a row from column base + offset, base a run-time value. An
// edge chunk (valid not empty) keeps `lanes` outputs and reads lane l of tap
// kw only where valid[kw][l]; a full chunk reads every lane of every tap.
struct Chunk {
  int64_t offset = 0, lanes = 0;
  std::vector<std::vector<bool>> valid;
};

struct DepthwisePlan {
  int64_t V = 0, U = 0;       // lanes per vector, accumulators per step
  int64_t rows_per_step = 1;  // rows whose edge chunks go together
  bool unroll_plane = false;  // every row at compile time
  // The plane as one flat run of OH * OW outputs, V per vector, whatever
  // their rows: at unit strides and dilations with W == OW, tap (kh, kw)
  // of output p reads input p + (kh - ph) W + (kw - pw), so each vector's
  // tap is one load (lanes in the padding masked off by constant masks).
  // Small planes narrower than V, where it saves a quarter of the vectors
  // or more (7 x 7 on 16 lanes: 4 vectors, not 7 rows of 7 lanes; 2.2x on
  // efficientnet_b0's 5x5 layers; 14 x 14's 13 vectors for 14 rows ran 5%
  // slower).
  bool flat = false;
  std::vector<RowRun> rows;
  std::vector<Chunk> left, right;  // edge chunks, at fixed columns
  int64_t full_begin = 0, full_chunks = 0;
};

// The plan, or none (false) where the shape needs too many edge chunks.
bool planDepthwise(const ConvShape& s, int64_t V, DepthwisePlan& plan) {
  const int64_t H = s.in[0], W = s.in[1], OH = s.out[0], OW = s.out[1];
  const int64_t KW = s.kernel[1], sw = s.strides[1], dw = s.dilations[1], pw = s.pads[1];
  plan.V = V;
  for (int64_t oh = 0; oh < OH; ++oh) {
    auto [lo, hi] = validTaps(oh, H, s.kernel[0], s.strides[0], s.dilations[0], s.pads[0]);
    if (!plan.rows.empty() && plan.rows.back().kh_lo == lo && plan.rows.back().kh_hi == hi)
      plan.rows.back().end = oh + 1;
    else
      plan.rows.push_back({oh, oh + 1, lo, hi});
  }
  // A full chunk's loads (V lanes, 2V at stride 2) lie inside the row for
  // every tap; the full chunks are one interval of the row's chunks.
  const int64_t chunks = (OW + V - 1) / V;
  auto full = [&](int64_t i) {
    if ((i + 1) * V > OW) return false;
    for (int64_t kw = 0; kw < KW; ++kw) {
      int64_t start = i * V * sw - pw + kw * dw;
      if (start < 0 || start + V * sw > W) return false;
    }
    return true;
  };
  int64_t i_lo = 0;
  while (i_lo < chunks && !full(i_lo)) ++i_lo;
  int64_t i_hi = i_lo;
  while (i_hi < chunks && full(i_hi)) ++i_hi;
  auto edge = [&](int64_t i) {
    Chunk c;
    c.offset = i * V;
    c.lanes = std::min(V, OW - i * V);
    // A partial last chunk of a row of at least V outputs ends at the row's
    // end instead, overlapping the one before: a plain store (masked
    // stores are slow on some x86 cores), of the same values where they
    // overlap (the same taps in the same order).
    if (c.lanes < V && OW >= V) c.offset = OW - V, c.lanes = V;
    c.valid.assign(static_cast<size_t>(KW), std::vector<bool>(static_cast<size_t>(V), false));
    for (int64_t kw = 0; kw < KW; ++kw)
      for (int64_t l = 0; l < c.lanes; ++l) {
        int64_t iw = (c.offset + l) * sw - pw + kw * dw;
        c.valid[kw][l] = iw >= 0 && iw < W;
      }
    return c;
  };
  for (int64_t i = 0; i < i_lo; ++i) plan.left.push_back(edge(i));
  for (int64_t i = i_hi; i < chunks; ++i) plan.right.push_back(edge(i));
  plan.full_begin = i_lo * V;
  plan.full_chunks = i_hi - i_lo;
  if (static_cast<int64_t>(plan.left.size()) > kMaxEdgeChunks ||
      static_cast<int64_t>(plan.right.size()) > kMaxEdgeChunks)
    return false;
  return true;
}

class DepthwiseEmitter {
 public:
  DepthwiseEmitter(KernelBuilder& kb, const ConvShape& s, const DepthwisePlan& plan)
      : kb_(kb), b_(kb.b), s_(s), plan_(plan), epilogue_(fusedEpilogue(kb)) {
    vtype_ = llvm::FixedVectorType::get(b_.getFloatTy(), static_cast<unsigned>(plan.V));
    const int64_t V = plan.V;
    // Stride 2 on 8 lanes (AVX) keeps the even lanes of two 128-bit halves
    // per 128-bit half, one vshufps: accumulator lane l holds output
    // lane_order_[l], put back in order once, at the store, rather than by
    // a cross-lane permute per tap. The order is its own inverse.
    permuted_ = V == 8 && s.strides[1] == 2;
    for (int l = 0; l < V; ++l)
      lane_order_.push_back(permuted_ ? (l & ~6) | (l & 2) << 1 | (l & 4) >> 1 : l);
    for (int64_t i = 0; i < plan.full_chunks; ++i)
      full_.push_back({plan.full_begin + i * V, V, {}});
  }

  void emit() {
    const int64_t C = s_.c, taps = s_.kernel[0] * s_.kernel[1];
    const int64_t in_plane = s_.in[0] * s_.in[1], plane = s_.out[0] * s_.out[1];
    llvm::Value* w = kb_.input(1);
    llvm::Value* bias = s_.has_bias ? kb_.input(2) : nullptr;
    emitLoop(
        b_, kb_.task_begin, kb_.task_end,
        [&](llvm::Value* t) {
          llvm::Value* c = b_.CreateURem(t, b_.getInt64(C));
          weights_.clear();
          for (int64_t i = 0; i < taps; ++i)
            weights_.push_back(b_.CreateVectorSplat(
                static_cast<unsigned>(plan_.V),
                loadF32(b_, w, b_.CreateAdd(b_.CreateMul(c, b_.getInt64(taps)), b_.getInt64(i)))));
          init_ = bias ? b_.CreateVectorSplat(static_cast<unsigned>(plan_.V), loadF32(b_, bias, c))
                       : llvm::Constant::getNullValue(vtype_);
          x_plane_ = b_.CreateMul(t, b_.getInt64(in_plane));
          y_plane_ = b_.CreateMul(t, b_.getInt64(plane));
          if (plan_.flat) {
            emitFlatPlane();
          } else if (plan_.unroll_plane) {
            const int64_t OH = s_.out[0], OW = s_.out[1];
            // A small plane: every chunk of every row at compile time, U at
            // a time, so that the few chunks of a row do not wait on each
            // other's multiply-adds.
            std::vector<Item> items;
            for (const RowRun& run : plan_.rows)
              for (int64_t oh = run.begin; oh < run.end; ++oh)
                for (const std::vector<Chunk>* chunks :
                     std::initializer_list<const std::vector<Chunk>*>{&plan_.left, &full_,
                                                                      &plan_.right})
                  for (const Chunk& chunk : *chunks) {
                    // A row narrower than V stores all V lanes where they
                    // stay in the plane: the lanes past the row land on
                    // rows stored later (items go in row order), and a plain
                    // store is much cheaper than a masked one on some x86
                    // cores (Zen's vmaskmovps).
                    const bool overhang =
                        chunk.lanes < plan_.V && oh * OW + chunk.offset + plan_.V <= OH * OW;
                    items.push_back({b_.getInt64(oh), &run, b_.getInt64(0), &chunk,
                                     overhang ? plan_.V : chunk.lanes});
                  }
            emitItems(items);
          } else {
            for (const RowRun& run : plan_.rows) emitRun(run);
          }
        },
        "plane");
  }

 private:
  // Chunk `chunk` of output row oh at columns base + chunk->offset, stored
  // as `stored` lanes (chunk->lanes, or more where that is safe).
  struct Item {
    llvm::Value* oh;
    const RowRun* run;
    llvm::Value* base;
    const Chunk* chunk;
    int64_t stored;
  };

  // The plane's vectors of outputs [v V, v V + V), U at a time, each tap's
  // lanes masked where they read the padding; taps no lane reads skipped.
  void emitFlatPlane() {
    const int64_t V = plan_.V, U = plan_.U, KH = s_.kernel[0], KW = s_.kernel[1];
    const int64_t H = s_.in[0], W = s_.in[1], OW = s_.out[1], P = s_.out[0] * s_.out[1];
    const int64_t vectors = (P + V - 1) / V;
    for (int64_t first = 0; first < vectors; first += U) {
      const int64_t count = std::min(U, vectors - first);
      std::vector<llvm::Value*> acc(static_cast<size_t>(count), init_);
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw)
          for (int64_t i = 0; i < count; ++i) {
            const int64_t v = first + i;
            std::vector<llvm::Constant*> bits;
            bool some = false, all = true;
            for (int64_t l = 0; l < V; ++l) {
              const int64_t p = v * V + l, ih = p / OW - s_.pads[0] + kh,
                            iw = p % OW - s_.pads[1] + kw;
              const bool on = p < P && ih >= 0 && ih < H && iw >= 0 && iw < W;
              some |= on, all &= on;
              bits.push_back(b_.getInt1(on));
            }
            if (!some) continue;
            llvm::Value* ptr = b_.CreateGEP(
                b_.getFloatTy(), kb_.input(0),
                b_.CreateAdd(x_plane_,
                             b_.getInt64(v * V + (kh - s_.pads[0]) * W + kw - s_.pads[1])));
            llvm::Value* x =
                all ? static_cast<llvm::Value*>(b_.CreateAlignedLoad(vtype_, ptr, llvm::Align(4)))
                    : b_.CreateMaskedLoad(vtype_, ptr, llvm::Align(4),
                                          llvm::ConstantVector::get(bits),
                                          llvm::Constant::getNullValue(vtype_));
            acc[i] = b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vtype_},
                                        {weights_[kh * KW + kw], x, acc[i]});
          }
      for (int64_t i = 0; i < count; ++i) {
        const int64_t v = first + i;
        store(acc[i], b_.CreateAdd(y_plane_, b_.getInt64(v * V)), std::min(V, P - v * V));
      }
    }
  }

  // The run's rows, rows_per_step at a time: their edge chunks together,
  // then each row's full chunks.
  void emitRun(const RowRun& run) {
    const int64_t R = plan_.rows_per_step, n = run.end - run.begin;
    auto rows = [&](llvm::Value* oh0, int64_t count) {
      std::vector<Item> edges;
      for (int64_t r = 0; r < count; ++r)
        for (const std::vector<Chunk>* chunks :
             std::initializer_list<const std::vector<Chunk>*>{&plan_.left, &plan_.right})
          for (const Chunk& chunk : *chunks)
            edges.push_back(
                {b_.CreateAdd(oh0, b_.getInt64(r)), &run, b_.getInt64(0), &chunk, chunk.lanes});
      emitItems(edges);
      for (int64_t r = 0; r < count; ++r) emitFullChunks(run, b_.CreateAdd(oh0, b_.getInt64(r)));
    };
    if (n / R > 0)
      emitLoop(
          b_, 0, n / R,
          [&](llvm::Value* i) {
            rows(b_.CreateAdd(b_.getInt64(run.begin), b_.CreateMul(i, b_.getInt64(R))), R);
          },
          "rows");
    if (n % R > 0) rows(b_.getInt64(run.begin + n / R * R), n % R);
  }

  // The row's full chunks: a loop of U at a time, then the rest together.
  void emitFullChunks(const RowRun& run, llvm::Value* oh) {
    const int64_t V = plan_.V, U = plan_.U;
    const int64_t steps = plan_.full_chunks / U, rest = plan_.full_chunks % U;
    std::vector<Chunk> step;
    for (int64_t u = 0; u < U; ++u) step.push_back({u * V, V, {}});
    auto chunks = [&](llvm::Value* base, int64_t count) {
      std::vector<Item> items;
      for (int64_t u = 0; u < count; ++u) items.push_back({oh, &run, base, &step[u], V});
      emitItems(items);
    };
    if (steps > 0)
      emitLoop(
          b_, 0, steps,
          [&](llvm::Value* i) {
            chunks(b_.CreateAdd(b_.getInt64(plan_.full_begin), b_.CreateMul(i, b_.getInt64(U * V))),
                   U);
          },
          "step");
    if (rest > 0) chunks(b_.getInt64(plan_.full_begin + steps * U * V), rest);
  }

  // The items U at a time, each U together: tap by tap, one accumulator each.
  void emitItems(const std::vector<Item>& items) {
    const int64_t KH = s_.kernel[0], KW = s_.kernel[1];
    for (size_t first = 0; first < items.size(); first += static_cast<size_t>(plan_.U)) {
      const size_t count = std::min(items.size() - first, static_cast<size_t>(plan_.U));
      std::vector<llvm::Value*> acc(count, init_), shared(count, nullptr);
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw)
          for (size_t i = 0; i < count; ++i) {
            const Item& item = items[first + i];
            if (kh < item.run->kh_lo || kh >= item.run->kh_hi) continue;
            llvm::Value* x = loadTap(item, kh, kw, shared[i]);
            if (!x) continue;
            acc[i] = b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vtype_},
                                        {weights_[kh * KW + kw], x, acc[i]});
          }
      for (size_t i = 0; i < count; ++i) {
        const Item& item = items[first + i];
        llvm::Value* y_row = b_.CreateAdd(y_plane_, b_.CreateMul(item.oh, b_.getInt64(s_.out[1])));
        store(acc[i], b_.CreateAdd(y_row, b_.CreateAdd(item.base, b_.getInt64(item.chunk->offset))),
              item.stored);
      }
    }
  }

  // Tap (kh, kw) for the item's V outputs, or nullptr where no lane reads
  // inside the row. At stride 2 and unit dilation, taps kw and kw + 1 (kw
  // even) are the even and odd lanes of one 2V load, kept in `shared`
  // between the two. The addresses of masked-off lanes may lie outside X: a
  // plain (not inbounds) GEP, and the masked load never touches them.
  llvm::Value* loadTap(const Item& item, int64_t kh, int64_t kw, llvm::Value*& shared) {
    const Chunk& chunk = *item.chunk;
    const int64_t V = plan_.V, sw = s_.strides[1];
    const int64_t lanes = V * sw;
    const bool pairs = sw == 2 && s_.dilations[1] == 1;
    auto any = [&](int64_t tap) {
      return chunk.valid.empty() || std::any_of(chunk.valid[tap].begin(), chunk.valid[tap].end(),
                                                [](bool on) { return on; });
    };
    auto lanesOf = [&](llvm::Value* v, int64_t phase) -> llvm::Value* {
      if (sw == 1) return v;
      std::vector<int> mask;
      for (int64_t l = 0; l < V; ++l) mask.push_back(static_cast<int>(lane_order_[l] * sw + phase));
      return b_.CreateShuffleVector(v, mask);
    };
    if (pairs && kw % 2 == 1) return shared && any(kw) ? lanesOf(shared, 1) : nullptr;
    shared = nullptr;
    llvm::Type* ltype = llvm::FixedVectorType::get(b_.getFloatTy(), static_cast<unsigned>(lanes));
    llvm::Value* ih = b_.CreateAdd(b_.CreateMul(item.oh, b_.getInt64(s_.strides[0])),
                                   b_.getInt64(kh * s_.dilations[0] - s_.pads[0]));
    llvm::Value* x_row = b_.CreateAdd(x_plane_, b_.CreateMul(ih, b_.getInt64(s_.in[1])));
    llvm::Value* column =
        b_.CreateAdd(b_.CreateMul(item.base, b_.getInt64(sw)),
                     b_.getInt64(chunk.offset * sw - s_.pads[1] + kw * s_.dilations[1]));
    llvm::Value* ptr = b_.CreateGEP(b_.getFloatTy(), kb_.input(0), b_.CreateAdd(x_row, column));
    llvm::Value* v = nullptr;
    if (chunk.valid.empty()) {
      v = b_.CreateAlignedLoad(ltype, ptr, llvm::Align(4));
    } else {
      // Element e is lane e / sw of tap kw (e % sw == 0) or, shared, of tap
      // kw + 1 (e odd).
      const bool odd = pairs && kw + 1 < s_.kernel[1];
      std::vector<llvm::Constant*> bits;
      bool some = false;
      for (int64_t e = 0; e < lanes; ++e) {
        bool on =
            e % sw == 0 ? chunk.valid[kw][e / sw] : odd && e % 2 == 1 && chunk.valid[kw + 1][e / 2];
        some |= on;
        bits.push_back(b_.getInt1(on));
      }
      if (!some) return nullptr;
      v = b_.CreateMaskedLoad(ltype, ptr, llvm::Align(4), llvm::ConstantVector::get(bits),
                              llvm::Constant::getNullValue(ltype));
    }
    if (pairs) shared = v;
    return any(kw) ? lanesOf(v, 0) : nullptr;
  }

  // The one store of each output vector: Y[y_at, y_at + lanes) = value,
  // after the node's fused epilogue (act(value + residual[y_at ...])).
  void store(llvm::Value* value, llvm::Value* y_at, int64_t lanes) {
    if (permuted_) value = b_.CreateShuffleVector(value, lane_order_);
    if (!epilogue_.empty())
      value = applyEpilogue(b_, epilogue_.spec, value, epilogue_.residual, y_at, lanes);
    llvm::Value* ptr = f32Ptr(b_, kb_.output(0), y_at);
    if (lanes == plan_.V) {
      b_.CreateAlignedStore(value, ptr, llvm::Align(4));
      return;
    }
    std::vector<llvm::Constant*> bits;
    for (int64_t l = 0; l < plan_.V; ++l) bits.push_back(b_.getInt1(l < lanes));
    b_.CreateMaskedStore(value, ptr, llvm::Align(4), llvm::ConstantVector::get(bits));
  }

  KernelBuilder& kb_;
  llvm::IRBuilder<>& b_;
  const ConvShape& s_;
  const DepthwisePlan& plan_;
  const FusedEpilogue epilogue_;
  llvm::Type* vtype_ = nullptr;
  bool permuted_ = false;
  std::vector<int> lane_order_;        // accumulator lane -> output lane
  std::vector<Chunk> full_;            // the full chunks at their columns (unroll_plane)
  std::vector<llvm::Value*> weights_;  // splats, kh * KW + kw
  llvm::Value* init_ = nullptr;        // the bias splat, or 0
  llvm::Value *x_plane_ = nullptr, *y_plane_ = nullptr;
};

}  // namespace

bool emitDepthwiseConv(KernelBuilder& kb, const ConvShape& s) {
  if (s.rank() != 2 || s.group != s.c || s.m != s.c || s.cPerGroup() != 1) return false;
  const int64_t taps = s.kernel[0] * s.kernel[1];
  if (taps > kMaxDepthwiseTaps || (s.strides[1] != 1 && s.strides[1] != 2)) return false;
  const RegisterTile tile = registerTile(*kb.fn);
  if (tile.width < 4) return false;
  DepthwisePlan plan;
  if (!planDepthwise(s, tile.width, plan)) return false;
  // Accumulators per step: what the vector registers hold beside the taps'
  // splats and one load, at least 4 (more taps than registers: the splats
  // are reloaded, and latency matters more), at most 8.
  const int64_t registers = (tile.rows + 1) * tile.vectors + 1;
  plan.U = std::clamp<int64_t>(registers - taps - 1, 4, 8);
  // A row's edge chunks alone would wait on each other's multiply-adds:
  // rows go together up to U accumulators (a plane of few chunks whole).
  const int64_t edges = static_cast<int64_t>(plan.left.size() + plan.right.size());
  plan.rows_per_step = edges > 0 ? std::clamp<int64_t>(plan.U / edges, 1, 4) : 1;
  const int64_t row_chunks = edges + plan.full_chunks;
  plan.unroll_plane = s.out[0] <= kMaxUnrolledRows && s.out[0] * row_chunks <= kMaxUnrolledChunks;
  const int64_t flat_vectors = (s.out[0] * s.out[1] + tile.width - 1) / tile.width;
  plan.flat = s.strides[0] == 1 && s.strides[1] == 1 && s.dilations[0] == 1 &&
              s.dilations[1] == 1 && s.in[1] == s.out[1] && flat_vectors * taps <= kMaxFlatTaps &&
              4 * flat_vectors <= 3 * s.out[0] * row_chunks;
  DepthwiseEmitter(kb, s, plan).emit();
  return true;
}

}  // namespace nanoc::cpu
