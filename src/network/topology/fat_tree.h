// Fat-trees as extended generalised fat-trees, XGFT(n; m_1..m_n; w_1..w_n) (Öhring, Ibel, Das,
// Kumar, "On generalized fat trees", IPPS 1995): a tier-l switch has m_l children and w_{l+1}
// parents; w_1 = 1 (one leaf per host). The k-ary n-tree (Petrini, Vanneschi 1997) is m = w = k
// above tier 1; tapering divides w by the oversubscription of the tier below.
//
// Index arithmetic: M_l = m_1 ... m_l hosts under a tier-l subtree, W_l = w_1 ... w_l switches per
// subtree at tier l. A tier-l switch is (subtree s, replica r) with s < H / M_l, r < W_l; its
// parents are (s / m_{l+1}, r + W_l * u) for u < w_{l+1}; host h hangs off leaf (h / m_1, 0).
#pragma once

#include "network/topology/fabric.h"

namespace orrery::network {

class FatTree final : public Fabric {
 public:
  // Throws OrreryError(kConfig) naming the bad key.
  explicit FatTree(const config::FatTreeTopologyConfig& config);

  [[nodiscard]] FabricKind kind() const override { return FabricKind::kFatTree; }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::uint32_t hosts() const override { return hosts_under(levels_); }
  [[nodiscard]] bool supports(config::RoutingAlgorithm algorithm) const override;
  [[nodiscard]] std::uint32_t num_units() const override { return hosts() / pod_hosts(); }
  [[nodiscard]] std::uint32_t unit_of_host(std::uint32_t host) const override { return host / pod_hosts(); }

  [[nodiscard]] std::uint32_t levels() const { return levels_; }
  // m_l: children of a tier-l switch (hosts for l = 1).
  [[nodiscard]] std::uint32_t children(std::uint32_t tier) const { return children_[tier]; }
  // w_{l+1}: parents of a tier-l switch (0 at the top).
  [[nodiscard]] std::uint32_t parents(std::uint32_t tier) const { return tier < levels_ ? parents_[tier + 1] : 0; }
  // M_l and W_l.
  [[nodiscard]] std::uint32_t hosts_under(std::uint32_t tier) const { return hosts_under_[tier]; }
  [[nodiscard]] std::uint32_t replicas(std::uint32_t tier) const { return replicas_[tier]; }
  [[nodiscard]] std::uint32_t switches(std::uint32_t tier) const { return hosts() / hosts_under(tier) * replicas(tier); }
  [[nodiscard]] std::uint32_t radix(std::uint32_t tier) const { return children(tier) + parents(tier); }
  // Hosts of a pod: the subtree under tier levels-1 (the whole leaf for a one-tier tree).
  [[nodiscard]] std::uint32_t pod_hosts() const { return hosts_under(levels_ > 1 ? levels_ - 1 : 1); }
  // The lowest tier whose subtree holds both hosts (their lowest common ancestors).
  [[nodiscard]] std::uint32_t common_tier(std::uint32_t a, std::uint32_t b) const;

  [[nodiscard]] VertexId switch_vertex(std::uint16_t plane, std::uint32_t tier, std::uint32_t subtree,
                                       std::uint32_t replica) const {
    return plane_base(plane) + tier_offset_[tier] + subtree * replicas(tier) + replica;
  }
  [[nodiscard]] VertexId leaf_of(std::uint16_t plane, std::uint32_t host) const {
    return switch_vertex(plane, 1, host / children(1), 0);
  }
  // The u-th parent of switch (tier, subtree, replica).
  [[nodiscard]] VertexId parent_of(std::uint16_t plane, std::uint32_t tier, std::uint32_t subtree,
                                   std::uint32_t replica, std::uint32_t u) const {
    return switch_vertex(plane, tier + 1, subtree / children(tier + 1), replica + replicas(tier) * u);
  }

 private:
  void build_plane(Graph& graph, std::uint16_t plane) override;

  std::uint32_t levels_;
  std::vector<std::uint32_t> children_;     // [1..levels]
  std::vector<std::uint32_t> parents_;      // [1..levels], parents_[1] = 1
  std::vector<std::uint32_t> hosts_under_;  // [0..levels]
  std::vector<std::uint32_t> replicas_;     // [0..levels]
  std::vector<std::uint32_t> tier_offset_;  // [1..levels]
  BytesPerSecond bandwidth_;
  SimTime latency_;
};

}  // namespace orrery::network
