#include "util/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <string>

#include "util/error.h"

namespace orrery {

void configure_logging(std::string_view level, int process_rank) {
  const auto parsed = spdlog::level::from_str(std::string(level));
  if (parsed == spdlog::level::off && level != "off") {
    throw OrreryError(ErrorCode::kConfig, "unknown log level '" + std::string(level) +
                                              "' (known: trace, debug, info, warn, error, off)");
  }
  spdlog::drop("orrery");
  auto logger = spdlog::stderr_color_mt("orrery");
  if (process_rank == 0) {
    logger->set_pattern("[orrery %l] %v");
    logger->set_level(parsed);
  } else {
    logger->set_pattern("[orrery %l, process " + std::to_string(process_rank) + "] %v");
    logger->set_level(std::max(parsed, spdlog::level::warn));
  }
  spdlog::set_default_logger(logger);
}

}  // namespace orrery
