#include "system/program_model.h"

#include <fmt/format.h>
#include <algorithm>
#include <set>

#include "util/error.h"
#include "workload/collectives.h"

namespace orrery::system {
namespace {

CollectiveKind system_kind(workload::CollectiveKind kind) {
  switch (kind) {
    case workload::CollectiveKind::kAllReduce:
    case workload::CollectiveKind::kCollectiveReduce: return CollectiveKind::kAllReduce;
    case workload::CollectiveKind::kAllGather: return CollectiveKind::kAllGather;
    case workload::CollectiveKind::kReduceScatter: return CollectiveKind::kReduceScatter;
    case workload::CollectiveKind::kAllToAll: return CollectiveKind::kAllToAll;
    case workload::CollectiveKind::kCollectivePermute: return CollectiveKind::kPermute;
    case workload::CollectiveKind::kCollectiveBroadcast: return CollectiveKind::kBroadcast;
    case workload::CollectiveKind::kSend:
    case workload::CollectiveKind::kRecv: return CollectiveKind::kPermute;
  }
  return CollectiveKind::kAllReduce;
}

}  // namespace

ProgramModel::ProgramModel(std::shared_ptr<const workload::Program> program, std::string label,
                           std::vector<std::uint32_t> ranks, const OpTimes& times,
                           const ExecGraphOptions& graph_options, std::uint32_t replicas)
    : program_(std::move(program)), label_(std::move(label)), ranks_(std::move(ranks)) {
  const workload::Program& p = *program_;
  if (replicas > 0 && p.num_partitions() != 1) {
    throw OrreryError(ErrorCode::kConfig,
                      fmt::format("{}: replicas can rescale only data-parallel programs (num_partitions 1), "
                                  "this one has num_partitions {}",
                                  label_, p.num_partitions()));
  }
  devices_ = replicas > 0 ? replicas : p.num_devices();
  op_time_.resize(p.op_count());
  for (workload::OpId id = 0; id < p.op_count(); ++id) {
    op_time_[id] = times.takes_time(id) ? times.time(id) : SimTime::zero();
    if (times.takes_time(id)) {
      if (std::string kernel = times.kernel_label(id); !kernel.empty()) {
        kernel_labels_.emplace(id, std::move(kernel));
      }
    }
  }
  if (graph_options.combine_bytes > 0) {
    combine_collectives(graph_options, replicas);
  }
  graph_ = ExecGraph::build(
      p, [&](workload::OpId id) { return times.takes_time(id); }, graph_options,
      [&](workload::OpId id) {
        const auto combined = combined_into_.find(id);
        return combined != combined_into_.end() ? combined->second : times.kernel_of(id);
      });

  const std::uint32_t devices = devices_;
  for (const ExecOp& exec : graph_.ops()) {
    if (exec.kind == ExecKind::kCompute) {
      continue;
    }
    const workload::Op& op = p.op(exec.source);
    if (collective_index_.contains(exec.source) || peer_index_.contains(exec.source)) {
      continue;  // an op inside an unrolled loop: described once
    }
    const workload::CollectiveAttributes& attributes = p.collective(op);
    auto fail = [&](const Error& cause) {
      Error error = cause;
      error.message = fmt::format("{}: {}", describe_op(exec.source), cause.message);
      if (!error.where) {
        error.where = p.location(op.offset);
      }
      throw OrreryError(std::move(error));
    };
    if (replicas > 0 && (exec.kind != ExecKind::kCollective ||
                         attributes.kind == workload::CollectiveKind::kCollectivePermute)) {
      throw OrreryError(Error{ErrorCode::kConfig,
                              fmt::format("{}: {} cannot be rescaled to {} replicas (only collectives over all "
                                          "replicas can)",
                                          label_, describe_op(exec.source), replicas),
                              p.location(op.offset),
                              {}});
    }
    std::uint64_t operand_bytes = 0;
    for (const workload::ValueRef operand : p.operands(op)) {
      operand_bytes += p.types().byte_size(p.value_type(operand)).value_or(0);
    }
    const std::uint64_t output_bytes = result_bytes(exec.source);
    if (exec.kind == ExecKind::kSend || exec.kind == ExecKind::kRecv) {
      PeerInfo peer;
      peer.channel = attributes.channel_id;
      peer.bytes = exec.kind == ExecKind::kSend ? operand_bytes : output_bytes;
      auto pairs = workload::device_pairs(p, op);
      if (!pairs) {
        fail(pairs.error());
      }
      peer.target_of.assign(devices, PeerInfo::kNone);
      peer.source_of.assign(devices, PeerInfo::kNone);
      if (pairs.value().empty()) {  // no pairs: device i talks to device i of the peer program
        for (std::uint32_t d = 0; d < devices; ++d) {
          peer.target_of[d] = d;
          peer.source_of[d] = d;
        }
      }
      for (const auto& [source, target] : pairs.value()) {
        if (source < devices) {
          peer.target_of[source] = target;
        }
        if (target < devices) {
          peer.source_of[target] = source;
        }
      }
      peer_index_[exec.source] = static_cast<std::uint32_t>(peers_.size());
      peers_.push_back(std::move(peer));
      continue;
    }
    CollectiveInfo info;
    info.op = exec.source;
    info.kind = system_kind(attributes.kind);
    info.bytes = plan_bytes(exec.source);
    if (const auto members = combined_members_.find(exec.source); members != combined_members_.end()) {
      info.bytes = 0;
      for (const workload::OpId member : members->second) {
        info.bytes += plan_bytes(member);
      }
      info.combined = static_cast<std::uint32_t>(members->second.size());
    }
    if (info.kind == CollectiveKind::kPermute) {
      auto pairs = workload::device_pairs(p, op);
      if (!pairs) {
        fail(pairs.error());
      }
      for (const auto& [source, target] : pairs.value()) {
        info.pairs.emplace_back(source, target);
      }
      std::vector<std::uint32_t> everyone(devices);
      for (std::uint32_t d = 0; d < devices; ++d) {
        everyone[d] = d;
      }
      info.group_set = intern_groups({everyone});
    } else {
      info.group_set = group_set_of(exec.source, replicas);
    }
    collective_index_[exec.source] = static_cast<std::uint32_t>(collectives_.size());
    collectives_.push_back(std::move(info));
  }
}

std::uint64_t ProgramModel::plan_bytes(workload::OpId id) const {
  const workload::Program& p = *program_;
  const workload::Op& op = p.op(id);
  if (p.has_payload(op) && p.collective(op).kind == workload::CollectiveKind::kAllGather) {
    return result_bytes(id);
  }
  std::uint64_t bytes = 0;
  for (const workload::ValueRef operand : p.operands(op)) {
    bytes += p.types().byte_size(p.value_type(operand)).value_or(0);
  }
  return bytes;
}

std::uint32_t ProgramModel::group_set_of(workload::OpId id, std::uint32_t replicas) {
  const workload::Program& p = *program_;
  const workload::Op& op = p.op(id);
  auto groups = workload::device_groups(p, op);
  if (!groups) {
    Error error = groups.error();
    error.message = fmt::format("{}: {}", describe_op(id), error.message);
    if (!error.where) {
      error.where = p.location(op.offset);
    }
    throw OrreryError(std::move(error));
  }
  if (replicas == 0) {
    return intern_groups(groups.value());
  }
  // Rescaling: the op must span every replica as written; it then spans every rescaled one.
  if (groups.value().size() != 1 || groups.value().front().size() != p.num_devices()) {
    throw OrreryError(Error{ErrorCode::kConfig,
                            fmt::format("{}: {} does not span all {} replicas, so the program cannot be "
                                        "rescaled to {} replicas",
                                        label_, describe_op(id), p.num_devices(), replicas),
                            p.location(op.offset),
                            {}});
  }
  std::vector<std::uint32_t> everyone(devices_);
  for (std::uint32_t d = 0; d < devices_; ++d) {
    everyone[d] = d;
  }
  return intern_groups({everyone});
}

// XLA's all-reduce, all-gather and reduce-scatter combiners (CombineInstructionsByKey in
// collective_combiner_utils.h): ops of one block with the same key — kind, reduction, device
// groups, channel and global-device-id flags — and one operand are combined greedily in program
// order: a group starts at the first op not yet placed and takes the next ops of its key while
// the combined size stays within the byte limit (an op above it alone is never combined), the
// group has fewer than `combine_count` ops, and the op does not depend on a member already taken
// (it would wait for itself); the first op that fails ends the group. Repeated until every op is
// placed. A group of several ops runs as one collective at its last member (exec_graph.h).
void ProgramModel::combine_collectives(const ExecGraphOptions& options, std::uint32_t replicas) {
  const workload::Program& p = *program_;
  struct Key {
    workload::CollectiveKind kind;
    workload::ReductionKind reduction;
    std::uint32_t group_set;
    bool channel;
    bool global_ids;
    bool operator==(const Key&) const = default;
  };
  struct Candidate {
    workload::OpId op;
    Key key;
    std::uint64_t bytes;
  };
  std::map<workload::BlockId, std::vector<Candidate>> by_block;
  for (workload::OpId id = 0; id < p.op_count(); ++id) {
    const workload::Op& op = p.op(id);
    if (workload::op_category(op.kind) != workload::OpCategory::kCollective || !p.has_payload(op) ||
        p.operands(op).size() != 1) {
      continue;
    }
    const workload::CollectiveAttributes& attributes = p.collective(op);
    if (attributes.kind != workload::CollectiveKind::kAllReduce &&
        attributes.kind != workload::CollectiveKind::kAllGather &&
        attributes.kind != workload::CollectiveKind::kReduceScatter) {
      continue;
    }
    std::uint32_t group_set = 0;
    try {
      group_set = group_set_of(id, replicas);
    } catch (const OrreryError&) {
      continue;  // not combined; the collective's own description reports the error
    }
    by_block[op.block].push_back(Candidate{id,
                                           Key{attributes.kind, attributes.reduction, group_set,
                                               attributes.has_channel, attributes.use_global_device_ids},
                                           plan_bytes(id)});
  }
  std::vector<std::uint32_t> stamp(p.op_count(), 0);  // == round: a member, or reads one
  std::uint32_t round = 0;
  std::vector<workload::OpId> group;
  for (const auto& [block_id, candidates] : by_block) {
    if (candidates.size() < 2) {
      continue;
    }
    const auto ops = p.ops(p.block(block_id));
    std::unordered_map<workload::OpId, std::size_t> index;
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      index.emplace(candidates[c].op, c);
    }
    std::vector<std::uint8_t> placed(candidates.size(), 0);
    for (std::size_t first = 0;;) {
      while (first < candidates.size() && placed[first] != 0) {
        ++first;
      }
      if (first == candidates.size()) {
        break;
      }
      const Key key = candidates[first].key;
      ++round;
      group.clear();
      std::uint64_t bytes = 0;
      // OpIds increase in program order within a block.
      for (auto it = std::lower_bound(ops.begin(), ops.end(), candidates[first].op); it != ops.end(); ++it) {
        const workload::OpId id = *it;
        bool reads_member = false;
        for (const workload::ValueRef operand : p.operands(p.op(id))) {
          reads_member = reads_member || (operand.is_op_result() && stamp[operand.op()] == round);
        }
        const auto found = index.find(id);
        if (found == index.end() || placed[found->second] != 0 || !(candidates[found->second].key == key)) {
          if (reads_member) {
            stamp[id] = round;
          }
          continue;
        }
        const Candidate& candidate = candidates[found->second];
        if (candidate.bytes > options.combine_bytes) {
          placed[found->second] = 1;  // never combined
          if (reads_member) {
            stamp[id] = round;
          }
          continue;
        }
        if (bytes + candidate.bytes > options.combine_bytes || reads_member) {
          break;
        }
        group.push_back(id);
        bytes += candidate.bytes;
        placed[found->second] = 1;
        stamp[id] = round;
        if (group.size() >= options.combine_count) {
          break;
        }
      }
      if (group.size() > 1) {
        for (const workload::OpId member : group) {
          combined_into_.emplace(member, group.back());
        }
        combined_members_.emplace(group.back(), group);
      }
    }
  }
}

std::uint32_t ProgramModel::intern_groups(const std::vector<std::vector<std::uint32_t>>& groups) {
  const auto found = group_set_ids_.find(groups);
  if (found != group_set_ids_.end()) {
    return found->second;
  }
  const std::uint32_t devices = devices_;
  GroupSet set;
  set.groups = groups;
  set.group_of.assign(devices, GroupSet::kNoGroup);
  set.position_of.assign(devices, 0);
  for (std::uint32_t g = 0; g < groups.size(); ++g) {
    for (std::uint32_t position = 0; position < groups[g].size(); ++position) {
      const std::uint32_t device = groups[g][position];
      if (device >= devices) {
        throw OrreryError(ErrorCode::kInvalidInput,
                          fmt::format("{}: a collective group names device {} but the program has {} devices",
                                      label_, device, devices));
      }
      if (set.group_of[device] != GroupSet::kNoGroup) {
        throw OrreryError(ErrorCode::kInvalidInput,
                          fmt::format("{}: device {} appears in two groups of one collective", label_, device));
      }
      set.group_of[device] = g;
      set.position_of[device] = position;
    }
  }
  const auto id = static_cast<std::uint32_t>(group_sets_.size());
  group_sets_.push_back(std::move(set));
  group_set_ids_.emplace(groups, id);
  return id;
}

std::string ProgramModel::kernel_label(workload::OpId id) const {
  const auto found = kernel_labels_.find(id);
  return found != kernel_labels_.end() ? found->second : std::string(program_->op_name(program_->op(id)));
}

std::string ProgramModel::describe_op(workload::OpId id) const {
  const workload::Op& op = program_->op(id);
  const SourceLocation where = program_->location(op.offset);
  return fmt::format("{}:{}:{} {}", where.file, where.line, where.column, program_->op_name(op));
}

std::uint64_t ProgramModel::result_bytes(workload::OpId id) const {
  std::uint64_t bytes = 0;
  for (const workload::TypeId type : program_->result_types(program_->op(id))) {
    bytes += program_->types().byte_size(type).value_or(0);
  }
  return bytes;
}

std::uint64_t ProgramModel::argument_bytes() const {
  const workload::FunctionId entry = program_->entry_function();
  std::uint64_t bytes = 0;
  if (entry == workload::kNoId) {
    return 0;
  }
  for (const workload::TypeId type : program_->argument_types(program_->function(entry))) {
    bytes += program_->types().byte_size(type).value_or(0);
  }
  return bytes;
}

}  // namespace orrery::system
