#include "compute/hardware.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "config/doc_writer.h"
#include "config/loader.h"
#include "util/error.h"

#ifndef ORRERY_DEFAULT_CONFIG_DIR
#define ORRERY_DEFAULT_CONFIG_DIR ""
#endif

namespace orrery::compute {
namespace {

namespace fs = std::filesystem;

bool is_class_key(const std::string& key) {
  return key == "default" || config::enum_from_string<OpClass>(key).has_value();
}

bool is_peak_key(const std::string& key) {
  return key == "default" || parse_element_type(key).has_value() || parse_precision_family(key).has_value();
}

std::string known_peak_keys() {
  std::vector<std::string_view> names{"default"};
  for (std::size_t i = 0; i < kPrecisionFamilyCount; ++i) {
    names.push_back(name(static_cast<PrecisionFamily>(i)));
  }
  return fmt::format("{}, or an element type such as f8E4M3FN", fmt::join(names, ", "));
}

fs::path executable_directory() {
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  return error ? fs::path() : exe.parent_path();
}

void add_if_configs(std::vector<fs::path>& out, const fs::path& candidate) {
  std::error_code error;
  if (candidate.empty() || !fs::is_directory(candidate / "hardware", error)) {
    return;
  }
  const fs::path normal = fs::weakly_canonical(candidate, error);
  const fs::path& chosen = error ? candidate : normal;
  if (std::find(out.begin(), out.end(), chosen) == out.end()) {
    out.push_back(chosen);
  }
}

}  // namespace

void RooflineConfig::validate(config::Problems& problems) const {
  for (const auto& [key, value] : peak_tflops) {
    if (!is_peak_key(key)) {
      problems.add("peak_tflops", fmt::format("unknown element type or family '{}' (known: {})", key,
                                              known_peak_keys()));
    }
  }
  if (memory_bandwidth_gbps <= 0.0) {
    problems.add("memory_bandwidth_GBps", "missing (every preset needs its memory bandwidth)");
  }
  if (vector_tflops <= 0.0) {
    problems.add("vector_tflops", "missing (every preset needs its vector-unit peak)");
  }
  if (!peak_tflops.contains("default")) {
    problems.add("peak_tflops", "needs a 'default' entry: the rate of element types not listed");
  }
  for (const auto& [key, value] : efficiency) {
    if (!is_class_key(key)) {
      problems.add("efficiency", fmt::format("unknown op class '{}' (known: default, {})", key,
                                             config::enum_choices<OpClass>()));
    }
  }
}

void SystolicConfig::validate(config::Problems& problems) const {
  for (const auto& [key, value] : {std::pair<const char*, double>{"ifmap_sram_KiB", ifmap_sram_kib},
                                   {"filter_sram_KiB", filter_sram_kib},
                                   {"ofmap_sram_KiB", ofmap_sram_kib},
                                   {"vector_flops_per_cycle", vector_flops_per_cycle}}) {
    if (value <= 0.0) {
      problems.add(key, "missing (a systolic section needs its SRAM sizes and vector rate)");
    }
  }
}

void HardwarePresetConfig::validate(config::Problems& problems) const {
  if (roofline.peak_tflops.empty() && roofline.memory_bandwidth_gbps <= 0.0 && roofline.vector_tflops <= 0.0) {
    problems.add("roofline", "missing (every preset needs its roofline section)");
  }
}

FlopsPerSecond RooflineParameters::peak_for(const OpSignature& op) const {
  if (op.op_class == OpClass::kGemm || op.op_class == OpClass::kConvolution) {
    return matrix_peak[static_cast<std::size_t>(op.element_type)];
  }
  return vector_peak;
}

Hardware hardware_from_config(const HardwarePresetConfig& preset, std::string source) {
  Hardware hardware;
  hardware.name = preset.name;
  hardware.description = preset.description;
  hardware.source = std::move(source);
  hardware.memory_capacity = Bytes{static_cast<std::uint64_t>(preset.memory_capacity_gb * 1e9)};
  hardware.on_chip_memory = Bytes{static_cast<std::uint64_t>(preset.on_chip_memory_mb * 1e6)};
  hardware.provenance = preset.roofline.provenance;

  RooflineParameters& roofline = hardware.roofline;
  const auto& peaks = preset.roofline.peak_tflops;
  for (const ElementTypeInfo& type : element_types()) {
    // The most specific key wins: the exact type, then its family, then `default`.
    auto it = peaks.find(std::string(type.name));
    if (it == peaks.end()) {
      it = peaks.find(std::string(name(type.family)));
    }
    if (it == peaks.end()) {
      for (auto alias = peaks.begin(); alias != peaks.end(); ++alias) {
        if (parse_element_type(alias->first) == type.type) {
          it = alias;
        }
      }
    }
    if (it == peaks.end()) {
      it = peaks.find("default");
    }
    if (it != peaks.end()) {
      roofline.matrix_peak[static_cast<std::size_t>(type.type)] = FlopsPerSecond::from_teraflops(it->second);
    }
  }
  roofline.vector_peak = FlopsPerSecond::from_teraflops(preset.roofline.vector_tflops);
  roofline.memory_bandwidth = BytesPerSecond::from_gigabytes(preset.roofline.memory_bandwidth_gbps);
  roofline.launch_overhead = SimTime::from_microseconds(preset.roofline.launch_overhead_us);
  Efficiency fallback;
  if (const auto it = preset.roofline.efficiency.find("default"); it != preset.roofline.efficiency.end()) {
    fallback = Efficiency{it->second.compute, it->second.memory};
  }
  for (const auto& entry : config::enum_names(OpClass{})) {
    const auto it = preset.roofline.efficiency.find(std::string(entry.name));
    roofline.efficiency[static_cast<std::size_t>(entry.value)] =
        it == preset.roofline.efficiency.end() ? fallback : Efficiency{it->second.compute, it->second.memory};
  }

  if (preset.systolic) {
    const SystolicConfig& in = *preset.systolic;
    SystolicParameters out;
    out.rows = in.array_rows;
    out.cols = in.array_cols;
    out.arrays = in.arrays;
    out.clock_hz = in.clock_ghz * 1e9;
    out.dataflow = in.dataflow;
    out.ifmap_sram = Bytes{static_cast<std::uint64_t>(in.ifmap_sram_kib * 1024.0)};
    out.filter_sram = Bytes{static_cast<std::uint64_t>(in.filter_sram_kib * 1024.0)};
    out.ofmap_sram = Bytes{static_cast<std::uint64_t>(in.ofmap_sram_kib * 1024.0)};
    out.dram_bandwidth = in.dram_bandwidth_gbps > 0.0 ? BytesPerSecond::from_gigabytes(in.dram_bandwidth_gbps)
                                                      : roofline.memory_bandwidth;
    out.vector_flops_per_cycle = in.vector_flops_per_cycle;
    hardware.systolic = out;
  }
  return hardware;
}

HardwarePresetConfig read_preset_file(const fs::path& path) {
  HardwarePresetConfig preset = config::load_config_file<HardwarePresetConfig>(path.string(), {});
  if (preset.name.empty()) {
    preset.name = path.stem().string();
  }
  return preset;
}

Hardware load_hardware(std::string_view name_or_path) {
  const fs::path path = config::names_a_file(name_or_path) ? fs::path(name_or_path) : find_hardware_preset(name_or_path);
  if (path.extension() == ".json") {
    return hardware_from_config(read_hespas_node_config(path), path.string());
  }
  return hardware_from_config(read_preset_file(path), path.string());
}

std::vector<fs::path> config_directories() {
  std::vector<fs::path> directories;
  if (const char* env = std::getenv("ORRERY_CONFIG_DIR"); env != nullptr && *env != '\0') {
    add_if_configs(directories, fs::path(env));
  }
  const fs::path exe = executable_directory();
  if (!exe.empty()) {
    fs::path up = exe;
    for (int level = 0; level <= 3; ++level) {
      add_if_configs(directories, up / "configs");
      up = up.parent_path();
    }
    add_if_configs(directories, exe.parent_path() / "share" / "orrery" / "configs");
  }
  add_if_configs(directories, fs::path(ORRERY_DEFAULT_CONFIG_DIR));
  return directories;
}

std::vector<std::string> known_hardware_presets() {
  std::set<std::string> names;
  for (const fs::path& directory : config_directories()) {
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(directory / "hardware", error)) {
      if (entry.path().extension() == ".yaml") {
        names.insert(entry.path().stem().string());
      }
    }
  }
  return {names.begin(), names.end()};
}

std::string hardware_preset_reference_markdown() {
  config::DocWriter writer;
  HardwarePresetConfig defaults;
  writer.document("", defaults);
  return writer.markdown_table();
}

fs::path find_hardware_preset(std::string_view name) {
  const std::vector<fs::path> directories = config_directories();
  for (const fs::path& directory : directories) {
    const fs::path candidate = directory / "hardware" / (std::string(name) + ".yaml");
    std::error_code error;
    if (fs::is_regular_file(candidate, error)) {
      return candidate;
    }
  }
  const std::vector<std::string> known = known_hardware_presets();
  std::string message = fmt::format("unknown hardware preset '{}'", name);
  if (const std::string suggestion = config::closest_match(name, known); !suggestion.empty()) {
    message += fmt::format(" (did you mean '{}'?)", suggestion);
  }
  Error error{ErrorCode::kConfig, message, std::nullopt, {}};
  error.notes.push_back(fmt::format("known presets: {}", known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
  std::vector<std::string> searched;
  for (const fs::path& directory : directories) {
    searched.push_back((directory / "hardware").string());
  }
  error.notes.push_back(fmt::format(
      "searched: {} (set ORRERY_CONFIG_DIR to a configs directory, or give a path to a .yaml or .json file)",
      searched.empty() ? "no configs directory found" : fmt::format("{}", fmt::join(searched, ", "))));
  throw OrreryError(std::move(error));
}

}  // namespace orrery::compute
