// The MLIR lexer (after mlir/lib/AsmParser/Lexer.cpp): one switch over the current character that
// returns punctuation at once and hands longer constructs to small helpers. The lexer's whole state
// is a position in the buffer, so a parser can save and restore it to look ahead, and can skip a
// balanced `<...>` group (a type or a dense literal) by scanning bytes without making tokens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "frontend/stablehlo/token.h"

namespace orrery::frontend::stablehlo {

class Lexer {
 public:
  // Lexes buffer[begin, end); offsets are relative to the whole buffer.
  Lexer(std::string_view buffer, std::size_t begin, std::size_t end);

  Token lex();

  [[nodiscard]] std::size_t position() const { return static_cast<std::size_t>(current_ - buffer_.data()); }
  void reset(std::size_t position) { current_ = buffer_.data() + position; }
  [[nodiscard]] std::string_view buffer() const { return buffer_; }
  [[nodiscard]] std::size_t end() const { return static_cast<std::size_t>(end_ - buffer_.data()); }

  // Given the offset of a '<', the offset just past its matching '>', skipping string literals,
  // '//' comments and '->' arrows; npos when the group is not closed before the end of the input.
  [[nodiscard]] std::size_t skip_angle_group(std::size_t open) const;
  // True when a newline lies between offsets `from` and `to` (the gap between two tokens).
  [[nodiscard]] bool newline_between(std::size_t from, std::size_t to) const;

 private:
  Token make(TokenKind kind, const char* start) const {
    return Token{kind, std::string_view(start, static_cast<std::size_t>(current_ - start))};
  }
  void skip_whitespace_and_comments();
  [[nodiscard]] const char* scan_while(const char* p, std::uint8_t mask) const;
  // bare-id ::= (letter|[_]) (letter|digit|[_$.])*
  Token lex_bare_identifier(const char* start);
  // %suffix-id, ^suffix-id, #alias, !alias, @symbol
  Token lex_prefixed_identifier(const char* start, TokenKind kind);
  // @bare-id | @string-literal
  Token lex_at_identifier(const char* start);
  // decimal-literal ::= digit+ ; hex ::= 0x[0-9a-fA-F]+ ; float ::= digit+ '.' digit* ([eE][+-]?digit+)?
  Token lex_number(const char* start);
  // string-literal ::= '"' [^"\n\f\v\r]* '"' with backslash escapes
  Token lex_string(const char* start);

  std::string_view buffer_;
  const char* current_;
  const char* end_;
};

}  // namespace orrery::frontend::stablehlo
