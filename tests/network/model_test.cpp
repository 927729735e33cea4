// The analytical model against hand computation, the max-min solver against hand-solved cases
// (dumbbell, parking lot, multi-bottleneck), and the flow model's timing and determinism
// (incremental and full re-solves agree bit for bit).
#include <gtest/gtest.h>

#include <bit>

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

// Solves a problem given as per-flow link lists.
std::vector<double> solve(const std::vector<double>& capacity, const std::vector<std::vector<std::uint32_t>>& flows) {
  SharingProblem problem;
  problem.capacity = capacity;
  for (const auto& links : flows) {
    problem.flow_links.insert(problem.flow_links.end(), links.begin(), links.end());
    problem.flow_begin.push_back(static_cast<std::uint32_t>(problem.flow_links.size()));
  }
  std::vector<double> rates;
  MaxMinSolver().solve(problem, rates);
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

TEST(MaxMin, ComponentsSolveTheSameAloneOrTogether) {
  // Rates of a component must not depend on other components (bit for bit).
  const std::vector<std::vector<std::uint32_t>> alone{{0, 1}, {1}, {0}};
  const auto a = solve({3, 7}, alone);
  const auto together = solve({5, 3, 11, 7}, {{0}, {1, 3}, {0, 2}, {3}, {2}, {1}});
  EXPECT_EQ(std::bit_cast<std::uint64_t>(a[0]), std::bit_cast<std::uint64_t>(together[1]));
  EXPECT_EQ(std::bit_cast<std::uint64_t>(a[1]), std::bit_cast<std::uint64_t>(together[3]));
  EXPECT_EQ(std::bit_cast<std::uint64_t>(a[2]), std::bit_cast<std::uint64_t>(together[5]));
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

// Random flows on a dragonfly: starts at random times, sizes from 1 B to 4 MB.
std::vector<Delivery> random_workload(const Routing& routing, bool incremental, FlowModelStats& stats) {
  FlowModel model(routing, FlowModelOptions{incremental, "max_min"});
  pdes::Random random(7, 1);
  const EndpointId n = routing.topology().num_endpoints();
  std::vector<Delivery> delivered;
  SimTime now;
  for (TransferId id = 0; id < 600; ++id) {
    now += SimTime::from_ps(random.below(2'000'000));
    for (SimTime t = model.next_event_time(); t <= now; t = model.next_event_time()) {
      model.advance(t, delivered);
    }
    const EndpointId source = random.below(n);
    EndpointId destination = random.below(n);
    // Several flows share start times, so a re-solve handles more than one change.
    model.start(now, {id, source, destination, Bytes{1 + random.below(4'000'000)}, id});
    if (id % 3 != 0) {
      model.start(now, {id + 100000, destination, source, Bytes{1 + random.below(100'000)}, id});
    }
  }
  auto rest = run_to_end(model);
  delivered.insert(delivered.end(), rest.begin(), rest.end());
  stats = model.stats();
  return delivered;
}

TEST(FlowModel, IncrementalAndFullResolvesAgreeBitForBit) {
  const Topology topology = topology_from(
      "system: {devices_per_node: 2}\nnetwork: {topology: {kind: dragonfly, p: 2, a: 4, h: 2, g: 9}}\n");
  const Routing routing(topology, config::RoutingAlgorithm::kValiant);
  FlowModelStats incremental_stats;
  FlowModelStats full_stats;
  const auto incremental = random_workload(routing, true, incremental_stats);
  const auto full = random_workload(routing, false, full_stats);
  EXPECT_EQ(incremental.size(), 1000U);
  EXPECT_EQ(incremental, full);
  EXPECT_EQ(incremental_stats.solves, full_stats.solves);
  // The incremental solver hands fewer flows to the solver.
  EXPECT_LT(incremental_stats.solved_flows, full_stats.solved_flows);
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
