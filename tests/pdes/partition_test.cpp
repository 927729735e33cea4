#include <gtest/gtest.h>

#include "pdes/partition.h"
#include "util/error.h"

namespace orrery::pdes {
namespace {

TEST(Partition, BlockIsContiguousAndBalanced) {
  const PartitionMap map = BlockPartitioner().assign(10, 3);
  EXPECT_EQ(map.lps_of(0), (std::vector<LpId>{0, 1, 2, 3}));
  EXPECT_EQ(map.lps_of(1), (std::vector<LpId>{4, 5, 6}));
  EXPECT_EQ(map.lps_of(2), (std::vector<LpId>{7, 8, 9}));
}

TEST(Partition, RoundRobinDealsLps) {
  const PartitionMap map = RoundRobinPartitioner().assign(7, 3);
  for (LpId lp = 0; lp < 7; ++lp) {
    EXPECT_EQ(map.owner(lp), lp % 3);
  }
}

TEST(Partition, MoreProcessesThanLpsLeavesSomeEmpty) {
  const PartitionMap map = BlockPartitioner().assign(2, 4);
  EXPECT_EQ(map.lps_of(0).size() + map.lps_of(1).size(), 2U);
  EXPECT_TRUE(map.lps_of(3).empty());
}

TEST(Partition, UnknownPartitionerIsAConfigError) {
  EXPECT_THROW((void)make_basic_partitioner("metis"), OrreryError);
  EXPECT_EQ(make_basic_partitioner("round-robin")->name(), "round-robin");
}

TEST(Channels, LookaheadIsTheMinimumCrossingLatency) {
  // LPs 0-3 on process 0, 4-7 on process 1 (block).
  const PartitionMap map = BlockPartitioner().assign(8, 2);
  ChannelTable table;
  table.add(LpRange{0, 4}, LpRange{0, 4}, SimTime::from_ps(1), "inside process 0");  // does not cross
  table.add(LpRange::single(3), LpRange::single(4), SimTime::from_ps(500), "3->4");
  table.add(LpRange::single(5), LpRange::single(2), SimTime::from_ps(200), "5->2");
  const CrossingAnalysis analysis = analyse_crossings(table, map);
  EXPECT_EQ(analysis.lookahead.ps(), 200U);
  ASSERT_NE(analysis.lookahead_channel, nullptr);
  EXPECT_EQ(analysis.lookahead_channel->name, "5->2");
  EXPECT_EQ(analysis.cut_channels, 2U);
  EXPECT_EQ(analysis.neighbours[0], (std::vector<ProcessId>{1}));
  EXPECT_EQ(analysis.neighbours[1], (std::vector<ProcessId>{0}));
}

TEST(Channels, NoCrossingMeansInfiniteLookahead) {
  const PartitionMap map = BlockPartitioner().assign(8, 1);
  ChannelTable table;
  table.add(LpRange{0, 8}, LpRange{0, 8}, SimTime::from_ps(10), "all");
  const CrossingAnalysis analysis = analyse_crossings(table, map);
  EXPECT_TRUE(analysis.lookahead.is_max());
  EXPECT_TRUE(analysis.neighbours[0].empty());
}

TEST(Channels, NeighboursAreSymmetricAndOnlyWhereChannelsCross) {
  const PartitionMap map = BlockPartitioner().assign(8, 4);  // 2 LPs per process
  ChannelTable table;
  table.add(LpRange::single(0), LpRange::single(7), SimTime::from_ps(10), "0->7");
  const CrossingAnalysis analysis = analyse_crossings(table, map);
  EXPECT_EQ(analysis.neighbours[0], (std::vector<ProcessId>{3}));
  EXPECT_EQ(analysis.neighbours[3], (std::vector<ProcessId>{0}));
  EXPECT_TRUE(analysis.neighbours[1].empty());
  EXPECT_TRUE(analysis.neighbours[2].empty());
}

TEST(Channels, ZeroLatencyCrossingIsAModelError) {
  const PartitionMap map = BlockPartitioner().assign(4, 2);
  ChannelTable table;
  table.add(LpRange::single(0), LpRange::single(3), SimTime::zero(), "instant");
  try {
    (void)analyse_crossings(table, map);
    FAIL() << "expected an error";
  } catch (const OrreryError& error) {
    EXPECT_EQ(error.code(), ErrorCode::kModel);
    EXPECT_NE(std::string(error.what()).find("'instant'"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("zero minimum latency"), std::string::npos);
  }
}

TEST(Partition, ReportsBalanceAndCut) {
  const PartitionMap map = BlockPartitioner().assign(10, 3);
  ChannelTable table;
  table.add(LpRange::single(0), LpRange::single(9), SimTime::from_ps(10), "cut");
  table.add(LpRange::single(0), LpRange::single(1), SimTime::from_ps(10), "local");
  const PartitionReport report = report_partition("block", map, table);
  EXPECT_EQ(report.lps_per_process, (std::vector<LpId>{4, 3, 3}));
  EXPECT_NEAR(report.imbalance, 4.0 / (10.0 / 3.0), 1e-12);
  EXPECT_EQ(report.channels, 2U);
  EXPECT_EQ(report.cut_channels, 1U);
  EXPECT_NE(report.describe().find("4/3/3"), std::string::npos);
}

}  // namespace
}  // namespace orrery::pdes
