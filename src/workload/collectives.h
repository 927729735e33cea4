// Device groups of collectives, resolved by StableHLO's process-grid rules
// (https://openxla.org/stablehlo/spec, "Collective ops"): a process is (replica_id, partition_id)
// and its device id is replica_id * num_partitions + partition_id, local to the program.
//
//   cross_replica(groups)               for each partition p, for each group g: [(r, p) for r in g]
//   cross_partition(groups)             for each replica r, for each group g: [(r, p) for p in g]
//   cross_replica_and_partition(groups) for each group g: [(r, p) for p in partitions for r in g]
//   flattened_ids(groups)               for each group g: [(i / P, i % P) for i in g]
//
// Which one applies depends on the op, its channel handle and use_global_device_ids:
//   all_reduce, all_gather, reduce_scatter, collective_reduce:
//     channel_id <= 0                         -> cross_replica
//     channel_id > 0, !use_global_device_ids  -> cross_replica_and_partition
//     channel_id > 0, use_global_device_ids   -> flattened_ids
//   all_to_all, collective_permute, collective_broadcast, send, recv:
//     channel_id <= 0 -> cross_replica;  channel_id > 0 -> cross_partition
// An empty replica_groups attribute means one group of every id of the mode's domain.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "util/result.h"
#include "workload/program.h"

namespace orrery::workload {

enum class GroupMode : std::uint8_t {
  kCrossReplica,
  kCrossPartition,
  kCrossReplicaAndPartition,
  kFlattenedIds
};

using DeviceId = std::uint32_t;
using DeviceGroups = std::vector<std::vector<DeviceId>>;
using DevicePairs = std::vector<std::pair<DeviceId, DeviceId>>;

// Collectives whose groups join the ranks of several programs (Chakra jobs whose ranks run
// different graphs): per op, its groups as global ranks in group order (shared by the ops, and
// the programs, that run on the same groups). The op's own replica groups then hold only the
// program's devices of each group; the system layer reads these instead (system/program_model.h)
// and matches the op with the other programs' ops on the same groups.
using RankGroups = std::vector<std::vector<std::uint32_t>>;
using JointGroups = std::unordered_map<OpId, std::shared_ptr<const RankGroups>>;

std::string_view collective_kind_name(CollectiveKind kind);
std::string_view reduction_kind_name(ReductionKind kind);
std::string_view group_mode_name(GroupMode mode);

// The rule StableHLO applies to this collective (see the file comment).
GroupMode group_mode(const CollectiveAttributes& collective);

// Resolves a dense group matrix (row-major, `group_count` rows of `group_size` ids, -1 entries are
// padding) to device ids. Errors for ids outside the mode's domain, and for tables of more than
// 2^26 device ids.
Result<DeviceGroups> resolve_device_groups(GroupMode mode, std::span<const std::int64_t> groups,
                                           std::uint32_t group_count, std::uint32_t group_size,
                                           std::uint32_t num_replicas, std::uint32_t num_partitions);

// Resolves (source, target) pairs of replica or partition ids to device pairs: every partition's
// (cross_replica) or every replica's (cross_partition) copy of each pair.
Result<DevicePairs> resolve_device_pairs(GroupMode mode, std::span<const std::int64_t> flattened_pairs,
                                         std::uint32_t num_replicas, std::uint32_t num_partitions);

// The device groups of a collective op of `program` (dense or mesh-axes replica groups), using
// the program's num_replicas and num_partitions.
Result<DeviceGroups> device_groups(const Program& program, const Op& op);
// The number of devices in the collective's first group, without listing the groups.
Result<std::uint32_t> device_group_size(const Program& program, const Op& op);
// The device pairs of collective_permute (source_target_pairs) and of send/recv
// (source_target_pairs or XLA's _xla_send_recv_source_target_pairs).
Result<DevicePairs> device_pairs(const Program& program, const Op& op);

// What is wrong with a collective's shapes and pairs under StableHLO's constraints, or "" when
// nothing is: an all_gather's result is its operand times the group size along all_gather_dim, a
// reduce_scatter's operand divides by the group size along scatter_dimension, an all_to_all's
// split_count is the group size and divides its split dimension, and a collective_permute names
// each source and each target once. Dimensions that are not static are not checked. The simulator
// times collectives from these sizes, so an inconsistent one would be a silently wrong time.
std::string collective_shape_problem(const Program& program, const Op& op);

// The reduction a body op computes (kAdd -> kSum...); kOther for anything else.
ReductionKind reduction_of(OpKind body);

}  // namespace orrery::workload
