// Helpers shared by the network tests: building topologies from YAML snippets.
#pragma once

#include <string>
#include <vector>

#include "config/scenario.h"
#include "network/topology/topology.h"

namespace orrery::network::testing {

// A scenario from YAML text (its system and network sections matter here).
inline config::Scenario scenario_from(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  return config::load_scenario_text(yaml, "test.yaml", overrides);
}

inline Topology topology_from(const std::string& yaml) {
  const config::Scenario scenario = scenario_from(yaml);
  return Topology::build(scenario.system, scenario.network);
}

}  // namespace orrery::network::testing
