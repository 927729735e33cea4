// Reads a YAML tree into config structs through their fields(), collecting every problem with its
// file, line, column, key path and reason. Unknown keys, wrong types, out-of-range numbers,
// duplicate keys and unknown enum names are all errors; "did you mean" suggestions are offered.
#pragma once

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>
#include <string>
#include <vector>

#include "config/schema.h"
#include "util/error.h"

namespace orrery::config {

// Where values came from: the scenario file (its name, text and directory) and the --set
// overrides (key path -> the assignment as messages name it: "--set key=value").
struct YamlSource {
  std::string file;
  std::string text;
  std::filesystem::path base_directory;
  std::map<std::string, std::string> overrides;
};

class YamlReader {
 public:
  explicit YamlReader(const YamlSource& source);

  template <class T>
  void read_root(const YAML::Node& node, T& out) {
    read_struct(node, "", out);
  }

  [[nodiscard]] const std::vector<Error>& errors() const { return errors_; }

  // Visitor entry point: one field of the struct being read.
  template <class T>
  void operator()(std::string_view key, T& member, std::string_view /*doc*/, Bounds bounds = {}) {
    Frame& frame = frames_.back();
    frame.known.emplace_back(key);
    if (!frame.node || !frame.node.IsMap()) {
      return;
    }
    for (auto it = frame.node.begin(); it != frame.node.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == key) {
        read_value(it->second, join(frame.path, key), member, bounds);
        return;
      }
    }
  }

  // Reports a problem at `node` (or at the override that produced it).
  void error_at(const YAML::Node& node, const std::string& path, const std::string& reason);
  // Where `node` (the value of `path`) was written: the scenario's file, line and column, or the
  // --set assignment that replaced it.
  [[nodiscard]] SourceLocation location_of(const YAML::Node& node, const std::string& path) const;

 private:
  struct Frame {
    YAML::Node node;
    std::string path;
    std::vector<std::string> known;
  };

  static std::string join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  }

  template <class T>
  void read_struct(const YAML::Node& node, const std::string& path, T& out) {
    if (node && !node.IsNull() && !node.IsMap()) {
      error_at(node, path.empty() ? "(top level)" : path, "expected a mapping of keys to values");
      return;
    }
    frames_.push_back(Frame{node, path, {}});
    out.fields(*this);
    check_unknown_keys(frames_.back());
    frames_.pop_back();
    if constexpr (HasValidate<T>) {
      Problems problems;
      out.validate(problems);
      for (const auto& item : problems.items()) {
        const YAML::Node at = item.key.empty() ? node : find_child(node, item.key);
        error_at(at ? at : node, join(path, item.key), item.reason);
      }
    }
  }

  void check_unknown_keys(const Frame& frame);
  static YAML::Node find_child(const YAML::Node& node, const std::string& key);
  bool expect_scalar(const YAML::Node& node, const std::string& path, std::string_view what);

  template <class T>
  void read_value(const YAML::Node& node, const std::string& path, T& out, Bounds bounds) {
    if constexpr (std::is_same_v<T, bool>) {
      if (!expect_scalar(node, path, "true or false")) {
        return;
      }
      const std::string& text = node.Scalar();
      if (text == "true" || text == "True" || text == "yes") {
        out = true;
      } else if (text == "false" || text == "False" || text == "no") {
        out = false;
      } else {
        error_at(node, path, fmt::format("expected true or false, got '{}'", text));
      }
    } else if constexpr (std::is_integral_v<T>) {
      read_integer(node, path, out, bounds);
    } else if constexpr (std::is_floating_point_v<T>) {
      read_number(node, path, out, bounds);
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (expect_scalar(node, path, "a string")) {
        out = node.Scalar();
      }
    } else if constexpr (std::is_same_v<T, FilePath>) {
      if (expect_scalar(node, path, "a file path")) {
        out.path = resolve_path(node.Scalar(), path);
        out.key = path;
        out.as_written = node.Scalar();
        out.where = location_of(node, path);
      }
    } else if constexpr (std::is_same_v<T, NameOrPath>) {
      if (expect_scalar(node, path, "a name or a file path")) {
        out.path = names_a_file(node.Scalar()) ? resolve_path(node.Scalar(), path) : node.Scalar();
        out.key = path;
        out.as_written = node.Scalar();
        out.where = location_of(node, path);
      }
    } else if constexpr (NamedEnum<T>) {
      if (!expect_scalar(node, path, "one of: " + enum_choices<T>())) {
        return;
      }
      if (auto value = enum_from_string<T>(node.Scalar())) {
        out = *value;
      } else {
        error_at(node, path,
                 fmt::format("unknown value '{}' (known: {})", node.Scalar(), enum_choices<T>()));
      }
    } else if constexpr (IsOptional<T>::value) {
      if (node.IsNull()) {
        out.reset();
        return;
      }
      typename T::value_type value{};
      read_value(node, path, value, bounds);
      out = std::move(value);
    } else if constexpr (IsVector<T>::value) {
      if (!node.IsSequence()) {
        error_at(node, path, "expected a list");
        return;
      }
      out.clear();
      out.resize(node.size());
      for (std::size_t i = 0; i < node.size(); ++i) {
        read_value(node[i], fmt::format("{}[{}]", path, i), out[i], bounds);
      }
    } else if constexpr (IsStringMap<T>::value) {
      if (!node.IsMap()) {
        error_at(node, path, "expected a mapping");
        return;
      }
      out.clear();
      for (auto it = node.begin(); it != node.end(); ++it) {
        typename T::mapped_type value{};
        const std::string key = it->first.Scalar();
        read_value(it->second, join(path, key), value, bounds);
        if (!out.emplace(key, std::move(value)).second) {  // YAML would silently keep one of the two
          error_at(it->first, join(path, key), "duplicate key");
        }
      }
    } else if constexpr (IsVariant<T>::value) {
      read_variant(node, path, out);
    } else if constexpr (ConfigStruct<T>) {
      read_struct(node, path, out);
    } else {
      static_assert(sizeof(T) == 0, "unsupported config field type");
    }
  }

  template <class... Alternatives>
  void read_variant(const YAML::Node& node, const std::string& path, std::variant<Alternatives...>& out) {
    const std::string choices = fmt::format("{}", fmt::join(std::vector<std::string_view>{Alternatives::kKind...}, ", "));
    if (!node.IsMap()) {
      error_at(node, path, fmt::format("expected a mapping with a 'kind' key ({})", choices));
      return;
    }
    const YAML::Node kind = find_child(node, "kind");
    if (!kind || !kind.IsScalar()) {
      error_at(node, path + ".kind", fmt::format("missing 'kind' (one of: {})", choices));
      return;
    }
    bool matched = false;
    auto try_alternative = [&]<class Alternative>(Alternative*) {
      if (matched || kind.Scalar() != Alternative::kKind) {
        return;
      }
      matched = true;
      Alternative value{};
      frames_.push_back(Frame{node, path, {"kind"}});
      value.fields(*this);
      check_unknown_keys(frames_.back());
      frames_.pop_back();
      if constexpr (HasValidate<Alternative>) {
        Problems problems;
        value.validate(problems);
        for (const auto& item : problems.items()) {
          const YAML::Node at = find_child(node, item.key);
          error_at(at ? at : node, join(path, item.key), item.reason);
        }
      }
      out = std::move(value);
    };
    (try_alternative(static_cast<Alternatives*>(nullptr)), ...);
    if (!matched) {
      error_at(kind, path + ".kind", fmt::format("unknown kind '{}' (known: {})", kind.Scalar(), choices));
    }
  }

  template <class T>
  void read_integer(const YAML::Node& node, const std::string& path, T& out, Bounds bounds) {
    const char* what = std::is_signed_v<T> ? "an integer" : "a non-negative integer";
    if (!expect_scalar(node, path, what)) {
      return;
    }
    const std::string& text = node.Scalar();
    T value{};
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc::result_out_of_range) {
      error_at(node, path, fmt::format("{} is out of range", text));
      return;
    }
    if (ec != std::errc() || end != text.data() + text.size()) {
      error_at(node, path, fmt::format("expected {}, got '{}'", what, text));
      return;
    }
    if (!bounds.admits(static_cast<double>(value))) {
      error_at(node, path, fmt::format("{} is out of range (must be {})", text, bounds.describe()));
      return;
    }
    out = value;
  }

  template <class T>
  void read_number(const YAML::Node& node, const std::string& path, T& out, Bounds bounds) {
    if (!expect_scalar(node, path, "a number")) {
      return;
    }
    const std::string& text = node.Scalar();
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
      error_at(node, path, fmt::format("expected a finite number, got '{}'", text));
      return;
    }
    if (!bounds.admits(value)) {
      error_at(node, path, fmt::format("{} is out of range (must be {})", text, bounds.describe()));
      return;
    }
    out = static_cast<T>(value);
  }

  std::string resolve_path(const std::string& text, const std::string& path) const;
  [[nodiscard]] const std::string* override_for(const std::string& path) const;

  const YamlSource& source_;
  std::vector<std::string> lines_;
  std::vector<Frame> frames_;
  std::vector<Error> errors_;
};

}  // namespace orrery::config
