#include "compiler/ir/text.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <unordered_map>

#include "compiler/ir/error.h"
#include "compiler/ir/subbyte.h"

namespace nanoc {
namespace {

// Constants with more elements than this print as dense_hex: a decimal list of
// a real weight tensor helps no reader and is slower to parse.
constexpr int64_t kMaxDenseElements = 64;
// A splat expands to numel copies; cap it so that a short input cannot ask for
// an absurd allocation.
constexpr uint64_t kMaxSplatBytes = uint64_t{1} << 30;
// Types larger than this are refused on parse, so that numel() * size never
// overflows anywhere downstream.
constexpr uint64_t kMaxTypeBytes = uint64_t{1} << 62;

bool isBareChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}
bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// ---------------------------------------------------------------- printing

void appendQuoted(std::string& out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  out += '"';
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      out += '\\';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;  // UTF-8 passes through unchanged
    }
  }
  out += '"';
}

// Value and graph names: bare when [A-Za-z0-9_.]+, quoted otherwise.
void appendName(std::string& out, char sigil, std::string_view name) {
  out += sigil;
  bool bare = !name.empty();
  for (char c : name) bare = bare && isBareChar(c);
  if (bare)
    out += name;
  else
    appendQuoted(out, name);
}

// Op names and attribute keys: bare when they lex as an identifier.
void appendIdent(std::string& out, std::string_view s) {
  bool bare = !s.empty() && isIdentStart(s[0]);
  for (char c : s) bare = bare && isBareChar(c);
  if (bare)
    out += s;
  else
    appendQuoted(out, s);
}

void appendValueRef(std::string& out, const Value* v) {
  if (v)
    appendName(out, '%', v->name);
  else
    out += '_';
}

// Shortest text that reads back to the same value, always with a '.' or an
// exponent so that it lexes as a float.
template <typename T>
void appendFloat(std::string& out, T value) {
  if (std::isnan(value)) {
    out += "nan";
    return;
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  std::string_view text(buf, ec == std::errc() ? end - buf : 0);
  out += text;
  if (!std::isinf(value) && text.find_first_of(".e") == std::string_view::npos) out += ".0";
}

void appendHexBits(std::string& out, uint64_t bits, int digits) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%0*llx", digits, static_cast<unsigned long long>(bits));
  out += buf;
}

void appendElement(std::string& out, DType dtype, const uint8_t* p) {
  switch (dtype) {
    case DType::F32: {
      float f;
      std::memcpy(&f, p, 4);
      if (std::isnan(f)) {
        // NaN payloads and signs survive only as bits.
        uint32_t bits;
        std::memcpy(&bits, p, 4);
        appendHexBits(out, bits, 8);
      } else {
        appendFloat(out, f);
      }
      return;
    }
    case DType::F16:
    case DType::BF16: {
      uint16_t bits;
      std::memcpy(&bits, p, 2);
      appendHexBits(out, bits, 4);
      return;
    }
    case DType::I8:
      out += std::to_string(static_cast<int8_t>(*p));
      return;
    case DType::U8:
      out += std::to_string(*p);
      return;
    case DType::I32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      out += std::to_string(v);
      return;
    }
    case DType::I64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      out += std::to_string(v);
      return;
    }
    case DType::F64: {
      double f;
      std::memcpy(&f, p, 8);
      if (std::isnan(f)) {
        uint64_t bits;
        std::memcpy(&bits, p, 8);
        appendHexBits(out, bits, 16);
      } else {
        appendFloat(out, f);
      }
      return;
    }
    case DType::I16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      out += std::to_string(v);
      return;
    }
    case DType::U16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      out += std::to_string(v);
      return;
    }
    case DType::U32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      out += std::to_string(v);
      return;
    }
    case DType::U64: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      out += std::to_string(v);
      return;
    }
    case DType::F8E4M3FN:
    case DType::F8E4M3FNUZ:
    case DType::F8E5M2:
    case DType::F8E5M2FNUZ:
      appendHexBits(out, *p, 2);
      return;
    case DType::I4:
    case DType::U4:
    case DType::I2:
    case DType::U2:
      out += std::to_string(subByteIntValue(*p, dtype));
      return;
    case DType::F4E2M1:
      appendHexBits(out, *p & 0xf, 1);
      return;
    case DType::Bool:
      if (*p == 0)
        out += "false";
      else if (*p == 1)
        out += "true";
      else
        out += std::to_string(*p);  // not a canonical bool, but keep its byte
      return;
  }
}

void appendConstantData(std::string& out, const Value& v) {
  const std::vector<uint8_t>& bytes = *v.data;
  const size_t size = dtypeSize(v.type.dtype);
  // A constant whose bytes disagree with its type (the verifier rejects it)
  // still prints, as raw bytes.
  const bool consistent = bytes.size() == v.type.bytes() && size != 0;
  const size_t n = consistent ? bytes.size() / size : 0;
  bool splat = consistent && n > 1;
  for (size_t i = 1; splat && i < n; ++i)
    splat = std::memcmp(bytes.data(), bytes.data() + i * size, size) == 0;
  if (splat) {
    out += "dense<";
    appendElement(out, v.type.dtype, bytes.data());
    out += '>';
    return;
  }
  if (!consistent || static_cast<int64_t>(n) > kMaxDenseElements) {
    static const char kHex[] = "0123456789abcdef";
    out += "dense_hex<\"";
    for (uint8_t b : bytes) {
      out += kHex[b >> 4];
      out += kHex[b & 15];
    }
    out += "\">";
    return;
  }
  out += "dense<[";
  for (size_t i = 0; i < n; ++i) {
    if (i) out += ", ";
    appendElement(out, v.type.dtype, bytes.data() + i * size);
  }
  out += "]>";
}

void appendAttr(std::string& out, const Attr& attr) {
  if (const auto* i = std::get_if<int64_t>(&attr)) {
    out += std::to_string(*i);
  } else if (const auto* f = std::get_if<double>(&attr)) {
    appendFloat(out, *f);
  } else if (const auto* s = std::get_if<std::string>(&attr)) {
    appendQuoted(out, *s);
  } else if (const auto* ints = std::get_if<std::vector<int64_t>>(&attr)) {
    out += '[';
    for (size_t k = 0; k < ints->size(); ++k) {
      if (k) out += ", ";
      out += std::to_string((*ints)[k]);
    }
    out += ']';
  } else if (const auto* floats = std::get_if<std::vector<double>>(&attr)) {
    // `[]` reads back as an int list; an empty float list needs its kind said.
    out += floats->empty() ? "floats[" : "[";
    for (size_t k = 0; k < floats->size(); ++k) {
      if (k) out += ", ";
      appendFloat(out, (*floats)[k]);
    }
    out += ']';
  }
}

void appendNode(std::string& out, const Node& node) {
  out += "  ";
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (i) out += ", ";
    appendValueRef(out, node.outputs[i]);
  }
  if (!node.outputs.empty()) out += " = ";
  appendIdent(out, node.op);
  out += '(';
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (i) out += ", ";
    appendValueRef(out, node.inputs[i]);
  }
  out += ')';
  if (!node.attrs.empty()) {
    out += " {";
    bool first = true;
    for (const auto& [key, attr] : node.attrs) {
      if (!first) out += ", ";
      first = false;
      appendIdent(out, key);
      out += " = ";
      appendAttr(out, attr);
    }
    out += '}';
  }
  out += " name ";
  appendQuoted(out, node.name);

  size_t typed = 0;
  for (const Value* v : node.outputs) typed += v && v->typed;
  if (typed == 0) return;
  out += " : ";
  if (node.outputs.size() == 1) {
    out += node.outputs[0]->type.str();
    return;
  }
  out += '(';
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (i) out += ", ";
    const Value* v = node.outputs[i];
    out += v && v->typed ? v->type.str() : "?";
  }
  out += ')';
}

// ---------------------------------------------------------------- lexing

enum class Tok {
  End,
  Ident,      // [A-Za-z_][A-Za-z0-9_.]*
  Number,     // raw text, sign included; interpreted by the parser
  String,     // decoded contents
  ValueName,  // %name, decoded
  GraphName,  // @name, decoded
  LParen,
  RParen,
  LBrace,
  RBrace,
  LBracket,
  RBracket,
  Less,
  Greater,
  Comma,
  Equal,
  Colon,
  Arrow,
  Question,
};

struct Token {
  Tok kind = Tok::End;
  std::string text;
  int line = 1;
  int col = 1;
};

const char* describe(Tok kind) {
  switch (kind) {
    case Tok::End:
      return "end of input";
    case Tok::Ident:
      return "an identifier";
    case Tok::Number:
      return "a number";
    case Tok::String:
      return "a string";
    case Tok::ValueName:
      return "a value name";
    case Tok::GraphName:
      return "a graph name";
    case Tok::LParen:
      return "'('";
    case Tok::RParen:
      return "')'";
    case Tok::LBrace:
      return "'{'";
    case Tok::RBrace:
      return "'}'";
    case Tok::LBracket:
      return "'['";
    case Tok::RBracket:
      return "']'";
    case Tok::Less:
      return "'<'";
    case Tok::Greater:
      return "'>'";
    case Tok::Comma:
      return "','";
    case Tok::Equal:
      return "'='";
    case Tok::Colon:
      return "':'";
    case Tok::Arrow:
      return "'->'";
    case Tok::Question:
      return "'?'";
  }
  return "a token";
}

class Lexer {
 public:
  Lexer(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    for (;;) {
      skipSpaceAndComments();
      Token tok;
      tok.line = line_;
      tok.col = col_;
      if (pos_ >= text_.size()) {
        tokens.push_back(std::move(tok));
        return tokens;
      }
      lexOne(tok);
      tokens.push_back(std::move(tok));
    }
  }

 private:
  [[noreturn]] void fail(int line, int col, const std::string& msg) const {
    throw CompileError(source_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " +
                       msg);
  }
  char at(size_t i) const { return i < text_.size() ? text_[i] : '\0'; }
  void advance() {
    if (pos_ >= text_.size()) return;
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }

  void skipSpaceAndComments() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        advance();
      } else if (c == '/' && at(pos_ + 1) == '/') {
        while (pos_ < text_.size() && text_[pos_] != '\n') advance();
      } else {
        return;
      }
    }
  }

  std::string lexString(const Token& start) {
    advance();  // opening quote
    std::string s;
    for (;;) {
      if (pos_ >= text_.size() || text_[pos_] == '\n')
        fail(start.line, start.col, "unterminated string");
      char c = text_[pos_];
      if (c == '"') {
        advance();
        return s;
      }
      if (c != '\\') {
        s += c;
        advance();
        continue;
      }
      int line = line_, col = col_;
      advance();
      char e = at(pos_);
      if (e == '"' || e == '\\') {
        s += e;
        advance();
      } else if (e == 'n') {
        s += '\n';
        advance();
      } else if (e == 't') {
        s += '\t';
        advance();
      } else if (hexDigit(e) >= 0 && hexDigit(at(pos_ + 1)) >= 0) {
        s += static_cast<char>(hexDigit(e) * 16 + hexDigit(at(pos_ + 1)));
        advance();
        advance();
      } else {
        fail(line, col, "invalid escape in string (use \\\", \\\\, \\n, \\t or \\XX)");
      }
    }
  }

  std::string lexBareOrQuoted(const Token& tok, const char* what) {
    if (at(pos_) == '"') return lexString(tok);
    size_t begin = pos_;
    while (pos_ < text_.size() && isBareChar(text_[pos_])) advance();
    if (pos_ == begin) fail(tok.line, tok.col, std::string("expected ") + what);
    return std::string(text_.substr(begin, pos_ - begin));
  }

  void lexOne(Token& tok) {
    char c = text_[pos_];
    auto single = [&](Tok kind) {
      tok.kind = kind;
      advance();
    };
    switch (c) {
      case '(':
        return single(Tok::LParen);
      case ')':
        return single(Tok::RParen);
      case '{':
        return single(Tok::LBrace);
      case '}':
        return single(Tok::RBrace);
      case '[':
        return single(Tok::LBracket);
      case ']':
        return single(Tok::RBracket);
      case '<':
        return single(Tok::Less);
      case '>':
        return single(Tok::Greater);
      case ',':
        return single(Tok::Comma);
      case '=':
        return single(Tok::Equal);
      case ':':
        return single(Tok::Colon);
      case '?':
        return single(Tok::Question);
      case '"':
        tok.kind = Tok::String;
        tok.text = lexString(tok);
        return;
      case '%':
        advance();
        tok.kind = Tok::ValueName;
        tok.text = lexBareOrQuoted(tok, "a value name after '%'");
        return;
      case '@':
        advance();
        tok.kind = Tok::GraphName;
        tok.text = lexBareOrQuoted(tok, "a graph name after '@'");
        return;
      default:
        break;
    }
    if (c == '-' && at(pos_ + 1) == '>') {
      tok.kind = Tok::Arrow;
      advance();
      advance();
      return;
    }
    if (isIdentStart(c)) {
      size_t begin = pos_;
      while (pos_ < text_.size() && isBareChar(text_[pos_])) advance();
      tok.kind = Tok::Ident;
      tok.text = std::string(text_.substr(begin, pos_ - begin));
      return;
    }
    if (isDigit(c) || ((c == '-' || c == '+' || c == '.') && (isBareChar(at(pos_ + 1))))) {
      // Sign, then the characters a number can hold; an exponent's sign is
      // taken after a decimal 'e'. What the text means is decided by the parser.
      size_t begin = pos_;
      if (c == '-' || c == '+') advance();
      bool hex = at(pos_) == '0' && (at(pos_ + 1) == 'x' || at(pos_ + 1) == 'X');
      while (pos_ < text_.size()) {
        char d = text_[pos_];
        if (isBareChar(d)) {
          advance();
        } else if ((d == '-' || d == '+') && !hex && (at(pos_ - 1) == 'e' || at(pos_ - 1) == 'E')) {
          advance();
        } else {
          break;
        }
      }
      tok.kind = Tok::Number;
      tok.text = std::string(text_.substr(begin, pos_ - begin));
      return;
    }
    auto u = static_cast<unsigned char>(c);
    char buf[16];
    if (u >= 0x20 && u < 0x7f)
      std::snprintf(buf, sizeof buf, "'%c'", c);
    else
      std::snprintf(buf, sizeof buf, "byte 0x%02x", u);
    fail(tok.line, tok.col, std::string("unexpected character ") + buf);
  }

  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

// ---------------------------------------------------------------- parsing

class Parser {
 public:
  Parser(std::string_view text, const std::string& source)
      : source_(source), tokens_(Lexer(text, source).run()) {}

  std::unique_ptr<Graph> parse() {
    graph_ = std::make_unique<Graph>();
    expectKeyword("graph");
    graph_->name = expect(Tok::GraphName, "a graph name such as @model").text;

    expect(Tok::LParen, "'(' before the graph inputs");
    if (!accept(Tok::RParen)) {
      do {
        Token name = expect(Tok::ValueName, "a graph input name");
        expect(Tok::Colon, "':' before the input's type");
        TensorType type = parseType();
        checkNewName(name);
        Value* v = graph_->addInput(name.text, type);
        define(name, v);
      } while (accept(Tok::Comma));
      expect(Tok::RParen, "',' or ')' after a graph input");
    }

    expect(Tok::Arrow, "'->' before the graph outputs");
    expect(Tok::LParen, "'(' before the graph outputs");
    std::vector<Token> outputs;
    if (!accept(Tok::RParen)) {
      do outputs.push_back(expect(Tok::ValueName, "a graph output name"));
      while (accept(Tok::Comma));
      expect(Tok::RParen, "',' or ')' after a graph output");
    }

    expect(Tok::LBrace, "'{' before the graph body");
    while (!accept(Tok::RBrace)) parseStatement();
    if (peek().kind != Tok::End) fail(peek(), "unexpected " + what(peek()) + " after the graph");

    // Outputs may name any value of the body, so they resolve last.
    for (const Token& name : outputs) graph_->outputs.push_back(lookup(name));
    return std::move(graph_);
  }

 private:
  [[noreturn]] void fail(const Token& at, const std::string& msg) const {
    throw CompileError(source_ + ":" + std::to_string(at.line) + ":" + std::to_string(at.col) +
                       ": " + msg);
  }
  static std::string what(const Token& tok) {
    switch (tok.kind) {
      case Tok::Ident:
      case Tok::Number:
        return "'" + tok.text + "'";
      default:
        return describe(tok.kind);
    }
  }

  const Token& peek(size_t ahead = 0) const {
    size_t i = pos_ + ahead;
    return i < tokens_.size() ? tokens_[i] : tokens_.back();  // the last is End
  }
  const Token& next() {
    const Token& tok = peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return tok;
  }
  bool accept(Tok kind) {
    if (peek().kind != kind) return false;
    next();
    return true;
  }
  bool peekKeyword(std::string_view word, size_t ahead = 0) const {
    return peek(ahead).kind == Tok::Ident && peek(ahead).text == word;
  }
  const Token& expect(Tok kind, const std::string& expected) {
    if (peek().kind != kind) fail(peek(), "expected " + expected + ", found " + what(peek()));
    return next();
  }
  void expectKeyword(std::string_view word) {
    if (!peekKeyword(word))
      fail(peek(), "expected '" + std::string(word) + "', found " + what(peek()));
    next();
  }

  // ---- names

  void checkNewName(const Token& name) {
    if (name.text.empty()) fail(name, "a value name cannot be empty");
    if (values_.count(name.text)) fail(name, "redefinition of value " + printedName(name.text));
  }
  void define(const Token& name, Value* v) {
    // Graph makes names unique; a renamed value means the text reused a name
    // that the graph had already handed out.
    if (v->name != name.text) fail(name, "redefinition of value " + printedName(name.text));
    values_[name.text] = v;
  }
  Value* lookup(const Token& name) const {
    auto it = values_.find(name.text);
    if (it == values_.end()) fail(name, "use of undefined value " + printedName(name.text));
    return it->second;
  }
  static std::string printedName(const std::string& name) {
    std::string s;
    appendName(s, '%', name);
    return s;
  }

  // ---- numbers

  int64_t parseInt(const Token& tok) const {
    if (tok.kind != Tok::Number) fail(tok, "expected an integer, found " + what(tok));
    const char* b = tok.text.data();
    const char* e = b + tok.text.size();
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(b, e, v);
    if (ec == std::errc::result_out_of_range) fail(tok, "integer " + tok.text + " is out of range");
    if (ec != std::errc() || ptr != e) fail(tok, "invalid integer '" + tok.text + "'");
    return v;
  }

  uint64_t parseUnsigned(const Token& tok) const {
    if (tok.kind != Tok::Number) fail(tok, "expected an integer, found " + what(tok));
    const char* b = tok.text.data();
    const char* e = b + tok.text.size();
    uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(b, e, v);
    if (ec == std::errc::result_out_of_range) fail(tok, "integer " + tok.text + " is out of range");
    if (ec != std::errc() || ptr != e) fail(tok, "invalid unsigned integer '" + tok.text + "'");
    return v;
  }

  static bool looksFloat(const Token& tok) {
    if (tok.kind == Tok::Ident) return tok.text == "inf" || tok.text == "nan";
    if (tok.kind != Tok::Number) return false;
    std::string_view t = tok.text;
    if (!t.empty() && (t[0] == '-' || t[0] == '+')) t.remove_prefix(1);
    if (t.size() > 1 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) return false;
    return t.find_first_of(".eEin") != std::string_view::npos;
  }

  template <typename T>
  T parseFloat(const Token& tok) const {
    if (tok.kind != Tok::Number && !looksFloat(tok))
      fail(tok, "expected a number, found " + what(tok));
    const char* b = tok.text.data();
    const char* e = b + tok.text.size();
    T v = 0;
    auto [ptr, ec] = std::from_chars(b, e, v);
    if (ec == std::errc::result_out_of_range) fail(tok, "number " + tok.text + " is out of range");
    if (ec != std::errc() || ptr != e) fail(tok, "invalid number '" + tok.text + "'");
    return v;
  }

  // `0x...` bit patterns, for f16/bf16 elements and NaN payloads.
  std::optional<uint64_t> parseHexBits(const Token& tok, int max_digits) const {
    if (tok.kind != Tok::Number || tok.text.size() < 3 || tok.text[0] != '0' ||
        (tok.text[1] != 'x' && tok.text[1] != 'X'))
      return std::nullopt;
    const char* b = tok.text.data() + 2;
    const char* e = tok.text.data() + tok.text.size();
    uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(b, e, v, 16);
    if (ptr != e || (ec != std::errc() && ec != std::errc::result_out_of_range))
      fail(tok, "invalid hex number '" + tok.text + "'");
    if (ec == std::errc::result_out_of_range || (max_digits < 16 && (v >> (4 * max_digits)) != 0))
      fail(tok, "bit pattern " + tok.text + " is wider than " + std::to_string(4 * max_digits) +
                    " bits");
    return v;
  }

  // ---- types

  TensorType parseType() {
    const Token& dtype_tok = expect(Tok::Ident, "a dtype such as f32");
    std::optional<DType> dtype = parseDType(dtype_tok.text);
    if (!dtype) fail(dtype_tok, "unknown dtype '" + dtype_tok.text + "'");
    TensorType type;
    type.dtype = *dtype;
    expect(Tok::LBracket, "'[' after the dtype");
    // Zero dims count as one, so that no product of a subset of the dims
    // (strides, say) can overflow either.
    uint64_t span = dtypeSize(*dtype);
    if (!accept(Tok::RBracket)) {
      do {
        const Token& dim_tok = next();
        int64_t dim = parseInt(dim_tok);
        if (dim < 0) fail(dim_tok, "negative dimension " + dim_tok.text);
        uint64_t factor = dim == 0 ? 1 : static_cast<uint64_t>(dim);
        if (span > kMaxTypeBytes / factor)
          fail(dim_tok, "type " + dtype_tok.text + "[...] is too large");
        span *= factor;
        type.dims.push_back(dim);
      } while (accept(Tok::Comma));
      expect(Tok::RBracket, "',' or ']' in the shape");
    }
    return type;
  }

  // ---- constants

  void storeElement(const Token& tok, DType dtype, uint8_t* p) const {
    auto intIn = [&](int64_t lo, int64_t hi) {
      int64_t v = parseInt(tok);
      if (v < lo || v > hi)
        fail(tok, "value " + tok.text + " is out of range for " + std::string(dtypeName(dtype)));
      return v;
    };
    switch (dtype) {
      case DType::F32: {
        if (auto bits = parseHexBits(tok, 8)) {
          auto b = static_cast<uint32_t>(*bits);
          std::memcpy(p, &b, 4);
          return;
        }
        float f = parseFloat<float>(tok);
        std::memcpy(p, &f, 4);
        return;
      }
      case DType::F16:
      case DType::BF16: {
        auto bits = parseHexBits(tok, 4);
        if (!bits)
          fail(tok, std::string(dtypeName(dtype)) +
                        " elements are written as bit patterns such as 0x3c00");
        auto b = static_cast<uint16_t>(*bits);
        std::memcpy(p, &b, 2);
        return;
      }
      case DType::I8: {
        auto v = static_cast<int8_t>(intIn(-128, 127));
        std::memcpy(p, &v, 1);
        return;
      }
      case DType::U8:
        *p = static_cast<uint8_t>(intIn(0, 255));
        return;
      case DType::I32: {
        auto v = static_cast<int32_t>(
            intIn(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
        std::memcpy(p, &v, 4);
        return;
      }
      case DType::I64: {
        int64_t v = parseInt(tok);
        std::memcpy(p, &v, 8);
        return;
      }
      case DType::F64: {
        if (auto bits = parseHexBits(tok, 16)) {
          std::memcpy(p, &*bits, 8);
          return;
        }
        double f = parseFloat<double>(tok);
        std::memcpy(p, &f, 8);
        return;
      }
      case DType::I16: {
        auto v = static_cast<int16_t>(intIn(-32768, 32767));
        std::memcpy(p, &v, 2);
        return;
      }
      case DType::U16: {
        auto v = static_cast<uint16_t>(intIn(0, 65535));
        std::memcpy(p, &v, 2);
        return;
      }
      case DType::U32: {
        auto v = static_cast<uint32_t>(intIn(0, std::numeric_limits<uint32_t>::max()));
        std::memcpy(p, &v, 4);
        return;
      }
      case DType::U64: {
        uint64_t v = parseUnsigned(tok);
        std::memcpy(p, &v, 8);
        return;
      }
      case DType::F8E4M3FN:
      case DType::F8E4M3FNUZ:
      case DType::F8E5M2:
      case DType::F8E5M2FNUZ: {
        auto bits = parseHexBits(tok, 2);
        if (!bits)
          fail(tok, std::string(dtypeName(dtype)) +
                        " elements are written as bit patterns such as 0x38");
        *p = static_cast<uint8_t>(*bits);
        return;
      }
      case DType::I4:
        *p = subByteIntCode(intIn(-8, 7), dtype);
        return;
      case DType::U4:
        *p = subByteIntCode(intIn(0, 15), dtype);
        return;
      case DType::I2:
        *p = subByteIntCode(intIn(-2, 1), dtype);
        return;
      case DType::U2:
        *p = subByteIntCode(intIn(0, 3), dtype);
        return;
      case DType::F4E2M1: {
        auto bits = parseHexBits(tok, 1);
        if (!bits) fail(tok, "f4e2m1 elements are written as bit patterns such as 0x2");
        *p = static_cast<uint8_t>(*bits);
        return;
      }
      case DType::Bool:
        if (tok.kind == Tok::Ident && tok.text == "true")
          *p = 1;
        else if (tok.kind == Tok::Ident && tok.text == "false")
          *p = 0;
        else
          *p = static_cast<uint8_t>(intIn(0, 255));
        return;
    }
  }

  std::vector<uint8_t> parseConstantData(const TensorType& type) {
    const size_t size = dtypeSize(type.dtype);
    const uint64_t total = type.bytes();
    const Token& kind = expect(Tok::Ident, "dense<...> or dense_hex<\"...\">");
    if (kind.text == "dense_hex") {
      expect(Tok::Less, "'<' after dense_hex");
      const Token& hex = expect(Tok::String, "a string of hex digits");
      if (hex.text.size() % 2 != 0 || hex.text.size() / 2 != total)
        fail(hex, "dense_hex holds " + std::to_string(hex.text.size() / 2) + " bytes, type " +
                      type.str() + " needs " + std::to_string(total));
      std::vector<uint8_t> bytes(total);
      for (size_t i = 0; i < bytes.size(); ++i) {
        int hi = hexDigit(hex.text[2 * i]), lo = hexDigit(hex.text[2 * i + 1]);
        if (hi < 0 || lo < 0) fail(hex, "dense_hex holds a character that is not a hex digit");
        bytes[i] = static_cast<uint8_t>(hi * 16 + lo);
      }
      expect(Tok::Greater, "'>' after the dense_hex string");
      return bytes;
    }
    if (kind.text != "dense")
      fail(kind, "expected dense<...> or dense_hex<\"...\">, found '" + kind.text + "'");
    expect(Tok::Less, "'<' after dense");
    std::vector<uint8_t> bytes;
    if (accept(Tok::LBracket)) {
      uint8_t element[8];
      const Token* first_extra = nullptr;
      uint64_t count = 0;
      if (peek().kind != Tok::RBracket) {
        do {
          const Token& tok = next();
          storeElement(tok, type.dtype, element);
          if (count * size < total)
            bytes.insert(bytes.end(), element, element + size);
          else if (!first_extra)
            first_extra = &tok;
          ++count;
        } while (accept(Tok::Comma));
      }
      const Token& close = expect(Tok::RBracket, "',' or ']' in the constant's elements");
      if (count * size != total)
        fail(first_extra ? *first_extra : close, "constant has " + std::to_string(count) +
                                                     " elements, type " + type.str() + " has " +
                                                     std::to_string(total / size));
    } else {
      // A splat: one element for every position.
      const Token& tok = next();
      uint8_t element[8];
      storeElement(tok, type.dtype, element);
      if (total > kMaxSplatBytes)
        fail(tok, "splat constant of type " + type.str() + " is too large to expand");
      bytes.resize(total);
      for (uint64_t i = 0; i < total; i += size) std::memcpy(bytes.data() + i, element, size);
    }
    expect(Tok::Greater, "'>' after the constant's elements");
    return bytes;
  }

  // ---- attributes

  Attr parseAttrValue() {
    const Token& tok = peek();
    if (tok.kind == Tok::String) return next().text;
    if (tok.kind == Tok::LBracket || peekKeyword("ints") || peekKeyword("floats")) {
      // `[...]` is an int list unless an element is a float; `floats[...]` and
      // `ints[...]` say the kind outright (needed for an empty float list).
      enum { Any, Ints, Floats } forced = Any;
      if (tok.kind == Tok::Ident) {
        forced = tok.text == "ints" ? Ints : Floats;
        next();
      }
      expect(Tok::LBracket, "'[' to start the list");
      std::vector<const Token*> elements;
      bool any_float = forced == Floats;
      if (peek().kind != Tok::RBracket) {
        do {
          const Token& e = next();
          if (looksFloat(e)) {
            if (forced == Ints) fail(e, "float " + e.text + " in an ints[...] list");
            any_float = true;
          } else if (e.kind != Tok::Number) {
            fail(e, "expected a number in the list, found " + what(e));
          }
          elements.push_back(&e);
        } while (accept(Tok::Comma));
      }
      expect(Tok::RBracket, "',' or ']' in the list");
      if (any_float) {
        std::vector<double> floats;
        for (const Token* e : elements) floats.push_back(parseFloat<double>(*e));
        return floats;
      }
      std::vector<int64_t> ints;
      for (const Token* e : elements) ints.push_back(parseInt(*e));
      return ints;
    }
    if (looksFloat(tok)) return parseFloat<double>(next());
    if (tok.kind == Tok::Number) return parseInt(next());
    fail(tok, "expected an attribute value, found " + what(tok));
  }

  void parseAttrs(std::map<std::string, Attr>& attrs) {
    if (accept(Tok::RBrace)) return;
    do {
      const Token& key = peek();
      if (key.kind != Tok::Ident && key.kind != Tok::String)
        fail(key, "expected an attribute name, found " + what(key));
      next();
      if (attrs.count(key.text)) fail(key, "duplicate attribute '" + key.text + "'");
      expect(Tok::Equal, "'=' after the attribute name");
      attrs[key.text] = parseAttrValue();
    } while (accept(Tok::Comma));
    expect(Tok::RBrace, "',' or '}' in the attributes");
  }

  // ---- statements

  void parseStatement() {
    std::vector<const Token*> results;
    if (peek().kind == Tok::ValueName) {
      do results.push_back(&expect(Tok::ValueName, "a result name"));
      while (accept(Tok::Comma));
      expect(Tok::Equal, "',' or '=' after the result names");
    }
    std::set<std::string> seen;
    for (const Token* r : results) {
      checkNewName(*r);
      if (!seen.insert(r->text).second) fail(*r, "redefinition of value " + printedName(r->text));
    }

    // `constant` followed by anything but '(' is a constant; an op may still
    // be named "constant".
    if (peekKeyword("constant") && peek(1).kind != Tok::LParen) {
      const Token& keyword = next();
      if (results.size() != 1) fail(keyword, "a constant defines exactly one value");
      TensorType type = parseType();
      std::vector<uint8_t> bytes = parseConstantData(type);
      define(*results[0], graph_->addConstant(results[0]->text, type, std::move(bytes)));
      return;
    }

    const Token& op = peek();
    if (op.kind != Tok::Ident && op.kind != Tok::String)
      fail(op, "expected an op name, found " + what(op));
    next();
    expect(Tok::LParen, "'(' after the op name");
    std::vector<Value*> inputs;
    if (!accept(Tok::RParen)) {
      do {
        if (peekKeyword("_")) {
          next();
          inputs.push_back(nullptr);
        } else {
          inputs.push_back(lookup(expect(Tok::ValueName, "an operand (a value name or _)")));
        }
      } while (accept(Tok::Comma));
      expect(Tok::RParen, "',' or ')' after an operand");
    }

    std::map<std::string, Attr> attrs;
    if (accept(Tok::LBrace)) parseAttrs(attrs);

    const Token* name = nullptr;
    if (peekKeyword("name") && peek(1).kind == Tok::String) {
      next();
      name = &next();
    }

    std::vector<std::optional<TensorType>> types;
    if (const Token& colon = peek(); accept(Tok::Colon)) {
      bool parens = accept(Tok::LParen);
      do {
        if (parens && accept(Tok::Question))
          types.emplace_back();
        else
          types.emplace_back(parseType());
      } while (parens && accept(Tok::Comma));
      if (parens) expect(Tok::RParen, "',' or ')' in the result types");
      if (types.size() != results.size())
        fail(colon, std::to_string(types.size()) + " result types for " +
                        std::to_string(results.size()) + " results");
    }

    std::vector<std::string> result_names;
    for (const Token* r : results) result_names.push_back(r->text);
    const std::string node_name = name ? name->text : "";
    Node* node =
        graph_->addNode(op.text, node_name, std::move(inputs), results.size(), result_names);
    if (!node_name.empty() && node->name != node_name)
      fail(*name, "node name \"" + node_name +
                      "\" is already used (a node without a name clause takes its op's name)");
    node->attrs = std::move(attrs);
    for (size_t i = 0; i < results.size(); ++i) {
      define(*results[i], node->outputs[i]);
      if (i < types.size() && types[i]) {
        node->outputs[i]->type = *types[i];
        node->outputs[i]->typed = true;
      }
    }
  }

  const std::string& source_;
  std::vector<Token> tokens_;  // never empty: ends with Tok::End
  size_t pos_ = 0;
  std::unique_ptr<Graph> graph_;
  std::unordered_map<std::string, Value*> values_;
};

}  // namespace

std::string printGraph(const Graph& graph) {
  std::string out = "graph ";
  appendName(out, '@', graph.name);
  out += '(';
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    if (i) out += ", ";
    appendValueRef(out, graph.inputs[i]);
    if (graph.inputs[i]) out += ": " + graph.inputs[i]->type.str();
  }
  out += ") -> (";
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    if (i) out += ", ";
    appendValueRef(out, graph.outputs[i]);
  }
  out += ") {\n";
  // Constants first, in creation order: they precede every use that way.
  for (const auto& v : graph.values) {
    if (!v->isConstant()) continue;
    out += "  ";
    appendName(out, '%', v->name);
    out += " = constant " + v->type.str() + " ";
    appendConstantData(out, *v);
    out += '\n';
  }
  for (const auto& node : graph.nodes) {
    appendNode(out, *node);
    out += '\n';
    // An If's or Loop's graphs, indented below it: for reading (parseGraph
    // reads no such blocks).
    for (size_t k = 0; k < node->subgraphs.size(); ++k) {
      const char* role = node->op == "If" ? (k == 0 ? "then" : "else") : "body";
      std::string text = node->subgraphs[k] ? printGraph(*node->subgraphs[k]) : "null\n";
      out += "    ";
      out += role;
      out += ": ";
      for (size_t at = 0; at < text.size(); ++at) {
        out += text[at];
        if (text[at] == '\n' && at + 1 < text.size()) out += "    ";
      }
    }
  }
  out += "}\n";
  return out;
}

std::unique_ptr<Graph> parseGraph(std::string_view text, const std::string& source) {
  return Parser(text, source).parse();
}

}  // namespace nanoc
