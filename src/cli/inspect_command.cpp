// `orrery inspect FILE.mlir`: reads a StableHLO program and reports its shape: partitions and
// replicas, form, op histogram, collectives, loops and the largest ops; `--json` prints the same as
// one JSON object, `--dump` prints the lowered IR, `--cost --hardware NAME` the FLOPs, bytes and
// estimated compute time of one device's program (inspect_cost.h). A file of several modules
// (`// -----` splits, or several `module` ops) is reported module by module.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/inspect_cost.h"
#include "cli/summary_output.h"
#include "frontend/stablehlo/stablehlo.h"
#include "util/logging.h"
#include "workload/collectives.h"
#include "workload/dump.h"
#include "workload/program_builder.h"
#include "workload/spmd_partition.h"
#include "workload/summary.h"

namespace orrery::cli {
namespace {

struct InspectOptions {
  std::string file;
  bool json = false;
  bool dump = false;
  bool cost = false;
  bool partition = false;
  InspectCostOptions costing;
  std::vector<std::string> trip_counts;
  frontend::stablehlo::Options frontend;
};

std::string_view trip_count_source_name(workload::TripCountSource source) {
  switch (source) {
    case workload::TripCountSource::kDerived:
      return "derived";
    case workload::TripCountSource::kOverride:
      return "override";
    case workload::TripCountSource::kUnknown:
      return "unknown";
  }
  return "?";
}

nlohmann::json to_json(const workload::ProgramSummary& s, const std::vector<std::string>& warnings) {
  nlohmann::json collectives = nlohmann::json::object();
  for (const auto& [kind, c] : s.collectives) {
    nlohmann::json groups = nlohmann::json::object();
    for (const auto& [size, count] : c.group_sizes) {
      groups[std::to_string(size)] = count;
    }
    collectives[kind] = {{"count", c.count}, {"bytes", c.bytes}, {"group_sizes", groups}};
  }
  nlohmann::json loops = nlohmann::json::array();
  for (const auto& loop : s.loops) {
    loops.push_back(
        {{"name", loop.name},
         {"trip_count", loop.source == workload::TripCountSource::kUnknown ? nlohmann::json(nullptr)
                                                                           : nlohmann::json(loop.trip_count)},
         {"source", trip_count_source_name(loop.source)},
         {"reason", loop.reason},
         {"line", loop.line}});
  }
  nlohmann::json largest = nlohmann::json::array();
  for (const auto& op : s.largest_ops) {
    largest.push_back(
        {{"op", op.name}, {"bytes", op.bytes}, {"result_types", op.result_types}, {"line", op.line}});
  }
  return {{"module", s.module_name},
          {"module_index", s.module_index},
          {"line", s.line},
          {"num_partitions", s.num_partitions},
          {"num_replicas", s.num_replicas},
          {"form", workload::program_form_name(s.form)},
          {"entry_function", s.entry_function},
          {"functions", s.functions},
          {"counted_functions", s.counted_functions},
          {"ops", s.ops},
          {"op_histogram", s.op_histogram},
          {"collectives", collectives},
          {"loops", loops},
          {"largest_ops", largest},
          {"opaque_ops", s.opaque_ops},
          {"source_bytes", s.source_bytes},
          {"ir_heap_bytes", s.heap_bytes},
          {"warnings", warnings}};
}

std::string mebibytes(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

void print_spmd(const workload::SpmdReport& r) {
  std::printf("  partitioned by Orrery's SPMD partitioner for %u devices (%llu sharding annotations)\n",
              r.devices, static_cast<unsigned long long>(r.annotated_values));
  for (const auto& [kind, count] : r.collectives) {
    std::printf("    inserted %-15s %6llu ops, %s per device\n", kind.c_str(),
                static_cast<unsigned long long>(count), mebibytes(r.collective_bytes.at(kind)).c_str());
  }
  for (const auto& [name, count] : r.replicated_ops) {
    std::printf("    run on whole operands (no partitioning rule): %s x%llu\n", name.c_str(),
                static_cast<unsigned long long>(count));
  }
}

void print_text(const workload::ProgramSummary& s, std::size_t modules) {
  std::printf("module %s%s (module %u of %zu, line %u): %u partition(s), %u replica(s), form %s, entry %s\n",
              s.module_name.empty() ? "" : "@", s.module_name.c_str(), s.module_index + 1, modules, s.line,
              s.num_partitions, s.num_replicas, std::string(workload::program_form_name(s.form)).c_str(),
              s.entry_function.empty() ? "(none: every function counted)" : ("@" + s.entry_function).c_str());
  std::printf("  %llu op(s) in %llu of %llu function(s)\n", static_cast<unsigned long long>(s.ops),
              static_cast<unsigned long long>(s.counted_functions),
              static_cast<unsigned long long>(s.functions));
  std::printf("  collectives:%s\n", s.collectives.empty() ? " none" : "");
  for (const auto& [kind, c] : s.collectives) {
    std::string groups;
    for (const auto& [size, count] : c.group_sizes) {
      groups += (groups.empty() ? "" : ", ") + (size == 0 ? std::string("?") : std::to_string(size)) + " (" +
                std::to_string(count) + " ops)";
    }
    std::printf("    %-22s %6llu ops %14llu bytes (%s) per device; group sizes: %s\n", kind.c_str(),
                static_cast<unsigned long long>(c.count), static_cast<unsigned long long>(c.bytes),
                mebibytes(c.bytes).c_str(), groups.c_str());
  }
  std::printf("  while loops:%s\n", s.loops.empty() ? " none" : "");
  for (const auto& loop : s.loops) {
    if (loop.source == workload::TripCountSource::kUnknown) {
      std::printf("    %-24s line %-6u trip count unknown: %s (set it with --trip-count %s=N)\n",
                  loop.name.c_str(), loop.line, loop.reason.c_str(), loop.name.c_str());
    } else {
      std::printf("    %-24s line %-6u trip count %llu (%s)\n", loop.name.c_str(), loop.line,
                  static_cast<unsigned long long>(loop.trip_count),
                  std::string(trip_count_source_name(loop.source)).c_str());
    }
  }
  if (!s.opaque_ops.empty()) {
    std::printf("  ops of other dialects (cost nothing; --strict rejects them):\n");
    for (const auto& [name, count] : s.opaque_ops) {
      std::printf("    %-40s %llu\n", name.c_str(), static_cast<unsigned long long>(count));
    }
  }
  std::printf("  op histogram:\n");
  for (const auto& [name, count] : s.op_histogram) {
    std::printf("    %-40s %llu\n", name.c_str(), static_cast<unsigned long long>(count));
  }
  std::printf("  largest ops by output bytes:\n");
  for (const auto& op : s.largest_ops) {
    std::printf("    %-32s line %-6u %14llu bytes  %s\n", op.name.c_str(), op.line,
                static_cast<unsigned long long>(op.bytes), op.result_types.c_str());
  }
}

int run_inspect(InspectOptions& options) {
  for (const std::string& entry : options.trip_counts) {
    const std::size_t equal = entry.rfind('=');
    std::uint64_t count = 0;
    bool valid = equal != std::string::npos && equal > 0 && equal + 1 < entry.size();
    if (valid) {
      try {
        std::size_t used = 0;
        count = std::stoull(entry.substr(equal + 1), &used);
        valid = used == entry.size() - equal - 1;
      } catch (const std::exception&) {
        valid = false;
      }
    }
    if (!valid) {
      throw OrreryError(ErrorCode::kConfig,
                        "--trip-count expects LOOP=N (e.g. main/%3=12), got '" + entry + "'");
    }
    options.frontend.trip_counts[entry.substr(0, equal)] = count;
  }
  if (options.frontend.strict && options.frontend.lenient) {
    throw OrreryError(ErrorCode::kConfig, "--strict and --lenient exclude each other");
  }
  if (!options.cost && !options.costing.hardware.empty()) {
    throw OrreryError(ErrorCode::kConfig, "--hardware is an option of --cost");
  }
  if (!options.cost && options.costing.top > 0) {
    throw OrreryError(ErrorCode::kConfig, "--top is an option of --cost");
  }
  if (options.cost && options.dump) {
    throw OrreryError(ErrorCode::kConfig, "--cost and --dump exclude each other");
  }
  auto modules = frontend::stablehlo::parse_file(options.file, options.frontend).take_or_throw();
  for (const auto& module : modules) {
    for (const std::string& warning : module.warnings) {
      spdlog::warn("{}", warning);
    }
  }
  // Pre-partitioning modules become per-device programs (`--partition`; always for `--cost`, whose
  // report is of one device's program, as a scenario runs it).
  std::vector<std::optional<workload::SpmdReport>> partitioned(modules.size());
  if (options.partition || options.cost) {
    for (std::size_t m = 0; m < modules.size(); ++m) {
      auto& module = modules[m];
      if (module.program->form() != workload::ProgramForm::kPrePartitioning ||
          module.program->num_devices() < 2) {
        continue;
      }
      workload::SpmdReport report;
      module.program =
          workload::partition_spmd(workload::ProgramBuilder::inline_calls(*module.program), &report);
      partitioned[m] = std::move(report);
    }
  }
  if (options.cost) {
    return print_costs(options.file, modules, options.costing, options.json);
  }
  if (options.dump) {
    for (const auto& module : modules) {
      std::printf("%s", workload::dump(*module.program).c_str());
    }
    return 0;
  }
  if (options.json) {
    nlohmann::json out;
    auto module_json = [&](std::size_t m) {
      nlohmann::json j = to_json(workload::summarize(*modules[m].program), modules[m].warnings);
      if (partitioned[m]) {
        j["spmd_partitioned"] = spmd_report_json(*partitioned[m]);
      }
      return j;
    };
    if (modules.size() == 1) {
      out = module_json(0);
    } else {
      out = {{"file", options.file}, {"module_count", modules.size()}, {"modules", nlohmann::json::array()}};
      for (std::size_t m = 0; m < modules.size(); ++m) {
        out["modules"].push_back(module_json(m));
      }
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("%s: %zu module(s)\n", options.file.c_str(), modules.size());
  for (std::size_t m = 0; m < modules.size(); ++m) {
    print_text(workload::summarize(*modules[m].program), modules.size());
    if (partitioned[m]) {
      print_spmd(*partitioned[m]);
    }
  }
  return 0;
}

}  // namespace

Action register_inspect(CLI::App& app, const GlobalOptions& global) {
  auto* command = app.add_subcommand("inspect",
                                     "Read a StableHLO program (.mlir text) and report its shape: "
                                     "partitions, form, ops, collectives, loops.");
  auto options = std::make_shared<InspectOptions>();
  command->add_option("file", options->file, "StableHLO text (.mlir)")->required();
  command->add_flag("--json", options->json, "Print one JSON object (per file) instead of text");
  command->add_flag("--dump", options->dump, "Print the lowered IR");
  command->add_flag("--strict", options->frontend.strict,
                    "Reject ops of other dialects and loops whose trip count cannot be derived");
  command->add_flag("--lenient", options->frontend.lenient,
                    "Let unknown StableHLO ops through as memory-bound ops (with a warning)");
  command
      ->add_option("--trip-count", options->trip_counts,
                   "LOOP=N: the trip count of a while loop, by the name inspect prints (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  command->add_flag(
      "--partition", options->partition,
      "Partition pre-partitioning modules (shardings, no collectives) into the per-device "
      "program, with the collectives their shardings need, before reporting (always with --cost)");
  command->add_flag("--cost", options->cost,
                    "Report the FLOPs, bytes and estimated compute time of one device's program, per op "
                    "class, counting loop bodies times their trip counts (needs --hardware)");
  command->add_option("--hardware", options->costing.hardware,
                      "With --cost: a hardware preset (configs/hardware/NAME.yaml) or a preset file");
  command->add_option("--estimator", options->costing.estimator,
                      "With --cost: roofline (default), systolic, table (with --table) or plugin (with --plugin)");
  command->add_option("--table", options->costing.tables, "With --estimator table: a kernel table (repeatable)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  command->add_option("--plugin", options->costing.plugin, "With --estimator plugin: the plugin library or executable");
  command->add_option("--fusion", options->costing.fusion,
                      "With --cost: how ops become kernels: none, elementwise or regions (default, as a "
                      "scenario's compute.fusion)");
  command->add_flag(
      "--no-inline", options->costing.no_inline,
      "With --cost: keep func.call boundaries (kernels do not span them) instead of inlining every call "
      "as XLA does (a scenario's compute.inline_calls: false)");
  command->add_option("--f32-matmul", options->costing.f32_matmul,
                      "With --cost: what f32 matmuls of DEFAULT precision run in: tf32 (default) or f32");
  command->add_option("--top", options->costing.top,
                      "With --cost: list the N costliest kernels (time x executions): class, FLOPs, bytes "
                      "read and written, fused ops, estimator and source location")
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 40));
  return [options, &global]() {
    configure_logging(global.log_level, 0);
    return run_inspect(*options);
  };
}

}  // namespace orrery::cli
