// The body of the StableHLO parser fuzz target, shared with the regression test that runs every
// crash the fuzzer found (tests/fuzz/regressions) and the seed corpus in the normal test suite.
// Whatever the input, parsing must end in programs or in one error; everything downstream of a
// successful parse (the summary, the dump, device groups, trip counts) must run too.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "frontend/stablehlo/stablehlo.h"
#include "workload/collectives.h"
#include "workload/dump.h"
#include "workload/summary.h"

namespace orrery::fuzz {

// What reads a frontend's programs: the summary, the dump, each collective's device groups.
inline void read_program(const workload::Program& program) {
  (void)workload::summarize(program);
  (void)workload::dump(program);
  for (workload::OpId id = 0; id < program.op_count(); ++id) {
    const workload::Op& op = program.op(id);
    if (workload::op_category(op.kind) == workload::OpCategory::kCollective && program.has_payload(op)) {
      (void)workload::device_groups(program, op);
      (void)workload::device_pairs(program, op);
    }
  }
}

inline void fuzz_one(std::string_view input) {
  auto source = std::make_shared<workload::SourceText>();
  source->path = "fuzz.mlir";
  source->text = std::string(input);
  frontend::stablehlo::Options options;
  // The first byte picks the options, so that --lenient and --strict paths are fuzzed too.
  options.lenient = !input.empty() && (input[0] & 1) != 0;
  options.strict = !input.empty() && (input[0] & 2) != 0 && !options.lenient;
  for (const auto& outcome : frontend::stablehlo::parse_modules(source, options)) {
    if (!outcome.result.ok()) {
      (void)outcome.result.error().render();
      continue;
    }
    const workload::Program& program = *outcome.result.value().program;
    read_program(program);
    for (const workload::OpId id : program.while_ops()) {
      (void)program.trip_count_error(id);
    }
  }
}

}  // namespace orrery::fuzz
