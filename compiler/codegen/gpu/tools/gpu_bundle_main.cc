// On-GPU numerics of the GPU kernels, without a GPU on the machine that
// compiles them (tools only):
//
//   nanoc_gpu_bundle make DIR [sm_90 [FILTER]]  every case of gpu_test_cases.h (those
//       under 16 MiB) with random inputs and its op's reference outputs, the
//       kernels in one cubin, a manifest for nanoc_gpu_cuda_run; plus
//       performance cases whose inputs the runner fills itself; FILTER keeps
//       the cases whose label contains it ("[" : the tensor-core ones)
//   nanoc_gpu_cuda_run DIR OUT          (on the GPU machine) runs each kernel
//       with its launch, writes its outputs to OUT
//   nanoc_gpu_bundle check DIR OUT      compares OUT with the references by
//       the CPU lowering tests' tolerances; exit status 1 on any mismatch
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/target_profiles.h"
#include "compiler/codegen/gpu/gpu_lowering.h"
#include "compiler/codegen/gpu/gpu_test_cases.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ops/split_k.h"

namespace nanoc::gpu {
namespace {

using testing::KernelCase;

std::vector<KernelCase> allCases() {
  std::vector<KernelCase> cases;
  for (auto* group :
       {&testing::elementwiseCases, &testing::linalgCases, &testing::rowCases, &testing::poolCases,
        &testing::reduceCases, &testing::dataMovementCases, &testing::upsampleCases})
    for (KernelCase& c : (*group)()) cases.push_back(std::move(c));
  // The tensor-core GEMMs (make leaves out what the SM lacks).
  for (KernelCase& c : testing::mmaCases("f16", "m16n8k8")) cases.push_back(std::move(c));
  for (const char* p : {"tf32", "bf16", "f16"})
    for (KernelCase& c : testing::mmaCases(p)) cases.push_back(std::move(c));
  return cases;
}

// The node's gpu_precision ("" for none).
std::string precisionOf(const Node& node) {
  auto it = node.attrs.find("gpu_precision");
  return it == node.attrs.end() ? "" : std::get<std::string>(it->second);
}

// Whether `sm` has the node's mma shape: sm_75 only f16 m16n8k8.
bool runsOn(const Node& node, const SmTarget& sm) {
  if (precisionOf(node).empty() || sm.sm >= 80) return true;
  return precisionOf(node) == "f16" && node.has("gpu_mma_shape");
}

// Performance cases: inputs filled on the GPU, outputs not compared.
std::vector<KernelCase> perfCases() {
  using testing::addCase;
  using testing::Attrs;
  using testing::f32;
  using testing::Ints;
  std::vector<KernelCase> cases;
  addCase(cases, "perf MatMul 2048^3", "MatMul", {f32({2048, 2048}), f32({2048, 2048})}, {});
  addCase(cases, "perf MatMul 4096^3", "MatMul", {f32({4096, 4096}), f32({4096, 4096})}, {});
  addCase(cases, "perf Gemm 4096x1024x4096 transB", "Gemm",
          {f32({4096, 4096}), f32({1024, 4096}), f32({1024})},
          {{"alpha", 1.0}, {"beta", 1.0}, {"transA", int64_t{0}}, {"transB", int64_t{1}}});
  for (const char* p : {"tf32", "bf16", "f16"}) {
    addCase(cases, std::string("perf MatMul 4096^3 [") + p + "]", "MatMul",
            {f32({4096, 4096}), f32({4096, 4096})}, {});
    cases.back().graph->node->attrs["gpu_precision"] = std::string(p);
  }
  // resnet18's 3 x 3 layers at batch 1, whole and split along K (nanoc's
  // choice, passes/gpu_split_k.h, first; then other chunks, each with its
  // sum), exact and tf32.
  struct Layer {
    int64_t side, channels, chunk;
  };
  for (Layer l :
       {Layer{56, 64, 144}, Layer{28, 128, 128}, Layer{14, 256, 144}, Layer{7, 512, 144}}) {
    const std::string shape =
        std::to_string(l.side) + "x" + std::to_string(l.side) + "x" + std::to_string(l.channels);
    Attrs a{{"group", int64_t{1}},
            {"kernel_shape", Ints{3, 3}},
            {"pads", Ints{1, 1, 1, 1}},
            {"strides", Ints{1, 1}},
            {"dilations", Ints{1, 1}}};
    const std::vector<std::optional<TensorType>> in = {
        f32({1, l.side, l.side, l.channels}), f32({3, 3, l.channels, l.channels}),
        f32({l.channels}), f32({1, l.side, l.side, l.channels})};
    for (const char* precision : {"", "tf32"}) {
      const std::string mode = *precision ? std::string(" [") + precision + "]" : "";
      Attrs fused = a;
      fused["fused_activation"] = std::string("Relu");
      if (*precision) fused["gpu_precision"] = std::string(precision);
      addCase(cases, "perf ConvNHWC 3x3 " + shape + " bias residual relu" + mode, "nanoc.ConvNHWC",
              in, fused);
      for (int64_t chunk : {l.chunk, int64_t{64}, int64_t{96}, int64_t{288}, int64_t{576}}) {
        const int64_t slices = splitKSlices(9 * l.channels, chunk);
        if (slices < 2) continue;
        if (*precision && chunk != l.chunk) continue;
        Attrs split = a;
        split["split_k_chunk"] = chunk;
        if (*precision) split["gpu_precision"] = std::string(precision);
        addCase(cases, "perf ConvNHWC 3x3 " + shape + " split K by " + std::to_string(chunk) + mode,
                "nanoc.ConvNHWC", {in[0], in[1]}, split);
        if (*precision) continue;
        addCase(cases, "perf SplitKSum " + std::to_string(slices) + " x " + shape,
                "nanoc.SplitKSum", {f32({slices, 1, l.side, l.side, l.channels}), in[2], in[3]},
                {{"fused_activation", std::string("Relu")}});
      }
    }
  }
  // A GPT-2 block's MatMuls at sequence 128 on tileFor's tile, whole and
  // split by the chunks the eighth run measured (docs/GPU.md), with the sum.
  struct Product {
    int64_t k, n, chunk;
  };
  for (Product q : {Product{3072, 768, 144}, Product{768, 3072, 160}}) {
    const std::string shape = "128x" + std::to_string(q.n) + "x" + std::to_string(q.k);
    const std::vector<std::optional<TensorType>> in = {f32({128, q.k}), f32({q.k, q.n})};
    addCase(cases, "perf MatMul " + shape, "MatMul", in, {});
    addCase(cases, "perf MatMul " + shape + " split K by " + std::to_string(q.chunk), "MatMul", in,
            {{"split_k_chunk", q.chunk}});
    const int64_t slices = splitKSlices(q.k, q.chunk);
    addCase(cases, "perf SplitKSum " + std::to_string(slices) + " x 128x" + std::to_string(q.n),
            "nanoc.SplitKSum", {f32({slices, 128, q.n})}, {});
  }
  // Transformer products at sequence 128 (bert_tiny: width 128, 2 heads,
  // 512 wide feed-forward; a GPT-2 block: 768, 12 heads, 3072) and a
  // middling square one, on each SIMT tile (the attribute gpu_tile), whole
  // and split along K as chooseSplitK splits it for that tile (with the
  // sum): what tileFor's choice rests on.
  struct Shape {
    const char* name;
    std::vector<int64_t> a, b;
    bool bias, residual;
  };
  const std::vector<Shape> shapes = {
      {"bert qkv", {1, 128, 128}, {128, 384}, true, false},
      {"bert out", {1, 128, 128}, {128, 128}, true, true},
      {"bert ff1", {1, 128, 128}, {128, 512}, true, false},
      {"bert ff2", {1, 128, 512}, {512, 128}, true, true},
      {"bert QK", {1, 2, 128, 64}, {1, 2, 64, 128}, false, false},
      {"bert PV", {1, 2, 128, 128}, {1, 2, 128, 64}, false, false},
      {"gpt2 qkv", {1, 128, 768}, {768, 2304}, true, false},
      {"gpt2 out", {1, 128, 768}, {768, 768}, true, true},
      {"gpt2 fc", {1, 128, 768}, {768, 3072}, true, false},
      {"gpt2 proj", {1, 128, 3072}, {3072, 768}, true, true},
      {"gpt2 QK", {1, 12, 128, 64}, {1, 12, 64, 128}, false, false},
      {"gpt2 PV", {1, 12, 128, 128}, {1, 12, 128, 64}, false, false},
      {"mid", {1024, 1024}, {1024, 1024}, false, false},
  };
  for (const Shape& sh : shapes) {
    std::vector<int64_t> y = sh.a;
    y.back() = sh.b.back();
    std::vector<std::optional<TensorType>> in = {f32(sh.a), f32(sh.b)};
    if (sh.bias || sh.residual)
      in.push_back(sh.bias ? std::optional<TensorType>(f32({sh.b.back()})) : std::nullopt);
    if (sh.residual) in.push_back(f32(y));
    for (const char* precision : {"", "tf32"})
      for (int64_t tile : {128, 64, 32}) {
        const std::string mode = *precision ? std::string(" [") + precision + "]" : "";
        const std::string label =
            std::string("perf MatMul ") + sh.name + " tile " + std::to_string(tile) + mode;
        Attrs attrs = {{"gpu_tile", tile}};
        if (*precision) attrs["gpu_precision"] = std::string(precision);
        addCase(cases, label, "MatMul", in, attrs);
        const int64_t chunk = chooseSplitK(*cases.back().graph->node);
        if (chunk == 0) continue;
        attrs["split_k_chunk"] = chunk;
        addCase(cases, label + " split K by " + std::to_string(chunk), "MatMul", {in[0], in[1]},
                attrs);
        if (*precision) continue;
        const int64_t slices = splitKSlices(sh.a.back(), chunk);
        std::vector<int64_t> p = y;
        p.insert(p.begin(), slices);
        std::vector<std::optional<TensorType>> sum_in = {f32(p)};
        if (sh.bias || sh.residual)
          sum_in.push_back(sh.bias ? std::optional<TensorType>(f32({sh.b.back()})) : std::nullopt);
        if (sh.residual) sum_in.push_back(f32(y));
        addCase(cases,
                std::string("perf SplitKSum ") + sh.name + " " + std::to_string(slices) + " slices",
                "nanoc.SplitKSum", sum_in, {});
      }
  }
  // Products of one row (a batch-1 MLP's Gemms, transB; a decoder token's
  // MatMuls): the matrix-vector kernel (the default) against the 32 x 32
  // tile split as chooseSplitK splits it, with its sum.
  struct Row {
    const char* name;
    const char* op;
    int64_t k, n;
  };
  for (Row r : {Row{"mlp fc1", "Gemm", 784, 512}, Row{"mlp fc2", "Gemm", 512, 512},
                Row{"decode fc", "MatMul", 768, 3072}, Row{"decode proj", "MatMul", 3072, 768},
                Row{"4096", "MatMul", 4096, 4096}}) {
    const bool gemm = std::string(r.op) == "Gemm";
    const std::vector<std::optional<TensorType>> in = {
        f32({1, r.k}), gemm ? f32({r.n, r.k}) : f32({r.k, r.n}), f32({r.n})};
    Attrs attrs;
    if (gemm)
      attrs = {{"alpha", 1.0}, {"beta", 1.0}, {"transA", int64_t{0}}, {"transB", int64_t{1}}};
    const std::string shape =
        std::string(r.name) + " 1x" + std::to_string(r.n) + "x" + std::to_string(r.k);
    addCase(cases, std::string("perf ") + r.op + " " + shape + " one row", r.op, in, attrs);
    attrs["gpu_tile"] = int64_t{32};
    addCase(cases, std::string("perf ") + r.op + " " + shape + " tile 32", r.op, in, attrs);
    const int64_t chunk = chooseSplitK(*cases.back().graph->node);
    if (chunk == 0) continue;
    attrs["split_k_chunk"] = chunk;
    addCase(
        cases,
        std::string("perf ") + r.op + " " + shape + " tile 32 split K by " + std::to_string(chunk),
        r.op, {in[0], in[1]}, attrs);
    const int64_t slices = splitKSlices(r.k, chunk);
    addCase(cases, "perf SplitKSum " + shape + " " + std::to_string(slices) + " slices",
            "nanoc.SplitKSum", {f32({slices, 1, r.n}), f32({r.n})}, {});
  }
  addCase(cases, "perf Add 2^26", "Add", {f32({1 << 26}), f32({1 << 26})}, {});
  addCase(cases, "perf Softmax 8192x4096", "Softmax", {f32({8192, 4096})}, {{"axis", int64_t{1}}});
  addCase(cases, "perf LayerNorm 8192x4096", "LayerNormalization",
          {f32({8192, 4096}), f32({4096}), f32({4096})}, {{"axis", int64_t{1}}, {"epsilon", 1e-5}});
  return cases;
}

void writeFile(const std::string& path, const void* data, size_t bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!f) throw CompileError("cannot write " + path);
}

std::vector<uint8_t> readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw CompileError("cannot read " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

int make(const std::string& dir, const std::string& sm_name, const std::string& filter) {
  cpu::TargetProfile profile;
  for (cpu::TargetProfile& p : cpu::loadTargetProfiles(NANOC_SOURCE_TARGETS_DIR))
    if (p.name == sm_name) profile = p;
  SmTarget sm = smTargetOf(profile);
  llvm::LLVMContext ctx;
  auto module = createGpuModule("bundle", ctx);
  std::ofstream manifest(dir + "/manifest.txt");
  std::mt19937_64 rng(1234);
  std::vector<KernelCase> cases = allCases();
  size_t numeric = cases.size();
  for (KernelCase& c : perfCases()) cases.push_back(std::move(c));
  int written = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Node& node = *cases[i].graph->node;
    const bool perf = i >= numeric;
    uint64_t bytes = 0;
    for (const Value* v : node.inputs) bytes += v ? v->type.bytes() : 0;
    for (const Value* v : node.outputs) bytes += v->type.bytes();
    if (!perf && bytes > (16u << 20)) continue;
    // An optional FILTER keeps the numeric cases whose label contains it
    // (e.g. "[" for the tensor-core ones); the performance cases stay.
    if (!perf && !filter.empty() && cases[i].label.find(filter) == std::string::npos) continue;
    if (!hasGpuLowering(node) || !runsOn(node, sm)) continue;
    std::string symbol = "k" + std::to_string(i);
    emitGpuKernel(node, *module, symbol);
    GpuLaunch l = findGpuLowering(node.op)->launch(node);
    std::vector<std::string> lines;
    std::vector<cpu::testing::AlignedBuffer> ins, outs;
    std::vector<const void*> ref_in;
    std::vector<void*> ref_out;
    for (size_t x = 0; x < node.inputs.size(); ++x) {
      const Value* v = node.inputs[x];
      if (!v) {
        ref_in.push_back(nullptr);
        continue;
      }
      std::string file = "-";
      if (!perf) {
        ins.emplace_back(v->type.bytes());
        cpu::testing::fillRandom(ins.back(), v->type, rng, cases[i].lo, cases[i].hi);
        file = symbol + "_in" + std::to_string(x) + ".bin";
        writeFile(dir + "/" + file, ins.back().data(), v->type.bytes());
        ref_in.push_back(ins.back().data());
      }
      lines.push_back("in " + std::to_string(v->type.bytes()) + " " + file);
    }
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      const Value* v = node.outputs[o];
      std::string file = "-";
      if (!perf) {
        outs.emplace_back(v->type.bytes());
        ref_out.push_back(outs.back().data());
        file = symbol + "_out" + std::to_string(o) + ".bin";
      }
      lines.push_back("out " + std::to_string(v->type.bytes()) + " " + file);
    }
    if (!perf) {
      findOp(node.op)->reference(node, ref_in, ref_out);
      for (size_t o = 0; o < node.outputs.size(); ++o)
        writeFile(dir + "/" + symbol + "_want" + std::to_string(o) + ".bin", outs[o].data(),
                  node.outputs[o]->type.bytes());
    }
    manifest << "kernel " << symbol << " " << l.grid[0] << " " << l.grid[1] << " " << l.grid[2]
             << " " << l.block[0] << " " << l.block[1] << " " << l.block[2] << " " << l.shared_bytes
             << " " << (perf ? 20 : 1) << " " << lines.size() << " " << cases[i].label << "\n";
    for (const std::string& line : lines) manifest << line << "\n";
    ++written;
  }
  std::string ptx = emitPtx(*module, sm);
  writeFile(dir + "/kernels.ptx", ptx.data(), ptx.size());
  std::vector<uint8_t> cubin = runPtxas(ptx, sm);
  writeFile(dir + "/kernels.cubin", cubin.data(), cubin.size());
  std::cout << written << " kernels for " << sm.name() << " in " << dir << "\n";
  return 0;
}

int check(const std::string& dir, const std::string& out) {
  std::vector<KernelCase> cases = allCases();
  int checked = 0, failed = 0, missing = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Node& node = *cases[i].graph->node;
    std::string symbol = "k" + std::to_string(i);
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      std::string want_path = dir + "/" + symbol + "_want" + std::to_string(o) + ".bin";
      if (!std::ifstream(want_path)) continue;  // not in the bundle
      std::string got_path = out + "/" + symbol + "_out" + std::to_string(o) + ".bin";
      if (!std::ifstream(got_path)) {
        ++missing;
        std::cout << "MISSING " << cases[i].label << " output " << o << "\n";
        continue;
      }
      std::vector<uint8_t> want = readFile(want_path), got = readFile(got_path);
      const TensorType& type = node.outputs[o]->type;
      ++checked;
      std::string what = cases[i].label + " output " + std::to_string(o) + " " + type.str();
      if (got.size() != want.size()) {
        ++failed;
        std::cout << "FAIL " << what << ": size " << got.size() << "\n";
        continue;
      }
      if (!isFloatDType(type.dtype)) {
        if (std::memcmp(got.data(), want.data(), got.size()) != 0) {
          ++failed;
          int64_t first = 0;
          while (got[first] == want[first]) ++first;
          std::cout << "FAIL " << what << ": bytes differ from byte " << first << "\n";
        }
        continue;
      }
      int64_t n = type.numel();
      if (const std::string precision = precisionOf(node); !precision.empty()) {
        // Tensor cores: normwise, as gpu.GpuSimt.MatMulGemm{Tf32,Bf16,F16}.
        const double bound = precision == "bf16" ? 1e-2 : 2e-3;
        const float* g = reinterpret_cast<const float*>(got.data());
        const float* w = reinterpret_cast<const float*>(want.data());
        double diff = 0, norm = 0;
        for (int64_t k = 0; k < n; ++k) {
          diff += (double(g[k]) - w[k]) * (double(g[k]) - w[k]);
          norm += double(w[k]) * w[k];
        }
        const double err = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
        if (!(err <= bound)) {
          ++failed;
          std::cout << "FAIL " << what << ": normwise error " << err << " > " << bound << "\n";
        }
        continue;
      }
      double max_ref = 0;
      for (int64_t k = 0; k < n; ++k) {
        double r = loadScalar(type.dtype, want.data(), k).f;
        if (std::isfinite(r)) max_ref = std::max(max_ref, std::fabs(r));
      }
      double step = type.dtype == DType::F16 ? 1e-3 : type.dtype == DType::BF16 ? 8e-3 : 1e-5;
      double tolerance = step * std::max(1.0, max_ref);
      int64_t bad = 0;
      for (int64_t k = 0; k < n; ++k) {
        double a = loadScalar(type.dtype, got.data(), k).f;
        double r = loadScalar(type.dtype, want.data(), k).f;
        bool ok = std::isnan(r) ? std::isnan(a)
                                : (std::isinf(r) ? a == r : std::fabs(a - r) <= tolerance);
        if (!ok && bad++ < 3)
          std::cout << "  " << what << ": element " << k << " is " << a << ", reference " << r
                    << " (tolerance " << tolerance << ")\n";
      }
      if (bad) {
        ++failed;
        std::cout << "FAIL " << what << ": " << bad << " of " << n << " differ\n";
      }
    }
  }
  std::cout << checked << " outputs checked, " << failed << " differ, " << missing << " missing\n";
  return failed || missing || checked == 0 ? 1 : 0;
}

}  // namespace
}  // namespace nanoc::gpu

int main(int argc, char** argv) {
  try {
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "make" && argc >= 3)
      return nanoc::gpu::make(argv[2], argc > 3 ? argv[3] : "sm_90", argc > 4 ? argv[4] : "");
    if (mode == "check" && argc == 4) return nanoc::gpu::check(argv[2], argv[3]);
    std::cerr << "usage: nanoc_gpu_bundle make DIR [sm_XY [FILTER]] | check DIR OUT\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "nanoc_gpu_bundle: " << e.what() << "\n";
    return 1;
  }
}
