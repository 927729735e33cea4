// The analytical model against hand computation, the max-min solver against hand-solved cases
// (dumbbell, parking lot, multi-bottleneck), and the flow model's timing and determinism
// (incremental and full re-solves agree bit for bit).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <utility>

#include "network/analytical_model.h"
#include "network/flow/flow_model.h"
#include "network/model_factory.h"
#include "network/routing/routing.h"
#include "network_test_util.h"
#include "pdes/random.h"

namespace orrery::network {
namespace {

using testing::topology_from;

// Three nodes of one device on one switch: device -NIC(100 GB/s, 0 ns)- NIC -(50 GB/s, 500 ns)- switch.
constexpr const char* kStar =
    "system: {devices_per_node: 1}\n"
    "network: {topology: {kind: switch, nodes: 3, link_GBps: 50, latency_ns: 500}, nic: {bandwidth_GBps: 100}}\n";

TEST(Analytical, StarMatchesHandComputation) {
  // time = sum of latencies + bytes / bottleneck = (0 + 500 + 500 + 0) ns + 1e6 B / 50e9 B/s
  //      = 1 us + 20 us = 21 us.
  const Topology topology = topology_from(kStar);
  const Routing routing(topology, config::RoutingAlgorithm::kMinimal);
  const AnalyticalModel model(routing);
  EXPECT_EQ(model.transfer_time(0, 2, Bytes{1'000'000}), SimTime::from_ns(21'000));
  EXPECT_EQ(model.transfer_time(1, 1, Bytes{1'000'000}), SimTime::zero());
  // 0 bytes: latency only.
  EXPECT_EQ(model.transfer_time(0, 1, Bytes{0}), SimTime::from_ns(1'000));
}

TEST(Analytical, ASourcesTransfersQueueOnTheLinksTheyShare) {
  // kStar: device -(100 GB/s)- NIC -(50 GB/s, 500 ns)- switch -(50 GB/s, 500 ns)- NIC -(100 GB/s)- device.
  // 1 MB occupies a 100 GB/s link for 10 us and a 50 GB/s link for 20 us.
  const Topology topology = topology_from(kStar);
  const Routing routing(topology, config::RoutingAlgorithm::kMinimal);
  AnalyticalModel model(routing);
  const Bytes mb{1'000'000};
  auto request = [&](TransferId id, EndpointId source, EndpointId destination) {
    return TransferRequest{id, source, destination, mb, 0};
  };
  // Alone: the closed form.
  EXPECT_EQ(model.delivery(SimTime::zero(), request(1, 0, 2)), SimTime::from_ns(21'000));
  // Same route at the same time: starts when its links are free, at 20 us.
  EXPECT_EQ(model.delivery(SimTime::zero(), request(2, 0, 2)), SimTime::from_ns(41'000));
  // Another destination shares the source's two links (the second busy until 40 us): first in,
  // first out, so it starts at 40 us.
  EXPECT_EQ(model.delivery(SimTime::zero(), request(3, 0, 1)), SimTime::from_ns(61'000));
  // Another source: no contention between sources.
  EXPECT_EQ(model.delivery(SimTime::zero(), request(4, 1, 2)), SimTime::from_ns(21'000));
  // Once the links are free again, the closed form.
  EXPECT_EQ(model.delivery(SimTime::from_ns(100'000), request(5, 0, 2)), SimTime::from_ns(121'000));

  // start/advance give the same deliveries.
  AnalyticalModel driven(routing);
  driven.start(SimTime::zero(), request(1, 0, 2));
  driven.start(SimTime::zero(), request(2, 0, 2));
  driven.start(SimTime::zero(), request(3, 0, 1));
  std::vector<Delivery> delivered;
  driven.advance(SimTime::from_ns(70'000), delivered);
  EXPECT_EQ(delivered, (std::vector<Delivery>{{1, SimTime::from_ns(21'000)},
                                              {2, SimTime::from_ns(41'000)},
                                              {3, SimTime::from_ns(61'000)}}));
  // Two destinations at once: the slowest link they share is the source's own 50 GB/s link into
  // the switch, not its first link, so the second waits 20 us, not 10.
  AnalyticalModel fan(routing);
  EXPECT_EQ(fan.delivery(SimTime::zero(), request(1, 0, 1)), SimTime::from_ns(21'000));
  EXPECT_EQ(fan.delivery(SimTime::zero(), request(2, 0, 2)), SimTime::from_ns(41'000));
}

TEST(Analytical, ASourceWithManyDestinationsStaysLinearAndExact) {
  // A direct all-to-all from one source on a 2,048-node star: every transfer shares the source's
  // two links, so the k-th (from 0) is delivered at (k + 1) x 20 us + 1 us, and the state the
  // model keeps is pruned as it goes (amortised O(1) per transfer; this took quadratic time).
  const Topology topology = topology_from(
      "system: {devices_per_node: 1}\n"
      "network: {topology: {kind: switch, nodes: 2048, link_GBps: 50, latency_ns: 500}, nic: {bandwidth_GBps: 100}}\n");
  const Routing routing(topology, config::RoutingAlgorithm::kMinimal);
  AnalyticalModel model(routing);
  for (std::uint32_t round = 0; round < 3; ++round) {
    const SimTime entry = SimTime::from_ns(round * 100'000'000ULL);
    for (EndpointId d = 1; d < 2048; ++d) {
      const SimTime expected = entry + SimTime::from_ns(20'000ULL * d + 1'000);
      ASSERT_EQ(model.delivery(entry, TransferRequest{d, 0, d, Bytes{1'000'000}, 0}), expected) << d;
    }
  }
}

TEST(Analytical, AstraSimRingAndSwitchMatchHandComputation) {
  // Ring of 8 at 50 GB/s (= 50 * 2^30 B/s) and 500 ns per link: NPU 0 -> 3 is 3 hops,
  //   3 * 500 ns + 2^20 B / (50 * 2^30 B/s) = 1500 ns + 19531.25 ns = 21031.25 ns;
  // 0 -> 6 goes the other way round (2 hops): 1000 ns + 19531.25 ns.
  const Topology ring = topology_from(
      "network: {topology: {kind: astra_sim, spec: {topology: [Ring], npus_count: [8], bandwidth: [50], latency: "
      "[500]}}}\n");
  const Routing ring_routing(ring, config::RoutingAlgorithm::kMinimal);
  const AnalyticalModel ring_model(ring_routing);
  EXPECT_EQ(ring_model.transfer_time(0, 3, Bytes{1 << 20}), SimTime::from_ps(21'031'250));
  EXPECT_EQ(ring_model.transfer_time(0, 6, Bytes{1 << 20}), SimTime::from_ps(20'531'250));
  // Switch dimension: two links, so twice the latency (ASTRA-sim's switch hop count is 2):
  //   2 * 936.25 ns + 2^20 B / (400 * 2^30 B/s) = 1872.5 ns + 2441.40625 ns = 4313.90625 ns.
  const Topology hgx = topology_from(
      "network: {topology: {kind: astra_sim, spec: {topology: [Switch], npus_count: [8], bandwidth: [400], latency: "
      "[936.25]}}}\n");
  const Routing hgx_routing(hgx, config::RoutingAlgorithm::kMinimal);
  EXPECT_EQ(AnalyticalModel(hgx_routing).transfer_time(2, 5, Bytes{1 << 20}), SimTime::from_ps(4'313'907));
}

// Solves a problem given as per-flow link lists; capacities and rates in bytes per second (the
// solver works in 1/1024 B/s, so the hand-solved answers below, multiples of 1/2, are exact).
std::vector<double> solve(const std::vector<double>& capacity, const std::vector<std::vector<std::uint32_t>>& flows) {
  SharingProblem problem;
  for (const double c : capacity) {
    problem.capacity.push_back(to_rate_units(c));
  }
  for (const auto& links : flows) {
    problem.flow_links.insert(problem.flow_links.end(), links.begin(), links.end());
    problem.flow_begin.push_back(static_cast<std::uint32_t>(problem.flow_links.size()));
  }
  std::vector<RateUnits> units;
  MaxMinSolver().solve(problem, units);
  std::vector<double> rates;
  for (const RateUnits u : units) {
    rates.push_back(to_bytes_per_second(u));
  }
  return rates;
}

TEST(MaxMin, Dumbbell) {
  // Two flows through one bottleneck of capacity 60 with access links 10 and 100:
  //   flow 0 is held by its access link: r0 = 10; flow 1 gets the rest: r1 = 60 - 10 = 50.
  EXPECT_EQ(solve({10, 100, 60}, {{0, 2}, {1, 2}}), (std::vector<double>{10, 50}));
  // Equal access: the bottleneck splits evenly, r = 60 / 2.
  EXPECT_EQ(solve({100, 100, 60}, {{0, 2}, {1, 2}}), (std::vector<double>{30, 30}));
}

TEST(MaxMin, ParkingLot) {
  // Links L0 (1), L1 (2), L2 (1); the long flow 0 crosses all three, flows 1, 2, 3 one each.
  //   L0 and L2: share 1/2 -> r0 = r1 = r3 = 1/2; L1: 2 - 1/2 = 3/2 left for flow 2.
  EXPECT_EQ(solve({1, 2, 1}, {{0, 1, 2}, {0}, {1}, {2}}), (std::vector<double>{0.5, 0.5, 1.5, 0.5}));
}

TEST(MaxMin, MultiBottleneck) {
  // L0 (10): flows 0, 1, 2; L1 (4): flows 2, 3; L2 (9): flows 0, 3, 4.
  //   shares 10/3, 2, 3 -> L1 first: r2 = r3 = 2;
  //   then L0 (10 - 2) / 2 = 4, L2 (9 - 2) / 2 = 3.5 -> L2: r0 = r4 = 3.5;
  //   then L0: 10 - 2 - 3.5 = 4.5 -> r1 = 4.5.
  EXPECT_EQ(solve({10, 4, 9}, {{0, 2}, {0}, {0, 1}, {1, 2}, {2}}), (std::vector<double>{3.5, 4.5, 2, 2, 3.5}));
  // A flow with no links is unconstrained.
  EXPECT_TRUE(std::isinf(solve({1}, {{}})[0]));
}

TEST(MaxMin, RateUnitsAndTheirLimits) {
  // 1/1024 B/s units: 10 TB/s is representable, 5e15 B/s and negative bandwidths are errors.
  EXPECT_EQ(to_rate_units(1e13), RateUnits{10'240'000'000'000'000});
  EXPECT_DOUBLE_EQ(to_bytes_per_second(to_rate_units(1e13)), 1e13);
  EXPECT_THROW((void)to_rate_units(5e15), OrreryError);
  EXPECT_THROW((void)to_rate_units(-1.0), OrreryError);
  // 2,000 flows on a 1 B/s link would get under 1/1024 B/s each: an error naming the link.
  SharingProblem problem;
  problem.capacity.push_back(to_rate_units(1.0));
  problem.link_key.push_back(42);
  for (int f = 0; f < 2000; ++f) {
    problem.flow_links.push_back(0);
    problem.flow_begin.push_back(static_cast<std::uint32_t>(problem.flow_links.size()));
  }
  std::vector<RateUnits> rates;
  try {
    MaxMinSolver().solve(problem, rates);
    FAIL() << "expected an error";
  } catch (const OrreryError& error) {
    EXPECT_NE(std::string(error.what()).find("link 42 has 2000 flows"), std::string::npos) << error.what();
  }
}

TEST(MaxMin, ComponentsSolveTheSameAloneOrTogether) {
  // Rates of a component must not depend on other components (bit for bit).
  const std::vector<std::vector<std::uint32_t>> alone{{0, 1}, {1}, {0}};
  const auto a = solve({3, 7}, alone);
  const auto together = solve({5, 3, 11, 7}, {{0}, {1, 3}, {0, 2}, {3}, {2}, {1}});
  EXPECT_EQ(std::bit_cast<std::uint64_t>(a[0]), std::bit_cast<std::uint64_t>(together[1]));
  EXPECT_EQ(std::bit_cast<std::uint64_t>(a[1]), std::bit_cast<std::uint64_t>(together[3]));
  EXPECT_EQ(std::bit_cast<std::uint64_t>(a[2]), std::bit_cast<std::uint64_t>(together[5]));
}

// MaxMinSolver's level property on random problems: when every changed flow is at or above a
// level L (a removed flow's old rate; for an added flow, L = min over its links of
// floor(capacity / flows on the link), which its new rate must reach), the flows below L keep
// their rates and re-solving only the flows at or above L on the capacity the others leave
//   capacity'(l) = capacity(l) - sum of rates below L on l
// gives exactly the rates of a solve from scratch.
struct UnitsProblem {
  std::vector<RateUnits> capacity;
  std::vector<std::vector<std::uint32_t>> flows;
};

std::vector<RateUnits> solve_units(const UnitsProblem& p) {
  SharingProblem problem;
  problem.capacity = p.capacity;
  for (const auto& links : p.flows) {
    problem.flow_links.insert(problem.flow_links.end(), links.begin(), links.end());
    problem.flow_begin.push_back(static_cast<std::uint32_t>(problem.flow_links.size()));
  }
  std::vector<RateUnits> rates;
  MaxMinSolver().solve(problem, rates);
  return rates;
}

// Checks `after` (the problem with the change) against a re-solve above `level` that starts from
// `before_rates` (flow i of `after` had rate before_rates[i]; kUnlimitedRate marks a new flow).
void expect_level_resolve_exact(const UnitsProblem& after, const std::vector<RateUnits>& before_rates,
                                RateUnits level) {
  const std::vector<RateUnits> expected = solve_units(after);
  UnitsProblem upper;
  upper.capacity = after.capacity;
  std::vector<std::uint32_t> upper_flows;
  for (std::uint32_t f = 0; f < after.flows.size(); ++f) {
    if (before_rates[f] == kUnlimitedRate || before_rates[f] >= level) {
      upper_flows.push_back(f);
      upper.flows.push_back(after.flows[f]);
    } else {
      EXPECT_EQ(expected[f], before_rates[f]) << "a flow below the level changed rate";
      for (const std::uint32_t l : after.flows[f]) {
        upper.capacity[l] -= before_rates[f];
      }
    }
  }
  const std::vector<RateUnits> partial = solve_units(upper);
  for (std::size_t i = 0; i < upper_flows.size(); ++i) {
    EXPECT_EQ(partial[i], expected[upper_flows[i]]);
    EXPECT_GE(expected[upper_flows[i]], level);
  }
}

TEST(MaxMin, ResolvingAboveTheChangedFlowsLevelIsExact) {
  pdes::Random random(11, 5);
  for (int trial = 0; trial < 400; ++trial) {
    UnitsProblem p;
    const std::uint32_t links = 4 + static_cast<std::uint32_t>(random.below(30));
    for (std::uint32_t l = 0; l < links; ++l) {
      // Few distinct capacities, so that shares tie often.
      p.capacity.push_back(1024 * (1 + random.below(4)) * 1000);
    }
    const std::uint32_t flows = 2 + static_cast<std::uint32_t>(random.below(60));
    for (std::uint32_t f = 0; f < flows; ++f) {
      std::vector<std::uint32_t> path;
      const std::uint32_t hops = 1 + static_cast<std::uint32_t>(random.below(4));
      while (path.size() < hops) {
        const auto l = static_cast<std::uint32_t>(random.below(links));
        if (std::find(path.begin(), path.end(), l) == path.end()) {
          path.push_back(l);
        }
      }
      p.flows.push_back(path);
    }
    const std::vector<RateUnits> rates = solve_units(p);
    // Remove one flow: the level is its old rate.
    const auto removed = static_cast<std::uint32_t>(random.below(flows));
    UnitsProblem without = p;
    without.flows.erase(without.flows.begin() + removed);
    std::vector<RateUnits> kept = rates;
    kept.erase(kept.begin() + removed);
    expect_level_resolve_exact(without, kept, rates[removed]);
    // Add one flow (a copy of another's path plus maybe a link): the level is its least rate.
    UnitsProblem with = p;
    std::vector<std::uint32_t> path = p.flows[random.below(flows)];
    const auto extra = static_cast<std::uint32_t>(random.below(links));
    if (std::find(path.begin(), path.end(), extra) == path.end()) {
      path.push_back(extra);
    }
    with.flows.push_back(path);
    std::vector<std::uint32_t> on_link(links, 0);
    for (const auto& flow : with.flows) {
      for (const std::uint32_t l : flow) {
        ++on_link[l];
      }
    }
    RateUnits least = kUnlimitedRate;
    for (const std::uint32_t l : path) {
      least = std::min<RateUnits>(least, with.capacity[l] / on_link[l]);
    }
    std::vector<RateUnits> before = rates;
    before.push_back(kUnlimitedRate);
    expect_level_resolve_exact(with, before, least);
    if (::testing::Test::HasFailure()) {
      FAIL() << "trial " << trial;
    }
  }
}

std::vector<Delivery> run_to_end(NetworkModel& model) {
  std::vector<Delivery> delivered;
  for (SimTime t = model.next_event_time(); !t.is_max(); t = model.next_event_time()) {
    model.advance(t, delivered);
  }
  return delivered;
}

TEST(FlowModel, DumbbellFinishTimes) {
  // Nodes 0 and 1 send 1e6 B to node 2; the switch -> NIC 2 link (50 GB/s) is shared.
  //   Both at t = 0: 25 GB/s each, fluid finish 1e6 / 25e9 = 40 us, delivery + 1 us latency.
  const Topology topology = topology_from(kStar);
  const Routing routing(topology, config::RoutingAlgorithm::kMinimal);
  FlowModel together(routing);
  together.start(SimTime::zero(), {1, 0, 2, Bytes{1'000'000}, 0});
  together.start(SimTime::zero(), {2, 1, 2, Bytes{1'000'000}, 0});
  EXPECT_DOUBLE_EQ(*together.rate_of(1), 25e9);
  EXPECT_EQ(run_to_end(together),
            (std::vector<Delivery>{{1, SimTime::from_ns(41'000)}, {2, SimTime::from_ns(41'000)}}));
  // Staggered: flow 1 alone for 10 us at 50 GB/s (5e5 B sent), then both at 25 GB/s: flow 1's
  // remaining 5e5 B take 20 us -> finish 30 us; flow 2 has sent 5e5 B by then and finishes the
  // rest alone at 50 GB/s in 10 us -> 40 us. Deliveries add 1 us.
  FlowModel staggered(routing);
  staggered.start(SimTime::zero(), {1, 0, 2, Bytes{1'000'000}, 0});
  EXPECT_EQ(staggered.next_event_time(), SimTime::from_ns(20'000));
  staggered.start(SimTime::from_ns(10'000), {2, 1, 2, Bytes{1'000'000}, 0});
  EXPECT_EQ(run_to_end(staggered),
            (std::vector<Delivery>{{1, SimTime::from_ns(31'000)}, {2, SimTime::from_ns(41'000)}}));
  EXPECT_EQ(staggered.in_flight(), 0U);
}

TEST(FlowModel, AFinishPastTheTimeRangeIsNamedNotDropped) {
  // 1e18 B over a 50 GB/s link: 2e7 s, past the 2^64 ps (1.8e7 s) SimTime holds. The model has no
  // event for it; it must say so, so that the caller can report it instead of losing the transfer.
  const Topology topology = topology_from(kStar);
  const Routing routing(topology, config::RoutingAlgorithm::kMinimal);
  FlowModel model(routing);
  model.start(SimTime::zero(), {7, 0, 2, Bytes{1'000'000'000'000'000'000}, 0});
  model.start(SimTime::zero(), {3, 1, 2, Bytes{1'000'000}, 0});
  EXPECT_EQ(model.describe_unfinishable(), "");  // not solved yet
  // Flow 3 finishes (its 1e6 B at 25 GB/s); flow 7 then runs alone and cannot finish in range.
  EXPECT_EQ(run_to_end(model).size(), 1U);
  EXPECT_EQ(model.in_flight(), 1U);
  EXPECT_NE(model.describe_unfinishable().find("transfer 7 of 1000000000000000000 bytes"), std::string::npos)
      << model.describe_unfinishable();
  // In range, nothing is left and nothing is described.
  FlowModel fits(routing);
  fits.start(SimTime::zero(), {1, 0, 2, Bytes{100'000'000'000'000'000}, 0});  // 2e6 s
  EXPECT_EQ(run_to_end(fits).size(), 1U);
  EXPECT_EQ(fits.describe_unfinishable(), "");
}

TEST(FlowModel, StartAndAdvanceAtTheSameTimeCommute) {
  // A flow finishing at t and a flow starting at t: the same deliveries whether the caller
  // advances to t first or starts first.
  const Topology topology = topology_from(kStar);
  const Routing routing(topology, config::RoutingAlgorithm::kMinimal);
  std::vector<Delivery> first;
  std::vector<Delivery> second;
  FlowModel a(routing);
  a.start(SimTime::zero(), {1, 0, 2, Bytes{1'000'000}, 0});
  a.advance(SimTime::from_ns(20'000), first);
  a.start(SimTime::from_ns(20'000), {2, 1, 2, Bytes{1'000'000}, 0});
  FlowModel b(routing);
  b.start(SimTime::zero(), {1, 0, 2, Bytes{1'000'000}, 0});
  (void)b.next_event_time();
  b.start(SimTime::from_ns(20'000), {2, 1, 2, Bytes{1'000'000}, 0});
  b.advance(SimTime::from_ns(20'000), second);
  const auto rest_a = run_to_end(a);
  const auto rest_b = run_to_end(b);
  first.insert(first.end(), rest_a.begin(), rest_a.end());
  second.insert(second.end(), rest_b.begin(), rest_b.end());
  EXPECT_EQ(first, second);
  EXPECT_EQ(first.back().time, SimTime::from_ns(41'000));
}

// Delivers everything due up to `now`.
void advance_to(FlowModel& model, SimTime now, std::vector<Delivery>& delivered) {
  for (SimTime t = model.next_event_time(); t <= now; t = model.next_event_time()) {
    model.advance(t, delivered);
  }
}

// Runs the model to its last delivery; returns every delivery and the model's statistics.
std::vector<Delivery> finish(FlowModel& model, std::vector<Delivery> delivered, FlowModelStats& stats) {
  const std::vector<Delivery> rest = run_to_end(model);
  delivered.insert(delivered.end(), rest.begin(), rest.end());
  stats = model.stats();
  return delivered;
}

// Random flows on a dragonfly: starts at random times, sizes from 1 B to 4 MB.
std::vector<Delivery> random_workload(const Routing& routing, bool incremental, FlowModelStats& stats) {
  FlowModel model(routing, FlowModelOptions{incremental, "max_min"});
  pdes::Random random(7, 1);
  const EndpointId n = routing.topology().num_endpoints();
  std::vector<Delivery> delivered;
  SimTime now;
  for (TransferId id = 0; id < 600; ++id) {
    now += SimTime::from_ps(random.below(2'000'000));
    advance_to(model, now, delivered);
    const EndpointId source = random.below(n);
    EndpointId destination = random.below(n);
    // Several flows share start times, so a re-solve handles more than one change.
    model.start(now, {id, source, destination, Bytes{1 + random.below(4'000'000)}, id});
    if (id % 3 != 0) {
      model.start(now, {id + 100000, destination, source, Bytes{1 + random.below(100'000)}, id});
    }
  }
  return finish(model, std::move(delivered), stats);
}

using Workload = std::vector<Delivery> (*)(const Routing&, bool, FlowModelStats&);

// Runs a workload with level-limited (incremental) and with full re-solves: the deliveries must be
// bit-identical, and the incremental model must hand fewer flows to the solver.
void expect_incremental_matches_full(const Routing& routing, Workload workload, std::size_t deliveries) {
  FlowModelStats incremental_stats;
  FlowModelStats full_stats;
  const auto incremental = workload(routing, true, incremental_stats);
  const auto full = workload(routing, false, full_stats);
  EXPECT_EQ(incremental.size(), deliveries);
  EXPECT_EQ(incremental, full);
  EXPECT_EQ(incremental_stats.solves, full_stats.solves);
  EXPECT_EQ(incremental_stats.rate_changes, full_stats.rate_changes);
  EXPECT_LT(incremental_stats.solved_flows, full_stats.solved_flows);
}

TEST(FlowModel, IncrementalAndFullResolvesAgreeBitForBit) {
  const Topology topology = topology_from(
      "system: {devices_per_node: 2}\nnetwork: {topology: {kind: dragonfly, p: 2, a: 4, h: 2, g: 9}}\n");
  expect_incremental_matches_full(Routing(topology, config::RoutingAlgorithm::kValiant), random_workload, 1000);
}

// Bursts of equal flows on an oversubscribed fat-tree with ECMP: many flows tie on rates and
// finish times, and components span most flows — the case the level-limited re-solve must get
// right. The incremental model must agree with full re-solves bit for bit and solve fewer flows.
std::vector<Delivery> burst_workload(const Routing& routing, bool incremental, FlowModelStats& stats) {
  FlowModel model(routing, FlowModelOptions{incremental, "max_min"});
  pdes::Random random(5, 2);
  const EndpointId n = routing.topology().num_endpoints();
  std::vector<Delivery> delivered;
  SimTime now;
  TransferId id = 0;
  for (int burst = 0; burst < 12; ++burst) {
    now += SimTime::from_ps(random.below(20'000'000));
    advance_to(model, now, delivered);
    const std::uint64_t bytes = burst % 2 == 0 ? 1'000'000 : 1 + random.below(2'000'000);
    for (int i = 0; i < 40; ++i, ++id) {
      model.start(now, {id, random.below(n), random.below(n), Bytes{bytes}, id});
    }
  }
  return finish(model, std::move(delivered), stats);
}

TEST(FlowModel, LevelLimitedResolvesAgreeWithFullOnAnOversubscribedFatTree) {
  const Topology topology = topology_from(
      "system: {devices_per_node: 1}\nnetwork: {topology: {kind: fat_tree, k: 4, levels: 3, oversubscription: [2]}}\n");
  expect_incremental_matches_full(Routing(topology, config::RoutingAlgorithm::kEcmp), burst_workload, 480);
}

TEST(FlowModel, ContendedIsNeverFasterThanAnalytical) {
  const Topology topology = topology_from(
      "system: {devices_per_node: 4}\nnetwork: {topology: {kind: fat_tree, k: 4, levels: 2}}\n");
  const Routing routing(topology, config::RoutingAlgorithm::kEcmp);
  const AnalyticalModel analytical(routing);
  FlowModel flow(routing);
  pdes::Random random(3, 3);
  std::vector<SimTime> isolated;
  for (TransferId id = 0; id < 200; ++id) {
    const EndpointId s = random.below(64);
    const EndpointId d = random.below(64);
    flow.start(SimTime::zero(), {id, s, d, Bytes{100'000}, id});
    isolated.push_back(analytical.transfer_time(s, d, Bytes{100'000}, id));
  }
  for (const Delivery& delivery : run_to_end(flow)) {
    EXPECT_GE(delivery.time, isolated[delivery.id]);
  }
}

TEST(ModelFactory, PacketModelIsNotImplementedYet) {
  const Topology topology = topology_from(kStar);
  const Routing routing(topology, config::RoutingAlgorithm::kMinimal);
  try {
    (void)make_model(config::NetworkModelKind::kPacket, routing);
    FAIL();
  } catch (const OrreryError& error) {
    EXPECT_EQ(error.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(error.what()).find("packet model is not implemented yet"), std::string::npos);
  }
}

}  // namespace
}  // namespace orrery::network
