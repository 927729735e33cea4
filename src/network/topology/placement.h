// Placement: which endpoint (device of the topology) runs each program device id (rank).
//   linear:      rank r on endpoint r
//   round_robin: rank r on node r mod nodes, local device r / nodes (consecutive ranks on
//                different nodes)
//   random:      a uniformly random permutation (Fisher-Yates over PCG32 seeded by `seed`)
// Every policy is a bijection from ranks [0, devices) onto distinct endpoints.
#pragma once

#include <cstdint>
#include <vector>

#include "config/network_config.h"
#include "network/topology/topology.h"

namespace orrery::network {

class Placement {
 public:
  // Places `devices` ranks (at most the topology's endpoints; throws OrreryError(kConfig) if more).
  static Placement make(config::PlacementPolicy policy, const Topology& topology, std::uint32_t devices,
                        std::uint64_t seed);

  [[nodiscard]] std::uint32_t devices() const { return static_cast<std::uint32_t>(endpoint_of_device_.size()); }
  [[nodiscard]] EndpointId endpoint_of(std::uint32_t device) const { return endpoint_of_device_[device]; }
  // The rank on an endpoint, or kNoDevice.
  [[nodiscard]] std::uint32_t device_at(EndpointId endpoint) const { return device_at_endpoint_[endpoint]; }
  static constexpr std::uint32_t kNoDevice = 0xffffffffU;

 private:
  std::vector<EndpointId> endpoint_of_device_;
  std::vector<std::uint32_t> device_at_endpoint_;
};

}  // namespace orrery::network
