// From a scenario to a simulation: loads the hardware preset, parses every program, costs its ops
// with the scenario's estimator rules and hands everything to system::simulate. Shared by
// `orrery run` and `orrery sweep`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compute/hardware.h"
#include "config/scenario.h"
#include "pdes/communicator.h"
#include "system/simulation.h"
#include "workload/spmd_partition.h"

namespace orrery::cli {

struct ComputeStatistics {
  std::string hardware;
  std::string estimators;       // the rules, e.g. "roofline" or "table for gemm, else roofline"
  std::uint64_t lookups = 0;    // estimate requests (one per op of each program)
  std::uint64_t hits = 0;       // answered from the memo cache
  std::uint64_t fallbacks = 0;  // ops a table or plugin could not cost and another estimator did
};

struct RunResult {
  system::RunSummary summary;
  ComputeStatistics compute;
  std::vector<std::string> warnings;  // from the frontend (e.g. lenient unknown ops)
  // The programs Orrery's SPMD partitioner partitioned (pre-partitioning exports), by label.
  std::vector<std::pair<std::string, workload::SpmdReport>> partitioned;
  double wall_s = 0.0;                // set-up and simulation, this process
};

// Loads the hardware preset and the workload and costs every op: what system::simulate needs. The
// result's compute statistics and warnings are filled in. Throws OrreryError. With a communicator,
// every process of it calls this together: a Chakra job's traces are then read in blocks, one per
// process, and an error is the same on every process.
system::SimulationInput prepare_simulation(const config::Scenario& scenario, RunResult& result,
                                           pdes::Communicator* communicator = nullptr);

// Runs the scenario on `communicator` (every process calls it with the same scenario). Set-up
// errors are agreed across processes (run_collectively), so they never leave a process waiting.
RunResult run_scenario(pdes::Communicator& communicator, const config::Scenario& scenario);

// The scenario's hardware preset; an unknown name or unreadable file is reported at the
// `hardware` key (its scenario line, or the --set that gave it).
compute::Hardware load_scenario_hardware(const config::Scenario& scenario);

}  // namespace orrery::cli
