#include "compute/rules.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compute/plugin.h"
#include "compute/roofline.h"
#include "compute/systolic.h"
#include "compute/table_estimator.h"
#include "util/assert.h"
#include "util/error.h"

namespace orrery::compute {
namespace {

std::string describe_rule(std::size_t index, const config::EstimatorRule& rule) {
  std::vector<std::string> parts;
  if (!rule.ops.empty()) {
    parts.push_back(fmt::format("ops {}", fmt::join(rule.ops, ", ")));
  }
  if (!rule.classes.empty()) {
    std::vector<std::string_view> names;
    for (const OpClass op_class : rule.classes) {
      names.push_back(name(op_class));
    }
    parts.push_back(fmt::format("classes {}", fmt::join(names, ", ")));
  }
  return fmt::format("rule {} ({})", index, fmt::join(parts, "; "));
}

}  // namespace

std::unique_ptr<Estimator> make_estimator(const config::EstimatorChoice& choice) {
  switch (choice.estimator) {
    case config::EstimatorKind::kRoofline:
      return std::make_unique<RooflineEstimator>();
    case config::EstimatorKind::kSystolic:
      return std::make_unique<SystolicEstimator>();
    case config::EstimatorKind::kTable: {
      std::vector<KernelMeasurement> rows;
      for (const config::FilePath& file : choice.table_files()) {
        std::vector<KernelMeasurement> more;
        try {
          more = read_kernel_table(file.path);
        } catch (const OrreryError& error) {
          throw OrreryError(config::attributed_to(file, error.error()));  // the key and scenario line
        }
        rows.insert(rows.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
      }
      config::EstimatorChoice fallback;
      fallback.estimator = choice.fallback;
      return std::make_unique<TableEstimator>(std::move(rows), make_estimator(fallback));
    }
    case config::EstimatorKind::kPlugin:
      try {
        return make_plugin_estimator(choice.plugin.path, choice.transport, choice.plugin_args, choice.plugin_options,
                                     choice.plugin_timeout_s);
      } catch (const OrreryError& error) {
        throw OrreryError(config::attributed_to(choice.plugin, error.error()));
      }
  }
  ORRERY_ASSERT(false, "every estimator kind is handled");
  return nullptr;
}

RuleEstimator::RuleEstimator(const config::ComputeConfig& config) : default_(make_estimator(config)) {
  for (const config::EstimatorRule& rule : config.rules) {
    rule_estimators_.push_back(make_estimator(rule));
  }
  index_rules(config);
}

RuleEstimator::RuleEstimator(const config::ComputeConfig& config, std::vector<std::unique_ptr<Estimator>> rule_estimators,
                             std::unique_ptr<Estimator> default_estimator)
    : rule_estimators_(std::move(rule_estimators)), default_(std::move(default_estimator)) {
  ORRERY_ASSERT(rule_estimators_.size() == config.rules.size(), "one estimator per rule");
  index_rules(config);
}

void RuleEstimator::index_rules(const config::ComputeConfig& config) {
  first_rule_by_class_.fill(kDefaultRule);
  for (std::size_t i = 0; i < config.rules.size(); ++i) {
    const config::EstimatorRule& rule = config.rules[i];
    rule_descriptions_.push_back(describe_rule(i, rule));
    for (const std::string& kind : rule.ops) {
      first_rule_by_kind_.emplace(kind, i);  // keeps the first rule naming the kind
    }
    for (const OpClass op_class : rule.classes) {
      std::size_t& first = first_rule_by_class_[static_cast<std::size_t>(op_class)];
      first = std::min(first, i);
    }
  }
}

std::size_t RuleEstimator::rule_for(const OpSignature& op) const {
  std::size_t rule = first_rule_by_class_[static_cast<std::size_t>(op.op_class)];
  if (const auto it = first_rule_by_kind_.find(op.kind); it != first_rule_by_kind_.end()) {
    rule = std::min(rule, it->second);
  }
  return rule;
}

const Estimator& RuleEstimator::estimator_for(const OpSignature& op) const {
  const std::size_t rule = rule_for(op);
  return rule == kDefaultRule ? *default_ : *rule_estimators_[rule];
}

Estimate RuleEstimator::estimate(const OpSignature& op, const Hardware& hardware) const {
  const std::size_t rule = rule_for(op);
  Estimate estimate;
  try {
    estimate = estimator_for(op).estimate(op, hardware);
  } catch (const OrreryError& error) {
    if (rule == kDefaultRule) {
      throw;
    }
    // Name the rule that sent the op there (an estimator that cannot serve this preset).
    Error named = error.error();
    named.message = fmt::format("compute.rules[{}]: {}", rule, named.message);
    throw OrreryError(std::move(named));
  }
  estimate.note = fmt::format("{}: {}", rule == kDefaultRule ? std::string("default") : rule_descriptions_[rule],
                              estimate.note);
  return estimate;
}

ComputeModel::ComputeModel(const config::ComputeConfig& config, Hardware hardware)
    : ComputeModel(std::make_unique<RuleEstimator>(config), std::move(hardware), config.memoise) {}

ComputeModel::ComputeModel(std::unique_ptr<Estimator> estimator, Hardware hardware, bool memoise)
    : hardware_(std::make_unique<Hardware>(std::move(hardware))),
      estimator_(std::move(estimator)),
      cache_(*estimator_, *hardware_),
      memoise_(memoise) {}

const Estimate& ComputeModel::estimate(const OpSignature& op) {
  if (memoise_) {
    return cache_.estimate(op);
  }
  last_ = estimator_->estimate(op, *hardware_);
  return last_;
}

}  // namespace orrery::compute
