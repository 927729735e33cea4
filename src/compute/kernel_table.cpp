#include "compute/kernel_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <filesystem>
#include <map>
#include <ostream>

#include "compute/csv.h"
#include "util/error.h"

namespace orrery::compute {
namespace {

namespace fs = std::filesystem;

std::vector<std::uint64_t> parse_shape(const CsvFile& file, const CsvRow& row, const std::string& text) {
  std::vector<std::uint64_t> shape;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = text.find('x', start);
    const std::string part = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::uint64_t value = 0;
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (part.empty() || ec != std::errc() || ptr != part.data() + part.size() || value == 0) {
      file.fail(row, fmt::format("column 'shape': expected positive integers joined by 'x' (4096x4096), got '{}'", text));
    }
    shape.push_back(value);
    if (end == std::string::npos) {
      break;
    }
    start = end + 1;
  }
  return shape;
}

const std::string& field(const CsvFile& file, const CsvRow& row, std::size_t index, std::string_view column) {
  if (index >= row.fields.size()) {
    file.fail(row, fmt::format("column '{}' is missing (the row has {} fields)", column, row.fields.size()));
  }
  return row.fields[index];
}

// Llama-style decoder layer dimensions of one Vidur row.
struct VidurLayer {
  std::uint64_t tokens = 0;
  std::uint64_t tensor_parallel = 1;
  std::uint64_t hidden = 0;       // n_embd
  std::uint64_t heads = 0;        // n_head
  std::uint64_t kv_heads = 0;     // n_kv_head
  std::uint64_t mlp_hidden = 0;   // n_expanded_embd
  bool gated = true;              // use_gated_mlp
  [[nodiscard]] std::uint64_t head_dim() const { return hidden / heads; }
};

// The ops of one Vidur row, in the order of the CSV's time_stats columns. Shapes follow Vidur's
// profiling model (vidur/profiling/mlp/mlp_impl.py): column-parallel projections split their
// outputs, row-parallel ones their inputs, over tensor_parallel workers; norms and the residual add
// are not split.
std::vector<std::pair<std::string, OpSignature>> vidur_ops(const VidurLayer& l) {
  const ElementType f16 = ElementType::kF16;
  const std::uint64_t tp = l.tensor_parallel;
  const std::uint64_t d = l.head_dim();
  std::vector<std::pair<std::string, OpSignature>> ops;
  // emb: VocabParallelEmbedding, a gather of `tokens` rows of `hidden` (plus masking when split).
  OpSignature embedding = elementwise_signature("embedding", OpClass::kGatherScatter, f16, l.tokens * l.hidden, 1, 0.0);
  embedding.bytes_read += Bytes{8 * l.tokens};  // int64 token ids
  ops.emplace_back("emb", embedding);
  // input_layernorm: RMSNorm over tokens x hidden (square, mean, rsqrt, scale: 4 FLOPs/element).
  ops.emplace_back("input_layernorm", rowwise_signature("rms_norm", OpClass::kNormalisation, f16, l.tokens, l.hidden, 4.0));
  // attn_pre_proj: the fused QKV projection, hidden -> (heads + 2 kv_heads) * head_dim / tp.
  ops.emplace_back("attn_pre_proj",
                   gemm_signature("dot_general", f16, {1, l.tokens, (l.heads + 2 * l.kv_heads) * d / tp, l.hidden}));
  // attn_rope: rotary embedding of q and k in place ((heads + kv_heads) * head_dim / tp per token;
  // x * cos + rotate(x) * sin: 3 FLOPs/element).
  ops.emplace_back("attn_rope", elementwise_signature("rotary_embedding", OpClass::kElementwise, f16,
                                                      l.tokens * (l.heads + l.kv_heads) * d / tp, 1, 3.0));
  // attn_post_proj: the output projection, heads * head_dim / tp -> hidden.
  ops.emplace_back("attn_post_proj", gemm_signature("dot_general", f16, {1, l.tokens, l.hidden, l.heads * d / tp}));
  ops.emplace_back("post_attention_layernorm",
                   rowwise_signature("rms_norm", OpClass::kNormalisation, f16, l.tokens, l.hidden, 4.0));
  // mlp_up_proj: hidden -> (2 if gated) * mlp_hidden / tp (gate and up fused).
  ops.emplace_back("mlp_up_proj",
                   gemm_signature("dot_general", f16, {1, l.tokens, (l.gated ? 2 : 1) * l.mlp_hidden / tp, l.hidden}));
  // mlp_act: SiluAndMul reads gate and up, writes mlp_hidden / tp per token (silu(x) * y: 5 FLOPs,
  // one exponential); GELU when not gated.
  const std::uint64_t act = l.tokens * l.mlp_hidden / tp;
  ops.emplace_back("mlp_act", l.gated ? elementwise_signature("silu_and_mul", OpClass::kTranscendental, f16, act, 2, 5.0)
                                      : elementwise_signature("gelu", OpClass::kTranscendental, f16, act, 1, 8.0));
  // mlp_down_proj: mlp_hidden / tp -> hidden.
  ops.emplace_back("mlp_down_proj", gemm_signature("dot_general", f16, {1, l.tokens, l.hidden, l.mlp_hidden / tp}));
  // add: the residual add of tokens x hidden.
  ops.emplace_back("add", elementwise_signature("add", OpClass::kElementwise, f16, l.tokens * l.hidden, 2, 1.0));
  return ops;
}

struct LlmCompassFile {
  std::string op;      // matmul, gelu, layernorm, softmax
  std::string device;  // A100
};

std::optional<LlmCompassFile> llmcompass_file(const fs::path& path) {
  const std::string stem = path.stem().string();
  for (const std::string op : {"matmul", "gelu", "layernorm", "softmax"}) {
    if (stem.starts_with(op + "_")) {
      return LlmCompassFile{op, stem.substr(op.size() + 1)};
    }
  }
  return std::nullopt;
}

double strip_suffix_number(const CsvFile& file, const CsvRow& row, std::size_t index, std::string_view suffix,
                           std::string_view column) {
  CsvRow copy = row;
  std::string& text = copy.fields.at(index);
  if (text.size() > suffix.size() && text.ends_with(suffix)) {
    text.resize(text.size() - suffix.size());
  }
  return file.number(copy, index, column);
}

}  // namespace

std::string format_shape(const std::vector<std::uint64_t>& shape) { return fmt::format("{}", fmt::join(shape, "x")); }

KernelMeasurement to_measurement(const MeasuredOp& measured) {
  return KernelMeasurement{measured.hardware,      measured.op.kind, measured.op.op_class, measured.op.element_type,
                           measured.op.table_shape(), measured.time_s, measured.source};
}

std::vector<KernelMeasurement> read_orrery_table(const std::string& path) {
  const CsvFile file = CsvFile::read(path);
  std::vector<KernelMeasurement> rows;
  if (file.rows.empty()) {
    return rows;
  }
  const CsvRow& header = file.rows.front();
  const std::size_t hardware = file.column(header, "hardware");
  const std::size_t kind = file.column(header, "kind");
  const std::size_t op_class = file.column(header, "class");
  const std::size_t dtype = file.column(header, "dtype");
  const std::size_t shape = file.column(header, "shape");
  const std::size_t time = file.column(header, "time_us");
  const std::size_t source = CsvFile::optional_column(header, "source");
  for (std::size_t i = 1; i < file.rows.size(); ++i) {
    const CsvRow& row = file.rows[i];
    KernelMeasurement m;
    m.hardware = field(file, row, hardware, "hardware");
    m.kind = field(file, row, kind, "kind");
    const std::string& class_name = field(file, row, op_class, "class");
    const auto parsed_class = config::enum_from_string<OpClass>(class_name);
    if (!parsed_class) {
      file.fail(row, fmt::format("column 'class': unknown op class '{}' (known: {})", class_name,
                                 config::enum_choices<OpClass>()));
    }
    m.op_class = *parsed_class;
    const std::string& type_name = field(file, row, dtype, "dtype");
    const auto type = parse_element_type(type_name);
    if (!type) {
      file.fail(row, fmt::format("column 'dtype': unknown element type '{}'", type_name));
    }
    m.element_type = *type;
    m.shape = parse_shape(file, row, field(file, row, shape, "shape"));
    const double time_us = file.number(row, time, "time_us");
    if (!(time_us > 0.0)) {
      file.fail(row, fmt::format("column 'time_us': a kernel time must be positive, got {}", time_us));
    }
    m.time_s = time_us * 1e-6;
    m.source = source < row.fields.size() ? row.fields[source] : fmt::format("{}:{}", path, row.line);
    if (m.hardware.empty() || m.kind.empty()) {
      file.fail(row, "columns 'hardware' and 'kind' must not be empty");
    }
    rows.push_back(std::move(m));
  }
  return rows;
}

std::vector<MeasuredOp> read_vidur_mlp_csv(const std::string& path, const std::string& hardware) {
  const CsvFile file = CsvFile::read(path);
  std::vector<MeasuredOp> measured;
  if (file.rows.empty()) {
    return measured;
  }
  const CsvRow& header = file.rows.front();
  const std::size_t tokens = file.column(header, "num_tokens");
  const std::size_t tp = file.column(header, "num_tensor_parallel_workers");
  const std::size_t hidden = file.column(header, "n_embd");
  const std::size_t heads = file.column(header, "n_head");
  const std::size_t kv_heads = file.column(header, "n_kv_head");
  const std::size_t mlp_hidden = file.column(header, "n_expanded_embd");
  const std::size_t gated = file.column(header, "use_gated_mlp");
  const std::string model = fs::path(path).stem().string();
  for (std::size_t i = 1; i < file.rows.size(); ++i) {
    const CsvRow& row = file.rows[i];
    VidurLayer layer;
    layer.tokens = file.integer(row, tokens, "num_tokens", 1);
    layer.tensor_parallel = file.integer(row, tp, "num_tensor_parallel_workers", 1);
    layer.hidden = file.integer(row, hidden, "n_embd", 1);
    layer.heads = file.integer(row, heads, "n_head", 1);
    layer.kv_heads = file.integer(row, kv_heads, "n_kv_head", 1);
    layer.mlp_hidden = file.integer(row, mlp_hidden, "n_expanded_embd", 1);
    layer.gated = field(file, row, gated, "use_gated_mlp") == "True";
    if (layer.hidden % layer.heads != 0) {
      file.fail(row, "inconsistent layer dimensions");
    }
    for (auto& [label, op] : vidur_ops(layer)) {
      const std::string column = "time_stats." + label + ".median";
      const double time_ms = file.number(row, file.column(header, column), column);
      if (!(time_ms > 0.0)) {
        file.fail(row, fmt::format("column '{}': a kernel time must be positive, got {}", column, time_ms));
      }
      measured.push_back(MeasuredOp{hardware, std::move(op), time_ms * 1e-3,
                                    fmt::format("vidur {} {}:{} tokens={} tp={}", model, label, row.line,
                                                layer.tokens, layer.tensor_parallel),
                                    label});
    }
  }
  return measured;
}

std::vector<MeasuredOp> read_llmcompass_csv(const std::string& path) {
  const auto kind = llmcompass_file(fs::path(path));
  if (!kind) {
    throw OrreryError(ErrorCode::kInvalidInput,
                      fmt::format("{}: not an LLMCompass sweep (expected matmul_, gelu_, layernorm_ or softmax_ "
                                  "followed by the device)",
                                  path));
  }
  if (kind->device != "A100") {
    throw OrreryError(ErrorCode::kUnsupported,
                      fmt::format("{}: LLMCompass sweeps of device '{}' are not imported: only the A100 (80GB, "
                                  "fp16) sweeps map to an Orrery preset",
                                  path, kind->device));
  }
  const CsvFile file = CsvFile::read(path);
  std::vector<MeasuredOp> measured;
  for (const CsvRow& row : file.rows) {
    MeasuredOp m;
    m.hardware = "A100_80GB";
    m.label = kind->op;
    m.source = fmt::format("llmcompass {}:{}", fs::path(path).filename().string(), row.line);
    const ElementType f16 = ElementType::kF16;
    if (kind->op == "matmul") {
      const auto rows = file.integer(row, 0, "M", 1);
      const auto cols = file.integer(row, 1, "N", 1);
      const auto depth = file.integer(row, 2, "K", 1);
      m.op = gemm_signature("dot_general", f16, {1, rows, cols, depth});
      m.time_s = strip_suffix_number(file, row, 3, "ms", "latency") * 1e-3;
    } else if (kind->op == "gelu") {
      const auto elements = file.integer(row, 0, "elements", 1);
      m.op = elementwise_signature("gelu", OpClass::kTranscendental, f16, elements, 1, 8.0);
      m.time_s = static_cast<double>(elements) / (file.number(row, 1, "G elements/s") * 1e9);
    } else {
      const auto rows = file.integer(row, 0, "M", 1);
      const auto cols = file.integer(row, 1, "N", 1);
      // layer_norm: mean, variance, normalise, scale and shift (~7 FLOPs/element); softmax: max,
      // exponential, sum, divide (~5 FLOPs/element).
      m.op = rowwise_signature(kind->op == "layernorm" ? "layer_norm" : "softmax", OpClass::kNormalisation, f16, rows,
                               cols, kind->op == "layernorm" ? 7.0 : 5.0);
      m.time_s = static_cast<double>(rows * cols) / (file.number(row, 2, "G elements/s") * 1e9);
    }
    if (!(m.time_s > 0.0)) {
      file.fail(row, "a kernel time must be positive");
    }
    measured.push_back(std::move(m));
  }
  return measured;
}

namespace {

enum class GpuBench { kNone, kMatmul, kElementwise, kReduction, kConv };

GpuBench gpu_bench_kind(const CsvFile& file) {
  if (file.rows.empty()) {
    return GpuBench::kNone;
  }
  const std::vector<std::string>& h = file.rows.front().fields;
  auto starts = [&](std::initializer_list<std::string_view> names) {
    if (h.size() < names.size()) {
      return false;
    }
    std::size_t i = 0;
    for (std::string_view n : names) {
      if (h[i++] != n) {
        return false;
      }
    }
    return true;
  };
  if (starts({"dtype", "m", "n", "k", "time_us"})) {
    return GpuBench::kMatmul;
  }
  if (starts({"op", "dtype", "elements", "time_us"})) {
    return GpuBench::kElementwise;
  }
  if (starts({"op", "dtype", "rows", "cols", "time_us"})) {
    return GpuBench::kReduction;
  }
  if (starts({"pass", "dtype", "n", "c", "h", "w", "k", "r", "s", "stride", "pad", "time_us"})) {
    return GpuBench::kConv;
  }
  return GpuBench::kNone;
}

ElementType bench_type(const CsvFile& file, const CsvRow& row, const std::string& text) {
  if (text == "bf16") {
    return ElementType::kBF16;
  }
  if (text == "f32") {
    return ElementType::kF32;
  }
  if (text == "tf32") {
    return ElementType::kTF32;
  }
  file.fail(row, fmt::format("column 'dtype': expected bf16, f32 or tf32, got '{}'", text));
}

// One 2-D convolution pass over an NHWC layer of n images of h x w x c, k filters of r x s, one
// stride and symmetric padding, as the StableHLO JAX emits for it (see the header).
ConvShape bench_conv(const CsvFile& file, const CsvRow& row, const std::string& pass, std::uint64_t n,
                     std::uint64_t c, std::uint64_t h, std::uint64_t w, std::uint64_t k, std::uint64_t r,
                     std::uint64_t s, std::uint64_t stride, std::uint64_t pad) {
  if (h + 2 * pad < r || w + 2 * pad < s) {
    file.fail(row, "the kernel is larger than the padded input");
  }
  const std::uint64_t oh = (h + 2 * pad - r) / stride + 1;
  const std::uint64_t ow = (w + 2 * pad - s) / stride + 1;
  ConvShape conv;
  conv.spatial_rank = 2;
  if (pass == "fwd") {
    conv.batch = n;
    conv.input_features = c;
    conv.output_features = k;
    conv.input_size = {h, w, 1};
    conv.kernel_size = {r, s, 1};
    conv.output_size = {oh, ow, 1};
    conv.stride = {stride, stride, 1};
    conv.padding_low = {pad, pad, 0};
    conv.padding_high = {pad, pad, 0};
  } else if (pass == "dgrad") {
    if (pad + 1 > r || pad + 1 > s) {
      // JAX pads the dilated gradient by r - 1 - pad, negative here; signatures keep padding
      // unsigned, so the valid window positions (the FLOPs) would be wrong.
      file.fail(row,
                fmt::format("pass dgrad with pad {} > kernel - 1: the backward-data convolution's padding "
                            "would be negative, which Orrery's convolution signatures cannot represent",
                            pad));
    }
    // The output gradient (n x oh x ow x k), dilated by the stride, against the flipped kernel:
    // padding r - 1 - pad low, and high as much again plus what the forward stride dropped.
    conv.batch = n;
    conv.input_features = k;
    conv.output_features = c;
    conv.input_size = {oh, ow, 1};
    conv.kernel_size = {r, s, 1};
    conv.output_size = {h, w, 1};
    conv.input_dilation = {stride, stride, 1};
    auto low = [&](std::uint64_t kernel) { return kernel - 1 - pad; };
    conv.padding_low = {low(r), low(s), 0};
    conv.padding_high = {low(r) + (h + 2 * pad - r) % stride, low(s) + (w + 2 * pad - s) % stride, 0};
  } else if (pass == "wgrad") {
    // The input with batch and features swapped (c "images" of n features) against the output
    // gradient dilated by the stride; the result is the r x s kernel. Negative high padding (the
    // rows the forward stride never read) counts as 0, as the counting layer does.
    conv.batch = c;
    conv.input_features = n;
    conv.output_features = k;
    conv.input_size = {h, w, 1};
    conv.kernel_size = {oh, ow, 1};
    conv.output_size = {r, s, 1};
    conv.kernel_dilation = {stride, stride, 1};
    auto high = [&](std::uint64_t kernel, std::uint64_t out, std::uint64_t in) -> std::uint64_t {
      const std::int64_t v =
          static_cast<std::int64_t>(kernel + (out - 1) * stride) - static_cast<std::int64_t>(in + pad);
      return v > 0 ? static_cast<std::uint64_t>(v) : 0;
    };
    conv.padding_low = {pad, pad, 0};
    conv.padding_high = {high(r, oh, h), high(s, ow, w), 0};
  } else {
    file.fail(row, fmt::format("column 'pass': expected fwd, dgrad or wgrad, got '{}'", pass));
  }
  return conv;
}

}  // namespace

std::vector<MeasuredOp> read_gpu_microbenchmark_csv(const std::string& path, const std::string& hardware) {
  const CsvFile file = CsvFile::read(path);
  const GpuBench kind = gpu_bench_kind(file);
  if (kind == GpuBench::kNone) {
    throw OrreryError(
        ErrorCode::kInvalidInput,
        fmt::format("{}: not a validation/gpu microbenchmark CSV (matmul, elementwise, reduction or "
                    "conv header)",
                    path));
  }
  const CsvRow& header = file.rows.front();
  const std::size_t time_column = file.column(header, "time_us");
  std::vector<MeasuredOp> measured;
  for (std::size_t i = 1; i < file.rows.size(); ++i) {
    const CsvRow& row = file.rows[i];
    MeasuredOp m;
    m.hardware = hardware;
    m.source = fmt::format("{}:{}", fs::path(path).filename().string(), row.line);
    const std::size_t dtype_column = kind == GpuBench::kMatmul ? 0 : 1;
    const ElementType type = bench_type(file, row, field(file, row, dtype_column, "dtype"));
    switch (kind) {
      case GpuBench::kMatmul: {
        const auto mm = file.integer(row, 1, "m", 1);
        const auto nn = file.integer(row, 2, "n", 1);
        const auto kk = file.integer(row, 3, "k", 1);
        m.label = "matmul";
        m.op = gemm_signature("dot_general", type, {1, mm, nn, kk});
        break;
      }
      case GpuBench::kElementwise: {
        const std::string& op = field(file, row, 0, "op");
        const auto n = file.integer(row, 2, "elements", 1);
        m.label = op;
        if (op == "add") {
          m.op = elementwise_signature("add", OpClass::kElementwise, type, n, 2, 1.0);
        } else if (op == "mul_scalar") {
          m.op = elementwise_signature("multiply", OpClass::kElementwise, type, n, 1, 1.0);
        } else if (op == "exp") {
          m.op = elementwise_signature("exponential", OpClass::kTranscendental, type, n, 1, 8.0);
        } else if (op == "gelu_tanh") {
          m.op = elementwise_signature("gelu", OpClass::kTranscendental, type, n, 1, 8.0);
        } else if (op == "silu") {  // x * logistic(x): 16 + 1
          m.op = elementwise_signature("silu", OpClass::kTranscendental, type, n, 1, 17.0);
        } else if (op == "copy") {
          m.op = elementwise_signature("copy", OpClass::kDataMovement, type, n, 1, 0.0);
        } else if (op == "convert") {  // to the other of f32 and bf16
          m.op = elementwise_signature("convert", OpClass::kElementwise, type, n, 1, 1.0);
          const ElementType to = type == ElementType::kBF16 ? ElementType::kF32 : ElementType::kBF16;
          m.op.bytes_written = Bytes{storage_bytes(to, n)};
        } else {
          file.fail(row, fmt::format("column 'op': unknown elementwise op '{}'", op));
        }
        break;
      }
      case GpuBench::kReduction: {
        const std::string& op = field(file, row, 0, "op");
        const auto rows = file.integer(row, 2, "rows", 1);
        const auto cols = file.integer(row, 3, "cols", 1);
        m.label = op;
        if (op == "sum") {
          m.op = rowwise_signature("reduce", OpClass::kReduction, type, rows, cols, 1.0);
          m.op.elements = rows;  // a reduction keys on (outputs, reduced extent) and writes f32 outputs
          m.op.bytes_written = Bytes{storage_bytes(ElementType::kF32, rows)};
        } else if (op == "softmax" || op == "layer_norm" || op == "rms_norm") {
          const double flops = op == "softmax" ? 5.0 : op == "layer_norm" ? 7.0 : 4.0;
          m.op = rowwise_signature(op, OpClass::kNormalisation, type, rows, cols, flops);
        } else {
          file.fail(row, fmt::format("column 'op': unknown reduction op '{}'", op));
        }
        break;
      }
      case GpuBench::kConv: {
        const std::string& pass = field(file, row, 0, "pass");
        const ConvShape conv = bench_conv(file, row, pass, file.integer(row, 2, "n", 1),
                                          file.integer(row, 3, "c", 1), file.integer(row, 4, "h", 1),
                                          file.integer(row, 5, "w", 1), file.integer(row, 6, "k", 1),
                                          file.integer(row, 7, "r", 1), file.integer(row, 8, "s", 1),
                                          file.integer(row, 9, "stride", 1), file.integer(row, 10, "pad", 0));
        m.label = "conv " + pass;
        m.op = convolution_signature("convolution", type, conv);
        break;
      }
      case GpuBench::kNone:
        break;
    }
    m.time_s = file.number(row, time_column, "time_us") * 1e-6;
    if (!(m.time_s > 0.0)) {
      file.fail(row, "a kernel time must be positive");
    }
    measured.push_back(std::move(m));
  }
  return measured;
}

std::vector<KernelMeasurement> read_kernel_table(const std::string& path, const std::string& hardware) {
  if (llmcompass_file(fs::path(path))) {
    std::vector<KernelMeasurement> rows;
    for (const MeasuredOp& m : read_llmcompass_csv(path)) {
      rows.push_back(to_measurement(m));
    }
    return rows;
  }
  const CsvFile head = CsvFile::read(path);
  if (!head.rows.empty() && !head.rows.front().fields.empty() && head.rows.front().fields.front() == "hardware") {
    return read_orrery_table(path);
  }
  if (gpu_bench_kind(head) != GpuBench::kNone) {
    if (hardware.empty()) {
      throw OrreryError(
          ErrorCode::kInvalidInput,
          fmt::format("{}: a validation/gpu microbenchmark CSV names no device: say which preset it was "
                      "measured on (export-table --hardware NAME)",
                      path));
    }
    std::vector<KernelMeasurement> rows;
    for (const MeasuredOp& m : read_gpu_microbenchmark_csv(path, hardware)) {
      rows.push_back(to_measurement(m));
    }
    return rows;
  }
  if (!head.rows.empty() && head.rows.front().text.find("time_stats.") != std::string::npos) {
    std::vector<KernelMeasurement> rows;
    for (const MeasuredOp& m : read_vidur_mlp_csv(path)) {
      rows.push_back(to_measurement(m));
    }
    return rows;
  }
  throw OrreryError(
      ErrorCode::kInvalidInput,
      fmt::format("{}: not a kernel table Orrery knows (Orrery's format starts with a 'hardware' "
                  "column; Vidur per-op CSVs have time_stats.* columns; LLMCompass sweeps are named "
                  "matmul_A100.csv, gelu_A100.csv, ...; validation/gpu microbenchmarks start with "
                  "dtype,m,n,k / op,dtype,elements / op,dtype,rows,cols / pass,dtype,n,...)",
                  path));
}

void write_orrery_table(std::ostream& out, const std::vector<KernelMeasurement>& rows) {
  out << "hardware,kind,class,dtype,shape,time_us,source\n";
  for (const KernelMeasurement& m : rows) {
    out << fmt::format("{},{},{},{},{},{:.9g},\"{}\"\n", m.hardware, m.kind, name(m.op_class), name(m.element_type),
                       format_shape(m.shape), m.time_s * 1e6, m.source);
  }
}

}  // namespace orrery::compute
