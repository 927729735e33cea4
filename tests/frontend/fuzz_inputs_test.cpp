// The fuzz target's body over its seed corpus and over every input the fuzzer ever crashed on
// (tests/fuzz/regressions), in the normal test suite: each must parse or fail cleanly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../fuzz/fuzz_one.h"

namespace orrery::fuzz {
namespace {

namespace fs = std::filesystem;

std::size_t run_directory(const fs::path& directory) {
  std::size_t inputs = 0;
  for (const auto& entry : fs::directory_iterator(directory)) {
    if (!entry.is_regular_file() || entry.path().filename().string().front() == '.') {
      continue;
    }
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    SCOPED_TRACE(entry.path().string());
    fuzz_one(bytes.str());
    ++inputs;
  }
  return inputs;
}

TEST(FuzzInputs, SeedCorpusAndRegressionsRunCleanly) {
  const fs::path root = fs::path(ORRERY_SOURCE_DIR) / "tests/fuzz";
  EXPECT_GT(run_directory(root / "corpus/stablehlo"), 10U);
  EXPECT_GT(run_directory(root / "regressions/stablehlo"), 0U);
}

}  // namespace
}  // namespace orrery::fuzz
