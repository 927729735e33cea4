// The workload IR: one Program per module of a training program. It is built once by a frontend
// and shared read-only by every rank that runs it (DESIGN.md, invariant 3):
// `std::shared_ptr<const Program>`.
//
// Layout. Every entity lives in a flat table of the Program and is named by a 32-bit id: ops,
// blocks, regions, functions, interned strings and types. Lists (an op's operands, a block's ops)
// are ranges into shared pools, so an op costs a fixed ~60 bytes plus 8 per operand and 4 per
// result. Attribute values are kept as their source text (offset and length into the program's
// source buffer, which the Program holds); the attributes that cost models and the system layer
// need are also lowered into typed payloads (payloads.h).
//
// SSA. An operand is a ValueRef: result i of an op, or argument i of a block. A function's
// arguments are the arguments of its body's entry block (Program::is_function_argument tells
// them apart from other block arguments). Ops of a block are listed in program order.
//
// Device ids in collective attributes are local to the program; the system layer maps (program,
// local device id) to global ranks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.h"
#include "workload/op_kind.h"
#include "workload/payloads.h"
#include "workload/types.h"

namespace orrery::workload {

using OpId = std::uint32_t;
using BlockId = std::uint32_t;
using RegionId = std::uint32_t;

// A run of entries in one of the Program's pools.
struct Range {
  std::uint32_t begin = 0;
  std::uint32_t count = 0;
};

// An SSA value: result `index` of an op, or argument `index` of a block.
class ValueRef {
 public:
  ValueRef() = default;
  static ValueRef op_result(OpId op, std::uint32_t index) { return ValueRef(op, index); }
  static ValueRef block_argument(BlockId block, std::uint32_t index) {
    return ValueRef(block, index | kBlockBit);
  }

  [[nodiscard]] bool is_op_result() const { return (index_ & kBlockBit) == 0; }
  [[nodiscard]] bool is_block_argument() const { return !is_op_result(); }
  // The producing op (op results only) or the owning block (block arguments only).
  [[nodiscard]] OpId op() const;
  [[nodiscard]] BlockId block() const;
  [[nodiscard]] std::uint32_t index() const { return index_ & ~kBlockBit; }
  // One integer per value (op results and block arguments never collide): a hash-map key.
  [[nodiscard]] std::uint64_t key() const { return (static_cast<std::uint64_t>(owner_) << 32) | index_; }
  friend bool operator==(ValueRef, ValueRef) = default;

 private:
  static constexpr std::uint32_t kBlockBit = 0x80000000U;
  ValueRef(std::uint32_t owner, std::uint32_t index) : owner_(owner), index_(index) {}
  std::uint32_t owner_ = kNoId;
  std::uint32_t index_ = 0;
};

// The text a program was read from: one buffer, shared by every module of the file.
struct SourceText {
  std::string path;
  std::string text;
};

// file:line:col and the line's text for an offset into `text` (1-based line and column).
SourceLocation locate(std::string_view path, std::string_view text, std::size_t offset);

// Line and column of many offsets into one text: the line starts are found once, then each
// lookup is a binary search (locate() scans the text from its start every time).
class LineIndex {
 public:
  explicit LineIndex(std::string_view text);
  // 1-based (line, column) of `offset`.
  [[nodiscard]] std::pair<std::uint32_t, std::uint32_t> line_column(std::size_t offset) const;

 private:
  std::vector<std::size_t> line_starts_;
};

// An attribute: its name and its value's source text.
struct Attribute {
  StringId name = kNoId;
  std::uint32_t offset = 0;  // of the value text in the source
  std::uint32_t length = 0;
};

struct Op {
  OpKind kind = OpKind::kOpaque;
  StringId name = kNoId;     // the full op name as written ("stablehlo.add", "check.expect_eq")
  BlockId block = kNoId;     // the block that holds the op
  std::uint32_t offset = 0;  // source offset of the op's first token (its result list, if any)
  Range operands;
  Range results;  // result types
  Range regions;
  Range attributes;
  std::uint32_t payload = kNoId;  // index into the payload table of the op's kind
};

struct Block {
  RegionId region = kNoId;
  std::uint32_t offset = 0;  // source offset of the block (its label, or its region's '{')
  Range arguments;           // argument types
  Range ops;
};

struct Region {
  OpId parent = kNoId;          // the op holding the region; kNoId for a function body
  FunctionId function = kNoId;  // the function the region belongs to
  Range blocks;
};

// An argument or result attribute of a function (e.g. mhlo.sharding on %arg3).
struct FunctionAttribute {
  std::uint32_t index = 0;
  bool is_result = false;
  Attribute attribute;
};

struct Function {
  StringId name = kNoId;  // without '@'
  RegionId body = kNoId;  // kNoId for a declaration
  bool is_public = true;
  std::uint32_t offset = 0;
  Range argument_types;
  Range result_types;
  Range argument_attributes;  // into function_attributes()
  Range attributes;           // the `attributes {...}` dictionary
};

// An sdy.mesh: named axes and their sizes, in order.
struct Mesh {
  StringId name = kNoId;
  IntRange axes;  // pairs (axis-name StringId, size)
};

// How far a program is from running per device (`orrery inspect` reports it).
enum class ProgramForm : std::uint8_t {
  kPrePartitioning,  // shardings but no collectives: XLA inserts collectives later
  kPartitioned,      // per-device shapes; collectives explicit (also: no shardings at all)
  kManual,           // shard_map style: manual regions (sdy.manual_computation or
                     // SPMDFullToShardShape custom calls) that hold the collectives
};
std::string_view program_form_name(ProgramForm form);

class ProgramBuilder;

class Program {
 public:
  // Module.
  [[nodiscard]] std::string_view module_name() const { return string(module_name_); }
  [[nodiscard]] std::uint32_t module_index() const { return module_index_; }  // 0-based, in the file
  [[nodiscard]] std::uint32_t num_partitions() const { return num_partitions_; }
  [[nodiscard]] std::uint32_t num_replicas() const { return num_replicas_; }
  [[nodiscard]] std::uint32_t num_devices() const { return num_partitions_ * num_replicas_; }
  [[nodiscard]] ProgramForm form() const { return form_; }
  [[nodiscard]] std::span<const Attribute> module_attributes() const {
    return pool(attributes_, module_attributes_);
  }
  [[nodiscard]] std::span<const Mesh> meshes() const { return meshes_; }
  [[nodiscard]] const Mesh* find_mesh(std::string_view name) const;

  // Source.
  [[nodiscard]] const SourceText& source() const { return *source_; }
  [[nodiscard]] std::uint32_t source_begin() const { return source_begin_; }
  [[nodiscard]] std::uint32_t source_end() const { return source_end_; }
  [[nodiscard]] std::size_t source_bytes() const { return source_end_ - source_begin_; }
  // file:line:col and the line's text for a source offset (computed on demand).
  [[nodiscard]] SourceLocation location(std::uint32_t offset) const;

  // Functions.
  [[nodiscard]] std::span<const Function> functions() const { return functions_; }
  [[nodiscard]] const Function& function(FunctionId id) const { return functions_[id]; }
  [[nodiscard]] std::optional<FunctionId> find_function(std::string_view name) const;
  // `main` if present, else the only public function with a body; kNoId when there is neither.
  [[nodiscard]] FunctionId entry_function() const { return entry_function_; }
  [[nodiscard]] BlockId entry_block(const Function& f) const;  // kNoId for declarations
  [[nodiscard]] std::span<const TypeId> argument_types(const Function& f) const {
    return pool(type_pool_, f.argument_types);
  }
  [[nodiscard]] std::span<const TypeId> result_types(const Function& f) const {
    return pool(type_pool_, f.result_types);
  }
  [[nodiscard]] std::span<const FunctionAttribute> argument_attributes(const Function& f) const {
    return pool(function_attributes_, f.argument_attributes);
  }
  [[nodiscard]] std::span<const Attribute> attributes(const Function& f) const {
    return pool(attributes_, f.attributes);
  }

  // Structure.
  [[nodiscard]] std::size_t op_count() const { return ops_.size(); }
  [[nodiscard]] std::size_t block_count() const { return blocks_.size(); }
  [[nodiscard]] const Op& op(OpId id) const { return ops_[id]; }
  [[nodiscard]] const Block& block(BlockId id) const { return blocks_[id]; }
  [[nodiscard]] const Region& region(RegionId id) const { return regions_[id]; }
  [[nodiscard]] std::span<const OpId> ops(const Block& b) const { return pool(block_ops_, b.ops); }
  [[nodiscard]] std::span<const BlockId> blocks(const Region& r) const {
    return pool(region_blocks_, r.blocks);
  }
  [[nodiscard]] std::span<const RegionId> regions(const Op& o) const { return pool(op_regions_, o.regions); }
  [[nodiscard]] std::span<const ValueRef> operands(const Op& o) const { return pool(operands_, o.operands); }
  [[nodiscard]] std::span<const TypeId> result_types(const Op& o) const {
    return pool(type_pool_, o.results);
  }
  [[nodiscard]] std::span<const TypeId> argument_types(const Block& b) const {
    return pool(type_pool_, b.arguments);
  }
  [[nodiscard]] TypeId value_type(ValueRef value) const;
  [[nodiscard]] bool is_function_argument(ValueRef value) const;
  // The function whose body (transitively) holds the op.
  [[nodiscard]] FunctionId function_of(OpId id) const;
  [[nodiscard]] const TypeTable& types() const { return types_; }

  // Names and attributes.
  [[nodiscard]] std::string_view string(StringId id) const {
    return id == kNoId ? std::string_view() : strings_[id];
  }
  [[nodiscard]] std::string_view op_name(const Op& o) const { return string(o.name); }
  [[nodiscard]] std::span<const Attribute> attributes(const Op& o) const {
    return pool(attributes_, o.attributes);
  }
  [[nodiscard]] std::string_view attribute_text(const Attribute& a) const;
  // The raw source text of the op's attribute `name` (as named by StableHLO's generic form, e.g.
  // "broadcast_dimensions" also for the pretty `dims = [...]`), if the op has it.
  [[nodiscard]] std::optional<std::string_view> attribute(const Op& o, std::string_view name) const;
  // The SSA name of the op's first result as written ("%3", "%cst_2"); empty if it has none.
  [[nodiscard]] std::string_view result_name(const Op& o) const;

  // Typed payloads (payloads.h). Each asserts that the op has that payload.
  [[nodiscard]] std::span<const std::int64_t> ints(IntRange range) const {
    return {ints_.data() + range.begin, range.count};
  }
  [[nodiscard]] bool has_payload(const Op& o) const { return o.payload != kNoId; }
  [[nodiscard]] const DotDimensions& dot(const Op& o) const;
  [[nodiscard]] const ConvolutionDimensions& convolution(const Op& o) const;
  [[nodiscard]] const ReduceDimensions& reduce(const Op& o) const;
  [[nodiscard]] const WindowDimensions& window(const Op& o) const;
  [[nodiscard]] const GatherDimensions& gather(const Op& o) const;
  [[nodiscard]] const ScatterDimensions& scatter(const Op& o) const;
  [[nodiscard]] const SortAttributes& sort(const Op& o) const;
  [[nodiscard]] const CustomCallAttributes& custom_call(const Op& o) const;
  [[nodiscard]] const CompareAttributes& compare(const Op& o) const;
  [[nodiscard]] const CollectiveAttributes& collective(const Op& o) const;
  [[nodiscard]] const WhileAttributes& while_loop(const Op& o) const;
  [[nodiscard]] const CallAttributes& call(const Op& o) const;
  // Every while op of the program, in program order.
  [[nodiscard]] std::span<const OpId> while_ops() const { return while_ops_; }
  // The while loop's trip count, or an error naming the loop (and how to override it) when it
  // could not be derived and was not overridden.
  [[nodiscard]] std::uint64_t trip_count_or_throw(OpId while_op) const;
  // The error trip_count_or_throw throws for a loop whose trip count is unknown.
  [[nodiscard]] Error trip_count_error(OpId while_op) const;

  // Heap bytes held by this program's own tables (not counting the shared source text).
  [[nodiscard]] std::size_t heap_bytes() const;

 private:
  friend class ProgramBuilder;
  template <class T>
  static std::span<const T> pool(const std::vector<T>& v, Range r) {
    return {v.data() + r.begin, r.count};
  }
  template <class T>
  const T& payload(const std::vector<T>& table, const Op& o, bool kind_matches, const char* what) const;

  std::shared_ptr<const SourceText> source_;
  std::uint32_t source_begin_ = 0;
  std::uint32_t source_end_ = 0;
  std::uint32_t module_index_ = 0;
  StringId module_name_ = kNoId;
  Range module_attributes_;
  std::uint32_t num_partitions_ = 1;
  std::uint32_t num_replicas_ = 1;
  ProgramForm form_ = ProgramForm::kPartitioned;
  FunctionId entry_function_ = kNoId;

  std::vector<std::string_view> strings_;  // views into the source or into owned_strings_
  std::vector<std::unique_ptr<std::string>> owned_strings_;
  TypeTable types_;

  std::vector<Function> functions_;
  std::vector<FunctionAttribute> function_attributes_;
  std::vector<Mesh> meshes_;
  std::vector<Op> ops_;
  std::vector<Block> blocks_;
  std::vector<Region> regions_;
  std::vector<OpId> block_ops_;
  std::vector<BlockId> region_blocks_;
  std::vector<RegionId> op_regions_;
  std::vector<ValueRef> operands_;
  std::vector<TypeId> type_pool_;  // op results, block arguments, function signatures
  std::vector<Attribute> attributes_;
  std::vector<std::int64_t> ints_;
  std::vector<OpId> while_ops_;

  std::vector<DotDimensions> dots_;
  std::vector<ConvolutionDimensions> convolutions_;
  std::vector<ReduceDimensions> reduces_;
  std::vector<WindowDimensions> windows_;
  std::vector<GatherDimensions> gathers_;
  std::vector<ScatterDimensions> scatters_;
  std::vector<SortAttributes> sorts_;
  std::vector<CustomCallAttributes> custom_calls_;
  std::vector<CompareAttributes> compares_;
  std::vector<CollectiveAttributes> collectives_;
  std::vector<WhileAttributes> whiles_;
  std::vector<CallAttributes> calls_;
};

}  // namespace orrery::workload
