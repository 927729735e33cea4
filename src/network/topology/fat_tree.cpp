#include "network/topology/fat_tree.h"

#include <cmath>
#include <fmt/format.h>


namespace orrery::network {
FatTree::FatTree(const config::FatTreeTopologyConfig& config)
    : levels_(config.levels),
      children_(config.levels + 1, 0),
      parents_(config.levels + 1, 0),
      hosts_under_(config.levels + 1, 1),
      replicas_(config.levels + 1, 1),
      tier_offset_(config.levels + 2, 0),
      bandwidth_(BytesPerSecond::from_gigabytes(config.link_gbps)),
      latency_(SimTime::from_nanoseconds(config.latency_ns)) {
  if (levels_ < 1) {
    topology_error("levels", "a fat-tree needs at least one tier");
  }
  children_[1] = config.hosts_per_leaf == 0 ? config.k : config.hosts_per_leaf;
  parents_[1] = 1;
  for (std::uint32_t tier = 2; tier <= levels_; ++tier) {
    children_[tier] = config.k;
  }
  for (std::uint32_t tier = 1; tier < levels_; ++tier) {
    const double ratio = tier - 1 < config.oversubscription.size() ? config.oversubscription[tier - 1] : 1.0;
    const double up = children_[tier] / ratio;
    if (!(up >= 1.0) || std::floor(up) != up) {
      topology_error(fmt::format("oversubscription[{}]", tier - 1),
          fmt::format("{} children / ratio {} is not a whole number of up-links", children_[tier], ratio));
    }
    parents_[tier + 1] = static_cast<std::uint32_t>(up);
  }
  std::uint64_t hosts = 1;
  std::uint64_t replicas = 1;
  for (std::uint32_t tier = 1; tier <= levels_; ++tier) {
    hosts *= children_[tier];
    replicas *= parents_[tier];
    if (hosts > (1U << 24) || replicas > (1U << 24)) {
      topology_error("k", fmt::format("a fat-tree with more than 2^24 hosts or switches per tier is not supported"));
    }
    hosts_under_[tier] = static_cast<std::uint32_t>(hosts);
    replicas_[tier] = static_cast<std::uint32_t>(replicas);
  }
  for (std::uint32_t tier = 1; tier <= levels_; ++tier) {
    tier_offset_[tier + 1] = tier_offset_[tier] + switches(tier);
  }
}

std::string FatTree::describe() const {
  std::string tiers;
  for (std::uint32_t tier = 1; tier <= levels_; ++tier) {
    tiers += fmt::format("{}tier {}: {} switches, {} down / {} up", tier == 1 ? "" : "; ", tier, switches(tier),
                         children(tier), parents(tier));
  }
  return fmt::format("fat-tree XGFT, {} hosts per plane ({})", hosts(), tiers);
}

bool FatTree::supports(config::RoutingAlgorithm algorithm) const {
  using config::RoutingAlgorithm;
  return algorithm == RoutingAlgorithm::kMinimal || algorithm == RoutingAlgorithm::kDModK ||
         algorithm == RoutingAlgorithm::kEcmp;
}

std::uint32_t FatTree::common_tier(std::uint32_t a, std::uint32_t b) const {
  std::uint32_t tier = 1;
  while (a / hosts_under(tier) != b / hosts_under(tier)) {
    ++tier;
  }
  return tier;
}

void FatTree::build_plane(Graph& graph, std::uint16_t plane) {
  for (std::uint32_t tier = 1; tier <= levels_; ++tier) {
    for (std::uint32_t subtree = 0; subtree < hosts() / hosts_under(tier); ++subtree) {
      // A pod is the subtree under tier levels-1; the top tier belongs to no pod.
      const std::uint32_t unit =
          tier == levels_ && levels_ > 1 ? kSharedUnit : subtree * hosts_under(tier) / pod_hosts();
      for (std::uint32_t replica = 0; replica < replicas(tier); ++replica) {
        graph.add_vertex(router(plane, unit, tier));
      }
    }
  }
  for (std::uint32_t host = 0; host < hosts(); ++host) {
    graph.add_cable(host_vertex(plane, host), leaf_of(plane, host), bandwidth_, latency_, LinkKind::kHost);
  }
  for (std::uint32_t tier = 1; tier < levels_; ++tier) {
    for (std::uint32_t subtree = 0; subtree < hosts() / hosts_under(tier); ++subtree) {
      for (std::uint32_t replica = 0; replica < replicas(tier); ++replica) {
        for (std::uint32_t u = 0; u < parents(tier); ++u) {
          graph.add_cable(switch_vertex(plane, tier, subtree, replica), parent_of(plane, tier, subtree, replica, u),
                          bandwidth_, latency_, LinkKind::kFabric);
        }
      }
    }
  }
}

}  // namespace orrery::network
