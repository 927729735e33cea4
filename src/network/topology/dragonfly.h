// The dragonfly (Kim, Dally, Scott, Abts, ISCA 2008): g groups of a routers, each router with p
// hosts, a - 1 local links (all-to-all inside its group) and h global links. Group G owns global
// ports k = 0 .. a*h - 1, port k on router k / h. The arrangement decides which group a port
// reaches (Camarero, Vallejo, Beivide, "Topological characterization of Hamming graphs and
// dragonfly networks", ACM TACO 2014):
//   absolute:  j = k mod (g-1); target = j if j < G else j + 1
//   relative:  target = (G + 1 + k mod (g-1)) mod g                 (palm-tree)
//   circulant: j = k mod (g-1); target = G + (j/2 + 1) for even j, G - (j/2 + 1) for odd j (mod g)
// The i-th port of G reaching D is cabled to the i-th port of D reaching G; an arrangement that
// gives G more ports to D than D has to G is rejected. Router radix = p + (a - 1) + h.
#pragma once

#include "network/topology/fabric.h"

namespace orrery::network {

class Dragonfly final : public Fabric {
 public:
  explicit Dragonfly(const config::DragonflyTopologyConfig& config);

  [[nodiscard]] FabricKind kind() const override { return FabricKind::kDragonfly; }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::uint32_t hosts() const override { return p_ * a_ * g_; }
  [[nodiscard]] bool supports(config::RoutingAlgorithm algorithm) const override;
  [[nodiscard]] std::uint32_t num_units() const override { return g_; }
  [[nodiscard]] std::uint32_t unit_of_host(std::uint32_t host) const override { return group_of_host(host); }

  [[nodiscard]] std::uint32_t hosts_per_router() const { return p_; }
  [[nodiscard]] std::uint32_t routers_per_group() const { return a_; }
  [[nodiscard]] std::uint32_t global_per_router() const { return h_; }
  [[nodiscard]] std::uint32_t groups() const { return g_; }
  [[nodiscard]] std::uint32_t radix() const { return p_ + a_ - 1 + h_; }

  // Routers are numbered group-major: router = group * a + index in group.
  [[nodiscard]] std::uint32_t router_of_host(std::uint32_t host) const { return host / p_; }
  [[nodiscard]] std::uint32_t group_of_host(std::uint32_t host) const { return host / (p_ * a_); }
  [[nodiscard]] std::uint32_t group_of_router(std::uint32_t router) const { return router / a_; }
  [[nodiscard]] VertexId router_vertex(std::uint16_t plane, std::uint32_t router) const {
    return plane_base(plane) + router;
  }
  [[nodiscard]] std::uint32_t router_of_vertex(std::uint16_t plane, VertexId vertex) const {
    return vertex - plane_base(plane);
  }
  // The group port k of group G reaches (the arrangement's formula).
  [[nodiscard]] std::uint32_t target_group(std::uint32_t group, std::uint32_t port) const;
  // Global ports of `from` whose cables reach group `to`, in port order.
  [[nodiscard]] std::span<const std::uint32_t> ports_between(std::uint32_t from, std::uint32_t to) const {
    const std::size_t pair = static_cast<std::size_t>(from) * g_ + to;
    return {pair_ports_.data() + pair_begin_[pair], pair_ports_.data() + pair_begin_[pair + 1]};
  }
  // The global link leaving group `group` through `port` on `plane`.
  [[nodiscard]] LinkId global_link(std::uint16_t plane, std::uint32_t group, std::uint32_t port) const {
    return global_links_[plane][static_cast<std::size_t>(group) * a_ * h_ + port];
  }

 private:
  void build_plane(Graph& graph, std::uint16_t plane) override;

  std::uint32_t p_, a_, h_, g_;
  config::GlobalArrangement arrangement_;
  BytesPerSecond local_bandwidth_, global_bandwidth_;
  SimTime local_latency_, global_latency_;
  std::vector<std::uint32_t> pair_begin_;   // CSR over (from, to) group pairs
  std::vector<std::uint32_t> pair_ports_;
  std::vector<std::vector<LinkId>> global_links_;  // per plane, per (group, port)
};

}  // namespace orrery::network
