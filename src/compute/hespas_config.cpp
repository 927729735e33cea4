// Hespas node configs (configs/nodes/NAME/METHOD/config.json in imec-int/hespas) as presets.
//
// Keys read (Hespas' RooflineEstimator):
//   perf_estimator.method               roofline | cocossim (xla and iree profile real hardware
//                                       and carry no constants: an error here)
//   perf_estimator.hardware.peak_flops  FLOP/s for element types per_datatype_flops does not list
//   perf_estimator.hardware.per_datatype_flops   {element type: FLOP/s}
//   perf_estimator.hardware.memory_bandwidth     B/s
//   cocossim: perf_estimator.hardware.roofline.{peak_flops, memory_bandwidth}, chips (must be 1),
//             frequency (GHz, informational)
// Keys Hespas uses for other purposes (num_npus, caches, power, type checks, split_strategy) are
// accepted and ignored; any other key is an error, as in Orrery's own presets. The result is a
// roofline preset with Hespas' semantics: every class at efficiency 1, no launch overhead, and
// peak_flops as the vector rate too.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "compute/hardware.h"
#include "config/loader.h"
#include "util/error.h"

namespace orrery::compute {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

class HespasReader {
 public:
  explicit HespasReader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& reason) const {
    throw OrreryError(ErrorCode::kConfig, fmt::format("{}: {}", key, reason), SourceLocation{file_, 0, 0, {}});
  }

  const Json& object(const Json& parent, const std::string& path, const std::string& key) const {
    const std::string full = join(path, key);
    const auto it = parent.find(key);
    if (it == parent.end()) {
      fail(full, "missing (required)");
    }
    if (!it->is_object()) {
      fail(full, fmt::format("expected an object, got {}", it->type_name()));
    }
    return *it;
  }

  double positive_number(const Json& value, const std::string& path) const {
    if (!value.is_number()) {
      fail(path, fmt::format("expected a number, got {} {}", value.type_name(), value.dump()));
    }
    const double number = value.get<double>();
    if (!(number > 0.0)) {
      fail(path, fmt::format("{} is out of range (must be > 0)", value.dump()));
    }
    return number;
  }

  double required_number(const Json& parent, const std::string& path, const std::string& key) const {
    const auto it = parent.find(key);
    if (it == parent.end()) {
      fail(join(path, key), "missing (required)");
    }
    return positive_number(*it, join(path, key));
  }

  void only_keys(const Json& object, const std::string& path, std::initializer_list<std::string_view> known) const {
    for (const auto& [key, value] : object.items()) {
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        fail(join(path, key), fmt::format("unknown key '{}'; known keys here: {}", key, fmt::join(known, ", ")));
      }
    }
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

 private:
  std::string file_;
};

// Line, column and text of a byte offset (nlohmann reports the offset of the offending byte).
SourceLocation location_of(const std::string& file, const std::string& text, std::size_t byte) {
  const std::size_t offset = byte == 0 ? 0 : std::min(byte - 1, text.size());
  std::uint32_t line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  const std::size_t line_end = text.find('\n', line_start);
  return SourceLocation{file, line, static_cast<std::uint32_t>(offset - line_start + 1),
                        text.substr(line_start, line_end == std::string::npos ? std::string::npos : line_end - line_start)};
}

std::string preset_name(const fs::path& path) {
  // configs/nodes/NAME/METHOD/config.json -> NAME
  if (path.filename() == "config.json" && path.parent_path().has_parent_path()) {
    const std::string name = path.parent_path().parent_path().filename().string();
    if (!name.empty()) {
      return name;
    }
  }
  return path.stem().string();
}

}  // namespace

HardwarePresetConfig read_hespas_node_config(const fs::path& path) {
  const std::string file = path.string();
  const std::string text = config::read_text_file(file);
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::parse_error& error) {
    std::string reason = error.what();
    if (const auto colon = reason.rfind(": "); colon != std::string::npos) {
      reason = reason.substr(colon + 2);
    }
    throw OrreryError(ErrorCode::kParse, "invalid JSON: " + reason, location_of(file, text, error.byte));
  }
  HespasReader reader(file);
  if (!root.is_object()) {
    reader.fail("(top level)", "expected an object");
  }
  reader.only_keys(root, "", {"perf_estimator", "split_strategy"});
  const Json& estimator = reader.object(root, "", "perf_estimator");
  reader.only_keys(estimator, "perf_estimator", {"method", "hardware", "in_memory_only_cache", "cache_dir"});
  const auto method_it = estimator.find("method");
  if (method_it == estimator.end() || !method_it->is_string()) {
    reader.fail("perf_estimator.method", "missing or not a string (roofline or cocossim)");
  }
  const std::string method = method_it->get<std::string>();
  const Json& hardware = reader.object(estimator, "perf_estimator", "hardware");
  std::string path_prefix = "perf_estimator.hardware";

  HardwarePresetConfig preset;
  preset.name = preset_name(path);
  const Json* constants = &hardware;
  if (method == "roofline") {
    reader.only_keys(hardware, path_prefix,
                     {"peak_flops", "memory_bandwidth", "per_datatype_flops", "num_npus", "in_memory_only_cache",
                      "tdp_W", "hbm_power_ratio", "warn_on_unknown_type", "error_on_unknown_type"});
  } else if (method == "cocossim") {
    reader.only_keys(hardware, path_prefix, {"roofline", "chips", "frequency", "num_npus"});
    if (const auto chips = hardware.find("chips"); chips != hardware.end() && !(chips->is_number() && *chips == 1)) {
      reader.fail(path_prefix + ".chips", fmt::format("only 1 chip per node is supported, got {}", chips->dump()));
    }
    constants = &reader.object(hardware, path_prefix, "roofline");
    path_prefix += ".roofline";
    reader.only_keys(*constants, path_prefix, {"peak_flops", "memory_bandwidth"});
  } else {
    reader.fail("perf_estimator.method",
                fmt::format("'{}' carries no hardware constants (it profiles real hardware); Orrery reads "
                            "the roofline and cocossim methods",
                            method));
  }

  const double peak_flops = reader.required_number(*constants, path_prefix, "peak_flops");
  const double bandwidth = reader.required_number(*constants, path_prefix, "memory_bandwidth");
  RooflineConfig& roofline = preset.roofline;
  roofline.peak_tflops["default"] = peak_flops / 1e12;
  roofline.vector_tflops = peak_flops / 1e12;
  roofline.memory_bandwidth_gbps = bandwidth / 1e9;
  if (const auto it = constants->find("per_datatype_flops"); it != constants->end()) {
    const std::string key = path_prefix + ".per_datatype_flops";
    if (!it->is_object()) {
      reader.fail(key, fmt::format("expected an object of element type to FLOP/s, got {}", it->type_name()));
    }
    for (const auto& [type_name, value] : it->items()) {
      const auto type = parse_element_type(type_name);
      if (!type) {
        reader.fail(key + "." + type_name, fmt::format("unknown element type '{}'", type_name));
      }
      roofline.peak_tflops[std::string(name(*type))] = reader.positive_number(value, key + "." + type_name) / 1e12;
    }
  }
  roofline.provenance = fmt::format("Hespas node config {} (method {}): efficiency 1, no launch overhead", file, method);
  preset.description = fmt::format("Hespas {} node config {}", method, preset.name);
  return preset;
}

}  // namespace orrery::compute
