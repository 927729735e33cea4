#include "config/scenario.h"

#include "config/doc_writer.h"
#include "config/loader.h"
#include "config/yaml_writer.h"

namespace orrery::config {

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  return load_config_file<Scenario>(path, overrides);
}

Scenario load_scenario_text(const std::string& text, const std::string& name,
                            const std::vector<std::string>& overrides) {
  return load_config_text<Scenario>(text, name, std::filesystem::current_path(), overrides);
}

std::string scenario_to_yaml(const Scenario& scenario) {
  Scenario copy = scenario;
  YAML::Emitter emitter;
  emitter << YamlWriter::write(copy);
  return std::string(emitter.c_str()) + "\n";
}

std::string scenario_reference_markdown() {
  DocWriter writer;
  Scenario defaults;
  writer.document("", defaults);
  return writer.markdown_table();
}

}  // namespace orrery::config
