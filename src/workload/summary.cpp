#include "workload/summary.h"

#include <algorithm>

#include "workload/collectives.h"

namespace orrery::workload {

bool has_executed_regions(OpKind kind) {
  switch (kind) {
    case OpKind::kWhile:
    case OpKind::kIf:
    case OpKind::kCase:
    case OpKind::kManualComputation:
    case OpKind::kNamedComputation:
    case OpKind::kFusion:
    case OpKind::kAsyncStart:
    case OpKind::kOpaque:
    case OpKind::kUnknown:
      return true;
    default:
      return false;
  }
}

namespace {

class Summarizer {
 public:
  explicit Summarizer(const Program& program) : program_(program) {}

  ProgramSummary run() {
    const Program& p = program_;
    summary_.module_name = std::string(p.module_name());
    summary_.module_index = p.module_index();
    summary_.num_partitions = p.num_partitions();
    summary_.num_replicas = p.num_replicas();
    summary_.form = p.form();
    summary_.functions = p.functions().size();
    summary_.source_bytes = p.source_bytes();
    summary_.heap_bytes = p.heap_bytes();
    visited_.assign(p.functions().size(), false);
    if (p.entry_function() != kNoId) {
      summary_.entry_function = std::string(p.string(p.function(p.entry_function()).name));
      visit_function(p.entry_function());
    } else {
      for (FunctionId f = 0; f < p.functions().size(); ++f) {
        visit_function(f);
      }
    }
    // Largest first; ties in program order.
    const auto larger = [](const std::pair<std::uint64_t, OpId>& a, const std::pair<std::uint64_t, OpId>& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    };
    const std::size_t top = std::min<std::size_t>(10, sizes_.size());
    std::partial_sort(sizes_.begin(), sizes_.begin() + static_cast<std::ptrdiff_t>(top), sizes_.end(),
                      larger);
    std::vector<std::uint32_t> offsets;
    for (std::size_t i = 0; i < top; ++i) {
      const Op& op = p.op(sizes_[i].second);
      OpSize size{sizes_[i].second, std::string(p.op_name(op)), sizes_[i].first, {}, 0};
      for (const TypeId t : p.result_types(op)) {
        size.result_types += (size.result_types.empty() ? "" : ", ") + p.types().to_string(t);
      }
      offsets.push_back(op.offset);
      summary_.largest_ops.push_back(std::move(size));
    }
    for (const LoopSummary& loop : summary_.loops) {
      offsets.push_back(loop.line);  // the loop's offset, until lines are known
    }
    offsets.push_back(p.source_begin());
    const std::vector<std::uint32_t> lines = line_numbers(p.source().text, offsets);
    for (std::size_t i = 0; i < summary_.largest_ops.size(); ++i) {
      summary_.largest_ops[i].line = lines[i];
    }
    for (std::size_t i = 0; i < summary_.loops.size(); ++i) {
      summary_.loops[i].line = lines[summary_.largest_ops.size() + i];
    }
    summary_.line = lines.back();
    return std::move(summary_);
  }

  // 1-based line numbers of source offsets, in one pass over the text.
  static std::vector<std::uint32_t> line_numbers(std::string_view text,
                                                 const std::vector<std::uint32_t>& offsets) {
    std::vector<std::size_t> order(offsets.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
      order[i] = i;
    }
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return offsets[a] < offsets[b]; });
    std::vector<std::uint32_t> lines(offsets.size());
    std::uint32_t line = 1;
    std::size_t position = 0;
    for (const std::size_t i : order) {
      const std::size_t target = std::min<std::size_t>(offsets[i], text.size());
      line +=
          static_cast<std::uint32_t>(std::count(text.begin() + static_cast<std::ptrdiff_t>(position),
                                                text.begin() + static_cast<std::ptrdiff_t>(target), '\n'));
      position = target;
      lines[i] = line;
    }
    return lines;
  }

 private:
  void visit_function(FunctionId id) {
    if (visited_[id]) {
      return;
    }
    visited_[id] = true;
    const Function& f = program_.function(id);
    if (f.body == kNoId) {
      return;
    }
    ++summary_.counted_functions;
    visit_region(f.body);
  }

  void visit_region(RegionId id) {
    for (const BlockId block : program_.blocks(program_.region(id))) {
      for (const OpId op : program_.ops(program_.block(block))) {
        visit_op(op);
      }
    }
  }

  void visit_op(OpId id) {
    const Program& p = program_;
    const Op& op = p.op(id);
    ++summary_.ops;
    ++summary_.op_histogram[std::string(p.op_name(op))];
    std::uint64_t bytes = 0;
    for (const TypeId t : p.result_types(op)) {
      bytes += p.types().byte_size(t).value_or(0);
    }
    sizes_.emplace_back(bytes, id);
    const OpCategory category = op_category(op.kind);
    if (category == OpCategory::kOpaque || category == OpCategory::kUnknown) {
      ++summary_.opaque_ops[std::string(p.op_name(op))];
    }
    if (category == OpCategory::kCollective && op.payload != kNoId) {
      const CollectiveAttributes& c = p.collective(op);
      CollectiveSummary& s = summary_.collectives[std::string(collective_kind_name(c.kind))];
      ++s.count;
      if (c.kind == CollectiveKind::kSend) {
        // A send's result is a token: what it moves is its data operand.
        for (const ValueRef operand : p.operands(op)) {
          s.bytes += p.types().byte_size(p.value_type(operand)).value_or(0);
        }
      } else {
        s.bytes += bytes;
      }
      std::uint32_t group_size = 0;
      if (c.kind == CollectiveKind::kCollectivePermute || c.kind == CollectiveKind::kSend ||
          c.kind == CollectiveKind::kRecv) {
        group_size = 2;
      } else if (auto size = device_group_size(p, op); size.ok()) {
        group_size = size.value();
      }
      ++s.group_sizes[group_size];
    }
    if (op.kind == OpKind::kWhile && op.payload != kNoId) {
      const WhileAttributes& w = p.while_loop(op);
      // `line` holds the op's offset until run() turns offsets into lines.
      summary_.loops.push_back(LoopSummary{std::string(p.string(w.name)), w.source, w.trip_count,
                                           std::string(p.string(w.reason)), op.offset});
    }
    if ((op.kind == OpKind::kCall || op.kind == OpKind::kComposite) && op.payload != kNoId &&
        p.call(op).callee != kNoId) {
      visit_function(p.call(op).callee);
    }
    if (has_executed_regions(op.kind)) {
      for (const RegionId region : p.regions(op)) {
        visit_region(region);
      }
    }
  }

  const Program& program_;
  ProgramSummary summary_;
  std::vector<bool> visited_;
  std::vector<std::pair<std::uint64_t, OpId>> sizes_;  // result bytes of every counted op
};

}  // namespace

ProgramSummary summarize(const Program& program) {
  return Summarizer(program).run();
}

}  // namespace orrery::workload
