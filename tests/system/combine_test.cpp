// Collective combining (ProgramModel::combine_collectives, XLA's combiner rule): which ops are
// combined, what the combined op waits for, who waits for it, and the size and count limits.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "compute/hardware.h"
#include "compute/program_costs.h"
#include "frontend/stablehlo/stablehlo.h"
#include "system/memory.h"
#include "system/program_model.h"
#include "workload/op_kind.h"

namespace orrery::system {
namespace {

using workload::OpKind;

// Every elementwise op takes 1 µs; everything else is free.
class ElementwiseTimes final : public OpTimes {
 public:
  explicit ElementwiseTimes(const workload::Program& program) : program_(program) {}
  [[nodiscard]] bool takes_time(workload::OpId op) const override {
    return workload::op_category(program_.op(op).kind) == workload::OpCategory::kElementwise;
  }
  [[nodiscard]] SimTime time(workload::OpId /*op*/) const override { return SimTime::from_ns(1'000); }

 private:
  const workload::Program& program_;
};

std::shared_ptr<const workload::Program> parse(const std::string& text) {
  auto source = std::make_shared<workload::SourceText>(workload::SourceText{"test.mlir", text});
  auto modules = frontend::stablehlo::parse_source(source, {}).take_or_throw();
  return modules.front().program;
}

#define ALL_REDUCE(result, operand, reducer)                                                       \
  "    " result " = \"stablehlo.all_reduce\"(" operand ") ({\n"                                   \
  "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"                                                 \
  "      %s = stablehlo." reducer " %a, %b : tensor<f32>\n"                                       \
  "      stablehlo.return %s : tensor<f32>\n"                                                      \
  "    }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<262144xf32>) -> " \
  "tensor<262144xf32>\n"

// Five 1 MiB all-reduces: A; the multiply reads A; B is independent of A; C reads the multiply
// (so it depends on A); D reduces with max (another key); E is independent.
//   round 1 from A: A, B taken; C depends on A -> the group {A, B} ends, run at B;
//   round 2 from C: C, E (D has another key) -> {C, E} at E;  round 3: D alone.
const std::string kProgram =
    "module @test attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {\n"
    "  func.func public @main(%x: tensor<262144xf32>, %y: tensor<262144xf32>, %z: tensor<262144xf32>) -> "
    "(tensor<262144xf32>, tensor<262144xf32>, tensor<262144xf32>, tensor<262144xf32>, tensor<262144xf32>) {\n"
    "    %0 = stablehlo.add %x, %x : tensor<262144xf32>\n" ALL_REDUCE("%1", "%0", "add")
    "    %2 = stablehlo.multiply %1, %1 : tensor<262144xf32>\n" ALL_REDUCE("%3", "%y", "add")
        ALL_REDUCE("%4", "%2", "add") ALL_REDUCE("%5", "%z", "maximum") ALL_REDUCE("%6", "%x", "add")
    "    return %3, %4, %5, %6, %2 : tensor<262144xf32>, tensor<262144xf32>, tensor<262144xf32>, "
    "tensor<262144xf32>, tensor<262144xf32>\n"
    "  }\n"
    "}\n";

struct Model {
  std::shared_ptr<const workload::Program> program;
  std::unique_ptr<ElementwiseTimes> times;
  std::unique_ptr<ProgramModel> model;
};

Model build(std::uint64_t combine_bytes, std::uint32_t combine_count = 256) {
  Model m;
  m.program = parse(kProgram);
  m.times = std::make_unique<ElementwiseTimes>(*m.program);
  ExecGraphOptions options;
  options.combine_bytes = combine_bytes;
  options.combine_count = combine_count;
  m.model = std::make_unique<ProgramModel>(m.program, "test", std::vector<std::uint32_t>{0, 1, 2, 3}, *m.times,
                                           options);
  return m;
}

// The line of the IR op an exec op runs (the all-reduces A..E start on lines 4, 10, 15, 20, 25).
std::uint32_t line_of(const Model& m, std::uint32_t exec) {
  return m.program->location(m.program->op(m.model->graph().op(exec).source).offset).line;
}

bool depends(const ExecGraph& graph, std::uint32_t consumer, std::uint32_t producer) {
  const auto consumers = graph.consumers(producer);
  return std::find(consumers.begin(), consumers.end(), consumer) != consumers.end();
}

TEST(CombineCollectives, IndependentOpsOfOneKeyCombineUntilADependentOne) {
  const Model m = build(31457287);
  const ExecGraph& graph = m.model->graph();
  ASSERT_EQ(graph.collectives().size(), 3U);
  // Exec ops: add, {A, B} at B, multiply (waited for the combined op), D, {C, E} at E.
  ASSERT_EQ(graph.size(), 5U);
  const std::uint32_t ab = graph.collectives()[0];
  const std::uint32_t d = graph.collectives()[1];
  const std::uint32_t ce = graph.collectives()[2];
  EXPECT_EQ(line_of(m, ab), 10U);  // B
  EXPECT_EQ(line_of(m, d), 20U);
  EXPECT_EQ(line_of(m, ce), 25U);  // E
  EXPECT_EQ(m.model->collective(ab).bytes, 2U << 20);
  EXPECT_EQ(m.model->collective(ab).combined, 2U);
  EXPECT_EQ(m.model->collective(ce).bytes, 2U << 20);
  EXPECT_EQ(m.model->collective(ce).combined, 2U);
  EXPECT_EQ(m.model->collective(d).combined, 1U);
  // The combined {A, B} waits for the add (A's operand); the multiply reads A's result, so it
  // waits for the combined op and comes after it; {C, E} waits for the multiply (C's operand).
  const std::uint32_t add = 0;
  const std::uint32_t multiply = ab + 1;
  EXPECT_EQ(m.program->op(graph.op(multiply).source).kind, OpKind::kMultiply);
  EXPECT_TRUE(depends(graph, ab, add));
  EXPECT_TRUE(depends(graph, multiply, ab));
  EXPECT_TRUE(depends(graph, ce, multiply));
  EXPECT_EQ(graph.in_degree(d), 0U);
}

TEST(CombineCollectives, SizeAndCountLimitsAndOff) {
  // 1.5 MiB: no two 1 MiB ops fit together; a count limit of 1: groups of one; 0: off.
  for (const auto& [bytes, count] : {std::pair<std::uint64_t, std::uint32_t>{3U << 19, 256},
                                     std::pair<std::uint64_t, std::uint32_t>{31457287, 1},
                                     std::pair<std::uint64_t, std::uint32_t>{0, 256}}) {
    const Model m = build(bytes, count);
    EXPECT_EQ(m.model->graph().collectives().size(), 5U) << bytes << " " << count;
    for (const CollectiveInfo& info : m.model->collectives()) {
      EXPECT_EQ(info.combined, 1U);
      EXPECT_EQ(info.bytes, 1U << 20);
    }
  }
  // Exactly 2 MiB: A and B fit.
  EXPECT_EQ(build(2U << 20).model->graph().collectives().size(), 3U);
}

TEST(CombineCollectives, ACombinedCollectiveHoldsEveryMembersResultInTheMemoryEstimate) {
  // Eight independent 1 MiB all-reduces, all returned: the same peak combined or not.
  std::string text =
      "module @t attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {\n"
      "  func.func public @main(%x: tensor<262144xf32>) -> (";
  std::string body;
  std::string results;
  for (int i = 0; i < 8; ++i) {
    text += std::string(i == 0 ? "" : ", ") + "tensor<262144xf32>";
    const std::string name = "%r" + std::to_string(i);
    body += "    " + name +
            " = \"stablehlo.all_reduce\"(%x) ({\n    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
            "      %s = stablehlo.add %a, %b : tensor<f32>\n      stablehlo.return %s : tensor<f32>\n"
            "    }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<262144xf32>) -> "
            "tensor<262144xf32>\n";
    results += (i == 0 ? "" : ", ") + name;
  }
  text += ") {\n" + body + "    return " + results + " : ";
  for (int i = 0; i < 8; ++i) {
    text += std::string(i == 0 ? "" : ", ") + "tensor<262144xf32>";
  }
  text += "\n  }\n}\n";
  const auto program = parse(text);
  const ElementwiseTimes times(*program);
  std::uint64_t peaks[2] = {0, 0};
  for (const std::uint64_t bytes : {std::uint64_t{0}, std::uint64_t{31457287}}) {
    ExecGraphOptions options;
    options.combine_bytes = bytes;
    const ProgramModel model(program, "test", {0, 1, 2, 3}, times, options);
    EXPECT_EQ(model.graph().collectives().size(), bytes == 0 ? 8U : 1U);
    peaks[bytes == 0 ? 0 : 1] = estimate_memory(model, Bytes{1ULL << 40}).peak;
  }
  EXPECT_EQ(peaks[0], peaks[1]);
  EXPECT_EQ(peaks[1], 9U << 20);  // the argument and eight results
}

// Region fusion from the cost table: the exec graph's kernels are XLA-like fusions.
class FusedTimes final : public OpTimes {
 public:
  explicit FusedTimes(const workload::Program& program) {
    config::ComputeConfig config;
    compute::ComputeModel model(config, compute::load_hardware("A100_80GB"));
    compute::CostOptions options;
    options.fusion = config::FusionMode::kRegions;
    costs_ = compute::cost_program(program, model, options);
  }
  [[nodiscard]] bool takes_time(workload::OpId op) const override {
    return costs_[op].role == compute::CostRole::kCompute;
  }
  [[nodiscard]] SimTime time(workload::OpId op) const override { return costs_[op].time; }
  [[nodiscard]] workload::OpId kernel_of(workload::OpId op) const override { return costs_[op].fused_into; }

 private:
  compute::ProgramCosts costs_;
};

// 1024-element all-reduces (sum or max) and a module head with a predicate and two inputs.
#define AR1K(result, operand, reducer)                                                           \
  "    " result " = \"stablehlo.all_reduce\"(" operand ") ({\n"                                 \
  "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"                                               \
  "      %s = stablehlo." reducer " %a, %b : tensor<f32>\n"                                     \
  "      stablehlo.return %s : tensor<f32>\n"                                                    \
  "    }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<1024xf32>) -> " \
  "tensor<1024xf32>\n"
#define HEAD1K                                                                                              \
  "module @t attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {\n"                  \
  "  func.func public @main(%p: tensor<i1>, %x: tensor<1024xf32>, %y: tensor<1024xf32>) -> (tensor<1024xf32>, " \
  "tensor<1024xf32>, tensor<1024xf32>) {\n"
#define TAIL3 "    return %r0, %r1, %r2 : tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>\n  }\n}\n"

struct Fused {
  std::shared_ptr<const workload::Program> program;
  std::unique_ptr<FusedTimes> times;
  std::unique_ptr<ProgramModel> model;
  [[nodiscard]] const ExecGraph& graph() const { return model->graph(); }
  // The exec op that runs the IR op on `line` (a combined op: any of its members).
  [[nodiscard]] std::uint32_t at_line(std::uint32_t line) const {
    for (std::uint32_t e = 0; e < graph().size(); ++e) {
      if (program->location(program->op(graph().op(e).source).offset).line == line) {
        return e;
      }
      for (const workload::OpId member : graph().combined_sources(e)) {
        if (program->location(program->op(member).offset).line == line) {
          return e;
        }
      }
    }
    ADD_FAILURE() << "no exec op for line " << line;
    return 0;
  }
  // Whether `to` depends on `from`, directly or through other ops.
  [[nodiscard]] bool reaches(std::uint32_t from, std::uint32_t to) const {
    std::vector<std::uint32_t> stack{from};
    std::vector<bool> seen(graph().size(), false);
    while (!stack.empty()) {
      const std::uint32_t v = stack.back();
      stack.pop_back();
      for (const std::uint32_t w : graph().consumers(v)) {
        if (w == to) {
          return true;
        }
        if (!seen[w]) {
          seen[w] = true;
          stack.push_back(w);
        }
      }
    }
    return false;
  }
};

Fused build_fused(const std::string& text) {
  Fused f;
  f.program = parse(text);
  f.times = std::make_unique<FusedTimes>(*f.program);
  ExecGraphOptions options;
  options.combine_bytes = 31457287;
  f.model = std::make_unique<ProgramModel>(f.program, "test", std::vector<std::uint32_t>{0, 1, 2, 3}, *f.times,
                                           options);
  // Every edge goes forward (the graph stays in a topological order).
  for (std::uint32_t e = 0; e < f.graph().size(); ++e) {
    for (const std::uint32_t w : f.graph().consumers(e)) {
      EXPECT_LT(e, w);
    }
  }
  return f;
}

TEST(CombineCollectives, ASiblingFusionThatReadsAMemberKeepsTheOpsApart) {
  // %f1 and %fk read %y, so region fusion makes them one kernel; it reads %a1 and %a2 reads it:
  // %a2 depends on %a1 through the kernel, so they must not combine (it would wait for itself).
  const Fused f = build_fused(HEAD1K AR1K("%a1", "%x", "add")                    // line 3
                              "    %f1 = stablehlo.add %a1, %y : tensor<1024xf32>\n"  // line 8
                              "    %fk = stablehlo.multiply %y, %y : tensor<1024xf32>\n" AR1K("%r1", "%fk", "add")
                              "    %r0 = stablehlo.add %f1, %f1 : tensor<1024xf32>\n"
                              "    %r2 = stablehlo.add %x, %x : tensor<1024xf32>\n" TAIL3);
  EXPECT_EQ(f.graph().collectives().size(), 2U);
  EXPECT_TRUE(f.reaches(f.at_line(3), f.at_line(10)));
}

TEST(CombineCollectives, GroupsOfOtherKeysCannotCloseACycle) {
  // a1 (sum); b1 (max) reads a1; b2 (max); a2 (sum) reads b2. {a1, a2} combine (a2 does not depend
  // on a1), and then b2 -> {a1, a2} -> b1, so b1 and b2 must not combine.
  const Fused f = build_fused(HEAD1K AR1K("%a1", "%x", "add")   // line 3
                              AR1K("%r0", "%a1", "maximum")      // line 8
                              AR1K("%b2", "%y", "maximum")       // line 13
                              AR1K("%r1", "%b2", "add")          // line 18
                              "    %r2 = stablehlo.add %x, %x : tensor<1024xf32>\n" TAIL3);
  EXPECT_EQ(f.graph().collectives().size(), 3U);
  EXPECT_EQ(f.at_line(3), f.at_line(18));  // combined
  EXPECT_NE(f.at_line(8), f.at_line(13));
  EXPECT_TRUE(f.reaches(f.at_line(13), f.at_line(3)));
  EXPECT_TRUE(f.reaches(f.at_line(3), f.at_line(8)));
}

TEST(CombineCollectives, AValueReadInsideABranchWaitsForTheCombinedOp) {
  // The if-branch reads %a1 without an operand; %a1 and %a2 combine, and the branch's multiply
  // depends on the combined op.
  const Fused f = build_fused(HEAD1K AR1K("%a1", "%x", "add")  // line 3
                              "    %r0 = \"stablehlo.if\"(%p) ({\n"
                              "      %m = stablehlo.multiply %a1, %a1 : tensor<1024xf32>\n"  // line 9
                              "      stablehlo.return %m : tensor<1024xf32>\n"
                              "    }, {\n"
                              "      stablehlo.return %x : tensor<1024xf32>\n"
                              "    }) : (tensor<i1>) -> tensor<1024xf32>\n" AR1K("%r1", "%y", "add")  // line 14
                              "    %r2 = stablehlo.add %x, %x : tensor<1024xf32>\n" TAIL3);
  EXPECT_EQ(f.graph().collectives().size(), 1U);
  EXPECT_EQ(f.at_line(3), f.at_line(14));
  EXPECT_TRUE(f.reaches(f.at_line(14), f.at_line(9)));
}

TEST(CombineCollectives, AFusedKernelThatReadsAMemberFeedsNoLaterMember) {
  // The kernel {m0, m1} reads %a1 (through m1) and %a2 reads m0: they do not combine.
  const Fused f = build_fused(HEAD1K AR1K("%a1", "%x", "add")  // line 3
                              "    %m0 = stablehlo.add %y, %y : tensor<1024xf32>\n"
                              "    %r0 = stablehlo.multiply %a1, %m0 : tensor<1024xf32>\n" AR1K("%r1", "%m0", "add")
                              "    %r2 = stablehlo.add %x, %x : tensor<1024xf32>\n" TAIL3);
  EXPECT_EQ(f.graph().collectives().size(), 2U);
}

TEST(CombineCollectives, InterleavedKeysFormInterleavedGroups) {
  // sum, max, sum, max, all independent: {sum, sum} at line 13, then {max, max} at line 18, whose
  // span holds the first group's merged member.
  const Fused f = build_fused(HEAD1K AR1K("%a1", "%x", "add")  // line 3
                              AR1K("%b1", "%x", "maximum")      // line 8
                              AR1K("%r0", "%y", "add")          // line 13
                              AR1K("%r1", "%y", "maximum")      // line 18
                              "    %r2 = stablehlo.add %a1, %b1 : tensor<1024xf32>\n" TAIL3);
  ASSERT_EQ(f.graph().collectives().size(), 2U);
  EXPECT_EQ(f.at_line(3), f.at_line(13));
  EXPECT_EQ(f.at_line(8), f.at_line(18));
  EXPECT_EQ(f.graph().size(), 3U);  // the two combined collectives and the add
  for (const std::uint32_t c : f.graph().collectives()) {
    EXPECT_EQ(f.model->collective(c).combined, 2U);
  }
}

TEST(CombineCollectives, EachLoopIterationCombinesOnItsOwn) {
  // Two independent all-reduces in a 3-trip loop body: one combined op per iteration (XLA
  // combines within a computation; each unrolled iteration is one), and the next iteration's
  // pair waits for the previous one's results.
  const Fused f = build_fused(
      "module @t attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {\n"
      "  func.func public @main(%x: tensor<1024xf32>, %y: tensor<1024xf32>) -> tensor<1024xf32> {\n"
      "    %c0 = stablehlo.constant dense<0> : tensor<i32>\n"
      "    %c1 = stablehlo.constant dense<1> : tensor<i32>\n"
      "    %c3 = stablehlo.constant dense<3> : tensor<i32>\n"
      "    %w:3 = stablehlo.while(%i = %c0, %u = %x, %v = %y) : tensor<i32>, tensor<1024xf32>, tensor<1024xf32>\n"
      "     cond {\n"
      "      %q = stablehlo.compare LT, %i, %c3 : (tensor<i32>, tensor<i32>) -> tensor<i1>\n"
      "      stablehlo.return %q : tensor<i1>\n"
      "    } do {\n" AR1K("%ru", "%u", "add") AR1K("%rv", "%v", "add")
      "      %n = stablehlo.add %i, %c1 : tensor<i32>\n"
      "      stablehlo.return %n, %ru, %rv : tensor<i32>, tensor<1024xf32>, tensor<1024xf32>\n"
      "    }\n"
      "    return %w#1 : tensor<1024xf32>\n  }\n}\n");
  const auto collectives = f.graph().collectives();
  ASSERT_EQ(collectives.size(), 3U);
  for (const std::uint32_t c : collectives) {
    EXPECT_EQ(f.model->collective(c).combined, 2U);
    EXPECT_EQ(f.model->collective(c).bytes, 8192U);
  }
  EXPECT_TRUE(f.reaches(collectives[0], collectives[1]));
  EXPECT_TRUE(f.reaches(collectives[1], collectives[2]));
}

TEST(CombineCollectives, ElementTypesAndReductionsAreKeys) {
  // A sum over f32 and a sum over bf16: not combined (XLA's all-reduce key holds the type).
  const Fused f = build_fused(
      "module @t attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {\n"
      "  func.func public @main(%x: tensor<1024xf32>, %y: tensor<1024xbf16>) -> (tensor<1024xf32>, tensor<1024xbf16>) {\n"
      AR1K("%a", "%x", "add")
      "    %b = \"stablehlo.all_reduce\"(%y) ({\n"
      "    ^bb0(%c: tensor<bf16>, %d: tensor<bf16>):\n"
      "      %s = stablehlo.add %c, %d : tensor<bf16>\n"
      "      stablehlo.return %s : tensor<bf16>\n"
      "    }) {replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (tensor<1024xbf16>) -> tensor<1024xbf16>\n"
      "    return %a, %b : tensor<1024xf32>, tensor<1024xbf16>\n  }\n}\n");
  EXPECT_EQ(f.graph().collectives().size(), 2U);
}

}  // namespace
}  // namespace orrery::system
