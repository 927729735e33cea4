// `orrery traffic`: drives a topology and network model with a synthetic pattern on the PDES
// engine (sequential or under mpirun; identical results for any process count). The network comes
// from a scenario's `network` and `system` sections, with flags as shorthands for --set overrides
// (docs/network.md).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/mpi_command.h"
#include "config/loader.h"
#include "config/scenario.h"
#include "network/traffic.h"
#include "pdes/mpi_communicator.h"
#include "util/logging.h"

namespace orrery::cli {
namespace {

struct TrafficArguments {
  std::string scenario;
  std::string topology;
  std::string network_configuration;
  std::string model;
  std::string routing;
  std::string pattern = "uniform_random";
  std::optional<std::uint64_t> seed;
  std::vector<std::string> overrides;
  network::TrafficOptions options;
  bool json = false;
};

nlohmann::json optional_json(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

config::Scenario load(const TrafficArguments& arguments) {
  std::vector<std::string> overrides;
  if (!arguments.topology.empty()) {
    const bool mapping = arguments.topology.find('{') != std::string::npos;
    overrides.push_back("network.topology=" + (mapping ? arguments.topology : "{kind: " + arguments.topology + "}"));
  }
  if (!arguments.network_configuration.empty()) {
    overrides.push_back("network.topology={kind: astra_sim, file: '" + arguments.network_configuration + "'}");
  }
  if (!arguments.model.empty()) {
    overrides.push_back("network.model=" + arguments.model);
  }
  if (!arguments.routing.empty()) {
    overrides.push_back("network.routing=" + arguments.routing);
  }
  if (arguments.seed) {
    overrides.push_back(fmt::format("simulation.seed={}", *arguments.seed));
  }
  overrides.insert(overrides.end(), arguments.overrides.begin(), arguments.overrides.end());
  if (arguments.scenario.empty()) {
    return config::load_scenario_text("", "(command line)", overrides);
  }
  return config::load_scenario(arguments.scenario, overrides);
}

nlohmann::json result_json(const network::TrafficResult& result) {
  nlohmann::json json{{"completion_time_s", optional_json(result.completion_time_s)},
                      {"offered_load", optional_json(result.offered_load)},
                      {"accepted_load", optional_json(result.accepted_load)},
                      {"mean_latency_ns", optional_json(result.mean_latency_ns)},
                      {"p99_latency_ns", optional_json(result.p99_latency_ns)},
                      {"max_link_utilization", optional_json(result.max_link_utilization)},
                      {"mean_link_utilization", optional_json(result.mean_link_utilization)},
                      {"messages_sent", result.messages_sent},
                      {"messages_delivered", result.messages_delivered},
                      {"bytes_delivered", result.bytes_delivered},
                      {"links", result.links},
                      {"links_used", result.links_used},
                      {"endpoints", result.endpoints},
                      {"topology", result.topology},
                      {"model", result.model},
                      {"routing", result.routing},
                      {"pattern", result.pattern},
                      {"run",
                       {{"processes", result.stats.processes.size()},
                        {"events", result.stats.events},
                        {"windows", result.stats.windows},
                        {"wall_s", result.stats.wall_seconds},
                        {"lookahead_ps", result.stats.lookahead.is_max() ? nlohmann::json(nullptr)
                                                                         : nlohmann::json(result.stats.lookahead.ps())}}},
                      {"partition",
                       {{"partitioner", result.partition.engine.partitioner},
                        {"endpoints_per_process", result.partition.endpoints_per_process},
                        {"imbalance", result.partition.engine.imbalance},
                        {"cut_channels", result.partition.engine.cut_channels},
                        {"cut_links", result.partition.cut_links}}}};
  if (result.flow) {
    json["run"]["flow_solves"] = result.flow->solves;
    json["run"]["flow_solved_flows"] = result.flow->solved_flows;
    json["run"]["flow_largest_component"] = result.flow->largest_component;
    json["run"]["flow_solve_s"] = result.flow->solve_seconds;
  }
  return json;
}

std::string text_summary(const network::TrafficResult& result) {
  auto number = [](const std::optional<double>& value, double scale, const char* unit) {
    return value ? fmt::format("{:.6g}{}", *value * scale, unit) : std::string("n/a");
  };
  return fmt::format(
      "traffic: {} pattern, {} model, {} routing\n  {}\n"
      "  messages {} sent, {} delivered ({} bytes)\n"
      "  completion {}  offered load {}  accepted load {}\n"
      "  latency mean {}  p99 {}\n  link utilisation max {}  mean {} ({} of {} links used)\n"
      "  engine: {} events, {} windows, {:.3f} s wall on {} process(es)\n  {}\n",
      result.pattern, result.model, result.routing, result.topology, result.messages_sent, result.messages_delivered,
      result.bytes_delivered, number(result.completion_time_s, 1e6, " us"), number(result.offered_load, 1, ""),
      number(result.accepted_load, 1, ""), number(result.mean_latency_ns, 1, " ns"),
      number(result.p99_latency_ns, 1, " ns"), number(result.max_link_utilization, 1, ""),
      number(result.mean_link_utilization, 1, ""), result.links_used, result.links, result.stats.events,
      result.stats.windows, result.stats.wall_seconds, result.stats.processes.size(), result.partition.describe());
}

}  // namespace

Action register_traffic(CLI::App& app, const GlobalOptions& global) {
  auto* command = app.add_subcommand(
      "traffic", "Drive a network topology and model with synthetic traffic (fixed message size or offered load).");
  auto arguments = std::make_shared<TrafficArguments>();
  command->add_option("--scenario", arguments->scenario, "Scenario file whose system and network sections are used");
  command->add_option("--topology", arguments->topology,
                      "network.topology: a kind (fat_tree, dragonfly, torus, switch, none) or a YAML mapping "
                      "such as '{kind: dragonfly, p: 2, a: 4, h: 2, g: 9}'");
  command->add_option("--network-configuration", arguments->network_configuration,
                      "An ASTRA-sim analytical network.yml (sets network.topology to astra_sim)");
  command->add_option("--model", arguments->model, "network.model: analytical, flow or packet");
  command->add_option("--routing", arguments->routing, "network.routing: minimal, valiant, d_mod_k, ecmp, dimension_order");
  command->add_option("--set", arguments->overrides, "Scenario override key.path=value (repeatable)");
  command->add_option("--pattern", arguments->pattern,
                      "uniform_random, shift, random_permutation, all_to_all, ring, dragonfly_worst_case, "
                      "bit_complement")
      ->capture_default_str();
  command->add_option("--load", arguments->options.load,
                      "Offered load as a fraction of each endpoint's injection bandwidth (Poisson arrivals); "
                      "without it every endpoint sends one fixed-size message per destination");
  command->add_option("--bytes", arguments->options.bytes, "Message size in bytes")->capture_default_str();
  command->add_option("--duration-us", arguments->options.duration_us, "Offered-load mode: simulated time (us)")
      ->capture_default_str();
  command->add_option("--shift", arguments->options.shift, "Shift pattern distance (0: half the endpoints)");
  command->add_option("--group-size", arguments->options.group_size,
                      "all_to_all group size (0: the endpoints of a group / pod / node)");
  command->add_option("--partition", arguments->options.partition, "auto (topology-aware), block or round-robin")
      ->capture_default_str();
  command->add_option("--seed", arguments->seed, "simulation.seed: arrivals, random destinations, placement");
  command->add_flag("--json", arguments->json, "Print one JSON object instead of the text summary");

  return [arguments, &global]() {
    return run_with_mpi(global, [&](pdes::Communicator& communicator) {
    config::Scenario scenario;
    pdes::run_collectively(communicator, [&] {
      const auto pattern = config::enum_from_string<network::TrafficPattern>(arguments->pattern);
      if (!pattern) {
        throw OrreryError(ErrorCode::kConfig,
                          fmt::format("--pattern: unknown pattern '{}' (known: {})", arguments->pattern,
                                      config::enum_choices<network::TrafficPattern>()));
      }
      arguments->options.pattern = *pattern;
      network::validate(arguments->options);
      scenario = load(*arguments);
    });
    const network::TrafficResult result = network::run_traffic(communicator, scenario, arguments->options);
    if (communicator.rank() == 0) {
      if (arguments->json) {
        std::printf("%s\n", result_json(result).dump(2).c_str());
      } else {
        std::printf("%s", text_summary(result).c_str());
      }
    }
    return 0;
    });
  };
}

}  // namespace orrery::cli
