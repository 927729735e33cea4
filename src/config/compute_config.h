// The `compute` section: estimator rules (multi-fidelity op costing).
#pragma once

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

struct EstimatorRule {
  std::vector<std::string> ops;
  EstimatorKind estimator = EstimatorKind::kRoofline;
  FilePath table;
  FilePath plugin;

  template <class V>
  void fields(V& v) {
    v("ops", ops, "Op kinds this rule applies to (e.g. dot_general, convolution).");
    v("estimator", estimator, "Estimator for these ops.");
    v("table", table, "Measured kernel table (CSV) for the table estimator.");
    v("plugin", plugin, "Shared library or executable for the plugin estimator.");
  }
  void validate(Problems& problems) const {
    if (ops.empty()) {
      problems.add("ops", "a rule needs at least one op kind");
    }
    if (estimator == EstimatorKind::kTable && table.empty()) {
      problems.add("table", "the table estimator needs a table file");
    }
    if (estimator == EstimatorKind::kPlugin && plugin.empty()) {
      problems.add("plugin", "the plugin estimator needs a plugin path");
    }
  }
};

struct ComputeConfig {
  EstimatorKind default_estimator = EstimatorKind::kRoofline;
  std::vector<EstimatorRule> rules;

  template <class V>
  void fields(V& v) {
    v("default", default_estimator, "Estimator for ops no rule names.");
    v("rules", rules, "Per-op-kind estimator rules; the first matching rule wins.");
  }
};

}  // namespace orrery::config
