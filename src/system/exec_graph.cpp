#include "system/exec_graph.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <unordered_map>

#include "util/assert.h"
#include "util/error.h"

namespace orrery::system {
namespace {

using workload::OpCategory;
using workload::OpKind;
// The buffers a value depends on (ExecGraph::Buffer, by id in creation order, so sorted by the exec
// op that writes them too), sorted and distinct.
using Deps = std::vector<std::uint32_t>;

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
                   const ExecGraphOptions& options, const std::function<workload::OpId(workload::OpId)>& kernel_of,
                   const std::function<std::optional<CombineKey>(workload::OpId)>& combine_key)
      : program_(program),
        takes_time_(takes_time),
        options_(options),
        kernel_of_(kernel_of),
        combine_key_(combine_key) {}

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
    for (const Deps& result : run_function(entry, arguments)) {
      for (const std::uint32_t buffer : result) {
        buffers_[proxy_of_[buffer]].output = true;
      }
    }
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
    for (const workload::OpId id : program_.ops(block)) {
      const workload::Op& op = program_.op(id);
      if (op.kind == OpKind::kReturn) {
        for (const workload::ValueRef operand : program_.operands(op)) {
          results.push_back(deps_of(operand));
        }
        continue;
      }
      const workload::OpId kernel = kernel_of_ ? kernel_of_(id) : workload::kNoId;
      if (kernel != workload::kNoId && kernel > id && program_.op(kernel).block == block_id) {
        deferred[kernel].push_back(id);
        continue;
      }
      const auto members = deferred.find(id);
      if (members == deferred.end()) {
        run_op(id, op);
        continue;
      }
      run_kernel(id, op, members->second);
      deferred.erase(members);
    }
    ORRERY_ASSERT(deferred.empty(), "every deferred op's kernel op follows it in its block");
    return results;
  }

  void run_op(workload::OpId id, const workload::Op& op) {
    switch (op.kind) {
      case OpKind::kWhile: return run_while(id, op);
      case OpKind::kIf:
      case OpKind::kCase: return run_branch(id, op);
      case OpKind::kCall:
      case OpKind::kComposite: {
        if (takes_time_(id)) {
          return add_exec(id, op, ExecKind::kCompute);  // costed as one kernel (a fusible call)
        }
        if (kernel_of_ && kernel_of_(id) == id) {
          return pass_through(id, op);  // a fusible call whose result nothing reads: never runs
        }
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
    const std::uint32_t outer = scope_;
    for (std::uint64_t i = 0; i < trips; ++i) {
      scope_ = next_scope_++;  // each iteration is its own computation instance
      std::vector<Deps> next = run_region(regions[1], carried);
      scope_ = outer;
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
    const std::uint32_t outer = scope_;
    scope_ = next_scope_++;
    set_results(id, run_region(regions[chosen], {}));
    scope_ = outer;
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

  // A fused kernel at its kernel op: depends on what the members' outside operands depend on;
  // the members' results are the kernel's.
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
    if (!takes_time_(id)) {  // not a kernel after all: the members pass dependencies through
      run_op(id, op);
      for (const workload::OpId member : members) {
        pass_through(member, program_.op(member));
      }
      return;
    }
    add_exec(id, op, ExecKind::kCompute, &extra);
    const auto writer = static_cast<std::uint32_t>(graph_.ops_.size() - 1);
    // This kernel's proxy of each buffer (one per buffer, however many members reach it: chains
    // of recomputed values would otherwise proxy proxies, their sets doubling at each level).
    std::unordered_map<std::uint32_t, std::uint32_t> proxies;
    for (const workload::OpId member : members) {  // in program order: operands first
      // A value the kernel does not store: its readers read what it is computed from, through
      // proxies written by this kernel (so no reader gains a dependency it did not have).
      Deps recomputed_from;
      if (options_.stored && !options_.stored(member)) {
        Deps from;
        for (const workload::ValueRef operand : program_.operands(program_.op(member))) {
          merge_into(from, deps_of(operand));
        }
        for (const std::uint32_t buffer : from) {
          const std::uint32_t target = proxy_of_[buffer];
          const auto [at, added] = proxies.try_emplace(target, 0);
          if (added) {
            at->second = new_buffer(workload::kNoId, 0, writer, target);
          }
          recomputed_from.push_back(at->second);
        }
        std::sort(recomputed_from.begin(), recomputed_from.end());
        recomputed_from.erase(std::unique(recomputed_from.begin(), recomputed_from.end()),
                              recomputed_from.end());
      }
      const auto results = program_.result_types(program_.op(member)).size();
      for (std::uint32_t r = 0; r < results; ++r) {
        Deps deps{new_buffer(member, r, writer)};
        merge_into(deps, recomputed_from);
        values_[workload::ValueRef::op_result(member, r).key()] = std::move(deps);
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
      if (options_.combine_bytes > 0 && combine_key_) {
        if (const std::optional<CombineKey> key = combine_key_(id)) {
          candidates_.push_back(Candidate{index, scope_, key->key, key->bytes});
        }
      }
    } else if (kind == ExecKind::kSend || kind == ExecKind::kRecv) {
      const std::int64_t channel = program_.collective(op).channel_id;
      ordinal = (kind == ExecKind::kSend ? send_occurrences_ : recv_occurrences_)[channel]++;
    }
    graph_.ops_.push_back(ExecOp{id, kind, ordinal});
    done_.push_back(new_buffer(workload::kNoId, 0, index));  // the op's completion (no bytes)
    // The buffers are numbered in the order their writers were added, so their writers come out
    // sorted: distinct after dropping repeats.
    std::uint32_t producers = 0;
    for (const std::uint32_t buffer : deps) {
      const std::uint32_t producer = buffers_[buffer].writer;
      if (producers == 0 || edges_.back().first != producer) {
        edges_.emplace_back(producer, index);
        ++producers;
      }
      reads_.emplace_back(proxy_of_[buffer], index);
    }
    graph_.in_degree_.push_back(producers);
    const auto results = program_.result_types(op).size();
    for (std::uint32_t r = 0; r < results; ++r) {
      values_[workload::ValueRef::op_result(id, r).key()] = Deps{new_buffer(id, r, index)};
    }
    check_size(id);
  }

  // A buffer; or (`proxy_of`) a proxy for buffer `proxy_of`: reading it reads that buffer, and
  // waits for `writer`.
  std::uint32_t new_buffer(workload::OpId op, std::uint32_t result, std::uint32_t writer,
                           std::uint32_t proxy_of = ExecGraph::kNoReader) {
    const auto id = static_cast<std::uint32_t>(buffers_.size());
    buffers_.push_back(ExecGraph::Buffer{op, result, writer, ExecGraph::kNoReader, false});
    proxy_of_.push_back(proxy_of == ExecGraph::kNoReader ? id : proxy_of);
    return id;
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
    if (op.kind == OpKind::kOptimizationBarrier && operands.size() == program_.result_types(op).size()) {
      // Result i is operand i; every result waits for every operand. The wait on the others is a
      // dependency on their writers' completion, not a read of their data, so the barrier keeps
      // no other operand's buffers live (the memory estimate).
      Deps done;
      for (const workload::ValueRef operand : operands) {
        for (const std::uint32_t buffer : deps_of(operand)) {
          const std::uint32_t writer = buffers_[buffer].writer;
          if (done.empty() || done.back() != done_[writer]) {
            done.push_back(done_[writer]);
          }
        }
      }
      std::sort(done.begin(), done.end());
      done.erase(std::unique(done.begin(), done.end()), done.end());
      for (const Deps& gate : gates_) {
        merge_into(done, gate);
      }
      std::vector<Deps> results;
      for (const workload::ValueRef operand : operands) {
        results.push_back(deps_of(operand));
        merge_into(results.back(), done);
      }
      for (std::uint32_t r = 0; r < results.size(); ++r) {
        values_[workload::ValueRef::op_result(id, r).key()] = std::move(results[r]);
      }
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

  // --- collective combining (see exec_graph.h) --------------------------------------------------

  struct Candidate {
    std::uint32_t exec;
    std::uint32_t scope;
    std::uint32_t key;
    std::uint64_t bytes;
  };

  void combine() {
    const auto n = static_cast<std::uint32_t>(graph_.ops_.size());
    constexpr std::uint32_t kNone = 0xffffffffU;
    std::vector<std::vector<std::uint32_t>> preds(n);
    std::vector<std::vector<std::uint32_t>> consumers(n);
    for (const auto& [producer, consumer] : edges_) {
      preds[consumer].push_back(producer);
      consumers[producer].push_back(consumer);
    }
    std::vector<std::uint32_t> candidate_of(n, kNone);
    for (std::uint32_t c = 0; c < candidates_.size(); ++c) {
      candidate_of[candidates_[c].exec] = c;
    }
    std::vector<std::uint8_t> placed(candidates_.size(), 0);
    // Candidates not yet placed per (scope, key): a group's scan stops when none is left.
    std::unordered_map<std::uint64_t, std::uint32_t> remaining;
    const auto scope_key = [&](const Candidate& c) { return (std::uint64_t{c.scope} << 32) | c.key; };
    for (const Candidate& c : candidates_) {
      ++remaining[scope_key(c)];
    }
    const auto place = [&](std::uint32_t c) {
      placed[c] = 1;
      --remaining[scope_key(candidates_[c])];
    };
    std::vector<std::uint8_t> alive(n, 1);
    std::vector<std::vector<workload::OpId>> sources(n);  // merged ops: the IR ops they run
    std::vector<std::uint32_t> order(n);                  // a topological order, program order at first
    for (std::uint32_t i = 0; i < n; ++i) {
      order[i] = i;
    }
    std::vector<std::uint32_t> reach(n, 0);  // == round: a member of the group, or depends on one
    std::uint32_t round = 0;
    std::vector<std::uint32_t> group;
    // Merged members point at their merged op (union-find); adjacency lists keep their ids.
    std::vector<std::uint32_t> rep(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      rep[i] = i;
    }
    const auto find = [&](std::uint32_t v) {
      while (rep[v] != v) {
        rep[v] = rep[rep[v]];
        v = rep[v];
      }
      return v;
    };
    const auto reach_from = [&](std::uint32_t v) {
      for (const std::uint32_t w : consumers[v]) {
        reach[find(w)] = round;
      }
    };
    for (std::size_t cursor = 0; cursor < order.size();) {
      const std::uint32_t first = candidate_of[order[cursor]];
      if (!alive[order[cursor]] || first == kNone || placed[first] != 0) {
        ++cursor;
        continue;
      }
      ++round;
      group.clear();
      std::uint64_t bytes = 0;
      std::size_t last = cursor;  // position of the last member
      for (std::size_t q = cursor; q < order.size(); ++q) {
        const std::uint32_t v = order[q];
        if (!alive[v]) {
          continue;
        }
        const bool depends = reach[v] == round;
        const std::uint32_t c = candidate_of[v];
        const bool same = c != kNone && placed[c] == 0 && candidates_[c].key == candidates_[first].key &&
                          candidates_[c].scope == candidates_[first].scope;
        if (same && candidates_[c].bytes > options_.combine_bytes) {
          place(c);  // larger than the limit: never combined
          if (depends) {
            reach_from(v);
          }
        } else if (same) {
          if (depends || bytes + candidates_[c].bytes > options_.combine_bytes) {
            break;
          }
          group.push_back(v);
          bytes += candidates_[c].bytes;
          place(c);
          reach[v] = round;
          reach_from(v);
          last = q;
          if (group.size() >= options_.combine_count) {
            break;
          }
        } else if (depends) {
          reach_from(v);
        }
        if (remaining[scope_key(candidates_[first])] == 0) {
          break;  // nothing left to join this group
        }
      }
      if (group.size() < 2) {
        continue;  // the first candidate is placed alone; the cursor moves on next time
      }
      // Merge into the last member: its inputs and users are the union of the members'.
      const std::uint32_t merged = group.back();
      for (const std::uint32_t member : group) {
        sources[merged].push_back(graph_.ops_[member].source);
        if (member == merged) {
          continue;
        }
        preds[merged].insert(preds[merged].end(), preds[member].begin(), preds[member].end());
        consumers[merged].insert(consumers[merged].end(), consumers[member].begin(), consumers[member].end());
        std::vector<std::uint32_t>().swap(preds[member]);
        std::vector<std::uint32_t>().swap(consumers[member]);
        rep[member] = merged;
        alive[member] = 0;
      }
      // Between the first and the last member: what depends on a member moves after the merged op,
      // the rest keeps its order before it (members' inputs are among the rest).
      // Dead entries (these members, and earlier groups' members) stay in the span, at its end.
      std::vector<std::uint32_t> before;
      std::vector<std::uint32_t> after;
      std::vector<std::uint32_t> dead;
      for (std::size_t q = cursor; q <= last; ++q) {
        const std::uint32_t v = order[q];
        if (v != merged) {
          (alive[v] == 0 ? dead : reach[v] == round ? after : before).push_back(v);
        }
      }
      std::size_t q = cursor;
      for (const std::uint32_t v : before) {
        order[q++] = v;
      }
      order[q++] = merged;
      for (const std::uint32_t v : after) {
        order[q++] = v;
      }
      for (const std::uint32_t v : dead) {
        order[q++] = v;
      }
      ORRERY_ASSERT(q == last + 1, "the reordered span keeps its length");
    }
    // Renumber in the new order; edges deduplicated, in consumer order.
    std::vector<std::uint32_t> renumber(n, kNone);
    std::uint32_t next = 0;
    for (const std::uint32_t v : order) {
      if (alive[v] != 0) {
        renumber[v] = next++;
      }
    }
    std::vector<ExecOp> ops;
    ops.reserve(next);
    std::vector<std::uint32_t> in_degree;
    in_degree.reserve(next);
    std::vector<std::uint32_t> collectives;
    edges_.clear();
    graph_.combined_begin_.assign(1, 0);
    graph_.combined_sources_.clear();
    std::vector<std::uint32_t> mapped;
    for (const std::uint32_t v : order) {
      if (alive[v] == 0) {
        continue;
      }
      ExecOp op = graph_.ops_[v];
      if (op.kind == ExecKind::kCollective) {
        op.ordinal = static_cast<std::uint32_t>(collectives.size());
        collectives.push_back(renumber[v]);
      }
      ops.push_back(op);
      mapped.clear();
      for (const std::uint32_t p : preds[v]) {
        mapped.push_back(renumber[find(p)]);
      }
      std::sort(mapped.begin(), mapped.end());
      mapped.erase(std::unique(mapped.begin(), mapped.end()), mapped.end());
      ORRERY_ASSERT(mapped.empty() || mapped.back() < renumber[v], "combining keeps a topological order");
      in_degree.push_back(static_cast<std::uint32_t>(mapped.size()));
      for (const std::uint32_t p : mapped) {
        edges_.emplace_back(p, renumber[v]);
      }
      graph_.combined_sources_.insert(graph_.combined_sources_.end(), sources[v].begin(), sources[v].end());
      graph_.combined_begin_.push_back(static_cast<std::uint32_t>(graph_.combined_sources_.size()));
    }
    graph_.ops_ = std::move(ops);
    graph_.in_degree_ = std::move(in_degree);
    graph_.collectives_ = std::move(collectives);
    remap_.resize(n);
    for (std::uint32_t v = 0; v < n; ++v) {
      remap_[v] = renumber[find(v)];  // a merged member: its merged op
    }
  }

  ExecGraph finish() {
    // Send/recv pairs depend on each other across ranks (and programs) without an edge in this
    // graph, so a group could wait for its own result through them: no combining there.
    const bool point_to_point = std::any_of(graph_.ops_.begin(), graph_.ops_.end(), [](const ExecOp& op) {
      return op.kind == ExecKind::kSend || op.kind == ExecKind::kRecv;
    });
    if (options_.combine_bytes > 0 && candidates_.size() >= 2 && !point_to_point) {
      combine();
    }
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
    finish_buffers();
    return std::move(graph_);
  }

  // Writers and readers in the final numbering (combining merges and moves ops); each buffer's last
  // reader; the buffers nobody reads and the step does not return (a kernel's inner values, dead
  // results) dropped.
  void finish_buffers() {
    const auto final_index = [&](std::uint32_t v) { return remap_.empty() ? v : remap_[v]; };
    for (ExecGraph::Buffer& buffer : buffers_) {
      buffer.writer = final_index(buffer.writer);
    }
    for (const auto& [buffer, reader] : reads_) {
      std::uint32_t& last = buffers_[buffer].last_reader;
      const std::uint32_t index = final_index(reader);
      if (index != buffers_[buffer].writer && (last == ExecGraph::kNoReader || index > last)) {
        last = index;
      }
    }
    reads_.clear();
    reads_.shrink_to_fit();
    proxy_of_.clear();
    proxy_of_.shrink_to_fit();
    graph_.built_buffers_ = buffers_.size();
    std::erase_if(buffers_, [](const ExecGraph::Buffer& b) {
      return b.op == workload::kNoId || (b.last_reader == ExecGraph::kNoReader && !b.output);
    });
    std::stable_sort(
        buffers_.begin(), buffers_.end(),
        [](const ExecGraph::Buffer& a, const ExecGraph::Buffer& b) { return a.writer < b.writer; });
    graph_.buffers_ = std::move(buffers_);
  }

  const workload::Program& program_;
  const std::function<bool(workload::OpId)>& takes_time_;
  ExecGraphOptions options_;
  const std::function<workload::OpId(workload::OpId)>& kernel_of_;
  const std::function<std::optional<CombineKey>(workload::OpId)>& combine_key_;
  std::vector<Candidate> candidates_;
  std::uint32_t scope_ = 0;       // the computation instance ops are added to
  std::uint32_t next_scope_ = 1;
  ExecGraph graph_;
  std::unordered_map<std::uint64_t, Deps> values_;
  std::unordered_map<std::uint64_t, std::vector<Deps>> tuples_;
  std::vector<Deps> gates_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges_;
  std::vector<ExecGraph::Buffer> buffers_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> reads_;  // (buffer, reader)
  std::vector<std::uint32_t> remap_;                            // after combining: exec op -> its final index
  std::vector<std::uint32_t> done_;                             // per exec op: its completion buffer
  std::vector<std::uint32_t> proxy_of_;  // per buffer: what a read of it reads (itself, or a proxy's buffer)
  std::map<std::int64_t, std::uint32_t> send_occurrences_;
  std::map<std::int64_t, std::uint32_t> recv_occurrences_;
  int call_depth_ = 0;
};

ExecGraph ExecGraph::build(const workload::Program& program, const std::function<bool(workload::OpId)>& takes_time,
                           const ExecGraphOptions& options,
                           const std::function<workload::OpId(workload::OpId)>& kernel_of,
                           const std::function<std::optional<CombineKey>(workload::OpId)>& combine_key) {
  return ExecGraphBuilder(program, takes_time, options, kernel_of, combine_key).build();
}

std::size_t ExecGraph::heap_bytes() const {
  return ops_.capacity() * sizeof(ExecOp) +
         (consumer_begin_.capacity() + consumers_.capacity() + in_degree_.capacity() + sources_.capacity() +
          collectives_.capacity() + combined_begin_.capacity() + combined_sources_.capacity()) *
             sizeof(std::uint32_t) +
         buffers_.capacity() * sizeof(Buffer);
}

}  // namespace orrery::system
