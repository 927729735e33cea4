#include "config/schema.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <numeric>

namespace orrery::config {

bool names_a_file(std::string_view text) {
  auto ends_with = [&](std::string_view suffix) {
    return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
  };
  return text.find('/') != std::string_view::npos || ends_with(".yaml") || ends_with(".yml") || ends_with(".json");
}

Error attributed_to(const FilePath& file, Error error) {
  if (file.key.empty()) {
    return error;
  }
  if (error.where && !error.where->file.empty()) {
    // The error is inside the file (its own line and column): say which key named the file.
    std::string named = "the file is named by " + file.key;
    if (file.where && !file.where->file.empty()) {
      named += file.where->line > 0
                   ? fmt::format(" ({}:{}:{})", file.where->file, file.where->line, file.where->column)
                   : fmt::format(" ({})", file.where->file);
    }
    error.notes.push_back(std::move(named));
    return error;
  }
  if (error.message.rfind(file.key + ":", 0) != 0) {
    error.message = fmt::format("{}: {}", file.key, error.message);
  }
  if (file.where) {
    error.where = file.where;
  }
  if (error.code == ErrorCode::kIo && !file.as_written.empty() &&
      !std::filesystem::path(file.as_written).is_absolute() && file.as_written != file.path) {
    error.notes.push_back(fmt::format("'{}' is relative, so it was resolved to '{}' ({})", file.as_written, file.path,
                                      file.where && file.where->line == 0
                                          ? "against the working directory, as every path given on the command line is"
                                          : "against the directory of the scenario file"));
  }
  return error;
}

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
