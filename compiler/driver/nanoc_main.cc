// nanoc: compiles a model (ONNX, or the IR's text form) for one or several
// CPU targets into NAME.o, NAME.h, NAME.nrt and NAME.so.
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Triple.h>
#include <mimalloc-new-delete.h>  // the compiler's allocator: mimalloc

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "compiler/codegen/cpu/gemm_microkernel.h"
#include "compiler/codegen/cpu/target.h"
#include "compiler/codegen/cpu/target_profiles.h"
#include "compiler/codegen/gpu/gpu_lowering.h"
#include "compiler/driver/progress.h"
#include "compiler/emit/compile.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/ir/error.h"
#include "compiler/ir/text.h"
#include "compiler/passes/gpu_placement.h"
#include "compiler/passes/pipeline.h"
#include "nanort/nanort.h"

namespace {

constexpr const char* kUsage = R"(usage: nanoc MODEL [options]

Compiles MODEL (an ONNX model, .onnx, or nanoc's text IR, .nir) for one CPU
target, or several in one artifact, and writes, into the output directory:
  NAME.o    the kernels, the constants and the program; exports NAME_model only
  NAME.h    the C header describing the model (entry, inputs, outputs, arena)
  NAME.nrt  the program alone (for nanort-inspect)
  NAME.so   the same model as a shared object (for nanort-run, nanort_model_load_file);
            not for bare-metal targets (no OS in the triple)
The same model and options give byte-identical files.

options:
  --name NAME        symbol prefix, a C identifier (default: MODEL's file name)
  -o, --output DIR   output directory, created if missing (default: .)
  --target NAME      host (default: this machine's CPU and its features, so
                     the artifact may be refused on another machine), or a
                     named profile of targets/ (see --list-targets), such as
                     the portable x86-64-v3, armv8-a or rv64gc; several,
                     comma-separated (x86-64-v3,x86-64-v4), build one artifact
                     with the kernels of each, and nanort runs the best one
                     the CPU supports. A GPU profile, sm_75 ... sm_120 (a
                     list: sm_80,sm_90; sm_90a for Hopper's own instructions),
                     offloads what has a GPU kernel to an NVIDIA GPU: a cubin
                     per SM (the CUDA toolkit's ptxas) and PTX for the lowest,
                     all inside the program; the rest runs on the profile's
                     host CPU (--host), and nanort loads the CUDA driver at
                     run time
  --gpu-offload MODE auto (default): products and normalizations run on the
                     GPU, elementwise ops there only where an operand already
                     is; all: every op with a GPU kernel runs there
  --gpu-precision M  the f32 MatMul/Gemm/Conv on the GPU: exact (default; f32
                     SIMT), tf32, bf16 or f16 (tensor cores, mma.sync with
                     f32 accumulate, operands rounded to M: faster, less
                     exact). Needs sm_80 or newer for all the targets, except
                     f16 (sm_75: m16n8k8); otherwise exact
  --gpu-layout L     the GPU's convolutions and what follows them: nhwc
                     (default; channels-last, weights laid out for the
                     implicit GEMM at compile time, converted at the edges)
                     or nchw (the model's layout)
  --gpu-split-k S    auto (default): a GPU convolution, MatMul or Gemm
                     whose output tiles are too few to fill the GPU (a
                     batch-1 CNN's deep layers, a short sequence's
                     products) runs as products over slices of K plus a
                     sum; off: every product in one kernel
  --gpu-operand-views V
                     on (default): a GPU MatMul reads an operand made by
                     Slice, Reshape and Transpose (attention's heads out of
                     one QKV projection) in place, through a strided view,
                     and those kernels go; off: every such op runs
  --denormals MODE   keep (default): f32 and f64 values below the normal range
                     (under 1.2e-38 for f32) computed as IEEE 754 says, as
                     ONNX Runtime does; flush: every CPU kernel runs with
                     flush-to-zero and denormals-are-zero (x86-64's MXCSR,
                     AArch64's FPCR.FZ), the caller's mode restored when it
                     returns, so such values are 0 and cost no microcode
                     assist (on x86 an operation on a subnormal can take
                     over 100 cycles), as ONNX Runtime's
                     session.set_denormal_as_zero. Refused for targets
                     without the mode (RISC-V, 32-bit Arm)
  --host NAME        the host CPU of a GPU target (default: the first GPU
                     profile's, e.g. cortex-a78 for sm_87): host or a CPU
                     profile
  --list-targets     list the named target profiles and exit
  --targets-dir DIR  where the profiles are (default: $NANOC_TARGETS_DIR, else
                     ../share/nanort/targets beside nanoc's executable)
  --triple TRIPLE    LLVM target triple, e.g. aarch64-unknown-linux-gnu
  --cpu CPU          LLVM CPU name for --triple (default: generic)
  --features LIST    comma-separated LLVM features, +f or -f, on top of the CPU's
  --emit KIND        what to produce: files (default), or print to stdout one of
                     ir (the IR after optimization), plan (the arena plan),
                     llvm (the optimized LLVM IR), asm (the assembly),
                     ptx (a GPU target's PTX, per SM)
  --input-shape NAME=D0,D1,...
                     the dims of ONNX graph input NAME (repeatable): fixes its
                     symbolic and unknown dims; its rank and static dims must
                     agree with the model's. An empty list is a scalar
  --dim PARAM=VALUE  every ONNX input dim named PARAM (a dim_param, such as
                     batch or sequence) is VALUE (repeatable)
  --bind NAME=FILE.pb
                     ONNX graph input NAME is the constant in FILE.pb (a
                     serialized onnx TensorProto), compiled in: for inputs
                     that decide shapes, fed one fixed value (repeatable)
  --no-memory-check  compile for a bare-metal profile (cortex-m4, ...) even when
                     the model's constants and program exceed its flash or its
                     arena its RAM (the profile's "memory" sizes)
  --no-fold          skip the constant folding pass (the ONNX importer still
                     folds the small constant subgraphs that shapes need)
  --no-conv-gemm     keep every Conv a direct loop nest instead of patches
                     (nanoc.Im2Col) fed to the GEMM micro-kernel
  --no-winograd      run 3x3 stride-1 Convs on packed patches too, instead of
                     Winograd's F(4x4, 3x3) (4x fewer multiply-adds; rounding
                     within 1e-5 of the direct sum's scale). The transformed
                     weights are 4x the 3x3 weights' size (16/9 on 7x7 maps):
                     resnet18's constants are 75.1 MB with, 46.7 MB without
                     for x86-64-v3 or x86-64-v4; 53.8 MB with for an AVX-512
                     Xeon (sapphirerapids), whose 14x14 layers of 256
                     channels run the direct loop (their 9 MB of transformed
                     weights stream from memory slower than its full-rate
                     AVX-512 computes the direct sum)
  --no-nchwc         keep the model's NCHW layout everywhere; by default a CNN
                     of pointwise and depthwise convolutions (mobilenet_v2,
                     efficientnet_b0) runs channel-blocked (NCHWc, c = the
                     target's vector width) from its stem to its pooling
  --nchwc            run every op that has a channel-blocked form blocked,
                     in any CNN (resnets and squeezenet keep NCHW by default:
                     their 3x3 Convs run by Winograd), converting around the
                     others; for measuring a model both ways
  --no-fuse          keep residual Adds and activations after a Conv, Gemm or
                     MatMul as kernels of their own instead of folding them
                     into its store, a per-channel Mul before a pointwise
                     Conv (squeeze-and-excitation) instead of folding it into
                     the Conv's weights, and chains of elementwise ops as one
                     kernel each instead of one fused kernel
  --progress         show where the compile is on stderr once it has run for a
                     second: import, passes, plan, code generation (kernels
                     counted), optimization (percent), emit (object code,
                     functions counted; the .so). The default when stderr is
                     a terminal (one line, redrawn); elsewhere a line a stage
                     and a counter line a tenth. The artifacts are the same
  --no-progress      no progress, even on a terminal
  --version          print nanoc's version, the program format and kernel ABI
                     it writes, and its LLVM version
  -h, --help         this text
)";

// "NAME=VALUE" split at the last '=' (input names may hold one, dims never).
std::pair<std::string, std::string> splitAssignment(const std::string& flag,
                                                    const std::string& arg) {
  size_t eq = arg.rfind('=');
  if (eq == std::string::npos || eq == 0)
    throw nanoc::CompileError(flag + " '" + arg + "' is not NAME=VALUE");
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

int64_t parseDim(const std::string& flag, const std::string& text) {
  int64_t value = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0)
    throw nanoc::CompileError(flag + ": '" + text + "' is not a dim (an integer >= 0)");
  return value;
}

void addInputShape(nanoc::OnnxImportOptions& options, const std::string& arg) {
  auto [name, list] = splitAssignment("--input-shape", arg);
  std::vector<int64_t> dims;
  for (size_t at = 0; !list.empty() && at <= list.size();) {
    size_t comma = std::min(list.find(',', at), list.size());
    dims.push_back(parseDim("--input-shape " + name, list.substr(at, comma - at)));
    at = comma + 1;
  }
  if (!options.input_shapes.emplace(name, dims).second)
    throw nanoc::CompileError("--input-shape " + name + " is given twice");
}

void addDim(nanoc::OnnxImportOptions& options, const std::string& arg) {
  auto [param, value] = splitAssignment("--dim", arg);
  if (!options.dim_params.emplace(param, parseDim("--dim " + param, value)).second)
    throw nanoc::CompileError("--dim " + param + " is given twice");
}

bool isIdentifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (unsigned char c : s)
    if (!std::isalnum(c) && c != '_') return false;
  return true;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw nanoc::CompileError(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const std::filesystem::path& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) throw nanoc::CompileError(path.string() + ": cannot write");
}

void listTargets(const std::string& dir) {
  for (const nanoc::cpu::TargetProfile& p : nanoc::cpu::loadTargetProfiles(dir)) {
    std::string what = p.kind == "cpu"
                           ? p.triple + " " + p.cpu
                           : "sm_" + std::to_string(p.sm) + ", host " + p.triple + " " + p.cpu;
    std::printf("%-16s %-3s  %-40s %s\n", p.name.c_str(), p.kind.c_str(), what.c_str(),
                p.description.c_str());
  }
}

// The profile that runs on every CPU of the host's architecture (or most of
// them), for the note below; "" where targets/ has none.
std::string portableProfile(const std::string& triple) {
  switch (llvm::Triple(triple).getArch()) {
    case llvm::Triple::x86_64:
      return "x86-64-v3 (any x86-64 CPU with AVX2 and FMA; x86-64-v2 for older ones)";
    case llvm::Triple::aarch64:
      return "armv8-a (any ARMv8-A CPU)";
    case llvm::Triple::riscv64:
      return "rv64gc (any RV64GC CPU; rv64gcv with the V extension)";
    default:
      return "";
  }
}

// --target host ties the artifact to this machine's CPU; say so once, and
// what to pass instead, since the artifact is refused on a CPU with fewer
// features (nanort checks them at load, so it never dies of SIGILL).
void noteHostTarget(const nanoc::cpu::CpuTarget& host) {
  static const char* const kNotable[] = {"avx512f", "avx2",    "fma",      "sse4.2", "neon", "sve",
                                         "sve2",    "dotprod", "fullfp16", "v",      "zvfh"};
  std::string named;
  size_t count = 0;
  for (const char* f : kNotable) {
    if (std::find(host.features.begin(), host.features.end(), f) == host.features.end()) continue;
    named += std::string(named.empty() ? "" : ", ") + f;
    ++count;
  }
  std::string features =
      named.empty()
          ? std::to_string(host.features.size()) + " features"
          : named + (host.features.size() > count
                         ? " and " + std::to_string(host.features.size() - count) + " more features"
                         : "");
  std::fprintf(stderr,
               "nanoc: note: --target host (the default) ties the artifact to this machine's CPU, "
               "%s (%s): nanort refuses it (UNSUPPORTED_TARGET, naming what is missing) on a CPU "
               "that lacks any of them\n",
               host.cpu.c_str(), features.c_str());
  const std::string portable = portableProfile(host.triple);
  if (!portable.empty())
    std::fprintf(stderr,
                 "nanoc: note: for a portable artifact pass --target %s, or another profile "
                 "of nanoc --list-targets\n",
                 portable.c_str());
}

// A GPU profile named by `name` ("sm_90", or "sm_90a" / "sm_100f" for the
// profile sm_90 / sm_100 with its "a" or "f" variant); nullopt for a name no
// GPU profile has.
std::optional<nanoc::gpu::SmTarget> gpuTarget(const std::string& name, const std::string& dir,
                                              std::vector<nanoc::cpu::TargetProfile>* used) {
  if (name.rfind("sm_", 0) != 0) return std::nullopt;
  std::string base = name, variant;
  if (!name.empty() && (name.back() == 'a' || name.back() == 'f')) {
    base = name.substr(0, name.size() - 1);
    variant = name.substr(name.size() - 1);
  }
  std::string known;
  for (const nanoc::cpu::TargetProfile& p : nanoc::cpu::loadTargetProfiles(dir)) {
    if (p.kind != "gpu") continue;
    known += (known.empty() ? "" : ", ") + p.name;
    if (p.name != base) continue;
    used->push_back(p);
    nanoc::gpu::SmTarget t;
    t.sm = p.sm;
    t.variant = variant;
    t.ptx_isa = p.ptx_isa;
    return t;
  }
  throw nanoc::CompileError("unknown GPU --target '" + name + "'; known: " + known +
                            " (an 'a' or 'f' suffix selects the SM's variant)");
}

nanoc::cpu::CpuTarget profileTarget(const std::string& name, const std::string& dir,
                                    std::vector<nanoc::cpu::TargetProfile>* used) {
  std::string known;
  for (const nanoc::cpu::TargetProfile& p : nanoc::cpu::loadTargetProfiles(dir)) {
    if (p.name == name) {
      used->push_back(p);
      if (p.kind == "gpu")
        throw nanoc::CompileError("--host " + name + " is a GPU target, not a CPU");
      return nanoc::cpu::cpuTargetOf(p);
    }
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw nanoc::CompileError("unknown --target '" + name + "'; known: host, " + known);
}

// The progress line's delay: a second, or $NANOC_PROGRESS_DELAY_MS (for
// tests, which show every stage of a small model with 0).
std::chrono::milliseconds progressDelay() {
  const char* env = std::getenv("NANOC_PROGRESS_DELAY_MS");
  long ms = 1000;
  if (env && *env) {
    auto [end, ec] = std::from_chars(env, env + std::strlen(env), ms);
    if (ec != std::errc() || *end != '\0' || ms < 0)
      throw nanoc::CompileError(std::string("NANOC_PROGRESS_DELAY_MS='") + env +
                                "' is not a number of milliseconds");
  }
  return std::chrono::milliseconds(ms);
}

// `progress` is made once the options are parsed; main erases its line
// before an error message.
int run(int argc, char** argv, std::unique_ptr<nanoc::Progress>& progress) {
  std::string model, name, out_dir = ".", target = "host", triple, cpu, features, emit = "files",
                           host;
  std::string targets_dir = nanoc::cpu::defaultTargetsDir();
  bool fold = true, list_targets = false, memory_check = true, conv_gemm = true, fuse = true,
       winograd = true, nchwc = true, nchwc_always = false;
  std::optional<bool> show_progress;  // --progress / --no-progress; else a terminal decides
  nanoc::GpuOffload gpu_offload = nanoc::GpuOffload::Auto;
  nanoc::GpuPrecision gpu_precision;
  bool gpu_nhwc = true;
  bool gpu_split_k = true;
  bool gpu_operand_views = true;
  bool flush_denormals = false;
  nanoc::OnnxImportOptions import_options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* flag) -> std::string {
      std::string prefix = std::string(flag) + "=";
      if (arg.rfind(prefix, 0) == 0) return arg.substr(prefix.size());
      if (i + 1 >= argc) throw nanoc::CompileError(std::string(flag) + " needs a value");
      return argv[++i];
    };
    auto is = [&](const char* flag) {
      return arg == flag || arg.rfind(std::string(flag) + "=", 0) == 0;
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--version") {
      std::printf("nanoc %s (program format %u.%u, kernel ABI %u, LLVM %s)\n",
                  NANORT_PROJECT_VERSION, NANORT_FORMAT_MAJOR, NANORT_FORMAT_MINOR,
                  NANORT_KERNEL_ABI_VERSION, LLVM_VERSION_STRING);
      return 0;
    } else if (arg == "--list-targets") {
      list_targets = true;
    } else if (is("--targets-dir")) {
      targets_dir = value("--targets-dir");
    } else if (is("--name"))
      name = value("--name");
    else if (arg == "-o" || is("--output"))
      out_dir = value(arg == "-o" ? "-o" : "--output");
    else if (is("--target"))
      target = value("--target");
    else if (is("--host"))
      host = value("--host");
    else if (is("--gpu-offload")) {
      std::string mode = value("--gpu-offload");
      if (mode != "auto" && mode != "all")
        throw nanoc::CompileError("--gpu-offload must be auto or all, not '" + mode + "'");
      gpu_offload = mode == "all" ? nanoc::GpuOffload::All : nanoc::GpuOffload::Auto;
    } else if (is("--gpu-precision")) {
      gpu_precision.mode = value("--gpu-precision");
      if (!nanoc::isGpuPrecision(gpu_precision.mode))
        throw nanoc::CompileError("--gpu-precision must be exact, tf32, bf16 or f16, not '" +
                                  gpu_precision.mode + "'");
    } else if (is("--gpu-layout")) {
      std::string layout = value("--gpu-layout");
      if (layout != "nhwc" && layout != "nchw")
        throw nanoc::CompileError("--gpu-layout must be nhwc or nchw, not '" + layout + "'");
      gpu_nhwc = layout == "nhwc";
    } else if (is("--denormals")) {
      std::string mode = value("--denormals");
      if (mode != "keep" && mode != "flush")
        throw nanoc::CompileError("--denormals must be keep or flush, not '" + mode + "'");
      flush_denormals = mode == "flush";
    } else if (is("--gpu-split-k")) {
      std::string mode = value("--gpu-split-k");
      if (mode != "auto" && mode != "off")
        throw nanoc::CompileError("--gpu-split-k must be auto or off, not '" + mode + "'");
      gpu_split_k = mode == "auto";
    } else if (is("--gpu-operand-views")) {
      std::string mode = value("--gpu-operand-views");
      if (mode != "on" && mode != "off")
        throw nanoc::CompileError("--gpu-operand-views must be on or off, not '" + mode + "'");
      gpu_operand_views = mode == "on";
    } else if (is("--triple"))
      triple = value("--triple");
    else if (is("--cpu"))
      cpu = value("--cpu");
    else if (is("--features"))
      features = value("--features");
    else if (is("--emit"))
      emit = value("--emit");
    else if (is("--input-shape"))
      addInputShape(import_options, value("--input-shape"));
    else if (is("--dim"))
      addDim(import_options, value("--dim"));
    else if (is("--bind")) {
      auto [name, file] = splitAssignment("--bind", value("--bind"));
      if (!import_options.bound_inputs.emplace(name, readFile(file)).second)
        throw nanoc::CompileError("--bind " + name + " is given twice");
    } else if (arg == "--no-memory-check")
      memory_check = false;
    else if (arg == "--no-fold")
      fold = false;
    else if (arg == "--no-conv-gemm")
      conv_gemm = false;
    else if (arg == "--no-fuse")
      fuse = false;
    else if (arg == "--no-winograd")
      winograd = false;
    else if (arg == "--no-nchwc")
      nchwc = false;
    else if (arg == "--nchwc")
      nchwc_always = true;
    else if (arg == "--progress")
      show_progress = true;
    else if (arg == "--no-progress")
      show_progress = false;
    else if (!arg.empty() && arg[0] == '-')
      throw nanoc::CompileError("unknown option '" + arg + "' (see nanoc --help)");
    else if (model.empty())
      model = arg;
    else
      throw nanoc::CompileError("more than one model given: '" + model + "' and '" + arg + "'");
  }
  if (list_targets) {
    listTargets(targets_dir);
    return 0;
  }
  if (model.empty()) throw nanoc::CompileError("no model given (see nanoc --help)");
  if (emit != "files" && emit != "ir" && emit != "plan" && emit != "llvm" && emit != "asm" &&
      emit != "ptx")
    throw nanoc::CompileError("--emit must be files, ir, plan, llvm, asm or ptx, not '" + emit +
                              "'");
  if (name.empty()) {
    name = std::filesystem::path(model).stem().string();
    for (char& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    if (!name.empty() && std::isdigit(static_cast<unsigned char>(name[0]))) name = "m" + name;
  }
  if (!isIdentifier(name)) throw nanoc::CompileError("--name '" + name + "' is not a C identifier");

  std::vector<nanoc::cpu::CpuTarget> targets;
  size_t host_index = SIZE_MAX;                     // which of `targets` is "host", if one is
  std::vector<nanoc::cpu::TargetProfile> profiles;  // the named ones among them
  std::vector<nanoc::gpu::SmTarget> gpu_targets;    // --target sm_XY,...
  std::vector<nanoc::cpu::TargetProfile> gpu_profiles;
  if (!triple.empty()) {
    targets.push_back(nanoc::cpu::makeTarget(triple, cpu.empty() ? "generic" : cpu, features));
  } else if (!cpu.empty() || !features.empty()) {
    throw nanoc::CompileError("--cpu and --features need --triple");
  } else {
    // "x86-64-v3,x86-64-v4": one artifact with the kernels of each;
    // "sm_80,sm_90": one with a cubin for each.
    std::string rest = target;
    std::vector<std::string> cpu_names;
    while (true) {
      size_t comma = rest.find(',');
      std::string one = rest.substr(0, comma);
      if (one.empty()) throw nanoc::CompileError("--target '" + target + "' has an empty entry");
      if (std::optional<nanoc::gpu::SmTarget> sm = gpuTarget(one, targets_dir, &gpu_profiles))
        gpu_targets.push_back(*sm);
      else
        cpu_names.push_back(one);
      if (comma == std::string::npos) break;
      rest = rest.substr(comma + 1);
    }
    if (!gpu_targets.empty() && !cpu_names.empty())
      throw nanoc::CompileError("--target '" + target +
                                "' mixes GPU and CPU targets: name the GPU's host CPU with --host");
    if (!gpu_targets.empty()) {
      if (host.empty()) {
        targets.push_back(nanoc::cpu::cpuTargetOf(gpu_profiles[0]));
      } else {
        cpu_names.push_back(host);
      }
    } else if (!host.empty()) {
      throw nanoc::CompileError("--host names a GPU target's host CPU; --target '" + target +
                                "' has no GPU target");
    }
    for (const std::string& one : cpu_names) {
      targets.push_back(one == "host" ? nanoc::cpu::hostTarget()
                                      : profileTarget(one, targets_dir, &profiles));
      if (one == "host") host_index = targets.size() - 1;
    }
  }
  if (!gpu_targets.empty() && !triple.empty())
    throw nanoc::CompileError("--triple cannot describe a GPU target's host; use --host");

  progress = std::make_unique<nanoc::Progress>(nanoc::Progress::modeFor(stderr, show_progress),
                                               stderr, progressDelay());
  progress->stage("import");
  std::unique_ptr<nanoc::Graph> graph;
  std::string ext = std::filesystem::path(model).extension().string();
  if (ext == ".nir") {
    if (!import_options.input_shapes.empty() || !import_options.dim_params.empty() ||
        !import_options.bound_inputs.empty())
      throw nanoc::CompileError(
          "--input-shape, --dim and --bind are for ONNX models; a .nir model's shapes are "
          "static");
    graph = nanoc::parseGraph(readFile(model), model);
  } else {
    graph = nanoc::importOnnxFile(model, import_options);
  }
  graph->name = name;

  nanoc::PipelineOptions pipeline;
  pipeline.fold_constants = fold;
  pipeline.conv_gemm_panel = conv_gemm ? nanoc::cpu::convGemmPanel(targets) : 0;
  if (pipeline.conv_gemm_panel > 0)
    pipeline.conv_gemm_row_group = nanoc::cpu::convGemmRowGroup(targets);
  pipeline.fuse = fuse;
  pipeline.winograd = winograd;
  pipeline.nchwc_block = nchwc ? nanoc::cpu::nchwcBlock(targets) : 0;
  pipeline.nchwc_always = nchwc_always;
  pipeline.full_rate_fma = nanoc::cpu::fullRateWideFma(targets);
  pipeline.gpu = !gpu_targets.empty();
  progress->stage("passes");
  nanoc::runPipeline(*graph, pipeline);
  if (!gpu_targets.empty()) {
    gpu_precision.min_sm = gpu_targets[0].sm;
    for (const nanoc::gpu::SmTarget& t : gpu_targets)
      gpu_precision.min_sm = std::min(gpu_precision.min_sm, t.sm);
    nanoc::GpuPassOptions gpu_passes{gpu_offload, gpu_precision, gpu_nhwc,
                                     /*fuse_epilogues=*/fuse, /*fuse_chains=*/fuse};
    if (gpu_split_k) gpu_passes.split_k = nanoc::gpu::chooseSplitK;
    gpu_passes.fold_views = gpu_operand_views;
    nanoc::runGpuPasses(*graph, nanoc::gpu::hasGpuLowering, gpu_passes);
  }
  if (emit == "ir") {
    progress->finish();
    std::fputs(nanoc::printGraph(*graph).c_str(), stdout);
    return 0;
  }

  nanoc::CompileOptions options{name, targets};
  options.gpu_targets = gpu_targets;
  options.flush_denormals = flush_denormals;
  options.progress = [&](const char* stage, size_t done, size_t total, const char* unit) {
    progress->count(stage, done, total, unit);
  };
  nanoc::CompiledModel compiled = nanoc::compileGraph(*graph, options);
  if (memory_check)
    for (const nanoc::cpu::TargetProfile& p : profiles)
      nanoc::cpu::checkModelFits(p, compiled.plan.constants_size + compiled.program.size(),
                                 compiled.plan.sessionArenaSize());
  if (emit == "plan") {
    progress->finish();
    std::fputs(nanoc::printPlan(*graph, compiled.plan).c_str(), stdout);
    return 0;
  }
  if (emit == "llvm") {
    progress->finish();
    llvm::outs() << *compiled.module;
    if (compiled.gpu_module) llvm::outs() << *compiled.gpu_module;
    return 0;
  }
  if (emit == "ptx") {
    progress->finish();
    if (compiled.ptx.empty()) throw nanoc::CompileError("--emit=ptx needs a GPU --target (sm_XY)");
    for (const std::string& ptx : compiled.ptx) std::fputs(ptx.c_str(), stdout);
    return 0;
  }
  if (emit == "asm") {
    std::string assembly = nanoc::cpu::emitAssembly(
        *compiled.module, *compiled.machine, [&](size_t done, size_t total) {
          progress->count("emit: assembly", done, total, "functions");
        });
    progress->finish();
    std::fputs(assembly.c_str(), stdout);
    return 0;
  }

  std::filesystem::path dir(out_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw nanoc::CompileError(out_dir + ": cannot create: " + ec.message());
  std::vector<uint8_t> object =
      nanoc::cpu::emitObject(*compiled.module, *compiled.machine, [&](size_t done, size_t total) {
        progress->count("emit: object code", done, total, "functions");
      });
  writeFile(dir / (name + ".o"), object.data(), object.size());
  writeFile(dir / (name + ".h"), compiled.header.data(), compiled.header.size());
  writeFile(dir / (name + ".nrt"), compiled.program.data(), compiled.program.size());
  // A shared object means nothing without an OS to load it (cortex-m4 ...).
  if (llvm::Triple(targets[0].triple).getOS() != llvm::Triple::UnknownOS) {
    progress->stage("emit: shared object");
    nanoc::linkSharedObject((dir / (name + ".o")).string(), (dir / (name + ".so")).string(), name);
  }
  progress->finish();
  if (host_index != SIZE_MAX) noteHostTarget(targets[host_index]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<nanoc::Progress> progress;
  try {
    return run(argc, argv, progress);
  } catch (const nanoc::CompileError& e) {
    if (progress) progress->finish();
    std::fprintf(stderr, "nanoc: error: %s\n", e.what());
  } catch (const std::exception& e) {
    if (progress) progress->finish();
    std::fprintf(stderr, "nanoc: internal error: %s\n", e.what());
  }
  return 1;
}
