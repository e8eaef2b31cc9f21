// The NVPTX side of the GPU path: modules and target machines for an SM,
// PTX emission at O3 and the CUDA toolkit's ptxas.
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>

#include "compiler/codegen/cpu/target_profiles.h"
#include "compiler/codegen/gpu/gpu_lowering.h"
#include "compiler/ir/error.h"

extern "C" void LLVMInitializeNVPTXTargetInfo();
extern "C" void LLVMInitializeNVPTXTarget();
extern "C" void LLVMInitializeNVPTXTargetMC();
extern "C" void LLVMInitializeNVPTXAsmPrinter();

#ifndef NANOC_PTXAS_PATH
#define NANOC_PTXAS_PATH ""
#endif

namespace nanoc::gpu {
namespace {

constexpr const char* kTriple = "nvptx64-nvidia-cuda";

const llvm::Target& nvptxTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(llvm::Triple(kTriple), error);
  if (!target) throw CompileError("the NVPTX target is not available in this LLVM: " + error);
  return *target;
}

// A private directory for ptxas's files, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    llvm::SmallString<128> path;
    if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("nanoc-ptxas", path))
      throw CompileError("cannot create a temporary directory for ptxas: " + ec.message());
    path_ = std::string(path);
  }
  ~TempDir() { llvm::sys::fs::remove_directories(path_, /*IgnoreErrors=*/true); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const {
    llvm::SmallString<128> p(path_);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }

 private:
  std::string path_;
};

std::string readFile(const std::string& path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) return "";
  return (*buffer)->getBuffer().str();
}

}  // namespace

// The lowest PTX ISA that LLVM's NVPTX backend accepts for an SM (it aborts
// below it, so refuse first); 0 where this table does not know the SM.
uint32_t minimumPtxIsa(const SmTarget& t) {
  static const std::map<uint32_t, uint32_t> base = {{75, 63},  {80, 70},  {86, 71},  {87, 74},
                                                    {89, 78},  {90, 78},  {100, 86}, {101, 86},
                                                    {103, 88}, {110, 90}, {120, 87}, {121, 88}};
  auto it = base.find(t.sm);
  if (it == base.end()) return 0;
  uint32_t v = it->second;
  if (t.variant == "a" && t.sm == 90) v = 80;
  if (t.variant == "f") v = std::max<uint32_t>(v, 88);
  return v;
}

std::string SmTarget::name() const { return "sm_" + std::to_string(sm) + variant; }

SmTarget smTargetOf(const cpu::TargetProfile& profile) {
  if (profile.kind != "gpu" || profile.sm == 0)
    throw CompileError("target profile '" + profile.name + "' is not a GPU SM target");
  SmTarget t;
  t.sm = profile.sm;
  t.ptx_isa = profile.ptx_isa;
  // "sm_90a": the variant is what follows the SM's digits in the name.
  std::string digits = "sm_" + std::to_string(profile.sm);
  if (profile.name.rfind(digits, 0) == 0) t.variant = profile.name.substr(digits.size());
  if (!t.variant.empty() && t.variant != "a" && t.variant != "f")
    throw CompileError("target profile '" + profile.name + "': unknown SM variant '" + t.variant +
                       "'");
  return t;
}

std::unique_ptr<llvm::Module> createGpuModule(const std::string& name, llvm::LLVMContext& context) {
  auto module = std::make_unique<llvm::Module>(name, context);
  llvm::Triple triple(kTriple);
  module->setTargetTriple(triple);
  // The data layout does not depend on the SM: any NVPTX machine gives it.
  std::unique_ptr<llvm::TargetMachine> tm(
      nvptxTarget().createTargetMachine(triple, "sm_75", "", llvm::TargetOptions(), std::nullopt));
  module->setDataLayout(tm->createDataLayout());
  return module;
}

std::unique_ptr<llvm::TargetMachine> createGpuTargetMachine(const SmTarget& target) {
  const llvm::Target& nvptx = nvptxTarget();
  std::string cpu = target.name();
  std::string features = target.ptx_isa ? "+ptx" + std::to_string(target.ptx_isa) : "";
  llvm::Triple triple(kTriple);
  std::unique_ptr<llvm::MCSubtargetInfo> sti(nvptx.createMCSubtargetInfo(triple, "", ""));
  if (!sti || !sti->isCPUStringValid(cpu))
    throw CompileError("LLVM's NVPTX target does not know " + cpu);
  bool known = features.empty();
  for (const llvm::SubtargetFeatureKV& kv : sti->getAllProcessorFeatures())
    known |= "+" + std::string(kv.Key) == features;
  if (!known)
    throw CompileError("LLVM's NVPTX target does not know PTX ISA " +
                       std::to_string(target.ptx_isa / 10) + "." +
                       std::to_string(target.ptx_isa % 10) + " (" + features + ")");
  if (target.ptx_isa && target.ptx_isa < minimumPtxIsa(target))
    throw CompileError(cpu + " needs PTX ISA " + std::to_string(minimumPtxIsa(target) / 10) + "." +
                       std::to_string(minimumPtxIsa(target) % 10) +
                       " or later, the target asks for " + std::to_string(target.ptx_isa / 10) +
                       "." + std::to_string(target.ptx_isa % 10));
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(
      nvptx.createTargetMachine(triple, cpu, features, options, std::nullopt, std::nullopt,
                                llvm::CodeGenOptLevel::Aggressive));
  if (!tm) throw CompileError("cannot create the NVPTX target machine for " + cpu);
  return tm;
}

SmTarget withModuleNeeds(const SmTarget& target, const llvm::Module& module) {
  SmTarget t = target;
  if (module.getFunction("llvm.nvvm.mma.m16n8k8.row.col.f32.f32") && t.ptx_isa < 65) t.ptx_isa = 65;
  return t;
}

std::string emitPtx(const llvm::Module& module, const SmTarget& target) {
  std::unique_ptr<llvm::TargetMachine> tm = createGpuTargetMachine(withModuleNeeds(target, module));
  std::unique_ptr<llvm::Module> m = llvm::CloneModule(module);
  m->setTargetTriple(tm->getTargetTriple());
  m->setDataLayout(tm->createDataLayout());
  std::string errors;
  llvm::raw_string_ostream err(errors);
  if (llvm::verifyModule(*m, &err))
    throw CompileError("GPU module '" + module.getName().str() + "' is invalid: " + errors);
  {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PassBuilder pb(tm.get());
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
    mpm.run(*m, mam);
  }
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream out(ptx);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, out, nullptr, llvm::CodeGenFileType::AssemblyFile))
    throw CompileError("the NVPTX target cannot emit PTX for " + target.name());
  pm.run(*m);
  return std::string(ptx);
}

std::string ptxasPath() {
  if (const char* env = std::getenv("NANOC_PTXAS"); env && *env) return env;
  std::string configured = NANOC_PTXAS_PATH;
  if (!configured.empty() && llvm::sys::fs::can_execute(configured)) return configured;
  if (auto found = llvm::sys::findProgramByName("ptxas")) return *found;
  return "";
}

PtxasResult assemblePtx(const std::string& ptx, const SmTarget& target,
                        const std::string& ptxas_path) {
  std::string ptxas = ptxas_path.empty() ? ptxasPath() : ptxas_path;
  if (ptxas.empty())
    throw CompileError("no ptxas found for " + target.name() +
                       ": install the CUDA toolkit, or set NANOC_PTXAS to its ptxas");
  TempDir dir;
  std::string in = dir.file("kernels.ptx"), out = dir.file("kernels.cubin"),
              log = dir.file("ptxas.log");
  {
    std::error_code ec;
    llvm::raw_fd_ostream f(in, ec);
    if (ec) throw CompileError("cannot write " + in + ": " + ec.message());
    f << ptx;
  }
  std::string arch = "-arch=" + target.name();
  std::vector<llvm::StringRef> args = {ptxas, arch, "--warn-on-spills", "-v", "-O3", in, "-o", out};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                                llvm::StringRef(log)};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects, 0, 0, &error);
  PtxasResult result;
  result.log = readFile(log);
  if (rc != 0)
    throw CompileError("ptxas (" + ptxas + ") refused the kernels for " + target.name() +
                       (error.empty() ? "" : " (" + error + ")") + ":\n" + result.log);
  // --warn-on-spills: "ptxas warning : Registers are spilled to local memory
  // in function 'k', 8 bytes spill stores, 8 bytes spill loads".
  std::istringstream lines(result.log);
  std::string line;
  PtxasKernelInfo* current = nullptr;
  static const std::regex function_re(R"(Function properties for (\S+))");
  static const std::regex compiling_re(R"(Compiling entry function '([^']+)')");
  static const std::regex used_re(R"(Used (\d+) registers)");
  static const std::regex smem_re(R"((\d+) bytes smem)");
  static const std::regex stack_re(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  std::smatch m;
  while (std::getline(lines, line)) {
    if (line.find("warning") != std::string::npos && line.find("spill") != std::string::npos)
      throw CompileError("ptxas spills registers for " + target.name() + ":\n" + result.log);
    if (std::regex_search(line, m, compiling_re)) {
      result.kernels.push_back(PtxasKernelInfo{m[1].str()});
      current = &result.kernels.back();
      continue;
    }
    if (!current) continue;
    if (std::regex_search(line, m, stack_re)) {
      current->stack_bytes = std::stoul(m[1].str());
      current->spill_bytes = std::stoul(m[2].str()) + std::stoul(m[3].str());
    }
    if (std::regex_search(line, m, used_re)) current->registers = std::stoul(m[1].str());
    if (std::regex_search(line, m, smem_re)) current->shared_bytes = std::stoul(m[1].str());
  }
  for (const PtxasKernelInfo& k : result.kernels)
    if (k.spill_bytes)
      throw CompileError("ptxas spills registers in " + k.name + " for " + target.name() + ":\n" +
                         result.log);
  std::string cubin = readFile(out);
  if (cubin.empty())
    throw CompileError("ptxas (" + ptxas + ") wrote no cubin for " + target.name() + ":\n" +
                       result.log);
  result.cubin.assign(cubin.begin(), cubin.end());
  return result;
}

std::vector<uint8_t> runPtxas(const std::string& ptx, const SmTarget& target,
                              const std::string& ptxas_path) {
  return assemblePtx(ptx, target, ptxas_path).cubin;
}

}  // namespace nanoc::gpu
