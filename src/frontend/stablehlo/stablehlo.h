// The StableHLO frontend: MLIR text (pretty and generic forms, as JAX, PyTorch/XLA, XLA and the
// StableHLO test suites write it) -> workload::Program, one per module.
//
// A file is read into one buffer that every program of the file shares. `// -----` lines split a
// file into chunks (the test-suite convention); a chunk holds one or more `module` ops, or loose
// top-level ops that form one implicit module. Errors carry file:line:col, the offending line and
// a caret; parsing a module stops at its first error.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "util/result.h"
#include "workload/program.h"

namespace orrery::frontend::stablehlo {

struct Options {
  // Ops of dialects Orrery does not model (check.*, flow.*, ttir.*...) are errors instead of
  // opaque ops that cost nothing; while loops whose trip count cannot be derived are errors.
  bool strict = false;
  // Unknown ops of modelled dialects (stablehlo, chlo, mhlo, sdy, func) become kUnknown ops
  // (costed as memory-bound) with a warning, instead of an error.
  bool lenient = false;
  // Trip counts of while loops by their printable name (as `orrery inspect` lists them).
  std::map<std::string, std::uint64_t> trip_counts;
};

struct ParsedModule {
  std::shared_ptr<const workload::Program> program;
  std::vector<std::string> warnings;  // e.g. the unknown ops let through by `lenient`
};

// The outcome of one module (or of the chunk a failing module was in).
struct ModuleOutcome {
  std::uint32_t begin = 0;  // source offsets of the module, or of its chunk when parsing failed
  std::uint32_t end = 0;
  Result<ParsedModule> result;
};

// Reads a file into a SourceText. MLIR bytecode is refused with "MLIR bytecode is not supported;
// export text"; files of 4 GiB or more are refused (offsets are 32-bit).
Result<std::shared_ptr<const workload::SourceText>> read_source(const std::string& path);

// Parses every module of the source independently: an error in one module does not stop the
// others (a module that shares a chunk with a failing one is reported failed with it).
std::vector<ModuleOutcome> parse_modules(const std::shared_ptr<const workload::SourceText>& source,
                                         const Options& options);

// All modules, or the first error.
Result<std::vector<ParsedModule>> parse_source(const std::shared_ptr<const workload::SourceText>& source,
                                               const Options& options);
Result<std::vector<ParsedModule>> parse_file(const std::string& path, const Options& options);

// The lines that start with `// -----` split a buffer into chunks: [begin, end) offsets.
std::vector<std::pair<std::uint32_t, std::uint32_t>> split_chunks(std::string_view text);

}  // namespace orrery::frontend::stablehlo
