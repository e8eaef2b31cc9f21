#include "compiler/codegen/cpu/target_profiles.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/JSON.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/ir/error.h"

namespace nanoc::cpu {
namespace {

std::string readText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) throw CompileError(path.string() + ": cannot read");
  return ss.str();
}

TargetProfile parseProfile(const std::filesystem::path& path) {
  std::string file = path.string();
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(readText(path));
  if (!parsed) throw CompileError(file + ": not JSON: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object* obj = parsed->getAsObject();
  if (!obj) throw CompileError(file + ": not a JSON object");
  auto str = [&](const llvm::json::Object& o, const char* key) {
    std::optional<llvm::StringRef> v = o.getString(key);
    if (!v) throw CompileError(file + ": '" + key + "' must be a string");
    return v->str();
  };
  auto integer = [&](const llvm::json::Object& o, const char* key) {
    std::optional<int64_t> v = o.getInteger(key);
    if (!v || *v < 0) throw CompileError(file + ": '" + key + "' must be an integer >= 0");
    return *v;
  };
  TargetProfile p;
  p.file = file;
  p.name = str(*obj, "name");
  p.kind = str(*obj, "kind");
  p.description = str(*obj, "description");
  if (p.name != path.stem().string())
    throw CompileError(file + ": name '" + p.name + "' differs from the file name");
  if (p.kind == "cpu") {
    p.triple = str(*obj, "triple");
    p.cpu = str(*obj, "cpu");
    p.vector_bits = static_cast<uint32_t>(integer(*obj, "vector_bits"));
    const llvm::json::Array* features = obj->getArray("features");
    if (!features) throw CompileError(file + ": 'features' must be a list of strings");
    for (const llvm::json::Value& f : *features) {
      std::optional<llvm::StringRef> s = f.getAsString();
      if (!s) throw CompileError(file + ": 'features' must be a list of strings");
      p.features.push_back(s->str());
    }
    const llvm::json::Object* cache = obj->getObject("cache");
    if (!cache) throw CompileError(file + ": 'cache' must be an object {l1d, l2}");
    p.cache.l1d = static_cast<uint64_t>(integer(*cache, "l1d"));
    p.cache.l2 = static_cast<uint64_t>(integer(*cache, "l2"));
    if (const llvm::json::Value* memory = obj->get("memory")) {
      const llvm::json::Object* m = memory->getAsObject();
      if (!m) throw CompileError(file + ": 'memory' must be an object {flash, ram}");
      p.flash_bytes = static_cast<uint64_t>(integer(*m, "flash"));
      p.ram_bytes = static_cast<uint64_t>(integer(*m, "ram"));
    }
  } else if (p.kind == "gpu") {
    p.sm = static_cast<uint32_t>(integer(*obj, "sm"));
    p.ptx_isa = static_cast<uint32_t>(integer(*obj, "ptx_isa"));
    const llvm::json::Object* host = obj->getObject("host");
    if (!host) throw CompileError(file + ": 'host' must be an object {triple, cpu}");
    p.triple = str(*host, "triple");
    p.cpu = str(*host, "cpu");
    const llvm::json::Object* limits = obj->getObject("limits");
    if (!limits) throw CompileError(file + ": 'limits' must be an object");
    for (const auto& [key, value] : *limits) {
      std::optional<int64_t> v = value.getAsInteger();
      if (!v) throw CompileError(file + ": limit '" + key.str() + "' must be an integer");
      p.limits[key.str()] = *v;
    }
  } else {
    throw CompileError(file + ": 'kind' must be \"cpu\" or \"gpu\", not '" + p.kind + "'");
  }
  return p;
}

}  // namespace

std::string defaultTargetsDir() {
  if (const char* dir = std::getenv("NANOC_TARGETS_DIR"); dir && *dir) return dir;
  // Beside the executable: PREFIX/bin/nanoc reads PREFIX/share/nanort/targets,
  // and the build tree's compiler/nanoc the copy in build/share (CMake makes
  // it). The address of this function locates the executable where argv[0]
  // cannot.
  static int anchor;
  std::string exe = llvm::sys::fs::getMainExecutable(nullptr, &anchor);
  if (exe.empty()) return "share/nanort/targets";
  return (std::filesystem::path(exe).parent_path().parent_path() / "share" / "nanort" / "targets")
      .string();
}

std::vector<TargetProfile> loadTargetProfiles(const std::string& dir) {
  std::vector<TargetProfile> profiles;
  for (const char* sub : {"cpu", "gpu"}) {
    std::filesystem::path folder = std::filesystem::path(dir) / sub;
    std::error_code ec;
    if (!std::filesystem::is_directory(folder, ec))
      throw CompileError("target profiles: " + folder.string() + " is not a directory");
    for (const auto& entry : std::filesystem::directory_iterator(folder, ec))
      if (entry.path().extension() == ".json") profiles.push_back(parseProfile(entry.path()));
  }
  std::sort(profiles.begin(), profiles.end(),
            [](const TargetProfile& a, const TargetProfile& b) { return a.name < b.name; });
  for (size_t i = 1; i < profiles.size(); ++i)
    if (profiles[i].name == profiles[i - 1].name)
      throw CompileError("target profiles: '" + profiles[i].name + "' is defined twice");
  return profiles;
}

CpuTarget cpuTargetOf(const TargetProfile& profile) {
  std::string features;
  for (const std::string& f : profile.features) features += (features.empty() ? "" : ",") + f;
  try {
    CpuTarget target = makeTarget(profile.triple, profile.cpu, features);
    target.vector_bits = profile.vector_bits;
    if (profile.kind == "cpu") target.cache = profile.cache;
    return target;
  } catch (const CompileError& e) {
    throw CompileError(profile.file + ": " + e.what());
  }
}

void checkModelFits(const TargetProfile& profile, uint64_t read_only_bytes, uint64_t arena_bytes) {
  std::string why;
  if (profile.flash_bytes != 0 && read_only_bytes > profile.flash_bytes)
    why = "its constants and program take " + std::to_string(read_only_bytes) +
          " bytes of read-only memory, the profile's flash is " +
          std::to_string(profile.flash_bytes);
  if (profile.ram_bytes != 0 && arena_bytes > profile.ram_bytes)
    why += (why.empty() ? "" : "; ") + std::string("its arena takes ") +
           std::to_string(arena_bytes) + " bytes, the profile's RAM is " +
           std::to_string(profile.ram_bytes);
  if (!why.empty())
    throw CompileError("the model does not fit --target " + profile.name + " (" + profile.file +
                       "): " + why +
                       " bytes; use a smaller model, or --no-memory-check to compile it anyway "
                       "for a board with more memory");
}

}  // namespace nanoc::cpu
