// libFuzzer target over the scenario loader: the first line of the input is a --set assignment,
// the rest is scenario YAML. Any outcome other than success or an OrreryError is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/scenario.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto newline = input.find('\n');
  std::vector<std::string> overrides;
  std::string text = input;
  if (newline != std::string::npos && input.compare(0, 6, "--set ") == 0) {
    overrides.push_back(input.substr(6, newline - 6));
    text = input.substr(newline + 1);
  }
  try {
    (void)orrery::config::load_scenario_text(text, "fuzz.yaml", overrides);
  } catch (const orrery::OrreryError&) {
    // expected for bad input
  }
  return 0;
}
