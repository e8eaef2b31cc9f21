#include "program_image.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plan_svg.h"
#include "program_generated.h"
#include "program_report.h"
#include "test_program.h"

namespace nanort::tools {
namespace {

namespace t = testing;

const fb::Program* Load(const std::vector<uint8_t>& file, ProgramImage* image, std::string* error) {
  if (!ExtractProgram(file.data(), file.size(), image, error)) return nullptr;
  return VerifyProgram(*image, error);
}

TEST(ProgramImage, ReadsANrtFile) {
  const std::vector<uint8_t> program = t::BuildTestProgram("tiny", t::ForeignTarget());
  ProgramImage image;
  std::string error;
  const fb::Program* p = Load(program, &image, &error);
  ASSERT_NE(p, nullptr) << error;
  EXPECT_EQ(image.bytes, program);
  EXPECT_EQ(p->model_name()->str(), "tiny");
}

TEST(ProgramImage, FindsTheProgramSectionInAnElfObject) {
  const std::vector<uint8_t> program = t::BuildTestProgram("tiny", t::ForeignTarget());
  ProgramImage image;
  std::string error;
  const fb::Program* p = Load(t::WrapInElf(program), &image, &error);
  ASSERT_NE(p, nullptr) << error;
  EXPECT_EQ(image.bytes, program);
  EXPECT_NE(image.origin.find(".nanort.program at file offset 0x40"), std::string::npos)
      << image.origin;
}

TEST(ProgramImage, RejectsEveryTruncationOfAnElfObject) {
  const std::vector<uint8_t> elf = t::WrapInElf(t::BuildTestProgram("tiny", t::ForeignTarget()));
  for (size_t n = 0; n < elf.size(); ++n) {
    ProgramImage image;
    std::string error;
    EXPECT_EQ(Load(std::vector<uint8_t>(elf.begin(), elf.begin() + n), &image, &error), nullptr)
        << "cut at " << n;
    EXPECT_FALSE(error.empty());
  }
}

TEST(ProgramImage, RejectsElfWithoutTheSection) {
  std::vector<uint8_t> elf = t::WrapInElf(t::BuildTestProgram("tiny", t::ForeignTarget()));
  // The last ".nanort.program" in the file is the section name table's.
  const std::string bytes(elf.begin(), elf.end());
  const size_t name = bytes.rfind(".nanort.program");
  ASSERT_NE(name, std::string::npos);
  elf[name + 1] = 'x';
  ProgramImage image;
  std::string error;
  EXPECT_EQ(Load(elf, &image, &error), nullptr);
  EXPECT_EQ(error, "ELF file has no .nanort.program section");
}

TEST(ProgramImage, RejectsSectionOffsetsOutsideTheFile) {
  std::vector<uint8_t> elf = t::WrapInElf(t::BuildTestProgram("tiny", t::ForeignTarget()));
  const size_t shoff = elf.size() - 3 * 64;
  elf[shoff + 64 + 24 + 6] = 0x10;  // .nanort.program's sh_offset += 2^52
  ProgramImage image;
  std::string error;
  EXPECT_EQ(Load(elf, &image, &error), nullptr);
  EXPECT_NE(error.find("lies outside the file"), std::string::npos) << error;
}

TEST(ProgramImage, RejectsElf32AndBigEndian) {
  std::vector<uint8_t> elf = t::WrapInElf(t::BuildTestProgram("tiny", t::ForeignTarget()));
  for (int field : {4, 5}) {
    std::vector<uint8_t> bad = elf;
    bad[field] = 1 + (field == 5);
    ProgramImage image;
    std::string error;
    EXPECT_EQ(Load(bad, &image, &error), nullptr);
    EXPECT_NE(error.find("ELF64 little-endian"), std::string::npos) << error;
  }
}

TEST(ProgramImage, RejectsAWrongFileIdentifier) {
  std::vector<uint8_t> program = t::BuildTestProgram("tiny", t::ForeignTarget());
  program[4] = 'X';
  ProgramImage image;
  std::string error;
  EXPECT_EQ(Load(program, &image, &error), nullptr);
  EXPECT_EQ(error, "file identifier is \"XRTP\", expected \"NRTP\"");
}

// Every single-bit corruption either fails verification or yields a program
// that both reports render without crashing (run under a sanitizer to make
// this test bite on out-of-bounds reads).
class ProgramImageBitFlip : public ::testing::TestWithParam<std::vector<uint8_t> (*)()> {};

std::vector<uint8_t> TinyProgram() { return t::BuildTestProgram("tiny", t::ForeignTarget()); }

// Every report, the arena plan picture included, of every bit flip the
// verifier accepts: whatever offsets, sizes and indices that makes.
TEST_P(ProgramImageBitFlip, SurvivesEveryBitFlip) {
  const std::vector<uint8_t> program = GetParam()();
  size_t rejected = 0;
  for (size_t i = 0; i < program.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> bad = program;
      bad[i] ^= static_cast<uint8_t>(1u << bit);
      ProgramImage image;
      std::string error;
      const fb::Program* p = Load(bad, &image, &error);
      if (!p) {
        ++rejected;
        EXPECT_FALSE(error.empty());
        continue;
      }
      EXPECT_FALSE(ProgramReportText("f", image, p).empty());
      const std::string json = ProgramReportJson("f", image, p);
      EXPECT_EQ(json.front(), '{');
      const std::string svg = ArenaPlanSvg(BuildArenaPlan(p), "f");
      EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
      EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
    }
  }
  EXPECT_GT(rejected, 0u);
}

INSTANTIATE_TEST_SUITE_P(Programs, ProgramImageBitFlip,
                         ::testing::Values(&TinyProgram, &t::BuildPlanProgram));

TEST(ArenaPlan, LiveRangesFollowTheThunks) {
  const std::vector<uint8_t> program = t::BuildPlanProgram();
  ProgramImage image;
  std::string error;
  const fb::Program* p = Load(program, &image, &error);
  ASSERT_NE(p, nullptr) << error;
  const ArenaPlan plan = BuildArenaPlan(p);
  EXPECT_EQ(plan.arena_size, 12352u);
  EXPECT_EQ(plan.buffers_size_sum, 23616u);
  EXPECT_DOUBLE_EQ(ReuseFactor(plan), 23616.0 / 12352.0);
  EXPECT_EQ(plan.thunk_ops.size(), 6u);
  struct Want {
    uint32_t id;
    int64_t first, last;
  };
  const Want want[] = {{2, 0, 1}, {3, 1, 5}, {4, 3, 3}, {5, 2, 4}, {6, 3, 3}, {7, -1, -1}};
  ASSERT_EQ(plan.buffers.size(), std::size(want));
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    EXPECT_EQ(plan.buffers[i].id, want[i].id);
    EXPECT_EQ(plan.buffers[i].first, want[i].first) << "buffer " << want[i].id;
    EXPECT_EQ(plan.buffers[i].last, want[i].last) << "buffer " << want[i].id;
    EXPECT_FALSE(plan.buffers[i].past_arena);
  }
  EXPECT_EQ(ArenaPlanSummary(plan),
            "arena peak: 12352 bytes (the program's arena size)\n"
            "arena buffers: 6, 23616 bytes in all\n"
            "reuse factor: 1.91 (sum of the arena buffers' sizes / peak)\n");
}

TEST(ArenaPlan, EmptyArena) {
  const std::vector<uint8_t> program = t::BuildNoArenaProgram();
  ProgramImage image;
  std::string error;
  const fb::Program* p = Load(program, &image, &error);
  ASSERT_NE(p, nullptr) << error;
  const ArenaPlan plan = BuildArenaPlan(p);
  EXPECT_TRUE(plan.buffers.empty());
  EXPECT_EQ(ReuseFactor(plan), 0.0);
  EXPECT_NE(ArenaPlanSummary(plan).find("reuse factor: n/a"), std::string::npos);
  EXPECT_NE(ArenaPlanSvg(plan, "f").find("no arena buffers"), std::string::npos);
}

TEST(ProgramReport, TextShowsTheWholeProgram) {
  const std::vector<uint8_t> program = t::BuildTestProgram("tiny", t::ForeignTarget());
  ProgramImage image;
  std::string error;
  const fb::Program* p = Load(program, &image, &error);
  ASSERT_NE(p, nullptr) << error;
  const std::string text = ProgramReportText("tiny.nrt", image, p);
  for (const char* line : {
           "format version: 1.0\n",
           "kernel abi: 4\n",
           "model: \"tiny\"\n",
           "  triple: \"riscv64-unknown-linux-gnu\"\n",
           "  cpu: \"generic-rv64\"\n",
           "  features: \"c,m,v\"\n",
           "  input 0: \"x\" f32[2,3] buffer 0\n",
           "  output 0: \"y\" f32[2,3] buffer 3\n",
           "    0: node \"add0\" op \"Add\": kernel 0 (\"tiny_add_0\") args [0,1,2] outputs 1 "
           "tasks 2\n",
           "    1: node \"y_copy\" op \"Identity\": copy src 2 dst 3 size 24\n",
           "  1: constant index 0 offset 0 size 24 alignment 64 name \"w\"\n",
           "arena: 128 bytes, alignment 64; 2 buffers, 88 bytes in all; reuse factor 0.69 "
           "(sum / arena size)\n",
           "  [0, 24) buffer 2 \"t\"\n",
           "  [64, 128) buffer 4 \"t\\\"2\\\\tmp\\x01\\xff\\xc3\\xa9\"\n",
           "  0: \"tiny_add_0\" cpu\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line << "in:\n" << text;
  }
}

TEST(ProgramReport, JsonEscapesEveryAwkwardByte) {
  const std::vector<uint8_t> program = t::BuildTestProgram("tiny", t::ForeignTarget());
  ProgramImage image;
  std::string error;
  const fb::Program* p = Load(program, &image, &error);
  ASSERT_NE(p, nullptr) << error;
  const std::string json = ProgramReportJson("tiny.nrt", image, p);
  // Quote and backslash escaped, the control byte and the invalid byte as
  // \u00XX, the valid two-byte character kept.
  EXPECT_NE(json.find("\"name\": \"t\\\"2\\\\tmp\\u0001\\u00ff\xc3\xa9\""), std::string::npos)
      << json;
}

}  // namespace
}  // namespace nanort::tools
