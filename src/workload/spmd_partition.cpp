#include "workload/spmd_partition.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "util/assert.h"
#include "util/error.h"
#include "util/integers.h"
#include "workload/collectives.h"
#include "workload/program_builder.h"

// How it works (docs/stablehlo.md, "SPMD partitioning").
//
// Device space. Every sharding names sets of devices along which a tensor dimension is split: a
// Shardy mesh axis ("x" of sdy.mesh @mesh = <["x"=2, "y"=4]>) or a tile dimension of a GSPMD
// tile assignment ({devices=[4,2]<=[8]}, also reshaped and transposed: <=[2,4]T(1,0)). Each is a
// (stride, size) digit of the device id: device d's coordinate is (d / stride) % size. The
// boundaries of all such digits of a program split the id into atoms (a mixed radix); a sharding is
// then, per tensor dimension, a bit mask of atoms, and a value that holds partial sums (after a
// contraction over a sharded dimension) carries a mask of the atoms it still has to be reduced
// over.
//
// Propagation. Each op has a rule in the style of Shardy's op sharding rules: factors, each a
// dimension shared by some operands and results (a dot's batch and free dimensions), or a
// reduction factor found in operands only (a contracting dimension: its atoms make the result
// partial), or one that must not be sharded (a convolution's spatial dimensions, a slice's cut
// dimension). A factor takes the atoms of an operand that shards it and that no other factor
// took; the operands claim in turn (largest first, or one of the first few ahead of the others)
// and the claim that moves the fewest bytes wins, a resharding an earlier op already makes
// counting as free; a contraction first prefers claims that leave its result whole. Passes:
// forward (partial sums flowing through linear ops); backward, where a partial sum learns the
// sharding its users want it reduced to (an op may then produce that sharding directly, when
// that moves under half the bytes), and ops whose operands are all whole (constants, iotas,
// their broadcasts) take the sharding their users need, so they are built as shards; forward
// again; backward and forward once more. While loops are partitioned inside, each loop-carried
// value keeping one sharding.
//
// Partitioning. Each operand is resharded to what its op's decision needs: partial sums are
// reduce-scattered onto a dimension the consumer shards by those atoms, else all-reduced; atoms a
// dimension loses are all-to-all'd onto the dimension that gains them, else all-gathered; atoms a
// dimension gains are a local slice (a slice op, no communication). A value resharded the same way
// twice in a block is resharded once. Ops with no rule (custom calls, if/case, calls that stay
// calls) run on whole operands, as XLA runs what it cannot partition. The entry function's
// results are resharded to their annotations.

namespace orrery::workload {
namespace {

using Mask = std::uint32_t;

struct Piece {
  std::int64_t stride = 1;
  std::int64_t size = 1;
};

// A sharding as parsed: per tensor dimension, the device digits that split it.
struct ParsedSharding {
  std::vector<std::vector<Piece>> dims;
};

// A sharding in atoms: per dimension a mask; `partial` the atoms over which the value is a partial
// result still to be reduced by `reduction`.
struct Sh {
  std::vector<Mask> dims;
  Mask partial = 0;
  ReductionKind reduction = ReductionKind::kNone;

  [[nodiscard]] Mask atoms() const {
    Mask m = partial;
    for (const Mask d : dims) {
      m |= d;
    }
    return m;
  }
  friend bool operator==(const Sh&, const Sh&) = default;
};

Sh replicated(std::size_t rank) {
  Sh s;
  s.dims.assign(rank, 0);
  return s;
}

[[noreturn]] void unsupported(const Program& p, std::uint32_t offset, const std::string& message) {
  throw OrreryError(Error{ErrorCode::kUnsupported, "SPMD partitioning: " + message, p.location(offset), {}});
}

// Integers of an attribute's value text, before its type (` : tensor<2xi64>`).
std::vector<std::int64_t> integers_of(std::string_view text) {
  return integers_in(text.substr(0, text.find(" : ")));
}

// ---------------------------------------------------------------------------------------------
// Parsing shardings.

class ShardingParser {
 public:
  ShardingParser(const Program& p, std::int64_t devices) : p_(p), devices_(devices) {}

  // The sharding of a `mhlo.sharding` or `sdy.sharding` attribute of a value of `rank`
  // dimensions; nullopt for a tuple sharding or one that says nothing (unknown).
  std::optional<ParsedSharding> parse(const Attribute& a, std::size_t rank, std::uint32_t offset) {
    const std::string_view name = p_.string(a.name);
    const std::string_view text = p_.attribute_text(a);
    if (name == "mhlo.sharding") {
      return parse_gspmd(text, rank, offset);
    }
    if (name == "sdy.sharding") {
      return parse_sdy(text, rank, offset, 0);
    }
    return std::nullopt;
  }

  // Result `index` of an sdy.sharding_per_value attribute (or a plain one) of an op.
  std::optional<ParsedSharding> parse_result(std::string_view name, std::string_view text, std::size_t index,
                                             std::size_t rank, std::uint32_t offset) {
    if (name == "mhlo.sharding") {
      if (index != 0) {
        return std::nullopt;
      }
      return parse_gspmd(text, rank, offset);
    }
    return parse_sdy(text, rank, offset, index);
  }

 private:
  std::optional<ParsedSharding> parse_gspmd(std::string_view text, std::size_t rank, std::uint32_t offset) {
    std::string s(text);
    std::erase(s, '"');
    std::string_view v(s);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front())) != 0) {
      v.remove_prefix(1);
    }
    if (v.starts_with("{{")) {
      return std::nullopt;  // a tuple's sharding: the tuple runs replicated
    }
    if (v.starts_with("{replicated") || v.starts_with("{maximal") || v.starts_with("{unknown")) {
      ParsedSharding r;
      r.dims.resize(rank);
      return r;
    }
    if (v.starts_with("{manual")) {
      unsupported(p_, offset, "a {manual} sharding in a pre-partitioning program");
    }
    if (!v.starts_with("{devices=[")) {
      unsupported(p_, offset, fmt::format("unrecognised sharding '{}'", text));
    }
    const std::size_t tile_end = v.find(']');
    const std::vector<std::int64_t> tile = integers_of(v.substr(10, tile_end - 10));
    std::string_view rest = v.substr(tile_end + 1);
    std::vector<std::int64_t> reshape;
    std::vector<std::int64_t> perm;
    if (rest.starts_with("<=[")) {
      const std::size_t end = rest.find(']');
      reshape = integers_of(rest.substr(3, end - 3));
      rest = rest.substr(end + 1);
      if (rest.starts_with("T(")) {
        const std::size_t close = rest.find(')');
        perm = integers_of(rest.substr(2, close - 2));
        rest = rest.substr(close + 1);
      }
    } else {
      // An explicit device list: accepted when it is the iota.
      std::size_t end = 0;
      while (end < rest.size() && (std::isdigit(static_cast<unsigned char>(rest[end])) != 0 ||
                                   rest[end] == ',' || rest[end] == ' ')) {
        ++end;
      }
      const std::vector<std::int64_t> list = integers_of(rest.substr(0, end));
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (list[i] != static_cast<std::int64_t>(i)) {
          unsupported(
              p_, offset,
              fmt::format(
                  "the explicit device order of '{}' (only the iota order, or <=[...] with a transpose, "
                  "is supported)",
                  text));
        }
      }
      reshape = {static_cast<std::int64_t>(list.size())};
      rest = rest.substr(end);
    }
    if (perm.empty()) {
      perm.resize(reshape.size());
      std::iota(perm.begin(), perm.end(), 0);
    }
    std::size_t trailing = 0;  // tile dimensions that are not tensor dimensions
    if (rest.find("last_tile_dim_replicate") != std::string_view::npos) {
      trailing = 1;
    } else if (const std::size_t dims = rest.find("last_tile_dims={"); dims != std::string_view::npos) {
      const std::string_view list = rest.substr(dims + 16, rest.find('}', dims) - dims - 16);
      if (list.find("manual") != std::string_view::npos) {
        unsupported(p_, offset, fmt::format("manual subgroups in '{}'", text));
      }
      trailing = static_cast<std::size_t>(std::count(list.begin(), list.end(), ',') + 1);
    }
    // Tile and reshape sizes are positive and perm is a permutation of the reshape's dimensions.
    const auto positive = [&](const std::vector<std::int64_t>& values) {
      return std::all_of(values.begin(), values.end(),
                         [&](std::int64_t x) { return x >= 1 && x <= devices_; });
    };
    // The product, or devices_ + 1 once it exceeds devices_ (no overflow).
    const auto product_of = [&](const std::vector<std::int64_t>& values) {
      std::int64_t p = 1;
      for (const std::int64_t x : values) {
        p *= x;
        if (p > devices_) {
          return devices_ + 1;
        }
      }
      return p;
    };
    std::vector<std::int64_t> sorted_perm = perm;
    std::sort(sorted_perm.begin(), sorted_perm.end());
    for (std::size_t k = 0; k < sorted_perm.size(); ++k) {
      if (sorted_perm[k] != static_cast<std::int64_t>(k)) {
        unsupported(p_, offset,
                    fmt::format("sharding '{}': T(...) is not a permutation of the device dimensions", text));
      }
    }
    if (!positive(tile) || !positive(reshape)) {
      unsupported(p_, offset,
                  fmt::format("sharding '{}': tile and device dimensions must be positive", text));
    }
    const std::int64_t tiles = product_of(tile);
    const std::int64_t listed = product_of(reshape);
    if (tile.size() < trailing || tile.size() - trailing != rank || tiles != devices_ || listed != devices_ ||
        perm.size() != reshape.size()) {
      unsupported(
          p_, offset,
          fmt::format("sharding '{}' does not fit a rank-{} value on {} devices", text, rank, devices_));
    }
    // The device list is iota(reshape) transposed by perm, flattened; tile dimensions split it
    // row-major. Walk both from their minor end.
    struct Digit {
      std::int64_t stride;
      std::int64_t size;
    };
    std::vector<Digit> digits;  // the transposed dimensions, major first
    for (const std::int64_t k : perm) {
      std::int64_t stride = 1;
      for (std::size_t j = static_cast<std::size_t>(k) + 1; j < reshape.size(); ++j) {
        stride *= reshape[j];
      }
      digits.push_back({stride, reshape[static_cast<std::size_t>(k)]});
    }
    ParsedSharding r;
    r.dims.resize(rank);
    auto cursor = static_cast<std::ptrdiff_t>(digits.size()) - 1;
    for (auto t = static_cast<std::ptrdiff_t>(tile.size()) - 1; t >= 0; --t) {
      std::int64_t remaining = tile[static_cast<std::size_t>(t)];
      std::vector<Piece> pieces;
      while (remaining > 1) {
        while (cursor >= 0 && digits[static_cast<std::size_t>(cursor)].size == 1) {
          --cursor;
        }
        if (cursor < 0) {
          unsupported(p_, offset,
                      fmt::format("sharding '{}': the tile dimensions do not cover the devices", text));
        }
        Digit& d = digits[static_cast<std::size_t>(cursor)];
        if (d.size <= remaining) {
          if (remaining % d.size != 0) {
            unsupported(p_, offset,
                        fmt::format("sharding '{}': a tile dimension splits a device digit", text));
          }
          pieces.push_back({d.stride, d.size});
          remaining /= d.size;
          d.size = 1;
        } else {
          if (d.size % remaining != 0) {
            unsupported(p_, offset,
                        fmt::format("sharding '{}': a tile dimension splits a device digit", text));
          }
          pieces.push_back({d.stride, remaining});
          d.stride *= remaining;
          d.size /= remaining;
          remaining = 1;
        }
      }
      if (static_cast<std::size_t>(t) < rank) {
        r.dims[static_cast<std::size_t>(t)] = std::move(pieces);
      }
    }
    return r;
  }

  std::optional<ParsedSharding> parse_sdy(std::string_view text, std::size_t rank, std::uint32_t offset,
                                          std::size_t index) {
    // #sdy.sharding<@mesh, [{"x"}, {}]> or #sdy.sharding_per_value<[<@mesh, [...]>, ...]>
    std::size_t at = 0;
    for (std::size_t k = 0; k <= index; ++k) {
      at = text.find('@', at == 0 ? 0 : at + 1);
      if (at == std::string_view::npos) {
        return std::nullopt;
      }
    }
    std::size_t name_end = at + 1;
    while (name_end < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[name_end])) != 0 || text[name_end] == '_' ||
            text[name_end] == '.' || text[name_end] == '-')) {
      ++name_end;
    }
    const std::string_view mesh_name = text.substr(at + 1, name_end - at - 1);
    const Mesh* mesh = p_.find_mesh(mesh_name);
    if (mesh == nullptr) {
      unsupported(
          p_, offset,
          fmt::format("sharding '{}' names mesh @{}, which the module does not define", text, mesh_name));
    }
    if (mesh_name_.empty()) {
      mesh_name_ = std::string(mesh_name);
    } else if (mesh_name_ != mesh_name) {
      unsupported(p_, offset, fmt::format("shardings on two meshes (@{} and @{})", mesh_name_, mesh_name));
    }
    const auto axes = p_.ints(mesh->axes);
    std::vector<std::pair<std::string_view, std::int64_t>> names;  // name, size
    for (std::size_t k = 0; k + 1 < axes.size(); k += 2) {
      names.emplace_back(p_.string(static_cast<StringId>(axes[k])), axes[k + 1]);
    }
    std::int64_t total = 1;
    for (const auto& n : names) {
      total *= n.second;
    }
    if (total != devices_) {
      unsupported(
          p_, offset,
          fmt::format("mesh @{} has {} devices; the module has {} partitions", mesh_name, total, devices_));
    }
    auto axis_piece = [&](std::string_view axis, std::int64_t pre, std::int64_t sub) -> Piece {
      std::int64_t stride = 1;
      for (std::size_t k = names.size(); k-- > 0;) {
        if (names[k].first == axis) {
          const std::int64_t size = names[k].second;
          if (sub == 0) {
            return {stride, size};
          }
          if (pre < 1 || sub < 1 || pre > size || sub > size || size % pre != 0 || (size / pre) % sub != 0) {
            unsupported(p_, offset,
                        fmt::format("sub-axis \"{}\":({}){} of an axis of size {}", axis, pre, sub, size));
          }
          return {stride * (size / (pre * sub)), sub};
        }
        stride *= names[k].second;
      }
      unsupported(p_, offset, fmt::format("axis \"{}\" is not an axis of mesh @{}", axis, mesh_name));
    };
    const std::size_t open = text.find('[', name_end);
    if (open == std::string_view::npos) {
      return std::nullopt;
    }
    ParsedSharding r;
    std::size_t i = open + 1;
    while (i < text.size() && text[i] != ']') {
      if (text[i] != '{') {
        ++i;
        continue;
      }
      const std::size_t close = text.find('}', i);
      if (close == std::string_view::npos) {
        unsupported(p_, offset, fmt::format("sharding '{}': a dimension's '{{' is not closed", text));
      }
      const std::string_view body = text.substr(i + 1, close - i - 1);
      std::vector<Piece> pieces;
      std::size_t q = 0;
      while ((q = body.find('"', q)) != std::string_view::npos) {
        const std::size_t end = body.find('"', q + 1);
        if (end == std::string_view::npos) {
          unsupported(p_, offset, fmt::format("sharding '{}': an axis name's quote is not closed", text));
        }
        const std::string_view axis = body.substr(q + 1, end - q - 1);
        std::int64_t pre = 0;
        std::int64_t sub = 0;
        if (end + 1 < body.size() && body[end + 1] == ':') {
          const std::size_t stop = body.find_first_of(",}", end + 1);
          const std::vector<std::int64_t> numbers = integers_of(body.substr(end + 2, stop - end - 2));
          if (numbers.size() == 2) {
            pre = numbers[0];
            sub = numbers[1];
          }
        }
        pieces.push_back(axis_piece(axis, pre == 0 ? 1 : pre, sub));
        q = end + 1;
      }
      r.dims.push_back(std::move(pieces));
      i = close + 1;
    }
    if (r.dims.size() != rank) {
      unsupported(
          p_, offset,
          fmt::format("sharding '{}' has {} dimensions for a rank-{} value", text, r.dims.size(), rank));
    }
    // An axis (or two sub-axes that overlap) may split only one dimension, once.
    std::vector<Piece> all;
    for (const auto& dim : r.dims) {
      all.insert(all.end(), dim.begin(), dim.end());
    }
    for (std::size_t a = 0; a < all.size(); ++a) {
      for (std::size_t b = a + 1; b < all.size(); ++b) {
        if (all[a].stride < all[b].stride * all[b].size && all[b].stride < all[a].stride * all[a].size) {
          unsupported(p_, offset, fmt::format("sharding '{}' uses a mesh axis twice", text));
        }
      }
    }
    return r;
  }

  const Program& p_;
  std::int64_t devices_;
  std::string mesh_name_;
};

// ---------------------------------------------------------------------------------------------
// Rules.

struct Factor {
  std::int64_t size = 1;
  bool reduction = false;  // in operands only: its atoms make the results partial
  bool replicate = false;  // must not be sharded
  std::vector<std::pair<std::uint32_t, std::uint32_t>> operands;  // (operand, dimension)
  std::vector<std::pair<std::uint32_t, std::uint32_t>> results;   // (result, dimension)
};

enum class Linearity : std::uint8_t {
  kNone,      // partial operands are reduced first
  kUnary,     // a partial operand passes through (convert, reshape, transpose, slice)
  kSum,       // add, subtract: passes when every operand is partial over the same atoms
  kProduct,   // multiply, dot: passes when exactly one operand is partial
  kDividend,  // divide: passes when only the dividend is partial
  kSelect,    // select: passes when both choices are partial over the same atoms
};

struct Rule {
  std::vector<Factor> factors;
  bool fallback = false;  // every operand and result whole
  Linearity linearity = Linearity::kNone;
  ReductionKind reduction = ReductionKind::kNone;  // of the reduction factors
};

ReductionKind reduction_of_body(OpKind body) {
  switch (body) {
    case OpKind::kAdd:
      return ReductionKind::kSum;
    case OpKind::kMaximum:
      return ReductionKind::kMax;
    case OpKind::kMinimum:
      return ReductionKind::kMin;
    case OpKind::kMultiply:
      return ReductionKind::kProduct;
    case OpKind::kAnd:
      return ReductionKind::kAnd;
    case OpKind::kOr:
      return ReductionKind::kOr;
    default:
      return ReductionKind::kNone;
  }
}

class RuleBuilder {
 public:
  explicit RuleBuilder(const Program& p) : p_(p) {}

  // The op's rule; the fallback (everything whole) for an op whose types or dimension numbers
  // the rule cannot use: the frontend is not a verifier, so a rule checks what it reads.
  Rule rule(OpId id) const {
    Rule r = build(id);
    if (!r.fallback && !valid(id, r)) {
      r = Rule{};
      r.fallback = true;
    }
    return r;
  }

 private:
  static bool all_below(std::span<const std::int64_t> values, std::size_t n) {
    return std::all_of(values.begin(), values.end(),
                       [&](std::int64_t v) { return v >= 0 && static_cast<std::size_t>(v) < n; });
  }

  // Every (operand, dimension) and (result, dimension) of the rule exists, and no dimension is in
  // two factors.
  bool valid(OpId id, const Rule& r) const {
    const Op& op = p_.op(id);
    const auto operands = p_.operands(op);
    const auto results = p_.result_types(op);
    std::set<std::pair<std::uint32_t, std::uint32_t>> seen_operands;
    std::set<std::pair<std::uint32_t, std::uint32_t>> seen_results;
    for (const Factor& f : r.factors) {
      for (const auto& [i, d] : f.operands) {
        if (i >= operands.size() || d >= p_.types().rank(p_.value_type(operands[i])) ||
            !seen_operands.emplace(i, d).second) {
          return false;
        }
      }
      for (const auto& [k, d] : f.results) {
        if (k >= results.size() || d >= p_.types().rank(results[k]) || !seen_results.emplace(k, d).second) {
          return false;
        }
      }
    }
    return true;
  }

  Rule build(OpId id) const {
    const Op& op = p_.op(id);
    const auto operands = p_.operands(op);
    const auto results = p_.result_types(op);
    Rule r;
    r.fallback = true;  // until a case below makes a rule
    const auto usable = [&](TypeId t) {
      if (!p_.types().is_tensor(t) || !p_.types().is_static(t)) {
        return false;
      }
      const auto dims = p_.types().dimensions(t);
      return std::all_of(dims.begin(), dims.end(), [](std::int64_t d) { return d > 0; });
    };
    for (const TypeId t : results) {
      if (!usable(t)) {
        return r;
      }
    }
    for (const ValueRef v : operands) {
      if (!usable(p_.value_type(v))) {
        return r;
      }
    }
    // The operand counts the cases below index (the frontend checks fixed arities only).
    const std::size_t n = operands.size();
    const bool counts_ok = [&] {
      switch (op.kind) {
        case OpKind::kDot:
        case OpKind::kDotGeneral:
        case OpKind::kConvolution:
        case OpKind::kGather:
          return n == 2 && results.size() == 1;
        case OpKind::kBroadcastInDim:
        case OpKind::kTranspose:
        case OpKind::kReshape:
        case OpKind::kSlice:
        case OpKind::kReverse:
          return n == 1 && results.size() == 1;
        case OpKind::kPad:
          return n == 2 && results.size() == 1;
        case OpKind::kDynamicSlice:
          return n >= 1 && results.size() == 1;
        case OpKind::kDynamicUpdateSlice:
          return n >= 2 && results.size() == 1;
        case OpKind::kConcatenate:
          return n >= 1 && results.size() == 1;
        case OpKind::kReduce:
        case OpKind::kReduceWindow:
          return n >= 2 && n % 2 == 0 && results.size() == n / 2;
        case OpKind::kSelectAndScatter:
          return n == 3 && results.size() == 1;
        case OpKind::kScatter:
          return n >= 3 && n % 2 == 1 && results.size() == (n - 1) / 2;
        case OpKind::kSort:
          return n >= 1 && results.size() == n;
        default:
          return !results.empty();
      }
    }();
    if (!counts_ok) {
      return r;
    }
    r.fallback = false;
    auto rank_of = [&](ValueRef v) { return p_.types().rank(p_.value_type(v)); };
    auto dims_of = [&](ValueRef v) { return p_.types().dimensions(p_.value_type(v)); };
    const std::size_t result_rank = results.empty() ? 0 : p_.types().rank(results[0]);
    auto result_dims = [&]() { return p_.types().dimensions(results[0]); };
    // One factor per result dimension, shared by operands of the result's rank.
    auto same_shape = [&]() {
      for (std::uint32_t d = 0; d < result_rank; ++d) {
        Factor f;
        f.size = result_dims()[d];
        for (std::uint32_t i = 0; i < operands.size(); ++i) {
          if (rank_of(operands[i]) == result_rank) {
            f.operands.emplace_back(i, d);
          }
        }
        for (std::uint32_t k = 0; k < results.size(); ++k) {
          f.results.emplace_back(k, d);
        }
        r.factors.push_back(std::move(f));
      }
    };
    // Dimension d of operand 0 and the result: shared when it keeps its size, else whole.
    auto kept_dims = [&](std::vector<std::uint32_t> with_operands) {
      const auto in = dims_of(operands[0]);
      bool ranks_match = in.size() == result_rank;
      for (const std::uint32_t i : with_operands) {
        ranks_match = ranks_match && rank_of(operands[i]) == result_rank;
      }
      if (!ranks_match) {
        r.fallback = true;
        return;
      }
      for (std::uint32_t d = 0; d < result_rank; ++d) {
        Factor f;
        f.size = result_dims()[d];
        bool same = in[d] == result_dims()[d];
        for (const std::uint32_t i : with_operands) {
          same = same && dims_of(operands[i])[d] == result_dims()[d];
        }
        f.replicate = !same;
        f.operands.emplace_back(0, d);
        for (const std::uint32_t i : with_operands) {
          f.operands.emplace_back(i, d);
        }
        f.results.emplace_back(0, d);
        r.factors.push_back(std::move(f));
      }
    };
    const OpCategory category = op_category(op.kind);
    switch (op.kind) {
      case OpKind::kConvert:
        same_shape();
        // A partial sum passes through a conversion between floating-point types only (rounding
        // aside, that is linear; one to an integer or a predicate is not).
        if (is_floating_point(p_.types().element(p_.value_type(operands[0]))) &&
            is_floating_point(p_.types().element(results[0]))) {
          r.linearity = Linearity::kUnary;
        }
        return r;
      case OpKind::kNegate:
      case OpKind::kCopy:
        same_shape();
        r.linearity = Linearity::kUnary;
        return r;
      case OpKind::kAdd:
      case OpKind::kSubtract:
        same_shape();
        r.linearity = Linearity::kSum;
        return r;
      case OpKind::kMultiply:
        same_shape();
        r.linearity = Linearity::kProduct;
        return r;
      case OpKind::kDivide:
        same_shape();
        r.linearity = Linearity::kDividend;
        return r;
      case OpKind::kSelect:
        same_shape();
        r.linearity = Linearity::kSelect;
        return r;
      case OpKind::kConstant:
      case OpKind::kIota:
        same_shape();
        return r;
      case OpKind::kBroadcastInDim: {
        const auto map = integers_of(p_.attribute(op, "broadcast_dimensions").value_or(""));
        const auto in = dims_of(operands[0]);
        if (map.size() != in.size()) {
          r.fallback = true;
          return r;
        }
        for (std::uint32_t d = 0; d < result_rank; ++d) {
          Factor f;
          f.size = result_dims()[d];
          for (std::uint32_t i = 0; i < map.size(); ++i) {
            if (map[i] == d && in[i] == result_dims()[d]) {
              f.operands.emplace_back(0, i);
            }
          }
          f.results.emplace_back(0, d);
          r.factors.push_back(std::move(f));
        }
        return r;
      }
      case OpKind::kTranspose: {
        const auto perm = integers_of(p_.attribute(op, "permutation").value_or(""));
        if (perm.size() != result_rank) {
          r.fallback = true;
          return r;
        }
        for (std::uint32_t d = 0; d < result_rank; ++d) {
          Factor f;
          f.size = result_dims()[d];
          f.operands.emplace_back(0, static_cast<std::uint32_t>(perm[d]));
          f.results.emplace_back(0, d);
          r.factors.push_back(std::move(f));
        }
        r.linearity = Linearity::kUnary;
        return r;
      }
      case OpKind::kReshape:
        reshape(dims_of(operands[0]), result_dims(), r);
        r.linearity = Linearity::kUnary;
        return r;
      case OpKind::kDot:
      case OpKind::kDotGeneral:
        dot(op, r);
        r.linearity = Linearity::kProduct;
        return r;
      case OpKind::kConvolution:
        convolution(op, r);
        return r;
      case OpKind::kReduce:
        reduce(op, r);
        return r;
      case OpKind::kReduceWindow:
      case OpKind::kSelectAndScatter: {
        const WindowDimensions& w = p_.window(op);
        const auto size = p_.ints(w.window_dimensions);
        const auto strides = p_.ints(w.window_strides);
        const auto padding = p_.ints(w.padding);
        const auto base_dilations = p_.ints(w.base_dilations);
        const std::size_t inputs = op.kind == OpKind::kSelectAndScatter ? 2 : operands.size() / 2;
        for (std::uint32_t d = 0; d < result_rank; ++d) {
          Factor f;
          f.size = result_dims()[d];
          // Shared only where the window is one element, unstrided, unpadded and undilated.
          f.replicate = !(d < size.size() && size[d] == 1 && (d >= strides.size() || strides[d] == 1) &&
                          (d >= base_dilations.size() || base_dilations[d] == 1) &&
                          (2 * d + 1 >= padding.size() || (padding[2 * d] == 0 && padding[2 * d + 1] == 0)));
          for (std::uint32_t i = 0; i < inputs; ++i) {
            f.operands.emplace_back(i, d);
          }
          for (std::uint32_t k = 0; k < results.size(); ++k) {
            f.results.emplace_back(k, d);
          }
          r.factors.push_back(std::move(f));
        }
        return r;
      }
      case OpKind::kSlice:
        kept_dims({});
        r.linearity = Linearity::kUnary;
        return r;
      case OpKind::kPad: {
        // A dimension stays sharded only where nothing is padded (low, high and interior 0).
        kept_dims({});
        const auto low = integers_of(p_.attribute(op, "edge_padding_low").value_or(""));
        const auto high = integers_of(p_.attribute(op, "edge_padding_high").value_or(""));
        const auto interior = integers_of(p_.attribute(op, "interior_padding").value_or(""));
        for (std::size_t d = 0; d < r.factors.size(); ++d) {
          const auto zero = [&](const std::vector<std::int64_t>& v) { return d < v.size() && v[d] == 0; };
          if (!zero(low) || !zero(high) || (!interior.empty() && !zero(interior))) {
            r.factors[d].replicate = true;
          }
        }
        return r;
      }
      case OpKind::kDynamicSlice:
        kept_dims({});
        return r;
      case OpKind::kDynamicUpdateSlice:
        kept_dims({1});
        return r;
      case OpKind::kConcatenate: {
        for (const ValueRef v : operands) {
          if (rank_of(v) != result_rank) {
            r.fallback = true;
            return r;
          }
        }
        for (std::uint32_t d = 0; d < result_rank; ++d) {
          Factor f;
          f.size = result_dims()[d];
          for (std::uint32_t i = 0; i < operands.size(); ++i) {
            f.replicate = f.replicate || dims_of(operands[i])[d] != result_dims()[d];
            f.operands.emplace_back(i, d);
          }
          f.results.emplace_back(0, d);
          r.factors.push_back(std::move(f));
        }
        return r;
      }
      case OpKind::kReverse: {
        const auto reversed = integers_of(p_.attribute(op, "dimensions").value_or(""));
        same_shape();
        for (const std::int64_t d : reversed) {
          if (d >= 0 && static_cast<std::size_t>(d) < r.factors.size()) {
            r.factors[static_cast<std::size_t>(d)].replicate = true;
          }
        }
        r.linearity = Linearity::kUnary;
        return r;
      }
      case OpKind::kSort: {
        same_shape();
        const std::int64_t dim = p_.sort(op).dimension;
        for (std::size_t d = 0; d < r.factors.size(); ++d) {
          r.factors[d].replicate = r.factors[d].replicate || static_cast<std::int64_t>(d) == dim || dim < 0;
        }
        return r;
      }
      case OpKind::kGather:
        gather(op, r);
        return r;
      case OpKind::kScatter:
        scatter(op, r);
        return r;
      default:
        break;
    }
    if (category == OpCategory::kElementwise && !results.empty()) {
      same_shape();
      return r;
    }
    r.fallback = true;
    return r;
  }

 private:
  // Reshape: dimensions are grouped where the products of the two shapes meet; a group of one
  // dimension on each side keeps its sharding; in a group that merges dimensions (or splits one),
  // the major dimension carries the sharding and the others must be whole.
  static void reshape(std::span<const std::int64_t> in, std::span<const std::int64_t> out, Rule& r) {
    std::size_t i = 0;
    std::size_t o = 0;
    while (i < in.size() || o < out.size()) {
      // Size-1 dimensions form no factor.
      if (i < in.size() && in[i] == 1) {
        ++i;
        continue;
      }
      if (o < out.size() && out[o] == 1) {
        ++o;
        continue;
      }
      if (i >= in.size() || o >= out.size()) {
        break;
      }
      const std::size_t i0 = i;
      const std::size_t o0 = o;
      std::int64_t a = in[i++];
      std::int64_t b = out[o++];
      while (a != b) {
        if (a < b && i < in.size()) {
          a *= in[i++];
        } else if (b < a && o < out.size()) {
          b *= out[o++];
        } else {
          break;
        }
      }
      Factor major;
      major.size = std::min(in[i0], out[o0]);
      if (in[i0] % major.size != 0 || out[o0] % major.size != 0 || a != b) {
        major.replicate = true;
      }
      major.operands.emplace_back(0, static_cast<std::uint32_t>(i0));
      major.results.emplace_back(0, static_cast<std::uint32_t>(o0));
      r.factors.push_back(std::move(major));
      for (std::size_t k = i0 + 1; k < i; ++k) {
        Factor f;
        f.size = in[k];
        f.replicate = true;
        f.operands.emplace_back(0, static_cast<std::uint32_t>(k));
        r.factors.push_back(std::move(f));
      }
      for (std::size_t k = o0 + 1; k < o; ++k) {
        Factor f;
        f.size = out[k];
        f.replicate = true;
        f.results.emplace_back(0, static_cast<std::uint32_t>(k));
        r.factors.push_back(std::move(f));
      }
    }
  }

  void dot(const Op& op, Rule& r) const {
    const DotDimensions& d = p_.dot(op);
    const auto operands = p_.operands(op);
    const auto lhs = p_.types().dimensions(p_.value_type(operands[0]));
    const auto rhs = p_.types().dimensions(p_.value_type(operands[1]));
    const auto lb = p_.ints(d.lhs_batching);
    const auto rb = p_.ints(d.rhs_batching);
    const auto lc = p_.ints(d.lhs_contracting);
    const auto rc = p_.ints(d.rhs_contracting);
    if (lb.size() != rb.size() || lc.size() != rc.size() || !all_below(lb, lhs.size()) ||
        !all_below(lc, lhs.size()) || !all_below(rb, rhs.size()) || !all_below(rc, rhs.size())) {
      r.fallback = true;
      return;
    }
    std::uint32_t out = 0;
    for (std::size_t k = 0; k < lb.size(); ++k) {
      Factor f;
      f.size = lhs[static_cast<std::size_t>(lb[k])];
      f.operands = {{0, static_cast<std::uint32_t>(lb[k])}, {1, static_cast<std::uint32_t>(rb[k])}};
      f.results = {{0, out++}};
      r.factors.push_back(std::move(f));
    }
    auto free = [&](std::uint32_t operand, std::span<const std::int64_t> dims,
                    std::span<const std::int64_t> batch, std::span<const std::int64_t> contracting) {
      for (std::uint32_t k = 0; k < dims.size(); ++k) {
        if (std::find(batch.begin(), batch.end(), k) != batch.end() ||
            std::find(contracting.begin(), contracting.end(), k) != contracting.end()) {
          continue;
        }
        Factor f;
        f.size = dims[k];
        f.operands = {{operand, k}};
        f.results = {{0, out++}};
        r.factors.push_back(std::move(f));
      }
    };
    free(0, lhs, lb, lc);
    free(1, rhs, rb, rc);
    for (std::size_t k = 0; k < lc.size(); ++k) {
      Factor f;
      f.size = lhs[static_cast<std::size_t>(lc[k])];
      f.reduction = true;
      f.operands = {{0, static_cast<std::uint32_t>(lc[k])}, {1, static_cast<std::uint32_t>(rc[k])}};
      r.factors.push_back(std::move(f));
    }
    r.reduction = ReductionKind::kSum;
  }

  void convolution(const Op& op, Rule& r) const {
    const ConvolutionDimensions& c = p_.convolution(op);
    const auto operands = p_.operands(op);
    const auto input = p_.types().dimensions(p_.value_type(operands[0]));
    const auto kernel = p_.types().dimensions(p_.value_type(operands[1]));
    const auto output = p_.types().dimensions(p_.result_types(op)[0]);
    auto u = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
    const std::int64_t in_dims[] = {c.input_batch, c.input_feature};
    const std::int64_t kernel_dims[] = {c.kernel_input_feature, c.kernel_output_feature};
    const std::int64_t out_dims[] = {c.output_batch, c.output_feature};
    if (!all_below(in_dims, input.size()) || !all_below(p_.ints(c.input_spatial), input.size()) ||
        !all_below(kernel_dims, kernel.size()) || !all_below(p_.ints(c.kernel_spatial), kernel.size()) ||
        !all_below(out_dims, output.size()) || !all_below(p_.ints(c.output_spatial), output.size())) {
      r.fallback = true;
      return;
    }
    const bool grouped = c.feature_group_count != 1 || c.batch_group_count != 1;
    Factor batch;
    batch.size = output[u(c.output_batch)];
    batch.replicate = c.batch_group_count != 1;
    batch.operands = {{0, u(c.input_batch)}};
    batch.results = {{0, u(c.output_batch)}};
    r.factors.push_back(std::move(batch));
    Factor out_feature;
    out_feature.size = output[u(c.output_feature)];
    out_feature.replicate = grouped;
    out_feature.operands = {{1, u(c.kernel_output_feature)}};
    out_feature.results = {{0, u(c.output_feature)}};
    r.factors.push_back(std::move(out_feature));
    Factor in_feature;
    in_feature.size = input[u(c.input_feature)];
    in_feature.reduction = !grouped;
    in_feature.replicate = grouped;
    in_feature.operands = {{0, u(c.input_feature)}, {1, u(c.kernel_input_feature)}};
    r.factors.push_back(std::move(in_feature));
    for (const auto& [operand, range] : {std::pair{0U, c.input_spatial}, std::pair{1U, c.kernel_spatial}}) {
      for (const std::int64_t d : p_.ints(range)) {
        Factor f;
        f.size = (operand == 0 ? input : kernel)[u(d)];
        f.replicate = true;
        f.operands = {{operand, u(d)}};
        r.factors.push_back(std::move(f));
      }
    }
    for (const std::int64_t d : p_.ints(c.output_spatial)) {
      Factor f;
      f.size = output[u(d)];
      f.replicate = true;
      f.results = {{0, u(d)}};
      r.factors.push_back(std::move(f));
    }
    r.reduction = ReductionKind::kSum;
    r.linearity = Linearity::kProduct;
  }

  void reduce(const Op& op, Rule& r) const {
    const ReduceDimensions& rd = p_.reduce(op);
    const auto operands = p_.operands(op);
    const std::size_t inputs = operands.size() / 2;
    const auto reduced = p_.ints(rd.dimensions);
    const auto in = p_.types().dimensions(p_.value_type(operands[0]));
    const ReductionKind kind = inputs == 1 ? reduction_of_body(rd.body) : ReductionKind::kNone;
    std::uint32_t out = 0;
    for (std::uint32_t d = 0; d < in.size(); ++d) {
      Factor f;
      f.size = in[d];
      for (std::uint32_t i = 0; i < inputs; ++i) {
        f.operands.emplace_back(i, d);
      }
      if (std::find(reduced.begin(), reduced.end(), d) != reduced.end()) {
        f.reduction = kind != ReductionKind::kNone;
        f.replicate = kind == ReductionKind::kNone;
      } else {
        for (std::uint32_t k = 0; k < p_.result_types(op).size(); ++k) {
          f.results.emplace_back(k, out);
        }
        ++out;
      }
      r.factors.push_back(std::move(f));
    }
    r.reduction = kind;
    if (kind == ReductionKind::kSum) {
      r.linearity = Linearity::kUnary;
    }
  }

  // Gather: the table whole but for its batching dimensions (take_along_axis), which are shared
  // with the indices' and the result's; the indices' other batch dimensions are shared with the
  // result's.
  void gather(const Op& op, Rule& r) const {
    const GatherDimensions& g = p_.gather(op);
    const auto operands = p_.operands(op);
    const auto table = p_.types().dimensions(p_.value_type(operands[0]));
    const auto indices = p_.types().dimensions(p_.value_type(operands[1]));
    const auto result = p_.types().dimensions(p_.result_types(op)[0]);
    const auto offset_dims = p_.ints(g.offset_dims);
    const auto table_batching = p_.ints(g.operand_batching_dims);
    const auto index_batching = p_.ints(g.start_indices_batching_dims);
    if (table_batching.size() != index_batching.size() || !all_below(table_batching, table.size()) ||
        !all_below(index_batching, indices.size()) || !all_below(offset_dims, result.size())) {
      r.fallback = true;
      return;
    }
    std::vector<bool> table_shared(table.size(), false);
    // The table's dimensions that are neither collapsed nor batching give the result's offset
    // dimensions, in order; one whose slice is whole keeps its sharding (a hidden-sharded
    // embedding gives hidden-sharded activations).
    const auto collapsed_dims = p_.ints(g.collapsed_slice_dims);
    const auto slice_sizes = p_.ints(g.slice_sizes);
    std::vector<std::uint32_t> window_dims;
    for (std::uint32_t t = 0; t < table.size(); ++t) {
      if (std::find(collapsed_dims.begin(), collapsed_dims.end(), t) == collapsed_dims.end() &&
          std::find(table_batching.begin(), table_batching.end(), t) == table_batching.end()) {
        window_dims.push_back(t);
      }
    }
    std::uint32_t index_dim = 0;
    std::size_t offset_index = 0;
    for (std::uint32_t d = 0; d < result.size(); ++d) {
      Factor f;
      f.size = result[d];
      f.results = {{0, d}};
      if (std::find(offset_dims.begin(), offset_dims.end(), d) != offset_dims.end()) {
        const std::size_t k = offset_index++;
        f.replicate = true;
        if (k < window_dims.size() && window_dims.size() == offset_dims.size()) {
          const std::uint32_t t = window_dims[k];
          if (t < slice_sizes.size() && slice_sizes[t] == table[t] && table[t] == result[d]) {
            f.replicate = false;
            f.operands = {{0, t}};
            table_shared[t] = true;
          }
        }
      } else {
        if (static_cast<std::int64_t>(index_dim) == g.index_vector_dim) {
          ++index_dim;
        }
        if (index_dim < indices.size() && indices[index_dim] == result[d]) {
          f.operands = {{1, index_dim}};
          const auto k = std::find(index_batching.begin(), index_batching.end(), index_dim);
          if (k != index_batching.end()) {
            const auto t = static_cast<std::uint32_t>(
                table_batching[static_cast<std::size_t>(k - index_batching.begin())]);
            if (t < table.size() && table[t] == result[d]) {
              f.operands.emplace_back(0, t);
              table_shared[t] = true;
            } else {
              f.replicate = true;
            }
          }
        } else {
          f.replicate = true;
        }
        ++index_dim;
      }
      r.factors.push_back(std::move(f));
    }
    // A dimension the indices pick one row of (collapsed) may stay sharded: each device gathers
    // the rows it holds and zeros for the others, and the results are summed (a vocabulary-
    // sharded embedding or log-probability lookup, as GSPMD partitions it).
    const auto collapsed = p_.ints(g.collapsed_slice_dims);
    const auto indexed = p_.ints(g.start_index_map);
    bool masked = false;
    for (std::uint32_t d = 0; d < table.size(); ++d) {
      if (!table_shared[d]) {
        Factor f;
        f.size = table[d];
        f.operands = {{0, d}};
        f.reduction = std::find(collapsed.begin(), collapsed.end(), d) != collapsed.end() &&
                      std::find(indexed.begin(), indexed.end(), d) != indexed.end();
        f.replicate = !f.reduction;
        masked = masked || f.reduction;
        r.factors.push_back(std::move(f));
      }
    }
    if (masked) {
      r.reduction = ReductionKind::kSum;
    }
    for (std::uint32_t d = 0; d < indices.size(); ++d) {
      if (static_cast<std::int64_t>(d) == g.index_vector_dim) {
        Factor f;
        f.size = indices[d];
        f.replicate = true;
        f.operands = {{1, d}};
        r.factors.push_back(std::move(f));
      }
    }
  }

  // Scatter: the target and result whole but for their batching dimensions, shared with the
  // indices' and updates'; with an additive body, the updates' other scatter dimensions and the
  // indices' matching batch dimensions are a reduction factor (each device adds its updates: the
  // result is a partial sum, as an embedding's gradient is).
  void scatter(const Op& op, Rule& r) const {
    const ScatterDimensions& s = p_.scatter(op);
    const auto operands = p_.operands(op);
    const std::size_t inputs = (operands.size() - 1) / 2;
    const auto target = p_.types().dimensions(p_.value_type(operands[0]));
    const auto indices = p_.types().dimensions(p_.value_type(operands[inputs]));
    const auto updates = p_.types().dimensions(p_.value_type(operands[inputs + 1]));
    const auto window = p_.ints(s.update_window_dims);
    const auto target_batching = p_.ints(s.input_batching_dims);
    const auto index_batching = p_.ints(s.scatter_indices_batching_dims);
    if (target_batching.size() != index_batching.size() || !all_below(target_batching, target.size()) ||
        !all_below(index_batching, indices.size())) {
      r.fallback = true;
      return;
    }
    const bool additive = s.body == OpKind::kAdd && inputs == 1;
    const auto index_operand = static_cast<std::uint32_t>(inputs);
    const auto update_operand = static_cast<std::uint32_t>(inputs + 1);
    std::vector<bool> target_shared(target.size(), false);
    std::uint32_t index_dim = 0;
    for (std::uint32_t d = 0; d < updates.size(); ++d) {
      Factor f;
      f.size = updates[d];
      f.operands = {{update_operand, d}};
      if (std::find(window.begin(), window.end(), d) != window.end()) {
        f.replicate = true;
      } else {
        if (static_cast<std::int64_t>(index_dim) == s.index_vector_dim) {
          ++index_dim;
        }
        const auto k = std::find(index_batching.begin(), index_batching.end(), index_dim);
        if (index_dim < indices.size() && indices[index_dim] == updates[d] && k != index_batching.end()) {
          const auto t = static_cast<std::uint32_t>(
              target_batching[static_cast<std::size_t>(k - index_batching.begin())]);
          f.operands.emplace_back(index_operand, index_dim);
          if (t < target.size() && target[t] == updates[d] && inputs == 1) {
            f.operands.emplace_back(0, t);
            f.results = {{0, t}};
            target_shared[t] = true;
          } else {
            f.replicate = true;
          }
        } else if (additive && index_dim < indices.size() && indices[index_dim] == updates[d]) {
          f.operands.emplace_back(index_operand, index_dim);
          f.reduction = true;
        } else {
          f.replicate = true;
        }
        ++index_dim;
      }
      r.factors.push_back(std::move(f));
    }
    // A dimension the indices pick one row of (inserted) may stay sharded: each device writes the
    // updates that land in the rows it holds.
    const auto inserted = p_.ints(s.inserted_window_dims);
    const auto indexed = p_.ints(s.scatter_dims_to_operand_dims);
    for (std::uint32_t d = 0; d < target.size(); ++d) {
      if (target_shared[d]) {
        continue;
      }
      Factor f;
      f.size = target[d];
      f.replicate = !(std::find(inserted.begin(), inserted.end(), d) != inserted.end() &&
                      std::find(indexed.begin(), indexed.end(), d) != indexed.end());
      for (std::uint32_t i = 0; i < inputs; ++i) {
        f.operands.emplace_back(i, d);
      }
      for (std::uint32_t k = 0; k < inputs; ++k) {
        f.results.emplace_back(k, d);
      }
      r.factors.push_back(std::move(f));
    }
    for (std::uint32_t d = 0; d < indices.size(); ++d) {
      if (static_cast<std::int64_t>(d) == s.index_vector_dim) {
        Factor f;
        f.size = indices[d];
        f.replicate = true;
        f.operands = {{index_operand, d}};
        r.factors.push_back(std::move(f));
      }
    }
    r.reduction = additive ? ReductionKind::kSum : ReductionKind::kNone;
  }

  const Program& p_;
};

// ---------------------------------------------------------------------------------------------
// The partitioner.

struct Decision {
  std::vector<Sh> operands;  // what each operand must be resharded to
  std::vector<Sh> results;
  bool fallback = false;
};

class Partitioner {
 public:
  Partitioner(const Program& from, SpmdReport* report)
      : from_(from),
        devices_(static_cast<std::int64_t>(from.num_partitions())),
        parser_(from, devices_),
        rules_(from),
        to_(ProgramBuilder::copying_tables(from)),
        report_(report) {}

  std::shared_ptr<const Program> run() {
    if (from_.num_replicas() != 1) {
      unsupported(from_, from_.source_begin(),
                  fmt::format("a pre-partitioning program with {} replicas (only partitions are partitioned)",
                              from_.num_replicas()));
    }
    const FunctionId entry = from_.entry_function();
    if (entry == kNoId || from_.function(entry).body == kNoId ||
        from_.blocks(from_.region(from_.function(entry).body)).size() != 1) {
      unsupported(from_, from_.source_begin(), "a program without an entry function of one block");
    }
    entry_block_ = from_.blocks(from_.region(from_.function(entry).body)).front();
    check_device_orders();
    collect_shardings(entry);
    build_atoms();
    if (report_ != nullptr) {
      report_->annotated_values = parsed_args_.size() + parsed_results_.size() + parsed_ops_.size();
    }
    // Pass 1: shardings forward; pass 2: producers of replicated values take their users' needs.
    find_users();
    discovering_ = true;  // partial sums pass through every linear op, to find who wants them sharded
    forward();
    backward();
    discovering_ = false;
    forward();
    backward();  // whole producers of what the reduced partial sums now need
    forward();
    // Pass 3: the same forward pass with those decisions, building the per-device program.
    for (FunctionId id = 0; id < from_.functions().size(); ++id) {
      const Function& f = from_.function(id);
      if (id == entry) {
        std::vector<TypeId> args;
        for (std::uint32_t i = 0; i < f.argument_types.count; ++i) {
          args.push_back(local_type(from_.argument_types(f)[i], argument_sharding(i)));
        }
        std::vector<TypeId> results;
        for (std::uint32_t i = 0; i < f.result_types.count; ++i) {
          results.push_back(local_type(from_.result_types(f)[i], result_sharding(i)));
        }
        entry_args_ = args;
        to_.add_function(f.name, f.is_public, f.offset, args, results, from_.argument_attributes(f),
                         from_.attributes(f));
      } else {
        to_.add_function(f.name, f.is_public, f.offset, from_.argument_types(f), from_.result_types(f),
                         from_.argument_attributes(f), from_.attributes(f));
      }
    }
    for (FunctionId id = 0; id < from_.functions().size(); ++id) {
      const Function& f = from_.function(id);
      if (f.body == kNoId) {
        continue;
      }
      if (id == entry) {
        to_.set_function_body(id, build_entry(id));
      } else {
        std::unordered_map<std::uint64_t, ValueRef> values;
        to_.set_function_body(id, copy_region(f.body, kNoId, id, values, nullptr));
      }
    }
    to_.set_form(ProgramForm::kPartitioned);
    if (report_ != nullptr) {
      report_->devices = static_cast<std::uint32_t>(devices_);
    }
    return to_.finish();
  }

 private:
  // ---- shardings of the annotations

  // sdy.mesh @m = <["x"=2, "y"=2], device_ids=[0, 2, 1, 3]>: devices in another order than the
  // iota are refused (the atoms assume device d's coordinates are d's digits).
  void check_device_orders() const {
    for (OpId id = 0; id < from_.op_count(); ++id) {
      const Op& op = from_.op(id);
      if (op.kind != OpKind::kMesh) {
        continue;
      }
      const std::string_view text = from_.attribute(op, "mesh").value_or("");
      const std::size_t at = text.find("device_ids");
      if (at == std::string_view::npos) {
        continue;
      }
      const std::size_t open = text.find('[', at);
      const std::size_t close = text.find(']', at);
      const std::vector<std::int64_t> ids =
          integers_of(open == std::string_view::npos || close == std::string_view::npos || close < open
                          ? std::string_view()
                          : text.substr(open, close - open));
      for (std::size_t k = 0; k < ids.size(); ++k) {
        if (ids[k] != static_cast<std::int64_t>(k) && ids.size() > 1) {
          unsupported(from_, op.offset,
                      "a mesh whose device_ids are not in iota order (only the iota order is supported)");
        }
      }
    }
  }

  std::size_t rank(TypeId t) const { return from_.types().is_tensor(t) ? from_.types().rank(t) : 0; }

  void collect_shardings(FunctionId entry) {
    const Function& f = from_.function(entry);
    for (const FunctionAttribute& a : from_.argument_attributes(f)) {
      const auto types = a.is_result ? from_.result_types(f) : from_.argument_types(f);
      if (a.index >= types.size()) {
        continue;
      }
      if (auto s = parser_.parse(a.attribute, rank(types[a.index]), a.attribute.offset)) {
        (a.is_result ? parsed_results_ : parsed_args_)[a.index] = std::move(*s);
      }
    }
    collect_op_shardings(entry_block_);
  }

  // Shardings on ops: the entry block's and, inside partitioned while loops, their bodies'.
  void collect_op_shardings(BlockId block) {
    for (const OpId id : from_.ops(from_.block(block))) {
      const Op& op = from_.op(id);
      if (partitionable_while(op)) {
        collect_op_shardings(region_block(op, 0));
        collect_op_shardings(region_block(op, 1));
      }
      for (const Attribute& a : from_.attributes(op)) {
        const std::string_view name = from_.string(a.name);
        if (name != "mhlo.sharding" && name != "sdy.sharding") {
          continue;
        }
        const auto results = from_.result_types(op);
        std::vector<std::optional<ParsedSharding>> per_result;
        for (std::size_t k = 0; k < results.size(); ++k) {
          per_result.push_back(
              parser_.parse_result(name, from_.attribute_text(a), k, rank(results[k]), a.offset));
        }
        parsed_ops_[id] = std::move(per_result);
      }
      if ((op.kind == OpKind::kShardingConstraint || op.kind == OpKind::kReshard) && op.results.count == 1) {
        // sdy.sharding_constraint %x <@mesh, [...]>: the sharding is its attribute "sharding".
        if (const auto text = from_.attribute(op, "sharding")) {
          Attribute a;
          a.name = kNoId;
          std::vector<std::optional<ParsedSharding>> per_result;
          per_result.push_back(
              parser_.parse_result("sdy.sharding", *text, 0, rank(from_.result_types(op)[0]), op.offset));
          parsed_ops_[id] = std::move(per_result);
        }
      }
    }
  }

  void add_pieces(const ParsedSharding& s, std::vector<std::int64_t>& bounds) {
    for (const auto& dim : s.dims) {
      for (const Piece& piece : dim) {
        bounds.push_back(piece.stride);
        bounds.push_back(piece.stride * piece.size);
      }
    }
  }

  void build_atoms() {
    std::vector<std::int64_t> bounds{1, devices_};
    for (const auto& [_, s] : parsed_args_) {
      add_pieces(s, bounds);
    }
    for (const auto& [_, s] : parsed_results_) {
      add_pieces(s, bounds);
    }
    for (const auto& [_, list] : parsed_ops_) {
      for (const auto& s : list) {
        if (s) {
          add_pieces(*s, bounds);
        }
      }
    }
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    for (std::size_t k = 0; k + 1 < bounds.size(); ++k) {
      if (bounds[k + 1] % bounds[k] != 0) {
        unsupported(from_, from_.source_begin(),
                    fmt::format("the shardings' device axes do not nest (digits at strides {} and {})",
                                bounds[k], bounds[k + 1]));
      }
      atom_stride_.push_back(bounds[k]);
      atom_size_.push_back(bounds[k + 1] / bounds[k]);
    }
    if (atom_stride_.size() > 32) {
      unsupported(from_, from_.source_begin(), "more than 32 device axes");
    }
  }

  Mask mask_of(const Piece& piece) const {
    Mask m = 0;
    for (std::size_t k = 0; k < atom_stride_.size(); ++k) {
      if (atom_stride_[k] >= piece.stride && atom_stride_[k] < piece.stride * piece.size) {
        m |= Mask{1} << k;
      }
    }
    return m;
  }

  Sh to_sh(const ParsedSharding& s) const {
    Sh r;
    for (const auto& dim : s.dims) {
      Mask m = 0;
      for (const Piece& piece : dim) {
        m |= mask_of(piece);
      }
      r.dims.push_back(m);
    }
    return r;
  }

  Sh argument_sharding(std::uint32_t i) const {
    const TypeId t = from_.argument_types(from_.function(from_.entry_function()))[i];
    const auto it = parsed_args_.find(i);
    return it == parsed_args_.end() ? replicated(rank(t)) : to_sh(it->second);
  }
  // A result without an annotation keeps the sharding it has (JAX leaves such results to
  // propagation); a partial one is reduced first.
  Sh result_sharding(std::uint32_t i) const {
    if (const auto it = parsed_results_.find(i); it != parsed_results_.end()) {
      return to_sh(it->second);
    }
    const auto ops = from_.ops(from_.block(entry_block_));
    const TypeId t = from_.result_types(from_.function(from_.entry_function()))[i];
    if (ops.empty() || from_.op(ops.back()).kind != OpKind::kReturn ||
        i >= from_.operands(from_.op(ops.back())).size()) {
      return replicated(rank(t));
    }
    Sh s = sharding_of(from_.operands(from_.op(ops.back()))[i]);
    s.partial = 0;
    s.reduction = ReductionKind::kNone;
    return s;
  }

  std::int64_t product(Mask m) const {
    std::int64_t p = 1;
    for (std::size_t k = 0; k < atom_size_.size(); ++k) {
      if ((m >> k & 1U) != 0) {
        p *= atom_size_[k];
      }
    }
    return p;
  }

  // ---- decisions

  std::uint64_t global_bytes(ValueRef v) const {
    return from_.types().byte_size(from_.value_type(v)).value_or(0);
  }

  Decision decide(OpId id, const std::vector<Sh>& given, const std::vector<Sh>* fixed) const {
    const Op& op = from_.op(id);
    const auto operands = from_.operands(op);
    const auto results = from_.result_types(op);
    if (op.kind == OpKind::kOptimizationBarrier && fixed == nullptr) {
      // Each value passes through as it is (partial sums reduced first): remat keeps shards.
      Decision same;
      for (std::size_t i = 0; i < operands.size(); ++i) {
        Sh s = given[i];
        s.partial = 0;
        s.reduction = ReductionKind::kNone;
        same.operands.push_back(s);
        same.results.push_back(std::move(s));
      }
      return same;
    }
    const Rule rule = rules_.rule(id);
    if (rule.fallback) {
      Decision whole;
      whole.fallback = true;
      for (const ValueRef v : operands) {
        whole.operands.push_back(replicated(rank(from_.value_type(v))));
      }
      for (const TypeId t : results) {
        whole.results.push_back(replicated(rank(t)));
      }
      return whole;
    }
    // A partial operand that a later op wants sharded (a gradient the optimizer updates shard by
    // shard) is reduce-scattered onto that sharding where it is first used, as GSPMD partitions a
    // dot whose output sharding propagation chose; one that several ops use is reduced there too
    // (once); otherwise it may pass through linear ops to the op that reduces it.
    std::vector<Sh> in = given;
    std::vector<bool> resolve(operands.size(), false);
    for (std::uint32_t i = 0; i < operands.size(); ++i) {
      if (in[i].partial == 0) {
        continue;
      }
      const auto users = users_.find(operands[i].key());
      const auto preferred = preferred_.find(operands[i].key());
      if (preferred != preferred_.end() && preferred->second.size() == in[i].dims.size()) {
        in[i].dims = preferred->second;
        resolve[i] = true;
      } else if (!discovering_ && users != users_.end() && users->second.size() > 1) {
        resolve[i] = true;
      }
    }
    // Partial operands that pass through.
    Mask pass = 0;
    ReductionKind pass_kind = ReductionKind::kNone;
    std::vector<bool> passes(operands.size(), false);
    {
      std::vector<std::uint32_t> partial;
      for (std::uint32_t i = 0; i < operands.size(); ++i) {
        if (in[i].partial != 0) {
          partial.push_back(i);
        }
      }
      bool ok = !partial.empty() && fixed == nullptr;
      for (const std::uint32_t i : partial) {
        ok = ok && !resolve[i] && in[i].partial == in[partial[0]].partial &&
             in[i].reduction == ReductionKind::kSum;
      }
      switch (rule.linearity) {
        case Linearity::kNone:
          ok = false;
          break;
        case Linearity::kUnary:
          ok = ok && partial.size() == 1 && partial[0] == 0;
          break;
        case Linearity::kSum:
          ok = ok && partial.size() == operands.size();
          break;
        case Linearity::kProduct:
          ok = ok && partial.size() == 1;
          break;
        case Linearity::kDividend:
          ok = ok && partial.size() == 1 && partial[0] == 0;
          break;
        case Linearity::kSelect:
          ok = ok && partial.size() == 2 && partial[0] == 1 && partial[1] == 2;
          break;
      }
      if (ok && rule.reduction != ReductionKind::kNone && rule.reduction != ReductionKind::kSum) {
        ok = false;
      }
      if (ok) {
        pass = in[partial[0]].partial;
        pass_kind = ReductionKind::kSum;
        for (const std::uint32_t i : partial) {
          passes[i] = true;
        }
      }
    }
    // Factor atoms when operands claim them in `order`: each factor takes the atoms of the first
    // operand that shards it, less those another factor took.
    auto assign = [&](const std::vector<std::uint32_t>& order) {
      std::vector<Mask> atoms(rule.factors.size(), 0);
      std::vector<bool> assigned(rule.factors.size(), false);
      Mask used = pass;
      for (const std::uint32_t i : order) {
        for (std::size_t f = 0; f < rule.factors.size(); ++f) {
          const Factor& factor = rule.factors[f];
          if (assigned[f] || factor.replicate) {
            continue;
          }
          for (const auto& [operand, dim] : factor.operands) {
            if (operand != i || dim >= in[i].dims.size()) {
              continue;
            }
            Mask m = in[i].dims[dim] & ~used;
            if (m == 0) {
              continue;
            }
            if (factor.size % product(m) != 0) {
              m = 0;
            }
            atoms[f] = m;
            used |= m;
            assigned[f] = true;
            break;
          }
        }
      }
      return atoms;
    };
    auto build = [&](const std::vector<Mask>& atoms) {
      Decision d;
      for (std::uint32_t i = 0; i < operands.size(); ++i) {
        Sh s = replicated(rank(from_.value_type(operands[i])));
        if (passes[i]) {
          s.partial = pass;
          s.reduction = pass_kind;
        }
        d.operands.push_back(std::move(s));
      }
      for (const TypeId t : results) {
        d.results.push_back(replicated(rank(t)));
      }
      Mask reduced = 0;
      for (std::size_t f = 0; f < rule.factors.size(); ++f) {
        const Factor& factor = rule.factors[f];
        for (const auto& [operand, dim] : factor.operands) {
          if (dim < d.operands[operand].dims.size()) {
            d.operands[operand].dims[dim] = atoms[f];
          }
        }
        for (const auto& [k, dim] : factor.results) {
          if (dim < d.results[k].dims.size()) {
            d.results[k].dims[dim] = atoms[f];
          }
        }
        if (factor.reduction) {
          reduced |= atoms[f];
        }
      }
      if ((reduced | pass) != 0) {
        for (Sh& r : d.results) {
          r.partial = reduced | pass;
          r.reduction = reduced != 0 ? rule.reduction : pass_kind;
        }
      }
      return d;
    };
    if (fixed != nullptr) {
      std::vector<Mask> atoms(rule.factors.size(), 0);
      Mask used = pass;
      for (std::size_t f = 0; f < rule.factors.size(); ++f) {
        const Factor& factor = rule.factors[f];
        if (!factor.results.empty() && !factor.replicate) {
          const auto [k, dim] = factor.results.front();
          if (k < fixed->size() && dim < (*fixed)[k].dims.size()) {
            atoms[f] = (*fixed)[k].dims[dim] & ~used;
            if (factor.size % product(atoms[f]) != 0) {
              atoms[f] = 0;
            }
            used |= atoms[f];
          }
        }
      }
      return build(atoms);
    }
    // Candidates: operands claim factors largest first, or one operand ahead of the others; the
    // one that moves the fewest bytes wins (earlier candidates on ties), as GSPMD weighs the
    // resharding each way of partitioning a dot would need.
    std::vector<std::uint32_t> by_size(operands.size());
    std::iota(by_size.begin(), by_size.end(), 0);
    std::stable_sort(by_size.begin(), by_size.end(), [&](std::uint32_t a, std::uint32_t b) {
      return global_bytes(operands[a]) > global_bytes(operands[b]);
    });
    // A contraction keeps the operand shardings its result can carry before those that leave it
    // partial (GSPMD's propagation gives a dot the sharding of its batch and free dimensions, and
    // the partitioner then reshards the other operand to it); among equals, bytes decide.
    const bool contraction = op_category(op.kind) == OpCategory::kContraction;
    auto rank_of_decision = [&](const Decision& d) {
      const int partial = contraction ? std::popcount(d.results.empty() ? Mask{0} : d.results[0].partial) : 0;
      return std::pair{partial, cost(id, in, d)};
    };
    Decision best = build(assign(by_size));
    if (operands.size() > 1) {
      auto best_rank = rank_of_decision(best);
      // One operand ahead of the others, for the first few (largest) operands: a concatenation of
      // hundreds of operands would otherwise cost a cubic number of steps.
      for (std::size_t first = 1; first < std::min<std::size_t>(by_size.size(), 4); ++first) {
        std::vector<std::uint32_t> order = by_size;
        std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(first),
                    order.begin() + static_cast<std::ptrdiff_t>(first) + 1);
        Decision candidate = build(assign(order));
        const auto r = rank_of_decision(candidate);
        if (r < best_rank) {
          best_rank = r;
          best = std::move(candidate);
        }
      }
    }
    return best;
  }

  // Bytes a decision moves: each operand's resharding (a gathered result's size; twice the size
  // for an all-reduce) and the size of a partial result, which must be reduced later.
  double cost(OpId id, const std::vector<Sh>& in, const Decision& d) const {
    const Op& op = from_.op(id);
    const auto operands = from_.operands(op);
    double bytes = 0;
    for (std::size_t i = 0; i < operands.size(); ++i) {
      const Sh& have = in[i];
      const Sh& want = d.operands[i];
      if (planned_.contains(std::make_tuple(op.block, operands[i].key(), want.dims, want.partial))) {
        continue;  // an earlier op reshards this value the same way: reused, as XLA's CSE does
      }
      const auto size = static_cast<double>(global_bytes(operands[i]));
      Mask lost = 0;
      for (std::size_t k = 0; k < have.dims.size() && k < want.dims.size(); ++k) {
        lost |= have.dims[k] & ~want.dims[k];
      }
      Mask want_dims = 0;
      for (const Mask m : want.dims) {
        want_dims |= m;
      }
      if (lost != 0) {
        bytes += size / static_cast<double>(product(want_dims));
      }
      if ((have.partial & ~want.partial) != 0) {
        bytes += 2 * size / static_cast<double>(product(want_dims));
      }
    }
    const auto results = from_.result_types(op);
    for (std::size_t k = 0; k < results.size(); ++k) {
      if (d.results[k].partial != 0) {
        Mask dims = 0;
        for (const Mask m : d.results[k].dims) {
          dims |= m;
        }
        bytes += static_cast<double>(from_.types().byte_size(results[k]).value_or(0)) /
                 static_cast<double>(product(dims));
      }
    }
    return bytes;
  }

  std::vector<Sh> operand_shardings(OpId id) const {
    std::vector<Sh> in;
    for (const ValueRef v : from_.operands(from_.op(id))) {
      in.push_back(sharding_of(v));
    }
    return in;
  }

  Sh sharding_of(ValueRef v) const {
    if (const auto it = shardings_.find(v.key()); it != shardings_.end()) {
      return it->second;
    }
    return replicated(rank(from_.value_type(v)));
  }

  // An op's own sharding annotation (mhlo.sharding on a custom_call @Sharding, sdy.sharding on an
  // op, an sdy.sharding_constraint).
  std::optional<std::vector<Sh>> annotated(OpId id) const {
    const auto it = parsed_ops_.find(id);
    if (it == parsed_ops_.end()) {
      return std::nullopt;
    }
    std::vector<Sh> out;
    const auto results = from_.result_types(from_.op(id));
    for (std::size_t k = 0; k < results.size(); ++k) {
      out.push_back(k < it->second.size() && it->second[k] ? to_sh(*it->second[k])
                                                           : replicated(rank(results[k])));
    }
    return out;
  }

  // A sharding annotation on a value: one operand and one result of the same type (anything else
  // spelled so is an ordinary op, run whole).
  bool is_identity(const Op& op) const {
    const bool annotation = op.kind == OpKind::kShardingConstraint || op.kind == OpKind::kReshard ||
                            (op.kind == OpKind::kCustomCall && from_.has_payload(op) &&
                             from_.string(from_.custom_call(op).target) == "Sharding");
    return annotation && op.operands.count == 1 && op.results.count == 1 &&
           from_.value_type(from_.operands(op)[0]) == from_.result_types(op)[0];
  }

  // Every value's sharding and every op's decision, in program order.
  void forward() {
    shardings_.clear();
    planned_.clear();
    const Block& block = from_.block(entry_block_);
    for (std::uint32_t i = 0; i < block.arguments.count; ++i) {
      shardings_[ValueRef::block_argument(entry_block_, i).key()] = argument_sharding(i);
    }
    forward_block(entry_block_);
  }

  void forward_block(BlockId block) {
    for (const OpId id : from_.ops(from_.block(block))) {
      const Op& op = from_.op(id);
      if (op.kind == OpKind::kReturn) {
        continue;
      }
      if (partitionable_while(op)) {
        forward_while(id);
        continue;
      }
      const std::vector<Sh> in = operand_shardings(id);
      Decision d;
      if (is_identity(op)) {
        const auto a = annotated(id);
        d.operands = {a ? (*a)[0] : replicated(rank(from_.result_types(op)[0]))};
        d.results = d.operands;
      } else {
        const auto a = annotated(id);
        const auto hint = hints_.find(id);
        const std::vector<Sh>* fixed = a ? &*a : hint != hints_.end() ? &hint->second : nullptr;
        d = decide(id, in, fixed);
      }
      for (std::uint32_t k = 0; k < d.results.size(); ++k) {
        shardings_[ValueRef::op_result(id, k).key()] = d.results[k];
      }
      const auto operands = from_.operands(op);
      for (std::size_t i = 0; i < operands.size() && i < d.operands.size(); ++i) {
        if (!(sharding_of(operands[i]) == d.operands[i])) {
          planned_.insert(
              std::make_tuple(op.block, operands[i].key(), d.operands[i].dims, d.operands[i].partial));
        }
      }
      decisions_[id] = std::move(d);
    }
  }

  // A while loop whose condition and body are one block each is partitioned inside: each
  // loop-carried value keeps one sharding across iterations — its initial value's, or, for an
  // initial value that is whole (an accumulator's zeros), the sharding the body gives it.
  bool partitionable_while(const Op& op) const {
    if (op.kind != OpKind::kWhile || op.regions.count != 2 || op.results.count != op.operands.count) {
      return false;
    }
    for (const RegionId r : from_.regions(op)) {
      const auto blocks = from_.blocks(from_.region(r));
      if (blocks.size() != 1 || from_.block(blocks.front()).arguments.count != op.operands.count) {
        return false;
      }
    }
    const auto body = from_.ops(from_.block(from_.blocks(from_.region(from_.regions(op)[1])).front()));
    return !body.empty() && from_.op(body.back()).kind == OpKind::kReturn &&
           from_.op(body.back()).operands.count == op.operands.count;
  }

  BlockId region_block(const Op& op, std::size_t index) const {
    return from_.blocks(from_.region(from_.regions(op)[index])).front();
  }

  void forward_while(OpId id) {
    const Op& op = from_.op(id);
    std::vector<Sh> carried = operand_shardings(id);
    for (Sh& s : carried) {
      s.partial = 0;
      s.reduction = ReductionKind::kNone;
    }
    const BlockId cond = region_block(op, 0);
    const BlockId body = region_block(op, 1);
    // A slot only ever changes from whole to sharded, so this ends, and the last pass ran the
    // blocks with the final shardings.
    for (std::size_t attempt = 0; attempt <= carried.size(); ++attempt) {
      for (const BlockId b : {cond, body}) {
        for (std::uint32_t i = 0; i < from_.block(b).arguments.count && i < carried.size(); ++i) {
          shardings_[ValueRef::block_argument(b, i).key()] = carried[i];
        }
        forward_block(b);
      }
      const auto body_ops = from_.ops(from_.block(body));
      if (body_ops.empty() || from_.op(body_ops.back()).kind != OpKind::kReturn) {
        break;
      }
      const auto returned = from_.operands(from_.op(body_ops.back()));
      bool changed = false;
      for (std::size_t i = 0; i < carried.size() && i < returned.size(); ++i) {
        const Sh r = sharding_of(returned[i]);
        Mask dims = 0;
        for (const Mask m : r.dims) {
          dims |= m;
        }
        if (carried[i].atoms() == 0 && dims != 0 && r.dims.size() == carried[i].dims.size()) {
          carried[i].dims = r.dims;
          changed = true;
        }
      }
      if (!changed) {
        break;
      }
    }
    Decision d;
    d.operands = carried;
    d.results = carried;
    for (std::uint32_t k = 0; k < d.results.size(); ++k) {
      shardings_[ValueRef::op_result(id, k).key()] = d.results[k];
    }
    decisions_[id] = std::move(d);
  }

  // An op whose operands are all whole and whose single result is whole (a constant, an
  // iota, a broadcast of a scalar) takes the sharding its first sharded user needs, so that it is
  // built per device; visited last-to-first so that chains of such ops follow.
  void find_users() { find_users(entry_block_); }

  void find_users(BlockId block) {
    for (const OpId id : from_.ops(from_.block(block))) {
      const Op& op = from_.op(id);
      const auto operands = from_.operands(op);
      for (std::uint32_t i = 0; i < operands.size(); ++i) {
        users_[operands[i].key()].emplace_back(id, i);
      }
      if (partitionable_while(op)) {
        find_users(region_block(op, 0));
        find_users(region_block(op, 1));
      }
    }
  }

  void backward() { backward(entry_block_); }

  void backward(BlockId block) {
    auto& users = users_;
    const auto ops = from_.ops(from_.block(block));
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      const OpId id = *it;
      const Op& op = from_.op(id);
      if (partitionable_while(op)) {
        backward(region_block(op, 1));
        backward(region_block(op, 0));
        continue;
      }
      prefer(id);
      produce_as_wanted(id);
      const OpCategory category = op_category(op.kind);
      const bool cheap = category == OpCategory::kElementwise || category == OpCategory::kConstant ||
                         op.kind == OpKind::kBroadcastInDim || op.kind == OpKind::kReshape ||
                         op.kind == OpKind::kTranspose;
      if (!cheap || op.results.count != 1 || annotated(id)) {
        continue;
      }
      const Decision& d = decisions_.at(id);
      if (d.fallback || d.results[0].atoms() != 0) {
        continue;
      }
      bool whole = true;
      for (const ValueRef v : from_.operands(op)) {
        whole = whole && sharding_of(v).atoms() == 0;
      }
      if (!whole) {
        continue;
      }
      std::optional<Sh> want;
      for (const auto& [user, index] : users[ValueRef::op_result(id, 0).key()]) {
        const auto found = decisions_.find(user);
        if (found == decisions_.end()) {
          continue;  // the return
        }
        const Decision& u = found->second;
        if (index < u.operands.size() && u.operands[index].atoms() != 0 && u.operands[index].partial == 0) {
          want = u.operands[index];
          break;
        }
      }
      if (!want) {
        continue;
      }
      const std::vector<Sh> fixed{*want};
      Decision redone = decide(id, operand_shardings(id), &fixed);
      if (redone.fallback) {
        continue;
      }
      hints_[id] = fixed;
      decisions_[id] = std::move(redone);
    }
  }

  // The sharding a partial operand's users want it reduce-scattered to: what an op needs of a
  // partial operand it reduces, or what the user of an elementwise op's partial result wants of
  // that result (a gradient scaled before the optimizer uses it).
  void prefer(OpId id) {
    const Op& op = from_.op(id);
    const auto it = decisions_.find(id);
    if (it == decisions_.end()) {
      return;
    }
    const Decision& d = it->second;
    const auto operands = from_.operands(op);
    for (std::uint32_t i = 0; i < operands.size() && i < d.operands.size(); ++i) {
      const Sh have = sharding_of(operands[i]);
      if (have.partial == 0 || preferred_.contains(operands[i].key())) {
        continue;
      }
      const Sh& want = d.operands[i];
      Mask scattered = 0;
      for (const Mask m : want.dims) {
        scattered |= m;
      }
      if (want.partial == 0 && (scattered & have.partial) != 0) {
        preferred_[operands[i].key()] = want.dims;
      } else if (want.partial != 0 && op.results.count == 1 &&
                 op_category(op.kind) == OpCategory::kElementwise) {
        const auto result = preferred_.find(ValueRef::op_result(id, 0).key());
        if (result != preferred_.end() && result->second.size() == have.dims.size()) {
          preferred_[operands[i].key()] = result->second;
        }
      }
    }
  }

  // An op whose result is a partial sum that its users want reduced onto some sharding may instead
  // produce that sharding whole, resharding its operands to it (GSPMD's propagation gives the op
  // its users' sharding first): a scatter-add into a table sharded by rows writes each device's
  // rows from the gathered updates rather than reduce-scattering a partial table. Taken when it
  // moves less than half the bytes of the reduction it saves: with "fewer" alone, the row-parallel
  // matmuls of tensor parallelism would gather their inputs where XLA reduce-scatters their
  // outputs (docs/validation/spmd.md; the threshold was chosen on those exports).
  void produce_as_wanted(OpId id) {
    const Op& op = from_.op(id);
    const auto found = decisions_.find(id);
    if (found == decisions_.end() || op.results.count != 1 || found->second.fallback ||
        found->second.results[0].partial == 0 || annotated(id) || is_identity(op)) {
      return;
    }
    const auto wanted = preferred_.find(ValueRef::op_result(id, 0).key());
    if (wanted == preferred_.end()) {
      return;
    }
    const std::vector<Sh> in = operand_shardings(id);
    Sh want = replicated(wanted->second.size());
    want.dims = wanted->second;
    const std::vector<Sh> fixed{want};
    Decision alternative = decide(id, in, &fixed);
    if (alternative.fallback || alternative.results[0].partial != 0 || alternative.results[0].atoms() == 0) {
      return;
    }
    // cost() counts the current decision's partial result as the bytes its reduction moves.
    if (2 * cost(id, in, alternative) < cost(id, in, found->second)) {
      hints_[id] = fixed;
      decisions_[id] = std::move(alternative);
    }
  }

  // ---- building the per-device program

  TypeId local_type(TypeId t, const Sh& s) {
    if (!from_.types().is_tensor(t) || s.dims.empty()) {
      return t;
    }
    bool changed = false;
    TypeDescription desc;
    desc.kind = TypeKind::kTensor;
    desc.element = from_.types().element(t);
    desc.quantized = from_.types().quantized(t);
    const auto dims = from_.types().dimensions(t);
    const auto bounds = from_.types().bounds(t);
    for (std::size_t k = 0; k < dims.size(); ++k) {
      std::int64_t d = dims[k];
      std::int64_t bound = k < bounds.size() ? bounds[k] : kNoBound;
      if (k < s.dims.size() && s.dims[k] != 0) {
        // Each device holds a ceil(d / n) slice (XLA pads an uneven split); a dynamic dimension's
        // bound likewise.
        const std::int64_t n = product(s.dims[k]);
        if (d > 0) {
          d = (d + n - 1) / n;
          changed = true;
        }
        if (bound > 0) {
          bound = (bound + n - 1) / n;
          changed = true;
        }
      }
      desc.dimensions.push_back(d);
      if (!bounds.empty()) {
        desc.bounds.push_back(bound);
      }
    }
    if (!changed) {
      return t;
    }
    std::string text = "tensor<";
    for (const std::int64_t d : desc.dimensions) {
      text += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
    }
    text += std::string(element_type_name(desc.element));
    if (!desc.bounds.empty()) {
      text += ", #stablehlo.bounds<";
      for (std::size_t k = 0; k < desc.bounds.size(); ++k) {
        text +=
            (k > 0 ? ", " : "") + (desc.bounds[k] < 0 ? std::string("?") : std::to_string(desc.bounds[k]));
      }
      text += ">";
    }
    text += ">";
    const StringId owned = to_.own(std::move(text));
    return to_.types().intern(desc, to_.program().string(owned));
  }

  // Dense groups of the devices that differ only in the atoms of `m` (flattened ids).
  CollectiveAttributes groups(Mask m, CollectiveKind kind) {
    CollectiveAttributes c;
    c.kind = kind;
    c.has_channel = true;
    c.channel_id = ++channel_;
    c.channel_type = 1;
    c.use_global_device_ids = true;
    c.groups_form = ReplicaGroupsForm::kDense;
    if (const auto cached = group_tables_.find(m); cached != group_tables_.end()) {
      std::tie(c.groups, c.group_count, c.group_size) = cached->second;  // one table per set of atoms
      return c;
    }
    std::map<std::int64_t, std::vector<std::int64_t>> by_key;
    for (std::int64_t device = 0; device < devices_; ++device) {
      std::int64_t key = device;
      for (std::size_t k = 0; k < atom_stride_.size(); ++k) {
        if ((m >> k & 1U) != 0) {
          key -= ((device / atom_stride_[k]) % atom_size_[k]) * atom_stride_[k];
        }
      }
      by_key[key].push_back(device);
    }
    std::vector<std::int64_t> flat;
    for (const auto& [_, members] : by_key) {
      flat.insert(flat.end(), members.begin(), members.end());
    }
    c.group_count = static_cast<std::uint32_t>(by_key.size());
    c.group_size = static_cast<std::uint32_t>(by_key.begin()->second.size());
    c.groups = to_.add_ints(flat);
    group_tables_[m] = std::make_tuple(c.groups, c.group_count, c.group_size);
    return c;
  }

  ValueRef emit_collective(CollectiveKind kind, std::string_view name, ValueRef operand, TypeId result,
                           Mask m, ReductionKind reduction, std::int64_t dim, std::int64_t concat,
                           std::uint32_t offset, BlockId block, std::vector<OpId>& ops) {
    const OpKind op_kind = kind == CollectiveKind::kAllGather       ? OpKind::kAllGather
                           : kind == CollectiveKind::kAllReduce     ? OpKind::kAllReduce
                           : kind == CollectiveKind::kReduceScatter ? OpKind::kReduceScatter
                                                                    : OpKind::kAllToAll;
    const OpId id = to_.add_op(op_kind, to_.intern(name), block, offset);
    const ValueRef operands[] = {operand};
    const TypeId results[] = {result};
    to_.set_op_contents(id, operands, results, {}, {});
    CollectiveAttributes c = groups(m, kind);
    c.reduction = reduction;
    if (kind == CollectiveKind::kAllGather) {
      c.all_gather_dim = dim;
    } else if (kind == CollectiveKind::kReduceScatter) {
      c.scatter_dimension = dim;
    } else if (kind == CollectiveKind::kAllToAll) {
      c.split_dimension = dim;
      c.concat_dimension = concat;
      c.split_count = product(m);
    }
    to_.set_payload(id, c);
    ops.push_back(id);
    if (report_ != nullptr) {
      const std::string kind_name(collective_kind_name(kind));
      ++report_->collectives[kind_name];
      report_->collective_bytes[kind_name] += to_.program().types().byte_size(result).value_or(0);
      report_->collective_operand_bytes[kind_name] +=
          to_.program().types().byte_size(to_.program().value_type(operand)).value_or(0);
    }
    return ValueRef::op_result(id, 0);
  }

  // `value` (global type `global`, sharded `have`) as `want` needs it.
  ValueRef reshard(ValueRef value, TypeId global, Sh have, const Sh& want, std::uint32_t offset,
                   BlockId block, std::vector<OpId>& ops) {
    if (!from_.types().is_tensor(global) || have == want) {
      return value;
    }
    const auto key = std::make_tuple(block, value.key(), want.dims, want.partial);
    if (const auto it = reshards_.find(key); it != reshards_.end()) {
      return it->second;
    }
    ValueRef v = value;
    const std::size_t r = have.dims.size();
    // Partial sums: reduce-scatter onto a dimension that wants those atoms, all-reduce the rest.
    if (const Mask extra = have.partial & ~want.partial; extra != 0) {
      Mask rest = extra;
      std::optional<std::size_t> best;
      Mask best_atoms = 0;
      for (std::size_t d = 0; d < r; ++d) {
        const Mask s = rest & want.dims[d] & ~have.dims[d];
        if (s != 0 && (best_atoms == 0 || product(s) > product(best_atoms))) {
          best = d;
          best_atoms = s;
        }
      }
      if (best) {
        Sh next = have;
        next.dims[*best] |= best_atoms;
        next.partial &= ~best_atoms;
        v = emit_collective(CollectiveKind::kReduceScatter, "stablehlo.reduce_scatter", v,
                            local_type(global, next), best_atoms, have.reduction,
                            static_cast<std::int64_t>(*best), -1, offset, block, ops);
        have = next;
        rest &= ~best_atoms;
      }
      if (rest != 0) {
        Sh next = have;
        next.partial &= ~rest;
        v = emit_collective(CollectiveKind::kAllReduce, "stablehlo.all_reduce", v, local_type(global, next),
                            rest, have.reduction, -1, -1, offset, block, ops);
        have = next;
      }
      if (have.partial == 0) {
        have.reduction = ReductionKind::kNone;
      }
    }
    // Atoms a dimension loses: to the dimension that gains them (all-to-all), else gathered.
    for (std::size_t d = 0; d < r; ++d) {
      const Mask lose = have.dims[d] & ~want.dims[d];
      if (lose == 0) {
        continue;
      }
      std::optional<std::size_t> target;
      for (std::size_t j = 0; j < r; ++j) {
        if (j != d && (want.dims[j] & ~have.dims[j] & lose) == lose) {
          target = j;
          break;
        }
      }
      Sh next = have;
      next.dims[d] &= ~lose;
      if (target) {
        next.dims[*target] |= lose;
        v = emit_collective(CollectiveKind::kAllToAll, "stablehlo.all_to_all", v, local_type(global, next),
                            lose, ReductionKind::kNone, static_cast<std::int64_t>(*target),
                            static_cast<std::int64_t>(d), offset, block, ops);
      } else {
        v = emit_collective(CollectiveKind::kAllGather, "stablehlo.all_gather", v, local_type(global, next),
                            lose, ReductionKind::kNone, static_cast<std::int64_t>(d), -1, offset, block, ops);
      }
      have = next;
    }
    // Atoms a dimension gains are a local slice of what the device holds: no communication, a
    // slice op (fused into its user, as XLA's dynamic-slice by partition id is).
    bool gains = false;
    for (std::size_t d = 0; d < r; ++d) {
      gains = gains || (want.dims[d] & ~have.dims[d]) != 0;
    }
    if (gains) {
      Sh next = have;
      next.dims = want.dims;
      const OpId id = to_.add_op(OpKind::kSlice, to_.intern("stablehlo.slice"), block, offset);
      const ValueRef operands[] = {v};
      const TypeId results[] = {local_type(global, next)};
      to_.set_op_contents(id, operands, results, {}, {});
      ops.push_back(id);
      v = ValueRef::op_result(id, 0);
    }
    reshards_[key] = v;
    return v;
  }

  RegionId build_entry(FunctionId function) {
    const RegionId region = to_.add_region(kNoId, function);
    const Block& old = from_.block(entry_block_);
    const BlockId block = to_.add_block(region, old.offset, entry_args_);
    const BlockId blocks[] = {block};
    to_.set_region_blocks(region, blocks);
    std::unordered_map<std::uint64_t, ValueRef> values;
    for (std::uint32_t i = 0; i < old.arguments.count; ++i) {
      values[ValueRef::block_argument(entry_block_, i).key()] = ValueRef::block_argument(block, i);
    }
    std::vector<Sh> returns;
    for (std::uint32_t i = 0; i < from_.function(function).result_types.count; ++i) {
      returns.push_back(result_sharding(i));
    }
    build_block(entry_block_, block, function, values, returns);
    return region;
  }

  // Builds the per-device ops of `old_block` into `block`; the operands of its return are
  // resharded to `returns` (left as they are where it has none).
  void build_block(BlockId old_block, BlockId block, FunctionId function,
                   std::unordered_map<std::uint64_t, ValueRef>& values, const std::vector<Sh>& returns) {
    std::vector<OpId> ops;
    const Outer operand_value = [&](ValueRef old_value, const Sh& want, std::uint32_t offset) {
      const auto it = values.find(old_value.key());
      ORRERY_ASSERT(it != values.end(), "partition_spmd: a value used before it is defined");
      return reshard(it->second, from_.value_type(old_value), sharding_of(old_value), want, offset, block,
                     ops);
    };
    for (const OpId id : from_.ops(from_.block(old_block))) {
      const Op& op = from_.op(id);
      const auto operands = from_.operands(op);
      if (op.kind == OpKind::kReturn) {
        std::vector<ValueRef> returned;
        for (std::uint32_t i = 0; i < operands.size(); ++i) {
          Sh want = sharding_of(operands[i]);
          if (i < returns.size()) {
            want = returns[i];
          }
          want.partial = 0;
          want.reduction = ReductionKind::kNone;
          returned.push_back(operand_value(operands[i], want, op.offset));
        }
        const OpId ret = to_.add_op(op.kind, op.name, block, op.offset);
        to_.set_op_contents(ret, returned, {}, {}, from_.attributes(op));
        ops.push_back(ret);
        continue;
      }
      const Decision& d = decisions_.at(id);
      if (is_identity(op)) {
        values[ValueRef::op_result(id, 0).key()] = operand_value(operands[0], d.operands[0], op.offset);
        continue;
      }
      std::vector<ValueRef> new_operands;
      for (std::uint32_t i = 0; i < operands.size(); ++i) {
        new_operands.push_back(operand_value(operands[i], d.operands[i], op.offset));
      }
      if (d.fallback && report_ != nullptr && op_category(op.kind) != OpCategory::kConstant &&
          op_category(op.kind) != OpCategory::kMetadata) {
        ++report_->replicated_ops[std::string(from_.op_name(op))];
      }
      std::vector<TypeId> results;
      for (std::uint32_t k = 0; k < op.results.count; ++k) {
        results.push_back(local_type(from_.result_types(op)[k], d.results[k]));
      }
      const OpId nid = to_.add_op(op.kind, op.name, block, op.offset);
      std::vector<RegionId> regions;
      if (partitionable_while(op)) {
        // The condition and the body, partitioned, on the loop-carried values' shardings.
        for (std::size_t r = 0; r < 2; ++r) {
          const RegionId region = to_.add_region(nid, function);
          const BlockId old_inner = region_block(op, r);
          const BlockId inner = to_.add_block(region, from_.block(old_inner).offset, results);
          const BlockId inner_blocks[] = {inner};
          to_.set_region_blocks(region, inner_blocks);
          for (std::uint32_t i = 0; i < from_.block(old_inner).arguments.count; ++i) {
            values[ValueRef::block_argument(old_inner, i).key()] = ValueRef::block_argument(inner, i);
          }
          build_block(old_inner, inner, function, values, r == 1 ? d.results : std::vector<Sh>{});
          regions.push_back(region);
        }
      } else {
        for (const RegionId r : from_.regions(op)) {
          regions.push_back(copy_region(r, nid, function, values, &operand_value));
        }
      }
      to_.set_op_contents(nid, new_operands, results, regions, from_.attributes(op));
      to_.set_payload_index(nid, op.payload);
      for (std::uint32_t k = 0; k < op.results.count; ++k) {
        values[ValueRef::op_result(id, k).key()] = ValueRef::op_result(nid, k);
      }
      ops.push_back(nid);
    }
    to_.set_block_ops(block, ops);
  }

  // A nested region copied as it is (a reduction's body, a branch of a replicated `if`); values
  // it uses from outside are taken whole (through `outer`, which reshards them; without one, for
  // the functions other than the entry, as they are).
  using Outer = std::function<ValueRef(ValueRef, const Sh&, std::uint32_t)>;
  RegionId copy_region(RegionId old_region, OpId parent, FunctionId function,
                       std::unordered_map<std::uint64_t, ValueRef>& values, const Outer* outer) {
    std::unordered_set<std::uint64_t> inner;  // values defined inside the region
    return copy_region(old_region, parent, function, values, outer, inner);
  }

  RegionId copy_region(RegionId old_region, OpId parent, FunctionId function,
                       std::unordered_map<std::uint64_t, ValueRef>& values, const Outer* outer,
                       std::unordered_set<std::uint64_t>& inner) {
    const RegionId region = to_.add_region(parent, function);
    const std::vector<BlockId> blocks = to_.copy_blocks(from_, old_region, region, values);
    std::size_t index = 0;
    for (const BlockId old_block : from_.blocks(from_.region(old_region))) {
      for (std::uint32_t i = 0; i < from_.block(old_block).arguments.count; ++i) {
        inner.insert(ValueRef::block_argument(old_block, i).key());
      }
      std::vector<OpId> ops;
      for (const OpId id : from_.ops(from_.block(old_block))) {
        const Op& op = from_.op(id);
        const OpId nid = to_.add_op(op.kind, op.name, blocks[index], op.offset);
        std::vector<RegionId> regions;
        for (const RegionId r : from_.regions(op)) {
          regions.push_back(copy_region(r, nid, function, values, outer, inner));
        }
        std::vector<ValueRef> operands;
        for (const ValueRef v : from_.operands(op)) {
          if (outer != nullptr && !inner.contains(v.key())) {
            operands.push_back((*outer)(v, replicated(rank(from_.value_type(v))), op.offset));
          } else {
            const auto it = values.find(v.key());
            ORRERY_ASSERT(it != values.end(), "partition_spmd: a value used before it is defined");
            operands.push_back(it->second);
          }
        }
        to_.set_op_contents(nid, operands, from_.result_types(op), regions, from_.attributes(op));
        to_.set_payload_index(nid, op.payload);
        for (std::uint32_t k = 0; k < op.results.count; ++k) {
          values[ValueRef::op_result(id, k).key()] = ValueRef::op_result(nid, k);
          inner.insert(ValueRef::op_result(id, k).key());
        }
        ops.push_back(nid);
      }
      to_.set_block_ops(blocks[index], ops);
      ++index;
    }
    return region;
  }

  const Program& from_;
  std::int64_t devices_;
  ShardingParser parser_;
  RuleBuilder rules_;
  ProgramBuilder to_;
  SpmdReport* report_;
  BlockId entry_block_ = kNoId;
  std::vector<TypeId> entry_args_;
  std::unordered_map<std::uint32_t, ParsedSharding> parsed_args_;
  std::unordered_map<std::uint32_t, ParsedSharding> parsed_results_;
  std::unordered_map<OpId, std::vector<std::optional<ParsedSharding>>> parsed_ops_;
  std::vector<std::int64_t> atom_stride_;
  std::vector<std::int64_t> atom_size_;
  std::unordered_map<std::uint64_t, Sh> shardings_;
  std::unordered_map<OpId, Decision> decisions_;
  std::unordered_map<OpId, std::vector<Sh>> hints_;
  std::unordered_map<std::uint64_t, std::vector<std::pair<OpId, std::uint32_t>>> users_;
  std::unordered_map<std::uint64_t, std::vector<Mask>> preferred_;
  // Reshards the decisions so far make (block, value, wanted dims, wanted partial atoms): the
  // cost of another op of the block that needs the same one is nothing.
  std::set<std::tuple<BlockId, std::uint64_t, std::vector<Mask>, Mask>> planned_;
  bool discovering_ = false;
  // Reshards already emitted, by block, value and wanted sharding: a value needed the same way
  // twice in a block is resharded once (XLA's CSE).
  std::map<std::tuple<BlockId, std::uint64_t, std::vector<Mask>, Mask>, ValueRef> reshards_;
  std::int64_t channel_ = 0;
  std::unordered_map<Mask, std::tuple<IntRange, std::uint32_t, std::uint32_t>> group_tables_;
};

}  // namespace

std::shared_ptr<const Program> partition_spmd(std::shared_ptr<const Program> program, SpmdReport* report) {
  if (program->form() != ProgramForm::kPrePartitioning || program->num_devices() == 1) {
    return program;
  }
  Partitioner partitioner(*program, report);
  return partitioner.run();
}

}  // namespace orrery::workload
