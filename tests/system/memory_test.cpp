// The per-rank peak memory estimate (system/memory.h): live tensor sizes over the exec graph.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "frontend/stablehlo/stablehlo.h"
#include "system/memory.h"
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
  explicit FusedTimes(bool report_written) : report_written_(report_written) {}
  // Ops 0..3 are %a, %b, %c, %d (the return is op 4).
  [[nodiscard]] bool takes_time(OpId op) const override { return op >= 1 && op <= 3; }
  [[nodiscard]] SimTime time(OpId /*op*/) const override { return SimTime::from_ns(1'000); }
  [[nodiscard]] OpId kernel_of(OpId op) const override { return op == 0 ? 1 : workload::kNoId; }
  [[nodiscard]] std::optional<std::uint64_t> bytes_written(OpId op) const override {
    if (!report_written_) {
      return std::nullopt;
    }
    return op == 1 ? 8192 : 4096;  // the kernel at %b writes %a and %b
  }

 private:
  bool report_written_;
};

TEST(MemoryEstimate, AFusedKernelHoldsEveryValueItWrites) {
  const auto program = parse(kFused);
  ASSERT_EQ(program->op(0).kind, workload::OpKind::kExponential);
  ASSERT_EQ(program->op(3).kind, workload::OpKind::kAdd);
  // x (4 KiB) for the whole step; the kernel's %a and %b (8 KiB) until %d, their last reader; %c
  // (4 KiB) until %d; %d (4 KiB): 20 KiB at %d.
  const FusedTimes fused(true);
  const ProgramModel model(program, "test", {0}, fused, ExecGraphOptions{});
  ASSERT_EQ(model.graph().size(), 3U);
  EXPECT_EQ(estimate_memory(model, Bytes{0}).peak, 20480U);
  // Counting only the kernel op's own result would miss %a: 16 KiB.
  const FusedTimes results_only(false);
  const ProgramModel unfused_view(program, "test", {0}, results_only, ExecGraphOptions{});
  EXPECT_EQ(estimate_memory(unfused_view, Bytes{0}).peak, 16384U);
  // It fits 20 KiB, not 20 KiB - 1.
  EXPECT_TRUE(estimate_memory(model, Bytes{20480}).fits);
  EXPECT_FALSE(estimate_memory(model, Bytes{20479}).fits);
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
  [[nodiscard]] std::optional<std::uint64_t> bytes_written(OpId /*op*/) const override {
    return std::nullopt;
  }
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
