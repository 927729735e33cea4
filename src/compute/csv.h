// A small CSV reader for kernel tables: comma-separated fields, optional double quotes ("" inside
// quotes is a quote), surrounding spaces trimmed, '#' comment lines and blank lines skipped.
// Every row keeps its 1-based line number so that errors name file:line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace orrery::compute {

struct CsvRow {
  std::uint32_t line = 0;
  std::string text;  // the line as written, for error messages
  std::vector<std::string> fields;
};

struct CsvFile {
  std::string path;
  std::vector<CsvRow> rows;  // every non-blank, non-comment line, header included

  // Throws OrreryError(kIo) when the file cannot be read.
  static CsvFile read(const std::string& path);
  static CsvFile parse(std::string_view text, std::string path);

  // An OrreryError(kInvalidInput) at `row`, column `column` (0-based field index, or -1).
  [[noreturn]] void fail(const CsvRow& row, const std::string& reason) const;
  // The index of the header column `name`; throws naming the header when it is missing.
  std::size_t column(const CsvRow& header, std::string_view name) const;
  // The index of the header column `name`, or header.fields.size() when there is none.
  static std::size_t optional_column(const CsvRow& header, std::string_view name);
  // The field as a finite number (trailing unit suffixes such as "ms" or "Tflops" are not allowed
  // here; strip them first). Throws with file:line and the column name.
  double number(const CsvRow& row, std::size_t index, std::string_view column) const;
  // The field as a whole number >= minimum.
  std::uint64_t integer(const CsvRow& row, std::size_t index, std::string_view column, std::uint64_t minimum = 0) const;
};

std::vector<std::string> split_csv_line(std::string_view line);

}  // namespace orrery::compute
