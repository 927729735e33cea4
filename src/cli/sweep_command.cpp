// `orrery sweep SCENARIO --vary key=v1,v2,... [--vary ...] [--set k=v]... --out results.csv`: the
// design-space loop. Points are the cartesian product of the --vary lists (the first --vary
// changes slowest). Under mpirun the processes split into min(processes, points) groups, each with
// its own communicator; group g runs points g, g + groups, ... one after another. The CSV has one
// row per point in point order, whatever the process count; a point that fails records its error.
#include <mpi.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>

#include "cli/commands.h"
#include "cli/mpi_command.h"
#include "cli/scenario_runner.h"
#include "cli/summary_output.h"
#include "compute/hardware.h"
#include "config/loader.h"
#include "config/scenario.h"
#include "pdes/mpi_communicator.h"

namespace orrery::cli {
namespace {

struct Axis {
  std::string key;
  std::vector<std::string> values;
};

// "key=v1,v2,...": values are split at commas outside brackets ({} [] ()) and quotes, so a value
// may be a YAML mapping or list ("network.topology={kind: switch, nodes: 2},{kind: torus, ...}").
Axis parse_vary(const std::string& text) {
  const auto equals = text.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == text.size()) {
    throw OrreryError(ErrorCode::kConfig, fmt::format("--vary {}: expected key=value1,value2,...", text));
  }
  Axis axis{text.substr(0, equals), {}};
  const std::string rest = text.substr(equals + 1);
  int depth = 0;
  char quote = 0;
  std::string value;
  auto finish = [&] {
    if (value.empty()) {
      throw OrreryError(ErrorCode::kConfig, fmt::format("--vary {}: empty value", text));
    }
    axis.values.push_back(value);
    value.clear();
  };
  char previous = ',';  // the last character that is not a space, in this value or before it
  for (const char c : rest) {
    // A quote opens a quoted scalar only where YAML would: at the start of a value or after a flow
    // indicator ("don't" is a plain scalar with an apostrophe in it).
    const bool opens_scalar = previous == ',' || previous == '[' || previous == '{' || previous == ':';
    if (c != ' ') {
      previous = c;
    }
    if (quote != 0) {
      quote = c == quote ? 0 : quote;
    } else if ((c == '\'' || c == '"') && opens_scalar) {
      quote = c;
    } else if (c == '{' || c == '[' || c == '(') {
      ++depth;
    } else if (c == '}' || c == ']' || c == ')') {
      --depth;
    } else if (c == ',' && depth == 0) {
      finish();
      continue;
    }
    value += c;
  }
  if (depth != 0 || quote != 0) {
    throw OrreryError(ErrorCode::kConfig,
                      fmt::format("--vary {}: unbalanced {}", text, quote != 0 ? "quote" : "brackets"));
  }
  finish();
  return axis;
}

// True when the key path `outer` is `inner` or contains it.
bool contains_path(const std::vector<std::string>& outer, const std::vector<std::string>& inner) {
  return outer.size() <= inner.size() && std::equal(outer.begin(), outer.end(), inner.begin());
}

// Overrides apply in order: the --set ones, then each point's --vary values. A --vary key that
// repeats or contains another --vary key, or repeats or contains a --set key, would replace that
// value at some points and not others, or discard it: an error, not a silent choice.
void check_vary_keys(const std::vector<Axis>& axes, const std::vector<std::string>& overrides) {
  std::vector<std::vector<std::string>> vary_paths;
  for (const Axis& axis : axes) {
    vary_paths.push_back(config::override_path("--vary " + axis.key + "=" + axis.values.front()));
    for (std::size_t a = 0; a + 1 < vary_paths.size(); ++a) {
      const auto& earlier = vary_paths[a];
      const auto& later = vary_paths.back();
      if (earlier == later) {
        const std::string spelled = axes[a].key == axis.key ? "" : fmt::format(" (as {} and {})", axes[a].key, axis.key);
        throw OrreryError(ErrorCode::kConfig,
                          fmt::format("--vary {}: the key is given to two --vary options{}; list all its values in one",
                                      axis.key, spelled));
      }
      if (contains_path(earlier, later) || contains_path(later, earlier)) {
        throw OrreryError(ErrorCode::kConfig,
                          fmt::format("--vary {} and --vary {}: one key is inside the other, so one would replace "
                                      "the other's values; vary one of them",
                                      axes[a].key, axis.key));
      }
    }
  }
  for (const std::string& assignment : overrides) {
    const auto set_path = config::override_path(assignment);
    for (std::size_t a = 0; a < axes.size(); ++a) {
      if (contains_path(vary_paths[a], set_path)) {
        throw OrreryError(ErrorCode::kConfig,
                          fmt::format("--set {} and --vary {}: the --vary values replace what --set gives at every "
                                      "point; drop one of them",
                                      assignment, axes[a].key));
      }
    }
  }
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) {
    return text;
  }
  std::string quoted = "\"";
  for (const char c : text) {
    quoted += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  }
  return quoted + "\"";
}

}  // namespace

Action register_sweep(CLI::App& app, const GlobalOptions& global) {
  struct Arguments {
    std::string scenario;
    std::vector<std::string> vary;
    std::vector<std::string> overrides;
    std::string out;
  };
  auto arguments = std::make_shared<Arguments>();
  auto* command = app.add_subcommand("sweep", "Run a scenario at every point of a design space; write one CSV row per point.");
  command->add_option("scenario", arguments->scenario, "Scenario file (YAML)")->required();
  command->add_option("--vary", arguments->vary, "key=v1,v2,...: a dimension of the design space (repeatable)")
      ->required();
  command->add_option("--set", arguments->overrides, "Override a scenario key for every point (repeatable)");
  command->add_option("--out", arguments->out, "CSV file to write")->required();

  return [arguments, &global]() {
    return run_with_mpi(global, [&](pdes::Communicator& world) {
      std::vector<Axis> axes;
      std::size_t points = 1;
      pdes::run_collectively(world, [&] {
        if (world.rank() == 0) {
          check_writable(arguments->out);
        }
        for (const std::string& vary : arguments->vary) {
          axes.push_back(parse_vary(vary));
          points *= axes.back().values.size();
        }
        check_vary_keys(axes, arguments->overrides);
        // Every point's scenario must load: report bad values before running anything.
        for (std::size_t point = 0; point < points; ++point) {
          std::vector<std::string> overrides = arguments->overrides;
          std::vector<std::string> point_values;  // this point's --vary values, in axis order
          std::size_t rest = point;
          for (std::size_t a = axes.size(); a-- > 0;) {
            point_values.insert(point_values.begin(), axes[a].key + "=" + axes[a].values[rest % axes[a].values.size()]);
            overrides.push_back("--vary " + point_values.front());
            rest /= axes[a].values.size();
          }
          try {
            const config::Scenario scenario = config::load_scenario(arguments->scenario, overrides);
            (void)load_scenario_hardware(scenario);  // a preset name is a typo, not a result
            if (!scenario.output.trace.empty()) {
              throw OrreryError(config::attributed_to(
                  scenario.output.trace,
                  Error{ErrorCode::kUnsupported,
                        "output.trace: orrery sweep writes no traces (every point would write the same file); "
                        "remove the key, and trace a point with orrery run --trace",
                        std::nullopt,
                        {}}));
            }
          } catch (const OrreryError& error) {
            Error named = error.error();
            named.message = fmt::format("sweep point {} ({}): {}", point, fmt::join(point_values, ", "), named.message);
            throw OrreryError(std::move(named));
          }
        }
      });
      const auto groups = static_cast<int>(std::min<std::size_t>(world.size(), points));
      const int color = static_cast<int>(world.rank()) % groups;
      MPI_Comm group_comm = MPI_COMM_NULL;
      MPI_Comm_split(MPI_COMM_WORLD, color, static_cast<int>(world.rank()), &group_comm);
      pdes::MpiCommunicator group(group_comm);

      std::string rows;  // this group's rows, "point\tline\n"
      for (std::size_t point = static_cast<std::size_t>(color); point < points; point += static_cast<std::size_t>(groups)) {
        std::vector<std::string> overrides = arguments->overrides;
        std::vector<std::string> values(axes.size());
        std::size_t rest = point;
        for (std::size_t a = axes.size(); a-- > 0;) {
          values[a] = axes[a].values[rest % axes[a].values.size()];
          overrides.push_back("--vary " + axes[a].key + "=" + values[a]);
          rest /= axes[a].values.size();
        }
        std::string line = std::to_string(point);
        for (const auto& value : values) {
          line += "," + csv_field(value);
        }
        try {
          const config::Scenario scenario = config::load_scenario(arguments->scenario, overrides);
          const RunResult result = run_scenario(group, scenario);
          const auto& s = result.summary;
          if (s.step_end_s.empty()) {
            throw OrreryError(ErrorCode::kModel, "no step completed before simulation.end_time_s");
          }
          line += fmt::format(",{:.9g},{:.9g},{},{:.9g},{:.9g},{:.9g},{:.9g},{},{},{:.3f},", s.step_time_s,
                              s.first_step_s, s.step_end_s.size(), s.compute_s.mean, s.comm_s.mean,
                              s.exposed_comm_s.mean, s.idle_s.mean, s.ranks, s.engine.events, result.wall_s);
        } catch (const OrreryError& error) {
          line += ",,,,,,,,,,," + csv_field(error.error().message);
        }
        rows += std::to_string(point) + "\t" + line + "\n";
      }
      // Group leaders' rows go to process 0, which writes them in point order.
      pdes::ByteBuffer mine;
      if (group.rank() == 0) {
        const auto* data = reinterpret_cast<const std::byte*>(rows.data());
        mine.assign(data, data + rows.size());
      }
      const auto all = world.allgather(mine);
      MPI_Comm_free(&group_comm);
      if (world.rank() != 0) {
        return 0;
      }
      std::vector<std::pair<std::size_t, std::string>> ordered;
      for (const auto& buffer : all) {
        const std::string text(reinterpret_cast<const char*>(buffer.data()), buffer.size());
        std::size_t start = 0;
        while (start < text.size()) {
          const auto tab = text.find('\t', start);
          const auto newline = text.find('\n', tab);
          ordered.emplace_back(std::stoull(text.substr(start, tab - start)), text.substr(tab + 1, newline - tab - 1));
          start = newline + 1;
        }
      }
      std::sort(ordered.begin(), ordered.end());
      std::ofstream out(arguments->out);
      out << "point";
      for (const auto& axis : axes) {
        out << "," << csv_field(axis.key);
      }
      out << ",step_time_s,first_step_s,steps,compute_s,comm_s,exposed_comm_s,idle_s,ranks,events,wall_s,error\n";
      for (const auto& [point, line] : ordered) {
        out << line << "\n";
      }
      if (!out) {
        throw OrreryError(ErrorCode::kIo, fmt::format("cannot write '{}'", arguments->out));
      }
      std::printf("sweep: %zu points written to %s\n", points, arguments->out.c_str());
      return 0;
    });
  };
}

}  // namespace orrery::cli
