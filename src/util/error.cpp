#include "util/error.h"

#include <algorithm>

namespace orrery {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidInput: return "invalid input";
    case ErrorCode::kParse: return "parse error";
    case ErrorCode::kConfig: return "configuration error";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kModel: return "model error";
    case ErrorCode::kDeadlock: return "deadlock";
    case ErrorCode::kMismatch: return "collective mismatch";
    case ErrorCode::kIo: return "I/O error";
    case ErrorCode::kInternal: return "internal error";
  }
  return "error";
}

std::string Error::render() const {
  std::string out;
  if (where && !where->file.empty()) {
    out += where->file;
    if (where->line > 0) {
      out += ':' + std::to_string(where->line);
      if (where->column > 0) {
        out += ':' + std::to_string(where->column);
      }
    }
    out += ": ";
  }
  out += "error: ";
  out += message;
  if (where && !where->line_text.empty()) {
    std::string line = where->line_text;
    for (char& c : line) {  // one column per byte: tabs as spaces, control bytes (a NUL) as '?'
      const auto byte = static_cast<unsigned char>(c);
      c = c == '\t' ? ' ' : byte < 0x20 || byte == 0x7f ? '?' : c;
    }
    out += "\n  " + line + "\n  ";
    const std::uint32_t caret = where->column > 0 ? where->column - 1 : 0;
    out += std::string(std::min<std::size_t>(caret, line.size()), ' ') + '^';
  }
  for (const auto& note : notes) {
    out += "\nnote: " + note;
  }
  return out;
}

OrreryError::OrreryError(Error error) : std::runtime_error(error.render()), error_(std::move(error)) {}

OrreryError::OrreryError(ErrorCode code, std::string message)
    : OrreryError(Error{code, std::move(message), std::nullopt, {}}) {}

OrreryError::OrreryError(ErrorCode code, std::string message, SourceLocation where)
    : OrreryError(Error{code, std::move(message), std::move(where), {}}) {}

}  // namespace orrery
