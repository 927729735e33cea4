// Replays inputs under tests/fuzz/regressions/scenario (each once crashed the loader or is an
// interesting edge): every one must end in success or an OrreryError, never a crash.
#include <gtest/gtest.h>

#include <filesystem>

#include "config/loader.h"
#include "config/scenario.h"

namespace orrery::config {
namespace {

TEST(FuzzRegressions, ScenarioInputsNeverCrash) {
  const auto dir = std::filesystem::path(ORRERY_SOURCE_DIR) / "tests/fuzz/regressions/scenario";
  std::size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string text = read_text_file(entry.path().string());
    SCOPED_TRACE(entry.path().string());
    try {
      (void)load_scenario_text(text, entry.path().filename().string(), {});
    } catch (const OrreryError&) {
    }
    ++count;
  }
  EXPECT_GT(count, 0U);
}

}  // namespace
}  // namespace orrery::config
