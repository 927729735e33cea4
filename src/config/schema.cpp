#include "config/schema.h"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>

namespace orrery::config {

std::string Bounds::describe() const {
  if (min && max) {
    return min_exclusive ? fmt::format("> {} and <= {}", *min, *max) : fmt::format("{} to {}", *min, *max);
  }
  if (min) {
    return fmt::format("{} {}", min_exclusive ? ">" : ">=", *min);
  }
  if (max) {
    return fmt::format("<= {}", *max);
  }
  return "";
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> previous(b.size() + 1);
  std::vector<std::size_t> current(b.size() + 1);
  std::iota(previous.begin(), previous.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::string closest_match(std::string_view word, std::span<const std::string> candidates) {
  std::string best;
  std::size_t best_distance = 4;
  for (const auto& candidate : candidates) {
    const std::size_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

}  // namespace orrery::config
