// The recursive-descent parser for one chunk of MLIR text (a `// -----` split of a file). It builds
// one ModuleDraft per module: ops with their operands resolved to SSA values, result types,
// regions, and attributes kept as source spans. Lowering (lower.h) then turns the attributes that
// matter into typed payloads.
//
// Grammar (MLIR LangRef, as exporters use it):
//   chunk        ::= (module | alias-def | file-metadata | top-level-op)*
//   module       ::= `module` symbol? (`attributes` attr-dict)? region loc?
//   function     ::= `func.func` visibility? symbol `(` args `)` (`->` results)? (`attributes` attr-dict)?
//   region? loc? operation    ::= (result-list `=`)? (generic-op | custom-op) loc? generic-op   ::= string
//   `(` uses `)` successors? (`<` attr-dict `>`)? (`(` region-list `)`)? attr-dict? `:` function-type
//   custom-op    ::= bare-id custom-syntax      (see parse_custom_body)
//   region       ::= `{` entry-block? block* `}`
//   block        ::= `^` id (`(` block-args `)`)? `:` operation*
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "frontend/stablehlo/diagnostics.h"
#include "frontend/stablehlo/lexer.h"
#include "frontend/stablehlo/name_cache.h"
#include "frontend/stablehlo/stablehlo.h"
#include "frontend/stablehlo/value_table.h"
#include "workload/program_builder.h"

namespace orrery::frontend::stablehlo {

// A character for an error message: 'c' when printable, else `byte 0xNN` (a NUL would end the
// message where it is printed, and control bytes garble a terminal).
std::string describe_character(char c);

// A module being built: the builder, its module-level block (sdy.mesh and other module-level ops)
// and its functions by name.
struct ModuleDraft {
  ModuleDraft(std::shared_ptr<const workload::SourceText> source, std::uint32_t first, std::uint32_t last,
              std::uint32_t index)
      : builder(std::move(source), first, last, index), begin(first), end(last) {}
  workload::ProgramBuilder builder;
  std::uint32_t begin;
  std::uint32_t end;
  workload::BlockId module_block = workload::kNoId;
  std::unordered_map<std::string_view, workload::FunctionId> functions;
  std::vector<workload::OpId> module_ops;  // ops of module_block
};

// Attribute aliases (#name = value) of a chunk, by name with '#': the value's source span.
using AttributeAliases = std::unordered_map<std::string_view, std::string_view>;

class Parser {
 public:
  // Deeper nesting (of ops in regions, or of types in types) is refused, so that the recursion
  // of the parser stays far from the end of the stack whatever the input.
  static constexpr std::size_t kMaxNesting = 256;

  Parser(const std::shared_ptr<const workload::SourceText>& source, std::uint32_t begin, std::uint32_t end,
         std::uint32_t first_module_index, const Options& options, Diagnostics& diagnostics);

  // Parses the chunk; on success `modules` holds its modules in source order.
  Status parse_chunk(std::vector<std::unique_ptr<ModuleDraft>>& modules);
  [[nodiscard]] const AttributeAliases& attribute_aliases() const { return attribute_aliases_; }

 private:
  // Everything an op collects before it is committed to the builder; one per nesting depth, reused.
  struct OpScratch {
    struct ResultGroup {
      std::string_view name;
      std::uint32_t count;
      std::uint32_t offset;
    };
    std::vector<ResultGroup> result_groups;
    std::vector<workload::ValueRef> operands;
    std::vector<std::uint32_t> operand_offsets;
    std::vector<workload::TypeId> operand_types;  // from a function-type signature, if any
    bool has_operand_types = false;
    std::vector<workload::TypeId> results;
    std::vector<workload::RegionId> regions;
    std::vector<workload::Attribute> attributes;
    // Entry-block arguments a pretty form declares before its regions (while iter args,
    // manual_computation and reducer arguments).
    std::vector<std::string_view> pending_names;
    std::vector<workload::TypeId> pending_types;
    std::vector<std::uint32_t> pending_offsets;
    std::uint32_t positional = 0;  // positional keywords seen (compare's direction, then its type)
    std::uint32_t init_pairs = 0;  // reduce's `%x init: %y` pairs
    void clear();
  };

  // Tokens (the hot ones inline).
  void consume() {
    previous_end_ = token_end(token_);
    token_ = lexer_.lex();
  }
  [[nodiscard]] std::size_t offset(const Token& token) const {
    return static_cast<std::size_t>(token.text.data() - text_.data());
  }
  [[nodiscard]] std::size_t token_end(const Token& token) const { return offset(token) + token.text.size(); }
  [[nodiscard]] Token peek() {
    const std::size_t saved = lexer_.position();
    const Token next = lexer_.lex();
    lexer_.reset(saved);
    return next;
  }
  [[nodiscard]] bool on_new_line() const { return lexer_.newline_between(previous_end_, offset(token_)); }
  Status expect(TokenKind kind, std::string_view context);
  Status expect_keyword(std::string_view word, std::string_view context);
  Status error_here(std::string message);
  Status error_expected(std::string_view what);
  Status error_at(std::size_t at, std::string message, std::vector<std::string> notes = {});
  // list ::= element (`,` element)*
  template <class ParseElement>
  Status parse_comma_list(ParseElement&& element);
  // `open` (element (`,` element)*)? `close` — the current token must be `open`.
  template <class ParseElement>
  Status parse_delimited_list(TokenKind close, std::string_view context, ParseElement&& element);

  // Chunk and module level (parser.cpp).
  Status parse_top_level(std::vector<std::unique_ptr<ModuleDraft>>& modules);
  Status parse_alias_definition();
  Status skip_file_metadata();
  Status parse_module(std::vector<std::unique_ptr<ModuleDraft>>& modules);
  Status parse_module_item();
  Status parse_function();
  Status parse_function_arguments(std::vector<std::string_view>& names,
                                  std::vector<std::uint32_t>& name_offsets,
                                  std::vector<workload::TypeId>& types,
                                  std::vector<workload::FunctionAttribute>& attributes);
  Status parse_function_results(std::vector<workload::TypeId>& types,
                                std::vector<workload::FunctionAttribute>& attributes);
  // type attr-dict? — one argument or result of a function signature.
  Status parse_signature_entry(std::vector<workload::TypeId>& types,
                               std::vector<workload::FunctionAttribute>& attributes, bool is_result);
  ModuleDraft& begin_module(std::vector<std::unique_ptr<ModuleDraft>>& modules, std::uint32_t begin,
                            std::uint32_t end);
  // Makes `module` the one being built; the name caches hold ids of one module, so they are reset.
  void switch_module(ModuleDraft* module);
  [[nodiscard]] workload::StringId intern_attribute_name(std::string_view name);

  // Operations, regions and blocks (parser_ops.cpp).
  Status parse_operation(workload::BlockId block);
  struct OpName;
  Status resolve_op_name(std::string_view name, std::size_t at, OpName& resolved);
  Status parse_result_list(OpScratch& scratch);
  Status parse_value_use(workload::ValueRef& value);
  Status parse_operand(OpScratch& scratch);
  Status parse_generic_body(OpScratch& scratch, workload::OpId op);
  Status parse_custom_body(OpScratch& scratch, workload::OpKind kind, bool opaque, workload::OpId op);
  Status parse_custom_item(OpScratch& scratch, workload::OpKind kind, bool opaque, workload::OpId op);
  Status parse_custom_paren_group(OpScratch& scratch, workload::OpKind kind);
  Status parse_keyword_attribute(OpScratch& scratch, workload::OpKind kind);
  [[nodiscard]] bool at_statement_boundary(bool opaque);
  Status parse_custom_signature(OpScratch& scratch, workload::OpKind kind);
  Status parse_custom_trailer(OpScratch& scratch, workload::OpKind kind, workload::OpId op);
  Status parse_successor(OpScratch& scratch);
  Status parse_region_list(OpScratch& scratch, workload::OpId op);
  Status parse_region(OpScratch& scratch, workload::OpId op, workload::FunctionId function);
  Status parse_block_arguments(std::vector<std::string_view>& names, std::vector<workload::TypeId>& types,
                               std::vector<std::uint32_t>& offsets);
  Status parse_block_body(workload::BlockId block);
  Status define_block_arguments(workload::BlockId block, const std::vector<std::string_view>& names,
                                const std::vector<std::uint32_t>& offsets);
  Status check_operands(const OpScratch& scratch, workload::OpKind kind, std::string_view name,
                        std::size_t at);
  Status define_results(const OpScratch& scratch, workload::OpId op, std::size_t at);
  Status assign_results(OpScratch& scratch, const std::vector<workload::TypeId>& types, bool explicit_results,
                        std::size_t at);
  OpScratch& scratch_at(std::size_t depth);

  // Attributes (parser_attributes.cpp).
  Status parse_attribute_dictionary(std::vector<workload::Attribute>& attributes);
  // Where an attribute value stands, which decides where it ends (see parse_attribute_value).
  enum class ValueContext : std::uint8_t { kDictionary, kPrettyOp, kAliasDefinition };
  Status parse_attribute_value(std::uint32_t& begin, std::uint32_t& length, ValueContext context);
  Status skip_group();
  Status parse_optional_location();
  void add_attribute(std::vector<workload::Attribute>& attributes, std::string_view name, std::size_t begin,
                     std::size_t end);
  [[nodiscard]] std::string_view pretty_attribute_name(workload::OpKind kind, std::string_view keyword) const;
  [[nodiscard]] bool looks_like_attribute_dictionary();

  // Types (parser_types.cpp).
  Status parse_type(workload::TypeId& type);
  Status parse_type_list(std::vector<workload::TypeId>& types);
  Status parse_result_types(std::vector<workload::TypeId>& types);
  Status parse_type_text(std::string_view text, std::size_t at, workload::TypeId& type);
  Status describe_type(std::string_view text, std::size_t at, workload::TypeDescription& description);
  Status describe_tensor(std::string_view body, std::size_t at, workload::TypeDescription& description);
  Status check_tensor_size(const workload::TypeDescription& description, std::size_t at);
  Status parse_element_type(std::string_view text, std::size_t at, workload::TypeDescription& description);
  Status parse_bounds(std::string_view encoding, std::size_t at, workload::TypeDescription& description);

  const std::shared_ptr<const workload::SourceText>& source_;
  std::string_view text_;
  const Options& options_;
  Diagnostics& diagnostics_;
  Lexer lexer_;
  Token token_;
  std::size_t previous_end_;
  std::uint32_t chunk_begin_;
  std::uint32_t chunk_end_;
  std::uint32_t next_module_index_;

  ModuleDraft* module_ = nullptr;
  ModuleDraft* implicit_module_ = nullptr;  // the chunk's loose top-level ops, if any
  workload::FunctionId function_ = workload::kNoId;
  ValueTable values_;
  std::vector<std::unique_ptr<OpScratch>> scratch_;
  std::size_t depth_ = 0;                         // ops being parsed, outermost first
  std::size_t type_depth_ = 0;                    // types being described (tuple<tuple<...>>)
  std::vector<workload::OpId> block_ops_;         // ops of the open blocks, innermost last
  std::vector<workload::BlockId> region_blocks_;  // blocks of the open regions, innermost last
  std::unordered_map<std::string_view, std::string_view> type_aliases_;  // !name -> type text
  AttributeAliases attribute_aliases_;
  std::set<std::string_view> unknown_ops_;         // reported once each under `lenient`
  std::vector<workload::TypeId> signature_types_;  // scratch for an op's type signature
  std::vector<TokenKind> closer_stack_;            // scratch for skip_group
  // Caches of the current module's interned names and types (see name_cache.h).
  struct OpName {
    workload::OpKind kind = workload::OpKind::kOpaque;
    workload::StringId name = workload::kNoId;
  };
  NameCache<OpName> op_names_;
  NameCache<workload::TypeId> type_names_;
  NameCache<workload::StringId, 256> attribute_names_;
};

template <class ParseElement>
Status Parser::parse_comma_list(ParseElement&& element) {
  for (;;) {
    ORRERY_TRY(element());
    if (!token_.is(TokenKind::kComma)) {
      return Status::success();
    }
    consume();
  }
}

template <class ParseElement>
Status Parser::parse_delimited_list(TokenKind close, std::string_view context, ParseElement&& element) {
  consume();
  if (!token_.is(close)) {
    ORRERY_TRY(parse_comma_list(element));
  }
  return expect(close, context);
}

}  // namespace orrery::frontend::stablehlo
