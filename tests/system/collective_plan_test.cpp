// Collective plans against the standard cost models (../shared/reference/collectives.md):
// p ranks, n bytes, alpha per message, beta per byte on a member's injection link, gamma per
// byte reduced. Each test states the equation it checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "plan_evaluator.h"
#include "system/collective_plan.h"
#include "util/error.h"

namespace orrery::system {
namespace {

using plan_testing::AlphaBeta;
using plan_testing::evaluate;

constexpr AlphaBeta kModel{2e-6, 1e-9, 0.0};  // 2 µs per message, 1 GB/s

double run(CollectiveKind kind, Algorithm algorithm, std::uint32_t p, std::uint64_t n, std::uint32_t chunks = 1,
           AlphaBeta model = kModel) {
  GroupShape shape{p, {}, {}};
  const auto plan = make_plan(kind, algorithm, shape);
  return evaluate(*plan, n, chunks, model).time;
}

TEST(RingPlan, AllReduceMatchesClosedForm) {
  // T = 2(p-1)·alpha + 2(p-1)/p·n·beta
  for (const std::uint32_t p : {2U, 4U, 8U, 16U}) {
    const std::uint64_t n = 1ULL << 24;
    const double expected = 2 * (p - 1) * kModel.alpha + 2.0 * (p - 1) / p * n * kModel.beta;
    EXPECT_NEAR(run(CollectiveKind::kAllReduce, Algorithm::kRing, p, n), expected, 1e-12) << "p=" << p;
  }
}

TEST(RingPlan, ReduceScatterAndAllGatherMatchClosedForm) {
  // T = (p-1)·alpha + (p-1)/p·n·beta
  const std::uint32_t p = 8;
  const std::uint64_t n = 1ULL << 23;
  const double expected = (p - 1) * kModel.alpha + (p - 1.0) / p * n * kModel.beta;
  EXPECT_NEAR(run(CollectiveKind::kReduceScatter, Algorithm::kRing, p, n), expected, 1e-12);
  EXPECT_NEAR(run(CollectiveKind::kAllGather, Algorithm::kRing, p, n), expected, 1e-12);
}

TEST(RingPlan, ReductionCostIsTheGammaTerm) {
  // T = 2(p-1)·alpha + 2(p-1)/p·n·beta + (p-1)/p·n·gamma
  const std::uint32_t p = 4;
  const std::uint64_t n = 1ULL << 20;
  const AlphaBeta model{1e-6, 1e-9, 0.5e-9};
  const double expected = 2 * (p - 1) * model.alpha + 2.0 * (p - 1) / p * n * model.beta + (p - 1.0) / p * n * model.gamma;
  EXPECT_NEAR(run(CollectiveKind::kAllReduce, Algorithm::kRing, p, n, 1, model), expected, 1e-12);
}

TEST(RingPlan, ChunkingPipelinesTheRing) {
  // c chunks: latency paid for (steps + c - 1) stages of n/c instead of steps stages of n.
  // T(c) = (2(p-1) + c - 1)·(alpha + n/(c·p)·beta) for the chunked ring, bounded by the
  // unchunked time; with alpha = 0 the bandwidth term is unchanged.
  const std::uint32_t p = 8;
  const std::uint64_t n = 1ULL << 24;
  const AlphaBeta bandwidth_only{0.0, 1e-9, 0.0};
  const double one = run(CollectiveKind::kAllReduce, Algorithm::kRing, p, n, 1, bandwidth_only);
  const double four = run(CollectiveKind::kAllReduce, Algorithm::kRing, p, n, 4, bandwidth_only);
  EXPECT_NEAR(one, four, 1e-12);
  const double latency_bound = run(CollectiveKind::kAllReduce, Algorithm::kRing, p, 1024, 4);
  EXPECT_GT(latency_bound, 2 * (p - 1) * kModel.alpha);
}

TEST(HalvingDoubling, AllReduceMatchesClosedForm) {
  // T = 2·log2(p)·alpha + 2(p-1)/p·n·beta  (p a power of two)
  for (const std::uint32_t p : {2U, 4U, 16U, 64U}) {
    const std::uint64_t n = 1ULL << 24;
    const double expected = 2 * std::log2(p) * kModel.alpha + 2.0 * (p - 1) / p * n * kModel.beta;
    EXPECT_NEAR(run(CollectiveKind::kAllReduce, Algorithm::kHalvingDoubling, p, n), expected, 1e-12) << "p=" << p;
  }
}

TEST(HalvingDoubling, NonPowerOfTwoAddsAPreAndPostStep) {
  // p = q + e: the e extra members send n to a partner first and get n back at the end:
  // T = 2·alpha + 2·n·beta + 2·log2(q)·alpha + 2(q-1)/q·n·beta
  const std::uint32_t p = 6;
  const std::uint32_t q = 4;
  const std::uint64_t n = 1ULL << 22;
  const double expected = 2 * kModel.alpha + 2.0 * n * kModel.beta + 2 * std::log2(q) * kModel.alpha +
                          2.0 * (q - 1) / q * n * kModel.beta;
  EXPECT_NEAR(run(CollectiveKind::kAllReduce, Algorithm::kHalvingDoubling, p, n), expected, 1e-12);
}

TEST(DirectPlan, ReduceScatterAndAllToAllSerialiseOnTheInjectionLink) {
  // One step, p-1 messages of n/p leaving one after another: T = alpha + (p-1)/p·n·beta
  const std::uint32_t p = 8;
  const std::uint64_t n = 1ULL << 23;
  const double expected = kModel.alpha + (p - 1.0) / p * n * kModel.beta;
  EXPECT_NEAR(run(CollectiveKind::kReduceScatter, Algorithm::kDirect, p, n), expected, 1e-12);
  EXPECT_NEAR(run(CollectiveKind::kAllToAll, Algorithm::kDirect, p, n), expected, 1e-12);
  EXPECT_NEAR(run(CollectiveKind::kAllGather, Algorithm::kDirect, p, n), expected, 1e-12);
}

TEST(DirectPlan, AllReduceIsReduceScatterThenAllGather) {
  // T = 2·alpha + 2(p-1)/p·n·beta (the reference table's single alpha counts both steps' latency once)
  const std::uint32_t p = 8;
  const std::uint64_t n = 1ULL << 23;
  EXPECT_NEAR(run(CollectiveKind::kAllReduce, Algorithm::kDirect, p, n),
              2 * kModel.alpha + 2.0 * (p - 1) / p * n * kModel.beta, 1e-12);
}

TEST(TreePlan, LatencyGrowsWithTreeDepth) {
  // Latency only (beta = 0): T = 2·depth·alpha (up the tree, then down), depth = floor(log2 p).
  const AlphaBeta latency_only{2e-6, 0.0, 0.0};
  for (const std::uint32_t p : {7U, 15U, 31U}) {
    const double t = run(CollectiveKind::kAllReduce, Algorithm::kTree, p, 64, 1, latency_only);
    const double depth = std::floor(std::log2(p));
    EXPECT_NEAR(t, 2 * depth * latency_only.alpha, 1e-15) << "p=" << p;
  }
}

TEST(TreePlan, PipelinedBandwidthTermIsBounded) {
  // Large messages, many chunks: each member injects at most 2n bytes (inner node of one tree:
  // n/2 up and 2·n/2 down; leaf of the other: n/2 up), so n·beta <= T <= 2n·beta + latency.
  const std::uint32_t p = 16;
  const std::uint64_t n = 1ULL << 26;
  const AlphaBeta bandwidth_only{0.0, 1e-9, 0.0};
  const double t = run(CollectiveKind::kAllReduce, Algorithm::kTree, p, n, 64, bandwidth_only);
  EXPECT_GE(t, n * 1e-9);
  EXPECT_LE(t, 2.05 * n * 1e-9);
}

TEST(HierarchicalPlan, InterNodeTrafficIsDividedByMembersPerNode) {
  // 4 nodes x 4 members; all-reduce = intra RS (n) + inter AR (n/4) + intra AG (n).
  // Contention-free: T = 2(p1-1)(alpha + n/p1·beta) + 2(p2-1)(alpha + n/(p1·p2)·beta)
  GroupShape shape{16, {}, {}};
  for (std::uint32_t m = 0; m < 16; ++m) {
    shape.node_of_member.push_back(m / 4);
  }
  const std::uint64_t n = 1ULL << 24;
  const auto plan = make_plan(CollectiveKind::kAllReduce, Algorithm::kHierarchical, shape);
  const double expected = 2 * 3 * (kModel.alpha + n / 4.0 * kModel.beta) + 2 * 3 * (kModel.alpha + n / 16.0 * kModel.beta);
  const auto evaluation = evaluate(*plan, n, 1, kModel);
  EXPECT_NEAR(evaluation.time, expected, 1e-12);
}

TEST(HierarchicalPlan, NeedsRegularNodes) {
  GroupShape shape{5, {0, 0, 0, 1, 1}, {}};
  EXPECT_FALSE(plan_supported(CollectiveKind::kAllReduce, Algorithm::kHierarchical, shape));
  EXPECT_THROW((void)make_plan(CollectiveKind::kAllReduce, Algorithm::kHierarchical, shape), OrreryError);
}

TEST(InSwitchPlan, UploadThenMulticast) {
  // T = alpha + n·beta (upload) + alpha + n·beta (multicast down); independent of p.
  for (const std::uint32_t p : {4U, 8U}) {
    const std::uint64_t n = 1ULL << 22;
    EXPECT_NEAR(run(CollectiveKind::kAllReduce, Algorithm::kInSwitch, p, n), 2 * kModel.alpha + 2.0 * n * kModel.beta,
                1e-12);
  }
}

TEST(PermutePlan, SendsToTargetsOnly) {
  // A ring shift 0->1->2->3->0: one message of n each: T = alpha + n·beta
  GroupShape shape{4, {}, {{0, 1}, {1, 2}, {2, 3}, {3, 0}}};
  const auto plan = make_plan(CollectiveKind::kPermute, Algorithm::kDirect, shape);
  const auto evaluation = evaluate(*plan, 1000, 1, kModel);
  EXPECT_NEAR(evaluation.time, kModel.alpha + 1000 * kModel.beta, 1e-15);
  EXPECT_EQ(evaluation.bytes_sent, (std::vector<std::uint64_t>{1000, 1000, 1000, 1000}));
}

TEST(Plans, EveryCombinationCompletesAndSendsTheRightBytes) {
  // Bytes sent per member: ring/halving-doubling/direct all-reduce 2(p-1)/p·n; reduce-scatter and
  // all-gather (p-1)/p·n; all-to-all (p-1)/p·n (segments of unequal size for n % p != 0 still sum
  // exactly).
  for (const std::uint32_t p : {1U, 2U, 3U, 5U, 8U, 12U}) {
    for (const auto kind : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
                            CollectiveKind::kAllToAll, CollectiveKind::kBroadcast}) {
      for (const auto algorithm : {Algorithm::kRing, Algorithm::kTree, Algorithm::kHalvingDoubling, Algorithm::kDirect,
                                   Algorithm::kInSwitch}) {
        GroupShape shape{p, {}, {}};
        if (!plan_supported(kind, algorithm, shape)) {
          continue;
        }
        SCOPED_TRACE(::testing::Message() << collective_kind_name(kind) << " " << algorithm_name(algorithm) << " p=" << p);
        const std::uint64_t n = 1000003;
        const auto plan = make_plan(kind, algorithm, shape);
        const auto evaluation = evaluate(*plan, n, 3, kModel);
        ASSERT_GE(evaluation.time, 0.0) << "some member never finished";
        if (p > 1 && (algorithm == Algorithm::kRing || algorithm == Algorithm::kDirect) &&
            kind != CollectiveKind::kBroadcast) {
          std::uint64_t total = 0;
          for (const auto bytes : evaluation.bytes_sent) {
            total += bytes;
          }
          const std::uint64_t per_phase = static_cast<std::uint64_t>(p - 1) * n;  // summed over members
          EXPECT_EQ(total, kind == CollectiveKind::kAllReduce ? 2 * per_phase : per_phase);
        }
      }
    }
  }
}

TEST(Plans, SegmentsPartitionTheBytesExactlyAtAnySize) {
  // Segment i of n bytes in p parts is floor(n(i+1)/p) - floor(ni/p): sizes differ by at most one
  // and sum to n, also where n·p overflows 64 bits (the 128-bit path).
  for (const std::uint64_t n : {std::uint64_t{0}, std::uint64_t{7}, std::uint64_t{1000003}, std::uint64_t{1} << 40,
                                UINT64_MAX / 3, UINT64_MAX - 1, UINT64_MAX}) {
    for (const std::uint64_t p : {std::uint64_t{1}, std::uint64_t{3}, std::uint64_t{8}, std::uint64_t{32768}}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " p=" << p);
      std::uint64_t total = 0;
      std::uint64_t smallest = UINT64_MAX;
      std::uint64_t largest = 0;
      for (std::uint64_t i = 0; i < p; ++i) {
        const std::uint64_t bytes = segment_bytes(n, p, i);
        total += bytes;
        smallest = std::min(smallest, bytes);
        largest = std::max(largest, bytes);
      }
      EXPECT_EQ(total, n);
      EXPECT_EQ(smallest, n / p);
      EXPECT_LE(largest - smallest, 1U);
    }
  }
  EXPECT_EQ(segment_bytes(UINT64_MAX, 2, 0), UINT64_MAX / 2);  // floor((2^64 - 1) / 2)
  EXPECT_EQ(segment_bytes(UINT64_MAX, 2, 1), UINT64_MAX / 2 + 1);
}

TEST(Plans, UnsupportedCombinationsAreClearErrors) {
  GroupShape shape{4, {}, {}};
  try {
    (void)make_plan(CollectiveKind::kAllToAll, Algorithm::kTree, shape);
    FAIL();
  } catch (const OrreryError& error) {
    EXPECT_NE(std::string(error.what()).find("no tree algorithm for all_to_all over 4 members"), std::string::npos);
  }
  EXPECT_FALSE(plan_supported(CollectiveKind::kReduceScatter, Algorithm::kHalvingDoubling, GroupShape{6, {}, {}}));
}

}  // namespace
}  // namespace orrery::system
