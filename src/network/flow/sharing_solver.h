// Bandwidth sharing: given flows on links with capacities, the rate of every flow. The flow model
// calls a SharingSolver once per re-solve on the affected component of flows and links; solvers
// are interchangeable (SimGrid's lmm design) and chosen by name.
//
// Determinism contract: the rates of a component depend only on that component — solving it
// alone or together with other components gives bit-identical rates. Flows are visited in the
// order given (canonical: by transfer id); ties between links break on their keys (link ids).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace orrery::network {

struct SharingProblem {
  // Link capacities (bytes per second), indexed by problem link index.
  std::vector<double> capacity;
  // The canonical tie-break key of each link (its global link id), so that links need not be
  // listed in canonical order; empty: the index is the key.
  std::vector<std::uint32_t> link_key;
  // Flow f uses links flow_links[flow_begin[f] .. flow_begin[f + 1]) (problem link indices).
  std::vector<std::uint32_t> flow_begin{0};
  std::vector<std::uint32_t> flow_links;

  [[nodiscard]] std::uint32_t num_flows() const { return static_cast<std::uint32_t>(flow_begin.size() - 1); }
  [[nodiscard]] std::uint32_t num_links() const { return static_cast<std::uint32_t>(capacity.size()); }
  void clear() {
    capacity.clear();
    link_key.clear();
    flow_begin.assign(1, 0);
    flow_links.clear();
  }
};

class SharingSolver {
 public:
  virtual ~SharingSolver() = default;
  [[nodiscard]] virtual std::string_view name() const = 0;
  // Fills rates[f] (bytes per second) for every flow; a flow with no links gets +infinity.
  virtual void solve(const SharingProblem& problem, std::vector<double>& rates) = 0;
};

// Max-min fairness by progressive filling in its bottleneck form (Bertsekas and Gallager, "Data
// Networks", 2nd ed., section 6.5.2): repeatedly take the link with the smallest fair share
//   share(l) = (capacity(l) - sum of rates already fixed on l) / (flows on l not yet fixed),
// ties broken by link key; fix every unfixed flow on it (in flow order) at that share and
// charge the rate to each of the flow's links. Every flow ends with the share of its bottleneck.
// Shares only grow as flows are fixed, so the queue holds lower bounds and re-queues lazily.
class MaxMinSolver final : public SharingSolver {
 public:
  [[nodiscard]] std::string_view name() const override { return "max_min"; }
  void solve(const SharingProblem& problem, std::vector<double>& rates) override;

 private:
  // Scratch reused between solves (no allocation once warm).
  std::vector<double> residual_;
  std::vector<std::uint32_t> unfixed_;
  std::vector<std::uint32_t> link_begin_;
  std::vector<std::uint32_t> link_flows_;
  std::vector<std::uint32_t> cursor_;
  std::vector<std::uint8_t> fixed_;
  struct Entry {
    double share;
    std::uint32_t key;
    std::uint32_t link;
  };
  std::vector<Entry> heap_;
};

// "max_min"; throws OrreryError(kConfig) for other names.
std::unique_ptr<SharingSolver> make_sharing_solver(std::string_view name);

}  // namespace orrery::network
