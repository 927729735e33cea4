// The flow model at scale (bench/RESULTS.md, "Network"): a 32,768-endpoint fat-tree and a
// 16,512-endpoint dragonfly, with (a) a ring set (endpoint i to i + 1) and (b) 8 random
// permutations together. Reports the wall time of re-solving every flow at once (the first solve
// after all flows start, and a forced full re-solve), of an incremental re-solve after one flow
// starts, and of the full run to the last delivery.
//
//   network_bench [--quick] [--no-run] [--run-limit-s S] [--verify]
// --run-limit-s stops a full run after S seconds of wall time and reports how far it got.
// --verify runs each full run a second time with every re-solve a full one
// (FlowModelOptions::incremental = false) and reports whether the deliveries are bit-identical.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "config/scenario.h"
#include "network/flow/flow_model.h"
#include "network/routing/routing.h"
#include "pdes/random.h"

namespace orrery::network {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Case {
  std::string name;
  std::string scenario;
  config::RoutingAlgorithm routing;
};

struct Measurement {
  std::uint64_t flows = 0;
  double first_solve_s = 0;        // every flow dirty: the whole set solved at once
  double full_resolve_s = 0;       // a full re-solve of every active flow (FlowModelOptions::incremental = false)
  double incremental_resolve_s = 0;  // one more flow started: its component re-solved
  std::uint64_t incremental_component = 0;
  double run_s = 0;                // start to last delivery (incremental)
  std::uint64_t delivered = 0;     // deliveries when the run ended (all, or at the wall limit)
  std::uint64_t solves = 0;
  std::uint64_t solved_flows = 0;  // flows handed to the solver over the run
  double solve_s = 0;
  double completion_s = 0;
  const char* verified = "-";      // with --verify: deliveries identical to full re-solves?
  double verify_run_s = 0;
};

void add_flows(FlowModel& model, const Topology& topology, bool ring, std::uint32_t permutations,
               TransferId& next_id) {
  const EndpointId n = topology.num_endpoints();
  const std::uint64_t bytes = 1 << 20;
  if (ring) {
    for (EndpointId e = 0; e < n; ++e) {
      model.start(SimTime::zero(), {next_id, e, (e + 1) % n, Bytes{bytes}, next_id});
      ++next_id;
    }
    return;
  }
  pdes::Random random(1, 99);
  std::vector<EndpointId> permutation(n);
  for (std::uint32_t p = 0; p < permutations; ++p) {
    for (EndpointId e = 0; e < n; ++e) {
      permutation[e] = e;
    }
    for (EndpointId i = n; i > 1; --i) {
      std::swap(permutation[i - 1], permutation[random.below(i)]);
    }
    for (EndpointId e = 0; e < n; ++e) {
      model.start(SimTime::zero(), {next_id, e, permutation[e], Bytes{bytes}, next_id});
      ++next_id;
    }
  }
}

std::vector<Delivery> run_to_end(FlowModel& model, double limit_s) {
  std::vector<Delivery> delivered;
  const auto start = std::chrono::steady_clock::now();
  for (SimTime t = model.next_event_time(); !t.is_max(); t = model.next_event_time()) {
    model.advance(t, delivered);
    if (seconds_since(start) > limit_s) {
      break;
    }
  }
  return delivered;
}

Measurement measure(const Topology& topology, const Routing& routing, bool ring, bool run, double limit_s,
                    bool verify) {
  Measurement m;
  // Forced full re-solve: a second model that re-solves everything at each change.
  {
    FlowModel full(routing, FlowModelOptions{false, "max_min"});
    TransferId id = 0;
    add_flows(full, topology, ring, 8, id);
    (void)full.next_event_time();
    std::vector<Delivery> ignored;
    full.advance(SimTime::zero(), ignored);
    full.start(SimTime::from_ps(1), {id, 0, topology.num_endpoints() / 2 + 3, Bytes{1 << 20}, id});
    const auto start = std::chrono::steady_clock::now();
    (void)full.next_event_time();
    m.full_resolve_s = seconds_since(start);
  }
  FlowModel model(routing);
  TransferId id = 0;
  add_flows(model, topology, ring, 8, id);
  m.flows = id;
  auto start = std::chrono::steady_clock::now();
  (void)model.next_event_time();
  m.first_solve_s = seconds_since(start);
  std::vector<Delivery> delivered;
  model.advance(SimTime::zero(), delivered);
  const std::uint64_t before = model.stats().solved_flows;
  model.start(SimTime::from_ps(1), {id, 0, topology.num_endpoints() / 2 + 3, Bytes{1 << 20}, id});
  start = std::chrono::steady_clock::now();
  (void)model.next_event_time();
  m.incremental_resolve_s = seconds_since(start);
  m.incremental_component = model.stats().solved_flows - before;
  if (run) {
    start = std::chrono::steady_clock::now();
    SimTime last;
    for (SimTime t = model.next_event_time(); !t.is_max(); t = model.next_event_time()) {
      model.advance(t, delivered);
      last = t;
      if (seconds_since(start) > limit_s) {
        break;
      }
    }
    m.delivered = delivered.size();
    m.run_s = seconds_since(start) + m.first_solve_s;
    m.completion_s = last.seconds();
  }
  m.solves = model.stats().solves;
  m.solved_flows = model.stats().solved_flows;
  m.solve_s = model.stats().solve_seconds;
  if (run && verify) {
    // The same run twice from the start: level-limited re-solves against full re-solves.
    FlowModel incremental(routing);
    FlowModel full(routing, FlowModelOptions{false, "max_min"});
    TransferId a = 0;
    TransferId b = 0;
    add_flows(incremental, topology, ring, 8, a);
    add_flows(full, topology, ring, 8, b);
    const std::vector<Delivery> expected = run_to_end(incremental, limit_s);
    const auto verify_start = std::chrono::steady_clock::now();
    const std::vector<Delivery> got = run_to_end(full, limit_s);
    m.verify_run_s = seconds_since(verify_start);
    m.verified = got.size() == m.flows && got == expected ? "identical" : "DIFFERENT";
  }
  return m;
}

}  // namespace
}  // namespace orrery::network

int main(int argc, char** argv) {
  using namespace orrery;
  using namespace orrery::network;
  bool quick = false;
  bool run = true;
  double limit_s = 1e9;
  bool verify = false;
  for (int i = 1; i < argc; ++i) {
    quick = quick || std::strcmp(argv[i], "--quick") == 0;
    run = run && std::strcmp(argv[i], "--no-run") != 0;
    verify = verify || std::strcmp(argv[i], "--verify") == 0;
    if (std::strcmp(argv[i], "--run-limit-s") == 0 && i + 1 < argc) {
      limit_s = std::atof(argv[++i]);
    }
  }
  const std::vector<Case> cases = {
      {quick ? "fat-tree k=16 n=3 (4,096 endpoints)" : "fat-tree k=32 n=3 (32,768 endpoints)",
       std::string("system: {devices_per_node: 1}\nnetwork: {topology: {kind: fat_tree, k: ") + (quick ? "16" : "32") +
           ", levels: 3}}\n",
       config::RoutingAlgorithm::kDModK},
      {quick ? "dragonfly p=4 a=8 h=4 g=33 (1,056 endpoints)" : "dragonfly p=8 a=16 h=8 g=129 (16,512 endpoints)",
       quick ? "system: {devices_per_node: 1}\nnetwork: {topology: {kind: dragonfly, p: 4, a: 8, h: 4, g: 33}}\n"
             : "system: {devices_per_node: 1}\nnetwork: {topology: {kind: dragonfly, p: 8, a: 16, h: 8, g: 129}}\n",
       config::RoutingAlgorithm::kMinimal},
  };
  std::printf("%-48s %-16s %9s %10s %10s %16s %9s %9s %8s %10s %12s %12s %10s %10s\n", "topology", "pattern", "flows",
              "first_ms", "full_ms", "incr_ms(flows)", "run_s", "delivered", "solves", "ms/solve", "flows/solve",
              "sim_time_us", "vs_full", "full_run_s");
  for (const Case& c : cases) {
    const config::Scenario scenario = config::load_scenario_text(c.scenario, "bench", {});
    const auto build_start = std::chrono::steady_clock::now();
    const Topology topology = Topology::build(scenario.system, scenario.network);
    const Routing routing(topology, c.routing);
    std::fprintf(stderr, "built %s in %.2f s (%u links)\n", c.name.c_str(), seconds_since(build_start),
                 topology.graph().num_links());
    for (const bool ring : {true, false}) {
      const Measurement m = measure(topology, routing, ring, run, limit_s, verify);
      std::printf("%-48s %-16s %9lu %10.2f %10.2f %9.3f(%6lu) %9.2f %9lu %8lu %10.3f %12.1f %12.2f %10s %10.2f\n",
                  c.name.c_str(),
                  ring ? "ring" : "8 permutations", static_cast<unsigned long>(m.flows), m.first_solve_s * 1e3,
                  m.full_resolve_s * 1e3, m.incremental_resolve_s * 1e3,
                  static_cast<unsigned long>(m.incremental_component), m.run_s, static_cast<unsigned long>(m.delivered),
                  static_cast<unsigned long>(m.solves),
                  m.solves > 0 ? m.solve_s / static_cast<double>(m.solves) * 1e3 : 0.0,
                  m.solves > 0 ? static_cast<double>(m.solved_flows) / static_cast<double>(m.solves) : 0.0,
                  m.completion_s * 1e6, m.verified, m.verify_run_s);
      std::fflush(stdout);
    }
  }
  return 0;
}
