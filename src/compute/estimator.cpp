#include "compute/estimator.h"

#include <array>
#include <utility>

namespace orrery::compute {
namespace {

constexpr std::array<std::pair<Bound, std::string_view>, 6> kBoundNames{{{Bound::kCompute, "compute"},
                                                                         {Bound::kMemory, "memory"},
                                                                         {Bound::kOverhead, "overhead"},
                                                                         {Bound::kMeasured, "measured"},
                                                                         {Bound::kExternal, "external"},
                                                                         {Bound::kNone, "none"}}};

}  // namespace

std::string_view name(Bound bound) {
  for (const auto& [value, text] : kBoundNames) {
    if (value == bound) {
      return text;
    }
  }
  return "?";
}

std::optional<Bound> parse_bound(std::string_view text) {
  for (const auto& [value, spelling] : kBoundNames) {
    if (spelling == text) {
      return value;
    }
  }
  return std::nullopt;
}

const Estimate& EstimateCache::estimate(const OpSignature& op) {
  ++stats_.lookups;
  if (const auto it = entries_.find(op); it != entries_.end()) {
    ++stats_.hits;
    return it->second;
  }
  return entries_.emplace(op, estimator_.estimate(op, hardware_)).first->second;
}

void EstimateCache::clear() {
  entries_.clear();
  stats_ = CacheStats{};
}

}  // namespace orrery::compute
