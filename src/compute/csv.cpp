#include "compute/csv.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "config/loader.h"
#include "util/error.h"

namespace orrery::compute {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

}  // namespace

std::vector<std::string> split_csv_line(std::string_view line) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  bool was_quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"' && trim(field).empty()) {
      field.clear();
      quoted = true;
      was_quoted = true;
    } else if (c == ',') {
      fields.push_back(was_quoted ? field : std::string(trim(field)));
      field.clear();
      was_quoted = false;
    } else {
      field += c;
    }
  }
  fields.push_back(was_quoted ? field : std::string(trim(field)));
  return fields;
}

CsvFile CsvFile::parse(std::string_view text, std::string path) {
  CsvFile file;
  file.path = std::move(path);
  std::uint32_t line_number = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = text.find('\n', start);
    const std::string_view line = text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    ++line_number;
    const std::string_view content = trim(line);
    if (!content.empty() && content.front() != '#') {
      file.rows.push_back(CsvRow{line_number, std::string(trim(line)), split_csv_line(line)});
    }
    if (end == std::string_view::npos) {
      break;
    }
    start = end + 1;
  }
  return file;
}

CsvFile CsvFile::read(const std::string& path) { return parse(config::read_text_file(path), path); }

void CsvFile::fail(const CsvRow& row, const std::string& reason) const {
  throw OrreryError(ErrorCode::kInvalidInput, reason, SourceLocation{path, row.line, 0, row.text});
}

std::size_t CsvFile::optional_column(const CsvRow& header, std::string_view name) {
  for (std::size_t i = 0; i < header.fields.size(); ++i) {
    if (header.fields[i] == name) {
      return i;
    }
  }
  return header.fields.size();
}

std::size_t CsvFile::column(const CsvRow& header, std::string_view name) const {
  const std::size_t index = optional_column(header, name);
  if (index == header.fields.size()) {
    fail(header, fmt::format("missing column '{}' (the header is: {})", name, header.text));
  }
  return index;
}

std::uint64_t CsvFile::integer(const CsvRow& row, std::size_t index, std::string_view column,
                               std::uint64_t minimum) const {
  const double value = number(row, index, column);
  if (!(value >= static_cast<double>(minimum)) || value != std::floor(value) || value >= 1.8e19) {
    fail(row, fmt::format("column '{}': expected a whole number >= {}, got '{}'", column, minimum, row.fields[index]));
  }
  return static_cast<std::uint64_t>(value);
}

double CsvFile::number(const CsvRow& row, std::size_t index, std::string_view column) const {
  if (index >= row.fields.size()) {
    fail(row, fmt::format("column '{}' is missing (the row has {} fields)", column, row.fields.size()));
  }
  const std::string& text = row.fields[index];
  double value = 0.0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    fail(row, fmt::format("column '{}': expected a number, got '{}'", column, text));
  }
  return value;
}

}  // namespace orrery::compute
