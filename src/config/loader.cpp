#include "config/loader.h"

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace orrery::config {
namespace {

bool is_index(const std::string& component) {
  return !component.empty() && component.find_first_not_of("0123456789") == std::string::npos;
}

std::string line_of(const std::string& text, int line) {
  std::istringstream stream(text);
  std::string current;
  for (int i = 0; i <= line && std::getline(stream, current); ++i) {
  }
  return current;
}

void set_path(YAML::Node node, const std::vector<std::string>& path, std::size_t at,
              const YAML::Node& value, const std::string& assignment) {
  const std::string& component = path[at];
  const bool last = at + 1 == path.size();
  if (node.IsSequence()) {
    // Indices come without leading zeros (override_path); longer than 9 digits is past any list.
    if (!is_index(component) || component.size() > 9 || std::stoul(component) >= node.size()) {
      throw OrreryError(ErrorCode::kConfig,
                        fmt::format("--set {}: '{}' is not an index of a list with {} entries",
                                    assignment, component, node.size()));
    }
    const std::size_t index = std::stoul(component);
    if (last) {
      node[index] = value;
    } else {
      set_path(node[index], path, at + 1, value, assignment);
    }
    return;
  }
  if (!node.IsMap() && !node.IsNull()) {
    throw OrreryError(ErrorCode::kConfig,
                      fmt::format("--set {}: cannot set '{}' inside a scalar value", assignment, component));
  }
  if (last) {
    node[component] = value;
    return;
  }
  YAML::Node child = node[component];
  if (!child.IsDefined() || child.IsNull() || child.IsScalar()) {
    node[component] = YAML::Node(YAML::NodeType::Map);
  }
  set_path(node[component], path, at + 1, value, assignment);
}

}  // namespace

std::vector<std::string> override_path(const std::string& assignment) {
  const auto equals = assignment.find('=');
  if (equals == std::string::npos || equals == 0) {
    throw OrreryError(ErrorCode::kConfig, fmt::format("--set {}: expected key.path=value", assignment));
  }
  const std::string key = assignment.substr(0, equals);
  std::vector<std::string> path;
  std::size_t start = 0;
  while (true) {
    const auto dot = key.find('.', start);
    std::string component = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (component.empty()) {
      throw OrreryError(ErrorCode::kConfig, fmt::format("--set {}: empty key component", assignment));
    }
    if (is_index(component)) {  // "01" and "1" name one entry
      const auto nonzero = component.find_first_not_of('0');
      component = nonzero == std::string::npos ? "0" : component.substr(nonzero);
    }
    path.push_back(std::move(component));
    if (dot == std::string::npos) {
      return path;
    }
    start = dot + 1;
  }
}

std::map<std::string, std::string> apply_overrides(YAML::Node& root,
                                                   const std::vector<std::string>& assignments) {
  std::map<std::string, std::string> applied;
  for (const std::string& assignment : assignments) {
    const std::vector<std::string> path = override_path(assignment);
    const std::string value_text = assignment.substr(assignment.find('=') + 1);
    std::string normalised;
    for (const std::string& component : path) {
      normalised += is_index(component) ? "[" + component + "]" : (normalised.empty() ? "" : ".") + component;
    }
    YAML::Node value;
    try {
      value = value_text.empty() ? YAML::Node(YAML::NodeType::Null) : YAML::Load(value_text);
    } catch (const YAML::Exception& error) {
      throw OrreryError(ErrorCode::kConfig,
                        fmt::format("--set {}: the value is not valid YAML ({})", assignment, error.msg));
    }
    set_path(root, path, 0, value, assignment);
    applied[normalised] = assignment;
  }
  return applied;
}

YAML::Node parse_yaml(const std::string& text, const std::string& file) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& error) {
    const int line = error.mark.line;
    throw OrreryError(ErrorCode::kParse, "invalid YAML: " + error.msg,
                      SourceLocation{file, static_cast<std::uint32_t>(line + 1),
                                     static_cast<std::uint32_t>(error.mark.column + 1),
                                     line >= 0 ? line_of(text, line) : std::string()});
  }
}

std::string read_text_file(const std::string& path) {
  std::error_code status;
  if (std::filesystem::is_directory(path, status)) {
    throw OrreryError(ErrorCode::kIo, fmt::format("cannot read '{}': it is a directory", path));
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int reason = errno;
    throw OrreryError(ErrorCode::kIo, reason != 0 ? fmt::format("cannot read '{}': {}", path, std::strerror(reason))
                                                  : fmt::format("cannot read '{}'", path));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    throw OrreryError(ErrorCode::kIo, fmt::format("cannot read '{}': the read failed", path));
  }
  return buffer.str();
}

void throw_if_errors(const std::vector<Error>& errors) {
  if (errors.empty()) {
    return;
  }
  Error first = errors.front();
  for (std::size_t i = 1; i < errors.size(); ++i) {
    first.notes.push_back("also: " + errors[i].render());
  }
  throw OrreryError(std::move(first));
}

}  // namespace orrery::config
