#include "compute/program_costs.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "util/error.h"
#include "workload/summary.h"

namespace orrery::compute {

using workload::BlockId;
using workload::Op;
using workload::OpId;
using workload::OpKind;
using workload::Program;
using workload::RegionId;

CostOptions CostOptions::from(const config::ComputeConfig& config) {
  CostOptions options;
  options.fuse_elementwise = config.fuse_elementwise;
  options.counting.f32_matmul = config.f32_matmul == config::F32MatmulPrecision::kF32 ? F32Matmul::kF32 : F32Matmul::kTf32;
  return options;
}

std::string_view ProgramCosts::intern(std::string_view text) {
  auto it = strings_->find(text);
  if (it == strings_->end()) {
    it = strings_->emplace(text).first;
  }
  return *it;
}

namespace {

// The op whose kernel holds `id` because `id` sits inside its regions: the outermost enclosing
// mhlo.fusion or op whose region is a computation of the op (reduce, sort, scatter, all_reduce...
// bodies); kNoId when the op runs on its own.
OpId enclosing_kernel(const Program& p, OpId id) {
  OpId kernel = workload::kNoId;
  OpId current = id;
  while (true) {
    const workload::Block& block = p.block(p.op(current).block);
    const OpId parent = p.region(block.region).parent;
    if (parent == workload::kNoId) {
      return kernel;
    }
    const OpKind kind = p.op(parent).kind;
    if (kind == OpKind::kFusion || !workload::has_executed_regions(kind)) {
      kernel = parent;
    }
    current = parent;
  }
}

class ProgramCoster {
 public:
  ProgramCoster(const Program& program, ComputeModel& model, const CostOptions& options)
      : p_(program), model_(model), options_(options), counter_(program, options.counting) {}

  ProgramCosts run() {
    const CacheStats before = model_.cache_stats();
    costs_.ops.resize(p_.op_count());
    roles_.resize(p_.op_count());
    for (OpId id = 0; id < p_.op_count(); ++id) {
      roles_[id] = counter_.role(id);
      const OpId kernel = enclosing_kernel(p_, id);
      if (kernel != workload::kNoId) {
        costs_.ops[id].role = CostRole::kFused;
        costs_.ops[id].fused_into = kernel;
      } else {
        costs_.ops[id].role = roles_[id];
      }
    }
    if (options_.fuse_elementwise) {
      find_elementwise_chains();
    }
    for (OpId id = 0; id < p_.op_count(); ++id) {
      cost_op(id);
    }
    const CacheStats after = model_.cache_stats();
    costs_.cache.lookups = after.lookups - before.lookups;
    costs_.cache.hits = after.hits - before.hits;
    return std::move(costs_);
  }

 private:
  // Elementwise fusion: an elementwise op E joins the kernel of the producer P of one of its
  // operands when P is a compute op (or already fused into one) in E's block, P has one result
  // and E is that result's only use.
  void find_elementwise_chains() {
    std::vector<std::uint32_t> uses(p_.op_count(), 0);
    for (OpId id = 0; id < p_.op_count(); ++id) {
      for (const workload::ValueRef v : p_.operands(p_.op(id))) {
        if (v.is_op_result()) {
          ++uses[v.op()];
        }
      }
    }
    members_.resize(p_.op_count());
    // Program order within each block: producers come before their users.
    for (const workload::Function& f : p_.functions()) {
      if (f.body != workload::kNoId) {
        chain_region(f.body, uses);
      }
    }
  }

  void chain_region(RegionId region, const std::vector<std::uint32_t>& uses) {
    for (const BlockId block : p_.blocks(p_.region(region))) {
      for (const OpId id : p_.ops(p_.block(block))) {
        const Op& op = p_.op(id);
        for (const RegionId inner : p_.regions(op)) {
          chain_region(inner, uses);
        }
        OpCost& cost = costs_.ops[id];
        if (cost.role != CostRole::kCompute || workload::op_category(op.kind) != workload::OpCategory::kElementwise) {
          continue;
        }
        for (const workload::ValueRef v : p_.operands(op)) {
          if (!v.is_op_result()) {
            continue;
          }
          const OpId producer = v.op();
          const Op& p = p_.op(producer);
          const OpCost& produced = costs_.ops[producer];
          const bool chained = produced.role == CostRole::kFused && roles_[producer] == CostRole::kCompute &&
                               costs_.ops[produced.fused_into].role == CostRole::kCompute &&
                               p_.op(produced.fused_into).block == block;
          if ((produced.role != CostRole::kCompute && !chained) || p.block != block || p.results.count != 1 ||
              uses[producer] != 1) {
            continue;
          }
          const OpId root = chained ? produced.fused_into : producer;
          cost.role = CostRole::kFused;
          cost.fused_into = root;
          members_[root].push_back(id);
          break;
        }
      }
    }
  }

  void cost_op(OpId id) {
    OpCost& cost = costs_.ops[id];
    if (cost.role == CostRole::kFused) {
      return;
    }
    if (cost.role != CostRole::kCompute) {
      counter_.count(id, count_);  // flags, and bytes for communication
      cost.flags = count_.flags;
      if (cost.role == CostRole::kCommunication) {
        const Op& op = p_.op(id);
        std::uint8_t flags = 0;
        for (const workload::ValueRef v : p_.operands(op)) {
          cost.bytes_read += Bytes{counter_.value_bytes(v, flags)};
        }
        for (const workload::TypeId t : p_.result_types(op)) {
          cost.bytes_written += Bytes{counter_.type_bytes(t, flags)};
        }
        cost.flags |= flags;
      }
      return;
    }
    counter_.count(id, count_);
    std::uint8_t flags = count_.flags;
    if (!members_.empty() && !members_[id].empty()) {
      fuse_members(id, count_.signature, flags);
    }
    const OpSignature& signature = count_.signature;
    const Estimate& estimate = model_.estimate(signature);
    ++costs_.estimates;
    cost.flags = flags;
    cost.op_class = signature.op_class;
    cost.time = estimate.time;
    cost.flops = signature.flops;
    cost.bytes_read = signature.bytes_read;
    cost.bytes_written = signature.bytes_written;
    if (model_.memoises()) {
      // The model keeps its estimates: intern their texts once per distinct estimate.
      auto [it, inserted] = texts_.try_emplace(&estimate);
      if (inserted) {
        it->second = {costs_.intern(estimate.estimator), costs_.intern(estimate.note)};
      }
      cost.estimator = it->second.first;
      cost.note = it->second.second;
    } else {
      cost.estimator = costs_.intern(estimate.estimator);
      cost.note = costs_.intern(estimate.note);
    }
  }

  // The producer's kernel also does the members' work: their FLOPs, their operands from outside
  // the chain, their results; intermediates of the chain are neither written nor read back.
  void fuse_members(OpId root, OpSignature& signature, std::uint8_t& flags) {
    std::uint64_t read = signature.bytes_read.count;
    std::uint64_t written = signature.bytes_written.count;
    bool transcendental = false;
    for (const OpId member : members_[root]) {
      counter_.count(member, member_count_);
      flags |= member_count_.flags;
      transcendental = transcendental || member_count_.signature.op_class == OpClass::kTranscendental;
      signature.flops += member_count_.signature.flops;
      read += member_count_.signature.bytes_read.count;
      written += member_count_.signature.bytes_written.count;
      for (const workload::ValueRef v : p_.operands(p_.op(member))) {
        if (v.is_op_result() && (v.op() == root || costs_.ops[v.op()].fused_into == root)) {
          const std::uint64_t intermediate = counter_.value_bytes(v, flags);
          read -= std::min(read, intermediate);
          written -= std::min(written, intermediate);
        }
      }
    }
    signature.bytes_read = Bytes{read};
    signature.bytes_written = Bytes{written};
    // A kernel that moves data (broadcast, slice...) and computes is an elementwise kernel.
    switch (signature.op_class) {
      case OpClass::kDataMovement:
      case OpClass::kGatherScatter:
      case OpClass::kElementwise:
        signature.op_class = transcendental ? OpClass::kTranscendental : OpClass::kElementwise;
        break;
      default:
        break;
    }
  }

  const Program& p_;
  ComputeModel& model_;
  const CostOptions& options_;
  OpCounter counter_;
  ProgramCosts costs_;
  std::vector<CostRole> roles_;                   // the counting layer's role of each op
  std::vector<std::vector<OpId>> members_;        // fused elementwise ops, by root
  OpCount count_;
  OpCount member_count_;
  std::unordered_map<const Estimate*, std::pair<std::string_view, std::string_view>> texts_;
};

std::string op_display_name(const Program& p, const Op& op) {
  std::string name(p.op_name(op));
  if (op.kind == OpKind::kCustomCall && p.has_payload(op)) {
    name += " @";
    name += p.string(p.custom_call(op).target);
  }
  return name;
}

std::string_view flag_reason(std::uint8_t flags) {
  if ((flags & kFlagUnknownCustomCall) != 0) {
    return "unknown custom-call target: bytes only";
  }
  if ((flags & kFlagUnknownOp) != 0) {
    return "unknown op: bytes only";
  }
  if ((flags & kFlagOpaque) != 0) {
    return "other dialect: free";
  }
  if ((flags & kFlagHostTransfer) != 0) {
    return "host transfer: not modelled";
  }
  return "a size unknown: counted as 0 bytes";
}

class ExecutionWalker {
 public:
  ExecutionWalker(const Program& program, const ProgramCosts& costs)
      : p_(program), costs_(costs), functions_(program.functions().size()), state_(program.functions().size(), 0) {}

  ExecutionTotals run() {
    if (p_.entry_function() != workload::kNoId) {
      return function(p_.entry_function());
    }
    ExecutionTotals totals;
    for (workload::FunctionId f = 0; f < p_.functions().size(); ++f) {
      totals.add(function(f), 1);
    }
    return totals;
  }

 private:
  const ExecutionTotals& function(workload::FunctionId id) {
    if (state_[id] == 2) {
      return functions_[id];
    }
    if (state_[id] == 1) {
      throw OrreryError(ErrorCode::kUnsupported, "recursive call of @" + std::string(p_.string(p_.function(id).name)) +
                                                     ": its execution count is unbounded");
    }
    state_[id] = 1;
    ExecutionTotals totals;
    const workload::Function& f = p_.function(id);
    if (f.body != workload::kNoId) {
      totals = region(f.body);
    }
    functions_[id] = std::move(totals);
    state_[id] = 2;
    return functions_[id];
  }

  ExecutionTotals region(RegionId id) {
    ExecutionTotals totals;
    for (const BlockId block : p_.blocks(p_.region(id))) {
      for (const OpId op : p_.ops(p_.block(block))) {
        visit(op, totals);
      }
    }
    return totals;
  }

  void visit(OpId id, ExecutionTotals& into) {
    const Op& op = p_.op(id);
    const OpCost& cost = costs_.ops[id];
    ++into.role_executions[static_cast<std::size_t>(cost.role)];
    switch (cost.role) {
      case CostRole::kCompute: {
        into.flops += cost.flops;
        into.bytes_read += cost.bytes_read;
        into.bytes_written += cost.bytes_written;
        into.time += cost.time;
        ClassTotals& c = into.classes[static_cast<std::size_t>(cost.op_class)];
        ++c.executions;
        c.flops += cost.flops;
        c.bytes_read += cost.bytes_read;
        c.bytes_written += cost.bytes_written;
        c.time += cost.time;
        ++into.estimators[std::string(cost.estimator)];
        break;
      }
      case CostRole::kFree:
        ++into.free_ops[op_display_name(p_, op)];
        break;
      case CostRole::kCommunication:
        ++into.communication[op_display_name(p_, op)];
        break;
      case CostRole::kFused:
        break;
    }
    if (cost.flags != 0) {
      ++into.approximate[op_display_name(p_, op) + " (" + std::string(flag_reason(cost.flags)) + ")"];
    }
    const auto regions = p_.regions(op);
    switch (op.kind) {
      case OpKind::kWhile: {
        const std::uint64_t trips = p_.trip_count_or_throw(id);
        if (regions.size() >= 2) {
          into.add(region(regions[0]), trips + 1);
          into.add(region(regions[1]), trips);
        }
        return;
      }
      case OpKind::kIf:
      case OpKind::kCase: {
        // The costliest branch: an upper bound of one execution.
        ExecutionTotals best;
        bool first = true;
        for (const RegionId r : regions) {
          ExecutionTotals branch = region(r);
          if (first || branch.time > best.time) {
            best = std::move(branch);
            first = false;
          }
        }
        into.add(best, 1);
        return;
      }
      case OpKind::kCall:
      case OpKind::kComposite:
        if (p_.has_payload(op) && p_.call(op).callee != workload::kNoId) {
          into.add(function(p_.call(op).callee), 1);
        }
        return;
      case OpKind::kFusion:
        return;  // its ops are part of its kernel
      default:
        if (workload::has_executed_regions(op.kind)) {
          for (const RegionId r : regions) {
            into.add(region(r), 1);
          }
        }
        return;
    }
  }

  const Program& p_;
  const ProgramCosts& costs_;
  std::vector<ExecutionTotals> functions_;
  std::vector<std::uint8_t> state_;  // 0 not visited, 1 in progress, 2 done
};

}  // namespace

void ExecutionTotals::add(const ExecutionTotals& other, std::uint64_t times) {
  if (times == 0) {
    return;
  }
  const double scale = static_cast<double>(times);
  flops += Flops{other.flops.value * scale};
  bytes_read += Bytes{other.bytes_read.count * times};
  bytes_written += Bytes{other.bytes_written.count * times};
  time += other.time * times;
  for (std::size_t i = 0; i < classes.size(); ++i) {
    ClassTotals& c = classes[i];
    const ClassTotals& o = other.classes[i];
    c.executions += o.executions * times;
    c.flops += Flops{o.flops.value * scale};
    c.bytes_read += Bytes{o.bytes_read.count * times};
    c.bytes_written += Bytes{o.bytes_written.count * times};
    c.time += o.time * times;
  }
  for (std::size_t i = 0; i < role_executions.size(); ++i) {
    role_executions[i] += other.role_executions[i] * times;
  }
  const auto merge = [times](std::map<std::string, std::uint64_t>& mine,
                             const std::map<std::string, std::uint64_t>& theirs) {
    for (const auto& [key, count] : theirs) {
      mine[key] += count * times;
    }
  };
  merge(estimators, other.estimators);
  merge(free_ops, other.free_ops);
  merge(communication, other.communication);
  merge(approximate, other.approximate);
}

ProgramCosts cost_program(const Program& program, ComputeModel& model, const CostOptions& options) {
  return ProgramCoster(program, model, options).run();
}

ExecutionTotals execution_totals(const Program& program, const ProgramCosts& costs) {
  return ExecutionWalker(program, costs).run();
}

}  // namespace orrery::compute
