#include "system/collective_plan.h"

#include <algorithm>
#include <bit>
#include <fmt/format.h>
#include <map>

#include "util/assert.h"
#include "util/error.h"

namespace orrery::system {

std::string_view collective_kind_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return "all_reduce";
    case CollectiveKind::kAllGather: return "all_gather";
    case CollectiveKind::kReduceScatter: return "reduce_scatter";
    case CollectiveKind::kAllToAll: return "all_to_all";
    case CollectiveKind::kPermute: return "collective_permute";
    case CollectiveKind::kBroadcast: return "collective_broadcast";
  }
  return "?";
}

std::string_view algorithm_name(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kRing: return "ring";
    case Algorithm::kTree: return "tree";
    case Algorithm::kHalvingDoubling: return "halving_doubling";
    case Algorithm::kDirect: return "direct";
    case Algorithm::kHierarchical: return "hierarchical";
    case Algorithm::kInSwitch: return "in_switch";
  }
  return "?";
}

namespace {
__extension__ using Wide = unsigned __int128;  // n·i can exceed 64 bits
}  // namespace

namespace {

// Bytes of segments [first, last) when n bytes are cut into `parts` segments (last <= parts).
// 64-bit arithmetic when n · last fits, as it does for any real collective (a 128-bit division is
// a library call).
std::uint64_t range_bytes(std::uint64_t n, std::uint64_t parts, std::uint64_t first, std::uint64_t last) {
  if (last == 0 || n <= UINT64_MAX / last) {
    return n * last / parts - n * first / parts;
  }
  const auto wide = static_cast<Wide>(n);
  return static_cast<std::uint64_t>(wide * last / parts - wide * first / parts);
}

}  // namespace

std::uint64_t segment_bytes(std::uint64_t n, std::uint64_t parts, std::uint64_t i) {
  return range_bytes(n, parts, i, i + 1);
}

namespace {

// --- ring ------------------------------------------------------------------------------------
// All-reduce = reduce-scatter (p-1 steps) + all-gather (p-1 steps); member m sends to m+1.
// Broadcast is the pipelined chain 0 -> 1 -> ... -> p-1.
class RingPlan final : public CollectivePlan {
 public:
  RingPlan(CollectiveKind kind, std::uint32_t p) : kind_(kind), p_(p) {}
  [[nodiscard]] Algorithm algorithm() const override { return Algorithm::kRing; }
  [[nodiscard]] std::uint32_t members() const override { return p_; }

  [[nodiscard]] std::uint32_t steps(std::uint32_t member, std::uint32_t /*lane*/) const override {
    if (p_ < 2) {
      return 0;
    }
    switch (kind_) {
      case CollectiveKind::kAllReduce: return 2 * (p_ - 1);
      case CollectiveKind::kBroadcast: return member == 0 || member == p_ - 1 ? 1 : 2;
      default: return p_ - 1;
    }
  }

  void step(std::uint32_t m, std::uint32_t /*lane*/, std::uint32_t s, std::uint64_t n, PlanStep& out) const override {
    out.clear();
    const std::uint32_t next = (m + 1) % p_;
    if (kind_ == CollectiveKind::kBroadcast) {
      const bool receives_first = m != 0;
      if (receives_first && s == 0) {
        out.receives = 1;
      } else if (m != p_ - 1) {
        out.sends.push_back(PlanSend{next, 0, n});
      }
      return;
    }
    const bool reducing = kind_ == CollectiveKind::kReduceScatter ||
                          (kind_ == CollectiveKind::kAllReduce && s < p_ - 1);
    out.receives = 1;
    if (reducing) {
      // Reduce-scatter step s: send segment m-s, receive and reduce segment m-s-1.
      out.sends.push_back(PlanSend{next, s, segment_bytes(n, p_, (m + p_ - s) % p_)});
      out.reduce_bytes = segment_bytes(n, p_, (m + 2 * p_ - s - 1) % p_);
    } else if (kind_ == CollectiveKind::kAllReduce) {
      // All-gather phase of all-reduce: member m starts with the reduced segment m+1.
      const std::uint32_t t = s - (p_ - 1);
      out.sends.push_back(PlanSend{next, s, segment_bytes(n, p_, (m + 1 + p_ - t) % p_)});
    } else {
      // All-gather step s: forward segment m-s (its own at step 0).
      out.sends.push_back(PlanSend{next, s, segment_bytes(n, p_, (m + p_ - s) % p_)});
    }
  }

 private:
  CollectiveKind kind_;
  std::uint32_t p_;
};

// --- direct ------------------------------------------------------------------------------------
// One step with a message to every other member (all-reduce: reduce-scatter step, then
// all-gather step). Broadcast: the root sends to everyone.
class DirectPlan final : public CollectivePlan {
 public:
  DirectPlan(CollectiveKind kind, std::uint32_t p) : kind_(kind), p_(p) {}
  [[nodiscard]] Algorithm algorithm() const override { return Algorithm::kDirect; }
  [[nodiscard]] std::uint32_t members() const override { return p_; }
  [[nodiscard]] std::uint32_t steps(std::uint32_t /*member*/, std::uint32_t /*lane*/) const override {
    if (p_ < 2) {
      return 0;
    }
    return kind_ == CollectiveKind::kAllReduce ? 2 : 1;
  }
  void step(std::uint32_t m, std::uint32_t /*lane*/, std::uint32_t s, std::uint64_t n, PlanStep& out) const override {
    out.clear();
    if (kind_ == CollectiveKind::kBroadcast) {
      if (m == 0) {
        for (std::uint32_t j = 1; j < p_; ++j) {
          out.sends.push_back(PlanSend{j, 0, n});
        }
      } else {
        out.receives = 1;
      }
      return;
    }
    out.receives = p_ - 1;
    const bool scatter = kind_ == CollectiveKind::kReduceScatter || kind_ == CollectiveKind::kAllToAll ||
                         (kind_ == CollectiveKind::kAllReduce && s == 0);
    for (std::uint32_t j = 0; j < p_; ++j) {
      if (j != m) {
        out.sends.push_back(PlanSend{j, s, segment_bytes(n, p_, scatter ? j : m)});
      }
    }
    if (kind_ == CollectiveKind::kReduceScatter || (kind_ == CollectiveKind::kAllReduce && s == 0)) {
      out.reduce_bytes = static_cast<std::uint64_t>(p_ - 1) * segment_bytes(n, p_, m);
    }
  }

 private:
  CollectiveKind kind_;
  std::uint32_t p_;
};

// --- recursive halving-doubling ------------------------------------------------------------------
// For q = 2^k members: reduce-scatter by recursive halving (step j: exchange half of the current
// block with the member whose bit q/2^(j+1) differs), all-gather by recursive doubling (step j:
// exchange the 2^j-segment block with the member whose bit 2^j differs). After the halving, member
// r holds segment r. For p not a power of two (all-reduce only), the p - q extra members first
// send their data to member r - q and get the result back at the end (Thakur et al., 2005).
class HalvingDoublingPlan final : public CollectivePlan {
 public:
  HalvingDoublingPlan(CollectiveKind kind, std::uint32_t p)
      : kind_(kind), p_(p), q_(std::bit_floor(std::max<std::uint32_t>(p, 1))),
        k_(static_cast<std::uint32_t>(std::countr_zero(q_))) {}
  [[nodiscard]] Algorithm algorithm() const override { return Algorithm::kHalvingDoubling; }
  [[nodiscard]] std::uint32_t members() const override { return p_; }

  [[nodiscard]] std::uint32_t steps(std::uint32_t m, std::uint32_t /*lane*/) const override {
    if (p_ < 2) {
      return 0;
    }
    if (kind_ != CollectiveKind::kAllReduce) {
      return k_;
    }
    return m >= q_ ? 2 : 2 * k_ + 2;  // extras: send, then receive the result
  }

  void step(std::uint32_t m, std::uint32_t /*lane*/, std::uint32_t s, std::uint64_t n, PlanStep& out) const override {
    out.clear();
    const std::uint32_t extra = p_ - q_;
    if (kind_ == CollectiveKind::kReduceScatter) {
      halving(m, s, 0, n, out);
      return;
    }
    if (kind_ == CollectiveKind::kAllGather) {
      doubling(m, s, 0, n, out);
      return;
    }
    if (m >= q_) {  // an extra member
      if (s == 0) {
        out.sends.push_back(PlanSend{m - q_, 0, n});
      } else {
        out.receives = 1;
      }
      return;
    }
    if (s == 0) {  // pre-step: absorb the extra member's data
      out.receives = m < extra ? 1 : 0;
      out.reduce_bytes = m < extra ? n : 0;
    } else if (s <= k_) {
      halving(m, s - 1, 1, n, out);
    } else if (s <= 2 * k_) {
      doubling(m, s - 1 - k_, 1 + k_, n, out);
    } else if (m < extra) {  // post-step: return the result to the extra member
      out.sends.push_back(PlanSend{m + q_, 1, n});
    }
  }

 private:
  void halving(std::uint32_t r, std::uint32_t j, std::uint32_t offset, std::uint64_t n, PlanStep& out) const {
    const std::uint32_t length = q_ >> j;
    const std::uint32_t half = length / 2;
    const std::uint32_t low = r & ~(length - 1);
    const bool upper = (r & half) != 0;  // keep the upper half, send the lower
    const std::uint32_t sent_first = upper ? low : low + half;
    const std::uint32_t kept_first = upper ? low + half : low;
    out.sends.push_back(PlanSend{r ^ half, offset + j, range_bytes(n, q_, sent_first, sent_first + half)});
    out.receives = 1;
    out.reduce_bytes = range_bytes(n, q_, kept_first, kept_first + half);
  }

  void doubling(std::uint32_t r, std::uint32_t j, std::uint32_t offset, std::uint64_t n, PlanStep& out) const {
    const std::uint32_t block = 1U << j;
    const std::uint32_t low = r & ~(block - 1);
    out.sends.push_back(PlanSend{r ^ block, offset + j, range_bytes(n, q_, low, low + block)});
    out.receives = 1;
  }

  CollectiveKind kind_;
  std::uint32_t p_;
  std::uint32_t q_;
  std::uint32_t k_;
};

// --- double binary tree (NCCL) --------------------------------------------------------------------
// Two binary trees in heap layout (children of position i: 2i+1, 2i+2), the second over the
// members in reverse order so that most leaves of one tree are inner nodes of the other; each
// tree carries half of the data. Per tree: reduce up (receive from children, send to parent),
// then broadcast down (receive from parent, send to children). Broadcast uses one tree.
class TreePlan final : public CollectivePlan {
 public:
  TreePlan(CollectiveKind kind, std::uint32_t p) : kind_(kind), p_(p) {}
  [[nodiscard]] Algorithm algorithm() const override { return Algorithm::kTree; }
  [[nodiscard]] std::uint32_t members() const override { return p_; }
  [[nodiscard]] std::uint32_t lanes() const override { return kind_ == CollectiveKind::kAllReduce ? 2 : 1; }
  [[nodiscard]] std::uint32_t steps(std::uint32_t /*member*/, std::uint32_t /*lane*/) const override {
    if (p_ < 2) {
      return 0;
    }
    return kind_ == CollectiveKind::kAllReduce ? 4 : 2;
  }

  void step(std::uint32_t m, std::uint32_t lane, std::uint32_t s, std::uint64_t n, PlanStep& out) const override {
    out.clear();
    const std::uint32_t position = lane == 0 ? m : p_ - 1 - m;
    auto member_at = [&](std::uint32_t pos) { return lane == 0 ? pos : p_ - 1 - pos; };
    const std::uint32_t first_child = 2 * position + 1;
    const std::uint32_t children = first_child >= p_ ? 0 : (first_child + 1 < p_ ? 2 : 1);
    const bool root = position == 0;
    if (kind_ == CollectiveKind::kBroadcast) {  // 0: receive from parent, 1: send to children
      if (s == 0) {
        out.receives = root ? 0 : 1;
      } else {
        for (std::uint32_t c = 0; c < children; ++c) {
          out.sends.push_back(PlanSend{member_at(first_child + c), 0, n});
        }
      }
      return;
    }
    const std::uint64_t bytes = segment_bytes(n, 2, lane);
    switch (s) {
      case 0:  // reduce: receive from the children
        out.receives = children;
        out.reduce_bytes = children * bytes;
        break;
      case 1:  // send the partial result to the parent
        if (!root) {
          out.sends.push_back(PlanSend{member_at((position - 1) / 2), 0, bytes});
        }
        break;
      case 2:  // broadcast: receive the result from the parent
        out.receives = root ? 0 : 1;
        break;
      default:  // pass it on to the children
        for (std::uint32_t c = 0; c < children; ++c) {
          out.sends.push_back(PlanSend{member_at(first_child + c), 2, bytes});
        }
        break;
    }
  }

 private:
  CollectiveKind kind_;
  std::uint32_t p_;
};

// --- hierarchical (intra-node, inter-node, intra-node) -------------------------------------------
// p = p1 members on each of p2 nodes. All-reduce: ring reduce-scatter inside each node (p1-1
// steps), ring all-reduce of each member's segment among the members with the same local index
// on other nodes (2(p2-1) steps), ring all-gather inside each node (p1-1 steps): inter-node
// traffic is divided by p1. Reduce-scatter: the first two phases (the inter phase a reduce-
// scatter); all-gather: an inter-node all-gather of each node's block, then the intra all-gather.
class HierarchicalPlan final : public CollectivePlan {
 public:
  HierarchicalPlan(CollectiveKind kind, const GroupShape& shape) : kind_(kind), p_(shape.members) {
    std::map<std::uint32_t, std::uint32_t> node_index;
    for (std::uint32_t m = 0; m < p_; ++m) {
      node_index.emplace(shape.node_of_member[m], static_cast<std::uint32_t>(node_index.size()));
    }
    nodes_ = static_cast<std::uint32_t>(node_index.size());
    per_node_ = p_ / nodes_;
    table_.assign(p_, 0);
    position_.resize(p_);
    std::vector<std::uint32_t> filled(nodes_, 0);
    for (std::uint32_t m = 0; m < p_; ++m) {
      const std::uint32_t node = node_index.at(shape.node_of_member[m]);
      const std::uint32_t local = filled[node]++;
      position_[m] = {node, local};
      table_[node * per_node_ + local] = m;
    }
  }
  [[nodiscard]] Algorithm algorithm() const override { return Algorithm::kHierarchical; }
  [[nodiscard]] std::uint32_t members() const override { return p_; }
  [[nodiscard]] std::uint32_t steps(std::uint32_t /*member*/, std::uint32_t /*lane*/) const override {
    switch (kind_) {
      case CollectiveKind::kAllReduce: return intra_steps() + inter_steps() + intra_steps();
      default: return intra_steps() + inter_steps();  // reduce-scatter: intra, inter; all-gather: inter, intra
    }
  }

  void step(std::uint32_t m, std::uint32_t /*lane*/, std::uint32_t s, std::uint64_t n, PlanStep& out) const override {
    out.clear();
    const auto [node, local] = position_[m];
    const std::uint32_t intra_next = table_[node * per_node_ + (local + 1) % per_node_];
    const std::uint32_t inter_next = table_[((node + 1) % nodes_) * per_node_ + local];
    const std::uint32_t a = intra_steps();
    const std::uint32_t b = inter_steps();
    // The node-level segment this member carries between nodes: after the intra reduce-scatter it
    // holds segment local+1 of the node's data (the ring's convention).
    const std::uint64_t carried = segment_bytes(n, per_node_, (local + 1) % per_node_);
    if (kind_ == CollectiveKind::kAllGather) {
      if (s < b) {  // inter-node all-gather of this member's block of the node's output
        RingPlan(CollectiveKind::kAllGather, nodes_).step(node, 0, s, segment_bytes(n, per_node_, local), out);
        remap(out, inter_next, s);
      } else {  // intra-node all-gather of the whole output
        RingPlan(CollectiveKind::kAllGather, per_node_).step(local, 0, s - b, n, out);
        remap(out, intra_next, s);
      }
      return;
    }
    if (s < a) {  // intra-node reduce-scatter
      RingPlan(CollectiveKind::kReduceScatter, per_node_).step(local, 0, s, n, out);
      remap(out, intra_next, s);
    } else if (s < a + b) {  // inter-node all-reduce (or reduce-scatter) of the carried segment
      const CollectiveKind inter = kind_ == CollectiveKind::kAllReduce ? CollectiveKind::kAllReduce
                                                                       : CollectiveKind::kReduceScatter;
      RingPlan(inter, nodes_).step(node, 0, s - a, carried, out);
      remap(out, inter_next, s);
    } else {  // intra-node all-gather
      RingPlan(CollectiveKind::kAllGather, per_node_).step(local, 0, s - a - b, n, out);
      remap(out, intra_next, s);
    }
  }

 private:
  [[nodiscard]] std::uint32_t intra_steps() const { return per_node_ - 1; }
  [[nodiscard]] std::uint32_t inter_steps() const {
    return kind_ == CollectiveKind::kAllReduce ? 2 * (nodes_ - 1) : nodes_ - 1;
  }
  // Sub-plans are rings: their single send goes to the ring's next member at the same global step.
  static void remap(PlanStep& out, std::uint32_t next, std::uint32_t global_step) {
    for (PlanSend& send : out.sends) {
      send.peer = next;
      send.peer_step = global_step;
    }
  }

  CollectiveKind kind_;
  std::uint32_t p_;
  std::uint32_t nodes_ = 1;
  std::uint32_t per_node_ = 1;
  std::vector<std::uint32_t> table_;  // [node * per_node + local] -> member
  std::vector<std::pair<std::uint32_t, std::uint32_t>> position_;  // member -> (node, local)
};

// --- in-switch reduction (NVLS / SHARP) ---------------------------------------------------------
// Every member sends its data to the scale-up switch, which reduces and multicasts the result:
// step 0 uploads n bytes, step 1 waits for the n-byte result.
class InSwitchPlan final : public CollectivePlan {
 public:
  explicit InSwitchPlan(std::uint32_t p) : p_(p) {}
  [[nodiscard]] Algorithm algorithm() const override { return Algorithm::kInSwitch; }
  [[nodiscard]] std::uint32_t members() const override { return p_; }
  [[nodiscard]] std::uint32_t steps(std::uint32_t /*member*/, std::uint32_t /*lane*/) const override {
    return p_ < 2 ? 0 : 2;
  }
  void step(std::uint32_t /*m*/, std::uint32_t /*lane*/, std::uint32_t s, std::uint64_t n, PlanStep& out) const override {
    out.clear();
    if (s == 0) {
      out.sends.push_back(PlanSend{kSwitchPeer, 1, n});
    } else {
      out.receives = 1;
    }
  }

 private:
  std::uint32_t p_;
};

// --- permute (collective_permute, send/recv) ---------------------------------------------------
class PermutePlan final : public CollectivePlan {
 public:
  explicit PermutePlan(const GroupShape& shape) : p_(shape.members), targets_(p_), receives_(p_, 0) {
    for (const auto& [source, target] : shape.pairs) {
      targets_[source].push_back(target);
      ++receives_[target];
    }
  }
  [[nodiscard]] Algorithm algorithm() const override { return Algorithm::kDirect; }
  [[nodiscard]] std::uint32_t members() const override { return p_; }
  [[nodiscard]] std::uint32_t steps(std::uint32_t m, std::uint32_t /*lane*/) const override {
    return targets_[m].empty() && receives_[m] == 0 ? 0 : 1;
  }
  void step(std::uint32_t m, std::uint32_t /*lane*/, std::uint32_t /*s*/, std::uint64_t n, PlanStep& out) const override {
    out.clear();
    for (const std::uint32_t target : targets_[m]) {
      out.sends.push_back(PlanSend{target, 0, n});
    }
    out.receives = receives_[m];
  }

 private:
  std::uint32_t p_;
  std::vector<std::vector<std::uint32_t>> targets_;
  std::vector<std::uint32_t> receives_;
};

bool hierarchy_is_regular(const GroupShape& shape) {
  if (shape.node_of_member.size() != shape.members || shape.members == 0) {
    return false;
  }
  std::map<std::uint32_t, std::uint32_t> counts;
  for (const std::uint32_t node : shape.node_of_member) {
    ++counts[node];
  }
  const std::uint32_t first = counts.begin()->second;
  return std::all_of(counts.begin(), counts.end(), [&](const auto& entry) { return entry.second == first; });
}

}  // namespace

bool plan_supported(CollectiveKind kind, Algorithm algorithm, const GroupShape& shape) {
  const bool power_of_two = std::has_single_bit(shape.members);
  switch (kind) {
    case CollectiveKind::kPermute:
      return algorithm == Algorithm::kDirect;
    case CollectiveKind::kAllToAll:
      return algorithm == Algorithm::kDirect;
    case CollectiveKind::kBroadcast:
      return algorithm == Algorithm::kRing || algorithm == Algorithm::kTree || algorithm == Algorithm::kDirect;
    case CollectiveKind::kAllReduce:
      switch (algorithm) {
        case Algorithm::kHierarchical: return hierarchy_is_regular(shape);
        default: return true;
      }
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      switch (algorithm) {
        case Algorithm::kRing:
        case Algorithm::kDirect: return true;
        case Algorithm::kHalvingDoubling: return power_of_two;
        case Algorithm::kHierarchical: return hierarchy_is_regular(shape);
        default: return false;
      }
  }
  return false;
}

std::unique_ptr<CollectivePlan> make_plan(CollectiveKind kind, Algorithm algorithm, const GroupShape& shape) {
  if (!plan_supported(kind, algorithm, shape)) {
    throw OrreryError(ErrorCode::kUnsupported,
                      fmt::format("no {} algorithm for {} over {} members{}", algorithm_name(algorithm),
                                  collective_kind_name(kind), shape.members,
                                  algorithm == Algorithm::kHierarchical
                                      ? " (hierarchical needs the same number of members on every node)"
                                      : ""));
  }
  const std::uint32_t p = shape.members;
  if (kind == CollectiveKind::kPermute) {
    return std::make_unique<PermutePlan>(shape);
  }
  switch (algorithm) {
    case Algorithm::kRing: return std::make_unique<RingPlan>(kind, p);
    case Algorithm::kDirect: return std::make_unique<DirectPlan>(kind, p);
    case Algorithm::kHalvingDoubling: return std::make_unique<HalvingDoublingPlan>(kind, p);
    case Algorithm::kTree: return std::make_unique<TreePlan>(kind, p);
    case Algorithm::kHierarchical: return std::make_unique<HierarchicalPlan>(kind, shape);
    case Algorithm::kInSwitch: return std::make_unique<InSwitchPlan>(p);
  }
  ORRERY_ASSERT(false, "unknown algorithm");
  return nullptr;
}

}  // namespace orrery::system
