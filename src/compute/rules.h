// Multi-fidelity costing: the scenario's `compute` section chooses an estimator per op kind or op
// class (config/compute_config.h), e.g. matmuls from measured tables and everything else from the
// roofline.
//
// Resolution: the first rule (in file order) whose `ops` names the op's kind or whose `classes`
// names its class; no rule: the default estimator. Estimates carry the rule in their note.
//
// ComputeModel is what the simulator holds: the rules, the hardware, and the memoising cache,
// with the cache statistics for the run summary.
#pragma once

#include <array>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "compute/estimator.h"
#include "config/compute_config.h"

namespace orrery::compute {

// One estimator built from its settings (tables loaded, plugins started). Throws OrreryError for
// unreadable tables or plugins that fail to start.
std::unique_ptr<Estimator> make_estimator(const config::EstimatorChoice& choice);

class RuleEstimator final : public Estimator {
 public:
  static constexpr std::size_t kDefaultRule = std::numeric_limits<std::size_t>::max();

  explicit RuleEstimator(const config::ComputeConfig& config);
  // For tests: estimators supplied directly (rule i uses estimators[i]).
  RuleEstimator(const config::ComputeConfig& config, std::vector<std::unique_ptr<Estimator>> rule_estimators,
                std::unique_ptr<Estimator> default_estimator);

  [[nodiscard]] std::string_view name() const override { return "rules"; }
  [[nodiscard]] Estimate estimate(const OpSignature& op, const Hardware& hardware) const override;

  // The index of the rule that costs `op`, or kDefaultRule.
  [[nodiscard]] std::size_t rule_for(const OpSignature& op) const;
  [[nodiscard]] const Estimator& estimator_for(const OpSignature& op) const;

 private:
  void index_rules(const config::ComputeConfig& config);

  std::vector<std::unique_ptr<Estimator>> rule_estimators_;
  std::vector<std::string> rule_descriptions_;
  std::unique_ptr<Estimator> default_;
  std::unordered_map<std::string, std::size_t> first_rule_by_kind_;
  std::array<std::size_t, kOpClassCount> first_rule_by_class_{};
};

class ComputeModel {
 public:
  ComputeModel(const config::ComputeConfig& config, Hardware hardware);
  ComputeModel(std::unique_ptr<Estimator> estimator, Hardware hardware, bool memoise = true);

  // The op's estimate; memoised by signature when the config says so. The reference stays valid
  // until the next call (without memoisation) or for the model's lifetime (with it).
  const Estimate& estimate(const OpSignature& op);
  [[nodiscard]] CacheStats cache_stats() const { return cache_.stats(); }
  // True when estimates are memoised (their references then stay valid for the model's lifetime).
  [[nodiscard]] bool memoises() const { return memoise_; }
  [[nodiscard]] const Hardware& hardware() const { return *hardware_; }
  [[nodiscard]] const Estimator& estimator() const { return *estimator_; }

 private:
  std::unique_ptr<Hardware> hardware_;  // stable address for the cache
  std::unique_ptr<Estimator> estimator_;
  EstimateCache cache_;
  bool memoise_ = true;
  Estimate last_;
};

}  // namespace orrery::compute
