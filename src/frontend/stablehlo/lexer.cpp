#include "frontend/stablehlo/lexer.h"

#include <array>
#include <cstring>

namespace orrery::frontend::stablehlo {
namespace {

enum CharClass : std::uint8_t {
  kLetter = 1,       // [a-zA-Z_]
  kDigit = 2,        // [0-9]
  kIdentPunct = 4,   // [$.] continue a bare identifier
  kSuffixPunct = 8,  // [$._-] continue a suffix identifier (%name, ^bb, #alias)
  kHexDigit = 16,
  kSpace = 32,
  kAngleSpecial = 64,  // the characters skip_angle_group must look at: < > " - /
};

constexpr std::array<std::uint8_t, 256> make_classes() {
  std::array<std::uint8_t, 256> classes{};
  for (int c = 'a'; c <= 'z'; ++c) classes[c] |= kLetter;
  for (int c = 'A'; c <= 'Z'; ++c) classes[c] |= kLetter;
  classes['_'] |= kLetter | kSuffixPunct;
  for (int c = '0'; c <= '9'; ++c) classes[c] |= kDigit | kHexDigit;
  for (int c = 'a'; c <= 'f'; ++c) classes[c] |= kHexDigit;
  for (int c = 'A'; c <= 'F'; ++c) classes[c] |= kHexDigit;
  classes['$'] |= kIdentPunct | kSuffixPunct;
  classes['.'] |= kIdentPunct | kSuffixPunct;
  classes['-'] |= kSuffixPunct;
  classes[' '] |= kSpace;
  classes['\t'] |= kSpace;
  classes['\n'] |= kSpace;
  classes['\r'] |= kSpace;
  classes['\f'] |= kSpace;
  classes['\v'] |= kSpace;
  for (const char c : {'<', '>', '"', '-', '/'}) {
    classes[static_cast<unsigned char>(c)] |= kAngleSpecial;
  }
  return classes;
}
constexpr std::array<std::uint8_t, 256> kClasses = make_classes();

inline bool has(char c, std::uint8_t mask) {
  return (kClasses[static_cast<unsigned char>(c)] & mask) != 0;
}

}  // namespace

std::string_view token_kind_spelling(TokenKind kind) {
  switch (kind) {
    case TokenKind::kEof:
      return "end of file";
    case TokenKind::kError:
      return "invalid character";
    case TokenKind::kBareIdentifier:
      return "identifier";
    case TokenKind::kPercentIdentifier:
      return "SSA value";
    case TokenKind::kCaretIdentifier:
      return "block label";
    case TokenKind::kHashIdentifier:
      return "attribute";
    case TokenKind::kExclamationIdentifier:
      return "dialect type";
    case TokenKind::kAtIdentifier:
      return "symbol";
    case TokenKind::kInteger:
      return "integer";
    case TokenKind::kFloat:
      return "float";
    case TokenKind::kString:
      return "string";
    case TokenKind::kLeftParen:
      return "'('";
    case TokenKind::kRightParen:
      return "')'";
    case TokenKind::kLeftSquare:
      return "'['";
    case TokenKind::kRightSquare:
      return "']'";
    case TokenKind::kLeftBrace:
      return "'{'";
    case TokenKind::kRightBrace:
      return "'}'";
    case TokenKind::kLess:
      return "'<'";
    case TokenKind::kGreater:
      return "'>'";
    case TokenKind::kComma:
      return "','";
    case TokenKind::kColon:
      return "':'";
    case TokenKind::kEqual:
      return "'='";
    case TokenKind::kArrow:
      return "'->'";
    case TokenKind::kQuestion:
      return "'?'";
    case TokenKind::kStar:
      return "'*'";
    case TokenKind::kPlus:
      return "'+'";
    case TokenKind::kMinus:
      return "'-'";
    case TokenKind::kVerticalBar:
      return "'|'";
    case TokenKind::kFileMetadataBegin:
      return "'{-#'";
    case TokenKind::kFileMetadataEnd:
      return "'#-}'";
  }
  return "token";
}

Lexer::Lexer(std::string_view buffer, std::size_t begin, std::size_t end)
    : buffer_(buffer), current_(buffer.data() + begin), end_(buffer.data() + end) {}

// The first position at or after p whose character is not in `mask` (a local pointer, so that the
// loop runs in a register).
const char* Lexer::scan_while(const char* p, std::uint8_t mask) const {
  while (p < end_ && has(*p, mask)) {
    ++p;
  }
  return p;
}

void Lexer::skip_whitespace_and_comments() {
  const char* p = current_;
  for (;;) {
    p = scan_while(p, kSpace);
    if (p + 1 < end_ && p[0] == '/' && p[1] == '/') {
      const void* newline = std::memchr(p, '\n', static_cast<std::size_t>(end_ - p));
      p = newline == nullptr ? end_ : static_cast<const char*>(newline) + 1;
      continue;
    }
    current_ = p;
    return;
  }
}

Token Lexer::lex() {
  skip_whitespace_and_comments();
  const char* start = current_;
  if (current_ >= end_) {
    return Token{TokenKind::kEof,
                 std::string_view(end_, 0)};  // NOLINT(bugprone-string-constructor): empty at the end
  }
  const char c = *current_++;
  switch (c) {
    case '(':
      return make(TokenKind::kLeftParen, start);
    case ')':
      return make(TokenKind::kRightParen, start);
    case '[':
      return make(TokenKind::kLeftSquare, start);
    case ']':
      return make(TokenKind::kRightSquare, start);
    case '}':
      return make(TokenKind::kRightBrace, start);
    case '<':
      return make(TokenKind::kLess, start);
    case '>':
      return make(TokenKind::kGreater, start);
    case ',':
      return make(TokenKind::kComma, start);
    case ':':
      return make(TokenKind::kColon, start);
    case '=':
      return make(TokenKind::kEqual, start);
    case '?':
      return make(TokenKind::kQuestion, start);
    case '*':
      return make(TokenKind::kStar, start);
    case '+':
      return make(TokenKind::kPlus, start);
    case '|':
      return make(TokenKind::kVerticalBar, start);
    case '{':
      if (end_ - current_ >= 2 && current_[0] == '-' && current_[1] == '#') {
        current_ += 2;
        return make(TokenKind::kFileMetadataBegin, start);
      }
      return make(TokenKind::kLeftBrace, start);
    case '-':
      if (current_ < end_ && *current_ == '>') {
        ++current_;
        return make(TokenKind::kArrow, start);
      }
      return make(TokenKind::kMinus, start);
    case '"':
      return lex_string(start);
    case '%':
      return lex_prefixed_identifier(start, TokenKind::kPercentIdentifier);
    case '^':
      return lex_prefixed_identifier(start, TokenKind::kCaretIdentifier);
    case '!':
      return lex_prefixed_identifier(start, TokenKind::kExclamationIdentifier);
    case '#':
      if (end_ - current_ >= 2 && current_[0] == '-' && current_[1] == '}') {
        current_ += 2;
        return make(TokenKind::kFileMetadataEnd, start);
      }
      return lex_prefixed_identifier(start, TokenKind::kHashIdentifier);
    case '@':
      return lex_at_identifier(start);
    default:
      if (has(c, kDigit)) {
        return lex_number(start);
      }
      if (has(c, kLetter)) {
        return lex_bare_identifier(start);
      }
      return make(TokenKind::kError, start);
  }
}

Token Lexer::lex_bare_identifier(const char* start) {
  current_ = scan_while(current_, kLetter | kDigit | kIdentPunct);
  return make(TokenKind::kBareIdentifier, start);
}

Token Lexer::lex_prefixed_identifier(const char* start, TokenKind kind) {
  // '!' and '#' take a bare-id (dialect.name); '%' and '^' a suffix-id, which also allows '-'
  // and a leading digit.
  const std::uint8_t continuation =
      (kind == TokenKind::kPercentIdentifier || kind == TokenKind::kCaretIdentifier)
          ? (kLetter | kDigit | kSuffixPunct)
          : (kLetter | kDigit | kIdentPunct);
  current_ = scan_while(current_, continuation);
  if (current_ == start + 1) {
    return make(TokenKind::kError, start);
  }
  return make(kind, start);
}

Token Lexer::lex_at_identifier(const char* start) {
  if (current_ < end_ && *current_ == '"') {
    const Token quoted = lex_string(current_++);
    return quoted.is(TokenKind::kError) ? make(TokenKind::kError, start)
                                        : make(TokenKind::kAtIdentifier, start);
  }
  return lex_prefixed_identifier(start, TokenKind::kAtIdentifier);
}

Token Lexer::lex_number(const char* start) {
  if (start[0] == '0' && current_ < end_ && *current_ == 'x' && current_ + 1 < end_ &&
      has(current_[1], kHexDigit)) {
    current_ = scan_while(current_ + 1, kHexDigit);
    return make(TokenKind::kInteger, start);
  }
  current_ = scan_while(current_, kDigit);
  if (current_ >= end_ || *current_ != '.') {
    return make(TokenKind::kInteger, start);
  }
  current_ = scan_while(current_ + 1, kDigit);
  if (current_ < end_ && (*current_ == 'e' || *current_ == 'E')) {
    const char* exponent = current_ + 1;
    if (exponent < end_ && (*exponent == '+' || *exponent == '-')) {
      ++exponent;
    }
    if (exponent < end_ && has(*exponent, kDigit)) {
      current_ = scan_while(exponent, kDigit);
    }
  }
  return make(TokenKind::kFloat, start);
}

Token Lexer::lex_string(const char* start) {
  while (current_ < end_) {
    const char c = *current_++;
    if (c == '"') {
      return make(TokenKind::kString, start);
    }
    if (c == '\n' || c == '\r') {
      break;
    }
    if (c == '\\' && current_ < end_) {
      ++current_;
    }
  }
  current_ = start + 1;  // report the opening quote
  return make(TokenKind::kError, start);
}

std::size_t Lexer::skip_angle_group(std::size_t open) const {
  const char* p = buffer_.data() + open + 1;
  int depth = 1;
  while (p < end_) {
    // Most bytes of a type or a dense literal are digits, letters, 'x' and ','; skip them fast.
    while (p < end_ && !has(*p, kAngleSpecial)) {
      ++p;
    }
    if (p >= end_) {
      break;
    }
    const char c = *p++;
    if (c == '<') {
      ++depth;
    } else if (c == '>') {
      if (--depth == 0) {
        return static_cast<std::size_t>(p - buffer_.data());
      }
    } else if (c == '-' && p < end_ && *p == '>') {
      ++p;  // '->' inside affine maps
    } else if (c == '"') {
      while (p < end_ && *p != '"') {
        if (*p == '\n') {
          return std::string_view::npos;
        }
        p += (*p == '\\') ? 2 : 1;
      }
      ++p;
    } else if (c == '/' && p < end_ && *p == '/') {
      // A comment inside a multi-line group: skip to the end of its line.
      const void* newline = std::memchr(p, '\n', static_cast<std::size_t>(end_ - p));
      p = newline == nullptr ? end_ : static_cast<const char*>(newline);
    }
  }
  return std::string_view::npos;
}

bool Lexer::newline_between(std::size_t from, std::size_t to) const {
  return std::memchr(buffer_.data() + from, '\n', to > from ? to - from : 0) != nullptr;
}

}  // namespace orrery::frontend::stablehlo
