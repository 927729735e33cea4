// While-loop trip counts: derived from the loop's own pattern, overridden by name, or an error that
// names the loop.
#include "frontend/stablehlo/trip_count.h"

#include <gtest/gtest.h>

#include "test_support.h"

namespace orrery::frontend::stablehlo {
namespace {

using namespace testing;
using workload::ComparisonDirection;

// for (x = init; x DIR bound; x += step): the count of iterations.
TEST(TripCount, CountIterations) {
  // LT: ceil((bound - init) / step)
  EXPECT_EQ(count_iterations(0, 10, 1, ComparisonDirection::kLt).count, 10U);
  EXPECT_EQ(count_iterations(0, 10, 3, ComparisonDirection::kLt).count, 4U);  // 0 3 6 9
  EXPECT_EQ(count_iterations(5, 5, 1, ComparisonDirection::kLt).count, 0U);
  // LE: floor((bound - init) / step) + 1
  EXPECT_EQ(count_iterations(0, 10, 5, ComparisonDirection::kLe).count, 3U);  // 0 5 10
  // GT / GE count down.
  EXPECT_EQ(count_iterations(10, 0, -1, ComparisonDirection::kGt).count, 10U);
  EXPECT_EQ(count_iterations(10, 0, -4, ComparisonDirection::kGe).count, 3U);  // 10 6 2
  // NE: exact multiples only.
  EXPECT_EQ(count_iterations(0, 12, 4, ComparisonDirection::kNe).count, 3U);
  EXPECT_FALSE(count_iterations(0, 10, 4, ComparisonDirection::kNe).derived);
  // Moving away from the bound never ends.
  const TripCount away = count_iterations(0, 10, -1, ComparisonDirection::kLt);
  EXPECT_FALSE(away.derived);
  EXPECT_NE(away.reason.find("never reaches"), std::string::npos);
  // Extreme values do not overflow.
  EXPECT_EQ(count_iterations(INT64_MIN, INT64_MAX, INT64_MAX, ComparisonDirection::kLt).count, 3U);
}

// A loop over `%i` with `init`, `compare DIR, lhs, rhs` and `%i + step` (or `- step`).
std::string loop(const std::string& init, const std::string& compare, const std::string& update,
                 const std::string& extra = "") {
  return R"(
func.func @main(%x: tensor<f32>) -> tensor<f32> {
  %init = stablehlo.constant dense<)" +
         init + R"(> : tensor<i32>
  %bound = stablehlo.constant dense<6> : tensor<i32>
  %step = stablehlo.constant dense<2> : tensor<i32>
  %0:2 = stablehlo.while(%i = %init, %v = %x) : tensor<i32>, tensor<f32>
   cond {
    %p = stablehlo.compare )" +
         compare + R"( : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %n = )" +
         update + R"( : tensor<i32>
    %w = stablehlo.add %v, %x : tensor<f32>
    stablehlo.return %n, %w : tensor<i32>, tensor<f32>
  }
  return %0#1 : tensor<f32>
}
)" + extra;
}

std::uint64_t derived_count(const std::string& text) {
  const auto p = parse_one(text);
  if (p == nullptr || p->while_ops().empty()) {
    ADD_FAILURE() << "no loop";
    return 0;
  }
  const workload::WhileAttributes& w = p->while_loop(p->op(p->while_ops()[0]));
  EXPECT_EQ(w.source, workload::TripCountSource::kDerived) << p->string(w.reason);
  return w.trip_count;
}

TEST(TripCount, DerivedFromComparisonsAgainstAConstant) {
  EXPECT_EQ(derived_count(loop("0", "LT, %i, %bound", "stablehlo.add %i, %step")), 3U);        // 0 2 4
  EXPECT_EQ(derived_count(loop("0", "LE, %i, %bound", "stablehlo.add %step, %i")), 4U);        // 0 2 4 6
  EXPECT_EQ(derived_count(loop("10", "GT, %i, %bound", "stablehlo.subtract %i, %step")), 2U);  // 10 8
  EXPECT_EQ(derived_count(loop("10", "GE, %i, %bound", "stablehlo.subtract %i, %step")), 3U);  // 10 8 6
  EXPECT_EQ(derived_count(loop("0", "NE, %i, %bound", "stablehlo.add %i, %step")), 3U);
  EXPECT_EQ(derived_count(loop("0", "GT, %bound, %i", "stablehlo.add %i, %step")), 3U);  // bound on the left
  EXPECT_EQ(derived_count(loop("8", "LT, %i, %bound", "stablehlo.add %i, %step")), 0U);  // never entered
}

// JAX's fori_loop: the bound is an iteration argument the body passes through unchanged, and the
// step comes back from a called function.
TEST(TripCount, ThroughLoopInvariantArgumentsAndCalls) {
  const std::string text = R"(
func.func private @next(%a: tensor<i64>) -> tensor<i64> {
  %one = stablehlo.constant dense<1> : tensor<i64>
  %r = stablehlo.add %a, %one : tensor<i64>
  return %r : tensor<i64>
}
func.func private @cond(%a: tensor<i64>, %b: tensor<i64>) -> tensor<i1> {
  %p = stablehlo.compare  LT, %a, %b : (tensor<i64>, tensor<i64>) -> tensor<i1>
  return %p : tensor<i1>
}
func.func @main() -> tensor<i64> {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %n = stablehlo.constant dense<12> : tensor<i64>
  %0:2 = stablehlo.while(%i = %zero, %limit = %n) : tensor<i64>, tensor<i64>
   cond {
    %p = func.call @cond(%i, %limit) : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %k = func.call @next(%i) : (tensor<i64>) -> tensor<i64>
    stablehlo.return %k, %limit : tensor<i64>, tensor<i64>
  }
  return %0#0 : tensor<i64>
}
)";
  EXPECT_EQ(derived_count(text), 12U);
}

TEST(TripCount, UnderivableLoopsNameTheLoopAndTakeAnOverride) {
  // The bound is a function argument: not a constant.
  const std::string text = R"(
func.func @main(%limit: tensor<i32>) -> tensor<i32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %r = stablehlo.while(%i = %zero) : tensor<i32>
   cond {
    %p = stablehlo.compare  LT, %i, %limit : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %n = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %n : tensor<i32>
  }
  return %r : tensor<i32>
}
)";
  const auto p = parse_one(text);
  ASSERT_NE(p, nullptr);
  const workload::OpId id = p->while_ops()[0];
  const workload::WhileAttributes& w = p->while_loop(p->op(id));
  EXPECT_EQ(w.source, workload::TripCountSource::kUnknown);
  EXPECT_EQ(p->string(w.name), "main/%r");
  try {
    (void)p->trip_count_or_throw(id);
    ADD_FAILURE() << "expected an error";
  } catch (const OrreryError& error) {
    const std::string rendered = error.what();
    EXPECT_NE(
        rendered.find("test.mlir:5:3: error: the trip count of while loop 'main/%r' cannot be derived: the "
                      "condition does not compare an iteration argument with a constant"),
        std::string::npos)
        << rendered;
    EXPECT_NE(rendered.find("--trip-count main/%r=N"), std::string::npos) << rendered;
  }
  // --strict makes it a parse error.
  Options strict;
  strict.strict = true;
  const Error error = parse_error(text, strict);
  EXPECT_EQ(error.where->line, 5U);
  EXPECT_NE(error.message.find("'main/%r'"), std::string::npos);
  // The override supplies the count.
  Options override;
  override.trip_counts["main/%r"] = 42;
  const auto overridden = parse_one(text, override);
  ASSERT_NE(overridden, nullptr);
  const workload::WhileAttributes& o = overridden->while_loop(overridden->op(overridden->while_ops()[0]));
  EXPECT_EQ(o.source, workload::TripCountSource::kOverride);
  EXPECT_EQ(overridden->trip_count_or_throw(overridden->while_ops()[0]), 42U);
  // An override for a loop that does not exist is an error that lists the loops.
  Options typo;
  typo.trip_counts["main/%x"] = 1;
  const Error unknown = parse_error(text, typo);
  EXPECT_NE(unknown.message.find("trip count given for 'main/%x'"), std::string::npos);
  ASSERT_EQ(unknown.notes.size(), 1U);
  EXPECT_EQ(unknown.notes[0], "its loops are: main/%r");
}

}  // namespace
}  // namespace orrery::frontend::stablehlo
