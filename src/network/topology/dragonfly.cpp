#include "network/topology/dragonfly.h"

#include <fmt/format.h>


namespace orrery::network {
Dragonfly::Dragonfly(const config::DragonflyTopologyConfig& config)
    : p_(config.p),
      a_(config.a),
      h_(config.h),
      g_(config.g),
      arrangement_(config.arrangement),
      local_bandwidth_(BytesPerSecond::from_gigabytes(config.link_gbps)),
      global_bandwidth_(BytesPerSecond::from_gigabytes(config.global_link_gbps > 0 ? config.global_link_gbps
                                                                                   : config.link_gbps)),
      local_latency_(SimTime::from_nanoseconds(config.latency_ns)),
      global_latency_(SimTime::from_nanoseconds(config.global_latency_ns >= 0 ? config.global_latency_ns
                                                                              : config.latency_ns)) {
  if (static_cast<std::uint64_t>(g_) > static_cast<std::uint64_t>(a_) * h_ + 1) {
    topology_error("g", fmt::format("{} groups need more global ports than a*h = {} per group (g <= a*h + 1)", g_, a_ * h_));
  }
  if (g_ > 8192) {
    topology_error("g", fmt::format("{} groups: at most 8192 are supported", g_));
  }
  if (static_cast<std::uint64_t>(p_) * a_ * g_ > (1U << 26)) {
    topology_error("g", "more than 2^26 hosts per plane is not supported");
  }
  // Count the ports from every group to every other group, then lay them out (CSR).
  const std::size_t pairs = static_cast<std::size_t>(g_) * g_;
  pair_begin_.assign(pairs + 1, 0);
  const std::uint32_t ports = g_ > 1 ? a_ * h_ : 0;
  for (std::uint32_t group = 0; group < g_; ++group) {
    for (std::uint32_t port = 0; port < ports; ++port) {
      ++pair_begin_[static_cast<std::size_t>(group) * g_ + target_group(group, port) + 1];
    }
  }
  for (std::size_t pair = 0; pair < pairs; ++pair) {
    pair_begin_[pair + 1] += pair_begin_[pair];
  }
  pair_ports_.resize(pair_begin_[pairs]);
  std::vector<std::uint32_t> next(pair_begin_.begin(), pair_begin_.end() - 1);
  for (std::uint32_t group = 0; group < g_; ++group) {
    for (std::uint32_t port = 0; port < ports; ++port) {
      pair_ports_[next[static_cast<std::size_t>(group) * g_ + target_group(group, port)]++] = port;
    }
  }
  for (std::uint32_t from = 0; from < g_; ++from) {
    for (std::uint32_t to = from + 1; to < g_; ++to) {
      if (ports_between(from, to).size() != ports_between(to, from).size()) {
        topology_error("arrangement", fmt::format("the {} arrangement gives group {} {} ports to group {} but group {} has {} "
                                       "back; choose g - 1 dividing a*h = {} or another arrangement",
                                       config::enum_to_string(arrangement_), from, ports_between(from, to).size(),
                                       to, to, ports_between(to, from).size(), a_ * h_));
      }
    }
  }
}

std::uint32_t Dragonfly::target_group(std::uint32_t group, std::uint32_t port) const {
  const std::uint32_t j = port % (g_ - 1);
  switch (arrangement_) {
    case config::GlobalArrangement::kAbsolute:
      return j < group ? j : j + 1;
    case config::GlobalArrangement::kRelative:
      return (group + 1 + j) % g_;
    case config::GlobalArrangement::kCirculant: {
      const std::uint32_t offset = j / 2 + 1;
      return j % 2 == 0 ? (group + offset) % g_ : (group + g_ - offset % g_) % g_;
    }
  }
  return 0;
}

std::string Dragonfly::describe() const {
  return fmt::format("dragonfly p={} a={} h={} g={} ({}), {} hosts per plane, router radix {}", p_, a_, h_, g_,
                     config::enum_to_string(arrangement_), hosts(), radix());
}

bool Dragonfly::supports(config::RoutingAlgorithm algorithm) const {
  return algorithm == config::RoutingAlgorithm::kMinimal || algorithm == config::RoutingAlgorithm::kValiant;
}

void Dragonfly::build_plane(Graph& graph, std::uint16_t plane) {
  for (std::uint32_t r = 0; r < a_ * g_; ++r) {
    graph.add_vertex(router(plane, group_of_router(r)));
  }
  for (std::uint32_t host = 0; host < hosts(); ++host) {
    graph.add_cable(host_vertex(plane, host), router_vertex(plane, router_of_host(host)), local_bandwidth_,
                    local_latency_, LinkKind::kHost);
  }
  for (std::uint32_t group = 0; group < g_; ++group) {
    for (std::uint32_t i = 0; i < a_; ++i) {
      for (std::uint32_t j = i + 1; j < a_; ++j) {
        graph.add_cable(router_vertex(plane, group * a_ + i), router_vertex(plane, group * a_ + j), local_bandwidth_,
                        local_latency_, LinkKind::kLocal);
      }
    }
  }
  std::vector<LinkId>& links = global_links_.emplace_back(static_cast<std::size_t>(g_) * a_ * h_, kNoLink);
  for (std::uint32_t from = 0; from < g_; ++from) {
    for (std::uint32_t to = from + 1; to < g_; ++to) {
      const auto out = ports_between(from, to);
      const auto back = ports_between(to, from);
      for (std::size_t i = 0; i < out.size(); ++i) {
        const auto [forward, reverse] =
            graph.add_cable(router_vertex(plane, from * a_ + out[i] / h_), router_vertex(plane, to * a_ + back[i] / h_),
                            global_bandwidth_, global_latency_, LinkKind::kGlobal);
        links[static_cast<std::size_t>(from) * a_ * h_ + out[i]] = forward;
        links[static_cast<std::size_t>(to) * a_ * h_ + back[i]] = reverse;
      }
    }
  }
}

}  // namespace orrery::network
