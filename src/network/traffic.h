// Synthetic traffic on a topology and model, run on the PDES engine with one LP per endpoint
// (`orrery traffic`). Two modes:
//   fixed size: every endpoint sends `bytes` to its pattern destination(s) at t = 0; reports the
//               completion time (last delivery) and per-link utilisation = bytes carried /
//               (bandwidth * completion time);
//   offered load: every endpoint sends `bytes`-sized messages with Poisson arrivals at rate
//               load * injection bandwidth / bytes until `duration`; reports the accepted load =
//               bytes delivered by `duration` / (sum of injection bandwidths * duration) and the
//               latency (delivery - send, injection delay included) of the delivered messages.
// Results are identical for any number of processes (tested under mpirun -np 1/2/4).
#pragma once

#include <optional>
#include <span>
#include <string>

#include "config/scenario.h"
#include "network/flow/flow_model.h"
#include "network/partitioner.h"
#include "pdes/communicator.h"
#include "pdes/stats.h"

namespace orrery::network {

enum class TrafficPattern {
  kUniformRandom,
  kShift,
  kRandomPermutation,
  kAllToAll,
  kRing,
  kDragonflyWorstCase,
  kBitComplement,
};
inline std::span<const config::EnumName<TrafficPattern>> enum_names(TrafficPattern) {
  static constexpr config::EnumName<TrafficPattern> kNames[] = {
      {TrafficPattern::kUniformRandom, "uniform_random"},
      {TrafficPattern::kShift, "shift"},
      {TrafficPattern::kRandomPermutation, "random_permutation"},
      {TrafficPattern::kAllToAll, "all_to_all"},
      {TrafficPattern::kRing, "ring"},
      {TrafficPattern::kDragonflyWorstCase, "dragonfly_worst_case"},
      {TrafficPattern::kBitComplement, "bit_complement"}};
  return kNames;
}

struct TrafficOptions {
  TrafficPattern pattern = TrafficPattern::kUniformRandom;
  std::optional<double> load;           // set: offered-load mode (fraction of injection bandwidth)
  std::uint64_t bytes = 1 << 20;        // message size
  double duration_us = 100.0;           // offered-load mode: simulated time
  std::uint32_t shift = 0;              // shift pattern distance; 0: half the endpoints
  std::uint32_t group_size = 0;         // all_to_all group; 0: the endpoints of a partition unit
  std::string partition = "auto";       // auto (topology-aware), block or round-robin
};

// Throws OrreryError(kConfig) naming the bad option.
void validate(const TrafficOptions& options);

struct TrafficResult {
  std::string topology;
  std::string model;
  std::string routing;
  std::string pattern;
  EndpointId endpoints = 0;
  std::uint64_t messages_sent = 0;
  std::uint64_t messages_delivered = 0;
  std::uint64_t bytes_delivered = 0;
  std::optional<double> completion_time_s;
  std::optional<double> offered_load;
  std::optional<double> accepted_load;
  std::optional<double> mean_latency_ns;
  std::optional<double> p99_latency_ns;
  std::optional<double> max_link_utilization;
  std::optional<double> mean_link_utilization;  // over links that carried traffic
  std::uint64_t links = 0;
  std::uint64_t links_used = 0;
  pdes::RunStats stats;
  NetworkPartitionReport partition;
  std::optional<FlowModelStats> flow;  // this process's replica
};

TrafficResult run_traffic(pdes::Communicator& communicator, const config::Scenario& scenario,
                          const TrafficOptions& options);

}  // namespace orrery::network
