// The scale-out fabric between nodes: one interface, one class per topology family. A fabric
// knows its own index arithmetic (which router a host hangs off, which switch is whose parent) in
// named methods; routing algorithms (src/network/routing) use those methods and never compute
// indices of their own. Multi-rail systems build one copy (plane) of the fabric per rail.
#pragma once

#include <cstdint>
#include <fmt/format.h>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "config/network_config.h"
#include "network/topology/graph.h"
#include "util/error.h"

namespace orrery::network {

// A bad topology description: OrreryError(kConfig) naming network.topology.<key>.
[[noreturn]] inline void topology_error(std::string_view key, std::string_view reason) {
  throw OrreryError(ErrorCode::kConfig, fmt::format("network.topology.{}: {}", key, reason));
}

enum class FabricKind : std::uint8_t { kNone, kSwitch, kFatTree, kDragonfly, kTorus, kMultiDim };

// A router that belongs to no partition unit (fat-tree top tier): spread over processes.
inline constexpr std::uint32_t kSharedUnit = std::numeric_limits<std::uint32_t>::max();

class Fabric {
 public:
  virtual ~Fabric() = default;
  [[nodiscard]] virtual FabricKind kind() const = 0;
  [[nodiscard]] virtual std::string describe() const = 0;
  // Attachment points per plane: nodes (their NICs) for node-based systems, NPUs for direct ones.
  [[nodiscard]] virtual std::uint32_t hosts() const = 0;
  // True when the fabric joins the endpoints themselves (ASTRA-sim NPUs), with no NIC between.
  [[nodiscard]] virtual bool direct() const { return false; }
  // Routing algorithms this fabric implements.
  [[nodiscard]] virtual bool supports(config::RoutingAlgorithm algorithm) const = 0;
  // Partition units (dragonfly groups, fat-tree pods, torus slabs): hosts kept on one process.
  [[nodiscard]] virtual std::uint32_t num_units() const = 0;
  [[nodiscard]] virtual std::uint32_t unit_of_host(std::uint32_t host) const = 0;

  // Adds one plane's routers and cables to the graph. host_vertices[h] is the vertex attached as
  // host h (a NIC, or a device for direct fabrics). Planes are built in order 0, 1, ...
  void build(Graph& graph, std::span<const VertexId> host_vertices) {
    const auto plane = static_cast<std::uint16_t>(plane_base_.size());
    plane_base_.push_back(graph.num_vertices());
    hosts_.emplace_back(host_vertices.begin(), host_vertices.end());
    build_plane(graph, plane);
  }
  [[nodiscard]] std::uint32_t planes() const { return static_cast<std::uint32_t>(plane_base_.size()); }
  [[nodiscard]] VertexId host_vertex(std::uint16_t plane, std::uint32_t host) const { return hosts_[plane][host]; }

 protected:
  virtual void build_plane(Graph& graph, std::uint16_t plane) = 0;
  // The first vertex of a plane's routers: router vertices are plane_base + local index.
  [[nodiscard]] VertexId plane_base(std::uint16_t plane) const { return plane_base_[plane]; }
  static Vertex router(std::uint16_t plane, std::uint32_t unit, std::uint32_t tier = 0) {
    return Vertex{VertexKind::kRouter, plane, tier, unit};
  }

 private:
  std::vector<VertexId> plane_base_;
  std::vector<std::vector<VertexId>> hosts_;
};

}  // namespace orrery::network
