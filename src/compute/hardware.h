// Hardware presets: the constants estimators cost ops with.
//
// A preset is a YAML file, configs/hardware/NAME.yaml, read through the config schema machinery
// (so a bad key names the file, line, column and key path), or one of Hespas' JSON node configs
// (perf_estimator.method roofline or cocossim), so Hespas users keep their files. Either becomes a
// Hardware: typed units, peak rates resolved per element type, efficiencies per op class.
//
// Finding a preset by name (docs/compute.md, "Hardware presets"): NAME resolves to
// <dir>/hardware/NAME.yaml for the first configs directory <dir> that has it, searched in order:
//   1. $ORRERY_CONFIG_DIR (a configs directory: it holds hardware/),
//   2. configs/ beside the running executable or up to three directories above it (a build tree
//      inside the source tree), and <exe>/../share/orrery/configs (an installed tree),
//   3. the source tree's configs/ that this library was built from.
// Anything containing '/' or ending in .yaml, .yml or .json is a path instead.
#pragma once

#include <array>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compute/element_type.h"
#include "compute/op_signature.h"
#include "config/schema.h"
#include "util/units.h"

namespace orrery::compute {

// Systolic dataflows (SCALE-Sim's names).
enum class Dataflow : std::uint8_t { kOutputStationary, kWeightStationary, kInputStationary };
inline std::span<const config::EnumName<Dataflow>> enum_names(Dataflow) {
  static constexpr config::EnumName<Dataflow> kNames[] = {{Dataflow::kOutputStationary, "os"},
                                                          {Dataflow::kWeightStationary, "ws"},
                                                          {Dataflow::kInputStationary, "is"}};
  return kNames;
}

// --- the preset file (YAML schema) --------------------------------------------------------------

struct EfficiencyConfig {
  double compute = 1.0;
  double memory = 1.0;

  template <class V>
  void fields(V& v) {
    v("compute", compute, "Achievable fraction of the peak FLOP rate.", config::Bounds{0.0, 1.0, true});
    v("memory", memory, "Achievable fraction of the memory bandwidth.", config::Bounds{0.0, 1.0, true});
  }
};

struct RooflineConfig {
  std::map<std::string, double> peak_tflops;
  double vector_tflops = 0.0;
  double memory_bandwidth_gbps = 0.0;
  double launch_overhead_us = 0.0;
  std::map<std::string, EfficiencyConfig> efficiency;
  std::string provenance;

  template <class V>
  void fields(V& v) {
    v("peak_tflops", peak_tflops,
      "Dense matrix-unit peaks (TFLOP/s) by element type (f8E4M3FN), precision family (f8, bf16, "
      "i8...) or `default` (required: types not listed).",
      config::positive());
    v("vector_tflops", vector_tflops,
      "Peak of the vector / CUDA-core units (TFLOP/s) that run every op class but gemm and convolution.",
      config::positive());
    v("memory_bandwidth_GBps", memory_bandwidth_gbps, "Peak memory (HBM) bandwidth (GB/s, 1e9 B/s).",
      config::positive());
    v("launch_overhead_us", launch_overhead_us, "Fixed time every kernel pays (us).", config::nonnegative());
    v("efficiency", efficiency,
      "Achievable fractions per op class (gemm, elementwise, normalisation...) or `default`.");
    v("provenance", provenance, "Where the efficiencies and launch overhead come from (a fit, a measurement).");
  }
  void validate(config::Problems& problems) const;
};

struct SystolicConfig {
  std::uint32_t array_rows = 128;
  std::uint32_t array_cols = 128;
  std::uint32_t arrays = 1;
  double clock_ghz = 1.0;
  Dataflow dataflow = Dataflow::kWeightStationary;
  double ifmap_sram_kib = 0.0;
  double filter_sram_kib = 0.0;
  double ofmap_sram_kib = 0.0;
  double dram_bandwidth_gbps = 0.0;
  double vector_flops_per_cycle = 0.0;

  template <class V>
  void fields(V& v) {
    v("array_rows", array_rows, "Rows R of one systolic array (processing elements).", config::at_least(1));
    v("array_cols", array_cols, "Columns C of one systolic array.", config::at_least(1));
    v("arrays", arrays, "Systolic arrays per device (e.g. MXUs over all TensorCores); folds are spread over them.",
      config::at_least(1));
    v("clock_GHz", clock_ghz, "Array clock (GHz).", config::positive());
    v("dataflow", dataflow, "Dataflow: os (output-), ws (weight-) or is (input-stationary).");
    v("ifmap_sram_KiB", ifmap_sram_kib, "Input (ifmap) SRAM per array (KiB).", config::positive());
    v("filter_sram_KiB", filter_sram_kib, "Filter (weight) SRAM per array (KiB).", config::positive());
    v("ofmap_sram_KiB", ofmap_sram_kib, "Output (ofmap) SRAM per array (KiB).", config::positive());
    v("dram_bandwidth_GBps", dram_bandwidth_gbps,
      "Off-chip bandwidth shared by the arrays (GB/s); 0: the roofline memory bandwidth.",
      config::nonnegative());
    v("vector_flops_per_cycle", vector_flops_per_cycle,
      "Vector-unit FLOPs per cycle per device, for ops that are not gemm or convolution.", config::positive());
  }
  void validate(config::Problems& problems) const;
};

struct HardwarePresetConfig {
  std::string name;
  std::string description;
  double memory_capacity_gb = 0.0;
  double on_chip_memory_mb = 0.0;
  RooflineConfig roofline;
  std::optional<SystolicConfig> systolic;

  template <class V>
  void fields(V& v) {
    v("name", name, "Preset name (the file name without .yaml).");
    v("description", description, "What the preset describes.");
    v("memory_capacity_GB", memory_capacity_gb, "Device memory (GB, 1e9 B).", config::nonnegative());
    v("on_chip_memory_MB", on_chip_memory_mb, "L2 cache / on-chip SRAM (MB, 1e6 B).", config::nonnegative());
    v("roofline", roofline, "Roofline constants (every preset has them).");
    v("systolic", systolic, "Systolic-array constants (TPU-like presets).");
  }
  void validate(config::Problems& problems) const;
};

// --- the resolved hardware --------------------------------------------------------------------

struct Efficiency {
  double compute = 1.0;
  double memory = 1.0;
};

struct RooflineParameters {
  // Matrix-unit peak per element type; zero where the preset gives none.
  std::array<FlopsPerSecond, kElementTypeCount> matrix_peak{};
  // The rate ops of classes other than gemm and convolution compute at.
  FlopsPerSecond vector_peak;
  BytesPerSecond memory_bandwidth;
  std::array<Efficiency, kOpClassCount> efficiency{};
  SimTime launch_overhead;

  [[nodiscard]] FlopsPerSecond peak_for(const OpSignature& op) const;
  [[nodiscard]] const Efficiency& efficiency_for(OpClass op_class) const {
    return efficiency[static_cast<std::size_t>(op_class)];
  }
};

struct SystolicParameters {
  std::uint32_t rows = 0;
  std::uint32_t cols = 0;
  std::uint32_t arrays = 1;
  double clock_hz = 0.0;
  Dataflow dataflow = Dataflow::kWeightStationary;
  Bytes ifmap_sram;   // per array
  Bytes filter_sram;  // per array
  Bytes ofmap_sram;   // per array
  BytesPerSecond dram_bandwidth;  // shared by the arrays
  double vector_flops_per_cycle = 0.0;
};

struct Hardware {
  std::string name;
  std::string description;
  std::string source;  // the file it was loaded from
  Bytes memory_capacity;
  Bytes on_chip_memory;
  RooflineParameters roofline;
  std::optional<SystolicParameters> systolic;
  std::string provenance;  // of the fitted constants
};

// Resolves a validated preset into typed units (source: the file, for traceability).
Hardware hardware_from_config(const HardwarePresetConfig& preset, std::string source);

// Reads a YAML preset file. Throws OrreryError naming the file, line, column and key.
HardwarePresetConfig read_preset_file(const std::filesystem::path& path);
// Reads one of Hespas' JSON node configs. Throws OrreryError naming the file and key (and the
// line and column for JSON syntax errors).
HardwarePresetConfig read_hespas_node_config(const std::filesystem::path& path);

// A preset by name (configs/hardware/NAME.yaml) or by path (YAML or Hespas JSON).
Hardware load_hardware(std::string_view name_or_path);

// The configs directories searched for presets, in order (see the file comment); only existing
// ones are listed.
std::vector<std::filesystem::path> config_directories();
// The path of the named preset; throws OrreryError(kConfig) with the places searched and a
// "did you mean" suggestion when there is none.
std::filesystem::path find_hardware_preset(std::string_view name);
// Names of every preset in the configs directories, sorted.
std::vector<std::string> known_hardware_presets();

// The reference table of every preset key (generated into docs/compute.md; a test keeps it in sync).
std::string hardware_preset_reference_markdown();

}  // namespace orrery::compute
