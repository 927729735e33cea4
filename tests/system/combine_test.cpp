// Collective combining (ProgramModel::combine_collectives, XLA's combiner rule): which ops are
// combined, what the combined op waits for, who waits for it, and the size and count limits.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "frontend/stablehlo/stablehlo.h"
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

}  // namespace
}  // namespace orrery::system
