#include "network/topology/torus.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/error.h"

namespace orrery::network {

Torus::Torus(const config::TorusTopologyConfig& config)
    : dims_(config.dims),
      bandwidth_(BytesPerSecond::from_gigabytes(config.link_gbps)),
      latency_(SimTime::from_nanoseconds(config.latency_ns)) {
  if (dims_.size() < 2 || dims_.size() > 3) {
    throw OrreryError(ErrorCode::kConfig, "network.topology.dims: a torus has 2 or 3 dimensions");
  }
  std::uint64_t size = 1;
  for (const std::uint32_t extent : dims_) {
    strides_.push_back(static_cast<std::uint32_t>(size));
    size *= extent;
    if (extent == 0 || size > (1U << 26)) {
      throw OrreryError(ErrorCode::kConfig, "network.topology.dims: every dimension must be 1 or more and the "
                                            "torus at most 2^26 routers");
    }
  }
  size_ = static_cast<std::uint32_t>(size);
}

std::string Torus::describe() const {
  return fmt::format("torus {} ({} routers per plane)", fmt::join(dims_, "x"), size_);
}

bool Torus::supports(config::RoutingAlgorithm algorithm) const {
  return algorithm == config::RoutingAlgorithm::kMinimal || algorithm == config::RoutingAlgorithm::kDimensionOrder;
}

std::uint32_t Torus::neighbour(std::uint32_t router, std::uint32_t dim, int step) const {
  const std::uint32_t k = dims_[dim];
  const std::uint32_t x = coordinate(router, dim);
  const std::uint32_t next = step > 0 ? (x + 1) % k : (x + k - 1) % k;
  return router - x * strides_[dim] + next * strides_[dim];
}

std::uint32_t Torus::distance(std::uint32_t a, std::uint32_t b) const {
  std::uint32_t hops = 0;
  for (std::uint32_t dim = 0; dim < dims_.size(); ++dim) {
    const std::uint32_t k = dims_[dim];
    const std::uint32_t d = (coordinate(b, dim) + k - coordinate(a, dim)) % k;
    hops += std::min(d, k - d);
  }
  return hops;
}

void Torus::build_plane(Graph& graph, std::uint16_t plane) {
  for (std::uint32_t r = 0; r < size_; ++r) {
    graph.add_vertex(router(plane, unit_of_host(r)));
  }
  for (std::uint32_t r = 0; r < size_; ++r) {
    graph.add_cable(host_vertex(plane, r), router_vertex(plane, r), bandwidth_, latency_, LinkKind::kHost);
  }
  for (std::uint32_t r = 0; r < size_; ++r) {
    for (std::uint32_t dim = 0; dim < dims_.size(); ++dim) {
      // Size 2: the two routers share one cable; size 1: no cable.
      if (dims_[dim] > 2 || (dims_[dim] == 2 && coordinate(r, dim) == 0)) {
        graph.add_cable(router_vertex(plane, r), router_vertex(plane, neighbour(r, dim, +1)), bandwidth_, latency_,
                        LinkKind::kFabric);
      }
    }
  }
}

SingleSwitch::SingleSwitch(const config::SwitchTopologyConfig& config)
    : nodes_(config.nodes),
      bandwidth_(BytesPerSecond::from_gigabytes(config.link_gbps)),
      latency_(SimTime::from_nanoseconds(config.latency_ns)) {}

std::string SingleSwitch::describe() const { return fmt::format("one switch with {} nodes", nodes_); }

void SingleSwitch::build_plane(Graph& graph, std::uint16_t plane) {
  graph.add_vertex(router(plane, kSharedUnit));
  for (std::uint32_t host = 0; host < nodes_; ++host) {
    graph.add_cable(host_vertex(plane, host), switch_vertex(plane), bandwidth_, latency_, LinkKind::kHost);
  }
}

}  // namespace orrery::network
