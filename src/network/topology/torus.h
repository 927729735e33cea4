// A 2D or 3D torus (TPU-style ICI): one router per position, host h on router h, a cable to the
// next router in every dimension with wrap-around (one cable for a dimension of size 2, none for
// size 1). Routers are numbered with dimension 0 fastest: index = sum(coordinate_i * stride_i).
#pragma once

#include <array>

#include "network/topology/fabric.h"

namespace orrery::network {

class Torus final : public Fabric {
 public:
  explicit Torus(const config::TorusTopologyConfig& config);

  [[nodiscard]] FabricKind kind() const override { return FabricKind::kTorus; }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::uint32_t hosts() const override { return size_; }
  [[nodiscard]] bool supports(config::RoutingAlgorithm algorithm) const override;
  // Slabs along the last dimension.
  [[nodiscard]] std::uint32_t num_units() const override { return dims_.back(); }
  [[nodiscard]] std::uint32_t unit_of_host(std::uint32_t host) const override { return host / strides_.back(); }

  [[nodiscard]] std::uint32_t dimensions() const { return static_cast<std::uint32_t>(dims_.size()); }
  [[nodiscard]] std::uint32_t extent(std::uint32_t dim) const { return dims_[dim]; }
  [[nodiscard]] std::uint32_t coordinate(std::uint32_t router, std::uint32_t dim) const {
    return router / strides_[dim] % dims_[dim];
  }
  // The router `steps` (+1 or -1) away from `router` along `dim`, with wrap-around.
  [[nodiscard]] std::uint32_t neighbour(std::uint32_t router, std::uint32_t dim, int step) const;
  [[nodiscard]] VertexId router_vertex(std::uint16_t plane, std::uint32_t router) const {
    return plane_base(plane) + router;
  }
  // Minimal hop count between two routers: sum over dimensions of min(d, k - d).
  [[nodiscard]] std::uint32_t distance(std::uint32_t a, std::uint32_t b) const;

 private:
  void build_plane(Graph& graph, std::uint16_t plane) override;

  std::vector<std::uint32_t> dims_;
  std::vector<std::uint32_t> strides_;
  std::uint32_t size_ = 1;
  BytesPerSecond bandwidth_;
  SimTime latency_;
};

// One switch with every host on it.
class SingleSwitch final : public Fabric {
 public:
  explicit SingleSwitch(const config::SwitchTopologyConfig& config);

  [[nodiscard]] FabricKind kind() const override { return FabricKind::kSwitch; }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::uint32_t hosts() const override { return nodes_; }
  [[nodiscard]] bool supports(config::RoutingAlgorithm algorithm) const override {
    return algorithm == config::RoutingAlgorithm::kMinimal;
  }
  [[nodiscard]] std::uint32_t num_units() const override { return nodes_; }
  [[nodiscard]] std::uint32_t unit_of_host(std::uint32_t host) const override { return host; }
  [[nodiscard]] VertexId switch_vertex(std::uint16_t plane) const { return plane_base(plane); }

 private:
  void build_plane(Graph& graph, std::uint16_t plane) override;

  std::uint32_t nodes_;
  BytesPerSecond bandwidth_;
  SimTime latency_;
};

// No scale-out fabric: a single node.
class NoFabric final : public Fabric {
 public:
  [[nodiscard]] FabricKind kind() const override { return FabricKind::kNone; }
  [[nodiscard]] std::string describe() const override { return "no scale-out fabric (one node)"; }
  [[nodiscard]] std::uint32_t hosts() const override { return 1; }
  [[nodiscard]] bool supports(config::RoutingAlgorithm algorithm) const override {
    return algorithm == config::RoutingAlgorithm::kMinimal;
  }
  [[nodiscard]] std::uint32_t num_units() const override { return 1; }
  [[nodiscard]] std::uint32_t unit_of_host(std::uint32_t /*host*/) const override { return 0; }

 private:
  void build_plane(Graph& /*graph*/, std::uint16_t /*plane*/) override {}
};

}  // namespace orrery::network
