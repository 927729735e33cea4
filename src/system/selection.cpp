#include "system/selection.h"

#include <fmt/format.h>
#include <set>

#include "util/error.h"

namespace orrery::system {
namespace {

std::uint32_t node_count(const GroupShape& shape) {
  if (shape.node_of_member.empty()) {
    return shape.members;
  }
  return static_cast<std::uint32_t>(std::set<std::uint32_t>(shape.node_of_member.begin(), shape.node_of_member.end()).size());
}

}  // namespace

Algorithm select_algorithm(CollectiveKind kind, std::optional<Algorithm> forced, const GroupShape& shape,
                           std::uint64_t bytes, const SelectionContext& context) {
  if (kind == CollectiveKind::kPermute || kind == CollectiveKind::kAllToAll) {
    return Algorithm::kDirect;  // the only decomposition of these
  }
  if (forced) {
    if (*forced == Algorithm::kInSwitch && !context.in_switch_reduction) {
      throw OrreryError(ErrorCode::kConfig,
                        fmt::format("{} is forced to in_switch but system.scale_up.in_switch_reduction is false",
                                    collective_kind_name(kind)));
    }
    if (*forced == Algorithm::kInSwitch && node_count(shape) > 1) {
      throw OrreryError(ErrorCode::kConfig,
                        fmt::format("{} over {} members spans {} nodes; in_switch reduction works inside one "
                                    "scale-up domain",
                                    collective_kind_name(kind), shape.members, node_count(shape)));
    }
    if (!plan_supported(kind, *forced, shape)) {
      throw OrreryError(ErrorCode::kConfig,
                        fmt::format("system.collectives.{} = {} cannot serve a group of {} members{}",
                                    collective_kind_name(kind), algorithm_name(*forced), shape.members,
                                    *forced == Algorithm::kHalvingDoubling ? " (halving_doubling needs a power of two)"
                                    : *forced == Algorithm::kHierarchical
                                        ? " (hierarchical needs the same number of members on every node)"
                                        : ""));
    }
    return *forced;
  }
  if (kind == CollectiveKind::kBroadcast) {
    return Algorithm::kRing;
  }
  const std::uint32_t nodes = node_count(shape);
  const bool regular_hierarchy = nodes > 1 && nodes < shape.members &&
                                 plan_supported(kind, Algorithm::kHierarchical, shape);
  if (kind == CollectiveKind::kAllReduce) {
    if (nodes == 1) {
      return context.in_switch_reduction ? Algorithm::kInSwitch : Algorithm::kRing;
    }
    if (shape.members >= kTreeMinMembers && bytes <= kTreeMaxBytes) {
      return Algorithm::kTree;
    }
    return regular_hierarchy ? Algorithm::kHierarchical : Algorithm::kRing;
  }
  return regular_hierarchy ? Algorithm::kHierarchical : Algorithm::kRing;
}

}  // namespace orrery::system
