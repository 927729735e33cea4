// The per-program cost table (compute/program_costs.h): roles, fusion, memoisation statistics,
// executions through loops and calls, and every op of every shared StableHLO file.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "compute/program_costs.h"
#include "compute/roofline.h"
#include "frontend/stablehlo/stablehlo.h"
#include "test_support.h"

namespace orrery::compute {
namespace {

using workload::OpId;
using workload::OpKind;
using workload::Program;

std::shared_ptr<const Program> parse(const std::string& text) { return testing::parse_program(text); }

// Every kernel takes 1 us; counts its calls.
class MicrosecondEstimator final : public Estimator {
 public:
  [[nodiscard]] std::string_view name() const override { return "microsecond"; }
  [[nodiscard]] Estimate estimate(const OpSignature& op, const Hardware&) const override {
    ++calls;
    Estimate e;
    e.time = SimTime::from_ns(1000);
    e.flops = op.flops;
    e.bytes = op.bytes();
    e.estimator = "microsecond";
    e.note = "1 us for " + op.kind;
    return e;
  }
  mutable int calls = 0;
};

ComputeModel microsecond_model(bool memoise = true) {
  return ComputeModel(std::make_unique<MicrosecondEstimator>(), load_hardware("A100_80GB"), memoise);
}

// The first op of `kind` in the program.
OpId first(const Program& p, OpKind kind, std::size_t skip = 0) {
  for (OpId id = 0; id < p.op_count(); ++id) {
    if (p.op(id).kind == kind && skip-- == 0) {
      return id;
    }
  }
  ADD_FAILURE() << "no such op";
  return 0;
}

constexpr const char* kLoopAndCalls = R"(
func.func private @layer(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %1 = stablehlo.tanh %0 : tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}
func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %v = %x) : tensor<i32>, tensor<8x16xf32>
   cond {
    %c3 = stablehlo.constant dense<3> : tensor<i32>
    %p = stablehlo.compare  LT, %i, %c3 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %c1 = stablehlo.constant dense<1> : tensor<i32>
    %n = stablehlo.add %i, %c1 : tensor<i32>
    %y = func.call @layer(%v, %w) : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
    %z = func.call @layer(%y, %w) : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
    stablehlo.return %n, %z : tensor<i32>, tensor<8x16xf32>
  }
  %a = stablehlo.add %r#1, %r#1 : tensor<8x16xf32>
  %b = stablehlo.add %a, %a : tensor<8x16xf32>
  return %b : tensor<8x16xf32>
}
)";

TEST(ProgramCosts, EveryOpHasAnEntryAndKernelsTheirTime) {
  const auto p = parse(kLoopAndCalls);
  ASSERT_NE(p, nullptr);
  ComputeModel model = microsecond_model();
  const ProgramCosts costs = cost_program(*p, model, {});
  ASSERT_EQ(costs.ops.size(), p->op_count());
  const OpCost& dot = costs[first(*p, OpKind::kDotGeneral)];
  EXPECT_EQ(dot.role, CostRole::kCompute);
  EXPECT_EQ(dot.op_class, OpClass::kGemm);
  EXPECT_EQ(dot.time, SimTime::from_ns(1000));
  EXPECT_DOUBLE_EQ(dot.flops.value, 2.0 * 8 * 16 * 16);  // 2 M N K
  EXPECT_EQ(dot.estimator, "microsecond");
  EXPECT_EQ(dot.note, "1 us for dot_general");
  EXPECT_EQ(costs[first(*p, OpKind::kWhile)].role, CostRole::kFree);
  EXPECT_EQ(costs[first(*p, OpKind::kCall)].role, CostRole::kFree);
  EXPECT_EQ(costs[first(*p, OpKind::kConstant)].role, CostRole::kFree);
  EXPECT_EQ(costs[first(*p, OpKind::kConstant)].time, SimTime::zero());
  // Kernels: dot, tanh, compare, the i32 add and the two 8x16 adds, each costed once; the two
  // 8x16 adds share a signature, so the second is a cache hit.
  EXPECT_EQ(costs.estimates, 6U);
  EXPECT_EQ(costs.cache.lookups, 6U);
  EXPECT_EQ(costs.cache.hits, 1U);
  EXPECT_EQ(model.cache_stats().hits, 1U);
  // Costing the program again answers every estimate from the cache.
  const ProgramCosts again = cost_program(*p, model, {});
  EXPECT_EQ(again.cache.hits, 6U);
  EXPECT_DOUBLE_EQ(model.cache_stats().hit_rate(), 7.0 / 12.0);
  // Without memoisation every kernel asks the estimator, and the texts stay valid.
  ComputeModel uncached = microsecond_model(false);
  const ProgramCosts fresh = cost_program(*p, uncached, {});
  EXPECT_EQ(fresh.cache.lookups, 0U);
  EXPECT_EQ(fresh.estimates, 6U);
  EXPECT_EQ(fresh[first(*p, OpKind::kTanh)].note, "1 us for tanh");
  EXPECT_EQ(fresh[first(*p, OpKind::kDotGeneral)].note, "1 us for dot_general");
  const ProgramCosts copy = fresh;  // copies share the string pool
  EXPECT_EQ(copy[first(*p, OpKind::kTanh)].estimator, "microsecond");
}

TEST(ProgramCosts, ExecutionsFollowTripCountsAndCalls) {
  const auto p = parse(kLoopAndCalls);
  ASSERT_NE(p, nullptr);
  ComputeModel model = microsecond_model();
  const ExecutionTotals totals = execution_totals(*p, cost_program(*p, model, {}));
  // The body runs 3 times and calls @layer twice: 6 dots (2 * 8 * 16 * 16 = 4096 FLOPs each) and
  // 6 tanh (8 FLOPs x 128 elements = 1024 each); the i32 add runs 3 times, the condition's compare
  // 4 times, and the two adds after the loop once (128 FLOPs each).
  const ClassTotals& gemm = totals.classes[static_cast<std::size_t>(OpClass::kGemm)];
  EXPECT_EQ(gemm.executions, 6U);
  EXPECT_DOUBLE_EQ(gemm.flops.value, 6.0 * 4096);
  EXPECT_EQ(gemm.time, SimTime::from_ns(6000));
  EXPECT_EQ(totals.classes[static_cast<std::size_t>(OpClass::kTranscendental)].executions, 6U);
  const ClassTotals& elementwise = totals.classes[static_cast<std::size_t>(OpClass::kElementwise)];
  EXPECT_EQ(elementwise.executions, 3U + 4U + 2U);
  EXPECT_DOUBLE_EQ(elementwise.flops.value, 3.0 + 4.0 + 2.0 * 128);
  EXPECT_DOUBLE_EQ(totals.flops.value, 6.0 * 4096 + 6.0 * 1024 + 3 + 4 + 256);
  EXPECT_EQ(totals.time, SimTime::from_ns(1000 * (6 + 6 + 3 + 4 + 2)));
  EXPECT_EQ(totals.estimators.at("microsecond"), 21U);
  // Free executions: the while, 2 calls x 3, the constants (1 + 4 in the condition + 3 in the
  // body), the returns (2 x 3 of @layer, 4 + 3 in the regions, 1 of main).
  EXPECT_EQ(totals.free_ops.at("stablehlo.constant"), 1U + 4U + 3U);
  EXPECT_EQ(totals.free_ops.at("func.call"), 6U);
}

TEST(ProgramCosts, CostliestBranchOfIf) {
  const auto p = parse(R"(
func.func @main(%c: tensor<i1>, %x: tensor<16xf32>) -> tensor<16xf32> {
  %r = "stablehlo.if"(%c) ({
    %a = stablehlo.exponential %x : tensor<16xf32>
    %b = stablehlo.exponential %a : tensor<16xf32>
    stablehlo.return %b : tensor<16xf32>
  }, {
    %a = stablehlo.negate %x : tensor<16xf32>
    stablehlo.return %a : tensor<16xf32>
  }) : (tensor<i1>) -> tensor<16xf32>
  return %r : tensor<16xf32>
}
)");
  ASSERT_NE(p, nullptr);
  ComputeModel model = microsecond_model();
  const ExecutionTotals totals = execution_totals(*p, cost_program(*p, model, {}));
  // The true branch has two kernels (2 us), the false branch one: the true branch counts.
  EXPECT_EQ(totals.time, SimTime::from_ns(2000));
  EXPECT_DOUBLE_EQ(totals.flops.value, 2.0 * 8 * 16);
}

TEST(ProgramCosts, BodiesAndFusionsAreFusedIntoTheirOp) {
  const auto p = parse(R"(
module @m attributes {mhlo.num_partitions = 2 : i32} {
  func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %0 = stablehlo.reduce(%x init: %z) across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
      reducer(%a: tensor<f32>, %b: tensor<f32>) {
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }
    %1 = "mhlo.fusion"(%x, %y) ({
    ^bb0(%p: tensor<4x8xf32>, %q: tensor<4x8xf32>):
      %m = stablehlo.multiply %p, %q : tensor<4x8xf32>
      %e = stablehlo.exponential %m : tensor<4x8xf32>
      "mhlo.return"(%e) : (tensor<4x8xf32>) -> ()
    }) {fusion_kind = #mhlo<fusion_kind kLoop>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %2 = "stablehlo.all_reduce"(%1) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    return %0, %1, %2 : tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  }
}
)");
  ASSERT_NE(p, nullptr);
  ComputeModel model = microsecond_model();
  const ProgramCosts costs = cost_program(*p, model, {});
  const OpId reduce = first(*p, OpKind::kReduce);
  const OpId fusion = first(*p, OpKind::kFusion);
  const OpId all_reduce = first(*p, OpKind::kAllReduce);
  // The reducer's add is part of the reduce; the all_reduce's add is part of the collective.
  EXPECT_EQ(costs[first(*p, OpKind::kAdd, 0)].role, CostRole::kFused);
  EXPECT_EQ(costs[first(*p, OpKind::kAdd, 0)].fused_into, reduce);
  EXPECT_EQ(costs[first(*p, OpKind::kAdd, 1)].fused_into, all_reduce);
  EXPECT_EQ(costs[first(*p, OpKind::kMultiply)].fused_into, fusion);
  EXPECT_EQ(costs[first(*p, OpKind::kExponential)].fused_into, fusion);
  EXPECT_EQ(costs[first(*p, OpKind::kExponential)].time, SimTime::zero());
  // The fusion is one kernel: multiply (32) + exponential (8 * 32) FLOPs; its operands and
  // result are the traffic: 256 B read, 128 B written.
  EXPECT_EQ(costs[fusion].role, CostRole::kCompute);
  EXPECT_EQ(costs[fusion].op_class, OpClass::kTranscendental);
  EXPECT_DOUBLE_EQ(costs[fusion].flops.value, 32.0 + 256.0);
  EXPECT_EQ(costs[fusion].bytes_read.count, 256U);
  EXPECT_EQ(costs[fusion].bytes_written.count, 128U);
  // The collective: communication, with its bytes but no time.
  EXPECT_EQ(costs[all_reduce].role, CostRole::kCommunication);
  EXPECT_EQ(costs[all_reduce].bytes_written.count, 128U);
  EXPECT_EQ(costs[all_reduce].time, SimTime::zero());
  EXPECT_EQ(costs.estimates, 2U);  // the reduce and the fusion
}

constexpr const char* kChain = R"(
func.func @main(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %bias: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %1 = stablehlo.add %0, %bias : tensor<8x4xf32>
  %2 = stablehlo.exponential %1 : tensor<8x4xf32>
  %3 = stablehlo.negate %2 : tensor<8x4xf32>
  %4 = stablehlo.multiply %3, %3 : tensor<8x4xf32>
  return %4 : tensor<8x4xf32>
}
)";

TEST(ProgramCosts, ElementwiseChainsFuseIntoTheirProducerWhenAsked) {
  const auto p = parse(kChain);
  ASSERT_NE(p, nullptr);
  ComputeModel model = microsecond_model();
  const OpId dot = first(*p, OpKind::kDotGeneral);
  // Off by default: five kernels.
  const ProgramCosts separate = cost_program(*p, model, {});
  EXPECT_EQ(separate.estimates, 5U);
  EXPECT_EQ(separate[dot].bytes_read.count, (8U * 16 + 16 * 4) * 4);
  EXPECT_EQ(separate[dot].bytes_written.count, 8U * 4 * 4);
  // On: add, exponential and negate join the dot's kernel (each the only use of the value before
  // it); multiply uses the negate's result twice, so the chain stops there.
  CostOptions options;
  options.fusion = config::FusionMode::kElementwise;
  const ProgramCosts fused = cost_program(*p, model, options);
  EXPECT_EQ(fused.estimates, 2U);
  for (const OpKind kind : {OpKind::kAdd, OpKind::kExponential, OpKind::kNegate}) {
    EXPECT_EQ(fused[first(*p, kind)].role, CostRole::kFused);
    EXPECT_EQ(fused[first(*p, kind)].fused_into, dot);
  }
  EXPECT_EQ(fused[first(*p, OpKind::kMultiply)].role, CostRole::kCompute);
  // The kernel: FLOPs 2 * 8 * 4 * 16 + 32 (add) + 8 * 32 (exp) + 32 (negate) = 1344; it reads the
  // dot's operands and the bias (768 + 128 B) and writes only the negate's result (128 B): the
  // intermediates are counted once, as on-chip values.
  EXPECT_DOUBLE_EQ(fused[dot].flops.value, 1024.0 + 32 + 256 + 32);
  EXPECT_EQ(fused[dot].bytes_read.count, 768U + 128U);
  EXPECT_EQ(fused[dot].bytes_written.count, 128U);
  // The same in the scenario: compute.fusion.
  config::ComputeConfig config;
  config.fusion = config::FusionMode::kElementwise;
  EXPECT_EQ(CostOptions::from(config).fusion, config::FusionMode::kElementwise);
  EXPECT_EQ(config::ComputeConfig{}.fusion, config::FusionMode::kRegions);  // the scenario default
}

// A dot, then a biased, exponentiated, scaled and row-summed result (with two reshapes between),
// a consumer of the sum, and a second dot that uses a value from inside the fused region.
constexpr const char* kRegions = R"(
func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>, %b: tensor<16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>) {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %1 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<16xf32>) -> tensor<8x16xf32>
  %2 = stablehlo.add %0, %1 : tensor<8x16xf32>
  %3 = stablehlo.exponential %2 : tensor<8x16xf32>
  %4 = stablehlo.reshape %3 : (tensor<8x16xf32>) -> tensor<128xf32>
  %5 = stablehlo.reshape %4 : (tensor<128xf32>) -> tensor<8x16xf32>
  %6 = stablehlo.multiply %5, %2 : tensor<8x16xf32>
  %cst = stablehlo.constant dense<0.0> : tensor<f32>
  %7 = stablehlo.reduce(%6 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8xf32>
  %8 = stablehlo.negate %7 : tensor<8xf32>
  %9 = stablehlo.dot_general %6, %w, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  return %9, %8 : tensor<8x16xf32>, tensor<8xf32>
}
)";

TEST(ProgramCosts, RegionFusionMakesOneKernelPerConnectedFusibleRegion) {
  const auto p = parse(kRegions);
  ASSERT_NE(p, nullptr);
  // A TPU-like preset: a reduction ends its kernel (on a GPU preset the row sum's negate joins it,
  // GpusFuseARowReductionWithItsUsers).
  ComputeModel model(std::make_unique<MicrosecondEstimator>(), load_hardware("TPUv4"), true);
  // Unfused: two dots, broadcast, add, exponential, multiply, reduce and negate (reshapes are free).
  const ProgramCosts separate = cost_program(*p, model, {});
  EXPECT_EQ(separate.estimates, 8U);
  CostOptions options;
  options.fusion = config::FusionMode::kRegions;
  const ProgramCosts fused = cost_program(*p, model, options);
  // Fused: the dots (barriers), {broadcast, add, exponential, multiply, reduce} and the negate,
  // which uses the reduce's result (a reduction ends its kernel).
  EXPECT_EQ(fused.estimates, 4U);
  const OpId reduce = first(*p, OpKind::kReduce);
  for (const OpKind kind : {OpKind::kBroadcastInDim, OpKind::kAdd, OpKind::kExponential, OpKind::kMultiply}) {
    EXPECT_EQ(fused[first(*p, kind)].role, CostRole::kFused) << workload::op_kind_name(kind);
    EXPECT_EQ(fused[first(*p, kind)].fused_into, reduce) << workload::op_kind_name(kind);
  }
  // The reshapes rename values inside the kernel: free, but they belong to it.
  EXPECT_EQ(fused[first(*p, OpKind::kReshape)].role, CostRole::kFree);
  EXPECT_EQ(fused[first(*p, OpKind::kReshape)].fused_into, reduce);
  EXPECT_EQ(fused[first(*p, OpKind::kReshape, 1)].fused_into, reduce);
  EXPECT_EQ(fused[first(*p, OpKind::kNegate)].role, CostRole::kCompute);
  EXPECT_EQ(fused[first(*p, OpKind::kDotGeneral)].role, CostRole::kCompute);
  // The kernel's FLOPs are its members' FLOPs.
  double member_flops = 0.0;
  for (const OpKind kind :
       {OpKind::kBroadcastInDim, OpKind::kAdd, OpKind::kExponential, OpKind::kMultiply, OpKind::kReduce}) {
    member_flops += separate[first(*p, kind)].flops.value;
  }
  EXPECT_DOUBLE_EQ(fused[reduce].flops.value, member_flops);
  // It reads each outside value once: the dot's result (8x16 f32, 512 B), the bias (64 B) and the
  // reduce's init value (4 B); it writes the values used outside it: the multiply's result (512 B,
  // the second dot's operand) and the reduce's result (32 B). The broadcast, the add and the
  // exponential stay on chip.
  EXPECT_EQ(fused[reduce].bytes_read.count, 512U + 64U + 4U);
  EXPECT_EQ(fused[reduce].bytes_written.count, 512U + 32U);
  EXPECT_EQ(fused[reduce].op_class, OpClass::kReduction);
  EXPECT_EQ(fused[reduce].note, "1 us for fusion");
}

// On a GPU preset a row reduction's result may be used in place by the row (XLA's normalisation
// kernels): the negate of kRegions' row sum joins the sum's kernel, which then runs at the negate,
// writes the sum (a row kernel keeps its per-row results) and the negate, and is a normalisation.
TEST(ProgramCosts, GpusFuseARowReductionWithItsUsers) {
  const auto p = parse(kRegions);
  ASSERT_NE(p, nullptr);
  ComputeModel model = microsecond_model();
  CostOptions regions;
  regions.fusion = config::FusionMode::kRegions;
  const ProgramCosts fused = cost_program(*p, model, regions);
  EXPECT_EQ(fused.estimates, 3U);  // two dots and one kernel
  const OpId negate = first(*p, OpKind::kNegate);
  for (const OpKind kind :
       {OpKind::kBroadcastInDim, OpKind::kAdd, OpKind::kExponential, OpKind::kMultiply, OpKind::kReduce}) {
    EXPECT_EQ(fused[first(*p, kind)].fused_into, negate) << workload::op_kind_name(kind);
  }
  EXPECT_EQ(fused[negate].role, CostRole::kCompute);
  EXPECT_EQ(fused[negate].bytes_read.count, 512U + 64U + 4U);
  EXPECT_EQ(fused[negate].bytes_written.count, 512U + 32U + 32U);
  EXPECT_EQ(fused[negate].op_class, OpClass::kNormalisation);
  // A column reduction (over the first dimension) still ends its kernel.
  const auto column = parse(R"(
func.func @main(%x: tensor<8x16xf32>) -> tensor<16xf32> {
  %e = stablehlo.exponential %x : tensor<8x16xf32>
  %cst = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%e init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<8x16xf32>, tensor<f32>) -> tensor<16xf32>
  %n = stablehlo.negate %s : tensor<16xf32>
  return %n : tensor<16xf32>
}
)");
  ASSERT_NE(column, nullptr);
  const ProgramCosts by_column = cost_program(*column, model, regions);
  EXPECT_EQ(by_column[first(*column, OpKind::kNegate)].role, CostRole::kCompute);
  EXPECT_EQ(by_column[first(*column, OpKind::kExponential)].fused_into, first(*column, OpKind::kReduce));
  // A reduce written with its combiner as a body (the generic form): the body's op belongs to the
  // row kernel too, not to the reduce that is now one of its members.
  const auto generic = parse(R"(
func.func @main(%x: tensor<8x16xf32>) -> tensor<8xf32> {
  %e = stablehlo.exponential %x : tensor<8x16xf32>
  %cst = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%e init: %cst) across dimensions = [1] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8xf32>
   reducer(%a: tensor<f32>, %b: tensor<f32>)  {
    %m = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }
  %n = stablehlo.negate %s : tensor<8xf32>
  return %n : tensor<8xf32>
}
)");
  ASSERT_NE(generic, nullptr);
  const ProgramCosts with_body = cost_program(*generic, model, regions);
  const OpId kernel = first(*generic, OpKind::kNegate);
  EXPECT_EQ(with_body[first(*generic, OpKind::kReduce)].fused_into, kernel);
  EXPECT_EQ(with_body[first(*generic, OpKind::kAdd)].role, CostRole::kFused);
  EXPECT_EQ(with_body[first(*generic, OpKind::kAdd)].fused_into, kernel);
}

// XLA's GPU backend splits reductions it cannot run race-free into two kernels (tree reductions):
// a batch norm's statistics over 128 x 56 x 56 rows of 64 channels run as a first stage that
// reduces to 512 partial rows (XLA's compiled HLO: f32[512,784,64] reduced over 784) and a second
// kernel that reduces those; a row of 32,000 (a vocabulary) as 128 partials of 250 (XLA:
// f32[8,1024,128]). Race-free reductions (a column of 4,096 rows, a row of 16,384) stay one kernel,
// and TPU-like presets never split.
TEST(ProgramCosts, GpusSplitLongReductionsIntoTwoKernels) {
  const auto p = parse(R"(
func.func @main(%x: tensor<128x56x56x64xbf16>, %v: tensor<8x1024x32000xf32>, %c: tensor<4096x64xf32>, %r: tensor<4x16384xf32>) -> (tensor<64xf32>, tensor<8x1024xf32>, tensor<64xf32>, tensor<4xf32>) {
  %f = stablehlo.convert %x : (tensor<128x56x56x64xbf16>) -> tensor<128x56x56x64xf32>
  %cst = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%f init: %cst) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<128x56x56x64xf32>, tensor<f32>) -> tensor<64xf32>
  %m = stablehlo.reduce(%v init: %cst) applies stablehlo.maximum across dimensions = [2] : (tensor<8x1024x32000xf32>, tensor<f32>) -> tensor<8x1024xf32>
  %k = stablehlo.reduce(%c init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<4096x64xf32>, tensor<f32>) -> tensor<64xf32>
  %q = stablehlo.reduce(%r init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<4x16384xf32>, tensor<f32>) -> tensor<4xf32>
  return %s, %m, %k, %q : tensor<64xf32>, tensor<8x1024xf32>, tensor<64xf32>, tensor<4xf32>
}
)");
  ASSERT_NE(p, nullptr);
  CostOptions regions;
  regions.fusion = config::FusionMode::kRegions;
  ComputeModel gpu = microsecond_model();
  const ProgramCosts costs = cost_program(*p, gpu, regions);
  const OpCost& stats = costs[first(*p, OpKind::kReduce)];
  const OpCost& vocabulary = costs[first(*p, OpKind::kReduce, 1)];
  EXPECT_EQ(stats.launches, 2U);
  EXPECT_EQ(stats.time, SimTime::from_ns(2000));  // two kernels of 1 us
  // The first stage reads the bf16 input (the convert is fused) and the init value and writes 512
  // partial rows of 64 f32; the second reads those and writes the 64 results.
  EXPECT_EQ(stats.bytes_read.count, 128ULL * 56 * 56 * 64 * 2 + 4 + 512 * 64 * 4);
  EXPECT_EQ(stats.bytes_written.count, 512ULL * 64 * 4 + 64 * 4);
  EXPECT_EQ(stats.note, "1 us for fusion; then 1 second-stage reduction kernel (tree reduction) 1e-06 s");
  EXPECT_EQ(vocabulary.launches, 2U);
  EXPECT_EQ(vocabulary.bytes_written.count, 8ULL * 1024 * 128 * 4 + 8 * 1024 * 4);
  EXPECT_EQ(costs[first(*p, OpKind::kReduce, 2)].launches, 1U);
  EXPECT_EQ(costs[first(*p, OpKind::kReduce, 3)].launches, 1U);
  EXPECT_EQ(costs.estimates, 4U + 2U);
  // inspect's totals count the launches.
  const ExecutionTotals totals = execution_totals(*p, costs);
  EXPECT_EQ(totals.launches, 6U);
  EXPECT_EQ(totals.classes[static_cast<std::size_t>(OpClass::kReduction)].launches, 6U);
  // Without region fusion (the program as written) and on a TPU-like preset, nothing splits.
  const ProgramCosts unfused = cost_program(*p, gpu, {});
  EXPECT_EQ(unfused[first(*p, OpKind::kReduce)].launches, 1U);
  ComputeModel tpu(std::make_unique<MicrosecondEstimator>(), load_hardware("TPUv4"), true);
  const ProgramCosts on_tpu = cost_program(*p, tpu, regions);
  EXPECT_EQ(on_tpu[first(*p, OpKind::kReduce)].launches, 1U);
  EXPECT_EQ(on_tpu[first(*p, OpKind::kReduce)].bytes_written.count, 64U * 4);
}

// A region stops growing once an op outside it uses one of its values: the add below cannot join
// the exponential's kernel, whose value the dot (which the add also needs) consumes.
constexpr const char* kClosedRegion = R"(
func.func @main(%x: tensor<16x16xf32>, %y: tensor<16x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>) {
  %0 = stablehlo.exponential %x : tensor<16x16xf32>
  %1 = stablehlo.dot_general %0, %x, contracting_dims = [1] x [0] : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %2 = stablehlo.add %0, %1 : tensor<16x16xf32>
  %3 = stablehlo.tanh %y : tensor<16x16xf32>
  %4 = stablehlo.dot_general %y, %y, contracting_dims = [1] x [0] : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %5 = stablehlo.multiply %3, %4 : tensor<16x16xf32>
  return %2, %5 : tensor<16x16xf32>, tensor<16x16xf32>
}
)";

// The program's costs with region fusion.
ProgramCosts cost_with_regions(const Program& p, ComputeModel& model) {
  CostOptions options;
  options.fusion = config::FusionMode::kRegions;
  return cost_program(p, model, options);
}

// A program and its costs with region fusion (1 us kernels); `program` is null when the text does
// not parse.
struct RegionCosts {
  std::shared_ptr<const Program> program;
  ProgramCosts costs;
};
RegionCosts regions_of(const std::string& text) {
  RegionCosts out{parse(text), {}};
  if (out.program != nullptr) {
    ComputeModel model = microsecond_model();
    out.costs = cost_with_regions(*out.program, model);
  }
  return out;
}

TEST(ProgramCosts, RegionFusionNeverMakesACycle) {
  const auto p = parse(kClosedRegion);
  ASSERT_NE(p, nullptr);
  ComputeModel model = microsecond_model();
  const ProgramCosts fused = cost_with_regions(*p, model);
  EXPECT_EQ(fused[first(*p, OpKind::kExponential)].role, CostRole::kCompute);
  EXPECT_EQ(fused[first(*p, OpKind::kAdd)].role, CostRole::kCompute);
  // The tanh's kernel is still open when the multiply comes (the second dot does not use it): the
  // multiply joins it, and the kernel runs at the multiply, after the dot.
  const OpId multiply = first(*p, OpKind::kMultiply);
  EXPECT_EQ(fused[first(*p, OpKind::kTanh)].role, CostRole::kFused);
  EXPECT_EQ(fused[first(*p, OpKind::kTanh)].fused_into, multiply);
  EXPECT_EQ(fused.estimates, 5U);
}

// XLA inlines calls before fusing: a call of an elementwise function (@relu) joins the caller's
// kernel like an elementwise op; a call of a function with a dot does not.
constexpr const char* kCalls = R"(
func.func @main(%x: tensor<16x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>) {
  %0 = stablehlo.add %x, %x : tensor<16x16xf32>
  %1 = call @relu(%0) : (tensor<16x16xf32>) -> tensor<16x16xf32>
  %2 = call @square(%1) : (tensor<16x16xf32>) -> tensor<16x16xf32>
  return %1, %2 : tensor<16x16xf32>, tensor<16x16xf32>
}
func.func private @relu(%a: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %c = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %b = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<16x16xf32>
  %m = stablehlo.maximum %a, %b : tensor<16x16xf32>
  return %m : tensor<16x16xf32>
}
func.func private @square(%a: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %d = stablehlo.dot_general %a, %a, contracting_dims = [1] x [0] : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  return %d : tensor<16x16xf32>
}
)";

TEST(ProgramCosts, RegionFusionFusesCallsOfElementwiseFunctions) {
  const auto p = parse(kCalls);
  ASSERT_NE(p, nullptr);
  ComputeModel model = microsecond_model();
  const ProgramCosts fused = cost_with_regions(*p, model);
  const OpId relu_call = first(*p, OpKind::kCall);
  const OpId square_call = first(*p, OpKind::kCall, 1);
  // {add, call @relu} is one kernel at the call: it reads x (1 KiB) and writes the relu's result
  // (1 KiB, used outside); the add's result stays on chip. FLOPs: add 256 + broadcast 0 + max 256.
  EXPECT_EQ(fused[first(*p, OpKind::kAdd)].role, CostRole::kFused);
  EXPECT_EQ(fused[first(*p, OpKind::kAdd)].fused_into, relu_call);
  EXPECT_EQ(fused[relu_call].role, CostRole::kCompute);
  EXPECT_EQ(fused[relu_call].bytes_read.count, 1024U);
  EXPECT_EQ(fused[relu_call].bytes_written.count, 1024U);
  const ProgramCosts unfused = cost_program(*p, model, {});
  EXPECT_DOUBLE_EQ(fused[relu_call].flops.value,
                   unfused[first(*p, OpKind::kAdd)].flops.value + unfused[first(*p, OpKind::kMaximum)].flops.value);
  // The dot's function is a call as before: free at the call site, its body runs.
  EXPECT_EQ(fused[square_call].role, CostRole::kFree);
  const ExecutionTotals totals = execution_totals(*p, fused);
  // Kernels run: {add, relu} and the dot; the relu's own body does not run for the fused call.
  EXPECT_EQ(totals.role_executions[static_cast<std::size_t>(CostRole::kCompute)], 2U);
  // Without region fusion calls are not touched.
  EXPECT_EQ(unfused[relu_call].role, CostRole::kFree);
}

// Calls that must not be costed as one elementwise op, and a fused call whose result is unused.
TEST(ProgramCosts, OnlyPurelyElementwiseCallsFuseAndDeadOnesDoNotRun) {
  ComputeModel model = microsecond_model();
  // A composite inside the callee stands for a GEMM: the call is not elementwise work.
  const auto composite = parse(R"(
func.func @main(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %0 = stablehlo.add %x, %x : tensor<16x16xf32>
  %1 = call @wrap(%0) : (tensor<16x16xf32>) -> tensor<16x16xf32>
  return %1 : tensor<16x16xf32>
}
func.func private @wrap(%a: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %m = stablehlo.multiply %a, %a : tensor<16x16xf32>
  %d = stablehlo.composite "my.matmul" %m {decomposition = @mm} : (tensor<16x16xf32>) -> tensor<16x16xf32>
  return %d : tensor<16x16xf32>
}
func.func private @mm(%a: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %d = stablehlo.dot_general %a, %a, contracting_dims = [1] x [0] : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  return %d : tensor<16x16xf32>
}
)");
  ASSERT_NE(composite, nullptr);
  const ProgramCosts with_composite = cost_with_regions(*composite, model);
  EXPECT_EQ(with_composite[first(*composite, OpKind::kCall)].role, CostRole::kFree);
  const ExecutionTotals composite_totals = execution_totals(*composite, with_composite);
  EXPECT_EQ(composite_totals.flops.value, execution_totals(*composite, cost_program(*composite, model, {})).flops.value);
  // A fusible call whose result nothing reads never runs, and neither does its callee.
  const auto dead = parse(R"(
func.func @main(%x: tensor<16x16xf32>, %y: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %d = stablehlo.dot_general %x, %x, contracting_dims = [1] x [0] : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %1 = call @act(%y) : (tensor<16x16xf32>) -> tensor<16x16xf32>
  return %d : tensor<16x16xf32>
}
func.func private @act(%a: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %m = stablehlo.tanh %a : tensor<16x16xf32>
  %n = stablehlo.multiply %m, %a : tensor<16x16xf32>
  return %n : tensor<16x16xf32>
}
)");
  ASSERT_NE(dead, nullptr);
  const ProgramCosts dead_costs = cost_with_regions(*dead, model);
  const OpId call = first(*dead, OpKind::kCall);
  EXPECT_EQ(dead_costs[call].role, CostRole::kFree);
  EXPECT_EQ(dead_costs[call].fused_into, call);
  const ExecutionTotals dead_totals = execution_totals(*dead, dead_costs);
  EXPECT_EQ(dead_totals.role_executions[static_cast<std::size_t>(CostRole::kCompute)], 1U);  // the dot only
}

// Producer duplication: a kernel recomputes a cheap producer of another kernel instead of reading
// its result when the recomputation reads no more bytes than the result (the materialised values
// it and its cheap producers read). %m = 2 * convert(x) reads x (f16, 8 KiB) to recompute, less
// than its f32 result (16 KiB), although the multiply itself reads two f32 operands; %n reads x
// and %v, which its kernel writes anyway (returned; a logarithm is never recomputed); %a = y + z
// would read 32 KiB: written.
constexpr const char* kDuplication = R"(
func.func @main(%x: tensor<64x64xf16>, %y: tensor<64x64xf32>, %z: tensor<64x64xf32>, %p: tensor<64xf32>) -> (tensor<64x64xf32>, tensor<64xf32>) {
  %c = stablehlo.convert %x : (tensor<64x64xf16>) -> tensor<64x64xf32>
  %k = stablehlo.constant dense<2.0> : tensor<f32>
  %kb = stablehlo.broadcast_in_dim %k, dims = [] : (tensor<f32>) -> tensor<64x64xf32>
  %m = stablehlo.multiply %kb, %c : tensor<64x64xf32>
  %v = stablehlo.log %p : tensor<64xf32>
  %vb = stablehlo.broadcast_in_dim %v, dims = [1] : (tensor<64xf32>) -> tensor<64x64xf32>
  %n = stablehlo.multiply %c, %vb : tensor<64x64xf32>
  %a = stablehlo.add %y, %z : tensor<64x64xf32>
  %s = stablehlo.add %m, %n : tensor<64x64xf32>
  %t = stablehlo.add %s, %a : tensor<64x64xf32>
  %e = stablehlo.exponential %t : tensor<64x64xf32>
  %d = stablehlo.dot_general %e, %e, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %u1 = stablehlo.add %m, %d : tensor<64x64xf32>
  %u2 = stablehlo.add %u1, %n : tensor<64x64xf32>
  %u3 = stablehlo.add %u2, %a : tensor<64x64xf32>
  return %u3, %v : tensor<64x64xf32>, tensor<64xf32>
}
)";

TEST(ProgramCosts, KernelsRecomputeCheapProducersThatReadLessThanTheirResult) {
  const RegionCosts costed = regions_of(kDuplication);
  const auto& p = costed.program;
  ASSERT_NE(p, nullptr);
  const ProgramCosts& fused = costed.costs;
  // Two kernels: everything before the dot (at the exponential) and the three adds after it.
  const OpId first_kernel = first(*p, OpKind::kExponential);
  const OpId second_kernel = first(*p, OpKind::kAdd, 5);
  EXPECT_EQ(fused[first(*p, OpKind::kLog)].fused_into, first_kernel);
  EXPECT_EQ(fused[first(*p, OpKind::kAdd, 3)].fused_into, second_kernel);
  // The first kernel writes the exponential's result (the dot's operand, 16 KiB), %v (returned,
  // 256 B) and %a (16 KiB); %m and %n are recomputed by the second kernel.
  EXPECT_EQ(fused[first_kernel].bytes_written.count, 16384U + 256U + 16384U);
  // The second kernel reads the dot's result and %a (16 KiB each), x (8 KiB) and the constant
  // (4 B) for %m, %v (256 B) for %n.
  EXPECT_EQ(fused[second_kernel].bytes_read.count, 16384U + 16384U + 8192U + 4U + 256U);
  EXPECT_EQ(fused[second_kernel].bytes_written.count, 16384U);
  // It also does the recomputed work: its FLOPs exceed its three adds'.
  ComputeModel model = microsecond_model();
  const ProgramCosts unfused = cost_program(*p, model, {});
  EXPECT_DOUBLE_EQ(fused[second_kernel].flops.value,
                   3 * unfused[second_kernel].flops.value + unfused[first(*p, OpKind::kMultiply)].flops.value +
                       unfused[first(*p, OpKind::kMultiply, 1)].flops.value +
                       unfused[first(*p, OpKind::kConvert)].flops.value);
}

// Recomputation reaches across kernels: a batch norm's centred input y = convert(x) - mean is
// written by no kernel when every later kernel that needs it recomputes it from x (f16, 8 KiB) and
// the mean (256 B) -- less than y (f32, 16 KiB) -- although convert(x) belongs to a third kernel
// (the one that sums it). XLA recomputes such values in the backward pass rather than keep them.
constexpr const char* kRecomputeAcrossKernels = R"(
func.func @main(%x: tensor<64x64xf16>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %c = stablehlo.convert %x : (tensor<64x64xf16>) -> tensor<64x64xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %sum = stablehlo.reduce(%c init: %z) applies stablehlo.add across dimensions = [0] : (tensor<64x64xf32>, tensor<f32>) -> tensor<64xf32>
  %mb = stablehlo.broadcast_in_dim %sum, dims = [1] : (tensor<64xf32>) -> tensor<64x64xf32>
  %y = stablehlo.subtract %c, %mb : tensor<64x64xf32>
  %d1 = stablehlo.dot_general %w, %w, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %u1 = stablehlo.add %y, %d1 : tensor<64x64xf32>
  %d2 = stablehlo.dot_general %u1, %w, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %u2 = stablehlo.multiply %y, %d2 : tensor<64x64xf32>
  return %u2 : tensor<64x64xf32>
}
)";

TEST(ProgramCosts, KernelsRecomputeThroughProducersOfOtherKernels) {
  const RegionCosts costed = regions_of(kRecomputeAcrossKernels);
  const auto& p = costed.program;
  ASSERT_NE(p, nullptr);
  const ProgramCosts& fused = costed.costs;
  const OpId sums = first(*p, OpKind::kReduce);
  const OpId centres = first(*p, OpKind::kAdd);  // the kernel of the broadcast, y and u1
  const OpId scales = first(*p, OpKind::kMultiply);
  EXPECT_EQ(fused[first(*p, OpKind::kSubtract)].fused_into, centres);
  // The sum's kernel writes the sum only (its convert is recomputed by y's kernel) ...
  EXPECT_EQ(fused[sums].bytes_written.count, 256U);
  // ... y's kernel writes u1, not y ...
  EXPECT_EQ(fused[centres].bytes_read.count, 8192U + 256U + 16384U);
  EXPECT_EQ(fused[centres].bytes_written.count, 16384U);
  // ... and the last kernel recomputes y from x and the sum: it reads them and the second dot's
  // result, 8 KiB less than reading y would.
  EXPECT_EQ(fused[scales].bytes_read.count, 8192U + 256U + 16384U);
  EXPECT_EQ(fused[scales].bytes_written.count, 16384U);
}

// An optimizer's updates share scalars (the bias correction 1 - 0.9^t of the step count t) but
// never a kernel: XLA launches one update kernel per parameter, each reading the scalar, which an
// expensive `power` computes in a kernel of its own. A cheap scalar (1 - 0.1 t) is recomputed by
// each of its users instead of read; an expensive scalar with one user joins that user's kernel.
// Joining through the shared scalar made one
// kernel of every update of a training step.
constexpr const char* kSharedScalar = R"(
func.func @main(%t: tensor<i32>, %p1: tensor<64xf32>, %g1: tensor<64xf32>, %p2: tensor<3x3x64x64xf32>, %g2: tensor<3x3x64x64xf32>, %q1: tensor<64xf32>, %q2: tensor<3x3x64x64xf32>, %s: tensor<f32>, %r: tensor<64xf32>) -> (tensor<64xf32>, tensor<3x3x64x64xf32>, tensor<64xf32>, tensor<3x3x64x64xf32>, tensor<64xf32>) {
  %one = stablehlo.constant dense<1.0> : tensor<f32>
  %b1 = stablehlo.constant dense<0.9> : tensor<f32>
  %tf = stablehlo.convert %t : (tensor<i32>) -> tensor<f32>
  %pw = stablehlo.power %b1, %tf : tensor<f32>
  %bc = stablehlo.subtract %one, %pw : tensor<f32>
  %s1 = stablehlo.broadcast_in_dim %bc, dims = [] : (tensor<f32>) -> tensor<64xf32>
  %d1 = stablehlo.divide %g1, %s1 : tensor<64xf32>
  %u1 = stablehlo.subtract %p1, %d1 : tensor<64xf32>
  %s2 = stablehlo.broadcast_in_dim %bc, dims = [] : (tensor<f32>) -> tensor<3x3x64x64xf32>
  %d2 = stablehlo.divide %g2, %s2 : tensor<3x3x64x64xf32>
  %u2 = stablehlo.subtract %p2, %d2 : tensor<3x3x64x64xf32>
  %tenth = stablehlo.constant dense<0.1> : tensor<f32>
  %m = stablehlo.multiply %tf, %tenth : tensor<f32>
  %lr = stablehlo.subtract %one, %m : tensor<f32>
  %l1 = stablehlo.broadcast_in_dim %lr, dims = [] : (tensor<f32>) -> tensor<64xf32>
  %v1 = stablehlo.multiply %q1, %l1 : tensor<64xf32>
  %l2 = stablehlo.broadcast_in_dim %lr, dims = [] : (tensor<f32>) -> tensor<3x3x64x64xf32>
  %v2 = stablehlo.multiply %q2, %l2 : tensor<3x3x64x64xf32>
  %e = stablehlo.power %b1, %s : tensor<f32>
  %eb = stablehlo.broadcast_in_dim %e, dims = [] : (tensor<f32>) -> tensor<64xf32>
  %w = stablehlo.multiply %r, %eb : tensor<64xf32>
  return %u1, %u2, %v1, %v2, %w : tensor<64xf32>, tensor<3x3x64x64xf32>, tensor<64xf32>, tensor<3x3x64x64xf32>, tensor<64xf32>
}
)";

TEST(ProgramCosts, UpdatesSharingAScalarAreKernelsOfTheirOwn) {
  const RegionCosts costed = regions_of(kSharedScalar);
  const auto& p = costed.program;
  ASSERT_NE(p, nullptr);
  const ProgramCosts& fused = costed.costs;
  const OpId scalar = first(*p, OpKind::kSubtract);  // 1 - 0.9^t: convert, power, subtract
  const OpId update1 = first(*p, OpKind::kSubtract, 1);
  const OpId update2 = first(*p, OpKind::kSubtract, 2);
  const OpId scaled1 = first(*p, OpKind::kMultiply, 1);
  const OpId scaled2 = first(*p, OpKind::kMultiply, 2);
  for (const OpId kernel : {scalar, update1, update2, scaled1, scaled2}) {
    EXPECT_EQ(fused[kernel].role, CostRole::kCompute) << kernel;
  }
  EXPECT_EQ(fused[first(*p, OpKind::kPower)].fused_into, scalar);
  EXPECT_EQ(fused[first(*p, OpKind::kDivide)].fused_into, update1);
  EXPECT_EQ(fused[first(*p, OpKind::kDivide, 1)].fused_into, update2);
  // The scalar kernel reads t and its two constants (a scalar constant is read as one element) and
  // writes 1 - 0.9^t; each update reads its parameter and gradient and that scalar, and writes its
  // parameter.
  EXPECT_EQ(fused[scalar].bytes_read.count, 12U);
  EXPECT_EQ(fused[scalar].bytes_written.count, 4U);
  EXPECT_EQ(fused[update1].bytes_read.count, 2U * 256 + 4);
  EXPECT_EQ(fused[update1].bytes_written.count, 256U);
  EXPECT_EQ(fused[update2].bytes_read.count, 2U * 147456 + 4);
  // 1 - 0.1 t is cheap: each scaling recomputes it from t and two constants, and its own kernel
  // (it starts after the first broadcast of 1 - 0.9^t closed the scalar kernel) never runs.
  EXPECT_EQ(fused[first(*p, OpKind::kSubtract, 3)].role, CostRole::kFree);
  EXPECT_EQ(fused[scaled1].bytes_read.count, 256U + 12);
  EXPECT_EQ(fused[scaled2].bytes_read.count, 147456U + 12);
  // An expensive scalar with one user joins that user's kernel, as XLA fuses a producer into its
  // only consumer: the kernel reads s, the constant and r, and writes w only.
  const OpId only_user = first(*p, OpKind::kMultiply, 3);
  EXPECT_EQ(fused[first(*p, OpKind::kPower, 1)].fused_into, only_user);
  EXPECT_EQ(fused[only_user].bytes_read.count, 4U + 4 + 256);
  EXPECT_EQ(fused[only_user].bytes_written.count, 256U);
  EXPECT_EQ(execution_totals(*p, fused).launches, 6U);
}

// Two limits of the scalar rule above. A softmax over a single row broadcasts its one-element row
// results back over the row inside its own kernel (a GPU row-reduction kernel), as over many rows.
// And a scalar argument that two kernels read does not join them (sibling fusion skips scalars):
// the expensive power of it stays with its one user.
constexpr const char* kOneRowSoftmax = R"(
func.func @main(%x: tensor<1x4096xf32>) -> tensor<1x4096xf32> {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %r = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<1x4096xf32>, tensor<f32>) -> tensor<1xf32>
  %mb = stablehlo.broadcast_in_dim %r, dims = [0] : (tensor<1xf32>) -> tensor<1x4096xf32>
  %c = stablehlo.subtract %x, %mb : tensor<1x4096xf32>
  %p = stablehlo.exponential %c : tensor<1x4096xf32>
  %s = stablehlo.reduce(%p init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<1x4096xf32>, tensor<f32>) -> tensor<1xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<1xf32>) -> tensor<1x4096xf32>
  %y = stablehlo.divide %p, %sb : tensor<1x4096xf32>
  return %y : tensor<1x4096xf32>
}
)";
constexpr const char* kScalarArgumentReaders = R"(
func.func @main(%t: tensor<f32>, %p1: tensor<1024xf32>, %p2: tensor<4096xf32>) -> (tensor<1024xf32>, tensor<4096xf32>) {
  %c = stablehlo.constant dense<0.9> : tensor<f32>
  %b1 = stablehlo.broadcast_in_dim %t, dims = [] : (tensor<f32>) -> tensor<1024xf32>
  %u1 = stablehlo.multiply %p1, %b1 : tensor<1024xf32>
  %k = stablehlo.power %c, %t : tensor<f32>
  %b2 = stablehlo.broadcast_in_dim %k, dims = [] : (tensor<f32>) -> tensor<4096xf32>
  %u2 = stablehlo.multiply %p2, %b2 : tensor<4096xf32>
  return %u1, %u2 : tensor<1024xf32>, tensor<4096xf32>
}
)";

TEST(ProgramCosts, AOneRowSoftmaxIsOneKernelAndAScalarArgumentJoinsNoKernels) {
  const RegionCosts softmax = regions_of(kOneRowSoftmax);
  ASSERT_NE(softmax.program, nullptr);
  const OpId divide = first(*softmax.program, OpKind::kDivide);
  EXPECT_EQ(softmax.costs[divide].role, CostRole::kCompute);
  EXPECT_EQ(softmax.costs[first(*softmax.program, OpKind::kReduce)].fused_into, divide);
  EXPECT_EQ(softmax.costs[first(*softmax.program, OpKind::kExponential)].fused_into, divide);
  EXPECT_EQ(execution_totals(*softmax.program, softmax.costs).launches, 1U);

  const RegionCosts readers = regions_of(kScalarArgumentReaders);
  const auto& p = readers.program;
  ASSERT_NE(p, nullptr);
  const OpId u1 = first(*p, OpKind::kMultiply);
  const OpId u2 = first(*p, OpKind::kMultiply, 1);
  EXPECT_EQ(readers.costs[u1].role, CostRole::kCompute);
  EXPECT_EQ(readers.costs[u2].role, CostRole::kCompute);
  EXPECT_EQ(readers.costs[first(*p, OpKind::kPower)].fused_into, u2);
  EXPECT_EQ(readers.costs[u1].bytes_written.count, 4096U);  // u1 only, not the power's result
  EXPECT_EQ(execution_totals(*p, readers.costs).launches, 2U);
}

// A softmax's backward pass on a GPU recomputes the probabilities from the bf16 scores (XLA's GPU
// backend counts f32 exponentials as cheap): p = exp(convert(s) - max) is written by no kernel, and
// the backward kernel reads s (8 KiB), the max (256 B) and the gradient instead of p (16 KiB). On a
// TPU-like preset an exponential stays expensive: p is written and read back. The max's
// `maximum(-inf, reduce)` reads the reduction's 256 B and an immediate constant, no more than
// its result, so it is recomputed too.
constexpr const char* kSoftmaxBackward = R"(
func.func @main(%s: tensor<64x64xbf16>, %w: tensor<64x64xf32>, %g: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %f = stablehlo.convert %s : (tensor<64x64xbf16>) -> tensor<64x64xf32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %r = stablehlo.reduce(%f init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<64x64xf32>, tensor<f32>) -> tensor<64xf32>
  %nb = stablehlo.broadcast_in_dim %ninf, dims = [] : (tensor<f32>) -> tensor<64xf32>
  %m = stablehlo.maximum %nb, %r : tensor<64xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<64xf32>) -> tensor<64x64xf32>
  %c = stablehlo.subtract %f, %mb : tensor<64x64xf32>
  %p = stablehlo.exponential %c : tensor<64x64xf32>
  %d = stablehlo.dot_general %p, %w, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %e = stablehlo.dot_general %d, %g, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %b = stablehlo.multiply %p, %e : tensor<64x64xf32>
  return %b : tensor<64x64xf32>
}
)";

TEST(ProgramCosts, GpusRecomputeExponentialsTpusKeepThem) {
  const auto p = parse(kSoftmaxBackward);
  ASSERT_NE(p, nullptr);
  const OpId backward = first(*p, OpKind::kMultiply);
  const OpId dot = first(*p, OpKind::kDotGeneral);
  ComputeModel gpu = microsecond_model();
  const ProgramCosts on_gpu = cost_with_regions(*p, gpu);
  // The first dot reads p whole (a dot recomputes nothing) ...
  EXPECT_EQ(on_gpu[dot].bytes_read.count, 16384U + 16384U);
  // ... and the backward kernel recomputes it: s, the reduction's 256 B, the -inf constant (4 B,
  // as every kernel counts a splat it reads) and the second dot's result.
  EXPECT_EQ(on_gpu[backward].bytes_read.count, 8192U + 256U + 4U + 16384U);
  ComputeModel tpu(std::make_unique<MicrosecondEstimator>(), load_hardware("TPUv4"), true);
  const ProgramCosts on_tpu = cost_with_regions(*p, tpu);
  EXPECT_EQ(on_tpu[backward].bytes_read.count, 16384U + 16384U);
  // Forward, on the GPU one row kernel (the max reduction and everything after it) writes p
  // (16 KiB, the first dot's operand) and the row maxima (256 B, which the backward kernel reads to
  // recompute p); on the TPU the reduction's kernel writes the maxima and the exponential's kernel
  // writes p.
  const OpId reduce = first(*p, OpKind::kReduce);
  const OpId exponential = first(*p, OpKind::kExponential);
  EXPECT_EQ(on_gpu[exponential].role, CostRole::kCompute);  // the row kernel runs at its last member
  EXPECT_EQ(on_gpu[reduce].fused_into, exponential);
  EXPECT_EQ(on_gpu[exponential].bytes_written.count, 16384U + 256U);
  EXPECT_EQ(on_gpu[exponential].op_class, OpClass::kNormalisation);
  EXPECT_EQ(on_tpu[reduce].role, CostRole::kCompute);
  EXPECT_EQ(on_tpu[reduce].bytes_written.count, 256U);
  EXPECT_EQ(on_tpu[exponential].role, CostRole::kCompute);
  EXPECT_EQ(on_tpu[exponential].bytes_written.count, 16384U);
}

// Constants as kernel inputs: a splat (one value repeated, as generated programs and some exports
// write `dense<2.0> : tensor<64x64xf32>`) is a scalar broadcast that XLA fuses, read as one
// element; an element list, a hex blob and a resource are tensors in memory, read whole.
constexpr const char* kConstants = R"(
func.func @main(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %s = stablehlo.constant dense<2.000000e+00> : tensor<64x64xf32>
  %m = stablehlo.multiply %x, %s : tensor<64x64xf32>
  %l = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %lb = stablehlo.broadcast_in_dim %l, dims = [0] : (tensor<2xf32>) -> tensor<2x64xf32>
  %h = stablehlo.constant dense<"0x0000803F00000040"> : tensor<2xf32>
  %hb = stablehlo.broadcast_in_dim %h, dims = [0] : (tensor<2xf32>) -> tensor<2x64xf32>
  %t = stablehlo.add %lb, %hb : tensor<2x64xf32>
  %c = stablehlo.concatenate %m, %t, dim = 0 : (tensor<64x64xf32>, tensor<2x64xf32>) -> tensor<66x64xf32>
  %r = stablehlo.slice %c [0:64, 0:64] : (tensor<66x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}
)";

TEST(ProgramCosts, ASplatConstantIsReadAsOneElementAndAListWhole) {
  const auto p = parse(kConstants);
  ASSERT_NE(p, nullptr);
  ComputeModel model = microsecond_model();
  const ProgramCosts unfused = cost_program(*p, model, {});
  // x (16 KiB) and one f32 of the splat.
  EXPECT_EQ(unfused[first(*p, OpKind::kMultiply)].bytes_read.count, 16384U + 4U);
  // Each list's two f32s.
  EXPECT_EQ(unfused[first(*p, OpKind::kBroadcastInDim)].bytes_read.count, 8U);
  EXPECT_EQ(unfused[first(*p, OpKind::kBroadcastInDim, 1)].bytes_read.count, 8U);
  // Fused, the same: x and the splat's element once, and both lists.
  const RegionCosts costed = regions_of(kConstants);
  ASSERT_NE(costed.program, nullptr);
  std::uint64_t read = 0;
  for (OpId id = 0; id < costed.program->op_count(); ++id) {
    if (costed.costs[id].role == CostRole::kCompute) {
      read += costed.costs[id].bytes_read.count;
    }
  }
  EXPECT_EQ(read, 16384U + 4U + 8U + 8U);
}

// Readers that cannot fuse a broadcast read a splat whole (XLA materialises it before a GEMM, a
// sort or a collective); an in-place update writes a splat whole; a bitcast_convert of a splat is
// still a free reinterpretation.
constexpr const char* kSplatReaders = R"(
func.func @main(%x: tensor<64x64xf32>, %buffer: tensor<128x64xf32>, %i: tensor<i32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<128x64xf32>, tensor<64x64xi32>) {
  %s = stablehlo.constant dense<2.000000e+00> : tensor<64x64xf32>
  %d = stablehlo.dot_general %x, %s, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %o = "stablehlo.sort"(%s) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %c = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }) {dimension = 1 : i64} : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %u = stablehlo.dynamic_update_slice %buffer, %s, %i, %z : (tensor<128x64xf32>, tensor<64x64xf32>, tensor<i32>, tensor<i32>) -> tensor<128x64xf32>
  %b = stablehlo.bitcast_convert %s : (tensor<64x64xf32>) -> tensor<64x64xi32>
  return %d, %o, %u, %b : tensor<64x64xf32>, tensor<64x64xf32>, tensor<128x64xf32>, tensor<64x64xi32>
}
)";

TEST(ProgramCosts, ASplatIsReadWholeByGemmsAndSortsAndWrittenWholeByAnUpdate) {
  const auto p = parse(kSplatReaders);
  ASSERT_NE(p, nullptr);
  ComputeModel model = microsecond_model();
  const ProgramCosts costs = cost_program(*p, model, {});
  EXPECT_EQ(costs[first(*p, OpKind::kDotGeneral)].bytes_read.count, 16384U + 16384U);
  EXPECT_EQ(costs[first(*p, OpKind::kSort)].bytes_read.count, 16384U);
  // The update: one element of the splat and the two indices read, the whole update written.
  EXPECT_EQ(costs[first(*p, OpKind::kDynamicUpdateSlice)].bytes_read.count, 4U + 4U + 4U);
  EXPECT_EQ(costs[first(*p, OpKind::kDynamicUpdateSlice)].bytes_written.count, 16384U);
  EXPECT_EQ(costs[first(*p, OpKind::kBitcastConvert)].role, CostRole::kFree);
}

// A fused call of an elementwise function reads a splat operand as one element, as its ops would;
// a scatter into a splat buffer (a zeros table) writes the whole buffer (XLA fills it first).
constexpr const char* kSplatCallAndFill = R"(
func.func private @scale(%x: tensor<64x64xf32>, %s: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = stablehlo.multiply %x, %s : tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
func.func @main(%x: tensor<64x64xf32>, %ids: tensor<8x1xi32>, %upd: tensor<8x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %s = stablehlo.constant dense<2.000000e+00> : tensor<64x64xf32>
  %y = func.call @scale(%x, %s) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %z = stablehlo.constant dense<0.000000e+00> : tensor<64x64xf32>
  %t = "stablehlo.scatter"(%z, %ids, %upd) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %c = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %c : tensor<f32>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>} : (tensor<64x64xf32>, tensor<8x1xi32>, tensor<8x64xf32>) -> tensor<64x64xf32>
  return %y, %t : tensor<64x64xf32>, tensor<64x64xf32>
}
)";

TEST(ProgramCosts, AFusedCallReadsASplatAsOneElementAndAScatterFillsASplatBuffer) {
  const RegionCosts costed = regions_of(kSplatCallAndFill);
  const auto& p = costed.program;
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(costed.costs[first(*p, OpKind::kCall)].role, CostRole::kCompute);
  EXPECT_EQ(costed.costs[first(*p, OpKind::kCall)].bytes_read.count, 16384U + 4U);
  // The scatter: the indices and the updates read, the updates read again by the combining body;
  // the updates and the whole 16 KiB buffer written.
  const OpId scatter = first(*p, OpKind::kScatter);
  EXPECT_EQ(costed.costs[scatter].bytes_read.count, 32U + 2048U + 2048U);
  EXPECT_EQ(costed.costs[scatter].bytes_written.count, 2048U + 16384U);
}

// A batch norm's normalisation: rsqrt of the per-channel variance (64 evaluations), broadcast over
// the activations (4096 elements). The kernel streams the activations like any elementwise kernel,
// so it is not costed as a transcendental one (that class's bandwidth is fitted on activation
// kernels, one special function per element); the exponential over every element is.
constexpr const char* kNormalise = R"(
func.func @main(%x: tensor<64x64xf32>, %var: tensor<64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %r = stablehlo.rsqrt %var : tensor<64xf32>
  %rb = stablehlo.broadcast_in_dim %r, dims = [1] : (tensor<64xf32>) -> tensor<64x64xf32>
  %y = stablehlo.multiply %x, %rb : tensor<64x64xf32>
  %d = stablehlo.dot_general %y, %y, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %e = stablehlo.exponential %d : tensor<64x64xf32>
  %z = stablehlo.multiply %e, %rb : tensor<64x64xf32>
  return %y, %z : tensor<64x64xf32>, tensor<64x64xf32>
}
)";

TEST(ProgramCosts, AKernelIsTranscendentalOnlyWhenItsSpecialFunctionsRunPerElement) {
  const RegionCosts costed = regions_of(kNormalise);
  const auto& p = costed.program;
  ASSERT_NE(p, nullptr);
  const ProgramCosts& fused = costed.costs;
  const OpId normalise = first(*p, OpKind::kMultiply);
  EXPECT_EQ(fused[first(*p, OpKind::kRsqrt)].fused_into, normalise);
  EXPECT_EQ(fused[normalise].role, CostRole::kCompute);
  EXPECT_EQ(fused[normalise].op_class, OpClass::kElementwise);
  const OpId activation = first(*p, OpKind::kMultiply, 1);
  EXPECT_EQ(fused[first(*p, OpKind::kExponential)].fused_into, activation);
  EXPECT_EQ(fused[activation].op_class, OpClass::kTranscendental);
}

// A batch norm's statistics: the sum of x closes its kernel at the division that makes the mean,
// before the sum of x * x, which reads that kernel's x * x. The division's kernel runs after the
// second sum (at the concatenation), so the second sum's kernel takes in the first (XLA computes
// both sums in one kernel): x is read once, nothing but the sums written.
constexpr const char* kStatistics = R"(
func.func @main(%y: tensor<64x64xf16>) -> tensor<128xf32> {
  %c = stablehlo.convert %y : (tensor<64x64xf16>) -> tensor<64x64xf32>
  %sq = stablehlo.multiply %c, %c : tensor<64x64xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s1 = stablehlo.reduce(%c init: %z) applies stablehlo.add across dimensions = [0] : (tensor<64x64xf32>, tensor<f32>) -> tensor<64xf32>
  %n = stablehlo.constant dense<64.0> : tensor<64xf32>
  %mean = stablehlo.divide %s1, %n : tensor<64xf32>
  %s2 = stablehlo.reduce(%sq init: %z) applies stablehlo.add across dimensions = [0] : (tensor<64x64xf32>, tensor<f32>) -> tensor<64xf32>
  %var = stablehlo.divide %s2, %n : tensor<64xf32>
  %both = stablehlo.concatenate %mean, %var, dim = 0 : (tensor<64xf32>, tensor<64xf32>) -> tensor<128xf32>
  return %both : tensor<128xf32>
}
)";

TEST(ProgramCosts, AReductionTakesInTheClosedKernelWhoseValuesItReads) {
  const RegionCosts costed = regions_of(kStatistics);
  const auto& p = costed.program;
  ASSERT_NE(p, nullptr);
  const ProgramCosts& fused = costed.costs;
  const OpId second_sum = first(*p, OpKind::kReduce, 1);
  for (const OpKind kind : {OpKind::kConvert, OpKind::kMultiply, OpKind::kReduce}) {
    EXPECT_EQ(fused[first(*p, kind)].fused_into, second_sum) << workload::op_kind_name(kind);
  }
  EXPECT_EQ(fused[second_sum].role, CostRole::kCompute);
  EXPECT_EQ(fused[second_sum].bytes_read.count, 8192U + 4U);  // y and the init value
  EXPECT_EQ(fused[second_sum].bytes_written.count, 256U + 256U);
  // The divisions and the concatenation use the sums' results: one kernel after it.
  const OpId concatenate = first(*p, OpKind::kConcatenate);
  EXPECT_EQ(fused[first(*p, OpKind::kDivide)].fused_into, concatenate);
  EXPECT_EQ(fused[first(*p, OpKind::kDivide, 1)].fused_into, concatenate);
  const ExecutionTotals totals = execution_totals(*p, fused);
  EXPECT_EQ(totals.role_executions[static_cast<std::size_t>(CostRole::kCompute)], 2U);
}

// The merge waits for nothing: a dot that uses x * x before the second sum needs it in memory at
// the first kernel's end, so the two sums stay two kernels.
TEST(ProgramCosts, AClosedKernelWhoseValueIsNeededEarlierIsNotTakenIn) {
  std::string text = kStatistics;
  const auto replace = [&text](const std::string& from, const std::string& to) {
    ASSERT_NE(text.find(from), std::string::npos) << from;
    text.replace(text.find(from), from.size(), to);
  };
  replace("  %s2 = stablehlo.reduce(%sq", "  %d = stablehlo.dot_general %sq, %sq, contracting_dims = [1] x [0] : "
                                        "(tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>\n"
                                        "  %s2 = stablehlo.reduce(%sq");
  replace("return %both : tensor<128xf32>", "return %both, %d : tensor<128xf32>, tensor<64x64xf32>");
  replace("-> tensor<128xf32> {", "-> (tensor<128xf32>, tensor<64x64xf32>) {");
  const RegionCosts costed = regions_of(text);
  const auto& p = costed.program;
  ASSERT_NE(p, nullptr);
  const ProgramCosts& fused = costed.costs;
  const OpId first_sum = first(*p, OpKind::kReduce);
  const OpId second_sum = first(*p, OpKind::kReduce, 1);
  EXPECT_EQ(fused[first_sum].role, CostRole::kCompute);
  EXPECT_EQ(fused[first(*p, OpKind::kMultiply)].fused_into, first_sum);
  // The first kernel writes x * x (the dot's operand) and its sum; the second recomputes x * x
  // from y (reading y and the init value).
  EXPECT_EQ(fused[first_sum].bytes_written.count, 16384U + 256U);
  EXPECT_EQ(fused[second_sum].role, CostRole::kCompute);
  EXPECT_EQ(fused[second_sum].bytes_read.count, 8192U + 4U);
}

// Random straight-line programs of fusible ops, reductions, broadcasts and dots: whatever the
// regions, merges and recomputations, every kernel op comes after its members, and a value
// used by another kernel (or a barrier) is produced by a kernel that runs before the user's.
TEST(ProgramCosts, RegionKernelsRunAfterTheirMembersAndBeforeTheirUsers) {
  std::mt19937 random(20261121);
  ComputeModel model = microsecond_model();
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> matrices = {"%m0", "%m1"};
    std::vector<std::string> vectors = {"%v0"};
    std::string body;
    const auto pick = [&random](const std::vector<std::string>& from) {
      return from[std::uniform_int_distribution<std::size_t>(0, from.size() - 1)(random)];
    };
    for (int i = 0; i < 30; ++i) {
      const std::string name = "%x" + std::to_string(i);
      const int kind = std::uniform_int_distribution<int>(0, 7)(random);
      const std::string m = "tensor<8x8xf32>";
      const std::string v = "tensor<8xf32>";
      if (kind <= 1) {
        body += "  " + name + " = stablehlo." + (kind == 0 ? "add " : "multiply ") + pick(matrices) + ", " +
                pick(matrices) + " : " + m + "\n";
        matrices.push_back(name);
      } else if (kind == 2) {
        body += "  " + name + " = stablehlo.exponential " + pick(matrices) + " : " + m + "\n";
        matrices.push_back(name);
      } else if (kind == 3) {
        body += "  " + name + " = stablehlo.reduce(" + pick(matrices) +
                " init: %z) applies stablehlo.add across dimensions = [1] : (" + m + ", tensor<f32>) -> " + v + "\n";
        vectors.push_back(name);
      } else if (kind == 4) {
        body += "  " + name + " = stablehlo.broadcast_in_dim " + pick(vectors) + ", dims = [0] : (" + v + ") -> " +
                m + "\n";
        matrices.push_back(name);
      } else if (kind == 5) {
        body += "  " + name + " = stablehlo.divide " + pick(vectors) + ", " + pick(vectors) + " : " + v + "\n";
        vectors.push_back(name);
      } else if (kind == 6) {
        body += "  " + name + " = stablehlo.dot_general " + pick(matrices) + ", " + pick(matrices) +
                ", contracting_dims = [1] x [0] : (" + m + ", " + m + ") -> " + m + "\n";
        matrices.push_back(name);
      } else {
        body += "  " + name + " = stablehlo.reshape " + pick(matrices) + " : (" + m + ") -> tensor<64xf32>\n";
        body += "  " + name + "r = stablehlo.reshape " + name + " : (tensor<64xf32>) -> " + m + "\n";
        matrices.push_back(name + "r");
      }
    }
    const std::string text = "func.func @main(%m0: tensor<8x8xf32>, %m1: tensor<8x8xf32>, %v0: tensor<8xf32>) -> "
                             "(tensor<8x8xf32>, tensor<8xf32>) {\n"
                             "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n" +
                             body + "  return " + pick(matrices) + ", " + pick(vectors) +
                             " : tensor<8x8xf32>, tensor<8xf32>\n}\n";
    const auto p = parse(text);
    ASSERT_NE(p, nullptr) << text;
    const ProgramCosts fused = cost_with_regions(*p, model);
    // Where an op's work runs: its kernel op (members and renames), or itself.
    const auto at = [&fused](OpId op) {
      const OpCost& c = fused[op];
      return c.fused_into != workload::kNoId ? c.fused_into : op;
    };
    for (OpId id = 0; id < p->op_count(); ++id) {
      const auto line = [&p](OpId op) { return p->location(p->op(op).offset).line; };
      // (A rename may follow its kernel op: it costs nothing and its users come later still.)
      ASSERT_TRUE(fused[id].role != CostRole::kFused || at(id) > id) << "a kernel op (line " << line(at(id)) << ") before its member (line " << line(id)
                            << ")\n" << text;
      ASSERT_NE(fused[at(id)].role, CostRole::kFused) << text;
      for (const workload::ValueRef v : p->operands(p->op(id))) {
        if (v.is_op_result() && at(v.op()) != at(id)) {
          ASSERT_LT(at(v.op()), at(id)) << "line " << line(id) << " uses line " << line(v.op())
                                        << " before its kernel runs\n" << text;
        }
      }
    }
  }
}

// Chunks of a tensor-parallel ring: row slices that only GEMMs read, and GEMM results joined
// along dimension 0 that nothing else reads, are views the GEMM library reads or writes in place.
constexpr const char* kGemmViews = R"(
module attributes {orrery.gemm_views = true} {
func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>) -> (tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x4xf32>, tensor<8x4xf32>, tensor<4x16xf32>) {
  %rows0 = stablehlo.slice %x [0:4, 0:16] : (tensor<8x16xf32>) -> tensor<4x16xf32>
  %rows1 = stablehlo.slice %x [4:8, 0:16] : (tensor<8x16xf32>) -> tensor<4x16xf32>
  %d0 = stablehlo.dot_general %rows0, %w, contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x4xf32>) -> tensor<4x4xf32>
  %d1 = stablehlo.dot_general %rows1, %w, contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x4xf32>) -> tensor<4x4xf32>
  %joined = stablehlo.concatenate %d0, %d1, dim = 0 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %cols = stablehlo.slice %x [0:8, 0:8] : (tensor<8x16xf32>) -> tensor<8x8xf32>
  %e = stablehlo.dot_general %cols, %cols, contracting_dims = [0] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %strided = stablehlo.slice %x [0:8:2, 0:16] : (tensor<8x16xf32>) -> tensor<4x16xf32>
  %f = stablehlo.dot_general %strided, %w, contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x4xf32>) -> tensor<4x4xf32>
  %read = stablehlo.slice %x [0:4, 0:16] : (tensor<8x16xf32>) -> tensor<4x16xf32>
  %g = stablehlo.dot_general %read, %w, contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x4xf32>) -> tensor<4x4xf32>
  %h = stablehlo.dot_general %read, %w, contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x4xf32>) -> tensor<4x4xf32>
  %copied = stablehlo.concatenate %g, %h, dim = 0 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %neg = stablehlo.negate %h : tensor<4x4xf32>
  %e_rows = stablehlo.slice %e [0:4, 0:8] : (tensor<8x8xf32>) -> tensor<4x8xf32>
  return %joined, %e_rows, %f, %copied, %read : tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x4xf32>, tensor<8x4xf32>, tensor<4x16xf32>
}
}
)";

TEST(ProgramCosts, GemmOperandRowSlicesAndJoinedGemmResultsAreViews) {
  const auto p = parse(kGemmViews);
  ASSERT_NE(p, nullptr);
  ComputeModel model = microsecond_model();
  CostOptions options;
  options.fusion = config::FusionMode::kRegions;
  const ProgramCosts costs = cost_program(*p, model, options);
  // Row slices that only GEMMs read, and the concatenation of GEMM results nothing else reads.
  EXPECT_EQ(costs[first(*p, OpKind::kSlice, 0)].role, CostRole::kFree);
  EXPECT_EQ(costs[first(*p, OpKind::kSlice, 1)].role, CostRole::kFree);
  EXPECT_EQ(costs[first(*p, OpKind::kConcatenate, 0)].role, CostRole::kFree);
  // Not views: a column slice, a strided row slice, a row slice the step returns,
  // a concatenation of a GEMM result that another op reads, a slice of a GEMM result read by no GEMM.
  EXPECT_NE(costs[first(*p, OpKind::kSlice, 2)].role, CostRole::kFree);
  EXPECT_NE(costs[first(*p, OpKind::kSlice, 3)].role, CostRole::kFree);
  EXPECT_NE(costs[first(*p, OpKind::kSlice, 4)].role, CostRole::kFree);
  EXPECT_NE(costs[first(*p, OpKind::kConcatenate, 1)].role, CostRole::kFree);
  EXPECT_NE(costs[first(*p, OpKind::kSlice, 5)].role, CostRole::kFree);
  // Only in a module that declares its GEMM chunks in place: elsewhere XLA copies them.
  std::string plain = kGemmViews;
  plain.replace(plain.find("orrery.gemm_views = true"), 24, "orrery.gemm_views = false");
  const auto q = parse(plain);
  ASSERT_NE(q, nullptr);
  const ProgramCosts copies = cost_program(*q, model, options);
  EXPECT_NE(copies[first(*q, OpKind::kSlice, 0)].role, CostRole::kFree);
  EXPECT_NE(copies[first(*q, OpKind::kConcatenate, 0)].role, CostRole::kFree);
  // The generic form's unit strides: array<i64: ...>, a splat and a list.
  for (const char* strides :
       {"array<i64: 1, 1>", "dense<1> : tensor<2xi64>", "dense<[1, 1]> : tensor<2xi64>"}) {
    std::string generic = kGemmViews;
    generic.replace(
        generic.find("stablehlo.slice %x [0:4, 0:16]"), 30,
        std::string(
            "\"stablehlo.slice\"(%x) {start_indices = array<i64: 0, 0>, limit_indices = array<i64: 4, 16>, "
            "strides = ") +
            strides + "}");
    const auto g = parse(generic);
    ASSERT_NE(g, nullptr) << strides;
    EXPECT_EQ(cost_program(*g, model, options)[first(*g, OpKind::kSlice, 0)].role, CostRole::kFree)
        << strides;
  }
}

TEST(ProgramCosts, RooflineTimesOnAPreset) {
  const auto p = parse(kChain);
  ASSERT_NE(p, nullptr);
  const Hardware a100 = load_hardware("A100_80GB");
  ComputeModel model(config::ComputeConfig{}, a100);
  const ProgramCosts costs = cost_program(*p, model, {});
  const OpId dot = first(*p, OpKind::kDotGeneral);
  OpCount count;
  OpCounter(*p, {}).count(dot, count);
  EXPECT_EQ(count.signature.element_type, ElementType::kTF32);  // an f32 dot with DEFAULT precision
  EXPECT_EQ(costs[dot].time, SimTime::from_seconds(roofline_terms(count.signature, a100.roofline).total_s()));
  EXPECT_EQ(costs[dot].estimator, "roofline");
  EXPECT_NE(costs[dot].note.find("default: A100_80GB: compute"), std::string_view::npos) << costs[dot].note;
}

// Every op of every module of every shared StableHLO file gets an entry; kernels get a positive
// time; forward + backward convolutions of ResNet-50 add up to about three times the forward.
TEST(ProgramCosts, EveryOpOfTheSharedFiles) {
  const std::filesystem::path root = testing::shared_data() / "stablehlo";
  if (!std::filesystem::is_directory(root)) {
    GTEST_SKIP() << "shared data absent: " << root << " (read in place)";
  }
  ComputeModel model(config::ComputeConfig{}, load_hardware("A100_80GB"));
  std::size_t modules = 0;
  std::size_t kernels = 0;
  std::size_t totals_walked = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.path().extension() != ".mlir" || entry.path().filename() == "ops_stablehlo_verifier.mlir") {
      continue;
    }
    auto source = frontend::stablehlo::read_source(entry.path().string());
    ASSERT_TRUE(source.ok());
    for (const auto& outcome : frontend::stablehlo::parse_modules(source.value(), {})) {
      ASSERT_TRUE(outcome.result.ok()) << outcome.result.error().render();
      const Program& p = *outcome.result.value().program;
      const ProgramCosts costs = cost_program(p, model, {});
      ++modules;
      ASSERT_EQ(costs.ops.size(), p.op_count());
      // Region fusion (the scenario default) on every program: every fused op names a kernel op
      // that is not itself fused, and a kernel in the op's own block comes after it (the exec
      // graph runs the members there); kernels cost finite, non-negative work.
      CostOptions regions;
      regions.fusion = config::FusionMode::kRegions;
      const ProgramCosts fused = cost_program(p, model, regions);
      for (OpId id = 0; id < p.op_count(); ++id) {
        const OpCost& c = fused[id];
        if (c.role == CostRole::kFused) {
          ASSERT_NE(c.fused_into, workload::kNoId) << entry.path() << " op " << id;
          EXPECT_NE(fused[c.fused_into].role, CostRole::kFused) << entry.path() << " op " << id;
          if (p.op(c.fused_into).block == p.op(id).block) {
            EXPECT_GT(c.fused_into, id) << entry.path() << " op " << id;
          }
        } else if (c.role == CostRole::kCompute) {
          EXPECT_TRUE(std::isfinite(c.flops.value) && c.flops.value >= 0.0) << entry.path() << " op " << id;
          EXPECT_GE(c.time, SimTime::zero());
        }
      }
      for (OpId id = 0; id < p.op_count(); ++id) {
        const OpCost& c = costs[id];
        if (c.role == CostRole::kCompute) {
          ++kernels;
          EXPECT_TRUE(std::isfinite(c.flops.value) && c.flops.value >= 0.0) << entry.path() << " op " << id;
          if (c.flops.value > 0.0 || c.bytes_read.count + c.bytes_written.count > 0) {
            EXPECT_GT(c.time, SimTime::zero()) << entry.path() << " op " << id;
          }
          EXPECT_FALSE(c.estimator.empty());
        } else {
          EXPECT_EQ(c.time, SimTime::zero());
        }
        if (c.role == CostRole::kFused) {
          ASSERT_LT(c.fused_into, p.op_count());
          EXPECT_NE(costs[c.fused_into].role, CostRole::kFused);
        }
      }
      bool loops_known = true;
      for (const OpId loop : p.while_ops()) {
        loops_known = loops_known && p.while_loop(p.op(loop)).source != workload::TripCountSource::kUnknown;
      }
      if (loops_known) {
        const ExecutionTotals totals = execution_totals(p, costs);
        EXPECT_GE(totals.time, SimTime::zero());
        ++totals_walked;
      }
    }
  }
  EXPECT_GT(modules, 100U);
  EXPECT_GT(kernels, 10000U);
  EXPECT_GT(totals_walked, 100U);
  std::printf("costed %zu modules, %zu kernels; cache hit rate %.3f\n", modules, kernels,
              model.cache_stats().hit_rate());
}

// ResNet-50 at 224 x 224: 4.1 G multiply-adds per image forward (He et al. 2016, Table 1, "3.8 x
// 10^9 FLOPs" counting multiply-adds, plus the final layer); training adds the backward-data
// and backward-filter convolutions (twice the forward, less the first layer's backward-data).
// On 256 images per device the convolutions of one step should come to about 3 * 2 * 4.1e9 * 256
// = 6.3e12 FLOPs.
TEST(ProgramCosts, ResNet50TrainingStepConvolutionFlops) {
  const std::filesystem::path file = testing::shared_data() / "stablehlo" / "hespas" / "resnet50_train_step_4dev_b1024.mlir";
  if (!std::filesystem::exists(file)) {
    GTEST_SKIP() << "shared data absent: " << file;
  }
  auto modules = frontend::stablehlo::parse_file(file.string(), {});
  ASSERT_TRUE(modules.ok()) << modules.error().render();
  const Program& p = *modules.value()[0].program;
  ComputeModel model(config::ComputeConfig{}, load_hardware("A100_40GB"));
  const ExecutionTotals totals = execution_totals(p, cost_program(p, model, {}));
  const ClassTotals& conv = totals.classes[static_cast<std::size_t>(OpClass::kConvolution)];
  EXPECT_EQ(conv.executions, 53U * 3 - 1);  // 53 convolutions, 3 each but the first layer's backward-data
  EXPECT_GT(conv.flops.value, 5.5e12);
  EXPECT_LT(conv.flops.value, 6.5e12);
  std::printf("ResNet-50 step: convolutions %.4g FLOPs, total %.4g FLOPs, %.4g B, %.4g s on A100_40GB\n",
              conv.flops.value, totals.flops.value, totals.bytes().as_double(), totals.time.seconds());
}

}  // namespace
}  // namespace orrery::compute
