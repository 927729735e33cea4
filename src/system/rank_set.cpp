#include "system/rank_set.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>

#include "util/error.h"

namespace orrery::system {
namespace {

std::uint32_t parse_rank(std::string_view text, const std::string& where, const std::string& whole) {
  std::uint32_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    throw OrreryError(ErrorCode::kConfig,
                      fmt::format("{}: '{}' in rank set '{}' is not a rank number", where, text, whole));
  }
  if (value >= kMaxRanks) {
    throw OrreryError(ErrorCode::kConfig, fmt::format("{}: rank {} in rank set '{}' is out of range (ranks are 0 to {})",
                                                      where, value, whole, kMaxRanks - 1));
  }
  return value;
}

}  // namespace

std::vector<std::uint32_t> parse_rank_set(const std::string& text, std::uint32_t all_count, const std::string& where) {
  if (text == "all") {
    std::vector<std::uint32_t> all(all_count);
    for (std::uint32_t i = 0; i < all_count; ++i) {
      all[i] = i;
    }
    return all;
  }
  std::vector<std::uint32_t> ranks;
  std::string_view rest(text);
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    std::string_view part = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    while (!part.empty() && part.front() == ' ') {
      part.remove_prefix(1);
    }
    while (!part.empty() && part.back() == ' ') {
      part.remove_suffix(1);
    }
    const auto dash = part.find('-');
    if (dash == std::string_view::npos) {
      ranks.push_back(parse_rank(part, where, text));
      continue;
    }
    const std::uint32_t first = parse_rank(part.substr(0, dash), where, text);
    const std::uint32_t last = parse_rank(part.substr(dash + 1), where, text);
    if (last < first) {
      throw OrreryError(ErrorCode::kConfig, fmt::format("{}: range '{}' in '{}' runs backwards", where, part, text));
    }
    if (last - first >= (1U << 24)) {
      throw OrreryError(ErrorCode::kConfig, fmt::format("{}: range '{}' in '{}' is too large", where, part, text));
    }
    for (std::uint32_t r = first; r <= last; ++r) {
      ranks.push_back(r);
    }
  }
  if (ranks.empty()) {
    throw OrreryError(ErrorCode::kConfig, fmt::format("{}: empty rank set", where));
  }
  std::sort(ranks.begin(), ranks.end());
  const auto duplicate = std::adjacent_find(ranks.begin(), ranks.end());
  if (duplicate != ranks.end()) {
    throw OrreryError(ErrorCode::kConfig, fmt::format("{}: rank {} appears twice in '{}'", where, *duplicate, text));
  }
  return ranks;
}

std::string format_rank_set(const std::vector<std::uint32_t>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) {
      ++j;
    }
    out += out.empty() ? "" : ",";
    out += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace orrery::system
