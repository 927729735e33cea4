#include "system/program_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <unordered_set>

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
                           const ExecGraphOptions& graph_options, std::uint32_t replicas,
                           std::shared_ptr<const JointGroups> joint)
    : program_(std::move(program)),
      label_(std::move(label)),
      ranks_(std::move(ranks)),
      joint_(std::move(joint)) {
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
    if (!times.stored(id)) {
      not_stored_.resize(p.op_count(), false);
      not_stored_[id] = true;
    }
    if (times.takes_time(id)) {
      if (std::string kernel = times.kernel_label(id); !kernel.empty()) {
        kernel_labels_.emplace(id, std::move(kernel));
      }
    }
  }
  ExecGraphOptions options = graph_options;
  options.stored = [&](workload::OpId id) { return times.stored(id); };
  graph_ = ExecGraph::build(
      p, [&](workload::OpId id) { return times.takes_time(id); }, options,
      [&](workload::OpId id) { return times.kernel_of(id); },
      [&](workload::OpId id) {
        const auto [it, inserted] = combine_key_of_.try_emplace(id);
        if (inserted) {
          it->second = combine_key(id, replicas);  // once per IR op, not per unrolled instance
        }
        return it->second;
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
    if (exec.kind == ExecKind::kSend || exec.kind == ExecKind::kRecv) {
      PeerInfo peer;
      peer.channel = attributes.channel_id;
      peer.bytes = exec.kind == ExecKind::kSend ? plan_bytes(exec.source) : result_bytes(exec.source);
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
      std::set<std::int64_t> sources;
      std::set<std::int64_t> targets;
      for (const auto& [source, target] : pairs.value()) {
        // A send has one target per device and a recv one source per device: a repeated source
        // or target would silently drop a pair.
        for (const auto& [device, seen, role] :
             {std::tuple{source, &sources, "source"}, std::tuple{target, &targets, "target"}}) {
          if (!seen->insert(device).second) {
            throw OrreryError(Error{ErrorCode::kInvalidInput,
                                    fmt::format("{}: device {} is the {} of two pairs in source_target_pairs; a {} "
                                                "connects each device to one peer",
                                                describe_op(exec.source), device, role,
                                                exec.kind == ExecKind::kSend ? "send" : "recv"),
                                    p.location(op.offset),
                                    {}});
          }
        }
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
    if (info.kind == CollectiveKind::kPermute) {
      auto pairs = workload::device_pairs(p, op);
      if (!pairs) {
        fail(pairs.error());
      }
      info.paired.assign(devices, 0);
      for (const auto& [source, target] : pairs.value()) {
        info.pairs.emplace_back(source, target);
        for (const std::uint32_t device : {source, target}) {
          if (device < devices) {
            info.paired[device] = 1;
          }
        }
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
  // Combined collectives: one description per distinct member list (loop iterations share it),
  // the members' sizes summed.
  for (std::uint32_t e = 0; e < graph_.size(); ++e) {
    const auto members = graph_.combined_sources(e);
    if (members.size() < 2) {
      continue;
    }
    std::vector<workload::OpId> list(members.begin(), members.end());
    const auto [it, inserted] = combined_infos_.try_emplace(std::move(list), 0);
    if (inserted) {
      CollectiveInfo info = collectives_[collective_index_.at(graph_.op(e).source)];
      info.bytes = 0;
      for (const workload::OpId member : members) {
        info.bytes += plan_bytes(member);
      }
      info.combined = static_cast<std::uint32_t>(members.size());
      it->second = static_cast<std::uint32_t>(collectives_.size());
      collectives_.push_back(std::move(info));
    }
    combined_index_[e] = it->second;
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
  if (joint_ != nullptr) {
    if (const auto found = joint_->find(id); found != joint_->end()) {
      return intern_joint_groups(id, *found->second);
    }
  }
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

// XLA's keys (all_reduce_key.h, all_gather_combiner.cc): all-reduce and reduce-scatter with a
// trivial reduction (sum, product, min, max, and, or, xor) combine with ops of the same kind,
// reduction, element type, device groups, and channel and global-device-id flags; all-gathers with
// the same groups and flags whatever their element type (XLA's GPU pipeline combines dtypes).
// One operand only. The size that counts against the limit is the result's (XLA's ByteSizeOf of
// the instruction's shape).
std::optional<CombineKey> ProgramModel::combine_key(workload::OpId id, std::uint32_t replicas) {
  const workload::Program& p = *program_;
  const workload::Op& op = p.op(id);
  if (!p.has_payload(op) || p.operands(op).size() != 1 || p.result_types(op).size() != 1 ||
      (joint_ != nullptr && joint_->contains(id))) {
    return std::nullopt;  // a joint op matches other programs' ops one for one: never combined
  }
  const workload::CollectiveAttributes& attributes = p.collective(op);
  const bool reduces = attributes.kind == workload::CollectiveKind::kAllReduce ||
                       attributes.kind == workload::CollectiveKind::kReduceScatter;
  if (!reduces && attributes.kind != workload::CollectiveKind::kAllGather) {
    return std::nullopt;
  }
  if (reduces && (attributes.reduction == workload::ReductionKind::kNone ||
                  attributes.reduction == workload::ReductionKind::kOther)) {
    return std::nullopt;
  }
  const std::optional<std::uint64_t> bytes = p.types().byte_size(p.result_types(op)[0]);
  if (!bytes) {
    return std::nullopt;
  }
  std::uint32_t group_set = 0;
  try {
    group_set = group_set_of(id, replicas);
  } catch (const OrreryError&) {
    return std::nullopt;  // not combined; describing the collective reports the error
  }
  const auto element = reduces ? static_cast<std::uint64_t>(p.types().element(p.value_type(p.operands(op)[0]))) : 0;
  const std::vector<std::uint64_t> key{static_cast<std::uint64_t>(attributes.kind),
                                       static_cast<std::uint64_t>(attributes.reduction),
                                       element,
                                       group_set,
                                       attributes.has_channel ? 1U : 0U,
                                       attributes.use_global_device_ids ? 1U : 0U};
  const auto [it, inserted] = combine_keys_.try_emplace(key, static_cast<std::uint32_t>(combine_keys_.size()));
  return CombineKey{it->second, *bytes};
}

std::uint32_t ProgramModel::intern_groups(const std::vector<std::vector<std::uint32_t>>& groups) {
  const auto found = group_set_ids_.find(groups);
  if (found != group_set_ids_.end()) {
    return found->second;
  }
  const std::uint32_t devices = devices_;
  GroupSet set;
  set.groups = groups;
  set.ranks.resize(groups.size());
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
      set.ranks[g].push_back(ranks_[device]);
    }
  }
  const auto id = static_cast<std::uint32_t>(group_sets_.size());
  group_sets_.push_back(std::move(set));
  group_set_ids_.emplace(groups, id);
  return id;
}

std::uint32_t ProgramModel::intern_joint_groups(workload::OpId id,
                                                const std::vector<std::vector<std::uint32_t>>& groups) {
  const auto found = joint_set_ids_.find(groups);
  if (found != joint_set_ids_.end()) {
    return found->second;
  }
  std::unordered_map<std::uint32_t, std::uint32_t> device_of;  // global rank -> local device
  for (std::uint32_t d = 0; d < ranks_.size(); ++d) {
    device_of.emplace(ranks_[d], d);
  }
  GroupSet set;
  set.joint = true;
  set.group_of.assign(devices_, GroupSet::kNoGroup);
  set.position_of.assign(devices_, 0);
  for (const auto& group : groups) {
    std::vector<std::uint32_t> local;
    std::unordered_set<std::uint32_t> seen;
    for (std::uint32_t position = 0; position < group.size(); ++position) {
      if (!seen.insert(group[position]).second) {
        throw OrreryError(ErrorCode::kInvalidInput,
                          fmt::format("{}: rank {} appears twice in one group of the "
                                      "collective",
                                      describe_op(id), group[position]));
      }
      const auto device = device_of.find(group[position]);
      if (device == device_of.end()) {
        continue;
      }
      if (set.group_of[device->second] != GroupSet::kNoGroup) {
        throw OrreryError(ErrorCode::kInvalidInput,
                          fmt::format("{}: rank {} appears in two groups of the collective", describe_op(id),
                                      group[position]));
      }
      set.group_of[device->second] = static_cast<std::uint32_t>(set.groups.size());
      set.position_of[device->second] = position;
      local.push_back(device->second);
    }
    if (!local.empty()) {
      set.groups.push_back(std::move(local));
      set.ranks.push_back(group);
    }
  }
  const auto set_id = static_cast<std::uint32_t>(group_sets_.size());
  group_sets_.push_back(std::move(set));
  joint_set_ids_.emplace(groups, set_id);
  return set_id;
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

std::string ProgramModel::describe_op(workload::OpId id, const workload::LineIndex& lines) const {
  const workload::Op& op = program_->op(id);
  const auto [line, column] = lines.line_column(op.offset);
  return fmt::format("{}:{}:{} {}", program_->source().path, line, column, program_->op_name(op));
}

std::uint64_t ProgramModel::result_bytes(workload::OpId id) const {
  std::uint64_t bytes = 0;
  for (const workload::TypeId type : program_->result_types(program_->op(id))) {
    bytes += program_->types().byte_size(type).value_or(0);
  }
  return bytes;
}

std::uint64_t ProgramModel::value_bytes(workload::OpId id, std::uint32_t result) const {
  if (id < not_stored_.size() && not_stored_[id]) {
    return 0;
  }
  const auto types = program_->result_types(program_->op(id));
  return result < types.size() ? program_->types().byte_size(types[result]).value_or(0) : 0;
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

std::uint64_t ProgramModel::donated_argument_bytes() const {
  const workload::FunctionId entry = program_->entry_function();
  if (entry == workload::kNoId) {
    return 0;
  }
  const workload::Function& function = program_->function(entry);
  const auto types = program_->argument_types(function);
  std::vector<bool> donated(types.size(), false);
  for (const workload::FunctionAttribute& a : program_->argument_attributes(function)) {
    if (a.is_result || a.index >= donated.size()) {
      continue;
    }
    const std::string_view name = program_->string(a.attribute.name);
    const std::string_view value = program_->attribute_text(a.attribute);
    if (name == "tf.aliasing_output" || (name == "jax.buffer_donor" && value.starts_with("true"))) {
      donated[a.index] = true;
    }
  }
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (donated[i]) {
      bytes += program_->types().byte_size(types[i]).value_or(0);
    }
  }
  return bytes;
}

}  // namespace orrery::system
