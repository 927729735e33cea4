#include "compute/scalesim_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "compute/csv.h"
#include "config/loader.h"
#include "util/error.h"

namespace orrery::compute {
namespace {

std::string trimmed(std::string text) {
  const auto not_space = [](unsigned char c) { return std::isspace(c) == 0; };
  text.erase(text.begin(), std::find_if(text.begin(), text.end(), not_space));
  text.erase(std::find_if(text.rbegin(), text.rend(), not_space).base(), text.end());
  return text;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// The data rows of a CSV whose first row is a header; a trailing comma leaves an empty last field.
std::vector<std::string> fields_of(const CsvRow& row) {
  std::vector<std::string> fields = row.fields;
  while (!fields.empty() && fields.back().empty()) {
    fields.pop_back();
  }
  return fields;
}

}  // namespace

SystolicArray ScaleSimConfig::array() const {
  SystolicArray array;
  array.rows = array_height;
  array.cols = array_width;
  array.arrays = 1;
  array.dataflow = dataflow;
  array.ifmap_sram_words = static_cast<std::uint64_t>(ifmap_sram_kb * 1024.0);
  array.filter_sram_words = static_cast<std::uint64_t>(filter_sram_kb * 1024.0);
  array.ofmap_sram_words = static_cast<std::uint64_t>(ofmap_sram_kb * 1024.0);
  array.dram_words_per_cycle = user_bandwidth ? bandwidth_words_per_cycle : 0.0;
  return array;
}

ScaleSimConfig read_scalesim_config(const std::string& path) {
  const std::string text = config::read_text_file(path);
  ScaleSimConfig result;
  std::uint32_t line_number = 0;
  std::size_t start = 0;
  const auto error_at = [&](const std::string& line, const std::string& reason) {
    return OrreryError(ErrorCode::kInvalidInput, reason, SourceLocation{path, line_number, 0, line});
  };
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    const std::string content = trimmed(line);
    if (content.empty() || content.front() == '[' || content.front() == '#') {
      continue;
    }
    const std::size_t separator = content.find_first_of(":=");
    if (separator == std::string::npos) {
      throw error_at(line, "expected 'Key: value'");
    }
    const std::string key = lower(trimmed(content.substr(0, separator)));
    const std::string value = trimmed(content.substr(separator + 1));
    const auto number = [&]() {
      try {
        std::size_t used = 0;
        const double parsed = std::stod(value, &used);
        if (used != value.size()) {
          throw std::invalid_argument(value);
        }
        return parsed;
      } catch (const std::exception&) {
        throw error_at(line, fmt::format("{}: expected a number, got '{}'", key, value));
      }
    };
    if (key == "run_name") {
      result.run_name = value;
    } else if (key == "arrayheight") {
      result.array_height = static_cast<std::uint32_t>(number());
    } else if (key == "arraywidth") {
      result.array_width = static_cast<std::uint32_t>(number());
    } else if (key == "ifmapsramszkb") {
      result.ifmap_sram_kb = number();
    } else if (key == "filtersramszkb") {
      result.filter_sram_kb = number();
    } else if (key == "ofmapsramszkb") {
      result.ofmap_sram_kb = number();
    } else if (key == "bandwidth") {
      result.bandwidth_words_per_cycle = number();
    } else if (key == "dataflow") {
      const auto parsed = config::enum_from_string<Dataflow>(lower(value));
      if (!parsed) {
        throw error_at(line, fmt::format("Dataflow: expected os, ws or is, got '{}'", value));
      }
      result.dataflow = *parsed;
    } else if (key == "interfacebandwidth") {
      result.user_bandwidth = lower(value) == "user";
    }
    // Other keys (offsets, banks, layout, sparsity, Ramulator) do not affect compute cycles.
  }
  if (result.array_height == 0 || result.array_width == 0) {
    throw OrreryError(ErrorCode::kInvalidInput, fmt::format("{}: ArrayHeight and ArrayWidth are required", path));
  }
  return result;
}

std::vector<ScaleSimLayer> read_scalesim_topology(const std::string& path) {
  const CsvFile file = CsvFile::read(path);
  std::vector<ScaleSimLayer> layers;
  if (file.rows.empty()) {
    return layers;
  }
  const std::vector<std::string> header = fields_of(file.rows.front());
  const bool gemm = header.size() == 4 && header[1] == "M" && header[2] == "N" && header[3] == "K";
  if (!gemm && header.size() < 8) {
    file.fail(file.rows.front(), "expected a SCALE-Sim topology header: Layer, M, N, K or Layer name, IFMAP Height, "
                                 "IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides");
  }
  for (std::size_t i = 1; i < file.rows.size(); ++i) {
    const CsvRow& row = file.rows[i];
    ScaleSimLayer layer;
    layer.name = row.fields.empty() ? "" : row.fields[0];
    if (gemm) {
      layer.gemm = gemm_from_scalesim_layer(file.integer(row, 1, "M", 1), file.integer(row, 2, "N", 1),
                                            file.integer(row, 3, "K", 1));
    } else {
      const ConvShape conv = convolution_from_scalesim_layer(
          file.integer(row, 1, "IFMAP Height", 1), file.integer(row, 2, "IFMAP Width", 1),
          file.integer(row, 3, "Filter Height", 1), file.integer(row, 4, "Filter Width", 1),
          file.integer(row, 5, "Channels", 1), file.integer(row, 6, "Num Filter", 1),
          file.integer(row, 7, "Strides", 1));
      layer.gemm = im2col_gemm(conv);
    }
    layers.push_back(layer);
  }
  return layers;
}

std::vector<ScaleSimReportRow> read_scalesim_compute_report(const std::string& path) {
  const CsvFile file = CsvFile::read(path);
  std::vector<ScaleSimReportRow> rows;
  if (file.rows.empty()) {
    return rows;
  }
  const CsvRow& header = file.rows.front();
  const std::size_t layer = file.column(header, "LayerID");
  const std::size_t total = file.column(header, "Total Cycles");
  const std::size_t stall = file.column(header, "Stall Cycles");
  for (std::size_t i = 1; i < file.rows.size(); ++i) {
    const CsvRow& row = file.rows[i];
    ScaleSimReportRow report;
    report.layer = file.integer(row, layer, "LayerID");
    report.total_cycles = file.integer(row, total, "Total Cycles");
    report.stall_cycles = file.integer(row, stall, "Stall Cycles");
    rows.push_back(report);
  }
  return rows;
}

std::vector<ScaleSimGoldenCase> scalesim_golden_cases(const std::filesystem::path& golden_dir) {
  namespace fs = std::filesystem;
  std::vector<fs::path> reports;
  for (const auto& entry : fs::recursive_directory_iterator(golden_dir)) {
    if (entry.is_regular_file() && entry.path().filename().string().starts_with("COMPUTE_REPORT")) {
      reports.push_back(entry.path());
    }
  }
  std::sort(reports.begin(), reports.end());
  std::vector<ScaleSimGoldenCase> cases;
  for (const fs::path& report : reports) {
    const std::string name = report.stem().string();
    const fs::path version = report.parent_path();
    ScaleSimGoldenCase golden;
    golden.report = report;
    golden.config = version / "scale.cfg";
    if (name == "COMPUTE_REPORT_alexnet_conv1_ws_32x32" || name == "COMPUTE_REPORT_calc") {
      golden.topology = golden_dir / "v2" / "alexnet_part.csv";
      golden.dataflow = Dataflow::kWeightStationary;
    } else if (name.starts_with("COMPUTE_REPORT_user_")) {
      const auto dataflow = config::enum_from_string<Dataflow>(name.substr(std::string("COMPUTE_REPORT_user_").size()));
      if (!dataflow) {
        throw OrreryError(ErrorCode::kUnsupported, fmt::format("{}: unknown dataflow in the report name", report.string()));
      }
      golden.topology = version / "test_mnk_input.csv";
      golden.dataflow = *dataflow;
      golden.user_bandwidth = true;
    } else {
      throw OrreryError(ErrorCode::kUnsupported,
                        fmt::format("{}: no known SCALE-Sim run for this report (scalesim_files.h)", report.string()));
    }
    cases.push_back(golden);
  }
  return cases;
}

}  // namespace orrery::compute
