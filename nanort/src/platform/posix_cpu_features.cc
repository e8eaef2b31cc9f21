// The posix platform's CPU half: reads the running CPU through the
// instructions and system calls an OS allows (cpuid/xgetbv, getauxval,
// arch_prctl).

#include "cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#elif defined(__linux__) && (defined(__aarch64__) || (defined(__riscv) && __riscv_xlen == 64))
#include <sys/auxv.h>
#endif

namespace nanort {
namespace {

// Each architecture's feature names are a packed name table (bytes.h) in its
// enum's order: no table of pointers (0.4 KB on x86-64) to store.

#if defined(__x86_64__)

// Index of each name in kFeatureNames; the detection code below sets these bits.
enum X86Feature {
  kX87,
  kCmov,
  kCx8,
  kCx16,
  kMmx,
  kFxsr,
  kSahf,
  k64Bit,
  kSse,
  kSse2,
  kSse3,
  kSsse3,
  kSse41,
  kSse42,
  kCrc32,
  kPopcnt,
  kPclmul,
  kAes,
  kMovbe,
  kXsave,
  kXsaveopt,
  kRdrnd,
  kRdseed,
  kLzcnt,
  kPrfchw,
  kBmi,
  kBmi2,
  kAdx,
  kSha,
  kAvx,
  kAvx2,
  kFma,
  kF16c,
  kVaes,
  kVpclmulqdq,
  kGfni,
  kAvxVnni,
  kAvx512F,
  kAvx512Bw,
  kAvx512Cd,
  kAvx512Dq,
  kAvx512Vl,
  kAvx512Vnni,
  kAvx512Bf16,
  kAvx512Fp16,
  kAvx512Ifma,
  kAvx512Vbmi,
  kAvx512Vbmi2,
  kAvx512Bitalg,
  kAvx512Vpopcntdq,
  kAvx512Vp2intersect,
  kAmxTile,
  kAmxInt8,
  kAmxBf16,
  kFeatureCount
};

constexpr char kFeatureNames[] =
    "x87\0"
    "cmov\0"
    "cx8\0"
    "cx16\0"
    "mmx\0"
    "fxsr\0"
    "sahf\0"
    "64bit\0"
    "sse\0"
    "sse2\0"
    "sse3\0"
    "ssse3\0"
    "sse4.1\0"
    "sse4.2\0"
    "crc32\0"
    "popcnt\0"
    "pclmul\0"
    "aes\0"
    "movbe\0"
    "xsave\0"
    "xsaveopt\0"
    "rdrnd\0"
    "rdseed\0"
    "lzcnt\0"
    "prfchw\0"
    "bmi\0"
    "bmi2\0"
    "adx\0"
    "sha\0"
    "avx\0"
    "avx2\0"
    "fma\0"
    "f16c\0"
    "vaes\0"
    "vpclmulqdq\0"
    "gfni\0"
    "avxvnni\0"
    "avx512f\0"
    "avx512bw\0"
    "avx512cd\0"
    "avx512dq\0"
    "avx512vl\0"
    "avx512vnni\0"
    "avx512bf16\0"
    "avx512fp16\0"
    "avx512ifma\0"
    "avx512vbmi\0"
    "avx512vbmi2\0"
    "avx512bitalg\0"
    "avx512vpopcntdq\0"
    "avx512vp2intersect\0"
    "amx-tile\0"
    "amx-int8\0"
    "amx-bf16\0";
static_assert(CountPackedNames(kFeatureNames, sizeof(kFeatureNames)) == kFeatureCount,
              "table and enum differ");

struct CpuidRegs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

CpuidRegs Cpuid(unsigned leaf, unsigned subleaf, unsigned max_leaf) {
  CpuidRegs r;
  if (leaf <= max_leaf) __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

uint64_t ReadXcr0() {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

// Where cpuid reports each feature: a register of one leaf, a bit, and the
// register state the OS must save for the feature to be usable.
enum CpuidWord : uint8_t {
  kL1Ecx,  // leaf 1
  kL1Edx,
  kL7Ebx,  // leaf 7, subleaf 0
  kL7Ecx,
  kL7Edx,
  kL7S1Eax,  // leaf 7, subleaf 1
  kLd1Eax,   // leaf 0xd, subleaf 1
  kE1Ecx,    // leaf 0x80000001
  kE1Edx,
  kCpuidWordCount
};
enum OsState : uint8_t { kAlways, kOsAvx, kOsAvx512, kOsAmx, kOsStateCount };

struct CpuidProbe {
  uint8_t feature;  // X86Feature
  uint8_t word;     // CpuidWord
  uint8_t bit;
  uint8_t os;  // OsState
};

// A table rather than one test per feature: it was 1.6 KB of code.
constexpr CpuidProbe kProbes[] = {
    {kX87, kL1Edx, 0, kAlways},
    {kCx8, kL1Edx, 8, kAlways},
    {kCmov, kL1Edx, 15, kAlways},
    {kMmx, kL1Edx, 23, kAlways},
    {kFxsr, kL1Edx, 24, kAlways},
    {kSse, kL1Edx, 25, kAlways},
    {kSse2, kL1Edx, 26, kAlways},
    {kSse3, kL1Ecx, 0, kAlways},
    {kPclmul, kL1Ecx, 1, kAlways},
    {kSsse3, kL1Ecx, 9, kAlways},
    {kCx16, kL1Ecx, 13, kAlways},
    {kSse41, kL1Ecx, 19, kAlways},
    {kSse42, kL1Ecx, 20, kAlways},
    {kCrc32, kL1Ecx, 20, kAlways},
    {kMovbe, kL1Ecx, 22, kAlways},
    {kPopcnt, kL1Ecx, 23, kAlways},
    {kAes, kL1Ecx, 25, kAlways},
    {kXsave, kL1Ecx, 26, kAlways},
    {kRdrnd, kL1Ecx, 30, kAlways},
    {kXsaveopt, kLd1Eax, 0, kAlways},
    {kSahf, kE1Ecx, 0, kAlways},
    {kLzcnt, kE1Ecx, 5, kAlways},
    {kPrfchw, kE1Ecx, 8, kAlways},
    {k64Bit, kE1Edx, 29, kAlways},
    {kBmi, kL7Ebx, 3, kAlways},
    {kBmi2, kL7Ebx, 8, kAlways},
    {kRdseed, kL7Ebx, 18, kAlways},
    {kAdx, kL7Ebx, 19, kAlways},
    {kSha, kL7Ebx, 29, kAlways},
    {kGfni, kL7Ecx, 8, kAlways},
    {kAvx, kL1Ecx, 28, kOsAvx},
    {kFma, kL1Ecx, 12, kOsAvx},
    {kF16c, kL1Ecx, 29, kOsAvx},
    {kAvx2, kL7Ebx, 5, kOsAvx},
    {kVaes, kL7Ecx, 9, kOsAvx},
    {kVpclmulqdq, kL7Ecx, 10, kOsAvx},
    {kAvxVnni, kL7S1Eax, 4, kOsAvx},
    {kAvx512F, kL7Ebx, 16, kOsAvx512},
    {kAvx512Dq, kL7Ebx, 17, kOsAvx512},
    {kAvx512Ifma, kL7Ebx, 21, kOsAvx512},
    {kAvx512Cd, kL7Ebx, 28, kOsAvx512},
    {kAvx512Bw, kL7Ebx, 30, kOsAvx512},
    {kAvx512Vl, kL7Ebx, 31, kOsAvx512},
    {kAvx512Vbmi, kL7Ecx, 1, kOsAvx512},
    {kAvx512Vbmi2, kL7Ecx, 6, kOsAvx512},
    {kAvx512Vnni, kL7Ecx, 11, kOsAvx512},
    {kAvx512Bitalg, kL7Ecx, 12, kOsAvx512},
    {kAvx512Vpopcntdq, kL7Ecx, 14, kOsAvx512},
    {kAvx512Vp2intersect, kL7Edx, 8, kOsAvx512},
    {kAvx512Fp16, kL7Edx, 23, kOsAvx512},
    {kAvx512Bf16, kL7S1Eax, 5, kOsAvx512},
    {kAmxBf16, kL7Edx, 22, kOsAmx},
    {kAmxTile, kL7Edx, 24, kOsAmx},
    {kAmxInt8, kL7Edx, 25, kOsAmx},
};
static_assert(sizeof(kProbes) / sizeof(kProbes[0]) == kFeatureCount, "a feature has no probe");

void DetectFeatures(uint64_t* bits) {
  const unsigned max_leaf = __get_cpuid_max(0, nullptr);
  const unsigned max_ext_leaf = __get_cpuid_max(0x80000000u, nullptr);
  const CpuidRegs l1 = Cpuid(1, 0, max_leaf);
  const CpuidRegs l7 = Cpuid(7, 0, max_leaf);
  const CpuidRegs l7s1 = l7.eax >= 1 ? Cpuid(7, 1, max_leaf) : CpuidRegs();
  const CpuidRegs ld1 = Cpuid(0xd, 1, max_leaf);
  const CpuidRegs e1 = Cpuid(0x80000001u, 0, max_ext_leaf);
  const unsigned words[kCpuidWordCount] = {l1.ecx,   l1.edx,  l7.ebx, l7.ecx, l7.edx,
                                           l7s1.eax, ld1.eax, e1.ecx, e1.edx};

  // The CPU may implement AVX/AVX-512/AMX while the OS does not save their
  // register state; such instructions then fault, so they count as absent.
  const uint64_t xcr0 = (l1.ecx >> 27) & 1u ? ReadXcr0() : 0;  // OSXSAVE
  const bool os_avx = (xcr0 & 0x6) == 0x6;                     // XMM, YMM
  const bool os_state[kOsStateCount] = {
      true, os_avx,
      os_avx && (xcr0 & 0xe0) == 0xe0,  // opmask, ZMM_Hi256, Hi16_ZMM
      (xcr0 & 0x60000) == 0x60000,      // XTILECFG, XTILEDATA
  };
  for (const CpuidProbe& probe : kProbes) {
    if (os_state[probe.os] && ((words[probe.word] >> probe.bit) & 1u)) {
      bits[probe.feature / 64] |= uint64_t{1} << (probe.feature % 64);
    }
  }
}

const char* const kHostArchitecture = "x86_64";

#elif defined(__aarch64__)

enum ArmFeature {
  kFpArmv8,
  kNeon,
  kAes,
  kSha2,
  kCrc,
  kLse,
  kFullFp16,
  kRdm,
  kDotProd,
  kSve,
  kFp16Fml,
  kRcpc,
  kSha3,
  kSm4,
  kSve2,
  kI8mm,
  kBf16,
  kFeatureCount
};

constexpr char kFeatureNames[] =
    "fp-armv8\0"
    "neon\0"
    "aes\0"
    "sha2\0"
    "crc\0"
    "lse\0"
    "fullfp16\0"
    "rdm\0"
    "dotprod\0"
    "sve\0"
    "fp16fml\0"
    "rcpc\0"
    "sha3\0"
    "sm4\0"
    "sve2\0"
    "i8mm\0"
    "bf16\0";
static_assert(CountPackedNames(kFeatureNames, sizeof(kFeatureNames)) == kFeatureCount,
              "table and enum differ");

void DetectFeatures(uint64_t* bits) {
  auto set = [bits](int feature, bool present) {
    if (present) bits[feature / 64] |= uint64_t{1} << (feature % 64);
  };
#if defined(__linux__)
  // Bit numbers from Linux's arch/arm64/include/uapi/asm/hwcap.h, spelled out
  // so that the build does not depend on the kernel headers' age.
  const unsigned long hwcap = getauxval(AT_HWCAP);
  const unsigned long hwcap2 = getauxval(AT_HWCAP2);
  auto bit = [](unsigned long word, int b) { return ((word >> b) & 1ul) != 0; };
  set(kFpArmv8, bit(hwcap, 0));
  set(kNeon, bit(hwcap, 1));
  set(kAes, bit(hwcap, 3) && bit(hwcap, 4));  // AES + PMULL, as LLVM's "aes" implies
  set(kSha2, bit(hwcap, 6));
  set(kCrc, bit(hwcap, 7));
  set(kLse, bit(hwcap, 8));
  set(kFullFp16, bit(hwcap, 9) && bit(hwcap, 10));
  set(kRdm, bit(hwcap, 12));
  set(kRcpc, bit(hwcap, 15));
  set(kSha3, bit(hwcap, 17));
  set(kSm4, bit(hwcap, 18) && bit(hwcap, 19));
  set(kDotProd, bit(hwcap, 20));
  set(kSve, bit(hwcap, 22));
  set(kFp16Fml, bit(hwcap, 23));
  set(kSve2, bit(hwcap2, 1));
  set(kI8mm, bit(hwcap2, 13));
  set(kBf16, bit(hwcap2, 14));
#else
  (void)set;
#endif
}

const char* const kHostArchitecture = "aarch64";

#elif defined(__riscv) && __riscv_xlen == 64

enum RiscvFeature { kM, kA, kF, kD, kC, kV, kFeatureCount };

constexpr char kFeatureNames[] =
    "m\0"
    "a\0"
    "f\0"
    "d\0"
    "c\0"
    "v\0";
static_assert(CountPackedNames(kFeatureNames, sizeof(kFeatureNames)) == kFeatureCount,
              "table and enum differ");

void DetectFeatures(uint64_t* bits) {
  auto set = [bits](int feature, bool present) {
    if (present) bits[feature / 64] |= uint64_t{1} << (feature % 64);
  };
#if defined(__linux__)
  // Linux reports single-letter extensions as bit (letter - 'a') of AT_HWCAP.
  const unsigned long hwcap = getauxval(AT_HWCAP);
  auto letter = [hwcap](char c) { return ((hwcap >> (c - 'a')) & 1ul) != 0; };
  set(kM, letter('m'));
  set(kA, letter('a'));
  set(kF, letter('f'));
  set(kD, letter('d'));
  set(kC, letter('c'));
  set(kV, letter('v'));
#else
  (void)set;
#endif
}

const char* const kHostArchitecture = "riscv64";

#else

// An architecture without a table: every feature is unknown, and programs
// are refused by the architecture check before features matter.
enum { kFeatureCount = 0 };
constexpr char kFeatureNames[] = "";
void DetectFeatures(uint64_t*) {}
const char* const kHostArchitecture = "unknown";

#endif

static_assert(kFeatureCount <= 128, "HostCpuFeatures holds 128 bits");

}  // namespace

const char* HostArchitecture() { return kHostArchitecture; }

HostCpuFeatures HostCpuFeatures::Detect() {
  HostCpuFeatures features;
  features.names_ = kFeatureNames;
  features.count_ = kFeatureCount;
  DetectFeatures(features.bits_);
  return features;
}

bool RequestAmxTileState() {
#if defined(__x86_64__) && defined(__linux__) && defined(SYS_arch_prctl)
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return true;
#endif
}

}  // namespace nanort
