#include "compiler/codegen/cpu/target.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Pass.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <fstream>
#include <mutex>
#include <set>
#include <unordered_set>

#include "compiler/codegen/cpu/inline_libcalls.h"
#include "compiler/ir/error.h"

// The targets nanoc compiles for. Only these are initialized: registering all
// of LLVM's targets costs start-up time for nothing.
#define NANOC_FOR_EACH_TARGET(X) X(X86) X(AArch64) X(RISCV) X(ARM) X(NVPTX)
#define NANOC_DECLARE_TARGET(T)                    \
  extern "C" void LLVMInitialize##T##TargetInfo(); \
  extern "C" void LLVMInitialize##T##Target();     \
  extern "C" void LLVMInitialize##T##TargetMC();   \
  extern "C" void LLVMInitialize##T##AsmPrinter();
NANOC_FOR_EACH_TARGET(NANOC_DECLARE_TARGET)
#undef NANOC_DECLARE_TARGET

namespace nanoc::cpu {
namespace {

void initializeTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
#define NANOC_INIT_TARGET(T)       \
  LLVMInitialize##T##TargetInfo(); \
  LLVMInitialize##T##Target();     \
  LLVMInitialize##T##TargetMC();   \
  LLVMInitialize##T##AsmPrinter();
    NANOC_FOR_EACH_TARGET(NANOC_INIT_TARGET)
#undef NANOC_INIT_TARGET
  });
}

const llvm::Target& lookupTarget(const std::string& triple) {
  initializeTargets();
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(llvm::Triple(triple), error);
  if (!target)
    throw CompileError("unknown or unsupported target triple '" + triple +
                       "' (nanoc supports x86_64, aarch64, riscv64, arm and nvptx): " + error);
  return *target;
}

// Subtarget info for the triple with no CPU or features: the catalogue of the
// CPU names and feature names that LLVM knows for it.
std::unique_ptr<llvm::MCSubtargetInfo> subtargetCatalogue(const llvm::Target& target,
                                                          const std::string& triple) {
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target.createMCSubtargetInfo(llvm::Triple(triple), "", ""));
  if (!info) throw CompileError("target '" + triple + "' has no subtarget information");
  return info;
}

std::string joinKeys(auto range) {
  std::string out;
  for (const auto& kv : range) {
    if (!out.empty()) out += ", ";
    out += kv.Key;
  }
  return out;
}

std::string dataLayoutOf(const CpuTarget& target) {
  return createTargetMachine(target)->createDataLayout().getStringRepresentation();
}

// Every feature that `cpu` with `features` ("+a,-b") has, implied ones
// included, as LLVM's subtarget resolves them: what the code may use, and so
// what the program must record for the runtime to check.
std::vector<std::string> resolveFeatures(const llvm::Target& target, const std::string& triple,
                                         const std::string& cpu, const std::string& features) {
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target.createMCSubtargetInfo(llvm::Triple(triple), cpu, features));
  if (!info) throw CompileError("target '" + triple + "' has no subtarget information");
  std::set<std::string> enabled;
  for (const auto& kv : info->getAllProcessorFeatures())
    if (info->getFeatureBits().test(kv.Value)) enabled.insert(kv.Key);
  return {enabled.begin(), enabled.end()};
}

// CPU 0's data and unified caches as Linux lists them (index*/level, type,
// size such as "48K"); none when sysfs has no level 1 data cache.
std::optional<CpuTarget::CacheSizes> hostCacheSizes() {
  CpuTarget::CacheSizes sizes;
  for (int i = 0; i < 8; ++i) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level_in(dir + "level"), type_in(dir + "type"), size_in(dir + "size");
    int level = 0;
    std::string type, size;
    if (!(level_in >> level) || !(type_in >> type) || !(size_in >> size)) break;
    if (type != "Data" && type != "Unified") continue;
    uint64_t bytes = 0;
    size_t at = 0;
    while (at < size.size() && size[at] >= '0' && size[at] <= '9')
      bytes = bytes * 10 + static_cast<uint64_t>(size[at++] - '0');
    if (at < size.size()) bytes <<= size[at] == 'K' ? 10 : size[at] == 'M' ? 20 : 0;
    if (level == 1) sizes.l1d = bytes;
    if (level == 2) sizes.l2 = bytes;
  }
  if (sizes.l1d == 0) return std::nullopt;
  return sizes;
}

}  // namespace

std::string CpuTarget::featureString() const {
  std::string out;
  for (const std::string& f : features) {
    if (!out.empty()) out += ',';
    out += '+';
    out += f;
  }
  return out;
}

CpuTarget hostTarget() {
  initializeTargets();
  CpuTarget target;
  target.triple = llvm::Triple::normalize(llvm::sys::getProcessTriple());
  target.cpu = llvm::sys::getHostCPUName().str();
  if (target.cpu.empty()) target.cpu = "generic";
  const llvm::Target& llvm_target = lookupTarget(target.triple);
  auto catalogue = subtargetCatalogue(llvm_target, target.triple);
  if (!catalogue->isCPUStringValid(target.cpu)) target.cpu = "generic";
  // The host reports features that this LLVM may not know (newer CPUs than the
  // compiler); only those LLVM can name go into the program's target record.
  std::set<std::string> known;
  for (const auto& kv : catalogue->getAllProcessorFeatures()) known.insert(kv.Key);
  std::string host_features;
  for (const auto& entry : llvm::sys::getHostCPUFeatures())
    if (known.count(entry.getKey().str()))
      host_features += (host_features.empty() ? "" : ",") +
                       std::string(entry.getValue() ? "+" : "-") + entry.getKey().str();
  target.features = resolveFeatures(llvm_target, target.triple, target.cpu, host_features);
  target.data_layout = dataLayoutOf(target);
  target.cache = hostCacheSizes();
  return target;
}

CpuTarget::CacheSizes cacheSizes(const llvm::Function& fn) {
  auto bytes = [&](const char* name, uint64_t fallback) {
    uint64_t v = 0;
    if (!fn.hasFnAttribute(name) || fn.getFnAttribute(name).getValueAsString().getAsInteger(10, v))
      return fallback;
    return v;
  };
  return {bytes(kL1DataCacheAttribute, kDefaultCacheSizes.l1d),
          bytes(kL2CacheAttribute, kDefaultCacheSizes.l2)};
}

CpuTarget makeTarget(const std::string& triple, const std::string& cpu,
                     const std::string& features) {
  if (triple.empty()) throw CompileError("empty target triple");
  CpuTarget target;
  target.triple = llvm::Triple::normalize(triple);
  target.cpu = cpu.empty() ? "generic" : cpu;
  const llvm::Target& llvm_target = lookupTarget(target.triple);
  auto catalogue = subtargetCatalogue(llvm_target, target.triple);
  if (!catalogue->isCPUStringValid(target.cpu))
    throw CompileError("unknown CPU '" + target.cpu + "' for target '" + target.triple +
                       "'; valid CPUs: " + joinKeys(catalogue->getAllProcessorDescriptions()));

  auto all = catalogue->getAllProcessorFeatures();
  auto isKnown = [&](llvm::StringRef name) {
    return std::any_of(all.begin(), all.end(),
                       [&](const llvm::SubtargetFeatureKV& kv) { return name == kv.Key; });
  };
  std::string explicit_features;
  llvm::SmallVector<llvm::StringRef, 16> items;
  llvm::StringRef(features).split(items, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef item : items) {
    item = item.trim();
    if (item.empty()) continue;
    bool enable = true;
    if (item.front() == '+' || item.front() == '-') {
      enable = item.front() == '+';
      item = item.drop_front();
    }
    if (item.empty() || !isKnown(item))
      throw CompileError("unknown CPU feature '" + item.str() + "' for target '" + target.triple +
                         "'; valid features: " + joinKeys(all));
    explicit_features +=
        (explicit_features.empty() ? "" : ",") + std::string(enable ? "+" : "-") + item.str();
  }
  target.features = resolveFeatures(llvm_target, target.triple, target.cpu, explicit_features);
  target.data_layout = dataLayoutOf(target);
  return target;
}

std::string exactFeatureString(const CpuTarget& target) {
  const llvm::Target& llvm_target = lookupTarget(target.triple);
  std::set<std::string> on(target.features.begin(), target.features.end());
  std::string features = target.featureString();
  for (const auto& kv : subtargetCatalogue(llvm_target, target.triple)->getAllProcessorFeatures())
    if (!on.count(kv.Key)) features += std::string(features.empty() ? "" : ",") + "-" + kv.Key;
  return features;
}

std::unique_ptr<llvm::TargetMachine> createTargetMachine(const CpuTarget& target) {
  const llvm::Target& llvm_target = lookupTarget(target.triple);
  std::string features = exactFeatureString(target);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(llvm_target.createTargetMachine(
      llvm::Triple(target.triple), target.cpu, features, options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    throw CompileError("LLVM could not create a target machine for '" + target.triple + "' (" +
                       target.cpu + ")");
  return machine;
}

namespace {

// Kernels are built before the module knows its target; stamp it here so the
// optimizer's cost model and the code generator agree on the machine.
void bindModule(llvm::Module& module, llvm::TargetMachine& machine) {
  if (module.getTargetTriple().str().empty()) module.setTargetTriple(machine.getTargetTriple());
  if (module.getDataLayout().isDefault()) module.setDataLayout(machine.createDataLayout());
}

size_t definedFunctions(const llvm::Module& module) {
  size_t count = 0;
  for (const llvm::Function& f : module)
    if (!f.isDeclaration()) ++count;
  return count;
}

// Scheduled after the code generator's passes, so it runs as each function
// has been printed; changes nothing.
class CountPrintedFunctions : public llvm::FunctionPass {
 public:
  static char ID;
  CountPrintedFunctions(const FunctionProgress& progress, size_t total)
      : llvm::FunctionPass(ID), progress_(progress), total_(total) {}
  bool runOnFunction(llvm::Function&) override {
    progress_(std::min(++done_, total_), total_);
    return false;
  }
  void getAnalysisUsage(llvm::AnalysisUsage& usage) const override { usage.setPreservesAll(); }
  llvm::StringRef getPassName() const override { return "nanoc progress"; }

 private:
  const FunctionProgress& progress_;
  size_t total_, done_ = 0;
};
char CountPrintedFunctions::ID = 0;

std::vector<uint8_t> emitFile(llvm::Module& module, llvm::TargetMachine& machine,
                              llvm::CodeGenFileType type, const FunctionProgress& progress) {
  bindModule(module, machine);
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream stream(buffer);
  llvm::legacy::PassManager passes;
  if (machine.addPassesToEmitFile(passes, stream, nullptr, type))
    throw CompileError("LLVM cannot emit this file type for '" + machine.getTargetTriple().str() +
                       "'");
  const size_t total = definedFunctions(module);
  if (progress) {
    progress(0, total);
    passes.add(new CountPrintedFunctions(progress, total));  // the pass manager owns it
  }
  passes.run(module);
  if (progress) progress(total, total);
  return std::vector<uint8_t>(buffer.begin(), buffer.end());
}

}  // namespace

void optimizeModule(llvm::Module& module, llvm::TargetMachine& machine,
                    const FunctionProgress& progress) {
  bindModule(module, machine);
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  tuning.LoopUnrolling = true;
  // Progress from the passes that run once a function in each of O3's two
  // halves (about half the time each): GVN in the CGSCC simplification
  // pipeline, the loop vectorizer in the optimization pipeline.
  const size_t total = 2 * definedFunctions(module);
  std::unordered_set<const llvm::Function*> simplified, vectorized;
  llvm::PassInstrumentationCallbacks instrumentation;
  if (progress) {
    progress(0, total);
    instrumentation.registerAfterPassCallback(
        [&](llvm::StringRef pass, llvm::Any ir, const llvm::PreservedAnalyses&) {
          const llvm::Function* const* f = llvm::any_cast<const llvm::Function*>(&ir);
          if (!f) return;
          bool counted = pass == "GVNPass"             ? simplified.insert(*f).second
                         : pass == "LoopVectorizePass" ? vectorized.insert(*f).second
                                                       : false;
          if (counted) progress(std::min(simplified.size() + vectorized.size(), total), total);
        });
  }
  llvm::PassBuilder builder(&machine, tuning, std::nullopt, progress ? &instrumentation : nullptr);
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager passes =
      builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  passes.run(module, mam);
  // Last, so that nothing the pipeline forms is left to become a libm call.
  inlineLibcallIntrinsics(module, machine);
  if (progress) progress(total, total);
}

std::vector<uint8_t> emitObject(llvm::Module& module, llvm::TargetMachine& machine,
                                const FunctionProgress& progress) {
  return emitFile(module, machine, llvm::CodeGenFileType::ObjectFile, progress);
}

std::string emitAssembly(llvm::Module& module, llvm::TargetMachine& machine,
                         const FunctionProgress& progress) {
  std::vector<uint8_t> text =
      emitFile(module, machine, llvm::CodeGenFileType::AssemblyFile, progress);
  return std::string(text.begin(), text.end());
}

}  // namespace nanoc::cpu
