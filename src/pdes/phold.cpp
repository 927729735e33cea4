#include "pdes/phold.h"

#include <cmath>
#include <fmt/format.h>

#include "pdes/engine.h"

namespace orrery::pdes {
namespace {

constexpr double kSecondsPerUnit = 1e-6;  // one PHOLD time unit is a microsecond

class PholdModel {
 public:
  explicit PholdModel(const PholdParams& params)
      : num_lps_(params.lps),
        // remote decision from one 32-bit draw: remote iff draw < remote * 2^32
        remote_threshold_(static_cast<std::uint64_t>(params.remote * 4294967296.0)),
        increment_mean_(params.mean - params.lookahead),
        lookahead_(SimTime::from_seconds(params.lookahead * kSecondsPerUnit)) {}

  // t + lookahead + Exp(mean - lookahead)
  SimTime draw_increment(Random& random) const {
    return lookahead_ + SimTime::from_seconds(random.exponential(increment_mean_) * kSecondsPerUnit);
  }

  void handle(Engine<NoPayload>& engine, const Event<NoPayload>& event) {
    Random& random = engine.random();
    const SimTime delay = draw_increment(random);
    const LpId destination = random.next_u32() < remote_threshold_ ? random.below(num_lps_) : event.destination;
    engine.send(destination, delay, NoPayload{});
  }

  [[nodiscard]] SimTime lookahead() const { return lookahead_; }

 private:
  LpId num_lps_;
  std::uint64_t remote_threshold_;
  double increment_mean_;
  SimTime lookahead_;
};

}  // namespace

void validate(const PholdParams& params) {
  auto bad = [](const std::string& what) { throw OrreryError(ErrorCode::kConfig, "phold: " + what); };
  if (params.lps == 0 || params.lps > kMaxLps) {
    bad(fmt::format("--lps must be between 1 and {} (got {})", kMaxLps, params.lps));
  }
  if (params.start_events == 0) {
    bad("--start-events must be at least 1");
  }
  if (!(params.remote >= 0.0 && params.remote <= 1.0)) {
    bad(fmt::format("--remote must be a probability in [0, 1] (got {})", params.remote));
  }
  if (!(params.lookahead > 0.0)) {
    bad(fmt::format("--lookahead must be positive (got {})", params.lookahead));
  }
  if (!(params.mean > params.lookahead) || !std::isfinite(params.mean)) {
    bad(fmt::format("--mean must be finite and greater than --lookahead (got mean {}, lookahead {})",
                    params.mean, params.lookahead));
  }
  if (!(params.end > 0.0) || !std::isfinite(params.end)) {
    bad(fmt::format("--end must be positive and finite (got {})", params.end));
  }
  if (params.end > 1e13) {  // SimTime holds 2^64 ps, about 1.8e13 us
    bad(fmt::format("--end must be at most 1e13 us (got {}): simulated time ends at 2^64 ps", params.end));
  }
}

PholdResult run_phold(Communicator& communicator, const PholdParams& params) {
  validate(params);
  PholdModel model(params);
  const auto partitioner = make_basic_partitioner(params.partition);
  const PartitionMap partition = partitioner->assign(params.lps, communicator.size());
  ChannelTable channels;
  channels.add(LpRange{0, params.lps}, LpRange{0, params.lps}, model.lookahead(), "phold");

  EngineOptions options;
  options.end_time = SimTime::from_seconds(params.end * kSecondsPerUnit);
  options.seed = params.seed;
  Engine<NoPayload> engine(communicator, partition, channels, options);
  for (const LpId lp : engine.local_lps()) {
    Random& random = engine.random_of(lp);
    for (std::uint32_t i = 0; i < params.start_events; ++i) {
      engine.schedule(lp, model.draw_increment(random), NoPayload{});
    }
  }
  PholdResult result;
  result.stats = engine.run(model);
  result.partition = report_partition(partitioner->name(), partition, channels);
  return result;
}

}  // namespace orrery::pdes
