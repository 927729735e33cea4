// The fuzz targets' bodies over their seed corpora and over every input the fuzzer ever crashed on
// (tests/fuzz/regressions), in the normal test suite: each must parse or fail cleanly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../fuzz/chakra_fuzz_one.h"
#include "../fuzz/fuzz_one.h"

namespace orrery::fuzz {
namespace {

namespace fs = std::filesystem;

template <class Body>
std::size_t run_directory(const fs::path& directory, Body body) {
  std::size_t inputs = 0;
  for (const auto& entry : fs::directory_iterator(directory)) {
    if (!entry.is_regular_file() || entry.path().filename().string().front() == '.') {
      continue;
    }
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    SCOPED_TRACE(entry.path().string());
    body(bytes.str());
    ++inputs;
  }
  return inputs;
}

TEST(FuzzInputs, SeedCorpusAndRegressionsRunCleanly) {
  const fs::path root = fs::path(ORRERY_SOURCE_DIR) / "tests/fuzz";
  EXPECT_GT(run_directory(root / "corpus/stablehlo", fuzz_one), 10U);
  EXPECT_GT(run_directory(root / "regressions/stablehlo", fuzz_one), 0U);
}

TEST(FuzzInputs, ChakraSeedsAndRegressionsRunCleanly) {
  const fs::path root = fs::path(ORRERY_SOURCE_DIR) / "tests/fuzz";
  EXPECT_GE(run_directory(root / "corpus/chakra", fuzz_chakra), 8U);
  (void)run_directory(root / "regressions/chakra", fuzz_chakra);  // none yet: the fuzzer has found no crash
}

}  // namespace
}  // namespace orrery::fuzz
