// The platform layer for builds without an operating system
// (NANORT_PLATFORM=none): bare-metal firmware, where nothing can be asked of an
// OS and the firmware is built for one board.
//
// - Allocation: there is no heap nanort may assume, so the system allocator
//   fails every request; callers pass their own allocator (or a bump
//   allocator over a static buffer) and, usually, their own arena.
// - Dynamic loading: none; nanort_model_load_file returns NANORT_UNAVAILABLE.
// - CPU check: the architecture is the one this runtime was compiled for
//   (compile-time macros), so a program for another architecture is still
//   refused. Features cannot be read from the OS, and on Cortex-M reading the
//   CPUID/MVFR registers would still not say which board variant this is, so
//   the features are those the build's -mcpu/-mfpu flags imply (the ACLE
//   macros): a model compiled for a Cortex-M7 with a double-precision FPU,
//   linked into firmware built for a Cortex-M4, is refused by name. On other
//   architectures without an OS, or for features the macros do not cover,
//   the program's target record is trusted.

#include "cpu_features.h"
#include "model.h"
#include "status.h"

namespace nanort {
namespace {

void* NoAlloc(void* /*self*/, size_t /*size*/, size_t /*alignment*/) { return nullptr; }

// Only pointers NoAlloc returned may be passed here, and it returns none.
void NoFree(void* /*self*/, void* /*ptr*/) {}

#if defined(__x86_64__)
const char* const kHostArchitecture = "x86_64";
#elif defined(__aarch64__)
const char* const kHostArchitecture = "aarch64";
#elif defined(__riscv) && __riscv_xlen == 64
const char* const kHostArchitecture = "riscv64";
#elif defined(__riscv) && __riscv_xlen == 32
const char* const kHostArchitecture = "riscv32";
#elif defined(__ARM_ARCH_6M__)
const char* const kHostArchitecture = "thumbv6m";
#elif defined(__ARM_ARCH_7M__)
const char* const kHostArchitecture = "thumbv7m";
#elif defined(__ARM_ARCH_7EM__)
const char* const kHostArchitecture = "thumbv7em";
#elif defined(__ARM_ARCH_8M_BASE__)
const char* const kHostArchitecture = "thumbv8m.base";
#elif defined(__ARM_ARCH_8M_MAIN__)
const char* const kHostArchitecture = "thumbv8m.main";
#elif defined(__ARM_ARCH_8_1M_MAIN__)
const char* const kHostArchitecture = "thumbv8.1m.main";
#else
const char* const kHostArchitecture = "unknown";
#endif

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'

#if defined(__ARM_FP)
constexpr bool kFp = true;
constexpr bool kFpHalf = (__ARM_FP & 2) != 0;
// On M-profile only FPv5 has double precision, and FPv5 is Armv8's FP.
constexpr bool kFpDouble = (__ARM_FP & 8) != 0;
#else
constexpr bool kFp = false;
constexpr bool kFpHalf = false;
constexpr bool kFpDouble = false;
#endif
#if defined(__ARM_FEATURE_FMA)
constexpr bool kFma = kFp;
#else
constexpr bool kFma = false;
#endif
#if defined(__ARM_FEATURE_DSP)
constexpr bool kDsp = true;
#else
constexpr bool kDsp = false;
#endif
#if defined(__ARM_FEATURE_IDIV)
constexpr bool kHwdiv = true;
#else
constexpr bool kHwdiv = false;
#endif
#if defined(__ARM_FEATURE_MVE)
constexpr bool kMve = (__ARM_FEATURE_MVE & 1) != 0;
constexpr bool kMveFp = (__ARM_FEATURE_MVE & 2) != 0;
#else
constexpr bool kMve = false;
constexpr bool kMveFp = false;
#endif
#if defined(__ARM_FEATURE_FP16_SCALAR_ARITHMETIC)
constexpr bool kFullFp16 = true;
#else
constexpr bool kFullFp16 = false;
#endif
constexpr bool kFpArmv8 = kFp && (kFpDouble || __ARM_ARCH >= 8);

// LLVM's names for the M-profile instruction-set features (ARMFeatures.td),
// NUL-terminated one after another, and which are present, bit i for name i.
// Every M-profile FPU that has FMA (FPv4-SP and later) implements VFPv3-D16's
// single-precision subset too.
constexpr char kFeatureNames[] =
    "fpregs\0"
    "vfp2sp\0"
    "vfp3d16sp\0"
    "vfp4d16sp\0"
    "fp-armv8d16sp\0"
    "fp64\0"
    "vfp2\0"
    "vfp3d16\0"
    "vfp4d16\0"
    "fp-armv8d16\0"
    "fp16\0"
    "fullfp16\0"
    "dsp\0"
    "hwdiv\0"
    "mve\0"
    "mve.fp\0";
constexpr bool kPresent[] = {kFp, kFp, kFma, kFma, kFpArmv8, kFpDouble, kFpDouble, kFpDouble,
                             kFpDouble&& kFma, kFpDouble&& kFpArmv8,
                             // VFPv4 and later always include the half-precision conversions; GCC
                             // sets __ARM_FP's half bit only with -mfp16-format.
                             kFpHalf || kFma, kFullFp16, kDsp, kHwdiv, kMve, kMveFp};
constexpr size_t kFeatureCount = sizeof(kPresent) / sizeof(kPresent[0]);

constexpr uint64_t PresentBits() {
  uint64_t bits = 0;
  for (size_t i = 0; i < kFeatureCount; ++i) bits |= uint64_t{kPresent[i]} << i;
  return bits;
}

static_assert(CountPackedNames(kFeatureNames, sizeof(kFeatureNames)) == kFeatureCount,
              "names and bits differ");

#else

// No table: every feature is unknown, so the target record is trusted.
constexpr char kFeatureNames[] = "";
constexpr size_t kFeatureCount = 0;
constexpr uint64_t PresentBits() { return 0; }

#endif

static_assert(kFeatureCount <= 64, "one word of feature bits");

}  // namespace

const char* HostArchitecture() { return kHostArchitecture; }

HostCpuFeatures HostCpuFeatures::Detect() {
  HostCpuFeatures features;
  features.names_ = kFeatureNames;
  features.count_ = kFeatureCount;
  features.bits_[0] = PresentBits();
  return features;
}

bool RequestAmxTileState() { return true; }

}  // namespace nanort

extern "C" nanort_allocator nanort_allocator_system(void) {
  nanort_allocator allocator;
  allocator.self = nullptr;
  allocator.alloc = &nanort::NoAlloc;
  allocator.free = &nanort::NoFree;
  return allocator;
}

extern "C" nanort_status_code nanort_model_load_file(const char* path, const char* /*name*/,
                                                     nanort_allocator /*allocator*/,
                                                     nanort_model** out_model,
                                                     nanort_status* status) {
  NANORT_CHECK_OR_RETURN(out_model != nullptr, status, NANORT_INVALID_ARGUMENT,
                         "out_model is NULL");
  *out_model = nullptr;
  return NANORT_FAIL(status, NANORT_UNAVAILABLE,
                     "cannot load '%s': this nanort was built without an operating system "
                     "(NANORT_PLATFORM=none); link NAME.o and call nanort_model_load",
                     path != nullptr ? path : "(null)");
}
