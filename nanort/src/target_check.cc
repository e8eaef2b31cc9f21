#include "target_check.h"

#include <inttypes.h>
#include <string.h>

#include "bytes.h"
#include "cpu_features.h"
#include "program_verifier.h"
#include "status.h"

namespace nanort {
namespace {

// Whether the architecture component of `triple` ("x86_64-unknown-linux-gnu"
// -> "x86_64") names the architecture this runtime runs on, taking the
// aliases LLVM accepts (amd64, arm64) into account.
bool TripleRunsOn(const char* triple, const char* host) {
  size_t length = 0;
  while (triple[length] != '\0' && triple[length] != '-') ++length;
  if (length == 5 && BytesEqual(triple, "amd64", 5)) triple = "x86_64", length = 6;
  if (length == 5 && BytesEqual(triple, "arm64", 5)) triple = "aarch64", length = 7;
  // Stops at host's end: triple[i] is never NUL for i < length.
  for (size_t i = 0; i < length; ++i) {
    if (host[i] != triple[i]) return false;
  }
  return host[length] == '\0';
}

// Appends `text` (length `length`) to out[*used..cap), keeping room for the
// terminator; returns false once it no longer fits.
bool Append(char* out, size_t cap, size_t* used, const char* text, size_t length) {
  if (*used + length + 1 > cap) return false;
  memcpy(out + *used, text, length);
  *used += length;
  out[*used] = '\0';
  return true;
}

}  // namespace

nanort_status_code CheckTargetRunsHere(const fb::Target* target, nanort_status* status) {
  NANORT_CHECK_OR_RETURN(target != nullptr, status, NANORT_INVALID_PROGRAM,
                         "program has no target record");
  // Without GPU offload this also refuses a format 1.3 program's GPU part
  // (program_verifier.cc passes its gpu_target): UNAVAILABLE, as a facility
  // this build lacks. With it, only a program whose host target is a GPU
  // gets here, which no runtime can run.
  NANORT_CHECK_OR_RETURN(
      target->device() != fb::DeviceKind::CudaGpu, status,
      kWithCuda ? NANORT_UNSUPPORTED_TARGET : NANORT_UNAVAILABLE,
      "GPU programs are not supported by this build (program is for sm_%" PRIu32 ")", target->sm());
  NANORT_CHECK_OR_RETURN(target->device() == fb::DeviceKind::Cpu, status, NANORT_UNSUPPORTED_TARGET,
                         "program is for unknown device kind %" PRIu32,
                         static_cast<uint32_t>(target->device()));
  NANORT_CHECK_OR_RETURN(target->triple() != nullptr && target->triple()->size() != 0, status,
                         NANORT_INVALID_PROGRAM, "program's target record has no triple");
  const char* triple = target->triple()->c_str();
  NANORT_CHECK_OR_RETURN(TripleRunsOn(triple, HostArchitecture()), status,
                         NANORT_UNSUPPORTED_TARGET, "program is for %s, this CPU is %s", triple,
                         HostArchitecture());

  const auto* features = target->features();
  if (features == nullptr || features->size() == 0) return NANORT_OK;
  const HostCpuFeatures host = HostCpuFeatures::Detect();

  // Build "needs a, b, c" and "lacks x, y" side by side; the missing list
  // matters most, so the message keeps all of it and shortens the other.
  char needs[NANORT_STATUS_MESSAGE_SIZE] = "";
  char lacks[NANORT_STATUS_MESSAGE_SIZE] = "";
  size_t needs_used = 0, lacks_used = 0;
  bool needs_truncated = false, lacks_truncated = false, any_missing = false;
  bool needs_amx = false;
  for (flatbuffers::uoffset_t i = 0; i < features->size(); ++i) {
    const flatbuffers::String* feature = features->Get(i);
    const char* name = feature->c_str();
    size_t length = feature->size();
    if (length != 0 && name[0] == '-') continue;  // a disabled feature needs nothing
    if (length != 0 && name[0] == '+') ++name, --length;
    const CpuFeature present = host.Lookup(name, length);
    if (present == CpuFeature::kUnknown) continue;
    if (length > 4 && BytesEqual(name, "amx-", 4)) needs_amx = true;
    const char* separator = needs_used == 0 ? "" : ", ";
    if (kFullMessages && !needs_truncated &&
        !(Append(needs, sizeof(needs), &needs_used, separator, strlen(separator)) &&
          Append(needs, sizeof(needs), &needs_used, name, length))) {
      needs_truncated = true;
    }
    if (present == CpuFeature::kAbsent) {
      separator = lacks_used == 0 ? "" : ", ";
      any_missing = true;
      if (kFullMessages && !lacks_truncated &&
          !(Append(lacks, sizeof(lacks), &lacks_used, separator, strlen(separator)) &&
            Append(lacks, sizeof(lacks), &lacks_used, name, length))) {
        lacks_truncated = true;
      }
    }
  }
  if (any_missing) {
    // Leave the missing list whole; cut the needs list to what remains.
    const int budget = NANORT_STATUS_MESSAGE_SIZE - 1 -
                       static_cast<int>(__builtin_strlen("program needs ; this CPU lacks: ...")) -
                       static_cast<int>(lacks_used) - 3;
    int needs_shown = static_cast<int>(needs_used);
    if (needs_shown > budget) needs_shown = budget > 0 ? budget : 0, needs_truncated = true;
    return NANORT_FAIL(status, NANORT_UNSUPPORTED_TARGET,
                       "program needs %.*s%s; this CPU lacks: %s%s", needs_shown, needs,
                       needs_truncated ? "..." : "", lacks, lacks_truncated ? "..." : "");
  }
  NANORT_CHECK_OR_RETURN(!needs_amx || RequestAmxTileState(), status, NANORT_UNSUPPORTED_TARGET,
                         "program needs AMX, and the kernel refused this process AMX tile state");
  return NANORT_OK;
}

}  // namespace nanort
