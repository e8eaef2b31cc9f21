// Named targets: the data files of targets/ (one JSON object per file), read
// by `nanoc --target NAME` and listed by `nanoc --list-targets`.
//
//   targets/cpu/NAME.json  {"name", "kind": "cpu", "description", "triple", "cpu",
//                           "features": ["+f", ...], "vector_bits",
//                           "cache": {"l1d", "l2"},
//                           "memory": {"flash", "ram"} (bare metal, optional)}
//   targets/gpu/NAME.json  {"name", "kind": "gpu", "description", "sm", "ptx_isa",
//                           "host": {"triple", "cpu"}, "limits": {...}}
//
// vector_bits is the vector width the kernels should prefer (0: the CPU's own
// choice, e.g. for scalable vectors); LLVM prefers 256-bit vectors on the
// AVX-512 CPUs unless told otherwise. cache is the per-core level 1 data
// and level 2 cache in bytes (0: no such cache), which sizes the GEMM's
// cache blocks.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/codegen/cpu/target.h"

namespace nanoc::cpu {

struct TargetProfile {
  std::string name, kind, description, file;
  // CPU profiles; for a GPU profile, its host CPU.
  std::string triple, cpu;
  std::vector<std::string> features;
  uint32_t vector_bits = 0;
  CpuTarget::CacheSizes cache;
  // A bare-metal profile's memory in bytes (0: not given): nanoc refuses a
  // model whose constants and program exceed the flash, or whose arena
  // exceeds the RAM (checkModelFits).
  uint64_t flash_bytes = 0, ram_bytes = 0;
  // GPU profiles.
  uint32_t sm = 0, ptx_isa = 0;
  std::map<std::string, int64_t> limits;
};

// $NANOC_TARGETS_DIR when set, else ../share/nanort/targets beside the
// running executable (installed: PREFIX/share/nanort/targets; the build tree
// has a copy of targets/ at build/share/nanort/targets).
std::string defaultTargetsDir();

// Every profile under `dir` (cpu/ and gpu/), sorted by name. Throws
// CompileError naming the file and field for a malformed one.
std::vector<TargetProfile> loadTargetProfiles(const std::string& dir);

// The CPU target of a CPU profile, validated against LLVM like
// --triple/--cpu/--features (the features sorted, implied ones included).
CpuTarget cpuTargetOf(const TargetProfile& profile);

// Throws CompileError naming the sizes, the profile and its file when a model
// of `read_only_bytes` (constants + program) or `arena_bytes` cannot fit the
// profile's flash or RAM. A profile without memory sizes fits anything.
void checkModelFits(const TargetProfile& profile, uint64_t read_only_bytes, uint64_t arena_bytes);

}  // namespace nanoc::cpu
