// Device groups by StableHLO's process-grid rules; device = replica * num_partitions + partition.
#include "workload/collectives.h"

#include <gtest/gtest.h>

namespace orrery::workload {
namespace {

DeviceGroups resolve(GroupMode mode, std::vector<std::int64_t> groups, std::uint32_t rows,
                     std::uint32_t columns, std::uint32_t replicas, std::uint32_t partitions) {
  auto result = resolve_device_groups(mode, groups, rows, columns, replicas, partitions);
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
  return result.ok() ? result.value() : DeviceGroups{};
}

// cross_replica([[0, 1]]) with 2 replicas x 2 partitions: for each partition p, [(0, p), (1, p)].
TEST(DeviceGroups, CrossReplica) {
  EXPECT_EQ(resolve(GroupMode::kCrossReplica, {0, 1}, 1, 2, 2, 2), (DeviceGroups{{0, 2}, {1, 3}}));
  EXPECT_EQ(resolve(GroupMode::kCrossReplica, {0, 2, 1, 3}, 2, 2, 4, 1), (DeviceGroups{{0, 2}, {1, 3}}));
}

// cross_partition([[0, 1]]): for each replica r, [(r, 0), (r, 1)].
TEST(DeviceGroups, CrossPartition) {
  EXPECT_EQ(resolve(GroupMode::kCrossPartition, {0, 1}, 1, 2, 2, 2), (DeviceGroups{{0, 1}, {2, 3}}));
}

// cross_replica_and_partition(groups): for each group g, [(r, p) for p in partitions for r in g].
TEST(DeviceGroups, CrossReplicaAndPartition) {
  EXPECT_EQ(resolve(GroupMode::kCrossReplicaAndPartition, {0, 1}, 2, 1, 2, 2),
            (DeviceGroups{{0, 1}, {2, 3}}));
  EXPECT_EQ(resolve(GroupMode::kCrossReplicaAndPartition, {0, 1}, 1, 2, 2, 2), (DeviceGroups{{0, 2, 1, 3}}));
}

// flattened_ids(groups): the ids are device ids.
TEST(DeviceGroups, FlattenedIds) {
  EXPECT_EQ(resolve(GroupMode::kFlattenedIds, {0, 3, 1, 2}, 2, 2, 2, 2), (DeviceGroups{{0, 3}, {1, 2}}));
}

TEST(DeviceGroups, EmptyGroupsMeanEveryIdAndPaddingIsDropped) {
  EXPECT_EQ(resolve(GroupMode::kCrossReplica, {}, 0, 0, 4, 1), (DeviceGroups{{0, 1, 2, 3}}));
  EXPECT_EQ(resolve(GroupMode::kFlattenedIds, {}, 0, 0, 2, 2), (DeviceGroups{{0, 1, 2, 3}}));
  EXPECT_EQ(resolve(GroupMode::kCrossReplica, {0, 1, 2, -1}, 2, 2, 3, 1), (DeviceGroups{{0, 1}, {2}}));
}

TEST(DeviceGroups, IdsOutsideTheDomainAreErrors) {
  const auto result =
      resolve_device_groups(GroupMode::kCrossReplica, std::vector<std::int64_t>{0, 4}, 1, 2, 4, 2);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("replica group id 4 is not a replica id"), std::string::npos)
      << result.error().message;
}

// collective_permute: pairs of replica ids copied for every partition (cross_replica), or of
// partition ids copied for every replica (cross_partition).
TEST(DevicePairs, CrossReplicaAndCrossPartition) {
  auto replica = resolve_device_pairs(GroupMode::kCrossReplica, std::vector<std::int64_t>{0, 1}, 2, 2);
  ASSERT_TRUE(replica.ok());
  EXPECT_EQ(replica.value(), (DevicePairs{{0, 2}, {1, 3}}));
  auto partition =
      resolve_device_pairs(GroupMode::kCrossPartition, std::vector<std::int64_t>{0, 1, 1, 0}, 2, 2);
  ASSERT_TRUE(partition.ok());
  EXPECT_EQ(partition.value(), (DevicePairs{{0, 1}, {1, 0}, {2, 3}, {3, 2}}));
  EXPECT_FALSE(resolve_device_pairs(GroupMode::kCrossPartition, std::vector<std::int64_t>{0, 2}, 1, 2).ok());
}

// StableHLO's choice of rule from the channel handle and use_global_device_ids.
TEST(GroupMode, FollowsChannelAndGlobalIds) {
  CollectiveAttributes c;
  c.kind = CollectiveKind::kAllReduce;
  EXPECT_EQ(group_mode(c), GroupMode::kCrossReplica);
  c.has_channel = true;
  c.channel_id = 0;
  EXPECT_EQ(group_mode(c), GroupMode::kCrossReplica);
  c.channel_id = 5;
  EXPECT_EQ(group_mode(c), GroupMode::kCrossReplicaAndPartition);
  c.use_global_device_ids = true;
  EXPECT_EQ(group_mode(c), GroupMode::kFlattenedIds);
  CollectiveAttributes permute;
  permute.kind = CollectiveKind::kCollectivePermute;
  EXPECT_EQ(group_mode(permute), GroupMode::kCrossReplica);
  permute.has_channel = true;
  permute.channel_id = 1;
  EXPECT_EQ(group_mode(permute), GroupMode::kCrossPartition);
  CollectiveAttributes all_to_all;
  all_to_all.kind = CollectiveKind::kAllToAll;
  all_to_all.has_channel = true;
  all_to_all.channel_id = 2;
  EXPECT_EQ(group_mode(all_to_all), GroupMode::kCrossPartition);
}

TEST(Reduction, FromBodyOp) {
  EXPECT_EQ(reduction_of(OpKind::kAdd), ReductionKind::kSum);
  EXPECT_EQ(reduction_of(OpKind::kMaximum), ReductionKind::kMax);
  EXPECT_EQ(reduction_of(OpKind::kDivide), ReductionKind::kOther);
}

}  // namespace
}  // namespace orrery::workload
