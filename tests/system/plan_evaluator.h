// A tiny contention-free simulator of a CollectivePlan, for tests only: every transfer takes
// alpha + bytes * beta; a member's sends leave one after another on its own injection link
// (store-and-forward at bandwidth 1/beta); received data is reduced at gamma seconds per byte;
// the switch of an in-switch plan multicasts the reduced chunk once every member's upload is in.
// Returns the time the last member finishes, or a negative value if some member never finishes.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <tuple>
#include <vector>

#include "system/collective_plan.h"

namespace orrery::system::plan_testing {

struct AlphaBeta {
  double alpha = 0.0;
  double beta = 0.0;
  double gamma = 0.0;
};

struct Evaluation {
  double time = -1.0;
  std::vector<std::uint64_t> bytes_sent;  // per member
};

inline Evaluation evaluate(const CollectivePlan& plan, std::uint64_t n, std::uint32_t chunks, AlphaBeta ab) {
  const std::uint32_t p = plan.members();
  struct Arrival {
    double time;
    std::uint32_t member, lane, chunk, step;
    bool operator>(const Arrival& other) const { return time > other.time; }
  };
  using Key = std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>;  // member, lane, chunk
  std::priority_queue<Arrival, std::vector<Arrival>, std::greater<>> arrivals;
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t>, std::uint32_t> counts;
  std::map<Key, std::uint32_t> current;  // current step
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> switch_uploads;  // (lane, chunk)
  std::vector<double> link_free(p, 0.0);
  Evaluation result;
  result.bytes_sent.assign(p, 0);
  double finish = 0.0;
  std::uint32_t unfinished = 0;
  PlanStep step;

  auto chunk_bytes = [&](std::uint32_t c) { return segment_bytes(n, chunks, c); };
  // Enters step s of (m, lane, c) at time t and advances while steps complete at once.
  std::function<void(std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t, double)> enter;
  enter = [&](std::uint32_t m, std::uint32_t lane, std::uint32_t c, std::uint32_t s, double t) {
    for (;;) {
      if (s >= plan.steps(m, lane)) {
        finish = std::max(finish, t);
        --unfinished;
        current[{m, lane, c}] = s;
        return;
      }
      current[{m, lane, c}] = s;
      plan.step(m, lane, s, chunk_bytes(c), step);
      for (const PlanSend& send : step.sends) {
        const double depart = std::max(t, link_free[m]);
        link_free[m] = depart + send.bytes * ab.beta;
        result.bytes_sent[m] += send.bytes;
        if (send.peer == kSwitchPeer) {
          if (++switch_uploads[{lane, c}] == p) {  // the last upload: multicast the result
            for (std::uint32_t j = 0; j < p; ++j) {
              arrivals.push({link_free[m] + 2 * ab.alpha + send.bytes * ab.beta, j, lane, c, send.peer_step});
            }
          }
          continue;
        }
        arrivals.push({link_free[m] + ab.alpha, send.peer, lane, c, send.peer_step});
      }
      const std::uint32_t have = counts[{m, lane, c, s}];
      if (have < step.receives) {
        return;  // wait for arrivals
      }
      t += step.reduce_bytes * ab.gamma;
      ++s;
    }
  };

  for (std::uint32_t m = 0; m < p; ++m) {
    for (std::uint32_t lane = 0; lane < plan.lanes(); ++lane) {
      for (std::uint32_t c = 0; c < chunks; ++c) {
        ++unfinished;
        enter(m, lane, c, 0, 0.0);
      }
    }
  }
  while (!arrivals.empty()) {
    const Arrival a = arrivals.top();
    arrivals.pop();
    const std::uint32_t count = ++counts[{a.member, a.lane, a.chunk, a.step}];
    if (current[{a.member, a.lane, a.chunk}] != a.step) {
      continue;  // early: counted for when the member gets there
    }
    plan.step(a.member, a.lane, a.step, chunk_bytes(a.chunk), step);
    if (count == step.receives) {
      enter(a.member, a.lane, a.chunk, a.step + 1, a.time + step.reduce_bytes * ab.gamma);
    }
  }
  result.time = unfinished == 0 ? finish : -1.0;
  return result;
}

}  // namespace orrery::system::plan_testing
