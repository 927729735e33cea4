#include "compute/tools/validation_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "compute/kernel_table.h"
#include "compute/roofline.h"
#include "compute/scalesim_files.h"
#include "compute/systolic.h"
#include "compute/table_estimator.h"

namespace orrery::compute {
namespace {

namespace fs = std::filesystem;

struct ErrorStats {
  std::size_t count = 0;
  double median = 0.0;
  double p90 = 0.0;
};

// Median and 90th percentile (linear interpolation between order statistics) of |errors|.
ErrorStats stats_of(std::vector<double> errors) {
  ErrorStats stats;
  stats.count = errors.size();
  if (errors.empty()) {
    return stats;
  }
  std::sort(errors.begin(), errors.end());
  const auto quantile = [&](double q) {
    const double position = q * static_cast<double>(errors.size() - 1);
    const auto low = static_cast<std::size_t>(std::floor(position));
    const std::size_t high = std::min(low + 1, errors.size() - 1);
    return errors[low] + (position - static_cast<double>(low)) * (errors[high] - errors[low]);
  };
  stats.median = quantile(0.5);
  stats.p90 = quantile(0.9);
  return stats;
}

std::string percent(double value) { return fmt::format("{:.1f}%", 100.0 * value); }

struct Prediction {
  const MeasuredOp* measured;
  double predicted_s;
  std::string how;
};

double relative_error(const Prediction& p) {
  return std::abs(p.predicted_s - p.measured->time_s) / p.measured->time_s;
}

// One table: rows grouped by `group`, then an "all" row.
std::string error_table(const std::vector<Prediction>& predictions, const std::string& group_title,
                        const std::function<std::string(const MeasuredOp&)>& group) {
  std::map<std::string, std::vector<double>> groups;
  std::vector<double> all;
  for (const Prediction& p : predictions) {
    groups[group(*p.measured)].push_back(relative_error(p));
    all.push_back(relative_error(p));
  }
  std::string out = fmt::format("| {} | kernels | median abs. rel. error | p90 abs. rel. error |\n|---|---|---|---|\n", group_title);
  for (const auto& [name, errors] : groups) {
    const ErrorStats s = stats_of(errors);
    out += fmt::format("| {} | {} | {} | {} |\n", name, s.count, percent(s.median), percent(s.p90));
  }
  const ErrorStats s = stats_of(all);
  out += fmt::format("| **all** | {} | **{}** | {} |\n", s.count, percent(s.median), percent(s.p90));
  return out;
}

std::string by_class(const MeasuredOp& m) { return std::string(name(m.op.op_class)); }
std::string by_label(const MeasuredOp& m) { return fmt::format("{} ({})", m.label, m.op.kind); }

std::vector<Prediction> predict(const std::vector<MeasuredOp>& data, const Estimator& estimator, const Hardware& hardware) {
  std::vector<Prediction> out;
  for (const MeasuredOp& m : data) {
    const Estimate e = estimator.estimate(m.op, hardware);
    out.push_back(Prediction{&m, e.time.seconds(), e.note});
  }
  return out;
}

// How the table answered: exact, interpolated, scaled or fallback, counted.
std::string answer_counts(const std::vector<Prediction>& predictions) {
  std::map<std::string, std::size_t> counts;
  for (const Prediction& p : predictions) {
    const std::string kind = p.how.starts_with("table fallback") ? "fallback"
                             : p.how.starts_with("measured")      ? "exact shape"
                             : p.how.starts_with("interpolated")  ? "interpolated (1-D log-log)"
                                                                  : "scaled nearest shapes";
    ++counts[kind];
  }
  std::vector<std::string> parts;
  for (const auto& [kind, count] : counts) {
    parts.push_back(fmt::format("{} {}", kind, count));
  }
  return fmt::format("How the table answered: {}.\n\n", fmt::join(parts, ", "));
}

std::vector<KernelMeasurement> as_table(const std::vector<MeasuredOp>& data) {
  std::vector<KernelMeasurement> rows;
  for (const MeasuredOp& m : data) {
    rows.push_back(to_measurement(m));
  }
  return rows;
}

std::string table_section(const std::string& title, const std::vector<MeasuredOp>& train,
                          const std::vector<MeasuredOp>& test, const Hardware& hardware) {
  const TableEstimator table(as_table(train), std::make_unique<RooflineEstimator>());
  const std::vector<Prediction> predictions = predict(test, table, hardware);
  return fmt::format("### {}\n\n{}\n{}\n{}", title, error_table(predictions, "op class", by_class),
                     error_table(predictions, "op (kind)", by_label), answer_counts(predictions));
}

std::string leave_one_out_section(const std::vector<MeasuredOp>& data, const Hardware& hardware) {
  std::vector<Prediction> predictions;
  for (std::size_t i = 0; i < data.size(); ++i) {
    std::vector<MeasuredOp> others;
    for (std::size_t j = 0; j < data.size(); ++j) {
      if (j != i && data[j].op.table_shape() != data[i].op.table_shape()) {
        others.push_back(data[j]);
      }
    }
    const TableEstimator table(as_table(others), std::make_unique<RooflineEstimator>());
    const Estimate e = table.estimate(data[i].op, hardware);
    predictions.push_back(Prediction{&data[i], e.time.seconds(), e.note});
  }
  return fmt::format("### LLMCompass sweeps, leave one shape out\n\nEach measured shape is predicted from the other "
                     "shapes of its sweep (interpolation and extrapolation along the sweep).\n\n{}\n{}",
                     error_table(predictions, "op (kind)", by_label), answer_counts(predictions));
}

std::string roofline_section(const std::string& title, const std::vector<MeasuredOp>& data, const Hardware& hardware,
                             bool per_op) {
  const RooflineEstimator roofline;
  const std::vector<Prediction> predictions = predict(data, roofline, hardware);
  std::string out = fmt::format("### {}\n\n{}\n", title, error_table(predictions, "op class", by_class));
  if (per_op) {
    out += error_table(predictions, "op (kind)", by_label) + "\n";
  }
  return out;
}

std::string fitted_constants(const Hardware& hardware) {
  std::string out = fmt::format("Preset {} ({}): launch overhead {:.2f} us.\n\n| op class | compute fraction | memory "
                                "fraction |\n|---|---|---|\n",
                                hardware.name, fs::path(hardware.source).filename().string(),
                                hardware.roofline.launch_overhead.seconds() * 1e6);
  for (const auto& entry : config::enum_names(OpClass{})) {
    const Efficiency& e = hardware.roofline.efficiency_for(entry.value);
    out += fmt::format("| {} | {:.2f} | {:.2f} |\n", entry.name, e.compute, e.memory);
  }
  out += fmt::format("\nProvenance: {}\n", hardware.provenance);
  return out;
}

std::string scalesim_section(const fs::path& golden_dir) {
  std::string out =
      "| report | dataflow | array | layer | compute cycles (SCALE-Sim) | compute cycles (Orrery) | stall cycles "
      "(SCALE-Sim) | stall cycles (Orrery) |\n|---|---|---|---|---|---|---|---|\n";
  std::size_t matched = 0;
  std::size_t total = 0;
  for (const ScaleSimGoldenCase& golden : scalesim_golden_cases(golden_dir)) {
    ScaleSimConfig config = read_scalesim_config(golden.config.string());
    config.dataflow = golden.dataflow;
    config.user_bandwidth = golden.user_bandwidth;
    const std::vector<ScaleSimLayer> layers = read_scalesim_topology(golden.topology.string());
    for (const ScaleSimReportRow& row : read_scalesim_compute_report(golden.report.string())) {
      const ScaleSimLayer& layer = layers.at(row.layer);
      const SystolicCycles cycles = systolic_gemm_cycles(layer.gemm, config.array());
      ++total;
      matched += cycles.compute_cycles == row.compute_cycles() ? 1 : 0;
      out += fmt::format("| {} | {} | {}x{} | {} | {} | {} | {} | {} |\n",
                         fs::relative(golden.report, golden_dir).string(), config::enum_to_string(config.dataflow),
                         config.array_height, config.array_width, layer.name, row.compute_cycles(),
                         cycles.compute_cycles, row.stall_cycles, cycles.stall_cycles);
    }
  }
  return fmt::format("Compute cycles reproduced exactly: {} of {} reports.\n\n{}", matched, total, out);
}

}  // namespace

std::string validation_report(const fs::path& data_dir) {
  const fs::path compute = data_dir / "compute";
  const fs::path vidur = compute / "vidur" / "compute" / "a100";
  const std::vector<MeasuredOp> llama7 = read_vidur_mlp_csv((vidur / "Llama-2-7b-hf_mlp.csv").string());
  const std::vector<MeasuredOp> llama70 = read_vidur_mlp_csv((vidur / "Llama-2-70b-hf_mlp.csv").string());
  std::vector<MeasuredOp> llmcompass;
  for (const std::string op : {"matmul", "gelu", "layernorm", "softmax"}) {
    std::vector<MeasuredOp> more = read_llmcompass_csv((compute / "llmcompass" / (op + "_A100.csv")).string());
    llmcompass.insert(llmcompass.end(), more.begin(), more.end());
  }
  const Hardware a100 = load_hardware("A100_80GB");
  Hardware datasheet = a100;
  datasheet.roofline.efficiency.fill(Efficiency{});
  datasheet.roofline.launch_overhead = SimTime::zero();

  std::string page = "# Compute estimators: validation\n\n";
  page += "Generated by `make validate` (`orrery_compute_tool validate`) from ../shared/data/compute; do not edit by "
          "hand. Errors are |predicted - measured| / measured per kernel; medians and 90th percentiles per op class. "
          "Kernel signatures are built from the CSV rows (src/compute/kernel_table.h documents each column and op).\n\n";
  page += fmt::format("Data: Vidur Llama-2-7B layer ops on A100 80GB ({} kernels), Llama-2-70B ({} kernels), CUDA-event "
                      "times; LLMCompass A100 80GB fp16 sweeps ({} kernels), host-clock times that include ~20-50 us of "
                      "launch and synchronisation overhead.\n\n",
                      llama7.size(), llama70.size(), llmcompass.size());

  page += "## Roofline\n\n";
  page += "The A100_80GB preset's efficiencies and launch overhead are fitted on the Llama-2-7B kernels only "
          "(`orrery_compute_tool fit-roofline`), so the 7B rows are in-sample and the 70B and LLMCompass rows are "
          "not.\n\n";
  page += fitted_constants(a100) + "\n";
  page += roofline_section("Fitted roofline, Llama-2-7B (in-sample)", llama7, a100, false);
  page += roofline_section("Fitted roofline, Llama-2-70B (out-of-sample)", llama70, a100, true);
  page += roofline_section("Fitted roofline, LLMCompass sweeps (out-of-sample, host-timed)", llmcompass, a100, true);
  page += roofline_section("Datasheet roofline (efficiency 1, no launch overhead, as Hespas), Llama-2-70B", llama70,
                           datasheet, false);

  page += "## Table\n\n";
  page += "The table estimator holds the measured kernels of one model and predicts the other's: exact shapes, "
          "log-log interpolation along one dimension, or the nearest measured shapes scaled by the roofline ratio "
          "(docs/compute.md).\n\n";
  page += table_section("Fit on Llama-2-7B, predict Llama-2-70B", llama7, llama70, a100);
  page += table_section("Fit on Llama-2-70B, predict Llama-2-7B", llama70, llama7, a100);
  page += leave_one_out_section(llmcompass, a100);

  page += "\n## Systolic model against SCALE-Sim\n\n";
  page += "Compute cycles (total minus stall cycles) of every COMPUTE_REPORT in scalesim_golden against the fold "
          "model; stall cycles come from SCALE-Sim's cycle-level memory model and are shown, not required to match.\n\n";
  page += scalesim_section(compute / "scalesim_golden");
  return page;
}

}  // namespace orrery::compute
