// Test harness for CPU lowerings (tests only): builds a one-node graph,
// lowers it with emitKernel, optimizes it at O3 for this machine, JIT-compiles
// it with ORC and checks it against the op's host reference implementation on
// random inputs. The kernel runs over its tasks in uneven chunks, out of order,
// so a lowering that ignores its task range or writes outside its tasks fails.
#pragma once

#include <gtest/gtest.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/gemm_microkernel.h"
#include "compiler/codegen/cpu/lowering.h"
#include "compiler/codegen/cpu/target.h"
#include "compiler/ir/error.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/op_registry.h"
#include "compiler/ops/elementwise_table.h"
#include "compiler/passes/shape_inference.h"
#include "nanort/nanort.h"

namespace nanoc::cpu::testing {

// A Resize node's canonical attributes (compiler/ops/README.md), shared by
// the CPU and GPU lowering tests: nearest rounds half down, no antialias,
// no extrapolation; roi defaults to the whole input.
inline std::map<std::string, Attr> resizeAttrs(const std::string& mode,
                                               const std::string& transform,
                                               std::vector<int64_t> sizes,
                                               std::vector<double> scales,
                                               std::vector<double> roi = {}) {
  if (roi.empty()) {
    roi.assign(sizes.size(), 0.0);
    roi.resize(2 * sizes.size(), 1.0);
  }
  return {{"mode", mode},
          {"coordinate_transformation_mode", transform},
          {"nearest_mode", std::string("round_prefer_floor")},
          {"cubic_coeff_a", -0.75},
          {"exclude_outside", int64_t{0}},
          {"extrapolation_value", 0.0},
          {"antialias", int64_t{0}},
          {"sizes", std::move(sizes)},
          {"scales", std::move(scales)},
          {"roi", std::move(roi)}};
}

// The elementwise table's test sweep, shared by the CPU and GPU lowering
// tests: one dtype of each width and signedness (then the ones only the rows
// that take any dtype accept: Cast, Equal, Where), and the attributes each
// row's ONNX mapping would fill in.
inline const std::vector<DType>& elementwiseTestDtypes() {
  static const std::vector<DType> dtypes = {
      DType::F32, DType::F64, DType::F16,    DType::BF16,     DType::I8,
      DType::I16, DType::I32, DType::I64,    DType::U8,       DType::U16,
      DType::U32, DType::U64, DType::Bool,   DType::I4,       DType::U4,
      DType::I2,  DType::U2,  DType::F4E2M1, DType::F8E4M3FN, DType::F8E5M2FNUZ};
  return dtypes;
}
inline const std::map<std::string, std::map<std::string, Attr>>& elementwiseTestAttrs() {
  static const std::map<std::string, std::map<std::string, Attr>> attrs = {
      {"Elu", {{"alpha", 0.7}}},
      {"Celu", {{"alpha", 1.3}}},
      {"Selu", {{"alpha", 1.6732632}, {"gamma", 1.050701}}},
      {"LeakyRelu", {{"alpha", 0.01}}},
      {"ThresholdedRelu", {{"alpha", 0.5}}},
      {"HardSigmoid", {{"alpha", 0.2}, {"beta", 0.5}}},
      {"Swish", {{"alpha", 0.7}}},
      {"Shrink", {{"lambd", 0.5}, {"bias", 0.25}}},
      {"Gelu", {{"approximate_tanh", int64_t{0}}}},
      {"IsInf", {{"detect_negative", int64_t{1}}, {"detect_positive", int64_t{0}}}},
      {"Mod", {{"fmod", int64_t{0}}}},
      {"BitShift", {{"direction", std::string("LEFT")}}},
  };
  return attrs;
}

// A dense tensor buffer, 64-byte aligned as the runtime guarantees.
class AlignedBuffer {
 public:
  explicit AlignedBuffer(size_t bytes)
      : size_(bytes),
        data_(static_cast<uint8_t*>(
            std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64)))) {}
  AlignedBuffer(AlignedBuffer&& other) noexcept : size_(other.size_), data_(other.data_) {
    other.data_ = nullptr;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { std::free(data_); }
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  size_t size_;
  uint8_t* data_;
};

// Fills a buffer of `type` with random values: floats uniform in [lo, hi],
// integers uniform in [lo, hi] rounded (unsigned ones in [0, hi]), bools 0/1.
inline void fillRandom(AlignedBuffer& buffer, const TensorType& type, std::mt19937_64& rng,
                       float lo = -2.0f, float hi = 2.0f) {
  if (type.dtype == DType::F32) {
    std::uniform_real_distribution<float> dist(lo, hi);
    auto* p = reinterpret_cast<float*>(buffer.data());
    for (int64_t i = 0; i < type.numel(); ++i) p[i] = dist(rng);
    return;
  }
  std::uniform_real_distribution<double> dist(isUnsignedDType(type.dtype) ? 0.0 : lo, hi);
  for (int64_t i = 0; i < type.numel(); ++i) {
    double v = dist(rng);
    Scalar s = isFloatDType(type.dtype)    ? Scalar::ofFloat(v)
               : type.dtype == DType::Bool ? Scalar::ofBool(v > (lo + hi) / 2)
                                           : Scalar::ofFloat(std::round(v));
    storeScalar(type.dtype, s, buffer.data(), i);
  }
}

// A one-node graph: inputs typed, outputs typed by the op's shape rule.
struct SingleNodeGraph {
  Graph graph;
  Node* node = nullptr;
};

// The same where some inputs are absent (std::nullopt): null operands, as
// optional inputs the node does without (a bias before a residual).
inline std::unique_ptr<SingleNodeGraph> makeSingleNodeGraphWithAbsent(
    const std::string& op, const std::vector<std::optional<TensorType>>& inputs,
    const std::map<std::string, Attr>& attrs) {
  auto g = std::make_unique<SingleNodeGraph>();
  const OpSchema* schema = findOp(op);
  if (!schema) throw CompileError("test: op '" + op + "' is not registered");
  std::vector<Value*> values;
  for (size_t i = 0; i < inputs.size(); ++i)
    values.push_back(inputs[i] ? g->graph.addInput("in" + std::to_string(i), *inputs[i]) : nullptr);
  g->node = g->graph.addNode(op, "n0", values, static_cast<size_t>(schema->num_outputs));
  g->node->attrs = attrs;
  inferNode(*g->node);
  for (Value* out : g->node->outputs) g->graph.outputs.push_back(out);
  return g;
}

inline std::unique_ptr<SingleNodeGraph> makeSingleNodeGraph(
    const std::string& op, const std::vector<TensorType>& inputs,
    const std::map<std::string, Attr>& attrs) {
  return makeSingleNodeGraphWithAbsent(
      op, std::vector<std::optional<TensorType>>(inputs.begin(), inputs.end()), attrs);
}

// The kernel of `node` as an externally visible function `symbol` in a fresh
// module (emitKernel gives it internal linkage, which O3 would delete unused).
// `attributes` as emitKernel's (target-cpu, target-features, ...).
using KernelAttributes = std::vector<std::pair<std::string, std::string>>;
inline std::unique_ptr<llvm::Module> buildKernelModule(const Node& node, llvm::LLVMContext& ctx,
                                                       const std::string& symbol,
                                                       const KernelAttributes& attributes = {}) {
  auto module = std::make_unique<llvm::Module>("kernel_test", ctx);
  llvm::Function* fn = emitKernel(node, *module, symbol, attributes);
  fn->setLinkage(llvm::GlobalValue::ExternalLinkage);
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (llvm::verifyModule(*module, &os)) {
    std::string ir;
    llvm::raw_string_ostream ir_os(ir);
    module->print(ir_os, nullptr);
    throw CompileError("kernel for " + node.op + " fails the LLVM verifier:\n" + errors + "\n" +
                       ir);
  }
  return module;
}

// A compiled kernel held alive by its JIT.
struct JitKernel {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  nanort_kernel_fn fn = nullptr;
  uint64_t task_count = 0;
  uint64_t scratch_bytes = 0;  // Lowering::scratch_bytes
};

inline JitKernel compileKernel(const Node& node, const KernelAttributes& attributes = {}) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  const Lowering* lowering = findLowering(node.op);
  if (!lowering) throw CompileError("test: no lowering for " + node.op);
  JitKernel kernel;
  kernel.task_count = lowering->task_count(node);
  if (lowering->scratch_bytes) kernel.scratch_bytes = lowering->scratch_bytes(node);

  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto module = buildKernelModule(node, *ctx, "kernel", attributes);
  CpuTarget host = hostTarget();
  std::unique_ptr<llvm::TargetMachine> machine = createTargetMachine(host);
  optimizeModule(*module, *machine);

  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit) throw CompileError("test: LLJIT: " + llvm::toString(jit.takeError()));
  kernel.jit = std::move(*jit);
  module->setDataLayout(kernel.jit->getDataLayout());
  if (llvm::Error e =
          kernel.jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(ctx))))
    throw CompileError("test: addIRModule: " + llvm::toString(std::move(e)));
  auto address = kernel.jit->lookup("kernel");
  if (!address) throw CompileError("test: lookup: " + llvm::toString(address.takeError()));
  kernel.fn = address->toPtr<nanort_kernel_fn>();
  return kernel;
}

// Runs the kernel over all its tasks in uneven chunks, last chunk first.
// Its scratch holds NaNs at each call (a kernel must not read what it did
// not write in the same call).
inline void runKernel(const JitKernel& kernel, const std::vector<void*>& buffers) {
  uint64_t n = kernel.task_count;
  std::vector<uint64_t> cuts = {0, std::min<uint64_t>(1, n),
                                std::max<uint64_t>(std::min<uint64_t>(1, n), n / 2), n};
  AlignedBuffer scratch(static_cast<size_t>(kernel.scratch_bytes));
  nanort_kernel_args args{buffers.data(), buffers.size(),
                          kernel.scratch_bytes ? scratch.data() : nullptr};
  for (size_t c = cuts.size() - 1; c > 0; --c)
    if (cuts[c - 1] < cuts[c]) {
      std::memset(scratch.data(), 0xff, scratch.size());
      kernel.fn(&args, cuts[c - 1], cuts[c]);
    }
}

// Compares one output: floats by tolerance relative to the reference's
// largest magnitude (1e-5 for f32 and f64, which computes transcendentals in
// f32; the rounding step of f16 and bf16), every other dtype bit for bit.
inline void expectOutputMatches(const TensorType& type, const AlignedBuffer& got,
                                const AlignedBuffer& want, const std::string& what) {
  if (!isFloatDType(type.dtype)) {
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), type.bytes())) << what;
    return;
  }
  int64_t n = type.numel();
  std::vector<double> a(static_cast<size_t>(n)), r(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    a[static_cast<size_t>(i)] = loadScalar(type.dtype, got.data(), i).f;
    r[static_cast<size_t>(i)] = loadScalar(type.dtype, want.data(), i).f;
  }
  double max_ref = 0;
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(r[i])) max_ref = std::max(max_ref, std::fabs(r[i]));
  double step = type.dtype == DType::F16 ? 1e-3 : type.dtype == DType::BF16 ? 8e-3 : 1e-5;
  double tolerance = step * std::max(1.0, max_ref);
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    bool ok = std::isnan(r[i])
                  ? std::isnan(a[i])
                  : (std::isinf(r[i]) ? a[i] == r[i] : std::fabs(a[i] - r[i]) <= tolerance);
    if (!ok && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << a[i] << ", reference " << r[i]
                    << " (tolerance " << tolerance << ")";
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << n << " elements differ";
}

// Checks the lowering of one node on the given input data (one buffer per
// node input; an absent one's is unused) against the op's reference
// implementation, which takes absent inputs as null; the kernel takes the
// present ones only.
inline void expectLoweringMatchesReference(const Node& node,
                                           const std::vector<AlignedBuffer>& inputs,
                                           const std::string& what,
                                           const KernelAttributes& attributes = {}) {
  const OpSchema* schema = findOp(node.op);
  ASSERT_TRUE(schema && schema->reference) << node.op << " has no reference implementation";
  JitKernel kernel = compileKernel(node, attributes);
  ASSERT_GE(kernel.task_count, 1u) << what;

  std::vector<const void*> ref_in;
  std::vector<void*> buffers;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const bool absent = i < node.inputs.size() && !node.inputs[i];
    ref_in.push_back(absent ? nullptr : inputs[i].data());
    if (!absent) buffers.push_back(inputs[i].data());
  }
  // The next kernel's weights where the attributes give the kernel them
  // (NaN: a kernel may only prefetch them).
  size_t next_bytes = 0;
  for (const auto& [name, value] : attributes)
    if (name == kNextWeightsAttribute) next_bytes = static_cast<size_t>(std::stoull(value));
  AlignedBuffer next_weights(next_bytes);
  std::memset(next_weights.data(), 0xff, next_weights.size());
  if (next_bytes > 0) buffers.push_back(next_weights.data());
  std::vector<AlignedBuffer> got, want;
  std::vector<void*> ref_out;
  for (const Value* out : node.outputs) {
    got.emplace_back(out->type.bytes());
    want.emplace_back(out->type.bytes());
    // NaN bytes: an element the kernel never writes shows up as a mismatch.
    std::memset(got.back().data(), 0xff, got.back().size());
    buffers.push_back(got.back().data());
    ref_out.push_back(want.back().data());
  }
  schema->reference(node, ref_in, ref_out);
  runKernel(kernel, buffers);
  for (size_t i = 0; i < node.outputs.size(); ++i)
    expectOutputMatches(node.outputs[i]->type, got[i], want[i],
                        what + " output " + std::to_string(i) + " " + node.outputs[i]->type.str());
}

// The register tiles of the GEMM micro-kernel that this machine can run, as
// kernel attributes: the scalar 4 x 4 (no
// target features), SSE2's 6 x 8, AVX2's 6 x 16, AVX-512's 12 x 32 and its
// 8 x 24 at a preferred width of 256 (the last three where the CPU has them).
inline std::vector<KernelAttributes> tileTargets() {
  std::vector<KernelAttributes> targets = {{}};
  CpuTarget host = hostTarget();
  auto has = [&](const char* f) {
    return std::find(host.features.begin(), host.features.end(), f) != host.features.end();
  };
  std::string cpu = host.cpu;
  if (host.triple.rfind("x86_64", 0) != 0) return targets;
  targets.push_back({{"target-cpu", "x86-64"}, {"target-features", "+sse,+sse2"}});
  if (has("avx2") && has("fma"))
    targets.push_back({{"target-cpu", "haswell"}, {"target-features", "+avx,+avx2,+fma"}});
  if (has("avx512f")) {
    std::string features = exactFeatureString(host);
    targets.push_back({{"target-cpu", cpu}, {"target-features", features}});
    targets.push_back(
        {{"target-cpu", cpu}, {"target-features", features}, {"prefer-vector-width", "256"}});
  }
  return targets;
}

// The register tile of a kernel function with these attributes.
inline RegisterTile tileOf(const KernelAttributes& attributes) {
  llvm::LLVMContext ctx;
  llvm::Module module("tile", ctx);
  llvm::Function* fn =
      llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), false),
                             llvm::GlobalValue::ExternalLinkage, "f", module);
  for (const auto& [key, value] : attributes) fn->addFnAttr(key, value);
  return registerTile(*fn);
}

inline std::string describe(const std::string& op, const std::vector<TensorType>& inputs) {
  std::ostringstream os;
  os << op << "(";
  for (size_t i = 0; i < inputs.size(); ++i) os << (i ? ", " : "") << inputs[i].str();
  os << ")";
  return os.str();
}

// A one-node Conv graph on random inputs (in order from one generator seeded
// with `seed`), its W (input 1) a constant holding its data as from a model,
// and the Conv's reference output: what a pass rewriting the Conv must still
// compute.
struct ConvWithReference {
  std::unique_ptr<SingleNodeGraph> g;
  std::vector<AlignedBuffer> data;  // one per input
  AlignedBuffer want;
};
inline ConvWithReference convWithReference(const std::vector<TensorType>& inputs,
                                           const std::map<std::string, Attr>& attrs,
                                           uint64_t seed) {
  auto g = makeSingleNodeGraph("Conv", inputs, attrs);
  const size_t out_bytes = g->node->outputs[0]->type.bytes();
  ConvWithReference c{std::move(g), {}, AlignedBuffer(out_bytes)};
  std::mt19937_64 rng(seed);
  std::vector<const void*> in;
  for (const TensorType& type : inputs) {
    c.data.emplace_back(type.bytes());
    fillRandom(c.data.back(), type, rng);
    in.push_back(c.data.back().data());
  }
  c.g->node->inputs[1]->data = std::make_shared<std::vector<uint8_t>>(
      c.data[1].data(), c.data[1].data() + inputs[1].bytes());
  findOp("Conv")->reference(*c.g->node, in, {c.want.data()});
  return c;
}

// The node on random inputs (its input types, in order from one generator
// seeded with `seed`) on every tile of tileTargets(), each target with the
// attributes `extra` too; the inputs listed in `constants` become constants
// of the graph holding their random data (weights, as from a model). Absent
// (null) inputs stay absent.
inline void expectMatchesOnEveryTile(Node& node, uint64_t seed, const std::string& what,
                                     const std::vector<size_t>& constants = {},
                                     const KernelAttributes& extra = {}) {
  SCOPED_TRACE(what);
  std::mt19937_64 rng(seed);
  std::vector<AlignedBuffer> data;
  for (const Value* in : node.inputs) {
    data.emplace_back(in ? in->type.bytes() : 0);  // unused where absent
    if (in) fillRandom(data.back(), in->type, rng);
  }
  for (size_t i : constants)
    node.inputs[i]->data = std::make_shared<std::vector<uint8_t>>(
        data[i].data(), data[i].data() + node.inputs[i]->type.bytes());
  for (KernelAttributes target : tileTargets()) {
    SCOPED_TRACE("target-features " + (target.empty() ? "none" : target[1].second.substr(0, 40)));
    target.insert(target.end(), extra.begin(), extra.end());
    expectLoweringMatchesReference(node, data, what, target);
  }
}

// The common case: random inputs in [lo, hi] for the given types and attrs.
inline void expectLoweringMatchesReference(const std::string& op, std::vector<TensorType> inputs,
                                           std::map<std::string, Attr> attrs, uint64_t seed,
                                           float lo = -2.0f, float hi = 2.0f) {
  std::string what = describe(op, inputs);
  SCOPED_TRACE(what);
  auto g = makeSingleNodeGraph(op, inputs, attrs);
  std::mt19937_64 rng(seed);
  std::vector<AlignedBuffer> data;
  for (const TensorType& type : inputs) {
    data.emplace_back(type.bytes());
    fillRandom(data.back(), type, rng, lo, hi);
  }
  expectLoweringMatchesReference(*g->node, data, what);
}

}  // namespace nanoc::cpu::testing
