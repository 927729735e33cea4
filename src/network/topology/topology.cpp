#include "network/topology/topology.h"

#include <algorithm>
#include <fmt/format.h>

#include "network/topology/dragonfly.h"
#include "network/topology/fat_tree.h"
#include "network/topology/multi_dim.h"
#include "network/topology/torus.h"
#include "util/error.h"

namespace orrery::network {

std::unique_ptr<Fabric> make_fabric(const config::TopologyConfig& topology) {
  struct Maker {
    std::unique_ptr<Fabric> operator()(const config::NoFabricConfig&) const { return std::make_unique<NoFabric>(); }
    std::unique_ptr<Fabric> operator()(const config::SwitchTopologyConfig& c) const {
      return std::make_unique<SingleSwitch>(c);
    }
    std::unique_ptr<Fabric> operator()(const config::FatTreeTopologyConfig& c) const {
      return std::make_unique<FatTree>(c);
    }
    std::unique_ptr<Fabric> operator()(const config::DragonflyTopologyConfig& c) const {
      return std::make_unique<Dragonfly>(c);
    }
    std::unique_ptr<Fabric> operator()(const config::TorusTopologyConfig& c) const {
      return std::make_unique<Torus>(c);
    }
    std::unique_ptr<Fabric> operator()(const config::AstraSimTopologyConfig& c) const {
      return std::make_unique<MultiDim>(c.file.empty() ? c.inline_spec : load_astra_network(c.file));
    }
  };
  return std::visit(Maker{}, topology);
}

Topology Topology::build(const config::SystemConfig& system, const config::NetworkConfig& network) {
  Topology topology;
  topology.fabric_ = make_fabric(network.topology);
  Fabric& fabric = *topology.fabric_;
  Graph& graph = topology.graph_;
  if (fabric.direct()) {
    const auto& multi = static_cast<const MultiDim&>(fabric);
    topology.devices_per_node_ = multi.extent(0);
    topology.nodes_ = fabric.hosts() / topology.devices_per_node_;
    for (EndpointId e = 0; e < fabric.hosts(); ++e) {
      graph.add_vertex(Vertex{VertexKind::kDevice, 0, 0, topology.node_of(e)});
    }
    std::vector<VertexId> hosts(fabric.hosts());
    for (EndpointId e = 0; e < fabric.hosts(); ++e) {
      hosts[e] = e;
    }
    fabric.build(graph, hosts);
    graph.finish();
    return topology;
  }
  const bool has_fabric = fabric.kind() != FabricKind::kNone;
  topology.devices_per_node_ = system.devices_per_node;
  topology.nodes_ = fabric.hosts();
  topology.rails_ = has_fabric ? network.nic.rails : 1;
  if (static_cast<std::uint64_t>(topology.nodes_) * topology.devices_per_node_ > (1U << 26)) {
    throw OrreryError(ErrorCode::kConfig,
                      fmt::format("network.topology: {} nodes of {} devices exceed 2^26 endpoints", topology.nodes_,
                                  topology.devices_per_node_));
  }
  for (EndpointId e = 0; e < topology.num_endpoints(); ++e) {
    graph.add_vertex(Vertex{VertexKind::kDevice, 0, 0, topology.node_of(e)});
  }
  if (topology.devices_per_node_ > 1) {
    topology.scale_up_base_ = graph.num_vertices();
    const BytesPerSecond bandwidth = BytesPerSecond::from_gigabytes(system.scale_up.bandwidth_gbps);
    const SimTime half_latency = SimTime::from_nanoseconds(system.scale_up.latency_ns / 2);
    for (std::uint32_t node = 0; node < topology.nodes_; ++node) {
      graph.add_vertex(Vertex{VertexKind::kScaleUpSwitch, 0, 0, node});
    }
    for (EndpointId e = 0; e < topology.num_endpoints(); ++e) {
      graph.add_cable(e, topology.scale_up_switch(topology.node_of(e)), bandwidth, half_latency, LinkKind::kScaleUp);
    }
  }
  if (has_fabric) {
    topology.nic_base_ = graph.num_vertices();
    for (std::uint32_t node = 0; node < topology.nodes_; ++node) {
      for (std::uint16_t rail = 0; rail < topology.rails_; ++rail) {
        graph.add_vertex(Vertex{VertexKind::kNic, rail, 0, node});
      }
    }
    const BytesPerSecond bandwidth = BytesPerSecond::from_gigabytes(network.nic.bandwidth_gbps);
    const SimTime latency = SimTime::from_nanoseconds(network.nic.latency_ns);
    for (EndpointId e = 0; e < topology.num_endpoints(); ++e) {
      graph.add_cable(e, topology.nic(topology.node_of(e), topology.rail_of(e)), bandwidth, latency, LinkKind::kNic);
    }
    std::vector<VertexId> hosts(topology.nodes_);
    for (std::uint16_t rail = 0; rail < topology.rails_; ++rail) {
      for (std::uint32_t node = 0; node < topology.nodes_; ++node) {
        hosts[node] = topology.nic(node, rail);
      }
      fabric.build(graph, hosts);
    }
  }
  graph.finish();
  return topology;
}

std::string Topology::describe() const {
  if (direct()) {
    return fabric_->describe();
  }
  return fmt::format("{} nodes x {} devices = {} endpoints, {} rail(s); {}", nodes_, devices_per_node_,
                     num_endpoints(), rails_, fabric_->describe());
}

std::uint32_t Topology::unit_of(EndpointId endpoint) const {
  if (direct()) {
    return fabric_->unit_of_host(endpoint);
  }
  return fabric_->kind() == FabricKind::kNone ? 0 : fabric_->unit_of_host(node_of(endpoint));
}

std::uint32_t Topology::num_units() const { return fabric_->num_units(); }

std::uint32_t Topology::unit_of_vertex(VertexId vertex) const {
  const Vertex& v = graph_.vertex(vertex);
  switch (v.kind) {
    case VertexKind::kDevice:
      return unit_of(vertex);
    case VertexKind::kScaleUpSwitch:
    case VertexKind::kNic:
      return unit_of(endpoint(v.domain, 0));
    case VertexKind::kRouter:
      return v.domain;
  }
  return kSharedUnit;
}

BytesPerSecond Topology::injection_bandwidth(EndpointId endpoint) const {
  if (direct() || fabric_->kind() == FabricKind::kNone) {
    double best = 0;
    for (const LinkId id : graph_.out_links(device_vertex(endpoint))) {
      best = std::max(best, graph_.link(id).bandwidth.value);
    }
    return BytesPerSecond{best};
  }
  const VertexId nic_vertex = nic(node_of(endpoint), rail_of(endpoint));
  const LinkId device_link = graph_.require_link(device_vertex(endpoint), nic_vertex);
  const std::uint32_t sharing = devices_per_node_ / rails_ + (rail_of(endpoint) < devices_per_node_ % rails_ ? 1 : 0);
  double fabric_bandwidth = 0;
  for (const LinkId id : graph_.out_links(nic_vertex)) {
    if (graph_.link(id).kind == LinkKind::kHost) {
      fabric_bandwidth = graph_.link(id).bandwidth.value;
    }
  }
  return BytesPerSecond{std::min(graph_.link(device_link).bandwidth.value, fabric_bandwidth / sharing)};
}

}  // namespace orrery::network
