// The topology-aware partitioner: whole partition units (dragonfly groups, fat-tree pods, torus
// slabs; nodes when there are fewer units than processes) with their endpoints go to one
// process, in contiguous blocks balanced by endpoint count, so that few links cross processes.
// LP layout: LP e < endpoints is endpoint e's LP (or, given a placement, LP r < ranks is rank r
// on its endpoint); the next LP after those + p is process p's network replica
// (engine_network.h); further LPs go round-robin.
#pragma once

#include <string>

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

// The engine's report (LPs per process, imbalance, cut channels) plus the fabric's: links whose
// two ends lie on different processes (routers of a unit go with the unit; shared routers, e.g.
// fat-tree top switches, round-robin by vertex id).
struct NetworkPartitionReport {
  pdes::PartitionReport engine;
  std::vector<std::uint32_t> endpoints_per_process;
  std::uint64_t links = 0;
  std::uint64_t cut_links = 0;
  [[nodiscard]] std::string describe() const;
};

NetworkPartitionReport report_network_partition(const Topology& topology, std::string_view partitioner,
                                                const pdes::PartitionMap& map, const pdes::ChannelTable& channels);

}  // namespace orrery::network
