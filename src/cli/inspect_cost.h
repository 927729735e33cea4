// `orrery inspect FILE --cost --hardware NAME [--estimator NAME] [--json]`: the per-op-class FLOPs,
// bytes and estimated compute time of one device's program, counting executions (loop bodies
// times their trip counts, called functions once per call). docs/compute.md, "orrery inspect --cost".
#pragma once

#include <string>
#include <vector>

#include "frontend/stablehlo/stablehlo.h"

namespace orrery::cli {

struct InspectCostOptions {
  std::string hardware;               // a preset name or a path
  std::string estimator = "roofline";  // roofline, systolic, table or plugin
  std::vector<std::string> tables;    // --table, for the table estimator
  std::string plugin;                 // --plugin, for the plugin estimator
  std::string f32_matmul = "tf32";
  std::string fusion = "regions";     // --fusion: none, elementwise or regions (the scenario default)
  bool no_inline = false;             // --no-inline: keep calls as boundaries (compute.inline_calls false)
  std::size_t top = 0;                // --top: list this many kernels, costliest (time x executions) first
};

// Prints the cost report of every module (text, or one JSON object with --json). Throws
// OrreryError for an unknown preset or estimator, an estimator failure, or a loop whose trip count
// is unknown.
int print_costs(const std::string& file, const std::vector<frontend::stablehlo::ParsedModule>& modules,
                const InspectCostOptions& options, bool json);

}  // namespace orrery::cli
