// Operations, regions and blocks.
#include <string>

#include "frontend/stablehlo/parser.h"

namespace orrery::frontend::stablehlo {

using workload::BlockId;
using workload::OpId;
using workload::OpKind;
using workload::RegionId;
using workload::TypeId;
using workload::ValueRef;

namespace {

// Restores the op nesting depth when an op's parse returns, whatever the outcome.
class DepthGuard {
 public:
  explicit DepthGuard(std::size_t& depth) : depth_(depth) { ++depth_; }
  ~DepthGuard() { --depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;

 private:
  std::size_t& depth_;
};

std::string_view dialect_of(std::string_view name) {
  const std::size_t dot = name.find('.');
  return dot == std::string_view::npos ? std::string_view() : name.substr(0, dot);
}

}  // namespace

// operation ::= (result-list `=`)? (generic-op | custom-op) loc?
Status Parser::parse_operation(BlockId block) {
  const std::size_t start = offset(token_);
  OpScratch& s = scratch_at(depth_);
  s.clear();
  const DepthGuard guard(depth_);
  if (depth_ > kMaxNesting) {
    return error_here("ops are nested more than " + std::to_string(kMaxNesting) + " levels deep");
  }
  if (token_.is(TokenKind::kPercentIdentifier)) {
    ORRERY_TRY(parse_result_list(s));
  }
  const std::size_t name_at = offset(token_);
  std::string_view name;
  const bool generic = token_.is(TokenKind::kString);
  if (generic) {
    name = token_.text.substr(1, token_.text.size() - 2);
  } else if (token_.is(TokenKind::kBareIdentifier)) {
    name = token_.text;
  } else {
    return error_expected("an operation name");
  }
  workload::ProgramBuilder& builder = module_->builder;
  OpName resolved;
  if (const OpName* cached = op_names_.find(name)) {
    resolved = *cached;
  } else {
    ORRERY_TRY(resolve_op_name(name, name_at, resolved));
  }
  const OpKind kind = resolved.kind;
  consume();
  const OpId op = builder.add_op(kind, resolved.name, block, static_cast<std::uint32_t>(start));
  if (generic) {
    ORRERY_TRY(parse_generic_body(s, op));
  } else {
    ORRERY_TRY(parse_custom_body(s, kind, kind == OpKind::kOpaque || kind == OpKind::kUnknown, op));
  }
  ORRERY_TRY(parse_optional_location());
  ORRERY_TRY(check_operands(s, kind, name, name_at));
  builder.set_op_contents(op, s.operands, s.results, s.regions, s.attributes);
  ORRERY_TRY(define_results(s, op, start));
  block_ops_.push_back(op);
  return Status::success();
}

// The kind of an op name (an unknown name of a modelled dialect is an error, or kUnknown under
// --lenient; a name of another dialect is kOpaque, or an error under --strict), interned and cached.
Status Parser::resolve_op_name(std::string_view name, std::size_t at, OpName& resolved) {
  std::optional<OpKind> kind = workload::op_kind_from_name(name);
  if (!kind) {
    const std::string_view dialect = dialect_of(name);
    if (workload::is_modelled_dialect(dialect)) {
      if (!options_.lenient) {
        return error_at(at, "unknown op '" + std::string(name) + "'",
                        {"--lenient lets unknown ops through as memory-bound ops"});
      }
      unknown_ops_.insert(name);
      kind = OpKind::kUnknown;
    } else {
      if (options_.strict) {
        return error_at(
            at, "op '" + std::string(name) + "' is not a StableHLO op (--strict rejects other dialects)");
      }
      kind = OpKind::kOpaque;
    }
  } else if (*kind == OpKind::kFunc || *kind == OpKind::kModule) {
    return error_at(at, "'" + std::string(name) + "' is only allowed at module level");
  }
  resolved = OpName{*kind, module_->builder.intern(name)};
  op_names_.insert(name, resolved);
  return Status::success();
}

// result-list ::= result (`,` result)* ; result ::= `%name` (`:` integer)?
Status Parser::parse_result_list(OpScratch& s) {
  ORRERY_TRY(parse_comma_list([&] {
    if (!token_.is(TokenKind::kPercentIdentifier)) {
      return error_expected("an SSA result name");
    }
    OpScratch::ResultGroup group{token_.text, 1, static_cast<std::uint32_t>(offset(token_))};
    consume();
    if (token_.is(TokenKind::kColon)) {
      consume();
      const std::size_t at = offset(token_);
      if (!token_.is(TokenKind::kInteger) || token_.text.size() > 6 || token_.text[0] == '0') {
        return error_expected("a result count after ':'");
      }
      group.count = static_cast<std::uint32_t>(std::stoul(std::string(token_.text)));
      if (group.count == 0) {
        return error_at(at, "a result group must bind at least one value");
      }
      consume();
    }
    s.result_groups.push_back(group);
    return Status::success();
  }));
  return expect(TokenKind::kEqual, "after the result names");
}

// value-use ::= `%name` (`#` integer)?
Status Parser::parse_value_use(ValueRef& value) {
  const Token use = token_;
  const std::size_t at = offset(use);
  consume();
  std::uint32_t index = 0;
  if (token_.is(TokenKind::kHashIdentifier) && offset(token_) == at + use.text.size()) {
    const std::string_view digits = token_.text.substr(1);
    if (digits.empty() || digits.size() > 6 ||
        digits.find_first_not_of("0123456789") != std::string_view::npos) {
      return error_here("expected a result number after '#'");
    }
    index = static_cast<std::uint32_t>(std::stoul(std::string(digits)));
    consume();
  }
  const ValueEntry* entry = values_.find(use.text);
  if (entry == nullptr) {
    return error_at(at, "use of undefined value '" + std::string(use.text) + "'");
  }
  if (index >= entry->count) {
    return error_at(at, "result number " + std::to_string(index) + " of '" + std::string(use.text) +
                            "' is out of range: it names " + std::to_string(entry->count) + " value(s)");
  }
  const ValueRef first = entry->first;
  value = first.is_op_result() ? ValueRef::op_result(first.op(), first.index() + index)
                               : ValueRef::block_argument(first.block(), first.index() + index);
  return Status::success();
}

// An operand: a value use, remembered with its offset for type errors.
Status Parser::parse_operand(OpScratch& s) {
  if (!token_.is(TokenKind::kPercentIdentifier)) {
    return error_expected("an SSA value");
  }
  s.operand_offsets.push_back(static_cast<std::uint32_t>(offset(token_)));
  return parse_value_use(s.operands.emplace_back());
}

// generic-op ::= string `(` uses `)` (`[` successors `]`)? (`<` attr-dict `>`)? (`(` regions `)`)?
//                attr-dict? `:` `(` types `)` `->` results
Status Parser::parse_generic_body(OpScratch& s, OpId op) {
  if (!token_.is(TokenKind::kLeftParen)) {
    return error_expected("'(' to start the operand list");
  }
  ORRERY_TRY(parse_delimited_list(TokenKind::kRightParen, "to end the operand list",
                                  [&] { return parse_operand(s); }));
  if (token_.is(TokenKind::kLeftSquare)) {
    ORRERY_TRY(parse_delimited_list(TokenKind::kRightSquare, "to end the successor list",
                                    [&] { return parse_successor(s); }));
  }
  if (token_.is(TokenKind::kLess)) {
    consume();
    ORRERY_TRY(parse_attribute_dictionary(s.attributes));
    ORRERY_TRY(expect(TokenKind::kGreater, "to end the properties"));
  }
  if (token_.is(TokenKind::kLeftParen)) {
    ORRERY_TRY(parse_region_list(s, op));
  }
  if (token_.is(TokenKind::kLeftBrace)) {
    ORRERY_TRY(parse_attribute_dictionary(s.attributes));
  }
  const std::size_t signature_at = offset(token_);
  ORRERY_TRY(expect(TokenKind::kColon, "and the op's type signature"));
  ORRERY_TRY(expect(TokenKind::kLeftParen, "to start the operand types"));
  if (!token_.is(TokenKind::kRightParen)) {
    ORRERY_TRY(parse_type_list(s.operand_types));
  }
  ORRERY_TRY(expect(TokenKind::kRightParen, "to end the operand types"));
  s.has_operand_types = true;
  ORRERY_TRY(expect(TokenKind::kArrow, "before the result types"));
  std::vector<TypeId>& results = signature_types_;
  results.clear();
  ORRERY_TRY(parse_result_types(results));
  return assign_results(s, results, /*explicit_results=*/true, signature_at);
}

// successor ::= caret-id (`(` uses `:` types `)`)?
Status Parser::parse_successor(OpScratch& s) {
  if (!token_.is(TokenKind::kCaretIdentifier)) {
    return error_expected("a block label (^bb)");
  }
  consume();
  if (!token_.is(TokenKind::kLeftParen)) {
    return Status::success();
  }
  consume();
  if (token_.is(TokenKind::kPercentIdentifier)) {
    ORRERY_TRY(parse_comma_list([&] { return parse_operand(s); }));
  }
  if (token_.is(TokenKind::kColon)) {
    consume();
    std::vector<TypeId> types;
    ORRERY_TRY(parse_type_list(types));
  }
  return expect(TokenKind::kRightParen, "to end the successor operands");
}

// custom-op: the op's own syntax. The pretty forms of StableHLO ops are built from a few pieces,
// scanned in order until the type signature:
//   %operand (`#` n)?          an operand (`%t[0]` for get_tuple_element, `%x[]` for tensor.extract)
//   `(` ... `)`                operands, `%x init: %y`, `%it = %x` (while), `%a: type` (block arguments)
//   keyword `=` value          an attribute (`dims = [0, 1]`, `window = {...}`)
//   keyword                    a positional keyword (compare's EQ and FLOAT, reduce's `applies op`)
//   @symbol, "string"          custom_call/call target, composite name
//   literal                    constant's value (`dense<...>`), other values
//   `{` ... `}`                attribute dictionary, or a region
//   `:` signature              then the op's trailer (while's cond/do, reduce's reducer)
// Ops of other dialects (opaque) are scanned the same way and end at the end of their line.
Status Parser::parse_custom_body(OpScratch& s, OpKind kind, bool opaque, OpId op) {
  for (;;) {
    if (at_statement_boundary(opaque)) {
      break;
    }
    if (token_.is(TokenKind::kColon)) {
      consume();
      if (s.init_pairs > 1) {
        // reduce(%a init: %x), (%b init: %y) lists (input, init) pairs; the op takes inputs, then inits.
        std::vector<ValueRef> inputs;
        std::vector<ValueRef> inits;
        for (std::size_t i = 0; i < s.operands.size(); ++i) {
          (i % 2 == 0 ? inputs : inits).push_back(s.operands[i]);
        }
        inputs.insert(inputs.end(), inits.begin(), inits.end());
        s.operands = inputs;
        s.operand_offsets.assign(s.operands.size(), s.operand_offsets.front());
      }
      ORRERY_TRY(parse_custom_signature(s, kind));
      return parse_custom_trailer(s, kind, op);
    }
    if (token_.is(TokenKind::kRightBrace) || token_.is(TokenKind::kEof) ||
        (token_.is(TokenKind::kCaretIdentifier) && !opaque) ||
        (token_.is_keyword("loc") && peek().is(TokenKind::kLeftParen))) {
      break;
    }
    ORRERY_TRY(parse_custom_item(s, kind, opaque, op));
  }
  // No type signature: fine for ops without results.
  std::uint32_t bound = 0;
  for (const auto& group : s.result_groups) {
    bound += group.count;
  }
  if (bound > 0 && s.results.empty()) {
    return error_expected("':' and the result types of the op");
  }
  return Status::success();
}

// A custom op ends where the next statement begins. An op of another dialect ends at the end of its
// line (unless the line ends in ','); a StableHLO op may continue on the next lines, and ends when a
// line starts with what can only start a statement: a result name, an op name (a dotted
// identifier, or return/call), a generic op's string, a block label.
bool Parser::at_statement_boundary(bool opaque) {
  if (!on_new_line() || text_[previous_end_ - 1] == ',') {
    return false;
  }
  if (opaque) {
    return true;
  }
  switch (token_.kind) {
    case TokenKind::kPercentIdentifier:
    case TokenKind::kString:
    case TokenKind::kCaretIdentifier:
      return true;
    case TokenKind::kBareIdentifier:
      return token_.text.find('.') != std::string_view::npos || token_.is_keyword("return") ||
             token_.is_keyword("call") || token_.is_keyword("module");
    default:
      return false;
  }
}

Status Parser::parse_custom_item(OpScratch& s, OpKind kind, bool opaque, OpId op) {
  const std::size_t at = offset(token_);
  switch (token_.kind) {
    case TokenKind::kPercentIdentifier:
      return parse_operand(s);
    case TokenKind::kLeftParen:
      return parse_custom_paren_group(s, kind);
    case TokenKind::kComma:
      consume();
      return Status::success();
    case TokenKind::kCaretIdentifier:
      return parse_successor(s);
    case TokenKind::kAtIdentifier: {
      std::string_view name = "symbol";
      if (kind == OpKind::kCustomCall) name = "call_target_name";
      if (kind == OpKind::kCall) name = "callee";
      if (kind == OpKind::kMesh) name = "sym_name";
      consume();
      add_attribute(s.attributes, name, at, previous_end_);
      return Status::success();
    }
    case TokenKind::kEqual: {
      // `@mesh = <...>` (sdy.mesh), `@global ... = value` (util.global)
      consume();
      std::uint32_t begin = 0;
      std::uint32_t length = 0;
      ORRERY_TRY(parse_attribute_value(begin, length, ValueContext::kPrettyOp));
      add_attribute(s.attributes, kind == OpKind::kMesh ? "mesh" : "value", begin, begin + length);
      return Status::success();
    }
    case TokenKind::kLeftBrace:
      if (looks_like_attribute_dictionary()) {
        return parse_attribute_dictionary(s.attributes);
      }
      return parse_region(s, op, function_);
    case TokenKind::kLeftSquare: {
      std::string_view name = "positional";
      if (kind == OpKind::kGetTupleElement) name = "index";
      if (kind == OpKind::kSlice) name = "slice";
      ORRERY_TRY(skip_group());
      add_attribute(s.attributes, name, at, previous_end_);
      return Status::success();
    }
    case TokenKind::kLess:
      ORRERY_TRY(skip_group());
      add_attribute(s.attributes, "sharding", at, previous_end_);
      return Status::success();
    case TokenKind::kString:
      consume();
      add_attribute(s.attributes, kind == OpKind::kComposite ? "name" : "positional", at, previous_end_);
      return Status::success();
    case TokenKind::kBareIdentifier: {
      if (peek().is(TokenKind::kEqual)) {
        return parse_keyword_attribute(s, kind);
      }
      if (kind == OpKind::kReduce && token_.is_keyword("applies")) {
        consume();
        if (!token_.is(TokenKind::kBareIdentifier)) {
          return error_expected("the reduction op after 'applies'");
        }
        const std::size_t op_at = offset(token_);
        consume();
        add_attribute(s.attributes, "applies", op_at, previous_end_);
        return Status::success();
      }
      const bool literal = token_.is_keyword("dense") || token_.is_keyword("dense_resource") ||
                           token_.is_keyword("sparse") || token_.is_keyword("array") ||
                           token_.is_keyword("true") || token_.is_keyword("false") ||
                           token_.is_keyword("unit");
      if (literal) {
        std::uint32_t begin = 0;
        std::uint32_t length = 0;
        ORRERY_TRY(parse_attribute_value(begin, length, ValueContext::kPrettyOp));
        add_attribute(s.attributes, "value", begin, begin + length);
        return Status::success();
      }
      // A positional keyword: compare's direction and type, reduce's `across`, opaque syntax.
      consume();
      std::string_view name = "positional";
      if (kind == OpKind::kCompare) {
        name = s.positional == 0 ? "comparison_direction" : "compare_type";
      }
      ++s.positional;
      if (kind != OpKind::kReduce) {
        add_attribute(s.attributes, name, at, previous_end_);
      }
      return Status::success();
    }
    case TokenKind::kInteger:
    case TokenKind::kFloat:
    case TokenKind::kMinus:
    case TokenKind::kHashIdentifier:
    case TokenKind::kExclamationIdentifier: {
      std::uint32_t begin = 0;
      std::uint32_t length = 0;
      ORRERY_TRY(parse_attribute_value(begin, length, ValueContext::kPrettyOp));
      add_attribute(s.attributes, "value", begin, begin + length);
      return Status::success();
    }
    default:
      if (opaque) {
        consume();
        return Status::success();
      }
      return error_expected(
          "an operand, attribute or ':' in '" +
          std::string(module_->builder.program().string(module_->builder.program().op(op).name)) + "'");
  }
}

// `(` items `)`: operands; `%x init: %y` (reduce); `%it = %x` (while iter args); `%a: type loc?`
// (block arguments of the op's regions); `keyword = value` (chlo.top_k's k).
Status Parser::parse_custom_paren_group(OpScratch& s, OpKind kind) {
  return parse_delimited_list(TokenKind::kRightParen, "to close the operand list", [&] {
    if (token_.is(TokenKind::kBareIdentifier) && peek().is(TokenKind::kEqual)) {
      return parse_keyword_attribute(s, kind);
    }
    if (!token_.is(TokenKind::kPercentIdentifier)) {
      return error_expected("an SSA value or ')'");
    }
    const Token name = token_;
    const Token next = peek();
    if (next.is(TokenKind::kEqual) || next.is(TokenKind::kColon)) {
      // `%it = %init` (an iteration argument) or `%arg: type` (a block argument).
      s.pending_names.push_back(name.text);
      s.pending_offsets.push_back(static_cast<std::uint32_t>(offset(name)));
      consume();
      consume();
      if (next.is(TokenKind::kEqual)) {
        return parse_operand(s);
      }
      ORRERY_TRY(parse_type(s.pending_types.emplace_back()));
      return parse_optional_location();
    }
    ORRERY_TRY(parse_operand(s));
    if (token_.is_keyword("init")) {  // reduce(%x init: %init)
      ++s.init_pairs;
      consume();
      ORRERY_TRY(expect(TokenKind::kColon, "after 'init'"));
      return parse_operand(s);
    }
    return Status::success();
  });
}

// keyword `=` value
Status Parser::parse_keyword_attribute(OpScratch& s, OpKind kind) {
  const std::string_view keyword = token_.text;
  consume();
  consume();
  std::uint32_t begin = 0;
  std::uint32_t length = 0;
  ORRERY_TRY(parse_attribute_value(begin, length, ValueContext::kPrettyOp));
  add_attribute(s.attributes, pretty_attribute_name(kind, keyword), begin, begin + length);
  return Status::success();
}

// signature ::= `(` types `)` `->` results | types ((`->` | `to`) results)?
Status Parser::parse_custom_signature(OpScratch& s, OpKind kind) {
  const std::size_t at = offset(token_);
  std::vector<TypeId>& types = signature_types_;
  types.clear();
  bool explicit_results = false;
  if (token_.is(TokenKind::kLeftParen)) {
    consume();
    if (!token_.is(TokenKind::kRightParen)) {
      ORRERY_TRY(parse_type_list(s.operand_types));
    }
    ORRERY_TRY(expect(TokenKind::kRightParen, "to end the operand types"));
    s.has_operand_types = true;
    ORRERY_TRY(expect(TokenKind::kArrow, "before the result types"));
    ORRERY_TRY(parse_result_types(types));
    explicit_results = true;
  } else {
    ORRERY_TRY(parse_type_list(types));
    if (token_.is(TokenKind::kArrow) || token_.is_keyword("to")) {
      consume();
      types.clear();
      ORRERY_TRY(parse_result_types(types));
      explicit_results = true;
    }
  }
  if (kind == OpKind::kWhile) {
    // while(%it = %x, ...) : T1, T2: the types of the iteration arguments, which are also the results.
    if (types.size() != s.pending_names.size()) {
      return error_at(at, "while declares " + std::to_string(s.pending_names.size()) +
                              " iteration argument(s) but " + std::to_string(types.size()) + " type(s)");
    }
    s.pending_types = types;
  }
  return assign_results(s, types, explicit_results, at);
}

// After the signature: while's `cond { } do { }` and reduce's `reducer(%a: T, %b: T) { }`.
Status Parser::parse_custom_trailer(OpScratch& s, OpKind kind, OpId op) {
  if (kind == OpKind::kWhile) {
    ORRERY_TRY(expect_keyword("cond", "to start the while loop's condition"));
    ORRERY_TRY(parse_region(s, op, function_));
    ORRERY_TRY(expect_keyword("do", "to start the while loop's body"));
    return parse_region(s, op, function_);
  }
  if (kind == OpKind::kReduce && token_.is_keyword("reducer")) {
    // reducer(%a0: T0, %b0: T0) (%a1: T1, %b1: T1) { ... }: one pair per input; the body's
    // arguments are the first of each pair, then the second of each pair.
    consume();
    s.pending_names.clear();
    s.pending_types.clear();
    s.pending_offsets.clear();
    while (token_.is(TokenKind::kLeftParen)) {
      ORRERY_TRY(parse_custom_paren_group(s, kind));
    }
    const std::size_t n = s.pending_names.size();
    if (n % 2 != 0 || s.pending_types.size() != n) {
      return error_here("expected reducer argument pairs (%lhs: type, %rhs: type)");
    }
    auto interleave = [n](auto& values) {
      auto copy = values;
      for (std::size_t i = 0; i < n / 2; ++i) {
        values[i] = copy[2 * i];
        values[n / 2 + i] = copy[2 * i + 1];
      }
    };
    interleave(s.pending_names);
    interleave(s.pending_types);
    interleave(s.pending_offsets);
    return parse_region(s, op, function_);
  }
  return Status::success();
}

// The op's results take `types`: all of them when the signature names results explicitly;
// otherwise (a plain type list such as `: tensor<f32>` or `: tensor<i1>, tensor<f32>`) the last
// ones, one per bound name.
Status Parser::assign_results(OpScratch& s, const std::vector<TypeId>& types, bool explicit_results,
                              std::size_t at) {
  std::uint32_t bound = 0;
  for (const auto& group : s.result_groups) {
    bound += group.count;
  }
  if (explicit_results) {
    if (bound > 0 && bound != types.size()) {
      return error_at(at, "operation defines " + std::to_string(types.size()) + " results but was provided " +
                              std::to_string(bound) + " to bind");
    }
    s.results.assign(types.begin(), types.end());
    return Status::success();
  }
  if (bound == 0) {
    return Status::success();
  }
  if (types.size() < bound) {
    return error_at(
        at, "expected " + std::to_string(bound) + " result type(s), found " + std::to_string(types.size()));
  }
  s.results.assign(types.end() - bound, types.end());
  return Status::success();
}

Status Parser::check_operands(const OpScratch& s, OpKind kind, std::string_view name, std::size_t at) {
  const int expected = workload::op_operand_count(kind);
  if (expected >= 0 && static_cast<std::size_t>(expected) != s.operands.size()) {
    return error_at(at, "'" + std::string(name) + "' takes " + std::to_string(expected) +
                            " operand(s), found " + std::to_string(s.operands.size()));
  }
  if (!s.has_operand_types || kind == OpKind::kOpaque || kind == OpKind::kUnknown) {
    return Status::success();
  }
  if (s.operand_types.size() != s.operands.size()) {
    return error_at(at, "'" + std::string(name) + "' has " + std::to_string(s.operands.size()) +
                            " operand(s) but its signature lists " + std::to_string(s.operand_types.size()) +
                            " operand type(s)");
  }
  const workload::Program& program = module_->builder.program();
  for (std::size_t i = 0; i < s.operands.size(); ++i) {
    const TypeId actual = program.value_type(s.operands[i]);
    if (actual != s.operand_types[i]) {
      const workload::TypeTable& types = program.types();
      return error_at(s.operand_offsets[i], "operand " + std::to_string(i) + " of '" + std::string(name) +
                                                "' has type " + types.to_string(actual) +
                                                " but the signature says " +
                                                types.to_string(s.operand_types[i]));
    }
  }
  return Status::success();
}

Status Parser::define_results(const OpScratch& s, OpId op, std::size_t at) {
  std::uint32_t index = 0;
  for (const auto& group : s.result_groups) {
    if (index + group.count > s.results.size()) {
      return error_at(at, "operation defines " + std::to_string(s.results.size()) +
                              " results but was provided " + std::to_string(index + group.count) +
                              " to bind");
    }
    if (!values_.define(group.name, ValueEntry{ValueRef::op_result(op, index), group.count, group.offset})) {
      const ValueEntry* previous = values_.find(group.name);
      return error_at(
          group.offset, "redefinition of SSA value '" + std::string(group.name) + "'",
          {"previously defined at line " + std::to_string(diagnostics_.location(previous->offset).line)});
    }
    index += group.count;
  }
  return Status::success();
}

// region-list ::= `(` region (`,` region)* `)`
Status Parser::parse_region_list(OpScratch& s, OpId op) {
  consume();
  ORRERY_TRY(parse_comma_list([&] { return parse_region(s, op, function_); }));
  return expect(TokenKind::kRightParen, "to end the region list");
}

// region ::= `{` (operation* | block+) `}` — the entry block's label is optional; without one it
// takes the arguments the op declared before the region (s.pending_*).
Status Parser::parse_region(OpScratch& s, OpId op, workload::FunctionId function) {
  const std::size_t open = offset(token_);
  ORRERY_TRY(expect(TokenKind::kLeftBrace, "to start a region"));
  workload::ProgramBuilder& builder = module_->builder;
  const RegionId region = builder.add_region(op, function);
  s.regions.push_back(region);
  values_.push_scope();
  const std::size_t blocks_mark = region_blocks_.size();
  std::vector<std::string_view> names;
  std::vector<TypeId> types;
  std::vector<std::uint32_t> offsets;
  bool first = true;
  while (!token_.is(TokenKind::kRightBrace)) {
    if (token_.is(TokenKind::kEof)) {
      return error_expected("'}' to close the region opened at line " +
                            std::to_string(diagnostics_.location(open).line));
    }
    const std::size_t block_at = offset(token_);
    names.clear();
    types.clear();
    offsets.clear();
    if (token_.is(TokenKind::kCaretIdentifier)) {
      consume();
      if (token_.is(TokenKind::kLeftParen)) {
        ORRERY_TRY(parse_block_arguments(names, types, offsets));
      }
      ORRERY_TRY(expect(TokenKind::kColon, "after the block label"));
    } else if (first) {
      names = s.pending_names;
      types = s.pending_types;
      offsets = s.pending_offsets;
      if (names.size() != types.size()) {
        return error_at(open, "the region's arguments need types");
      }
    } else {
      return error_expected("a block label (^bb) or '}'");
    }
    const BlockId block =
        builder.add_block(region, static_cast<std::uint32_t>(first ? open : block_at), types);
    region_blocks_.push_back(block);
    ORRERY_TRY(define_block_arguments(block, names, offsets));
    ORRERY_TRY(parse_block_body(block));
    first = false;
  }
  consume();
  values_.pop_scope();
  builder.set_region_blocks(region, std::span<const BlockId>(region_blocks_).subspan(blocks_mark));
  region_blocks_.resize(blocks_mark);
  return Status::success();
}

// block-args ::= `(` (`%name` `:` type loc?) (`,` ...)* `)`
Status Parser::parse_block_arguments(std::vector<std::string_view>& names, std::vector<TypeId>& types,
                                     std::vector<std::uint32_t>& offsets) {
  return parse_delimited_list(TokenKind::kRightParen, "to end the block arguments", [&] {
    if (!token_.is(TokenKind::kPercentIdentifier)) {
      return error_expected("a block argument (%name: type)");
    }
    names.push_back(token_.text);
    offsets.push_back(static_cast<std::uint32_t>(offset(token_)));
    consume();
    ORRERY_TRY(expect(TokenKind::kColon, "after the block argument name"));
    ORRERY_TRY(parse_type(types.emplace_back()));
    return parse_optional_location();
  });
}

Status Parser::define_block_arguments(BlockId block, const std::vector<std::string_view>& names,
                                      const std::vector<std::uint32_t>& offsets) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    const ValueEntry entry{ValueRef::block_argument(block, static_cast<std::uint32_t>(i)), 1, offsets[i]};
    if (!values_.define(names[i], entry)) {
      const ValueEntry* previous = values_.find(names[i]);
      return error_at(
          offsets[i], "redefinition of SSA value '" + std::string(names[i]) + "'",
          {"previously defined at line " + std::to_string(diagnostics_.location(previous->offset).line)});
    }
  }
  return Status::success();
}

Status Parser::parse_block_body(BlockId block) {
  const std::size_t mark = block_ops_.size();
  // The region reports a missing '}' (it knows where it was opened).
  while (!token_.is(TokenKind::kRightBrace) && !token_.is(TokenKind::kCaretIdentifier) &&
         !token_.is(TokenKind::kEof)) {
    ORRERY_TRY(parse_operation(block));
  }
  module_->builder.set_block_ops(block, std::span<const OpId>(block_ops_).subspan(mark));
  block_ops_.resize(mark);
  return Status::success();
}

}  // namespace orrery::frontend::stablehlo
