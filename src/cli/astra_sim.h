// ASTRA-sim's command line on Orrery (docs/chakra.md, "ASTRA-sim invocation"):
//   orrery run --workload-configuration PREFIX --system-configuration SYSTEM.json
//              --network-configuration NETWORK.yml [--remote-memory-configuration MEM.json]
//              [--comm-group-configuration GROUPS.json] [--set key=value]...
// The files are read unchanged and become a scenario (YAML text, so that --set and every check
// apply as to a scenario file): the network file an astra_sim topology on the analytical model,
// the system file's keys the system section, the traces the Chakra workload.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "util/error.h"

namespace orrery::cli {

struct AstraSimFiles {
  std::string workload;       // the trace prefix
  std::string system;         // system JSON
  std::string network;        // analytical network YAML
  std::string remote_memory;  // remote-memory JSON, or empty
  std::string comm_groups;    // communicator-group JSON, or empty (ASTRA-sim's "empty" too)
};

struct AstraSimScenario {
  std::string text;                  // the scenario, YAML
  std::vector<std::string> ignored;  // keys of the system file that Orrery does not model
  // Where each scenario key's value came from: (scenario key, "FILE: \"json-key\"" or "--option").
  std::vector<std::pair<std::string, std::string>> origins;
};

// The scenario. Throws OrreryError naming the file and key for a value Orrery cannot honour.
AstraSimScenario astra_sim_scenario(const AstraSimFiles& files);

// An error located in the scenario text (named `text_name` when loaded) is re-attributed to the
// ASTRA-sim file and key, or command-line option, its value came from; other errors are returned
// unchanged. Notes that name a scenario key of the text are re-attributed the same way.
Error attributed_to_astra_sim(Error error, const AstraSimScenario& scenario, const std::string& text_name);

}  // namespace orrery::cli
