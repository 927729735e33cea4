// The per-rank peak memory estimate (system/memory.h): live tensor sizes over the exec graph.
#include "system/memory.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "frontend/stablehlo/stablehlo.h"
#include "system/program_model.h"

namespace orrery::system {
namespace {

using workload::OpId;

std::shared_ptr<const workload::Program> parse(const std::string& text) {
  auto source = std::make_shared<workload::SourceText>(workload::SourceText{"test.mlir", text});
  auto modules = frontend::stablehlo::parse_source(source, {}).take_or_throw();
  return modules.front().program;
}

// %a and %b run as one kernel at %b (as region fusion makes them): it writes both values, %a
// because %d reads it after another kernel. %c and %d are kernels of their own.
constexpr const char* kFused = R"(
func.func @main(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %a = stablehlo.exponential %x : tensor<1024xf32>
  %b = stablehlo.add %a, %x : tensor<1024xf32>
  %c = stablehlo.multiply %b, %b : tensor<1024xf32>
  %d = stablehlo.add %c, %a : tensor<1024xf32>
  return %d : tensor<1024xf32>
}
)";

class FusedTimes final : public OpTimes {
 public:
  // Ops 0..3 are %a, %b, %c, %d (the return is op 4).
  [[nodiscard]] bool takes_time(OpId op) const override { return op >= 1 && op <= 3; }
  [[nodiscard]] SimTime time(OpId /*op*/) const override { return SimTime::from_ns(1'000); }
  [[nodiscard]] OpId kernel_of(OpId op) const override { return op == 0 ? 1 : workload::kNoId; }
};

TEST(MemoryEstimate, EachValueAFusedKernelWritesLivesUntilItsOwnLastReader) {
  const auto program = parse(kFused);
  ASSERT_EQ(program->op(0).kind, workload::OpKind::kExponential);
  ASSERT_EQ(program->op(3).kind, workload::OpKind::kAdd);
  const FusedTimes fused;
  const ProgramModel model(program, "test", {0}, fused, ExecGraphOptions{});
  ASSERT_EQ(model.graph().size(), 3U);
  // The kernel's two values are two buffers: %a, read by %d, and %b, read by %c.
  const auto buffers = model.graph().buffers();
  ASSERT_EQ(buffers.size(), 4U);  // %b and %a (written by exec op 0), %c, %d
  auto of = [&](OpId op) {
    for (const ExecGraph::Buffer& b : buffers) {
      if (b.op == op) {
        return b;
      }
    }
    ADD_FAILURE() << "no buffer of op " << op;
    return ExecGraph::Buffer{};
  };
  EXPECT_EQ(of(0).writer, 0U);
  EXPECT_EQ(of(0).last_reader, 2U);
  EXPECT_EQ(of(1).writer, 0U);
  EXPECT_EQ(of(1).last_reader, 1U);
  EXPECT_EQ(of(3).last_reader, ExecGraph::kNoReader);
  EXPECT_TRUE(of(3).output);
  // x (4 KiB) for the whole step; at %c: x, %a, %b and %c (16 KiB), then %b is freed; at %d: x,
  // %a, %c and %d (16 KiB). Holding %b with %a until %d, as one allocation per kernel would, makes
  // 20 KiB; forgetting %a (counting the kernel op's result only) 12 KiB.
  EXPECT_EQ(estimate_memory(model, Bytes{0}).peak, 16384U);
  // It fits 16 KiB, not 16 KiB - 1.
  EXPECT_TRUE(estimate_memory(model, Bytes{16384}).fits);
  EXPECT_FALSE(estimate_memory(model, Bytes{16383}).fits);
}

// A training-step shape: parameters %w (16 KiB) and a moment %m (16 KiB) come in, their updated
// values go out. %g is read by both updates; %m2 and %w2 are outputs nobody in the step reads.
std::string step(const std::string& w_attribute, const std::string& m_attribute) {
  return R"(
func.func @main(%x: tensor<4096xf32>, %w: tensor<4096xf32>)" +
         w_attribute + R"(, %m: tensor<4096xf32>)" + m_attribute +
         R"() -> (tensor<4096xf32>, tensor<4096xf32>) {
  %g = stablehlo.multiply %x, %w : tensor<4096xf32>
  %m2 = stablehlo.add %m, %g : tensor<4096xf32>
  %w2 = stablehlo.subtract %w, %g : tensor<4096xf32>
  return %w2, %m2 : tensor<4096xf32>, tensor<4096xf32>
}
)";
}

class EveryOpTakesTime final : public OpTimes {
 public:
  [[nodiscard]] bool takes_time(OpId /*op*/) const override { return true; }
  [[nodiscard]] SimTime time(OpId /*op*/) const override { return SimTime::from_ns(1'000); }
  [[nodiscard]] OpId kernel_of(OpId /*op*/) const override { return workload::kNoId; }
};

TEST(MemoryEstimate, OutputsAreWrittenIntoDonatedArguments) {
  const EveryOpTakesTime times;
  auto peak = [&](const std::string& text) {
    const ProgramModel model(parse(text), "test", {0}, times, ExecGraphOptions{});
    return estimate_memory(model, Bytes{0});
  };
  // Nothing donated: 48 KiB of arguments, %g, and both outputs allocated anew: 96 KiB at %w2.
  const MemoryEstimate plain = peak(step("", ""));
  EXPECT_EQ(plain.arguments, 49152U);
  EXPECT_EQ(plain.peak, 98304U);
  // Both updated tensors donated (jax.jit donate_argnums): the outputs reuse their buffers.
  EXPECT_EQ(peak(step(" {tf.aliasing_output = 0 : i32}", " {tf.aliasing_output = 1 : i32}")).peak, 65536U);
  EXPECT_EQ(peak(step(" {jax.buffer_donor = true}", " {jax.buffer_donor = true}")).peak, 65536U);
  // One donated: the first output written (%m2) takes its 16 KiB, %w2 needs its own.
  EXPECT_EQ(peak(step(" {tf.aliasing_output = 0 : i32}", "")).peak, 81920U);
  // A false donor flag donates nothing.
  EXPECT_EQ(peak(step(" {jax.buffer_donor = false}", "")).peak, 98304U);
}

}  // namespace
}  // namespace orrery::system
