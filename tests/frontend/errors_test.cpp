// Bad input ends in one error with file:line:col, the offending line and a caret. Each case is a
// file in tests/frontend/errors whose first line states the expected error:
//   // error: LINE:COLUMN: MESSAGE
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/stablehlo/parser.h"
#include "frontend/stablehlo/stablehlo.h"
#include "test_support.h"

namespace orrery::frontend::stablehlo {
namespace {

namespace fs = std::filesystem;

fs::path errors_directory() {
  return fs::path(ORRERY_SOURCE_DIR) / "tests/frontend/errors";
}

std::vector<fs::path> error_cases() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(errors_directory())) {
    if (entry.path().extension() == ".mlir") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

class ErrorCase : public ::testing::TestWithParam<fs::path> {};

TEST_P(ErrorCase, ReportsTheStatedError) {
  const fs::path& path = GetParam();
  std::ifstream in(path);
  std::string header;
  std::getline(in, header);
  const std::string prefix = "// error: ";
  ASSERT_EQ(header.rfind(prefix, 0), 0U) << path << " must start with '" << prefix << "LINE:COL: MESSAGE'";
  const std::string expected = header.substr(prefix.size());

  auto modules = parse_file(path.string(), Options{});
  ASSERT_FALSE(modules.ok()) << path << " parsed without error";
  const Error& error = modules.error();
  ASSERT_TRUE(error.where.has_value());
  const std::string actual =
      std::to_string(error.where->line) + ":" + std::to_string(error.where->column) + ": " + error.message;
  EXPECT_EQ(actual, expected) << error.render();
  // The rendering names the file, shows the offending line and puts a caret under the column.
  const std::string rendered = error.render();
  EXPECT_EQ(rendered.rfind(path.string() + ":" + std::to_string(error.where->line) + ":", 0), 0U) << rendered;
  EXPECT_NE(rendered.find("\n  " + error.where->line_text + "\n"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find(std::string(error.where->column - 1, ' ') + "^"), std::string::npos) << rendered;
}

INSTANTIATE_TEST_SUITE_P(Files, ErrorCase, ::testing::ValuesIn(error_cases()),
                         [](const ::testing::TestParamInfo<fs::path>& param) {
                           return param.param.stem().string();
                         });

TEST(Errors, BytecodeIsRefusedWithAClearMessage) {
  const fs::path path = fs::temp_directory_path() / "orrery_frontend_test.mlir.bc";
  {
    std::ofstream out(path, std::ios::binary);
    out << "ML\xef"
        << "R\x01StableHLO_v1.9.0";
  }
  auto source = read_source(path.string());
  fs::remove(path);
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.error().message.rfind("MLIR bytecode is not supported; export text", 0), 0U);
}

// A control byte (here a NUL, which would end the message where it is printed) is named by its
// value, and the rendered source line shows it as '?' so the caret stays under it.
TEST(Errors, ControlBytesAreNamedNotPrinted) {
  static constexpr char kText[] = "func.func @main() -> () {\n  \0x return\n}\n";
  const Error error = testing::parse_error(std::string(kText, sizeof(kText) - 1));
  EXPECT_EQ(error.message, "unexpected character byte 0x00");
  ASSERT_TRUE(error.where.has_value());
  EXPECT_EQ(error.where->line, 2U);
  EXPECT_EQ(error.where->column, 3U);
  EXPECT_NE(error.render().find("\n    ?x return\n    ^"), std::string::npos) << error.render();
  EXPECT_EQ(describe_character('a'), "'a'");
  EXPECT_EQ(describe_character('\x7f'), "byte 0x7f");
}

TEST(Errors, MissingFileIsAnIoError) {
  auto source = read_source("/nonexistent/model.mlir");
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.error().code, ErrorCode::kIo);
  EXPECT_NE(source.error().message.find("/nonexistent/model.mlir"), std::string::npos);
}

// Parsing module by module, an error in one module leaves the others intact.
TEST(Errors, OneBadModuleDoesNotStopTheOthers) {
  const auto outcomes = parse_modules(testing::source_of(R"(func.func @a() -> () { return }
// -----
func.func @b() -> () { %0 = stablehlo.bogus : tensor<f32> return }
// -----
func.func @c() -> () { return }
)"),
                                      Options{});
  ASSERT_EQ(outcomes.size(), 3U);
  EXPECT_TRUE(outcomes[0].result.ok());
  EXPECT_FALSE(outcomes[1].result.ok());
  EXPECT_EQ(outcomes[1].result.error().where->line, 3U);
  EXPECT_TRUE(outcomes[2].result.ok());
}

// Pathological nesting ends in an error, not in a stack overflow.
TEST(Errors, DeepNestingIsRefused) {
  std::string ops = "func.func @main() -> () {\n";
  for (int i = 0; i < 5000; ++i) {
    ops += "\"x.y\"() ({\n";
  }
  const Error nested_ops = testing::parse_error(ops);
  EXPECT_NE(nested_ops.message.find("nested more than 256 levels"), std::string::npos) << nested_ops.message;

  std::string type = "tensor<f32>";
  for (int i = 0; i < 5000; ++i) {
    type = "tuple<" + type + ">";
  }
  const Error nested_types = testing::parse_error("func.func @main(%x: " + type + ") -> () { return }");
  EXPECT_NE(nested_types.message.find("nested more than 256 levels"), std::string::npos)
      << nested_types.message;

  const Error nested_lists = testing::parse_error(
      "func.func @main(%x: tensor<1x8x3xf32>, %k: tensor<3x3x4xf32>) -> () {\n"
      "  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {pad = " +
      std::string(5000, '[') + "0" + std::string(5000, ']') +
      "} : (tensor<1x8x3xf32>, tensor<3x3x4xf32>) -> tensor<1x6x4xf32>\n  return\n}");
  EXPECT_NE(nested_lists.message.find("nested more than 64 levels"), std::string::npos)
      << nested_lists.message;
}

}  // namespace
}  // namespace orrery::frontend::stablehlo
