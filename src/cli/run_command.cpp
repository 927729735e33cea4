// `orrery run SCENARIO.yaml [--set key=value]... [--trace RUN.h5 [--detail L]] [--summary-json PATH]`:
// simulate a scenario. With ASTRA-sim's options (--workload-configuration ...; cli/astra_sim.h)
// instead of a scenario file, run Chakra traces on ASTRA-sim's own configuration files.
#include <cstdio>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>

#include "cli/astra_sim.h"
#include "cli/commands.h"
#include "cli/mpi_command.h"
#include "cli/scenario_runner.h"
#include "cli/summary_output.h"
#include "config/scenario.h"

namespace orrery::cli {

Action register_run(CLI::App& app, const GlobalOptions& global) {
  struct Arguments {
    std::string scenario;
    std::vector<std::string> overrides;
    std::string summary_json;
    std::string trace;
    std::string detail;
    bool print_scenario = false;
    AstraSimFiles astra;
  };
  auto arguments = std::make_shared<Arguments>();
  auto* command = app.add_subcommand("run", "Simulate a scenario: programs on a system and network; print its summary.");
  command->add_option("scenario", arguments->scenario, "Scenario file (YAML; docs/config.md)");
  command->add_option("--workload-configuration", arguments->astra.workload,
                      "ASTRA-sim invocation: Chakra trace prefix (<prefix>.<rank>.et; docs/chakra.md)");
  command->add_option("--system-configuration", arguments->astra.system, "ASTRA-sim invocation: system JSON");
  command->add_option("--network-configuration", arguments->astra.network,
                      "ASTRA-sim invocation: analytical network YAML");
  command->add_option("--remote-memory-configuration", arguments->astra.remote_memory,
                      "ASTRA-sim invocation: remote-memory JSON (NO_MEMORY_EXPANSION only)");
  command->add_option("--comm-group-configuration", arguments->astra.comm_groups,
                      "ASTRA-sim invocation: communicator-group JSON");
  command->add_option("--set", arguments->overrides, "Override a scenario key: dotted.key=value (repeatable)")
      ->allow_extra_args(false);
  command->add_option("--summary-json", arguments->summary_json, "Also write the summary as JSON to this file");
  command->add_option("--trace", arguments->trace,
                      "Write the run's HDF5 trace to this file (as --set output.trace=PATH; docs/trace.md)");
  command->add_option("--detail", arguments->detail,
                      "What the trace keeps: summary, collectives, ops or transfers (as --set output.detail=L)");
  command->add_flag("--print-scenario", arguments->print_scenario,
                    "Print the resolved scenario (defaults and overrides applied) and exit");

  return [arguments, &global]() {
    return run_with_mpi(global, [&](pdes::Communicator& communicator) {
      config::Scenario scenario;
      std::string json_path = arguments->summary_json;
      std::vector<std::string> overrides = arguments->overrides;
      if (!arguments->trace.empty()) {
        overrides.push_back("output.trace=" + arguments->trace);
      }
      if (!arguments->detail.empty()) {
        overrides.push_back("output.detail=" + arguments->detail);
      }
      const AstraSimFiles& astra = arguments->astra;
      const bool astra_sim = !astra.workload.empty() || !astra.system.empty() || !astra.network.empty();
      std::string name = arguments->scenario;
      AstraSimScenario from_astra_sim;  // with ASTRA-sim's options: the scenario built from their files
      pdes::run_collectively(communicator, [&] {
        if (astra_sim) {
          if (!arguments->scenario.empty()) {
            throw OrreryError(ErrorCode::kConfig,
                              "give either a scenario file or ASTRA-sim's --workload-configuration, "
                              "--system-configuration and --network-configuration, not both");
          }
          if (astra.workload.empty() || astra.system.empty() || astra.network.empty()) {
            throw OrreryError(ErrorCode::kConfig,
                              "ASTRA-sim's invocation needs --workload-configuration, --system-configuration and "
                              "--network-configuration");
          }
          name = fmt::format("ASTRA-sim files ({})", astra.workload);
          from_astra_sim = astra_sim_scenario(astra);
          if (!from_astra_sim.ignored.empty() && communicator.rank() == 0) {
            std::fprintf(stderr, "orrery: note: %s: not modelled: %s\n", astra.system.c_str(),
                         fmt::format("{}", fmt::join(from_astra_sim.ignored, ", ")).c_str());
          }
          try {
            scenario = config::load_scenario_text(from_astra_sim.text, name, overrides);
          } catch (const OrreryError& error) {
            throw OrreryError(attributed_to_astra_sim(error.error(), from_astra_sim, name));
          }
        } else if (arguments->scenario.empty()) {
          throw OrreryError(ErrorCode::kConfig, "run needs a scenario file (or ASTRA-sim's --workload-configuration ...)");
        } else {
          scenario = config::load_scenario(arguments->scenario, overrides);
        }
        if (json_path.empty()) {
          json_path = scenario.output.summary_json.path;
        }
        if (communicator.rank() == 0 && !json_path.empty() && !arguments->print_scenario) {
          try {
            check_writable(json_path);
          } catch (const OrreryError& error) {
            if (arguments->summary_json.empty()) {  // named by output.summary_json: say where
              throw OrreryError(config::attributed_to(scenario.output.summary_json, error.error()));
            }
            Error named = error.error();
            named.message = "--summary-json: " + named.message;
            throw OrreryError(std::move(named));
          }
        }
      });
      if (arguments->print_scenario) {
        if (communicator.rank() == 0) {
          std::printf("%s", config::scenario_to_yaml(scenario).c_str());
        }
        return 0;
      }
      const RunResult result = [&] {
        try {
          return run_scenario(communicator, scenario);
        } catch (const OrreryError& error) {
          if (!astra_sim) {
            throw;
          }
          OrreryError located(attributed_to_astra_sim(error.error(), from_astra_sim, name));
          if (error.coordinated()) {
            located.mark_coordinated();
          }
          throw located;
        }
      }();
      if (communicator.rank() == 0) {
        std::printf("%s", summary_text(name, scenario, result).c_str());
        if (!json_path.empty()) {
          std::ofstream out(json_path);
          out << summary_json(scenario, result).dump(2) << "\n";
          if (!out) {
            throw OrreryError(ErrorCode::kIo, fmt::format("cannot write the summary to '{}'", json_path));
          }
        }
      }
      return 0;
    });
  };
}

}  // namespace orrery::cli
