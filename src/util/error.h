// The one error type of Orrery (STYLE.md, rule 4): a code, a message, an optional source
// location with the offending line, and notes for context. Inside modules an Error travels in a
// Result; an OrreryError exception carries it up to the CLI boundary, where main prints it and
// exits non-zero.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace orrery {

enum class ErrorCode : std::uint8_t {
  kInvalidInput,  // a malformed or inconsistent input file or argument
  kParse,         // a syntax error in a text format
  kConfig,        // an invalid scenario key or value
  kUnsupported,   // a valid input Orrery does not handle
  kModel,         // a simulation model broke a rule (event into the past, below lookahead)
  kDeadlock,      // the simulated program cannot make progress
  kMismatch,      // collectives that do not match across ranks
  kIo,            // a file could not be read or written
  kInternal,      // a bug in Orrery
};

const char* error_code_name(ErrorCode code);

// A position in a text input. Line and column are 1-based; 0 means unknown.
struct SourceLocation {
  std::string file;
  std::uint32_t line = 0;
  std::uint32_t column = 0;
  std::string line_text;  // the whole offending line, for the caret display (may be empty)
};

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  std::optional<SourceLocation> where;
  std::vector<std::string> notes;

  // "file:line:col: error: message", then the line and a caret, then "note: ..." lines.
  [[nodiscard]] std::string render() const;
};

class OrreryError : public std::runtime_error {
 public:
  explicit OrreryError(Error error);
  OrreryError(ErrorCode code, std::string message);
  OrreryError(ErrorCode code, std::string message, SourceLocation where);

  [[nodiscard]] const Error& error() const { return error_; }
  [[nodiscard]] ErrorCode code() const { return error_.code; }

  // True when every process of a parallel run raised this error together (an agreed failure:
  // the engine's window protocol or run_collectively), so processes may synchronise once more
  // before exiting instead of aborting the job.
  [[nodiscard]] bool coordinated() const { return coordinated_; }
  OrreryError& mark_coordinated() {
    coordinated_ = true;
    return *this;
  }

 private:
  Error error_;
  bool coordinated_ = false;
};

}  // namespace orrery
