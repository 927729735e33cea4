#include "system/simulation.h"

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <absl/container/node_hash_map.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>

#include "network/engine_network.h"
#include "network/model_factory.h"
#include "network/partitioner.h"
#include "network/routing/routing.h"
#include "network/topology/placement.h"
#include "network/topology/topology.h"
#include "pdes/engine.h"
#include "system/memory.h"
#include "system/rank_set.h"
#include "system/selection.h"
#include "util/assert.h"
#include "util/error.h"
#include "util/hash.h"

namespace orrery::system {
namespace {

// --- events --------------------------------------------------------------------------------------
struct ComputeDone {
  std::uint32_t op;
};
struct Settle {};
using network::MessageTag;
struct ReduceDone {
  MessageTag tag;
};
struct SwitchUpload {
  MessageTag tag;
};
struct SwitchDown {
  MessageTag tag;
  bool queued = false;  // already delayed behind the member's earlier downloads
};
struct CollectiveLaunched {
  std::uint32_t op;
  SimTime issued_at;
};
struct PeerLaunched {  // a point-to-point send or recv op's launch cost has passed
  std::uint32_t op;
};
// Contention-free networks: the sender knows when its sends are delivered, so it wakes itself.
struct SendsDelivered {  // the last send of a collective pipeline's step
  MessageTag tag;
};
struct PeerSendDelivered {  // a part of a point-to-point send
  std::uint32_t op;
};
struct ClearToSend {  // a receiver posted the recv of a send larger than system.p2p_eager_bytes
  MessageTag tag;     // the message's tag (part kWhole)
};
struct MemberStarted {  // a member of a permute or broadcast started it: its senders may send the rest
  std::uint32_t ordinal;
  std::uint32_t training_step;
  std::uint32_t member;
};
using Payload = std::variant<network::NetworkMessage, ComputeDone, Settle, ReduceDone, SwitchUpload, SwitchDown,
                             CollectiveLaunched, PeerLaunched, SendsDelivered, PeerSendDelivered, ClearToSend,
                             MemberStarted>;

constexpr pdes::Priority kSettlePriority = pdes::kMaxPriority - 1;  // after every other event of the instant

// --- message tags --------------------------------------------------------------------------------
// A tag's high word is the training step, whole: a member may run any number of steps ahead of a
// peer that has not consumed its data yet (a one-way permute's source, a broadcast root), and each
// step's data must reach its own step. The low word names the transfer within the step:
// Collective transfer: [63]=0 | ordinal 23 | plan step 20 | chunk 8 | lane 2 | training step mod 1024.
// Point-to-point:      [63]=1 | channel index 23 | occurrence 28 | part 2 | training step mod 1024
// (the channel index numbers the program's channel handles densely, so distinct handles never
// share a tag; the part says whether the transfer is the whole message or the eager head or the
// tail of a send larger than system.p2p_eager_bytes). The low word alone seeds a flow's path
// choice (flow_key), so paths repeat every 1,024 steps. A collective transfer's part (whole, or
// the eager head or the tail of a send held for its receiver: permutes and broadcasts) sits in the
// high word's bits 32-33, above the training step.
struct CollectiveTag {
  std::uint32_t ordinal;
  std::uint32_t step;
  std::uint32_t chunk;
  std::uint32_t lane;
  std::uint32_t training_step;
};
constexpr std::uint32_t kMaxOrdinal = 1U << 23;
constexpr std::uint32_t kMaxPlanSteps = 1U << 20;
constexpr std::uint32_t kMaxChunks = 256;
constexpr std::uint32_t kStepMask = 1023;

MessageTag encode(const CollectiveTag& t) {
  return MessageTag{(static_cast<std::uint64_t>(t.ordinal) << 40) | (static_cast<std::uint64_t>(t.step) << 20) |
                        (static_cast<std::uint64_t>(t.chunk) << 12) | (static_cast<std::uint64_t>(t.lane) << 10) |
                        (t.training_step & kStepMask),
                    t.training_step};
}
CollectiveTag decode(const MessageTag& tag) {
  return CollectiveTag{static_cast<std::uint32_t>((tag.low >> 40) & (kMaxOrdinal - 1)),
                       static_cast<std::uint32_t>((tag.low >> 20) & (kMaxPlanSteps - 1)),
                       static_cast<std::uint32_t>((tag.low >> 12) & 0xff),
                       static_cast<std::uint32_t>((tag.low >> 10) & 3), static_cast<std::uint32_t>(tag.high)};
}
constexpr std::uint64_t kPeerBit = 1ULL << 63;
constexpr std::uint32_t kMaxChannels = 1U << 23;
enum class Part : std::uint64_t { kWhole = 0, kHead = 1, kTail = 2 };
constexpr std::uint64_t kPeerPartShift = 10;
MessageTag peer_tag(std::uint32_t channel_index, std::uint32_t occurrence, std::uint32_t training_step) {
  return MessageTag{kPeerBit | (static_cast<std::uint64_t>(channel_index) << 40) |
                        ((static_cast<std::uint64_t>(occurrence) & ((1ULL << 28) - 1)) << 12) |
                        (training_step & kStepMask),
                    training_step};  // part kWhole
}
Part peer_part(const MessageTag& tag) { return static_cast<Part>((tag.low >> kPeerPartShift) & 3); }
MessageTag with_peer_part(MessageTag tag, Part part) {
  tag.low = (tag.low & ~(3ULL << kPeerPartShift)) | (static_cast<std::uint64_t>(part) << kPeerPartShift);
  return tag;
}
MessageTag whole_message(const MessageTag& tag) { return with_peer_part(tag, Part::kWhole); }
constexpr std::uint64_t kCollectivePartShift = 32;
MessageTag with_collective_part(MessageTag tag, Part part) {
  tag.high = (tag.high & 0xffffffffULL) | (static_cast<std::uint64_t>(part) << kCollectivePartShift);
  return tag;
}
// What a collective transfer counts for at its receiver: a whole message 2, its head or its tail 1
// (a step waits for 2 per message it receives, so a held send counts once both parts are in).
std::uint32_t arrival_units(const MessageTag& tag) {
  return static_cast<Part>((tag.high >> kCollectivePartShift) & 3) == Part::kWhole ? 2 : 1;
}
struct TagHash {
  std::size_t operator()(const MessageTag& tag) const { return hash_combine(tag.low, tag.high); }
};
std::uint64_t run_key(std::uint32_t ordinal, std::uint32_t training_step) {
  return (static_cast<std::uint64_t>(ordinal) << 32) | training_step;
}
// The (lane, chunk, step) counter key inside one run.
std::uint64_t arrival_key(std::uint32_t lane, std::uint32_t chunk, std::uint32_t step) {
  return (static_cast<std::uint64_t>(step) << 16) | (chunk << 2) | lane;
}

// --- per-rank state --------------------------------------------------------------------------------
struct Pipeline {
  std::uint32_t step = 0;
  std::uint32_t needed = 0;        // arrival units the current step waits for (2 per receive)
  std::uint32_t sending = 0;       // the current step's sends whose delivery the replicas report, and held sends
  std::uint64_t reduce_bytes = 0;  // what the current step reduces once it is done
  SimTime delivered_by;            // when the current step's sends timed at the source are all delivered
  bool wake_pending = false;       // a SendsDelivered event for the current step is scheduled
  bool started = false;
  bool waiting = false;            // entered `step` and waits until it is done (step_done)
};

// Who may hold whom in a permute or broadcast whose sends to one peer exceed
// system.p2p_eager_bytes (the sums over the run's chunks and steps): such a sender moves the first
// p2p_eager_bytes to that peer at once and the rest once the peer has started the collective and
// its notice (MemberStarted) has come back. Members of other collectives each wait for data from
// their senders, so none can run ahead of a peer; a permute's source or a broadcast's root waits
// for nothing and would run ahead of a slow receiver without this, as NCCL's buffers do not allow.
struct Rendezvous {
  std::vector<std::vector<std::uint32_t>> held_receivers;  // per sender member, ascending
  std::vector<std::vector<std::uint32_t>> held_senders;    // per receiver member: whom to notify, ascending
};

// The rest of a held send, waiting for its receiver's notice (Run::held keys it by the receiver).
struct HeldSend {
  std::uint32_t lane = 0;
  std::uint32_t chunk = 0;
  std::uint32_t step = 0;  // the sender's step, which waits for it
  std::uint64_t bytes = 0;
  MessageTag tag;  // part kTail, or kWhole when nothing moved before the notice
};

struct Run {
  bool issued = false;
  std::uint32_t training_step = 0;
  std::uint32_t exec_op = 0;
  std::uint32_t group = 0;
  std::uint32_t member = 0;
  const CollectivePlan* plan = nullptr;
  std::uint64_t bytes = 0;
  std::uint32_t chunks = 1;
  std::uint32_t lanes = 1;
  std::vector<Pipeline> pipelines;  // lane * chunks + chunk
  std::vector<std::uint32_t> next_chunk;  // per lane: the next chunk to start
  std::uint32_t finished = 0;
  SimTime issued_at;
  absl::flat_hash_map<std::uint64_t, std::uint32_t> arrivals;  // in arrival_units
  // Held sends (permutes and broadcasts only; see Rendezvous).
  const Rendezvous* rendezvous = nullptr;
  // Keyed by member; a broadcast root may send to every other member.
  absl::flat_hash_set<std::uint32_t> started_peers;                     // whose MemberStarted notice has come
  absl::flat_hash_map<std::uint32_t, std::uint64_t> eager_sent;        // bytes sent before the notice
  absl::flat_hash_map<std::uint32_t, std::vector<HeldSend>> held;      // sends waiting for the notice
};

struct StepRecord {
  std::uint64_t end_ps = 0;
  std::uint64_t start_ps = 0;
  std::uint64_t compute_ps = 0;
  std::uint64_t comm_ps = 0;
  std::uint64_t exposed_ps = 0;
};

// What a send in flight belongs to: a step of a collective's pipeline, or a point-to-point send op.
struct SendOwner {
  std::uint64_t run = 0;  // run_key; unused for a point-to-point send
  std::uint32_t ordinal = 0;
  std::uint32_t lane = 0;
  std::uint32_t chunk = 0;
  std::uint32_t step = 0;
  std::uint32_t peer_op = 0;
  bool peer = false;
};

// What has arrived of a point-to-point message: the whole of it, or its eager head and its tail.
struct PeerReceipt {
  std::uint64_t bytes = 0;
  bool whole = false;
  bool head = false;
  bool tail = false;
  [[nodiscard]] bool complete() const { return whole || (head && tail); }
};

struct RankState {
  std::uint32_t program = 0;
  std::uint32_t device = 0;
  network::EndpointId endpoint = 0;
  double slowdown = 1.0;
  std::uint32_t step = 0;
  std::uint32_t remaining = 0;
  bool finished = false;
  absl::flat_hash_map<std::uint32_t, std::uint32_t> waiting;  // exec op -> producers not yet done
  std::priority_queue<std::uint32_t, std::vector<std::uint32_t>, std::greater<>> ready_compute;
  std::set<std::uint32_t> ready_comm;
  std::vector<std::uint32_t> next_comm;     // per comm queue: its next collective's position in the queue
  std::vector<std::uint32_t> queue_active;  // per comm queue: its collectives launching or running
  bool comm_changed = false;  // a collective became ready or a queue's stream freed since the last issue pass
  std::vector<std::uint32_t> ready_peer;
  bool compute_busy = false;
  std::uint32_t running_op = 0;
  SimTime running_since;
  std::uint32_t active_comm = 0;
  std::uint32_t launching = 0;  // collectives issued whose launch cost is still running
  std::uint32_t peer_launching = 0;  // point-to-point ops whose launch cost is still running
  // runs, sends, waiting and Run::arrivals are touched by nearly every event, so they are Abseil's
  // maps (faster than std::unordered_map by about 10% of a 1,024-device run, bench/RESULTS.md).
  // Runs stay node-based: references to a Run are held while other runs are created. Abseil seeds
  // its hash per process, so none of them is iterated where the order could reach an output.
  absl::node_hash_map<std::uint64_t, Run> runs;
  std::unordered_map<MessageTag, PeerReceipt, TagHash> peer_arrived;  // by message: what has come of it
  std::unordered_map<MessageTag, std::uint32_t, TagHash> posted_recvs;  // message -> recv op waiting for it
  std::unordered_map<MessageTag, std::uint32_t, TagHash> awaiting_clearance;  // message -> send op whose tail waits
  std::unordered_set<MessageTag, TagHash> cleared;  // clear-to-send notices that came before their send
  std::unordered_map<std::uint32_t, std::uint32_t> send_parts;  // send op -> its transfers not yet delivered
  absl::flat_hash_map<std::uint64_t, SendOwner> sends;  // request id -> what waits for its delivery
  std::uint32_t peer_sends = 0;                        // point-to-point sends not yet delivered
  std::unordered_map<MessageTag, std::uint32_t, TagHash> switch_uploads;  // as the aggregator of in-switch groups
  SimTime switch_up_free;    // when this rank's uplink to the scale-up switch is free
  SimTime switch_down_free;  // when the switch's downlink to this rank is free
  bool settle_pending = false;
  // accounting
  SimTime last;
  StepRecord current;
  std::vector<StepRecord> records;
  std::uint64_t transfer_sequence = 0;
  std::uint64_t transfers = 0;
  std::uint64_t transfer_bytes = 0;
  // trace rows (output.detail), in event order
  std::vector<OpRow> trace_ops;
  std::vector<CollectiveRow> trace_collectives;
  std::vector<TransferRow> trace_transfers;
  absl::flat_hash_map<std::uint32_t, SimTime> peer_issued;  // send/recv op -> when it was issued
};

// A program's communication queues (system.comm_queues): each holds collectives, as exec ops in
// program order, that a rank issues in that order.
struct CommQueueSet {
  std::vector<std::vector<std::uint32_t>> order;
  absl::flat_hash_map<std::uint32_t, std::uint32_t> queue_of;  // exec op -> its queue
};

// A plan per (program, collective, group): plans are pure functions of the group, so they are
// shared by every member and cached.
struct PlanKey {
  std::uint32_t program;
  std::uint32_t collective;  // index into ProgramModel::collectives()
  std::uint32_t group;
  friend auto operator<=>(const PlanKey&, const PlanKey&) = default;
};

}  // namespace

class SystemModel {
 public:
  SystemModel(const SimulationInput& input, std::vector<std::unique_ptr<ProgramModel>>& programs,
              const network::Topology& topology, const network::Routing& routing,
              const network::Placement& placement, network::EngineNetwork<Payload>& network, std::uint32_t ranks)
      : scenario_(*input.scenario),
        programs_(programs),
        topology_(topology),
        routing_(routing),
        placement_(placement),
        network_(network),
        num_ranks_(ranks),
        injection_(SimTime::from_nanoseconds(scenario_.system.endpoint_delay_ns)),
        launch_(SimTime::from_nanoseconds(scenario_.system.collective_launch_ns)),
        p2p_launch_(SimTime::from_nanoseconds(scenario_.system.p2p_launch_ns)),
        eager_bytes_(scenario_.system.p2p_eager_bytes),
        states_(ranks),
        rank_program_(ranks),
        rank_device_(ranks) {
    const double reduction_gbps = scenario_.system.reduction_gbps;
    reduction_rate_ = reduction_gbps > 0 ? reduction_gbps * 1e9 : input.memory_bandwidth.value;
    for (std::uint32_t p = 0; p < programs_.size(); ++p) {
      const auto& ranks_of = programs_[p]->ranks();
      for (std::uint32_t device = 0; device < ranks_of.size(); ++device) {
        rank_program_[ranks_of[device]] = p;
        rank_device_[ranks_of[device]] = device;
      }
    }
    chunks_ = scenario_.system.chunks;
    in_flight_limit_ = scenario_.system.chunks_in_flight == 0 ? chunks_ : scenario_.system.chunks_in_flight;
    std::vector<std::uint32_t> straggling;
    for (const auto& straggler : scenario_.system.stragglers) {
      if (straggler.rank >= num_ranks_) {
        throw OrreryError(ErrorCode::kConfig,
                          fmt::format("system.stragglers: rank {} does not exist (the run has {} ranks)",
                                      straggler.rank, num_ranks_));
      }
      if (std::find(straggling.begin(), straggling.end(), straggler.rank) != straggling.end()) {
        throw OrreryError(ErrorCode::kConfig,
                          fmt::format("system.stragglers: rank {} is listed twice (give its slowdown once)",
                                      straggler.rank));
      }
      straggling.push_back(straggler.rank);
    }
    build_peer_routes();
    match_joint_collectives();
    build_comm_queues();
  }

  void initialise(pdes::Engine<Payload>& engine) {
    for (const pdes::LpId lp : engine.local_lps()) {
      if (lp >= num_ranks_) {
        continue;
      }
      RankState& rank = states_[lp];
      rank.program = rank_program_[lp];
      rank.device = rank_device_[lp];
      rank.queue_active.assign(queues_[rank.program].order.size(), 0);
      rank.endpoint = placement_.endpoint_of(lp);
      for (const auto& straggler : scenario_.system.stragglers) {
        if (straggler.rank == lp) {
          rank.slowdown *= 1.0 + straggler.slowdown_percent / 100.0;
        }
      }
      engine.schedule(lp, SimTime::zero(), Settle{}, kSettlePriority);
      rank.settle_pending = true;
      start_step(engine, lp, rank);
    }
  }

  void handle(pdes::Engine<Payload>& engine, const pdes::Event<Payload>& event) {
    const pdes::LpId lp = event.destination;
    if (lp >= num_ranks_) {
      if (const auto* message = std::get_if<network::NetworkMessage>(&event.payload)) {
        (void)network_.handle(engine, *message);
      }
      return;
    }
    RankState& rank = states_[lp];
    account(rank, engine.now());
    std::visit(
        [&](const auto& payload) {
          using T = std::decay_t<decltype(payload)>;
          if constexpr (std::is_same_v<T, network::NetworkMessage>) {
            if (auto delivered = network_.handle(engine, payload)) {
              if (delivered->kind == network::NetworkMessage::Kind::kSent) {
                on_sent(engine, lp, rank, delivered->request.id);
              } else {
                if (trace_transfers_) {
                  trace_transfer(engine, lp, rank, *delivered);
                }
                on_arrival(engine, lp, rank, delivered->tag, delivered->request.bytes.count);
              }
            }
          } else if constexpr (std::is_same_v<T, ComputeDone>) {
            rank.compute_busy = false;
            if (trace_ops_) {
              const auto [name, label] = op_strings_[rank.program].at(programs_[rank.program]->graph().op(payload.op).source);
              rank.trace_ops.push_back(
                  OpRow{lp, rank.step, name, label, rank.running_since.ps(), engine.now().ps()});
            }
            record_op(rank, payload.op, engine.now() - rank.running_since);
            complete(engine, lp, rank, payload.op);
          } else if constexpr (std::is_same_v<T, Settle>) {
            rank.settle_pending = false;
            decide(engine, lp, rank);
          } else if constexpr (std::is_same_v<T, ReduceDone>) {
            const CollectiveTag tag = decode(payload.tag);
            Run& run = rank.runs.at(run_key(tag.ordinal, tag.training_step));
            advance(engine, lp, rank, run, tag.ordinal, tag.lane, tag.chunk, tag.step + 1);
          } else if constexpr (std::is_same_v<T, SwitchUpload>) {
            on_switch_upload(engine, lp, rank, payload.tag);
          } else if constexpr (std::is_same_v<T, SwitchDown>) {
            on_switch_down(engine, lp, rank, payload);
          } else if constexpr (std::is_same_v<T, CollectiveLaunched>) {
            --rank.launching;
            --rank.active_comm;  // counted again by start_collective, or the op completes at once
            --rank.queue_active[queue_of(rank, payload.op)];
            rank.comm_changed = true;
            start_collective(engine, lp, rank, payload.op, payload.issued_at);
          } else if constexpr (std::is_same_v<T, PeerLaunched>) {
            --rank.peer_launching;
            start_peer_op(engine, lp, rank, payload.op);
          } else if constexpr (std::is_same_v<T, SendsDelivered>) {
            const CollectiveTag tag = decode(payload.tag);
            Run& run = rank.runs.at(run_key(tag.ordinal, tag.training_step));
            Pipeline& pipeline = run.pipelines[tag.lane * run.chunks + tag.chunk];
            ORRERY_ASSERT(pipeline.wake_pending && pipeline.step == tag.step, "a wake-up for a step not waiting");
            pipeline.wake_pending = false;
            resume(engine, lp, rank, run, tag.ordinal, tag.lane, tag.chunk);
          } else if constexpr (std::is_same_v<T, PeerSendDelivered>) {
            peer_part_delivered(engine, lp, rank, payload.op);
          } else if constexpr (std::is_same_v<T, ClearToSend>) {
            on_clear_to_send(engine, lp, rank, payload.tag);
          } else if constexpr (std::is_same_v<T, MemberStarted>) {
            on_member_started(engine, lp, rank, payload);
          }
        },
        event.payload);
  }

  // --- results ---------------------------------------------------------------------------------
  [[nodiscard]] const std::vector<RankState>& states() const { return states_; }
  [[nodiscard]] std::vector<RankState>& states() { return states_; }
  // Per program and IR op: time summed over ranks, in picoseconds (integers: the sum is the same in
  // any order, so the summary is identical for any process count).
  [[nodiscard]] const std::vector<std::vector<std::uint64_t>>& op_picoseconds() const { return op_ps_; }
  [[nodiscard]] const std::vector<std::vector<std::uint64_t>>& op_counts() const { return op_counts_; }
  [[nodiscard]] const std::map<std::string, std::uint64_t>& algorithm_counts() const { return algorithm_counts_; }

  // Why a rank has not finished (for the deadlock report).
  [[nodiscard]] std::string blocked_reason(std::uint32_t lp) const {
    const RankState& rank = states_[lp];
    const ProgramModel& program = *programs_[rank.program];
    std::string reason = fmt::format("rank {} ({} device {}), step {}: ", lp, program.label(), rank.device, rank.step + 1);
    const Run* waiting_run = nullptr;  // the issued run of the lowest key (the map's order is not stable)
    std::uint64_t waiting_key = 0;
    for (const auto& [key, run] : rank.runs) {
      if (run.issued && (waiting_run == nullptr || key < waiting_key)) {
        waiting_run = &run;
        waiting_key = key;
      }
    }
    if (waiting_run != nullptr) {
      const Run& run = *waiting_run;
      const ExecOp& exec = program.graph().op(run.exec_op);
      const auto& members = program.group_set(program.collective(run.exec_op).group_set).ranks[run.group];
      const Pipeline& first = run.pipelines.front();
      reason += fmt::format("waits in {} over ranks {} (its step {} of {})", program.describe_op(exec.source),
                            format_rank_set(members), first.step + 1, run.plan->steps(run.member, 0));
      if (!run.held.empty()) {
        std::uint32_t lowest = std::numeric_limits<std::uint32_t>::max();  // not the map's order
        for (const auto& [peer, sends] : run.held) {
          lowest = std::min(lowest, peer);
        }
        reason += fmt::format(", holding the rest of its data for rank {} until that rank starts it (only "
                              "system.p2p_eager_bytes = {} move before that)",
                              members[lowest], eager_bytes_);
      }
      return reason;
    }
    if (!rank.awaiting_clearance.empty()) {
      const auto first = std::min_element(
          rank.awaiting_clearance.begin(), rank.awaiting_clearance.end(), [](const auto& a, const auto& b) {
            return std::pair(a.first.high, a.first.low) < std::pair(b.first.high, b.first.low);
          });
      const std::uint32_t op = first->second;
      const PeerInfo& peer = program.peer(op);
      const std::uint32_t to = programs_[receiver_of_channel_.at(peer.channel)]->global_rank(peer.target_of[rank.device]);
      return reason + fmt::format("waits to send the rest of {} ({} bytes on channel {}) until rank {} posts the "
                                  "matching recv (only system.p2p_eager_bytes = {} of a send move before that)",
                                  program.describe_op(program.graph().op(op).source), peer.bytes, peer.channel, to,
                                  eager_bytes_);
    }
    if (!rank.posted_recvs.empty()) {
      const auto first = std::min_element(rank.posted_recvs.begin(), rank.posted_recvs.end(), [](const auto& a, const auto& b) {
        return std::pair(a.first.high, a.first.low) < std::pair(b.first.high, b.first.low);
      });  // the earliest step's, then the lowest tag: not the map's order
      const std::uint32_t op = first->second;
      return reason + fmt::format("waits for the data of {} (channel {})",
                                  program.describe_op(program.graph().op(op).source), program.peer(op).channel);
    }
    // The earliest in program order of the collectives its queues wait to issue.
    const CommQueueSet& queues = queues_[rank.program];
    std::optional<std::uint32_t> next;
    for (std::size_t q = 0; q < queues.order.size(); ++q) {
      if (rank.next_comm[q] < queues.order[q].size() &&
          (!next || queues.order[q][rank.next_comm[q]] < *next)) {  // exec ops are numbered in program order
        next = queues.order[q][rank.next_comm[q]];
      }
    }
    if (next) {
      return reason + fmt::format("waits for the inputs of its next collective {}",
                                  program.describe_op(program.graph().op(*next).source));
    }
    return reason + fmt::format("{} ops left", rank.remaining);
  }

 private:
  // --- communication queues ----------------------------------------------------------------------
  // Per program: the collectives (exec ops, in program order) of each queue, and each one's queue.
  // system.comm_queues single: one queue; per_group: one per set of device groups (ProgramModel
  // interns them, so the ops with the same replica groups share one), numbered by first use.
  void build_comm_queues() {
    const bool per_group = scenario_.system.comm_queues == config::CommQueues::kPerGroup;
    queues_.resize(programs_.size());
    for (std::size_t p = 0; p < programs_.size(); ++p) {
      const ProgramModel& program = *programs_[p];
      CommQueueSet& queues = queues_[p];
      std::unordered_map<std::uint32_t, std::uint32_t> queue_of_set;
      for (const std::uint32_t op : program.graph().collectives()) {
        std::uint32_t queue = 0;
        if (per_group) {
          const auto [it, inserted] = queue_of_set.try_emplace(
              program.collective(op).group_set, static_cast<std::uint32_t>(queue_of_set.size()));
          queue = it->second;
        }
        if (queue >= queues.order.size()) {
          queues.order.resize(queue + 1);
        }
        queues.order[queue].push_back(op);
        queues.queue_of.emplace(op, queue);
      }
    }
  }

  [[nodiscard]] std::uint32_t queue_of(const RankState& rank, std::uint32_t op) const {
    return queues_[rank.program].queue_of.at(op);
  }

  // --- time accounting ---------------------------------------------------------------------------
  static void account(RankState& rank, SimTime now) {
    const std::uint64_t dt = (now - rank.last).ps();
    if (dt > 0 && !rank.finished) {
      if (rank.compute_busy) {
        rank.current.compute_ps += dt;
      }
      if (rank.active_comm > 0 || !rank.posted_recvs.empty() || rank.peer_sends > 0 || rank.peer_launching > 0) {
        rank.current.comm_ps += dt;
        if (!rank.compute_busy) {
          rank.current.exposed_ps += dt;
        }
      }
    }
    rank.last = now;
  }

  void record_op(RankState& rank, std::uint32_t exec_op, SimTime duration) {
    const ProgramModel& program = *programs_[rank.program];
    const workload::OpId source = program.graph().op(exec_op).source;
    auto& picoseconds = op_ps_[rank.program];
    if (picoseconds.empty()) {
      picoseconds.assign(program.program().op_count(), 0);
      op_counts_[rank.program].assign(program.program().op_count(), 0);
    }
    picoseconds[source] += duration.ps();
    ++op_counts_[rank.program][source];
  }

  void mark_dirty(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank) {
    if (!rank.settle_pending) {
      rank.settle_pending = true;
      engine.send(lp, SimTime::zero(), Settle{}, kSettlePriority);
    }
  }

  // --- steps and dependencies ----------------------------------------------------------------------
  void start_step(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank) {
    const ExecGraph& graph = programs_[rank.program]->graph();
    rank.remaining = static_cast<std::uint32_t>(graph.size());
    rank.next_comm.assign(queues_[rank.program].order.size(), 0);
    rank.current = StepRecord{};
    rank.current.start_ps = engine.now().ps();
    for (const std::uint32_t op : graph.sources()) {
      make_ready(rank, op);
    }
    if (rank.remaining == 0) {
      finish_step(engine, lp, rank);
    }
  }

  void finish_step(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank) {
    rank.current.end_ps = engine.now().ps();
    rank.records.push_back(rank.current);
    ++rank.step;
    if (rank.step < scenario_.workload.steps) {
      start_step(engine, lp, rank);
    } else {
      rank.finished = true;
    }
  }

  void make_ready(RankState& rank, std::uint32_t op) {
    switch (programs_[rank.program]->graph().op(op).kind) {
      case ExecKind::kCompute: rank.ready_compute.push(op); break;
      case ExecKind::kCollective:
        rank.ready_comm.insert(op);
        rank.comm_changed = true;
        break;
      case ExecKind::kSend:
      case ExecKind::kRecv: rank.ready_peer.push_back(op); break;
    }
  }

  void complete(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, std::uint32_t op) {
    const ExecGraph& graph = programs_[rank.program]->graph();
    if (trace_collectives_ && (graph.op(op).kind == ExecKind::kSend || graph.op(op).kind == ExecKind::kRecv)) {
      trace_peer_op(engine, lp, rank, op);
    }
    for (const std::uint32_t consumer : graph.consumers(op)) {
      const std::uint32_t degree = graph.in_degree(consumer);
      if (degree == 1) {
        make_ready(rank, consumer);
        continue;
      }
      auto [it, inserted] = rank.waiting.try_emplace(consumer, degree);
      if (--it->second == 0) {
        rank.waiting.erase(it);
        make_ready(rank, consumer);
      }
    }
    mark_dirty(engine, lp, rank);
    if (--rank.remaining == 0) {
      finish_step(engine, lp, rank);
    }
  }

  // The settle step: every decision of the instant, after all of its events.
  void decide(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank) {
    if (rank.finished) {
      return;
    }
    // Each queue issues its ready collectives in its order while it has a free stream; queues are
    // visited in a fixed order, so the issue order of one instant is deterministic.
    // Only a newly ready collective or a freed stream lets a queue issue: the pass runs after one
    // (what it changes itself marks the rank for another settle).
    const CommQueueSet& queues = queues_[rank.program];
    const bool changed = std::exchange(rank.comm_changed, false);
    for (std::size_t q = 0; changed && q < queues.order.size(); ++q) {
      const std::vector<std::uint32_t>& order = queues.order[q];
      while (rank.queue_active[q] < scenario_.system.comm_streams && rank.next_comm[q] < order.size() &&
             rank.ready_comm.contains(order[rank.next_comm[q]])) {
        const std::uint32_t op = order[rank.next_comm[q]++];
        rank.ready_comm.erase(op);
        issue_collective(engine, lp, rank, op);
        if (rank.finished) {
          return;
        }
      }
    }
    while (!rank.ready_peer.empty()) {
      std::vector<std::uint32_t> batch;
      batch.swap(rank.ready_peer);
      std::sort(batch.begin(), batch.end());
      for (const std::uint32_t op : batch) {
        if (trace_collectives_) {
          rank.peer_issued[op] = engine.now();
        }
        if (p2p_launch_ > SimTime::zero() && takes_part(rank, op)) {
          ++rank.peer_launching;
          engine.send(lp, p2p_launch_, PeerLaunched{op});
          continue;
        }
        start_peer_op(engine, lp, rank, op);
        if (rank.finished) {
          return;
        }
      }
    }
    if (!rank.compute_busy && !rank.ready_compute.empty()) {
      const std::uint32_t op = rank.ready_compute.top();
      rank.ready_compute.pop();
      start_compute(engine, lp, rank, op);
    }
  }

  void start_compute(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, std::uint32_t op) {
    double factor = rank.slowdown;
    if (rank.active_comm > 0) {
      factor *= 1.0 + scenario_.system.interference;
    }
    if (scenario_.system.jitter_cv > 0) {
      const double draw = engine.random().normal(0.0, 1.0);
      factor *= std::max(0.0, 1.0 + scenario_.system.jitter_cv * draw);
    }
    const SimTime base = programs_[rank.program]->duration(op);
    const SimTime duration = factor == 1.0 ? base : SimTime::from_seconds(base.seconds() * factor);
    rank.compute_busy = true;
    rank.running_op = op;
    rank.running_since = engine.now();
    engine.send(lp, duration, ComputeDone{op});
  }

  // --- collectives ---------------------------------------------------------------------------------
  const CollectivePlan& plan_for(std::uint32_t program_index, std::uint32_t exec_op, std::uint32_t group,
                                 std::uint32_t& collective_index) {
    const ProgramModel& program = *programs_[program_index];
    const CollectiveInfo& info = program.collective(exec_op);
    collective_index = static_cast<std::uint32_t>(&info - program.collectives().data());
    const PlanKey key{program_index, collective_index, group};
    const auto found = plans_.find(key);
    if (found != plans_.end()) {
      return *found->second;
    }
    const GroupSet& set = program.group_set(info.group_set);
    GroupShape shape;
    shape.members = static_cast<std::uint32_t>(set.ranks[group].size());
    std::vector<network::EndpointId> endpoints;
    for (const std::uint32_t member : set.ranks[group]) {
      endpoints.push_back(placement_.endpoint_of(member));
      shape.node_of_member.push_back(topology_.node_of(endpoints.back()));
    }
    shape.pairs = info.pairs;
    const auto& choice = scenario_.system.collectives;
    std::optional<Algorithm> forced;
    auto forced_of = [](config::CollectiveAlgorithm algorithm) -> std::optional<Algorithm> {
      switch (algorithm) {
        case config::CollectiveAlgorithm::kAuto: return std::nullopt;
        case config::CollectiveAlgorithm::kRing: return Algorithm::kRing;
        case config::CollectiveAlgorithm::kTree: return Algorithm::kTree;
        case config::CollectiveAlgorithm::kHalvingDoubling: return Algorithm::kHalvingDoubling;
        case config::CollectiveAlgorithm::kDirect: return Algorithm::kDirect;
        case config::CollectiveAlgorithm::kHierarchical: return Algorithm::kHierarchical;
        case config::CollectiveAlgorithm::kInSwitch: return Algorithm::kInSwitch;
      }
      return std::nullopt;
    };
    switch (info.kind) {
      case CollectiveKind::kAllReduce: forced = forced_of(choice.all_reduce); break;
      case CollectiveKind::kAllGather: forced = forced_of(choice.all_gather); break;
      case CollectiveKind::kReduceScatter: forced = forced_of(choice.reduce_scatter); break;
      case CollectiveKind::kAllToAll: forced = forced_of(choice.all_to_all); break;
      case CollectiveKind::kBroadcast: forced = forced_of(choice.collective_broadcast); break;
      case CollectiveKind::kPermute: break;
    }
    Algorithm algorithm = Algorithm::kDirect;
    try {
      algorithm = select_algorithm(info.kind, forced, shape, info.bytes, selection_context(endpoints, shape));
    } catch (const OrreryError& error) {
      throw OrreryError(error.code(), fmt::format("{}: {}", program.describe_op(info.op), error.error().message));
    }
    auto plan = make_plan(info.kind, algorithm, shape);
    for (std::uint32_t lane = 0; lane < plan->lanes(); ++lane) {
      for (std::uint32_t m = 0; m < shape.members; ++m) {
        if (plan->steps(m, lane) >= kMaxPlanSteps) {
          throw OrreryError(ErrorCode::kUnsupported,
                            fmt::format("{}: {} over {} members needs more than {} steps",
                                        program.describe_op(info.op), algorithm_name(algorithm), shape.members,
                                        kMaxPlanSteps));
        }
      }
    }
    return *plans_.emplace(key, std::move(plan)).first->second;
  }

  // The message costs the auto rule weighs (selection.h): from the group's first member to the
  // next member on its node (intra), to the first member on another node (neighbour: a ring step),
  // and the largest latency and per-byte cost to any other node (far: the deepest tree edges).
  SelectionContext selection_context(const std::vector<network::EndpointId>& endpoints, const GroupShape& shape) {
    SelectionContext context;
    context.in_switch_reduction = scenario_.system.scale_up.in_switch_reduction;
    const network::Graph& graph = topology_.graph();
    const auto cost = [&](std::size_t to) {
      routing_.route(endpoints.front(), endpoints[to], 0, route_);
      double bandwidth = network::path_bottleneck(graph, route_).value;
      if (shape.node_of_member[to] != shape.node_of_member[0]) {
        // Across nodes: the device's share of its NIC when devices share one.
        bandwidth = std::min(bandwidth, topology_.injection_bandwidth(endpoints.front()).value);
      }
      return MessageCost{(injection_ + network::path_latency(graph, route_)).seconds(), 1.0 / bandwidth};
    };
    for (std::size_t m = 1; m < endpoints.size(); ++m) {
      if (shape.node_of_member[m] == shape.node_of_member[0]) {
        context.intra = cost(m);
        break;
      }
    }
    std::set<std::uint32_t> nodes_seen{shape.node_of_member[0]};
    for (std::size_t m = 1; m < endpoints.size(); ++m) {
      if (!nodes_seen.insert(shape.node_of_member[m]).second) {
        continue;  // one route per node
      }
      const MessageCost to_node = cost(m);
      if (nodes_seen.size() == 2) {
        context.neighbour = to_node;
      }
      context.far.alpha_s = std::max(context.far.alpha_s, to_node.alpha_s);
      context.far.beta_s_per_byte = std::max(context.far.beta_s_per_byte, to_node.beta_s_per_byte);
    }
    if (nodes_seen.size() == 1) {
      context.far = context.intra;
    }
    return context;
  }

  Run& run_of(RankState& rank, std::uint32_t ordinal, std::uint32_t training_step) {
    return rank.runs[run_key(ordinal, training_step)];
  }

  // Issues a collective on the comm stream: it starts after its launch cost.
  void issue_collective(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, std::uint32_t op) {
    const ProgramModel& program = *programs_[rank.program];
    const CollectiveInfo& info = program.collective(op);
    const SimTime launch = launch_of(info.kind);
    // A device outside every group, or in no pair of a permute, launches nothing.
    const bool member = program.group_set(info.group_set).group_of[rank.device] != GroupSet::kNoGroup &&
                        (info.kind != CollectiveKind::kPermute || info.paired[rank.device] != 0);
    if (launch > SimTime::zero() && member) {
      ++rank.active_comm;  // the stream is busy launching it
      ++rank.queue_active[queue_of(rank, op)];
      ++rank.launching;
      engine.send(lp, launch, CollectiveLaunched{op, engine.now()});
      return;
    }
    start_collective(engine, lp, rank, op, engine.now());
  }

  // A library runs collective_permute and all_to_all as grouped point-to-point sends and receives
  // (XLA's GPU runtime as NCCL sends and recvs): they take the point-to-point launch cost
  // (system.p2p_launch_ns); the other kinds are collective kernels (system.collective_launch_ns).
  [[nodiscard]] SimTime launch_of(CollectiveKind kind) const {
    return kind == CollectiveKind::kPermute || kind == CollectiveKind::kAllToAll ? p2p_launch_ : launch_;
  }

  void start_collective(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, std::uint32_t op,
                        SimTime issued_at) {
    const ProgramModel& program = *programs_[rank.program];
    const ExecOp& exec = program.graph().op(op);
    const CollectiveInfo& info = program.collective(op);
    const GroupSet& set = program.group_set(info.group_set);
    const std::uint32_t group = set.group_of[rank.device];
    if (group == GroupSet::kNoGroup) {
      complete(engine, lp, rank, op);  // this device takes no part
      return;
    }
    std::uint32_t collective_index = 0;
    const CollectivePlan& plan = plan_for(rank.program, op, group, collective_index);
    const std::uint32_t training_step = rank.step;
    const std::uint32_t ordinal = match_of(rank.program, exec.ordinal);
    const std::uint64_t key = run_key(ordinal, training_step);
    Run& run = run_of(rank, ordinal, training_step);
    run.issued = true;
    run.training_step = training_step;
    run.exec_op = op;
    run.group = group;
    run.member = set.position_of[rank.device];
    run.plan = &plan;
    run.bytes = info.bytes;
    run.chunks = chunks_;
    run.lanes = plan.lanes();
    run.pipelines.assign(static_cast<std::size_t>(run.lanes) * run.chunks, Pipeline{});
    run.next_chunk.assign(run.lanes, 0);
    run.issued_at = issued_at;
    run.rendezvous = rendezvous_for(PlanKey{rank.program, collective_index, group}, plan, info);
    if (run.rendezvous != nullptr) {
      // Tell the members that may hold sends for this one that it has started.
      const MessageTag route_tag = encode(CollectiveTag{ordinal, 0, 0, 0, training_step});
      for (const std::uint32_t sender : run.rendezvous->held_senders[run.member]) {
        const std::uint32_t to = set.ranks[group][sender];
        engine.send(to, notice_delay(lp, to, route_tag), MemberStarted{ordinal, training_step, run.member});
      }
    }
    if (run.member == 0 && rank.step == 0) {  // one count per collective instance of the first step
      ++algorithm_counts_[fmt::format("{}: {}", collective_kind_name(info.kind), algorithm_name(plan.algorithm()))];
    }
    ++rank.active_comm;
    ++rank.queue_active[queue_of(rank, op)];
    const std::uint32_t lanes = run.lanes;
    const std::uint32_t first_chunks = std::min(run.chunks, in_flight_limit_);
    for (std::uint32_t lane = 0; lane < lanes; ++lane) {
      for (std::uint32_t started = 0; started < first_chunks; ++started) {
        const auto it = rank.runs.find(key);
        if (it == rank.runs.end()) {
          return;  // the collective finished at once (e.g. no steps for this member)
        }
        Run& current = it->second;
        if (current.next_chunk[lane] >= first_chunks) {
          break;
        }
        const std::uint32_t chunk = current.next_chunk[lane]++;
        current.pipelines[lane * current.chunks + chunk].started = true;
        advance(engine, lp, rank, current, ordinal, lane, chunk, 0);
      }
    }
  }

  // The Rendezvous of a permute or broadcast (plan `key`) with a send to one peer larger than
  // system.p2p_eager_bytes; null for every other collective. Built once per plan from the plan's
  // own steps, the way the members will send.
  const Rendezvous* rendezvous_for(const PlanKey& key, const CollectivePlan& plan, const CollectiveInfo& info) {
    if (info.kind != CollectiveKind::kPermute && info.kind != CollectiveKind::kBroadcast) {
      return nullptr;
    }
    const auto found = rendezvous_.find(key);
    if (found != rendezvous_.end()) {
      return found->second.get();
    }
    auto table = std::make_unique<Rendezvous>();
    table->held_receivers.resize(plan.members());
    table->held_senders.resize(plan.members());
    bool any = false;
    PlanStep step;
    absl::flat_hash_map<std::uint32_t, std::uint64_t> to_peer;  // one member's bytes per peer
    std::vector<std::uint32_t> held;
    for (std::uint32_t member = 0; member < plan.members(); ++member) {
      to_peer.clear();
      for (std::uint32_t lane = 0; lane < plan.lanes(); ++lane) {
        for (std::uint32_t index = 0; index < plan.steps(member, lane); ++index) {
          for (std::uint32_t chunk = 0; chunk < chunks_; ++chunk) {
            plan.step(member, lane, index, segment_bytes(info.bytes, chunks_, chunk), step);
            for (const PlanSend& send : step.sends) {
              if (send.peer != kSwitchPeer) {
                to_peer[send.peer] += send.bytes;
              }
            }
          }
        }
      }
      held.clear();
      for (const auto& [peer, total] : to_peer) {
        if (total > eager_bytes_) {
          held.push_back(peer);
        }
      }
      std::sort(held.begin(), held.end());  // the map's order is not stable
      for (const std::uint32_t peer : held) {
        table->held_senders[peer].push_back(member);  // members ascend, so each list does too
      }
      any = any || !held.empty();
      table->held_receivers[member] = held;
    }
    if (!any) {
      table.reset();
    }
    return rendezvous_.emplace(key, std::move(table)).first->second.get();
  }

  // How many of `bytes` sent to `peer` in `run` may move now: all of them unless the send is held
  // (Rendezvous) and the peer's notice has not come, else what is left of p2p_eager_bytes.
  std::uint64_t movable_bytes(Run& run, std::uint32_t peer, std::uint64_t bytes) const {
    if (run.rendezvous == nullptr || peer == kSwitchPeer) {
      return bytes;
    }
    const auto& held = run.rendezvous->held_receivers[run.member];
    if (!std::binary_search(held.begin(), held.end(), peer) || run.started_peers.contains(peer)) {
      return bytes;
    }
    std::uint64_t& sent = run.eager_sent[peer];
    const std::uint64_t now = std::min(bytes, eager_bytes_ - sent);
    sent += now;
    return now;
  }

  // A member of a permute or broadcast this rank sends to has started it: send what is held for
  // it, or remember the notice for sends not made yet.
  void on_member_started(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, const MemberStarted& started) {
    const std::uint64_t key = run_key(started.ordinal, started.training_step);
    Run& run = run_of(rank, started.ordinal, started.training_step);
    run.started_peers.insert(started.member);
    run.eager_sent.erase(started.member);
    const auto found = run.held.find(started.member);
    if (found == run.held.end()) {
      return;  // nothing sent to it yet: its sends will go whole
    }
    const std::vector<HeldSend> released = std::move(found->second);
    run.held.erase(found);
    for (const HeldSend& h : released) {
      Run& current = rank.runs.at(key);  // each held send keeps its step, and so the run, alive
      Pipeline& pipeline = current.pipelines[h.lane * current.chunks + h.chunk];
      ORRERY_ASSERT(pipeline.step == h.step && pipeline.sending > 0, "a held send outlived the step that sent it");
      const Sent sent = transfer(engine, lp, rank, current, h.tag, PlanSend{started.member, 0, h.bytes});
      if (sent.id) {
        rank.sends.emplace(*sent.id, SendOwner{key, started.ordinal, h.lane, h.chunk, h.step, 0, false});
        continue;
      }
      ORRERY_ASSERT(sent.delivery.has_value(), "a held send to the scale-up switch");
      --pipeline.sending;
      pipeline.delivered_by = std::max(pipeline.delivered_by, *sent.delivery);
      resume(engine, lp, rank, current, started.ordinal, h.lane, h.chunk);
    }
  }

  // Enters `step` of pipeline (lane, chunk) and moves on while steps complete at once.
  void advance(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, Run& run, std::uint32_t ordinal,
               std::uint32_t lane, std::uint32_t chunk, std::uint32_t step) {
    Pipeline& pipeline = run.pipelines[lane * run.chunks + chunk];
    const std::uint64_t chunk_bytes = segment_bytes(run.bytes, run.chunks, chunk);
    for (;;) {
      if (step >= run.plan->steps(run.member, lane)) {
        pipeline.waiting = false;
        pipeline.step = step;
        finish_pipeline(engine, lp, rank, run, ordinal, lane);
        return;
      }
      pipeline.step = step;
      run.plan->step(run.member, lane, step, chunk_bytes, scratch_);
      // A step ends when its receives have arrived and its sends have been delivered (as a
      // NCCL step ends when its data is in the peer's buffer), so a member that only sends
      // cannot run ahead of the data it sends.
      pipeline.sending = 0;
      pipeline.delivered_by = engine.now();
      for (const PlanSend& send : scratch_.sends) {
        MessageTag tag = encode(CollectiveTag{ordinal, send.peer_step, chunk, lane, run.training_step});
        PlanSend now = send;
        now.bytes = movable_bytes(run, send.peer, send.bytes);
        if (now.bytes < send.bytes) {  // held: the rest waits for the peer's notice
          run.held[send.peer].push_back(HeldSend{lane, chunk, step, send.bytes - now.bytes,
                                                 with_collective_part(tag, now.bytes > 0 ? Part::kTail : Part::kWhole)});
          ++pipeline.sending;
          if (now.bytes == 0) {
            continue;
          }
          tag = with_collective_part(tag, Part::kHead);
        }
        const Sent sent = transfer(engine, lp, rank, run, tag, now);
        if (sent.delivery) {
          pipeline.delivered_by = std::max(pipeline.delivered_by, *sent.delivery);
        } else if (sent.id) {
          rank.sends.emplace(*sent.id, SendOwner{run_key(ordinal, run.training_step), ordinal, lane, chunk, step, 0, false});
          ++pipeline.sending;
        }
      }
      pipeline.needed = 2 * scratch_.receives;  // arrival_units
      pipeline.reduce_bytes = scratch_.reduce_bytes;
      if (!step_done(engine, lp, run, ordinal, lane, chunk) || start_reduction(engine, lp, run, ordinal, lane, chunk)) {
        return;
      }
      ++step;
    }
  }

  // Whether pipeline (lane, chunk)'s current step is done: its receives have all arrived and its
  // sends have all been delivered. If so, takes its arrivals and returns true. Otherwise the
  // pipeline waits; once only deliveries timed at the source are missing, it wakes itself then.
  bool step_done(pdes::Engine<Payload>& engine, pdes::LpId lp, Run& run, std::uint32_t ordinal, std::uint32_t lane,
                 std::uint32_t chunk) {
    Pipeline& pipeline = run.pipelines[lane * run.chunks + chunk];
    pipeline.waiting = true;
    if (pipeline.sending > 0 || pipeline.wake_pending) {
      return false;
    }
    const auto arrived = run.arrivals.find(arrival_key(lane, chunk, pipeline.step));
    if ((arrived == run.arrivals.end() ? 0 : arrived->second) < pipeline.needed) {
      return false;
    }
    if (pipeline.delivered_by > engine.now()) {
      wake_when_delivered(engine, lp, run, ordinal, lane, chunk);
      return false;
    }
    if (arrived != run.arrivals.end()) {
      run.arrivals.erase(arrived);
    }
    pipeline.waiting = false;
    return true;
  }

  // A done step that reduces what it received: the reduction runs on the rank (ReduceDone moves
  // the pipeline on). False when the step has nothing to reduce.
  bool start_reduction(pdes::Engine<Payload>& engine, pdes::LpId lp, const Run& run, std::uint32_t ordinal,
                       std::uint32_t lane, std::uint32_t chunk) {
    const Pipeline& pipeline = run.pipelines[lane * run.chunks + chunk];
    if (pipeline.reduce_bytes == 0 || reduction_rate_ <= 0) {
      return false;
    }
    const SimTime reduce = SimTime::from_seconds(static_cast<double>(pipeline.reduce_bytes) / reduction_rate_);
    engine.send(lp, reduce, ReduceDone{encode(CollectiveTag{ordinal, pipeline.step, chunk, lane, run.training_step})});
    return true;
  }

  void finish_pipeline(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, Run& run, std::uint32_t ordinal,
                       std::uint32_t lane) {
    ++run.finished;
    if (run.next_chunk[lane] < run.chunks) {  // a slot freed: start the next chunk of this lane
      const std::uint32_t chunk = run.next_chunk[lane]++;
      run.pipelines[lane * run.chunks + chunk].started = true;
      advance(engine, lp, rank, run, ordinal, lane, chunk, 0);
      return;
    }
    if (run.finished < run.lanes * run.chunks) {
      return;
    }
    const std::uint32_t op = run.exec_op;
    const SimTime issued = run.issued_at;
    if (trace_collectives_) {
      const ProgramModel& program = *programs_[rank.program];
      const CollectiveInfo& info = program.collective(op);
      rank.trace_collectives.push_back(CollectiveRow{
          lp, run.training_step, op_strings_[rank.program].at(program.graph().op(op).source).first,
          kind_strings_[static_cast<std::size_t>(info.kind)],
          algorithm_strings_[static_cast<std::size_t>(run.plan->algorithm())], run.plan->members(), info.combined,
          run.bytes, issued.ps(), engine.now().ps()});
    }
    rank.runs.erase(run_key(ordinal, run.training_step));
    --rank.active_comm;
    --rank.queue_active[queue_of(rank, op)];
    rank.comm_changed = true;
    record_op(rank, op, engine.now() - issued);
    complete(engine, lp, rank, op);
  }

  void on_arrival(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, const MessageTag& tag,
                  std::uint64_t bytes) {
    if ((tag.low & kPeerBit) != 0) {
      on_peer_arrival(engine, lp, rank, tag, bytes);
      return;
    }
    const CollectiveTag t = decode(tag);
    Run& run = run_of(rank, t.ordinal, t.training_step);
    run.arrivals[arrival_key(t.lane, t.chunk, t.step)] += arrival_units(tag);
    if (!run.issued) {
      return;  // early: counted for when this rank issues the collective
    }
    if (run.pipelines[t.lane * run.chunks + t.chunk].step == t.step) {
      resume(engine, lp, rank, run, t.ordinal, t.lane, t.chunk);
    }
  }

  // A transfer this rank sent was delivered: the step (or point-to-point send) that sent it may
  // move on.
  void on_sent(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, std::uint64_t request_id) {
    const auto found = rank.sends.find(request_id);
    ORRERY_ASSERT(found != rank.sends.end(), "a delivery notice for a transfer this rank did not send");
    const SendOwner owner = found->second;
    rank.sends.erase(found);
    if (owner.peer) {
      peer_part_delivered(engine, lp, rank, owner.peer_op);
      return;
    }
    Run& run = rank.runs.at(owner.run);
    Pipeline& pipeline = run.pipelines[owner.lane * run.chunks + owner.chunk];
    ORRERY_ASSERT(pipeline.step == owner.step && pipeline.sending > 0, "a send outlived the step that sent it");
    --pipeline.sending;
    resume(engine, lp, rank, run, owner.ordinal, owner.lane, owner.chunk);
  }

  // Pipeline (lane, chunk) waiting in its step moves on once the step is done (step_done): after
  // the step's reduction, if it has one.
  void resume(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, Run& run, std::uint32_t ordinal,
              std::uint32_t lane, std::uint32_t chunk) {
    const Pipeline& pipeline = run.pipelines[lane * run.chunks + chunk];
    if (!pipeline.started || !pipeline.waiting || !step_done(engine, lp, run, ordinal, lane, chunk) ||
        start_reduction(engine, lp, run, ordinal, lane, chunk)) {
      return;
    }
    advance(engine, lp, rank, run, ordinal, lane, chunk, pipeline.step + 1);
  }

  // The pipeline's step has what it waits for but the sends timed at the source: wake it when
  // they are delivered.
  void wake_when_delivered(pdes::Engine<Payload>& engine, pdes::LpId lp, Run& run, std::uint32_t ordinal,
                           std::uint32_t lane, std::uint32_t chunk) {
    Pipeline& pipeline = run.pipelines[lane * run.chunks + chunk];
    pipeline.wake_pending = true;
    engine.send(lp, pipeline.delivered_by - engine.now(),
                SendsDelivered{encode(CollectiveTag{ordinal, pipeline.step, chunk, lane, run.training_step})});
  }

  // A send of a collective step: its delivery time when the network times it at the source, or
  // the request id whose delivery the replicas will report (kSent); neither for an in-switch
  // upload (its member waits for the download, which follows every upload).
  struct Sent {
    std::optional<SimTime> delivery;
    std::optional<std::uint64_t> id;
  };
  Sent transfer(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, const Run& run,
                const MessageTag& tag, const PlanSend& send) {
    const ProgramModel& program = *programs_[rank.program];
    const GroupSet& set = program.group_set(program.collective(run.exec_op).group_set);
    if (send.peer == kSwitchPeer) {
      // In-switch reduction: the upload to the scale-up switch, modelled analytically (half the
      // scale-up latency and the scale-up bandwidth per leg) and sent to the group's first member,
      // which plays the switch.
      ++rank.transfers;
      rank.transfer_bytes += send.bytes;
      const std::uint32_t aggregator = set.ranks[run.group].front();
      engine.send(aggregator, switch_leg(engine.now(), send.bytes, rank.switch_up_free), SwitchUpload{tag});
      return {};
    }
    return put_on_network(engine, lp, rank, set.ranks[run.group][send.peer], send.bytes, tag);
  }

  // One network transfer of `bytes` from `rank` (on `lp`) to global rank `peer_rank` under `tag`,
  // counted in the rank's transfer statistics; the request id is unique per sending LP and the
  // flow key (the flow model's path choice) derives from the tag's low word and the sender. The
  // delivery time when the network model knows it at once (analytical), else the request id whose
  // delivery it will report (flow).
  Sent put_on_network(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, std::uint32_t peer_rank,
                      std::uint64_t bytes, const MessageTag& tag) {
    ++rank.transfers;
    rank.transfer_bytes += bytes;
    network::TransferRequest request;
    request.id = (static_cast<std::uint64_t>(lp) << 40) | (rank.transfer_sequence++ & ((1ULL << 40) - 1));
    request.source = rank.endpoint;
    request.destination = placement_.endpoint_of(peer_rank);
    request.bytes = Bytes{bytes};
    request.flow_key = hash_combine(tag.low, lp);
    if (const auto delivery = network_.send(engine, request, tag)) {
      return {delivery, std::nullopt};
    }
    return {std::nullopt, request.id};
  }

  // One leg of an in-switch reduction sent at `now`: the injection delay, then the bytes at the
  // scale-up bandwidth on a link that carries one leg at a time (`link_free`, updated: chunks and
  // concurrent collectives queue on it rather than each taking the full bandwidth), then half the
  // scale-up latency. Returns the delay from `now` to arrival.
  [[nodiscard]] SimTime switch_leg(SimTime now, std::uint64_t bytes, SimTime& link_free) const {
    const SimTime start = std::max(now + injection_, link_free);
    link_free = start + switch_occupancy(bytes);
    return link_free + switch_half_latency() - now;
  }
  // What one leg of `bytes` holds a scale-up link for, and the latency from a device to the switch.
  [[nodiscard]] SimTime switch_occupancy(std::uint64_t bytes) const {
    return SimTime::from_seconds(static_cast<double>(bytes) / (scenario_.system.scale_up.bandwidth_gbps * 1e9));
  }
  [[nodiscard]] SimTime switch_half_latency() const {
    return SimTime::from_seconds(scenario_.system.scale_up.latency_ns * 0.5e-9);
  }

  void on_switch_upload(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, const MessageTag& tag) {
    const CollectiveTag t = decode(tag);
    // The aggregator is a member of the group: find the collective through its own program.
    const ProgramModel& program = *programs_[rank.program];
    const std::uint32_t op = exec_of_match(rank.program, t.ordinal);
    const CollectiveInfo& info = program.collective(op);
    const GroupSet& set = program.group_set(info.group_set);
    const auto& group = set.ranks[set.group_of[rank.device]];
    if (++rank.switch_uploads[tag] < group.size()) {
      return;
    }
    rank.switch_uploads.erase(tag);
    const std::uint64_t bytes = segment_bytes(info.bytes, chunks_, t.chunk);
    for (const std::uint32_t member : group) {
      // Timed as if the member's downlink were idle; the member queues it behind its earlier
      // downloads (from any group) when it arrives.
      SimTime idle;
      engine.send(member, switch_leg(engine.now(), bytes, idle), SwitchDown{tag, false});
    }
    (void)lp;
  }

  // A download from the switch reached this member as if its downlink had been idle: queue it
  // behind the member's earlier downloads (the link carries one at a time), then deliver.
  void on_switch_down(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, const SwitchDown& down) {
    if (!down.queued) {
      const CollectiveTag t = decode(down.tag);
      const ProgramModel& program = *programs_[rank.program];
      const CollectiveInfo& info = program.collective(exec_of_match(rank.program, t.ordinal));
      const SimTime occupancy = switch_occupancy(segment_bytes(info.bytes, chunks_, t.chunk));
      const SimTime half_latency = switch_half_latency();
      const SimTime done = std::max(engine.now() - half_latency, rank.switch_down_free + occupancy);
      rank.switch_down_free = done;
      if (done + half_latency > engine.now()) {
        engine.send(lp, done + half_latency - engine.now(), SwitchDown{down.tag, true});
        return;
      }
    }
    on_arrival(engine, lp, rank, down.tag, 0);
  }

  // --- joint collectives ---------------------------------------------------------------------------
  // Members find a collective's run by the ordinal in its tags (CollectiveTag). Within a program
  // every member runs the op at the same ordinal. A joint collective (JointGroups: Chakra ranks of
  // different graphs) has members in several programs, whose ordinals differ: each group's joint
  // collectives are matched in program order across the programs holding its ranks (the k-th on
  // the group in one program with the k-th in each other, as NCCL matches the collectives of a
  // communicator), and each matched set takes one id above every program's own ordinals.
  void match_joint_collectives() {
    // Per group (its ranks in group order), per program: the ordinals of its collectives on it.
    std::map<std::vector<std::uint32_t>, std::map<std::uint32_t, std::vector<std::uint32_t>>> on_group;
    std::uint32_t base = 0;
    for (std::uint32_t p = 0; p < programs_.size(); ++p) {
      const ProgramModel& program = *programs_[p];
      const auto collectives = program.graph().collectives();
      base = std::max(base, static_cast<std::uint32_t>(collectives.size()));
      for (std::uint32_t o = 0; o < collectives.size(); ++o) {
        const GroupSet& set = program.group_set(program.collective(collectives[o]).group_set);
        if (set.joint) {
          for (const auto& group : set.ranks) {
            on_group[group][p].push_back(o);
          }
        }
      }
    }
    joint_base_ = base;
    joint_match_.assign(programs_.size(), {});
    joint_exec_.assign(programs_.size(), {});
    if (on_group.empty()) {
      return;
    }
    const auto node = [](std::uint32_t p, std::uint32_t o) {
      return (static_cast<std::uint64_t>(p) << 32) | o;
    };
    std::map<std::uint64_t, std::uint64_t> parent;  // union-find over (program, ordinal)
    const auto find = [&](std::uint64_t x) {
      while (parent.at(x) != x) {
        parent[x] = parent.at(parent.at(x));
        x = parent.at(x);
      }
      return x;
    };
    const auto describe = [&](std::uint32_t p, std::uint32_t o) {
      const ProgramModel& program = *programs_[p];
      const CollectiveInfo& info = program.collective(program.graph().collectives()[o]);
      return fmt::format("{} ({} of {} bytes)", program.describe_op(info.op), collective_kind_name(info.kind),
                         info.bytes);
    };
    const auto ranks_of = [&](std::uint32_t p,
                              const std::vector<std::uint32_t>& group) {  // "rank 2", "ranks 0-1"
      std::vector<std::uint32_t> mine;
      for (const std::uint32_t r : group) {
        if (rank_program_[r] == p) {
          mine.push_back(r);
        }
      }
      return fmt::format("{} {}", mine.size() == 1 ? "rank" : "ranks", format_rank_set(mine));
    };
    for (const auto& [group, programs] : on_group) {
      for (const std::uint32_t r : group) {
        if (r >= num_ranks_) {
          const auto& [p, ordinals] = *programs.begin();
          throw OrreryError(ErrorCode::kInvalidInput,
                            fmt::format("{}: its group names rank {} but the run has {} ranks",
                                        describe(p, ordinals.front()), r, num_ranks_));
        }
        if (!programs.contains(rank_program_[r])) {
          const auto& [p, ordinals] = *programs.begin();
          throw OrreryError(
              ErrorCode::kMismatch,
              fmt::format("collectives over ranks {}: {} on {} (the first: {}) but none on rank {} ({})",
                          format_rank_set(group), ordinals.size(), ranks_of(p, group),
                          describe(p, ordinals.front()), r, programs_[rank_program_[r]]->label()));
        }
      }
      const auto& [first, expected] = *programs.begin();
      for (const auto& [p, ordinals] : programs) {
        for (std::size_t k = 0; k < std::max(ordinals.size(), expected.size()); ++k) {
          if (k >= ordinals.size() || k >= expected.size()) {
            const bool longer = k < ordinals.size();
            throw OrreryError(
                ErrorCode::kMismatch,
                fmt::format(
                    "collectives over ranks {}: {} on {} but {} on {}; collective {} on the group, {}, has "
                    "no match",
                    format_rank_set(group), expected.size(), ranks_of(first, group), ordinals.size(),
                    ranks_of(p, group), k + 1,
                    longer ? describe(p, ordinals[k]) : describe(first, expected[k])));
          }
          const CollectiveInfo& a =
              programs_[first]->collective(programs_[first]->graph().collectives()[expected[k]]);
          const CollectiveInfo& b =
              programs_[p]->collective(programs_[p]->graph().collectives()[ordinals[k]]);
          if (a.kind != b.kind || a.bytes != b.bytes) {
            throw OrreryError(
                ErrorCode::kMismatch,
                fmt::format("collective {} over ranks {} differs: {} on {}, {} on {}", k + 1,
                            format_rank_set(group), describe(first, expected[k]), ranks_of(first, group),
                            describe(p, ordinals[k]), ranks_of(p, group)));
          }
          const std::uint64_t x = node(first, expected[k]);
          const std::uint64_t y = node(p, ordinals[k]);
          parent.try_emplace(x, x);
          parent.try_emplace(y, y);
          const std::uint64_t rx = find(x);
          const std::uint64_t ry = find(y);
          if (rx != ry) {
            parent[std::max(rx, ry)] = std::min(rx, ry);
          }
        }
      }
    }
    // Ids in the order of each set's first (program, ordinal): the same on every process.
    std::map<std::uint64_t, std::uint32_t> id_of_root;
    for (const auto& [x, unused] : parent) {
      const std::uint64_t root = find(x);
      const auto [it, inserted] =
          id_of_root.try_emplace(root, base + static_cast<std::uint32_t>(id_of_root.size()));
      const auto p = static_cast<std::uint32_t>(x >> 32);
      const auto o = static_cast<std::uint32_t>(x & 0xffffffffU);
      if (it->second >= kMaxOrdinal) {
        throw OrreryError(ErrorCode::kUnsupported,
                          fmt::format("the programs run more than {} collectives per step", kMaxOrdinal));
      }
      const auto [other, fresh] = joint_exec_[p].try_emplace(it->second, o);
      if (!fresh) {
        throw OrreryError(
            ErrorCode::kMismatch,
            fmt::format("{}: two of its collectives, {} and {}, are matched to one through the groups "
                        "they share with other programs (their ranks would run one collective twice)",
                        programs_[p]->label(), describe(p, other->second), describe(p, o)));
      }
      joint_match_[p].emplace(o, it->second);
    }
  }

  // The id in tags and runs of program p's collective at `ordinal`, and back.
  [[nodiscard]] std::uint32_t match_of(std::uint32_t p, std::uint32_t ordinal) const {
    if (joint_match_[p].empty()) {
      return ordinal;
    }
    const auto found = joint_match_[p].find(ordinal);
    return found != joint_match_[p].end() ? found->second : ordinal;
  }
  [[nodiscard]] std::uint32_t exec_of_match(std::uint32_t p, std::uint32_t id) const {
    const auto collectives = programs_[p]->graph().collectives();
    return collectives[id < joint_base_ ? id : joint_exec_[p].at(id)];
  }

  // --- point-to-point ---------------------------------------------------------------------------
  // A send or recv op starts once its launch cost (system.p2p_launch_ns) has passed; a device with
  // no peer in the op launches nothing.
  [[nodiscard]] bool takes_part(const RankState& rank, std::uint32_t op) const {
    const ProgramModel& program = *programs_[rank.program];
    const PeerInfo& peer = program.peer(op);
    return (program.graph().op(op).kind == ExecKind::kSend ? peer.target_of : peer.source_of)[rank.device] !=
           PeerInfo::kNone;
  }

  void start_peer_op(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, std::uint32_t op) {
    if (programs_[rank.program]->graph().op(op).kind == ExecKind::kSend) {
      send_to_peer(engine, lp, rank, op);
    } else {
      post_recv(engine, lp, rank, op);
    }
  }

  // Sends on channel c go to the program that receives on c (the same program, or another one:
  // pipeline stages); device ids in source_target_pairs are local to each side's program.
  void build_peer_routes() {
    std::map<std::int64_t, std::set<std::uint32_t>> receivers;
    std::map<std::int64_t, std::set<std::uint32_t>> senders;
    for (std::uint32_t p = 0; p < programs_.size(); ++p) {
      const ExecGraph& graph = programs_[p]->graph();
      for (std::uint32_t i = 0; i < graph.size(); ++i) {
        if (graph.op(i).kind == ExecKind::kRecv) {
          receivers[programs_[p]->peer(i).channel].insert(p);
        } else if (graph.op(i).kind == ExecKind::kSend) {
          senders[programs_[p]->peer(i).channel].insert(p);
        }
      }
    }
    for (const auto& [channel, programs] : senders) {
      if (programs.size() > 1) {
        throw OrreryError(ErrorCode::kMismatch,
                          fmt::format("channel {}: workload.programs[{}] ({}) and workload.programs[{}] ({}) both "
                                      "send on it; point-to-point channels must connect one sending and one "
                                      "receiving program",
                                      channel, *programs.begin(), programs_[*programs.begin()]->label(),
                                      *std::next(programs.begin()), programs_[*std::next(programs.begin())]->label()));
      }
      const auto found = receivers.find(channel);
      if (found == receivers.end()) {
        throw OrreryError(ErrorCode::kMismatch,
                          fmt::format("channel {}: {} sends on it but no program receives on it", channel,
                                      programs_[*programs.begin()]->label()));
      }
      if (found->second.size() > 1) {
        throw OrreryError(ErrorCode::kMismatch,
                          fmt::format("channel {}: {} programs receive on it; point-to-point channels must "
                                      "connect one sending and one receiving program",
                                      channel, found->second.size()));
      }
      receiver_of_channel_[channel] = *found->second.begin();
      sender_of_channel_[channel] = *programs.begin();
    }
    for (const auto& [channel, programs] : receivers) {
      if (!senders.contains(channel)) {
        throw OrreryError(ErrorCode::kMismatch,
                          fmt::format("channel {}: {} receives on it but no program sends on it", channel,
                                      programs_[*programs.begin()]->label()));
      }
    }
    if (receivers.size() >= kMaxChannels) {
      throw OrreryError(ErrorCode::kUnsupported, fmt::format("the programs use {} point-to-point channels; at most {}",
                                                             receivers.size(), kMaxChannels - 1));
    }
    for (const auto& [channel, programs] : receivers) {  // every channel has both sides by now
      channel_index_.emplace(channel, static_cast<std::uint32_t>(channel_index_.size()));
    }
  }

  // A send of at most system.p2p_eager_bytes moves at once, whole. A larger one moves its first
  // p2p_eager_bytes at once (the head, into the receiver's connection buffer) and the rest (the
  // tail) once the receiver has posted the matching recv and its clear-to-send notice has come
  // back; whole, if that notice is already here. The send is done when all of it is delivered.
  void send_to_peer(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, std::uint32_t op) {
    const ProgramModel& program = *programs_[rank.program];
    const PeerInfo& peer = program.peer(op);
    const std::uint32_t target = peer.target_of[rank.device];
    if (target == PeerInfo::kNone) {
      complete(engine, lp, rank, op);
      return;
    }
    const ProgramModel& receiver = *programs_[receiver_of_channel_.at(peer.channel)];
    if (target >= receiver.ranks().size()) {
      throw OrreryError(ErrorCode::kMismatch,
                        fmt::format("{} on rank {} sends to device {} of {}, which has {} devices",
                                    program.describe_op(program.graph().op(op).source), lp, target, receiver.label(),
                                    receiver.ranks().size()));
    }
    const MessageTag tag = peer_tag(channel_index_.at(peer.channel), program.graph().op(op).ordinal, rank.step);
    const std::uint32_t to = receiver.global_rank(target);
    ++rank.peer_sends;  // the send is done when its data has been delivered, as XLA's send-done is
    if (peer.bytes <= eager_bytes_ || rank.cleared.erase(tag) > 0) {
      rank.send_parts[op] = 1;
      send_peer_part(engine, lp, rank, op, to, peer.bytes, tag);
      return;
    }
    rank.awaiting_clearance.emplace(tag, op);
    rank.send_parts[op] = eager_bytes_ > 0 ? 2 : 1;
    if (eager_bytes_ > 0) {
      send_peer_part(engine, lp, rank, op, to, eager_bytes_, with_peer_part(tag, Part::kHead));
    }
  }

  void send_peer_part(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, std::uint32_t op,
                      std::uint32_t to, std::uint64_t bytes, const MessageTag& tag) {
    const Sent sent = put_on_network(engine, lp, rank, to, bytes, tag);
    if (sent.delivery) {
      engine.send(lp, *sent.delivery - engine.now(), PeerSendDelivered{op});
      return;
    }
    SendOwner owner;
    owner.peer = true;
    owner.peer_op = op;
    rank.sends.emplace(*sent.id, owner);
  }

  void peer_part_delivered(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, std::uint32_t op) {
    const auto parts = rank.send_parts.find(op);
    ORRERY_ASSERT(parts != rank.send_parts.end() && parts->second > 0, "a delivery for a send with nothing in flight");
    if (--parts->second > 0) {
      return;
    }
    rank.send_parts.erase(parts);
    --rank.peer_sends;
    complete(engine, lp, rank, op);
  }

  // The receiver of `tag`'s message posted its recv: send the tail, or remember the notice for the
  // send that has not started yet.
  void on_clear_to_send(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, const MessageTag& tag) {
    const auto waiting = rank.awaiting_clearance.find(tag);
    if (waiting == rank.awaiting_clearance.end()) {
      rank.cleared.insert(tag);
      return;
    }
    const std::uint32_t op = waiting->second;
    rank.awaiting_clearance.erase(waiting);
    const ProgramModel& program = *programs_[rank.program];
    const PeerInfo& peer = program.peer(op);
    const ProgramModel& receiver = *programs_[receiver_of_channel_.at(peer.channel)];
    const std::uint32_t to = receiver.global_rank(peer.target_of[rank.device]);
    if (eager_bytes_ == 0) {
      send_peer_part(engine, lp, rank, op, to, peer.bytes, tag);
      return;
    }
    send_peer_part(engine, lp, rank, op, to, peer.bytes - eager_bytes_, with_peer_part(tag, Part::kTail));
  }

  // How long a clear-to-send notice takes from `from` to `to`: the injection delay plus the
  // route's link latencies (a credit carries no payload to speak of).
  SimTime notice_delay(std::uint32_t from, std::uint32_t to, const MessageTag& tag) {
    routing_.route(placement_.endpoint_of(from), placement_.endpoint_of(to), hash_combine(tag.low, from), route_);
    return injection_ + network::path_latency(topology_.graph(), route_);
  }

  void post_recv(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, std::uint32_t op) {
    const ProgramModel& program = *programs_[rank.program];
    const PeerInfo& peer = program.peer(op);
    const std::uint32_t source = peer.source_of[rank.device];
    if (source == PeerInfo::kNone) {
      complete(engine, lp, rank, op);
      return;
    }
    const MessageTag tag = peer_tag(channel_index_.at(peer.channel), program.graph().op(op).ordinal, rank.step);
    rank.posted_recvs[tag] = op;
    if (peer.bytes > eager_bytes_) {
      const std::uint32_t sender = programs_[sender_of_channel_.at(peer.channel)]->global_rank(source);
      engine.send(sender, notice_delay(lp, sender, tag), ClearToSend{tag});
    }
    try_receive(engine, lp, rank, tag);
  }

  void on_peer_arrival(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, const MessageTag& tag,
                       std::uint64_t bytes) {
    const MessageTag message = whole_message(tag);
    PeerReceipt& receipt = rank.peer_arrived[message];
    receipt.bytes += bytes;
    switch (peer_part(tag)) {
      case Part::kWhole: receipt.whole = true; break;
      case Part::kHead: receipt.head = true; break;
      case Part::kTail: receipt.tail = true; break;
    }
    try_receive(engine, lp, rank, message);
  }

  // Completes the recv posted for `message` once all of the message has arrived; a message whose
  // size differs from the recv's is an error that names both ends.
  void try_receive(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, const MessageTag& message) {
    const auto posted = rank.posted_recvs.find(message);
    const auto arrived = rank.peer_arrived.find(message);
    if (posted == rank.posted_recvs.end() || arrived == rank.peer_arrived.end()) {
      return;
    }
    const std::uint32_t op = posted->second;
    const ProgramModel& program = *programs_[rank.program];
    const PeerInfo& peer = program.peer(op);
    const PeerReceipt& receipt = arrived->second;
    const bool larger = receipt.head && peer.bytes <= eager_bytes_;  // a head: the send is larger than that
    if (!receipt.complete() && !larger) {
      return;
    }
    if (larger || receipt.bytes != peer.bytes) {
      const std::uint32_t sender = programs_[sender_of_channel_.at(peer.channel)]->global_rank(peer.source_of[rank.device]);
      throw OrreryError(ErrorCode::kMismatch,
                        fmt::format("channel {}: {} on rank {} receives {} bytes, but the matching send on rank {} "
                                    "sends {} bytes (step {})",
                                    peer.channel, program.describe_op(program.graph().op(op).source), lp, peer.bytes,
                                    sender,
                                    larger ? fmt::format("more than {}", eager_bytes_) : std::to_string(receipt.bytes),
                                    message.high + 1));
    }
    rank.peer_arrived.erase(arrived);
    rank.posted_recvs.erase(posted);
    complete(engine, lp, rank, op);
  }

  // --- trace ---------------------------------------------------------------------------------------
 public:
  // Records what trace.detail asks for. Every string a row can refer to is interned here, in an
  // order fixed by the programs and the topology, so the string table is the same on every process.
  void enable_trace(TraceRecord& trace) {
    trace_ = &trace;
    trace_collectives_ = trace.detail >= config::TraceDetail::kCollectives;
    trace_ops_ = trace.detail >= config::TraceDetail::kOps;
    trace_transfers_ = trace.detail >= config::TraceDetail::kTransfers;
    (void)intern("");  // string 0: the empty string (no algorithm)
    for (std::size_t k = 0; k < kind_strings_.size(); ++k) {
      kind_strings_[k] = intern(std::string(collective_kind_name(static_cast<CollectiveKind>(k))));
    }
    for (std::size_t a = 0; a < algorithm_strings_.size(); ++a) {
      algorithm_strings_[a] = intern(std::string(algorithm_name(static_cast<Algorithm>(a))));
    }
    send_string_ = intern("send");
    recv_string_ = intern("recv");
    op_strings_.resize(programs_.size());
    if (trace_collectives_) {
      for (std::size_t p = 0; p < programs_.size(); ++p) {
        const ProgramModel& program = *programs_[p];
        std::set<workload::OpId> sources;
        for (std::uint32_t i = 0; i < program.graph().size(); ++i) {
          const ExecOp& exec = program.graph().op(i);
          if (trace_ops_ || exec.kind != ExecKind::kCompute) {
            sources.insert(exec.source);
          }
        }
        const workload::LineIndex lines(program.program().source().text);
        for (const workload::OpId source : sources) {
          const std::uint32_t name = intern(program.describe_op(source, lines));
          op_strings_[p].emplace(source, std::pair{name, intern(program.kernel_label(source))});
        }
      }
    }
    if (trace_transfers_) {
      rank_of_endpoint_.assign(topology_.num_endpoints(), ~std::uint32_t{0});
      for (std::uint32_t r = 0; r < num_ranks_; ++r) {
        rank_of_endpoint_[placement_.endpoint_of(r)] = r;
      }
      link_bytes_.assign(topology_.graph().num_links(), 0);
    }
  }
  [[nodiscard]] std::uint32_t intern(const std::string& text) {
    const auto [it, inserted] = string_index_.try_emplace(text, static_cast<std::uint32_t>(trace_->strings.size()));
    if (inserted) {
      trace_->strings.push_back(text);
    }
    return it->second;
  }
  [[nodiscard]] const std::vector<std::uint64_t>& link_bytes() const { return link_bytes_; }

 private:
  // A network transfer delivered to `rank`, and the bytes it carried over each link of its route.
  void trace_transfer(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank,
                      const network::NetworkMessage& message) {
    const MessageTag& tag = message.tag;
    std::uint32_t kind = send_string_;
    if ((tag.low & kPeerBit) == 0) {
      const ProgramModel& program = *programs_[rank.program];
      const std::uint32_t exec_op = exec_of_match(rank.program, decode(tag).ordinal);
      kind = kind_strings_[static_cast<std::size_t>(program.collective(exec_op).kind)];
    }
    const std::uint64_t bytes = message.request.bytes.count;
    rank.trace_transfers.push_back(TransferRow{lp, rank_of_endpoint_[message.request.source],
                                               static_cast<std::uint32_t>(tag.high & 0xffffffffULL), kind, bytes,
                                               message.sent.ps(), engine.now().ps()});
    routing_.route(message.request.source, message.request.destination, message.request.flow_key, trace_path_);
    for (const network::LinkId link : trace_path_) {
      link_bytes_[link] += bytes;
    }
  }

  // A send or recv op completed on `rank`.
  void trace_peer_op(pdes::Engine<Payload>& engine, pdes::LpId lp, RankState& rank, std::uint32_t op) {
    const ProgramModel& program = *programs_[rank.program];
    const bool send = program.graph().op(op).kind == ExecKind::kSend;
    const auto issued = rank.peer_issued.find(op);
    ORRERY_ASSERT(issued != rank.peer_issued.end(), "a send or recv completed that was never issued");
    const PeerInfo& peer = program.peer(op);
    const bool paired = (send ? peer.target_of : peer.source_of)[rank.device] != PeerInfo::kNone;
    rank.trace_collectives.push_back(CollectiveRow{lp, rank.step,
                                                   op_strings_[rank.program].at(program.graph().op(op).source).first,
                                                   send ? send_string_ : recv_string_, 0, paired ? 2U : 1U, 1,
                                                   peer.bytes, issued->second.ps(), engine.now().ps()});
    rank.peer_issued.erase(issued);
  }

  TraceRecord* trace_ = nullptr;
  bool trace_collectives_ = false;
  bool trace_ops_ = false;
  bool trace_transfers_ = false;
  std::unordered_map<std::string, std::uint32_t> string_index_;
  std::array<std::uint32_t, 6> kind_strings_{};       // by CollectiveKind
  std::array<std::uint32_t, 6> algorithm_strings_{};  // by Algorithm
  std::uint32_t send_string_ = 0;
  std::uint32_t recv_string_ = 0;
  std::vector<std::unordered_map<workload::OpId, std::pair<std::uint32_t, std::uint32_t>>> op_strings_;  // (name, label)
  std::vector<std::uint32_t> rank_of_endpoint_;
  std::vector<std::uint64_t> link_bytes_;  // this process's deliveries
  std::vector<network::LinkId> trace_path_;

  const config::Scenario& scenario_;
  std::vector<std::unique_ptr<ProgramModel>>& programs_;
  const network::Topology& topology_;
  const network::Routing& routing_;
  const network::Placement& placement_;
  network::EngineNetwork<Payload>& network_;
  std::uint32_t num_ranks_;
  SimTime injection_;
  SimTime launch_;      // system.collective_launch_ns
  SimTime p2p_launch_;  // system.p2p_launch_ns
  std::uint64_t eager_bytes_;  // system.p2p_eager_bytes
  double reduction_rate_ = 0.0;  // bytes per second
  std::uint32_t chunks_ = 1;
  std::uint32_t in_flight_limit_ = 1;
  std::vector<RankState> states_;
  std::vector<CommQueueSet> queues_;  // per program (build_comm_queues)
  std::vector<std::uint32_t> rank_program_;
  std::vector<std::uint32_t> rank_device_;
  std::map<PlanKey, std::unique_ptr<CollectivePlan>> plans_;
  std::uint32_t joint_base_ = 0;  // joint collectives' ids start here (match_joint_collectives)
  std::vector<absl::flat_hash_map<std::uint32_t, std::uint32_t>> joint_match_;  // per program: ordinal -> id
  std::vector<absl::flat_hash_map<std::uint32_t, std::uint32_t>> joint_exec_;   // per program: id -> ordinal
  std::map<PlanKey, std::unique_ptr<Rendezvous>> rendezvous_;  // null: no send of the plan is held
  std::vector<network::LinkId> route_;  // scratch for selection_context
  std::map<std::int64_t, std::uint32_t> receiver_of_channel_;
  std::map<std::int64_t, std::uint32_t> sender_of_channel_;
  std::map<std::int64_t, std::uint32_t> channel_index_;  // channel handle -> dense index, in handle order
  std::vector<std::vector<std::uint64_t>> op_ps_ = std::vector<std::vector<std::uint64_t>>(programs_.size());
  std::vector<std::vector<std::uint64_t>> op_counts_ = std::vector<std::vector<std::uint64_t>>(programs_.size());
  std::map<std::string, std::uint64_t> algorithm_counts_;
  PlanStep scratch_;
};

}  // namespace orrery::system

namespace orrery::system {
namespace {

// --- gathering results across processes ----------------------------------------------------------
void append_string(pdes::ByteBuffer& buffer, const std::string& text) {
  pdes::append_record(buffer, static_cast<std::uint64_t>(text.size()));
  const auto* bytes = reinterpret_cast<const std::byte*>(text.data());
  buffer.insert(buffer.end(), bytes, bytes + text.size());
}

class Reader {
 public:
  explicit Reader(const pdes::ByteBuffer& buffer) : buffer_(buffer) {}
  template <class T>
  T read() {
    T value;
    std::memcpy(&value, buffer_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return value;
  }
  std::string read_string() {
    const auto size = read<std::uint64_t>();
    std::string text(reinterpret_cast<const char*>(buffer_.data() + offset_), size);
    offset_ += size;
    return text;
  }
  [[nodiscard]] bool done() const { return offset_ >= buffer_.size(); }

 private:
  const pdes::ByteBuffer& buffer_;
  std::size_t offset_ = 0;
};

Spread spread_of(const std::vector<double>& values) {
  Spread spread;
  if (values.empty()) {
    return spread;
  }
  spread.min = *std::min_element(values.begin(), values.end());
  spread.max = *std::max_element(values.begin(), values.end());
  double sum = 0;
  for (const double v : values) {
    sum += v;
  }
  spread.mean = sum / static_cast<double>(values.size());
  return spread;
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 4) {
    bytes /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.1f} {}", bytes, units[unit]);
}

// Every rank of the run exactly once across the programs.
std::uint32_t count_ranks(const SimulationInput& input) {
  std::uint32_t ranks = 0;
  for (const ProgramInput& program : input.programs) {
    for (const std::uint32_t rank : program.ranks) {
      ranks = std::max(ranks, rank + 1);
    }
  }
  std::vector<int> owner(ranks, -1);
  for (std::size_t p = 0; p < input.programs.size(); ++p) {
    for (const std::uint32_t rank : input.programs[p].ranks) {
      if (owner[rank] >= 0) {
        throw OrreryError(ErrorCode::kConfig,
                          fmt::format("workload.programs: rank {} runs both {} and {}", rank,
                                      input.programs[static_cast<std::size_t>(owner[rank])].label,
                                      input.programs[p].label));
      }
      owner[rank] = static_cast<int>(p);
    }
  }
  for (std::uint32_t rank = 0; rank < ranks; ++rank) {
    if (owner[rank] < 0) {
      throw OrreryError(ErrorCode::kConfig,
                        fmt::format("workload.programs: no program runs rank {} (ranks must be 0..{} without gaps)",
                                    rank, ranks - 1));
    }
  }
  return ranks;
}

}  // namespace

// The trace's rows of this process's ranks, one block per rank in increasing rank order; the
// per-rank and per-step tables and the links' bytes (summed over processes) for all.
void collect_trace(pdes::Communicator& communicator, std::span<const pdes::LpId> local_lps, SystemModel& system,
                   const network::Topology& topology, const network::Placement& placement,
                   const std::vector<std::unique_ptr<ProgramModel>>& programs,
                   const std::vector<std::vector<StepRecord>>& records, TraceRecord& trace) {
  const auto ranks = static_cast<std::uint32_t>(records.size());
  std::vector<pdes::LpId> mine(local_lps.begin(), local_lps.end());
  std::sort(mine.begin(), mine.end());
  for (const pdes::LpId lp : mine) {
    if (lp >= ranks) {
      continue;
    }
    RankState& rank = system.states()[lp];
    trace.ops.insert(trace.ops.end(), rank.trace_ops.begin(), rank.trace_ops.end());
    trace.collectives.insert(trace.collectives.end(), rank.trace_collectives.begin(), rank.trace_collectives.end());
    trace.transfers.insert(trace.transfers.end(), rank.trace_transfers.begin(), rank.trace_transfers.end());
    trace.blocks.push_back(RankBlock{lp, rank.trace_ops.size(), rank.trace_collectives.size(),
                                     rank.trace_transfers.size()});
    // The rows now live in `trace` only (a transfers trace of a large run is most of its memory).
    std::vector<OpRow>().swap(rank.trace_ops);
    std::vector<CollectiveRow>().swap(rank.trace_collectives);
    std::vector<TransferRow>().swap(rank.trace_transfers);
  }
  std::vector<std::uint32_t> program_of(ranks, 0);
  std::vector<std::uint32_t> device_of(ranks, 0);
  for (std::uint32_t p = 0; p < programs.size(); ++p) {
    for (std::uint32_t device = 0; device < programs[p]->ranks().size(); ++device) {
      program_of[programs[p]->global_rank(device)] = p;
      device_of[programs[p]->global_rank(device)] = device;
    }
  }
  for (std::uint32_t r = 0; r < ranks; ++r) {
    const network::EndpointId endpoint = placement.endpoint_of(r);
    trace.ranks.push_back(TraceRecord::Rank{program_of[r], device_of[r], endpoint, topology.node_of(endpoint)});
    for (std::uint32_t k = 0; k < records[r].size(); ++k) {
      const StepRecord& step = records[r][k];
      trace.steps.push_back(TraceRecord::Step{r, k, step.start_ps, step.end_ps, step.compute_ps, step.comm_ps,
                                              step.exposed_ps});
    }
  }
  // Links: every process's deliveries, summed (sparse: only links that carried bytes travel).
  const network::Graph& graph = topology.graph();
  std::vector<std::uint64_t> bytes(graph.num_links(), 0);
  if (trace.detail >= config::TraceDetail::kTransfers) {
    pdes::ByteBuffer buffer;
    const std::vector<std::uint64_t>& local = system.link_bytes();
    for (std::uint32_t link = 0; link < local.size(); ++link) {
      if (local[link] != 0) {
        pdes::append_record(buffer, link);
        pdes::append_record(buffer, local[link]);
      }
    }
    for (const pdes::ByteBuffer& other : communicator.allgather(buffer)) {
      Reader reader(other);
      while (!reader.done()) {
        const auto link = reader.read<std::uint32_t>();
        bytes[link] += reader.read<std::uint64_t>();
      }
    }
  }
  for (std::uint32_t link = 0; link < graph.num_links(); ++link) {
    const network::Link& l = graph.link(link);
    trace.links.push_back(TraceRecord::Link{link, l.from, l.to, system.intern(std::string(network::link_kind_name(l.kind))),
                                            l.bandwidth.value, l.latency.ps(), bytes[link]});
  }
}

std::vector<std::unique_ptr<ProgramModel>> build_program_models(const SimulationInput& input) {
  const config::Scenario& scenario = *input.scenario;
  std::vector<std::unique_ptr<ProgramModel>> programs;
  ExecGraphOptions graph_options;
  graph_options.branch_rule = static_cast<BranchRule>(scenario.workload.branch);
  graph_options.combine_bytes = scenario.system.combine_threshold_bytes;
  for (const ProgramInput& program : input.programs) {
    const std::uint32_t devices = program.replicas > 0 ? program.replicas : program.program->num_devices();
    if (program.ranks.size() != devices) {
      throw OrreryError(ErrorCode::kConfig,
                        program.replicas > 0
                            ? fmt::format("{} is rescaled to {} replicas but is given {} ranks ({})", program.label,
                                          devices, program.ranks.size(), format_rank_set(program.ranks))
                            : fmt::format("{} runs on {} devices (num_replicas {} x num_partitions {}) but is given "
                                          "{} ranks ({})",
                                          program.label, devices, program.program->num_replicas(),
                                          program.program->num_partitions(), program.ranks.size(),
                                          format_rank_set(program.ranks)));
    }
    programs.push_back(std::make_unique<ProgramModel>(program.program, program.label, program.ranks,
                                                      *program.times, graph_options, program.replicas,
                                                      program.joint_groups));
  }
  return programs;
}

RunSummary simulate(pdes::Communicator& communicator, const SimulationInput& input, TraceRecord* trace) {
  ORRERY_ASSERT(input.scenario != nullptr, "simulate() needs a scenario");
  const config::Scenario& scenario = *input.scenario;
  const pdes::ProcessId processes = communicator.size();

  std::uint32_t ranks = 0;
  std::vector<std::unique_ptr<ProgramModel>> programs;
  std::unique_ptr<network::Topology> topology;
  std::unique_ptr<network::Routing> routing;
  std::unique_ptr<network::Placement> placement;
  std::unique_ptr<network::NetworkModel> model;
  RunSummary summary;
  pdes::run_collectively(communicator, [&] {
    ranks = count_ranks(input);
    if (scenario.system.chunks > kMaxChunks) {
      throw OrreryError(ErrorCode::kConfig, fmt::format("system.chunks: at most {} (got {})", kMaxChunks,
                                                        scenario.system.chunks));
    }
    // The system first: a workload too large for it fails before its programs are built.
    topology = std::make_unique<network::Topology>(network::Topology::build(scenario.system, scenario.network));
    if (topology->num_endpoints() < ranks) {
      throw OrreryError(ErrorCode::kConfig,
                        fmt::format("the system has {} devices ({} nodes x {} devices) but the workload needs {} ranks",
                                    topology->num_endpoints(), topology->num_nodes(), topology->devices_per_node(),
                                    ranks));
    }
    programs = build_program_models(input);
    for (const auto& program : programs) {
      if (program->graph().collectives().size() >= kMaxOrdinal) {
        throw OrreryError(ErrorCode::kUnsupported,
                          fmt::format("{} runs more than {} collectives per step", program->label(), kMaxOrdinal));
      }
    }
    routing = std::make_unique<network::Routing>(*topology, scenario.network.routing);
    placement = std::make_unique<network::Placement>(
        network::Placement::make(scenario.network.placement, *topology, ranks, scenario.simulation.seed));
    model = network::make_model(scenario.network.model, *routing);
  });
  summary.ranks = ranks;
  summary.steps = scenario.workload.steps;
  summary.network_model = std::string(model->name());
  summary.topology = topology->describe();
  const config::ScaleUpConfig scale_up_defaults;
  if (topology->direct() && !scenario.system.scale_up.in_switch_reduction &&
      (scenario.system.scale_up.bandwidth_gbps != scale_up_defaults.bandwidth_gbps ||
       scenario.system.scale_up.latency_ns != scale_up_defaults.latency_ns)) {
    summary.warnings.push_back(
        "system.scale_up.bandwidth_GBps and latency_ns do not apply: an astra_sim topology defines every link, its "
        "first dimension the scale-up domain (they serve in-switch reduction only)");
  }
  for (std::size_t p = 0; p < programs.size(); ++p) {
    if (const auto& given = input.programs[p].memory) {
      MemoryEstimate memory = *given;
      memory.program = input.programs[p].label;
      memory.capacity = input.memory_capacity.count;
      memory.fits = memory.capacity == 0 || memory.peak <= memory.capacity;
      summary.memory.push_back(std::move(memory));
    } else if (input.programs[p].estimate_memory) {
      summary.memory.push_back(estimate_memory(*programs[p], input.memory_capacity));
    } else {
      continue;
    }
    const MemoryEstimate& memory = summary.memory.back();
    if (!memory.fits) {
      summary.warnings.push_back(fmt::format("{} needs about {} per device but {} has {}: it does not fit",
                                             memory.program, human_bytes(static_cast<double>(memory.peak)),
                                             input.hardware, human_bytes(static_cast<double>(memory.capacity))));
    }
  }

  // LPs: rank r is LP r; the network adds one replica LP per process after the ranks.
  network::EngineNetworkLayout layout;
  layout.lp_of_endpoint.assign(topology->num_endpoints(), network::kNoLp);
  for (std::uint32_t rank = 0; rank < ranks; ++rank) {
    layout.lp_of_endpoint[placement->endpoint_of(rank)] = rank;
  }
  layout.replica_base = ranks;
  layout.injection_delay = SimTime::from_nanoseconds(scenario.system.endpoint_delay_ns);
  layout.notify_source = true;  // sends finish when delivered
  network::EngineNetwork<Payload> network(std::move(model), layout);

  const pdes::LpId lps = ranks + processes;
  std::vector<pdes::ProcessId> owners;
  std::string partitioner = scenario.simulation.partition;
  if (partitioner == "auto") {
    // Several programs (pipeline stages): a share of each on every process; else whole fabric units.
    partitioner = input.programs.size() > 1 ? "programs" : "topology";
  }
  if (partitioner == "topology" || partitioner == "programs") {
    const auto program_partition = [&] {
      std::vector<std::uint32_t> program_of_rank(ranks, 0);
      for (std::uint32_t p = 0; p < input.programs.size(); ++p) {
        for (const std::uint32_t rank : input.programs[p].ranks) {
          program_of_rank[rank] = p;
        }
      }
      return network::program_balanced_partition(*topology, *placement, program_of_rank, lps, processes);
    };
    const pdes::PartitionMap map =
        partitioner == "programs"
            ? program_partition()
            : network::TopologyPartitioner(*topology, placement.get()).assign(lps, processes);
    for (pdes::LpId lp = 0; lp < lps; ++lp) {
      owners.push_back(map.owner(lp));
    }
  } else {
    const pdes::PartitionMap map = pdes::make_basic_partitioner(partitioner)->assign(ranks, processes);
    for (pdes::LpId lp = 0; lp < ranks; ++lp) {
      owners.push_back(map.owner(lp));
    }
    for (pdes::ProcessId p = 0; p < processes; ++p) {
      owners.push_back(p);  // replica of process p
    }
  }
  const pdes::PartitionMap partition(std::move(owners), processes);
  pdes::ChannelTable channels;
  network.declare_channels(channels, partition);
  channels.add(pdes::LpRange{0, ranks}, pdes::LpRange{0, ranks}, layout.injection_delay,
               "ranks: in-switch reduction legs");
  summary.partition =
      network::report_network_partition(*topology, partitioner, partition, channels, &layout.lp_of_endpoint)
          .describe();

  pdes::EngineOptions options;
  options.seed = scenario.simulation.seed;
  if (scenario.simulation.end_time_s) {
    options.end_time = SimTime::from_seconds(*scenario.simulation.end_time_s);
  }
  pdes::Engine<Payload> engine(communicator, partition, channels, options);
  SystemModel system(input, programs, *topology, *routing, *placement, network, ranks);
  if (trace != nullptr) {
    system.enable_trace(*trace);
  }
  // Initial events can fail (a time beyond the engine's range) on some processes only: fail on all.
  pdes::run_collectively(communicator, [&] { system.initialise(engine); });
  summary.engine = engine.run(system);

  // --- gather per-rank results from every process ------------------------------------------------
  pdes::ByteBuffer mine;
  std::vector<std::string> blocked;
  for (const pdes::LpId lp : engine.local_lps()) {
    if (lp >= ranks) {
      continue;
    }
    const RankState& rank = system.states()[lp];
    pdes::append_record(mine, static_cast<std::uint32_t>(lp));
    pdes::append_record(mine, static_cast<std::uint32_t>(rank.records.size()));
    for (const StepRecord& record : rank.records) {
      pdes::append_record(mine, record);
    }
    pdes::append_record(mine, rank.transfers);
    pdes::append_record(mine, rank.transfer_bytes);
    append_string(mine, rank.finished ? std::string() : system.blocked_reason(lp));
  }
  pdes::append_record(mine, ~std::uint32_t{0});  // end of ranks
  for (std::uint32_t p = 0; p < programs.size(); ++p) {
    const auto& picoseconds = system.op_picoseconds()[p];
    pdes::append_record(mine, static_cast<std::uint64_t>(picoseconds.size()));
    for (std::size_t i = 0; i < picoseconds.size(); ++i) {
      pdes::append_record(mine, picoseconds[i]);
      pdes::append_record(mine, system.op_counts()[p][i]);
    }
  }
  pdes::append_record(mine, static_cast<std::uint64_t>(system.algorithm_counts().size()));
  for (const auto& [name, count] : system.algorithm_counts()) {
    append_string(mine, name);
    pdes::append_record(mine, count);
  }
  const std::vector<pdes::ByteBuffer> all = communicator.allgather(mine);

  std::vector<std::vector<StepRecord>> records(ranks);
  std::vector<std::vector<std::uint64_t>> op_ps(programs.size());
  std::vector<std::vector<std::uint64_t>> op_counts(programs.size());
  std::map<std::string, std::uint64_t> algorithms;
  for (const pdes::ByteBuffer& buffer : all) {
    Reader reader(buffer);
    for (;;) {
      const auto lp = reader.read<std::uint32_t>();
      if (lp == ~std::uint32_t{0}) {
        break;
      }
      const auto count = reader.read<std::uint32_t>();
      for (std::uint32_t i = 0; i < count; ++i) {
        records[lp].push_back(reader.read<StepRecord>());
      }
      summary.transfers += reader.read<std::uint64_t>();
      summary.transfer_bytes += reader.read<std::uint64_t>();
      std::string reason = reader.read_string();
      if (!reason.empty()) {
        blocked.push_back(std::move(reason));
      }
    }
    for (std::uint32_t p = 0; p < programs.size(); ++p) {
      const auto size = reader.read<std::uint64_t>();
      if (size > 0 && op_ps[p].empty()) {
        op_ps[p].assign(size, 0);
        op_counts[p].assign(size, 0);
      }
      for (std::uint64_t i = 0; i < size; ++i) {
        op_ps[p][i] += reader.read<std::uint64_t>();
        op_counts[p][i] += reader.read<std::uint64_t>();
      }
    }
    const auto algorithm_entries = reader.read<std::uint64_t>();
    for (std::uint64_t i = 0; i < algorithm_entries; ++i) {
      std::string name = reader.read_string();
      algorithms[name] += reader.read<std::uint64_t>();
    }
  }

  // A rank that never finished, with events exhausted and no end time: a deadlock, unless the
  // network holds a transfer that no event can deliver (its finish is past the engine's range).
  if (!scenario.simulation.end_time_s) {
    pdes::run_collectively(communicator, [&] { network.check_drained(); });
    pdes::run_collectively(communicator, [&] {
      if (blocked.empty() || communicator.rank() != 0) {
        return;
      }
      std::sort(blocked.begin(), blocked.end());
      Error error{ErrorCode::kDeadlock,
                  fmt::format("deadlock: no events are left but {} of {} ranks have not finished; the first blocked "
                              "rank: {}",
                              blocked.size(), ranks, blocked.front()),
                  std::nullopt,
                  {}};
      for (std::size_t i = 1; i < blocked.size() && i < 8; ++i) {
        error.notes.push_back(blocked[i]);
      }
      if (blocked.size() > 8) {
        error.notes.push_back(fmt::format("... and {} more blocked ranks", blocked.size() - 8));
      }
      throw OrreryError(std::move(error));
    });
  } else if (!blocked.empty()) {
    summary.warnings.push_back(fmt::format("the run stopped at simulation.end_time_s = {} s before {} ranks finished",
                                           *scenario.simulation.end_time_s, blocked.size()));
  }

  // --- step times and per-rank breakdown -----------------------------------------------------------
  std::uint32_t completed = scenario.workload.steps;
  for (const auto& rank_records : records) {
    completed = std::min<std::uint32_t>(completed, static_cast<std::uint32_t>(rank_records.size()));
  }
  for (std::uint32_t k = 0; k < completed; ++k) {
    std::uint64_t end = 0;
    for (const auto& rank_records : records) {
      end = std::max(end, rank_records[k].end_ps);
    }
    summary.step_end_s.push_back(SimTime::from_ps(end).seconds());
  }
  if (completed > 0) {
    summary.first_step_s = summary.step_end_s.front();
    summary.steady_step_s = completed > 1 ? (summary.step_end_s.back() - summary.step_end_s.front()) / (completed - 1)
                                          : summary.first_step_s;
    summary.step_time_s = summary.steady_step_s;
    const std::uint32_t first_measured = completed > 1 ? 1 : 0;
    const double measured = completed - first_measured;
    // The measured span: from the end of the first step (or 0) to the end of the last.
    const double span = summary.step_end_s[completed - 1] -
                        (first_measured == 0 ? 0.0 : summary.step_end_s[first_measured - 1]);
    std::vector<double> compute, comm, exposed, idle;
    for (const auto& rank_records : records) {
      double c = 0, m = 0, e = 0;
      for (std::uint32_t k = first_measured; k < completed; ++k) {
        c += SimTime::from_ps(rank_records[k].compute_ps).seconds();
        m += SimTime::from_ps(rank_records[k].comm_ps).seconds();
        e += SimTime::from_ps(rank_records[k].exposed_ps).seconds();
      }
      compute.push_back(c / measured);
      comm.push_back(m / measured);
      exposed.push_back(e / measured);
      // Idle over the whole span, not step by step: a rank's steps are its own (a rank that ends
      // a step early starts the next early), so one of its steps can hold more work than the
      // slowest rank's step of the same number, and clipping each step at 0 would count that
      // surplus twice. Over the span, compute + exposed + idle is the step time unless the rank's
      // span itself is longer (it ended step 1 earlier than the slowest rank by more than it ends
      // the last one earlier).
      idle.push_back(std::max(0.0, span - c - e) / measured);
    }
    summary.compute_s = spread_of(compute);
    summary.comm_s = spread_of(comm);
    summary.exposed_comm_s = spread_of(exposed);
    summary.idle_s = spread_of(idle);
  }

  if (trace != nullptr) {
    collect_trace(communicator, engine.local_lps(), system, *topology, *placement, programs, records, *trace);
  }

  // --- top ops and collectives ---------------------------------------------------------------------
  // Ranked first, described after (a description computes a source line: only for those kept).
  struct Candidate {
    double seconds;
    std::uint32_t program;
    workload::OpId op;
    double executions;
  };
  std::vector<Candidate> compute_ops;
  std::vector<Candidate> collective_ops;
  std::vector<std::map<workload::OpId, const CollectiveInfo*>> collective_info(programs.size());
  for (std::uint32_t p = 0; p < programs.size(); ++p) {
    for (const CollectiveInfo& info : programs[p]->collectives()) {
      collective_info[p][info.op] = &info;
    }
    const double per = static_cast<double>(programs[p]->ranks().size()) * std::max<std::uint32_t>(completed, 1);
    // One entry per source op: the copies of an inlined callee's op (compute.inline_calls) share its
    // source offset and kind and are summed (in integer ps), described by the first copy. (The
    // collectives the SPMD partitioner inserts carry the offset of the op that needs them, a
    // different kind.)
    struct Source {
      workload::OpId first;
      std::uint64_t ps = 0;
      std::uint64_t count = 0;
    };
    std::vector<Source> sources;
    std::unordered_map<std::uint64_t, std::size_t> by_offset;
    const workload::Program& program = programs[p]->program();
    for (std::size_t id = 0; id < op_ps[p].size(); ++id) {
      if (op_counts[p][id] == 0) {
        continue;
      }
      const auto op_id = static_cast<workload::OpId>(id);
      const std::uint64_t key = (static_cast<std::uint64_t>(program.op(op_id).offset) << 16) |
                                static_cast<std::uint64_t>(program.op(op_id).kind);
      const auto [it, inserted] = by_offset.try_emplace(key, sources.size());
      if (inserted) {
        sources.push_back(Source{op_id});
      }
      sources[it->second].ps += op_ps[p][id];
      sources[it->second].count += op_counts[p][id];
    }
    for (const Source& source : sources) {
      const Candidate candidate{static_cast<double>(source.ps) * 1e-12 / per, p, source.first,
                                static_cast<double>(source.count) / per};
      (collective_info[p].contains(source.first) ? collective_ops : compute_ops).push_back(candidate);
    }
  }
  auto keep_top = [&](std::vector<Candidate>& candidates, std::vector<OpTotal>& out) {
    const std::size_t kept = std::min<std::size_t>(10, candidates.size());
    std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(kept), candidates.end(),
                      [](const Candidate& a, const Candidate& b) {
                        return a.seconds > b.seconds ||
                               (a.seconds == b.seconds && std::tie(a.program, a.op) < std::tie(b.program, b.op));
                      });
    for (std::size_t i = 0; i < kept; ++i) {
      const Candidate& c = candidates[i];
      const ProgramModel& program = *programs[c.program];
      OpTotal total;
      total.name = program.describe_op(c.op);
      total.executions = c.executions;
      total.seconds = c.seconds;
      if (const auto found = collective_info[c.program].find(c.op); found != collective_info[c.program].end()) {
        const CollectiveInfo& info = *found->second;
        const auto& groups = program.group_set(info.group_set).ranks;
        total.what = fmt::format("{} of {} over {} ranks{}", collective_kind_name(info.kind),
                                 human_bytes(static_cast<double>(info.bytes)), groups.empty() ? 0 : groups.front().size(),
                                 info.combined > 1 ? fmt::format(" ({} ops combined)", info.combined) : "");
      } else {
        total.what = program.kernel_label(c.op);
      }
      out.push_back(std::move(total));
    }
  };
  keep_top(compute_ops, summary.top_ops);
  keep_top(collective_ops, summary.top_collectives);
  for (const auto& [name, count] : algorithms) {
    summary.algorithms.push_back(fmt::format("{} ({})", name, count));
  }
  return summary;
}

}  // namespace orrery::system
