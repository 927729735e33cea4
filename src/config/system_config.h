// The `system` section: nodes, the scale-up domain, injection delay and collective algorithms.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "config/schema.h"

namespace orrery::config {

enum class CollectiveAlgorithm { kAuto, kRing, kTree, kHalvingDoubling, kDirect, kHierarchical, kInSwitch };
inline std::span<const EnumName<CollectiveAlgorithm>> enum_names(CollectiveAlgorithm) {
  static constexpr EnumName<CollectiveAlgorithm> kNames[] = {
      {CollectiveAlgorithm::kAuto, "auto"},
      {CollectiveAlgorithm::kRing, "ring"},
      {CollectiveAlgorithm::kTree, "tree"},
      {CollectiveAlgorithm::kHalvingDoubling, "halving_doubling"},
      {CollectiveAlgorithm::kDirect, "direct"},
      {CollectiveAlgorithm::kHierarchical, "hierarchical"},
      {CollectiveAlgorithm::kInSwitch, "in_switch"}};
  return kNames;
}

// How a rank's collectives queue for its communication streams.
enum class CommQueues { kSingle, kPerGroup };
inline std::span<const EnumName<CommQueues>> enum_names(CommQueues) {
  static constexpr EnumName<CommQueues> kNames[] = {{CommQueues::kSingle, "single"},
                                                    {CommQueues::kPerGroup, "per_group"}};
  return kNames;
}

struct ScaleUpConfig {
  double bandwidth_gbps = 450.0;
  double latency_ns = 300.0;
  bool in_switch_reduction = false;

  template <class V>
  void fields(V& v) {
    v("bandwidth_GBps", bandwidth_gbps,
      "Per-device scale-up bandwidth per direction (GB/s, 1e9 B/s), e.g. NVLink4 450. With an astra_sim topology "
      "(whose first dimension is the scale-up domain) it serves in-switch reduction only; a run warns when it is "
      "set there without it.",
      positive());
    v("latency_ns", latency_ns,
      "Device-to-device latency across the scale-up switch (ns); with an astra_sim topology as bandwidth_GBps.",
      nonnegative());
    v("in_switch_reduction", in_switch_reduction,
      "The scale-up switch reduces in the network (NVLink SHARP / NVLS).");
  }
};

struct CollectiveChoice {
  CollectiveAlgorithm all_reduce = CollectiveAlgorithm::kAuto;
  CollectiveAlgorithm all_gather = CollectiveAlgorithm::kAuto;
  CollectiveAlgorithm reduce_scatter = CollectiveAlgorithm::kAuto;
  CollectiveAlgorithm all_to_all = CollectiveAlgorithm::kAuto;
  CollectiveAlgorithm collective_broadcast = CollectiveAlgorithm::kAuto;

  template <class V>
  void fields(V& v) {
    v("all_reduce", all_reduce, "Algorithm for all-reduce; auto follows the NCCL-like rule in docs/collectives.md.");
    v("all_gather", all_gather, "Algorithm for all-gather.");
    v("reduce_scatter", reduce_scatter, "Algorithm for reduce-scatter.");
    v("all_to_all", all_to_all, "Algorithm for all-to-all: auto or direct, its only decomposition (another is an error).");
    v("collective_broadcast", collective_broadcast, "Algorithm for broadcast.");
  }
  void validate(Problems& problems) const {
    if (all_to_all != CollectiveAlgorithm::kAuto && all_to_all != CollectiveAlgorithm::kDirect) {
      problems.add("all_to_all", "an all-to-all is decomposed only as direct sends: use auto or direct");
    }
  }
};

struct StragglerConfig {
  std::uint32_t rank = 0;
  double slowdown_percent = 10.0;

  template <class V>
  void fields(V& v) {
    v("rank", rank, "Global rank that runs slow.");
    v("slowdown_percent", slowdown_percent, "Its compute ops take this much longer (10: 10% longer).",
      nonnegative());
  }
};

struct SystemConfig {
  std::uint32_t devices_per_node = 8;
  ScaleUpConfig scale_up;
  double endpoint_delay_ns = 1000.0;
  double collective_launch_ns = 0.0;
  double p2p_launch_ns = 0.0;
  std::uint64_t p2p_eager_bytes = 4194304;  // NCCL_BUFFSIZE's default
  std::uint64_t combine_threshold_bytes = 31457287;  // XLA's kDefaultAllReduceCombineThreshold
  CollectiveChoice collectives;
  std::uint32_t chunks = 4;
  std::uint32_t chunks_in_flight = 0;
  std::uint32_t comm_streams = 1;
  CommQueues comm_queues = CommQueues::kSingle;
  double reduction_gbps = 0.0;
  double interference = 0.0;
  double jitter_cv = 0.0;
  std::vector<StragglerConfig> stragglers;

  template <class V>
  void fields(V& v) {
    v("devices_per_node", devices_per_node, "Devices in one scale-up domain (node).", at_least(1));
    v("scale_up", scale_up, "The scale-up domain (NVSwitch-like) inside a node.");
    v("endpoint_delay_ns", endpoint_delay_ns,
      "Injection delay every transfer pays before it reaches the network (ns); also the engine's "
      "lookahead, so it must be positive.",
      positive());
    v("collective_launch_ns", collective_launch_ns,
      "Fixed cost of starting a collective on each rank before its first transfer (ns): a library's "
      "kernel launch and setup, as NCCL's. Not for collective_permute and all_to_all, which take "
      "system.p2p_launch_ns. 0: none.",
      nonnegative());
    v("p2p_launch_ns", p2p_launch_ns,
      "Fixed cost of starting a point-to-point op on each rank before its first transfer (ns): a send, a "
      "recv, and the collectives a library runs as grouped sends and recvs (collective_permute and "
      "all_to_all, as XLA's GPU runtime does with NCCL). 0: none.",
      nonnegative());
    v("p2p_eager_bytes", p2p_eager_bytes,
      "Bytes of a point-to-point send that move before its receiver has posted the matching recv (a "
      "library's connection buffer; default NCCL_BUFFSIZE's 4 MiB). The rest of a larger send moves "
      "once the receiver's clear-to-send notice reaches the sender, so a sender cannot run ahead of "
      "its receiver by more than this. The same holds a collective_permute's or collective_broadcast's "
      "sends to one peer beyond this many bytes until that peer has started the collective.");
    v("combine_threshold_bytes", combine_threshold_bytes,
      "Combine independent all-reduces (and all-gathers, reduce-scatters) of one computation with the "
      "same key (kind, reduction, element type, groups) into one collective of at most this many bytes "
      "(the results' sizes), as XLA's GPU combiner passes do before "
      "a program runs (default: XLA's 30 MiB + 7 B); 0: run every collective as written.");
    v("collectives", collectives, "Collective algorithm per kind.");
    v("chunks", chunks, "Chunks a collective is split into and pipelined (ASTRA-sim's preferred-dataset-splits).",
      between(1, 256));  // the simulator's message tags hold 8 bits of chunk index
    v("chunks_in_flight", chunks_in_flight,
      "Chunks of one collective in flight at once per member (ASTRA-sim's active-chunks-per-dimension); "
      "0: all of them (pipelined, as NCCL).");
    v("comm_streams", comm_streams,
      "Collectives a rank runs at once from each of its queues (system.comm_queues); a queue issues its "
      "collectives in program order.",
      at_least(1));
    v("comm_queues", comm_queues,
      "How a rank's collectives queue: single -- one queue of all of them in program order, as XLA's "
      "collective stream; per_group -- one queue per set of device groups (a communicator: the ops with the "
      "same replica groups), each in program order, as PyTorch's ProcessGroupNCCL runs each process group "
      "on a stream of its own, so a data-parallel bucket does not wait behind a tensor-parallel collective.");
    v("reduction_GBps", reduction_gbps,
      "Rate at which a device reduces received collective data (GB/s); 0: the hardware's memory bandwidth.",
      nonnegative());
    v("interference", interference,
      "Compute slowdown while a collective runs on the same rank: a compute op that starts while one is "
      "in flight takes (1 + interference) times longer (0.1: 10%).",
      nonnegative());
    v("jitter_cv", jitter_cv,
      "Seeded per-op compute jitter: each compute op's time is multiplied by max(0, 1 + jitter_cv * N(0, 1)) "
      "drawn from its rank's random stream.",
      nonnegative());
    v("stragglers", stragglers, "Ranks whose compute runs slower.");
  }
};

}  // namespace orrery::config
