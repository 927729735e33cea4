// Multi-fidelity rules (the scenario's `compute` section) and the memoising cache.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compute/roofline.h"
#include "compute/rules.h"
#include "compute/systolic.h"
#include "config/scenario.h"
#include "test_support.h"

namespace orrery::compute {
namespace {

using testing::error_of;
using testing::write_temp;

// An estimator that answers a fixed time and counts its calls.
class FixedEstimator final : public Estimator {
 public:
  FixedEstimator(std::string name, double seconds) : name_(std::move(name)), seconds_(seconds) {}
  [[nodiscard]] std::string_view name() const override { return name_; }
  [[nodiscard]] Estimate estimate(const OpSignature& op, const Hardware&) const override {
    ++calls;
    Estimate e;
    e.time = SimTime::from_seconds(seconds_);
    e.flops = op.flops;
    e.estimator = name_;
    e.note = name_ + " answered";
    return e;
  }
  mutable int calls = 0;

 private:
  std::string name_;
  double seconds_;
};

config::ComputeConfig compute_section(const std::string& yaml) {
  return config::load_scenario_text(yaml, "scenario.yaml", {}).compute;
}

OpSignature op_of(const std::string& kind, OpClass op_class) {
  OpSignature op = elementwise_signature(kind, op_class, ElementType::kBF16, 1024, 1, 1.0);
  op.op_class = op_class;
  return op;
}

TEST(Rules, FirstMatchingRuleByKindOrClassThenDefault) {
  const config::ComputeConfig config = compute_section(R"(
compute:
  default: roofline
  rules:
    - {ops: [dot_general], estimator: systolic}
    - {classes: [gemm, convolution], estimator: roofline}
    - {ops: [exponential, dot_general], classes: [transcendental], estimator: roofline}
)");
  std::vector<std::unique_ptr<Estimator>> estimators;
  estimators.push_back(std::make_unique<FixedEstimator>("first", 1e-6));
  estimators.push_back(std::make_unique<FixedEstimator>("second", 2e-6));
  estimators.push_back(std::make_unique<FixedEstimator>("third", 3e-6));
  const RuleEstimator rules(config, std::move(estimators), std::make_unique<FixedEstimator>("default", 9e-6));
  EXPECT_EQ(rules.rule_for(op_of("dot_general", OpClass::kGemm)), 0U);       // by kind, rule 0 first
  EXPECT_EQ(rules.rule_for(op_of("cublas_gemm", OpClass::kGemm)), 1U);       // by class
  EXPECT_EQ(rules.rule_for(op_of("convolution", OpClass::kConvolution)), 1U);
  EXPECT_EQ(rules.rule_for(op_of("exponential", OpClass::kTranscendental)), 2U);
  EXPECT_EQ(rules.rule_for(op_of("tanh", OpClass::kTranscendental)), 2U);   // by class
  EXPECT_EQ(rules.rule_for(op_of("add", OpClass::kElementwise)), RuleEstimator::kDefaultRule);
  const Hardware h100 = load_hardware("H100");
  const Estimate e = rules.estimate(op_of("cublas_gemm", OpClass::kGemm), h100);
  EXPECT_EQ(e.estimator, "second");
  EXPECT_EQ(e.note, "rule 1 (classes gemm, convolution): second answered");
  EXPECT_EQ(rules.estimate(op_of("add", OpClass::kElementwise), h100).note, "default: default answered");
}

TEST(Rules, AnEstimatorThatCannotServeThePresetNamesItsRule) {
  const config::ComputeConfig config = compute_section(R"(
compute:
  default: roofline
  rules:
    - {ops: [exponential], estimator: roofline}
    - {classes: [convolution], estimator: systolic}
)");
  const RuleEstimator rules(config);
  try {
    (void)rules.estimate(op_of("convolution", OpClass::kConvolution), load_hardware("H100"));
    FAIL() << "a GPU preset has no systolic section";
  } catch (const OrreryError& error) {
    EXPECT_NE(std::string(error.what()).find("compute.rules[1]: the systolic estimator needs a preset with a "
                                             "systolic section"),
              std::string::npos)
        << error.what();
  }
}

TEST(Rules, BuiltFromTheScenario) {
  // Matmuls from a measured table, convolutions on the systolic model, the rest roofline.
  const auto table = write_temp("rules/kernels.csv",
                                "hardware,kind,class,dtype,shape,time_us\n"
                                "TPUv4,dot_general,gemm,bf16,1x1024x1024x1024,42\n");
  const config::ComputeConfig config = compute_section(fmt::format(R"(
compute:
  default: roofline
  rules:
    - {{ops: [dot_general], estimator: table, table: {}, fallback: systolic}}
    - {{classes: [convolution], estimator: systolic}}
)",
                                                                   table.string()));
  const Hardware tpu = load_hardware("TPUv4");
  ComputeModel model(config, tpu);
  const OpSignature gemm = gemm_signature("dot_general", ElementType::kBF16, {1, 1024, 1024, 1024});
  const Estimate& measured = model.estimate(gemm);
  EXPECT_EQ(measured.estimator, "table");
  EXPECT_EQ(measured.time, SimTime::from_seconds(42e-6));
  EXPECT_NE(measured.note.find("rule 0 (ops dot_general): measured"), std::string::npos) << measured.note;
  // Not in the table: the rule's fallback, the systolic model, with the reason.
  const OpSignature other = gemm_signature("dot_general", ElementType::kF32, {1, 1024, 1024, 1024});
  const Estimate& fallback = model.estimate(other);
  EXPECT_EQ(fallback.estimator, "fallback:systolic");
  EXPECT_NE(fallback.note.find("table fallback to systolic: no measured dot_general (gemm, f32)"), std::string::npos)
      << fallback.note;
  const OpSignature add = elementwise_signature("add", OpClass::kElementwise, ElementType::kBF16, 1024, 2, 1.0);
  EXPECT_EQ(model.estimate(add).estimator, "roofline");
  EXPECT_EQ(model.estimate(add).time, RooflineEstimator().estimate(add, tpu).time);
}

TEST(Rules, ScenarioErrorsNameFileLineAndKey) {
  const auto message = [](const std::string& yaml) {
    return error_of([&] { (void)compute_section(yaml); });
  };
  const std::string unknown_class = message("compute:\n  rules:\n    - {classes: [gemmm], estimator: roofline}\n");
  EXPECT_NE(unknown_class.find("scenario.yaml:3:18: error: compute.rules[0].classes[0]: unknown value 'gemmm'"),
            std::string::npos)
      << unknown_class;
  EXPECT_NE(message("compute:\n  rules:\n    - {estimator: roofline}\n")
                .find("compute.rules[0].ops: a rule needs at least one op kind or op class"),
            std::string::npos);
  EXPECT_NE(message("compute:\n  default: table\n").find("compute.table: the table estimator needs a table file"),
            std::string::npos);
  EXPECT_NE(message("compute:\n  rules:\n    - {ops: [add], estimator: table, table: t.csv, fallback: plugin}\n")
                .find("compute.rules[0].fallback: the fallback must be an analytical estimator"),
            std::string::npos);
}

TEST(Cache, MemoisesBySignatureAndCountsHits) {
  auto counting = std::make_unique<FixedEstimator>("fixed", 1e-6);
  const FixedEstimator& estimator = *counting;
  ComputeModel model(std::move(counting), load_hardware("H100"));
  const OpSignature a = gemm_signature("dot_general", ElementType::kBF16, {1, 64, 64, 64});
  const OpSignature b = gemm_signature("dot_general", ElementType::kBF16, {1, 64, 64, 128});
  const Estimate* first = &model.estimate(a);
  for (int i = 0; i < 9; ++i) {
    EXPECT_EQ(&model.estimate(a), first);  // the same stored estimate
  }
  (void)model.estimate(b);
  EXPECT_EQ(estimator.calls, 2);
  EXPECT_EQ(model.cache_stats().lookups, 11U);
  EXPECT_EQ(model.cache_stats().hits, 9U);
  EXPECT_NEAR(model.cache_stats().hit_rate(), 9.0 / 11.0, 1e-12);

  auto uncached = std::make_unique<FixedEstimator>("fixed", 1e-6);
  const FixedEstimator& raw = *uncached;
  ComputeModel no_cache(std::move(uncached), load_hardware("H100"), false);
  (void)no_cache.estimate(a);
  (void)no_cache.estimate(a);
  EXPECT_EQ(raw.calls, 2);
}

}  // namespace
}  // namespace orrery::compute
