#include "npy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace nanort::tools {
namespace {

std::vector<uint8_t> Encode(const NpyArray& a) {
  std::vector<uint8_t> bytes;
  std::string error;
  EXPECT_TRUE(EncodeNpy(a, &bytes, &error)) << error;
  return bytes;
}

// A file with the given header text, preceded by a valid 1.0 preamble.
std::vector<uint8_t> FileWithHeader(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  bytes.push_back(static_cast<uint8_t>(header.size()));
  bytes.push_back(static_cast<uint8_t>(header.size() >> 8));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data_bytes, 0);
  return bytes;
}

std::string ParseError(const std::vector<uint8_t>& bytes) {
  NpyArray a;
  std::string error;
  EXPECT_FALSE(ParseNpy(bytes.data(), bytes.size(), &a, &error));
  return error;
}

TEST(Npy, RoundTripsEveryDtype) {
  const nanort_dtype dtypes[] = {NANORT_F32, NANORT_F16, NANORT_I8,  NANORT_U8,
                                 NANORT_I32, NANORT_I64, NANORT_BOOL};
  for (nanort_dtype dtype : dtypes) {
    NpyArray in;
    in.dtype = dtype;
    in.shape = {2, 3};
    in.data.resize(6 * NpyElementSize(dtype));
    for (size_t i = 0; i < in.data.size(); ++i) in.data[i] = static_cast<uint8_t>(i * 37 + 1);
    if (dtype == NANORT_BOOL) {
      for (size_t i = 0; i < in.data.size(); ++i) in.data[i] = i % 2;
    }
    const std::vector<uint8_t> bytes = Encode(in);
    EXPECT_EQ(bytes.size() % 64, in.data.size() % 64) << "header not padded to 64 bytes";
    NpyArray out;
    std::string error;
    ASSERT_TRUE(ParseNpy(bytes.data(), bytes.size(), &out, &error)) << NpyDescr(dtype) << error;
    EXPECT_EQ(out.dtype, dtype);
    EXPECT_EQ(out.shape, in.shape);
    EXPECT_EQ(out.data, in.data) << NpyDescr(dtype);
  }
}

TEST(Npy, WritesTheHeaderNumpyWrites) {
  NpyArray a;
  a.dtype = NANORT_F32;
  a.shape = {3};
  a.data.resize(12);
  const std::vector<uint8_t> bytes = Encode(a);
  // 10-byte preamble + 58-byte dict + '\n' padded with spaces to 128.
  ASSERT_EQ(bytes.size(), 128u + 12u);
  EXPECT_EQ(bytes[6], 1);
  EXPECT_EQ(bytes[7], 0);
  EXPECT_EQ(bytes[8] | bytes[9] << 8, 118);
  const std::string header(bytes.begin() + 10, bytes.begin() + 128);
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 0), 0u)
      << header;
  EXPECT_EQ(header.back(), '\n');
}

TEST(Npy, RoundTripsScalarsAndEmptyArrays) {
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{}, std::vector<int64_t>{0}, std::vector<int64_t>{4, 0, 2}}) {
    NpyArray in;
    in.dtype = NANORT_I64;
    in.shape = shape;
    uint64_t count = 0;
    ASSERT_TRUE(NpyElementCount(shape, &count));
    in.data.assign(count * 8, 7);
    const std::vector<uint8_t> bytes = Encode(in);
    NpyArray out;
    std::string error;
    ASSERT_TRUE(ParseNpy(bytes.data(), bytes.size(), &out, &error)) << error;
    EXPECT_EQ(out.shape, shape);
    EXPECT_EQ(out.data.size(), count * 8);
  }
}

TEST(Npy, ReadsVersions2And3AndLooseSpacing) {
  const std::string header = "{ \"shape\" : ( 2 , 2L ) , 'fortran_order':False,'descr':'<i4'}\n";
  for (uint8_t major : {2, 3}) {
    std::vector<uint8_t> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', major, 0};
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
    bytes.insert(bytes.end(), header.begin(), header.end());
    bytes.insert(bytes.end(), 16, 0xab);
    NpyArray out;
    std::string error;
    ASSERT_TRUE(ParseNpy(bytes.data(), bytes.size(), &out, &error)) << error;
    EXPECT_EQ(out.dtype, NANORT_I32);
    EXPECT_EQ(out.shape, (std::vector<int64_t>{2, 2}));
  }
}

TEST(Npy, AcceptsByteOrderMarksThatMeanNothingForBytes) {
  NpyArray out;
  std::string error;
  for (const char* descr : {"<i1", "|i1", "|u1", "<u1", "|b1"}) {
    const auto bytes = FileWithHeader(
        std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (2,), }\n", 2);
    EXPECT_TRUE(ParseNpy(bytes.data(), bytes.size(), &out, &error)) << descr << ": " << error;
  }
}

// numpy has no bf16; ml_dtypes' bfloat16 saves as '<V2', so bf16 round-trips as that.
TEST(Npy, Bf16IsTwoByteVoidBothWays) {
  NpyArray a;
  a.dtype = NANORT_BF16;
  a.shape = {2};
  a.data = {0x80, 0x3f, 0x00, 0xc0};  // 1.0, -2.0
  std::vector<uint8_t> bytes;
  std::string error;
  ASSERT_TRUE(EncodeNpy(a, &bytes, &error)) << error;
  EXPECT_NE(std::string(bytes.begin(), bytes.end()).find("'descr': '<V2'"), std::string::npos);
  NpyArray b;
  ASSERT_TRUE(ParseNpy(bytes.data(), bytes.size(), &b, &error)) << error;
  EXPECT_EQ(b.dtype, NANORT_BF16);
  EXPECT_EQ(b.data, a.data);
}

TEST(Npy, RejectsDataThatDoesNotMatchTheShapeOnWrite) {
  NpyArray a;
  a.dtype = NANORT_F32;
  a.shape = {2, 2};
  a.data.resize(12);
  std::vector<uint8_t> bytes;
  std::string error;
  EXPECT_FALSE(EncodeNpy(a, &bytes, &error));
  EXPECT_NE(error.find("does not match shape (2, 2)"), std::string::npos) << error;
}

TEST(Npy, RejectsEveryTruncationOfAValidFile) {
  NpyArray a;
  a.dtype = NANORT_F32;
  a.shape = {2, 3};
  a.data.resize(24, 1);
  const std::vector<uint8_t> bytes = Encode(a);
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::string error = ParseError(std::vector<uint8_t>(bytes.begin(), bytes.begin() + n));
    EXPECT_FALSE(error.empty()) << "cut at " << n;
  }
  EXPECT_NE(ParseError(std::vector<uint8_t>(bytes.begin(), bytes.end() - 1)).find("truncated"),
            std::string::npos);
}

TEST(Npy, RejectsBadMagic) {
  std::vector<uint8_t> bytes =
      FileWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", 4);
  bytes[1] = 'n';
  EXPECT_NE(ParseError(bytes).find("bad magic"), std::string::npos);
}

TEST(Npy, RejectsUnknownVersions) {
  std::vector<uint8_t> bytes =
      FileWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", 4);
  bytes[6] = 4;
  EXPECT_NE(ParseError(bytes).find("format version 4.0"), std::string::npos);
}

TEST(Npy, RejectsFortranOrder) {
  const auto bytes =
      FileWithHeader("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }\n", 24);
  EXPECT_NE(ParseError(bytes).find("fortran_order is True"), std::string::npos);
}

TEST(Npy, RejectsDataSizeThatDoesNotMatchTheShape) {
  const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n";
  EXPECT_NE(ParseError(FileWithHeader(header, 20)).find("needs 24 bytes, the file has 20"),
            std::string::npos);
  EXPECT_NE(ParseError(FileWithHeader(header, 28)).find("needs 24 bytes, the file has 28"),
            std::string::npos);
}

TEST(Npy, RejectsHeaderLengthPastTheEnd) {
  std::vector<uint8_t> bytes = FileWithHeader("{}", 0);
  bytes[8] = 0xff;
  bytes[9] = 0xff;
  EXPECT_NE(ParseError(bytes).find("truncated"), std::string::npos);
}

TEST(Npy, RejectsHugeHeaderLengthsWithoutReadingThem) {
  std::vector<uint8_t> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0xff, 0xff, 0xff, 0x7f};
  EXPECT_NE(ParseError(bytes).find("exceeds the limit"), std::string::npos);
}

TEST(Npy, RejectsMalformedHeaders) {
  struct Case {
    const char* header;
    const char* message;
  };
  const Case cases[] = {
      {"", "does not start with '{'"},
      {"{'descr': '<f4', 'fortran_order': False}", "lacks one of"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3), }", "not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }", "negative dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", "too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,", "'shape'"},
      {"{'descr': '<f4', 'fortran_order': maybe, 'shape': (3,), }", "not True or False"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", "duplicate"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'extra': 1}", "unexpected key"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", "structured"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (3,), }", "malformed header"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), } junk", "after the header"},
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", "'<c8' is not supported"},
      {"{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", "not little-endian"},
      {"{'descr': '<V4', 'fortran_order': False, 'shape': (3,), }", "not supported"},
      {"{'descr': '', 'fortran_order': False, 'shape': (3,), }", "not supported"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }",
       "too many elements"},
  };
  for (const Case& c : cases) {
    const std::string error = ParseError(FileWithHeader(c.header, 12));
    EXPECT_NE(error.find(c.message), std::string::npos)
        << "header: " << c.header << "\nerror: " << error;
  }
}

TEST(Npy, ReadNpyNamesTheFile) {
  NpyArray a;
  std::string error;
  EXPECT_FALSE(ReadNpy("/nonexistent/x.npy", &a, &error));
  EXPECT_EQ(error.rfind("/nonexistent/x.npy: cannot open", 0), 0u) << error;
}

}  // namespace
}  // namespace nanort::tools
