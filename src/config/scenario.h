// The scenario: everything `orrery run` needs, as typed structs read from YAML (DESIGN.md,
// "Scenario"). docs/config.md is generated from these descriptions. Each section lives in its own
// header; this one ties them together.
#pragma once

#include <string>
#include <vector>

#include "config/compute_config.h"
#include "config/network_config.h"
#include "config/schema.h"
#include "config/system_config.h"
#include "config/workload_config.h"

namespace orrery::config {

enum class TraceDetail { kSummary, kCollectives, kOps, kTransfers };
inline std::span<const EnumName<TraceDetail>> enum_names(TraceDetail) {
  static constexpr EnumName<TraceDetail> kNames[] = {{TraceDetail::kSummary, "summary"},
                                                     {TraceDetail::kCollectives, "collectives"},
                                                     {TraceDetail::kOps, "ops"},
                                                     {TraceDetail::kTransfers, "transfers"}};
  return kNames;
}

struct OutputConfig {
  FilePath trace;
  TraceDetail detail = TraceDetail::kOps;
  FilePath summary_json;

  template <class V>
  void fields(V& v) {
    v("trace", trace,
      "HDF5 trace file to write (docs/trace.md; same as `orrery run --trace`); empty: no trace. "
      "Created before the run starts; its `complete` attribute is 1 once the run has written it "
      "all. `orrery sweep` rejects it.");
    v("detail", detail,
      "How much the trace keeps: per-rank and per-step summaries and links (summary), plus every "
      "collective, send and recv (collectives), plus every compute kernel (ops), plus every network "
      "transfer and the bytes on each link (transfers). Same as `orrery run --detail`.");
    v("summary_json", summary_json, "Write the run summary as JSON here (same as --summary-json).");
  }
};

struct SimulationConfig {
  std::uint64_t seed = 1;
  std::string partition = "auto";
  std::optional<double> end_time_s;

  template <class V>
  void fields(V& v) {
    v("seed", seed, "Seed of every random stream (one per LP): jitter, random placement, arrivals.");
    v("partition", partition,
      "How LPs are spread over MPI processes: topology (whole fabric units, scale-up domains kept whole), "
      "programs (each program's nodes spread over the processes, scale-up domains kept whole: pipeline "
      "stages advance together), auto (programs when the workload has several programs, else topology), "
      "block or "
      "round-robin (by rank).");
    v("end_time_s", end_time_s, "Stop the simulation at this simulated time (seconds); unset: run "
                                "to completion.", positive());
  }
  void validate(Problems& problems) const {
    if (partition != "auto" && partition != "topology" && partition != "programs" && partition != "block" &&
        partition != "round-robin") {
      problems.add("partition", "unknown partition '" + partition +
                                    "' (known: auto, topology, programs, block, round-robin)");
    }
  }
};

struct Scenario {
  NameOrPath hardware{"H100"};
  SystemConfig system;
  NetworkConfig network;
  WorkloadConfig workload;
  ComputeConfig compute;
  OutputConfig output;
  SimulationConfig simulation;

  template <class V>
  void fields(V& v) {
    v("hardware", hardware,
      "Accelerator preset: a name in configs/hardware (A100_40GB, H100, TPUv4, ...) or a path to a "
      "preset file (YAML, or a Hespas JSON node config); a value with a '/' or a .yaml/.yml/.json "
      "ending is a path, resolved like every other path.");
    v("system", system, "Nodes, the scale-up domain and collective algorithms.");
    v("network", network, "The scale-out fabric: topology, placement, routing and model.");
    v("workload", workload, "The programs to run and which ranks run each.");
    v("compute", compute, "Which estimator costs each op.");
    v("output", output, "Trace and summary files.");
    v("simulation", simulation, "Engine settings.");
  }
};

// Loads a scenario file with --set overrides. Throws OrreryError listing every problem with its
// file:line:col (or the override), key path and reason.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides);
Scenario load_scenario_text(const std::string& text, const std::string& name,
                            const std::vector<std::string>& overrides);

// The resolved scenario as YAML text.
std::string scenario_to_yaml(const Scenario& scenario);

// The generated reference table of every key (the body of docs/config.md).
std::string scenario_reference_markdown();

}  // namespace orrery::config
