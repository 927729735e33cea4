#include <fmt/format.h>
#include <gtest/gtest.h>

#include "system/rank_set.h"
#include "system/selection.h"
#include "util/error.h"

namespace orrery::system {
namespace {

GroupShape nodes_of(std::uint32_t nodes, std::uint32_t per_node) {
  GroupShape shape{nodes * per_node, {}, {}};
  for (std::uint32_t m = 0; m < shape.members; ++m) {
    shape.node_of_member.push_back(m / per_node);
  }
  return shape;
}

// DGX-like nodes: 1.5 us and 450 GB/s between GPUs of a node, 1.5 us and 50 GB/s (one NIC per
// GPU) to the next node, 1.8 us and 50 GB/s across the fabric.
SelectionContext dgx_like(bool in_switch = false) {
  return SelectionContext{in_switch, {1.5e-6, 1 / 450e9}, {1.5e-6, 1 / 50e9}, {1.8e-6, 1 / 50e9}};
}

TEST(Selection, AutoRule) {
  const SelectionContext plain = dgx_like();
  const SelectionContext nvls = dgx_like(true);
  EXPECT_EQ(select_algorithm(CollectiveKind::kAllReduce, std::nullopt, nodes_of(1, 8), 1 << 26, plain), Algorithm::kRing);
  EXPECT_EQ(select_algorithm(CollectiveKind::kAllReduce, std::nullopt, nodes_of(1, 8), 1 << 26, nvls), Algorithm::kInSwitch);
  EXPECT_EQ(select_algorithm(CollectiveKind::kAllReduce, std::nullopt, nodes_of(4, 8), 1 << 26, plain),
            Algorithm::kHierarchical);
  EXPECT_EQ(select_algorithm(CollectiveKind::kAllReduce, std::nullopt, nodes_of(4, 8), 1 << 16, plain), Algorithm::kTree);
  EXPECT_EQ(select_algorithm(CollectiveKind::kAllReduce, std::nullopt, nodes_of(8, 1), 1 << 26, plain), Algorithm::kRing);
  EXPECT_EQ(select_algorithm(CollectiveKind::kAllGather, std::nullopt, nodes_of(4, 8), 1 << 26, plain),
            Algorithm::kHierarchical);
  EXPECT_EQ(select_algorithm(CollectiveKind::kReduceScatter, std::nullopt, nodes_of(1, 4), 1 << 26, plain), Algorithm::kRing);
  EXPECT_EQ(select_algorithm(CollectiveKind::kAllToAll, std::nullopt, nodes_of(2, 4), 1 << 26, plain), Algorithm::kDirect);
  EXPECT_EQ(select_algorithm(CollectiveKind::kBroadcast, std::nullopt, nodes_of(2, 4), 1 << 26, plain), Algorithm::kRing);
}

TEST(Selection, LargeGroupsLeaveTheHierarchicalRingForTheTree) {
  // 30 MiB of gradients: on 128 nodes the inter-node ring of the hierarchical all-reduce costs
  // 254 alphas and carries n/8, so it wins; on 4,096 nodes its 8,190 alphas (12 ms) lose to the
  // tree's 30 alphas and 2n beta (1.3 ms), as NCCL moves to trees at scale.
  const SelectionContext context = dgx_like();
  const std::uint64_t bytes = 30ULL << 20;
  EXPECT_EQ(select_algorithm(CollectiveKind::kAllReduce, std::nullopt, nodes_of(128, 8), bytes, context),
            Algorithm::kHierarchical);
  EXPECT_EQ(select_algorithm(CollectiveKind::kAllReduce, std::nullopt, nodes_of(4096, 8), bytes, context),
            Algorithm::kTree);
}

TEST(Selection, EstimatesFollowTheClosedForms) {
  const SelectionContext context = dgx_like();
  const GroupShape shape = nodes_of(4, 8);  // p = 32, p1 = 8, p2 = 4
  const double n = 1 << 24;
  const double ring = 2 * 31 * 1.5e-6 + 2 * 31.0 / 32 * n / 50e9;
  const double tree = 2 * 5 * 1.8e-6 + 2 * n / 50e9;
  const double hierarchical =
      2 * 7 * 1.5e-6 + 2 * 7.0 / 8 * n / 450e9 + 2 * 3 * 1.5e-6 + 2 * 3.0 / 4 * (n / 8) / 50e9;
  EXPECT_NEAR(*estimate_all_reduce(Algorithm::kRing, shape, 1 << 24, context), ring, 1e-12);
  EXPECT_NEAR(*estimate_all_reduce(Algorithm::kTree, shape, 1 << 24, context), tree, 1e-12);
  EXPECT_NEAR(*estimate_all_reduce(Algorithm::kHierarchical, shape, 1 << 24, context), hierarchical, 1e-12);
  GroupShape uneven = nodes_of(2, 4);
  uneven.node_of_member.back() = 2;  // 4 + 3 + 1 members
  EXPECT_FALSE(estimate_all_reduce(Algorithm::kHierarchical, uneven, 1 << 24, context).has_value());
  EXPECT_EQ(select_algorithm(CollectiveKind::kAllReduce, std::nullopt, uneven, 1 << 26, context), Algorithm::kRing);
}

TEST(Selection, ForcedAlgorithmsAreCheckedAgainstTheGroup) {
  const SelectionContext plain = dgx_like();
  EXPECT_EQ(select_algorithm(CollectiveKind::kAllReduce, Algorithm::kDirect, nodes_of(2, 4), 1 << 20, plain),
            Algorithm::kDirect);
  try {
    (void)select_algorithm(CollectiveKind::kReduceScatter, Algorithm::kHalvingDoubling, nodes_of(1, 6), 1 << 20, plain);
    FAIL();
  } catch (const OrreryError& error) {
    EXPECT_NE(std::string(error.what()).find("system.collectives.reduce_scatter = halving_doubling cannot serve a group "
                                             "of 6 members (halving_doubling needs a power of two)"),
              std::string::npos)
        << error.what();
  }
  // All-to-all has one decomposition: forcing another is an error, not silently direct.
  EXPECT_EQ(select_algorithm(CollectiveKind::kAllToAll, std::nullopt, nodes_of(1, 4), 1 << 20, plain), Algorithm::kDirect);
  EXPECT_EQ(select_algorithm(CollectiveKind::kAllToAll, Algorithm::kDirect, nodes_of(1, 4), 1 << 20, plain),
            Algorithm::kDirect);
  for (const Algorithm other : {Algorithm::kRing, Algorithm::kTree, Algorithm::kHalvingDoubling, Algorithm::kHierarchical,
                                Algorithm::kInSwitch}) {
    try {
      (void)select_algorithm(CollectiveKind::kAllToAll, other, nodes_of(1, 4), 1 << 20, dgx_like(true));
      ADD_FAILURE() << algorithm_name(other);
    } catch (const OrreryError& error) {
      EXPECT_NE(std::string(error.what()).find(fmt::format("system.collectives.all_to_all = {} cannot serve a group of "
                                                           "4 members: all_to_all is decomposed only as direct sends",
                                                           algorithm_name(other))),
                std::string::npos)
          << error.what();
    }
  }
  // An algorithm the kind does not have is named as such, whatever the group (4 members on 2 regular
  // nodes: a power of two and a regular hierarchy, so neither shape hint would be true).
  const std::vector<std::pair<CollectiveKind, Algorithm>> missing{
      {CollectiveKind::kBroadcast, Algorithm::kHalvingDoubling},
      {CollectiveKind::kBroadcast, Algorithm::kHierarchical},
      {CollectiveKind::kAllGather, Algorithm::kTree},
      {CollectiveKind::kAllGather, Algorithm::kInSwitch}};
  for (const auto& [kind, algorithm] : missing) {
    try {
      (void)select_algorithm(kind, algorithm, nodes_of(2, 2), 1 << 20, plain);
      ADD_FAILURE() << algorithm_name(algorithm);
    } catch (const OrreryError& error) {
      EXPECT_NE(std::string(error.what()).find(fmt::format("{} has no {} algorithm (it has ", collective_kind_name(kind),
                                                           algorithm_name(algorithm))),
                std::string::npos)
          << error.what();
      EXPECT_EQ(std::string(error.what()).find("needs"), std::string::npos) << error.what();
      EXPECT_EQ(std::string(error.what()).find("in_switch_reduction"), std::string::npos) << error.what();
    }
  }
  EXPECT_THROW((void)select_algorithm(CollectiveKind::kAllReduce, Algorithm::kInSwitch, nodes_of(1, 4), 1, plain),
               OrreryError);
  EXPECT_THROW((void)select_algorithm(CollectiveKind::kAllReduce, Algorithm::kInSwitch, nodes_of(2, 4), 1,
                                      dgx_like(true)),
               OrreryError);
}

TEST(RankSet, ParsesAllRangesAndLists) {
  EXPECT_EQ(parse_rank_set("all", 4, "x"), (std::vector<std::uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(parse_rank_set("0-3,8-9, 5", 0, "x"), (std::vector<std::uint32_t>{0, 1, 2, 3, 5, 8, 9}));
  EXPECT_EQ(format_rank_set({0, 1, 2, 3, 5, 8, 9}), "0-3,5,8-9");
}

TEST(RankSet, ErrorsNameThePlace) {
  auto message = [](const std::string& text) {
    try {
      (void)parse_rank_set(text, 4, "workload.programs[1].ranks");
    } catch (const OrreryError& error) {
      return std::string(error.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message("0-x").find("workload.programs[1].ranks: 'x' in rank set '0-x' is not a rank number"),
            std::string::npos);
  EXPECT_NE(message("5-2").find("range '5-2' in '5-2' runs backwards"), std::string::npos);
  EXPECT_NE(message("1,1").find("rank 1 appears twice"), std::string::npos);
  EXPECT_NE(message("").find("empty rank set"), std::string::npos);
  // The largest ids: a clear error, not a wrap-around (4294967295 + 1 = 0) or a 17 GB allocation.
  EXPECT_NE(message("4294967295").find("rank 4294967295 in rank set '4294967295' is out of range (ranks are 0 to "
                                       "67108863)"),
            std::string::npos);
  EXPECT_NE(message("4294967290-4294967295").find("rank 4294967290 in rank set"), std::string::npos);
  EXPECT_NE(message("67108864").find("out of range"), std::string::npos);
  EXPECT_EQ(parse_rank_set("67108863", 0, "x"), (std::vector<std::uint32_t>{67108863}));
}

}  // namespace
}  // namespace orrery::system
