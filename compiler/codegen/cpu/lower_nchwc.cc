// The channel-blocked layout's kernels (ops/nchwc.h): nanoc.Pack and
// nanoc.Unpack (a row of pixels per task), nanoc.GlobalAveragePoolNCHWc (a
// channel block per task, four pixels' vectors per step), and
// nanoc.ConvNCHWc, whose pointwise form is the packed product with the
// pixels as its rows (A: X, each pixel's block of channels one vector; B:
// W's panels, packed at compile time; Y: whole vectors of b output channels)
// and whose other forms are in lower_nchwc_conv.cc.
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "compiler/codegen/cpu/epilogue.h"
#include "compiler/codegen/cpu/gemm_microkernel.h"
#include "compiler/codegen/cpu/loops.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/nchwc_kernels.h"
#include "compiler/ir/error.h"
#include "compiler/ops/conv_gemm.h"
#include "compiler/ops/nchwc.h"

namespace nanoc::cpu {
namespace {

llvm::Type* blockType(llvm::IRBuilder<>& b, int64_t lanes) {
  return lanes == 1 ? b.getFloatTy()
                    : static_cast<llvm::Type*>(llvm::FixedVectorType::get(b.getFloatTy(), lanes));
}

// Pack and Unpack: one task per (n, channel block, row); the lanes of a
// pixel past C are 0 (Pack) or not read (Unpack).
Lowering makePackLowering(bool pack) {
  Lowering lowering;
  auto dims = [pack](const Node& node) {
    // [N, Cb, H, W, b] and C, from whichever side is blocked.
    const std::vector<int64_t>& blocked =
        pack ? node.outputs[0]->type.dims : node.inputs[0]->type.dims;
    const int64_t c = pack ? node.inputs[0]->type.dims[1] : node.i("channels");
    return std::make_pair(blocked, c);
  };
  lowering.task_count = [dims](const Node& node) {
    auto [d, c] = dims(node);
    return static_cast<uint64_t>(std::max<int64_t>(1, d[0] * d[1] * d[2]));
  };
  lowering.emit = [dims, pack](KernelBuilder& kb) {
    auto [d, c] = dims(kb.node);
    llvm::IRBuilder<>& b = kb.b;
    const int64_t cb = d[1], h = d[2], w = d[3], lanes = d[4];
    llvm::Value* src = kb.input(0);
    llvm::Value* dst = kb.output(0);
    emitLoop(
        b, kb.task_begin, kb.task_end,
        [&](llvm::Value* t) {
          // t = (n * Cb + block) * H + row
          llvm::Value* row = b.CreateURem(t, b.getInt64(h));
          llvm::Value* nb = b.CreateUDiv(t, b.getInt64(h));
          llvm::Value* n = b.CreateUDiv(nb, b.getInt64(cb));
          llvm::Value* blk = b.CreateURem(nb, b.getInt64(cb));
          llvm::Value* blocked_row = b.CreateMul(t, b.getInt64(w * lanes));
          for (int64_t l = 0; l < lanes; ++l) {
            llvm::Value* ch = b.CreateAdd(b.CreateMul(blk, b.getInt64(lanes)), b.getInt64(l));
            llvm::Value* in_range = b.CreateICmpSLT(ch, b.getInt64(c));
            // Channel ch's row in the plain layout (clamped to a channel
            // that exists; its value is not used past C).
            llvm::Value* safe = b.CreateSelect(in_range, ch, b.getInt64(c - 1));
            llvm::Value* plain_row = b.CreateMul(
                b.CreateAdd(
                    b.CreateMul(b.CreateAdd(b.CreateMul(n, b.getInt64(c)), safe), b.getInt64(h)),
                    row),
                b.getInt64(w));
            emitLoop(
                b, 0, w,
                [&](llvm::Value* col) {
                  llvm::Value* bi = b.CreateAdd(
                      blocked_row, b.CreateAdd(b.CreateMul(col, b.getInt64(lanes)), b.getInt64(l)));
                  llvm::Value* pi = b.CreateAdd(plain_row, col);
                  if (pack) {
                    llvm::Value* v = loadF32(b, src, pi);
                    storeF32(
                        b, b.CreateSelect(in_range, v, llvm::ConstantFP::get(b.getFloatTy(), 0.0)),
                        dst, bi);
                    return;
                  }
                  llvm::Function* fn = b.GetInsertBlock()->getParent();
                  llvm::BasicBlock* copy = llvm::BasicBlock::Create(b.getContext(), "copy", fn);
                  llvm::BasicBlock* done = llvm::BasicBlock::Create(b.getContext(), "copied", fn);
                  b.CreateCondBr(in_range, copy, done);
                  b.SetInsertPoint(copy);
                  storeF32(b, loadF32(b, src, bi), dst, pi);
                  b.CreateBr(done);
                  b.SetInsertPoint(done);
                },
                "col");
          }
        },
        "task", LoopHint::NoVectorize);
  };
  return lowering;
}

Lowering makeGlobalAveragePoolNchwcLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) {
    const std::vector<int64_t>& x = node.inputs[0]->type.dims;
    return static_cast<uint64_t>(std::max<int64_t>(1, x[0] * x[1]));
  };
  lowering.emit = [](KernelBuilder& kb) {
    const std::vector<int64_t>& x = kb.node.inputs[0]->type.dims;
    llvm::IRBuilder<>& b = kb.b;
    const int64_t hw = x[2] * x[3], lanes = x[4];
    constexpr int64_t kStep = 4;  // pixels per step: independent adds
    llvm::Type* wide = blockType(b, kStep * lanes);
    llvm::Type* one = blockType(b, lanes);
    emitLoop(
        b, kb.task_begin, kb.task_end,
        [&](llvm::Value* q) {
          llvm::Value* base = b.CreateMul(q, b.getInt64(hw * lanes));
          llvm::Value* sum4 = emitReduction(
              b, b.getInt64(0), b.getInt64(hw / kStep), llvm::Constant::getNullValue(wide),
              [&](llvm::Value* i, llvm::Value* acc) {
                llvm::Value* at = b.CreateAdd(base, b.CreateMul(i, b.getInt64(kStep * lanes)));
                return b.CreateFAdd(
                    acc, b.CreateAlignedLoad(wide, f32Ptr(b, kb.input(0), at), llvm::Align(4)));
              },
              "pixels4", LoopHint::NoVectorize);
          // The four pixels' partial sums, then the rest one pixel at a time.
          llvm::Value* sum = nullptr;
          for (int64_t k = 0; k < kStep; ++k) {
            std::vector<int> part;
            for (int64_t l = 0; l < lanes; ++l) part.push_back(static_cast<int>(k * lanes + l));
            llvm::Value* v = lanes == 1 ? b.CreateExtractElement(sum4, b.getInt64(k))
                                        : b.CreateShuffleVector(sum4, part);
            sum = sum ? b.CreateFAdd(sum, v) : v;
          }
          sum = emitReduction(
              b, b.getInt64(hw / kStep * kStep), b.getInt64(hw), sum,
              [&](llvm::Value* i, llvm::Value* acc) {
                llvm::Value* at = b.CreateAdd(base, b.CreateMul(i, b.getInt64(lanes)));
                return b.CreateFAdd(
                    acc, b.CreateAlignedLoad(one, f32Ptr(b, kb.input(0), at), llvm::Align(4)));
              },
              "pixels", LoopHint::NoVectorize);
          llvm::Value* mean =
              hw == 0 ? llvm::Constant::getNullValue(one)
                      : b.CreateFDiv(sum, llvm::ConstantFP::get(one, static_cast<double>(hw)));
          b.CreateAlignedStore(mean, f32Ptr(b, kb.output(0), b.CreateMul(q, b.getInt64(lanes))),
                               llvm::Align(4));
        },
        "task", LoopHint::NoVectorize);
  };
  return lowering;
}

// The pointwise form's product per image: M = pixels, K = X's lanes, N =
// the padded output channels, rows and columns per task as the packed
// MatMul splits them.
struct PointwisePlan {
  ConvNchwcShape s;
  PackedProduct p;
  int64_t per_image = 1;
};

// The product's split into tasks of whole row quanta (kPackedRowQuantum
// pixels: whole tiles on every ISA) and whole panels of columns: the split
// whose two halves of the task order (nanort's two threads' contiguous
// chunks) differ least in multiply-adds, with a small cost per task, a
// task's rows of A within half of L2 (256 KiB) and at least a tile's work of
// 64K multiply-adds per task. One thread runs the same tasks one after the
// other; two get even shares, so that neither waits at the kernel's barrier
// long enough to fall asleep (a wake-up costs tens of microseconds).
// With `scaled` (a channel scale folded in), each task also scales its
// columns' panels of W: K x cols more work per task, so that the split
// favours few row blocks.
void splitPointwise(PackedProduct& p, int64_t panel, bool scaled) {
  constexpr int64_t Q = kPackedRowQuantum;
  constexpr int64_t kTaskCost = 4096;      // multiply-adds' worth
  constexpr int64_t kMinTaskWork = 65536;  // multiply-adds
  constexpr int64_t kTaskABytes = 256 * 1024;
  constexpr int64_t kOneBlockABytes = 1024 * 1024;
  const int64_t M = p.M, N = p.N, K = std::max<int64_t>(1, p.K);
  const int64_t panels = std::max<int64_t>(1, (N + panel - 1) / panel);
  int64_t best_rows = M, best_cols = 0;
  double best = -1;
  auto consider = [&](int64_t rows) {
    const int64_t rb = (M + rows - 1) / rows, last_rows = M - (rb - 1) * rows;
    for (int64_t q = 1; q <= panels; ++q) {
      const int64_t cols = std::min(q * panel, N);
      const int64_t cb = (N + cols - 1) / cols, last_cols = N - (cb - 1) * cols;
      const int64_t tasks = rb * cb;
      if (tasks > 1 && rows * cols * K < kMinTaskWork) continue;
      // Multiply-adds of the first ceil(T / 2) tasks (row blocks major).
      const int64_t first = (tasks + 1) / 2;
      auto rowsOf = [&](int64_t b) { return b == rb - 1 ? last_rows : rows; };
      auto colsOf = [&](int64_t b) { return b == cb - 1 ? last_cols : cols; };
      int64_t work0 = 0;
      const int64_t full_rows = first / cb;
      work0 += (full_rows == rb ? M : full_rows * rows) * N;
      if (full_rows < rb)
        for (int64_t c = 0; c < first % cb; ++c) work0 += rowsOf(full_rows) * colsOf(c);
      const int64_t total = M * N;
      double cost = static_cast<double>(std::max(work0, total - work0)) * K +
                    static_cast<double>(tasks) * kTaskCost;
      // Scaling a task's panels (a load, a multiply and a store per weight,
      // about two multiply-adds' worth), half of them on each thread.
      if (scaled) cost += static_cast<double>(rb) * K * std::min(N, q * panel);
      if (best < 0 || cost < best)
        best = cost, best_rows = rows, best_cols = q >= panels ? 0 : cols;
    }
  };
  for (int64_t r = Q; r < M + Q; r += Q) {
    const int64_t rows = std::min(r, M);
    if (rows != M && rows * K * 4 > kTaskABytes && r != Q) {
      // One block of all M rows where their A still fits kOneBlockABytes:
      // a 7 x 7 map's 49 pixels of 2048 channels as 24 + 24 + 1 rows read
      // W three times, its last row alone (2048 -> 512: 1050 against 750 us
      // in one block, in resnet50 on an AVX-512 Xeon).
      if (M * K * 4 <= kOneBlockABytes) {
        // Or, first (it wins a tie), two blocks of half the rows where W
        // fits there too: an equal split by columns has each thread read
        // all of X (resnet50's 14 x 14 1024 -> 256 at two threads took
        // 0.86-0.93x the time in halves of 98 rows; one thread: the same).
        if (K * N * 4 <= kOneBlockABytes) consider((M + 1) / 2);
        consider(M);
      }
      break;
    }
    consider(rows);
  }
  p.rows_per_task = best_rows;
  p.cols_per_task = best_cols;
}

PointwisePlan planPointwise(const Node& node) {
  PointwisePlan plan;
  plan.s = convNchwcShape(node);
  PackedProduct& p = plan.p;
  p.M = plan.s.oh * plan.s.ow;
  p.K = plan.s.k;
  p.N = plan.s.oc;
  splitPointwise(p, plan.s.panel, plan.s.has_scale);
  // With a residual, K runs as one block: a tile reads its residual only in
  // its one store, so the output may take the residual's slot (in place;
  // partial sums kept in Y would overwrite the residual first).
  if (hasResidual(node)) p.k_block = std::max<int64_t>(1, p.K);
  plan.per_image = std::max<int64_t>(1, p.taskCount());
  return plan;
}

// The tile for blocks of `block` lanes: as many block-wide vectors as the
// target's tile has columns (its own tile where its vectors are that wide),
// or fewer, so that they divide `panel` (in a program's own targets they
// do: the pass sizes panels for every variant).
RegisterTile pointwiseTile(const llvm::Function& fn, int64_t block, int64_t panel) {
  RegisterTile tile = registerTile(fn);
  int64_t vectors = std::max<int64_t>(1, tile.columns() / block);
  while (vectors > 1 && panel % (vectors * block) != 0) --vectors;
  return RegisterTile{block, vectors, tile.rows, tile.registers};
}

void emitPointwise(KernelBuilder& kb, const PointwisePlan& plan, const FusedEpilogue& epilogue) {
  const ConvNchwcShape& s = plan.s;
  llvm::IRBuilder<>& b = kb.b;
  const RegisterTile tile = pointwiseTile(*kb.fn, s.block, s.panel);
  if (s.panel % tile.columns() != 0)
    throw CompileError("node '" + kb.node.name + "' (nanoc.ConvNCHWc): panel " +
                       std::to_string(s.panel) + " is not a multiple of the tile's " +
                       std::to_string(tile.columns()) + " columns");
  llvm::Type* f32 = b.getFloatTy();
  const int64_t P = s.oh * s.ow, c = s.block;
  const int64_t x_image = s.c * P, y_image = s.outPadded() * P;
  PackedProduct product = plan.p;
  // On 16-lane tiles K runs as one block, whatever the caches: with kc
  // blocks (partial sums kept in the blocked Y, reloaded by the next block)
  // resnet50's 1024 -> 256 and 1024 -> 512 layers on 14 x 14 and 2048 -> 512
  // on 7 x 7 took 1.7-2.5x the time on a Zen 4 (1 MiB of L2: two blocks of
  // 512, 1050-2900 us from one process to the next for 1024 -> 256 alone,
  // against 895-940 us in one block; the model 0.90-0.91x the time at one
  // and two threads), where an AVX-512 Xeon's 2 MiB already took one block.
  // 8-lane tiles keep packedKBlock's (x86-64-v3's resnet50, mobilenet_v2,
  // squeezenet1_1, efficientnet_b0 on the same Zen 4: 0.97-1.02x either way).
  if (registerTile(*kb.fn).width >= 16) product.k_block = std::max<int64_t>(1, product.K);
  emitLoop(
      b, kb.task_begin, kb.task_end,
      [&](llvm::Value* t) {
        PackedProduct p = product;
        llvm::Value* tt = t;
        llvm::Value* x = kb.input(0);
        llvm::Value* y = kb.output(0);
        llvm::Value* residual = epilogue.residual;
        if (s.n > 1) {
          llvm::Value* n = b.CreateUDiv(t, b.getInt64(plan.per_image));
          tt = b.CreateURem(t, b.getInt64(plan.per_image));
          x = b.CreateGEP(f32, x, b.CreateMul(n, b.getInt64(x_image)));
          y = b.CreateGEP(f32, y, b.CreateMul(n, b.getInt64(y_image)));
          if (residual) residual = b.CreateGEP(f32, residual, b.CreateMul(n, b.getInt64(y_image)));
        }
        p.a = x;
        p.channel_block = c;
        p.a_block_stride = P * c;
        p.y = y;
        p.y_block_stride = P * c;
        p.packed_b = kb.input(1);
        p.b_panel_stride = s.panel;
        // W's panels stream from memory (not a scaled copy in the scratch).
        p.prefetch_b = !s.has_scale;
        // The next panel into L2 where W outgrows it (resnet50's 7 x 7 and
        // 14 x 14 layers: the model 0.981-0.99x the time at one and two
        // threads; the other zoo CNNs' W stays in L2).
        p.prefetch_next_panel = !s.has_scale;
        if (s.has_scale) {
          // The panels of this task's columns, W^T's rows times S[n, k]
          // rounded to f32, into the scratch.
          llvm::Value* n = s.n > 1 ? b.CreateUDiv(t, b.getInt64(plan.per_image)) : b.getInt64(0);
          llvm::Value* scale = kb.input(kChannelScaleInput);
          llvm::Type* row = blockType(b, s.panel);
          const int64_t panels = channelBlocks(s.outPadded(), s.panel);
          const int64_t col_blocks =
              p.cols_per_task > 0 ? (p.N + p.cols_per_task - 1) / p.cols_per_task : 1;
          const int64_t task_panels = p.cols_per_task > 0 ? p.cols_per_task / s.panel : panels;
          llvm::Value* cb =
              col_blocks > 1 ? b.CreateURem(tt, b.getInt64(col_blocks)) : b.getInt64(0);
          llvm::Value* first = b.CreateMul(cb, b.getInt64(task_panels));
          llvm::Value* last = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin,
                                                      b.CreateAdd(first, b.getInt64(task_panels)),
                                                      b.getInt64(panels));
          llvm::Value* from = b.CreateMul(first, b.getInt64(s.k));
          emitLoop(
              b, from, b.CreateMul(last, b.getInt64(s.k)),
              [&](llvm::Value* q) {
                llvm::Value* k = b.CreateURem(q, b.getInt64(s.k));
                llvm::Value* sk =
                    loadF32(b, scale, b.CreateAdd(b.CreateMul(n, b.getInt64(s.c)), k));
                llvm::Value* wv = b.CreateAlignedLoad(
                    row, f32Ptr(b, kb.input(1), b.CreateMul(q, b.getInt64(s.panel))),
                    llvm::Align(4));
                b.CreateAlignedStore(
                    b.CreateFMul(wv, b.CreateVectorSplat(s.panel, sk)),
                    f32Ptr(b, kb.scratch, b.CreateMul(b.CreateSub(q, from), b.getInt64(s.panel))),
                    llvm::Align(4));
              },
              "scale", LoopHint::NoVectorize);
          p.b_column_origin = b.CreateMul(first, b.getInt64(s.panel));
          p.packed_b = kb.scratch;
        }
        if (s.has_bias) setRowInit(b, p, kb.input(2));
        if (!epilogue.empty()) {
          const EpilogueSpec spec = epilogue.spec;
          p.epilogue = [&b, spec, residual, P, c](llvm::Value* i, llvm::Value* j, int64_t lanes,
                                                  llvm::Value* value) {
            llvm::Value* index = b.CreateAdd(
                b.CreateMul(b.CreateUDiv(j, b.getInt64(c)), b.getInt64(P * c)),
                b.CreateAdd(b.CreateMul(i, b.getInt64(c)), b.CreateURem(j, b.getInt64(c))));
            return applyEpilogue(b, spec, value, residual, index, lanes);
          };
        }
        emitPackedProductTask(b, tile, p, tt);
      },
      "task", LoopHint::NoVectorize);
}

Lowering makeConvNchwcLowering() {
  Lowering lowering;
  lowering.task_count = [](const Node& node) -> uint64_t {
    ConvNchwcShape s = convNchwcShape(node);
    switch (s.form) {
      case NchwcForm::Pointwise:
        return static_cast<uint64_t>(std::max<int64_t>(1, s.n * planPointwise(node).per_image));
      case NchwcForm::Depthwise:
        return std::max<uint64_t>(1, nchwcDepthwiseTasks(s));
      case NchwcForm::Direct:
        return std::max<uint64_t>(1, nchwcDirectTasks(s));
    }
    return 1;
  };
  // A scaled pointwise product's scaled copy of W.
  lowering.scratch_bytes = [](const Node& node) -> uint64_t {
    ConvNchwcShape s = convNchwcShape(node);
    if (!s.has_scale) return 0;
    const PackedProduct& p = planPointwise(node).p;
    const int64_t panels =
        p.cols_per_task > 0 ? p.cols_per_task / s.panel : channelBlocks(s.outPadded(), s.panel);
    return static_cast<uint64_t>(panels * s.k * s.panel * 4);
  };
  // Every form stores each output vector once, after reading its residual
  // (the pointwise product in planPointwise's one K block; the direct and
  // depthwise loops from registers): the output may take the residual's slot.
  lowering.in_place_input = [](const Node& node) {
    return hasResidual(node) ? static_cast<int>(kResidualInput) : -1;
  };
  // The direct form's last blocks prefetch the next kernel's weights.
  lowering.prefetches_next_weights = [](const Node& node) { return node.s("form") == "direct"; };
  lowering.emit = [](KernelBuilder& kb) {
    ConvNchwcShape s = convNchwcShape(kb.node);
    const FusedEpilogue epilogue = fusedEpilogue(kb);
    if (s.n * s.oh * s.ow == 0) return;
    if (s.form == NchwcForm::Pointwise) {
      emitPointwise(kb, planPointwise(kb.node), epilogue);
      return;
    }
    llvm::IRBuilder<>& b = kb.b;
    llvm::Value* bias = s.has_bias ? kb.input(2) : nullptr;
    emitLoop(
        b, kb.task_begin, kb.task_end,
        [&](llvm::Value* t) {
          if (s.form == NchwcForm::Depthwise)
            emitNchwcDepthwiseTask(b, s, kb.input(0), kb.input(1), bias, kb.output(0), epilogue, t);
          else
            emitNchwcDirectTask(b, s, kb.input(0), kb.input(1), bias, kb.output(0), epilogue, t,
                                kb.next_weights, kb.next_weights_bytes);
        },
        "task", LoopHint::NoVectorize);
  };
  return lowering;
}

}  // namespace

std::vector<std::pair<std::string, Lowering>> nchwcLowerings() {
  return {{"nanoc.Pack", makePackLowering(true)},
          {"nanoc.Unpack", makePackLowering(false)},
          {"nanoc.GlobalAveragePoolNCHWc", makeGlobalAveragePoolNchwcLowering()},
          {"nanoc.ConvNCHWc", makeConvNchwcLowering()}};
}

}  // namespace nanoc::cpu
