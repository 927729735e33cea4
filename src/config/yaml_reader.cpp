#include "config/yaml_reader.h"

#include <fmt/ranges.h>
#include <sstream>

namespace orrery::config {

YamlReader::YamlReader(const YamlSource& source) : source_(source) {
  std::istringstream stream(source.text);
  std::string line;
  while (std::getline(stream, line)) {
    lines_.push_back(line);
  }
}

const std::string* YamlReader::override_for(const std::string& path) const {
  // An override covers its own path and everything below it.
  for (const auto& [key, assignment] : source_.overrides) {
    if (path == key || (path.size() > key.size() && path.compare(0, key.size(), key) == 0 &&
                        (path[key.size()] == '.' || path[key.size()] == '['))) {
      return &assignment;
    }
  }
  return nullptr;
}

SourceLocation YamlReader::location_of(const YAML::Node& node, const std::string& path) const {
  if (const std::string* assignment = override_for(path)) {
    return SourceLocation{*assignment, 0, 0, {}};
  }
  if (node && node.Mark().line >= 0 && !node.Mark().is_null()) {
    const auto line = static_cast<std::uint32_t>(node.Mark().line);
    return SourceLocation{source_.file, line + 1, static_cast<std::uint32_t>(node.Mark().column) + 1,
                          line < lines_.size() ? lines_[line] : std::string()};
  }
  return SourceLocation{source_.file, 0, 0, {}};
}

void YamlReader::error_at(const YAML::Node& node, const std::string& path, const std::string& reason) {
  Error error;
  error.code = ErrorCode::kConfig;
  error.message = fmt::format("{}: {}", path, reason);
  error.where = location_of(node, path);
  errors_.push_back(std::move(error));
}

bool YamlReader::expect_scalar(const YAML::Node& node, const std::string& path, std::string_view what) {
  if (node.IsScalar()) {
    return true;
  }
  error_at(node, path, fmt::format("expected {}, got a {}", what,
                                   node.IsMap() ? "mapping" : node.IsSequence() ? "list" : "null value"));
  return false;
}

YAML::Node YamlReader::find_child(const YAML::Node& node, const std::string& key) {
  if (!node || !node.IsMap()) {
    return YAML::Node();
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == key) {
      return it->second;
    }
  }
  return YAML::Node();
}

void YamlReader::check_unknown_keys(const Frame& frame) {
  if (!frame.node || !frame.node.IsMap()) {
    return;
  }
  std::set<std::string> seen;
  for (auto it = frame.node.begin(); it != frame.node.end(); ++it) {
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string("?");
    const std::string path = join(frame.path, key);
    if (!seen.insert(key).second) {
      error_at(it->first, path, "duplicate key");
      continue;
    }
    if (std::find(frame.known.begin(), frame.known.end(), key) != frame.known.end()) {
      continue;
    }
    const std::string suggestion = closest_match(key, frame.known);
    std::string reason = fmt::format("unknown key '{}'", key);
    if (!suggestion.empty()) {
      reason += fmt::format(" (did you mean '{}'?)", suggestion);
    }
    reason += fmt::format("; known keys here: {}", fmt::join(frame.known, ", "));
    error_at(it->first, path, reason);
  }
}

std::string YamlReader::resolve_path(const std::string& text, const std::string& path) const {
  if (text.empty()) {
    return text;
  }
  std::filesystem::path file(text);
  if (file.is_absolute()) {
    return file.lexically_normal().string();
  }
  const std::filesystem::path base =
      override_for(path) != nullptr ? std::filesystem::current_path() : source_.base_directory;
  return (base / file).lexically_normal().string();
}

}  // namespace orrery::config
