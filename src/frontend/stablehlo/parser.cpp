// Tokens, diagnostics, and the chunk, module and function levels of the parser.
#include "frontend/stablehlo/parser.h"

#include <string>

namespace orrery::frontend::stablehlo {

using workload::FunctionAttribute;
using workload::FunctionId;
using workload::kNoId;
using workload::TypeId;

Status Diagnostics::error_at(std::size_t offset, std::string message, std::vector<std::string> notes,
                             ErrorCode code) {
  if (!error_) {
    error_ = Error{code, std::move(message), location(offset), std::move(notes)};
  }
  return Status::failure();
}

SourceLocation Diagnostics::location(std::size_t offset) const {
  return workload::locate(path_, text_, offset);
}

void Parser::OpScratch::clear() {
  result_groups.clear();
  operands.clear();
  operand_offsets.clear();
  operand_types.clear();
  has_operand_types = false;
  results.clear();
  regions.clear();
  attributes.clear();
  pending_names.clear();
  pending_types.clear();
  pending_offsets.clear();
  positional = 0;
  init_pairs = 0;
}

Parser::Parser(const std::shared_ptr<const workload::SourceText>& source, std::uint32_t begin,
               std::uint32_t end, std::uint32_t first_module_index, const Options& options,
               Diagnostics& diagnostics)
    : source_(source),
      text_(source->text),
      options_(options),
      diagnostics_(diagnostics),
      lexer_(text_, begin, end),
      previous_end_(begin),
      chunk_begin_(begin),
      chunk_end_(end),
      next_module_index_(first_module_index) {
  token_ = lexer_.lex();
}

// Tokens and diagnostics.

Status Parser::error_at(std::size_t at, std::string message, std::vector<std::string> notes) {
  return diagnostics_.error_at(at, std::move(message), std::move(notes));
}

Status Parser::error_here(std::string message) {
  return error_at(offset(token_), std::move(message));
}

namespace {
std::string describe(const Token& token) {
  if (token.is(TokenKind::kEof)) {
    return "end of file";
  }
  std::string_view text = token.text;
  if (text.size() > 40) {
    text = text.substr(0, 40);
  }
  return "'" + std::string(text) + (token.text.size() > 40 ? "...'" : "'");
}
}  // namespace

std::string describe_character(char c) {
  const auto byte = static_cast<unsigned char>(c);
  if (byte >= 0x20 && byte < 0x7f) {
    return std::string("'") + c + "'";
  }
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("byte 0x") + kHex[byte >> 4] + kHex[byte & 0xf];
}

Status Parser::error_expected(std::string_view what) {
  if (token_.is(TokenKind::kError)) {
    // The lexer stopped on something that is no token at all.
    return error_here(token_.text[0] == '"'
                          ? std::string("unterminated string literal")
                          : "unexpected character " + describe_character(token_.text[0]));
  }
  // A missing token is reported at the end of the previous line (MLIR's convention): that is
  // where it was forgotten.
  const std::size_t at = on_new_line() || token_.is(TokenKind::kEof) ? previous_end_ : offset(token_);
  return error_at(at, "expected " + std::string(what) + ", found " + describe(token_));
}

Status Parser::expect(TokenKind kind, std::string_view context) {
  if (token_.is(kind)) {
    consume();
    return Status::success();
  }
  return error_expected(std::string(token_kind_spelling(kind)) + (context.empty() ? "" : " ") +
                        std::string(context));
}

Status Parser::expect_keyword(std::string_view word, std::string_view context) {
  if (token_.is_keyword(word)) {
    consume();
    return Status::success();
  }
  return error_expected("'" + std::string(word) + "' " + std::string(context));
}

Parser::OpScratch& Parser::scratch_at(std::size_t depth) {
  while (scratch_.size() <= depth) {
    scratch_.push_back(std::make_unique<OpScratch>());
  }
  return *scratch_[depth];
}

// Chunk and module level.

Status Parser::parse_chunk(std::vector<std::unique_ptr<ModuleDraft>>& modules) {
  while (!token_.is(TokenKind::kEof)) {
    ORRERY_TRY(parse_top_level(modules));
  }
  for (auto& draft : modules) {
    draft->builder.set_block_ops(draft->module_block, draft->module_ops);
  }
  if (!unknown_ops_.empty()) {
    std::string names;
    for (const std::string_view name : unknown_ops_) {
      names += (names.empty() ? "" : ", ") + std::string(name);
    }
    diagnostics_.warn("unknown ops let through as memory-bound ops (--lenient): " + names);
  }
  return Status::success();
}

Status Parser::parse_top_level(std::vector<std::unique_ptr<ModuleDraft>>& modules) {
  if ((token_.is(TokenKind::kHashIdentifier) || token_.is(TokenKind::kExclamationIdentifier)) &&
      peek().is(TokenKind::kEqual)) {
    return parse_alias_definition();
  }
  if (token_.is(TokenKind::kFileMetadataBegin)) {
    return skip_file_metadata();
  }
  if (token_.is_keyword("module") || token_.is_keyword("builtin.module")) {
    return parse_module(modules);
  }
  if (token_.is(TokenKind::kRightBrace)) {
    return error_here("unexpected '}': no '{' is open here");
  }
  if (implicit_module_ == nullptr) {
    implicit_module_ = &begin_module(modules, chunk_begin_, chunk_end_);
  }
  switch_module(implicit_module_);
  return parse_module_item();
}

// alias-def ::= (`#` | `!`) bare-id `=` (attribute-value | type)
Status Parser::parse_alias_definition() {
  const Token name = token_;
  consume();
  consume();  // '='
  if (name.is(TokenKind::kExclamationIdentifier)) {
    const std::size_t begin = offset(token_);
    // The alias stands for the type's text; it is interned per module on use.
    if (!token_.is(TokenKind::kBareIdentifier) && !token_.is(TokenKind::kExclamationIdentifier)) {
      return error_expected("type after '" + std::string(name.text) + " ='");
    }
    std::size_t end = token_end(token_);
    if (end < text_.size() && text_[end] == '<') {
      end = lexer_.skip_angle_group(end);
      if (end == std::string_view::npos) {
        return error_at(token_end(token_), "unbalanced '<': no matching '>'");
      }
    }
    type_aliases_[name.text] = text_.substr(begin, end - begin);
    lexer_.reset(end);
    previous_end_ = end;
    token_ = lexer_.lex();
    return Status::success();
  }
  std::uint32_t begin = 0;
  std::uint32_t length = 0;
  ORRERY_TRY(parse_attribute_value(begin, length, ValueContext::kAliasDefinition));
  attribute_aliases_[name.text] = text_.substr(begin, length);
  return Status::success();
}

// file-metadata ::= `{-#` ... `#-}` (dialect_resources blobs): skipped.
Status Parser::skip_file_metadata() {
  const std::size_t at = offset(token_);
  consume();
  while (!token_.is(TokenKind::kFileMetadataEnd)) {
    if (token_.is(TokenKind::kEof)) {
      return error_at(at, "unterminated file metadata: '{-#' without '#-}'");
    }
    if (token_.is(TokenKind::kLess)) {
      ORRERY_TRY(skip_group());
    } else {
      consume();
    }
  }
  consume();
  return Status::success();
}

ModuleDraft& Parser::begin_module(std::vector<std::unique_ptr<ModuleDraft>>& modules, std::uint32_t begin,
                                  std::uint32_t end) {
  modules.push_back(std::make_unique<ModuleDraft>(source_, begin, end, next_module_index_++));
  ModuleDraft& draft = *modules.back();
  draft.builder.reserve_for(end - begin);
  const workload::RegionId region = draft.builder.add_region(kNoId, kNoId);
  draft.module_block = draft.builder.add_block(region, begin, {});
  const workload::BlockId blocks[] = {draft.module_block};
  draft.builder.set_region_blocks(region, blocks);
  return draft;
}

void Parser::switch_module(ModuleDraft* module) {
  if (module != module_) {
    module_ = module;
    op_names_.clear();
    type_names_.clear();
    attribute_names_.clear();
  }
}

// module ::= `module` symbol? (`attributes` attr-dict)? `{` (function | operation)* `}` loc?
Status Parser::parse_module(std::vector<std::unique_ptr<ModuleDraft>>& modules) {
  const auto begin = static_cast<std::uint32_t>(offset(token_));
  consume();
  ModuleDraft& draft = begin_module(modules, begin, chunk_end_);
  switch_module(&draft);
  if (token_.is(TokenKind::kAtIdentifier)) {
    draft.builder.set_module_name(draft.builder.intern(token_.text.substr(1)));
    consume();
  }
  if (token_.is_keyword("attributes")) {
    consume();
    std::vector<workload::Attribute> attributes;
    ORRERY_TRY(parse_attribute_dictionary(attributes));
    draft.builder.set_module_attributes(attributes);
  }
  ORRERY_TRY(expect(TokenKind::kLeftBrace, "to start the module body"));
  while (!token_.is(TokenKind::kRightBrace)) {
    if (token_.is(TokenKind::kEof)) {
      return error_expected("'}' to close the module");
    }
    ORRERY_TRY(parse_module_item());
  }
  consume();
  draft.end = static_cast<std::uint32_t>(previous_end_);
  ORRERY_TRY(parse_optional_location());
  switch_module(nullptr);
  return Status::success();
}

Status Parser::parse_module_item() {
  if (token_.is_keyword("func.func")) {
    return parse_function();
  }
  if (token_.is_keyword("module") || token_.is_keyword("builtin.module")) {
    return error_here("nested modules are not supported");
  }
  const std::size_t mark = block_ops_.size();
  ORRERY_TRY(parse_operation(module_->module_block));
  module_->module_ops.insert(module_->module_ops.end(),
                             block_ops_.begin() + static_cast<std::ptrdiff_t>(mark), block_ops_.end());
  block_ops_.resize(mark);
  return Status::success();
}

// function ::= `func.func` (`public`|`private`|`nested`)? symbol `(` arguments `)`
//              (`->` results)? (`attributes` attr-dict)? region? loc?
Status Parser::parse_function() {
  const auto begin = static_cast<std::uint32_t>(offset(token_));
  consume();
  bool is_public = true;
  if (token_.is_keyword("public") || token_.is_keyword("private") || token_.is_keyword("nested")) {
    is_public = token_.is_keyword("public");
    consume();
  }
  if (!token_.is(TokenKind::kAtIdentifier)) {
    return error_expected("function name (@name)");
  }
  std::string_view name = token_.text.substr(1);
  if (!name.empty() && name.front() == '"') {
    name = name.substr(1, name.size() - 2);
  }
  const std::size_t name_at = offset(token_);
  consume();

  OpScratch& entry = scratch_at(depth_);
  entry.clear();
  std::vector<FunctionAttribute> argument_attributes;
  std::vector<TypeId> result_types;
  ORRERY_TRY(parse_function_arguments(entry.pending_names, entry.pending_offsets, entry.pending_types,
                                      argument_attributes));
  if (token_.is(TokenKind::kArrow)) {
    consume();
    ORRERY_TRY(parse_function_results(result_types, argument_attributes));
  }
  std::vector<workload::Attribute> attributes;
  if (token_.is_keyword("attributes")) {
    consume();
    ORRERY_TRY(parse_attribute_dictionary(attributes));
  }
  workload::ProgramBuilder& builder = module_->builder;
  const FunctionId id = builder.add_function(builder.intern(name), is_public, begin, entry.pending_types,
                                             result_types, argument_attributes, attributes);
  if (!module_->functions.emplace(name, id).second) {
    return error_at(name_at, "redefinition of symbol '@" + std::string(name) + "'");
  }
  if (token_.is(TokenKind::kLeftBrace)) {
    if (entry.pending_names.size() != entry.pending_types.size()) {
      return error_at(name_at, "a function with a body needs named arguments (%name: type)");
    }
    values_.clear();
    function_ = id;
    ++depth_;
    const Status body = parse_region(entry, kNoId, id);
    --depth_;
    ORRERY_TRY(body);
    builder.set_function_body(id, entry.regions.back());
    values_.clear();
    function_ = kNoId;
  }
  return parse_optional_location();
}

// arguments ::= `(` ((`%name` `:`)? type attr-dict? loc?) (`,` ...)* `)` — names are absent in declarations
Status Parser::parse_function_arguments(std::vector<std::string_view>& names,
                                        std::vector<std::uint32_t>& name_offsets, std::vector<TypeId>& types,
                                        std::vector<FunctionAttribute>& attributes) {
  if (!token_.is(TokenKind::kLeftParen)) {
    return error_expected("'(' to start the function's arguments");
  }
  return parse_delimited_list(TokenKind::kRightParen, "to end the function's arguments", [&] {
    if (token_.is(TokenKind::kPercentIdentifier)) {
      names.push_back(token_.text);
      name_offsets.push_back(static_cast<std::uint32_t>(offset(token_)));
      consume();
      ORRERY_TRY(expect(TokenKind::kColon, "after the argument name"));
    }
    ORRERY_TRY(parse_signature_entry(types, attributes, /*is_result=*/false));
    return parse_optional_location();
  });
}

// results ::= type | `(` (type attr-dict?) (`,` type attr-dict?)* `)` | `(` `)`
Status Parser::parse_function_results(std::vector<TypeId>& types,
                                      std::vector<FunctionAttribute>& attributes) {
  if (!token_.is(TokenKind::kLeftParen)) {
    return parse_type(types.emplace_back());
  }
  return parse_delimited_list(TokenKind::kRightParen, "to end the function's results",
                              [&] { return parse_signature_entry(types, attributes, /*is_result=*/true); });
}

Status Parser::parse_signature_entry(std::vector<TypeId>& types, std::vector<FunctionAttribute>& attributes,
                                     bool is_result) {
  ORRERY_TRY(parse_type(types.emplace_back()));
  if (!token_.is(TokenKind::kLeftBrace)) {
    return Status::success();
  }
  std::vector<workload::Attribute> dictionary;
  ORRERY_TRY(parse_attribute_dictionary(dictionary));
  for (const workload::Attribute& a : dictionary) {
    attributes.push_back(FunctionAttribute{static_cast<std::uint32_t>(types.size() - 1), is_result, a});
  }
  return Status::success();
}

}  // namespace orrery::frontend::stablehlo
