// The network inside the PDES engine: `orrery traffic`'s driver gives identical results for 1, 2
// and 4 processes (threads standing in for MPI processes), for both models and both modes; the
// topology-aware partitioner keeps groups whole.
#include "network/engine_network.h"

#include <gtest/gtest.h>

#include <limits>

#include "network/model_factory.h"
#include "network/partitioner.h"
#include "network/traffic.h"
#include "network_test_util.h"
#include "pdes/in_process_group.h"

namespace orrery::network {
namespace {

using testing::scenario_from;

TrafficResult run_on(pdes::ProcessId processes, const config::Scenario& scenario, const TrafficOptions& options) {
  pdes::InProcessGroup group(processes);
  std::vector<TrafficResult> results(processes);
  group.run([&](pdes::Communicator& communicator) {
    results[communicator.rank()] = run_traffic(communicator, scenario, options);
  });
  return results[0];
}

void expect_same(const TrafficResult& a, const TrafficResult& b) {
  EXPECT_EQ(a.messages_sent, b.messages_sent);
  EXPECT_EQ(a.messages_delivered, b.messages_delivered);
  EXPECT_EQ(a.bytes_delivered, b.bytes_delivered);
  EXPECT_EQ(a.completion_time_s, b.completion_time_s);
  EXPECT_EQ(a.accepted_load, b.accepted_load);
  EXPECT_EQ(a.mean_latency_ns, b.mean_latency_ns);
  EXPECT_EQ(a.p99_latency_ns, b.p99_latency_ns);
  EXPECT_EQ(a.max_link_utilization, b.max_link_utilization);
  EXPECT_EQ(a.mean_link_utilization, b.mean_link_utilization);
}

TEST(Traffic, IdenticalForOneTwoAndFourProcesses) {
  const std::string base =
      "system: {devices_per_node: 2, endpoint_delay_ns: 500}\n"
      "network: {topology: {kind: dragonfly, p: 2, a: 4, h: 2, g: 9}}\n";
  for (const char* model : {"analytical", "flow"}) {
    const config::Scenario scenario = scenario_from(base, {std::string("network.model=") + model});
    TrafficOptions fixed;
    fixed.pattern = TrafficPattern::kRandomPermutation;
    fixed.bytes = 200'000;
    TrafficOptions load;
    load.pattern = TrafficPattern::kUniformRandom;
    load.load = 0.4;
    load.bytes = 32'768;
    load.duration_us = 10;
    for (const TrafficOptions& options : {fixed, load}) {
      const TrafficResult one = run_on(1, scenario, options);
      EXPECT_EQ(one.messages_delivered, options.load ? one.messages_delivered : 144U) << model;
      EXPECT_GT(one.messages_delivered, 0U);
      for (const pdes::ProcessId processes : {2U, 4U}) {
        SCOPED_TRACE(std::string(model) + (options.load ? " load" : " fixed") + " np=" + std::to_string(processes));
        const TrafficResult many = run_on(processes, scenario, options);
        expect_same(one, many);
        EXPECT_EQ(many.stats.lookahead, SimTime::from_ns(500));
      }
    }
  }
}

TEST(Traffic, ContentionShowsInTheFlowModel) {
  // Worst case on a dragonfly: every host of group i sends to group i+1 over a single global
  // cable; the flow model is far slower than the contention-free analytical model.
  const std::string base =
      "system: {devices_per_node: 1}\nnetwork: {topology: {kind: dragonfly, p: 2, a: 4, h: 2, g: 9}}\n";
  TrafficOptions options;
  options.pattern = TrafficPattern::kDragonflyWorstCase;
  options.bytes = 1'000'000;
  const TrafficResult analytical = run_on(1, scenario_from(base), options);
  const TrafficResult flow = run_on(1, scenario_from(base, {"network.model=flow"}), options);
  // 8 hosts of a group share one 50 GB/s global cable: 8 MB / 50 GB/s = 160 us, against 20 us alone.
  EXPECT_GT(*flow.completion_time_s, 160e-6);
  EXPECT_LT(*flow.completion_time_s, 162e-6);
  EXPECT_LT(*analytical.completion_time_s, 22e-6);
  EXPECT_NEAR(*flow.max_link_utilization, 1.0, 0.02);
}

TEST(Traffic, ASaturatedLinkIsFullyUtilisedUnderOfferedLoad) {
  // The same worst case at full offered load: the global cable of each group is the bottleneck,
  // carrying 1/8 of what the group's hosts inject. Messages pile up on it (processor sharing), so
  // few complete; its utilisation must count the bytes of those still crossing it, as
  // accepted_load does, or a saturated link reads as a third used.
  const std::string base =
      "system: {devices_per_node: 1}\nnetwork: {topology: {kind: dragonfly, p: 2, a: 4, h: 2, g: 9}, model: flow}\n";
  TrafficOptions options;
  options.pattern = TrafficPattern::kDragonflyWorstCase;
  options.load = 1.0;
  options.bytes = 262'144;
  options.duration_us = 200;
  const TrafficResult result = run_on(1, scenario_from(base), options);
  EXPECT_GT(*result.accepted_load, 0.11);
  EXPECT_LT(*result.accepted_load, 0.126);
  EXPECT_GT(*result.max_link_utilization, 0.9);
  EXPECT_LE(*result.max_link_utilization, 1.0 + 1e-9);
  expect_same(result, run_on(2, scenario_from(base), options));
}

TEST(Traffic, ATransferPastTheTimeRangeIsAnErrorOnEveryProcessCount) {
  // 1e18 B at 10 GB/s is 1e8 s, past the engine's 2^64 ps: the flow model cannot schedule its
  // finish. Both models must report the overflow, not end with it silently undelivered.
  const std::string base =
      "system: {devices_per_node: 1}\nnetwork: {topology: {kind: switch, nodes: 4, link_GBps: 10}}\n";
  TrafficOptions options;
  options.pattern = TrafficPattern::kRing;
  options.bytes = 1'000'000'000'000'000'000;
  for (const char* model : {"analytical", "flow"}) {
    for (const pdes::ProcessId processes : {1U, 2U}) {
      SCOPED_TRACE(std::string(model) + " np=" + std::to_string(processes));
      try {
        (void)run_on(processes, scenario_from(base, {std::string("network.model=") + model}), options);
        ADD_FAILURE() << "no error";
      } catch (const OrreryError& error) {
        EXPECT_EQ(error.error().code, ErrorCode::kModel);
        EXPECT_NE(std::string(error.what()).find("simulated time overflow"), std::string::npos) << error.what();
      }
    }
  }
  options.bytes = 100'000'000'000'000'000;  // 1e7 s: in range
  EXPECT_NEAR(*run_on(2, scenario_from(base, {"network.model=flow"}), options).completion_time_s, 1e7, 1.0);
}

TEST(Partitioner, KeepsDragonflyGroupsWhole) {
  const config::Scenario scenario =
      scenario_from("system: {devices_per_node: 1}\nnetwork: {topology: {kind: dragonfly, p: 2, a: 4, h: 2, g: 9}}\n");
  const Topology topology = Topology::build(scenario.system, scenario.network);
  const TopologyPartitioner partitioner(topology);
  const auto owners = partitioner.endpoint_owners(4);
  for (EndpointId e = 1; e < topology.num_endpoints(); ++e) {
    if (topology.unit_of(e) == topology.unit_of(e - 1)) {
      EXPECT_EQ(owners[e], owners[e - 1]) << e;
    }
    EXPECT_GE(owners[e], owners[e - 1]);
  }
  const pdes::PartitionMap map = partitioner.assign(topology.num_endpoints() + 4, 4);
  EXPECT_EQ(map.owner(topology.num_endpoints() + 3), 3U);  // replica of process 3
  pdes::ChannelTable channels;
  const NetworkPartitionReport report = report_network_partition(topology, "topology", map, channels);
  // 9 groups over 4 processes: 2 or 3 groups (16 or 24 hosts) each; only global cables are cut.
  for (const std::uint32_t count : report.endpoints_per_process) {
    EXPECT_TRUE(count == 16 || count == 24) << count;
  }
  std::uint64_t global = 0;
  for (const Link& link : topology.graph().links()) {
    global += link.kind == LinkKind::kGlobal ? 1 : 0;
  }
  EXPECT_GT(report.cut_links, 0U);
  EXPECT_LE(report.cut_links, global);
}

TEST(Partitioner, ProgramsAreSpreadOverEveryProcessWithNodesWhole) {
  // 4 devices per node, 64 ranks in place: programs of 24, 24 and 16 ranks (6, 6 and 4 nodes), as
  // pipeline stages lie; then a 2-rank program sharing a node with the third's last ranks.
  const config::Scenario scenario = scenario_from(
      "system: {devices_per_node: 4}\nnetwork: {topology: {kind: fat_tree, k: 8, levels: 2}}\n");
  const Topology topology = Topology::build(scenario.system, scenario.network);
  const Placement placement = Placement::make(config::PlacementPolicy::kLinear, topology, 66, 1);
  std::vector<std::uint32_t> program(66);
  for (std::uint32_t r = 0; r < 66; ++r) {
    program[r] = r < 24 ? 0 : r < 48 ? 1 : r < 64 ? 2 : 3;
  }
  // Ranks 64 and 65 (program 3) sit on node 16 alone: a program of one node.
  const pdes::PartitionMap map = program_balanced_partition(topology, placement, program, 66 + 2, 2);
  std::vector<std::vector<std::uint32_t>> ranks_on(4, std::vector<std::uint32_t>(2, 0));
  for (std::uint32_t r = 0; r < 66; ++r) {
    ++ranks_on[program[r]][map.owner(r)];
    if (r % 4 != 0) {
      EXPECT_EQ(map.owner(r), map.owner(r - 1)) << "a node stays whole: rank " << r;
    }
  }
  // Each program's nodes in contiguous halves: the first half of its nodes on process 0.
  EXPECT_EQ(ranks_on[0], (std::vector<std::uint32_t>{12, 12}));
  EXPECT_EQ(ranks_on[1], (std::vector<std::uint32_t>{12, 12}));
  EXPECT_EQ(ranks_on[2], (std::vector<std::uint32_t>{8, 8}));
  EXPECT_EQ(ranks_on[3], (std::vector<std::uint32_t>{2, 0}));
  EXPECT_EQ(map.owner(0), 0U);
  EXPECT_EQ(map.owner(23), 1U);
  EXPECT_EQ(map.owner(24), 0U);
  EXPECT_EQ(map.owner(66), 0U);  // the replicas: one per process
  EXPECT_EQ(map.owner(67), 1U);
  // A node shared by two programs goes with its lowest rank's: ranks 0-5 of program 0, 6-7 of 1.
  std::vector<std::uint32_t> shared(8, 0);
  shared[6] = shared[7] = 1;
  const Placement eight = Placement::make(config::PlacementPolicy::kLinear, topology, 8, 1);
  const pdes::PartitionMap two = program_balanced_partition(topology, eight, shared, 8, 2);
  EXPECT_EQ(two.owner(0), 0U);
  EXPECT_EQ(two.owner(3), 0U);
  EXPECT_EQ(two.owner(4), 1U);  // program 0's second node
  EXPECT_EQ(two.owner(7), 1U);
  // Programs of one node each (stages on one node apiece) take turns: 0, 1, 0 on two processes.
  const std::vector<std::uint32_t> stages = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2};
  const Placement twelve = Placement::make(config::PlacementPolicy::kLinear, topology, 12, 1);
  const pdes::PartitionMap turns = program_balanced_partition(topology, twelve, stages, 12, 2);
  EXPECT_EQ(turns.owner(0), 0U);
  EXPECT_EQ(turns.owner(4), 1U);
  EXPECT_EQ(turns.owner(8), 0U);
}

TEST(Partitioner, RanksFollowTheirEndpointsUnderAPlacement) {
  // Ranks placed round-robin over the nodes of a fat-tree: each rank's LP goes where its endpoint
  // goes, and the replica LPs follow the ranks.
  const config::Scenario scenario =
      scenario_from("system: {devices_per_node: 2}\nnetwork: {topology: {kind: fat_tree, k: 4, levels: 2}}\n");
  const Topology topology = Topology::build(scenario.system, scenario.network);
  const Placement placement = Placement::make(config::PlacementPolicy::kRoundRobin, topology, 20, 1);
  const TopologyPartitioner partitioner(topology, &placement);
  const pdes::PartitionMap map = partitioner.assign(20 + 2, 2);
  const auto owners = partitioner.endpoint_owners(2);
  for (std::uint32_t rank = 0; rank < 20; ++rank) {
    EXPECT_EQ(map.owner(rank), owners[placement.endpoint_of(rank)]) << rank;
  }
  EXPECT_EQ(map.owner(20), 0U);
  EXPECT_EQ(map.owner(21), 1U);
  // Pods (4 hosts = 8 endpoints each) stay whole: endpoints 0-15 on process 0, 16-31 on 1.
  EXPECT_EQ(owners[15], 0U);
  EXPECT_EQ(owners[16], 1U);
  // The report counts the endpoints the ranks use, by the ranks' processes: the 20 ranks, not the
  // 32 endpoints, and not endpoint e as if it were LP e.
  std::vector<pdes::LpId> lp_of_endpoint(topology.num_endpoints(), std::numeric_limits<pdes::LpId>::max());
  std::vector<std::uint32_t> ranks_on(2, 0);
  for (std::uint32_t rank = 0; rank < 20; ++rank) {
    lp_of_endpoint[placement.endpoint_of(rank)] = rank;
    ++ranks_on[map.owner(rank)];
  }
  const pdes::ChannelTable channels;
  const NetworkPartitionReport report =
      report_network_partition(topology, "topology", map, channels, &lp_of_endpoint);
  EXPECT_EQ(report.endpoints_per_process, ranks_on);
  EXPECT_EQ(ranks_on[0] + ranks_on[1], 20U);
}

}  // namespace
}  // namespace orrery::network

namespace orrery::network {
namespace {

// The recipe of docs/network.md for the system layer: rank LPs that are not endpoint ids (random
// placement), a payload variant with the model's own event, replicas after the ranks, and the
// placement-aware partitioner. Each rank sends 64 KiB to the next rank at t = 0; the delivery times
// must equal the flow model run directly as a state machine (injection delay added), for 1, 2
// and 4 processes.
struct RankStart {
  std::uint32_t rank;
};
using RankPayload = std::variant<RankStart, NetworkMessage>;

struct RankModel {
  const Placement& placement;
  EngineNetwork<RankPayload>& network;
  std::vector<SimTime>& arrivals;  // by receiving rank; written by the owning process only

  void handle(pdes::Engine<RankPayload>& engine, const pdes::Event<RankPayload>& event) {
    if (const auto* start = std::get_if<RankStart>(&event.payload)) {
      const std::uint32_t ranks = placement.devices();
      const std::uint32_t next = (start->rank + 1) % ranks;
      network.send(engine, TransferRequest{start->rank, placement.endpoint_of(start->rank), placement.endpoint_of(next),
                                           Bytes{65536}, start->rank});
      return;
    }
    if (const auto delivered = network.handle(engine, std::get<NetworkMessage>(event.payload))) {
      arrivals[placement.device_at(delivered->request.destination)] = engine.now();
    }
  }
};

TEST(EngineNetwork, SystemLayerRecipeMatchesTheStateMachine) {
  const config::Scenario scenario = scenario_from(
      "system: {devices_per_node: 4, endpoint_delay_ns: 700}\n"
      "network: {topology: {kind: fat_tree, k: 4, levels: 2}, placement: random, model: flow}\n");
  const Topology topology = Topology::build(scenario.system, scenario.network);
  const Routing routing(topology, scenario.network.routing);
  const std::uint32_t ranks = 40;
  const Placement placement = Placement::make(scenario.network.placement, topology, ranks, 5);
  const SimTime injection = SimTime::from_ns(700);

  // Reference: the state machine alone, every transfer starting at the injection delay.
  FlowModel reference(routing);
  for (std::uint32_t r = 0; r < ranks; ++r) {
    reference.start(injection,
                    {r, placement.endpoint_of(r), placement.endpoint_of((r + 1) % ranks), Bytes{65536}, r});
  }
  std::vector<SimTime> expected(ranks);
  std::vector<Delivery> deliveries;
  for (SimTime t = reference.next_event_time(); !t.is_max(); t = reference.next_event_time()) {
    reference.advance(t, deliveries);
  }
  for (const Delivery& d : deliveries) {
    expected[(d.id + 1) % ranks] = d.time;
  }

  for (const pdes::ProcessId processes : {1U, 2U, 4U}) {
    std::vector<SimTime> arrivals(ranks);
    pdes::InProcessGroup group(processes);
    group.run([&](pdes::Communicator& communicator) {
      const TopologyPartitioner partitioner(topology, &placement);
      const pdes::PartitionMap partition = partitioner.assign(ranks + processes, processes);
      EngineNetworkLayout layout;
      layout.lp_of_endpoint.assign(topology.num_endpoints(), kNoLp);
      for (std::uint32_t r = 0; r < ranks; ++r) {
        layout.lp_of_endpoint[placement.endpoint_of(r)] = r;
      }
      layout.replica_base = ranks;
      layout.injection_delay = injection;
      EngineNetwork<RankPayload> network(make_model(scenario.network.model, routing), layout);
      pdes::ChannelTable channels;
      network.declare_channels(channels, partition);
      pdes::Engine<RankPayload> engine(communicator, partition, channels, pdes::EngineOptions{});
      RankModel model{placement, network, arrivals};
      for (std::uint32_t r = 0; r < ranks; ++r) {
        engine.schedule(r, SimTime::zero(), RankStart{r});
      }
      const pdes::RunStats stats = engine.run(model);
      EXPECT_EQ(stats.lookahead, processes > 1 ? injection : SimTime::max());
    });
    EXPECT_EQ(arrivals, expected) << processes << " processes";
  }
}

}  // namespace
}  // namespace orrery::network
