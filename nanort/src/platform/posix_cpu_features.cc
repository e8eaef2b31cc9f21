// The posix platform's CPU half: reads the running CPU through the
// instructions and system calls an OS allows (cpuid/xgetbv, getauxval,
// arch_prctl).
#include <string.h>

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

struct FeatureName {
  const char* name;
};

#if defined(__x86_64__)

// Index of each name in kFeatures; the detection code below sets these bits.
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

constexpr FeatureName kFeatures[] = {
    {"x87"},
    {"cmov"},
    {"cx8"},
    {"cx16"},
    {"mmx"},
    {"fxsr"},
    {"sahf"},
    {"64bit"},
    {"sse"},
    {"sse2"},
    {"sse3"},
    {"ssse3"},
    {"sse4.1"},
    {"sse4.2"},
    {"crc32"},
    {"popcnt"},
    {"pclmul"},
    {"aes"},
    {"movbe"},
    {"xsave"},
    {"xsaveopt"},
    {"rdrnd"},
    {"rdseed"},
    {"lzcnt"},
    {"prfchw"},
    {"bmi"},
    {"bmi2"},
    {"adx"},
    {"sha"},
    {"avx"},
    {"avx2"},
    {"fma"},
    {"f16c"},
    {"vaes"},
    {"vpclmulqdq"},
    {"gfni"},
    {"avxvnni"},
    {"avx512f"},
    {"avx512bw"},
    {"avx512cd"},
    {"avx512dq"},
    {"avx512vl"},
    {"avx512vnni"},
    {"avx512bf16"},
    {"avx512fp16"},
    {"avx512ifma"},
    {"avx512vbmi"},
    {"avx512vbmi2"},
    {"avx512bitalg"},
    {"avx512vpopcntdq"},
    {"avx512vp2intersect"},
    {"amx-tile"},
    {"amx-int8"},
    {"amx-bf16"},
};
static_assert(sizeof(kFeatures) / sizeof(kFeatures[0]) == kFeatureCount, "table and enum differ");

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

bool Bit(unsigned reg, int bit) { return (reg >> bit) & 1u; }

void DetectFeatures(uint64_t* bits) {
  auto set = [bits](int feature, bool present) {
    if (present) bits[feature / 64] |= uint64_t{1} << (feature % 64);
  };
  const unsigned max_leaf = __get_cpuid_max(0, nullptr);
  const unsigned max_ext_leaf = __get_cpuid_max(0x80000000u, nullptr);
  const CpuidRegs l1 = Cpuid(1, 0, max_leaf);
  const CpuidRegs l7 = Cpuid(7, 0, max_leaf);
  const CpuidRegs l7s1 = l7.eax >= 1 ? Cpuid(7, 1, max_leaf) : CpuidRegs();
  const CpuidRegs ld1 = Cpuid(0xd, 1, max_leaf);
  const CpuidRegs e1 = Cpuid(0x80000001u, 0, max_ext_leaf);

  // The CPU may implement AVX/AVX-512/AMX while the OS does not save their
  // register state; such instructions then fault, so they count as absent.
  const uint64_t xcr0 = Bit(l1.ecx, 27) ? ReadXcr0() : 0;  // OSXSAVE
  const bool os_avx = (xcr0 & 0x6) == 0x6;                 // XMM, YMM
  const bool os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;  // opmask, ZMM_Hi256, Hi16_ZMM
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;         // XTILECFG, XTILEDATA

  set(kX87, Bit(l1.edx, 0));
  set(kCx8, Bit(l1.edx, 8));
  set(kCmov, Bit(l1.edx, 15));
  set(kMmx, Bit(l1.edx, 23));
  set(kFxsr, Bit(l1.edx, 24));
  set(kSse, Bit(l1.edx, 25));
  set(kSse2, Bit(l1.edx, 26));
  set(kSse3, Bit(l1.ecx, 0));
  set(kPclmul, Bit(l1.ecx, 1));
  set(kSsse3, Bit(l1.ecx, 9));
  set(kCx16, Bit(l1.ecx, 13));
  set(kSse41, Bit(l1.ecx, 19));
  set(kSse42, Bit(l1.ecx, 20));
  set(kCrc32, Bit(l1.ecx, 20));
  set(kMovbe, Bit(l1.ecx, 22));
  set(kPopcnt, Bit(l1.ecx, 23));
  set(kAes, Bit(l1.ecx, 25));
  set(kXsave, Bit(l1.ecx, 26));
  set(kRdrnd, Bit(l1.ecx, 30));
  set(kXsaveopt, Bit(ld1.eax, 0));
  set(kSahf, Bit(e1.ecx, 0));
  set(kLzcnt, Bit(e1.ecx, 5));
  set(kPrfchw, Bit(e1.ecx, 8));
  set(k64Bit, Bit(e1.edx, 29));
  set(kBmi, Bit(l7.ebx, 3));
  set(kBmi2, Bit(l7.ebx, 8));
  set(kRdseed, Bit(l7.ebx, 18));
  set(kAdx, Bit(l7.ebx, 19));
  set(kSha, Bit(l7.ebx, 29));
  set(kGfni, Bit(l7.ecx, 8));

  set(kAvx, os_avx && Bit(l1.ecx, 28));
  set(kFma, os_avx && Bit(l1.ecx, 12));
  set(kF16c, os_avx && Bit(l1.ecx, 29));
  set(kAvx2, os_avx && Bit(l7.ebx, 5));
  set(kVaes, os_avx && Bit(l7.ecx, 9));
  set(kVpclmulqdq, os_avx && Bit(l7.ecx, 10));
  set(kAvxVnni, os_avx && Bit(l7s1.eax, 4));

  set(kAvx512F, os_avx512 && Bit(l7.ebx, 16));
  set(kAvx512Dq, os_avx512 && Bit(l7.ebx, 17));
  set(kAvx512Ifma, os_avx512 && Bit(l7.ebx, 21));
  set(kAvx512Cd, os_avx512 && Bit(l7.ebx, 28));
  set(kAvx512Bw, os_avx512 && Bit(l7.ebx, 30));
  set(kAvx512Vl, os_avx512 && Bit(l7.ebx, 31));
  set(kAvx512Vbmi, os_avx512 && Bit(l7.ecx, 1));
  set(kAvx512Vbmi2, os_avx512 && Bit(l7.ecx, 6));
  set(kAvx512Vnni, os_avx512 && Bit(l7.ecx, 11));
  set(kAvx512Bitalg, os_avx512 && Bit(l7.ecx, 12));
  set(kAvx512Vpopcntdq, os_avx512 && Bit(l7.ecx, 14));
  set(kAvx512Vp2intersect, os_avx512 && Bit(l7.edx, 8));
  set(kAvx512Fp16, os_avx512 && Bit(l7.edx, 23));
  set(kAvx512Bf16, os_avx512 && Bit(l7s1.eax, 5));

  set(kAmxBf16, os_amx && Bit(l7.edx, 22));
  set(kAmxTile, os_amx && Bit(l7.edx, 24));
  set(kAmxInt8, os_amx && Bit(l7.edx, 25));
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

constexpr FeatureName kFeatures[] = {
    {"fp-armv8"}, {"neon"}, {"aes"},     {"sha2"}, {"crc"},     {"lse"},
    {"fullfp16"}, {"rdm"},  {"dotprod"}, {"sve"},  {"fp16fml"}, {"rcpc"},
    {"sha3"},     {"sm4"},  {"sve2"},    {"i8mm"}, {"bf16"},
};
static_assert(sizeof(kFeatures) / sizeof(kFeatures[0]) == kFeatureCount, "table and enum differ");

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

constexpr FeatureName kFeatures[] = {{"m"}, {"a"}, {"f"}, {"d"}, {"c"}, {"v"}};
static_assert(sizeof(kFeatures) / sizeof(kFeatures[0]) == kFeatureCount, "table and enum differ");

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
constexpr FeatureName kFeatures[] = {{""}};
void DetectFeatures(uint64_t*) {}
const char* const kHostArchitecture = "unknown";

#endif

static_assert(kFeatureCount <= 128, "HostCpuFeatures holds 128 bits");

}  // namespace

const char* HostArchitecture() { return kHostArchitecture; }

HostCpuFeatures HostCpuFeatures::Detect() {
  HostCpuFeatures features;
  DetectFeatures(features.bits_);
  return features;
}

CpuFeature HostCpuFeatures::Lookup(const char* name, size_t length) const {
  for (int i = 0; i < static_cast<int>(kFeatureCount); ++i) {
    const char* known = kFeatures[i].name;
    if (strlen(known) == length && memcmp(known, name, length) == 0) {
      return (bits_[i / 64] >> (i % 64)) & 1u ? CpuFeature::kPresent : CpuFeature::kAbsent;
    }
  }
  return CpuFeature::kUnknown;
}

CpuFeature HostCpuFeatures::Lookup(const char* name) const { return Lookup(name, strlen(name)); }

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
