#include "frontend/stablehlo/attribute_reader.h"

#include <charconv>

namespace orrery::frontend::stablehlo {

AttributeReader::AttributeReader(std::string_view buffer, std::uint32_t begin, std::uint32_t length,
                                 std::string_view what, std::uint32_t anchor, Diagnostics& diagnostics)
    : lexer_(buffer, begin, begin + length),
      what_(what),
      begin_(begin),
      anchor_(anchor),
      diagnostics_(diagnostics) {
  token_ = lexer_.lex();
}

void AttributeReader::next() {
  token_ = lexer_.lex();
}

Status AttributeReader::fail(const std::string& message) {
  const SourceLocation where = diagnostics_.location(at_end() ? begin_ : offset());
  return diagnostics_.error_at(anchor_, "malformed " + std::string(what_) + ": " + message,
                               {"in the value of '" + std::string(what_) + "' at line " +
                                std::to_string(where.line) + ", column " + std::to_string(where.column)});
}

Status AttributeReader::expect(TokenKind kind) {
  if (!token_.is(kind)) {
    return fail("expected " + std::string(token_kind_spelling(kind)) + ", found " +
                (at_end() ? std::string("the end of the value") : "'" + std::string(token_.text) + "'"));
  }
  next();
  return Status::success();
}

Status AttributeReader::read_int(std::int64_t& value) {
  if (token_.is_keyword("true") || token_.is_keyword("false")) {
    value = token_.is_keyword("true") ? 1 : 0;
    next();
  } else {
    const bool negative = token_.is(TokenKind::kMinus);
    if (negative) {
      next();
    }
    if (!token_.is(TokenKind::kInteger)) {
      return fail("expected an integer");
    }
    std::string_view digits = token_.text;
    int base = 10;
    if (digits.size() > 2 && digits[1] == 'x') {
      digits.remove_prefix(2);
      base = 16;
    }
    std::uint64_t magnitude = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, base);
    if (error != std::errc() || end != digits.data() + digits.size()) {
      return fail("integer out of range");
    }
    value = negative ? -static_cast<std::int64_t>(magnitude) : static_cast<std::int64_t>(magnitude);
    next();
  }
  if (token_.is(TokenKind::kColon)) {  // `1 : i64`
    next();
    if (!token_.is(TokenKind::kBareIdentifier)) {
      return fail("expected a type after ':'");
    }
    next();
  }
  return Status::success();
}

// element (`,` element)* up to `close` (not consumed); an empty list is fine.
template <class ReadElement>
Status AttributeReader::read_list(TokenKind close, ReadElement&& element) {
  while (!token_.is(close)) {
    ORRERY_TRY(element());
    if (!token_.is(TokenKind::kComma)) {
      break;
    }
    next();
  }
  return Status::success();
}

Status AttributeReader::read_int_into(std::vector<std::int64_t>& values) {
  std::int64_t value = 0;
  ORRERY_TRY(read_int(value));
  values.push_back(value);
  return Status::success();
}

Status AttributeReader::read_int_list(std::vector<std::int64_t>& values, std::vector<std::int64_t>* shape) {
  if (token_.is(TokenKind::kLeftSquare)) {
    if (++list_depth_ > kMaxListDepth) {
      return fail("lists nested more than " + std::to_string(kMaxListDepth) + " levels deep");
    }
    next();
    ORRERY_TRY(read_list(TokenKind::kRightSquare, [&] {
      return token_.is(TokenKind::kLeftSquare) ? read_int_list(values) : read_int_into(values);
    }));
    --list_depth_;
    return expect(TokenKind::kRightSquare);
  }
  if (token_.is_keyword("array")) {  // array<i64: 1, 2> or array<i64>
    next();
    ORRERY_TRY(expect(TokenKind::kLess));
    if (!token_.is(TokenKind::kBareIdentifier)) {
      return fail("expected the element type of array<>");
    }
    next();
    if (token_.is(TokenKind::kColon)) {
      next();
      ORRERY_TRY(read_list(TokenKind::kGreater, [&] { return read_int_into(values); }));
    }
    return expect(TokenKind::kGreater);
  }
  if (token_.is_keyword("dense")) {
    return read_dense(values, shape);
  }
  return read_int_into(values);
}

// dense<...> (`:` tensor<dims x type>)? ; elements in nested brackets, or one splat element.
Status AttributeReader::read_dense(std::vector<std::int64_t>& values, std::vector<std::int64_t>* shape) {
  next();
  ORRERY_TRY(expect(TokenKind::kLess));
  const std::size_t first = values.size();
  int depth = 0;
  while (!token_.is(TokenKind::kGreater) || depth > 0) {
    if (token_.is(TokenKind::kLeftSquare)) {
      ++depth;
      next();
    } else if (token_.is(TokenKind::kRightSquare)) {
      if (--depth < 0) {
        return fail("unbalanced ']'");
      }
      next();
    } else if (token_.is(TokenKind::kComma)) {
      next();
    } else if (at_end()) {
      return fail("unterminated dense literal");
    } else {
      std::int64_t value = 0;
      ORRERY_TRY(read_int(value));
      values.push_back(value);
    }
  }
  if (depth != 0) {
    return fail("unbalanced '['");
  }
  next();
  std::vector<std::int64_t> dims;
  if (token_.is(TokenKind::kColon)) {
    next();
    ORRERY_TRY(read_type_shape(dims));
  }
  std::int64_t elements = 1;
  for (const std::int64_t d : dims) {
    elements *= d;
  }
  const std::size_t read = values.size() - first;
  if (read == 1 && elements > 1) {  // a splat
    values.insert(values.end(), static_cast<std::size_t>(elements - 1), values.back());
  } else if (!dims.empty() && static_cast<std::int64_t>(read) != elements) {
    return fail("the literal has " + std::to_string(read) + " elements but its type has " +
                std::to_string(elements));
  }
  if (shape != nullptr) {
    *shape = dims;
  }
  return Status::success();
}

// tensor<AxBxT>: the dimensions A, B.
Status AttributeReader::read_type_shape(std::vector<std::int64_t>& shape) {
  if (!token_.is_keyword("tensor")) {
    return fail("expected a tensor type");
  }
  const std::size_t open = offset() + token_.text.size();
  const std::size_t close = lexer_.skip_angle_group(open);
  if (close == std::string_view::npos || lexer_.buffer()[open] != '<') {
    return fail("malformed tensor type");
  }
  const std::string_view body = lexer_.buffer().substr(open + 1, close - open - 2);
  std::size_t i = 0;
  while (i < body.size() && body[i] >= '0' && body[i] <= '9') {
    std::int64_t dim = 0;
    const auto [end, error] = std::from_chars(body.data() + i, body.data() + body.size(), dim);
    if (error != std::errc() || end == body.data() + body.size() || *end != 'x') {
      break;
    }
    shape.push_back(dim);
    i = static_cast<std::size_t>(end - body.data()) + 1;
  }
  lexer_.reset(close);
  next();
  return Status::success();
}

Status AttributeReader::read_enum(std::string_view& word) {
  if (token_.is(TokenKind::kBareIdentifier)) {
    word = token_.text;
    next();
    return Status::success();
  }
  if (!token_.is(TokenKind::kHashIdentifier)) {
    return fail("expected an enum value");
  }
  next();
  ORRERY_TRY(expect(TokenKind::kLess));
  while (token_.is(TokenKind::kBareIdentifier)) {
    word = token_.text;
    next();
  }
  return expect(TokenKind::kGreater);
}

Status AttributeReader::read_name(std::string_view& name) {
  if (token_.is(TokenKind::kAtIdentifier)) {
    name = token_.text.substr(1);
  } else if (token_.is(TokenKind::kString)) {
    name = token_.text;
  } else {
    return fail("expected a symbol or a string");
  }
  if (!name.empty() && name.front() == '"') {
    name = name.substr(1, name.size() - 2);
  }
  next();
  return Status::success();
}

Status AttributeReader::skip_value() {
  int depth = 0;
  while (!at_end()) {
    const TokenKind kind = token_.kind;
    if (depth == 0 && (kind == TokenKind::kComma || kind == TokenKind::kGreater ||
                       kind == TokenKind::kRightBrace || kind == TokenKind::kRightSquare)) {
      return Status::success();
    }
    if (kind == TokenKind::kLess || kind == TokenKind::kLeftSquare || kind == TokenKind::kLeftBrace ||
        kind == TokenKind::kLeftParen) {
      ++depth;
    } else if (kind == TokenKind::kGreater || kind == TokenKind::kRightSquare ||
               kind == TokenKind::kRightBrace || kind == TokenKind::kRightParen) {
      --depth;
    }
    next();
  }
  return Status::success();
}

}  // namespace orrery::frontend::stablehlo
