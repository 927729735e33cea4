// Helpers shared by the compute tests: paths to the source tree and the shared data, the
// message of an expected OrreryError, and StableHLO text parsed into a program.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include <unistd.h>

#include "frontend/stablehlo/stablehlo.h"
#include "util/error.h"

namespace orrery::compute::testing {

inline std::filesystem::path source_dir() { return ORRERY_SOURCE_DIR; }
inline std::filesystem::path shared_data() { return ORRERY_SHARED_DATA; }
inline std::filesystem::path test_data() { return source_dir() / "tests" / "data" / "compute"; }

// The shared compute data, or an empty path when it is absent (the caller skips).
inline std::filesystem::path shared_compute_data() {
  const std::filesystem::path path = shared_data() / "compute";
  return std::filesystem::is_directory(path) ? path : std::filesystem::path();
}

#define ORRERY_SKIP_WITHOUT_SHARED_DATA(path)                                                                 \
  if ((path).empty()) {                                                                                      \
    GTEST_SKIP() << "shared data not found at " << ::orrery::compute::testing::shared_data().string()        \
                 << " (set ORRERY_SHARED_DATA when configuring): this test reads it in place";             \
  }

// The rendered message of the OrreryError `action` throws ("(no error)" when it does not throw).
inline std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const OrreryError& error) {
    return error.what();
  }
  return "(no error)";
}

// A scratch file under the test's temporary directory.
inline std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  // One directory per process: ctest runs test cases in parallel processes.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("orrery_compute_tests_" + std::to_string(::getpid()));
  std::filesystem::create_directories((dir / name).parent_path());
  std::ofstream(dir / name) << text;
  return dir / name;
}

// The first module of StableHLO text; fails the test (and returns null) when it does not parse.
inline std::shared_ptr<const workload::Program> parse_program(const std::string& text) {
  auto source = std::make_shared<workload::SourceText>();
  source->path = "test.mlir";
  source->text = text;
  auto modules = frontend::stablehlo::parse_source(source, {});
  EXPECT_TRUE(modules.ok()) << (modules.ok() ? "" : modules.error().render());
  return modules.ok() && !modules.value().empty() ? modules.value()[0].program : nullptr;
}

}  // namespace orrery::compute::testing
