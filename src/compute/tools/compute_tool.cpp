// orrery_compute_tool: the compute estimators' maintenance commands.
//
//   fit-roofline  fits the roofline's efficiencies and launch overhead to measured kernel times
//                 and prints (or, with --write, rewrites) the FITTED block of a preset file
//   validate      writes docs/validation/compute.md: every estimator against the measured kernel
//                 times in ../shared/data/compute, and the systolic model against SCALE-Sim
//   export-table  converts kernel tables (Vidur, LLMCompass, validation/gpu microbenchmarks, Orrery)
//                 into Orrery's table format
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "compute/kernel_table.h"
#include "compute/roofline_fit.h"
#include "compute/tools/validation_report.h"
#include "config/loader.h"
#include "util/error.h"

namespace {

namespace fs = std::filesystem;
using namespace orrery;
using namespace orrery::compute;

constexpr std::string_view kBegin = "  # BEGIN FITTED";
constexpr std::string_view kEnd = "  # END FITTED";

// Each input by its file name, or by as many trailing path components as tell it from the others
// (validation/gpu's data/kernels/conv.csv and data/repeat/kernels/conv.csv).
std::vector<std::string> distinct_names(const std::vector<std::string>& inputs) {
  auto suffix = [](const std::string& path, std::size_t parts) {
    std::vector<std::string> all;
    for (const auto& part : fs::path(path).lexically_normal()) {
      all.push_back(part.string());
    }
    fs::path out;
    for (std::size_t i = all.size() > parts ? all.size() - parts : 0; i < all.size(); ++i) {
      out /= all[i];
    }
    return out.generic_string();
  };
  std::vector<std::string> names;
  for (const std::string& input : inputs) {
    std::size_t parts = 1;
    auto clashes = [&] {
      return std::count_if(inputs.begin(), inputs.end(), [&](const std::string& other) {
               return suffix(other, parts) == suffix(input, parts);
             }) > 1;
    };
    while (parts < 8 && clashes()) {
      ++parts;
    }
    names.push_back(suffix(input, parts));
  }
  return names;
}

std::string fitted_block(const RooflineFit& fit, const std::vector<std::string>& vidur_inputs,
                         const std::vector<std::string>& kernel_inputs) {
  std::string block = fmt::format(
      "{} (written by `orrery_compute_tool fit-roofline`; do not edit by hand)\n"
      "  launch_overhead_us: {:.2f}\n"
      "  efficiency:\n",
      kBegin, fit.launch_overhead_us);
  // Classes the data does not cover use the elementwise fit: a generic memory-bound kernel.
  if (const auto it = fit.classes.find(OpClass::kElementwise); it != fit.classes.end()) {
    block += fmt::format("    default: {{compute: {:.2f}, memory: {:.2f}}}  # = elementwise\n", it->second.efficiency.compute,
                         it->second.efficiency.memory);
  }
  for (const auto& [op_class, class_fit] : fit.classes) {
    block += fmt::format("    {}: {{compute: {:.2f}, memory: {:.2f}}}  # {} kernels\n", name(op_class),
                         class_fit.efficiency.compute, class_fit.efficiency.memory, class_fit.rows);
    // Without convolution kernels, convolutions take the GEMM fit: cuDNN's implicit-GEMM kernels
    // are GEMMs (docs/compute.md, "How the constants were fitted").
    if (op_class == OpClass::kGemm && !fit.classes.contains(OpClass::kConvolution)) {
      block += fmt::format(
          "    {}: {{compute: {:.2f}, memory: {:.2f}}}  # no convolution kernel data: implicit-GEMM convolutions "
          "run as GEMMs, so the GEMM fractions\n",
          name(OpClass::kConvolution), class_fit.efficiency.compute, class_fit.efficiency.memory);
    }
  }
  std::vector<std::string> sources;
  auto add = [&](std::string_view what, const std::vector<std::string>& inputs) {
    const std::vector<std::string> names = distinct_names(inputs);
    if (!names.empty()) {
      sources.push_back(fmt::format("{} {}", what, fmt::join(names, ", ")));
    }
  };
  add("Vidur", vidur_inputs);
  add("validation/gpu microbenchmarks", kernel_inputs);
  block += fmt::format(
      "  provenance: \"fitted by orrery_compute_tool fit-roofline (least squares in log time, grid search) "
      "on {} "
      "measured kernel times: {}\"\n",
      fit.rows, fmt::join(sources, "; "));
  block += std::string(kEnd) + "\n";
  return block;
}

int fit_command(const std::string& preset_file, const std::vector<std::string>& vidur_files,
                const std::vector<std::string>& kernel_files, bool write) {
  const Hardware hardware = hardware_from_config(read_preset_file(preset_file), preset_file);
  std::vector<MeasuredOp> measured;
  for (const std::string& file : vidur_files) {
    std::vector<MeasuredOp> more = read_vidur_mlp_csv(file, hardware.name);
    measured.insert(measured.end(), more.begin(), more.end());
  }
  // The microbenchmarks re-run one set of buffers: a memory-bound kernel whose data fits in the
  // on-chip cache then streams from the cache, which a training step's kernels (each reading what
  // another wrote, most larger than the cache) do not. Such rows are left out; GEMMs and
  // convolutions, which reuse their operands on chip by design, stay.
  std::size_t cache_resident = 0;
  for (const std::string& file : kernel_files) {
    for (MeasuredOp& m : read_gpu_microbenchmark_csv(file, hardware.name)) {
      const bool tiled = m.op.op_class == OpClass::kGemm || m.op.op_class == OpClass::kConvolution;
      if (!tiled && m.op.bytes() <= hardware.on_chip_memory) {
        ++cache_resident;
        continue;
      }
      measured.push_back(std::move(m));
    }
  }
  if (measured.empty()) {
    throw OrreryError(ErrorCode::kInvalidInput,
                      "fit-roofline: no kernel times (give --vidur or --kernels files)");
  }
  const RooflineFit fit = fit_roofline(measured, hardware);
  std::string block = fitted_block(fit, vidur_files, kernel_files);
  if (cache_resident > 0) {
    const auto at = block.rfind("\"\n");
    block.insert(at, fmt::format(" ({} memory-bound rows that fit in the {:.0f} MB on-chip cache left out)",
                                 cache_resident, hardware.on_chip_memory.as_double() / 1e6));
  }
  if (!write) {
    std::cout << block;
    return 0;
  }
  std::string text = config::read_text_file(preset_file);
  const auto begin = text.find(kBegin);
  const auto end = text.find(kEnd);
  if (begin == std::string::npos || end == std::string::npos || end < begin) {
    throw OrreryError(ErrorCode::kInvalidInput,
                      fmt::format("{}: no '# BEGIN FITTED' ... '# END FITTED' block to rewrite", preset_file));
  }
  const auto end_of_line = text.find('\n', end);
  text.replace(begin, (end_of_line == std::string::npos ? text.size() : end_of_line + 1) - begin, block);
  std::ofstream(preset_file) << text;
  std::cout << "rewrote the fitted block of " << preset_file << "\n" << block;
  return 0;
}

int export_command(const std::vector<std::string>& inputs, const std::string& hardware,
                   const std::string& output) {
  std::vector<KernelMeasurement> rows;
  const std::vector<std::string> names = distinct_names(inputs);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    std::vector<KernelMeasurement> more = read_kernel_table(inputs[i], hardware);
    for (KernelMeasurement& row : more) {
      row.source = fmt::format("{} ({})", row.source, names[i]);
    }
    rows.insert(rows.end(), more.begin(), more.end());
  }
  std::ostringstream table;
  write_orrery_table(table, rows);
  std::ofstream(output) << table.str();
  std::cout << fmt::format("wrote {} rows to {}\n", rows.size(), output);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Maintenance commands of Orrery's compute estimators.", "orrery_compute_tool"};
  app.require_subcommand(1, 1);

  std::string preset_file;
  std::vector<std::string> vidur_files;
  std::vector<std::string> kernel_files;
  bool write = false;
  CLI::App* fit = app.add_subcommand("fit-roofline", "Fit roofline efficiencies and launch overhead to kernel times");
  fit->add_option("--preset", preset_file, "Preset YAML file whose peaks the fit uses")->required();
  fit->add_option("--vidur", vidur_files, "Vidur per-op CSV(s) measured on the preset's device");
  fit->add_option(
      "--kernels", kernel_files,
      "validation/gpu microbenchmark CSV(s) (matmul, elementwise, reduction, conv) measured on the "
      "preset's device");
  fit->add_flag("--write", write, "Rewrite the preset's FITTED block instead of printing it");

  std::string data_dir;
  std::string output;
  CLI::App* validate = app.add_subcommand("validate", "Write the compute validation page");
  validate->add_option("--data", data_dir, "The shared data directory (../shared/data)")->required();
  validate->add_option("--out", output, "The page to write (docs/validation/compute.md)")->required();

  std::vector<std::string> inputs;
  std::string export_hardware;
  CLI::App* exporter = app.add_subcommand("export-table", "Convert kernel tables to Orrery's format");
  exporter->add_option("inputs", inputs, "Vidur, LLMCompass or Orrery tables")->required();
  exporter->add_option("--out", output, "Output CSV")->required();
  exporter->add_option(
      "--hardware", export_hardware,
      "The preset validation/gpu microbenchmark CSVs were measured on (they name no device)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;
  }
  try {
    if (fit->parsed()) {
      return fit_command(preset_file, vidur_files, kernel_files, write);
    }
    if (validate->parsed()) {
      std::ofstream(output) << validation_report(fs::path(data_dir));
      std::cout << "wrote " << output << "\n";
      return 0;
    }
    return export_command(inputs, export_hardware, output);
  } catch (const OrreryError& error) {
    std::fprintf(stderr, "orrery_compute_tool: %s\n", error.what());
    return 2;
  }
}
