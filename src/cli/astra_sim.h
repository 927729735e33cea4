// ASTRA-sim's command line on Orrery (docs/chakra.md, "ASTRA-sim invocation"):
//   orrery run --workload-configuration PREFIX --system-configuration SYSTEM.json
//              --network-configuration NETWORK.yml [--remote-memory-configuration MEM.json]
//              [--comm-group-configuration GROUPS.json] [--set key=value]...
// The files are read unchanged and become a scenario (YAML text, so that --set and every check
// apply as to a scenario file): the network file an astra_sim topology on the analytical model,
// the system file's keys the system section, the traces the Chakra workload.
#pragma once

#include <string>
#include <vector>

namespace orrery::cli {

struct AstraSimFiles {
  std::string workload;       // the trace prefix
  std::string system;         // system JSON
  std::string network;        // analytical network YAML
  std::string remote_memory;  // remote-memory JSON, or empty
  std::string comm_groups;    // communicator-group JSON, or empty (ASTRA-sim's "empty" too)
};

// The scenario text. Keys of the system file that Orrery does not model are listed in `ignored`.
// Throws OrreryError naming the file and key for a value Orrery cannot honour.
std::string astra_sim_scenario(const AstraSimFiles& files, std::vector<std::string>& ignored);

}  // namespace orrery::cli
