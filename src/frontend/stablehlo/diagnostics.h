// Status and Diagnostics: how the parser and the lowering report failure. A parse function returns
// a [[nodiscard]] Status whose truth means success; the one Error (file:line:col, the offending
// line, a caret) is kept by Diagnostics, which ignores every error after the first, so that errors
// never cascade.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace orrery::frontend::stablehlo {

class [[nodiscard]] Status {
 public:
  static Status success() { return Status(true); }
  static Status failure() { return Status(false); }
  [[nodiscard]] bool ok() const { return ok_; }

 private:
  explicit Status(bool ok) : ok_(ok) {}
  bool ok_;
};

// Propagates a failed Status out of the enclosing function.
#define ORRERY_TRY(expression)             \
  do {                                     \
    if (!(expression).ok()) [[unlikely]] { \
      return Status::failure();            \
    }                                      \
  } while (false)

class Diagnostics {
 public:
  Diagnostics(std::string_view path, std::string_view text) : path_(path), text_(text) {}

  // Records an error at a source offset (the first one only) and returns failure.
  Status error_at(std::size_t offset, std::string message, std::vector<std::string> notes = {},
                  ErrorCode code = ErrorCode::kParse);
  void warn(std::string message) { warnings_.push_back(std::move(message)); }

  [[nodiscard]] bool has_error() const { return error_.has_value(); }
  [[nodiscard]] const Error& error() const { return *error_; }
  [[nodiscard]] std::vector<std::string> take_warnings() { return std::move(warnings_); }
  [[nodiscard]] SourceLocation location(std::size_t offset) const;
  [[nodiscard]] std::string_view text() const { return text_; }

 private:
  std::string_view path_;
  std::string_view text_;
  std::optional<Error> error_;
  std::vector<std::string> warnings_;
};

}  // namespace orrery::frontend::stablehlo
