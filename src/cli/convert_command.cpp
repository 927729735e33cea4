// `orrery convert INPUT --to chakra --out PREFIX [--set key=value]...`: writes the per-rank
// Chakra execution traces of what `orrery run` would simulate (docs/chakra.md, "Writing traces");
// under mpirun the processes share the ranks' files.
// INPUT is a scenario (.yaml / .yml) or a StableHLO program, which runs as a scenario whose
// workload is that one program (the scenario defaults and --set apply). Each program is costed
// and lowered to its execution graph exactly as a run does it (fusion, collective combining,
// unrolled loops, the chosen branches); every exec op of every rank becomes a node.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/mpi_command.h"
#include "cli/scenario_runner.h"
#include "config/loader.h"
#include "frontend/chakra/writer.h"
#include "system/simulation.h"
#include "util/assert.h"
#include "util/error.h"

namespace orrery::cli {
namespace {

namespace chakra = frontend::chakra;

struct ConvertStatistics {
  std::uint64_t nodes = 0;
  std::uint64_t exact_ps = 0;    // compute time as costed, per step, summed over ranks
  std::uint64_t written_ps = 0;  // the same in whole microseconds as written
};

// The Chakra collective of a collective (collective_permute is written as sends and recvs).
chakra::CommType comm_type(system::CollectiveKind kind) {
  switch (kind) {
    case system::CollectiveKind::kAllReduce:
      return chakra::CommType::kAllReduce;
    case system::CollectiveKind::kAllGather:
      return chakra::CommType::kAllGather;
    case system::CollectiveKind::kReduceScatter:
      return chakra::CommType::kReduceScatter;
    case system::CollectiveKind::kAllToAll:
      return chakra::CommType::kAllToAll;
    case system::CollectiveKind::kBroadcast:
      return chakra::CommType::kBroadcast;
    case system::CollectiveKind::kPermute:
      break;
  }
  ORRERY_ASSERT(false, "a permute is written as sends and recvs");
  return chakra::CommType::kAllReduce;
}

class Converter {
 public:
  Converter(const std::vector<std::unique_ptr<system::ProgramModel>>& programs, std::string prefix)
      : programs_(programs), prefix_(std::move(prefix)) {
    for (std::uint32_t p = 0; p < programs_.size(); ++p) {
      const system::ProgramModel& model = *programs_[p];
      for (const std::uint32_t r : model.ranks()) {
        ranks_ = std::max(ranks_, r + 1);
      }
      for (std::uint32_t i = 0; i < model.graph().size(); ++i) {
        const system::ExecKind kind = model.graph().op(i).kind;
        if (kind == system::ExecKind::kSend || kind == system::ExecKind::kRecv) {
          (kind == system::ExecKind::kSend ? sender_ : receiver_).emplace(model.peer(i).channel, p);
          tag_of_channel_.emplace(model.peer(i).channel, 0);
        }
      }
    }
    // Tags are int32 in ASTRA-sim: channels are numbered densely in handle order, and each
    // permute takes the number of channels plus its position in its program's collective order.
    std::int64_t next = 0;
    for (auto& entry : tag_of_channel_) {
      entry.second = next++;
    }
    permute_tag_base_ = next;
    // Group ids in order of first use (program, exec op, group), whichever ranks a process writes.
    for (const auto& model : programs_) {
      for (const std::uint32_t i : model->graph().collectives()) {
        const system::CollectiveInfo& info = model->collective(i);
        if (info.kind == system::CollectiveKind::kPermute) {
          continue;
        }
        for (std::vector<std::uint32_t> ranks : model->group_set(info.group_set).ranks) {
          std::sort(ranks.begin(), ranks.end());
          if (group_ids_.try_emplace(ranks, std::to_string(group_ids_.size() + 1)).second) {
            groups_by_id_.emplace(std::to_string(group_ids_.size()), ranks);
          }
        }
      }
    }
  }

  [[nodiscard]] std::uint32_t ranks() const { return ranks_; }
  [[nodiscard]] const ConvertStatistics& statistics() const { return statistics_; }
  [[nodiscard]] const std::map<std::string, std::vector<std::uint32_t>>& comm_groups() const {
    return groups_by_id_;
  }

  // Writes the traces of the ranks r with r % processes == process (every rank, for one
  // process); ranks no program runs get an empty trace.
  void write_share(std::uint32_t process, std::uint32_t processes) {
    const auto mine = [&](std::uint32_t rank) { return rank % processes == process; };
    std::vector<bool> run(ranks_, false);
    for (std::uint32_t p = 0; p < programs_.size(); ++p) {
      const system::ProgramModel& model = *programs_[p];
      std::optional<Shared> shared;
      for (std::uint32_t d = 0; d < model.devices(); ++d) {
        run[model.global_rank(d)] = true;
        if (mine(model.global_rank(d))) {
          if (!shared) {
            shared = share(model);
          }
          write(model, *shared, d);
        }
      }
    }
    for (std::uint32_t r = 0; r < ranks_; ++r) {
      if (!run[r] && mine(r)) {
        check(chakra::write_trace(chakra::trace_file(prefix_, r), chakra::Trace{}));
      }
    }
  }

 private:
  // What every device of a program shares: node names and each exec op's dependencies.
  struct Shared {
    std::vector<std::string> names;
    std::vector<std::vector<std::uint32_t>> deps;
  };

  static Shared share(const system::ProgramModel& model) {
    const system::ExecGraph& graph = model.graph();
    const workload::LineIndex lines(model.program().source().text);
    Shared shared;
    shared.names.resize(graph.size());
    shared.deps.resize(graph.size());
    for (std::uint32_t i = 0; i < graph.size(); ++i) {
      const workload::OpId source = graph.op(i).source;
      shared.names[i] =
          graph.op(i).kind == system::ExecKind::kCompute
              ? fmt::format("{} ({})", model.kernel_label(source), model.describe_op(source, lines))
              : model.describe_op(source, lines);
      for (const std::uint32_t c : graph.consumers(i)) {
        shared.deps[c].push_back(i);
      }
    }
    return shared;
  }

  static void check(const Result<bool>& result) {
    if (!result) {
      throw OrreryError(result.error());
    }
  }

  [[nodiscard]] const std::string& group_id(std::vector<std::uint32_t> ranks) const {
    std::sort(ranks.begin(), ranks.end());
    return group_ids_.at(ranks);
  }

  void write(const system::ProgramModel& model, const Shared& shared, std::uint32_t d) {
    const system::ExecGraph& graph = model.graph();
    chakra::Trace trace;
    std::vector<std::vector<std::uint64_t>> ids(graph.size());  // the node ids of each exec op
    std::uint64_t next_id = 0;
    const auto add = [&](std::uint32_t exec, chakra::NodeType type,
                         const std::string& suffix = {}) -> chakra::Node& {
      chakra::Node& n = trace.nodes.emplace_back();
      n.id = next_id++;
      n.name = suffix.empty() ? shared.names[exec] : shared.names[exec] + suffix;
      n.type = type;
      for (const std::uint32_t dep : shared.deps[exec]) {
        ORRERY_ASSERT(dep < exec, "exec ops are in a topological order (exec_graph.h)");
        n.data_deps.insert(n.data_deps.end(), ids[dep].begin(), ids[dep].end());
      }
      ids[exec].push_back(n.id);
      return n;
    };
    const auto idle = [&](std::uint32_t exec) {  // an op this device takes no part in
      add(exec, chakra::NodeType::kComp, " (not on this rank)").duration_micros = 0;
    };
    for (std::uint32_t i = 0; i < graph.size(); ++i) {
      const system::ExecOp& op = graph.op(i);
      switch (op.kind) {
        case system::ExecKind::kCompute: {
          const std::uint64_t ps = model.duration(i).ps();
          const std::uint64_t micros = (ps + 500'000) / 1'000'000;
          add(i, chakra::NodeType::kComp).duration_micros = micros;
          statistics_.exact_ps += ps;
          statistics_.written_ps += micros * 1'000'000;
          break;
        }
        case system::ExecKind::kCollective: {
          const system::CollectiveInfo& info = model.collective(i);
          if (info.kind == system::CollectiveKind::kPermute) {
            permute(model, i, d, info, add, idle);
            break;
          }
          const chakra::CommType type = comm_type(info.kind);
          const system::GroupSet& set = model.group_set(info.group_set);
          const std::uint32_t g = set.group_of[d];
          if (g == system::GroupSet::kNoGroup) {
            idle(i);
            break;
          }
          std::vector<std::uint32_t> members = set.ranks[g];
          chakra::Node& n = add(i, chakra::NodeType::kCollective);
          n.comm_type = type;
          // comm_size is each rank's input (the reader's convention): an all-gather's plan size is its
          // output.
          n.comm_size = type == chakra::CommType::kAllGather ? info.bytes / members.size() : info.bytes;
          n.pg_name = group_id(std::move(members));
          break;
        }
        case system::ExecKind::kSend:
        case system::ExecKind::kRecv: {
          const system::PeerInfo& peer = model.peer(i);
          const bool send = op.kind == system::ExecKind::kSend;
          const std::uint32_t other = (send ? peer.target_of : peer.source_of)[d];
          if (other == system::PeerInfo::kNone) {
            idle(i);
            break;
          }
          const system::ProgramModel& remote = *programs_[(send ? receiver_ : sender_).at(peer.channel)];
          chakra::Node& n = add(i, send ? chakra::NodeType::kSend : chakra::NodeType::kRecv);
          n.comm_size = peer.bytes;
          n.comm_tag = tag_of_channel_.at(peer.channel);
          (send ? n.comm_dst : n.comm_src) = remote.global_rank(other);
          break;
        }
      }
    }
    statistics_.nodes += trace.nodes.size();
    check(chakra::write_trace(chakra::trace_file(prefix_, model.global_rank(d)), trace));
  }

  // A collective_permute: this device's send to its target and recv from its source, as a send
  // node and a recv node that everything after the permute waits for. Each permute has its own tag.
  template <class Add, class Idle>
  void permute(const system::ProgramModel& model, std::uint32_t exec, std::uint32_t d,
               const system::CollectiveInfo& info, const Add& add, const Idle& idle) const {
    const std::int64_t tag = permute_tag_base_ + model.graph().op(exec).ordinal;
    bool any = false;
    for (const bool send : {true, false}) {  // the send first, then the recv
      for (const auto& [source, target] : info.pairs) {
        if ((send ? source : target) != d || source == target) {
          continue;
        }
        chakra::Node& n =
            add(exec, send ? chakra::NodeType::kSend : chakra::NodeType::kRecv, send ? " (send)" : " (recv)");
        n.comm_size = info.bytes;
        n.comm_tag = tag;
        (send ? n.comm_dst : n.comm_src) = model.global_rank(send ? target : source);
        any = true;
      }
    }
    if (!any) {
      idle(exec);
    }
  }

  const std::vector<std::unique_ptr<system::ProgramModel>>& programs_;
  std::string prefix_;
  std::uint32_t ranks_ = 0;
  std::map<std::int64_t, std::uint32_t> sender_;    // channel -> program
  std::map<std::int64_t, std::uint32_t> receiver_;  // channel -> program
  std::map<std::int64_t, std::int64_t> tag_of_channel_;
  std::int64_t permute_tag_base_ = 0;
  std::map<std::vector<std::uint32_t>, std::string> group_ids_;
  std::map<std::string, std::vector<std::uint32_t>> groups_by_id_;
  ConvertStatistics statistics_;
};

bool is_scenario(const std::string& path) {
  const std::string extension = std::filesystem::path(path).extension().string();
  return extension == ".yaml" || extension == ".yml";
}

struct ConvertArguments {
  std::string input;
  std::string to;
  std::string out;
  std::vector<std::string> overrides;
};

// Loads the scenario: a scenario file, or a program as a one-program scenario (`scenario_name` is
// then set to the name of the text made for it).
config::Scenario load_input(const ConvertArguments& arguments, std::string& scenario_name) {
  const std::string& input = arguments.input;
  if (is_scenario(input)) {
    return config::load_scenario(input, arguments.overrides);
  }
  // A program: the scenario text names it and nothing else, so an error located in that text is
  // about the program file (its own parse errors are located in it).
  scenario_name = fmt::format("the scenario of {}", input);
  return config::load_scenario_text(fmt::format("workload:\n  programs:\n    - file: \"{}\"\n",
                                                std::filesystem::absolute(input).lexically_normal().string()),
                                    scenario_name, arguments.overrides);
}

// Every process builds the programs; process p writes the traces of ranks r = p mod P, so the
// files are the same for any process count. Set-up and writing errors are agreed collectively.
int convert(const ConvertArguments& arguments, pdes::Communicator& communicator, std::string& scenario_name) {
  const bool first = communicator.rank() == 0;
  config::Scenario scenario;
  system::SimulationInput simulation;
  std::vector<std::unique_ptr<system::ProgramModel>> programs;
  pdes::run_collectively(communicator, [&] {
    if (arguments.to != "chakra") {
      throw OrreryError(ErrorCode::kConfig,
                        fmt::format("--to {}: the only output format is chakra", arguments.to));
    }
    scenario = load_input(arguments, scenario_name);
    if (!scenario.workload.chakra.prefix.empty()) {
      throw OrreryError(ErrorCode::kConfig,
                        fmt::format("{}: the workload is already Chakra traces", arguments.input));
    }
    if (const std::filesystem::path parent = std::filesystem::path(arguments.out).parent_path();
        !parent.empty() && !std::filesystem::is_directory(parent)) {
      throw OrreryError(ErrorCode::kIo, fmt::format("--out {}: directory '{}' does not exist", arguments.out,
                                                    parent.string()));
    }
    RunResult result;
    simulation = prepare_simulation(scenario, result);
    if (first) {
      for (const std::string& warning : result.warnings) {
        std::fprintf(stderr, "orrery: warning: %s\n", warning.c_str());
      }
    }
    programs = system::build_program_models(simulation);
  });
  Converter converter(programs, arguments.out);
  const std::string groups = arguments.out + ".comm_groups.json";
  pdes::run_collectively(communicator, [&] {
    converter.write_share(communicator.rank(), communicator.size());
    if (first && !converter.comm_groups().empty()) {
      if (auto wrote = chakra::write_comm_groups(groups, converter.comm_groups()); !wrote) {
        throw OrreryError(wrote.error());
      }
    }
  });
  // The statistics of every process's ranks, summed.
  const ConvertStatistics& mine = converter.statistics();
  pdes::ByteBuffer bytes(sizeof(ConvertStatistics));
  std::memcpy(bytes.data(), &mine, sizeof(ConvertStatistics));
  ConvertStatistics s;
  for (const pdes::ByteBuffer& theirs : communicator.allgather(bytes)) {
    ConvertStatistics one;
    std::memcpy(&one, theirs.data(), sizeof(ConvertStatistics));
    s.nodes += one.nodes;
    s.exact_ps += one.exact_ps;
    s.written_ps += one.written_ps;
  }
  if (!first) {
    return 0;
  }
  std::printf("wrote %u rank traces %s.{0..%u}.et (%llu nodes)", converter.ranks(), arguments.out.c_str(),
              converter.ranks() - 1, static_cast<unsigned long long>(s.nodes));
  if (!converter.comm_groups().empty()) {
    std::printf(" and %zu communicator group%s %s", converter.comm_groups().size(),
                converter.comm_groups().size() == 1 ? "" : "s", groups.c_str());
  }
  std::printf(
      "\nhardware %s; compute per step, summed over ranks: %.6f s as costed, %.6f s in whole microseconds "
      "(%+.3f%%)\n",
      simulation.hardware.c_str(), static_cast<double>(s.exact_ps) * 1e-12,
      static_cast<double>(s.written_ps) * 1e-12,
      s.exact_ps == 0 ? 0.0
                      : 100.0 * (static_cast<double>(s.written_ps) / static_cast<double>(s.exact_ps) - 1.0));
  return 0;
}

}  // namespace

Action register_convert(CLI::App& app, const GlobalOptions& global) {
  auto arguments = std::make_shared<ConvertArguments>();
  auto* command = app.add_subcommand(
      "convert",
      "Write the per-rank Chakra traces of a scenario or a StableHLO program, as `run` would simulate it.");
  command->add_option("input", arguments->input, "Scenario (.yaml) or StableHLO program")->required();
  command->add_option("--to", arguments->to, "Output format: chakra")->required();
  command->add_option("--out", arguments->out, "Output prefix: PREFIX.<rank>.et and PREFIX.comm_groups.json")
      ->required();
  command->add_option("--set", arguments->overrides, "Override a scenario key: dotted.key=value (repeatable)")
      ->allow_extra_args(false);
  return [arguments, &global]() {
    return run_with_mpi(global, [&](pdes::Communicator& communicator) {
      std::string scenario_name;
      try {
        return convert(*arguments, communicator, scenario_name);
      } catch (const OrreryError& error) {
        Error located = error.error();
        if (scenario_name.empty() || !located.where || located.where->file != scenario_name) {
          throw;
        }
        located.where.reset();
        located.message = fmt::format("{}: {}", arguments->input, located.message);
        OrreryError relocated(std::move(located));
        if (error.coordinated()) {
          relocated.mark_coordinated();
        }
        throw relocated;
      }
    });
  };
}

}  // namespace orrery::cli
