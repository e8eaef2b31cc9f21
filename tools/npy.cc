#include "npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "file_bytes.h"

namespace nanort::tools {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// numpy itself refuses headers over 10000 bytes unless told otherwise; a
// nanort tensor never needs more, and the bound keeps a corrupt length field
// from making us scan or allocate gigabytes.
constexpr size_t kMaxHeaderSize = 1 << 20;
// numpy aligns the data to 64 bytes so that it can be memory-mapped in place.
constexpr size_t kHeaderAlignment = 64;

struct DescrEntry {
  nanort_dtype dtype;
  const char* code;  // without the byte-order character
  size_t size;
  const char* descr;  // what numpy writes
};

// numpy has no bf16: ml_dtypes' bfloat16 arrays, which is how Python code
// holds bf16 tensors, save as a 2-byte void '<V2', so that is bf16 here.
constexpr DescrEntry kDescrs[] = {
    {NANORT_BF16, "V2", 2, "<V2"},
    // Likewise every float8 and sub-byte type (ml_dtypes' int4, uint4,
    // int2, uint2, float4_e2m1fn: one byte an element) saves as '|V1';
    // nanort-run reads it as the model's one-byte type. Written for each.
    {NANORT_F8E4M3FN, "V1", 1, "|V1"},
    {NANORT_F8E4M3FNUZ, "V1", 1, "|V1"},
    {NANORT_F8E5M2, "V1", 1, "|V1"},
    {NANORT_F8E5M2FNUZ, "V1", 1, "|V1"},
    {NANORT_I4, "V1", 1, "|V1"},
    {NANORT_U4, "V1", 1, "|V1"},
    {NANORT_I2, "V1", 1, "|V1"},
    {NANORT_U2, "V1", 1, "|V1"},
    {NANORT_F4E2M1, "V1", 1, "|V1"},
    {NANORT_F8E5M2, "f1", 1, "<f1"},  // ml_dtypes' float8_e5m2 claims a float code
    {NANORT_F32, "f4", 4, "<f4"},
    {NANORT_F16, "f2", 2, "<f2"},
    {NANORT_I8, "i1", 1, "|i1"},
    {NANORT_U8, "u1", 1, "|u1"},
    {NANORT_I32, "i4", 4, "<i4"},
    {NANORT_I64, "i8", 8, "<i8"},
    {NANORT_BOOL, "b1", 1, "|b1"},
    {NANORT_F64, "f8", 8, "<f8"},
    {NANORT_I16, "i2", 2, "<i2"},
    {NANORT_U16, "u2", 2, "<u2"},
    {NANORT_U32, "u4", 4, "<u4"},
    {NANORT_U64, "u8", 8, "<u8"},
};

const DescrEntry* FindDescr(nanort_dtype dtype) {
  for (const DescrEntry& e : kDescrs) {
    if (e.dtype == dtype) return &e;
  }
  return nullptr;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  s += ")";
  return s;
}

// Shows a header fragment in an error message without dumping control bytes.
std::string Printable(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 80)) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    }
  }
  if (text.size() > 80) out += "...";
  return out;
}

// The header is a Python dict literal, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3,), }
// This parses exactly the subset numpy writes (and Python 2's "3L" ints),
// nothing that needs an evaluator.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  bool Parse(std::string* descr, bool* fortran_order, std::vector<int64_t>* shape,
             std::string* error) {
    bool have_descr = false, have_order = false, have_shape = false;
    SkipSpace();
    if (!Consume('{')) return Fail("header does not start with '{'", error);
    for (;;) {
      SkipSpace();
      if (Consume('}')) break;
      std::string key;
      if (!ParseString(&key, error)) return false;
      SkipSpace();
      if (!Consume(':')) return Fail("expected ':' after key '" + key + "'", error);
      SkipSpace();
      if (key == "descr") {
        if (have_descr) return Fail("duplicate key 'descr'", error);
        have_descr = true;
        if (Peek() == '[' || Peek() == '(') {
          return Fail("structured dtypes are not supported", error);
        }
        if (!ParseString(descr, error)) return false;
      } else if (key == "fortran_order") {
        if (have_order) return Fail("duplicate key 'fortran_order'", error);
        have_order = true;
        if (ConsumeWord("True")) {
          *fortran_order = true;
        } else if (ConsumeWord("False")) {
          *fortran_order = false;
        } else {
          return Fail("'fortran_order' is not True or False", error);
        }
      } else if (key == "shape") {
        if (have_shape) return Fail("duplicate key 'shape'", error);
        have_shape = true;
        if (!ParseShape(shape, error)) return false;
      } else {
        return Fail("unexpected key '" + Printable(key) + "'", error);
      }
      SkipSpace();
      if (Consume(',')) continue;
      if (Consume('}')) break;
      return Fail("expected ',' or '}' at '" + Printable(text_.substr(pos_)) + "'", error);
    }
    SkipSpace();
    if (pos_ != text_.size()) {
      return Fail("unexpected text after the header dict: '" + Printable(text_.substr(pos_)) + "'",
                  error);
    }
    if (!have_descr || !have_order || !have_shape) {
      return Fail("header lacks one of 'descr', 'fortran_order', 'shape'", error);
    }
    return true;
  }

 private:
  static bool Fail(const std::string& what, std::string* error) {
    *error = "malformed header: " + what;
    return false;
  }
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Consume(char c) {
    if (pos_ >= text_.size() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  bool ConsumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool ParseString(std::string* out, std::string* error) {
    char quote = Peek();
    if (quote != '\'' && quote != '"') {
      return Fail("expected a quoted string at '" + Printable(text_.substr(pos_)) + "'", error);
    }
    ++pos_;
    size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) return Fail("unterminated string", error);
    std::string_view body = text_.substr(pos_, end - pos_);
    if (body.find('\\') != std::string_view::npos) {
      return Fail("escapes in strings are not supported", error);
    }
    out->assign(body);
    pos_ = end + 1;
    return true;
  }

  bool ParseShape(std::vector<int64_t>* shape, std::string* error) {
    shape->clear();
    if (!Consume('(')) return Fail("'shape' is not a tuple", error);
    bool trailing_comma = false;
    for (;;) {
      SkipSpace();
      if (Consume(')')) break;
      if (Peek() == '-') return Fail("negative dimension in 'shape'", error);
      if (Peek() < '0' || Peek() > '9') {
        return Fail("expected a dimension in 'shape' at '" + Printable(text_.substr(pos_)) + "'",
                    error);
      }
      int64_t dim = 0;
      while (Peek() >= '0' && Peek() <= '9') {
        int digit = Peek() - '0';
        if (dim > (INT64_MAX - digit) / 10) return Fail("dimension too large in 'shape'", error);
        dim = dim * 10 + digit;
        ++pos_;
      }
      Consume('L');
      shape->push_back(dim);
      trailing_comma = false;
      SkipSpace();
      if (Consume(',')) {
        trailing_comma = true;
        continue;
      }
      if (Consume(')')) break;
      return Fail("expected ',' or ')' in 'shape'", error);
    }
    // "(3)" is the int 3 in Python, not a tuple; numpy always writes "(3,)".
    if (shape->size() == 1 && !trailing_comma) {
      return Fail("'shape' is not a tuple (a one-element tuple needs a comma)", error);
    }
    return true;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

bool DtypeFromDescr(const std::string& descr, nanort_dtype* dtype, std::string* error) {
  const char* supported =
      "supported: <f4 <f8 <f2 <V2 (bf16) |V1 (float8, 4- and 2-bit types) |i1 <i2 <i4 <i8 |u1 <u2 "
      "<u4 <u8 |b1";
  if (descr.size() < 2) {
    *error = "dtype '" + Printable(descr) + "' is not supported (" + supported + ")";
    return false;
  }
  char order = descr[0];
  std::string code = descr.substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    order = '=';
    code = descr;
  }
  for (const DescrEntry& e : kDescrs) {
    if (code != e.code) continue;
    // Byte order means nothing for one-byte elements, nor for raw bytes
    // ('V', bf16 here); numpy writes '|' for both.
    if (e.size > 1 && order != '<' && !(code[0] == 'V' && order == '|')) {
      *error = "dtype '" + Printable(descr) +
               "' is not little-endian ('<'); re-save it with "
               "arr.astype(arr.dtype.newbyteorder('<'))";
      return false;
    }
    *dtype = e.dtype;
    return true;
  }
  *error = "dtype '" + Printable(descr) + "' is not supported (" + supported + ")";
  return false;
}

uint32_t ReadLE(const uint8_t* p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

size_t NpyElementSize(nanort_dtype dtype) {
  const DescrEntry* e = FindDescr(dtype);
  return e ? e->size : 0;
}

const char* NpyDescr(nanort_dtype dtype) {
  const DescrEntry* e = FindDescr(dtype);
  return e ? e->descr : nullptr;
}

bool NpyElementCount(const std::vector<int64_t>& shape, uint64_t* count) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return false;
    uint64_t u = static_cast<uint64_t>(d);
    if (u != 0 && n > UINT64_MAX / u) return false;
    n *= u;
  }
  *count = n;
  return true;
}

bool ParseNpy(const uint8_t* bytes, size_t size, NpyArray* out, std::string* error) {
  if (size < kMagicSize || std::memcmp(bytes, kMagic, kMagicSize) != 0) {
    *error = size < kMagicSize ? "truncated: " + std::to_string(size) + " bytes, not a .npy file"
                               : "not a .npy file (bad magic, expected \\x93NUMPY)";
    return false;
  }
  if (size < kMagicSize + 2) {
    *error = "truncated: the file ends inside the version bytes";
    return false;
  }
  const unsigned major = bytes[6], minor = bytes[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    *error = "unsupported .npy format version " + std::to_string(major) + "." +
             std::to_string(minor) + " (this reads 1.0, 2.0 and 3.0)";
    return false;
  }
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t prefix = kMagicSize + 2 + len_bytes;
  if (size < prefix) {
    *error = "truncated: the file ends inside the header length";
    return false;
  }
  const size_t header_len = ReadLE(bytes + 8, len_bytes);
  if (header_len > kMaxHeaderSize) {
    *error = "header length " + std::to_string(header_len) + " exceeds the limit of " +
             std::to_string(kMaxHeaderSize) + " bytes";
    return false;
  }
  if (header_len > size - prefix) {
    *error = "truncated: the header claims " + std::to_string(header_len) +
             " bytes, the file has " + std::to_string(size - prefix) + " after the preamble";
    return false;
  }
  std::string_view header(reinterpret_cast<const char*>(bytes + prefix), header_len);
  if (major < 3) {
    for (char c : header) {
      if (static_cast<unsigned char>(c) >= 0x80) {
        *error =
            "malformed header: non-ASCII byte in a format " + std::to_string(major) + ".0 header";
        return false;
      }
    }
  }
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
  if (!HeaderParser(header).Parse(&descr, &fortran_order, &shape, error)) return false;
  nanort_dtype dtype;
  if (!DtypeFromDescr(descr, &dtype, error)) return false;
  uint64_t count = 0;
  if (!NpyElementCount(shape, &count)) {
    *error = "shape " + ShapeString(shape) + " has too many elements";
    return false;
  }
  if (fortran_order) {
    // numpy writes True only for arrays that are not also C-contiguous, so the
    // bytes really are in the other order.
    *error =
        "fortran_order is True: only C-order arrays are supported; save with "
        "np.save(path, np.ascontiguousarray(arr))";
    return false;
  }
  const size_t elem = NpyElementSize(dtype);
  if (count > UINT64_MAX / elem) {
    *error = "shape " + ShapeString(shape) + " has too many elements";
    return false;
  }
  const uint64_t need = count * elem;
  const uint64_t have = size - prefix - header_len;
  if (have != need) {
    *error = "data size mismatch: shape " + ShapeString(shape) + " of " + descr + " needs " +
             std::to_string(need) + " bytes, the file has " + std::to_string(have) +
             (have < need ? " (truncated)" : "");
    return false;
  }
  out->dtype = dtype;
  out->shape = std::move(shape);
  out->data.assign(bytes + prefix + header_len, bytes + size);
  return true;
}

bool ReadNpy(const std::string& path, NpyArray* out, std::string* error) {
  std::vector<uint8_t> bytes;
  if (!ReadFileBytes(path, &bytes, error) || !ParseNpy(bytes.data(), bytes.size(), out, error)) {
    *error = path + ": " + *error;
    return false;
  }
  return true;
}

bool EncodeNpy(const NpyArray& array, std::vector<uint8_t>* out, std::string* error) {
  const DescrEntry* e = FindDescr(array.dtype);
  if (!e) {
    *error = "unknown dtype value " + std::to_string(static_cast<int>(array.dtype));
    return false;
  }
  uint64_t count = 0;
  if (!NpyElementCount(array.shape, &count) || count > UINT64_MAX / e->size ||
      count * e->size != array.data.size()) {
    *error = "data size " + std::to_string(array.data.size()) + " does not match shape " +
             ShapeString(array.shape) + " of " + e->descr;
    return false;
  }
  const std::string dict = std::string("{'descr': '") + e->descr +
                           "', 'fortran_order': False, 'shape': " + ShapeString(array.shape) +
                           ", }";
  unsigned major = 1;
  size_t prefix = kMagicSize + 2 + 2;
  size_t padded =
      (prefix + dict.size() + 1 + kHeaderAlignment - 1) / kHeaderAlignment * kHeaderAlignment;
  if (padded - prefix > 0xffff) {
    major = 2;
    prefix = kMagicSize + 2 + 4;
    padded =
        (prefix + dict.size() + 1 + kHeaderAlignment - 1) / kHeaderAlignment * kHeaderAlignment;
  }
  const size_t header_len = padded - prefix;
  out->clear();
  out->reserve(padded + array.data.size());
  out->insert(out->end(), kMagic, kMagic + kMagicSize);
  out->push_back(static_cast<uint8_t>(major));
  out->push_back(0);
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) {
    out->push_back(static_cast<uint8_t>(header_len >> (8 * i)));
  }
  out->insert(out->end(), dict.begin(), dict.end());
  out->insert(out->end(), header_len - dict.size() - 1, ' ');
  out->push_back('\n');
  out->insert(out->end(), array.data.begin(), array.data.end());
  return true;
}

bool WriteNpy(const std::string& path, const NpyArray& array, std::string* error) {
  std::vector<uint8_t> bytes;
  if (!EncodeNpy(array, &bytes, error)) {
    *error = path + ": " + *error;
    return false;
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    *error = path + ": cannot open for writing: " + std::strerror(errno);
    return false;
  }
  const bool wrote = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const int err = errno;
  if (std::fclose(f) != 0 || !wrote) {
    *error = path + ": cannot write: " + std::strerror(wrote ? errno : err);
    return false;
  }
  return true;
}

}  // namespace nanort::tools
