// ProgramBuilder: how a frontend fills a Program. Entities are appended in parse order; lists are
// handed over whole once known (an op's operands, results, regions and attributes when the op is
// complete; a block's ops when the block is closed), so each list is one contiguous pool range.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "workload/program.h"

namespace orrery::workload {

class ProgramBuilder {
 public:
  // A program for the module in source[begin, end), the `module_index`th of its file.
  ProgramBuilder(std::shared_ptr<const SourceText> source, std::uint32_t begin, std::uint32_t end,
                 std::uint32_t module_index);

  [[nodiscard]] const Program& program() const { return *program_; }
  [[nodiscard]] TypeTable& types() { return program_->types_; }

  // Strings: intern() keeps a view, so `text` must outlive the program (a view into its source,
  // or a string literal), and gives equal texts one id; own() copies.
  StringId intern(std::string_view text);
  StringId own(std::string text);
  // The id of an interned string, if it was interned.
  [[nodiscard]] std::optional<StringId> find_string(std::string_view text) const;

  void set_module_name(StringId name) { program_->module_name_ = name; }
  void set_module_attributes(std::span<const Attribute> attributes);
  void set_device_counts(std::uint32_t num_partitions, std::uint32_t num_replicas);
  void set_form(ProgramForm form) { program_->form_ = form; }
  void set_entry_function(FunctionId id) { program_->entry_function_ = id; }
  void add_mesh(StringId name, std::span<const std::pair<StringId, std::int64_t>> axes);

  FunctionId add_function(StringId name, bool is_public, std::uint32_t offset,
                          std::span<const TypeId> argument_types, std::span<const TypeId> result_types,
                          std::span<const FunctionAttribute> argument_attributes,
                          std::span<const Attribute> attributes);
  void set_function_body(FunctionId function, RegionId body);

  RegionId add_region(OpId parent, FunctionId function);
  void set_region_blocks(RegionId region, std::span<const BlockId> blocks);
  BlockId add_block(RegionId region, std::uint32_t offset, std::span<const TypeId> argument_types);
  void set_block_ops(BlockId block, std::span<const OpId> ops);

  // Adds to `region` one block per block of `from`'s `old_region`, with the same offsets and
  // argument types, and maps each old block argument to its new one in `values` (keyed by
  // ValueRef::key()): the start of copying a region into this program.
  std::vector<BlockId> copy_blocks(const Program& from, RegionId old_region, RegionId region,
                                   std::unordered_map<std::uint64_t, ValueRef>& values);

  OpId add_op(OpKind kind, StringId name, BlockId block, std::uint32_t offset);
  void set_op_contents(OpId op, std::span<const ValueRef> operands, std::span<const TypeId> result_types,
                       std::span<const RegionId> regions, std::span<const Attribute> attributes);
  // Replaces the op's kind (lowering refines kUnknown/kOpaque decisions and sdy collectives).
  void set_op_kind(OpId op, OpKind kind);

  IntRange add_ints(std::span<const std::int64_t> values);
  void set_payload(OpId op, const DotDimensions& payload);
  void set_payload(OpId op, const ConvolutionDimensions& payload);
  void set_payload(OpId op, const ReduceDimensions& payload);
  void set_payload(OpId op, const WindowDimensions& payload);
  void set_payload(OpId op, const GatherDimensions& payload);
  void set_payload(OpId op, const ScatterDimensions& payload);
  void set_payload(OpId op, const SortAttributes& payload);
  void set_payload(OpId op, const CustomCallAttributes& payload);
  void set_payload(OpId op, const CompareAttributes& payload);
  void set_payload(OpId op, const CollectiveAttributes& payload);
  void set_payload(OpId op, const WhileAttributes& payload);
  void set_payload(OpId op, const CallAttributes& payload);
  // The op's payload index into its kind's table, as another program of the same tables has it
  // (inline_calls copies the tables whole).
  void set_payload_index(OpId op, std::uint32_t payload);

  // Reserves table space for a module of `source_bytes` of text.
  void reserve_for(std::size_t source_bytes);
  // Trims tables that are more than a quarter unused and hands the program over; the builder is
  // empty afterwards.
  std::shared_ptr<const Program> finish();

  // `program` with every func.call of a function defined in the module replaced by a copy of the
  // callee's body, as XLA inlines calls before it fuses (its CallInliner pass): the callee's
  // arguments become the call's operands, the call's results the callee's returned values,
  // recursively. Everything else is kept as it is (functions and their ids, payloads,
  // source offsets: an inlined op still points at its line in the callee). A call whose callee has
  // several blocks, none, holds a collective (in its body or a function it calls), or is already
  // being inlined (recursion) stays a call. A private function
  // whose every call was inlined becomes a declaration (no body), as XLA drops it: its ops are
  // not costed on their own.
  static std::shared_ptr<const Program> inline_calls(const Program& program);

  // A builder holding a copy of `program`'s tables (strings, types, attributes, integers,
  // payloads, meshes, module attributes, device counts, form and entry function) and none of its
  // functions, regions, blocks or ops: a pass that rewrites a program (inline_calls,
  // partition_spmd) adds those, and every id into the tables stays valid.
  static ProgramBuilder copying_tables(const Program& program);

 private:
  template <class T>
  void append_payload(std::vector<T>& table, OpId op, const T& payload);

  std::unique_ptr<Program> program_;
  std::unordered_map<std::string_view, StringId> string_ids_;  // build-time only: dedupes intern()
};

}  // namespace orrery::workload
