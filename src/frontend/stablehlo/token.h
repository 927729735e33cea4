// Tokens of MLIR's textual syntax: a kind and a view into the source buffer. Line and column are
// not stored; they are computed from the view's offset when a diagnostic needs them.
#pragma once

#include <cstdint>
#include <string_view>

namespace orrery::frontend::stablehlo {

enum class TokenKind : std::uint8_t {
  kEof,
  kError,  // a character or construct the lexer does not accept; text is the offending span
  // Identifiers.
  kBareIdentifier,         // stablehlo.add, tensor, x, EQ
  kPercentIdentifier,      // %0, %arg3, %cst_2
  kCaretIdentifier,        // ^bb0
  kHashIdentifier,         // #loc3, #stablehlo.gather
  kExclamationIdentifier,  // !stablehlo.token
  kAtIdentifier,           // @main, @"quoted name"
  // Literals.
  kInteger,  // 42, 0x7F800000
  kFloat,    // 1.0, 2.5e-3
  kString,   // "text" (with its quotes)
  // Punctuation.
  kLeftParen,
  kRightParen,
  kLeftSquare,
  kRightSquare,
  kLeftBrace,
  kRightBrace,
  kLess,
  kGreater,
  kComma,
  kColon,
  kEqual,
  kArrow,  // ->
  kQuestion,
  kStar,
  kPlus,
  kMinus,
  kVerticalBar,
  kFileMetadataBegin,  // {-#
  kFileMetadataEnd,    // #-}
};

struct Token {
  TokenKind kind = TokenKind::kEof;
  std::string_view text;

  [[nodiscard]] bool is(TokenKind k) const { return kind == k; }
  [[nodiscard]] bool is_keyword(std::string_view word) const {
    return kind == TokenKind::kBareIdentifier && text == word;
  }
};

// A readable name for a token kind in diagnostics ("'('", "identifier", "end of file").
std::string_view token_kind_spelling(TokenKind kind);

}  // namespace orrery::frontend::stablehlo
