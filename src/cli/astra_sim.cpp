#include "cli/astra_sim.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include "util/error.h"

namespace orrery::cli {
namespace {

constexpr double kAstraGB = 1073741824.0;  // ASTRA-sim's GB/s: 2^30 bytes per second

std::string absolute(const std::string& path) { return std::filesystem::absolute(path).lexically_normal().string(); }

// A YAML double-quoted scalar.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  return out + "\"";
}

nlohmann::json read_json(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) {
    throw OrreryError(ErrorCode::kIo, fmt::format("{}: cannot read the {}", path, what));
  }
  try {
    nlohmann::json json;
    in >> json;
    if (!json.is_object()) {
      throw OrreryError(ErrorCode::kInvalidInput, fmt::format("{}: the {} must be a JSON object", path, what));
    }
    return json;
  } catch (const nlohmann::json::exception& e) {
    throw OrreryError(ErrorCode::kInvalidInput, fmt::format("{}: the {} is not JSON: {}", path, what, e.what()));
  }
}

double number(const nlohmann::json& json, const std::string& path, const char* key) {
  const auto& value = json.at(key);
  if (!value.is_number() || value.get<double>() < 0) {
    throw OrreryError(ErrorCode::kInvalidInput,
                      fmt::format("{}: \"{}\" must be a non-negative number, not {}", path, key, value.dump()));
  }
  return value.get<double>();
}

// ASTRA-sim's per-dimension algorithm list as one Orrery algorithm: a single dimension keeps its
// algorithm; several dimensions run Orrery's hierarchical algorithm (dimension by dimension).
std::string algorithm(const nlohmann::json& json, const std::string& path, const char* key, bool all_to_all) {
  const auto& value = json.at(key);
  if (!value.is_array() || value.empty()) {
    throw OrreryError(ErrorCode::kInvalidInput,
                      fmt::format("{}: \"{}\" must be a list of algorithms, one per dimension", path, key));
  }
  std::string orrery;
  for (const auto& entry : value) {
    const std::string name = entry.is_string() ? entry.get<std::string>() : entry.dump();
    std::string mapped;
    if (name == "ring" || name == "oneRing") {
      mapped = "ring";
    } else if (name == "direct" || name == "oneDirect") {
      mapped = "direct";
    } else if (name == "halvingDoubling" || name == "oneHalvingDoubling") {
      mapped = "halving_doubling";
    } else if (name == "doubleBinaryTree") {
      mapped = "tree";
    } else {
      throw OrreryError(ErrorCode::kUnsupported,
                        fmt::format("{}: \"{}\": algorithm '{}' is not one Orrery runs (ring, direct, halvingDoubling, "
                                    "doubleBinaryTree)",
                                    path, key, name));
    }
    orrery = orrery.empty() || orrery == mapped ? mapped : "hierarchical";
  }
  if (value.size() > 1) {
    orrery = "hierarchical";
  }
  // Orrery decomposes all-to-all one way (direct: every pair at once).
  return all_to_all ? "auto" : orrery;
}

}  // namespace

AstraSimScenario astra_sim_scenario(const AstraSimFiles& files) {
  const nlohmann::json system = read_json(files.system, "ASTRA-sim system configuration");
  AstraSimScenario scenario;
  std::string& text = scenario.text;
  std::vector<std::string>& ignored = scenario.ignored;
  const auto from_system = [&](const std::string& scenario_key, const std::string& json_key) {
    scenario.origins.emplace_back(scenario_key, fmt::format("{}: \"{}\"", files.system, json_key));
  };
  text = "# ASTRA-sim invocation\n";
  text += "system:\n";
  text += "  collective_launch_ns: 0\n  p2p_launch_ns: 0\n";
  static const std::set<std::string> kModelled = {
      "endpoint-delay", "active-chunks-per-dimension", "preferred-dataset-splits", "all-reduce-implementation",
      "all-gather-implementation", "reduce-scatter-implementation", "all-to-all-implementation", "local-mem-bw",
      "roofline-enabled", "peak-perf"};
  for (const auto& [key, value] : system.items()) {
    if (key == "all-reduce-implementation-custom" || key == "all-gather-implementation-custom" ||
        key == "reduce-scatter-implementation-custom" || key == "all-to-all-implementation-custom") {
      throw OrreryError(ErrorCode::kUnsupported,
                        fmt::format("{}: \"{}\": MSCCL custom collectives are not run from the system file; run their "
                                    "per-rank traces (the .et files beside the XML) as the workload instead",
                                    files.system, key));
    }
    if (!kModelled.contains(key)) {
      ignored.push_back(key);
    }
  }
  if (system.contains("endpoint-delay")) {
    const double delay = number(system, files.system, "endpoint-delay");
    if (delay <= 0) {
      throw OrreryError(ErrorCode::kUnsupported,
                        fmt::format("{}: \"endpoint-delay\" is 0: Orrery needs a positive endpoint delay (the "
                                    "lookahead of its parallel engine; 1 ns is enough)",
                                    files.system));
    }
    text += fmt::format("  endpoint_delay_ns: {}\n", delay);
    from_system("system.endpoint_delay_ns", "endpoint-delay");
  }
  if (system.contains("preferred-dataset-splits")) {
    text += fmt::format("  chunks: {}\n", number(system, files.system, "preferred-dataset-splits"));
    from_system("system.chunks", "preferred-dataset-splits");
  }
  if (system.contains("active-chunks-per-dimension")) {
    text += fmt::format("  chunks_in_flight: {}\n", number(system, files.system, "active-chunks-per-dimension"));
    from_system("system.chunks_in_flight", "active-chunks-per-dimension");
  }
  if (system.contains("local-mem-bw")) {
    text += fmt::format("  reduction_GBps: {}\n", number(system, files.system, "local-mem-bw") * kAstraGB / 1e9);
    from_system("system.reduction_GBps", "local-mem-bw");
  }
  std::string collectives;
  for (const auto& [key, name] : {std::pair{"all-reduce-implementation", "all_reduce"},
                                  std::pair{"all-gather-implementation", "all_gather"},
                                  std::pair{"reduce-scatter-implementation", "reduce_scatter"},
                                  std::pair{"all-to-all-implementation", "all_to_all"}}) {
    if (system.contains(key)) {
      collectives += fmt::format("{}{}: {}", collectives.empty() ? "" : ", ", name,
                                 algorithm(system, files.system, key, std::string(name) == "all_to_all"));
      from_system(fmt::format("system.collectives.{}", name), key);
    }
  }
  if (!collectives.empty()) {
    text += "  collectives: {" + collectives + "}\n";
  }
  text += fmt::format("network:\n  topology: {{kind: astra_sim, file: {}}}\n  model: analytical\n",
                      quoted(absolute(files.network)));
  scenario.origins.emplace_back("network.topology", "--network-configuration");
  if (!files.remote_memory.empty()) {
    const nlohmann::json memory = read_json(files.remote_memory, "ASTRA-sim remote-memory configuration");
    const auto type = memory.find("memory-type");
    if (type == memory.end() || !type->is_string() || type->get<std::string>() != "NO_MEMORY_EXPANSION") {
      throw OrreryError(ErrorCode::kUnsupported,
                        fmt::format("{}: only \"memory-type\": \"NO_MEMORY_EXPANSION\" is supported (remote memory is "
                                    "not modelled)",
                                    files.remote_memory));
    }
  }
  text += fmt::format("workload:\n  chakra:\n    prefix: {}\n", quoted(absolute(files.workload)));
  scenario.origins.emplace_back("workload.chakra.prefix", "--workload-configuration");
  if (!files.comm_groups.empty() && files.comm_groups != "empty") {  // ASTRA-sim's word for none
    text += fmt::format("    comm_groups: {}\n", quoted(absolute(files.comm_groups)));
    scenario.origins.emplace_back("workload.chakra.comm_groups", "--comm-group-configuration");
  }
  const bool roofline = system.contains("roofline-enabled") && number(system, files.system, "roofline-enabled") != 0;
  if (roofline && system.contains("peak-perf")) {
    text += fmt::format("    roofline_peak_TFLOPS: {}\n", number(system, files.system, "peak-perf"));
    from_system("workload.chakra.roofline_peak_TFLOPS", "peak-perf");
  }
  if (roofline && system.contains("local-mem-bw")) {
    text += fmt::format("    roofline_memory_GBps: {}\n", number(system, files.system, "local-mem-bw") * kAstraGB / 1e9);
    from_system("workload.chakra.roofline_memory_GBps", "local-mem-bw");
  }
  return scenario;
}

Error attributed_to_astra_sim(Error error, const AstraSimScenario& scenario, const std::string& text_name) {
  // The origin of the longest scenario key that `text` starts with, followed by ':', '.' or ' '.
  const auto origin_of = [&](const std::string& text) -> const std::pair<std::string, std::string>* {
    const std::pair<std::string, std::string>* best = nullptr;
    for (const auto& entry : scenario.origins) {
      const std::string& key = entry.first;
      const bool starts = text.size() > key.size() && text.compare(0, key.size(), key) == 0 &&
                          (text[key.size()] == ':' || text[key.size()] == '.' || text[key.size()] == ' ');
      if (starts && (best == nullptr || key.size() > best->first.size())) {
        best = &entry;
      }
    }
    return best;
  };
  for (std::string& note : error.notes) {  // "the file is named by KEY (TEXT:line:col)"
    static const std::string kNamedBy = "the file is named by ";
    if (note.rfind(kNamedBy, 0) == 0 && note.find(text_name) != std::string::npos) {
      if (const auto* origin = origin_of(note.substr(kNamedBy.size()))) {
        note = kNamedBy + origin->second;
      }
    }
  }
  if (!error.where || error.where->file != text_name) {
    return error;
  }
  if (const auto* origin = origin_of(error.message)) {
    std::string rest = error.message.substr(origin->first.size());
    if (rest.rfind(": ", 0) == 0) {
      rest.erase(0, 2);
      error.message = fmt::format("{}: {} (Orrery's {})", origin->second, rest, origin->first);
    } else {  // a key below it: "network.topology.npus: ..."
      error.message = fmt::format("{}: Orrery's {}{}", origin->second, origin->first, rest);
    }
  } else {
    error.message = fmt::format("{} (in the scenario built from ASTRA-sim's files; --print-scenario shows it)",
                                error.message);
  }
  error.where.reset();
  return error;
}

}  // namespace orrery::cli
