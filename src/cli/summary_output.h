// The run summary as text (stdout) and as JSON (--summary-json; sweep rows).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "cli/scenario_runner.h"

namespace orrery::cli {

std::string summary_text(const std::string& scenario_name, const config::Scenario& scenario, const RunResult& result);
nlohmann::json summary_json(const config::Scenario& scenario, const RunResult& result);

}  // namespace orrery::cli
