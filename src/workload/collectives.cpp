#include "workload/collectives.h"

#include <fmt/format.h>

#include <limits>
#include <set>
#include <string>

namespace orrery::workload {
namespace {

// The most device ids resolve_device_groups lists (guards against absurd inputs).
constexpr std::uint64_t kMaxListedDevices = std::uint64_t{1} << 26;

Error group_error(std::string message) {
  return Error{ErrorCode::kInvalidInput, std::move(message), std::nullopt, {}};
}

// Checks an id of the mode's domain: replica ids, partition ids or flattened device ids.
bool in_domain(std::int64_t id, std::uint32_t size) {
  return id >= 0 && id < static_cast<std::int64_t>(size);
}

std::string_view domain_name(GroupMode mode) {
  switch (mode) {
    case GroupMode::kCrossPartition:
      return "partition";
    case GroupMode::kFlattenedIds:
      return "device";
    default:
      return "replica";
  }
}

std::uint32_t domain_size(GroupMode mode, std::uint32_t num_replicas, std::uint32_t num_partitions) {
  switch (mode) {
    case GroupMode::kCrossPartition:
      return num_partitions;
    case GroupMode::kFlattenedIds:
      return num_replicas * num_partitions;
    default:
      return num_replicas;
  }
}

// Groups from the mesh-axes form: devices are the mesh's positions in row-major order; a group
// holds the devices that agree on every axis not named, ordered by the named axes.
Result<std::vector<std::int64_t>> mesh_axes_groups(const Program& program, const CollectiveAttributes& c,
                                                   std::uint32_t& group_count, std::uint32_t& group_size) {
  const Mesh* mesh = program.find_mesh(program.string(c.mesh));
  if (mesh == nullptr) {
    return group_error("replica groups name mesh @" + std::string(program.string(c.mesh)) +
                       ", which the module does not define with sdy.mesh");
  }
  const auto axes = program.ints(mesh->axes);
  const std::size_t rank = axes.size() / 2;
  std::vector<std::int64_t> sizes(rank);
  std::vector<bool> selected(rank, false);
  std::vector<std::size_t> order;  // the named axes, in the order named
  for (std::size_t a = 0; a < rank; ++a) {
    sizes[a] = axes[2 * a + 1];
  }
  for (const std::int64_t axis : program.ints(c.groups)) {
    bool found = false;
    for (std::size_t a = 0; a < rank; ++a) {
      if (c.mesh_axes_by_index ? static_cast<std::int64_t>(a) == axis : axes[2 * a] == axis) {
        selected[a] = true;
        order.push_back(a);
        found = true;
      }
    }
    if (!found) {
      return group_error("mesh @" + std::string(program.string(c.mesh)) + " has no axis " +
                         (c.mesh_axes_by_index
                              ? std::to_string(axis)
                              : "\"" + std::string(program.string(static_cast<StringId>(axis))) + "\""));
    }
  }
  std::int64_t devices = 1;
  std::int64_t per_group = 1;
  for (std::size_t a = 0; a < rank; ++a) {
    devices *= sizes[a];
    per_group *= selected[a] ? sizes[a] : 1;
  }
  group_count = static_cast<std::uint32_t>(devices / per_group);
  group_size = static_cast<std::uint32_t>(per_group);
  // Row-major strides of the mesh.
  std::vector<std::int64_t> stride(rank, 1);
  for (std::size_t a = rank; a-- > 1;) {
    stride[a - 1] = stride[a] * sizes[a];
  }
  std::vector<std::int64_t> groups;
  for (std::int64_t base = 0; base < devices; ++base) {
    bool is_group_origin = true;  // every named axis at coordinate 0
    for (std::size_t a = 0; a < rank; ++a) {
      if (selected[a] && (base / stride[a]) % sizes[a] != 0) {
        is_group_origin = false;
      }
    }
    if (!is_group_origin) {
      continue;
    }
    for (std::int64_t k = 0; k < per_group; ++k) {
      std::int64_t rest = k;
      std::int64_t device = base;
      for (std::size_t i = order.size(); i-- > 0;) {  // the last named axis varies fastest
        const std::size_t a = order[i];
        device += (rest % sizes[a]) * stride[a];
        rest /= sizes[a];
      }
      groups.push_back(device);
    }
  }
  return groups;
}

}  // namespace

std::string_view collective_kind_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
    case CollectiveKind::kCollectivePermute:
      return "collective_permute";
    case CollectiveKind::kCollectiveBroadcast:
      return "collective_broadcast";
    case CollectiveKind::kCollectiveReduce:
      return "collective_reduce";
    case CollectiveKind::kSend:
      return "send";
    case CollectiveKind::kRecv:
      return "recv";
  }
  return "?";
}

std::string_view reduction_kind_name(ReductionKind kind) {
  switch (kind) {
    case ReductionKind::kNone:
      return "none";
    case ReductionKind::kSum:
      return "sum";
    case ReductionKind::kProduct:
      return "product";
    case ReductionKind::kMax:
      return "max";
    case ReductionKind::kMin:
      return "min";
    case ReductionKind::kAnd:
      return "and";
    case ReductionKind::kOr:
      return "or";
    case ReductionKind::kXor:
      return "xor";
    case ReductionKind::kOther:
      return "other";
  }
  return "?";
}

std::string_view group_mode_name(GroupMode mode) {
  switch (mode) {
    case GroupMode::kCrossReplica:
      return "cross_replica";
    case GroupMode::kCrossPartition:
      return "cross_partition";
    case GroupMode::kCrossReplicaAndPartition:
      return "cross_replica_and_partition";
    case GroupMode::kFlattenedIds:
      return "flattened_ids";
  }
  return "?";
}

ReductionKind reduction_of(OpKind body) {
  switch (body) {
    case OpKind::kAdd:
      return ReductionKind::kSum;
    case OpKind::kMultiply:
      return ReductionKind::kProduct;
    case OpKind::kMaximum:
      return ReductionKind::kMax;
    case OpKind::kMinimum:
      return ReductionKind::kMin;
    case OpKind::kAnd:
      return ReductionKind::kAnd;
    case OpKind::kOr:
      return ReductionKind::kOr;
    case OpKind::kXor:
      return ReductionKind::kXor;
    default:
      return ReductionKind::kOther;
  }
}

GroupMode group_mode(const CollectiveAttributes& c) {
  const bool channel = c.has_channel && c.channel_id > 0;
  switch (c.kind) {
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kCollectiveReduce:
      if (!channel) {
        return c.use_global_device_ids ? GroupMode::kFlattenedIds : GroupMode::kCrossReplica;
      }
      return c.use_global_device_ids ? GroupMode::kFlattenedIds : GroupMode::kCrossReplicaAndPartition;
    default:
      return channel ? GroupMode::kCrossPartition : GroupMode::kCrossReplica;
  }
}

Result<DeviceGroups> resolve_device_groups(GroupMode mode, std::span<const std::int64_t> groups,
                                           std::uint32_t group_count, std::uint32_t group_size,
                                           std::uint32_t num_replicas, std::uint32_t num_partitions) {
  const std::uint32_t domain = domain_size(mode, num_replicas, num_partitions);
  // Rows of ids in the mode's domain, padding dropped; no rows means one row of the whole domain.
  std::vector<std::vector<std::int64_t>> rows;
  for (std::uint32_t g = 0; g < group_count && group_size > 0; ++g) {
    std::vector<std::int64_t> row;
    for (std::uint32_t i = 0; i < group_size; ++i) {
      const std::int64_t id = groups[g * group_size + i];
      if (id == -1) {
        continue;
      }
      if (!in_domain(id, domain)) {
        return group_error("replica group id " + std::to_string(id) + " is not a " +
                           std::string(domain_name(mode)) + " id (the program has " +
                           std::to_string(num_replicas) + " replicas and " + std::to_string(num_partitions) +
                           " partitions; mode " + std::string(group_mode_name(mode)) + ")");
      }
      row.push_back(id);
    }
    rows.push_back(std::move(row));
  }
  // Every row is listed once per partition (cross_replica), per replica (cross_partition), or
  // times the partitions (cross_replica_and_partition): refuse tables too large to list.
  std::uint64_t listed = rows.empty() ? domain : 0;
  for (const auto& row : rows) {
    listed += row.size();
  }
  const std::uint64_t copies = mode == GroupMode::kCrossReplica               ? num_partitions
                               : mode == GroupMode::kCrossPartition           ? num_replicas
                               : mode == GroupMode::kCrossReplicaAndPartition ? num_partitions
                                                                              : 1;
  if (listed * copies > kMaxListedDevices) {
    return group_error("the replica groups list " + std::to_string(listed * copies) +
                       " device ids; at most " + std::to_string(kMaxListedDevices) + " are resolved");
  }
  if (rows.empty()) {
    std::vector<std::int64_t> all(domain);
    for (std::uint32_t i = 0; i < domain; ++i) {
      all[i] = i;
    }
    rows.push_back(std::move(all));
  }
  const std::uint32_t partitions = num_partitions;
  DeviceGroups out;
  auto device = [partitions](std::int64_t replica, std::int64_t partition) {
    return static_cast<DeviceId>(replica * partitions + partition);
  };
  switch (mode) {
    case GroupMode::kCrossReplica:
      for (std::uint32_t p = 0; p < num_partitions; ++p) {
        for (const auto& row : rows) {
          auto& group = out.emplace_back();
          for (const std::int64_t r : row) {
            group.push_back(device(r, p));
          }
        }
      }
      break;
    case GroupMode::kCrossPartition:
      for (std::uint32_t r = 0; r < num_replicas; ++r) {
        for (const auto& row : rows) {
          auto& group = out.emplace_back();
          for (const std::int64_t p : row) {
            group.push_back(device(r, p));
          }
        }
      }
      break;
    case GroupMode::kCrossReplicaAndPartition:
      for (const auto& row : rows) {
        auto& group = out.emplace_back();
        for (std::uint32_t p = 0; p < num_partitions; ++p) {
          for (const std::int64_t r : row) {
            group.push_back(device(r, p));
          }
        }
      }
      break;
    case GroupMode::kFlattenedIds:
      for (const auto& row : rows) {
        auto& group = out.emplace_back();
        for (const std::int64_t id : row) {
          group.push_back(static_cast<DeviceId>(id));
        }
      }
      break;
  }
  return out;
}

Result<DevicePairs> resolve_device_pairs(GroupMode mode, std::span<const std::int64_t> flattened_pairs,
                                         std::uint32_t num_replicas, std::uint32_t num_partitions) {
  const bool per_partition = mode == GroupMode::kCrossReplica;
  const std::uint32_t domain = per_partition ? num_replicas : num_partitions;
  DevicePairs out;
  const std::uint32_t copies = per_partition ? num_partitions : num_replicas;
  for (std::uint32_t c = 0; c < copies; ++c) {
    for (std::size_t i = 0; i + 1 < flattened_pairs.size(); i += 2) {
      const std::int64_t source = flattened_pairs[i];
      const std::int64_t target = flattened_pairs[i + 1];
      if (!in_domain(source, domain) || !in_domain(target, domain)) {
        return group_error("source-target pair (" + std::to_string(source) + ", " + std::to_string(target) +
                           ") names a " + (per_partition ? "replica" : "partition") + " id outside 0.." +
                           std::to_string(domain - 1));
      }
      if (per_partition) {
        out.emplace_back(static_cast<DeviceId>(source * num_partitions + c),
                         static_cast<DeviceId>(target * num_partitions + c));
      } else {
        const std::int64_t base = std::int64_t{c} * num_partitions;
        out.emplace_back(static_cast<DeviceId>(base + source), static_cast<DeviceId>(base + target));
      }
    }
  }
  return out;
}

Result<DeviceGroups> device_groups(const Program& program, const Op& op) {
  const CollectiveAttributes& c = program.collective(op);
  const GroupMode mode = group_mode(c);
  if (c.groups_form == ReplicaGroupsForm::kMeshAxes) {
    std::uint32_t count = 0;
    std::uint32_t size = 0;
    auto groups = mesh_axes_groups(program, c, count, size);
    if (!groups) {
      return groups.error();
    }
    return resolve_device_groups(mode, groups.value(), count, size, program.num_replicas(),
                                 program.num_partitions());
  }
  return resolve_device_groups(mode, program.ints(c.groups), c.group_count, c.group_size,
                               program.num_replicas(), program.num_partitions());
}

std::string collective_shape_problem(const Program& program, const Op& op) {
  const CollectiveAttributes& c = program.collective(op);
  const TypeTable& types = program.types();
  if (c.kind == CollectiveKind::kCollectivePermute && c.has_source_target_pairs) {
    const auto pairs = program.ints(c.source_target_pairs);
    std::set<std::int64_t> sources;
    std::set<std::int64_t> targets;
    for (std::size_t i = 0; i + 1 < pairs.size(); i += 2) {
      if (!sources.insert(pairs[i]).second) {
        return fmt::format("source_target_pairs: {} is the source of two pairs (each source sends once)", pairs[i]);
      }
      if (!targets.insert(pairs[i + 1]).second) {
        return fmt::format("source_target_pairs: {} is the target of two pairs (each target receives once)",
                           pairs[i + 1]);
      }
    }
    return "";
  }
  const bool gather = c.kind == CollectiveKind::kAllGather;
  const bool scatter = c.kind == CollectiveKind::kReduceScatter;
  const bool to_all = c.kind == CollectiveKind::kAllToAll;
  if (!gather && !scatter && !to_all) {
    return "";
  }
  const auto size = device_group_size(program, op);
  if (!size || size.value() == 0) {
    return "";  // the group error is reported where the groups are resolved
  }
  const std::int64_t g = size.value();
  if (to_all && c.split_count >= 0 && c.split_count != g) {
    return fmt::format("split_count is {} but the replica groups have {} members", c.split_count, g);
  }
  const auto operands = program.operands(op);
  const auto results = program.result_types(op);
  for (std::size_t i = 0; i < operands.size() && i < results.size(); ++i) {
    const TypeId in = program.value_type(operands[i]);
    const TypeId out = results[i];
    if (!types.is_tensor(in) || !types.is_tensor(out) || types.rank(in) != types.rank(out)) {
      continue;
    }
    const auto in_dims = types.dimensions(in);
    const auto out_dims = types.dimensions(out);
    auto expect = [&](std::int64_t dim, std::int64_t want, std::string_view why) -> std::string {
      if (dim < 0 || static_cast<std::size_t>(dim) >= in_dims.size() || want < 0 ||
          out_dims[dim] == kDynamicDimension || out_dims[dim] == want) {
        return "";
      }
      return fmt::format("result {} has {} elements along dimension {}, but {} gives {}", types.to_string(out),
                         out_dims[dim], dim, why, want);
    };
    auto divisible = [&](std::int64_t dim, std::string_view name) -> std::string {
      if (dim < 0 || static_cast<std::size_t>(dim) >= in_dims.size() || in_dims[dim] == kDynamicDimension ||
          in_dims[dim] % g == 0) {
        return "";
      }
      return fmt::format("operand {} has {} elements along {} {}, which the {} members of a group cannot share "
                         "evenly",
                         types.to_string(in), in_dims[dim], name, dim, g);
    };
    // The operand's size along `dim` times (or divided by) the group size; -1 when not static. A
    // product past int64 cannot match any result type (those are bounded), so it saturates.
    auto scaled = [&](std::int64_t dim, bool up) {
      if (in_dims[dim] == kDynamicDimension) {
        return std::int64_t{-1};
      }
      if (!up) {
        return in_dims[dim] / g;
      }
      return in_dims[dim] > std::numeric_limits<std::int64_t>::max() / g ? std::numeric_limits<std::int64_t>::max()
                                                                          : in_dims[dim] * g;
    };
    std::string problem;
    if (gather && c.all_gather_dim >= 0 && static_cast<std::size_t>(c.all_gather_dim) < in_dims.size()) {
      problem = expect(c.all_gather_dim, scaled(c.all_gather_dim, true),
                       fmt::format("the operand's {} x {} members", in_dims[c.all_gather_dim], g));
    } else if (scatter && c.scatter_dimension >= 0 && static_cast<std::size_t>(c.scatter_dimension) < in_dims.size()) {
      problem = divisible(c.scatter_dimension, "scatter_dimension");
      if (problem.empty()) {
        problem = expect(c.scatter_dimension, scaled(c.scatter_dimension, false),
                         fmt::format("the operand's {} / {} members", in_dims[c.scatter_dimension], g));
      }
    } else if (to_all && c.split_dimension >= 0 && static_cast<std::size_t>(c.split_dimension) < in_dims.size() &&
               c.concat_dimension >= 0 && static_cast<std::size_t>(c.concat_dimension) < in_dims.size()) {
      problem = divisible(c.split_dimension, "split_dimension");
      if (problem.empty() && c.split_dimension != c.concat_dimension) {
        problem = expect(c.split_dimension, scaled(c.split_dimension, false), "splitting it over the group");
        if (problem.empty()) {
          problem = expect(c.concat_dimension, scaled(c.concat_dimension, true), "concatenating over the group");
        }
      }
    }
    if (!problem.empty()) {
      return problem;
    }
  }
  return "";
}

Result<std::uint32_t> device_group_size(const Program& program, const Op& op) {
  const CollectiveAttributes& c = program.collective(op);
  const GroupMode mode = group_mode(c);
  std::uint64_t size = 0;
  if (c.groups_form == ReplicaGroupsForm::kMeshAxes) {
    const Mesh* mesh = program.find_mesh(program.string(c.mesh));
    if (mesh == nullptr) {
      return group_error("unknown mesh @" + std::string(program.string(c.mesh)));
    }
    const auto axes = program.ints(mesh->axes);
    size = 1;
    for (const std::int64_t axis : program.ints(c.groups)) {
      for (std::size_t a = 0; a + 1 < axes.size(); a += 2) {
        if (c.mesh_axes_by_index ? static_cast<std::int64_t>(a / 2) == axis : axes[a] == axis) {
          size *= static_cast<std::uint64_t>(axes[a + 1]);
        }
      }
    }
  } else if (c.group_count == 0 || c.group_size == 0) {
    size = domain_size(mode, program.num_replicas(), program.num_partitions());
  } else {
    for (const std::int64_t id : program.ints(c.groups).subspan(0, c.group_size)) {
      size += id == -1 ? 0 : 1;
    }
  }
  if (mode == GroupMode::kCrossReplicaAndPartition && c.groups_form != ReplicaGroupsForm::kAbsent &&
      (c.groups_form == ReplicaGroupsForm::kMeshAxes || (c.group_count != 0 && c.group_size != 0))) {
    size *= program.num_partitions();  // each listed replica brings all its partitions, as resolve_device_groups does
  }
  return static_cast<std::uint32_t>(size);
}

Result<DevicePairs> device_pairs(const Program& program, const Op& op) {
  const CollectiveAttributes& c = program.collective(op);
  IntRange pairs = c.source_target_pairs;
  if (!c.has_source_target_pairs) {
    if (!c.has_send_recv_pairs) {
      return group_error(std::string(collective_kind_name(c.kind)) + " has no source-target pairs");
    }
    pairs = c.send_recv_pairs;
  }
  return resolve_device_pairs(group_mode(c), program.ints(pairs), program.num_replicas(),
                              program.num_partitions());
}

}  // namespace orrery::workload
