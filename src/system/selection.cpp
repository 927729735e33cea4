#include "system/selection.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace orrery::system {
namespace {

std::uint32_t node_count(const GroupShape& shape) {
  if (shape.node_of_member.empty()) {
    return shape.members;
  }
  return static_cast<std::uint32_t>(std::set<std::uint32_t>(shape.node_of_member.begin(), shape.node_of_member.end()).size());
}

// The algorithms a kind has for some group shape (plan_supported decides for a given shape).
std::vector<Algorithm> algorithms_of(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kPermute:
    case CollectiveKind::kAllToAll: return {Algorithm::kDirect};
    case CollectiveKind::kBroadcast: return {Algorithm::kRing, Algorithm::kTree, Algorithm::kDirect};
    case CollectiveKind::kAllReduce:
      return {Algorithm::kRing,   Algorithm::kTree,         Algorithm::kHalvingDoubling,
              Algorithm::kDirect, Algorithm::kHierarchical, Algorithm::kInSwitch};
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      return {Algorithm::kRing, Algorithm::kHalvingDoubling, Algorithm::kDirect, Algorithm::kHierarchical};
  }
  return {};
}

double ring_time(std::uint32_t members, double bytes, const MessageCost& cost) {
  const double p = members;
  return 2 * (p - 1) * cost.alpha_s + 2 * (p - 1) / p * bytes * cost.beta_s_per_byte;
}

}  // namespace

std::optional<double> estimate_all_reduce(Algorithm algorithm, const GroupShape& shape, std::uint64_t bytes,
                                          const SelectionContext& context) {
  if (!plan_supported(CollectiveKind::kAllReduce, algorithm, shape)) {
    return std::nullopt;
  }
  const double n = static_cast<double>(bytes);
  switch (algorithm) {
    case Algorithm::kRing:
      return ring_time(shape.members, n, context.neighbour);
    case Algorithm::kTree: {
      const double depth = std::floor(std::log2(static_cast<double>(shape.members)));  // heap-layout tree
      return 2 * depth * context.far.alpha_s + 2 * n * context.far.beta_s_per_byte;
    }
    case Algorithm::kHierarchical: {
      const std::uint32_t nodes = node_count(shape);
      const std::uint32_t per_node = shape.members / nodes;
      return ring_time(per_node, n, context.intra) + ring_time(nodes, n / per_node, context.neighbour);
    }
    default:
      return std::nullopt;
  }
}

Algorithm select_algorithm(CollectiveKind kind, std::optional<Algorithm> forced, const GroupShape& shape,
                           std::uint64_t bytes, const SelectionContext& context) {
  const bool direct_only = kind == CollectiveKind::kPermute || kind == CollectiveKind::kAllToAll;
  if (direct_only && !forced) {
    return Algorithm::kDirect;  // the only decomposition of these
  }
  if (forced) {
    if (direct_only && *forced != Algorithm::kDirect) {
      throw OrreryError(ErrorCode::kConfig,
                        fmt::format("system.collectives.{} = {} cannot serve a group of {} members: {} is "
                                    "decomposed only as direct sends (use auto or direct)",
                                    collective_kind_name(kind), algorithm_name(*forced), shape.members,
                                    collective_kind_name(kind)));
    }
    const std::vector<Algorithm> known = algorithms_of(kind);
    if (std::find(known.begin(), known.end(), *forced) == known.end()) {
      std::vector<std::string_view> names;
      for (const Algorithm algorithm : known) {
        names.push_back(algorithm_name(algorithm));
      }
      throw OrreryError(ErrorCode::kConfig,
                        fmt::format("system.collectives.{} = {}: {} has no {} algorithm (it has {})",
                                    collective_kind_name(kind), algorithm_name(*forced), collective_kind_name(kind),
                                    algorithm_name(*forced), fmt::join(names, ", ")));
    }
    if (*forced == Algorithm::kInSwitch && !context.in_switch_reduction) {
      throw OrreryError(ErrorCode::kConfig,
                        fmt::format("system.collectives.{} = in_switch cannot serve a group of {} members: "
                                    "system.scale_up.in_switch_reduction is false",
                                    collective_kind_name(kind), shape.members));
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
    // The fastest estimate wins; ties go to the earlier candidate.
    Algorithm best = Algorithm::kRing;
    double best_time = *estimate_all_reduce(Algorithm::kRing, shape, bytes, context);
    for (const Algorithm candidate : {Algorithm::kTree, Algorithm::kHierarchical}) {
      if (candidate == Algorithm::kHierarchical && !regular_hierarchy) {
        continue;
      }
      const std::optional<double> time = estimate_all_reduce(candidate, shape, bytes, context);
      if (time && *time < best_time) {
        best = candidate;
        best_time = *time;
      }
    }
    return best;
  }
  return regular_hierarchy ? Algorithm::kHierarchical : Algorithm::kRing;
}

}  // namespace orrery::system
