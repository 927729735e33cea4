// Routing: the path of a transfer as a list of links, a pure function of (source endpoint,
// destination endpoint, flow key) — so every process computes the same path for the same flow.
//
// A Routing composes the node part (scale-up domain, NICs, rails) with one FabricRouting
// algorithm for the scale-out fabric:
//   same node:       device -> scale-up switch -> device
//   other node:      device -> NIC(rail) -> fabric plane `rail` -> NIC(rail) -> device, where rail
//                    is the destination device's rail; a source on another rail first crosses the
//                    scale-up switch to its node's device with the destination's local index (the
//                    rail-aligned "PXN" path NCCL uses), so the transfer stays on one plane.
//   direct fabrics:  the fabric's path between the two NPUs.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "config/network_config.h"
#include "network/topology/topology.h"

namespace orrery::network {

class FabricRouting {
 public:
  virtual ~FabricRouting() = default;
  // Appends the links from fabric host `from` to fabric host `to` (from != to) on `plane`.
  virtual void route(std::uint16_t plane, std::uint32_t from, std::uint32_t to, std::uint64_t flow_key,
                     std::vector<LinkId>& path) const = 0;
};

// The algorithm for a fabric; throws OrreryError(kConfig) naming network.routing when the fabric
// does not implement it.
std::unique_ptr<FabricRouting> make_fabric_routing(const Fabric& fabric, const Graph& graph,
                                                   config::RoutingAlgorithm algorithm);

class Routing {
 public:
  Routing(const Topology& topology, config::RoutingAlgorithm algorithm);

  // Replaces `path` with the links from `source` to `destination` (empty when they are equal).
  void route(EndpointId source, EndpointId destination, std::uint64_t flow_key, std::vector<LinkId>& path) const;
  [[nodiscard]] const Topology& topology() const { return topology_; }
  [[nodiscard]] config::RoutingAlgorithm algorithm() const { return algorithm_; }

 private:
  const Topology& topology_;
  config::RoutingAlgorithm algorithm_;
  std::unique_ptr<FabricRouting> fabric_;
};

// Sum of the links' latencies.
SimTime path_latency(const Graph& graph, std::span<const LinkId> path);
// The smallest bandwidth on the path (infinite for an empty path).
BytesPerSecond path_bottleneck(const Graph& graph, std::span<const LinkId> path);

}  // namespace orrery::network
