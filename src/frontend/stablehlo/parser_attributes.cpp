// Attributes: dictionaries, the extent of attribute values, balanced groups, locations. Values are
// not interpreted here; the parser records their source span and lowering reads the few it needs.
#include <string>

#include "frontend/stablehlo/parser.h"

namespace orrery::frontend::stablehlo {

using workload::OpKind;

namespace {

TokenKind closer_of(TokenKind opener) {
  switch (opener) {
    case TokenKind::kLeftParen:
      return TokenKind::kRightParen;
    case TokenKind::kLeftSquare:
      return TokenKind::kRightSquare;
    case TokenKind::kLeftBrace:
      return TokenKind::kRightBrace;
    case TokenKind::kFileMetadataBegin:
      return TokenKind::kFileMetadataEnd;
    default:
      return TokenKind::kEof;
  }
}

bool is_closer(TokenKind kind) {
  return kind == TokenKind::kRightParen || kind == TokenKind::kRightSquare ||
         kind == TokenKind::kRightBrace || kind == TokenKind::kGreater || kind == TokenKind::kFileMetadataEnd;
}

}  // namespace

void Parser::add_attribute(std::vector<workload::Attribute>& attributes, std::string_view name,
                           std::size_t begin, std::size_t end) {
  attributes.push_back(workload::Attribute{module_->builder.intern(name), static_cast<std::uint32_t>(begin),
                                           static_cast<std::uint32_t>(end - begin)});
}

// attr-dict ::= `{` (entry (`,` entry)*)? `}` ; entry ::= (bare-id | string) (`=` value)?
Status Parser::parse_attribute_dictionary(std::vector<workload::Attribute>& attributes) {
  if (!token_.is(TokenKind::kLeftBrace)) {
    return error_expected("'{' to start an attribute dictionary");
  }
  return parse_delimited_list(TokenKind::kRightBrace, "to close the attribute dictionary", [&] {
    std::string_view name;
    if (token_.is(TokenKind::kBareIdentifier)) {
      name = token_.text;
    } else if (token_.is(TokenKind::kString)) {
      name = token_.text.substr(1, token_.text.size() - 2);
    } else {
      return error_expected("an attribute name");
    }
    const std::size_t name_end = token_end(token_);
    consume();
    if (!token_.is(TokenKind::kEqual)) {
      add_attribute(attributes, name, name_end, name_end);  // a unit attribute
      return Status::success();
    }
    consume();
    std::uint32_t begin = 0;
    std::uint32_t length = 0;
    ORRERY_TRY(parse_attribute_value(begin, length, ValueContext::kDictionary));
    add_attribute(attributes, name, begin, begin + length);
    return Status::success();
  });
}

// The extent of one attribute value: a sequence of tokens and balanced groups (`<...>` skipped as
// bytes, so dense literals cost one scan). In a dictionary it ends at `,` or the closing bracket;
// an alias definition (`#name = value` at top level) also ends at the end of its line; in a pretty
// op (`dims = [0, 1]`, `window = {...}`, `dim_numbers = [b, 0]x[0, i]->[b, 0]`) it also ends at `:`,
// at a following `{` or `(`, at `keyword =`, at a location `loc(...)`, and at a new line.
Status Parser::parse_attribute_value(std::uint32_t& begin, std::uint32_t& length, ValueContext context) {
  const std::size_t start = offset(token_);
  bool first = true;
  for (;;) {
    const TokenKind kind = token_.kind;
    if (kind == TokenKind::kEof || kind == TokenKind::kComma || is_closer(kind)) {
      break;
    }
    if (!first && context != ValueContext::kDictionary && on_new_line()) {
      break;
    }
    if (!first && context == ValueContext::kPrettyOp) {
      const bool ends =
          kind == TokenKind::kColon || kind == TokenKind::kLeftBrace || kind == TokenKind::kLeftParen ||
          (kind == TokenKind::kBareIdentifier &&
           (peek().is(TokenKind::kEqual) || (token_.is_keyword("loc") && peek().is(TokenKind::kLeftParen))));
      if (ends) {
        break;
      }
    }
    if (first && kind == TokenKind::kColon) {
      break;
    }
    switch (kind) {
      case TokenKind::kLeftParen:
      case TokenKind::kLeftSquare:
      case TokenKind::kLeftBrace:
      case TokenKind::kLess:
        ORRERY_TRY(skip_group());
        break;
      case TokenKind::kError:
        return error_expected("an attribute value");
      default:
        consume();
        break;
    }
    first = false;
  }
  if (first) {
    return error_expected("an attribute value");
  }
  begin = static_cast<std::uint32_t>(start);
  length = static_cast<std::uint32_t>(previous_end_ - start);
  return Status::success();
}

// Skips a balanced group starting at the current token: `<...>` as bytes, `(...)`, `[...]` and
// `{...}` as tokens (their `<...>` again as bytes).
Status Parser::skip_group() {
  const std::size_t open = offset(token_);
  if (token_.is(TokenKind::kLess)) {
    const std::size_t end = lexer_.skip_angle_group(open);
    if (end == std::string_view::npos) {
      return error_at(open, "unbalanced '<': no matching '>'");
    }
    lexer_.reset(end);
    previous_end_ = end;
    token_ = lexer_.lex();
    return Status::success();
  }
  std::vector<TokenKind>& closers = closer_stack_;
  closers.clear();
  closers.push_back(closer_of(token_.kind));
  consume();
  while (!closers.empty()) {
    const TokenKind kind = token_.kind;
    if (kind == TokenKind::kEof || kind == TokenKind::kError) {
      if (kind == TokenKind::kError) {
        return error_here("unexpected character " + describe_character(token_.text[0]));
      }
      return error_at(open, "unbalanced '" + std::string(text_.substr(open, 1)) + "': no matching '" +
                                std::string(token_kind_spelling(closers.back())).substr(1, 1) + "'");
    }
    if (kind == TokenKind::kLess) {
      const std::size_t end = lexer_.skip_angle_group(offset(token_));
      if (end == std::string_view::npos) {
        return error_here("unbalanced '<': no matching '>'");
      }
      lexer_.reset(end);
      previous_end_ = end;
      token_ = lexer_.lex();
      continue;
    }
    if (closer_of(kind) != TokenKind::kEof) {
      closers.push_back(closer_of(kind));
    } else if (kind == closers.back()) {
      closers.pop_back();
    } else if (is_closer(kind) && kind != TokenKind::kGreater) {
      // Report where the unclosed group opened: that is where the mistake is.
      return error_at(open, "unbalanced '" + std::string(text_.substr(open, 1)) + "': found " +
                                std::string(token_kind_spelling(kind)) + " at line " +
                                std::to_string(diagnostics_.location(offset(token_)).line) + " before its " +
                                std::string(token_kind_spelling(closers.back())));
    }
    consume();
  }
  return Status::success();
}

// loc ::= `loc` `(` ... `)` — locations are not kept (ops keep their source offset).
Status Parser::parse_optional_location() {
  if (token_.is_keyword("loc") && peek().is(TokenKind::kLeftParen)) {
    consume();
    return skip_group();
  }
  return Status::success();
}

// `{` starts an attribute dictionary when it is followed by `}`, or by a name and then `=`, `,` or `}`;
// otherwise it starts a region.
bool Parser::looks_like_attribute_dictionary() {
  const std::size_t saved = lexer_.position();
  const Token first = lexer_.lex();
  bool dictionary = first.is(TokenKind::kRightBrace);
  if (first.is(TokenKind::kBareIdentifier) || first.is(TokenKind::kString)) {
    const Token second = lexer_.lex();
    dictionary =
        second.is(TokenKind::kEqual) || second.is(TokenKind::kComma) || second.is(TokenKind::kRightBrace);
  }
  lexer_.reset(saved);
  return dictionary;
}

// Pretty forms name some attributes differently from the generic form; the IR uses the generic
// names so that readers find `broadcast_dimensions` whichever form the file used.
std::string_view Parser::pretty_attribute_name(OpKind kind, std::string_view keyword) const {
  switch (kind) {
    case OpKind::kBroadcastInDim:
    case OpKind::kDynamicBroadcastInDim:
      if (keyword == "dims") return "broadcast_dimensions";
      break;
    case OpKind::kTranspose:
      if (keyword == "dims") return "permutation";
      break;
    case OpKind::kReverse:
      if (keyword == "dims") return "dimensions";
      break;
    case OpKind::kConcatenate:
    case OpKind::kGetDimensionSize:
    case OpKind::kSetDimensionSize:
      if (keyword == "dim") return "dimension";
      break;
    case OpKind::kIota:
    case OpKind::kDynamicIota:
      if (keyword == "dim") return "iota_dimension";
      break;
    case OpKind::kDynamicSlice:
      if (keyword == "sizes") return "slice_sizes";
      break;
    case OpKind::kPad:
      if (keyword == "low") return "edge_padding_low";
      if (keyword == "high") return "edge_padding_high";
      if (keyword == "interior") return "interior_padding";
      break;
    case OpKind::kDot:
    case OpKind::kDotGeneral:
    case OpKind::kConvolution:
      if (keyword == "precision") return "precision_config";
      break;
    case OpKind::kFft:
      if (keyword == "type") return "fft_type";
      if (keyword == "length") return "fft_length";
      break;
    default:
      break;
  }
  return keyword;
}

}  // namespace orrery::frontend::stablehlo
