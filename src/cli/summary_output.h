// The run summary as text (stdout) and as JSON (--summary-json; sweep rows).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "cli/scenario_runner.h"
#include "pdes/stats.h"

namespace orrery::cli {

std::string summary_text(const std::string& scenario_name, const config::Scenario& scenario, const RunResult& result);
nlohmann::json summary_json(const config::Scenario& scenario, const RunResult& result);

// One object per process of an engine run: `process`, `lps`, `events`, `windows`, `remote_sent`,
// `remote_received`, `peak_pending`, `event_s` (executing events), `sync_s` (exchanging events
// and agreeing on windows), `wall_s`, `events_per_s` (`orrery phold --json`'s `per_process`, a
// run summary's `engine_processes`).
nlohmann::json process_stats_json(const pdes::RunStats& stats);

// What the SPMD partitioner did to one program: `devices`, `annotated_values`,
// `inserted_collectives` (kind -> {"count", "bytes", "operand_bytes"}) and `replicated_ops`
// (`orrery inspect --partition --json`, and each entry of a run summary's `spmd_partitioned`).
nlohmann::json spmd_report_json(const workload::SpmdReport& report);

// Throws kIo when `path` cannot be written (its directory is missing or read-only, or it is a
// directory): run and sweep check their output files before simulating, so a long run is not
// lost to a typo in the path.
void check_writable(const std::string& path);

}  // namespace orrery::cli
