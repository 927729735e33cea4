#include "network/partitioner.h"

#include <fmt/format.h>

#include <algorithm>

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
                                                const pdes::PartitionMap& map, const pdes::ChannelTable& channels) {
  NetworkPartitionReport report;
  report.engine = pdes::report_partition(partitioner, map, channels);
  const pdes::ProcessId processes = map.num_processes();
  report.endpoints_per_process.assign(processes, 0);
  std::vector<pdes::ProcessId> unit_owner(topology.num_units(), 0);
  for (EndpointId e = 0; e < topology.num_endpoints(); ++e) {
    const pdes::ProcessId owner = e < map.num_lps() ? map.owner(e) : 0;
    ++report.endpoints_per_process[owner];
    unit_owner[topology.unit_of(e)] = owner;
  }
  const Graph& graph = topology.graph();
  auto owner_of = [&](VertexId v) -> pdes::ProcessId {
    const Vertex& vertex = graph.vertex(v);
    if (vertex.kind == VertexKind::kDevice) {
      return v < map.num_lps() ? map.owner(v) : 0;
    }
    if (vertex.kind != VertexKind::kRouter) {
      const EndpointId first = topology.endpoint(vertex.domain, 0);
      return first < map.num_lps() ? map.owner(first) : 0;
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
