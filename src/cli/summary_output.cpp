#include "cli/summary_output.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <limits>

#include "config/scenario.h"
#include "pdes/stats.h"
#include "util/error.h"

namespace orrery::cli {
namespace {

std::string seconds(double s) {
  if (s >= 1.0) {
    return fmt::format("{:.3f} s", s);
  }
  if (s >= 1e-3) {
    return fmt::format("{:.3f} ms", s * 1e3);
  }
  return fmt::format("{:.3f} us", s * 1e6);
}

std::string bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (b >= 1024.0 && unit < 4) {
    b /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.1f} {}", b, units[unit]);
}

nlohmann::json spread(const system::Spread& s) { return {{"min", s.min}, {"mean", s.mean}, {"max", s.max}}; }

nlohmann::json totals(const std::vector<system::OpTotal>& list) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& op : list) {
    out.push_back({{"op", op.name}, {"what", op.what}, {"executions", op.executions}, {"seconds", op.seconds}});
  }
  return out;
}

}  // namespace

std::string summary_text(const std::string& scenario_name, const config::Scenario& scenario, const RunResult& result) {
  const system::RunSummary& s = result.summary;
  std::string out = fmt::format("Orrery run: {}\n", scenario_name);
  out += fmt::format("  hardware   {} x {} ranks ({})\n", result.compute.hardware, s.ranks, result.compute.estimators);
  out += fmt::format("  network    {}; {} model\n", s.topology, s.network_model);
  if (s.step_end_s.empty()) {
    out += "\nstep time    none: no step completed (simulation.end_time_s came first; see the warnings below)";
  } else {
    out += fmt::format("\nstep time    {}", seconds(s.step_time_s));
  }
  if (s.step_end_s.size() > 1) {
    out += fmt::format("  (steady state over {} steps; first step {})", s.step_end_s.size(), seconds(s.first_step_s));
  }
  out += "\n\nper rank, per step      min          mean         max\n";
  auto row = [&](const char* name, const system::Spread& x) {
    out += fmt::format("  {:<20} {:>12} {:>12} {:>12}\n", name, seconds(x.min), seconds(x.mean), seconds(x.max));
  };
  row("compute", s.compute_s);
  row("communication", s.comm_s);
  row("exposed comm", s.exposed_comm_s);
  row("idle", s.idle_s);
  // A run stopped by simulation.end_time_s inside a step: the op totals include that step's work
  // but are divided by the completed steps, so say so rather than show a bare "x1.5".
  const bool stopped_inside_a_step = !s.step_end_s.empty() && s.step_end_s.size() < s.steps;
  const std::string per_step = stopped_inside_a_step
                                   ? fmt::format("per rank per completed step, with the work of the unfinished step {}",
                                                 s.step_end_s.size() + 1)
                                   : std::string("per rank per step");
  if (!s.top_ops.empty()) {
    out += fmt::format("\ntop compute ops ({})\n", per_step);
    for (const auto& op : s.top_ops) {
      const bool fused = op.what.starts_with("fusion");
      out += fmt::format("  {:>12}  x{:<4g} {}{}{}\n", seconds(op.seconds), op.executions, op.name, fused ? ": " : "",
                         fused ? op.what : "");
    }
  }
  if (!s.top_collectives.empty()) {
    out += fmt::format("\ntop collectives ({}, issue to completion)\n", per_step);
    for (const auto& op : s.top_collectives) {
      out += fmt::format("  {:>12}  x{:<6g} {}  {}\n", seconds(op.seconds), op.executions, op.what, op.name);
    }
  }
  if (!s.algorithms.empty()) {
    out += "\ncollective algorithms: ";
    for (std::size_t i = 0; i < s.algorithms.size(); ++i) {
      out += (i == 0 ? "" : ", ") + s.algorithms[i];
    }
    out += "\n";
  }
  out += fmt::format("network: {} transfers, {}\n", s.transfers, bytes(static_cast<double>(s.transfer_bytes)));
  for (const auto& memory : s.memory) {
    out += fmt::format("memory: {} peak {} per device ({} arguments) of {}{}\n", memory.program,
                       bytes(static_cast<double>(memory.peak)), bytes(static_cast<double>(memory.arguments)),
                       bytes(static_cast<double>(memory.capacity)),
                       memory.peak_at.empty() ? std::string()
                                              : fmt::format("; peak at op {} of {} in program order: {}",
                                                            memory.peak_op, memory.ops, memory.peak_at));
  }
  const auto& compute = result.compute;
  out += fmt::format("compute costing: {} estimates, {:.1f}% from the cache, {} fallbacks\n", compute.lookups,
                     compute.lookups > 0 ? 100.0 * static_cast<double>(compute.hits) / static_cast<double>(compute.lookups) : 0.0,
                     compute.fallbacks);
  std::uint64_t peak_pending = 0;  // the largest pending-event set of any process (memory sizing)
  for (const auto& process : s.engine.processes) {
    peak_pending = std::max(peak_pending, process.peak_pending);
  }
  out += fmt::format("engine: {} events, {} windows ({:.4g} per simulated second), {} processes, {}; "
                     "at most {} events pending on a process\n",
                     s.engine.events, s.engine.windows, s.engine.windows_per_simulated_second(),
                     s.engine.processes.size(), s.partition, peak_pending);
  if (s.engine.processes.size() > 1) {
    // Load balance: what each process executed, and the busiest's time (every process ends at the
    // same final synchronisation, so wall times do not tell which one bounded the run).
    std::uint64_t least = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t most = 0;
    const pdes::ProcessStats* busiest = &s.engine.processes.front();
    for (const auto& process : s.engine.processes) {
      least = std::min(least, process.events);
      most = std::max(most, process.events);
      if (process.event_seconds > busiest->event_seconds) {
        busiest = &process;
      }
    }
    const double mean = static_cast<double>(s.engine.events) / static_cast<double>(s.engine.processes.size());
    out += fmt::format(
        "engine load: events per process {} min, {:.0f} mean, {} max ({:.2f} x the mean); busiest "
        "process {}: {:.3f} s executing events, {:.3f} s synchronising\n",
        least, mean, most, mean > 0 ? static_cast<double>(most) / mean : 0.0, busiest->process,
        busiest->event_seconds, busiest->sync_seconds);
  }
  out += fmt::format("wall time: {:.3f} s ({:.3f} s simulating)\n", result.wall_s, s.engine.wall_seconds);
  for (const auto& warning : result.warnings) {
    out += "warning: " + warning + "\n";
  }
  for (const auto& warning : s.warnings) {
    out += "warning: " + warning + "\n";
  }
  (void)scenario;
  return out;
}

nlohmann::json summary_json(const config::Scenario& scenario, const RunResult& result) {
  const system::RunSummary& s = result.summary;
  nlohmann::json memory = nlohmann::json::array();
  for (const auto& m : s.memory) {
    memory.push_back({{"program", m.program},
                      {"arguments_bytes", m.arguments},
                      {"peak_bytes", m.peak},
                      {"capacity_bytes", m.capacity},
                      {"fits", m.fits},
                      {"peak_op", m.peak_op},
                      {"ops", m.ops},
                      {"peak_at", m.peak_at.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.peak_at)}});
  }
  nlohmann::json partitioned = nlohmann::json::array();
  for (const auto& [label, report] : result.partitioned) {
    nlohmann::json entry = spmd_report_json(report);
    entry["program"] = label;
    partitioned.push_back(std::move(entry));
  }
  nlohmann::json warnings = result.warnings;
  for (const auto& warning : s.warnings) {
    warnings.push_back(warning);
  }
  // No completed step (simulation.end_time_s came first): null, not a step time of 0.
  const auto step_value = [&](double value) {
    return s.step_end_s.empty() ? nlohmann::json(nullptr) : nlohmann::json(value);
  };
  return {{"step_time_s", step_value(s.step_time_s)},
          {"first_step_s", step_value(s.first_step_s)},
          {"steady_step_s", step_value(s.steady_step_s)},
          {"steps", s.steps},
          {"step_end_s", s.step_end_s},
          {"ranks", s.ranks},
          {"compute_s", s.compute_s.mean},
          {"comm_s", s.comm_s.mean},
          {"exposed_comm_s", s.exposed_comm_s.mean},
          {"idle_s", s.idle_s.mean},
          {"per_rank",
           {{"compute_s", spread(s.compute_s)},
            {"comm_s", spread(s.comm_s)},
            {"exposed_comm_s", spread(s.exposed_comm_s)},
            {"idle_s", spread(s.idle_s)}}},
          {"top_ops", totals(s.top_ops)},
          {"top_collectives", totals(s.top_collectives)},
          {"collective_algorithms", s.algorithms},
          {"network",
           {{"topology", s.topology},
            {"model", s.network_model},
            {"transfers", s.transfers},
            {"bytes", s.transfer_bytes}}},
          {"memory", memory},
          {"spmd_partitioned", partitioned},
          {"compute",
           {{"hardware", result.compute.hardware},
            {"estimators", result.compute.estimators},
            {"estimates", result.compute.lookups},
            {"cache_hits", result.compute.hits},
            {"fallbacks", result.compute.fallbacks}}},
          {"events", s.engine.events},
          {"windows", s.engine.windows},
          {"windows_per_simulated_s", s.engine.windows_per_simulated_second()},
          {"processes", s.engine.processes.size()},
          {"partition", s.partition},
          {"simulate_wall_s", s.engine.wall_seconds},
          {"engine_processes", process_stats_json(s.engine)},
          {"wall_s", result.wall_s},
          {"warnings", warnings},
          {"scenario", config::scenario_to_yaml(scenario)}};
}

nlohmann::json process_stats_json(const pdes::RunStats& stats) {
  nlohmann::json per_process = nlohmann::json::array();
  for (const auto& p : stats.processes) {
    per_process.push_back({{"process", p.process},
                           {"lps", p.lps},
                           {"events", p.events},
                           {"windows", p.windows},
                           {"remote_sent", p.remote_sent},
                           {"remote_received", p.remote_received},
                           {"peak_pending", p.peak_pending},
                           {"event_s", p.event_seconds},
                           {"sync_s", p.sync_seconds},
                           {"wall_s", p.wall_seconds},
                           {"events_per_s", p.wall_seconds > 0 ? p.events / p.wall_seconds : 0.0}});
  }
  return per_process;
}

nlohmann::json spmd_report_json(const workload::SpmdReport& report) {
  nlohmann::json collectives = nlohmann::json::object();
  for (const auto& [kind, count] : report.collectives) {
    collectives[kind] = {{"count", count},
                         {"bytes", report.collective_bytes.at(kind)},
                         {"operand_bytes", report.collective_operand_bytes.at(kind)}};
  }
  return {{"devices", report.devices},
          {"annotated_values", report.annotated_values},
          {"inserted_collectives", collectives},
          {"replicated_ops", report.replicated_ops}};
}

void check_writable(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path file(path);
  std::error_code error;
  if (fs::is_directory(file, error)) {
    throw OrreryError(ErrorCode::kIo, fmt::format("cannot write '{}': it is a directory", path));
  }
  const fs::path directory = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  if (!fs::is_directory(directory, error)) {
    throw OrreryError(ErrorCode::kIo, fmt::format("cannot write '{}': no directory '{}'", path, directory.string()));
  }
  const bool exists = fs::exists(file, error);
  if (::access(exists ? file.c_str() : directory.c_str(), W_OK) != 0) {
    throw OrreryError(ErrorCode::kIo, fmt::format("cannot write '{}': permission denied", path));
  }
}

}  // namespace orrery::cli
