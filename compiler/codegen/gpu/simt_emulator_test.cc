// The SIMT emulator itself, on kernels written as NVVM IR by hand: indices,
// shared memory with the block barrier, warp shuffles (each mode against
// PTX's definition), and the errors a wrong kernel gets.
#include "compiler/codegen/gpu/testing/simt_emulator.h"

#include <gtest/gtest.h>
#include <llvm/AsmParser/Parser.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/SourceMgr.h>

#include <numeric>

#include "compiler/ir/error.h"

namespace nanoc::simt {
namespace {

std::unique_ptr<llvm::Module> parse(llvm::LLVMContext& context, const std::string& body) {
  const std::string text = R"(
target triple = "nvptx64-nvidia-cuda"
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare void @llvm.nvvm.barrier.cta.sync.aligned.all(i32)
declare float @llvm.nvvm.shfl.sync.bfly.f32(i32, float, i32, i32)
declare i32 @llvm.nvvm.shfl.sync.down.i32(i32, i32, i32, i32)
declare i32 @llvm.nvvm.shfl.sync.up.i32(i32, i32, i32, i32)
declare i32 @llvm.nvvm.shfl.sync.idx.i32(i32, i32, i32, i32)
)" + body;
  llvm::SMDiagnostic error;
  auto m = llvm::parseAssemblyString(text, error, context);
  if (!m) {
    std::string message;
    llvm::raw_string_ostream os(message);
    error.print("test", os);
    ADD_FAILURE() << message;
  }
  return m;
}

// out[block] = sum of x over the block (through shared memory and the
// barrier); warp[block * warps + w] = sum over the warp (bfly shuffles).
const char* kReduce = R"(
@tile = internal addrspace(3) global [128 x float] undef
define ptx_kernel void @reduce(ptr addrspace(1) %x, ptr addrspace(1) %out, ptr addrspace(1) %warp) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %n = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %b = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %base = mul i32 %b, %n
  %g = add i32 %base, %t
  %gi = zext i32 %g to i64
  %xp = getelementptr float, ptr addrspace(1) %x, i64 %gi
  %v = load float, ptr addrspace(1) %xp
  %ti = zext i32 %t to i64
  %sp = getelementptr [128 x float], ptr addrspace(3) @tile, i64 0, i64 %ti
  store float %v, ptr addrspace(3) %sp
  %s16 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %v, i32 16, i32 31)
  %a16 = fadd float %v, %s16
  %s8 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %a16, i32 8, i32 31)
  %a8 = fadd float %a16, %s8
  %s4 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %a8, i32 4, i32 31)
  %a4 = fadd float %a8, %s4
  %s2 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %a4, i32 2, i32 31)
  %a2 = fadd float %a4, %s2
  %s1 = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %a2, i32 1, i32 31)
  %a1 = fadd float %a2, %s1
  %lane = and i32 %t, 31
  %w = lshr i32 %t, 5
  %first = icmp eq i32 %lane, 0
  br i1 %first, label %warpstore, label %sync
warpstore:
  %warps = lshr i32 %n, 5
  %wb = mul i32 %b, %warps
  %wi = add i32 %wb, %w
  %wii = zext i32 %wi to i64
  %wp = getelementptr float, ptr addrspace(1) %warp, i64 %wii
  store float %a1, ptr addrspace(1) %wp
  br label %sync
sync:
  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %zero = icmp eq i32 %t, 0
  br i1 %zero, label %sum, label %done
sum:
  %i = phi i32 [ 0, %sync ], [ %i1, %sum ]
  %acc = phi float [ 0.0, %sync ], [ %acc1, %sum ]
  %ii = zext i32 %i to i64
  %ep = getelementptr [128 x float], ptr addrspace(3) @tile, i64 0, i64 %ii
  %e = load float, ptr addrspace(3) %ep
  %acc1 = fadd float %acc, %e
  %i1 = add i32 %i, 1
  %more = icmp ult i32 %i1, %n
  br i1 %more, label %sum, label %write
write:
  %bi = zext i32 %b to i64
  %op = getelementptr float, ptr addrspace(1) %out, i64 %bi
  store float %acc1, ptr addrspace(1) %op
  br label %done
done:
  ret void
}
)";

TEST(SimtEmulator, BarrierSharedMemoryAndShuffles) {
  llvm::LLVMContext context;
  auto m = parse(context, kReduce);
  ASSERT_TRUE(m);
  Emulator emulator(*m);
  std::vector<float> x(3 * 128), out(3, -1), warp(12, -1);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97) * 0.5f;
  gpu::GpuLaunch launch;
  launch.grid[0] = 3;
  launch.block[0] = 128;
  emulator.launch("reduce", launch, {x.data(), out.data(), warp.data()});
  for (int b = 0; b < 3; ++b) {
    EXPECT_EQ(out[b], std::accumulate(x.begin() + b * 128, x.begin() + (b + 1) * 128, 0.0f))
        << "block " << b;
    for (int w = 0; w < 4; ++w)
      EXPECT_EQ(warp[b * 4 + w], std::accumulate(x.begin() + b * 128 + w * 32,
                                                 x.begin() + b * 128 + (w + 1) * 32, 0.0f))
          << "block " << b << " warp " << w;
  }
}

// down, up and idx with a segment width of 8 (c = ((32 - 8) << 8) | 7 for
// down and idx, (32 - 8) << 8 for up), against PTX's definition.
const char* kModes = R"(
define ptx_kernel void @modes(ptr addrspace(1) %out) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %v = mul i32 %t, 10
  %d = call i32 @llvm.nvvm.shfl.sync.down.i32(i32 -1, i32 %v, i32 3, i32 6151)
  %u = call i32 @llvm.nvvm.shfl.sync.up.i32(i32 -1, i32 %v, i32 3, i32 6144)
  %x = call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 -1, i32 %v, i32 5, i32 6151)
  %ti = zext i32 %t to i64
  %i3 = mul i64 %ti, 3
  %p0 = getelementptr i32, ptr addrspace(1) %out, i64 %i3
  store i32 %d, ptr addrspace(1) %p0
  %p1 = getelementptr i32, ptr addrspace(1) %p0, i64 1
  store i32 %u, ptr addrspace(1) %p1
  %p2 = getelementptr i32, ptr addrspace(1) %p0, i64 2
  store i32 %x, ptr addrspace(1) %p2
  ret void
}
)";

TEST(SimtEmulator, ShuffleModesWithSegments) {
  llvm::LLVMContext context;
  auto m = parse(context, kModes);
  ASSERT_TRUE(m);
  Emulator emulator(*m);
  std::vector<int32_t> out(64 * 3, -1);
  gpu::GpuLaunch launch;
  launch.block[0] = 64;
  emulator.launch("modes", launch, {out.data()});
  for (int t = 0; t < 64; ++t) {
    const int lane = t % 32, seg = lane / 8 * 8;
    const int down = lane + 3 <= seg + 7 ? lane + 3 : lane;
    const int up = lane - 3 >= seg ? lane - 3 : lane;
    const int idx = seg + 5;
    const int w = t / 32 * 32;
    EXPECT_EQ(out[t * 3 + 0], (w + down) * 10) << "down, thread " << t;
    EXPECT_EQ(out[t * 3 + 1], (w + up) * 10) << "up, thread " << t;
    EXPECT_EQ(out[t * 3 + 2], (w + idx) * 10) << "idx, thread " << t;
  }
}

// Threads past the first half return before the barrier: wrong on a GPU.
const char* kDivergent = R"(
define ptx_kernel void @divergent(ptr addrspace(1) %out) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %low = icmp ult i32 %t, 16
  br i1 %low, label %sync, label %done
sync:
  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  br label %done
done:
  ret void
}
)";

TEST(SimtEmulator, DivergentBarrierIsAnError) {
  llvm::LLVMContext context;
  auto m = parse(context, kDivergent);
  ASSERT_TRUE(m);
  Emulator emulator(*m);
  gpu::GpuLaunch launch;
  launch.block[0] = 32;
  std::vector<float> out(1);
  try {
    emulator.launch("divergent", launch, {out.data()});
    FAIL() << "a divergent barrier ran";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("divergent barrier"), std::string::npos) << e.what();
  }
}

// A float4 load declared 16-byte aligned: at x + 16 bytes it runs, at x + 4
// (what an `align 16` promised NVPTX and a GPU would fault on) it is an
// error naming the kernel, the alignment and the address.
TEST(SimtEmulator, MisalignedVectorLoadIsAnError) {
  llvm::LLVMContext context;
  auto m = parse(context, R"(
define ptx_kernel void @copy4(ptr addrspace(1) %x, ptr addrspace(1) %out, ptr addrspace(1) %skip) {
  %s = load i64, ptr addrspace(1) %skip, align 8
  %p = getelementptr i8, ptr addrspace(1) %x, i64 %s
  %v = load <4 x float>, ptr addrspace(1) %p, align 16
  store <4 x float> %v, ptr addrspace(1) %out, align 16
  ret void
}
)");
  ASSERT_TRUE(m);
  Emulator emulator(*m);
  gpu::GpuLaunch launch;
  launch.block[0] = 1;
  alignas(16) float x[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  alignas(16) float out[4] = {};
  alignas(8) int64_t skip = 16;
  emulator.launch("copy4", launch, {x, out, &skip});
  EXPECT_EQ(out[0], 4.0f);
  EXPECT_EQ(out[3], 7.0f);
  skip = 4;
  try {
    emulator.launch("copy4", launch, {x, out, &skip});
    FAIL() << "a misaligned float4 load ran";
  } catch (const CompileError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("copy4"), std::string::npos) << what;
    EXPECT_NE(what.find("16-byte aligned"), std::string::npos) << what;
  }
}

TEST(SimtEmulator, UnknownIntrinsicIsNamed) {
  llvm::LLVMContext context;
  auto m = parse(context, R"(
declare i32 @llvm.nvvm.read.ptx.sreg.clock()
define ptx_kernel void @clock(ptr addrspace(1) %out) {
  %c = call i32 @llvm.nvvm.read.ptx.sreg.clock()
  store i32 %c, ptr addrspace(1) %out
  ret void
}
)");
  ASSERT_TRUE(m);
  try {
    Emulator emulator(*m);
    FAIL() << "an unknown intrinsic was accepted";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("llvm.nvvm.read.ptx.sreg.clock"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace nanoc::simt
