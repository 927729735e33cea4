// A whole system's network: devices (the endpoints), each node's scale-up domain, the NICs and
// the scale-out fabric, as one graph of vertices and links.
//
//   node n: devices n*D .. n*D + D-1 on a scale-up switch (NVSwitch-like; absent when D = 1):
//           device <-> switch cables carry system.scale_up.bandwidth_GBps per direction and half
//           of system.scale_up.latency_ns each, so device -> switch -> device costs the latency.
//   NICs:   one per rail; device d of a node reaches NIC (d mod rails) over a cable of
//           network.nic.bandwidth_GBps; NIC r of every node is host n of fabric plane r.
//   fabric: one plane per rail (fat-tree, dragonfly, torus, switch), or none for one node.
// ASTRA-sim networks are direct: the NPUs are the endpoints and join each other with no scale-up
// switch or NIC; devices_per_node is the size of their first dimension.
#pragma once

#include <memory>
#include <string>

#include "config/network_config.h"
#include "config/system_config.h"
#include "network/topology/fabric.h"
#include "network/topology/graph.h"

namespace orrery::network {

class Topology {
 public:
  // Builds the network described by the scenario's system and network sections. Throws
  // OrreryError(kConfig) naming the key for an inconsistent description.
  static Topology build(const config::SystemConfig& system, const config::NetworkConfig& network);

  [[nodiscard]] const Graph& graph() const { return graph_; }
  [[nodiscard]] const Fabric& fabric() const { return *fabric_; }
  [[nodiscard]] std::string describe() const;

  [[nodiscard]] EndpointId num_endpoints() const { return nodes_ * devices_per_node_; }
  [[nodiscard]] std::uint32_t num_nodes() const { return nodes_; }
  [[nodiscard]] std::uint32_t devices_per_node() const { return devices_per_node_; }
  [[nodiscard]] std::uint32_t rails() const { return rails_; }
  [[nodiscard]] bool direct() const { return fabric_->direct(); }

  [[nodiscard]] std::uint32_t node_of(EndpointId endpoint) const { return endpoint / devices_per_node_; }
  [[nodiscard]] std::uint32_t local_index(EndpointId endpoint) const { return endpoint % devices_per_node_; }
  [[nodiscard]] std::uint16_t rail_of(EndpointId endpoint) const {
    return static_cast<std::uint16_t>(local_index(endpoint) % rails_);
  }
  [[nodiscard]] bool same_node(EndpointId a, EndpointId b) const { return node_of(a) == node_of(b); }
  [[nodiscard]] EndpointId endpoint(std::uint32_t node, std::uint32_t local) const {
    return node * devices_per_node_ + local;
  }
  // An endpoint's vertex is its id.
  [[nodiscard]] static VertexId device_vertex(EndpointId endpoint) { return endpoint; }
  // kNoVertex when the node has a single device (no scale-up switch).
  [[nodiscard]] VertexId scale_up_switch(std::uint32_t node) const {
    return scale_up_base_ == kNoVertex ? kNoVertex : scale_up_base_ + node;
  }
  // kNoVertex when there is no fabric (one node) or the fabric is direct.
  [[nodiscard]] VertexId nic(std::uint32_t node, std::uint16_t rail) const {
    return nic_base_ == kNoVertex ? kNoVertex : nic_base_ + node * rails_ + rail;
  }
  // The partition unit (dragonfly group, fat-tree pod, torus slab, node) of an endpoint.
  [[nodiscard]] std::uint32_t unit_of(EndpointId endpoint) const;
  [[nodiscard]] std::uint32_t num_units() const;
  // The unit a vertex belongs to, or kSharedUnit for routers shared by every unit.
  [[nodiscard]] std::uint32_t unit_of_vertex(VertexId vertex) const;

  // The rate at which an endpoint injects into the scale-out network: its own NIC cable, or its
  // share of the NIC's fabric cable when devices share a NIC, whichever is smaller (direct
  // fabrics: the fastest link leaving the NPU; one node: the scale-up bandwidth).
  [[nodiscard]] BytesPerSecond injection_bandwidth(EndpointId endpoint) const;

 private:
  Topology() = default;

  Graph graph_;
  std::unique_ptr<Fabric> fabric_;
  std::uint32_t nodes_ = 1;
  std::uint32_t devices_per_node_ = 1;
  std::uint32_t rails_ = 1;
  VertexId scale_up_base_ = kNoVertex;
  VertexId nic_base_ = kNoVertex;
};

// The fabric a topology section describes (exposed for tests and tools).
std::unique_ptr<Fabric> make_fabric(const config::TopologyConfig& topology);

}  // namespace orrery::network
