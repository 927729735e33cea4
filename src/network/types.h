// Vocabulary of the network module: endpoints (devices), graph vertices, directed links and
// transfers. Every id is a dense index; units are types (util/units.h).
#pragma once

#include <cstdint>
#include <limits>

#include "util/units.h"

namespace orrery::network {

// A device (accelerator): what a program rank is placed on. Endpoints are numbered node-major:
// endpoint = node * devices_per_node + local index.
using EndpointId = std::uint32_t;
// A vertex of the topology graph: endpoints first (vertex id = endpoint id), then scale-up
// switches, NICs and fabric routers.
using VertexId = std::uint32_t;
// A directed link; a full-duplex cable is two links.
using LinkId = std::uint32_t;
// A transfer's id, chosen by the caller; it must not depend on the partition (e.g. source
// endpoint and a per-source sequence), since flows are visited in id order.
using TransferId = std::uint64_t;

inline constexpr VertexId kNoVertex = std::numeric_limits<VertexId>::max();
inline constexpr LinkId kNoLink = std::numeric_limits<LinkId>::max();

}  // namespace orrery::network
