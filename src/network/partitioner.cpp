#include "network/partitioner.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "util/assert.h"

namespace orrery::network {

std::vector<pdes::ProcessId> TopologyPartitioner::endpoint_owners(pdes::ProcessId num_processes) const {
  const EndpointId endpoints = topology_.num_endpoints();
  const bool by_unit = topology_.num_units() >= num_processes;
  auto unit = [&](EndpointId e) { return by_unit ? topology_.unit_of(e) : topology_.node_of(e); };
  // Endpoints of a unit are contiguous (units are node ranges), so a unit starts where its first
  // endpoint is; it goes to the process whose share of endpoints holds the unit's middle.
  std::vector<pdes::ProcessId> owners(endpoints);
  EndpointId begin = 0;
  while (begin < endpoints) {
    EndpointId end = begin + 1;
    while (end < endpoints && unit(end) == unit(begin)) {
      ++end;
    }
    const std::uint64_t middle = (static_cast<std::uint64_t>(begin) + end) / 2;
    const auto process = static_cast<pdes::ProcessId>(
        std::min<std::uint64_t>(num_processes - 1, middle * num_processes / endpoints));
    std::fill(owners.begin() + begin, owners.begin() + end, process);
    begin = end;
  }
  return owners;
}

pdes::PartitionMap TopologyPartitioner::assign(pdes::LpId num_lps, pdes::ProcessId num_processes) const {
  const std::vector<pdes::ProcessId> endpoint_owner = endpoint_owners(num_processes);
  const pdes::LpId placed = placement_ != nullptr ? placement_->devices() : topology_.num_endpoints();
  std::vector<pdes::ProcessId> owners(num_lps);
  for (pdes::LpId lp = 0; lp < num_lps; ++lp) {
    if (lp >= placed) {
      owners[lp] = (lp - placed) % num_processes;  // replicas first: replica p on process p
    } else {
      owners[lp] = endpoint_owner[placement_ != nullptr ? placement_->endpoint_of(lp) : lp];
    }
  }
  return pdes::PartitionMap(std::move(owners), num_processes);
}

pdes::PartitionMap program_balanced_partition(const Topology& topology, const Placement& placement,
                                              const std::vector<std::uint32_t>& program_of_rank,
                                              pdes::LpId num_lps, pdes::ProcessId num_processes) {
  const std::uint32_t ranks = placement.devices();
  ORRERY_ASSERT(program_of_rank.size() == ranks && num_lps >= ranks && num_processes > 0,
                "a program per rank, and an LP per rank");
  constexpr std::uint32_t kUnseen = 0xffffffffU;
  std::vector<std::uint32_t> node_slot(topology.num_nodes(), kUnseen);  // index in its program's list
  std::vector<std::uint32_t> node_program(topology.num_nodes(), kUnseen);
  std::vector<std::uint32_t> nodes_of_program;
  for (std::uint32_t rank = 0; rank < ranks; ++rank) {
    const std::uint32_t node = topology.node_of(placement.endpoint_of(rank));
    if (node_slot[node] != kUnseen) {
      continue;
    }
    const std::uint32_t program = program_of_rank[rank];
    if (program >= nodes_of_program.size()) {
      nodes_of_program.resize(program + 1, 0);
    }
    node_program[node] = program;
    node_slot[node] = nodes_of_program[program]++;
  }
  // Program p's blocks start at process (nodes of programs before p) mod P, so that programs of
  // fewer nodes than processes are spread too.
  std::vector<std::uint64_t> rotation(nodes_of_program.size(), 0);
  for (std::size_t p = 1; p < nodes_of_program.size(); ++p) {
    rotation[p] = (rotation[p - 1] + nodes_of_program[p - 1]) % num_processes;
  }
  std::vector<pdes::ProcessId> owners(num_lps);
  for (pdes::LpId lp = 0; lp < num_lps; ++lp) {
    if (lp >= ranks) {
      owners[lp] = (lp - ranks) % num_processes;  // replica p on process p
      continue;
    }
    const std::uint32_t node = topology.node_of(placement.endpoint_of(lp));
    const std::uint32_t program = node_program[node];
    const std::uint64_t block =
        static_cast<std::uint64_t>(node_slot[node]) * num_processes / nodes_of_program[program];
    owners[lp] = static_cast<pdes::ProcessId>((block + rotation[program]) % num_processes);
  }
  return pdes::PartitionMap(std::move(owners), num_processes);
}

std::string NetworkPartitionReport::describe() const {
  std::string counts;
  for (std::size_t p = 0; p < endpoints_per_process.size(); ++p) {
    counts += fmt::format("{}{}", p == 0 ? "" : "/", endpoints_per_process[p]);
  }
  return fmt::format("{}; endpoints per process {}, cut links {} of {}", engine.describe(), counts, cut_links,
                     links);
}

NetworkPartitionReport report_network_partition(const Topology& topology, std::string_view partitioner,
                                                const pdes::PartitionMap& map,
                                                const pdes::ChannelTable& channels,
                                                const std::vector<pdes::LpId>* lp_of_endpoint) {
  NetworkPartitionReport report;
  report.engine = pdes::report_partition(partitioner, map, channels);
  const pdes::ProcessId processes = map.num_processes();
  report.endpoints_per_process.assign(processes, 0);
  // The process of an endpoint's LP, or none (an endpoint no rank uses).
  const auto endpoint_owner = [&](EndpointId e) -> std::optional<pdes::ProcessId> {
    const pdes::LpId lp =
        lp_of_endpoint == nullptr ? e : (e < lp_of_endpoint->size() ? (*lp_of_endpoint)[e] : map.num_lps());
    return lp < map.num_lps() ? std::optional<pdes::ProcessId>(map.owner(lp)) : std::nullopt;
  };
  // A unit's routers go with the process that holds most of its used endpoints (the lowest on a
  // tie; process 0 for a unit nobody uses).
  std::vector<std::vector<std::uint32_t>> unit_counts(topology.num_units(),
                                                      std::vector<std::uint32_t>(processes, 0));
  for (EndpointId e = 0; e < topology.num_endpoints(); ++e) {
    if (const auto owner = endpoint_owner(e)) {
      ++report.endpoints_per_process[*owner];
      ++unit_counts[topology.unit_of(e)][*owner];
    }
  }
  std::vector<pdes::ProcessId> unit_owner(topology.num_units(), 0);
  for (std::size_t u = 0; u < unit_counts.size(); ++u) {
    unit_owner[u] = static_cast<pdes::ProcessId>(
        std::max_element(unit_counts[u].begin(), unit_counts[u].end()) - unit_counts[u].begin());
  }
  const Graph& graph = topology.graph();
  auto owner_of = [&](VertexId v) -> pdes::ProcessId {
    const Vertex& vertex = graph.vertex(v);
    const EndpointId endpoint = vertex.kind == VertexKind::kDevice   ? v
                                : vertex.kind != VertexKind::kRouter ? topology.endpoint(vertex.domain, 0)
                                                                     : topology.num_endpoints();
    if (endpoint < topology.num_endpoints()) {
      return endpoint_owner(endpoint).value_or(unit_owner[topology.unit_of(endpoint)]);
    }
    const std::uint32_t unit = topology.unit_of_vertex(v);
    return unit == kSharedUnit ? v % processes : unit_owner[unit];
  };
  report.links = graph.num_links();
  for (const Link& link : graph.links()) {
    report.cut_links += owner_of(link.from) != owner_of(link.to) ? 1 : 0;
  }
  return report;
}

}  // namespace orrery::network
