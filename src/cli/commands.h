// The `orrery` subcommands. Each registers its options on the CLI11 app and returns the action to
// run when it is the chosen subcommand. Actions return the process exit code.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace orrery::cli {

struct GlobalOptions {
  std::string log_level = "info";
};

using Action = std::function<int()>;

Action register_phold(CLI::App& app, const GlobalOptions& global);
Action register_traffic(CLI::App& app, const GlobalOptions& global);
Action register_inspect(CLI::App& app, const GlobalOptions& global);
Action register_run(CLI::App& app, const GlobalOptions& global);
Action register_sweep(CLI::App& app, const GlobalOptions& global);
Action register_convert(CLI::App& app, const GlobalOptions& global);
Action register_generate(CLI::App& app, const GlobalOptions& global);

}  // namespace orrery::cli
