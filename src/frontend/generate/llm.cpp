// LLM training-program synthesis (llm.h). The writer builds StableHLO text op by op with types
// worked out as it goes, so every op's operand and result types agree by construction; the
// frontend's parser checks them again when the files are read.
#include "frontend/generate/llm.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "util/assert.h"
#include "util/error.h"

namespace orrery::frontend::generate {
namespace {

[[noreturn]] void fail(const std::string& message) {
  throw OrreryError(ErrorCode::kConfig, message);
}

// ---------------------------------------------------------------------------------------------
// Types and values.

using Dims = std::vector<std::uint64_t>;

struct Type {
  Dims dims;
  std::string element = "bf16";  // bf16, f32, i32, i1
};

std::string spell(const Type& type) {
  if (type.dims.empty()) {
    return fmt::format("tensor<{}>", type.element);
  }
  return fmt::format("tensor<{}x{}>", fmt::join(type.dims, "x"), type.element);
}

struct Value {
  std::string name;
  Type type;
};

std::string spell_types(const std::vector<Value>& values) {
  std::vector<std::string> types;
  types.reserve(values.size());
  for (const Value& value : values) {
    types.push_back(spell(value.type));
  }
  return fmt::format("{}", fmt::join(types, ", "));
}

std::string names(const std::vector<Value>& values) {
  std::vector<std::string> out;
  out.reserve(values.size());
  for (const Value& value : values) {
    out.push_back(value.name);
  }
  return fmt::format("{}", fmt::join(out, ", "));
}

std::string groups_attribute(const std::vector<std::vector<std::uint64_t>>& groups) {
  std::vector<std::string> rows;
  rows.reserve(groups.size());
  for (const auto& group : groups) {
    rows.push_back(fmt::format("[{}]", fmt::join(group, ", ")));
  }
  return fmt::format("dense<[{}]> : tensor<{}x{}xi64>", fmt::join(rows, ", "), groups.size(),
                     groups.empty() ? 0 : groups.front().size());
}

// One function body: ops appended in order, SSA names %v<N> unique within the function (nested
// regions take names from the same counter, as MLIR forbids shadowing).
class Body {
 public:
  Value op(const Type& type, const std::string& text) {
    Value value{fmt::format("%v{}", next_++), type};
    out_ += fmt::format("    {} = {}\n", value.name, text);
    return value;
  }
  std::vector<Value> ops(const std::vector<Type>& types, const std::string& text) {
    ORRERY_ASSERT(!types.empty(), "an op with results");
    if (types.size() == 1) {
      return {op(types.front(), text)};
    }
    const std::string base = fmt::format("%v{}", next_++);
    out_ += fmt::format("    {}:{} = {}\n", base, types.size(), text);
    std::vector<Value> values;
    for (std::size_t i = 0; i < types.size(); ++i) {
      values.push_back(Value{fmt::format("{}#{}", base, i), types[i]});
    }
    return values;
  }
  std::string fresh() { return fmt::format("%v{}", next_++); }
  void line(const std::string& text) { out_ += fmt::format("    {}\n", text); }
  [[nodiscard]] const std::string& text() const { return out_; }

  // Elementwise.
  Value binary(const char* name, const Value& a, const Value& b) {
    ORRERY_ASSERT(a.type.dims == b.type.dims && a.type.element == b.type.element,
                  "elementwise operands agree");
    return op(a.type, fmt::format("stablehlo.{} {}, {} : {}", name, a.name, b.name, spell(a.type)));
  }
  Value add(const Value& a, const Value& b) { return binary("add", a, b); }
  Value mul(const Value& a, const Value& b) { return binary("multiply", a, b); }
  Value sub(const Value& a, const Value& b) { return binary("subtract", a, b); }
  Value div(const Value& a, const Value& b) { return binary("divide", a, b); }
  Value unary(const char* name, const Value& a) {
    return op(a.type, fmt::format("stablehlo.{} {} : {}", name, a.name, spell(a.type)));
  }
  Value splat(const Type& type, const std::string& value) {
    return op(type, fmt::format("stablehlo.constant dense<{}> : {}", value, spell(type)));
  }
  Value like(const Value& a, const std::string& value) { return splat(a.type, value); }
  Value convert(const Value& a, const std::string& element) {
    if (a.type.element == element) {
      return a;
    }
    const Type type{a.type.dims, element};
    return op(type, fmt::format("stablehlo.convert {} : ({}) -> {}", a.name, spell(a.type), spell(type)));
  }

  // Shape.
  Value broadcast(const Value& a, const Dims& dims, const std::vector<std::uint64_t>& map) {
    const Type type{dims, a.type.element};
    return op(type, fmt::format("stablehlo.broadcast_in_dim {}, dims = [{}] : ({}) -> {}", a.name,
                                fmt::join(map, ", "), spell(a.type), spell(type)));
  }
  Value reshape(const Value& a, const Dims& dims) {
    const Type type{dims, a.type.element};
    return op(type, fmt::format("stablehlo.reshape {} : ({}) -> {}", a.name, spell(a.type), spell(type)));
  }
  Value transpose(const Value& a, const std::vector<std::uint64_t>& permutation) {
    Type type{{}, a.type.element};
    for (const std::uint64_t d : permutation) {
      type.dims.push_back(a.type.dims[d]);
    }
    return op(type, fmt::format("stablehlo.transpose {}, dims = [{}] : ({}) -> {}", a.name,
                                fmt::join(permutation, ", "), spell(a.type), spell(type)));
  }
  // The slice [start, limit) of dimension `dim`, the others whole.
  Value slice(const Value& a, std::size_t dim, std::uint64_t start, std::uint64_t limit) {
    Type type = a.type;
    type.dims[dim] = limit - start;
    std::vector<std::string> ranges;
    for (std::size_t d = 0; d < a.type.dims.size(); ++d) {
      ranges.push_back(d == dim ? fmt::format("{}:{}", start, limit) : fmt::format("0:{}", a.type.dims[d]));
    }
    return op(type, fmt::format("stablehlo.slice {} [{}] : ({}) -> {}", a.name, fmt::join(ranges, ", "),
                                spell(a.type), spell(type)));
  }
  Value concat(const std::vector<Value>& parts, std::size_t dim) {
    Type type = parts.front().type;
    type.dims[dim] = 0;
    for (const Value& part : parts) {
      type.dims[dim] += part.type.dims[dim];
    }
    return op(type, fmt::format("stablehlo.concatenate {}, dim = {} : ({}) -> {}", names(parts), dim,
                                spell_types(parts), spell(type)));
  }

  // dot_general: result dims are the batch dims, then lhs's free dims, then rhs's (StableHLO's
  // order); the result takes lhs's element type unless `result` names one.
  Value dot(const Value& lhs, const Value& rhs, const std::vector<std::uint64_t>& lhs_batch,
            const std::vector<std::uint64_t>& rhs_batch, const std::vector<std::uint64_t>& lhs_contract,
            const std::vector<std::uint64_t>& rhs_contract, const std::string& result = "") {
    Type type{{}, result.empty() ? lhs.type.element : result};
    for (const std::uint64_t d : lhs_batch) {
      type.dims.push_back(lhs.type.dims[d]);
    }
    auto free_dims = [&](const Value& v, const std::vector<std::uint64_t>& batch,
                         const std::vector<std::uint64_t>& contract) {
      for (std::uint64_t d = 0; d < v.type.dims.size(); ++d) {
        if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
            std::find(contract.begin(), contract.end(), d) == contract.end()) {
          type.dims.push_back(v.type.dims[d]);
        }
      }
    };
    free_dims(lhs, lhs_batch, lhs_contract);
    free_dims(rhs, rhs_batch, rhs_contract);
    const std::string batching = lhs_batch.empty()
                                     ? ""
                                     : fmt::format("batching_dims = [{}] x [{}], ",
                                                   fmt::join(lhs_batch, ", "), fmt::join(rhs_batch, ", "));
    return op(type,
              fmt::format("stablehlo.dot_general {}, {}, {}contracting_dims = [{}] x [{}] : ({}, {}) -> {}",
                          lhs.name, rhs.name, batching, fmt::join(lhs_contract, ", "),
                          fmt::join(rhs_contract, ", "), spell(lhs.type), spell(rhs.type), spell(type)));
  }
  // A matrix product of 2-D operands contracting lhs dim `lc` with rhs dim `rc`.
  Value matmul(const Value& lhs, const Value& rhs, std::uint64_t lc, std::uint64_t rc) {
    return dot(lhs, rhs, {}, {}, {lc}, {rc});
  }

  // reduce over `dims` with add or maximum, in the operand's element type.
  Value reduce(const Value& a, const std::vector<std::uint64_t>& dims, const char* how) {
    const std::string init_value = std::string(how) == "maximum" ? "0xFF800000" : "0.000000e+00";
    const Value init = splat(Type{{}, a.type.element}, init_value);
    Type type{{}, a.type.element};
    for (std::uint64_t d = 0; d < a.type.dims.size(); ++d) {
      if (std::find(dims.begin(), dims.end(), d) == dims.end()) {
        type.dims.push_back(a.type.dims[d]);
      }
    }
    return op(type,
              fmt::format("stablehlo.reduce({} init: {}) applies stablehlo.{} across dimensions = [{}] : "
                          "({}, {}) -> {}",
                          a.name, init.name, how, fmt::join(dims, ", "), spell(a.type), spell(init.type),
                          spell(type)));
  }

  Value all_reduce(const Value& a, const std::vector<std::vector<std::uint64_t>>& groups,
                   std::uint64_t handle, const char* how = "add") {
    const std::string x = fresh();
    const std::string y = fresh();
    const std::string r = fresh();
    const std::string scalar = spell(Type{{}, a.type.element});
    return op(
        a.type,
        fmt::format("\"stablehlo.all_reduce\"({}) <{{channel_handle = #stablehlo.channel_handle<handle = {}, "
                    "type = 1>, replica_groups = {}, use_global_device_ids}}> ({{\n"
                    "    ^bb0({}: {}, {}: {}):\n"
                    "      {} = stablehlo.{} {}, {} : {}\n"
                    "      stablehlo.return {} : {}\n"
                    "    }}) : ({}) -> {}",
                    a.name, handle, groups_attribute(groups), x, scalar, y, scalar, r, how, x, y, scalar, r,
                    scalar, spell(a.type), spell(a.type)));
  }

  // reduce_scatter (add) over `groups` along dimension 0: each member keeps its 1/|group| slice.
  Value reduce_scatter(const Value& a, const std::vector<std::vector<std::uint64_t>>& groups,
                       std::uint64_t handle, std::size_t dim = 0) {
    const std::string x = fresh();
    const std::string y = fresh();
    const std::string r = fresh();
    const std::string scalar = spell(Type{{}, a.type.element});
    Type type = a.type;
    type.dims[dim] /= groups.front().size();
    return op(type, fmt::format("\"stablehlo.reduce_scatter\"({}) <{{channel_handle = "
                                "#stablehlo.channel_handle<handle = {}, type = 1>, replica_groups = {}, "
                                "scatter_dimension = {} : i64, use_global_device_ids}}> ({{\n"
                                "    ^bb0({}: {}, {}: {}):\n"
                                "      {} = stablehlo.add {}, {} : {}\n"
                                "      stablehlo.return {} : {}\n"
                                "    }}) : ({}) -> {}",
                                a.name, handle, groups_attribute(groups), dim, x, scalar, y, scalar, r, x, y,
                                scalar, r, scalar, spell(a.type), spell(type)));
  }
  // all_gather over `groups` along dimension `dim`.
  Value all_gather(const Value& a, const std::vector<std::vector<std::uint64_t>>& groups,
                   std::uint64_t handle, std::size_t dim = 0) {
    Type type = a.type;
    type.dims[dim] *= groups.front().size();
    return op(type, fmt::format("\"stablehlo.all_gather\"({}) <{{all_gather_dim = {} : i64, channel_handle = "
                                "#stablehlo.channel_handle<handle = {}, type = 1>, replica_groups = {}, "
                                "use_global_device_ids}}> : ({}) -> {}",
                                a.name, dim, handle, groups_attribute(groups), spell(a.type), spell(type)));
  }
  // collective_permute: each (source, target) pair's source sends its value to the target.
  Value collective_permute(const Value& a, const std::string& pairs, std::uint64_t handle) {
    return op(a.type,
              fmt::format("\"stablehlo.collective_permute\"({}) {{channel_handle = "
                          "#stablehlo.channel_handle<handle = {}, type = 1>, source_target_pairs = {}}} : "
                          "({}) -> {}",
                          a.name, handle, pairs, spell(a.type), spell(a.type)));
  }
  // all_to_all over `groups`: the value's |group| blocks along `split` go to the members in group
  // order, and the blocks received are concatenated along `concat` in the same order.
  Value all_to_all(const Value& a, const std::vector<std::vector<std::uint64_t>>& groups,
                   std::uint64_t handle, std::size_t split = 0, std::size_t concat = 0) {
    const std::uint64_t n = groups.front().size();
    Type type = a.type;
    type.dims[split] /= n;
    type.dims[concat] *= n;
    return op(
        type,
        fmt::format("\"stablehlo.all_to_all\"({}) {{split_dimension = {} : i64, concat_dimension = {} "
                    ": i64, split_count = {} : i64, replica_groups = {}, channel_handle = "
                    "#stablehlo.channel_handle<handle = {}, type = 1>}} : ({}) -> {}",
                    a.name, split, concat, n, groups_attribute(groups), handle, spell(a.type), spell(type)));
  }
  // Rows `ids` ([m, 1] i32) of the 2-D `table`: [m, columns].
  Value gather_rows(const Value& table, const Value& ids) {
    const Type type{{ids.type.dims[0], table.type.dims[1]}, table.type.element};
    return op(type,
              fmt::format(
                  "\"stablehlo.gather\"({}, {}) <{{dimension_numbers = #stablehlo.gather<offset_dims = "
                  "[1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, "
                  "slice_sizes = array<i64: 1, {}>}}> : ({}, {}) -> {}",
                  table.name, ids.name, table.type.dims[1], spell(table.type), spell(ids.type), spell(type)));
  }
  // `into` with each row (or, for 1-D values, element) of `updates` added at its index in `ids`
  // ([m, 1] i32).
  Value scatter_add(const Value& into, const Value& ids, const Value& updates) {
    const std::string a = fresh();
    const std::string b = fresh();
    const std::string r = fresh();
    const std::string scalar = spell(Type{{}, into.type.element});
    const bool rows = into.type.dims.size() == 2;
    return op(
        into.type,
        fmt::format("\"stablehlo.scatter\"({}, {}, {}) <{{scatter_dimension_numbers = #stablehlo.scatter<"
                    "update_window_dims = [{}], inserted_window_dims = [0], scatter_dims_to_operand_dims = "
                    "[0], index_vector_dim = 1>}}> ({{\n"
                    "    ^bb0({}: {}, {}: {}):\n"
                    "      {} = stablehlo.add {}, {} : {}\n"
                    "      stablehlo.return {} : {}\n"
                    "    }}) : ({}, {}, {}) -> {}",
                    into.name, ids.name, updates.name, rows ? "1" : "", a, scalar, b, scalar, r, a, b, scalar,
                    r, scalar, spell(into.type), spell(ids.type), spell(updates.type), spell(into.type)));
  }
  // The 1-D values sorted together, ascending by the first (stable).
  std::vector<Value> sort_by_first(const std::vector<Value>& values) {
    std::vector<std::string> arguments;
    std::vector<std::string> first;  // the first operand's block arguments: lhs, rhs
    for (const Value& value : values) {
      const std::string scalar = spell(Type{{}, value.type.element});
      const std::string lhs = fresh();
      const std::string rhs = fresh();
      if (first.empty()) {
        first = {lhs, rhs};
      }
      arguments.push_back(fmt::format("{}: {}, {}: {}", lhs, scalar, rhs, scalar));
    }
    const std::string less = fresh();
    std::vector<Type> types;
    for (const Value& value : values) {
      types.push_back(value.type);
    }
    const std::string key = spell(Type{{}, values.front().type.element});
    return ops(types, fmt::format("\"stablehlo.sort\"({}) <{{dimension = 0 : i64, is_stable = true}}> ({{\n"
                                  "    ^bb0({}):\n"
                                  "      {} = stablehlo.compare  LT, {}, {} : ({}, {}) -> tensor<i1>\n"
                                  "      stablehlo.return {} : tensor<i1>\n"
                                  "    }}) : ({}) -> ({})",
                                  names(values), fmt::join(arguments, ", "), less, first[0], first[1], key,
                                  key, less, spell_types(values), spell_types(values)));
  }
  // The k largest entries of each row of a 2-D value and their column indices (chlo.top_k, as
  // jax.lax.top_k lowers).
  std::vector<Value> top_k(const Value& a, std::uint64_t k) {
    const Type values{{a.type.dims[0], k}, a.type.element};
    const Type indices{{a.type.dims[0], k}, "i32"};
    return ops({values, indices}, fmt::format("chlo.top_k({}, k = {}) : {} -> ({}, {})", a.name, k,
                                              spell(a.type), spell(values), spell(indices)));
  }
  // Pads a 1-D value with zeros at the end to `length`.
  Value pad_to(const Value& a, std::uint64_t length) {
    if (a.type.dims[0] == length) {
      return a;
    }
    const bool integer = a.type.element == "i32";
    const Value zero = splat(Type{{}, a.type.element}, integer ? "0" : "0.000000e+00");
    const Type type{{length}, a.type.element};
    return op(
        type,
        fmt::format("stablehlo.pad {}, {}, low = [0], high = [{}], interior = [0] : ({}, {}) -> {}", a.name,
                    zero.name, length - a.type.dims[0], spell(a.type), spell(zero.type), spell(type)));
  }

  std::vector<Value> barrier(const std::vector<Value>& values) {
    std::vector<Type> types;
    for (const Value& value : values) {
      types.push_back(value.type);
    }
    return ops(types,
               fmt::format("stablehlo.optimization_barrier {} : {}", names(values), spell_types(values)));
  }

  std::vector<Value> call(const std::string& callee, const std::vector<Value>& arguments,
                          const std::vector<Type>& results) {
    std::vector<std::string> result_types;
    for (const Type& type : results) {
      result_types.push_back(spell(type));
    }
    return ops(results, fmt::format("func.call @{}({}) : ({}) -> ({})", callee, names(arguments),
                                    spell_types(arguments), fmt::join(result_types, ", ")));
  }

 private:
  std::string out_;
  std::uint64_t next_ = 0;
};

// `aliases[i]`, when given, is the result argument i is donated to (`tf.aliasing_output`).
std::string function_text(const std::string& name, bool is_public, const std::vector<Value>& arguments,
                          const Body& body, const std::vector<Value>& results,
                          const std::vector<std::optional<std::size_t>>& aliases = {}) {
  std::vector<std::string> parameters;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const Value& argument = arguments[i];
    const bool aliased = i < aliases.size() && aliases[i];
    parameters.push_back(aliased ? fmt::format("{}: {} {{tf.aliasing_output = {} : i32}}", argument.name,
                                               spell(argument.type), *aliases[i])
                                 : fmt::format("{}: {}", argument.name, spell(argument.type)));
  }
  return fmt::format("  func.func {}@{}({}) -> ({}) {{\n{}    return {} : {}\n  }}\n",
                     is_public ? "public " : "private ", name, fmt::join(parameters, ", "),
                     spell_types(results), body.text(), names(results), spell_types(results));
}

// ---------------------------------------------------------------------------------------------
// The model's local (per-device) shapes.

struct Shape {
  std::uint64_t b, s, n;        // microbatch sequences, local sequence length (seq / cp), tokens (b * s)
  // Keys each query attends over in one attention kernel: the whole sequence (all-gather and
  // Ulysses context parallelism), the device's seq / cp (the ring: one block at a time).
  std::uint64_t sk;
  std::uint64_t h, a, k, d, g;  // width, local heads, local kv heads, head dim, heads per kv head
  std::uint64_t q;              // local QKV width (a + 2k) * d
  std::uint64_t f;              // local FFN width
  std::uint64_t v;              // local vocabulary
  std::uint64_t r;  // tokens of the residual stream per device (n / tp under sequence parallelism)
  // Mixture of experts: experts, local experts, experts per token, slots per expert and device
  // (the capacity), tokens per local expert (ep x c) and the experts' width.
  std::uint64_t e, el, top, c, t, fe;
  std::uint64_t fs;  // the shared experts' local width (tensor-parallel like a dense MLP); 0: none
  std::uint64_t fd;  // a mixture-of-experts model's dense first layers' local FFN width
  // Multi-head latent attention: the key/value and query latents' widths (kl 0: no MLA; ql 0: the
  // queries come from the hidden state), the shared rotary key's width, the value head dim.
  std::uint64_t kl, ql, dr, dv;
};

// The shape of a mixture-of-experts model's dense layers: no experts, the dense FFN width.
Shape dense_shape(Shape s) {
  s.e = s.el = s.top = s.c = s.t = s.fe = s.fs = 0;
  s.f = s.fd;
  return s;
}

Shape shape_of(const LlmJob& job) {
  const LlmModel& m = job.model;
  Shape s{};
  s.b = job.micro_batch;
  s.s = job.seq / job.cp;
  s.sk = job.cp > 1 && job.cp_comm == CpComm::kP2p ? s.s : job.seq;
  s.n = s.b * s.s;
  s.h = m.hidden;
  s.a = m.heads / job.tp;
  s.k = m.kv_heads / job.tp;
  s.d = m.head_dimension();
  s.g = m.heads / m.kv_heads;
  s.q = (s.a + 2 * s.k) * s.d;
  s.f = m.ffn / job.tp;
  s.v = (m.vocab + job.tp - 1) / job.tp;  // the vocabulary padded to a multiple of tp
  s.r = job.sequence_parallel && job.tp > 1 ? s.n / job.tp : s.n;
  if (m.moe()) {
    s.e = m.experts;
    s.el = m.experts / job.ep;
    s.top = m.top_k;
    // The balanced share times the capacity factor, rounded up (a product that is a whole number
    // but for the factor's binary representation stays that number).
    const double share = job.capacity_factor * static_cast<double>(s.r * s.top) / static_cast<double>(s.e);
    s.c = static_cast<std::uint64_t>(std::ceil(share * (1.0 - 1e-12)));
    s.c = std::max<std::uint64_t>(s.c, 1);
    s.t = job.ep * s.c;
    s.fe = m.ffn;  // experts are not tensor-parallel: each holds its whole FFN
    s.fs = m.shared_ffn / job.tp;
  }
  s.fd = m.dense_width() / job.tp;
  if (m.mla()) {
    s.kl = m.kv_lora_rank;
    s.ql = m.q_lora_rank;
    s.dr = m.rope_head_dim;
    s.dv = m.v_head_dim != 0 ? m.v_head_dim : s.d;
  }
  return s;
}

// A parameter tensor of a stage, per device, and who else holds it: kDense tensors are reduced
// over the data-parallel group; kReplicated ones (norm weights, the router) are whole on every
// tensor-parallel device, which under sequence parallelism sees only its tokens, so their
// gradients are summed over the tensor-parallel group first; kExpert ones over the devices that
// hold the same experts.
enum class Holder : std::uint8_t { kDense, kReplicated, kExpert };
struct Param {
  std::string name;
  Dims dims;
  Holder holder = Holder::kDense;
  bool linear = false;  // a linear layer's weight: FP8 under --fp8
};

std::vector<Param> layer_params(const Shape& s) {
  std::vector<Param> params{{"attention_norm", {s.h}, Holder::kReplicated},
                            {"wqkv", {s.h, s.q}, Holder::kDense, true},
                            {"wo", {s.a * s.d, s.h}, Holder::kDense, true},
                            {"mlp_norm", {s.h}, Holder::kReplicated}};
  if (s.kl > 0) {
    // Multi-head latent attention: the query projection (from the hidden state, or up from the
    // query latent) and the output projection take the place of wqkv and wo; the latents' down
    // projections and norms (whole on every tensor-parallel device, like the norms: Megatron's
    // duplicated linears) and the key/value up projection come after the MLP's parameters.
    params[1] = {"wq", {s.ql > 0 ? s.ql : s.h, s.a * (s.d + s.dr)}, Holder::kDense, true};
    params[2] = {"wo", {s.a * s.dv, s.h}, Holder::kDense, true};
  }
  if (s.e == 0) {
    params.push_back({"w_gate_up", {s.h, 2 * s.f}, Holder::kDense, true});
    params.push_back({"w_down", {s.f, s.h}, Holder::kDense, true});
  } else {
    params.push_back({"router", {s.h, s.e}, Holder::kReplicated});
    params.push_back({"experts_gate_up", {s.el, s.h, 2 * s.fe}, Holder::kExpert, true});
    params.push_back({"experts_down", {s.el, s.fe, s.h}, Holder::kExpert, true});
    if (s.fs > 0) {
      params.push_back({"shared_gate_up", {s.h, 2 * s.fs}, Holder::kDense, true});
      params.push_back({"shared_down", {s.fs, s.h}, Holder::kDense, true});
    }
  }
  if (s.kl > 0) {
    params.push_back({"w_dkv", {s.h, s.kl + s.dr}, Holder::kReplicated, true});
    params.push_back({"kv_norm", {s.kl}, Holder::kReplicated});
    params.push_back({"w_ukv", {s.kl, s.a * (s.d + s.dv)}, Holder::kDense, true});
    if (s.ql > 0) {
      params.push_back({"w_dq", {s.h, s.ql}, Holder::kReplicated, true});
      params.push_back({"q_norm", {s.ql}, Holder::kReplicated});
    }
  }
  return params;
}

std::uint64_t elements(const Dims& dims) {
  std::uint64_t n = 1;
  for (const std::uint64_t d : dims) {
    n *= d;
  }
  return n;
}

// Collective groups of a stage's devices: device id = (dp_index * cp + cp_index) * tp + tp_index
// (Megatron's order: tp, cp, dp).
struct Groups {
  std::vector<std::vector<std::uint64_t>> tp;
  // The devices holding the same dense weights (data- and context-parallel: Megatron reduces the
  // gradients over both), and the context-parallel groups.
  std::vector<std::vector<std::uint64_t>> dp;
  std::vector<std::vector<std::uint64_t>> cp;
  // Mixture of experts: the expert-parallel groups (ep consecutive replicas at one tensor-parallel
  // index, in expert order) and the groups of devices holding the same experts.
  std::vector<std::vector<std::uint64_t>> ep;
  std::vector<std::vector<std::uint64_t>> expert_dp;
  // Hybrid sharding (LlmJob::shard_group): each group of `dp` (`expert_dp`) cut into shard groups
  // of consecutive members, and the replicate groups of the members at one position in them.
  std::vector<std::vector<std::uint64_t>> dp_shard, dp_replicate, expert_shard, expert_replicate;
};

// Shard groups of `size` consecutive members of each group, and the groups of the members at one
// position of their shard group (FSDP's HSDP mesh: replicate x shard).
void hybrid_groups(const std::vector<std::vector<std::uint64_t>>& groups, std::uint64_t size,
                   std::vector<std::vector<std::uint64_t>>& shard,
                   std::vector<std::vector<std::uint64_t>>& replicate) {
  for (const std::vector<std::uint64_t>& group : groups) {
    for (std::size_t first = 0; first < group.size(); first += size) {
      shard.emplace_back(group.begin() + static_cast<std::ptrdiff_t>(first),
                         group.begin() + static_cast<std::ptrdiff_t>(first + size));
    }
    for (std::size_t position = 0; position < size; ++position) {
      std::vector<std::uint64_t> across;
      for (std::size_t member = position; member < group.size(); member += size) {
        across.push_back(group[member]);
      }
      replicate.push_back(std::move(across));
    }
  }
}

Groups groups_of(const LlmJob& job) {
  Groups groups;
  const auto id = [&](std::uint64_t r, std::uint64_t c, std::uint64_t t) {
    return (r * job.cp + c) * job.tp + t;
  };
  for (std::uint64_t r = 0; r < job.dp; ++r) {
    for (std::uint64_t c = 0; c < job.cp; ++c) {
      std::vector<std::uint64_t> group;
      for (std::uint64_t t = 0; t < job.tp; ++t) {
        group.push_back(id(r, c, t));
      }
      groups.tp.push_back(std::move(group));
    }
  }
  for (std::uint64_t t = 0; t < job.tp; ++t) {
    std::vector<std::uint64_t> group;
    for (std::uint64_t r = 0; r < job.dp; ++r) {
      for (std::uint64_t c = 0; c < job.cp; ++c) {
        group.push_back(id(r, c, t));
      }
    }
    groups.dp.push_back(std::move(group));
  }
  for (std::uint64_t r = 0; r < job.dp; ++r) {
    for (std::uint64_t t = 0; t < job.tp; ++t) {
      std::vector<std::uint64_t> group;
      for (std::uint64_t c = 0; c < job.cp; ++c) {
        group.push_back(id(r, c, t));
      }
      groups.cp.push_back(std::move(group));
    }
  }
  if (job.model.moe()) {
    for (std::uint64_t block = 0; block < job.dp / job.ep; ++block) {
      for (std::uint64_t c = 0; c < job.cp; ++c) {
        for (std::uint64_t t = 0; t < job.tp; ++t) {
          std::vector<std::uint64_t> group;
          for (std::uint64_t e = 0; e < job.ep; ++e) {
            group.push_back(id(block * job.ep + e, c, t));
          }
          groups.ep.push_back(std::move(group));
        }
      }
    }
    for (std::uint64_t e = 0; e < job.ep; ++e) {
      std::vector<std::uint64_t> group;
      for (std::uint64_t r = e; r < job.dp; r += job.ep) {
        for (std::uint64_t c = 0; c < job.cp; ++c) {
          for (std::uint64_t t = 0; t < job.tp; ++t) {
            group.push_back(id(r, c, t));
          }
        }
      }
      groups.expert_dp.push_back(std::move(group));
    }
  }
  if (job.shard_group > 0) {
    hybrid_groups(groups.dp, job.shard_group, groups.dp_shard, groups.dp_replicate);
    hybrid_groups(groups.expert_dp, job.shard_group, groups.expert_shard, groups.expert_replicate);
  }
  return groups;
}

// Writes one stage's module.
class StageWriter {
 public:
  StageWriter(const LlmJob& job, std::uint32_t stage)
      : job_(job),
        s_(shape_of(job)),
        groups_(groups_of(job)),
        stage_(stage),
        first_(stage == 0),
        last_(stage + 1 == job.pp) {}

  std::string write() {
    std::string functions;
    functions += norm_forward_function();
    if (fp8()) {
      functions += norm_forward_function(true);
    }
    functions += norm_backward_function();
    functions += layer_forward_function();
    functions += layer_backward_function();
    if (has_dense_layers()) {
      as_dense([&] {
        functions += layer_forward_function();
        functions += layer_backward_function();
      });
    }
    if (first_) {
      functions += embed_functions();
    }
    if (last_) {
      functions += head_functions();
    }
    const std::string main = main_function();
    const std::uint64_t devices = static_cast<std::uint64_t>(job_.dp) * job_.cp * job_.tp;
    return fmt::format(
        "// Generated by `orrery generate llm` (docs/generate.md): {} ({} layers, width {}, {} heads of {}, "
        "{} kv heads, "
        "FFN {}, vocabulary {}),\n"
        "// pipeline stage {} of {} ({} layers), tp {} x cp {} x dp {} devices, {} microbatches of {} x {} "
        "tokens, "
        "{} "
        "schedule, {} attention{}{}.\n"
        "module @llm_stage_{} attributes {{mhlo.num_partitions = {} : i32, mhlo.num_replicas = 1 : i32{}}} "
        "{{\n{}{}}}\n",
        job_.model.name, job_.model.layers, job_.model.hidden, job_.model.heads, job_.model.head_dimension(),
        job_.model.kv_heads, job_.model.ffn, job_.model.vocab, stage_, job_.pp, stage_layers(job_)[stage_],
        job_.tp, job_.cp, job_.dp, job_.micro_batches, job_.micro_batch, job_.seq,
        job_.schedule == PipelineSchedule::kGPipe ? "GPipe"
        : job_.schedule == PipelineSchedule::kZeroBubbleH1
            ? "ZB-H1"
            : (job_.virtual_stages > 1 ? fmt::format("interleaved 1F1B ({} chunks)", job_.virtual_stages)
                                       : "1F1B"),
        flash() ? "flash" : "naive",
        std::string(job_.recompute == Recompute::kFull ? ", full activation recomputation" : "") +
            (sharded_optimizer() ? (job_.fsdp ? ", FSDP (ZeRO-3)" : ", distributed optimizer (ZeRO-1)")
                                 : "") +
            (job_.shard_group > 0 ? fmt::format(", sharded over groups of {}", job_.shard_group) : "") +
            (job_.no_sync ? ", gradients reduce-scattered once per step (no_sync)" : "") +
            (sp() ? ", sequence parallelism" : "") +
            (cp_ring()         ? ", context parallelism by a ring of key/value permutes"
             : ulysses()       ? ", context parallelism by all-to-alls (Ulysses)"
             : cp_all_gather() ? ", context parallelism by key/value all-gathers"
                               : "") +
            (tp_overlap() ? ", tensor-parallel communication overlapped with the GEMMs" : "") +
            (fp8() ? ", FP8 linear layers" : "") + (tied() ? ", tied embeddings" : ""),
        moe() ? fmt::format(", {} experts of FFN {}, top {}, ep {}, {} slots per expert and device{}", s_.e,
                            s_.fe, s_.top, job_.ep, s_.c,
                            s_.fs > 0 ? fmt::format(", shared experts of FFN {}", job_.model.shared_ffn) : "")
              : "",
        stage_, devices,
        // Transformer Engine's ring buffers: the GEMMs read and write the chunks in place
        // (docs/compute.md, "GEMM views").
        tp_overlap() ? ", orrery.gemm_views = true" : "", functions, main);
  }

 private:
  // Collective channel handles start above the point-to-point ones.
  std::uint64_t next_handle() { return kCollectiveHandleBase + next_handle_++; }
  static constexpr std::uint64_t kCollectiveHandleBase = 1'000'000'000;

  Value tp_all_reduce(Body& body, const Value& a, const char* how = "add") {
    return job_.tp > 1 ? body.all_reduce(a, groups_.tp, next_handle(), how) : a;
  }

  Type act() const { return Type{{s_.n, s_.h}, "bf16"}; }
  // The residual stream as a device holds it: its 1/tp of the tokens under sequence parallelism.
  bool sp() const { return job_.sequence_parallel && job_.tp > 1; }
  std::uint64_t rows() const { return sp() ? s_.n / job_.tp : s_.n; }
  Type local() const { return Type{{rows(), s_.h}, "bf16"}; }
  Type local_stats() const { return Type{{rows()}, "f32"}; }
  // Into a tensor-parallel region: the whole sequence (all-gathered under sequence parallelism).
  Value tp_gather(Body& body, const Value& a) {
    return sp() ? body.all_gather(a, groups_.tp, next_handle()) : a;
  }
  // Out of one: the partial sums of a row-parallel GEMM summed over the tensor-parallel group,
  // reduce-scattered over the tokens under sequence parallelism.
  Value tp_reduce(Body& body, const Value& a) {
    return sp() ? body.reduce_scatter(a, groups_.tp, next_handle()) : tp_all_reduce(body, a);
  }

  // Tensor-parallel communication overlap (Transformer Engine's userbuffers, Megatron's
  // --tp-comm-overlap; with sequence parallelism). Each device sends to the next member of its
  // tensor-parallel group, a ring.
  bool tp_overlap() const { return job_.tp_comm_overlap && sp(); }
  Value tp_ring_step(Body& body, const Value& a) { return ring_step(body, a, groups_.tp, ring_pairs_); }
  // One step round the rings `groups`: each member sends `a` to the next member of its group
  // (`pairs` caches the source_target_pairs' spelling).
  // With `back`, to the previous member instead.
  Value ring_step(Body& body, const Value& a, const std::vector<std::vector<std::uint64_t>>& groups,
                  std::string& pairs, bool back = false) {
    if (pairs.empty()) {
      std::vector<std::string> rows;
      for (const std::vector<std::uint64_t>& group : groups) {
        const std::size_t n = group.size();
        for (std::size_t j = 0; j < n; ++j) {
          rows.push_back(fmt::format("[{}, {}]", group[j], group[back ? (j + n - 1) % n : (j + 1) % n]));
        }
      }
      pairs = fmt::format("dense<[{}]> : tensor<{}x2xi64>", fmt::join(rows, ", "), rows.size());
    }
    return body.collective_permute(a, pairs, next_handle());
  }
  // A column-parallel GEMM of the gathered tokens: linear(tp_gather(x), w) with x's tokens in
  // dimension 0 (lc 1). Overlapped, the ring passes each device's tokens on tp - 1 times and the
  // GEMM runs on each chunk as it arrives, the transfer of the next chunk running meanwhile
  // (Transformer Engine's ring exchange); the output's rows come in ring order, which changes no
  // cost. Returns the output and, with `keep_gathered`, the gathered input (overlapped: the
  // chunks side by side, for a weight gradient).
  std::pair<Value, std::optional<Value>> gather_linear(Body& body, const Value& x, const Value& w,
                                                       std::uint64_t rc, const char* lf, const char* rf,
                                                       bool keep_gathered) {
    if (!tp_overlap()) {
      const Value all = tp_gather(body, x);
      return {linear(body, all, w, 1, rc, lf, rf), keep_gathered ? std::optional<Value>(all) : std::nullopt};
    }
    std::vector<Value> chunks{x};
    std::vector<Value> outputs;
    for (std::uint32_t i = 0; i < job_.tp; ++i) {
      if (i + 1 < job_.tp) {
        chunks.push_back(tp_ring_step(body, chunks.back()));
      }
      outputs.push_back(linear(body, chunks[i], w, 1, rc, lf, rf));
    }
    return {body.concat(outputs, 0),
            keep_gathered ? std::optional<Value>(body.concat(chunks, 0)) : std::nullopt};
  }
  // A row-parallel GEMM's partial sums reduced over the group: tp_reduce(linear(x, w)) with x's
  // tokens in dimension 0 (lc 1). Overlapped, the GEMM runs on x's tp row chunks in turn; each
  // chunk's partial sums are added to the running sum that arrives from the previous device,
  // whose transfer ran during this chunk's GEMM, and passed on; after tp - 1 steps each device
  // holds the sum of its own chunk, the reduce-scatter's result. Device d works on its chunk
  // (d - i - 1) mod tp at step i, which an SPMD program selects by its partition id; the static
  // slices written here have the same shapes, and only costs are modelled, not which rows are
  // whose (nor, likewise, the ring order of gather_linear's rows).
  Value linear_reduce(Body& body, const Value& x, const Value& w, std::uint64_t rc, const char* lf,
                      const char* rf) {
    if (!tp_overlap()) {
      return tp_reduce(body, linear(body, x, w, 1, rc, lf, rf));
    }
    const std::uint64_t rows = x.type.dims[0] / job_.tp;
    std::optional<Value> sum;
    for (std::uint32_t i = 0; i < job_.tp; ++i) {
      const Value partial = linear(body, body.slice(x, 0, i * rows, (i + 1) * rows), w, 1, rc, lf, rf);
      sum = sum ? body.add(tp_ring_step(body, *sum), partial) : partial;
    }
    return *sum;
  }

  // RMSNorm: (x, w) -> (out, rsqrt of the mean square per token).
  // With `cast`, the FP8 variant `rms_norm_fp8`: the output cast to E4M3 in the norm's kernel
  // (Transformer Engine's fused norm and cast).
  std::string norm_forward_function(bool cast = false) {
    Body body;
    const Value x{"%x", local()};
    const Value w{"%w", Type{{s_.h}, "bf16"}};
    const auto [out, rs] = rms_norm_ops(body, x, w);
    if (cast) {
      return function_text("rms_norm_fp8", false, {x, w}, body, {cast8(body, out, kE4M3), rs});
    }
    return function_text("rms_norm", false, {x, w}, body, {out, rs});
  }

  // RMSNorm backward: (dout, x, rs, w) -> (dx, dw).
  std::string norm_backward_function() {
    Body body;
    const Value dout{"%dout", local()};
    const Value x{"%x", local()};
    const Value rs{"%rs", local_stats()};
    const Value w{"%w", Type{{s_.h}, "bf16"}};
    const auto [dx, dw] = rms_norm_backward_ops(body, dout, x, rs, w);
    return function_text("rms_norm_backward", false, {dout, x, rs, w}, body, {dx, dw});
  }

  // The ops of an RMSNorm of rows x (tokens, width), bf16 in and out with f32 statistics: (the
  // output, rsqrt of each row's mean square); and of its backward: (dx, dw).
  std::pair<Value, Value> rms_norm_ops(Body& body, const Value& x, const Value& w) {
    const Dims& dims = x.type.dims;
    const Value xf = body.convert(x, "f32");
    const Value ss = body.reduce(body.mul(xf, xf), {1}, "add");
    const Value mean = body.mul(ss, body.like(ss, fmt::format("{:e}", 1.0 / static_cast<double>(dims[1]))));
    const Value rs = body.unary("rsqrt", body.add(mean, body.like(mean, "1.000000e-05")));
    const Value xn = body.mul(xf, body.broadcast(rs, dims, {0}));
    return {body.mul(body.convert(xn, "bf16"), body.broadcast(w, dims, {1})), rs};
  }
  std::pair<Value, Value> rms_norm_backward_ops(Body& body, const Value& dout, const Value& x,
                                                const Value& rs, const Value& w) {
    const Dims& dims = x.type.dims;
    const Value rsb = body.broadcast(rs, dims, {0});
    const Value xn = body.mul(body.convert(x, "f32"), rsb);
    const Value df = body.convert(dout, "f32");
    const Value dw = body.convert(body.reduce(body.mul(df, xn), {0}, "add"), "bf16");
    const Value dxn = body.mul(df, body.broadcast(body.convert(w, "f32"), dims, {1}));
    const Value dot = body.reduce(body.mul(dxn, xn), {1}, "add");
    const Value mean = body.mul(dot, body.like(dot, fmt::format("{:e}", 1.0 / static_cast<double>(dims[1]))));
    const Value centred = body.sub(dxn, body.mul(xn, body.broadcast(mean, dims, {0})));
    return {body.convert(body.mul(centred, rsb), "bf16"), dw};
  }

  // Rotary embedding of (n, heads, d): x * cos + rotate_half(x) * sin; `inverse` applies the
  // transpose (the backward pass).
  Value rope(Body& body, const Value& x, bool inverse) {
    const std::uint64_t d = x.type.dims[2];
    const std::uint64_t half = d / 2;
    const Value lo = body.slice(x, 2, 0, half);
    const Value hi = body.slice(x, 2, half, d);
    const Value rotated = inverse ? body.concat({hi, body.unary("negate", lo)}, 2)
                                  : body.concat({body.unary("negate", hi), lo}, 2);
    const Value cosine = body.like(x, "5.000000e-01");
    const Value sine = body.like(x, "8.660000e-01");
    return body.add(body.mul(x, cosine), body.mul(rotated, sine));
  }

  // (n, heads * d) in token order -> (b, heads, s, d); d: the head dimension (0: s_.d).
  Value to_heads(Body& body, const Value& x, std::uint64_t heads, std::uint64_t d = 0) {
    return body.transpose(body.reshape(x, {s_.b, s_.s, heads, d != 0 ? d : s_.d}), {0, 2, 1, 3});
  }
  // (b, heads, s, d) -> (n, heads, d).
  Value from_heads(Body& body, const Value& x, std::uint64_t heads) {
    return body.reshape(body.transpose(x, {0, 2, 1, 3}), {s_.n, heads, x.type.dims[3]});
  }
  // Grouped-query attention: (b, k, s, d) -> (b, a, s, d), each kv head serving g query heads.
  Value expand_kv(Body& body, const Value& x) {
    if (s_.g == 1) {
      return x;
    }
    const Value wide = body.broadcast(x, {s_.b, s_.k, s_.g, s_.sk, s_.d}, {0, 1, 3, 4});
    return body.reshape(wide, {s_.b, s_.a, s_.sk, s_.d});
  }
  // Its transpose: the g query heads' gradients summed per kv head.
  Value reduce_kv(Body& body, const Value& x) {
    if (s_.g == 1) {
      return x;
    }
    const Value grouped = body.reshape(body.convert(x, "f32"), {s_.b, s_.k, s_.g, s_.sk, s_.d});
    return body.convert(body.reduce(grouped, {2}, "add"), "bf16");
  }

  // FP8 (Transformer Engine's delayed-scaling recipe, its default, with hybrid formats): the
  // linear layers' GEMMs take FP8 operands — activations and weights in E4M3 forward, gradients
  // in E5M2 backward — and write bf16 (cuBLASLt applies the scales in its epilogue). A cast scales
  // by the factor the amax history gives (a constant here) and records the tensor's amax for the
  // history in the same pass: a max reduction beside the convert, over the same input.
  bool fp8() const { return job_.fp8; }
  static constexpr const char* kE4M3 = "f8E4M3FN";
  static constexpr const char* kE5M2 = "f8E5M2";
  Value cast8(Body& body, const Value& x, const char* format) {
    if (!fp8() || x.type.element == format) {
      return x;
    }
    std::vector<std::uint64_t> all(x.type.dims.size());
    for (std::size_t d = 0; d < all.size(); ++d) {
      all[d] = d;
    }
    (void)body.reduce(body.convert(body.unary("abs", x), "f32"), all,
                      "maximum");  // the amax, for the history
    return body.convert(body.mul(x, body.like(x, "1.000000e+00")), format);
  }
  // A linear layer's GEMM (2-D operands, contracting lhs dim `lc` with rhs dim `rc`): bf16, or
  // under FP8 with the operands cast to the given formats and a bf16 result.
  Value linear(Body& body, const Value& lhs, const Value& rhs, std::uint64_t lc, std::uint64_t rc,
               const char* lf, const char* rf) {
    if (!fp8()) {
      return body.matmul(lhs, rhs, lc, rc);
    }
    return body.dot(cast8(body, lhs, lf), cast8(body, rhs, rf), {}, {}, {lc}, {rc}, "bf16");
  }
  // The same for the experts' batched GEMMs (batch dimension 0 of both operands).
  Value batched_linear(Body& body, const Value& lhs, const Value& rhs, std::uint64_t lc, std::uint64_t rc,
                       const char* lf, const char* rf) {
    if (!fp8()) {
      return body.dot(lhs, rhs, {0}, {0}, {lc}, {rc});
    }
    return body.dot(cast8(body, lhs, lf), cast8(body, rhs, rf), {0}, {0}, {lc}, {rc}, "bf16");
  }
  // Zero-bubble schedules split a backward function in two: B computes the input gradient (what the
  // stage below waits for) and the gradients that come with it (the norms'), W the weight
  // gradients' GEMMs, later. While a B function is written, `deferring_` collects each weight
  // gradient's computation with its operands (B returns the operands), and weight_grad() returns
  // a placeholder in its place; split_function() writes both functions from them.
  using WeightGradFn = std::function<Value(Body&, const std::vector<Value>&)>;
  struct Deferred {
    std::vector<Value> operands;
    WeightGradFn compute;
  };
  std::vector<Deferred>* deferring_ = nullptr;
  static constexpr const char* kDeferredPrefix = "#deferred";

  // Stage 0 of ZB-H1 runs each W right after its B, so it keeps the backward whole (as
  // Megatron-DeepSpeed's ZB-H1 does), which frees each layer's operands as it goes.
  bool split_backward() const { return job_.schedule == PipelineSchedule::kZeroBubbleH1 && stage_ > 0; }

  Value weight_grad(Body& body, std::vector<Value> operands, WeightGradFn compute) {
    if (deferring_ == nullptr) {
      return compute(body, operands);
    }
    deferring_->push_back({std::move(operands), std::move(compute)});
    return Value{fmt::format("{}{}", kDeferredPrefix, deferring_->size() - 1), Type{}};
  }

  // How a split backward function's gradients are laid out: B returns the leading results (the
  // input gradient), the gradients it computes itself, then the weight gradients' operands; W
  // takes the operands and returns the weight gradients in the order they were deferred.
  struct Split {
    std::vector<Type> b_results;
    std::vector<Type> w_results;
    std::size_t b_gradients = 0;  // B's own gradients, after its leading results
    std::size_t operands = 0;     // B's last results, W's arguments
    // Per gradient of the unsplit function, in its order: (from W, index among B's own gradients
    // or W's results).
    std::vector<std::pair<bool, std::size_t>> source;

    // The unsplit function's gradients from B's own and W's results.
    [[nodiscard]] std::vector<Value> gradients(const std::vector<Value>& b_own,
                                               const std::vector<Value>& w) const {
      std::vector<Value> out;
      for (const auto& [from_w, index] : source) {
        out.push_back(from_w ? w.at(index) : b_own.at(index));
      }
      return out;
    }
  };

  // Writes B as `name` and W as `w_name` from the body of `name` written with `deferred`
  // collecting; `results` are the unsplit function's (the first `leading` of them not gradients).
  std::string split_function(const std::string& name, const std::string& w_name,
                             const std::vector<Value>& arguments, const Body& body,
                             const std::vector<Value>& results, std::size_t leading,
                             const std::vector<Deferred>& deferred, Split& split) {
    split = Split{};
    std::vector<Value> b_results(results.begin(), results.begin() + static_cast<std::ptrdiff_t>(leading));
    for (std::size_t i = leading; i < results.size(); ++i) {
      const std::string& result = results[i].name;
      if (result.rfind(kDeferredPrefix, 0) == 0) {
        split.source.emplace_back(true, std::stoull(result.substr(std::string_view(kDeferredPrefix).size())));
      } else {
        split.source.emplace_back(false, split.b_gradients++);
        b_results.push_back(results[i]);
      }
    }
    Body w_body;
    std::vector<Value> w_arguments, w_results;
    for (const Deferred& d : deferred) {
      std::vector<Value> operands;
      for (const Value& operand : d.operands) {
        b_results.push_back(operand);
        operands.push_back(Value{fmt::format("%operand{}", w_arguments.size()), operand.type});
        w_arguments.push_back(operands.back());
      }
      w_results.push_back(d.compute(w_body, operands));
    }
    split.operands = w_arguments.size();
    for (const Value& v : b_results) {
      split.b_results.push_back(v.type);
    }
    for (const Value& v : w_results) {
      split.w_results.push_back(v.type);
    }
    return function_text(name, false, arguments, body, b_results) +
           function_text(w_name, false, w_arguments, w_body, w_results);
  }
  Split layer_split_, head_split_;
  Split dense_split_;  // a mixture-of-experts model's dense layers'

  // A mixture-of-experts model's dense first layers (LlmModel::dense_layers) have functions of
  // their own (`dense_layer_forward`, ...), written in dense mode: s_ without experts and with the
  // dense FFN width, moe() false.
  bool dense_mode_ = false;
  std::string layer_fn(std::string_view name) const {
    return (dense_mode_ ? "dense_" : "") + std::string(name);
  }
  template <typename F>
  void as_dense(F&& write) {
    const Shape saved = s_;
    s_ = dense_shape(s_);
    dense_mode_ = true;
    write();
    dense_mode_ = false;
    s_ = saved;
  }
  // Whether the stage's local layer `l` (over all its chunks) is one of the dense first layers of a
  // mixture-of-experts model.
  bool dense_local(std::uint32_t l) const {
    for (std::uint32_t c = 0; c < job_.virtual_stages; ++c) {
      if (l >= chunk_local_base_[c] && l < chunk_local_base_[c] + chunk_layers_[c]) {
        return job_.model.moe() && job_.model.dense_layer(chunk_first_layer_[c] + l - chunk_local_base_[c]);
      }
    }
    return false;
  }
  bool has_dense_layers() const {
    for (std::uint32_t l = 0; l < layers_; ++l) {
      if (dense_local(l)) {
        return true;
      }
    }
    return false;
  }
  // The parameters of local layer `l`.
  std::vector<Param> local_layer_params(std::uint32_t l) const {
    return layer_params(dense_local(l) ? dense_shape(s_) : s_);
  }

  // What a linear layer keeps of its input for its weight gradient: the input, or its FP8 cast.
  Type kept(const Type& type) const { return fp8() ? Type{type.dims, kE4M3} : type; }

  // Context parallelism: each device holds seq / cp of every sequence's tokens (chunks c and
  // 2 cp - 1 - c of 2 cp, balancing the causal mask), exchanging keys and values as cp_comm says.
  bool cp_all_gather() const { return job_.cp > 1 && job_.cp_comm == CpComm::kAllGather; }
  bool cp_ring() const { return job_.cp > 1 && job_.cp_comm == CpComm::kP2p; }
  bool ulysses() const { return job_.cp > 1 && job_.cp_comm == CpComm::kA2a; }
  // Whether the backward pass keeps the output projection's input apart from the attention
  // kernel's output: under FP8 (its cast) and under Ulysses (the kernel's output is head-split).
  bool projection_input_saved() const { return flash() && (fp8() || ulysses()); }

  // Llama 3's all-gather form: the device attends from its queries over the whole sequence's keys
  // and values, all-gathered (k and v side by side, one all-gather) over the context-parallel
  // group; backward gathers them again and reduce-scatters their gradients.
  std::pair<Value, Value> cp_gather_kv(Body& body, const Value& k, const Value& v) {
    if (!cp_all_gather()) {
      return {k, v};
    }
    const Value all = body.all_gather(body.concat({k, v}, 1), groups_.cp, next_handle(), 2);
    return {body.slice(all, 1, 0, s_.k), body.slice(all, 1, s_.k, 2 * s_.k)};
  }
  std::pair<Value, Value> cp_scatter_kv(Body& body, const Value& dk, const Value& dv) {
    if (!cp_all_gather()) {
      return {dk, dv};
    }
    const Value mine = body.reduce_scatter(body.concat({dk, dv}, 1), groups_.cp, next_handle(), 2);
    return {body.slice(mine, 1, 0, s_.k), body.slice(mine, 1, s_.k, 2 * s_.k)};
  }

  // DeepSpeed-Ulysses: (b, heads, s, d) holding the device's tokens -> (b, heads / cp, seq, d),
  // the whole sequence for its share of the heads (an all-to-all over the context-parallel group),
  // and back. The sequence comes in group order of the chunks, which the causal mask follows.
  Value cp_to_heads(Body& body, const Value& x) {
    return body.all_to_all(x, groups_.cp, next_handle(), 1, 2);
  }
  Value cp_to_tokens(Body& body, const Value& x) {
    return body.all_to_all(x, groups_.cp, next_handle(), 2, 1);
  }

  // The fused attention kernel, causal or over every key: (the output, q's shape with v's head
  // dimension; the log-sum-exp of each query's scores, (b, heads, queries) f32).
  std::vector<Value> attention_kernel(Body& body, const Value& q, const Value& k, const Value& v,
                                      bool causal) {
    const Type lse{{q.type.dims[0], q.type.dims[1], q.type.dims[2]}, "f32"};
    const Type out{{q.type.dims[0], q.type.dims[1], q.type.dims[2], v.type.dims[3]}, q.type.element};
    return body.ops({out, lse},
                    fmt::format("stablehlo.custom_call @orrery.attention({}, {}, {}) {{backend_config = "
                                "\"{}\"}} : ({}, {}, {}) -> ({}, {})",
                                q.name, k.name, v.name, causal ? "causal" : "full", spell(q.type),
                                spell(k.type), spell(v.type), spell(out), spell(lse)));
  }
  // Its backward: (dq, dk, dv) from q, k, v, the output, its log-sum-exp and the output's gradient.
  std::vector<Value> attention_backward_kernel(Body& body, const Value& q, const Value& k, const Value& v,
                                               const Value& out, const Value& lse, const Value& dout,
                                               bool causal) {
    return body.ops(
        {q.type, k.type, v.type},
        fmt::format("stablehlo.custom_call @orrery.attention_backward({}, {}, {}, {}, {}, {}) "
                    "{{backend_config = \"{}\"}} : ({}, {}, {}, {}, {}, {}) -> ({}, {}, {})",
                    q.name, k.name, v.name, out.name, lse.name, dout.name, causal ? "causal" : "full",
                    spell(q.type), spell(k.type), spell(v.type), spell(out.type), spell(lse.type),
                    spell(dout.type), spell(q.type), spell(k.type), spell(v.type)));
  }

  // One step round the context-parallel ring: forward to the next member, or (`back`) to the
  // previous one.
  Value cp_ring_step(Body& body, const Value& a, bool back = false) {
    return back ? ring_step(body, a, groups_.cp, cp_ring_back_pairs_, true)
                : ring_step(body, a, groups_.cp, cp_ring_pairs_);
  }
  // The ring (Transformer Engine's "p2p" context parallelism, Megatron's default): the device's
  // keys and values (side by side) go round the context-parallel group, cp - 1 collective
  // permutes, each block's transfer running during the previous block's attention. Step 0
  // attends causally over the device's own block; at step i > 0 the block is device (d - i) mod
  // cp's, and with the balanced chunks exactly half of the query x key pairs are visible: when
  // d - i wraps below 0 (a later device's block), the device's later query chunk against the
  // whole block, otherwise its whole queries against the block's earlier chunk — the same work
  // either way. Written here for every step as the first case (an SPMD program picks by its
  // partition id; only costs are modelled). Each step's output is merged into the running one by
  // their log-sum-exps, in f32. Returns the output (b, a, s, d) bf16, its log-sum-exp and the
  // last block received (device d + 1's), which the backward pass starts from.
  std::tuple<Value, Value, Value> ring_attention(Body& body, const Value& qh, const Value& kh,
                                                 const Value& vh) {
    Value block = body.concat({kh, vh}, 1);
    Value next = cp_ring_step(body, block);
    const std::vector<Value> first = attention_kernel(body, qh, kh, vh, true);
    Value out = body.convert(first[0], "f32");
    Value lse = first[1];
    const std::uint64_t half = s_.s / 2;
    const Value late = body.slice(qh, 2, half, s_.s);
    for (std::uint32_t i = 1; i < job_.cp; ++i) {
      block = next;
      if (i + 1 < job_.cp) {
        next = cp_ring_step(body, block);
      }
      const std::vector<Value> part = attention_kernel(body, late, body.slice(block, 1, 0, s_.k),
                                                       body.slice(block, 1, s_.k, 2 * s_.k), false);
      const Value old_lse = body.slice(lse, 2, half, s_.s);
      const Value old_out = body.slice(out, 2, half, s_.s);
      // log(exp(a) + exp(b)) = m + log(exp(a - m) + exp(b - m)), m = max(a, b).
      const Value m = body.binary("maximum", old_lse, part[1]);
      const Value new_lse =
          body.add(m, body.unary("log", body.add(body.unary("exponential", body.sub(old_lse, m)),
                                                 body.unary("exponential", body.sub(part[1], m)))));
      const Dims rows{s_.b, s_.a, half, s_.d};
      const auto weight = [&](const Value& l) {
        return body.broadcast(body.unary("exponential", body.sub(l, new_lse)), rows, {0, 1, 2});
      };
      const Value merged = body.add(body.mul(old_out, weight(old_lse)),
                                    body.mul(body.convert(part[0], "f32"), weight(part[1])));
      out = body.concat({body.slice(out, 2, 0, half), merged}, 2);
      lse = body.concat({body.slice(lse, 2, 0, half), new_lse}, 2);
    }
    return {body.convert(out, "bf16"), lse, block};
  }
  // Its backward (Transformer Engine's order): the blocks go round the other way, from the last
  // one the forward pass received (device d + 1's) to the device's own, which comes back last
  // and is attended causally. Each block's key and value gradients travel with it, the device
  // adding its share before passing them on, and reach home with the block: cp - 1 permutes of
  // the blocks and cp - 1 of their gradients. The query gradients add up on the device.
  std::tuple<Value, Value, Value> ring_attention_backward(Body& body, const Value& qh, const Value& last,
                                                          const Value& out, const Value& lse,
                                                          const Value& dout) {
    const std::uint64_t half = s_.s / 2;
    const Value late = body.slice(qh, 2, half, s_.s);
    const Value late_out = body.slice(out, 2, half, s_.s);
    const Value late_lse = body.slice(lse, 2, half, s_.s);
    const Value late_dout = body.slice(dout, 2, half, s_.s);
    Value block = last;
    std::optional<Value> dkv, dq_late;
    for (std::uint32_t i = 0; i + 1 < job_.cp; ++i) {
      const Value next = cp_ring_step(body, block, true);
      const std::vector<Value> part = attention_backward_kernel(body, late, body.slice(block, 1, 0, s_.k),
                                                                body.slice(block, 1, s_.k, 2 * s_.k),
                                                                late_out, late_lse, late_dout, false);
      const Value mine = body.concat({part[1], part[2]}, 1);
      dkv = cp_ring_step(body, dkv ? body.add(*dkv, mine) : mine, true);
      dq_late = dq_late ? body.add(*dq_late, part[0]) : part[0];
      block = next;
    }
    // The device's own block, back home, with the other devices' shares of its gradients.
    const std::vector<Value> own = attention_backward_kernel(
        body, qh, body.slice(block, 1, 0, s_.k), body.slice(block, 1, s_.k, 2 * s_.k), out, lse, dout, true);
    const Value total = body.add(*dkv, body.concat({own[1], own[2]}, 1));
    const Value dq = body.concat(
        {body.slice(own[0], 2, 0, half), body.add(body.slice(own[0], 2, half, s_.s), *dq_late)}, 2);
    return {dq, body.slice(total, 1, 0, s_.k), body.slice(total, 1, s_.k, 2 * s_.k)};
  }

  std::vector<Value> layer_weights() const {
    std::vector<Value> weights;
    for (const Param& param : layer_params(s_)) {
      // Under FP8 the linear layers take their weights' FP8 copies (cast by the caller).
      weights.push_back(Value{"%" + param.name, Type{param.dims, fp8() && param.linear ? kE4M3 : "bf16"}});
    }
    return weights;
  }

  bool flash() const { return job_.attention == Attention::kFlash; }
  // Whether any tensor's optimizer state is sharded (for the module's header).
  bool sharded_optimizer() const {
    return (job_.zero || job_.fsdp) &&
           (groups_.dp.front().size() > 1 ||
            (moe() && !groups_.expert_dp.empty() && groups_.expert_dp.front().size() > 1));
  }
  // The devices that hold the same copy of a parameter: its gradients are reduced over them (in
  // buckets), and under ZeRO-1 its optimizer state is sharded over them -- over the shard groups
  // among them under hybrid sharding, whose shards the replicate groups then all-reduce.
  struct Replicas {
    const std::vector<std::vector<std::uint64_t>>* groups;
    std::uint64_t size;
    const std::vector<std::vector<std::uint64_t>>* shard_groups;  // = groups without hybrid sharding
    std::uint64_t shard_size;
    const std::vector<std::vector<std::uint64_t>>* replicate_groups;  // null without hybrid sharding
  };
  Replicas replicas(const Param& p) const {
    const bool expert = p.holder == Holder::kExpert;
    const std::uint64_t size = expert ? static_cast<std::uint64_t>(job_.dp / job_.ep) * job_.cp * job_.tp
                                      : static_cast<std::uint64_t>(job_.dp) * job_.cp;
    const auto* groups = expert ? &groups_.expert_dp : &groups_.dp;
    if (job_.shard_group == 0 || job_.shard_group == size) {
      return {groups, size, groups, size, nullptr};
    }
    return {groups, size, expert ? &groups_.expert_shard : &groups_.dp_shard, job_.shard_group,
            expert ? &groups_.expert_replicate : &groups_.dp_replicate};
  }
  // The optimizer state is sharded under ZeRO-1 and FSDP, the bf16 weights under FSDP only.
  bool sharded(const Param& p) const { return (job_.zero || job_.fsdp) && replicas(p).shard_size > 1; }
  bool weights_sharded(const Param& p) const { return job_.fsdp && replicas(p).shard_size > 1; }

  // Reduce-scatter of whole gradients (flattened, any shape) of parameters sharing one replica
  // group: each padded to one shard per member of the shard group as a [members, shard] block, the
  // blocks side by side, so that row r is member r's shard of every gradient and one reduce-scatter
  // leaves each member the sum of its row. Under hybrid sharding, `across` then all-reduces the
  // shards over the replicate groups (FSDP instead does so once, when a shard's microbatches are
  // in). Returns each parameter's shard.
  std::vector<Value> reduce_scatter_shards(Body& body, const std::vector<const Param*>& members,
                                           const std::vector<Value>& flats, bool across) {
    const Replicas group = replicas(*members.front());
    std::vector<Value> blocks;
    std::uint64_t row = 0;
    for (std::size_t i = 0; i < members.size(); ++i) {
      const std::uint64_t shard = shard_elements(*members[i]);
      blocks.push_back(
          body.reshape(body.pad_to(flats[i], shard * group.shard_size), {group.shard_size, shard}));
      row += shard;
    }
    const Value all = blocks.size() == 1 ? blocks.front() : body.concat(blocks, 1);
    Value mine =
        body.reduce_scatter(body.reshape(all, {group.shard_size * row}), *group.shard_groups, next_handle());
    if (across && group.replicate_groups != nullptr) {
      mine = body.all_reduce(mine, *group.replicate_groups, next_handle());
    }
    std::vector<Value> out;
    std::uint64_t offset = 0;
    for (const Param* p : members) {
      const std::uint64_t shard = shard_elements(*p);
      out.push_back(body.slice(mine, 0, offset, offset + shard));
      offset += shard;
    }
    return out;
  }
  // Its inverse for weights: the shards all-gathered over the group and cut back into whole
  // tensors.
  std::vector<Value> all_gather_shards(Body& body, const std::vector<const Param*>& members,
                                       const std::vector<Value>& shards) {
    const Replicas group = replicas(*members.front());
    std::uint64_t row = 0;
    for (const Param* p : members) {
      row += shard_elements(*p);
    }
    const Value gathered = body.all_gather(shards.size() == 1 ? shards.front() : body.concat(shards, 0),
                                           *group.shard_groups, next_handle());
    const Value rows = body.reshape(gathered, {group.shard_size, row});  // row r: member r's shards
    std::vector<Value> out;
    std::uint64_t offset = 0;
    for (const Param* p : members) {
      const std::uint64_t shard = shard_elements(*p);
      const Value block =
          body.reshape(body.slice(rows, 1, offset, offset + shard), {group.shard_size * shard});
      out.push_back(body.reshape(body.slice(block, 0, 0, elements(p->dims)), p->dims));
      offset += shard;
    }
    return out;
  }
  // Elements per gradient bucket: as given, or Megatron's default max(40M, 1M x dp).
  std::uint64_t bucket_elements() const {
    return job_.bucket_elements != 0 ? job_.bucket_elements
                                     : std::max<std::uint64_t>(40'000'000, 1'000'000ULL * job_.dp);
  }
  // Elements of a replica's optimizer-state shard of a tensor: ceil(elements / shard group size).
  std::uint64_t shard_elements(const Param& p) const {
    const std::uint64_t parts = replicas(p).shard_size;
    return (elements(p.dims) + parts - 1) / parts;
  }

  // What the backward pass reads of the attention core besides the context (which it keeps
  // anyway as the output projection's input, and which is the attention's output): q, k and v
  // (kv heads unexpanded: the backward expands them again), and flash's softmax statistics or
  // the naive path's probabilities.
  // Under Ulysses the kernel's operands, split by heads over the whole sequence.
  std::vector<Type> attention_saved_types() const {
    if (mla()) {  // flash only: q and k of the query/key head dimension, v of the value one
      const Type qk{{s_.b, s_.a, s_.s, qk_dim()}, "bf16"};
      return {qk, qk, Type{{s_.b, s_.a, s_.s, s_.dv}, "bf16"}, Type{{s_.b, s_.a, s_.s}, "f32"}};
    }
    const std::uint64_t split = ulysses() ? job_.cp : 1;
    const Type heads{{s_.b, s_.a / split, s_.s * split, s_.d}, "bf16"};
    const Type kv{{s_.b, s_.k / split, s_.s * split, s_.d}, "bf16"};
    if (flash() && cp_ring()) {  // the ring's last key/value block, k and v side by side
      return {heads, Type{{s_.b, 2 * s_.k, s_.s, s_.d}, "bf16"}, Type{{s_.b, s_.a, s_.s}, "f32"}};
    }
    if (flash()) {
      return {heads, kv, kv, Type{{s_.b, s_.a / split, s_.s * split}, "f32"}};
    }
    return {heads, kv, kv, Type{{s_.b, s_.a, s_.s, s_.sk}, "bf16"}};
  }

  // What the backward pass reads of the forward pass, in layer_forward's result order after y:
  // x, rs1, n1, the attention core's, context, h (after the attention residual), rs2, n2, the
  // gate and up projections, the SwiGLU output.
  std::vector<Type> saved_types() const {
    // Under FP8 the linear layers keep their inputs' FP8 casts (the experts' router reads the
    // bf16 norm output).
    std::vector<Type> types{local(), local_stats(), kept(local())};
    for (const Type& t : attention_saved_types()) {
      types.push_back(t);
    }
    // The attention's output: flash keeps its kernel's output (b, a, s, d), which its backward
    // reads, and the output projection's input is the same data (under FP8 the projection keeps its
    // FP8 cast too, last but for MLA's latents; under Ulysses the kernel's output is split by heads
    // and the projection keeps its input too, last); naive keeps the projection's input (n, a * d),
    // or its FP8 cast.
    const std::uint64_t split = ulysses() ? job_.cp : 1;
    const Type context = flash() ? Type{{s_.b, s_.a / split, s_.s * split, v_dim()}, "bf16"}
                                 : kept(Type{{s_.n, s_.a * s_.d}, "bf16"});
    for (const Type& t : {context, local(), local_stats(), moe() ? local() : kept(local())}) {
      types.push_back(t);
    }
    if (!moe()) {
      types.push_back(Type{{s_.n, 2 * s_.f}, "bf16"});
      types.push_back(kept(Type{{s_.n, s_.f}, "bf16"}));
    } else {
      for (const Type& t : moe_saved_types()) {
        types.push_back(t);
      }
    }
    if (s_.fs > 0) {
      if (fp8()) {
        types.push_back(kept(local()));  // the shared experts' FP8 input (the router reads bf16)
      }
      types.push_back(Type{{s_.n, 2 * s_.fs}, "bf16"});
      types.push_back(kept(Type{{s_.n, s_.fs}, "bf16"}));
    }
    if (projection_input_saved()) {
      types.push_back(kept(Type{{s_.n, s_.a * v_dim()}, "bf16"}));  // the output projection's input
    }
    for (const Type& t : mla_saved_types()) {
      types.push_back(t);
    }
    return types;
  }

  // Multi-head latent attention (DeepSeek-V2 and V3; Megatron's MLASelfAttention). Per token the
  // down projections (whole on every tensor-parallel device, on the device's own tokens under
  // sequence parallelism, as Megatron's duplicated linears run) give the key/value latent and the
  // shared rotary key, and with a query latent that one; each latent is normalised; the up
  // projections are column-parallel over the heads, their inputs gathered first under sequence
  // parallelism, and so is the rotary key. Each head's query is its non-rotary part and its
  // rotated part, its key the non-rotary part from the latent and the shared rotary key, its value
  // from the latent.
  bool mla() const { return s_.kl > 0; }
  std::uint64_t qk_dim() const { return s_.d + s_.dr; }
  std::uint64_t v_dim() const { return mla() ? s_.dv : s_.d; }
  // The index of w_dkv among a layer's weights (the latent parameters follow the MLP's).
  std::size_t mla_index() const { return layer_params(s_).size() - (s_.ql > 0 ? 5 : 3); }
  // What the backward reads of the latents, after everything else: the query latent, its norm's
  // statistics and output (under FP8 the output's cast, the up projection's operand), with a
  // query latent, then the key/value latent's.
  std::vector<Type> mla_saved_types() const {
    std::vector<Type> types;
    if (!mla()) {
      return types;
    }
    for (const std::uint64_t width : {s_.ql, s_.kl}) {
      if (width > 0) {
        types.insert(types.end(),
                     {Type{{rows(), width}, "bf16"}, local_stats(), kept(Type{{rows(), width}, "bf16"})});
      }
    }
    return types;
  }
  // The heads' q, k and v (b, heads, s, d) from the first norm's output, and what mla_saved_types
  // names.
  std::tuple<Value, Value, Value, std::vector<Value>> mla_forward(Body& body, const Value& n1,
                                                                  const std::vector<Value>& w) {
    const std::size_t m = mla_index();
    std::vector<Value> saved;
    Value q;
    // Under FP8 the GEMMs take FP8 operands (n1 is the norm's FP8 output already); each latent's
    // norm output is cast once, before the gather, and the cast kept for the weight gradient.
    if (s_.ql > 0) {
      const Value cq = linear(body, n1, w[m + 3], 1, 0, kE4M3, kE4M3);
      const auto [cqn, rs] = rms_norm_ops(body, cq, w[m + 4]);
      const Value cqn8 = cast8(body, cqn, kE4M3);
      saved = {cq, rs, cqn8};
      q = gather_linear(body, cqn8, w[1], 0, kE4M3, kE4M3, false).first;
    } else {
      q = gather_linear(body, n1, w[1], 0, kE4M3, kE4M3, false).first;
    }
    const Value ckr = linear(body, n1, w[m], 1, 0, kE4M3, kE4M3);  // the key/value latent and the rotary key
    const Value ckv = body.slice(ckr, 1, 0, s_.kl);
    const auto [ckvn, rs] = rms_norm_ops(body, ckv, w[m + 1]);
    const Value ckvn8 = cast8(body, ckvn, kE4M3);
    saved.insert(saved.end(), {ckv, rs, ckvn8});
    const Value kv = gather_linear(body, ckvn8, w[m + 2], 0, kE4M3, kE4M3, false).first;
    const Value kr = tp_gather(body, body.slice(ckr, 1, s_.kl, s_.kl + s_.dr));
    const Value k_rope = body.reshape(rope(body, body.reshape(kr, {s_.n, 1, s_.dr}), false), {s_.n, s_.dr});
    const Value q3 = body.reshape(q, {s_.n, s_.a, qk_dim()});
    const Value q_all =
        body.concat({body.slice(q3, 2, 0, s_.d), rope(body, body.slice(q3, 2, s_.d, qk_dim()), false)}, 2);
    const Value kv3 = body.reshape(kv, {s_.n, s_.a, s_.d + s_.dv});
    const Value k_all =
        body.concat({body.slice(kv3, 2, 0, s_.d), body.broadcast(k_rope, {s_.n, s_.a, s_.dr}, {0, 2})}, 2);
    const Value v_all = body.slice(kv3, 2, s_.d, s_.d + s_.dv);
    return {to_heads(body, body.reshape(q_all, {s_.n, s_.a * qk_dim()}), s_.a, qk_dim()),
            to_heads(body, body.reshape(k_all, {s_.n, s_.a * qk_dim()}), s_.a, qk_dim()),
            to_heads(body, body.reshape(v_all, {s_.n, s_.a * s_.dv}), s_.a, s_.dv), saved};
  }
  // Its backward from the heads' gradients: the first norm output's gradient and the weight
  // gradients of wq, then of the latent parameters in layer_params' order.
  std::pair<Value, std::vector<Value>> mla_backward(Body& body, const Value& dq, const Value& dk,
                                                    const Value& dv, const Value& n1,
                                                    const std::vector<Value>& latents,
                                                    const std::vector<Value>& w) {
    const std::size_t m = mla_index();
    const auto gathered_grad = [this](Body& b, const std::vector<Value>& o) {
      return linear(b, tp_gather(b, o[0]), o[1], 0, 0, kE4M3, kE5M2);
    };
    const auto local_grad = [this](Body& b, const std::vector<Value>& o) {
      return linear(b, o[0], o[1], 0, 0, kE4M3, kE5M2);
    };
    // Under FP8 each gradient into a GEMM is cast once (E5M2) for its input- and weight-gradient GEMMs.
    const Value dq3 = from_heads(body, dq, s_.a);
    const Value dq_all =
        cast8(body,
              body.reshape(
                  body.concat(
                      {body.slice(dq3, 2, 0, s_.d), rope(body, body.slice(dq3, 2, s_.d, qk_dim()), true)}, 2),
                  {s_.n, s_.a * qk_dim()}),
              kE5M2);
    const Value dk3 = from_heads(body, dk, s_.a);
    const Value dkv =
        cast8(body,
              body.reshape(body.concat({body.slice(dk3, 2, 0, s_.d), from_heads(body, dv, s_.a)}, 2),
                           {s_.n, s_.a * (s_.d + s_.dv)}),
              kE5M2);
    // The shared rotary key: its heads' gradients summed, rotated back, reduced over the group.
    const Value dk_rope = body.convert(
        body.reduce(body.convert(body.slice(dk3, 2, s_.d, qk_dim()), "f32"), {1}, "add"), "bf16");
    const Value dkr = tp_reduce(
        body, body.reshape(rope(body, body.reshape(dk_rope, {s_.n, 1, s_.dr}), true), {s_.n, s_.dr}));
    const std::size_t at = s_.ql > 0 ? 3 : 0;  // the key/value latent's saved values
    const Value dckvn = linear_reduce(body, dkv, w[m + 2], 1, kE5M2, kE4M3);
    const Value dw_ukv = weight_grad(body, {latents[at + 2], dkv}, gathered_grad);
    const auto [dckv, dw_kv_norm] =
        rms_norm_backward_ops(body, dckvn, latents[at], latents[at + 1], w[m + 1]);
    const Value dckr = cast8(body, body.concat({dckv, dkr}, 1), kE5M2);
    Value dn1 = linear(body, dckr, w[m], 1, 1, kE5M2, kE4M3);
    const Value dw_dkv = weight_grad(body, {n1, dckr}, local_grad);
    std::vector<Value> grads;
    if (s_.ql > 0) {
      const Value dcqn = linear_reduce(body, dq_all, w[1], 1, kE5M2, kE4M3);
      const Value dw_uq = weight_grad(body, {latents[2], dq_all}, gathered_grad);
      const auto [dcq_bf16, dw_q_norm] = rms_norm_backward_ops(body, dcqn, latents[0], latents[1], w[m + 4]);
      const Value dcq = cast8(body, dcq_bf16, kE5M2);
      dn1 = body.add(dn1, linear(body, dcq, w[m + 3], 1, 1, kE5M2, kE4M3));
      const Value dw_dq = weight_grad(body, {n1, dcq}, local_grad);
      grads = {dw_uq, dw_dkv, dw_kv_norm, dw_ukv, dw_dq, dw_q_norm};
    } else {
      dn1 = body.add(dn1, linear_reduce(body, dq_all, w[1], 1, kE5M2, kE4M3));
      grads = {weight_grad(body, {n1, dq_all}, gathered_grad), dw_dkv, dw_kv_norm, dw_ukv};
    }
    return {dn1, grads};
  }

  // Mixture of experts.
  bool moe() const { return job_.model.moe() && !dense_mode_; }
  std::uint64_t slots() const { return s_.e * s_.c; }  // dispatched rows per device: c per expert
  // What the experts' backward reads of their forward: the router's probabilities, each slot's
  // token, its flat (token, expert) index and its gate weight, the experts' inputs, gate and up
  // projections and SwiGLU outputs, and the experts' outputs back in slot order.
  std::vector<Type> moe_saved_types() const {
    return {Type{{s_.r, s_.e}, "f32"},
            Type{{slots(), 1}, "i32"},
            Type{{slots()}, "i32"},
            Type{{slots()}, "f32"},
            kept(Type{{s_.el, s_.t, s_.h}, "bf16"}),
            Type{{s_.el, s_.t, 2 * s_.fe}, "bf16"},
            kept(Type{{s_.el, s_.t, s_.fe}, "bf16"}),
            Type{{slots(), s_.h}, "bf16"}};
  }
  // Slot rows in expert order (c per expert, experts in order) to the local experts' inputs
  // [el, ep x c, h] and back: the all-to-all over the expert-parallel group sends the rows of
  // experts j x el ... to member j and receives, from each member in order, its rows for the
  // local experts.
  Value to_experts(Body& body, const Value& rows) {
    const Value received = job_.ep > 1 ? body.all_to_all(rows, groups_.ep, next_handle()) : rows;
    const Value blocks = body.reshape(received, {job_.ep, s_.el, s_.c, s_.h});
    return body.reshape(body.transpose(blocks, {1, 0, 2, 3}), {s_.el, s_.t, s_.h});
  }
  Value from_experts(Body& body, const Value& per_expert) {
    const Value blocks = body.reshape(per_expert, {s_.el, job_.ep, s_.c, s_.h});
    const Value rows = body.reshape(body.transpose(blocks, {1, 0, 2, 3}), {slots(), s_.h});
    return job_.ep > 1 ? body.all_to_all(rows, groups_.ep, next_handle()) : rows;
  }
  // A 1-D value cut or padded (with zeros: slot 0 of token 0, weight 0) to the slots.
  Value fit_slots(Body& body, const Value& a) {
    return a.type.dims[0] >= slots() ? body.slice(a, 0, 0, slots()) : body.pad_to(a, slots());
  }

  // The MoE MLP on the device's tokens n2 [r, h]: softmax router, top-k, the picks sorted by
  // expert and fitted to e x c slots in that order (routing is taken as balanced, so with a
  // capacity factor of 1 expert j's c slots hold its own picks; below 1 the last picks are cut,
  // above 1 zero-weight picks fill the spare slots: the shapes and costs of a capacity-limited
  // dispatch, though not which tokens an imbalanced one would drop), the all-to-all to the
  // experts, batched SwiGLU experts, the all-to-all back, and each token's outputs summed with its
  // gate weights.
  // Returns the output [r, h] and the saved values (moe_saved_types()).
  std::pair<Value, std::vector<Value>> moe_forward(Body& body, const Value& n2, const std::vector<Value>& w) {
    const Dims full{s_.r, s_.e};
    const Value logits = body.convert(body.matmul(n2, w[4], 1, 0), "f32");
    const Value max = body.reduce(logits, {1}, "maximum");
    const Value ex = body.unary("exponential", body.sub(logits, body.broadcast(max, full, {0})));
    const Value probs = body.div(ex, body.broadcast(body.reduce(ex, {1}, "add"), full, {0}));
    const std::vector<Value> chosen = body.top_k(probs, s_.top);
    const std::uint64_t picks = s_.r * s_.top;
    const Type pick_ids{{s_.r, s_.top}, "i32"};
    const Value token =
        body.reshape(body.op(pick_ids, fmt::format("stablehlo.iota dim = 0 : {}", spell(pick_ids))), {picks});
    const std::vector<Value> sorted =
        body.sort_by_first({body.reshape(chosen[1], {picks}), token, body.reshape(chosen[0], {picks})});
    const Value slot_expert = fit_slots(body, sorted[0]);
    const Value slot_token = fit_slots(body, sorted[1]);
    const Value slot_weight = fit_slots(body, sorted[2]);
    const Value slot_ids = body.reshape(slot_token, {slots(), 1});
    const Value experts = body.splat(slot_expert.type, fmt::format("{}", s_.e));
    const Value slot_flat = body.add(body.mul(slot_token, experts), slot_expert);
    const Value xe = cast8(body, to_experts(body, body.gather_rows(n2, slot_ids)), kE4M3);
    const Value gate_up = batched_linear(body, xe, w[5], 2, 1, kE4M3, kE4M3);
    const Value gate = body.slice(gate_up, 2, 0, s_.fe);
    const Value up = body.slice(gate_up, 2, s_.fe, 2 * s_.fe);
    const Value swiglu = cast8(body, body.mul(body.mul(gate, body.unary("logistic", gate)), up), kE4M3);
    const Value ye = batched_linear(body, swiglu, w[6], 2, 1, kE4M3, kE4M3);
    const Value slot_out = from_experts(body, ye);
    const Value weighted =
        body.mul(slot_out, body.broadcast(body.convert(slot_weight, "bf16"), {slots(), s_.h}, {0}));
    const Value out =
        body.scatter_add(body.splat(Type{{s_.r, s_.h}, "bf16"}, "0.000000e+00"), slot_ids, weighted);
    return {out, {probs, slot_ids, slot_flat, slot_weight, xe, gate_up, swiglu, slot_out}};
  }

  // Its backward from dy [r, h] and the saved values: (dn2 [r, h], drouter, dexperts_gate_up,
  // dexperts_down).
  std::vector<Value> moe_backward(Body& body, const Value& dy, const Value& n2, const std::vector<Value>& m,
                                  const std::vector<Value>& w) {
    const Value &probs = m[0], &slot_ids = m[1], &slot_flat = m[2], &slot_weight = m[3], &xe = m[4],
                &gate_up = m[5], &swiglu = m[6], &slot_out = m[7];
    // The combine's backward: each slot's output gradient (its token's, times its gate weight) and
    // its gate weight's gradient (the dot of its token's gradient with its output).
    const Value dy_slots = body.gather_rows(dy, slot_ids);
    const Value dweight =
        body.reduce(body.mul(body.convert(dy_slots, "f32"), body.convert(slot_out, "f32")), {1}, "add");
    const Value dslot_out =
        body.mul(dy_slots, body.broadcast(body.convert(slot_weight, "bf16"), {slots(), s_.h}, {0}));
    // The experts' backward.
    const Value dye = cast8(body, to_experts(body, dslot_out), kE5M2);
    const Value dswiglu = batched_linear(body, dye, w[6], 2, 2, kE5M2, kE4M3);
    const Value dw_down = weight_grad(body, {swiglu, dye}, [this](Body& b, const std::vector<Value>& o) {
      return batched_linear(b, o[0], o[1], 1, 1, kE4M3, kE5M2);
    });
    const Value dgate_up = cast8(body, swiglu_backward(body, dswiglu, gate_up), kE5M2);
    const Value dxe = batched_linear(body, dgate_up, w[5], 2, 2, kE5M2, kE4M3);
    const Value dw_gate_up = weight_grad(body, {xe, dgate_up}, [this](Body& b, const std::vector<Value>& o) {
      return batched_linear(b, o[0], o[1], 1, 1, kE4M3, kE5M2);
    });
    const Value dslot_in = from_experts(body, dxe);
    const Value dn2_experts =
        body.scatter_add(body.splat(Type{{s_.r, s_.h}, "bf16"}, "0.000000e+00"), slot_ids, dslot_in);
    // The router's: the gate weights' gradients at their (token, expert), the softmax backward,
    // and the router GEMM's two.
    const Value dprobs_flat = body.scatter_add(body.splat(Type{{s_.r * s_.e}, "f32"}, "0.000000e+00"),
                                               body.reshape(slot_flat, {slots(), 1}), dweight);
    const Value dprobs = body.reshape(dprobs_flat, {s_.r, s_.e});
    const Dims full{s_.r, s_.e};
    const Value row = body.reduce(body.mul(dprobs, probs), {1}, "add");
    const Value dlogits =
        body.convert(body.mul(probs, body.sub(dprobs, body.broadcast(row, full, {0}))), "bf16");
    const Value dn2 = body.add(dn2_experts, body.matmul(dlogits, w[4], 1, 1));
    const Value dw_router = weight_grad(
        body, {n2, dlogits}, [](Body& b, const std::vector<Value>& o) { return b.matmul(o[0], o[1], 0, 0); });
    return {dn2, dw_router, dw_gate_up, dw_down};
  }

  std::string layer_forward_function() {
    Body body;
    const Value x{"%x", local()};
    const std::vector<Value> w = layer_weights();
    // Attention.
    const auto norm1 =
        body.call(fp8() ? "rms_norm_fp8" : "rms_norm", {x, w[0]}, {kept(local()), local_stats()});
    // Under FP8 the norm writes its output in FP8 (before the sequence-parallel gather: an FP8
    // gather), which is also what the backward pass keeps.
    const Value n1 = norm1[0];
    Value qh, kh, vh;
    std::vector<Value> latents;  // multi-head latent attention: what its backward reads of them
    if (mla()) {
      std::tie(qh, kh, vh, latents) = mla_forward(body, n1, w);
    } else {
      const Value qkv = gather_linear(body, n1, w[1], 0, kE4M3, kE4M3, false).first;
      const Value q = rope(body, body.reshape(body.slice(qkv, 1, 0, s_.a * s_.d), {s_.n, s_.a, s_.d}), false);
      const Value k =
          rope(body, body.reshape(body.slice(qkv, 1, s_.a * s_.d, (s_.a + s_.k) * s_.d), {s_.n, s_.k, s_.d}),
               false);
      const Value v = body.reshape(body.slice(qkv, 1, (s_.a + s_.k) * s_.d, s_.q), {s_.n, s_.k, s_.d});
      qh = to_heads(body, body.reshape(q, {s_.n, s_.a * s_.d}), s_.a);
      kh = to_heads(body, body.reshape(k, {s_.n, s_.k * s_.d}), s_.k);
      vh = to_heads(body, body.reshape(v, {s_.n, s_.k * s_.d}), s_.k);
    }
    const auto [kg, vg] = cp_gather_kv(body, kh, vh);
    Value context;
    Value kernel_out;  // the attention's output as its backward reads it
    std::vector<Value> core;
    if (flash() && cp_ring()) {
      const auto [out, lse, last] = ring_attention(body, qh, kh, vh);
      context = kernel_out = out;
      core = {qh, last, lse};
    } else if (flash() && ulysses()) {
      const Value q2 = cp_to_heads(body, qh);
      const Value k2 = cp_to_heads(body, kh);
      const Value v2 = cp_to_heads(body, vh);
      const std::vector<Value> fused = attention_kernel(body, q2, k2, v2, true);
      kernel_out = fused[0];
      context = cp_to_tokens(body, kernel_out);
      core = {q2, k2, v2, fused[1]};
    } else if (flash()) {
      const std::vector<Value> fused = attention_kernel(body, qh, kg, vg, true);
      context = kernel_out = fused[0];
      core = {qh, kh, vh, fused[1]};
    } else {
      const Value kx = expand_kv(body, kg);
      const Value vx = expand_kv(body, vg);
      const Value scores = body.convert(body.dot(qh, kx, {0, 1}, {0, 1}, {3}, {3}), "f32");
      const Value scaled = body.add(
          body.mul(scores,
                   body.like(scores, fmt::format("{:e}", 1.0 / std::sqrt(static_cast<double>(s_.d))))),
          body.like(scores, "0.000000e+00"));  // the causal mask, added
      const Dims rows{s_.b, s_.a, s_.s, s_.sk};
      const Value max = body.reduce(scaled, {3}, "maximum");
      const Value e = body.unary("exponential", body.sub(scaled, body.broadcast(max, rows, {0, 1, 2})));
      const Value sum = body.reduce(e, {3}, "add");
      const Value probs = body.convert(body.div(e, body.broadcast(sum, rows, {0, 1, 2})), "bf16");
      context = body.dot(probs, vx, {0, 1}, {0, 1}, {3}, {2});
      core = {qh, kh, vh, probs};
    }
    const Value ctx = body.reshape(from_heads(body, context, s_.a), {s_.n, s_.a * v_dim()});
    const Value ctx8 = cast8(body, ctx, kE4M3);  // the output projection's input (FP8: its cast)
    const Value out = linear_reduce(body, ctx8, w[2], 0, kE4M3, kE4M3);
    const Value h = body.add(x, out);
    // SwiGLU MLP, or the experts.
    // The experts' router reads the bf16 norm output; the dense MLP takes the FP8 one.
    const bool cast_norm2 = fp8() && !moe();
    const auto norm2 = body.call(cast_norm2 ? "rms_norm_fp8" : "rms_norm", {h, w[3]},
                                 {cast_norm2 ? kept(local()) : local(), local_stats()});
    std::vector<Value> mlp_saved;
    Value mlp_out;
    Value n2 = norm2[0];
    if (moe()) {
      std::tie(mlp_out, mlp_saved) = moe_forward(body, n2, w);
      if (s_.fs > 0) {
        // The shared experts take the norm output's FP8 cast (cast once, before the gather).
        const Value shared_in = cast8(body, n2, kE4M3);
        if (fp8()) {
          mlp_saved.push_back(shared_in);
        }
        const auto [shared, saved] = dense_mlp_forward(body, shared_in, w[7], w[8]);
        mlp_out = body.add(mlp_out, shared);
        mlp_saved.insert(mlp_saved.end(), saved.begin(), saved.end());
      }
    } else {
      std::tie(mlp_out, mlp_saved) = dense_mlp_forward(body, n2, w[4], w[5]);
    }
    const Value y = body.add(h, mlp_out);
    std::vector<Value> arguments{x};
    arguments.insert(arguments.end(), w.begin(), w.end());
    std::vector<Value> results{y, x, norm1[1], n1};
    results.insert(results.end(), core.begin(), core.end());
    results.insert(results.end(), {flash() ? kernel_out : ctx8, h, norm2[1], n2});
    results.insert(results.end(), mlp_saved.begin(), mlp_saved.end());
    if (projection_input_saved()) {
      results.push_back(ctx8);
    }
    results.insert(results.end(), latents.begin(), latents.end());
    return function_text(layer_fn("layer_forward"), false, arguments, body, results);
  }

  // SwiGLU's backward: from the gradient of silu(gate) x up and the saved [gate | up] (their last
  // dimension), the gradient of [gate | up].
  Value swiglu_backward(Body& body, const Value& dswiglu, const Value& gate_up) {
    const std::size_t last = gate_up.type.dims.size() - 1;
    const std::uint64_t width = gate_up.type.dims[last] / 2;
    const Value gate = body.slice(gate_up, last, 0, width);
    const Value up = body.slice(gate_up, last, width, 2 * width);
    const Value sig = body.unary("logistic", gate);
    const Value dup = body.mul(dswiglu, body.mul(gate, sig));
    const Value one = body.like(gate, "1.000000e+00");
    const Value dsilu = body.mul(sig, body.add(one, body.mul(gate, body.sub(one, sig))));
    const Value dgate = body.mul(body.mul(dswiglu, up), dsilu);
    return body.concat({dgate, dup}, last);
  }

  // The dense SwiGLU MLP's backward from dy (the device's tokens) and the saved norm output,
  // gate and up projections and SwiGLU output: (dn2, [dw_gate_up, dw_down]). Under sequence
  // parallelism the region's inputs are gathered again (the saved norm output is the device's
  // tokens only), as Megatron does.
  std::pair<Value, std::vector<Value>> dense_mlp_backward(Body& body, const Value& dy, const Value& n2,
                                                          const Value& gate_up, const Value& swiglu,
                                                          const Value& w_gate_up, const Value& w_down) {
    const auto [dswiglu, gathered] =
        gather_linear(body, cast8(body, dy, kE5M2), w_down, 1, kE5M2, kE4M3, true);
    const Value dy_all = *gathered;
    const Value dw_down = weight_grad(body, {swiglu, dy_all}, [this](Body& b, const std::vector<Value>& o) {
      return linear(b, o[0], o[1], 0, 0, kE4M3, kE5M2);
    });
    const Value dgate_up = cast8(body, swiglu_backward(body, dswiglu, gate_up), kE5M2);
    const Value dn2 = linear_reduce(body, dgate_up, w_gate_up, 1, kE5M2, kE4M3);
    const Value dw_gate_up = weight_grad(body, {n2, dgate_up}, [this](Body& b, const std::vector<Value>& o) {
      return linear(b, tp_gather(b, o[0]), o[1], 0, 0, kE4M3, kE5M2);
    });
    return {dn2, {dw_gate_up, dw_down}};
  }

  // A dense SwiGLU MLP (column-parallel gate and up, row-parallel down) on the norm output n2:
  // (the output, the device's tokens; [gate_up, swiglu] for the backward pass).
  std::pair<Value, std::vector<Value>> dense_mlp_forward(Body& body, const Value& n2, const Value& w_gate_up,
                                                         const Value& w_down) {
    const std::uint64_t width = w_down.type.dims[0];
    const Value gate_up = gather_linear(body, n2, w_gate_up, 0, kE4M3, kE4M3, false).first;
    const Value gate = body.slice(gate_up, 1, 0, width);
    const Value up = body.slice(gate_up, 1, width, 2 * width);
    const Value swiglu = cast8(body, body.mul(body.mul(gate, body.unary("logistic", gate)), up), kE4M3);
    return {linear_reduce(body, swiglu, w_down, 0, kE4M3, kE4M3), {gate_up, swiglu}};
  }

  std::string layer_backward_function() {
    Body body;
    std::vector<Deferred> deferred;
    deferring_ = split_backward() ? &deferred : nullptr;
    const Value dy{"%dy", local()};
    const std::vector<Value> w = layer_weights();
    const std::vector<Type> saved_type = saved_types();
    std::vector<Value> saved;
    for (std::size_t i = 0; i < saved_type.size(); ++i) {
      saved.push_back(Value{fmt::format("%saved{}", i), saved_type[i]});
    }
    const std::size_t c = 3 + attention_saved_types().size();  // the first saved value after the core
    const Value &x = saved[0], &rs1 = saved[1], &n1 = saved[2];
    const Value &h = saved[c + 1], &rs2 = saved[c + 2], &n2 = saved[c + 3];
    // The output projection's input: naive keeps it (or its FP8 cast), flash its kernel's output
    // (and under FP8 the cast, last).
    // (Under FP8 the projection's input cast comes last but for the latents' saved values.)
    const Value ctx = !flash() ? saved[c]
                      : projection_input_saved()
                          ? saved[saved.size() - 1 - mla_saved_types().size()]
                          : body.reshape(from_heads(body, saved[c], s_.a), {s_.n, s_.a * v_dim()});
    std::vector<Value> mlp_grads;  // the MLP's weight gradients in parameter order
    Value dn2;
    if (moe()) {
      const auto m = saved.begin() + static_cast<std::ptrdiff_t>(c + 4);
      const std::vector<Value> grads = moe_backward(
          body, dy, n2, std::vector<Value>(m, m + static_cast<std::ptrdiff_t>(moe_saved_types().size())), w);
      dn2 = grads[0];
      mlp_grads.assign(grads.begin() + 1, grads.end());
      if (s_.fs > 0) {
        std::size_t at = c + 4 + moe_saved_types().size();
        const Value shared_in = fp8() ? saved[at++] : n2;
        const auto [dshared, shared_grads] =
            dense_mlp_backward(body, dy, shared_in, saved[at], saved[at + 1], w[7], w[8]);
        dn2 = body.add(dn2, dshared);
        mlp_grads.insert(mlp_grads.end(), shared_grads.begin(), shared_grads.end());
      }
    } else {
      std::tie(dn2, mlp_grads) = dense_mlp_backward(body, dy, n2, saved[c + 4], saved[c + 5], w[4], w[5]);
    }
    const auto norm2 = body.call("rms_norm_backward", {dn2, h, rs2, w[3]}, {local(), Type{{s_.h}, "bf16"}});
    const Value dh = body.add(dy, norm2[0]);
    // Attention.
    const auto [dctx, gathered] = gather_linear(body, cast8(body, dh, kE5M2), w[2], 1, kE5M2, kE4M3, true);
    const Value dh_all = *gathered;
    const Value dw_o = weight_grad(body, {ctx, dh_all}, [this](Body& b, const std::vector<Value>& o) {
      return linear(b, o[0], o[1], 0, 0, kE4M3, kE5M2);
    });
    const Value dcontext = to_heads(body, dctx, s_.a, v_dim());
    Value dq, dk, dv;  // dk and dv per kv head
    const Value& out = saved[c];        // the attention's output (flash)
    const Value& stats = saved[c - 1];  // the core's last: flash's log-sum-exp, naive's probabilities
    if (flash() && cp_ring()) {
      std::tie(dq, dk, dv) = ring_attention_backward(body, saved[3], saved[4], out, stats, dcontext);
    } else if (flash() && ulysses()) {
      const std::vector<Value> grads = attention_backward_kernel(body, saved[3], saved[4], saved[5], out,
                                                                 stats, cp_to_heads(body, dcontext), true);
      dq = cp_to_tokens(body, grads[0]);
      dk = cp_to_tokens(body, grads[1]);
      dv = cp_to_tokens(body, grads[2]);
    } else if (flash()) {
      const auto [kg, vg] = cp_gather_kv(body, saved[4], saved[5]);  // gathered again (context parallelism)
      const std::vector<Value> grads =
          attention_backward_kernel(body, saved[3], kg, vg, out, stats, dcontext, true);
      dq = grads[0];
      dk = grads[1];
      dv = grads[2];
    } else {
      const auto [kg, vg] = cp_gather_kv(body, saved[4], saved[5]);  // gathered again (context parallelism)
      const Value &qh = saved[3], &probs = stats;
      const Value kh = expand_kv(body, kg);
      const Value vh = expand_kv(body, vg);
      const Value dprobs = body.dot(dcontext, vh, {0, 1}, {0, 1}, {3}, {3});
      const Value dvx = body.dot(probs, dcontext, {0, 1}, {0, 1}, {2}, {2});
      const Value pf = body.convert(probs, "f32");
      const Value dpf = body.convert(dprobs, "f32");
      const Dims rows{s_.b, s_.a, s_.s, s_.sk};
      const Value row = body.reduce(body.mul(dpf, pf), {3}, "add");
      const Value dscores = body.mul(body.sub(dpf, body.broadcast(row, rows, {0, 1, 2})), pf);
      const Value ds = body.convert(
          body.mul(dscores,
                   body.like(dscores, fmt::format("{:e}", 1.0 / std::sqrt(static_cast<double>(s_.d))))),
          "bf16");
      dq = body.dot(ds, kh, {0, 1}, {0, 1}, {3}, {2});
      dk = reduce_kv(body, body.dot(ds, qh, {0, 1}, {0, 1}, {2}, {2}));
      dv = reduce_kv(body, dvx);
    }
    std::vector<Value> latent_grads;  // multi-head latent attention: its parameters' gradients
    Value dn1, dw_qkv;
    if (mla()) {
      const auto latents = saved.end() - static_cast<std::ptrdiff_t>(mla_saved_types().size());
      std::tie(dn1, latent_grads) =
          mla_backward(body, dq, dk, dv, n1, std::vector<Value>(latents, saved.end()), w);
    } else {
      dn1 = qkv_backward(body, dq, dk, dv, n1, w[1], dw_qkv);
    }
    const auto norm1 = body.call("rms_norm_backward", {dn1, x, rs1, w[0]}, {local(), Type{{s_.h}, "bf16"}});
    const Value dx = body.add(dh, norm1[0]);
    std::vector<Value> arguments{dy};
    arguments.insert(arguments.end(), w.begin(), w.end());
    arguments.insert(arguments.end(), saved.begin(), saved.end());
    std::vector<Value> results{dx, norm1[1], mla() ? latent_grads[0] : dw_qkv, dw_o, norm2[1]};
    results.insert(results.end(), mlp_grads.begin(), mlp_grads.end());
    if (mla()) {
      results.insert(results.end(), latent_grads.begin() + 1, latent_grads.end());
    }
    deferring_ = nullptr;
    if (split_backward()) {
      return split_function(layer_fn("layer_backward"), layer_fn("layer_weight_backward"), arguments, body,
                            results, 1, deferred, dense_mode_ ? dense_split_ : layer_split_);
    }
    return function_text(layer_fn("layer_backward"), false, arguments, body, results);
  }

  // The QKV projection's backward: the input gradient (reduced over the tensor-parallel group)
  // from q's, k's and v's gradients per head, and (into `dw_qkv`) the weight gradient.
  Value qkv_backward(Body& body, Value dq, Value dk, Value dv, const Value& n1, const Value& wqkv,
                     Value& dw_qkv) {
    std::tie(dk, dv) = cp_scatter_kv(body, dk, dv);
    const Value dq_tokens = rope(body, from_heads(body, dq, s_.a), true);
    const Value dk_tokens = rope(body, from_heads(body, dk, s_.k), true);
    const Value dv_tokens = from_heads(body, dv, s_.k);
    const Value dqkv = body.concat(
        {body.reshape(dq_tokens, {s_.n, s_.a * s_.d}), body.reshape(dk_tokens, {s_.n, s_.k * s_.d}),
         body.reshape(dv_tokens, {s_.n, s_.k * s_.d})},
        1);
    const Value dqkv8 = cast8(body, dqkv, kE5M2);
    const Value dn1 = linear_reduce(body, dqkv8, wqkv, 1, kE5M2, kE4M3);
    dw_qkv = weight_grad(body, {n1, dqkv8}, [this](Body& b, const std::vector<Value>& o) {
      return linear(b, tp_gather(b, o[0]), o[1], 0, 0, kE4M3, kE5M2);
    });
    return dn1;
  }

  Type index_type() const { return Type{{s_.n, 1}, "i32"}; }
  Type table_type() const { return Type{{s_.v, s_.h}, "bf16"}; }

  // The vocabulary-parallel embedding: each device gathers the rows of its vocabulary shard
  // (rows outside it read as zero) and the tensor-parallel group sums them.
  std::string embed_functions() {
    std::string text;
    {
      Body body;
      const Value table{"%table", table_type()};
      const Value ids{"%ids", index_type()};
      const Value gathered = body.op(
          act(),
          fmt::format(
              "\"stablehlo.gather\"({}, {}) <{{dimension_numbers = #stablehlo.gather<offset_dims = [1], "
              "collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = "
              "array<i64: 1, {}>}}> : ({}, {}) -> {}",
              table.name, ids.name, s_.h, spell(table.type), spell(ids.type), spell(act())));
      text += function_text("embed", false, {table, ids}, body, {tp_reduce(body, gathered)});
    }
    {
      Body body;
      const Value dx_local{"%dx", local()};
      const Value ids{"%ids", index_type()};
      const Value dx = tp_gather(body, dx_local);
      const Value zeros = body.splat(table_type(), "0.000000e+00");
      const std::string a = body.fresh();
      const std::string b = body.fresh();
      const std::string r = body.fresh();
      const Value dtable = body.op(
          table_type(),
          fmt::format(
              "\"stablehlo.scatter\"({}, {}, {}) <{{scatter_dimension_numbers = #stablehlo.scatter<"
              "update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], "
              "index_vector_dim = 1>}}> ({{\n"
              "    ^bb0({}: tensor<bf16>, {}: tensor<bf16>):\n"
              "      {} = stablehlo.add {}, {} : tensor<bf16>\n"
              "      stablehlo.return {} : tensor<bf16>\n"
              "    }}) : ({}, {}, {}) -> {}",
              zeros.name, ids.name, dx.name, a, b, r, a, b, r, spell(table_type()), spell(ids.type),
              spell(act()), spell(table_type())));
      text += function_text("embed_backward", false, {dx_local, ids}, body, {dtable});
    }
    return text;
  }

  // What the head's backward reads of its forward: the final norm's output (the device's tokens)
  // and statistics, and the softmax over the device's vocabulary shard (f32), as Megatron's
  // vocabulary-parallel cross-entropy keeps it.
  std::vector<Type> head_saved_types() const { return {local(), local_stats(), Type{{s_.n, s_.v}, "f32"}}; }

  // The target's one-hot row over the device's vocabulary shard.
  Value onehot(Body& body, const Value& labels) {
    const Type full{{s_.n, s_.v}, "i32"};
    const Value iota = body.op(full, fmt::format("stablehlo.iota dim = 1 : {}", spell(full)));
    const Value target = body.broadcast(body.reshape(labels, {s_.n}), full.dims, {0});
    const Type mask{full.dims, "i1"};
    const Value hit =
        body.op(mask, fmt::format("stablehlo.compare  EQ, {}, {} : ({}, {}) -> {}", iota.name, target.name,
                                  spell(iota.type), spell(target.type), spell(mask)));
    return body.convert(hit, "f32");
  }

  // The last stage's final norm, vocabulary-parallel LM head and softmax cross-entropy (Megatron's:
  // the logits' max, the sum of their exponentials and the target's logit are all-reduced over
  // the tensor-parallel group). Forward: (y, norm weight, head weight, labels) -> (loss, saved...);
  // backward, in the microbatch's backward unit: (saved..., y, norm weight, head weight, labels) ->
  // (dy, dnorm, dhead).
  std::string head_functions() {
    std::string text;
    const Value wn{"%final_norm", Type{{s_.h}, "bf16"}};
    // Tied: the embedding table [v, h] in place of the head [h, v].
    const Value wh{"%lm_head", tied() ? table_type() : Type{{s_.h, s_.v}, "bf16"}};
    const std::uint64_t head_rows = tied() ? 1 : 0;  // wh's dimension that holds the width
    const Value labels{"%labels", index_type()};
    const Value y{"%y", local()};
    {
      Body body;
      const auto norm = body.call("rms_norm", {y, wn}, {local(), local_stats()});
      const Value logits = body.convert(body.matmul(tp_gather(body, norm[0]), wh, 1, head_rows), "f32");
      const Dims full{s_.n, s_.v};
      const Value max = tp_all_reduce(body, body.reduce(logits, {1}, "maximum"), "maximum");
      const Value shifted = body.sub(logits, body.broadcast(max, full, {0}));
      const Value e = body.unary("exponential", shifted);
      const Value sum = tp_all_reduce(body, body.reduce(e, {1}, "add"));
      const Value probs = body.div(e, body.broadcast(sum, full, {0}));
      const Value target =
          tp_all_reduce(body, body.reduce(body.mul(shifted, onehot(body, labels)), {1}, "add"));
      const Value per_token = body.sub(body.unary("log", sum), target);
      const Value total = body.reduce(per_token, {0}, "add");
      const Value loss =
          body.mul(total, body.like(total, fmt::format("{:e}", 1.0 / static_cast<double>(s_.n))));
      text +=
          function_text("head_forward", false, {y, wn, wh, labels}, body, {loss, norm[0], norm[1], probs});
    }
    {
      Body body;
      std::vector<Deferred> deferred;
      deferring_ = split_backward() ? &deferred : nullptr;
      const Value normed{"%normed", local()};
      const Value rs{"%rs", local_stats()};
      const Value probs{"%probs", Type{{s_.n, s_.v}, "f32"}};
      const Value dlogits =
          body.convert(body.mul(body.sub(probs, onehot(body, labels)),
                                body.like(probs, fmt::format("{:e}", 1.0 / static_cast<double>(s_.n)))),
                       "bf16");
      const Value dnorm = tp_reduce(body, body.matmul(dlogits, wh, 1, 1 - head_rows));
      // Under sequence parallelism the norm's output is gathered again, as the layers do.
      const Value dhead = weight_grad(body, {normed, dlogits}, [this](Body& b, const std::vector<Value>& o) {
        return tied() ? b.matmul(o[1], tp_gather(b, o[0]), 0, 0) : b.matmul(tp_gather(b, o[0]), o[1], 0, 0);
      });
      const auto back = body.call("rms_norm_backward", {dnorm, y, rs, wn}, {local(), Type{{s_.h}, "bf16"}});
      deferring_ = nullptr;
      const std::vector<Value> arguments{normed, rs, probs, y, wn, wh, labels};
      text += split_backward()
                  ? split_function("head_backward", "head_weight_backward", arguments, body,
                                   {back[0], back[1], dhead}, 1, deferred, head_split_)
                  : function_text("head_backward", false, arguments, body, {back[0], back[1], dhead});
    }
    return text;
  }

  // The stage's parameters in argument order.
  std::vector<Param> params() const {
    std::vector<Param> out;
    if (first_) {
      out.push_back({"embedding", {s_.v, s_.h}});
    }
    for (std::uint32_t c = 0; c < job_.virtual_stages; ++c) {
      for (std::uint32_t l = 0; l < chunk_layers_[c]; ++l) {
        for (const Param& p : local_layer_params(chunk_local_base_[c] + l)) {
          out.push_back(
              {fmt::format("layer{}_{}", chunk_first_layer_[c] + l, p.name), p.dims, p.holder, p.linear});
        }
      }
    }
    if (last_) {
      out.push_back({"final_norm", {s_.h}, Holder::kReplicated});
      if (!tied()) {
        out.push_back({"lm_head", {s_.h, s_.v}});
      } else if (!first_) {
        out.push_back({"embedding_copy", {s_.v, s_.h}});  // the first stage's table, tied
      }
    }
    return out;
  }

  bool tied() const { return job_.model.tied_embeddings; }
  // The tied embedding's gradient exchange between the first and the last stage: the channel from
  // the first (`from_first`) or from the last, above every p2p_handle.
  std::uint64_t tied_handle(bool from_first) const {
    return 1 + 2ULL * job_.pp * job_.virtual_stages * job_.micro_batches + (from_first ? 0 : 1);
  }

  std::uint64_t p2p_handle(std::uint32_t from_stage, bool backward, std::uint32_t micro) const {
    // One channel per (virtual) stage boundary, direction and microbatch.
    return 1 + (static_cast<std::uint64_t>(from_stage) * 2 + (backward ? 1 : 0)) * job_.micro_batches + micro;
  }

  std::string pairs() const {
    std::vector<std::string> rows;
    for (std::uint64_t i = 0; i < static_cast<std::uint64_t>(job_.dp) * job_.cp * job_.tp; ++i) {
      rows.push_back(fmt::format("[{}, {}]", i, i));
    }
    return fmt::format("dense<[{}]> : tensor<{}x2xi64>", fmt::join(rows, ", "), rows.size());
  }

  void send(Body& body, const Value& value, std::uint64_t handle) {
    const Value token = body.op(Type{{}, "token"}, "stablehlo.create_token : !stablehlo.token");
    body.line(fmt::format(
        "{} = \"stablehlo.send\"({}, {}) {{channel_handle = #stablehlo.channel_handle<handle = {}, type = "
        "1>, "
        "is_host_transfer = false, source_target_pairs = {}}} : ({}, !stablehlo.token) -> !stablehlo.token",
        body.fresh(), value.name, token.name, handle, pairs(), spell(value.type)));
  }

  Value recv(Body& body, const Type& type, std::uint64_t handle) {
    const Value token = body.op(Type{{}, "token"}, "stablehlo.create_token : !stablehlo.token");
    const std::vector<Value> results = body.ops(
        {type, Type{{}, "token"}},
        fmt::format(
            "\"stablehlo.recv\"({}) {{channel_handle = #stablehlo.channel_handle<handle = {}, type = 1>, "
            "is_host_transfer = false, source_target_pairs = {}}} : (!stablehlo.token) -> ({}, "
            "!stablehlo.token)",
            token.name, handle, pairs(), spell(type)));
    return results[0];
  }

  // Holds `value` until `after` is computed: the schedule's order.
  Value after(Body& body, const Value& value, const std::optional<Value>& prior) {
    if (!prior) {
      return value;
    }
    return body.barrier({value, *prior})[0];
  }

  std::string main_function() {
    Body body;
    const std::vector<Param> stage_params = params();
    const std::string grad_element = job_.grads_in_bf16 ? "bf16" : "f32";
    // Arguments: per parameter its bf16 working copy, f32 master copy and AdamW moments.
    std::vector<Value> arguments;
    std::vector<Value> weights, masters, firsts, seconds;
    for (const Param& p : stage_params) {
      // The weights: whole, or (FSDP) this replica's shard of the flattened tensor; the optimizer
      // state: whole, or its shard (ZeRO-1, FSDP).
      weights.push_back(
          Value{"%" + p.name, Type{weights_sharded(p) ? Dims{shard_elements(p)} : p.dims, "bf16"}});
      const Dims state = sharded(p) ? Dims{shard_elements(p)} : p.dims;
      masters.push_back(Value{"%" + p.name + "_master", Type{state, "f32"}});
      firsts.push_back(Value{"%" + p.name + "_m", Type{state, "f32"}});
      seconds.push_back(Value{"%" + p.name + "_v", Type{state, "f32"}});
    }
    const std::uint64_t micro = job_.micro_batches;
    const Value tokens{"%tokens", Type{{micro, s_.n, 1}, "i32"}};
    const Value labels{"%labels", Type{{micro, s_.n, 1}, "i32"}};
    if (first_) {
      arguments.push_back(tokens);
    }
    if (last_) {
      arguments.push_back(labels);
    }
    for (const auto* list : {&weights, &masters, &firsts, &seconds}) {
      arguments.insert(arguments.end(), list->begin(), list->end());
    }
    const std::size_t layer_base = first_ ? 1 : 0;
    auto micro_ids = [&](const Value& all, std::uint32_t m) {
      return body.reshape(body.slice(all, 0, m, m + 1), {s_.n, 1});
    };

    // Gradients: accumulated over microbatches, then reduced over the data-parallel group in
    // buckets (Megatron's DDP): a gradient joins the open bucket when its last microbatch's part is
    // in, and a bucket is reduced as soon as it holds `bucket_elements()`, so the reductions
    // overlap the rest of the backward pass; what remains is reduced at its end.
    std::vector<std::optional<Value>> grads(stage_params.size());
    std::vector<std::uint32_t> seen(stage_params.size(), 0);
    // One open bucket per kind of replica group (Megatron keeps the experts' gradients in buffers
    // of their own): the dense parameters' and the experts'.
    struct Open {
      std::vector<std::size_t> members;
      std::uint64_t elements = 0;
    };
    Open open_dense, open_expert;
    std::vector<std::vector<std::size_t>> buckets;  // in the order they were reduced
    std::vector<std::size_t> replicated;            // sequence parallelism: gradients held back
    std::vector<std::size_t> reduced;               // FSDP: reduce-scattered gradients, final
    auto flatten = [&](std::size_t p) { return body.reshape(*grads[p], {elements(grads[p]->type.dims)}); };
    auto reduce_open = [&](Open& open) {
      if (open.members.empty()) {
        return;
      }
      const Replicas group = replicas(stage_params[open.members.front()]);
      if (weights_sharded(stage_params[open.members.front()])) {
        // FSDP's shards, reduce-scattered every microbatch: all-reduced over the replicate groups
        // (finish() buckets them only under hybrid sharding).
        ORRERY_ASSERT(group.replicate_groups != nullptr,
                      "FSDP shards are bucketed only under hybrid sharding");
        std::vector<Value> flats;
        for (const std::size_t p : open.members) {
          flats.push_back(*grads[p]);
        }
        const Value sum = body.all_reduce(flats.size() == 1 ? flats.front() : body.concat(flats, 0),
                                          *group.replicate_groups, next_handle());
        std::uint64_t offset = 0;
        for (const std::size_t p : open.members) {
          const std::uint64_t shard = elements(grads[p]->type.dims);
          grads[p] = body.slice(sum, 0, offset, offset + shard);
          offset += shard;
        }
      } else if (sharded(stage_params[open.members.front()])) {
        std::vector<const Param*> members;
        std::vector<Value> flats;
        for (const std::size_t p : open.members) {
          members.push_back(&stage_params[p]);
          flats.push_back(flatten(p));
        }
        const std::vector<Value> mine = reduce_scatter_shards(body, members, flats, true);
        for (std::size_t i = 0; i < open.members.size(); ++i) {
          grads[open.members[i]] = mine[i];
        }
      } else if (group.size > 1) {
        std::vector<Value> flats;
        for (const std::size_t p : open.members) {
          flats.push_back(flatten(p));
        }
        const Value sum = body.all_reduce(flats.size() == 1 ? flats.front() : body.concat(flats, 0),
                                          *group.groups, next_handle());
        std::uint64_t offset = 0;
        for (const std::size_t p : open.members) {
          const Dims& dims = stage_params[p].dims;
          grads[p] = body.reshape(body.slice(sum, 0, offset, offset + elements(dims)), dims);
          offset += elements(dims);
        }
      }
      buckets.push_back(open.members);
      open = Open{};
    };
    auto to_bucket = [&](std::size_t p) {
      Open& open = stage_params[p].holder == Holder::kExpert ? open_expert : open_dense;
      open.members.push_back(p);
      open.elements += elements(grads[p]->type.dims);  // what the bucket reduces: whole, or (FSDP) a shard
      if (open.elements >= bucket_elements()) {
        reduce_open(open);
      }
    };
    // A gradient whose microbatches are all in: FSDP's shards are final unless hybrid sharding
    // all-reduces them across the replicate groups; the rest wait in buckets.
    auto finish = [&](std::size_t p) {
      if (weights_sharded(stage_params[p]) && replicas(stage_params[p]).replicate_groups == nullptr) {
        reduced.push_back(p);
      } else {
        to_bucket(p);
      }
    };
    auto accumulate = [&](std::size_t param, const Value& grad) {
      // Each microbatch adds into the accumulator as its own kernel, in place (Megatron's
      // main_grad): the barrier keeps the chain of adds from fusing into one kernel at the end,
      // which would hold every microbatch's gradients until then.
      const Value g = body.convert(grad, grad_element);
      grads[param] = grads[param] ? body.barrier({body.add(*grads[param], g)})[0] : g;
      // Tied on one stage, the embedding takes the lookup's and the head's gradients.
      const std::uint32_t parts = tied() && first_ && last_ && param == 0 ? 2 : 1;
      if (++seen[param] == parts * job_.micro_batches) {
        if (sp() && stage_params[param].holder == Holder::kReplicated) {
          replicated.push_back(param);  // summed over the tensor-parallel group first, at the end
        } else {
          finish(param);
        }
      }
    };
    // FSDP (ZeRO-3): a unit's parameters (the embedding, a layer, the head) are gathered whole
    // before each use and dropped after it; a unit's gradients are reduce-scattered over the
    // replicas as soon as its backward has computed them, every microbatch, and each replica
    // accumulates its shard. Parameters whose group is one device are whole and take the path
    // above. `trigger`, when given, holds the gather until it is computed: one unit ahead, as
    // FSDP prefetches.
    auto by_group = [&](const std::vector<std::size_t>& unit) {
      std::vector<std::vector<std::size_t>> parts;  // positions in `unit`: non-expert, expert
      parts.resize(2);
      for (std::size_t i = 0; i < unit.size(); ++i) {
        parts[stage_params[unit[i]].holder == Holder::kExpert ? 1 : 0].push_back(i);
      }
      return parts;
    };
    std::vector<std::optional<Value>> fp8_weights(stage_params.size());
    std::vector<std::optional<Value>> unsharded(stage_params.size());  // FSDP no_sync: whole gradients
    std::vector<std::uint32_t> unsharded_seen(stage_params.size(), 0);
    auto whole = [&](const std::vector<std::size_t>& unit, const std::optional<Value>& trigger) {
      std::vector<Value> out(unit.size());
      for (const std::vector<std::size_t>& part : by_group(unit)) {
        if (part.empty()) {
          continue;
        }
        if (!weights_sharded(stage_params[unit[part.front()]])) {
          for (const std::size_t i : part) {
            out[i] = weights[unit[i]];
          }
          continue;
        }
        std::vector<const Param*> members;
        std::vector<Value> shards;
        for (const std::size_t i : part) {
          members.push_back(&stage_params[unit[i]]);
          shards.push_back(weights[unit[i]]);
        }
        if (trigger) {
          shards.push_back(*trigger);
          shards = body.barrier(shards);
          shards.pop_back();
        }
        const std::vector<Value> gathered = all_gather_shards(body, members, shards);
        for (std::size_t j = 0; j < part.size(); ++j) {
          out[part[j]] = gathered[j];
        }
      }
      // FP8: the linear layers' weights are cast once per step, at their first use, and the FP8
      // copies kept (Megatron's first-microbatch cast with Transformer Engine); gathered (FSDP)
      // weights are cast after each gather.
      for (std::size_t i = 0; i < unit.size() && fp8(); ++i) {
        const std::size_t p = unit[i];
        if (!stage_params[p].linear) {
          continue;
        }
        if (weights_sharded(stage_params[p])) {
          out[i] = cast8(body, out[i], kE4M3);
        } else {
          if (!fp8_weights[p]) {
            fp8_weights[p] = cast8(body, out[i], kE4M3);
          }
          out[i] = *fp8_weights[p];
        }
      }
      return out;
    };
    auto reduce_unit = [&](const std::vector<std::size_t>& unit, const std::vector<Value>& unit_grads) {
      for (const std::vector<std::size_t>& part : by_group(unit)) {
        if (part.empty()) {
          continue;
        }
        if (!weights_sharded(stage_params[unit[part.front()]])) {
          for (const std::size_t i : part) {
            accumulate(unit[i], unit_grads[i]);
          }
          continue;
        }
        std::vector<const Param*> members;
        std::vector<Value> flats;
        for (const std::size_t i : part) {
          members.push_back(&stage_params[unit[i]]);
          const Value g = body.convert(unit_grads[i], grad_element);
          flats.push_back(body.reshape(g, {elements(g.type.dims)}));
        }
        if (job_.no_sync) {
          // FSDP's no_sync: the unit's whole gradients accumulate on the device, each microbatch in
          // place as its own kernel; only the last microbatch reduce-scatters their sum.
          for (std::size_t j = 0; j < part.size(); ++j) {
            std::optional<Value>& sum = unsharded[unit[part[j]]];
            flats[j] = sum ? body.barrier({body.add(*sum, flats[j])})[0] : flats[j];
            sum = flats[j];
          }
          if (++unsharded_seen[unit[part.front()]] < job_.micro_batches) {
            continue;
          }
        }
        const std::vector<Value> mine = reduce_scatter_shards(body, members, flats, false);
        for (std::size_t j = 0; j < part.size(); ++j) {
          if (job_.no_sync) {
            seen[unit[part[j]]] = job_.micro_batches - 1;  // the one shard stands for every microbatch
          }
          accumulate(unit[part[j]], mine[j]);
        }
      }
    };
    auto layer_unit = [&](std::uint32_t l) {
      std::vector<std::size_t> unit;
      for (std::size_t p = 0; p < layer_param_count_[l]; ++p) {
        unit.push_back(layer_base + layer_param_base_[l] + p);
      }
      return unit;
    };
    std::optional<Value> loss;
    std::optional<Value> prior;  // the end of the previous unit of the schedule
    std::vector<std::vector<std::vector<Value>>> stash(micro);  // per microbatch, per layer
    std::vector<std::vector<Value>> head_stash(micro);          // the last stage's head, per microbatch
    // Zero-bubble schedules: what each microbatch's B left for its W (B's own gradients, then the
    // weight gradients' operands), per layer and for the head.
    std::vector<std::vector<std::vector<Value>>> pending(micro, std::vector<std::vector<Value>>(layers_));
    std::vector<std::vector<Value>> head_pending(micro);
    const std::size_t head_base = layer_base + layer_param_base_[layers_];
    // Tied on one stage: the head reads the embedding (parameter 0).
    const std::vector<std::size_t> head_unit{head_base, tied() && first_ ? 0 : head_base + 1};
    // Per kind of layer (index 1: a mixture-of-experts model's dense layers): the functions' names
    // and result types, and how a zero-bubble schedule splits the backward.
    struct Kind {
      std::string forward, backward, weight_backward;
      std::vector<Type> forward_results, backward_results;
      const Split* split;
    };
    std::array<Kind, 2> kinds;
    const auto describe = [&](Kind& kind) {
      kind.forward = layer_fn("layer_forward");
      kind.backward = layer_fn("layer_backward");
      kind.weight_backward = layer_fn("layer_weight_backward");
      kind.forward_results = {local()};
      for (const Type& t : saved_types()) {
        kind.forward_results.push_back(t);
      }
      kind.backward_results = {local()};
      for (const Param& p : layer_params(s_)) {
        kind.backward_results.push_back(Type{p.dims, "bf16"});
      }
      kind.split = dense_mode_ ? &dense_split_ : &layer_split_;
    };
    describe(kinds[0]);
    as_dense([&] { describe(kinds[1]); });
    const auto kind_of = [&](std::uint32_t l) -> const Kind& { return kinds[dense_local(l) ? 1 : 0]; };

    // One unit of the schedule: microbatch m through model chunk c (virtual stage c x pp + stage).
    const std::uint32_t virtual_count = job_.pp * job_.virtual_stages;
    auto forward = [&](std::uint32_t m, std::uint32_t c) {
      const std::uint32_t vs = c * job_.pp + stage_;
      Value x;
      if (vs == 0) {
        const Value ids = after(body, micro_ids(tokens, m), prior);
        x = body.call("embed", {whole({0}, prior)[0], ids}, {local()})[0];
      } else {
        x = after(body, recv(body, local(), p2p_handle(vs - 1, false, m)), prior);
      }
      stash[m].resize(layers_);
      std::optional<Value> trigger = prior;  // the previous layer's input
      for (std::uint32_t l = chunk_local_base_[c]; l < chunk_local_base_[c] + chunk_layers_[c]; ++l) {
        std::vector<Value> args{x};
        const auto w = whole(layer_unit(l), trigger);
        trigger = x;
        args.insert(args.end(), w.begin(), w.end());
        const std::vector<Value> results = body.call(kind_of(l).forward, args, kind_of(l).forward_results);
        if (job_.recompute == Recompute::kFull) {
          stash[m][l] = {x};
        } else {
          stash[m][l].assign(results.begin() + 1, results.end());
        }
        x = results[0];
      }
      if (vs + 1 == virtual_count) {
        std::vector<Type> types{Type{{}, "f32"}};
        for (const Type& t : head_saved_types()) {
          types.push_back(t);
        }
        const auto hw = whole(head_unit, trigger);
        const auto head = body.call("head_forward", {x, hw[0], hw[1], micro_ids(labels, m)}, types);
        loss = loss ? body.add(*loss, head[0]) : head[0];
        head_stash[m] = {head[1], head[2], head[3], x};
        prior = head[0];
      } else {
        send(body, x, p2p_handle(vs, false, m));
        prior = x;
      }
    };

    auto backward = [&](std::uint32_t m, std::uint32_t c) {
      const std::uint32_t vs = c * job_.pp + stage_;
      Value dy;
      if (vs + 1 == virtual_count) {
        std::vector<Value> args = head_stash[m];
        args[0] = after(body, args[0], prior);
        const auto hw = whole(head_unit, prior);
        args.insert(args.end(), {hw[0], hw[1], micro_ids(labels, m)});
        if (split_backward()) {
          const auto head = body.call("head_backward", args, head_split_.b_results);
          dy = head[0];
          head_pending[m].assign(head.begin() + 1, head.end());
        } else {
          const auto head =
              body.call("head_backward", args,
                        {local(), Type{{s_.h}, "bf16"}, tied() ? table_type() : Type{{s_.h, s_.v}, "bf16"}});
          dy = head[0];
          reduce_unit(head_unit, {head[1], head[2]});
        }
        head_stash[m].clear();
      } else {
        dy = after(body, recv(body, local(), p2p_handle(vs, true, m)), prior);
      }
      std::optional<Value> trigger = prior;  // the gradient into the layer above
      for (std::uint32_t i = chunk_local_base_[c] + chunk_layers_[c]; i-- > chunk_local_base_[c];) {
        const auto w = whole(layer_unit(i), trigger);
        trigger = dy;
        std::vector<Value> saved = stash[m][i];
        if (job_.recompute == Recompute::kFull) {
          std::vector<Value> args{saved[0]};
          args.insert(args.end(), w.begin(), w.end());
          const std::vector<Value> again =
              body.call(kind_of(i).forward, after_args(body, args, dy), kind_of(i).forward_results);
          saved.assign(again.begin() + 1, again.end());
        }
        std::vector<Value> args{dy};
        args.insert(args.end(), w.begin(), w.end());
        args.insert(args.end(), saved.begin(), saved.end());
        if (split_backward()) {
          const std::vector<Value> results =
              body.call(kind_of(i).backward, args, kind_of(i).split->b_results);
          dy = results[0];
          pending[m][i].assign(results.begin() + 1, results.end());
        } else {
          const std::vector<Value> results =
              body.call(kind_of(i).backward, args, kind_of(i).backward_results);
          dy = results[0];
          reduce_unit(layer_unit(i), std::vector<Value>(results.begin() + 1, results.end()));
        }
        stash[m][i].clear();
      }
      if (vs == 0) {
        reduce_unit({0}, {body.call("embed_backward", {dy, micro_ids(tokens, m)}, {table_type()})[0]});
      } else {
        send(body, dy, p2p_handle(vs - 1, true, m));
      }
      prior = dy;
    };

    // A zero-bubble schedule's W unit: microbatch m's weight gradients, layer by layer in the order
    // B ran them (the head first on the last stage), each from the operands B left, which wait
    // for the previous unit of the schedule; then the gradients are accumulated (and reduced) as
    // an unsplit backward does.
    auto weight = [&](std::uint32_t m) {
      std::vector<Value> outputs;
      auto run = [&](const std::string& function, const Split& split, std::vector<Value>& left) {
        const auto own = left.begin() + static_cast<std::ptrdiff_t>(split.b_gradients);
        std::vector<Value> operands(own, left.end());
        if (prior) {
          operands.push_back(*prior);
          operands = body.barrier(operands);
          operands.pop_back();
        }
        const std::vector<Value> w = body.call(function, operands, split.w_results);
        outputs.insert(outputs.end(), w.begin(), w.end());
        std::vector<Value> gradients = split.gradients(std::vector<Value>(left.begin(), own), w);
        left.clear();
        return gradients;
      };
      if (last_) {
        reduce_unit(head_unit, run("head_weight_backward", head_split_, head_pending[m]));
      }
      for (std::uint32_t i = layers_; i-- > 0;) {
        reduce_unit(layer_unit(i), run(kind_of(i).weight_backward, *kind_of(i).split, pending[m][i]));
      }
      // The next unit waits for every weight gradient of this one.
      prior = body.barrier(outputs)[0];
    };

    // The schedule: `warmup` forward units, then one forward and one backward alternately, then
    // the remaining backward units. Unit k of a direction is (microbatch, chunk); without
    // interleaving every unit is chunk 0 and microbatch k. Interleaved (Megatron's schedule,
    // Narayanan et al. 2021): the microbatches go in groups of pp, each group through chunk 0,
    // then chunk 1, ... forward and through the last chunk first backward; the warm-up is
    // 2 (pp - stage - 1) + (v - 1) pp units, or every unit when there are only pp microbatches.
    const std::uint32_t v = job_.virtual_stages;
    const std::uint32_t total = job_.micro_batches * v;
    std::uint32_t warmup = 0;
    if (job_.schedule == PipelineSchedule::kGPipe) {
      warmup = total;
    } else if (v == 1) {
      warmup = std::min<std::uint32_t>(job_.pp - stage_ - 1, total);
    } else {
      warmup = job_.micro_batches == job_.pp
                   ? total
                   : std::min<std::uint32_t>(2 * (job_.pp - stage_ - 1) + (v - 1) * job_.pp, total);
    }
    auto micro_of = [&](std::uint32_t k) { return (k / (job_.pp * v)) * job_.pp + k % job_.pp; };
    auto chunk_of = [&](std::uint32_t k) { return v == 1 ? 0 : (k / job_.pp) % v; };
    auto forward_unit = [&](std::uint32_t k) {
      if (v == 1) {
        forward(k, 0);
      } else {
        forward(micro_of(k), chunk_of(k));
      }
    };
    auto backward_unit = [&](std::uint32_t k) {
      if (v == 1) {
        backward(k, 0);
      } else {
        backward(micro_of(k), v - 1 - chunk_of(k));
      }
    };
    std::uint32_t next_forward = 0;
    std::uint32_t next_backward = 0;
    for (; next_forward < warmup; ++next_forward) {
      forward_unit(next_forward);
    }
    // ZB-H1 (Qi et al. 2024): 1F1B's order, with the W of microbatch j after the B of microbatch
    // j + stage (stage 0 runs each W right after its B), the rest at the end: every stage then
    // holds at most pp microbatches between F and W, as 1F1B's first stage does.
    std::uint32_t next_weight = 0;
    while (next_backward < total) {
      if (next_forward < total) {
        forward_unit(next_forward++);
      }
      backward_unit(next_backward++);
      if (split_backward() && next_backward > stage_) {
        weight(next_weight++);
      }
    }
    while (split_backward() && next_weight < total) {
      weight(next_weight++);
    }

    // Sequence parallelism: each device's gradients of the norm weights (and of the router) cover
    // its tokens only; one all-reduce over the tensor-parallel group sums them all (Megatron's
    // all-reduce of the layer-norm gradients), then they are reduced over the data-parallel group
    // like the rest.
    if (!replicated.empty()) {
      std::vector<Value> flats;
      for (const std::size_t p : replicated) {
        flats.push_back(flatten(p));
      }
      const Value sum = body.all_reduce(flats.size() == 1 ? flats.front() : body.concat(flats, 0), groups_.tp,
                                        next_handle());
      std::uint64_t offset = 0;
      for (const std::size_t p : replicated) {
        const Dims dims = grads[p]->type.dims;  // whole, or (FSDP) this replica's shard
        const Value part = body.slice(sum, 0, offset, offset + elements(dims));
        grads[p] = dims.size() == 1 ? part : body.reshape(part, dims);
        offset += elements(dims);
        finish(p);
      }
    }
    reduce_open(open_dense);
    reduce_open(open_expert);
    // Tied embeddings over stages: once the data-parallel reduction is done, the first stage's
    // table and the last stage's copy add their gradients (what the device holds: whole, or its
    // ZeRO-1 shard), as Megatron's finalize_model_grads all-reduces the embedding group after the
    // data-parallel reduction: a send and a recv each way, device i to device i.
    if (tied() && first_ != last_) {
      for (std::size_t p = 0; p < stage_params.size(); ++p) {
        if (stage_params[p].name.starts_with("embedding")) {
          send(body, *grads[p], tied_handle(first_));
          grads[p] = body.add(*grads[p], recv(body, grads[p]->type, tied_handle(!first_)));
        }
      }
    }
    if (!reduced.empty()) {
      buckets.push_back(reduced);  // FSDP: reduce-scattered as they were computed
    }
    if (loss && groups_.dp.front().size() > 1) {
      // The loss averaged over the data-parallel replicas (for the log, as Megatron does).
      loss = body.all_reduce(*loss, groups_.dp, next_handle());
    }

    // AdamW on every parameter (shard) in f32, bucket by bucket in the order they were reduced;
    // under ZeRO-1 each bucket's updated shards are then all-gathered back into whole weights.
    std::vector<Value> new_weights(stage_params.size()), new_masters(stage_params.size()),
        new_firsts(stage_params.size()), new_seconds(stage_params.size());
    for (const std::vector<std::size_t>& members : buckets) {
      for (const std::size_t p : members) {
        const Value g = body.convert(*grads[p], "f32");
        const Value m1 = body.add(body.mul(firsts[p], body.like(g, "9.000000e-01")),
                                  body.mul(g, body.like(g, "1.000000e-01")));
        const Value v1 = body.add(body.mul(seconds[p], body.like(g, "9.500000e-01")),
                                  body.mul(body.mul(g, g), body.like(g, "5.000000e-02")));
        const Value step = body.div(m1, body.add(body.unary("sqrt", v1), body.like(g, "1.000000e-08")));
        const Value decayed = body.add(step, body.mul(masters[p], body.like(g, "1.000000e-01")));
        const Value master = body.sub(masters[p], body.mul(decayed, body.like(g, "3.000000e-04")));
        new_weights[p] = body.convert(master, "bf16");
        new_masters[p] = master;
        new_firsts[p] = m1;
        new_seconds[p] = v1;
      }
      if (job_.zero && sharded(stage_params[members.front()])) {
        std::vector<const Param*> params;
        std::vector<Value> shards;
        for (const std::size_t p : members) {
          params.push_back(&stage_params[p]);
          shards.push_back(new_weights[p]);
        }
        const std::vector<Value> gathered = all_gather_shards(body, params, shards);
        for (std::size_t i = 0; i < members.size(); ++i) {
          new_weights[members[i]] = gathered[i];
        }
      }
    }
    std::vector<Value> results;
    if (loss) {
      results.push_back(*loss);
    }
    for (const auto* list : {&new_weights, &new_masters, &new_firsts, &new_seconds}) {
      results.insert(results.end(), list->begin(), list->end());
    }
    // Parameters and optimizer state are donated to their updated values (jax.jit's
    // donate_argnums): the step updates them in place.
    std::vector<std::optional<std::size_t>> aliases(arguments.size());
    const std::size_t first_state = arguments.size() - 4 * stage_params.size();
    for (std::size_t j = 0; j < 4 * stage_params.size(); ++j) {
      aliases[first_state + j] = j + (loss ? 1 : 0);
    }
    return function_text("main", true, arguments, body, results, aliases);
  }

  // Recomputation waits for the gradient it serves (as Megatron's checkpointed backward does):
  // the layer's input passes a barrier with it.
  std::vector<Value> after_args(Body& body, std::vector<Value> args, const Value& gradient) {
    args[0] = body.barrier({args[0], gradient})[0];
    return args;
  }

  const LlmJob& job_;
  Shape s_;
  Groups groups_;
  std::uint32_t stage_;
  bool first_;
  bool last_;
  // The stage's model chunks (one, or `virtual_stages` interleaved): chunk c is virtual stage
  // c x pp + stage; its layers, the model's first layer it holds, and its first local layer.
  std::vector<std::uint32_t> chunk_layers_ = [this] {
    const auto virtual_layers = virtual_stage_layers(job_);
    std::vector<std::uint32_t> out;
    for (std::uint32_t c = 0; c < job_.virtual_stages; ++c) {
      out.push_back(virtual_layers[c * job_.pp + stage_]);
    }
    return out;
  }();
  std::vector<std::uint32_t> chunk_first_layer_ = [this] {
    const auto virtual_layers = virtual_stage_layers(job_);
    std::vector<std::uint32_t> out;
    for (std::uint32_t c = 0; c < job_.virtual_stages; ++c) {
      std::uint32_t sum = 0;
      for (std::uint32_t i = 0; i < c * job_.pp + stage_; ++i) {
        sum += virtual_layers[i];
      }
      out.push_back(sum);
    }
    return out;
  }();
  std::vector<std::uint32_t> chunk_local_base_ = [this] {
    std::vector<std::uint32_t> out;
    std::uint32_t sum = 0;
    for (const std::uint32_t n : chunk_layers_) {
      out.push_back(sum);
      sum += n;
    }
    return out;
  }();
  std::uint32_t layers_ = stage_layers(job_)[stage_];  // over all its chunks
  std::uint64_t next_handle_ = 0;
  std::string ring_pairs_;     // tp_ring_step's source_target_pairs, spelt once
  std::string cp_ring_pairs_;  // the context-parallel ring's
  std::string cp_ring_back_pairs_;  // and the other way round
  // Per local layer: its parameters' count and the index of its first among the stage's layer
  // parameters (one more entry: the total).
  std::vector<std::size_t> layer_param_count_ = [this] {
    std::vector<std::size_t> out;
    for (std::uint32_t l = 0; l < layers_; ++l) {
      out.push_back(local_layer_params(l).size());
    }
    return out;
  }();
  std::vector<std::size_t> layer_param_base_ = [this] {
    std::vector<std::size_t> out{0};
    for (const std::size_t n : layer_param_count_) {
      out.push_back(out.back() + n);
    }
    return out;
  }();
};

}  // namespace

const std::vector<LlmModel>& llm_presets() {
  // Published configurations: Llama 3 (Meta, "The Llama 3 Herd of Models", 2024, table 3),
  // Llama 2 7B (Touvron et al., 2023), Mixtral, and the Llama3-100M of MaxText's test configurations
  // (../shared/data/stablehlo/hespas_workloads).
  static const std::vector<LlmModel> presets{
      // MaxText's Llama3-100M as exported in ../shared/data/stablehlo/hespas_workloads (read off
      // its parameters: 7 layers of q, k, v [576, 9, 128], o [9, 128, 576], gate and up [576, 2016],
      // down [2016, 576]): width 576, 9 heads of 128 (multi-head), FFN 2016, vocabulary 128,256.
      {"llama3-100m", 7, 576, 9, 128, 9, 2016, 128256},
      {"llama2-7b", 32, 4096, 32, 0, 32, 11008, 32000},
      {"llama3-8b", 32, 4096, 32, 0, 8, 14336, 128256},
      {"llama3-70b", 80, 8192, 64, 0, 8, 28672, 128256},
      {"llama3-405b", 126, 16384, 128, 0, 8, 53248, 128256},
      // Llama 3.2 1B and 3B (Meta's model cards, 2024): tied embeddings.
      {"llama3.2-1b", 16, 2048, 32, 64, 8, 8192, 128256, 0, 0, 0, true},
      {"llama3.2-3b", 28, 3072, 24, 128, 8, 8192, 128256, 0, 0, 0, true},
      // Mixtral (Jiang et al., "Mixtral of Experts", 2024, table 1): 8 experts, 2 per token.
      {"mixtral-8x7b", 32, 4096, 32, 0, 8, 14336, 32000, 8, 2},
      {"mixtral-8x22b", 56, 6144, 48, 0, 8, 16384, 32768, 8, 2},
      // DeepSeekMoE 16B (Dai et al., "DeepSeekMoE", 2024; the released deepseek-moe-16b-base
      // configuration): 64 fine-grained experts of FFN 1,408, 6 per token, 2 shared experts (one
      // dense MLP of 2 x 1,408), multi-head attention, and a dense first layer of FFN 10,944.
      {"deepseek-moe-16b", 28, 2048, 16, 128, 16, 1408, 102400, 64, 6, 2816, false, 1, 10944},
      // DeepSeek-V2-Lite (DeepSeek-AI, "DeepSeek-V2", 2024, and its released configuration):
      // DeepSeekMoE's experts with multi-head latent attention (a key/value latent of 512, rotary
      // keys of 64, no query latent).
      {"deepseek-v2-lite", 27, 2048, 16, 128, 16, 1408, 102400, 64, 6, 2816, false, 1, 10944, 512, 0, 64,
       128},
      // DeepSeek-V3 (DeepSeek-AI, "DeepSeek-V3 Technical Report", 2024): 61 layers of width 7168,
      // 128 heads with a query latent of 1536, 256 experts of FFN 2048, 8 per token, one shared,
      // the first 3 layers dense with FFN 18,432. Its multi-token prediction module is not written.
      {"deepseek-v3", 61, 7168, 128, 128, 128, 2048, 129280, 256, 8, 2048, false, 3, 18432, 512, 1536, 64,
       128},
  };
  return presets;
}

LlmModel llm_preset(std::string_view name) {
  std::vector<std::string> known;
  for (const LlmModel& model : llm_presets()) {
    if (model.name == name) {
      return model;
    }
    known.push_back(model.name);
  }
  fail(fmt::format("--model: unknown model '{}' (presets: {})", name, fmt::join(known, ", ")));
}

LlmModel resolve_model(std::string_view preset, const ModelOverrides& o) {
  LlmModel model;
  if (!preset.empty()) {
    model = llm_preset(preset);
  } else if (o.layers == 0 || o.hidden == 0 || o.heads == 0 || o.ffn == 0 || o.vocab == 0) {
    fail("name a --model preset, or give --layers, --hidden, --heads, --ffn and --vocab");
  }
  if (o.tie_embeddings && o.untie_embeddings) {
    fail("--tie-embeddings and --untie-embeddings contradict each other");
  }
  const bool changed = o.layers != 0 || o.hidden != 0 || o.heads != 0 || o.head_dim != 0 || o.kv_heads != 0 ||
                       o.ffn != 0 || o.vocab != 0 || o.experts != 0 || o.top_k != 0 || o.shared_ffn != 0 ||
                       o.dense_layers != 0 || o.dense_ffn != 0 || o.kv_lora_rank != 0 || o.q_lora_rank != 0 ||
                       o.rope_head_dim != 0 || o.v_head_dim != 0 ||
                       (o.tie_embeddings && !model.tied_embeddings) ||
                       (o.untie_embeddings && model.tied_embeddings);
  model.tied_embeddings = (model.tied_embeddings || o.tie_embeddings) && !o.untie_embeddings;
  auto apply = [](std::uint32_t& field, std::uint32_t value) {
    if (value != 0) {
      field = value;
    }
  };
  apply(model.layers, o.layers);
  apply(model.hidden, o.hidden);
  apply(model.heads, o.heads);
  apply(model.head_dim, o.head_dim);
  apply(model.ffn, o.ffn);
  apply(model.vocab, o.vocab);
  apply(model.kv_heads, o.kv_heads);
  apply(model.experts, o.experts);
  apply(model.top_k, o.top_k);
  apply(model.shared_ffn, o.shared_ffn);
  apply(model.dense_layers, o.dense_layers);
  apply(model.dense_ffn, o.dense_ffn);
  apply(model.kv_lora_rank, o.kv_lora_rank);
  apply(model.q_lora_rank, o.q_lora_rank);
  apply(model.rope_head_dim, o.rope_head_dim);
  apply(model.v_head_dim, o.v_head_dim);
  if (model.experts > 0 && model.top_k == 0) {
    model.top_k = std::min<std::uint32_t>(2, model.experts);  // two experts per token unless told otherwise
  }
  if ((preset.empty() || model.mla()) && o.kv_heads == 0) {
    model.kv_heads = model.heads;  // multi-head attention unless told otherwise; always under MLA
  }
  if (changed) {
    model.name = preset.empty() ? "custom" : std::string(preset) + " (modified)";
  }
  return model;
}

namespace {
// Megatron's uneven split: each stage's layers (the first and last as given, the rest evenly).
std::vector<std::uint32_t> uneven_stage_layers(const LlmJob& job) {
  std::uint32_t rest = job.model.layers;
  std::uint32_t others = job.pp;
  for (const std::uint32_t given : {job.first_stage_layers, job.last_stage_layers}) {
    if (given > 0) {
      rest -= std::min(rest, given);
      --others;
    }
  }
  std::vector<std::uint32_t> layers(job.pp, others > 0 ? rest / others : 0);
  if (job.first_stage_layers > 0) {
    layers.front() = job.first_stage_layers;
  }
  if (job.last_stage_layers > 0) {
    layers.back() = job.last_stage_layers;
  }
  return layers;
}
}  // namespace

void validate(const LlmJob& job) {
  const LlmModel& m = job.model;
  const std::pair<const char*, std::uint64_t> positive[] = {{"--layers", m.layers},
                                                            {"--hidden", m.hidden},
                                                            {"--heads", m.heads},
                                                            {"--kv-heads", m.kv_heads},
                                                            {"--ffn", m.ffn},
                                                            {"--vocab", m.vocab},
                                                            {"--dp", job.dp},
                                                            {"--tp", job.tp},
                                                            {"--pp", job.pp},
                                                            {"--cp", job.cp},
                                                            {"--virtual-stages", job.virtual_stages},
                                                            {"--ep", job.ep},
                                                            {"--micro-batch", job.micro_batch},
                                                            {"--micro-batches", job.micro_batches},
                                                            {"--seq", job.seq}};
  for (const auto& [name, value] : positive) {
    if (value == 0) {
      fail(fmt::format("{} must be at least 1", name));
    }
  }
  if (m.head_dim == 0 && m.hidden % m.heads != 0) {
    fail(fmt::format("--hidden {} is not a multiple of --heads {}: give --head-dim", m.hidden, m.heads));
  }
  if (m.head_dimension() % 2 != 0) {
    fail(fmt::format("the head dimension {} must be even for the rotary embedding", m.head_dimension()));
  }
  if (m.heads % job.tp != 0) {
    fail(fmt::format("--heads {} is not a multiple of --tp {}", m.heads, job.tp));
  }
  if (m.heads % m.kv_heads != 0) {
    fail(fmt::format("--heads {} is not a multiple of --kv-heads {}", m.heads, m.kv_heads));
  }
  if (m.kv_heads % job.tp != 0) {
    fail(fmt::format(
        "--kv-heads {} is not a multiple of --tp {}: each tensor-parallel device holds whole kv heads",
        m.kv_heads, job.tp));
  }
  if (job.sequence_parallel &&
      (static_cast<std::uint64_t>(job.micro_batch) * (job.seq / job.cp)) % job.tp != 0) {
    fail(fmt::format("--sequence-parallel: the {} tokens of a microbatch{} are not a multiple of --tp {}",
                     static_cast<std::uint64_t>(job.micro_batch) * (job.seq / job.cp),
                     job.cp > 1 ? " on a device" : "", job.tp));
  }
  if (job.tp_comm_overlap && (job.tp < 2 || !job.sequence_parallel)) {
    fail(
        "--tp-comm-overlap overlaps the sequence-parallel all-gathers and reduce-scatters with the GEMMs: it "
        "needs --tp 2 or more and --sequence-parallel");
  }
  if (m.ffn % job.tp != 0) {
    fail(fmt::format("--ffn {} is not a multiple of --tp {}", m.ffn, job.tp));
  }
  if (!m.mla() && (m.q_lora_rank > 0 || m.rope_head_dim > 0 || m.v_head_dim > 0)) {
    fail(
        "--q-lora-rank, --rope-head-dim and --v-head-dim are multi-head latent attention's: they need "
        "--kv-lora-rank");
  }
  if (m.mla()) {
    if (m.rope_head_dim == 0 || m.rope_head_dim % 2 != 0) {
      fail(fmt::format("--kv-lora-rank: multi-head latent attention needs an even --rope-head-dim (given {})",
                       m.rope_head_dim));
    }
    if (m.kv_heads != m.heads) {
      fail(
          fmt::format("--kv-lora-rank: multi-head latent attention gives every head its own key and value; "
                      "--kv-heads {} must equal --heads {}",
                      m.kv_heads, m.heads));
    }
    if (job.attention != Attention::kFlash || job.cp > 1) {
      fail(
          "--kv-lora-rank: multi-head latent attention is written for flash attention without context "
          "parallelism");
    }
  }
  if ((m.dense_layers > 0 || m.dense_ffn > 0) && !m.moe()) {
    fail(
        fmt::format("--dense-layers and --dense-ffn need --experts (a mixture-of-experts model's dense first "
                    "layers)"));
  }
  if (m.dense_ffn > 0 && m.dense_layers == 0) {
    fail(fmt::format("--dense-ffn {} needs --dense-layers", m.dense_ffn));
  }
  if (m.moe() && m.dense_layers >= m.layers) {
    fail(fmt::format("--dense-layers {} leaves no mixture-of-experts layer of the {}", m.dense_layers,
                     m.layers));
  }
  if (m.moe() && m.dense_layers > 0 && m.dense_width() % job.tp != 0) {
    fail(fmt::format("--dense-ffn {} is not a multiple of --tp {}", m.dense_width(), job.tp));
  }
  if (m.shared_ffn > 0 && !m.moe()) {
    fail(
        fmt::format("--shared-ffn {} needs --experts (shared experts sit beside routed ones)", m.shared_ffn));
  }
  if (m.top_k > 0 && !m.moe()) {
    fail(fmt::format("--top-k {} needs --experts (a mixture-of-experts model)", m.top_k));
  }
  if (!m.moe() && job.ep > 1) {
    fail(fmt::format("--ep {}: expert parallelism needs a mixture-of-experts model (--experts)", job.ep));
  }
  if (m.moe()) {
    if (m.top_k == 0 || m.top_k > m.experts) {
      fail(fmt::format("--top-k {} must be between 1 and --experts {}", m.top_k, m.experts));
    }
    if (m.shared_ffn % job.tp != 0) {
      fail(fmt::format("--shared-ffn {} is not a multiple of --tp {}", m.shared_ffn, job.tp));
    }
    if (m.experts % job.ep != 0) {
      fail(fmt::format("--experts {} is not a multiple of --ep {}", m.experts, job.ep));
    }
    if (job.dp % job.ep != 0) {
      fail(fmt::format(
          "--dp {} is not a multiple of --ep {}: expert-parallel groups are made of data-parallel "
          "replicas",
          job.dp, job.ep));
    }
    if (job.tp > 1 && !job.sequence_parallel) {
      fail(fmt::format(
          "--experts with --tp {} needs --sequence-parallel (each tensor-parallel device routes its "
          "own tokens, as Megatron requires)",
          job.tp));
    }
    if (!(job.capacity_factor > 0.0) || !std::isfinite(job.capacity_factor) || job.capacity_factor > 1e6) {
      fail(fmt::format("--capacity-factor {} must be positive (and at most 1e6)", job.capacity_factor));
    }
  }
  if (job.cp > 1 && job.seq % (2 * job.cp) != 0) {
    fail(fmt::format(
        "--seq {} is not a multiple of 2 x --cp {}: context parallelism splits each sequence into 2 cp "
        "chunks (two per device, balancing the causal mask)",
        job.seq, job.cp));
  }
  if (job.cp > 1 && job.cp_comm != CpComm::kAllGather) {
    if (job.attention == Attention::kNaive) {
      fail(job.cp_comm == CpComm::kP2p ? "--cp-comm p2p needs --attention flash: the ring merges its partial "
                                         "outputs by the log-sum-exps the "
                                         "fused attention kernel returns"
                                       : "--cp-comm a2a needs --attention flash: Ulysses is written around "
                                         "the fused attention kernel only "
                                         "(naive attention over its head split is not modelled)");
    }
    if (job.cp_comm == CpComm::kA2a &&
        ((m.heads / job.tp) % job.cp != 0 || (m.kv_heads / job.tp) % job.cp != 0)) {
      fail(
          fmt::format("--cp-comm a2a splits each tensor-parallel device's heads over --cp {}: its {} heads "
                      "and {} kv heads "
                      "(--heads and --kv-heads over --tp) must be multiples of it",
                      job.cp, m.heads / job.tp, m.kv_heads / job.tp));
    }
  }
  if (m.tied_embeddings && job.fsdp) {
    fail(
        "tied embeddings with --fsdp are not modelled (the embedding and the LM head would share an FSDP "
        "unit): "
        "drop --fsdp or the tie");
  }
  if (job.fsdp && job.zero) {
    fail("--fsdp shards the optimizer state already: drop --distributed-optimizer");
  }
  if (job.no_sync && !job.fsdp) {
    fail("--no-sync is FSDP's gradient accumulation without reduce-scatter: give --fsdp");
  }
  if (job.shard_group > 0) {
    if (!job.fsdp && !job.zero) {
      fail("--shard-group shards what --distributed-optimizer or --fsdp shards: give one of them");
    }
    if (job.shard_group == 1) {
      fail("--shard-group 1 shards nothing: drop it and --distributed-optimizer or --fsdp");
    }
    const std::uint64_t dense = static_cast<std::uint64_t>(job.dp) * job.cp;
    if (dense % job.shard_group != 0) {
      fail(fmt::format("--shard-group {} does not divide the {} devices that hold the same weights (dp x cp)",
                       job.shard_group, dense));
    }
    if (m.moe() && job.ep > 0 && job.dp % job.ep == 0) {
      const std::uint64_t experts = static_cast<std::uint64_t>(job.dp / job.ep) * job.cp * job.tp;
      if (experts % job.shard_group != 0) {
        fail(
            fmt::format("--shard-group {} does not divide the {} devices that hold the same experts "
                        "(dp / ep x cp x tp)",
                        job.shard_group, experts));
      }
    }
  }
  if (job.pp > m.layers) {
    fail(fmt::format("--pp {} is more stages than the model's {} layers", job.pp, m.layers));
  }
  if (job.virtual_stages > 1) {
    if (job.schedule != PipelineSchedule::kOneFOneB) {
      fail(fmt::format("--virtual-stages: interleaving is a 1F1B schedule; drop --schedule {}",
                       job.schedule == PipelineSchedule::kGPipe ? "gpipe" : "zb-h1"));
    }
    if (job.pp < 2) {
      fail(fmt::format("--virtual-stages {} needs --pp 2 or more", job.virtual_stages));
    }
    if (job.micro_batches % job.pp != 0) {
      fail(fmt::format(
          "--virtual-stages: --micro-batches {} is not a multiple of --pp {} (Megatron's interleaved "
          "schedule runs the microbatches in groups of pp)",
          job.micro_batches, job.pp));
    }
    if (static_cast<std::uint64_t>(job.pp) * job.virtual_stages > m.layers) {
      fail(fmt::format("--pp {} x --virtual-stages {} is more model chunks than the model's {} layers",
                       job.pp, job.virtual_stages, m.layers));
    }
  }
  if (job.first_stage_layers > 0 || job.last_stage_layers > 0) {
    const char* which = job.first_stage_layers > 0 && job.last_stage_layers > 0
                            ? "--first-stage-layers with --last-stage-layers"
                        : job.first_stage_layers > 0 ? "--first-stage-layers"
                                                     : "--last-stage-layers";
    if (job.pp < 2) {
      fail(fmt::format("{} needs --pp 2 or more", which));
    }
    const std::uint64_t given = static_cast<std::uint64_t>(job.first_stage_layers) + job.last_stage_layers;
    const std::uint32_t others =
        job.pp - (job.first_stage_layers > 0 ? 1 : 0) - (job.last_stage_layers > 0 ? 1 : 0);
    if (given > m.layers || (others == 0 && given != m.layers)) {
      fail(
          fmt::format("--first-stage-layers {} and --last-stage-layers {} do not leave the model's {} layers "
                      "to the other {} stages",
                      job.first_stage_layers, job.last_stage_layers, m.layers, others));
    }
    const std::uint64_t rest = m.layers - given;
    if (others > 0 && (rest % others != 0 || rest / others == 0)) {
      fail(fmt::format(
          "the {} layers left by --first-stage-layers and --last-stage-layers do not split evenly "
          "over the other {} stages (Megatron's uneven split gives each the same number, at "
          "least 1)",
          rest, others));
    }
    for (const std::uint64_t layers : uneven_stage_layers(job)) {
      if (layers % job.virtual_stages != 0) {
        fail(fmt::format("--virtual-stages {}: a stage's {} layers do not split evenly over its chunks",
                         job.virtual_stages, layers));
      }
    }
  }
  if (2ULL * job.pp * job.virtual_stages * job.micro_batches + 2 >= 1'000'000'000ULL) {
    fail(
        "--pp x --virtual-stages x --micro-batches: too many point-to-point channels (2 x pp x virtual "
        "stages x "
        "micro-batches must stay below 1e9)");
  }
  const std::uint64_t devices = static_cast<std::uint64_t>(job.dp) * job.cp * job.tp * job.pp;
  if (devices > (1U << 26)) {
    fail(fmt::format("dp x cp x tp x pp = {} devices; at most 2^26", devices));
  }
  // Every tensor the writer forms must have dimensions and a byte size the frontend accepts.
  const Shape s = shape_of(job);
  const double largest = static_cast<double>(s.b) * static_cast<double>(s.a) * static_cast<double>(s.s) *
                         static_cast<double>(s.sk) * 4.0;
  const double logits = static_cast<double>(s.n) * static_cast<double>(s.v) * 4.0;
  if (std::max(largest, logits) > std::ldexp(1.0, 56)) {
    fail("the attention scores or logits of one microbatch exceed 2^56 bytes: lower --micro-batch or --seq");
  }
  if (m.moe()) {
    // The dispatched rows of one microbatch (slots x width) and the router's probabilities.
    const double dispatched = std::ceil(job.capacity_factor * static_cast<double>(s.r) * m.top_k) *
                              std::max<double>(s.h, 2.0 * m.ffn) * 4.0 * job.ep;
    if (dispatched > std::ldexp(1.0, 56) ||
        static_cast<double>(s.r) * m.experts * 4.0 > std::ldexp(1.0, 56)) {
      fail(
          "the experts' slots of one microbatch exceed 2^56 bytes: lower --capacity-factor, --micro-batch or "
          "--seq");
    }
    if (static_cast<double>(s.r) * m.experts >= std::ldexp(1.0, 31)) {
      fail("tokens x experts of one microbatch must stay below 2^31 (the router's flat indices are i32)");
    }
  }
}

std::vector<std::uint32_t> virtual_stage_layers(const LlmJob& job) {
  const std::uint32_t stages = job.pp * job.virtual_stages;
  if (job.first_stage_layers > 0 || job.last_stage_layers > 0) {
    const std::vector<std::uint32_t> per_stage = uneven_stage_layers(job);
    std::vector<std::uint32_t> layers(stages);
    for (std::uint32_t v = 0; v < stages; ++v) {
      layers[v] = per_stage[v % job.pp] / job.virtual_stages;  // virtual stage v: stage v mod pp
    }
    return layers;
  }
  std::vector<std::uint32_t> layers(stages, job.model.layers / stages);
  for (std::uint32_t i = 0; i < job.model.layers % stages; ++i) {
    ++layers[i];
  }
  return layers;
}

std::vector<std::uint32_t> stage_layers(const LlmJob& job) {
  const std::vector<std::uint32_t> virtual_layers = virtual_stage_layers(job);
  std::vector<std::uint32_t> layers(job.pp, 0);
  for (std::size_t i = 0; i < virtual_layers.size(); ++i) {
    layers[i % job.pp] += virtual_layers[i];
  }
  return layers;
}

LlmFacts facts(const LlmJob& job) {
  const LlmModel& m = job.model;
  const std::uint64_t d = m.head_dimension();
  std::uint64_t attention = static_cast<std::uint64_t>(m.hidden) * (m.heads + 2 * m.kv_heads) * d +
                            static_cast<std::uint64_t>(m.heads) * d * m.hidden;
  // Per head: query and key dimensions, value dimension.
  std::uint64_t qk = d;
  std::uint64_t dv = d;
  std::uint64_t latent_norms = 0;
  if (m.mla()) {
    qk = d + m.rope_head_dim;
    dv = m.v_head_dim != 0 ? m.v_head_dim : d;
    const std::uint64_t h = m.hidden;
    const std::uint64_t q =
        m.q_lora_rank > 0 ? h * m.q_lora_rank + m.q_lora_rank * m.heads * qk : h * m.heads * qk;
    attention =
        q + h * (m.kv_lora_rank + m.rope_head_dim) + m.kv_lora_rank * m.heads * (d + dv) + m.heads * dv * h;
    latent_norms = m.kv_lora_rank + m.q_lora_rank;
  }
  const std::uint64_t expert = 3ULL * m.hidden * m.ffn;
  const std::uint64_t router = m.moe() ? static_cast<std::uint64_t>(m.hidden) * m.experts : 0;
  const std::uint64_t shared = 3ULL * m.hidden * m.shared_ffn;
  const std::uint64_t mlp = m.moe() ? m.experts * expert + router + shared : expert;
  const std::uint64_t active_mlp = m.moe() ? m.top_k * expert + router + shared : expert;  // per token
  // A mixture-of-experts model's dense first layers.
  const std::uint64_t dense = m.moe() ? m.dense_layers : 0;
  const std::uint64_t dense_mlp = 3ULL * m.hidden * m.dense_width();
  const std::uint64_t vocab = static_cast<std::uint64_t>(m.vocab) * m.hidden;
  LlmFacts out;
  const std::uint64_t tables = m.tied_embeddings ? 1 : 2;  // the embedding and the LM head
  const std::uint64_t layer_params_total =
      (m.layers - dense) * (attention + mlp) + dense * (attention + dense_mlp);
  const std::uint64_t layer_active =
      (m.layers - dense) * (attention + active_mlp) + dense * (attention + dense_mlp);
  const std::uint64_t norms = m.layers * (2ULL * m.hidden + latent_norms);
  out.parameters = layer_params_total + norms + tables * vocab + m.hidden;
  out.active_parameters = layer_active + norms + tables * vocab + m.hidden;
  out.devices = static_cast<std::uint64_t>(job.dp) * job.cp * job.tp * job.pp;
  out.global_batch = static_cast<std::uint64_t>(job.dp) * job.micro_batch * job.micro_batches;
  out.tokens_per_step = out.global_batch * job.seq;
  // Per token: 2 FLOPs per multiply-add of every matmul (layers and LM head; the embedding is a
  // lookup), plus attention's QK^T and PV (2 * 2 * seq * heads * d per layer, the full square:
  // the causal mask is added, not skipped); backward twice forward.
  const double per_token =
      2.0 * static_cast<double>(layer_active + vocab) +
      2.0 * static_cast<double>(m.layers) * job.seq * m.heads * static_cast<double>(qk + dv);
  // Recomputation is not counted (model FLOPs, not hardware FLOPs: PaLM's MFU definition).
  out.model_flops = 3.0 * per_token * static_cast<double>(out.tokens_per_step);
  const Shape s = shape_of(job);
  std::uint64_t moe_layer = 0;
  std::uint64_t dense_layer = 0;
  for (const Param& p : layer_params(s)) {
    moe_layer += elements(p.dims);
  }
  for (const Param& p : layer_params(dense_shape(s))) {
    dense_layer += elements(p.dims);
  }
  // Virtual stage c x pp + stage of each stage's chunks holds the model's layers from `first` on.
  const auto virtual_layers = virtual_stage_layers(job);
  std::vector<std::uint64_t> per_stage(job.pp, 0);
  std::uint32_t first = 0;
  for (std::size_t vs = 0; vs < virtual_layers.size(); ++vs) {
    for (std::uint32_t l = first; l < first + virtual_layers[vs]; ++l) {
      per_stage[vs % job.pp] += m.dense_layer(l) && m.moe() ? dense_layer : moe_layer;
    }
    first += virtual_layers[vs];
  }
  for (std::uint32_t stage = 0; stage < job.pp; ++stage) {
    std::uint64_t n = per_stage[stage];
    if (stage == 0) {
      n += s.v * s.h;
    }
    if (stage + 1 == job.pp) {
      // Tied: one stage reads the embedding; with pipeline stages the last holds a copy.
      n += s.h + (m.tied_embeddings && job.pp == 1 ? 0 : s.h * s.v);
    }
    out.stage_parameters.push_back(n);
  }
  return out;
}

std::string stage_program(const LlmJob& job, std::uint32_t stage) {
  validate(job);
  ORRERY_ASSERT(stage < job.pp, "a stage of the job");
  return StageWriter(job, stage).write();
}

std::string scenario_yaml(const LlmJob& job, const ScenarioOptions& options) {
  validate(job);
  const LlmFacts f = facts(job);
  const std::uint64_t per_stage = static_cast<std::uint64_t>(job.dp) * job.cp * job.tp;
  const std::uint64_t per_node = std::min<std::uint64_t>(options.devices_per_node, f.devices);
  const std::uint64_t nodes = (f.devices + per_node - 1) / per_node;
  std::string text = fmt::format(
      "# Generated by `orrery generate llm` (docs/generate.md): {} trained on {} devices\n"
      "# (tp {} x cp {} x dp {} x pp {}; global batch {} sequences of {} tokens, {} microbatches of {}).\n"
      "# {} parameters; {:.4g} model FLOPs per step (6 x matmul parameters x tokens plus attention).\n"
      "# Ranks: tp fastest, then cp, then dp, then pp (Megatron's order); the network below is a\n"
      "# default: edit it or override keys with --set.\n",
      job.model.name, f.devices, job.tp, job.cp, job.dp, job.pp, f.global_batch, job.seq, job.micro_batches,
      job.micro_batch, f.parameters, f.model_flops);
  text += fmt::format(
      "hardware: {}\nsystem:\n  devices_per_node: {}\n  scale_up: {{bandwidth_GBps: 450, latency_ns: 500}}\n"
      "  endpoint_delay_ns: 1000\n"
      "  # PyTorch runs each process group's NCCL communicator on a stream of its own (docs/collectives.md)\n"
      "  comm_queues: per_group\nnetwork:\n",
      options.hardware, per_node);
  if (nodes <= 1) {
    text += "  topology: {kind: none}\n";
  } else {
    // A non-blocking two-tier fat-tree per rail (one NIC per GPU of a node): k leaves, k the
    // smallest power of two with k * k >= nodes, each with ceil(nodes / k) hosts.
    std::uint64_t k = 2;
    while (k * k < nodes) {
      k *= 2;
    }
    text += fmt::format(
        "  topology: {{kind: fat_tree, k: {}, levels: 2, hosts_per_leaf: {}, link_GBps: 50, latency_ns: "
        "150}}\n"
        "  nic: {{rails: {}, bandwidth_GBps: 50, latency_ns: 100}}\n  routing: ecmp\n",
        k, (nodes + k - 1) / k, per_node);
  }
  text += "  model: analytical\nworkload:\n  programs:\n";
  for (std::uint32_t stage = 0; stage < job.pp; ++stage) {
    const std::uint64_t first = stage * per_stage;
    text += fmt::format("    - file: {}{}.mlir\n      ranks: \"{}-{}\"\n", options.program_prefix, stage,
                        first, first + per_stage - 1);
  }
  text += "  steps: 1\ncompute:\n  default: roofline\n";
  return text;
}

}  // namespace orrery::frontend::generate
