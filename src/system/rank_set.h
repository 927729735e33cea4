// Sets of global ranks as scenarios write them: "all", or comma-separated ids and inclusive
// ranges ("0-3,8-11,16").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace orrery::system {

// The largest system Orrery accepts (2^26 ranks, the bound of workload.programs[].replicas and of
// every topology's size): rank ids are below it.
inline constexpr std::uint32_t kMaxRanks = 1U << 26;

// Parses `text` into sorted, distinct ranks. "all" needs `all_count` (the ranks of a run) and
// yields 0..all_count-1. Throws OrreryError(kConfig) naming `where` and the bad part.
std::vector<std::uint32_t> parse_rank_set(const std::string& text, std::uint32_t all_count, const std::string& where);

// The inverse for messages: "0-3,8".
std::string format_rank_set(const std::vector<std::uint32_t>& ranks);

}  // namespace orrery::system
