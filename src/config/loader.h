// Loading a YAML config file into a root struct, with --set overrides applied to the YAML tree
// before it is read (so an override is checked exactly like a key in the file).
#pragma once

#include <string>
#include <vector>

#include "config/yaml_reader.h"
#include "util/error.h"

namespace orrery::config {

// Applies "dotted.key=value" assignments to `root` (value parsed as YAML; numeric components
// index lists). Messages name an assignment "--set dotted.key=value"; one given as
// "--vary dotted.key=value" (a sweep point's value) is named so instead. Returns the normalised key path -> assignment map the reader uses to attribute
// errors to the override. Throws OrreryError(kConfig) for malformed assignments.
std::map<std::string, std::string> apply_overrides(YAML::Node& root,
                                                   const std::vector<std::string>& assignments);

// The key path of a "dotted.key=value" assignment, one component per entry (list indices without
// leading zeros). Throws OrreryError(kConfig) for a malformed assignment.
std::vector<std::string> override_path(const std::string& assignment);

// Parses text as YAML; a syntax error becomes an OrreryError with file:line:col and the line.
YAML::Node parse_yaml(const std::string& text, const std::string& file);

// Reads a file into a string; OrreryError(kIo) naming the file when it cannot be read.
std::string read_text_file(const std::string& path);

// Throws one OrreryError listing every problem (the first as the message, the rest as notes).
void throw_if_errors(const std::vector<Error>& errors);

template <class Root>
Root load_config_text(const std::string& text, const std::string& file,
                      const std::filesystem::path& base_directory,
                      const std::vector<std::string>& overrides) {
  YAML::Node root = parse_yaml(text, file);
  if (!root || root.IsNull()) {
    root = YAML::Node(YAML::NodeType::Map);
  }
  YamlSource source{file, text, base_directory, apply_overrides(root, overrides)};
  YamlReader reader(source);
  Root result{};
  reader.read_root(root, result);
  throw_if_errors(reader.errors());
  return result;
}

template <class Root>
Root load_config_file(const std::string& path, const std::vector<std::string>& overrides) {
  const std::string text = read_text_file(path);
  const std::filesystem::path base = std::filesystem::absolute(path).parent_path();
  return load_config_text<Root>(text, path, base, overrides);
}

}  // namespace orrery::config
