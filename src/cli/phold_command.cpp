// `orrery phold`: the engine's standard benchmark (ROSS PHOLD), sequential or under mpirun.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/mpi_command.h"
#include "cli/summary_output.h"
#include "pdes/mpi_communicator.h"
#include "pdes/phold.h"
#include "util/logging.h"

namespace orrery::cli {
namespace {

nlohmann::json stats_json(const pdes::PholdParams& params, const pdes::PholdResult& result) {
  const pdes::RunStats& stats = result.stats;
  return {
      {"events", stats.events},
      {"wall_s", stats.wall_seconds},
      {"events_per_s", stats.events_per_second()},
      {"events_per_s_per_process", stats.events_per_second() / static_cast<double>(stats.processes.size())},
      {"processes", stats.processes.size()},
      {"windows", stats.windows},
      {"windows_per_simulated_s", stats.windows_per_simulated_second()},
      {"remote_events", stats.remote_events},
      {"lookahead_ps",
       stats.lookahead.is_max() ? nlohmann::json(nullptr) : nlohmann::json(stats.lookahead.ps())},
      {"last_event_ps", stats.last_event_time.ps()},
      {"history_hash", pdes::format_hash(stats.history_hash)},
      {"partition",
       {{"partitioner", result.partition.partitioner},
        {"lps_per_process", result.partition.lps_per_process},
        {"imbalance", result.partition.imbalance},
        {"cut_channels", result.partition.cut_channels}}},
      {"params",
       {{"lps", params.lps},
        {"start_events", params.start_events},
        {"remote", params.remote},
        {"mean", params.mean},
        {"lookahead", params.lookahead},
        {"end", params.end},
        {"seed", params.seed}}},
      {"per_process", process_stats_json(stats)}};
}

}  // namespace

Action register_phold(CLI::App& app, const GlobalOptions& global) {
  auto* command = app.add_subcommand(
      "phold",
      "Run PHOLD, the standard PDES benchmark (ROSS parameters); times are simulated microseconds.");
  auto params = std::make_shared<pdes::PholdParams>();
  auto json = std::make_shared<bool>(false);
  // The last of a repeated option wins, so a job script's defaults can be overridden
  // (jobs/phold-mpirun.sh 4 --end 5).
  command->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  command->add_option("--lps", params->lps, "Logical processes")->capture_default_str();
  command->add_option("--start-events", params->start_events, "Initial events per LP")->capture_default_str();
  command->add_option("--remote", params->remote, "Probability an event goes to a random LP")->capture_default_str();
  command->add_option("--mean", params->mean, "Mean timestamp increment (µs)")->capture_default_str();
  command->add_option("--lookahead", params->lookahead, "Minimum timestamp increment (µs)")->capture_default_str();
  command->add_option("--end", params->end, "End time (µs); events at or after it are not run")->capture_default_str();
  command->add_option("--seed", params->seed, "Random seed")->capture_default_str();
  command->add_option("--partition", params->partition, "block or round-robin")->capture_default_str();
  command->add_flag("--json", *json, "Print one JSON object instead of the text summary");

  return [params, json, &global]() {
    return run_with_mpi(global, [&](pdes::Communicator& communicator) {
    pdes::run_collectively(communicator, [&] { pdes::validate(*params); });
    const pdes::PholdResult result = pdes::run_phold(communicator, *params);
    if (communicator.rank() == 0) {
      if (*json) {
        std::printf("%s\n", stats_json(*params, result).dump(2).c_str());
      } else {
        std::printf("PHOLD: %u LPs, %u start events, remote %.3g, mean %.3g, lookahead %.3g, end %.3g\n%s%s\n",
                    params->lps, params->start_events, params->remote, params->mean, params->lookahead,
                    params->end, result.stats.describe().c_str(), result.partition.describe().c_str());
      }
    }
    return 0;
    });
  };
}

}  // namespace orrery::cli
