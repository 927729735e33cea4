// docs/compute.md's generated preset reference matches the preset schema (`make docs` rewrites it).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "compute/hardware.h"
#include "config/loader.h"
#include "test_support.h"

namespace orrery::compute {
namespace {

TEST(ComputeReference, DocsPageMatchesThePresetSchema) {
  const std::filesystem::path page = testing::source_dir() / "docs" / "compute.md";
  std::string text = config::read_text_file(page.string());
  const std::string begin = "<!-- BEGIN GENERATED PRESET REFERENCE -->\n";
  const std::string end = "<!-- END GENERATED PRESET REFERENCE -->";
  const auto from = text.find(begin);
  const auto to = text.find(end);
  ASSERT_NE(from, std::string::npos) << "docs/compute.md lacks the generated-reference markers";
  ASSERT_NE(to, std::string::npos);
  const std::string current = text.substr(from + begin.size(), to - from - begin.size());
  const std::string expected = hardware_preset_reference_markdown();
  if (std::getenv("ORRERY_UPDATE_DOCS") != nullptr) {
    text.replace(from + begin.size(), to - from - begin.size(), expected);
    std::ofstream(page) << text;
    return;
  }
  EXPECT_EQ(current, expected) << "docs/compute.md is out of date: run `make docs`";
}

}  // namespace
}  // namespace orrery::compute
