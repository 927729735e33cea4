#include "cli/inspect_cost.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "compute/hardware.h"
#include "compute/program_costs.h"
#include "util/error.h"
#include "workload/program_builder.h"

namespace orrery::cli {
namespace {

using compute::ExecutionTotals;
using compute::OpClass;

config::ComputeConfig compute_config(const InspectCostOptions& options) {
  config::ComputeConfig config;
  const auto estimator = config::enum_from_string<config::EstimatorKind>(options.estimator);
  if (!estimator) {
    throw OrreryError(ErrorCode::kConfig, "--estimator: unknown estimator '" + options.estimator +
                                              "' (one of " + config::enum_choices<config::EstimatorKind>() + ")");
  }
  config.estimator = *estimator;
  for (const std::string& table : options.tables) {
    config.tables.push_back(config::FilePath{table});
  }
  config.plugin = config::FilePath{options.plugin};
  const auto f32 = config::enum_from_string<config::F32MatmulPrecision>(options.f32_matmul);
  if (!f32) {
    throw OrreryError(ErrorCode::kConfig, "--f32-matmul: expected tf32 or f32, got '" + options.f32_matmul + "'");
  }
  config.f32_matmul = *f32;
  const auto fusion = config::enum_from_string<config::FusionMode>(options.fusion);
  if (!fusion) {
    throw OrreryError(ErrorCode::kConfig,
                      "--fusion: expected none, elementwise or regions, got '" + options.fusion + "'");
  }
  config.fusion = *fusion;
  config::Problems problems;
  static_cast<const config::EstimatorChoice&>(config).validate(problems);
  if (!problems.items().empty()) {
    const auto& item = problems.items().front();
    const std::string flag = item.key == "table" ? "--table" : item.key == "plugin" ? "--plugin" : item.key;
    throw OrreryError(ErrorCode::kConfig, "--estimator " + options.estimator + ": " + item.reason + " (" + flag + ")");
  }
  return config;
}

struct ModuleCost {
  std::shared_ptr<const workload::Program> program;  // inlined unless --no-inline
  compute::ProgramCosts costs;
  ExecutionTotals totals;
};

// One kernel of the --top list: an op that runs as a kernel and how often one run executes it.
struct TopKernel {
  workload::OpId op;
  std::uint64_t executions;
  SimTime total;
};

// The `top` kernels with the most time over their executions; ties in op order.
std::vector<TopKernel> top_kernels(const ModuleCost& m, std::size_t top) {
  std::vector<TopKernel> kernels;
  kernels.reserve(m.totals.kernels.size());
  for (const auto& [op, executions] : m.totals.kernels) {
    kernels.push_back({op, executions, m.costs.ops[op].time * executions});
  }
  const auto costlier = [](const TopKernel& a, const TopKernel& b) {
    return a.total != b.total ? a.total > b.total : a.op < b.op;
  };
  const std::size_t n = std::min(top, kernels.size());
  std::partial_sort(kernels.begin(), kernels.begin() + static_cast<std::ptrdiff_t>(n), kernels.end(), costlier);
  kernels.resize(n);
  return kernels;
}

std::string where(const workload::Program& p, workload::OpId id) {
  const SourceLocation at = p.location(p.op(id).offset);
  return at.file + ":" + std::to_string(at.line) + ":" + std::to_string(at.column);
}

nlohmann::json top_json(const ModuleCost& m, std::size_t top) {
  nlohmann::json list = nlohmann::json::array();
  for (const TopKernel& k : top_kernels(m, top)) {
    const compute::OpCost& c = m.costs.ops[k.op];
    list.push_back({{"op", std::string(m.program->string(m.program->op(k.op).name))},
                    {"location", where(*m.program, k.op)},
                    {"class", std::string(compute::name(c.op_class))},
                    {"fused_ops", c.fused_ops},
                    {"executions", k.executions},
                    {"launches", c.launches},
                    {"flops", c.flops.value},
                    {"bytes_read", c.bytes_read.count},
                    {"bytes_written", c.bytes_written.count},
                    {"estimated_s", c.time.seconds()},
                    {"total_s", k.total.seconds()},
                    {"estimator", std::string(c.estimator)},
                    {"note", std::string(c.note)}});
  }
  return list;
}

void print_top(const ModuleCost& m, std::size_t top) {
  const std::vector<TopKernel> kernels = top_kernels(m, top);
  if (kernels.empty()) {
    return;
  }
  std::printf("  costliest kernels (time x executions):\n");
  std::printf("    %12s %6s %-15s %11s %11s %11s  %s\n", "total (s)", "runs", "class", "FLOPs", "read B",
              "written B", "op (fused ops), location");
  for (const TopKernel& k : kernels) {
    const compute::OpCost& c = m.costs.ops[k.op];
    std::printf("    %12.6g %6llu %-15s %11.4g %11.4g %11.4g  %s", k.total.seconds(),
                static_cast<unsigned long long>(k.executions), std::string(compute::name(c.op_class)).c_str(),
                c.flops.value, c.bytes_read.as_double(), c.bytes_written.as_double(),
                std::string(m.program->string(m.program->op(k.op).name)).c_str());
    if (c.fused_ops > 0) {
      std::printf(" (+%u)", c.fused_ops);
    }
    std::printf(", %s\n", where(*m.program, k.op).c_str());
  }
}

nlohmann::json class_json(const compute::ClassTotals& c) {
  return {{"kernels", c.launches},
          {"entries", c.executions},
          {"flops", c.flops.value},
          {"bytes", (c.bytes_read + c.bytes_written).count},
          {"bytes_read", c.bytes_read.count},
          {"bytes_written", c.bytes_written.count},
          {"estimated_s", c.time.seconds()}};
}

nlohmann::json to_json(const ModuleCost& m) {
  const ExecutionTotals& t = m.totals;
  nlohmann::json classes = nlohmann::json::object();
  for (std::size_t i = 0; i < t.classes.size(); ++i) {
    if (t.classes[i].executions > 0) {
      classes[std::string(compute::name(static_cast<OpClass>(i)))] = class_json(t.classes[i]);
    }
  }
  nlohmann::json roles = nlohmann::json::object();
  for (std::size_t i = 0; i < t.role_executions.size(); ++i) {
    roles[std::string(compute::name(static_cast<compute::CostRole>(i)))] = t.role_executions[i];
  }
  const compute::CacheStats& cache = m.costs.cache;
  return {{"module", m.program->module_name()},
          {"module_index", m.program->module_index()},
          {"flops", t.flops.value},
          {"bytes", t.bytes().count},
          {"bytes_read", t.bytes_read.count},
          {"bytes_written", t.bytes_written.count},
          {"estimated_compute_s", t.time.seconds()},
          {"saturated", t.bytes().is_max() || t.time.is_max()},
          {"kernels", t.launches},
          {"kernel_entries", t.role_executions[static_cast<std::size_t>(compute::CostRole::kCompute)]},
          {"classes", classes},
          {"estimators", t.estimators},
          {"executions", roles},
          {"free_ops", t.free_ops},
          {"communication_ops", t.communication},
          {"approximate_ops", t.approximate},
          {"distinct_kernels", m.costs.estimates},
          {"cache", {{"lookups", cache.lookups}, {"hits", cache.hits}, {"hit_rate", cache.hit_rate()}}}};
}

std::string si(double value, const char* unit) {
  static constexpr const char* kPrefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  std::size_t prefix = 0;
  while (std::abs(value) >= 1000.0 && prefix + 1 < std::size(kPrefixes)) {
    value /= 1000.0;
    ++prefix;
  }
  char text[48];
  std::snprintf(text, sizeof(text), "%.4g %s%s", value, kPrefixes[prefix], unit);
  return text;
}

void print_counts(const char* title, const std::map<std::string, std::uint64_t>& counts) {
  if (counts.empty()) {
    return;
  }
  std::printf("  %s\n", title);
  for (const auto& [name, count] : counts) {
    std::printf("    %-56s %llu\n", name.c_str(), static_cast<unsigned long long>(count));
  }
}

void print_text(const ModuleCost& m, std::size_t modules) {
  const ExecutionTotals& t = m.totals;
  const workload::Program& p = *m.program;
  std::printf("module %s (module %u of %zu)\n",
              p.module_name().empty() ? "(unnamed)" : ("@" + std::string(p.module_name())).c_str(),
              p.module_index() + 1, modules);
  std::printf("  one device, one run: %s, %s (read %s, written %s), estimated compute %.6g s\n",
              si(t.flops.value, "FLOP").c_str(), si(t.bytes().as_double(), "B").c_str(),
              si(t.bytes_read.as_double(), "B").c_str(), si(t.bytes_written.as_double(), "B").c_str(),
              t.time.seconds());
  if (t.bytes().is_max() || t.time.is_max()) {
    std::printf("  saturated: a total reached its 64-bit maximum (loops of huge trip counts); the true value is larger\n");
  }
  std::printf("  %-16s %10s %14s %14s %14s %7s\n", "class", "kernels", "FLOPs", "bytes", "time (s)", "time %");
  const double total = std::max(t.time.seconds(), 1e-300);
  for (std::size_t i = 0; i < t.classes.size(); ++i) {
    const compute::ClassTotals& c = t.classes[i];
    if (c.executions == 0) {
      continue;
    }
    std::printf("  %-16s %10llu %14.4g %14.4g %14.6g %6.1f%%\n",
                std::string(compute::name(static_cast<OpClass>(i))).c_str(),
                static_cast<unsigned long long>(c.launches), c.flops.value,
                (c.bytes_read + c.bytes_written).as_double(), c.time.seconds(),
                100.0 * c.time.seconds() / total);
  }
  std::string estimators;
  for (const auto& [name, count] : t.estimators) {
    estimators += (estimators.empty() ? "" : ", ") + name + " (" + std::to_string(count) + " kernels)";
  }
  std::printf("  estimators: %s\n", estimators.empty() ? "none" : estimators.c_str());
  std::printf("  executions: %llu kernels%s, %llu fused into another kernel, %llu free, %llu communication\n",
              static_cast<unsigned long long>(t.role_executions[0]),
              t.launches == t.role_executions[0] ? ""
                                                 : (" (" + std::to_string(t.launches) +
                                                    " launched, with the second stages of tree reductions)")
                                                       .c_str(),
              static_cast<unsigned long long>(t.role_executions[3]),
              static_cast<unsigned long long>(t.role_executions[1]),
              static_cast<unsigned long long>(t.role_executions[2]));
  std::printf("  kernels in the program (each costed once): %llu; estimate cache: %llu lookups, %.1f%% hits\n",
              static_cast<unsigned long long>(m.costs.estimates), static_cast<unsigned long long>(m.costs.cache.lookups),
              100.0 * m.costs.cache.hit_rate());
  print_counts("communication (not compute: the system layer decomposes these):", t.communication);
  print_counts("approximate counts:", t.approximate);
  print_counts("free (no kernel runs):", t.free_ops);
}

}  // namespace

int print_costs(const std::string& file, const std::vector<frontend::stablehlo::ParsedModule>& modules,
                const InspectCostOptions& options, bool json) {
  if (options.hardware.empty()) {
    throw OrreryError(ErrorCode::kConfig, "--cost needs --hardware NAME (a preset in configs/hardware, or a path)");
  }
  const config::ComputeConfig config = compute_config(options);
  compute::Hardware hardware = compute::load_hardware(options.hardware);
  const std::string hardware_name = hardware.name;
  const std::string hardware_source = hardware.source;
  compute::ComputeModel model(config, std::move(hardware));
  const compute::CostOptions cost_options = compute::CostOptions::from(config);
  std::vector<ModuleCost> costs;
  for (const auto& module : modules) {
    std::shared_ptr<const workload::Program> program = module.program;
    if (!options.no_inline) {  // as a scenario's compute.inline_calls (default true)
      program = workload::ProgramBuilder::inline_calls(*program);
    }
    ModuleCost m{program, compute::cost_program(*program, model, cost_options), {}};
    m.totals = compute::execution_totals(*program, m.costs);
    costs.push_back(std::move(m));
  }
  if (json) {
    const nlohmann::json settings = {{"hardware", hardware_name},
                                     {"hardware_source", hardware_source},
                                     {"estimator", options.estimator},
                                     {"fusion", options.fusion},
                                     {"f32_matmul", options.f32_matmul}};
    nlohmann::json out;
    if (costs.size() == 1) {
      out = to_json(costs[0]);
      if (options.top > 0) {
        out["top_kernels"] = top_json(costs[0], options.top);
      }
      out.update(settings);
    } else {
      out = {{"file", file}, {"module_count", costs.size()}, {"modules", nlohmann::json::array()}};
      out.update(settings);
      for (const ModuleCost& m : costs) {
        out["modules"].push_back(to_json(m));
        if (options.top > 0) {
          out["modules"].back()["top_kernels"] = top_json(m, options.top);
        }
      }
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("%s: %zu module(s); hardware %s (%s), estimator %s, fusion %s\n", file.c_str(), modules.size(),
              hardware_name.c_str(), hardware_source.c_str(), options.estimator.c_str(), options.fusion.c_str());
  for (const ModuleCost& m : costs) {
    print_text(m, costs.size());
    print_top(m, options.top);
  }
  return 0;
}

}  // namespace orrery::cli
