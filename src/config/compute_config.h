// The `compute` section: which estimator costs each op (multi-fidelity op costing, docs/compute.md).
//
// Rules are tried in order; the first rule whose `ops` names the op's kind (its StableHLO spelling,
// or a custom-call target) or whose `classes` names the op's class wins; ops no rule matches go to
// the `default` estimator. The op-class vocabulary lives here so that scenario files are checked
// with file:line:col like every other key; src/compute uses the same enumeration.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "config/schema.h"

namespace orrery::config {

enum class EstimatorKind { kRoofline, kSystolic, kTable, kPlugin };
inline std::span<const EnumName<EstimatorKind>> enum_names(EstimatorKind) {
  static constexpr EnumName<EstimatorKind> kNames[] = {{EstimatorKind::kRoofline, "roofline"},
                                                       {EstimatorKind::kSystolic, "systolic"},
                                                       {EstimatorKind::kTable, "table"},
                                                       {EstimatorKind::kPlugin, "plugin"}};
  return kNames;
}

// What kind of work an op does; decides which hardware rate and achievable fraction apply.
enum class OpClass : std::uint8_t {
  kGemm,           // dot_general and matmul-like custom calls
  kConvolution,    // convolution
  kElementwise,    // arithmetic, compare, select, convert, ...
  kTranscendental, // exponential, log, tanh, rsqrt, ... (elementwise with costly math)
  kReduction,      // reduce, reduce_window, select_and_scatter
  kNormalisation,  // fused layer/RMS norm and softmax kernels
  kDataMovement,   // broadcast, reshape, transpose, slice, pad, concatenate, copy
  kGatherScatter,  // gather, scatter, dynamic_slice, dynamic_update_slice, embedding lookups
  kSort,           // sort, top-k
  kCustomCall,     // custom calls Orrery cannot classify
  kOther,
};
inline constexpr std::size_t kOpClassCount = 11;
inline std::span<const EnumName<OpClass>> enum_names(OpClass) {
  static constexpr EnumName<OpClass> kNames[] = {{OpClass::kGemm, "gemm"},
                                                 {OpClass::kConvolution, "convolution"},
                                                 {OpClass::kElementwise, "elementwise"},
                                                 {OpClass::kTranscendental, "transcendental"},
                                                 {OpClass::kReduction, "reduction"},
                                                 {OpClass::kNormalisation, "normalisation"},
                                                 {OpClass::kDataMovement, "data_movement"},
                                                 {OpClass::kGatherScatter, "gather_scatter"},
                                                 {OpClass::kSort, "sort"},
                                                 {OpClass::kCustomCall, "custom_call"},
                                                 {OpClass::kOther, "other"}};
  static_assert(std::size(kNames) == kOpClassCount);
  return kNames;
}

// What f32 dot_general and convolution ops with DEFAULT precision compute in.
// How the ops of an unfused (StableHLO) program are grouped into kernels (docs/compute.md,
// "Fusion").
enum class FusionMode { kNone, kElementwise, kRegions };
inline std::span<const EnumName<FusionMode>> enum_names(FusionMode) {
  static constexpr EnumName<FusionMode> kNames[] = {
      {FusionMode::kNone, "none"}, {FusionMode::kElementwise, "elementwise"}, {FusionMode::kRegions, "regions"}};
  return kNames;
}

enum class F32MatmulPrecision { kTf32, kF32 };
inline std::span<const EnumName<F32MatmulPrecision>> enum_names(F32MatmulPrecision) {
  static constexpr EnumName<F32MatmulPrecision> kNames[] = {{F32MatmulPrecision::kTf32, "tf32"},
                                                            {F32MatmulPrecision::kF32, "f32"}};
  return kNames;
}

enum class PluginTransport { kAuto, kSharedLibrary, kSubprocess };
inline std::span<const EnumName<PluginTransport>> enum_names(PluginTransport) {
  static constexpr EnumName<PluginTransport> kNames[] = {{PluginTransport::kAuto, "auto"},
                                                         {PluginTransport::kSharedLibrary, "shared_library"},
                                                         {PluginTransport::kSubprocess, "subprocess"}};
  return kNames;
}

// One estimator with its settings: every rule carries these, and so does the section itself for
// its default estimator.
struct EstimatorChoice {
  EstimatorKind estimator = EstimatorKind::kRoofline;
  FilePath table;
  std::vector<FilePath> tables;
  EstimatorKind fallback = EstimatorKind::kRoofline;
  FilePath plugin;
  PluginTransport transport = PluginTransport::kAuto;
  std::vector<std::string> plugin_args;
  std::string plugin_options;
  double plugin_timeout_s = 30.0;

  // Every table file named by `table` and `tables`, in that order.
  [[nodiscard]] std::vector<FilePath> table_files() const {
    std::vector<FilePath> files;
    if (!table.empty()) {
      files.push_back(table);
    }
    files.insert(files.end(), tables.begin(), tables.end());
    return files;
  }

  template <class V>
  void estimator_fields(V& v) {
    v("table", table,
      "Measured kernel table for the table estimator: Orrery's CSV format, a Vidur per-op CSV or an "
      "LLMCompass sweep (docs/compute.md).");
    v("tables", tables, "More kernel tables, searched after `table`.");
    v("fallback", fallback, "Estimator for ops the tables cannot cost (table estimator only).");
    v("plugin", plugin, "Shared library (dlopen, C ABI) or executable (JSON lines) for the plugin estimator.");
    v("transport", transport,
      "How the plugin is attached; auto: a file ending in .so is loaded with dlopen, anything else "
      "runs as a subprocess.");
    v("plugin_args", plugin_args, "Arguments passed to a subprocess plugin.");
    v("plugin_options", plugin_options, "Free text handed to the plugin when it starts.");
    v("plugin_timeout_s", plugin_timeout_s, "Longest wait for one answer from a subprocess plugin (s).",
      positive());
  }
  void validate(Problems& problems) const {
    if (estimator == EstimatorKind::kTable && table.empty() && tables.empty()) {
      problems.add("table", "the table estimator needs a table file");
    }
    if (estimator == EstimatorKind::kPlugin && plugin.empty()) {
      problems.add("plugin", "the plugin estimator needs a plugin path");
    }
    if (fallback == EstimatorKind::kTable || fallback == EstimatorKind::kPlugin) {
      problems.add("fallback", "the fallback must be an analytical estimator (roofline or systolic)");
    }
  }
};

struct EstimatorRule : EstimatorChoice {
  std::vector<std::string> ops;
  std::vector<OpClass> classes;

  template <class V>
  void fields(V& v) {
    v("ops", ops,
      "Op kinds this rule applies to (StableHLO names such as dot_general, or custom-call targets).");
    v("classes", classes, "Op classes this rule applies to.");
    v("estimator", estimator, "Estimator for these ops.");
    estimator_fields(v);
  }
  void validate(Problems& problems) const {
    if (ops.empty() && classes.empty()) {
      problems.add("ops", "a rule needs at least one op kind or op class");
    }
    EstimatorChoice::validate(problems);
  }
};

struct ComputeConfig : EstimatorChoice {
  std::vector<EstimatorRule> rules;
  bool memoise = true;
  FusionMode fusion = FusionMode::kRegions;
  bool inline_calls = true;
  F32MatmulPrecision f32_matmul = F32MatmulPrecision::kTf32;

  template <class V>
  void fields(V& v) {
    v("default", estimator, "Estimator for ops no rule names; the keys below configure it.");
    estimator_fields(v);
    v("rules", rules, "Per-op-kind estimator rules; the first matching rule wins.");
    v("memoise", memoise, "Memoise estimates by op signature (the hit rate is in the run statistics).");
    v("fusion", fusion,
      "How ops become kernels, as a compiler would fuse them (docs/compute.md, \"Fusion\"): none (every "
      "op is a kernel), elementwise (chains of elementwise ops join their producer's kernel) or regions "
      "(XLA-style loop and input fusion: connected elementwise, data-movement and reduction ops form "
      "one kernel that reads its inputs once and writes only what leaves it).");
    v("inline_calls", inline_calls,
      "Inline every func.call before costing, as XLA does before it fuses (its CallInliner), so that "
      "kernels form across function boundaries (JAX writes jax.nn functions, where, take and custom "
      "derivatives as private functions). Functions that hold a collective stay calls. false keeps "
      "each call a boundary: its results are written out and read back (docs/compute.md, \"Fusion\").");
    v("f32_matmul", f32_matmul,
      "What f32 dot_general and convolution ops with DEFAULT precision compute in: tf32 (tensor "
      "cores; XLA's and JAX's GPU default) or f32. HIGH and HIGHEST precision always run in f32.");
  }
};

}  // namespace orrery::config
