// orrery: the command-line entry point. Errors end here: main prints them and exits non-zero.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <map>

#include "cli/commands.h"
#include "cli/mpi_command.h"
#include "pdes/communicator.h"
#include "util/error.h"
#include "util/version.h"

int main(int argc, char** argv) {
  using namespace orrery;
  CLI::App app{"Orrery simulates distributed ML training on accelerator clusters.", "orrery"};
  app.set_version_flag("--version", std::string(version()));
  app.require_subcommand(1, 1);
  cli::GlobalOptions global;
  app.add_option("--log-level", global.log_level, "trace, debug, info, warn, error or off")
      ->capture_default_str();

  std::map<const CLI::App*, cli::Action> actions;
  auto add = [&](cli::Action action) { actions[app.get_subcommands({}).back()] = std::move(action); };
  add(cli::register_run(app, global));
  add(cli::register_sweep(app, global));
  add(cli::register_convert(app, global));
  add(cli::register_generate(app, global));
  add(cli::register_phold(app, global));
  add(cli::register_traffic(app, global));
  add(cli::register_inspect(app, global));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // CLI11 prints the message; --help and --version end with 0, a bad command line with 2 (bad
    // input, docs/user-guide.md) instead of CLI11's own per-error codes.
    return app.exit(error) == 0 ? 0 : 2;
  }
  try {
    for (const auto& [command, action] : actions) {
      if (command->parsed()) {
        return action();
      }
    }
    return 2;
  } catch (const OrreryError& error) {
    if (!pdes::is_secondary_failure(error)) {
      std::fprintf(stderr, "orrery: %s\n", error.what());
    }
    return cli::exit_status(error);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "orrery: internal error: %s\n", error.what());
    return 1;
  }
}
