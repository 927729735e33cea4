// The flow model: every transfer is a fluid flow on its routed path, and flows share each link's
// bandwidth max-min fairly (progressive filling; the SimGrid-style fluid model of Velho, Schnorr,
// Casanova, Legrand, "On the validity of flow-level TCP network models for grid and cloud
// simulations", ACM TOMACS 2013, without its TCP corrections). A flow is delivered when its last
// byte has been sent plus its path's latency (sum of per-hop latencies):
//
//   delivery = finish + sum of link latencies,  finish = the time its remaining bytes reach 0.
//
// Rates are recomputed once per timestamp at which flows start or finish, and only for the flows
// that can change: starting from each changed flow's links, the flows reachable through shared
// links whose rate is at or above the change's level — a finished flow's old rate, or for a new
// flow the least rate it can get, min over its links of floor(capacity / flows on the link).
// Flows below the level keep their rates exactly, and the flows above it are re-solved on the
// capacity the lower flows leave (MaxMinSolver's level property, exact integer rates), so the
// result is the one a solve of every flow from scratch gives. Determinism:
//   - rates are integers (1/1024 B/s) and every sum of them is exact;
//   - remaining bytes are integers: at a rate change, sent = floor(rate * elapsed), and a flow
//     keeps at least one byte until its finish time;
//   - finish = last update + remaining / rate rounded up to a whole picosecond (SimTime rule);
//   - link ties break on link ids;
//   - a flow whose new rate equals its old one is left untouched, so a full re-solve of every
//     flow and the incremental re-solve give bit-identical results (tested).
#pragma once

#include <compare>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "network/flow/sharing_solver.h"
#include "network/model.h"
#include "network/routing/routing.h"

namespace orrery::network {

struct FlowModelOptions {
  bool incremental = true;            // false: re-solve every active flow at every change
  std::string_view solver = "max_min";
};

struct FlowModelStats {
  std::uint64_t solves = 0;             // re-solves (at most one per timestamp with changes)
  std::uint64_t solved_flows = 0;       // flows handed to the solver, summed over re-solves
  std::uint64_t largest_component = 0;  // most flows in one component re-solved
  std::uint64_t rate_changes = 0;       // flows whose rate changed
  double solve_seconds = 0.0;           // wall time in re-solves (component search, solver, updates)
};

class FlowModel final : public NetworkModel {
 public:
  explicit FlowModel(const Routing& routing, FlowModelOptions options = {});

  [[nodiscard]] std::string_view name() const override { return "flow"; }
  [[nodiscard]] bool contention_free() const override { return false; }
  void start(SimTime now, const TransferRequest& request) override;
  [[nodiscard]] SimTime next_event_time() override;
  void advance(SimTime time, std::vector<Delivery>& delivered) override;
  [[nodiscard]] std::size_t in_flight() const override { return slot_of_.size() + deliveries_.size(); }
  [[nodiscard]] std::uint64_t bytes_sent_in_flight(SimTime at, std::vector<std::uint64_t>* link_bytes) const override;
  [[nodiscard]] std::string describe_unfinishable() const override;

  // The current rate (bytes per second) of a transfer still sending; nullopt otherwise.
  [[nodiscard]] std::optional<double> rate_of(TransferId id);
  [[nodiscard]] const FlowModelStats& stats() const { return stats_; }
  [[nodiscard]] std::string_view solver_name() const { return solver_->name(); }

 private:
  struct Flow {
    TransferId id = 0;
    std::vector<LinkId> path;
    std::uint64_t bytes = 0;      // the transfer's size
    std::uint64_t remaining = 0;  // bytes still to send at `updated`
    RateUnits rate_units = 0;     // valid when `rated`
    double rate = 0.0;            // the same in bytes per second
    SimTime updated;
    SimTime finish;
    SimTime latency;
    std::uint32_t version = 0;
    std::uint32_t visit = 0;
    bool rated = false;
    bool active = false;
  };
  struct FinishEntry {
    std::uint64_t time;
    TransferId id;
    std::uint32_t slot;
    std::uint32_t version;
  };

  // Runs internal events (finishes and the re-solves between them) up to `time`, leaving the
  // changes at `time` itself unsolved.
  void run_until(SimTime time);
  void complete_finished();
  void solve();
  void collect_components();
  void build_problem(std::size_t component);
  void set_rate(std::uint32_t slot, RateUnits rate);
  [[nodiscard]] RateUnits least_new_rate(std::uint32_t slot) const;
  void remove_from_links(std::uint32_t slot);

  const Routing& routing_;
  FlowModelOptions options_;
  std::unique_ptr<SharingSolver> solver_;
  SimTime now_;
  std::vector<Flow> flows_;
  std::vector<std::uint32_t> free_slots_;
  std::unordered_map<TransferId, std::uint32_t> slot_of_;
  std::vector<std::vector<std::uint32_t>> link_flows_;  // per link: slots of the flows on it
  std::vector<RateUnits> link_capacity_;                // per link: bandwidth in rate units
  std::vector<RateUnits> link_allocated_;               // per link: sum of its rated flows' rates
  std::vector<std::uint32_t> link_visit_;
  std::vector<std::uint32_t> link_local_;
  std::uint32_t epoch_ = 0;
  std::vector<std::pair<RateUnits, LinkId>> dirty_links_;  // links of finished flows, their level
  std::vector<std::uint32_t> dirty_flows_;
  bool dirty_ = false;
  std::vector<FinishEntry> finishes_;  // min-heap on (time, id)
  std::vector<Delivery> deliveries_;   // min-heap on (time, id)
  std::unordered_map<TransferId, std::uint32_t> draining_slot_;  // sent, waiting for their latency
  // Re-solve scratch.
  std::vector<std::uint32_t> component_flows_;
  std::vector<std::size_t> flow_end_;  // per component: end of its flows in component_flows_
  std::vector<std::size_t> link_end_;  // per component: end of its links in component_links_
  struct Seed {
    RateUnits level;
    std::uint32_t kind;  // 0: a new flow (slot), 1: a finished flow's link
    std::uint32_t index;
    auto operator<=>(const Seed&) const = default;
  };
  std::vector<Seed> seeds_;
  std::vector<LinkId> component_links_;
  SharingProblem problem_;
  std::vector<RateUnits> rates_;
  FlowModelStats stats_;
};

}  // namespace orrery::network
