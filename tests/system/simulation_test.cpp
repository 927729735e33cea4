// End-to-end runs of the system layer on small StableHLO modules with fixed op times, checked
// against hand-computed timelines; each test states its equation.
#include <gtest/gtest.h>

#include <algorithm>
#include <fmt/format.h>
#include <mutex>

#include "config/scenario.h"
#include "frontend/stablehlo/stablehlo.h"
#include "pdes/in_process_group.h"
#include "system/simulation.h"
#include "workload/op_kind.h"

namespace orrery::system {
namespace {

// Every elementwise op takes `each`; everything else is free.
class FixedOpTimes final : public OpTimes {
 public:
  FixedOpTimes(const workload::Program& program, SimTime each) : program_(program), each_(each) {}
  [[nodiscard]] bool takes_time(workload::OpId op) const override {
    return workload::op_category(program_.op(op).kind) == workload::OpCategory::kElementwise;
  }
  [[nodiscard]] SimTime time(workload::OpId /*op*/) const override { return each_; }

 private:
  const workload::Program& program_;
  SimTime each_;
};

std::shared_ptr<const workload::Program> parse(const std::string& text) {
  auto source = std::make_shared<workload::SourceText>(workload::SourceText{"test.mlir", text});
  auto modules = frontend::stablehlo::parse_source(source, {}).take_or_throw();
  return modules.front().program;
}

// 1 MiB all-reduce over 4 replicas between two 10 µs elementwise ops.
const char* kAllReduce = R"(
module @test attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<262144xf32>) -> tensor<262144xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<262144xf32>
    %1 = "stablehlo.all_reduce"(%0) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<262144xf32>) -> tensor<262144xf32>
    %2 = stablehlo.multiply %1, %1 : tensor<262144xf32>
    return %2 : tensor<262144xf32>
  }
}
)";

// The same with a 10 µs op that does not depend on the all-reduce (it can overlap it).
const char* kOverlap = R"(
module @test attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<262144xf32>, %arg1: tensor<262144xf32>) -> tensor<262144xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<262144xf32>
    %1 = "stablehlo.all_reduce"(%0) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<262144xf32>) -> tensor<262144xf32>
    %2 = stablehlo.multiply %arg1, %arg1 : tensor<262144xf32>
    %3 = stablehlo.add %1, %2 : tensor<262144xf32>
    return %3 : tensor<262144xf32>
  }
}
)";

// One node of 4 devices on a scale-up switch: 100 GB/s per device, 1 µs device-to-device latency,
// 0.5 µs injection delay; ring all-reduce in one chunk; no reduction cost.
std::string scenario_text(const std::string& model) {
  return "hardware: A100_40GB\n"
         "system: {devices_per_node: 4, scale_up: {bandwidth_GBps: 100, latency_ns: 1000}, endpoint_delay_ns: 500,\n"
         "         chunks: 1, collectives: {all_reduce: ring}}\n"
         "network: {model: " + model + "}\n";
}

struct Outcome {
  RunSummary summary;
  std::string error;
};

// Runs `input` on `processes` in-process ranks; the outcome of process 0.
Outcome simulate_on(const SimulationInput& input, std::uint32_t processes) {
  pdes::InProcessGroup group(processes);
  std::vector<Outcome> outcomes(processes);
  group.run([&](pdes::Communicator& communicator) {
    try {
      outcomes[communicator.rank()].summary = simulate(communicator, input);
    } catch (const OrreryError& error) {
      outcomes[communicator.rank()].error = error.what();
    }
  });
  return outcomes.front();
}

Outcome run(const std::string& module, const std::string& scenario_yaml, std::uint32_t processes = 1,
            const std::vector<std::string>& overrides = {}, std::vector<std::uint32_t> ranks = {0, 1, 2, 3},
            std::uint32_t replicas = 0) {
  const auto program = parse(module);
  const config::Scenario scenario = config::load_scenario_text(scenario_yaml, "scenario.yaml", overrides);
  SimulationInput input;
  input.scenario = &scenario;
  input.hardware = "test";
  input.programs.push_back(
      ProgramInput{program, "test.mlir", std::move(ranks), std::make_shared<FixedOpTimes>(*program, SimTime::from_ns(10'000)),
                   replicas});
  return simulate_on(input, processes);
}

// Several programs, each on its own ranks (pipeline stages), labelled stage0.mlir, stage1.mlir, ...
Outcome run_programs(const std::vector<std::pair<std::string, std::vector<std::uint32_t>>>& modules,
                     const std::string& scenario_yaml, std::uint32_t processes = 1,
                     const std::vector<std::string>& overrides = {}) {
  const config::Scenario scenario = config::load_scenario_text(scenario_yaml, "scenario.yaml", overrides);
  SimulationInput input;
  input.scenario = &scenario;
  input.hardware = "test";
  for (std::size_t i = 0; i < modules.size(); ++i) {
    const auto program = parse(modules[i].first);
    input.programs.push_back(ProgramInput{program, fmt::format("stage{}.mlir", i), modules[i].second,
                                          std::make_shared<FixedOpTimes>(*program, SimTime::from_ns(10'000)), 0});
  }
  return simulate_on(input, processes);
}

// One-device pipeline stages for the point-to-point tests. {0} is a channel handle, {1} the
// source_target_pairs and {2} their count.
constexpr const char* kSendAfterOneAdd = R"(
module @a attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func public @main(%arg0: tensor<16xf32>) -> tensor<16xf32> {{
    %0 = stablehlo.add %arg0, %arg0 : tensor<16xf32>
    %t = stablehlo.create_token : !stablehlo.token
    %s = "stablehlo.send"(%0, %t) {{channel_handle = #stablehlo.channel_handle<handle = {0}, type = 1>, is_host_transfer = false, source_target_pairs = dense<{1}> : tensor<{2}x2xi64>}} : (tensor<16xf32>, !stablehlo.token) -> !stablehlo.token
    return %0 : tensor<16xf32>
  }}
}}
)";
constexpr const char* kSendAfterTwoAdds = R"(
module @b attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func public @main(%arg0: tensor<16xf32>) -> tensor<16xf32> {{
    %0 = stablehlo.add %arg0, %arg0 : tensor<16xf32>
    %1 = stablehlo.add %0, %0 : tensor<16xf32>
    %t = stablehlo.create_token : !stablehlo.token
    %s = "stablehlo.send"(%1, %t) {{channel_handle = #stablehlo.channel_handle<handle = {0}, type = 1>, is_host_transfer = false, source_target_pairs = dense<[[0, 0]]> : tensor<1x2xi64>}} : (tensor<16xf32>, !stablehlo.token) -> !stablehlo.token
    return %1 : tensor<16xf32>
  }}
}}
)";
// Receives on channel 1, adds, then receives on channel {0} and adds.
constexpr const char* kRecvTwice = R"(
module @c attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func public @main(%arg0: tensor<16xf32>) -> tensor<16xf32> {{
    %t = stablehlo.create_token : !stablehlo.token
    %r:2 = "stablehlo.recv"(%t) {{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, is_host_transfer = false, source_target_pairs = dense<[[0, 0]]> : tensor<1x2xi64>}} : (!stablehlo.token) -> (tensor<16xf32>, !stablehlo.token)
    %0 = stablehlo.add %r#0, %arg0 : tensor<16xf32>
    %q:2 = "stablehlo.recv"(%r#1) {{channel_handle = #stablehlo.channel_handle<handle = {0}, type = 1>, is_host_transfer = false, source_target_pairs = dense<[[0, 0]]> : tensor<1x2xi64>}} : (!stablehlo.token) -> (tensor<16xf32>, !stablehlo.token)
    %1 = stablehlo.add %q#0, %0 : tensor<16xf32>
    return %1 : tensor<16xf32>
  }}
}}
)";

// Ring all-reduce, p = 4, n = 1 MiB: 2(p-1) steps of alpha + (n/p)/B with
// alpha = 0.5 µs injection + 1 µs latency and (n/p)/B = 262144 B / 1e11 B/s = 2.62144 µs.
constexpr double kRingSeconds = 6 * (0.5e-6 + 1e-6 + 2.62144e-6);

TEST(Simulation, AllReduceStepMatchesTheRingClosedForm) {
  for (const char* model : {"analytical", "flow"}) {
    SCOPED_TRACE(model);
    const Outcome outcome = run(kAllReduce, scenario_text(model));
    ASSERT_EQ(outcome.error, "");
    // T = 10 µs (add) + ring all-reduce + 10 µs (multiply)
    EXPECT_NEAR(outcome.summary.step_time_s, 20e-6 + kRingSeconds, 1e-12);
    EXPECT_NEAR(outcome.summary.compute_s.mean, 20e-6, 1e-12);
    EXPECT_NEAR(outcome.summary.comm_s.mean, kRingSeconds, 1e-12);
    EXPECT_NEAR(outcome.summary.exposed_comm_s.mean, kRingSeconds, 1e-12);
    EXPECT_NEAR(outcome.summary.idle_s.max, 0.0, 1e-12);
    EXPECT_EQ(outcome.summary.transfers, 4U * 6U);
    ASSERT_EQ(outcome.summary.algorithms.size(), 1U);
    EXPECT_EQ(outcome.summary.algorithms.front(), "all_reduce: ring (1)");
  }
}

TEST(Simulation, TheCollectiveLaunchCostComesBeforeTheFirstTransfer) {
  // T = 10 µs + (launch 7 µs + ring all-reduce) + 10 µs, on one and two processes.
  for (const std::uint32_t processes : {1U, 2U}) {
    const Outcome outcome = run(kAllReduce, scenario_text("flow"), processes, {"system.collective_launch_ns=7000"});
    ASSERT_EQ(outcome.error, "");
    EXPECT_NEAR(outcome.summary.step_time_s, 20e-6 + 7e-6 + kRingSeconds, 1e-12);
    EXPECT_NEAR(outcome.summary.comm_s.mean, 7e-6 + kRingSeconds, 1e-12);
  }
}

// A 1 MiB sum all-reduce over the 4 replicas, or over the given replica groups.
std::string all_reduce(const std::string& result, const std::string& operand,
                       const std::string& groups = "dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>") {
  return "    " + result + " = \"stablehlo.all_reduce\"(" + operand +
         ") ({\n    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n      %s = stablehlo.add %a, %b : tensor<f32>\n"
         "      stablehlo.return %s : tensor<f32>\n    }) {replica_groups = " +
         groups +
         "} : "
         "(tensor<262144xf32>) -> tensor<262144xf32>\n";
}

// A 4-replica module whose main takes two 1 MiB arguments and runs `body`, which ends in %result.
std::string two_argument_module(const std::string& body, const std::string& result) {
  return "module @test attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {\n"
         "  func.func public @main(%arg0: tensor<262144xf32>, %arg1: tensor<262144xf32>) -> "
         "tensor<262144xf32> {\n" +
         body + "    return " + result + " : tensor<262144xf32>\n  }\n}\n";
}

// Two independent 1 MiB all-reduces over the same replicas, both read by the multiply.
const std::string kTwoAllReduces = two_argument_module(
    "    %0 = stablehlo.add %arg0, %arg0 : tensor<262144xf32>\n" + all_reduce("%1", "%0") +
        all_reduce("%2", "%arg1") + "    %3 = stablehlo.multiply %1, %2 : tensor<262144xf32>\n",
    "%3");

TEST(Simulation, CombinedAllReducesRunAsOneOfTheSummedSize) {
  // Combined (default threshold): after the add, one ring all-reduce of n = 2 MiB:
  //   T = 10 µs + 6 (1.5 µs + 524288 B / 1e11 B/s) + 10 µs, launch cost paid once.
  // Not combined (threshold 0): the comm stream issues collectives in program order, one at a
  // time, so the second (ready at 0) follows the first: T = 10 µs + 2 R + 10 µs, R the 1 MiB ring.
  const double combined = 6 * (1.5e-6 + 5.24288e-6);
  for (const char* model : {"analytical", "flow"}) {
    SCOPED_TRACE(model);
    const Outcome one = run(kTwoAllReduces, scenario_text(model));
    ASSERT_EQ(one.error, "");
    EXPECT_NEAR(one.summary.step_time_s, 20e-6 + combined, 1e-12);
    ASSERT_EQ(one.summary.algorithms.size(), 1U);
    EXPECT_EQ(one.summary.algorithms.front(), "all_reduce: ring (1)");
    const Outcome launched = run(kTwoAllReduces, scenario_text(model), 1, {"system.collective_launch_ns=7000"});
    EXPECT_NEAR(launched.summary.step_time_s, 27e-6 + combined, 1e-12);
    const Outcome two = run(kTwoAllReduces, scenario_text(model), 1, {"system.combine_threshold_bytes=0"});
    ASSERT_EQ(two.error, "");
    EXPECT_NEAR(two.summary.step_time_s, 20e-6 + 2 * kRingSeconds, 1e-12);
    EXPECT_EQ(two.summary.algorithms.front(), "all_reduce: ring (2)");
  }
}

// An all-reduce whose result goes round a ring by send/recv, and one over what arrives. The two
// all-reduces look independent in the graph, but the second waits (through the other ranks'
// sends) for the first: combining them would deadlock, so programs with send/recv do not combine.
const char* kSendRecvRing = R"(
module @test attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%x: tensor<16xf32>) -> tensor<16xf32> {
    %a1 = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) {channel_handle = #stablehlo.channel_handle<handle = 7, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids} : (tensor<16xf32>) -> tensor<16xf32>
    %t = stablehlo.create_token : !stablehlo.token
    %snd = "stablehlo.send"(%a1, %t) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, is_host_transfer = false, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>} : (tensor<16xf32>, !stablehlo.token) -> !stablehlo.token
    %r:2 = "stablehlo.recv"(%t) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, is_host_transfer = false, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>} : (!stablehlo.token) -> (tensor<16xf32>, !stablehlo.token)
    %a2 = "stablehlo.all_reduce"(%r#0) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) {channel_handle = #stablehlo.channel_handle<handle = 7, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids} : (tensor<16xf32>) -> tensor<16xf32>
    return %a2 : tensor<16xf32>
  }
}
)";

TEST(Simulation, ProgramsWithSendAndRecvDoNotCombineCollectives) {
  const Outcome combined = run(kSendRecvRing, scenario_text("analytical"));
  ASSERT_EQ(combined.error, "");
  const Outcome apart = run(kSendRecvRing, scenario_text("analytical"), 1, {"system.combine_threshold_bytes=0"});
  ASSERT_EQ(apart.error, "");
  EXPECT_EQ(combined.summary.step_time_s, apart.summary.step_time_s);
  EXPECT_EQ(combined.summary.algorithms, apart.summary.algorithms);
}

TEST(Simulation, IndependentComputeOverlapsTheCollective) {
  // add [0,10]; all-reduce [10, 10+R]; multiply (independent) [10, 20] overlaps it;
  // the final add waits for the all-reduce: T = 10 + R + 10; exposed = R - 10 µs.
  const Outcome outcome = run(kOverlap, scenario_text("analytical"));
  ASSERT_EQ(outcome.error, "");
  EXPECT_NEAR(outcome.summary.step_time_s, 20e-6 + kRingSeconds, 1e-12);
  EXPECT_NEAR(outcome.summary.compute_s.mean, 30e-6, 1e-12);
  EXPECT_NEAR(outcome.summary.exposed_comm_s.mean, kRingSeconds - 10e-6, 1e-12);
}

// Two independent 1 MiB all-reduces on different device groups: the first (over all 4) waits
// for two adds, the second (over pairs) only for the step's arguments.
const std::string kTwoGroups = two_argument_module(
    "    %0 = stablehlo.add %arg0, %arg0 : tensor<262144xf32>\n"
    "    %1 = stablehlo.add %0, %0 : tensor<262144xf32>\n" +
        all_reduce("%2", "%1") + all_reduce("%3", "%arg1", "dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>") +
        "    %4 = stablehlo.multiply %2, %3 : tensor<262144xf32>\n",
    "%4");

TEST(Simulation, PerGroupQueuesLetACollectiveOvertakeAnotherGroupsWaitingOne) {
  // R4: the 1 MiB ring over 4 (kRingSeconds); R2: over 2, 2 steps of 1.5 µs + 524288 B / 1e11 B/s.
  // single (one queue in program order): the pairs' all-reduce, ready at 0, waits behind the
  //   all-reduce over 4, which waits for the adds: T = 20 µs + R4 + R2 + 10 µs.
  // per_group: it runs at once, [0, R2], done before the adds end (R2 = 13.5 µs < 20 µs):
  //   T = 20 µs + R4 + 10 µs, the same on 1 and 2 processes.
  const double r2 = 2 * (1.5e-6 + 5.24288e-6);
  for (const char* model : {"analytical", "flow"}) {
    SCOPED_TRACE(model);
    const Outcome single = run(kTwoGroups, scenario_text(model));
    ASSERT_EQ(single.error, "");
    EXPECT_NEAR(single.summary.step_time_s, 30e-6 + kRingSeconds + r2, 1e-12);
    for (const std::uint32_t processes : {1U, 2U}) {
      const Outcome queued =
          run(kTwoGroups, scenario_text(model), processes, {"system.comm_queues=per_group"});
      ASSERT_EQ(queued.error, "");
      EXPECT_NEAR(queued.summary.step_time_s, 30e-6 + kRingSeconds, 1e-12);
      EXPECT_NEAR(queued.summary.comm_s.mean, r2 + kRingSeconds, 1e-12);
      EXPECT_NEAR(queued.summary.exposed_comm_s.mean, kRingSeconds, 1e-12);
    }
    // Two streams on the one queue do not lift the program order: the pairs' all-reduce still
    // issues with the other at 20 µs, and they share the links, so the step is longer than per_group's.
    const Outcome two = run(kTwoGroups, scenario_text(model), 1, {"system.comm_streams=2"});
    ASSERT_EQ(two.error, "");
    EXPECT_GT(two.summary.step_time_s, 30e-6 + kRingSeconds + 1e-6);
    EXPECT_LT(two.summary.step_time_s, 30e-6 + kRingSeconds + r2);
  }
}

TEST(Simulation, IdenticalForOneTwoAndFourProcesses) {
  // Also with in-switch reductions, whose legs queue on per-member link state.
  const std::vector<std::string> in_switch = {"system.scale_up.in_switch_reduction=true",
                                              "system.collectives.all_reduce=in_switch", "system.comm_streams=2"};
  for (const char* model : {"analytical", "flow"}) {
    for (const bool with_switch : {false, true}) {
      std::vector<std::string> overrides = {"workload.steps=3", "system.chunks=4"};
      if (with_switch) {
        overrides.insert(overrides.end(), in_switch.begin(), in_switch.end());
      }
      const Outcome one = run(kOverlap, scenario_text(model), 1, overrides);
      ASSERT_EQ(one.error, "");
      for (const std::uint32_t processes : {2U, 4U}) {
        for (const char* partition : {"auto", "round-robin"}) {
          std::vector<std::string> with_partition = overrides;
          with_partition.push_back(std::string("simulation.partition=") + partition);
          const Outcome many = run(kOverlap, scenario_text(model), processes, with_partition);
          ASSERT_EQ(many.error, "");
          EXPECT_EQ(many.summary.step_end_s, one.summary.step_end_s)
              << model << " " << processes << " " << partition << (with_switch ? " in_switch" : "");
          EXPECT_EQ(many.summary.transfers, one.summary.transfers);
          EXPECT_EQ(many.summary.engine.processes.size(), processes);
        }
      }
    }
  }
}

TEST(Simulation, SeveralStepsReportFirstAndSteadyState) {
  // Nothing carries over between steps here, so every step takes the same time.
  const Outcome outcome = run(kAllReduce, scenario_text("analytical"), 1, {"workload.steps=4"});
  ASSERT_EQ(outcome.error, "");
  ASSERT_EQ(outcome.summary.step_end_s.size(), 4U);
  EXPECT_NEAR(outcome.summary.first_step_s, 20e-6 + kRingSeconds, 1e-12);
  EXPECT_NEAR(outcome.summary.steady_step_s, 20e-6 + kRingSeconds, 1e-12);
}

TEST(Simulation, ChunkingPipelinesButNeverBeatsTheBandwidthBound) {
  // Every all-reduce algorithm moves at least 2(p-1)/p * n bytes through each member's link
  // (Patarasuk and Yuan 2009): 2 * 3/4 * 1 MiB at 100 GB/s = 15.73 us. Chunks pipeline the steps
  // (the analytical model queues a member's chunks on its link; the flow model shares the link),
  // so they may hide latency but never that term. An in-switch reduction moves n up and n down
  // (full duplex): at least n/B = 10.49 us, and with one chunk exactly 2 legs of
  // injection + latency/2 + n/B.
  const double bandwidth_bound = 2 * 0.75 * 1048576 / 1e11;
  for (const char* model : {"analytical", "flow"}) {
    for (const char* algorithm : {"ring", "halving_doubling", "direct", "tree"}) {
      double unchunked = 0;
      for (const char* chunks : {"1", "4", "16"}) {
        SCOPED_TRACE(std::string(model) + " " + algorithm + " chunks " + chunks);
        const Outcome outcome =
            run(kAllReduce, scenario_text(model),
                1, {std::string("system.collectives.all_reduce=") + algorithm, std::string("system.chunks=") + chunks});
        ASSERT_EQ(outcome.error, "");
        const double collective = outcome.summary.step_time_s - 20e-6;
        EXPECT_GE(collective, bandwidth_bound);
        if (std::string(chunks) == "1") {
          unchunked = collective;
        } else {
          EXPECT_LE(collective, unchunked + 1e-12);
        }
      }
    }
    for (const char* chunks : {"1", "4", "16"}) {
      SCOPED_TRACE(std::string(model) + " in_switch chunks " + chunks);
      const Outcome outcome =
          run(kAllReduce, scenario_text(model), 1,
              {"system.scale_up.in_switch_reduction=true", "system.collectives.all_reduce=in_switch",
               std::string("system.chunks=") + chunks});
      ASSERT_EQ(outcome.error, "");
      const double collective = outcome.summary.step_time_s - 20e-6;
      const double leg = 0.5e-6 + 0.5e-6 + 1048576 / 1e11;
      if (std::string(chunks) == "1") {
        EXPECT_NEAR(collective, 2 * leg, 1e-12);
      } else {
        EXPECT_GE(collective, 1048576 / 1e11);
        EXPECT_LT(collective, 2 * leg);
      }
    }
  }
}

TEST(Simulation, ChannelHandlesNeverShareATag) {
  // Stage a sends on channel H at once; stage b sends on channel 1 after two adds; stage c
  // receives on 1, adds, receives on H, adds. c's first add must wait for b (20 us), so the step
  // is at least 40 us. Handles 1 and 1 + 2^23 once shared a tag (the handle was cut to 23 bits),
  // and c's recv on 1 took a's message: the step came out 10 us shorter.
  auto step = [](std::int64_t handle) {
    const Outcome outcome = run_programs({{fmt::format(kSendAfterOneAdd, handle, "[[0, 0]]", 1), {0}},
                                          {fmt::format(kSendAfterTwoAdds, 1), {1}},
                                          {fmt::format(kRecvTwice, handle), {2}}},
                                         scenario_text("analytical"));
    EXPECT_EQ(outcome.error, "");
    return outcome.summary.step_time_s;
  };
  const double distinct = step(2);
  EXPECT_GE(distinct, 40e-6);
  EXPECT_EQ(step((1LL << 23) + 1), distinct);
  EXPECT_EQ(step((1LL << 40) + 2), distinct);
}

TEST(Simulation, APointToPointSenderMayRunMoreThanAThousandStepsAhead) {
  // Stages a and b send to c, which is ten times slower: c's steady step is its two adds (2 x
  // 100 µs, its data waiting for it), a's and b's are their adds plus a delivery, so after 2,000
  // steps they are over 1,700 steps ahead. Each message must still meet the recv of its own step
  // (a channel's messages arrive in order, and each recv takes the oldest).
  const double delivery = 0.5e-6 + 1e-6 + 64 / 1e11;
  for (const char* model : {"analytical", "flow"}) {
    for (const std::uint32_t processes : {1U, 2U}) {
      SCOPED_TRACE(std::string(model) + " np=" + std::to_string(processes));
      const Outcome outcome = run_programs({{fmt::format(kSendAfterOneAdd, 2, "[[0, 0]]", 1), {0}},
                                            {fmt::format(kSendAfterTwoAdds, 1), {1}},
                                            {fmt::format(kRecvTwice, 2), {2}}},
                                           scenario_text(model), processes,
                                           {"workload.steps=2000", "system.stragglers=[{rank: 2, slowdown_percent: 900}]"});
      ASSERT_EQ(outcome.error, "");
      EXPECT_NEAR(outcome.summary.first_step_s, 20e-6 + delivery + 200e-6, 1e-12);
      EXPECT_NEAR(outcome.summary.step_time_s, 200e-6, 1e-12);
    }
  }
}

TEST(Simulation, PointToPointChannelsConnectOneSenderAndOneReceiver) {
  const std::string send5 = fmt::format(kSendAfterOneAdd, 5, "[[0, 0]]", 1);
  const std::string recv = fmt::format(kRecvTwice, 5);
  const Outcome two_senders = run_programs({{send5, {0}}, {send5, {1}}, {recv, {2}}}, scenario_text("analytical"));
  EXPECT_NE(two_senders.error.find("channel 5: workload.programs[0] (stage0.mlir) and workload.programs[1] "
                                   "(stage1.mlir) both send on it"),
            std::string::npos)
      << two_senders.error;
  // One send cannot fan a device out to two targets: the second pair would be dropped.
  const Outcome fan = run_programs({{fmt::format(kSendAfterOneAdd, 5, "[[0, 0], [0, 0]]", 2), {0}},
                                    {fmt::format(kSendAfterTwoAdds, 1), {1}},
                                    {recv, {2}}},
                                   scenario_text("analytical"));
  EXPECT_NE(fan.error.find("stablehlo.send: device 0 is the source of two pairs in source_target_pairs"),
            std::string::npos)
      << fan.error;
}

TEST(Simulation, AStragglerSlowsTheCollective) {
  // Rank 2's ops take 100% longer, so it joins the ring at 20 µs, the others at 10 µs. In a ring a
  // member enters step s+1 when it has entered step s, the step-s message from its predecessor
  // has arrived and its own step-s message has been delivered: E[r][s+1] = max(E[r][s], A[r-1][s],
  // A[r][s]). A member sends as it enters a step, and its sends leave its link one after the
  // other (the analytical model): the step-s send enters the network at E[r][s] + injection,
  // starts when the link is free, occupies it for T = (n/p)/B and arrives after the path latency.
  // Rank r finishes the all-reduce at E[r][6], then runs its multiply.
  const double injection = 0.5e-6;
  const double latency = 1e-6;
  const double occupancy = 2.62144e-6;
  ASSERT_NEAR(injection + latency + occupancy, kRingSeconds / 6, 1e-15);
  double entered[4][7];
  double link_free[4] = {0, 0, 0, 0};
  for (int r = 0; r < 4; ++r) {
    entered[r][0] = r == 2 ? 20e-6 : 10e-6;
  }
  for (int step = 0; step < 6; ++step) {
    double arrival[4];
    for (int r = 0; r < 4; ++r) {
      const double start = std::max(entered[r][step] + injection, link_free[r]);
      link_free[r] = start + occupancy;
      arrival[r] = start + occupancy + latency;
    }
    for (int r = 0; r < 4; ++r) {
      entered[r][step + 1] = std::max({entered[r][step], arrival[(r + 3) % 4], arrival[r]});
    }
  }
  double expected = 0;
  for (int r = 0; r < 4; ++r) {
    expected = std::max(expected, entered[r][6] + (r == 2 ? 20e-6 : 10e-6));
  }
  const Outcome outcome = run(kAllReduce, scenario_text("analytical"), 1,
                              {"system.stragglers=[{rank: 2, slowdown_percent: 100}]"});
  ASSERT_EQ(outcome.error, "");
  EXPECT_NEAR(outcome.summary.step_time_s, expected, 1e-12);
  EXPECT_GT(outcome.summary.step_time_s, 20e-6 + kRingSeconds);
  EXPECT_NEAR(outcome.summary.compute_s.max, 40e-6, 1e-12);
  EXPECT_NEAR(outcome.summary.compute_s.min, 20e-6, 1e-12);
}

TEST(Simulation, JitterIsSeededAndDeterministic) {
  const Outcome a = run(kAllReduce, scenario_text("analytical"), 1, {"system.jitter_cv=0.2"});
  const Outcome b = run(kAllReduce, scenario_text("analytical"), 2, {"system.jitter_cv=0.2"});
  const Outcome c = run(kAllReduce, scenario_text("analytical"), 1, {"system.jitter_cv=0.2", "simulation.seed=9"});
  ASSERT_EQ(a.error, "");
  EXPECT_EQ(a.summary.step_time_s, b.summary.step_time_s);
  EXPECT_NE(a.summary.step_time_s, c.summary.step_time_s);
  EXPECT_NE(a.summary.step_time_s, 20e-6 + kRingSeconds);
}

TEST(Simulation, WithJitterComputeExposedAndIdleBoundTheStep) {
  // Per rank, idle = steady step - compute - exposed over the measured steps, floored at 0. With
  // jitter a rank ends each step at its own time and starts the next then, so its measured steps
  // can hold more work than the measured span by up to its lead over the slowest rank at the end
  // of step 1 (less than the first step): the three then add up to more than the step, never less.
  for (const char* seed : {"1", "2", "3", "4", "5"}) {
    SCOPED_TRACE(std::string("seed ") + seed);
    const Outcome outcome = run(kAllReduce, scenario_text("analytical"), 1,
                                {"system.jitter_cv=0.3", "workload.steps=6", std::string("simulation.seed=") + seed});
    ASSERT_EQ(outcome.error, "");
    const RunSummary& s = outcome.summary;
    const double sum = s.compute_s.mean + s.exposed_comm_s.mean + s.idle_s.mean;
    EXPECT_GE(sum, s.step_time_s * (1 - 1e-12));
    EXPECT_LE(sum, s.step_time_s + s.first_step_s / 5);
    EXPECT_GE(s.idle_s.min, 0.0);
  }
  // Without jitter every rank's steps are the slowest rank's: the three make the step exactly.
  const Outcome steady = run(kAllReduce, scenario_text("analytical"), 1, {"workload.steps=6"});
  ASSERT_EQ(steady.error, "");
  const RunSummary& s = steady.summary;
  EXPECT_NEAR(s.compute_s.mean + s.exposed_comm_s.mean + s.idle_s.mean, s.step_time_s, 1e-15);
}

// A one-way permute (0 -> 1, 2 -> 3) of 1 MiB, then an add on every rank.
constexpr const char* kOneWay = R"(
module @test attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<262144xf32>) -> tensor<262144xf32> {
    %0 = "stablehlo.collective_permute"(%arg0) {source_target_pairs = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (tensor<262144xf32>) -> tensor<262144xf32>
    %1 = stablehlo.add %0, %0 : tensor<262144xf32>
    return %1 : tensor<262144xf32>
  }
}
)";

TEST(Simulation, ASenderFinishesWhenItsDataIsDelivered) {
  // A one-way permute (0 -> 1, 2 -> 3) of 1 MiB, then a 10 µs add on every rank. A sender's
  // permute ends when its data is delivered (0.5 µs injection + 1 µs latency + 1 MiB at 100 GB/s),
  // not when it hands the data over: otherwise it starts its next step's send while the previous
  // one is still on the link, and under the flow model the two share it, so every step's data
  // arrives late and the steps seem to overlap (a steady step of 0 was reported).
  const double step = 0.5e-6 + 1e-6 + 1048576.0 / 1e11 + 10e-6;
  for (const char* model : {"analytical", "flow"}) {
    for (const std::uint32_t processes : {1U, 2U}) {
      SCOPED_TRACE(std::string(model) + " np=" + std::to_string(processes));
      const Outcome outcome = run(kOneWay, scenario_text(model), processes, {"workload.steps=3"});
      ASSERT_EQ(outcome.error, "");
      EXPECT_NEAR(outcome.summary.first_step_s, step, 1e-12);
      EXPECT_NEAR(outcome.summary.step_time_s, step, 1e-12);
      // The senders' communication lasts until the delivery, as the receivers' does.
      EXPECT_NEAR(outcome.summary.comm_s.min, step - 10e-6, 1e-12);
    }
  }
}

// A 1 MiB all-to-all over the 4 replicas, then an add on every rank.
constexpr const char* kAllToAll = R"(
module @test attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<262144xf32>) -> tensor<262144xf32> {
    %0 = "stablehlo.all_to_all"(%arg0) {split_dimension = 0 : i64, concat_dimension = 0 : i64, split_count = 4 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<262144xf32>) -> tensor<262144xf32>
    %1 = stablehlo.add %0, %0 : tensor<262144xf32>
    return %1 : tensor<262144xf32>
  }
}
)";

TEST(Simulation, PermutesAndAllToAllsTakeThePointToPointLaunchCost) {
  // XLA runs collective_permute and all_to_all as NCCL sends and recvs: they pay
  // system.p2p_launch_ns (3 µs here) before their first transfer and not collective_launch_ns
  // (7 µs), which the all-reduce pays and the point-to-point cost leaves alone. Closed forms for
  // the permute (kOneWay: the launch, then the delivery of 1 MiB, then the add) and the
  // all-reduce; the all-to-all's step grows by the launch cost exactly.
  const std::vector<std::string> both = {"system.p2p_launch_ns=3000", "system.collective_launch_ns=7000"};
  const double delivery = 0.5e-6 + 1e-6 + 1048576.0 / 1e11;
  for (const char* model : {"analytical", "flow"}) {
    for (const std::uint32_t processes : {1U, 2U}) {
      SCOPED_TRACE(std::string(model) + " np=" + std::to_string(processes));
      const Outcome permute = run(kOneWay, scenario_text(model), processes, both);
      ASSERT_EQ(permute.error, "");
      EXPECT_NEAR(permute.summary.step_time_s, 3e-6 + delivery + 10e-6, 1e-12);
      EXPECT_NEAR(permute.summary.comm_s.min, 3e-6 + delivery, 1e-12);  // the launch counts as communication
      const Outcome collective_only = run(kOneWay, scenario_text(model), processes, {"system.collective_launch_ns=7000"});
      ASSERT_EQ(collective_only.error, "");
      EXPECT_NEAR(collective_only.summary.step_time_s, delivery + 10e-6, 1e-12);

      const Outcome all_reduce = run(kAllReduce, scenario_text(model), processes, both);
      ASSERT_EQ(all_reduce.error, "");
      EXPECT_NEAR(all_reduce.summary.step_time_s, 20e-6 + 7e-6 + kRingSeconds, 1e-12);
      const Outcome all_reduce_p2p = run(kAllReduce, scenario_text(model), processes, {"system.p2p_launch_ns=3000"});
      EXPECT_NEAR(all_reduce_p2p.summary.step_time_s, 20e-6 + kRingSeconds, 1e-12);

      const Outcome plain = run(kAllToAll, scenario_text(model), processes);
      const Outcome launched = run(kAllToAll, scenario_text(model), processes, both);
      ASSERT_EQ(plain.error, "");
      ASSERT_EQ(launched.error, "");
      EXPECT_NEAR(launched.summary.step_time_s - plain.summary.step_time_s, 3e-6, 1e-12);
      EXPECT_EQ(launched.summary.transfers, plain.summary.transfers);
    }
  }
}

// A one-way permute 0 -> 1 of 1 MiB: devices 2 and 3 are in no pair.
constexpr const char* kOnePair = R"(
module @test attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<262144xf32>) -> tensor<262144xf32> {
    %0 = "stablehlo.collective_permute"(%arg0) {source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<262144xf32>) -> tensor<262144xf32>
    %1 = stablehlo.add %0, %0 : tensor<262144xf32>
    return %1 : tensor<262144xf32>
  }
}
)";

TEST(Simulation, ADeviceInNoPairOfAPermuteLaunchesNothing) {
  // XLA's permute thunk starts no NCCL sends or recvs on a device with no peer (it zeroes its
  // output): devices 2 and 3 spend nothing on communication and end after their add, while
  // devices 0 and 1 pay the 3 µs launch before the delivery.
  const double delivery = 0.5e-6 + 1e-6 + 1048576.0 / 1e11;
  for (const char* model : {"analytical", "flow"}) {
    for (const std::uint32_t processes : {1U, 2U}) {
      SCOPED_TRACE(std::string(model) + " np=" + std::to_string(processes));
      const Outcome outcome = run(kOnePair, scenario_text(model), processes, {"system.p2p_launch_ns=3000"});
      ASSERT_EQ(outcome.error, "");
      EXPECT_NEAR(outcome.summary.step_time_s, 3e-6 + delivery + 10e-6, 1e-12);
      EXPECT_EQ(outcome.summary.comm_s.min, 0.0);
      EXPECT_NEAR(outcome.summary.comm_s.max, 3e-6 + delivery, 1e-12);
      EXPECT_NEAR(outcome.summary.comm_s.mean, (3e-6 + delivery) / 2, 1e-12);
    }
  }
}

TEST(Simulation, ASenderMayRunMoreThanAThousandStepsAhead) {
  // The one-way permute again, with the receivers ten times slower: a sender's step is its
  // delivery plus 10 µs, a receiver's 100 µs once its data waits for it, so after 2,000 steps the
  // senders are over 1,500 steps ahead. Every step's data must still reach its own step (message
  // tags carry the whole training step, not a residue that repeats).
  const double delivery = 0.5e-6 + 1e-6 + 1048576.0 / 1e11;
  for (const char* model : {"analytical", "flow"}) {
    for (const std::uint32_t processes : {1U, 2U}) {
      SCOPED_TRACE(std::string(model) + " np=" + std::to_string(processes));
      const Outcome outcome =
          run(kOneWay, scenario_text(model), processes,
              {"workload.steps=2000",
               "system.stragglers=[{rank: 1, slowdown_percent: 900}, {rank: 3, slowdown_percent: 900}]"});
      ASSERT_EQ(outcome.error, "");
      EXPECT_NEAR(outcome.summary.first_step_s, delivery + 100e-6, 1e-12);
      EXPECT_NEAR(outcome.summary.step_time_s, 100e-6, 1e-12);
      // The senders' communication is their deliveries alone (they never wait for a receiver);
      // a receiver's data is there before it asks for it.
      EXPECT_NEAR(outcome.summary.comm_s.max, delivery, 1e-12);
      EXPECT_EQ(outcome.summary.comm_s.min, 0.0);
      EXPECT_NEAR(outcome.summary.compute_s.min, 10e-6, 1e-12);
      EXPECT_NEAR(outcome.summary.compute_s.max, 100e-6, 1e-12);
    }
  }
}

TEST(Simulation, RanksMustMatchTheProgramsDevices) {
  const Outcome outcome = run(kAllReduce, scenario_text("analytical"), 2, {}, {0, 1});
  EXPECT_NE(outcome.error.find("test.mlir runs on 4 devices (num_replicas 4 x num_partitions 1) but is given 2 ranks (0-1)"),
            std::string::npos)
      << outcome.error;
}

TEST(Simulation, TooFewDevicesInTheSystem) {
  const Outcome outcome = run(kAllReduce, scenario_text("analytical"), 1, {"system.devices_per_node=2"});
  EXPECT_NE(outcome.error.find("needs 4 ranks"), std::string::npos) << outcome.error;
}

std::string unmatched_recv_module();

TEST(Simulation, ADataParallelProgramRescalesToMoreReplicas) {
  // The 4-replica program on 8 replicas (two nodes of 4, no fabric bottleneck: one node of 8 here):
  // ring all-reduce with p = 8: 2(p-1) hops of 0.5 µs + 1 µs + (n/8)/B.
  const double ring8 = 14 * (0.5e-6 + 1e-6 + 131072.0 / 1e11);
  const Outcome outcome = run(kAllReduce, scenario_text("analytical"), 2, {"system.devices_per_node=8"},
                              {0, 1, 2, 3, 4, 5, 6, 7}, 8);
  ASSERT_EQ(outcome.error, "");
  EXPECT_EQ(outcome.summary.ranks, 8U);
  EXPECT_NEAR(outcome.summary.step_time_s, 20e-6 + ring8, 1e-12);
}

TEST(Simulation, OnlyDataParallelProgramsRescale) {
  const Outcome outcome = run(unmatched_recv_module(), scenario_text("analytical"), 1, {"system.devices_per_node=8"},
                              {0, 1, 2, 3, 4, 5, 6, 7}, 8);
  EXPECT_NE(outcome.error.find("replicas can rescale only data-parallel programs (num_partitions 1)"), std::string::npos)
      << outcome.error;
}

// A recv that no send satisfies: the run must end with the blocked ranks named, not hang.
const char* kUnmatchedRecvText = R"(
module @test attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16xf32>) -> tensor<16xf32> {
    %t = stablehlo.create_token : !stablehlo.token
    %s = "stablehlo.send"(%arg0, %t) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, is_host_transfer = false, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>} : (tensor<16xf32>, !stablehlo.token) -> !stablehlo.token
    %r:2 = "stablehlo.recv"(%s) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, is_host_transfer = false, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>} : (!stablehlo.token) -> (tensor<16xf32>, !stablehlo.token)
    %r2:2 = "stablehlo.recv"(%r#1) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, is_host_transfer = false, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>} : (!stablehlo.token) -> (tensor<16xf32>, !stablehlo.token)
    %0 = stablehlo.add %r2#0, %arg0 : tensor<16xf32>
    return %0 : tensor<16xf32>
  }
}
)";

std::string unmatched_recv_module() { return kUnmatchedRecvText; }

TEST(Simulation, ADeadlockNamesTheBlockedRanks) {
  for (const std::uint32_t processes : {1U, 2U}) {
    const Outcome outcome = run(kUnmatchedRecvText, scenario_text("analytical"), processes);
    EXPECT_NE(outcome.error.find("deadlock: no events are left but 4 of 4 ranks have not finished"), std::string::npos)
        << outcome.error;
    EXPECT_NE(outcome.error.find("waits for the data of test.mlir:7:"), std::string::npos) << outcome.error;
  }
}

// `two` (two processes) split its ranks over both and summarised the same run as `one` (one).
void expect_same_run_on_two_processes(const Outcome& one, const Outcome& two) {
  EXPECT_EQ(two.summary.partition.find("cut channels 0 of"), std::string::npos) << two.summary.partition;
  EXPECT_EQ(two.summary.first_step_s, one.summary.first_step_s);
  EXPECT_EQ(two.summary.step_time_s, one.summary.step_time_s);
  EXPECT_EQ(two.summary.comm_s.min, one.summary.comm_s.min);
  EXPECT_EQ(two.summary.comm_s.max, one.summary.comm_s.max);
  EXPECT_EQ(two.summary.exposed_comm_s.mean, one.summary.exposed_comm_s.mean);
  EXPECT_EQ(two.summary.transfers, one.summary.transfers);
}

namespace rendezvous {

// Rendezvous: a point-to-point send larger than system.p2p_eager_bytes moves its first
// p2p_eager_bytes at once and the rest once the receiver has posted its recv and the notice has
// come back (0.5 µs injection + 1 µs latency). The stages are those of ChannelHandlesNeverShareATag:
// a adds (10 µs) and sends 64 B on channel 2; b adds twice and sends 64 B on channel 1; c receives
// on 1, adds, receives on 2, adds.
constexpr double kNotice = 0.5e-6 + 1e-6;

Outcome stages_on(const std::string& scenario, std::uint32_t processes, const std::vector<std::string>& overrides) {
  return run_programs({{fmt::format(kSendAfterOneAdd, 2, "[[0, 0]]", 1), {0}},
                       {fmt::format(kSendAfterTwoAdds, 1), {1}},
                       {fmt::format(kRecvTwice, 2), {2}}},
                      scenario, processes, overrides);
}
Outcome stages(const char* model, std::uint32_t processes, const std::vector<std::string>& overrides) {
  return stages_on(scenario_text(model), processes, overrides);
}

TEST(Simulation, ASendLargerThanTheEagerLimitWaitsForItsReceiver) {
  // c posts its recv on 1 at 0, so b's notice is there before b sends: b's 64 B go whole at 20 µs
  // and arrive at d = 20 µs + 1.5 µs + 64 B / 100 GB/s. c posts its recv on 2 then; a sent its
  // 16-byte head at 10 µs and waits for the notice (d + 1.5 µs) to send its 48-byte tail, which
  // arrives at d + 3 µs + 48 B / 100 GB/s. c's adds run from d to d + 20 µs either way.
  const double d = 20e-6 + kNotice + 64 / 1e11;
  const double tail = d + 2 * kNotice + 48 / 1e11;
  for (const char* model : {"analytical", "flow"}) {
    for (const std::uint32_t processes : {1U, 2U}) {
      SCOPED_TRACE(std::string(model) + " np=" + std::to_string(processes));
      const Outcome held = stages(model, processes, {"system.p2p_eager_bytes=16"});
      ASSERT_EQ(held.error, "");
      EXPECT_NEAR(held.summary.first_step_s, d + 20e-6, 1e-12);
      // Communication: a from its send to the tail's delivery; b its own delivery; c from 0
      // until the tail is in.
      EXPECT_NEAR(held.summary.comm_s.min, d - 20e-6, 1e-12);
      EXPECT_NEAR(held.summary.comm_s.max, tail, 1e-12);
      EXPECT_NEAR(held.summary.comm_s.mean, ((tail - 10e-6) + (d - 20e-6) + tail) / 3, 1e-12);
      EXPECT_EQ(held.summary.transfers, 3U);  // a's head and tail, b's whole message

      // Under the default limit (4 MiB) every message goes whole at once: a's send is done at its
      // delivery and c's recv on 2 finds the data there.
      const Outcome eager = stages(model, processes, {});
      ASSERT_EQ(eager.error, "");
      EXPECT_NEAR(eager.summary.first_step_s, d + 20e-6, 1e-12);
      EXPECT_NEAR(eager.summary.comm_s.max, d, 1e-12);
      EXPECT_NEAR(eager.summary.comm_s.mean, ((d - 20e-6) + (d - 20e-6) + d) / 3, 1e-12);
      EXPECT_EQ(eager.summary.transfers, 2U);
    }
  }
}

TEST(Simulation, SendsAndRecvsStartAfterThePointToPointLaunchCost) {
  // The stages with system.p2p_launch_ns = L = 3 µs (default limit): b's send starts at 20 µs + L
  // and arrives at d + L. c's first recv, launched at L, completes then; its second recv (which
  // waits for the first's token only) is launched under c's first add and finds a's data there.
  // Step: d + L + 20 µs. Communication: c from 0 to d + L and the second recv's launch; a and b
  // from their send to its delivery. collective_launch_ns does not touch them.
  const double d = 20e-6 + kNotice + 64 / 1e11;
  const double launch = 3e-6;
  for (const char* model : {"analytical", "flow"}) {
    for (const std::uint32_t processes : {1U, 2U}) {
      SCOPED_TRACE(std::string(model) + " np=" + std::to_string(processes));
      const Outcome launched = stages(model, processes, {"system.p2p_launch_ns=3000", "system.collective_launch_ns=7000"});
      ASSERT_EQ(launched.error, "");
      EXPECT_NEAR(launched.summary.first_step_s, d + launch + 20e-6, 1e-12);
      EXPECT_NEAR(launched.summary.comm_s.max, d + 2 * launch, 1e-12);
      EXPECT_NEAR(launched.summary.comm_s.min, d - 20e-6 + launch, 1e-12);
      EXPECT_EQ(launched.summary.transfers, 2U);
      const Outcome collective_only = stages(model, processes, {"system.collective_launch_ns=7000"});
      ASSERT_EQ(collective_only.error, "");
      EXPECT_NEAR(collective_only.summary.first_step_s, d + 20e-6, 1e-12);
    }
  }
}

TEST(Simulation, ASenderCannotRunAheadOfItsReceiverBeyondTheEagerLimit) {
  // The stages again over 20 steps with c ten times slower (adds of 100 µs). Under the default
  // limit a and b run ahead and c's steady step is its two adds (200 µs). With a 16-byte limit
  // every message waits for its recv: c posts its recv on 1 as its step starts and waits for b's
  // tail (2 notices' worth of latency plus 48 B) before its first add; a's tail comes in under c's
  // first add. So c's step is 3 µs + 48 B / 100 GB/s + 200 µs, and a and b wait for c in their
  // sends instead of running ahead of it.
  const double wait = 2 * kNotice + 48 / 1e11;
  for (const char* model : {"analytical", "flow"}) {
    for (const std::uint32_t processes : {1U, 2U}) {
      SCOPED_TRACE(std::string(model) + " np=" + std::to_string(processes));
      const std::vector<std::string> slow_c = {"workload.steps=20", "system.stragglers=[{rank: 2, slowdown_percent: 900}]"};
      const Outcome eager = stages(model, processes, slow_c);
      ASSERT_EQ(eager.error, "");
      EXPECT_NEAR(eager.summary.step_time_s, 200e-6, 1e-12);
      EXPECT_LT(eager.summary.comm_s.min, 2e-6);  // b: its delivery alone

      std::vector<std::string> held_overrides = slow_c;
      held_overrides.emplace_back("system.p2p_eager_bytes=16");
      const Outcome held = stages(model, processes, held_overrides);
      ASSERT_EQ(held.error, "");
      EXPECT_NEAR(held.summary.step_time_s, 200e-6 + wait, 1e-12);
      // a: 10 µs of adds per step, the rest in its send, waiting for c; c: its two recvs' waits,
      // the second under its first add.
      EXPECT_NEAR(held.summary.comm_s.max, 200e-6 + wait - 10e-6, 1e-12);
      EXPECT_NEAR(held.summary.comm_s.min, 2 * wait, 1e-12);
      EXPECT_NEAR(held.summary.compute_s.min, 10e-6, 1e-12);
    }
  }
}

TEST(Simulation, RendezvousAcrossProcessesGivesTheSameRunAsInOne) {
  // The stages on three one-device nodes of a fat-tree, split over two processes (block and
  // round-robin), so clear-to-send notices cross processes: the summary is the one of a single
  // process, with a 16-byte limit or the default, c slow or not.
  const std::string scenario =
      "hardware: A100_40GB\n"
      "system: {devices_per_node: 1, endpoint_delay_ns: 500}\n"
      "network: {topology: {kind: fat_tree, k: 4, levels: 2}}\n";
  for (const char* model : {"analytical", "flow"}) {
    for (const char* limit : {"16", "4194304"}) {
      for (const char* slowdown : {"0", "900"}) {
        const std::vector<std::string> common = {
            std::string("network.model=") + model, std::string("system.p2p_eager_bytes=") + limit, "workload.steps=8",
            fmt::format("system.stragglers=[{{rank: 2, slowdown_percent: {}}}]", slowdown)};
        const Outcome one = stages_on(scenario, 1, common);
        ASSERT_EQ(one.error, "");
        // auto: several programs, so each process runs a share of them (partition programs; the
        // topology partition would put this small fat-tree's three nodes on one process).
        for (const char* partition : {"block", "round-robin", "auto"}) {
          SCOPED_TRACE(fmt::format("{} limit={} slowdown={} {}", model, limit, slowdown, partition));
          std::vector<std::string> overrides = common;
          overrides.push_back(std::string("simulation.partition=") + partition);
          const Outcome two = stages_on(scenario, 2, overrides);
          ASSERT_EQ(two.error, "");
          expect_same_run_on_two_processes(one, two);
          if (std::string(partition) == "auto") {
            EXPECT_TRUE(two.summary.partition.starts_with("partition programs:")) << two.summary.partition;
          }
        }
      }
    }
  }
}

// Each of two devices sends 64 B to the other and receives {0} floats; the recv takes token {1}:
// %s (it follows the send) or %t (it does not wait for the send).
constexpr const char* kSendThenRecv = R"(
module @swap attributes {{mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func public @main(%arg0: tensor<16xf32>) -> tensor<16xf32> {{
    %0 = stablehlo.add %arg0, %arg0 : tensor<16xf32>
    %t = stablehlo.create_token : !stablehlo.token
    %s = "stablehlo.send"(%0, %t) {{channel_handle = #stablehlo.channel_handle<handle = 7, type = 1>, is_host_transfer = false, source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>}} : (tensor<16xf32>, !stablehlo.token) -> !stablehlo.token
    %r:2 = "stablehlo.recv"({1}) {{channel_handle = #stablehlo.channel_handle<handle = 7, type = 1>, is_host_transfer = false, source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>}} : (!stablehlo.token) -> (tensor<{0}xf32>, !stablehlo.token)
    return %0 : tensor<16xf32>
  }}
}}
)";

TEST(Simulation, SendsThatBothWaitForTheirReceiversAreADeadlock) {
  // Under the default limit both sends go at once and the step is the add plus one delivery. With
  // a 16-byte limit each send waits for a recv that only follows it: NCCL hangs there; the run
  // ends naming the ranks, the send and what it waits for.
  const std::string module = fmt::format(kSendThenRecv, 16, "%s");
  for (const std::uint32_t processes : {1U, 2U}) {
    SCOPED_TRACE(processes);
    const Outcome eager = run(module, scenario_text("analytical"), processes, {}, {0, 1});
    ASSERT_EQ(eager.error, "");
    EXPECT_NEAR(eager.summary.step_time_s, 10e-6 + kNotice + 64 / 1e11, 1e-12);
    const Outcome held = run(module, scenario_text("analytical"), processes, {"system.p2p_eager_bytes=16"}, {0, 1});
    EXPECT_NE(held.error.find("deadlock: no events are left but 2 of 2 ranks have not finished"), std::string::npos)
        << held.error;
    EXPECT_NE(held.error.find("rank 0 (test.mlir device 0), step 1: waits to send the rest of test.mlir:6:"),
              std::string::npos)
        << held.error;
    EXPECT_NE(held.error.find("(64 bytes on channel 7) until rank 1 posts the matching recv (only "
                              "system.p2p_eager_bytes = 16 of a send move before that)"),
              std::string::npos)
        << held.error;
  }
}

TEST(Simulation, APointToPointMessageOfTheWrongSizeIsAnError) {
  // Each device sends 64 B but its peer's recv, posted at once, takes 8 floats (32 B). Whether
  // the message goes whole (the default limit; or 16, as the recv's notice is there before the
  // send), or its head alone already exceeds the recv (40), the run ends naming the channel, the
  // recv, both ranks and both sizes.
  const std::string module = fmt::format(kSendThenRecv, 8, "%t");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"system.p2p_eager_bytes=4194304", "sends 64 bytes"},
      {"system.p2p_eager_bytes=16", "sends 64 bytes"},
      {"system.p2p_eager_bytes=40", "sends more than 40 bytes"}};
  for (const auto& [limit, sent] : cases) {
    for (const char* model : {"analytical", "flow"}) {
      SCOPED_TRACE(limit + " " + model);
      const Outcome outcome = run(module, scenario_text(model), 1, {limit}, {0, 1});
      EXPECT_NE(outcome.error.find("channel 7: test.mlir:7:"), std::string::npos) << outcome.error;
      EXPECT_NE(outcome.error.find("receives 32 bytes, but the matching send on rank"), std::string::npos)
          << outcome.error;
      EXPECT_NE(outcome.error.find(sent + " (step 1)"), std::string::npos) << outcome.error;
    }
  }
}

}  // namespace rendezvous

namespace held_collectives {

// A permute's source and a broadcast's root wait for no data, so without a limit they run ahead of
// slow receivers (ASenderMayRunMoreThanAThousandStepsAhead). A send of more than
// system.p2p_eager_bytes to one peer moves that much at once and the rest once the peer has
// started the collective and its notice has come back (0.5 µs injection + 1 µs latency).
constexpr double kNotice = 0.5e-6 + 1e-6;
constexpr double kMiB = 1048576.0;

// Two 2-member broadcasts (roots 0 and 2) of 1 MiB, then an add on every rank: the same traffic
// as kOneWay's permute.
constexpr const char* kBroadcast = R"(
module @test attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<262144xf32>) -> tensor<262144xf32> {
    %0 = "stablehlo.collective_broadcast"(%arg0) {replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (tensor<262144xf32>) -> tensor<262144xf32>
    %1 = stablehlo.add %0, %0 : tensor<262144xf32>
    return %1 : tensor<262144xf32>
  }
}
)";

TEST(Simulation, AOneWaySenderIsHeldToItsReceiversPaceBeyondTheEagerLimit) {
  // kOneWay's permute and kBroadcast over 20 steps with the receivers (ranks 1 and 3) ten times
  // slower. A sender's head (the limit's worth) moves at once and comes in long before its
  // receiver asks for it; the tail leaves when the receiver has started the collective and its
  // notice is back, and arrives one more notice's worth (injection + latency) plus tail / 100 GB/s
  // later. So a receiver's step is its 100 µs add plus 3 µs plus the tail's transfer, and the
  // sender waits for it in its collective instead of running ahead. In the first step both start
  // at 0 and the tail queues behind the head: the whole 1 MiB arrives as if sent at once (with a
  // limit of 0 nothing moves before the notice, which comes at 1.5 µs).
  const double delivery = kNotice + kMiB / 1e11;
  for (const char* module : {kOneWay, kBroadcast}) {
    for (const char* model : {"analytical", "flow"}) {
      for (const std::uint32_t processes : {1U, 2U}) {
        for (const std::uint64_t limit : {262144ULL, 0ULL}) {
          SCOPED_TRACE(fmt::format("{} {} np={} limit={}", module == kOneWay ? "permute" : "broadcast", model,
                                   processes, limit));
          const double tail = (kMiB - static_cast<double>(limit)) / 1e11;
          const Outcome held = run(module, scenario_text(model), processes,
                                   {"workload.steps=20", fmt::format("system.p2p_eager_bytes={}", limit),
                                    "system.stragglers=[{rank: 1, slowdown_percent: 900}, {rank: 3, slowdown_percent: 900}]"});
          ASSERT_EQ(held.error, "");
          EXPECT_NEAR(held.summary.first_step_s, (limit > 0 ? 0.0 : kNotice) + delivery + 100e-6, 1e-12);
          EXPECT_NEAR(held.summary.step_time_s, 100e-6 + 2 * kNotice + tail, 1e-12);
          // The senders: 10 µs of add per step, the rest waiting in the collective; the receivers:
          // the notice's round trip and the tail.
          EXPECT_NEAR(held.summary.comm_s.max, 100e-6 + 2 * kNotice + tail - 10e-6, 1e-12);
          EXPECT_NEAR(held.summary.comm_s.min, 2 * kNotice + tail, 1e-12);
          EXPECT_NEAR(held.summary.compute_s.min, 10e-6, 1e-12);
          EXPECT_EQ(held.summary.transfers, (limit > 0 ? 2U : 1U) * 2 * 20);  // head and tail per sender and step
        }
        // Under the default limit (4 MiB) the senders run ahead: the receivers' steps are their adds.
        const Outcome eager = run(module, scenario_text(model), processes,
                                  {"workload.steps=20",
                                   "system.stragglers=[{rank: 1, slowdown_percent: 900}, {rank: 3, slowdown_percent: 900}]"});
        ASSERT_EQ(eager.error, "");
        EXPECT_NEAR(eager.summary.step_time_s, 100e-6, 1e-12);
        EXPECT_EQ(eager.summary.transfers, 2U * 20);
      }
    }
  }
}

// A broadcast of 1 MiB from device 0 over all four, then an add on every rank.
constexpr const char* kBroadcastToAll = R"(
module @test attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%arg0: tensor<262144xf32>) -> tensor<262144xf32> {
    %0 = "stablehlo.collective_broadcast"(%arg0) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<262144xf32>) -> tensor<262144xf32>
    %1 = stablehlo.add %0, %0 : tensor<262144xf32>
    return %1 : tensor<262144xf32>
  }
}
)";

TEST(Simulation, HeldBroadcastsRunUnderEveryAlgorithmAndChunking) {
  // Every broadcast algorithm, in one chunk and in four pipelined chunks (each 256 KiB: with a
  // 300,000-byte limit the first chunk to a peer moves whole, the second splits, the rest wait),
  // with ranks 1-3 ten times slower. Held or not, every run ends; held, the root waits for its
  // receivers, so the steady step is at least as long as the receivers' own and the root's
  // communication is at least the slow ranks' extra 90 µs of add; the summary is the same on one
  // and two processes.
  for (const char* algorithm : {"direct", "ring", "tree"}) {
    for (const char* chunks : {"1", "4"}) {
      for (const char* model : {"analytical", "flow"}) {
        const std::vector<std::string> common = {
            std::string("system.collectives.collective_broadcast=") + algorithm, std::string("system.chunks=") + chunks,
            "workload.steps=10",
            "system.stragglers=[{rank: 1, slowdown_percent: 900}, {rank: 2, slowdown_percent: 900}, "
            "{rank: 3, slowdown_percent: 900}]"};
        for (const char* limit : {"0", "300000", "4194304"}) {
          SCOPED_TRACE(fmt::format("{} chunks={} {} limit={}", algorithm, chunks, model, limit));
          std::vector<std::string> overrides = common;
          overrides.push_back(std::string("system.p2p_eager_bytes=") + limit);
          const Outcome one = run(kBroadcastToAll, scenario_text(model), 1, overrides);
          ASSERT_EQ(one.error, "");
          const Outcome two = run(kBroadcastToAll, scenario_text(model), 2, overrides);
          ASSERT_EQ(two.error, "");
          EXPECT_EQ(one.summary.step_time_s, two.summary.step_time_s);
          EXPECT_EQ(one.summary.comm_s.max, two.summary.comm_s.max);
          EXPECT_EQ(one.summary.transfers, two.summary.transfers);
          EXPECT_GE(one.summary.step_time_s, 100e-6 - 1e-15);
          if (std::string(limit) != "4194304") {
            EXPECT_GE(one.summary.comm_s.max, 90e-6);  // the root, held to the slow ranks
          } else {
            EXPECT_LT(one.summary.comm_s.min, 90e-6);  // the root runs ahead
          }
        }
      }
    }
  }
}

// Eight replicas on four two-device nodes of a fat-tree: a permute from each device of the first
// half to its partner in the second, then a broadcast over all eight, then an add.
constexpr const char* kAcrossNodes = R"(
module @test attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 8 : i32} {
  func.func public @main(%arg0: tensor<262144xf32>) -> tensor<262144xf32> {
    %0 = "stablehlo.collective_permute"(%arg0) {source_target_pairs = dense<[[0, 4], [1, 5], [2, 6], [3, 7]]> : tensor<4x2xi64>} : (tensor<262144xf32>) -> tensor<262144xf32>
    %1 = "stablehlo.collective_broadcast"(%0) {replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>} : (tensor<262144xf32>) -> tensor<262144xf32>
    %2 = stablehlo.add %1, %1 : tensor<262144xf32>
    return %2 : tensor<262144xf32>
  }
}
)";

TEST(Simulation, HeldSendsAcrossProcessesGiveTheSameRunAsInOne) {
  // The senders and their receivers on different processes (block and round-robin partitions
  // split the eight ranks), so the notices cross processes: the summary is the one of a single
  // process, held (a 256 KiB limit, with the second half ten times slower) or not.
  const std::string scenario =
      "hardware: A100_40GB\n"
      "system: {devices_per_node: 2, scale_up: {bandwidth_GBps: 100, latency_ns: 1000}, endpoint_delay_ns: 500,\n"
      "         chunks: 2, collectives: {collective_broadcast: tree}}\n"
      "network: {topology: {kind: fat_tree, k: 4, levels: 2}}\n";
  const std::string slow =
      "system.stragglers=[{rank: 4, slowdown_percent: 900}, {rank: 5, slowdown_percent: 900}, "
      "{rank: 6, slowdown_percent: 900}, {rank: 7, slowdown_percent: 900}]";
  const std::vector<std::uint32_t> ranks = {0, 1, 2, 3, 4, 5, 6, 7};
  for (const char* model : {"analytical", "flow"}) {
    std::vector<double> steps;
    for (const char* limit : {"262144", "4194304"}) {
      const std::vector<std::string> common = {std::string("network.model=") + model,
                                               std::string("system.p2p_eager_bytes=") + limit, "workload.steps=6", slow};
      const Outcome one = run(kAcrossNodes, scenario, 1, common, ranks);
      ASSERT_EQ(one.error, "");
      steps.push_back(one.summary.step_time_s);
      for (const char* partition : {"block", "round-robin"}) {
        SCOPED_TRACE(fmt::format("{} limit={} {}", model, limit, partition));
        std::vector<std::string> overrides = common;
        overrides.push_back(std::string("simulation.partition=") + partition);
        const Outcome two = run(kAcrossNodes, scenario, 2, overrides, ranks);
        ASSERT_EQ(two.error, "");
        expect_same_run_on_two_processes(one, two);
      }
    }
    EXPECT_GT(steps[0], steps[1]) << model;  // held to the slow half's pace
  }
}

// Device 1 permutes what device 0 sends it; device 0 permutes first and sends after.
constexpr const char* kPermuteBeforeItsInput = R"(
module @test attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<262144xf32>) -> tensor<262144xf32> {
    %t = stablehlo.create_token : !stablehlo.token
    %r:2 = "stablehlo.recv"(%t) {channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, is_host_transfer = false, source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>} : (!stablehlo.token) -> (tensor<262144xf32>, !stablehlo.token)
    %0 = stablehlo.add %r#0, %arg0 : tensor<262144xf32>
    %1 = "stablehlo.collective_permute"(%0) {channel_handle = #stablehlo.channel_handle<handle = 5, type = 1>, source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<262144xf32>) -> tensor<262144xf32>
    %s = "stablehlo.send"(%1, %r#1) {channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, is_host_transfer = false, source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<262144xf32>, !stablehlo.token) -> !stablehlo.token
    return %1 : tensor<262144xf32>
  }
}
)";

TEST(Simulation, AHeldPermuteWhoseReceiverWaitsForItsSenderIsADeadlock) {
  // Device 1 starts the permute only after device 0's send, which follows device 0's permute.
  // Under the default limit the permute's 1 MiB goes at once and the step ends; with a 256 KiB
  // limit device 0 holds the rest for device 1, which never starts: NCCL hangs there, and the run
  // ends naming the permute and what it waits for.
  for (const std::uint32_t processes : {1U, 2U}) {
    SCOPED_TRACE(processes);
    const Outcome eager = run(kPermuteBeforeItsInput, scenario_text("analytical"), processes, {}, {0, 1});
    ASSERT_EQ(eager.error, "");
    const Outcome held =
        run(kPermuteBeforeItsInput, scenario_text("analytical"), processes, {"system.p2p_eager_bytes=262144"}, {0, 1});
    EXPECT_NE(held.error.find("deadlock: no events are left but 2 of 2 ranks have not finished"), std::string::npos)
        << held.error;
    EXPECT_NE(held.error.find("rank 0 (test.mlir device 0), step 1: waits in test.mlir:7:"), std::string::npos)
        << held.error;
    EXPECT_NE(held.error.find("over ranks 0-1 (its step 1 of 1), holding the rest of its data for rank 1 until that "
                              "rank starts it (only system.p2p_eager_bytes = 262144 move before that)"),
              std::string::npos)
        << held.error;
    EXPECT_NE(held.error.find("rank 1 (test.mlir device 1), step 1: waits for the data of test.mlir:5:"),
              std::string::npos)
        << held.error;
  }
}

}  // namespace held_collectives

}  // namespace
}  // namespace orrery::system
