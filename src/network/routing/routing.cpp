#include "network/routing/routing.h"

#include <fmt/format.h>
#include <limits>

#include "network/routing/fabric_routing.h"
#include "util/error.h"

namespace orrery::network {
namespace {

std::string_view fabric_name(FabricKind kind) {
  switch (kind) {
    case FabricKind::kNone:
      return "none";
    case FabricKind::kSwitch:
      return "switch";
    case FabricKind::kFatTree:
      return "fat_tree";
    case FabricKind::kDragonfly:
      return "dragonfly";
    case FabricKind::kTorus:
      return "torus";
    case FabricKind::kMultiDim:
      return "astra_sim";
  }
  return "?";
}

std::string supported_names(const Fabric& fabric) {
  std::string names;
  for (const auto& entry : enum_names(config::RoutingAlgorithm{})) {
    if (fabric.supports(entry.value)) {
      names += fmt::format("{}{}", names.empty() ? "" : ", ", entry.name);
    }
  }
  return names;
}

}  // namespace

std::unique_ptr<FabricRouting> make_fabric_routing(const Fabric& fabric, const Graph& graph,
                                                   config::RoutingAlgorithm algorithm) {
  using config::RoutingAlgorithm;
  if (!fabric.supports(algorithm)) {
    throw OrreryError(ErrorCode::kConfig,
                      fmt::format("network.routing: '{}' is not available for the {} topology (known: {})",
                                  config::enum_to_string(algorithm), fabric_name(fabric.kind()),
                                  supported_names(fabric)));
  }
  switch (fabric.kind()) {
    case FabricKind::kNone:
      return nullptr;
    case FabricKind::kSwitch:
      return std::make_unique<SwitchRouting>(static_cast<const SingleSwitch&>(fabric), graph);
    case FabricKind::kFatTree:
      return std::make_unique<FatTreeRouting>(static_cast<const FatTree&>(fabric), graph,
                                              algorithm == RoutingAlgorithm::kEcmp);
    case FabricKind::kDragonfly:
      return std::make_unique<DragonflyRouting>(static_cast<const Dragonfly&>(fabric), graph,
                                                algorithm == RoutingAlgorithm::kValiant);
    case FabricKind::kTorus:
      return std::make_unique<TorusRouting>(static_cast<const Torus&>(fabric), graph);
    case FabricKind::kMultiDim:
      return std::make_unique<MultiDimRouting>(static_cast<const MultiDim&>(fabric), graph);
  }
  return nullptr;
}

Routing::Routing(const Topology& topology, config::RoutingAlgorithm algorithm)
    : topology_(topology),
      algorithm_(algorithm),
      fabric_(make_fabric_routing(topology.fabric(), topology.graph(), algorithm)) {}

void Routing::route(EndpointId source, EndpointId destination, std::uint64_t flow_key,
                    std::vector<LinkId>& path) const {
  path.clear();
  if (source == destination) {
    return;
  }
  const Graph& graph = topology_.graph();
  if (topology_.direct()) {
    fabric_->route(0, source, destination, flow_key, path);
    return;
  }
  const std::uint32_t source_node = topology_.node_of(source);
  const VertexId source_switch = topology_.scale_up_switch(source_node);
  if (topology_.same_node(source, destination)) {
    path.push_back(graph.require_link(source, source_switch));
    path.push_back(graph.require_link(source_switch, destination));
    return;
  }
  const std::uint16_t rail = topology_.rail_of(destination);
  EndpointId sender = source;
  if (topology_.rail_of(source) != rail) {
    sender = topology_.endpoint(source_node, topology_.local_index(destination));
    path.push_back(graph.require_link(source, source_switch));
    path.push_back(graph.require_link(source_switch, sender));
  }
  const std::uint32_t destination_node = topology_.node_of(destination);
  const VertexId source_nic = topology_.nic(source_node, rail);
  const VertexId destination_nic = topology_.nic(destination_node, rail);
  path.push_back(graph.require_link(sender, source_nic));
  fabric_->route(rail, source_node, destination_node, flow_key, path);
  path.push_back(graph.require_link(destination_nic, destination));
}

SimTime path_latency(const Graph& graph, std::span<const LinkId> path) {
  SimTime total;
  for (const LinkId id : path) {
    total += graph.link(id).latency;
  }
  return total;
}

BytesPerSecond path_bottleneck(const Graph& graph, std::span<const LinkId> path) {
  double bottleneck = std::numeric_limits<double>::infinity();
  for (const LinkId id : path) {
    bottleneck = std::min(bottleneck, graph.link(id).bandwidth.value);
  }
  return BytesPerSecond{bottleneck};
}

}  // namespace orrery::network
