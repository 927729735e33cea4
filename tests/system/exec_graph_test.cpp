// The execution graph (system/exec_graph.h) of programs whose cost table fuses ops into kernels
// that run at their last member ("regions" fusion): where the kernel runs and what it waits for.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "compute/hardware.h"
#include "compute/program_costs.h"
#include "frontend/stablehlo/stablehlo.h"
#include "system/exec_graph.h"

namespace orrery::system {
namespace {

using workload::OpId;
using workload::OpKind;

std::shared_ptr<const workload::Program> parse(const std::string& text) {
  auto source = std::make_shared<workload::SourceText>(workload::SourceText{"test.mlir", text});
  auto modules = frontend::stablehlo::parse_source(source, {}).take_or_throw();
  return modules.front().program;
}

struct Built {
  std::shared_ptr<const workload::Program> program;
  compute::ProgramCosts costs;
  ExecGraph graph;

  // The exec op that runs the IR op of `kind` (skip: the how-many-th of that kind).
  [[nodiscard]] std::uint32_t exec_of(OpKind kind, int skip = 0) const {
    for (std::uint32_t i = 0; i < graph.size(); ++i) {
      if (program->op(graph.op(i).source).kind == kind && skip-- == 0) {
        return i;
      }
    }
    ADD_FAILURE() << "no exec op for " << workload::op_kind_name(kind);
    return 0;
  }
  [[nodiscard]] bool depends(std::uint32_t consumer, std::uint32_t producer) const {
    const auto consumers = graph.consumers(producer);
    return std::find(consumers.begin(), consumers.end(), consumer) != consumers.end();
  }
};

Built build(const std::string& text, config::FusionMode fusion) {
  Built b;
  b.program = parse(text);
  config::ComputeConfig config;
  compute::ComputeModel model(config, compute::load_hardware("A100_80GB"));
  compute::CostOptions options;
  options.fusion = fusion;
  b.costs = compute::cost_program(*b.program, model, options);
  b.graph = ExecGraph::build(
      *b.program, [&](OpId id) { return b.costs[id].role == compute::CostRole::kCompute; }, {},
      [&](OpId id) { return b.costs[id].fused_into; });
  return b;
}

// The tanh's kernel (tanh, multiply) runs at the multiply, after the second dot it needs; the add
// cannot join the exponential, whose value the first dot uses.
constexpr const char* kProgram = R"(
func.func @main(%x: tensor<16x16xf32>, %y: tensor<16x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) {
  %0 = stablehlo.exponential %x : tensor<16x16xf32>
  %1 = stablehlo.dot_general %0, %x, contracting_dims = [1] x [0] : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %2 = stablehlo.add %0, %1 : tensor<16x16xf32>
  %3 = stablehlo.tanh %y : tensor<16x16xf32>
  %4 = stablehlo.dot_general %y, %y, contracting_dims = [1] x [0] : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %5 = stablehlo.multiply %3, %4 : tensor<16x16xf32>
  %6 = stablehlo.reshape %3 : (tensor<16x16xf32>) -> tensor<256xf32>
  %7 = stablehlo.dot_general %5, %5, contracting_dims = [1] x [0] : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  return %2, %7, %5 : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>
}
)";

TEST(ExecGraph, UnfusedEveryComputeOpIsAnExecOp) {
  const Built b = build(kProgram, config::FusionMode::kNone);
  EXPECT_EQ(b.graph.size(), 7U);  // exp, dot, add, tanh, dot, multiply, dot (the reshape is free)
  EXPECT_TRUE(b.depends(b.exec_of(OpKind::kMultiply), b.exec_of(OpKind::kTanh)));
}

TEST(ExecGraph, AFusedKernelRunsAtItsLastMemberAndWaitsForEveryMembersInputs) {
  const Built b = build(kProgram, config::FusionMode::kRegions);
  ASSERT_EQ(b.graph.size(), 6U);  // exp, dot, add, dot, {tanh, multiply}, dot
  const std::uint32_t kernel = b.exec_of(OpKind::kMultiply);
  const std::uint32_t second_dot = b.exec_of(OpKind::kDotGeneral, 1);
  const std::uint32_t third_dot = b.exec_of(OpKind::kDotGeneral, 2);
  // Program order of the exec ops: the kernel comes after the dot its multiply needs.
  EXPECT_LT(second_dot, kernel);
  EXPECT_TRUE(b.depends(kernel, second_dot));
  EXPECT_EQ(b.graph.in_degree(kernel), 1U);
  EXPECT_TRUE(b.depends(third_dot, kernel));
  // The add waits for the exponential's kernel and the first dot.
  const std::uint32_t add = b.exec_of(OpKind::kAdd);
  EXPECT_TRUE(b.depends(add, b.exec_of(OpKind::kExponential)));
  EXPECT_TRUE(b.depends(add, b.exec_of(OpKind::kDotGeneral)));
}

// Inside an unrolled loop body, the kernel of each iteration waits for that iteration's inputs.
constexpr const char* kLoop = R"(
func.func @main(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %c3 = stablehlo.constant dense<3> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %v = %x) : tensor<i32>, tensor<16x16xf32>
   cond {
    %p = stablehlo.compare LT, %i, %c3 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %e = stablehlo.exponential %v : tensor<16x16xf32>
    %d = stablehlo.dot_general %v, %v, contracting_dims = [1] x [0] : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
    %m = stablehlo.multiply %e, %d : tensor<16x16xf32>
    %n = stablehlo.add %i, %c1 : tensor<i32>
    stablehlo.return %n, %m : tensor<i32>, tensor<16x16xf32>
  }
  return %r#1 : tensor<16x16xf32>
}
)";

TEST(ExecGraph, FusedKernelsInAnUnrolledLoopChainIterations) {
  const Built b = build(kLoop, config::FusionMode::kRegions);
  // Per iteration: the dot, the {exponential, multiply} kernel and the counter's add.
  ASSERT_EQ(b.graph.size(), 9U);
  for (int i = 0; i < 3; ++i) {
    const std::uint32_t dot = b.exec_of(OpKind::kDotGeneral, i);
    const std::uint32_t kernel = b.exec_of(OpKind::kMultiply, i);
    EXPECT_TRUE(b.depends(kernel, dot)) << "iteration " << i;
    if (i > 0) {
      // The next iteration's dot and kernel (its exponential) read the previous kernel's result.
      const std::uint32_t previous = b.exec_of(OpKind::kMultiply, i - 1);
      EXPECT_TRUE(b.depends(dot, previous)) << "iteration " << i;
      EXPECT_TRUE(b.depends(kernel, previous)) << "iteration " << i;
    }
  }
}

// An elementwise function, called below.
const std::string kRelu = R"(
func.func private @relu(%a: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %c = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %b = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<16x16xf32>
  %m = stablehlo.maximum %a, %b : tensor<16x16xf32>
  return %m : tensor<16x16xf32>
}
)";

// A fused call of an elementwise function runs as one kernel; its body is not inlined for it.
TEST(ExecGraph, AFusedCallRunsAsOneKernel) {
  const Built b = build(R"(
func.func @main(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %0 = stablehlo.add %x, %x : tensor<16x16xf32>
  %1 = call @relu(%0) : (tensor<16x16xf32>) -> tensor<16x16xf32>
  %2 = stablehlo.dot_general %1, %1, contracting_dims = [1] x [0] : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  return %2 : tensor<16x16xf32>
}
)" + kRelu,
                        config::FusionMode::kRegions);
  ASSERT_EQ(b.graph.size(), 2U);  // {add, relu} at the call, then the dot
  EXPECT_EQ(b.program->op(b.graph.op(0).source).kind, OpKind::kCall);
  EXPECT_TRUE(b.depends(b.exec_of(OpKind::kDotGeneral), 0));
  // Unfused: the add, then the call inlined (its maximum; the broadcast too), then the dot.
  const Built unfused = build(R"(
func.func @main(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %0 = stablehlo.add %x, %x : tensor<16x16xf32>
  %1 = call @relu(%0) : (tensor<16x16xf32>) -> tensor<16x16xf32>
  return %1 : tensor<16x16xf32>
}
)" + kRelu,
                              config::FusionMode::kNone);
  EXPECT_EQ(unfused.program->op(unfused.graph.op(unfused.graph.size() - 1).source).kind, OpKind::kMaximum);
  // A fused call whose result nothing reads: no exec op, its callee not inlined.
  const Built dead = build(R"(
func.func @main(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %0 = stablehlo.dot_general %x, %x, contracting_dims = [1] x [0] : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %1 = call @relu(%x) : (tensor<16x16xf32>) -> tensor<16x16xf32>
  return %0 : tensor<16x16xf32>
}
)" + kRelu,
                           config::FusionMode::kRegions);
  ASSERT_EQ(dead.graph.size(), 1U);
  EXPECT_EQ(dead.program->op(dead.graph.op(0).source).kind, OpKind::kDotGeneral);
}

}  // namespace
}  // namespace orrery::system
