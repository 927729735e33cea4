// Types. A type's text is found with one byte scan (its `<...>` group) and looked up in the
// program's type table; only a spelling not seen before is parsed, here, character by character.
//
//   type    ::= tensor-type | tuple<type,...> | !stablehlo.token | !stablehlo.future<type,...>
//             | element-type | memref<...> | vector<...> | !dialect.type<...> | !alias
//   tensor  ::= `tensor<` (`*x` | (dim `x`)*) element-type (`,` encoding)? `>` ; dim ::= integer | `?`
//   element ::= i1..i64 | si* | ui* | index | bf16 | f16 | f32 | f64 | tf32 | f8E4M3FN | ... | complex<f32>
//             | !quant.uniform<storage:expressed, ...> (costed as its storage type) | !dialect.type
//   encoding ::= #stablehlo.bounds<b, ...> | #stablehlo.type_extensions<bounds = [b, ...]> | other (ignored)
#include <charconv>
#include <string>

#include "frontend/stablehlo/parser.h"

namespace orrery::frontend::stablehlo {

using workload::ElementType;
using workload::TypeDescription;
using workload::TypeId;
using workload::TypeKind;

namespace {

std::string_view trim(std::string_view s, std::size_t& shift) {
  shift = 0;
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
    ++shift;
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// Splits at commas outside `<...>`, `[...]`, `(...)` and strings; offsets are into `s`.
std::vector<std::pair<std::size_t, std::string_view>> split_top_level(std::string_view s) {
  std::vector<std::pair<std::size_t, std::string_view>> parts;
  int depth = 0;
  bool in_string = false;
  std::size_t begin = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '<' || c == '[' || c == '(' || c == '{') {
      ++depth;
    } else if ((c == '>' && (i == 0 || s[i - 1] != '-')) || c == ']' || c == ')' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 0) {
      parts.emplace_back(begin, s.substr(begin, i - begin));
      begin = i + 1;
    }
  }
  parts.emplace_back(begin, s.substr(begin));
  return parts;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// The body of `name<body>` (the text must end with '>').
std::string_view angle_body(std::string_view text, std::size_t prefix) {
  return text.substr(prefix, text.size() - prefix - 1);
}

}  // namespace

Status Parser::parse_type(TypeId& type) {
  if (!token_.is(TokenKind::kBareIdentifier) && !token_.is(TokenKind::kExclamationIdentifier)) {
    return error_expected("a type");
  }
  std::size_t at = offset(token_);
  std::size_t end = token_end(token_);
  if (end < lexer_.end() && text_[end] == '<') {
    end = lexer_.skip_angle_group(end);
    if (end == std::string_view::npos) {
      return error_at(token_end(token_), "unbalanced '<' in a type: no matching '>'");
    }
  }
  std::string_view text = text_.substr(at, end - at);
  if (token_.is(TokenKind::kExclamationIdentifier) && end == token_end(token_)) {
    if (const auto alias = type_aliases_.find(token_.text); alias != type_aliases_.end()) {
      text = alias->second;
      at = static_cast<std::size_t>(text.data() - text_.data());
    }
  }
  if (const TypeId* cached = type_names_.find(text)) {
    type = *cached;
  } else {
    ORRERY_TRY(parse_type_text(text, at, type));
    type_names_.insert(text, type);
  }
  lexer_.reset(end);
  previous_end_ = end;
  token_ = lexer_.lex();
  return Status::success();
}

// type-list ::= type (`,` type)*
Status Parser::parse_type_list(std::vector<TypeId>& types) {
  return parse_comma_list([&] { return parse_type(types.emplace_back()); });
}

// results ::= type | `(` type-list? `)`
Status Parser::parse_result_types(std::vector<TypeId>& types) {
  if (!token_.is(TokenKind::kLeftParen)) {
    return parse_type(types.emplace_back());
  }
  return parse_delimited_list(TokenKind::kRightParen, "to end the result types",
                              [&] { return parse_type(types.emplace_back()); });
}

Status Parser::parse_type_text(std::string_view text, std::size_t at, TypeId& type) {
  if (const auto known = module_->builder.types().find_text(text)) {
    type = *known;
    return Status::success();
  }
  if (type_depth_ >= kMaxNesting) {
    return error_at(at, "types are nested more than " + std::to_string(kMaxNesting) + " levels deep");
  }
  TypeDescription description;
  ++type_depth_;
  const Status described = describe_type(text, at, description);
  --type_depth_;
  ORRERY_TRY(described);
  type = module_->builder.types().intern(description, text);
  return Status::success();
}

Status Parser::describe_type(std::string_view text, std::size_t at, TypeDescription& d) {
  if (starts_with(text, "tensor<")) {
    d.kind = TypeKind::kTensor;
    return describe_tensor(angle_body(text, 7), at + 7, d);
  }
  const bool tuple = starts_with(text, "tuple<");
  const bool future = starts_with(text, "!stablehlo.future<") || starts_with(text, "!mhlo.future<");
  if (tuple || future) {
    d.kind = tuple ? TypeKind::kTuple : TypeKind::kFuture;
    const std::size_t prefix = text.find('<') + 1;
    const std::string_view body = angle_body(text, prefix);
    std::size_t shift = 0;
    if (trim(body, shift).empty()) {
      return Status::success();
    }
    for (const auto& [part_at, part] : split_top_level(body)) {
      const std::string_view member = trim(part, shift);
      TypeId id = 0;
      ORRERY_TRY(parse_type_text(member, at + prefix + part_at + shift, id));
      d.members.push_back(id);
    }
    return Status::success();
  }
  if (text == "!stablehlo.token" || text == "!mhlo.token") {
    d.kind = TypeKind::kToken;
    return Status::success();
  }
  if (starts_with(text, "!stablehlo.")) {
    const std::string_view name =
        text.substr(11, text.find('<') == std::string_view::npos ? text.npos : text.find('<') - 11);
    return error_at(at, "unknown stablehlo type: " + std::string(name));
  }
  if (text[0] == '!' || starts_with(text, "memref<") || starts_with(text, "vector<") || text == "none") {
    d.kind = TypeKind::kOther;
    return Status::success();
  }
  d.kind = TypeKind::kScalar;
  if (!starts_with(text, "complex<") && !workload::element_type_from_name(text)) {
    return error_at(at, "unknown type '" + std::string(text) + "'");
  }
  return parse_element_type(text, at, d);
}

Status Parser::describe_tensor(std::string_view body, std::size_t at, TypeDescription& d) {
  std::size_t i = 0;
  auto skip_spaces = [&] {
    while (i < body.size() && (body[i] == ' ' || body[i] == '\n')) {
      ++i;
    }
  };
  skip_spaces();
  if (i < body.size() && body[i] == '*') {
    d.kind = workload::TypeKind::kUnrankedTensor;
    ++i;
    if (i >= body.size() || body[i] != 'x') {
      return error_at(at + i, "expected 'x' after '*' in an unranked tensor type");
    }
    ++i;
  } else {
    for (;;) {
      if (i < body.size() && body[i] == '?') {
        d.dimensions.push_back(workload::kDynamicDimension);
        ++i;
      } else if (i < body.size() && body[i] >= '0' && body[i] <= '9') {
        std::int64_t dim = 0;
        const auto [end, error] = std::from_chars(body.data() + i, body.data() + body.size(), dim);
        if (error != std::errc()) {
          return error_at(at + i, "tensor dimension out of range");
        }
        d.dimensions.push_back(dim);
        i = static_cast<std::size_t>(end - body.data());
      } else {
        break;
      }
      if (i >= body.size() || body[i] != 'x') {
        return error_at(at + i, "expected 'x' after a tensor dimension");
      }
      ++i;
    }
  }
  const auto parts = split_top_level(body.substr(i));
  std::size_t shift = 0;
  const std::string_view element = trim(parts[0].second, shift);
  if (element.empty()) {
    return error_at(at + i, "expected an element type in the tensor type");
  }
  if (workload::element_type_from_name(element) || element[0] == '!' || starts_with(element, "complex<")) {
    ORRERY_TRY(parse_element_type(element, at + i + shift, d));
  } else {
    return error_at(at + i + shift, "unknown element type '" + std::string(element) + "'");
  }
  if (parts.size() > 2) {
    return error_at(at + i + parts[2].first, "unexpected ',' in the tensor type");
  }
  if (parts.size() == 2) {
    const std::string_view encoding = trim(parts[1].second, shift);
    ORRERY_TRY(parse_bounds(encoding, at + i + parts[1].first + shift, d));
  }
  return check_tensor_size(d, at);
}

// A tensor larger than any machine's memory is a typo, and its byte count would overflow the
// 64-bit sums of a program's traffic: reject it (dynamic dimensions count at their bound).
Status Parser::check_tensor_size(const TypeDescription& d, std::size_t at) {
  constexpr std::uint64_t kLimitBits = std::uint64_t{1} << 59;  // 2^56 bytes
  std::vector<std::uint64_t> extents;
  for (std::size_t k = 0; k < d.dimensions.size(); ++k) {
    std::int64_t extent = d.dimensions[k];
    if (extent == workload::kDynamicDimension) {
      extent = k < d.bounds.size() && d.bounds[k] != workload::kNoBound ? d.bounds[k] : 1;
    }
    if (extent == 0) {
      return Status::success();  // empty
    }
    extents.push_back(extent > 0 ? static_cast<std::uint64_t>(extent) : 1);
  }
  std::uint64_t bits = std::max(1U, workload::element_storage_bits(d.element));
  for (const std::uint64_t extent : extents) {
    if (__builtin_mul_overflow(bits, extent, &bits) || bits > kLimitBits) {
      return error_at(at, "tensor type larger than 2^56 bytes (64 PiB): no device holds it; check its dimensions");
    }
  }
  return Status::success();
}

Status Parser::parse_element_type(std::string_view text, std::size_t at, TypeDescription& d) {
  if (starts_with(text, "!quant.")) {
    // !quant.uniform<i8:f32, 2.0:15> and friends: the storage type is the first word after '<'.
    d.quantized = true;
    const std::size_t open = text.find('<');
    std::size_t end = open == std::string_view::npos ? text.size() : open + 1;
    while (end < text.size() && text[end] != ':' && text[end] != '<' && text[end] != '>') {
      ++end;
    }
    const std::string_view storage =
        open == std::string_view::npos ? std::string_view() : text.substr(open + 1, end - open - 1);
    const auto element = workload::element_type_from_name(storage);
    d.element = element ? *element : ElementType::kUnknown;
    return Status::success();
  }
  if (text[0] == '!') {
    d.element = ElementType::kUnknown;  // a dialect's element type: size unknown
    return Status::success();
  }
  if (starts_with(text, "complex<")) {
    const std::string_view component = angle_body(text, 8);
    d.element = component == "f32"   ? ElementType::kComplexF32
                : component == "f64" ? ElementType::kComplexF64
                                     : ElementType::kUnknown;
    if (!workload::element_type_from_name(component)) {
      return error_at(at + 8, "unknown element type '" + std::string(component) + "' in complex<>");
    }
    return Status::success();
  }
  const auto element = workload::element_type_from_name(text);
  if (!element) {
    return error_at(at, "unknown element type '" + std::string(text) + "'");
  }
  d.element = *element;
  return Status::success();
}

// #stablehlo.bounds<8, ?> or #stablehlo.type_extensions<bounds = [8, ?]>; other encodings (sparse
// tensors) are accepted and ignored.
Status Parser::parse_bounds(std::string_view encoding, std::size_t at, TypeDescription& d) {
  std::string_view list;
  std::size_t list_at = 0;
  if (starts_with(encoding, "#stablehlo.bounds<") && encoding.back() == '>') {
    list_at = 18;
    list = angle_body(encoding, 18);
  } else if (starts_with(encoding, "#stablehlo.type_extensions<")) {
    const std::size_t open = encoding.find('[');
    const std::size_t close = encoding.find(']');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
      return error_at(at, "expected 'bounds = [...]' in #stablehlo.type_extensions");
    }
    list_at = open + 1;
    list = encoding.substr(open + 1, close - open - 1);
  } else {
    return Status::success();
  }
  std::size_t shift = 0;
  if (trim(list, shift).empty()) {
    if (!d.dimensions.empty()) {
      return error_at(at,
                      "bounds list is empty for a rank-" + std::to_string(d.dimensions.size()) + " tensor");
    }
    return Status::success();
  }
  for (const auto& [part_at, part] : split_top_level(list)) {
    const std::string_view item = trim(part, shift);
    if (item == "?") {
      d.bounds.push_back(workload::kNoBound);
      continue;
    }
    std::int64_t bound = 0;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), bound);
    if (error != std::errc() || end != item.data() + item.size() || bound < -1) {
      return error_at(at + list_at + part_at + shift, "expected a bound (an integer or '?')");
    }
    d.bounds.push_back(bound == -1 ? workload::kNoBound : bound);  // older exports write -1 for '?'
  }
  if (d.bounds.size() != d.dimensions.size()) {
    return error_at(at, "bounds list has " + std::to_string(d.bounds.size()) + " entries for a rank-" +
                            std::to_string(d.dimensions.size()) + " tensor");
  }
  return Status::success();
}

}  // namespace orrery::frontend::stablehlo
