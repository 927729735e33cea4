// Which algorithm runs a collective: forced per kind by the scenario, or chosen by the "auto" rule
// (NCCL-like; docs/collectives.md):
//   permute, all-to-all        -> direct
//   broadcast                  -> ring (a pipelined chain)
//   all-reduce in one node     -> in_switch if the scale-up switch reduces, else ring
//   all-reduce across nodes    -> tree if p >= 16 and n <= 1 MiB (latency-bound);
//                                 hierarchical if every node holds the same number (> 1) of members;
//                                 ring otherwise
//   all-gather, reduce-scatter -> hierarchical across nodes when regular (> 1 member per node),
//                                 ring otherwise
#pragma once

#include <cstdint>
#include <optional>

#include "system/collective_plan.h"

namespace orrery::system {

struct SelectionContext {
  bool in_switch_reduction = false;  // the scale-up switch can reduce (NVLS)
};

inline constexpr std::uint64_t kTreeMaxBytes = 1ULL << 20;
inline constexpr std::uint32_t kTreeMinMembers = 16;

// `forced`: the scenario's choice for this kind, or nullopt for auto. Throws OrreryError(kConfig)
// when a forced algorithm cannot serve this group (the message names kind, algorithm and size).
Algorithm select_algorithm(CollectiveKind kind, std::optional<Algorithm> forced, const GroupShape& shape,
                           std::uint64_t bytes, const SelectionContext& context);

}  // namespace orrery::system
