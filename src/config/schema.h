// The scenario schema machinery. Every config struct describes its fields once:
//
//   template <class Visitor> void fields(Visitor& v) {
//     v("latency_ns", latency_ns, "Per-hop latency (ns)", nonnegative());
//   }
//
// and optionally `void validate(Problems&) const` for rules that span fields. Visitors read YAML
// (YamlReader), write the reference page (DocWriter) and serialise the resolved scenario
// (to_yaml). Enumerations declare their names through `enum_names(E)` found by ADL; a
// std::variant of structs is selected by a `kind` key naming each alternative's kKind.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "util/error.h"

namespace orrery::config {

// Numeric bounds of a field.
struct Bounds {
  std::optional<double> min;
  std::optional<double> max;
  bool min_exclusive = false;
  [[nodiscard]] bool admits(double value) const {
    if (min && (min_exclusive ? !(value > *min) : !(value >= *min))) {
      return false;
    }
    return !(max && !(value <= *max));
  }
  [[nodiscard]] std::string describe() const;
};
inline Bounds positive() { return Bounds{0.0, std::nullopt, true}; }
inline Bounds nonnegative() { return Bounds{0.0, std::nullopt, false}; }
inline Bounds at_least(double min) { return Bounds{min, std::nullopt, false}; }
inline Bounds between(double min, double max) { return Bounds{min, max, false}; }

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

// A path to a file named in a scenario; relative paths are resolved against the directory of
// the scenario file (or the working directory for --set overrides) when the scenario is loaded.
// The loader also records which key named the file, the text as written and where it was written,
// so that a file that cannot be read is reported at the scenario line that names it.
struct FilePath {
  std::string path;
  std::string key;         // e.g. "workload.programs[0].file"; empty when not from a config file
  std::string as_written;  // the value as written, before resolution
  std::optional<SourceLocation> where;

  FilePath() = default;
  explicit FilePath(std::string resolved) : path(std::move(resolved)) {}
  [[nodiscard]] bool empty() const { return path.empty(); }
};

// A preset named either by a name (looked up in configs/) or by a file: a value that names_a_file()
// is resolved like a FilePath, anything else is kept as the name.
struct NameOrPath : FilePath {
  using FilePath::FilePath;
};

// Whether a name-or-path value is a path: it has a '/' or ends in .yaml, .yml or .json.
[[nodiscard]] bool names_a_file(std::string_view text);

// Ties an error from reading `file` to the scenario key that named it. An error with no location
// of its own (the file cannot be opened, read or written, or is not the kind of file expected)
// gains the key as a prefix and the place in the scenario where the key is written, with a note
// on how a relative path was resolved; an error located inside the file (a parse error with the
// file's own line and column) keeps its location and gains a note naming the key.
[[nodiscard]] Error attributed_to(const FilePath& file, Error error);

// Problems found by a struct's validate(): a key (relative to the struct) and a reason.
class Problems {
 public:
  void add(std::string key, std::string reason) { items_.push_back({std::move(key), std::move(reason)}); }
  struct Item {
    std::string key;
    std::string reason;
  };
  [[nodiscard]] const std::vector<Item>& items() const { return items_; }

 private:
  std::vector<Item> items_;
};

// --- type traits used by the visitors ------------------------------------------------------------

// A visitor that accepts every field; used only to detect config structs.
struct ProbeVisitor {
  template <class... Args>
  void operator()(Args&&... /*unused*/) {}
};

template <class T>
concept ConfigStruct = std::is_class_v<T> && requires(T& t, ProbeVisitor& v) { t.fields(v); };

template <class T>
concept HasValidate = requires(const T& t, Problems& p) { t.validate(p); };

template <class E>
concept NamedEnum = std::is_enum_v<E> && requires(E e) { enum_names(e); };

template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};

template <class T>
struct IsStructVector : std::false_type {};
template <class T>
  requires ConfigStruct<T>
struct IsStructVector<std::vector<T>> : std::true_type {};

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <class T>
struct IsVariant : std::false_type {};
template <class... T>
struct IsVariant<std::variant<T...>> : std::true_type {};

template <class T>
struct IsStringMap : std::false_type {};
template <class T>
struct IsStringMap<std::map<std::string, T>> : std::true_type {};

template <NamedEnum E>
std::string_view enum_to_string(E value) {
  for (const auto& entry : enum_names(value)) {
    if (entry.value == value) {
      return entry.name;
    }
  }
  return "?";
}

template <NamedEnum E>
std::optional<E> enum_from_string(std::string_view name) {
  for (const auto& entry : enum_names(E{})) {
    if (entry.name == name) {
      return entry.value;
    }
  }
  return std::nullopt;
}

template <NamedEnum E>
std::string enum_choices() {
  std::string out;
  for (const auto& entry : enum_names(E{})) {
    out += out.empty() ? "" : ", ";
    out += entry.name;
  }
  return out;
}

// Levenshtein distance, for "did you mean" suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b);
// The closest candidate within distance 3, or empty.
std::string closest_match(std::string_view word, std::span<const std::string> candidates);

}  // namespace orrery::config
