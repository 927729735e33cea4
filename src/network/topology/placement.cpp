#include "network/topology/placement.h"

#include <fmt/format.h>
#include <numeric>

#include "pdes/random.h"
#include "util/error.h"

namespace orrery::network {

Placement Placement::make(config::PlacementPolicy policy, const Topology& topology, std::uint32_t devices,
                          std::uint64_t seed) {
  const EndpointId endpoints = topology.num_endpoints();
  if (devices > endpoints) {
    throw OrreryError(ErrorCode::kConfig,
                      fmt::format("network.placement: {} devices do not fit on {} endpoints ({})", devices,
                                  endpoints, topology.describe()));
  }
  std::vector<EndpointId> order(endpoints);
  switch (policy) {
    case config::PlacementPolicy::kLinear:
      std::iota(order.begin(), order.end(), 0);
      break;
    case config::PlacementPolicy::kRoundRobin: {
      const std::uint32_t nodes = topology.num_nodes();
      for (EndpointId r = 0; r < endpoints; ++r) {
        order[r] = topology.endpoint(r % nodes, r / nodes);
      }
      break;
    }
    case config::PlacementPolicy::kRandom: {
      std::iota(order.begin(), order.end(), 0);
      pdes::Random random(seed, 0x706c6163656d656eULL);  // "placemen"
      for (EndpointId i = endpoints; i > 1; --i) {
        std::swap(order[i - 1], order[random.below(i)]);
      }
      break;
    }
  }
  Placement placement;
  placement.endpoint_of_device_.assign(order.begin(), order.begin() + devices);
  placement.device_at_endpoint_.assign(endpoints, kNoDevice);
  for (std::uint32_t d = 0; d < devices; ++d) {
    placement.device_at_endpoint_[placement.endpoint_of_device_[d]] = d;
  }
  return placement;
}

}  // namespace orrery::network
