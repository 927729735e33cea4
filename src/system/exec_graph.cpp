#include "system/exec_graph.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "util/assert.h"
#include "util/error.h"

namespace orrery::system {
namespace {

using workload::OpCategory;
using workload::OpKind;
using Deps = std::vector<std::uint32_t>;  // exec ops a value depends on, sorted and distinct

void merge_into(Deps& into, const Deps& from) {
  if (from.empty()) {
    return;
  }
  Deps merged;
  merged.reserve(into.size() + from.size());
  std::set_union(into.begin(), into.end(), from.begin(), from.end(), std::back_inserter(merged));
  into.swap(merged);
}

}  // namespace

class ExecGraphBuilder {
 public:
  ExecGraphBuilder(const workload::Program& program, const std::function<bool(workload::OpId)>& takes_time,
                   const ExecGraphOptions& options, const std::function<workload::OpId(workload::OpId)>& kernel_of)
      : program_(program), takes_time_(takes_time), options_(options), kernel_of_(kernel_of) {}

  ExecGraph build() {
    const workload::FunctionId entry = program_.entry_function();
    if (entry == workload::kNoId) {
      throw OrreryError(ErrorCode::kInvalidInput,
                        fmt::format("{}: module '{}' has no entry function (no `main` and no single public "
                                    "function with a body)",
                                    program_.source().path, program_.module_name()));
    }
    const workload::Function& function = program_.function(entry);
    std::vector<Deps> arguments(program_.argument_types(function).size());
    (void)run_function(entry, arguments);
    return finish();
  }

 private:
  // Runs a function body with the given argument dependencies; returns its results' dependencies.
  std::vector<Deps> run_function(workload::FunctionId id, const std::vector<Deps>& arguments) {
    const workload::Function& function = program_.function(id);
    if (function.body == workload::kNoId) {
      throw OrreryError(Error{ErrorCode::kUnsupported,
                              fmt::format("call of function @{}, which has no body in the module",
                                          program_.string(function.name)),
                              program_.location(function.offset),
                              {}});
    }
    if (++call_depth_ > 256) {
      throw OrreryError(ErrorCode::kUnsupported,
                        fmt::format("calls nest deeper than 256 levels at @{} (recursion?)", program_.string(function.name)));
    }
    auto results = run_region(function.body, arguments);
    --call_depth_;
    return results;
  }

  // Runs the entry block of a region; returns the operands of its terminator.
  std::vector<Deps> run_region(workload::RegionId region_id, const std::vector<Deps>& arguments) {
    const workload::Region& region = program_.region(region_id);
    const auto blocks = program_.blocks(region);
    if (blocks.empty()) {
      return {};
    }
    const workload::BlockId block_id = blocks.front();
    const workload::Block& block = program_.block(block_id);
    const std::size_t count = std::min<std::size_t>(arguments.size(), program_.argument_types(block).size());
    for (std::size_t i = 0; i < count; ++i) {
      values_[workload::ValueRef::block_argument(block_id, static_cast<std::uint32_t>(i)).key()] = arguments[i];
    }
    std::vector<Deps> results;
    // Members of kernels that run at a later op of this block, by kernel op (program order).
    std::unordered_map<workload::OpId, std::vector<workload::OpId>> deferred;
    // Results not produced yet that an op between its producer and the producer's kernel op may
    // read: members of combined collectives (whose other members may follow), and ops waiting for
    // such values. Fused compute members are not listed: the cost table guarantees that nothing
    // outside their kernel reads them before it.
    std::unordered_set<std::uint64_t> pending;
    std::vector<workload::OpId> waiting;  // ops that read pending values, in program order
    auto mark_pending = [&](workload::OpId id) {
      const auto outputs = program_.result_types(program_.op(id)).size();
      for (std::uint32_t r = 0; r < outputs; ++r) {
        pending.insert(workload::ValueRef::op_result(id, r).key());
      }
    };
    auto unmark_pending = [&](workload::OpId id) {
      const auto outputs = program_.result_types(program_.op(id)).size();
      for (std::uint32_t r = 0; r < outputs; ++r) {
        pending.erase(workload::ValueRef::op_result(id, r).key());
      }
    };
    auto reads_pending = [&](workload::OpId id) {
      for (const workload::ValueRef operand : program_.operands(program_.op(id))) {
        if (pending.contains(operand.key())) {
          return true;
        }
      }
      return false;
    };
    auto ready = [&](workload::OpId id) {
      if (pending.empty()) {
        return true;
      }
      if (reads_pending(id)) {
        return false;
      }
      const auto members = deferred.find(id);
      return members == deferred.end() ||
             std::none_of(members->second.begin(), members->second.end(), reads_pending);
    };
    auto process = [&](workload::OpId id) {
      const auto members = deferred.find(id);
      if (members == deferred.end()) {
        run_op(id, program_.op(id));
        unmark_pending(id);
        return;
      }
      run_kernel(id, program_.op(id), members->second);
      unmark_pending(id);
      for (const workload::OpId member : members->second) {
        unmark_pending(member);
      }
      deferred.erase(members);
    };
    // Runs waiting ops that became ready, in program order, until none does.
    auto release = [&]() {
      for (std::size_t i = 0; i < waiting.size();) {
        if (ready(waiting[i])) {
          const workload::OpId id = waiting[i];
          waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(i));
          process(id);
          i = 0;
        } else {
          ++i;
        }
      }
    };
    for (const workload::OpId id : program_.ops(block)) {
      const workload::Op& op = program_.op(id);
      if (op.kind == OpKind::kReturn) {
        release();
        for (const workload::ValueRef operand : program_.operands(op)) {
          results.push_back(deps_of(operand));
        }
        continue;
      }
      const workload::OpId kernel = kernel_of_ ? kernel_of_(id) : workload::kNoId;
      if (kernel != workload::kNoId && kernel > id && program_.op(kernel).block == block_id) {
        deferred[kernel].push_back(id);
        if (workload::op_category(op.kind) == OpCategory::kCollective) {
          mark_pending(id);
        }
        continue;
      }
      if (!ready(id)) {
        waiting.push_back(id);
        mark_pending(id);
        continue;
      }
      process(id);
      if (!waiting.empty()) {
        release();
      }
    }
    ORRERY_ASSERT(deferred.empty() && waiting.empty(),
                  "every deferred op's kernel op follows it in its block, and every waiting op ran");
    return results;
  }

  void run_op(workload::OpId id, const workload::Op& op) {
    switch (op.kind) {
      case OpKind::kWhile: return run_while(id, op);
      case OpKind::kIf:
      case OpKind::kCase: return run_branch(id, op);
      case OpKind::kCall:
      case OpKind::kComposite: {
        const workload::FunctionId callee = program_.has_payload(op) ? program_.call(op).callee : workload::kNoId;
        if (callee == workload::kNoId) {
          return add_exec(id, op, ExecKind::kCompute);  // an undefined callee: cost the op itself
        }
        return set_results(id, run_function(callee, operand_deps(op)));
      }
      case OpKind::kManualComputation:
      case OpKind::kNamedComputation: {
        const auto regions = program_.regions(op);
        if (regions.empty()) {
          return pass_through(id, op);
        }
        return set_results(id, run_region(regions.front(), operand_deps(op)));
      }
      case OpKind::kFusion: return add_exec(id, op, ExecKind::kCompute);
      case OpKind::kSend: return add_exec(id, op, ExecKind::kSend);
      case OpKind::kRecv: return add_exec(id, op, ExecKind::kRecv);
      default: break;
    }
    switch (workload::op_category(op.kind)) {
      case OpCategory::kCollective: return add_exec(id, op, ExecKind::kCollective);
      case OpCategory::kControlFlow:  // async wrappers and other structure: dependencies only
      case OpCategory::kMetadata:
      case OpCategory::kSharding:
      case OpCategory::kStructure: return pass_through(id, op);
      default: break;
    }
    if (takes_time_(id)) {
      return add_exec(id, op, ExecKind::kCompute);
    }
    pass_through(id, op);
  }

  void run_while(workload::OpId id, const workload::Op& op) {
    const std::uint64_t trips = program_.trip_count_or_throw(id);
    const auto regions = program_.regions(op);
    if (regions.size() < 2) {
      throw OrreryError(Error{ErrorCode::kInvalidInput, "while without a body region", program_.location(op.offset), {}});
    }
    std::vector<Deps> carried = operand_deps(op);
    for (std::uint64_t i = 0; i < trips; ++i) {
      std::vector<Deps> next = run_region(regions[1], carried);
      if (next.size() == carried.size()) {
        carried.swap(next);
      }
      check_size(id);
    }
    set_results(id, carried);
  }

  void run_branch(workload::OpId id, const workload::Op& op) {
    const auto regions = program_.regions(op);
    if (regions.empty()) {
      return pass_through(id, op);
    }
    std::size_t chosen = 0;
    switch (options_.branch_rule) {
      case BranchRule::kFirst: chosen = 0; break;
      case BranchRule::kLast: chosen = regions.size() - 1; break;
      case BranchRule::kLargest: {
        std::size_t most = 0;
        for (std::size_t r = 0; r < regions.size(); ++r) {
          const std::size_t size = region_size(regions[r]);
          if (size > most) {
            most = size;
            chosen = r;
          }
        }
        break;
      }
    }
    // The predicate (or index) gates every op of the branch.
    Deps gate;
    for (const workload::ValueRef operand : program_.operands(op)) {
      merge_into(gate, deps_of(operand));
    }
    gates_.push_back(std::move(gate));
    set_results(id, run_region(regions[chosen], {}));
    gates_.pop_back();
  }

  // Ops in a region, nested regions included (the "largest branch" rule).
  std::size_t region_size(workload::RegionId region_id) const {
    std::size_t size = 0;
    for (const workload::BlockId block : program_.blocks(program_.region(region_id))) {
      for (const workload::OpId id : program_.ops(program_.block(block))) {
        ++size;
        for (const workload::RegionId nested : program_.regions(program_.op(id))) {
          size += region_size(nested);
        }
      }
    }
    return size;
  }

  // A fused kernel (or a combined collective) at its kernel op: depends on what the members'
  // outside operands depend on; the members' results are the kernel's.
  void run_kernel(workload::OpId id, const workload::Op& op, const std::vector<workload::OpId>& members) {
    const auto inside = [&](workload::ValueRef v) {
      return v.is_op_result() && (v.op() == id || kernel_of_(v.op()) == id);
    };
    Deps extra;
    for (const workload::OpId member : members) {
      for (const workload::ValueRef operand : program_.operands(program_.op(member))) {
        if (!inside(operand)) {
          merge_into(extra, deps_of(operand));
        }
      }
    }
    const bool collective = workload::op_category(op.kind) == OpCategory::kCollective;
    if (!collective && !takes_time_(id)) {  // not a kernel after all: the members pass dependencies through
      run_op(id, op);
      for (const workload::OpId member : members) {
        pass_through(member, program_.op(member));
      }
      return;
    }
    add_exec(id, op, collective ? ExecKind::kCollective : ExecKind::kCompute, &extra);
    const Deps self = values_[workload::ValueRef::op_result(id, 0).key()];
    for (const workload::OpId member : members) {
      const auto results = program_.result_types(program_.op(member)).size();
      for (std::uint32_t r = 0; r < results; ++r) {
        values_[workload::ValueRef::op_result(member, r).key()] = self;
      }
    }
  }

  void add_exec(workload::OpId id, const workload::Op& op, ExecKind kind, const Deps* extra = nullptr) {
    Deps deps;
    for (const workload::ValueRef operand : program_.operands(op)) {
      merge_into(deps, deps_of(operand));
    }
    if (extra != nullptr) {
      merge_into(deps, *extra);
    }
    for (const Deps& gate : gates_) {
      merge_into(deps, gate);
    }
    const auto index = static_cast<std::uint32_t>(graph_.ops_.size());
    std::uint32_t ordinal = 0;
    if (kind == ExecKind::kCollective) {
      ordinal = static_cast<std::uint32_t>(graph_.collectives_.size());
      graph_.collectives_.push_back(index);
    } else if (kind == ExecKind::kSend || kind == ExecKind::kRecv) {
      const std::int64_t channel = program_.collective(op).channel_id;
      ordinal = (kind == ExecKind::kSend ? send_occurrences_ : recv_occurrences_)[channel]++;
    }
    graph_.ops_.push_back(ExecOp{id, kind, ordinal});
    graph_.in_degree_.push_back(static_cast<std::uint32_t>(deps.size()));
    for (const std::uint32_t producer : deps) {
      edges_.emplace_back(producer, index);
    }
    const Deps self{index};
    const auto results = program_.result_types(op).size();
    for (std::uint32_t r = 0; r < results; ++r) {
      values_[workload::ValueRef::op_result(id, r).key()] = self;
    }
    check_size(id);
  }

  // A free op: every result depends on what all operands depend on. Tuples keep their elements
  // apart so that get_tuple_element depends on one element only.
  void pass_through(workload::OpId id, const workload::Op& op) {
    const auto operands = program_.operands(op);
    if (op.kind == OpKind::kTuple) {
      std::vector<Deps> elements;
      Deps all;
      for (const workload::ValueRef operand : operands) {
        elements.push_back(deps_of(operand));
        merge_into(all, elements.back());
      }
      const std::uint64_t key = workload::ValueRef::op_result(id, 0).key();
      values_[key] = std::move(all);
      tuples_[key] = std::move(elements);
      return;
    }
    if (op.kind == OpKind::kGetTupleElement && !operands.empty()) {
      const auto tuple = tuples_.find(operands.front().key());
      const auto index = program_.attribute(op, "index");
      if (tuple != tuples_.end() && index) {
        const std::size_t element = static_cast<std::size_t>(std::strtoull(std::string(*index).c_str(), nullptr, 10));
        if (element < tuple->second.size()) {
          values_[workload::ValueRef::op_result(id, 0).key()] = tuple->second[element];
          return;
        }
      }
    }
    Deps all;
    for (const workload::ValueRef operand : operands) {
      merge_into(all, deps_of(operand));
    }
    for (const Deps& gate : gates_) {
      merge_into(all, gate);
    }
    const auto results = program_.result_types(op).size();
    for (std::uint32_t r = 0; r < results; ++r) {
      values_[workload::ValueRef::op_result(id, r).key()] = all;
    }
  }

  void set_results(workload::OpId id, const std::vector<Deps>& results) {
    const auto count = std::min(results.size(), program_.result_types(program_.op(id)).size());
    for (std::size_t r = 0; r < count; ++r) {
      values_[workload::ValueRef::op_result(id, static_cast<std::uint32_t>(r)).key()] = results[r];
    }
  }

  std::vector<Deps> operand_deps(const workload::Op& op) {
    std::vector<Deps> deps;
    for (const workload::ValueRef operand : program_.operands(op)) {
      deps.push_back(deps_of(operand));
    }
    return deps;
  }

  const Deps& deps_of(workload::ValueRef value) {
    static const Deps kNone;
    const auto it = values_.find(value.key());
    return it == values_.end() ? kNone : it->second;  // function arguments: available at start
  }

  void check_size(workload::OpId id) const {
    if (graph_.ops_.size() > options_.max_ops) {
      throw OrreryError(Error{ErrorCode::kUnsupported,
                              fmt::format("the program unrolls to more than {} ops (while loops multiply "
                                          "their bodies); lower the trip counts or split the program",
                                          options_.max_ops),
                              program_.location(program_.op(id).offset),
                              {}});
    }
  }

  ExecGraph finish() {
    const auto n = static_cast<std::uint32_t>(graph_.ops_.size());
    graph_.consumer_begin_.assign(n + 1, 0);
    for (const auto& [producer, consumer] : edges_) {
      ++graph_.consumer_begin_[producer + 1];
    }
    for (std::uint32_t i = 0; i < n; ++i) {
      graph_.consumer_begin_[i + 1] += graph_.consumer_begin_[i];
    }
    graph_.consumers_.resize(edges_.size());
    std::vector<std::uint32_t> fill(graph_.consumer_begin_.begin(), graph_.consumer_begin_.end() - 1);
    for (const auto& [producer, consumer] : edges_) {
      graph_.consumers_[fill[producer]++] = consumer;  // edges are in consumer order: lists stay sorted
    }
    for (std::uint32_t i = 0; i < n; ++i) {
      if (graph_.in_degree_[i] == 0) {
        graph_.sources_.push_back(i);
      }
    }
    edges_.clear();
    edges_.shrink_to_fit();
    return std::move(graph_);
  }

  const workload::Program& program_;
  const std::function<bool(workload::OpId)>& takes_time_;
  ExecGraphOptions options_;
  const std::function<workload::OpId(workload::OpId)>& kernel_of_;
  ExecGraph graph_;
  std::unordered_map<std::uint64_t, Deps> values_;
  std::unordered_map<std::uint64_t, std::vector<Deps>> tuples_;
  std::vector<Deps> gates_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges_;
  std::map<std::int64_t, std::uint32_t> send_occurrences_;
  std::map<std::int64_t, std::uint32_t> recv_occurrences_;
  int call_depth_ = 0;
};

ExecGraph ExecGraph::build(const workload::Program& program, const std::function<bool(workload::OpId)>& takes_time,
                           const ExecGraphOptions& options,
                           const std::function<workload::OpId(workload::OpId)>& kernel_of) {
  return ExecGraphBuilder(program, takes_time, options, kernel_of).build();
}

std::size_t ExecGraph::heap_bytes() const {
  return ops_.capacity() * sizeof(ExecOp) +
         (consumer_begin_.capacity() + consumers_.capacity() + in_degree_.capacity() + sources_.capacity() +
          collectives_.capacity()) *
             sizeof(std::uint32_t);
}

}  // namespace orrery::system
