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

TEST(Selection, AutoRule) {
  const SelectionContext plain{};
  const SelectionContext nvls{true};
  EXPECT_EQ(select_algorithm(CollectiveKind::kAllReduce, std::nullopt, nodes_of(1, 8), 1 << 26, plain), Algorithm::kRing);
  EXPECT_EQ(select_algorithm(CollectiveKind::kAllReduce, std::nullopt, nodes_of(1, 8), 1 << 26, nvls), Algorithm::kInSwitch);
  EXPECT_EQ(select_algorithm(CollectiveKind::kAllReduce, std::nullopt, nodes_of(4, 8), 1 << 26, plain),
            Algorithm::kHierarchical);
  EXPECT_EQ(select_algorithm(CollectiveKind::kAllReduce, std::nullopt, nodes_of(4, 8), 1 << 16, plain), Algorithm::kTree);
  EXPECT_EQ(select_algorithm(CollectiveKind::kAllReduce, std::nullopt, nodes_of(8, 1), 1 << 26, plain), Algorithm::kRing);
  EXPECT_EQ(select_algorithm(CollectiveKind::kAllGather, std::nullopt, nodes_of(4, 8), 1 << 26, plain),
            Algorithm::kHierarchical);
  EXPECT_EQ(select_algorithm(CollectiveKind::kReduceScatter, std::nullopt, nodes_of(1, 4), 1 << 26, plain), Algorithm::kRing);
  EXPECT_EQ(select_algorithm(CollectiveKind::kAllToAll, Algorithm::kRing, nodes_of(2, 4), 1 << 26, plain), Algorithm::kDirect);
  EXPECT_EQ(select_algorithm(CollectiveKind::kBroadcast, std::nullopt, nodes_of(2, 4), 1 << 26, plain), Algorithm::kRing);
}

TEST(Selection, ForcedAlgorithmsAreCheckedAgainstTheGroup) {
  const SelectionContext plain{};
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
  EXPECT_THROW((void)select_algorithm(CollectiveKind::kAllReduce, Algorithm::kInSwitch, nodes_of(1, 4), 1, plain),
               OrreryError);
  EXPECT_THROW((void)select_algorithm(CollectiveKind::kAllReduce, Algorithm::kInSwitch, nodes_of(2, 4), 1,
                                      SelectionContext{true}),
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
}

}  // namespace
}  // namespace orrery::system
