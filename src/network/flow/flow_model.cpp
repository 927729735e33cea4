#include "network/flow/flow_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "util/assert.h"
#include "util/error.h"

namespace orrery::network {
namespace {

struct LaterFinish {
  template <class Entry>
  bool operator()(const Entry& a, const Entry& b) const {
    return a.time != b.time ? a.time > b.time : a.id > b.id;
  }
};

}  // namespace

FlowModel::FlowModel(const Routing& routing, FlowModelOptions options)
    : routing_(routing),
      options_(options),
      solver_(make_sharing_solver(options.solver)),
      link_flows_(routing.topology().graph().num_links()),
      link_allocated_(routing.topology().graph().num_links(), 0),
      link_visit_(routing.topology().graph().num_links(), 0),
      link_local_(routing.topology().graph().num_links(), 0) {
  const Graph& graph = routing.topology().graph();
  link_capacity_.reserve(graph.num_links());
  for (LinkId link = 0; link < graph.num_links(); ++link) {
    link_capacity_.push_back(to_rate_units(graph.link(link).bandwidth.value));
  }
}

void FlowModel::start(SimTime now, const TransferRequest& request) {
  ORRERY_ASSERT(now >= now_, "flow model: a transfer started in the past");
  run_until(now);
  if (slot_of_.contains(request.id) || draining_slot_.contains(request.id)) {
    throw OrreryError(ErrorCode::kModel, fmt::format("flow model: transfer id {} is already in flight", request.id));
  }
  std::uint32_t slot = 0;
  if (free_slots_.empty()) {
    slot = static_cast<std::uint32_t>(flows_.size());
    flows_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  Flow& flow = flows_[slot];
  flow.id = request.id;
  routing_.route(request.source, request.destination, request.flow_key, flow.path);
  flow.bytes = request.bytes.count;
  flow.remaining = request.bytes.count;
  flow.rated = false;
  flow.active = true;
  flow.updated = now;
  flow.latency = path_latency(routing_.topology().graph(), flow.path);
  slot_of_.emplace(request.id, slot);
  for (const LinkId link : flow.path) {
    link_flows_[link].push_back(slot);
  }
  dirty_flows_.push_back(slot);
  dirty_ = true;
}

SimTime FlowModel::next_event_time() {
  if (dirty_) {
    solve();
  }
  SimTime next = SimTime::max();
  if (!finishes_.empty()) {
    next = SimTime::from_ps(finishes_.front().time);
  }
  if (!deliveries_.empty() && deliveries_.front().time < next) {
    next = deliveries_.front().time;
  }
  // A caller that started a transfer after skipping a delivery time gets it now, not in the past.
  return next.is_max() ? next : std::max(next, now_);
}

void FlowModel::advance(SimTime time, std::vector<Delivery>& delivered) {
  ORRERY_ASSERT(time >= now_, "flow model: advance into the past");
  run_until(time);
  while (!deliveries_.empty() && deliveries_.front().time <= time) {
    std::pop_heap(deliveries_.begin(), deliveries_.end(), LaterFinish{});
    delivered.push_back(deliveries_.back());
    const auto draining = draining_slot_.find(deliveries_.back().id);
    free_slots_.push_back(draining->second);
    draining_slot_.erase(draining);
    deliveries_.pop_back();
  }
}

std::string FlowModel::describe_unfinishable() const {
  const Flow* first = nullptr;
  for (const Flow& flow : flows_) {
    if (flow.active && flow.rated && flow.finish.is_max() && (first == nullptr || flow.id < first->id)) {
      first = &flow;
    }
  }
  if (first == nullptr) {
    return {};
  }
  return fmt::format("transfer {} of {} bytes has {} bytes left at {:.6g} B/s ({:.6g} s from t={:.9g} s)", first->id,
                     first->bytes, first->remaining, first->rate,
                     first->rate > 0 ? static_cast<double>(first->remaining) / first->rate
                                     : std::numeric_limits<double>::infinity(),
                     first->updated.seconds());
}

std::uint64_t FlowModel::bytes_sent_in_flight(SimTime at, std::vector<std::uint64_t>* link_bytes) const {
  std::uint64_t total = 0;
  const auto count = [&](const Flow& flow, std::uint64_t sent) {
    total += sent;
    if (link_bytes != nullptr) {
      for (const LinkId link : flow.path) {  // a fluid flow crosses every link of its path at once
        (*link_bytes)[link] += sent;
      }
    }
  };
  for (const auto& [id, slot] : draining_slot_) {
    count(flows_[slot], flows_[slot].bytes);
  }
  for (const auto& [id, slot] : slot_of_) {
    const Flow& flow = flows_[slot];
    std::uint64_t sent = flow.bytes - flow.remaining;
    if (flow.rated && at > flow.updated) {
      const double more = std::floor(flow.rate * static_cast<double>((at - flow.updated).ps()) * 1e-12);
      sent += more >= static_cast<double>(flow.remaining) ? flow.remaining : static_cast<std::uint64_t>(more);
    }
    count(flow, sent);
  }
  return total;
}

std::optional<double> FlowModel::rate_of(TransferId id) {
  if (dirty_) {
    solve();
  }
  const auto it = slot_of_.find(id);
  return it == slot_of_.end() ? std::nullopt : std::optional<double>(flows_[it->second].rate);
}

void FlowModel::run_until(SimTime time) {
  for (;;) {
    complete_finished();
    if (now_ >= time) {
      return;
    }
    if (dirty_) {
      solve();
    }
    if (finishes_.empty() || SimTime::from_ps(finishes_.front().time) > time) {
      now_ = time;
      return;
    }
    now_ = SimTime::from_ps(finishes_.front().time);
  }
}

// Flows whose finish time has come stop sharing; they are delivered after their path latency.
void FlowModel::complete_finished() {
  while (!finishes_.empty() && finishes_.front().time <= now_.ps()) {
    std::pop_heap(finishes_.begin(), finishes_.end(), LaterFinish{});
    const FinishEntry entry = finishes_.back();
    finishes_.pop_back();
    Flow& flow = flows_[entry.slot];
    if (!flow.active || flow.version != entry.version || flow.id != entry.id) {
      continue;  // superseded by a later rate change
    }
    flow.active = false;
    deliveries_.push_back(Delivery{flow.id, flow.finish + flow.latency});
    // The slot (and its path) is kept until the delivery, for bytes_sent_in_flight.
    draining_slot_.emplace(flow.id, entry.slot);
    std::push_heap(deliveries_.begin(), deliveries_.end(), LaterFinish{});
    remove_from_links(entry.slot);
    slot_of_.erase(flow.id);
    dirty_ = true;
  }
}

// A finished flow leaves its links; the flows at or above its rate on them may speed up.
void FlowModel::remove_from_links(std::uint32_t slot) {
  const Flow& flow = flows_[slot];
  for (const LinkId link : flow.path) {
    auto& on_link = link_flows_[link];
    const auto it = std::find(on_link.begin(), on_link.end(), slot);
    *it = on_link.back();
    on_link.pop_back();
    link_allocated_[link] -= flow.rate_units;
    dirty_links_.emplace_back(flow.rate_units, link);
  }
}

// The least rate a new flow can get (MaxMinSolver's level property): min over its links of
// floor(capacity / flows on the link), counting every flow now on it.
RateUnits FlowModel::least_new_rate(std::uint32_t slot) const {
  RateUnits least = kUnlimitedRate;
  for (const LinkId link : flows_[slot].path) {
    least = std::min<RateUnits>(least, link_capacity_[link] / link_flows_[link].size());
  }
  return least;
}

// The flows to re-solve, split into components that are solved separately: every active flow
// (full), or, from each change (incremental), the flows reachable from its links through shared
// links whose rate is at or above the change's level, plus new flows. Changes are taken in order
// of increasing level, so a change reached from an earlier one joins it at the lower level (a
// lower level is always safe). Component c holds component_flows_[flow_end_[c-1] .. flow_end_[c])
// and component_links_[link_end_[c-1] .. link_end_[c]); every flow on one of its links at or
// above its level is in it, so the flows left out are exactly those below the level.
void FlowModel::collect_components() {
  ++epoch_;
  component_flows_.clear();
  component_links_.clear();
  flow_end_.clear();
  link_end_.clear();
  RateUnits level = 0;
  auto visit_link = [&](LinkId link) {
    if (link_visit_[link] != epoch_) {
      link_visit_[link] = epoch_;
      component_links_.push_back(link);
    }
  };
  auto visit_flow = [&](std::uint32_t slot) {
    Flow& flow = flows_[slot];
    if (flow.visit == epoch_ || !flow.active || (flow.rated && flow.rate_units < level)) {
      return;
    }
    flow.visit = epoch_;
    component_flows_.push_back(slot);
    for (const LinkId link : flow.path) {
      visit_link(link);
    }
  };
  // Grows the component from what was just added: breadth-first over links.
  std::size_t scanned = 0;
  auto close_component = [&]() {
    for (; scanned < component_links_.size(); ++scanned) {
      for (const std::uint32_t slot : link_flows_[component_links_[scanned]]) {
        visit_flow(slot);
      }
    }
    if (component_flows_.size() > (flow_end_.empty() ? 0 : flow_end_.back())) {
      flow_end_.push_back(component_flows_.size());
      link_end_.push_back(component_links_.size());
    } else {
      component_links_.resize(link_end_.empty() ? 0 : link_end_.back());  // links without flows
      scanned = component_links_.size();
    }
  };
  if (!options_.incremental) {
    for (const auto& [id, slot] : slot_of_) {
      visit_flow(slot);
      close_component();
    }
    return;
  }
  seeds_.clear();
  for (const std::uint32_t slot : dirty_flows_) {
    if (flows_[slot].active && !flows_[slot].rated) {
      seeds_.push_back(Seed{least_new_rate(slot), 0, slot});
    }
  }
  for (const auto& [from, link] : dirty_links_) {
    seeds_.push_back(Seed{from, 1, link});
  }
  std::sort(seeds_.begin(), seeds_.end());
  for (const Seed& seed : seeds_) {
    level = seed.level;
    if (seed.kind == 0) {
      visit_flow(seed.index);
    } else {
      visit_link(seed.index);
    }
    close_component();
  }
}

// Component c's sharing problem: its links with the capacity the flows below its level leave
// (capacity - allocated + the component's own old rates), and its flows.
void FlowModel::build_problem(std::size_t c) {
  const std::size_t first_flow = c == 0 ? 0 : flow_end_[c - 1];
  const std::size_t first_link = c == 0 ? 0 : link_end_[c - 1];
  problem_.clear();
  for (std::size_t i = first_link; i < link_end_[c]; ++i) {
    const LinkId link = component_links_[i];
    link_local_[link] = static_cast<std::uint32_t>(i - first_link);
    problem_.capacity.push_back(link_capacity_[link] - link_allocated_[link]);
    problem_.link_key.push_back(link);
  }
  for (std::size_t i = first_flow; i < flow_end_[c]; ++i) {
    const Flow& flow = flows_[component_flows_[i]];
    for (const LinkId link : flow.path) {
      problem_.flow_links.push_back(link_local_[link]);
      if (flow.rated) {
        problem_.capacity[link_local_[link]] += flow.rate_units;
      }
    }
    problem_.flow_begin.push_back(static_cast<std::uint32_t>(problem_.flow_links.size()));
  }
}

// A flow whose rate changed: account what it sent at the old rate, then its new finish time.
void FlowModel::set_rate(std::uint32_t slot, RateUnits units) {
  Flow& flow = flows_[slot];
  const double rate = to_bytes_per_second(units);
  for (const LinkId link : flow.path) {
    link_allocated_[link] += units - (flow.rated ? flow.rate_units : 0);  // exact modulo 2^64
  }
  if (flow.rated) {
    const double sent = std::floor(flow.rate * static_cast<double>((now_ - flow.updated).ps()) * 1e-12);
    const std::uint64_t keep = flow.remaining > 0 ? flow.remaining - 1 : 0;
    flow.remaining -= sent >= static_cast<double>(keep) ? keep : static_cast<std::uint64_t>(sent);
  }
  flow.rated = true;
  flow.rate_units = units;
  flow.rate = rate;
  flow.updated = now_;
  flow.finish = now_;
  if (flow.remaining > 0 && std::isfinite(rate)) {
    flow.finish = now_ + SimTime::from_seconds(static_cast<double>(flow.remaining) / rate);
  }
  ++flow.version;
  finishes_.push_back(FinishEntry{flow.finish.ps(), flow.id, slot, flow.version});
  ++stats_.rate_changes;
}

void FlowModel::solve() {
  const auto start = std::chrono::steady_clock::now();
  collect_components();
  const std::size_t heap_size = finishes_.size();
  for (std::size_t c = 0; c < flow_end_.size(); ++c) {
    build_problem(c);
    solver_->solve(problem_, rates_);
    const std::size_t first_flow = c == 0 ? 0 : flow_end_[c - 1];
    for (std::size_t i = 0; i < rates_.size(); ++i) {
      const Flow& flow = flows_[component_flows_[first_flow + i]];
      if (!flow.rated || rates_[i] != flow.rate_units) {
        set_rate(component_flows_[first_flow + i], rates_[i]);
      }
    }
    const std::size_t size = c == 0 ? flow_end_[0] : flow_end_[c] - flow_end_[c - 1];
    stats_.largest_component = std::max<std::uint64_t>(stats_.largest_component, size);
  }
  // New finish entries: sift each in, or rebuild the heap when they are many.
  if (finishes_.size() - heap_size > heap_size / 4) {
    std::make_heap(finishes_.begin(), finishes_.end(), LaterFinish{});
  } else {
    for (std::size_t i = heap_size; i < finishes_.size(); ++i) {
      std::push_heap(finishes_.begin(), finishes_.begin() + static_cast<std::ptrdiff_t>(i) + 1, LaterFinish{});
    }
  }
  dirty_flows_.clear();
  dirty_links_.clear();
  dirty_ = false;
  ++stats_.solves;
  stats_.solved_flows += component_flows_.size();
  stats_.solve_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace orrery::network
