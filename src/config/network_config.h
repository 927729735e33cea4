// The `network` section: topology (a variant selected by `kind`), placement, routing and model.
#pragma once

#include <cstdint>
#include <span>
#include <variant>
#include <vector>

#include "config/schema.h"

namespace orrery::config {

// Every node's NICs on one non-blocking switch.
struct SwitchTopologyConfig {
  static constexpr std::string_view kKind = "switch";
  std::uint32_t nodes = 1;
  double link_gbps = 25.0;
  double latency_ns = 500.0;

  template <class V>
  void fields(V& v) {
    v("nodes", nodes, "Nodes attached to the switch.", at_least(1));
    v("link_GBps", link_gbps, "NIC link bandwidth per direction (GB/s).", positive());
    v("latency_ns", latency_ns, "Latency per hop (ns).", nonnegative());
  }
};

struct FatTreeTopologyConfig {
  static constexpr std::string_view kKind = "fat_tree";
  std::uint32_t k = 8;
  std::uint32_t levels = 3;
  double link_gbps = 50.0;
  double latency_ns = 100.0;

  template <class V>
  void fields(V& v) {
    v("k", k, "Switch radix (k-ary n-tree).", at_least(2));
    v("levels", levels, "Number of switch levels.", at_least(1));
    v("link_GBps", link_gbps, "Link bandwidth per direction (GB/s).", positive());
    v("latency_ns", latency_ns, "Latency per hop (ns).", nonnegative());
  }
};

struct DragonflyTopologyConfig {
  static constexpr std::string_view kKind = "dragonfly";
  std::uint32_t p = 4;
  std::uint32_t a = 8;
  std::uint32_t h = 4;
  std::uint32_t g = 33;
  double link_gbps = 50.0;
  double latency_ns = 100.0;

  template <class V>
  void fields(V& v) {
    v("p", p, "Hosts per router.", at_least(1));
    v("a", a, "Routers per group.", at_least(1));
    v("h", h, "Global links per router.", at_least(1));
    v("g", g, "Groups.", at_least(1));
    v("link_GBps", link_gbps, "Link bandwidth per direction (GB/s).", positive());
    v("latency_ns", latency_ns, "Latency per hop (ns).", nonnegative());
  }
};

struct TorusTopologyConfig {
  static constexpr std::string_view kKind = "torus";
  std::vector<std::uint32_t> dims{4, 4};
  double link_gbps = 45.0;
  double latency_ns = 100.0;

  template <class V>
  void fields(V& v) {
    v("dims", dims, "Size of each torus dimension (2D or 3D).", at_least(1));
    v("link_GBps", link_gbps, "Link bandwidth per direction (GB/s).", positive());
    v("latency_ns", latency_ns, "Latency per hop (ns).", nonnegative());
  }
};

using TopologyConfig =
    std::variant<SwitchTopologyConfig, FatTreeTopologyConfig, DragonflyTopologyConfig, TorusTopologyConfig>;

enum class PlacementPolicy { kLinear, kRoundRobin, kRandom };
inline std::span<const EnumName<PlacementPolicy>> enum_names(PlacementPolicy) {
  static constexpr EnumName<PlacementPolicy> kNames[] = {{PlacementPolicy::kLinear, "linear"},
                                                         {PlacementPolicy::kRoundRobin, "round_robin"},
                                                         {PlacementPolicy::kRandom, "random"}};
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
  TopologyConfig topology = SwitchTopologyConfig{};
  PlacementPolicy placement = PlacementPolicy::kLinear;
  std::string routing = "minimal";
  NetworkModelKind model = NetworkModelKind::kAnalytical;

  template <class V>
  void fields(V& v) {
    v("topology", topology, "The scale-out fabric.");
    v("placement", placement, "How device ranks map onto network endpoints.");
    v("routing", routing, "Routing algorithm (minimal, valiant, ecmp, d_mod_k, dimension_order).");
    v("model", model, "Network model: analytical (no contention), flow (max-min fair sharing) or packet.");
  }
};

}  // namespace orrery::config
