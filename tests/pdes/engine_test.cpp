// The engine under a fake communicator: N threads acting as N processes (InProcessGroup).
#include <gtest/gtest.h>

#include <mutex>

#include "pdes/engine.h"
#include "pdes/in_process_group.h"
#include "pdes/phold.h"

namespace orrery::pdes {
namespace {

struct Hop {
  std::uint32_t remaining;
};

// Each event at LP i forwards one hop to `next(i)` after `delay`, until the hop count runs out.
struct RelayModel {
  LpId num_lps;
  SimTime delay;
  void handle(Engine<Hop>& engine, const Event<Hop>& event) {
    if (event.payload.remaining > 0) {
      engine.send((event.destination + 1) % num_lps, delay, Hop{event.payload.remaining - 1});
    }
  }
};

struct RunOutcome {
  RunStats stats;
  std::uint64_t allreduces = 0;
};

RunOutcome run_relay(ProcessId processes, LpId lps, SimTime delay, SimTime channel_latency,
                     std::uint32_t hops, SimTime end = SimTime::max()) {
  InProcessGroup group(processes);
  std::vector<RunStats> results(processes);
  group.run([&](Communicator& communicator) {
    const PartitionMap map = BlockPartitioner().assign(lps, processes);
    ChannelTable channels;
    channels.add(LpRange{0, lps}, LpRange{0, lps}, channel_latency, "relay");
    EngineOptions options;
    options.end_time = end;
    Engine<Hop> engine(communicator, map, channels, options);
    RelayModel model{lps, delay};
    engine.schedule(0, SimTime::zero(), Hop{hops});
    results[communicator.rank()] = engine.run(model);
  });
  for (ProcessId p = 1; p < processes; ++p) {
    EXPECT_EQ(results[p].history_hash, results[0].history_hash);
    EXPECT_EQ(results[p].events, results[0].events);
  }
  return RunOutcome{results[0], group.allreduce_count()};
}

TEST(Engine, SequentialRunExecutesEveryEvent) {
  const RunOutcome outcome = run_relay(1, 8, SimTime::from_ps(100), SimTime::from_ps(100), 20);
  EXPECT_EQ(outcome.stats.events, 21U);
  EXPECT_EQ(outcome.stats.last_event_time.ps(), 2000U);
  EXPECT_EQ(outcome.stats.windows, 1U);  // no channel crosses processes: one window for everything
}

// The first event fans out `fan_out` events, each a picosecond later than the one before, inside
// the one window of a sequential run.
struct FanOutModel {
  std::uint32_t fan_out;
  void handle(Engine<Hop>& engine, const Event<Hop>& event) {
    if (event.payload.remaining > 0) {
      for (std::uint32_t i = 1; i <= fan_out; ++i) {
        engine.send(0, SimTime::from_ps(i), Hop{0});
      }
    }
  }
};

TEST(Engine, PeakPendingCountsEventsPushedInsideAWindow) {
  InProcessGroup group(1);
  RunStats stats;
  group.run([&](Communicator& communicator) {
    const PartitionMap map = BlockPartitioner().assign(1, 1);
    ChannelTable channels;
    channels.add(LpRange{0, 1}, LpRange{0, 1}, SimTime::from_ps(1), "self");
    Engine<Hop> engine(communicator, map, channels, EngineOptions{});
    FanOutModel model{100};
    engine.schedule(0, SimTime::zero(), Hop{1});
    stats = engine.run(model);
  });
  EXPECT_EQ(stats.events, 101U);
  EXPECT_EQ(stats.windows, 1U);
  ASSERT_EQ(stats.processes.size(), 1U);
  EXPECT_EQ(stats.processes[0].peak_pending, 100U);  // all 100 were pending once the first ran
}

TEST(Engine, IdleStretchesAreSkippedInOneWindow) {
  // Two LPs on two processes; each hop waits 10^6 lookaheads. Every window holds one event and
  // starts at the next event anywhere, so windows = events, not 10^6 per hop.
  const RunOutcome outcome =
      run_relay(2, 2, SimTime::from_ps(1'000'000'000), SimTime::from_ps(1000), 4);
  EXPECT_EQ(outcome.stats.events, 5U);
  EXPECT_EQ(outcome.stats.windows, 5U);
  // One allreduce per window, plus the one that finds no events left.
  EXPECT_EQ(outcome.allreduces, outcome.stats.windows + 1);
}

TEST(Engine, WindowEndIsExclusive) {
  // Hops exactly one lookahead apart land exactly on the window end: each needs its own window.
  const RunOutcome outcome = run_relay(2, 2, SimTime::from_ps(1000), SimTime::from_ps(1000), 3);
  EXPECT_EQ(outcome.stats.events, 4U);
  EXPECT_EQ(outcome.stats.windows, 4U);
}

TEST(Engine, EndTimeStopsBeforeLaterEvents) {
  // Events at 0, 100, ..., 2000 ps; end at 1000 ps runs those at 0..900 only.
  const RunOutcome outcome =
      run_relay(2, 8, SimTime::from_ps(100), SimTime::from_ps(100), 20, SimTime::from_ps(1000));
  EXPECT_EQ(outcome.stats.events, 10U);
  EXPECT_EQ(outcome.stats.last_event_time.ps(), 900U);
}

TEST(Engine, HistoryIsIdenticalForOneTwoAndFourProcesses) {
  std::vector<std::uint64_t> hashes;
  for (const ProcessId processes : {1U, 2U, 4U}) {
    for (const char* partition : {"block", "round-robin"}) {
      PholdParams params;
      params.lps = 64;
      params.start_events = 4;
      params.remote = 0.5;
      params.end = 30.0;
      params.partition = partition;
      InProcessGroup group(processes);
      std::vector<PholdResult> results(processes);
      group.run([&](Communicator& communicator) { results[communicator.rank()] = run_phold(communicator, params); });
      EXPECT_GT(results[0].stats.events, 1000U);
      std::uint64_t sent = 0;
      std::uint64_t received = 0;
      for (const auto& p : results[0].stats.processes) {
        sent += p.remote_sent;
        received += p.remote_received;
      }
      EXPECT_EQ(sent, received);
      EXPECT_EQ(processes == 1, sent == 0);
      hashes.push_back(results[0].stats.history_hash);
    }
  }
  for (const std::uint64_t hash : hashes) {
    EXPECT_EQ(hash, hashes.front());
  }
}

TEST(Engine, DifferentSeedsGiveDifferentHistories) {
  auto hash_for = [](std::uint64_t seed) {
    PholdParams params;
    params.lps = 32;
    params.end = 10.0;
    params.seed = seed;
    InProcessGroup group(1);
    std::uint64_t hash = 0;
    group.run([&](Communicator& communicator) { hash = run_phold(communicator, params).stats.history_hash; });
    return hash;
  };
  EXPECT_NE(hash_for(1), hash_for(2));
  EXPECT_EQ(hash_for(3), hash_for(3));
}

// Runs `body` on two in-process "processes" and returns each process's error message.
std::vector<std::string> errors_of_two_processes(const std::function<void(Communicator&)>& body) {
  InProcessGroup group(2);
  std::vector<std::string> messages(2);
  std::mutex mutex;
  group.run([&](Communicator& communicator) {
    try {
      body(communicator);
    } catch (const OrreryError& error) {
      std::lock_guard lock(mutex);
      messages[communicator.rank()] = error.what();
    }
  });
  return messages;
}

struct SendModel {
  LpId to;
  SimTime delay;
  bool absolute = false;
  void handle(Engine<Hop>& engine, const Event<Hop>& event) {
    if (event.payload.remaining == 0) {
      return;
    }
    if (absolute) {
      engine.send_at(to, delay, Hop{0});
    } else {
      engine.send(to, delay, Hop{0});
    }
  }
};

void run_send_model(Communicator& communicator, SendModel model, SimTime start, LpRange channel_to) {
  const PartitionMap map = BlockPartitioner().assign(4, 2);  // LPs 0,1 | 2,3
  ChannelTable channels;
  channels.add(LpRange{0, 4}, channel_to, SimTime::from_ps(1000), "test");
  Engine<Hop> engine(communicator, map, channels, EngineOptions{});
  engine.schedule(0, start, Hop{1});
  (void)engine.run(model);
}

TEST(EngineErrors, SendBelowLookaheadNamesLpsAndTimes) {
  const auto messages = errors_of_two_processes([](Communicator& communicator) {
    run_send_model(communicator, SendModel{3, SimTime::from_ps(999)}, SimTime::from_ps(5), LpRange{0, 4});
  });
  EXPECT_NE(messages[0].find("cross-process send below the lookahead: LP 0 (process 0) -> LP 3 (process 1) "
                             "at t=5 ps with delay 999 ps < lookahead 1000 ps"),
            std::string::npos)
      << messages[0];
  EXPECT_NE(messages[1].find("process 0 reported an error"), std::string::npos) << messages[1];
}

TEST(EngineErrors, EventIntoThePastIsReported) {
  const auto messages = errors_of_two_processes([](Communicator& communicator) {
    run_send_model(communicator, SendModel{1, SimTime::from_ps(3), true}, SimTime::from_ps(50), LpRange{0, 4});
  });
  EXPECT_NE(messages[0].find("event into the past: LP 0 at t=50 ps sent an event to LP 1 for t=3 ps"),
            std::string::npos)
      << messages[0];
}

TEST(EngineErrors, ASaturatedEventTimeIsReportedNotDropped) {
  // now + delay saturates at SimTime::max(), where an event would never run and the run would
  // end as if every LP were done.
  const auto messages = errors_of_two_processes([](Communicator& communicator) {
    run_send_model(communicator, SendModel{1, SimTime::max()}, SimTime::from_ps(50), LpRange{0, 4});
  });
  EXPECT_NE(messages[0].find("simulated time overflow: LP 0 at t=5e-11 s scheduled an event for LP 1"),
            std::string::npos)
      << messages[0];
  EXPECT_NE(messages[1].find("process 0 reported an error"), std::string::npos) << messages[1];
}

TEST(EngineErrors, SendWithoutADeclaredChannelIsReported) {
  const auto messages = errors_of_two_processes([](Communicator& communicator) {
    const PartitionMap map = BlockPartitioner().assign(4, 2);
    ChannelTable channels;  // only LPs 0-1 talk to each other: nothing crosses processes
    channels.add(LpRange{0, 2}, LpRange{0, 2}, SimTime::from_ps(1000), "local");
    Engine<Hop> engine(communicator, map, channels, EngineOptions{});
    engine.schedule(0, SimTime::zero(), Hop{1});
    SendModel model{2, SimTime::from_ps(5000)};
    (void)engine.run(model);
  });
  EXPECT_NE(messages[0].find("LP 0 (process 0) sent an event to LP 2 (process 1) but no channel"),
            std::string::npos)
      << messages[0];
}

struct ThrowingModel {
  void handle(Engine<Hop>& engine, const Event<Hop>& event) {
    if (engine.process() == 1 && event.time > SimTime::from_ps(3000)) {
      throw OrreryError(ErrorCode::kMismatch, "ranks 2 and 3 disagree on all_reduce #4");
    }
    engine.send((event.destination + 1) % 4, SimTime::from_ps(1000), Hop{1});
  }
};

TEST(EngineErrors, AModelErrorOnOneProcessStopsAllWithoutHanging) {
  const auto messages = errors_of_two_processes([](Communicator& communicator) {
    const PartitionMap map = BlockPartitioner().assign(4, 2);
    ChannelTable channels;
    channels.add(LpRange{0, 4}, LpRange{0, 4}, SimTime::from_ps(1000), "ring");
    Engine<Hop> engine(communicator, map, channels, EngineOptions{});
    engine.schedule(0, SimTime::zero(), Hop{1});
    ThrowingModel model;
    (void)engine.run(model);
  });
  EXPECT_NE(messages[1].find("ranks 2 and 3 disagree on all_reduce #4"), std::string::npos) << messages[1];
  EXPECT_NE(messages[0].find("process 1 reported an error"), std::string::npos) << messages[0];
}

TEST(RunCollectively, OneFailingProcessStopsEveryProcess) {
  const auto messages = errors_of_two_processes([](Communicator& communicator) {
    run_collectively(communicator, [&] {
      if (communicator.rank() == 1) {
        throw OrreryError(ErrorCode::kConfig, "bad value on process 1");
      }
    });
  });
  EXPECT_NE(messages[1].find("bad value on process 1"), std::string::npos);
  EXPECT_NE(messages[0].find("process 1 reported an error"), std::string::npos);
}

TEST(Phold, ValidationNamesTheParameter) {
  PholdParams params;
  params.lookahead = 0.0;
  EXPECT_THROW(validate(params), OrreryError);
  params = PholdParams{};
  params.mean = 0.05;  // below the lookahead
  try {
    validate(params);
    FAIL();
  } catch (const OrreryError& error) {
    EXPECT_NE(std::string(error.what()).find("--mean"), std::string::npos);
  }
  params = PholdParams{};
  params.remote = 1.5;
  EXPECT_THROW(validate(params), OrreryError);
  params = PholdParams{};
  params.end = 1e30;  // beyond 2^64 ps: the run would never end
  try {
    validate(params);
    FAIL();
  } catch (const OrreryError& error) {
    EXPECT_NE(std::string(error.what()).find("--end must be at most 1e13"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace orrery::pdes
