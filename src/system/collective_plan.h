// Collective algorithms as per-member step schedules (DESIGN.md, "System"; the closed forms they
// reduce to are in ../shared/reference/collectives.md and docs/collectives.md).
//
// A plan describes, for member m of a group of p members, a sequence of steps per lane. When a
// member enters a step it starts all of the step's sends at once; the step ends when the step's
// expected receives have all arrived (and its local reduction is done); then the next step
// starts. A send names the peer and the peer's step that consumes it, so a receiver only counts
// arrivals per step. Lanes are independent pipelines (the two trees of NCCL's double binary
// tree); the executor splits the data into chunks and runs every chunk through the steps, so
// chunks pipeline. Plans compute steps arithmetically — nothing is stored per member — so a
// 32,768-member ring costs the same memory as a 4-member one.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace orrery::system {

enum class CollectiveKind : std::uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kPermute,    // collective_permute and point-to-point send/recv pairs
  kBroadcast,  // collective_broadcast: the first member of the group is the root
};
std::string_view collective_kind_name(CollectiveKind kind);

enum class Algorithm : std::uint8_t { kRing, kTree, kHalvingDoubling, kDirect, kHierarchical, kInSwitch };
std::string_view algorithm_name(Algorithm algorithm);

// A peer value meaning "the scale-up switch" (in-switch reduction).
inline constexpr std::uint32_t kSwitchPeer = 0xffffffffU;

struct PlanSend {
  std::uint32_t peer = 0;       // member index, or kSwitchPeer
  std::uint32_t peer_step = 0;  // the receiver's step that consumes it
  std::uint64_t bytes = 0;
};

struct PlanStep {
  std::vector<PlanSend> sends;
  std::uint32_t receives = 0;      // messages this step waits for
  std::uint64_t reduce_bytes = 0;  // bytes reduced locally once they are in (the γ term)
  void clear() {
    sends.clear();
    receives = 0;
    reduce_bytes = 0;
  }
};

// The byte count of segment i when n bytes are cut into `parts` near-equal segments; the
// segments sum to n exactly.
std::uint64_t segment_bytes(std::uint64_t n, std::uint64_t parts, std::uint64_t i);

class CollectivePlan {
 public:
  virtual ~CollectivePlan() = default;
  [[nodiscard]] virtual Algorithm algorithm() const = 0;
  [[nodiscard]] virtual std::uint32_t members() const = 0;
  [[nodiscard]] virtual std::uint32_t lanes() const { return 1; }
  [[nodiscard]] virtual std::uint32_t steps(std::uint32_t member, std::uint32_t lane) const = 0;
  // Fills `out` with step `index` of `member` in `lane`, for a chunk whose collective size is
  // `bytes` (the all-reduce input, the all-gather output, the reduce-scatter input, the
  // all-to-all total sent per member, the broadcast payload).
  virtual void step(std::uint32_t member, std::uint32_t lane, std::uint32_t index, std::uint64_t bytes,
                    PlanStep& out) const = 0;
};

// The shape a plan needs beyond the member count: the scale-up domain (node) of each member (for
// hierarchical plans) and, for permutes, who sends to whom.
struct GroupShape {
  std::uint32_t members = 0;
  std::vector<std::uint32_t> node_of_member;  // empty: every member on its own node
  // For kPermute: pairs (source member, target member).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
};

// Builds the plan; throws OrreryError(kUnsupported) naming the kind and algorithm when the
// combination does not exist (e.g. a tree all-to-all).
std::unique_ptr<CollectivePlan> make_plan(CollectiveKind kind, Algorithm algorithm, const GroupShape& shape);

// True when the algorithm is defined for the kind and the group shape (e.g. hierarchical needs
// the same number of members on every node).
bool plan_supported(CollectiveKind kind, Algorithm algorithm, const GroupShape& shape);

}  // namespace orrery::system
