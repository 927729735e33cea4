// The per-rank peak memory estimate (system/memory.h): live tensor sizes over the exec graph.
#include "system/memory.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
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
  // The peak is reached at %c, the second of the three exec ops.
  const MemoryEstimate estimate = estimate_memory(model, Bytes{0});
  EXPECT_EQ(estimate.peak_op, 2U);
  EXPECT_EQ(estimate.ops, 3U);
  EXPECT_NE(estimate.peak_at.find("test.mlir:5:"), std::string::npos) << estimate.peak_at;
  EXPECT_NE(estimate.peak_at.find("stablehlo.multiply"), std::string::npos) << estimate.peak_at;
  // It fits 16 KiB, not 16 KiB - 1.
  EXPECT_TRUE(estimate_memory(model, Bytes{16384}).fits);
  EXPECT_FALSE(estimate_memory(model, Bytes{16383}).fits);
}

// %y is a kernel's result; %a (exp of %y) runs in the kernel at %b; %d reads %a after %c.
constexpr const char* kRecomputed = R"(
func.func @main(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %y = stablehlo.negate %x : tensor<1024xf32>
  %a = stablehlo.exponential %y : tensor<1024xf32>
  %b = stablehlo.add %a, %y : tensor<1024xf32>
  %c = stablehlo.multiply %b, %b : tensor<1024xf32>
  %d = stablehlo.add %c, %a : tensor<1024xf32>
  return %d : tensor<1024xf32>
}
)";

class RecomputedTimes final : public OpTimes {
 public:
  explicit RecomputedTimes(bool stored) : stored_(stored) {}
  // Ops 0..4 are %y, %a, %b, %c, %d: %a runs in the kernel at %b.
  [[nodiscard]] bool takes_time(OpId op) const override { return op != 1 && op <= 4; }
  [[nodiscard]] SimTime time(OpId /*op*/) const override { return SimTime::from_ns(1'000); }
  [[nodiscard]] OpId kernel_of(OpId op) const override { return op == 1 ? 2 : workload::kNoId; }
  [[nodiscard]] bool stored(OpId op) const override { return op != 1 || stored_; }

 private:
  bool stored_;
};

ExecGraph::Buffer buffer_of(const ExecGraph& graph, OpId op) {
  for (const ExecGraph::Buffer& b : graph.buffers()) {
    if (b.op == op) {
      return b;
    }
  }
  ADD_FAILURE() << "no buffer of op " << op;
  return ExecGraph::Buffer{};
}

TEST(MemoryEstimate, AValueItsReadersRecomputeTakesNoMemoryAndKeepsItsInputsLive) {
  const auto program = parse(kRecomputed);
  const RecomputedTimes stored(true);
  const RecomputedTimes recomputed(false);
  const ProgramModel keeps(program, "test", {0}, stored, ExecGraphOptions{});
  const ProgramModel recomputes(program, "test", {0}, recomputed, ExecGraphOptions{});
  // Exec ops: %y, the kernel at %b, %c, %d. Stored, %a (4 KiB) lives until %d and %y until the
  // kernel; recomputed by %d, %a takes nothing and %y lives until %d instead.
  EXPECT_EQ(buffer_of(keeps.graph(), 1).last_reader, 3U);
  EXPECT_EQ(buffer_of(keeps.graph(), 0).last_reader, 1U);
  EXPECT_EQ(keeps.value_bytes(1, 0), 4096U);
  EXPECT_EQ(buffer_of(recomputes.graph(), 0).last_reader, 3U);
  EXPECT_EQ(recomputes.value_bytes(1, 0), 0U);
  // The same dependencies either way: %d waited for the kernel, which waited for %y.
  ASSERT_EQ(keeps.graph().size(), recomputes.graph().size());
  EXPECT_EQ(keeps.graph().edges(), recomputes.graph().edges());
  for (std::uint32_t i = 0; i < keeps.graph().size(); ++i) {
    const auto a = keeps.graph().consumers(i);
    const auto b = recomputes.graph().consumers(i);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << i;
  }
  // At %c: x, %a, %b and %c stored; x, %y, %b and %c recomputed: 16 KiB both ways.
  EXPECT_EQ(estimate_memory(keeps, Bytes{0}).peak, 16384U);
  EXPECT_EQ(estimate_memory(recomputes, Bytes{0}).peak, 16384U);
}

// A kernel of kChain recomputed members, each reading the two before it (as a ring's merges
// read the running output twice): its readers reach %y through one proxy, not through proxies of
// proxies whose number would double at each member.
constexpr std::uint32_t kChain = 24;
std::string chain_program() {
  std::string text = "func.func @main(%x: tensor<256xf32>) -> tensor<256xf32> {\n";
  text += "  %m0 = stablehlo.negate %x : tensor<256xf32>\n";  // op 0, a kernel of its own
  for (std::uint32_t i = 1; i <= kChain; ++i) {               // ops 1..kChain: members
    text += fmt::format("  %m{} = stablehlo.add %m{}, %m{} : tensor<256xf32>\n", i, i - 1, i > 1 ? i - 2 : 0);
  }
  // Op kChain + 1: the kernel; op kChain + 2 reads a member after it.
  text += fmt::format("  %k = stablehlo.multiply %m{}, %m{} : tensor<256xf32>\n", kChain, kChain - 1);
  text += fmt::format("  %r = stablehlo.add %k, %m{} : tensor<256xf32>\n", kChain);
  text += "  return %r : tensor<256xf32>\n}\n";
  return text;
}

class ChainTimes final : public OpTimes {
 public:
  [[nodiscard]] bool takes_time(OpId op) const override {
    return op == 0 || (op > kChain && op <= kChain + 2);
  }
  [[nodiscard]] SimTime time(OpId /*op*/) const override { return SimTime::from_ns(1'000); }
  [[nodiscard]] OpId kernel_of(OpId op) const override {
    return op >= 1 && op <= kChain ? kChain + 1 : workload::kNoId;
  }
  [[nodiscard]] bool stored(OpId op) const override { return op < 1 || op > kChain; }
};

TEST(MemoryEstimate, AChainOfRecomputedValuesTakesOneProxyPerInput) {
  const auto program = parse(chain_program());
  const ChainTimes times;
  const ProgramModel model(program, "test", {0}, times, ExecGraphOptions{});
  // Exec ops: %m0, the kernel at %k, %r. Buffers made: %m0's, the members', %k's and %r's (one
  // each); the kernel's proxies, one per buffer its members read (%m0 ... %m23); and a completion
  // marker per exec op. Proxying proxies made 514,206 here (Fibonacci's growth).
  EXPECT_EQ(model.graph().size(), 3U);
  EXPECT_EQ(model.graph().built_buffers(), (1 + kChain + 2) + kChain + 3);
  // The buffers kept: those read or returned (%m24 is read by %r, and so the members by the
  // kernel's proxies: they take no bytes).
  EXPECT_EQ(model.graph().buffers().size(), 1 + kChain + 2);
  // %r reads the recomputed %m24: %m0 stays live until %r, the members take nothing.
  EXPECT_EQ(buffer_of(model.graph(), 0).last_reader, 2U);
  EXPECT_EQ(model.value_bytes(kChain, 0), 0U);
  // At %r: x, %m0, %k and %r (1 KiB each).
  EXPECT_EQ(estimate_memory(model, Bytes{0}).peak, 4096U);
}

// An optimization barrier holds %q until %p is computed, but a late reader of the held %q does not
// keep %p live.
constexpr const char* kBarrier = R"(
func.func @main(%x: tensor<1024xf32>) -> (tensor<1024xf32>, tensor<1024xf32>) {
  %p = stablehlo.negate %x : tensor<1024xf32>
  %q = stablehlo.exponential %x : tensor<1024xf32>
  %r:2 = stablehlo.optimization_barrier %p, %q : tensor<1024xf32>, tensor<1024xf32>
  %s = stablehlo.add %r#0, %x : tensor<1024xf32>
  %c = stablehlo.multiply %x, %x : tensor<1024xf32>
  %t = stablehlo.add %r#1, %c : tensor<1024xf32>
  return %s, %t : tensor<1024xf32>, tensor<1024xf32>
}
)";

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

TEST(MemoryEstimate, ABarriersResultKeepsOnlyItsOwnOperandLive) {
  const EveryOpTakesTime times;
  const ProgramModel model(parse(kBarrier), "test", {0}, times, ExecGraphOptions{});
  // Exec ops: %p, %q, %s, %c, %t (the barrier is free). %t waits for %p through the barrier...
  ASSERT_EQ(model.graph().size(), 5U);
  const auto after_p = model.graph().consumers(0);
  EXPECT_NE(std::find(after_p.begin(), after_p.end(), 4U), after_p.end());
  // ...but only %s reads it; %q lives until %t.
  EXPECT_EQ(buffer_of(model.graph(), 0).last_reader, 2U);
  EXPECT_EQ(buffer_of(model.graph(), 1).last_reader, 4U);
  // x and %q all along; %p until %s; %s (an output) from %s on; at %t: x, %q, %s, %c, %t = 20 KiB.
  EXPECT_EQ(estimate_memory(model, Bytes{0}).peak, 20480U);
}

}  // namespace
}  // namespace orrery::system
