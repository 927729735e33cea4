// Basic vocabulary of the PDES engine: logical-process ids, process ids, priorities, LP ranges
// and the tie-break key that orders simultaneous events (DESIGN.md, invariant 2).
#pragma once

#include <cstdint>

#include "util/units.h"

namespace orrery::pdes {

using LpId = std::uint32_t;
using ProcessId = std::uint32_t;

// Lower priorities run first among events at the same time.
using Priority = std::uint8_t;
inline constexpr Priority kMaxPriority = 15;

// The tie-break key packs (priority, source LP, per-source sequence) into 64 bits:
// 4 bits of priority, 28 bits of source LP, 32 bits of sequence. Sequences are compared modulo
// 2^32; since every field is independent of the partition, the order stays deterministic even
// after a sequence wraps.
inline constexpr std::uint32_t kMaxLps = 1U << 28;

constexpr std::uint64_t make_tie(Priority priority, LpId source, std::uint32_t sequence) {
  return (static_cast<std::uint64_t>(priority) << 60) | (static_cast<std::uint64_t>(source) << 32) |
         sequence;
}
constexpr Priority tie_priority(std::uint64_t tie) { return static_cast<Priority>(tie >> 60); }
constexpr LpId tie_source(std::uint64_t tie) { return static_cast<LpId>((tie >> 32) & (kMaxLps - 1)); }
constexpr std::uint32_t tie_sequence(std::uint64_t tie) { return static_cast<std::uint32_t>(tie); }

// A contiguous range of LP ids [first, first + count).
struct LpRange {
  LpId first = 0;
  LpId count = 0;
  [[nodiscard]] constexpr LpId end() const { return first + count; }
  [[nodiscard]] constexpr bool contains(LpId lp) const { return lp >= first && lp < end(); }
  static constexpr LpRange single(LpId lp) { return LpRange{lp, 1}; }
};

// An event as a handler sees it.
template <class Payload>
struct Event {
  SimTime time;
  LpId destination = 0;
  LpId source = 0;
  std::uint32_t sequence = 0;
  Priority priority = 0;
  Payload payload{};
};

// The payload of models whose events carry no data (PHOLD).
struct NoPayload {};

}  // namespace orrery::pdes
