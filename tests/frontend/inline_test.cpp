// ProgramBuilder::inline_calls: every func.call replaced by a copy of its callee, as XLA's
// CallInliner does before fusion (compute.inline_calls).
#include <gtest/gtest.h>

#include <string>

#include "test_support.h"
#include "workload/program_builder.h"

namespace orrery::frontend::stablehlo {
namespace {

using testing::parse_one;
using workload::OpKind;
using workload::Program;

std::size_t count_kind(const Program& p, OpKind kind) {
  std::size_t n = 0;
  for (workload::OpId id = 0; id < p.op_count(); ++id) {
    n += p.op(id).kind == kind ? 1 : 0;
  }
  return n;
}

// Multi-result callees, a nested call, a callee with a reduce region, a call inside a loop body.
constexpr const char* kCalls = R"(
func.func private @pair(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = stablehlo.exponential %a : tensor<4xf32>
  %1 = stablehlo.negate %a : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}
func.func private @outer(%a: tensor<4xf32>) -> tensor<f32> {
  %p:2 = func.call @pair(%a) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %s = stablehlo.add %p#0, %p#1 : tensor<4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = stablehlo.reduce(%s init: %z) across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
   reducer(%x: tensor<f32>, %y: tensor<f32>) {
    %t = stablehlo.add %x, %y : tensor<f32>
    stablehlo.return %t : tensor<f32>
  }
  return %r : tensor<f32>
}
func.func @main(%a: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  %0 = func.call @outer(%a) : (tensor<4xf32>) -> tensor<f32>
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %w:2 = stablehlo.while(%i = %c0, %v = %a) : tensor<i32>, tensor<4xf32>
   cond {
    %c2 = stablehlo.constant dense<2> : tensor<i32>
    %p = stablehlo.compare LT, %i, %c2 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %c1 = stablehlo.constant dense<1> : tensor<i32>
    %n = stablehlo.add %i, %c1 : tensor<i32>
    %q:2 = func.call @pair(%v) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    stablehlo.return %n, %q#1 : tensor<i32>, tensor<4xf32>
  }
  return %0, %w#1 : tensor<f32>, tensor<4xf32>
}
)";

TEST(InlineCalls, CalleesReplaceCallsAndValuesFollow) {
  const auto program = parse_one(kCalls);
  const auto inlined = workload::ProgramBuilder::inline_calls(*program);
  // The functions stay, ids unchanged; @pair and @outer, private and only ever inlined, lose
  // their bodies (their ops are not costed on their own); nothing calls any more.
  ASSERT_EQ(inlined->functions().size(), 3U);
  EXPECT_EQ(inlined->function(0).body, workload::kNoId);
  EXPECT_EQ(inlined->function(1).body, workload::kNoId);
  EXPECT_NE(inlined->function(2).body, workload::kNoId);
  // Only main's ops exist: its 8, the reducer's 2, the loop condition's 3 and body's 5.
  EXPECT_EQ(inlined->op_count(), 18U);
  EXPECT_EQ(count_kind(*program, OpKind::kCall), 3U);
  EXPECT_EQ(count_kind(*inlined, OpKind::kCall), 0U);
  // main's ops: @outer's body (@pair's two ops, add, constant, reduce with its add and return)
  // in place of its call, and @pair's two ops in the loop body in place of that call.
  const auto& main = inlined->function(inlined->entry_function());
  std::vector<std::string> names;
  for (const workload::OpId id : inlined->ops(inlined->block(inlined->entry_block(main)))) {
    names.emplace_back(inlined->op_name(inlined->op(id)));
  }
  EXPECT_EQ(names, (std::vector<std::string>{"stablehlo.exponential", "stablehlo.negate", "stablehlo.add",
                                             "stablehlo.constant", "stablehlo.reduce", "stablehlo.constant",
                                             "stablehlo.while", "return"}));
  // Operands follow the values: the add reads the exponential and the negate of main's argument;
  // main returns the reduce's result.
  const auto ops = inlined->ops(inlined->block(inlined->entry_block(main)));
  const auto add = inlined->operands(inlined->op(ops[2]));
  EXPECT_EQ(add[0], workload::ValueRef::op_result(ops[0], 0));
  EXPECT_EQ(add[1], workload::ValueRef::op_result(ops[1], 0));
  EXPECT_EQ(inlined->operands(inlined->op(ops[0]))[0],
            workload::ValueRef::block_argument(inlined->entry_block(main), 0));
  EXPECT_EQ(inlined->operands(inlined->op(ops.back()))[0], workload::ValueRef::op_result(ops[4], 0));
  // Inside the loop body the second result of the inlined @pair (the negate) is returned.
  const workload::Op& loop = inlined->op(ops[6]);
  const auto body =
      inlined->ops(inlined->block(inlined->blocks(inlined->region(inlined->regions(loop)[1])).front()));
  ASSERT_EQ(body.size(), 5U);  // constant, add, exponential, negate, return
  EXPECT_EQ(inlined->op_name(inlined->op(body[3])), "stablehlo.negate");
  EXPECT_EQ(inlined->operands(inlined->op(body[4]))[1], workload::ValueRef::op_result(body[3], 0));
  // Payloads and trip counts come along; an inlined op keeps its callee's source line.
  EXPECT_EQ(inlined->trip_count_or_throw(ops[6]), 2U);
  EXPECT_EQ(inlined->op(ops[0]).offset,
            program->op(program->ops(program->block(program->entry_block(program->function(0))))[0]).offset);
  EXPECT_EQ(inlined->reduce(inlined->op(ops[4])).dimensions.count, 1U);
}

TEST(InlineCalls, RecursionStaysACall) {
  const auto program = parse_one(R"(
func.func private @f(%a: tensor<f32>) -> tensor<f32> {
  %0 = func.call @f(%a) : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @main(%a: tensor<f32>) -> tensor<f32> {
  %0 = func.call @f(%a) : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
)");
  const auto inlined = workload::ProgramBuilder::inline_calls(*program);
  // main's call is inlined once; the copy's own call of @f (already being inlined) stays a call,
  // so @f keeps its body.
  EXPECT_NE(inlined->function(0).body, workload::kNoId);
  const auto& main = inlined->function(inlined->entry_function());
  const auto ops = inlined->ops(inlined->block(inlined->entry_block(main)));
  ASSERT_EQ(ops.size(), 2U);
  EXPECT_EQ(inlined->op(ops[0]).kind, OpKind::kCall);
}

TEST(InlineCalls, FunctionsWithCollectivesStayCalls) {
  // A layer with a tensor-parallel all-reduce, called twice, and a helper without one: the helper
  // is inlined, the layer (and so its own call of the helper) stays as it is.
  const auto program = parse_one(R"(
func.func private @helper(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.exponential %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @layer(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @helper(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "stablehlo.all_reduce"(%0) ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %s = stablehlo.add %x, %y : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @layer(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = func.call @layer(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = func.call @helper(%1) : (tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}
)");
  const auto inlined = workload::ProgramBuilder::inline_calls(*program);
  const auto& main = inlined->function(inlined->entry_function());
  std::vector<OpKind> kinds;
  for (const workload::OpId id : inlined->ops(inlined->block(inlined->entry_block(main)))) {
    kinds.push_back(inlined->op(id).kind);
  }
  EXPECT_EQ(kinds,
            (std::vector<OpKind>{OpKind::kCall, OpKind::kCall, OpKind::kExponential, OpKind::kReturn}));
  // @layer keeps its body, where @helper's call is inlined; @helper is still called from nowhere
  // else, so it loses its body.
  EXPECT_NE(inlined->function(1).body, workload::kNoId);
  EXPECT_EQ(inlined->function(0).body, workload::kNoId);
  EXPECT_EQ(count_kind(*inlined, OpKind::kCall), 2U);
}

}  // namespace
}  // namespace orrery::frontend::stablehlo
