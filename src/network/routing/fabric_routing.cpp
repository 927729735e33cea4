#include "network/routing/fabric_routing.h"

#include "util/hash.h"

namespace orrery::network {
namespace {

std::uint64_t flow_hash(std::uint32_t from, std::uint32_t to, std::uint64_t flow_key) {
  return hash_combine(hash_combine(mix64(flow_key), from), to);
}

}  // namespace

void FatTreeRouting::route(std::uint16_t plane, std::uint32_t from, std::uint32_t to, std::uint64_t flow_key,
                           std::vector<LinkId>& path) const {
  VertexId here = tree_.leaf_of(plane, from);
  path.push_back(graph_.require_link(tree_.host_vertex(plane, from), here));
  const std::uint32_t top = tree_.common_tier(from, to);
  std::uint32_t subtree = from / tree_.children(1);
  std::uint32_t replica = 0;
  const std::uint64_t hash = hashed_ ? flow_hash(from, to, flow_key) : 0;
  for (std::uint32_t tier = 1; tier < top; ++tier) {
    const std::uint32_t up = hashed_ ? static_cast<std::uint32_t>(hash_combine(hash, tier) % tree_.parents(tier))
                                     : to / tree_.replicas(tier) % tree_.parents(tier);
    const VertexId parent = tree_.parent_of(plane, tier, subtree, replica, up);
    path.push_back(graph_.require_link(here, parent));
    here = parent;
    replica += tree_.replicas(tier) * up;
    subtree /= tree_.children(tier + 1);
  }
  for (std::uint32_t tier = top; tier > 1; --tier) {
    replica %= tree_.replicas(tier - 1);
    const VertexId child = tree_.switch_vertex(plane, tier - 1, to / tree_.hosts_under(tier - 1), replica);
    path.push_back(graph_.require_link(here, child));
    here = child;
  }
  path.push_back(graph_.require_link(here, tree_.host_vertex(plane, to)));
}

VertexId DragonflyRouting::hop_to_group(std::uint16_t plane, std::uint32_t from, std::uint32_t to_group,
                                        std::uint64_t hash, std::vector<LinkId>& path) const {
  const std::uint32_t from_group = dragonfly_.group_of_router(from);
  const auto ports = dragonfly_.ports_between(from_group, to_group);
  const std::uint32_t port = ports[hash % ports.size()];
  const std::uint32_t exit = from_group * dragonfly_.routers_per_group() + port / dragonfly_.global_per_router();
  if (exit != from) {
    path.push_back(graph_.require_link(dragonfly_.router_vertex(plane, from), dragonfly_.router_vertex(plane, exit)));
  }
  const LinkId global = dragonfly_.global_link(plane, from_group, port);
  path.push_back(global);
  return dragonfly_.router_of_vertex(plane, graph_.link(global).to);
}

void DragonflyRouting::route_routers(std::uint16_t plane, std::uint32_t from, std::uint32_t to, std::uint64_t hash,
                                     std::vector<LinkId>& path) const {
  if (dragonfly_.group_of_router(from) != dragonfly_.group_of_router(to)) {
    from = hop_to_group(plane, from, dragonfly_.group_of_router(to), hash, path);
  }
  if (from != to) {
    path.push_back(graph_.require_link(dragonfly_.router_vertex(plane, from), dragonfly_.router_vertex(plane, to)));
  }
}

void DragonflyRouting::route(std::uint16_t plane, std::uint32_t from, std::uint32_t to, std::uint64_t flow_key,
                             std::vector<LinkId>& path) const {
  const std::uint32_t source = dragonfly_.router_of_host(from);
  const std::uint32_t destination = dragonfly_.router_of_host(to);
  path.push_back(graph_.require_link(dragonfly_.host_vertex(plane, from), dragonfly_.router_vertex(plane, source)));
  const std::uint64_t hash = flow_hash(from, to, flow_key);
  const std::uint32_t groups = dragonfly_.groups();
  const std::uint32_t source_group = dragonfly_.group_of_router(source);
  const std::uint32_t destination_group = dragonfly_.group_of_router(destination);
  std::uint32_t here = source;
  if (valiant_ && groups > 2 && source_group != destination_group) {
    // The k-th group that is neither the source's nor the destination's.
    std::uint32_t middle = static_cast<std::uint32_t>(hash_combine(hash, 1) % (groups - 2));
    for (const std::uint32_t skip : {std::min(source_group, destination_group), std::max(source_group, destination_group)}) {
      middle += middle >= skip ? 1 : 0;
    }
    here = hop_to_group(plane, source, middle, hash_combine(hash, 2), path);
  }
  route_routers(plane, here, destination, hash, path);
  path.push_back(graph_.require_link(dragonfly_.router_vertex(plane, destination), dragonfly_.host_vertex(plane, to)));
}

void TorusRouting::route(std::uint16_t plane, std::uint32_t from, std::uint32_t to, std::uint64_t /*flow_key*/,
                         std::vector<LinkId>& path) const {
  path.push_back(graph_.require_link(torus_.host_vertex(plane, from), torus_.router_vertex(plane, from)));
  std::uint32_t here = from;
  for (std::uint32_t dim = 0; dim < torus_.dimensions(); ++dim) {
    const std::uint32_t k = torus_.extent(dim);
    const std::uint32_t forward = (torus_.coordinate(to, dim) + k - torus_.coordinate(here, dim)) % k;
    const int step = forward <= k - forward ? +1 : -1;
    for (std::uint32_t hops = std::min(forward, k - forward); hops > 0; --hops) {
      const std::uint32_t next = torus_.neighbour(here, dim, step);
      path.push_back(graph_.require_link(torus_.router_vertex(plane, here), torus_.router_vertex(plane, next)));
      here = next;
    }
  }
  path.push_back(graph_.require_link(torus_.router_vertex(plane, to), torus_.host_vertex(plane, to)));
}

void SwitchRouting::route(std::uint16_t plane, std::uint32_t from, std::uint32_t to, std::uint64_t /*flow_key*/,
                          std::vector<LinkId>& path) const {
  path.push_back(graph_.require_link(fabric_.host_vertex(plane, from), fabric_.switch_vertex(plane)));
  path.push_back(graph_.require_link(fabric_.switch_vertex(plane), fabric_.host_vertex(plane, to)));
}

void MultiDimRouting::route(std::uint16_t plane, std::uint32_t from, std::uint32_t to, std::uint64_t /*flow_key*/,
                            std::vector<LinkId>& path) const {
  std::uint32_t here = from;
  for (std::uint32_t dim = 0; dim < fabric_.dimensions(); ++dim) {
    const std::uint32_t target = fabric_.coordinate(to, dim);
    if (fabric_.coordinate(here, dim) == target) {
      continue;
    }
    const std::uint32_t next_npu = fabric_.with_coordinate(here, dim, target);
    switch (fabric_.dimension_kind(dim)) {
      case config::AstraDimension::kRing: {
        const std::uint32_t k = fabric_.extent(dim);
        const std::uint32_t forward = (target + k - fabric_.coordinate(here, dim)) % k;
        const bool up = forward <= k - forward;
        for (std::uint32_t hops = std::min(forward, k - forward); hops > 0; --hops) {
          const std::uint32_t x = fabric_.coordinate(here, dim);
          const std::uint32_t next = fabric_.with_coordinate(here, dim, up ? (x + 1) % k : (x + k - 1) % k);
          path.push_back(graph_.require_link(fabric_.host_vertex(plane, here), fabric_.host_vertex(plane, next)));
          here = next;
        }
        break;
      }
      case config::AstraDimension::kFullyConnected:
        path.push_back(graph_.require_link(fabric_.host_vertex(plane, here), fabric_.host_vertex(plane, next_npu)));
        here = next_npu;
        break;
      case config::AstraDimension::kSwitch: {
        const VertexId hub = fabric_.switch_vertex(plane, here, dim);
        path.push_back(graph_.require_link(fabric_.host_vertex(plane, here), hub));
        path.push_back(graph_.require_link(hub, fabric_.host_vertex(plane, next_npu)));
        here = next_npu;
        break;
      }
    }
  }
}

}  // namespace orrery::network
