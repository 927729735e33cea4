// The topology-aware partitioner: whole partition units (dragonfly groups, fat-tree pods, torus
// slabs; nodes when there are fewer units than processes) with their endpoints go to one
// process, in contiguous blocks balanced by endpoint count, so that few links cross processes.
// LP layout: LP e < endpoints is endpoint e's LP (or, given a placement, LP r < ranks is rank r
// on its endpoint); the next LP after those + p is process p's network replica
// (engine_network.h); further LPs go round-robin.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "network/topology/placement.h"
#include "network/topology/topology.h"
#include "pdes/partition.h"

namespace orrery::network {

class TopologyPartitioner final : public pdes::Partitioner {
 public:
  // With a placement, the first placement.devices() LPs are ranks, each with its endpoint's owner.
  explicit TopologyPartitioner(const Topology& topology, const Placement* placement = nullptr)
      : topology_(topology), placement_(placement) {}
  [[nodiscard]] std::string_view name() const override { return "topology"; }
  [[nodiscard]] pdes::PartitionMap assign(pdes::LpId num_lps, pdes::ProcessId num_processes) const override;
  // The process of each endpoint.
  [[nodiscard]] std::vector<pdes::ProcessId> endpoint_owners(pdes::ProcessId num_processes) const;

 private:
  const Topology& topology_;
  const Placement* placement_;
};

// For a workload of several programs (pipeline stages, Chakra graphs): every process runs an equal
// share, node by node, of every program of at least as many nodes as processes, so that the stages
// advance together and each window finds work on every process (the topology partitioner gives
// each process whole stages, which take turns).
// A node (scale-up domain) stays whole and goes with the program of its lowest rank; each
// program's nodes, in order of their lowest ranks, are dealt to the processes in contiguous
// blocks of equal size, starting at process (nodes of the programs before it) mod P, so that
// programs of fewer nodes than processes spread over them too. `program_of_rank[r]` is the program rank r
// runs; LPs are the ranks, then one network replica per process (as TopologyPartitioner with a placement lays
// them out).
pdes::PartitionMap program_balanced_partition(const Topology& topology, const Placement& placement,
                                              const std::vector<std::uint32_t>& program_of_rank,
                                              pdes::LpId num_lps, pdes::ProcessId num_processes);

// The engine's report (LPs per process, imbalance, cut channels) plus the fabric's: links whose
// two ends lie on different processes (routers of a unit go with the process holding most of its
// endpoints; shared routers, e.g. fat-tree top switches, round-robin by vertex id).
struct NetworkPartitionReport {
  pdes::PartitionReport engine;
  std::vector<std::uint32_t> endpoints_per_process;
  std::uint64_t links = 0;
  std::uint64_t cut_links = 0;
  [[nodiscard]] std::string describe() const;
};

// `lp_of_endpoint`: each endpoint's LP (a run's ranks by their placement; an LP id at or above
// the map's LPs for an endpoint nobody uses); null: LP e is endpoint e (`orrery traffic`).
// Endpoints per process count the used endpoints.
NetworkPartitionReport report_network_partition(const Topology& topology, std::string_view partitioner,
                                                const pdes::PartitionMap& map,
                                                const pdes::ChannelTable& channels,
                                                const std::vector<pdes::LpId>* lp_of_endpoint = nullptr);

}  // namespace orrery::network
