// Every file under ../shared/data/stablehlo parses, module by module. The only files allowed to
// fail: stablehlo_spec/ops_stablehlo_verifier.mlir (deliberately invalid ops; each failure must be
// in a module that expects an error, and is listed with the expected error's line) and
// mlirbc/*.mlir.bc (bytecode, refused with a clear message).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "frontend/stablehlo/stablehlo.h"

namespace orrery::frontend::stablehlo {
namespace {

namespace fs = std::filesystem;

fs::path data_directory() {
  return fs::path(ORRERY_SHARED_DATA) / "stablehlo";
}
constexpr std::string_view kVerifier = "stablehlo_spec/ops_stablehlo_verifier.mlir";

std::vector<fs::path> data_files() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(data_directory())) {
    if (entry.is_regular_file()) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::uint32_t line_of(std::string_view text, std::size_t offset) {
  return static_cast<std::uint32_t>(
             std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n')) +
         1;
}

TEST(StableHloData, EveryFileParsesModuleByModule) {
  if (!fs::exists(data_directory())) {
    GTEST_SKIP() << "shared data directory absent: " << data_directory();
  }
  std::size_t files = 0;
  std::size_t modules = 0;
  for (const fs::path& path : data_files()) {
    const std::string relative = fs::relative(path, data_directory()).string();
    if (relative == kVerifier) {
      continue;  // VerifierFileFailsOnlyWhereErrorsAreExpected
    }
    auto source = read_source(path.string());
    if (path.extension() == ".bc") {
      ASSERT_FALSE(source.ok()) << relative;
      EXPECT_NE(source.error().render().find("MLIR bytecode is not supported; export text"),
                std::string::npos)
          << source.error().render();
      continue;
    }
    if (path.extension() != ".mlir") {
      continue;
    }
    ASSERT_TRUE(source.ok()) << source.error().render();
    ++files;
    for (const ModuleOutcome& outcome : parse_modules(source.value(), Options{})) {
      ++modules;
      EXPECT_TRUE(outcome.result.ok()) << relative << ": " << outcome.result.error().render();
    }
  }
  EXPECT_GT(files, 70U);
  std::printf("parsed %zu modules of %zu files\n", modules, files);
}

// An expected error of the verifier file: `// expected-error@+N {{message}}` (or @-N, or none:
// this line).
struct ExpectedError {
  std::uint32_t line;
  std::string message;
};

std::vector<ExpectedError> expected_errors(const std::string& text) {
  std::vector<ExpectedError> errors;
  const std::regex pattern(R"(expected-error(-re)?\s*(@([+-]\d+))?\s*\{\{(.*)\}\})");
  std::uint32_t line = 1;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) {
      end = text.size();
    }
    const std::string row = text.substr(begin, end - begin);
    std::smatch match;
    if (row.find("expected-error") != std::string::npos && std::regex_search(row, match, pattern)) {
      const int shift = match[3].matched ? std::stoi(match[3].str()) : 0;
      errors.push_back(
          ExpectedError{static_cast<std::uint32_t>(static_cast<int>(line) + shift), match[4].str()});
    }
    ++line;
    begin = end + 1;
  }
  return errors;
}

TEST(StableHloData, VerifierFileFailsOnlyWhereErrorsAreExpected) {
  const fs::path path = data_directory() / kVerifier;
  if (!fs::exists(path)) {
    GTEST_SKIP() << "shared data file absent: " << path;
  }
  auto source = read_source(path.string());
  ASSERT_TRUE(source.ok());
  const std::string& text = source.value()->text;
  const std::vector<ExpectedError> expected = expected_errors(text);
  std::size_t rejected = 0;
  std::size_t rejected_on_expected_line = 0;
  std::size_t accepted_with_expected_error = 0;
  std::size_t clean = 0;
  for (const ModuleOutcome& outcome : parse_modules(source.value(), Options{})) {
    const std::uint32_t first = line_of(text, outcome.begin);
    const std::uint32_t last = line_of(text, outcome.end);
    std::vector<const ExpectedError*> here;
    for (const ExpectedError& e : expected) {
      if (e.line >= first && e.line <= last) {
        here.push_back(&e);
      }
    }
    if (outcome.result.ok()) {
      (here.empty() ? clean : accepted_with_expected_error) += 1;
      continue;
    }
    ++rejected;
    const Error& error = outcome.result.error();
    ASSERT_FALSE(here.empty()) << "a module without expected errors failed: " << error.render();
    const std::uint32_t line = error.where ? error.where->line : 0;
    const bool same_line =
        std::any_of(here.begin(), here.end(), [&](const ExpectedError* e) { return e->line == line; });
    rejected_on_expected_line += same_line ? 1 : 0;
    std::printf("  line %u: %s | expected at line %u: %s\n", line, error.message.c_str(), here.front()->line,
                here.front()->message.c_str());
  }
  std::printf(
      "verifier file: %zu expected errors; %zu modules rejected (%zu on an expected error's line), %zu "
      "accepted although the StableHLO verifier rejects them (checks the frontend does not make), "
      "%zu valid modules parsed\n",
      expected.size(), rejected, rejected_on_expected_line, accepted_with_expected_error, clean);
  EXPECT_GT(clean, 100U);
  EXPECT_EQ(rejected_on_expected_line, rejected) << "every rejection must be on a line that expects an error";
}

}  // namespace
}  // namespace orrery::frontend::stablehlo
