// Which algorithm runs a collective: forced per kind by the scenario, or chosen by the "auto" rule
// (NCCL-like; docs/collectives.md, "The auto rule"):
//   permute, all-to-all        -> direct
//   broadcast                  -> ring (a pipelined chain)
//   all-reduce in one node     -> in_switch if the scale-up switch reduces, else ring
//   all-reduce across nodes    -> the fastest of ring, tree and (when every node holds the same
//                                 number > 1 of members) hierarchical by an alpha-beta estimate
//                                 of each (estimate_all_reduce), as NCCL's tuner picks by its
//                                 latency and bandwidth model
//   all-gather, reduce-scatter -> hierarchical across nodes when regular (> 1 member per node),
//                                 ring otherwise
#pragma once

#include <cstdint>
#include <optional>

#include "system/collective_plan.h"

namespace orrery::system {

// The cost of one message between two members: alpha (seconds: injection delay plus the path's
// latencies) and beta (seconds per byte: 1 / the bottleneck bandwidth).
struct MessageCost {
  double alpha_s = 0.0;
  double beta_s_per_byte = 0.0;
};

struct SelectionContext {
  bool in_switch_reduction = false;  // the scale-up switch can reduce (NVLS)
  MessageCost intra;      // between two members on one node
  MessageCost neighbour;  // from the first member to the first member of another node (a ring step)
  MessageCost far;        // from the first member to the last (the deepest tree edges)
};

// Alpha-beta estimates (seconds) of an all-reduce of `bytes` over `shape` on a contention-free
// network, per algorithm; nullopt where the algorithm cannot serve the group. p members on
// p2 nodes, p1 per node, n bytes:
//   ring:         2(p-1) a_nb + 2(p-1)/p n b_nb
//   tree:         2 floor(log2 p) a_far + 2 n b_far           (pipelined double binary tree)
//   hierarchical: 2(p1-1) a_in + 2(p1-1)/p1 n b_in + 2(p2-1) a_nb + 2(p2-1)/p2 (n/p1) b_nb
std::optional<double> estimate_all_reduce(Algorithm algorithm, const GroupShape& shape, std::uint64_t bytes,
                                          const SelectionContext& context);

// `forced`: the scenario's choice for this kind, or nullopt for auto. Throws OrreryError(kConfig)
// when a forced algorithm cannot serve this group (the message names kind, algorithm and size).
Algorithm select_algorithm(CollectiveKind kind, std::optional<Algorithm> forced, const GroupShape& shape,
                           std::uint64_t bytes, const SelectionContext& context);

}  // namespace orrery::system
