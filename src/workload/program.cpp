#include "workload/program.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "util/assert.h"
#include "workload/program_builder.h"

namespace orrery::workload {

OpId ValueRef::op() const {
  ORRERY_ASSERT(is_op_result(), "op() of a block argument");
  return owner_;
}

BlockId ValueRef::block() const {
  ORRERY_ASSERT(is_block_argument(), "block() of an op result");
  return owner_;
}

std::string_view program_form_name(ProgramForm form) {
  switch (form) {
    case ProgramForm::kPrePartitioning:
      return "pre-partitioning";
    case ProgramForm::kPartitioned:
      return "partitioned";
    case ProgramForm::kManual:
      return "manual";
  }
  return "?";
}

const Mesh* Program::find_mesh(std::string_view name) const {
  for (const Mesh& mesh : meshes_) {
    if (string(mesh.name) == name) {
      return &mesh;
    }
  }
  return nullptr;
}

SourceLocation locate(std::string_view path, std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  std::uint32_t line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  std::size_t line_end = text.find('\n', line_start);
  if (line_end == std::string_view::npos) {
    line_end = text.size();
  }
  return SourceLocation{std::string(path), line, static_cast<std::uint32_t>(offset - line_start + 1),
                        std::string(text.substr(line_start, line_end - line_start))};
}

LineIndex::LineIndex(std::string_view text) {
  line_starts_.push_back(0);
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') {
      line_starts_.push_back(i + 1);
    }
  }
}

std::pair<std::uint32_t, std::uint32_t> LineIndex::line_column(std::size_t offset) const {
  const auto next = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  const auto line = static_cast<std::size_t>(next - line_starts_.begin());  // >= 1: line_starts_[0] is 0
  return {static_cast<std::uint32_t>(line), static_cast<std::uint32_t>(offset - line_starts_[line - 1] + 1)};
}

SourceLocation Program::location(std::uint32_t offset) const {
  return locate(source_->path, source_->text, offset);
}

std::optional<FunctionId> Program::find_function(std::string_view name) const {
  for (std::size_t i = 0; i < functions_.size(); ++i) {
    if (string(functions_[i].name) == name) {
      return static_cast<FunctionId>(i);
    }
  }
  return std::nullopt;
}

BlockId Program::entry_block(const Function& f) const {
  if (f.body == kNoId) {
    return kNoId;
  }
  const Region& body = regions_[f.body];
  return body.blocks.count == 0 ? kNoId : region_blocks_[body.blocks.begin];
}

TypeId Program::value_type(ValueRef value) const {
  if (value.is_op_result()) {
    const Op& o = ops_[value.op()];
    ORRERY_ASSERT(value.index() < o.results.count, "result index out of range");
    return type_pool_[o.results.begin + value.index()];
  }
  const Block& b = blocks_[value.block()];
  ORRERY_ASSERT(value.index() < b.arguments.count, "argument index out of range");
  return type_pool_[b.arguments.begin + value.index()];
}

bool Program::is_function_argument(ValueRef value) const {
  if (!value.is_block_argument()) {
    return false;
  }
  const Region& r = regions_[blocks_[value.block()].region];
  return r.parent == kNoId && region_blocks_[r.blocks.begin] == value.block();
}

FunctionId Program::function_of(OpId id) const {
  return regions_[blocks_[ops_[id].block].region].function;
}

std::string_view Program::attribute_text(const Attribute& a) const {
  return std::string_view(source_->text).substr(a.offset, a.length);
}

std::optional<std::string_view> Program::attribute(const Op& o, std::string_view name) const {
  for (const Attribute& a : attributes(o)) {
    if (string(a.name) == name) {
      return attribute_text(a);
    }
  }
  return std::nullopt;
}

std::string_view Program::result_name(const Op& o) const {
  const std::string_view text(source_->text);
  if (o.results.count == 0 || o.offset >= text.size() || text[o.offset] != '%') {
    return {};
  }
  std::size_t end = o.offset + 1;
  while (end < text.size()) {
    const char c = text[end];
    const bool identifier = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                            c == '_' || c == '$' || c == '.' || c == '-';
    if (!identifier) {
      break;
    }
    ++end;
  }
  return text.substr(o.offset, end - o.offset);
}

template <class T>
const T& Program::payload(const std::vector<T>& table, const Op& o, bool kind_matches,
                          const char* what) const {
  ORRERY_ASSERT(kind_matches && o.payload < table.size(), what);
  return table[o.payload];
}

const DotDimensions& Program::dot(const Op& o) const {
  return payload(dots_, o, o.kind == OpKind::kDotGeneral || o.kind == OpKind::kDot,
                 "dot() of an op without dot dimensions");
}
const ConvolutionDimensions& Program::convolution(const Op& o) const {
  return payload(convolutions_, o, o.kind == OpKind::kConvolution || o.kind == OpKind::kDynamicConv,
                 "convolution() of an op that is not a convolution");
}
const ReduceDimensions& Program::reduce(const Op& o) const {
  return payload(reduces_, o, o.kind == OpKind::kReduce, "reduce() of an op that is not a reduce");
}
const WindowDimensions& Program::window(const Op& o) const {
  return payload(windows_, o, o.kind == OpKind::kReduceWindow || o.kind == OpKind::kSelectAndScatter,
                 "window() of an op without a window");
}
const GatherDimensions& Program::gather(const Op& o) const {
  return payload(gathers_, o, o.kind == OpKind::kGather || o.kind == OpKind::kDynamicGather,
                 "gather() of an op that is not a gather");
}
const ScatterDimensions& Program::scatter(const Op& o) const {
  return payload(scatters_, o, o.kind == OpKind::kScatter, "scatter() of an op that is not a scatter");
}
const SortAttributes& Program::sort(const Op& o) const {
  return payload(sorts_, o, o.kind == OpKind::kSort, "sort() of an op that is not a sort");
}
const CustomCallAttributes& Program::custom_call(const Op& o) const {
  return payload(custom_calls_, o, o.kind == OpKind::kCustomCall, "custom_call() of an op that is not one");
}
const CompareAttributes& Program::compare(const Op& o) const {
  return payload(compares_, o, o.kind == OpKind::kCompare, "compare() of an op that is not a compare");
}
const CollectiveAttributes& Program::collective(const Op& o) const {
  return payload(collectives_, o, op_category(o.kind) == OpCategory::kCollective,
                 "collective() of an op that is not a collective");
}
const WhileAttributes& Program::while_loop(const Op& o) const {
  return payload(whiles_, o, o.kind == OpKind::kWhile, "while_loop() of an op that is not a while");
}
const CallAttributes& Program::call(const Op& o) const {
  return payload(calls_, o, o.kind == OpKind::kCall || o.kind == OpKind::kComposite,
                 "call() of an op that is not a call");
}

std::uint64_t Program::trip_count_or_throw(OpId while_op) const {
  const WhileAttributes& loop = while_loop(ops_[while_op]);
  if (loop.source != TripCountSource::kUnknown) {
    return loop.trip_count;
  }
  throw OrreryError(trip_count_error(while_op));
}

Error Program::trip_count_error(OpId while_op) const {
  const Op& o = ops_[while_op];
  const WhileAttributes& loop = while_loop(o);
  const std::string name(string(loop.name));
  return Error{
      ErrorCode::kUnsupported,
      "the trip count of while loop '" + name + "' cannot be derived: " + std::string(string(loop.reason)),
      location(o.offset),
      {"set it with `--trip-count " + name +
       "=N` (orrery inspect) or in the scenario: "
       "workload.programs[].loop_trip_counts: {\"" +
       name + "\": N}"}};
}

std::size_t Program::heap_bytes() const {
  auto bytes = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
  std::size_t total = sizeof(Program) + types_.heap_bytes();
  total += bytes(strings_) + bytes(owned_strings_);
  for (const auto& s : owned_strings_) {
    total += sizeof(std::string) + s->capacity() + 1;
  }
  total += bytes(functions_) + bytes(function_attributes_) + bytes(meshes_) + bytes(ops_) + bytes(blocks_) +
           bytes(regions_) + bytes(block_ops_) + bytes(region_blocks_) + bytes(op_regions_) +
           bytes(operands_) + bytes(type_pool_) + bytes(attributes_) + bytes(ints_) + bytes(while_ops_);
  total += bytes(dots_) + bytes(convolutions_) + bytes(reduces_) + bytes(windows_) + bytes(gathers_) +
           bytes(scatters_) + bytes(sorts_) + bytes(custom_calls_) + bytes(compares_) + bytes(collectives_) +
           bytes(whiles_) + bytes(calls_);
  return total;
}

// ProgramBuilder

ProgramBuilder::ProgramBuilder(std::shared_ptr<const SourceText> source, std::uint32_t begin,
                               std::uint32_t end, std::uint32_t module_index)
    : program_(std::make_unique<Program>()) {
  program_->source_ = std::move(source);
  program_->source_begin_ = begin;
  program_->source_end_ = end;
  program_->module_index_ = module_index;
}

StringId ProgramBuilder::intern(std::string_view text) {
  const auto [it, inserted] = string_ids_.try_emplace(text, static_cast<StringId>(program_->strings_.size()));
  if (inserted) {
    program_->strings_.push_back(text);
  }
  return it->second;
}

std::optional<StringId> ProgramBuilder::find_string(std::string_view text) const {
  const auto it = string_ids_.find(text);
  return it == string_ids_.end() ? std::nullopt : std::optional<StringId>(it->second);
}

StringId ProgramBuilder::own(std::string text) {
  if (const auto it = string_ids_.find(text); it != string_ids_.end()) {
    return it->second;
  }
  program_->owned_strings_.push_back(std::make_unique<std::string>(std::move(text)));
  return intern(*program_->owned_strings_.back());
}

void ProgramBuilder::set_module_attributes(std::span<const Attribute> attributes) {
  Program& p = *program_;
  p.module_attributes_ = {static_cast<std::uint32_t>(p.attributes_.size()),
                          static_cast<std::uint32_t>(attributes.size())};
  p.attributes_.insert(p.attributes_.end(), attributes.begin(), attributes.end());
}

void ProgramBuilder::set_device_counts(std::uint32_t num_partitions, std::uint32_t num_replicas) {
  program_->num_partitions_ = num_partitions;
  program_->num_replicas_ = num_replicas;
}

void ProgramBuilder::add_mesh(StringId name, std::span<const std::pair<StringId, std::int64_t>> axes) {
  std::vector<std::int64_t> flat;
  for (const auto& [axis, size] : axes) {
    flat.push_back(axis);
    flat.push_back(size);
  }
  program_->meshes_.push_back(Mesh{name, add_ints(flat)});
}

namespace {
// Lists are short (an op has two or three operands), so an element loop beats insert()'s memmove.
template <class T>
Range append(std::vector<T>& pool, std::span<const T> values) {
  const Range range{static_cast<std::uint32_t>(pool.size()), static_cast<std::uint32_t>(values.size())};
  for (const T& value : values) {
    pool.push_back(value);
  }
  return range;
}
}  // namespace

FunctionId ProgramBuilder::add_function(StringId name, bool is_public, std::uint32_t offset,
                                        std::span<const TypeId> argument_types,
                                        std::span<const TypeId> result_types,
                                        std::span<const FunctionAttribute> argument_attributes,
                                        std::span<const Attribute> attributes) {
  Program& p = *program_;
  Function f;
  f.name = name;
  f.is_public = is_public;
  f.offset = offset;
  f.argument_types = append(p.type_pool_, argument_types);
  f.result_types = append(p.type_pool_, result_types);
  f.argument_attributes = append(p.function_attributes_, argument_attributes);
  f.attributes = append(p.attributes_, attributes);
  p.functions_.push_back(f);
  return static_cast<FunctionId>(p.functions_.size() - 1);
}

void ProgramBuilder::set_function_body(FunctionId function, RegionId body) {
  program_->functions_[function].body = body;
}

RegionId ProgramBuilder::add_region(OpId parent, FunctionId function) {
  program_->regions_.push_back(Region{parent, function, {}});
  return static_cast<RegionId>(program_->regions_.size() - 1);
}

void ProgramBuilder::set_region_blocks(RegionId region, std::span<const BlockId> blocks) {
  program_->regions_[region].blocks = append(program_->region_blocks_, blocks);
}

BlockId ProgramBuilder::add_block(RegionId region, std::uint32_t offset,
                                  std::span<const TypeId> argument_types) {
  Program& p = *program_;
  p.blocks_.push_back(Block{region, offset, append(p.type_pool_, argument_types), {}});
  return static_cast<BlockId>(p.blocks_.size() - 1);
}

std::vector<BlockId> ProgramBuilder::copy_blocks(const Program& from, RegionId old_region, RegionId region,
                                                 std::unordered_map<std::uint64_t, ValueRef>& values) {
  std::vector<BlockId> blocks;
  for (const BlockId old_block : from.blocks(from.region(old_region))) {
    const Block& b = from.block(old_block);
    const BlockId block = add_block(region, b.offset, from.argument_types(b));
    for (std::uint32_t i = 0; i < b.arguments.count; ++i) {
      values[ValueRef::block_argument(old_block, i).key()] = ValueRef::block_argument(block, i);
    }
    blocks.push_back(block);
  }
  set_region_blocks(region, blocks);
  return blocks;
}

void ProgramBuilder::set_block_ops(BlockId block, std::span<const OpId> ops) {
  program_->blocks_[block].ops = append(program_->block_ops_, ops);
}

void ProgramBuilder::set_payload_index(OpId op, std::uint32_t payload) {
  program_->ops_[op].payload = payload;
}

OpId ProgramBuilder::add_op(OpKind kind, StringId name, BlockId block, std::uint32_t offset) {
  Op o;
  o.kind = kind;
  o.name = name;
  o.block = block;
  o.offset = offset;
  program_->ops_.push_back(o);
  const auto id = static_cast<OpId>(program_->ops_.size() - 1);
  if (kind == OpKind::kWhile) {
    program_->while_ops_.push_back(id);
  }
  return id;
}

void ProgramBuilder::set_op_contents(OpId op, std::span<const ValueRef> operands,
                                     std::span<const TypeId> result_types, std::span<const RegionId> regions,
                                     std::span<const Attribute> attributes) {
  Program& p = *program_;
  Op& o = p.ops_[op];
  o.operands = append(p.operands_, operands);
  o.results = append(p.type_pool_, result_types);
  o.regions = append(p.op_regions_, regions);
  o.attributes = append(p.attributes_, attributes);
}

void ProgramBuilder::set_op_kind(OpId op, OpKind kind) {
  program_->ops_[op].kind = kind;
}

IntRange ProgramBuilder::add_ints(std::span<const std::int64_t> values) {
  const Range r = append(program_->ints_, values);
  return IntRange{r.begin, r.count};
}

template <class T>
void ProgramBuilder::append_payload(std::vector<T>& table, OpId op, const T& payload) {
  program_->ops_[op].payload = static_cast<std::uint32_t>(table.size());
  table.push_back(payload);
}

void ProgramBuilder::set_payload(OpId op, const DotDimensions& p) {
  append_payload(program_->dots_, op, p);
}
void ProgramBuilder::set_payload(OpId op, const ConvolutionDimensions& p) {
  append_payload(program_->convolutions_, op, p);
}
void ProgramBuilder::set_payload(OpId op, const ReduceDimensions& p) {
  append_payload(program_->reduces_, op, p);
}
void ProgramBuilder::set_payload(OpId op, const WindowDimensions& p) {
  append_payload(program_->windows_, op, p);
}
void ProgramBuilder::set_payload(OpId op, const GatherDimensions& p) {
  append_payload(program_->gathers_, op, p);
}
void ProgramBuilder::set_payload(OpId op, const ScatterDimensions& p) {
  append_payload(program_->scatters_, op, p);
}
void ProgramBuilder::set_payload(OpId op, const SortAttributes& p) {
  append_payload(program_->sorts_, op, p);
}
void ProgramBuilder::set_payload(OpId op, const CustomCallAttributes& p) {
  append_payload(program_->custom_calls_, op, p);
}
void ProgramBuilder::set_payload(OpId op, const CompareAttributes& p) {
  append_payload(program_->compares_, op, p);
}
void ProgramBuilder::set_payload(OpId op, const CollectiveAttributes& p) {
  append_payload(program_->collectives_, op, p);
}
void ProgramBuilder::set_payload(OpId op, const WhileAttributes& p) {
  append_payload(program_->whiles_, op, p);
}
void ProgramBuilder::set_payload(OpId op, const CallAttributes& p) {
  append_payload(program_->calls_, op, p);
}

void ProgramBuilder::reserve_for(std::size_t source_bytes) {
  // Real exports run ~100-120 bytes of text per op, with ~1.6 operands, ~1 result and ~0.8
  // attributes per op (Llama3-100M, ResNet-50): reserving that much avoids regrowing the big
  // tables, and finish() trims what a sparser file leaves unused.
  Program& p = *program_;
  const std::size_t ops = source_bytes / 100;
  p.ops_.reserve(ops);
  p.block_ops_.reserve(ops);
  p.operands_.reserve(ops + ops * 7 / 10);
  p.type_pool_.reserve(ops + ops / 20);
  p.attributes_.reserve(ops * 9 / 10);
}

namespace {
// Trims a table when more than a quarter of it is unused (trimming copies it).
template <class T>
void trim(std::vector<T>& table) {
  if (table.capacity() > table.size() + table.size() / 4 + 16) {
    table.shrink_to_fit();
  }
}
}  // namespace

namespace {

// Copies a program's functions into a builder, inlining calls (ProgramBuilder::inline_calls).
class CallInliner {
 public:
  CallInliner(const Program& from, ProgramBuilder& to) : from_(from), to_(to) {}

  RegionId copy_region(RegionId old_region, OpId new_parent, FunctionId function,
                       std::unordered_map<std::uint64_t, ValueRef>& values) {
    const RegionId region = to_.add_region(new_parent, function);
    const std::vector<BlockId> blocks = to_.copy_blocks(from_, old_region, region, values);
    std::size_t index = 0;
    for (const BlockId old_block : from_.blocks(from_.region(old_region))) {
      std::vector<OpId> ops;
      for (const OpId op : from_.ops(from_.block(old_block))) {
        copy_op(op, blocks[index], function, values, ops);
      }
      to_.set_block_ops(blocks[index], ops);
      ++index;
    }
    return region;
  }

 private:
  static ValueRef mapped(const std::unordered_map<std::uint64_t, ValueRef>& values, ValueRef v) {
    const auto it = values.find(v.key());
    ORRERY_ASSERT(it != values.end(), "inline_calls: a value used before it is copied");
    return it->second;
  }

 public:
  // The functions whose bodies stay after inlining: every function but the private ones that are
  // only called, each call inlined (XLA drops them too). A call that stays a call (recursion, a
  // callee of several blocks) or a composite keeps its callee.
  std::vector<bool> live_functions() {
    const std::size_t n = from_.functions().size();
    std::vector<bool> called(n, false);
    for (OpId id = 0; id < from_.op_count(); ++id) {
      const Op& op = from_.op(id);
      if (op.kind == OpKind::kCall && from_.has_payload(op) && from_.call(op).callee != kNoId) {
        called[from_.call(op).callee] = true;
      }
    }
    std::vector<bool> live(n, false);
    std::vector<FunctionId> work;
    for (FunctionId f = 0; f < n; ++f) {
      if (from_.function(f).is_public || !called[f] || f == from_.entry_function()) {
        live[f] = true;
        work.push_back(f);
      }
    }
    while (!work.empty()) {
      const FunctionId f = work.back();
      work.pop_back();
      if (from_.function(f).body == kNoId) {
        continue;
      }
      std::vector<FunctionId> kept;
      scan_region(from_.function(f).body, kept);
      for (const FunctionId k : kept) {
        if (!live[k]) {
          live[k] = true;
          work.push_back(k);
        }
      }
    }
    return live;
  }

 private:
  // Walks a region as copy_region would, collecting the callees of calls and composites that stay.
  void scan_region(RegionId region, std::vector<FunctionId>& kept) {
    for (const BlockId block : from_.blocks(from_.region(region))) {
      for (const OpId id : from_.ops(from_.block(block))) {
        scan_op(id, kept);
      }
    }
  }

  void scan_op(OpId id, std::vector<FunctionId>& kept) {
    const Op& op = from_.op(id);
    if (const std::optional<BlockId> entry = inlinable(op)) {
      const FunctionId callee = from_.call(op).callee;
      active_.insert(callee);
      const auto body = from_.ops(from_.block(*entry));
      for (std::size_t i = 0; i + 1 < body.size(); ++i) {
        scan_op(body[i], kept);
      }
      active_.erase(callee);
      return;
    }
    if ((op.kind == OpKind::kCall || op.kind == OpKind::kComposite) && from_.has_payload(op) &&
        from_.call(op).callee != kNoId) {
      kept.push_back(from_.call(op).callee);
    }
    for (const RegionId region : from_.regions(op)) {
      scan_region(region, kept);
    }
  }

  // The callee's one block, when the call can be inlined.
  std::optional<BlockId> inlinable(const Op& op) {
    if (op.kind != OpKind::kCall || !from_.has_payload(op)) {
      return std::nullopt;
    }
    const FunctionId callee = from_.call(op).callee;
    if (callee == kNoId || active_.contains(callee)) {
      return std::nullopt;
    }
    const Function& f = from_.function(callee);
    if (f.body == kNoId || from_.blocks(from_.region(f.body)).size() != 1 || communicates(callee)) {
      return std::nullopt;
    }
    const BlockId entry = from_.blocks(from_.region(f.body)).front();
    const auto ops = from_.ops(from_.block(entry));
    if (ops.empty() || from_.op(ops.back()).kind != OpKind::kReturn ||
        from_.operands(from_.op(ops.back())).size() != op.results.count ||
        from_.block(entry).arguments.count != op.operands.count) {
      return std::nullopt;
    }
    return entry;
  }

  // Whether a function holds a collective, in its body or in a function it calls. Such functions
  // (model layers with their tensor-parallel collectives) stay calls: every copy of a collective
  // carries its own plan over the ranks (a 1,024-GPU job's memory grew 25x when they were
  // inlined), while the boundary costs only a write and a read of the values crossing it.
  bool communicates(FunctionId f) {
    if (const auto it = communicates_.find(f); it != communicates_.end()) {
      return it->second;
    }
    communicates_[f] = false;  // a recursive call does not make it communicate
    bool found = false;
    const Function& function = from_.function(f);
    if (function.body != kNoId) {
      std::vector<RegionId> regions{function.body};
      while (!regions.empty() && !found) {
        const RegionId region = regions.back();
        regions.pop_back();
        for (const BlockId block : from_.blocks(from_.region(region))) {
          for (const OpId id : from_.ops(from_.block(block))) {
            const Op& op = from_.op(id);
            if (op_category(op.kind) == OpCategory::kCollective ||
                ((op.kind == OpKind::kCall || op.kind == OpKind::kComposite) && from_.has_payload(op) &&
                 from_.call(op).callee != kNoId && communicates(from_.call(op).callee))) {
              found = true;
            }
            for (const RegionId nested : from_.regions(op)) {
              regions.push_back(nested);
            }
          }
        }
      }
    }
    communicates_[f] = found;
    return found;
  }

  void copy_op(OpId old_id, BlockId block, FunctionId function,
               std::unordered_map<std::uint64_t, ValueRef>& values, std::vector<OpId>& ops) {
    const Op& op = from_.op(old_id);
    if (const std::optional<BlockId> entry = inlinable(op)) {
      // The callee's body in place of the call, in a scope of its own: its arguments are the
      // call's operands; its returned values become the call's results.
      const FunctionId callee = from_.call(op).callee;
      active_.insert(callee);
      std::unordered_map<std::uint64_t, ValueRef> scope;
      const auto operands = from_.operands(op);
      for (std::uint32_t i = 0; i < operands.size(); ++i) {
        scope[ValueRef::block_argument(*entry, i).key()] = mapped(values, operands[i]);
      }
      const auto body = from_.ops(from_.block(*entry));
      for (std::size_t i = 0; i + 1 < body.size(); ++i) {
        copy_op(body[i], block, function, scope, ops);
      }
      const auto returned = from_.operands(from_.op(body.back()));
      for (std::uint32_t i = 0; i < returned.size(); ++i) {
        values[ValueRef::op_result(old_id, i).key()] = mapped(scope, returned[i]);
      }
      active_.erase(callee);
      return;
    }
    const OpId id = to_.add_op(op.kind, op.name, block, op.offset);
    std::vector<RegionId> regions;
    for (const RegionId region : from_.regions(op)) {
      regions.push_back(copy_region(region, id, function, values));
    }
    std::vector<ValueRef> operands;
    for (const ValueRef v : from_.operands(op)) {
      operands.push_back(mapped(values, v));
    }
    to_.set_op_contents(id, operands, from_.result_types(op), regions, from_.attributes(op));
    to_.set_payload_index(id, op.payload);
    for (std::uint32_t i = 0; i < op.results.count; ++i) {
      values[ValueRef::op_result(old_id, i).key()] = ValueRef::op_result(id, i);
    }
    ops.push_back(id);
  }

  const Program& from_;
  ProgramBuilder& to_;
  std::unordered_set<FunctionId> active_;  // callees being inlined (a recursive call stays a call)
  std::unordered_map<FunctionId, bool> communicates_;
};

}  // namespace

ProgramBuilder ProgramBuilder::copying_tables(const Program& program) {
  ProgramBuilder b(program.source_, program.source_begin_, program.source_end_, program.module_index_);
  Program& p = *b.program_;
  // Tables that ids, ranges and payloads point into are taken over whole, so every StringId,
  // TypeId, attribute text, IntRange and payload index stays valid.
  p.module_name_ = program.module_name_;
  p.num_partitions_ = program.num_partitions_;
  p.num_replicas_ = program.num_replicas_;
  p.form_ = program.form_;
  p.entry_function_ = program.entry_function_;
  p.strings_ = program.strings_;
  for (const auto& owned : program.owned_strings_) {
    p.owned_strings_.push_back(std::make_unique<std::string>(*owned));
  }
  std::unordered_map<const char*, std::size_t> owned;  // views into the copies, not the originals
  for (std::size_t k = 0; k < program.owned_strings_.size(); ++k) {
    owned.emplace(program.owned_strings_[k]->data(), k);
  }
  for (std::string_view& s : p.strings_) {
    if (const auto it = owned.find(s.data()); it != owned.end()) {
      s = *p.owned_strings_[it->second];
    }
  }
  p.types_ = program.types_;
  p.meshes_ = program.meshes_;
  p.attributes_ = program.attributes_;
  p.module_attributes_ = program.module_attributes_;
  p.ints_ = program.ints_;
  p.dots_ = program.dots_;
  p.convolutions_ = program.convolutions_;
  p.reduces_ = program.reduces_;
  p.windows_ = program.windows_;
  p.gathers_ = program.gathers_;
  p.scatters_ = program.scatters_;
  p.sorts_ = program.sorts_;
  p.custom_calls_ = program.custom_calls_;
  p.compares_ = program.compares_;
  p.collectives_ = program.collectives_;
  p.whiles_ = program.whiles_;
  p.calls_ = program.calls_;
  return b;
}

std::shared_ptr<const Program> ProgramBuilder::inline_calls(const Program& program) {
  ProgramBuilder b = copying_tables(program);
  for (const Function& f : program.functions()) {
    b.add_function(f.name, f.is_public, f.offset, program.argument_types(f), program.result_types(f),
                   program.argument_attributes(f), program.attributes(f));
  }
  CallInliner inliner(program, b);
  const std::vector<bool> live = inliner.live_functions();
  for (FunctionId id = 0; id < program.functions().size(); ++id) {
    const Function& f = program.function(id);
    if (f.body != kNoId && live[id]) {  // a function only ever inlined keeps no body of its own
      std::unordered_map<std::uint64_t, ValueRef> values;
      b.set_function_body(id, inliner.copy_region(f.body, kNoId, id, values));
    }
  }
  return b.finish();
}

std::shared_ptr<const Program> ProgramBuilder::finish() {
  Program& p = *program_;
  p.types_.shrink_to_fit();
  auto trim_all = [](auto&... tables) { (trim(tables), ...); };
  trim_all(p.strings_, p.owned_strings_, p.functions_, p.function_attributes_, p.meshes_, p.ops_, p.blocks_,
           p.regions_, p.block_ops_, p.region_blocks_, p.op_regions_, p.operands_, p.type_pool_,
           p.attributes_, p.ints_, p.while_ops_, p.dots_, p.convolutions_, p.reduces_, p.windows_, p.gathers_,
           p.scatters_, p.sorts_, p.custom_calls_, p.compares_, p.collectives_, p.whiles_, p.calls_);
  string_ids_ = {};
  return std::shared_ptr<const Program>(std::move(program_));
}

}  // namespace orrery::workload
