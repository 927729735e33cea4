// The `network` section: the scale-out fabric (a variant selected by `kind`), the NICs that join
// each node's scale-up domain to it, placement, routing and model. docs/network.md explains how
// these keys become routers, links and endpoints.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "config/schema.h"

namespace orrery::config {

// No scale-out fabric: one node, every device in its scale-up domain (e.g. 8 GPUs on NVSwitch).
struct NoFabricConfig {
  static constexpr std::string_view kKind = "none";

  template <class V>
  void fields(V& /*v*/) {}
};

// Every node's NICs on one non-blocking switch.
struct SwitchTopologyConfig {
  static constexpr std::string_view kKind = "switch";
  std::uint32_t nodes = 2;
  double link_gbps = 50.0;
  double latency_ns = 500.0;

  template <class V>
  void fields(V& v) {
    v("nodes", nodes, "Nodes attached to the switch.", at_least(1));
    v("link_GBps", link_gbps, "NIC-to-switch link bandwidth per direction (GB/s, 1e9 B/s).", positive());
    v("latency_ns", latency_ns, "Latency per hop (ns).", nonnegative());
  }
};

// A generalised fat-tree (XGFT, Öhring et al. 1995): tier 1 switches (leaves) have
// `hosts_per_leaf` hosts below them, higher tiers `k` children; every switch below the top has
// children / oversubscription parents. hosts_per_leaf = k and no oversubscription is the k-ary
// n-tree (Petrini and Vanneschi 1997).
struct FatTreeTopologyConfig {
  static constexpr std::string_view kKind = "fat_tree";
  std::uint32_t k = 8;
  std::uint32_t levels = 3;
  std::uint32_t hosts_per_leaf = 0;
  std::vector<double> oversubscription;
  double link_gbps = 50.0;
  double latency_ns = 100.0;

  template <class V>
  void fields(V& v) {
    v("k", k, "Children per switch above the leaves, and up-links per switch (k-ary n-tree: half the radix).",
      at_least(1));
    v("levels", levels, "Switch tiers (n of the k-ary n-tree).", between(1, 8));
    v("hosts_per_leaf", hosts_per_leaf, "Hosts (NICs) below each leaf switch; 0: k.");
    v("oversubscription", oversubscription,
      "Down:up ratio of tiers 1..levels-1 (tapering); missing tiers are 1. Children / ratio must be "
      "a whole number of up-links.",
      at_least(1));
    v("link_GBps", link_gbps, "Link bandwidth per direction (GB/s, 1e9 B/s).", positive());
    v("latency_ns", latency_ns, "Latency per hop (ns).", nonnegative());
  }
  void validate(Problems& problems) const {
    if (levels > 0 && oversubscription.size() > levels - 1) {
      problems.add("oversubscription", "at most levels - 1 ratios (the top tier has no up-links)");
    }
  }
};

enum class GlobalArrangement { kAbsolute, kRelative, kCirculant };
inline std::span<const EnumName<GlobalArrangement>> enum_names(GlobalArrangement) {
  static constexpr EnumName<GlobalArrangement> kNames[] = {{GlobalArrangement::kAbsolute, "absolute"},
                                                           {GlobalArrangement::kRelative, "relative"},
                                                           {GlobalArrangement::kCirculant, "circulant"}};
  return kNames;
}

// Kim, Dally, Scott, Abts, "Technology-driven, highly-scalable dragonfly topology" (ISCA 2008).
struct DragonflyTopologyConfig {
  static constexpr std::string_view kKind = "dragonfly";
  std::uint32_t p = 4;
  std::uint32_t a = 8;
  std::uint32_t h = 4;
  std::uint32_t g = 33;
  GlobalArrangement arrangement = GlobalArrangement::kAbsolute;
  double link_gbps = 50.0;
  double global_link_gbps = 0.0;
  double latency_ns = 100.0;
  double global_latency_ns = -1.0;

  template <class V>
  void fields(V& v) {
    v("p", p, "Hosts (NICs) per router.", at_least(1));
    v("a", a, "Routers per group (all-to-all inside a group).", at_least(1));
    v("h", h, "Global links per router.", at_least(1));
    v("g", g, "Groups (at most a*h + 1).", at_least(1));
    v("arrangement", arrangement,
      "How global ports connect groups (Camarero et al. 2014): absolute (port k to the k-th other "
      "group), relative (port k of group i to group i+k+1), circulant (offsets +1, -1, +2, -2, ...).");
    v("link_GBps", link_gbps, "Host and local link bandwidth per direction (GB/s, 1e9 B/s).", positive());
    v("global_link_GBps", global_link_gbps, "Global link bandwidth per direction (GB/s); 0: link_GBps.",
      nonnegative());
    v("latency_ns", latency_ns, "Latency of host and local links (ns).", nonnegative());
    v("global_latency_ns", global_latency_ns, "Latency of global links (ns); negative: latency_ns.");
  }
};

struct TorusTopologyConfig {
  static constexpr std::string_view kKind = "torus";
  std::vector<std::uint32_t> dims{4, 4};
  double link_gbps = 45.0;
  double latency_ns = 100.0;

  template <class V>
  void fields(V& v) {
    v("dims", dims, "Size of each torus dimension (2D or 3D), wrap-around links in each.", at_least(1));
    v("link_GBps", link_gbps, "Link bandwidth per direction (GB/s, 1e9 B/s).", positive());
    v("latency_ns", latency_ns, "Latency per hop (ns).", nonnegative());
  }
  void validate(Problems& problems) const {
    if (dims.size() < 2 || dims.size() > 3) {
      problems.add("dims", "a torus has 2 or 3 dimensions");
    }
  }
};

// One dimension of an ASTRA-sim multi-dimensional network.
enum class AstraDimension { kRing, kFullyConnected, kSwitch };
inline std::span<const EnumName<AstraDimension>> enum_names(AstraDimension) {
  static constexpr EnumName<AstraDimension> kNames[] = {{AstraDimension::kRing, "Ring"},
                                                        {AstraDimension::kFullyConnected, "FullyConnected"},
                                                        {AstraDimension::kSwitch, "Switch"}};
  return kNames;
}

// The keys of an ASTRA-sim analytical network.yml, spelled as ASTRA-sim spells them. Bandwidth in
// ASTRA-sim's GB/s, which its analytical backend reads as 2^30 bytes per second.
struct AstraNetworkSpec {
  std::vector<AstraDimension> topology;
  std::vector<std::uint32_t> npus_count;
  std::vector<double> bandwidth;
  std::vector<double> latency;

  template <class V>
  void fields(V& v) {
    v("topology", topology, "Per dimension: Ring, FullyConnected or Switch.");
    v("npus_count", npus_count, "NPUs per dimension.", at_least(1));
    v("bandwidth", bandwidth, "Link bandwidth per dimension (ASTRA-sim GB/s = 2^30 B/s).", positive());
    v("latency", latency, "Link latency per dimension (ns).", nonnegative());
  }
  [[nodiscard]] bool empty() const { return topology.empty() && npus_count.empty() && bandwidth.empty() && latency.empty(); }
  void validate(Problems& problems) const {
    if (empty()) {
      return;
    }
    if (topology.empty()) {
      problems.add("topology", "needs at least one dimension");
    }
    if (npus_count.size() != topology.size()) {
      problems.add("npus_count", "needs one entry per dimension of 'topology'");
    }
    if (bandwidth.size() != topology.size()) {
      problems.add("bandwidth", "needs one entry per dimension of 'topology'");
    }
    if (latency.size() != topology.size()) {
      problems.add("latency", "needs one entry per dimension of 'topology'");
    }
  }
};

// An ASTRA-sim multi-dimensional network: NPUs are the endpoints and connect to each other
// directly (Ring, FullyConnected) or through one switch per dimension group (Switch).
struct AstraSimTopologyConfig {
  static constexpr std::string_view kKind = "astra_sim";
  FilePath file;
  AstraNetworkSpec inline_spec;

  template <class V>
  void fields(V& v) {
    v("file", file, "An ASTRA-sim analytical network.yml, read unchanged; empty: use `spec`.");
    v("spec", inline_spec, "The same keys inline (topology, npus_count, bandwidth, latency).");
  }
  void validate(Problems& problems) const {
    if (file.empty() == inline_spec.empty()) {
      problems.add("file", "give exactly one of 'file' and 'spec'");
    }
  }
};

using TopologyConfig = std::variant<NoFabricConfig, SwitchTopologyConfig, FatTreeTopologyConfig,
                                    DragonflyTopologyConfig, TorusTopologyConfig, AstraSimTopologyConfig>;

// The NICs of a node: one per rail, device d of a node uses rail d mod rails; every rail has its
// own copy (plane) of the fabric.
struct NicConfig {
  std::uint32_t rails = 1;
  double bandwidth_gbps = 50.0;
  double latency_ns = 0.0;

  template <class V>
  void fields(V& v) {
    v("rails", rails, "NICs per node (one per rail); each rail is its own plane of the fabric.", at_least(1));
    v("bandwidth_GBps", bandwidth_gbps, "Device-to-NIC bandwidth per direction (GB/s, 1e9 B/s); 400 Gb/s = 50.",
      positive());
    v("latency_ns", latency_ns, "Device-to-NIC latency (ns).", nonnegative());
  }
};

enum class PlacementPolicy { kLinear, kRoundRobin, kRandom };
inline std::span<const EnumName<PlacementPolicy>> enum_names(PlacementPolicy) {
  static constexpr EnumName<PlacementPolicy> kNames[] = {{PlacementPolicy::kLinear, "linear"},
                                                         {PlacementPolicy::kRoundRobin, "round_robin"},
                                                         {PlacementPolicy::kRandom, "random"}};
  return kNames;
}

enum class RoutingAlgorithm { kMinimal, kValiant, kDModK, kEcmp, kDimensionOrder };
inline std::span<const EnumName<RoutingAlgorithm>> enum_names(RoutingAlgorithm) {
  static constexpr EnumName<RoutingAlgorithm> kNames[] = {{RoutingAlgorithm::kMinimal, "minimal"},
                                                          {RoutingAlgorithm::kValiant, "valiant"},
                                                          {RoutingAlgorithm::kDModK, "d_mod_k"},
                                                          {RoutingAlgorithm::kEcmp, "ecmp"},
                                                          {RoutingAlgorithm::kDimensionOrder, "dimension_order"}};
  return kNames;
}

enum class NetworkModelKind { kAnalytical, kFlow, kPacket };
inline std::span<const EnumName<NetworkModelKind>> enum_names(NetworkModelKind) {
  static constexpr EnumName<NetworkModelKind> kNames[] = {{NetworkModelKind::kAnalytical, "analytical"},
                                                          {NetworkModelKind::kFlow, "flow"},
                                                          {NetworkModelKind::kPacket, "packet"}};
  return kNames;
}

struct NetworkConfig {
  TopologyConfig topology = NoFabricConfig{};
  NicConfig nic;
  PlacementPolicy placement = PlacementPolicy::kLinear;
  RoutingAlgorithm routing = RoutingAlgorithm::kMinimal;
  NetworkModelKind model = NetworkModelKind::kAnalytical;

  template <class V>
  void fields(V& v) {
    v("topology", topology, "The scale-out fabric between nodes (none: a single node).");
    v("nic", nic, "The NICs joining each node's scale-up domain to the fabric.");
    v("placement", placement,
      "How device ranks map onto endpoints: linear, round_robin over nodes, or random (seeded by "
      "simulation.seed).");
    v("routing", routing,
      "Routing: minimal (every fabric), valiant (dragonfly), d_mod_k or ecmp (fat_tree), "
      "dimension_order (torus, astra_sim).");
    v("model", model, "Network model: analytical (no contention between sources; a source's own transfers queue on the links they share), flow (max-min fair sharing) or packet.");
  }
};

}  // namespace orrery::config
