// Parsing MLIR text held in a string, for the frontend's tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "frontend/stablehlo/stablehlo.h"

namespace orrery::frontend::stablehlo::testing {

inline std::shared_ptr<const workload::SourceText> source_of(std::string text,
                                                             std::string path = "test.mlir") {
  auto source = std::make_shared<workload::SourceText>();
  source->path = std::move(path);
  source->text = std::move(text);
  return source;
}

// Every module of `text`; fails the test on an error.
inline std::vector<ParsedModule> parse(const std::string& text, const Options& options = {}) {
  auto modules = parse_source(source_of(text), options);
  EXPECT_TRUE(modules.ok()) << (modules.ok() ? "" : modules.error().render());
  return modules.ok() ? std::move(modules).value() : std::vector<ParsedModule>{};
}

// The one module of `text`.
inline std::shared_ptr<const workload::Program> parse_one(const std::string& text,
                                                          const Options& options = {}) {
  auto modules = parse(text, options);
  EXPECT_EQ(modules.size(), 1U);
  return modules.empty() ? nullptr : modules[0].program;
}

// The error `text` fails with; fails the test when it parses.
inline Error parse_error(const std::string& text, const Options& options = {}) {
  auto modules = parse_source(source_of(text), options);
  EXPECT_FALSE(modules.ok()) << "expected an error";
  return modules.ok() ? Error{} : modules.error();
}

// The ops of the entry function's body, in program order.
inline std::vector<workload::OpId> entry_ops(const workload::Program& p) {
  const workload::BlockId block = p.entry_block(p.function(p.entry_function()));
  const auto ops = p.ops(p.block(block));
  return {ops.begin(), ops.end()};
}

// The first op of kind `kind` anywhere in the program.
inline const workload::Op* first_op(const workload::Program& p, workload::OpKind kind) {
  for (workload::OpId id = 0; id < p.op_count(); ++id) {
    if (p.op(id).kind == kind) {
      return &p.op(id);
    }
  }
  return nullptr;
}

inline std::vector<std::int64_t> ints(const workload::Program& p, workload::IntRange range) {
  const auto values = p.ints(range);
  return {values.begin(), values.end()};
}

}  // namespace orrery::frontend::stablehlo::testing
