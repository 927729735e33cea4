// Bandwidth sharing: given flows on links with capacities, the rate of every flow. The flow model
// calls a SharingSolver once per re-solve on the affected part of the flows and links; solvers
// are interchangeable (SimGrid's lmm design) and chosen by name.
//
// Arithmetic is exact: capacities and rates are integers in units of 1/1024 byte per second
// (RateUnits), shares are rounded down to a whole unit, and every sum is an integer sum, so a
// result does not depend on the order in which rates are added or subtracted. That is what lets
// the flow model re-solve only the flows above a rate level and still agree bit for bit with a
// solve from scratch (see MaxMinSolver). Rates are exact for the hand-solved cases whose answers
// are multiples of 1/1024 B/s; otherwise they are low by less than 1/1024 B/s.
//
// Determinism contract: the rates of a component depend only on that component — solving it
// alone or together with other components gives identical rates. Ties between links break on
// their keys (link ids).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string_view>
#include <vector>

namespace orrery::network {

using RateUnits = std::uint64_t;
inline constexpr double kRateUnitsPerBytePerSecond = 1024.0;
// The rate of a flow that crosses no link.
inline constexpr RateUnits kUnlimitedRate = std::numeric_limits<RateUnits>::max();

// Bytes per second -> rate units, rounded down; throws OrreryError(kModel) when the capacity is
// negative, not finite or above 2^62 units (about 4.5e15 B/s; sums of rates stay below 2^63).
RateUnits to_rate_units(double bytes_per_second);
// Rate units -> bytes per second (+infinity for kUnlimitedRate).
double to_bytes_per_second(RateUnits rate);

struct SharingProblem {
  // Link capacities (rate units), indexed by problem link index.
  std::vector<RateUnits> capacity;
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
  // Fills rates[f] (rate units) for every flow; a flow with no links gets kUnlimitedRate.
  // Throws OrreryError(kModel) when a share would round down to zero.
  virtual void solve(const SharingProblem& problem, std::vector<RateUnits>& rates) = 0;
};

// Max-min fairness by progressive filling in its bottleneck form (Bertsekas and Gallager, "Data
// Networks", 2nd ed., section 6.5.2): repeatedly take the link with the smallest fair share
//   share(l) = floor((capacity(l) - sum of rates already fixed on l) / (flows on l not yet fixed)),
// ties broken by link key; fix every unfixed flow on it at that share and charge the rate to each
// of the flow's links. Every flow ends with the share of its bottleneck. Shares never decrease as
// flows are fixed, so the queue holds lower bounds and re-queues lazily.
//
// Level property (what makes partial re-solves exact): the links are taken in order of their
// current (share, key), a function of the residual capacities and unfixed counts alone, and the
// shares taken never decrease. So the state after every take below a level L — residual(l) =
// capacity(l) minus the rates below L on l, unfixed(l) = the flows on l at or above L — is itself
// a sharing problem whose solution is exactly the rates at or above L. If flows are added or
// removed and every changed flow has its rate (old rate for a removed flow, new rate for an added
// one) at or above L, the takes below L do not change (no link of a changed flow is taken below
// L, and links without changed flows see the same state), so re-solving only the flows at or
// above L on their residual capacities gives the same rates as solving everything. An added flow
// g gets at least min over its links l of floor(capacity(l) / flows on l): if b is g's bottleneck
// with n flows, k of them fixed earlier at rates <= r_g and m = n - k at g's take, then
// r_g = floor((capacity(b) - sum) / m) > (capacity(b) - k r_g) / m - 1, so n r_g > capacity(b) - n.
class MaxMinSolver final : public SharingSolver {
 public:
  [[nodiscard]] std::string_view name() const override { return "max_min"; }
  void solve(const SharingProblem& problem, std::vector<RateUnits>& rates) override;

 private:
  // Scratch reused between solves (no allocation once warm).
  std::vector<RateUnits> residual_;
  std::vector<std::uint32_t> unfixed_;
  std::vector<std::uint32_t> link_begin_;
  std::vector<std::uint32_t> link_flows_;
  std::vector<std::uint32_t> cursor_;
  std::vector<std::uint8_t> fixed_;
  struct Entry {
    RateUnits share;
    std::uint32_t key;
    std::uint32_t link;
  };
  std::vector<Entry> heap_;
};

// "max_min"; throws OrreryError(kConfig) for other names.
std::unique_ptr<SharingSolver> make_sharing_solver(std::string_view name);

}  // namespace orrery::network
