// Reads the values of the attributes that lowering interprets, from their source text: integers,
// integer lists (`[1, 2]`, `array<i64: 1, 2>`, `dense<[[0, 1]]> : tensor<1x2xi64>` with splats
// expanded), `#dialect.struct<key = value, ...>` records, and enum keywords (`LT`,
// `#stablehlo<comparison_direction LT>`). Errors name the attribute: "malformed replica_groups: ...".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/stablehlo/diagnostics.h"
#include "frontend/stablehlo/lexer.h"

namespace orrery::frontend::stablehlo {

class AttributeReader {
 public:
  // Reads buffer[begin, begin + length), the value of the attribute called `what`. Errors are
  // reported at `anchor` (the op's location, as MLIR's verifier does), with a note giving the
  // position inside the value.
  AttributeReader(std::string_view buffer, std::uint32_t begin, std::uint32_t length, std::string_view what,
                  std::uint32_t anchor, Diagnostics& diagnostics);

  [[nodiscard]] const Token& token() const { return token_; }
  void next();
  [[nodiscard]] bool at_end() const { return token_.is(TokenKind::kEof); }
  Status fail(const std::string& message);
  Status expect(TokenKind kind);

  // integer ::= `-`? (decimal | hex) | `true` | `false` (1 and 0), optionally followed by `: type`.
  Status read_int(std::int64_t& value);
  // `[...]` (nested lists flattened) | `array<T: ...>` | `dense<...> (: tensor<...>)?` | integer.
  // For dense literals `shape` receives the tensor type's dimensions (and splats are expanded).
  Status read_int_list(std::vector<std::int64_t>& values, std::vector<std::int64_t>* shape = nullptr);
  // The last bare word of an enum attribute: `LT` in `#stablehlo<comparison_direction LT>` or `LT`.
  Status read_enum(std::string_view& word);
  // A symbol `@name` or a string `"name"`, without its decoration.
  Status read_name(std::string_view& name);
  // `#dialect.name<` (`raw`)? key `=` value (`,` key `=` value)* `>`: calls on_key(key) with the
  // reader at the value, which on_key must consume (skip_value() when not interested).
  template <class OnKey>
  Status read_record(OnKey&& on_key);
  // Skips one value (a token, or a balanced group), up to a `,` or the closing bracket.
  Status skip_value();

 private:
  Status read_dense(std::vector<std::int64_t>& values, std::vector<std::int64_t>* shape);
  Status read_int_into(std::vector<std::int64_t>& values);
  template <class ReadElement>
  Status read_list(TokenKind close, ReadElement&& element);
  Status read_type_shape(std::vector<std::int64_t>& shape);
  [[nodiscard]] std::size_t offset() const {
    return static_cast<std::size_t>(token_.text.data() - lexer_.buffer().data());
  }

  static constexpr int kMaxListDepth = 64;

  Lexer lexer_;
  Token token_;
  int list_depth_ = 0;
  std::string_view what_;
  std::uint32_t begin_;
  std::uint32_t anchor_;
  Diagnostics& diagnostics_;
};

template <class OnKey>
Status AttributeReader::read_record(OnKey&& on_key) {
  if (!token_.is(TokenKind::kHashIdentifier)) {
    return fail("expected '#...<'");
  }
  next();
  ORRERY_TRY(expect(TokenKind::kLess));
  if (token_.is_keyword("raw")) {
    next();
  }
  while (!token_.is(TokenKind::kGreater)) {
    if (!token_.is(TokenKind::kBareIdentifier)) {
      return fail("expected a field name");
    }
    const std::string_view key = token_.text;
    next();
    ORRERY_TRY(expect(TokenKind::kEqual));
    ORRERY_TRY(on_key(key));
    if (!token_.is(TokenKind::kComma)) {
      break;
    }
    next();
  }
  return expect(TokenKind::kGreater);
}

}  // namespace orrery::frontend::stablehlo
