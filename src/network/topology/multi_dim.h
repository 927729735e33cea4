// ASTRA-sim's multi-dimensional analytical network (Won et al., "ASTRA-sim2.0", ISPASS 2023):
// NPUs are the endpoints, numbered with dimension 0 fastest; along each dimension the NPUs that
// differ only in that coordinate form a Ring (bidirectional, cables between neighbours), a
// FullyConnected group (a cable between every pair) or a Switch (one switch, a cable from each
// NPU). Bandwidth is in ASTRA-sim's GB/s, read as 2^30 bytes per second as its analytical backend
// does; latency in ns per link (a Switch path has two links, so twice the latency, as in
// ASTRA-sim).
#pragma once

#include <string>

#include "network/topology/fabric.h"

namespace orrery::network {

// Reads an ASTRA-sim network.yml unchanged. Throws OrreryError naming the file, line, key and
// value for anything else (placeholders such as `tbd` included); a file that cannot be read is
// reported at the key that named it (config::attributed_to).
config::AstraNetworkSpec load_astra_network(const config::FilePath& file);

class MultiDim final : public Fabric {
 public:
  explicit MultiDim(config::AstraNetworkSpec spec);

  [[nodiscard]] FabricKind kind() const override { return FabricKind::kMultiDim; }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::uint32_t hosts() const override { return size_; }
  [[nodiscard]] bool direct() const override { return true; }
  [[nodiscard]] bool supports(config::RoutingAlgorithm algorithm) const override {
    return algorithm == config::RoutingAlgorithm::kMinimal || algorithm == config::RoutingAlgorithm::kDimensionOrder;
  }
  // A unit is one dimension-0 group (ASTRA-sim's first dimension is the scale-up domain).
  [[nodiscard]] std::uint32_t num_units() const override { return size_ / spec_.npus_count[0]; }
  [[nodiscard]] std::uint32_t unit_of_host(std::uint32_t host) const override { return host / spec_.npus_count[0]; }

  [[nodiscard]] const config::AstraNetworkSpec& spec() const { return spec_; }
  [[nodiscard]] std::uint32_t dimensions() const { return static_cast<std::uint32_t>(spec_.topology.size()); }
  [[nodiscard]] config::AstraDimension dimension_kind(std::uint32_t dim) const { return spec_.topology[dim]; }
  [[nodiscard]] std::uint32_t extent(std::uint32_t dim) const { return spec_.npus_count[dim]; }
  [[nodiscard]] std::uint32_t coordinate(std::uint32_t npu, std::uint32_t dim) const {
    return npu / strides_[dim] % extent(dim);
  }
  [[nodiscard]] std::uint32_t with_coordinate(std::uint32_t npu, std::uint32_t dim, std::uint32_t value) const {
    return npu - coordinate(npu, dim) * strides_[dim] + value * strides_[dim];
  }
  // The switch of the dimension-`dim` group that holds `npu`.
  [[nodiscard]] VertexId switch_vertex(std::uint16_t plane, std::uint32_t npu, std::uint32_t dim) const;

 private:
  void build_plane(Graph& graph, std::uint16_t plane) override;
  [[nodiscard]] std::uint32_t line_index(std::uint32_t npu, std::uint32_t dim) const {
    return with_coordinate(npu, dim, 0);
  }

  config::AstraNetworkSpec spec_;
  std::vector<std::uint32_t> strides_;
  std::vector<VertexId> switch_offset_;  // per dimension, relative to the plane base
  std::uint32_t size_ = 1;
};

}  // namespace orrery::network
