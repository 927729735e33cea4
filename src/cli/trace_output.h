// The run's HDF5 trace (output.trace; docs/trace.md): the tables of system::TraceRecord written
// with trace::Writer, and the run's metadata as root attributes.
#pragma once

#include <string>

#include "cli/scenario_runner.h"
#include "config/scenario.h"
#include "system/simulation.h"
#include "trace/writer.h"

namespace orrery::cli {

// The attributes known before the run (schema, version, the scenario as YAML, detail): a trace
// whose run fails still says what it is. Every process calls it, right after creating the file.
void begin_trace(trace::Writer& writer, const config::Scenario& scenario);

// Writes every table of `record` and the run's results as attributes, then
// marks the file complete. Every process calls it; `process` is its index in the run, of
// `processes`.
void write_trace(trace::Writer& writer, const RunResult& result,
                 const system::TraceRecord& record, std::uint32_t process, std::uint32_t processes);

}  // namespace orrery::cli
