// The body of the Chakra fuzz target, shared with the unit test that replays the seed corpus and
// every input the fuzzer once crashed on (tests/fuzz/regressions/chakra). An input is a job: its
// first byte picks the options, the rest is split at "RANK" into per-rank trace files (at most
// 16); with bit 0 set the last part is the communicator-group JSON instead. Whatever the bytes,
// loading must end in programs or in one error; what reads the programs must run too.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/chakra/workload.h"
#include "fuzz_one.h"

namespace orrery::fuzz {

inline void fuzz_chakra(std::string_view input) {
  namespace fs = std::filesystem;
  static const fs::path dir =
      fs::temp_directory_path() / ("orrery_chakra_fuzz_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const unsigned flags = input.empty() ? 0U : static_cast<unsigned char>(input[0]);
  if (!input.empty()) {
    input.remove_prefix(1);
  }
  std::vector<std::string_view> parts;
  constexpr std::string_view kSeparator = "RANK";
  while (parts.size() < 16) {
    const std::size_t at = input.find(kSeparator);
    parts.push_back(input.substr(0, at));
    if (at == std::string_view::npos) {
      break;
    }
    input.remove_prefix(at + kSeparator.size());
  }
  frontend::chakra::WorkloadOptions options;
  options.prefix = (dir / "t").string();
  if ((flags & 1U) != 0 && parts.size() > 1) {
    options.comm_groups = (dir / "groups.json").string();
    std::ofstream(options.comm_groups, std::ios::binary) << parts.back();
    parts.pop_back();
  }
  for (std::size_t r = 0; r < parts.size(); ++r) {
    std::ofstream(options.prefix + "." + std::to_string(r) + ".et", std::ios::binary) << parts[r];
  }
  if ((flags & 2U) != 0 && parts.size() % 2 == 0) {
    options.dimensions = {2, static_cast<std::uint32_t>(parts.size() / 2)};
  }
  options.ranks = (flags >> 2U) & 7U;  // 0: as many as there are files
  auto loaded = frontend::chakra::load_workload(options);
  if (!loaded) {
    (void)loaded.error().render();
    return;
  }
  for (const auto& entry : loaded.value().programs) {
    read_program(*entry.program);
  }
}

}  // namespace orrery::fuzz
