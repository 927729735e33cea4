#include "compute/op_signature.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/hash.h"

namespace orrery::compute {
namespace {

std::uint64_t product(const std::array<std::uint64_t, 3>& values, std::uint32_t rank) {
  std::uint64_t result = 1;
  for (std::uint32_t i = 0; i < rank && i < 3; ++i) {
    result *= values[i];
  }
  return result;
}

// The memoisation hash: fields folded in as 64-bit words by multiply-xorshift (one multiply per
// word, so hashing a signature costs a few nanoseconds), finalised by SplitMix64's mix64.
class WordHasher {
 public:
  void add(std::uint64_t word) {
    state_ = (state_ ^ word) * 0x9e3779b97f4a7c15ULL;
    state_ ^= state_ >> 29;
  }
  void add_double(double value) { add(std::bit_cast<std::uint64_t>(value)); }
  void add_array(const std::array<std::uint64_t, 3>& values) {
    for (const std::uint64_t value : values) {
      add(value);
    }
  }
  void add_text(std::string_view text) {
    std::size_t i = 0;
    for (; i + 8 <= text.size(); i += 8) {
      std::uint64_t word = 0;
      std::memcpy(&word, text.data() + i, 8);
      add(word);
    }
    std::uint64_t tail = text.size();  // the length disambiguates zero padding
    std::memcpy(&tail, text.data() + i, text.size() - i);
    add(tail ^ (static_cast<std::uint64_t>(text.size()) << 56));
  }
  [[nodiscard]] std::uint64_t finish() const { return mix64(state_); }

 private:
  std::uint64_t state_ = 0x243f6a8885a308d3ULL;
};

}  // namespace

std::string_view name(OpClass op_class) { return config::enum_to_string(op_class); }

std::uint64_t ConvShape::output_pixels() const {
  return (batch / (batch_groups == 0 ? 1 : batch_groups)) * product(output_size, spatial_rank);
}

std::uint64_t ConvShape::kernel_volume() const { return product(kernel_size, spatial_rank); }

double OpSignature::arithmetic_intensity() const {
  const double moved = bytes().as_double();
  return moved > 0.0 ? flops.value / moved : 0.0;
}

std::vector<std::uint64_t> OpSignature::table_shape() const {
  switch (op_class) {
    case OpClass::kGemm:
      return {gemm.batch, gemm.m, gemm.n, gemm.k};
    case OpClass::kConvolution: {
      std::vector<std::uint64_t> shape{conv.batch, conv.input_features, conv.output_features,
                                       conv.feature_groups};
      for (const auto* values : {&conv.input_size, &conv.kernel_size, &conv.stride, &conv.output_size}) {
        shape.insert(shape.end(), values->begin(), values->begin() + conv.spatial_rank);
      }
      return shape;
    }
    case OpClass::kNormalisation:
    case OpClass::kSort:
      if (row_length > 0) {
        return {elements / row_length, row_length};
      }
      return {elements};
    case OpClass::kReduction:
      if (row_length > 0) {
        return {elements, row_length};
      }
      return {elements};
    default:
      return {elements};
  }
}

std::uint64_t OpSignature::hash() const {
  WordHasher h;
  h.add_text(kind);
  h.add((static_cast<std::uint64_t>(op_class) << 8) | static_cast<std::uint64_t>(element_type));
  if (op_class == OpClass::kGemm) {
    h.add(gemm.batch);
    h.add(gemm.m);
    h.add(gemm.n);
    h.add(gemm.k);
  } else if (op_class == OpClass::kConvolution) {
    h.add(conv.spatial_rank);
    h.add(conv.batch);
    h.add(conv.input_features);
    h.add(conv.output_features);
    h.add(conv.feature_groups);
    h.add(conv.batch_groups);
    for (const auto* values : {&conv.input_size, &conv.kernel_size, &conv.output_size, &conv.stride,
                               &conv.padding_low, &conv.padding_high, &conv.input_dilation, &conv.kernel_dilation}) {
      h.add_array(*values);
    }
  }
  h.add(elements);
  h.add(row_length);
  h.add_double(flops.value);
  h.add(bytes_read.count);
  h.add(bytes_written.count);
  return h.finish();
}

std::string OpSignature::describe() const {
  return fmt::format("{} ({}, {}) [{}] {:.4g} FLOP {} B", kind, name(op_class), name(element_type),
                     fmt::join(table_shape(), "x"), flops.value, bytes().count);
}

OpSignature gemm_signature(std::string kind, ElementType type, GemmShape shape) {
  OpSignature op;
  op.op_class = OpClass::kGemm;
  op.kind = std::move(kind);
  op.element_type = type;
  op.gemm = shape;
  op.flops = Flops{2.0 * static_cast<double>(shape.batch) * static_cast<double>(shape.m) *
                   static_cast<double>(shape.n) * static_cast<double>(shape.k)};
  op.bytes_read = Bytes{storage_bytes(type, shape.batch * (shape.m * shape.k + shape.k * shape.n))};
  op.bytes_written = Bytes{storage_bytes(type, shape.batch * shape.m * shape.n)};
  return op;
}

OpSignature convolution_signature(std::string kind, ElementType type, const ConvShape& shape) {
  OpSignature op;
  op.op_class = OpClass::kConvolution;
  op.kind = std::move(kind);
  op.element_type = type;
  op.conv = shape;
  const std::uint64_t groups = shape.feature_groups == 0 ? 1 : shape.feature_groups;
  const std::uint64_t inputs_per_output = shape.kernel_volume() * shape.input_features / groups;
  // Only the (output, kernel) pairs that land on a real input element multiply, as the counting
  // layer counts a StableHLO convolution (without padding or dilation: output x kernel).
  double positions = 1.0;
  for (std::uint32_t d = 0; d < shape.spatial_rank && d < 3; ++d) {
    const auto s = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
    positions *= static_cast<double>(valid_window_positions(
        s(shape.input_size[d]), s(shape.kernel_size[d]), s(shape.output_size[d]), s(shape.stride[d]),
        s(shape.padding_low[d]), s(shape.input_dilation[d]), s(shape.kernel_dilation[d])));
  }
  const std::uint64_t batch_groups = shape.batch_groups == 0 ? 1 : shape.batch_groups;
  op.flops = Flops{2.0 * static_cast<double>(shape.input_features / groups) *
                   static_cast<double>(shape.output_features) *
                   static_cast<double>(shape.batch / batch_groups) * positions};
  const std::uint64_t input = shape.batch * shape.input_features * product(shape.input_size, shape.spatial_rank);
  const std::uint64_t kernel = inputs_per_output * shape.output_features;
  op.bytes_read = Bytes{storage_bytes(type, input + kernel)};
  op.bytes_written = Bytes{storage_bytes(type, shape.output_pixels() * shape.output_features)};
  return op;
}

GemmShape im2col_gemm(const ConvShape& conv) {
  const std::uint64_t groups = std::max<std::uint64_t>(conv.feature_groups, 1);
  const std::uint64_t batch_groups = std::max<std::uint64_t>(conv.batch_groups, 1);
  std::uint64_t k = conv.kernel_volume() * conv.input_features / groups;
  if (product(conv.input_dilation, conv.spatial_rank) > 1) {
    double positions = 1.0;
    double outputs = 1.0;
    for (std::uint32_t d = 0; d < conv.spatial_rank && d < 3; ++d) {
      const auto s = [](std::uint64_t v) { return static_cast<std::int64_t>(v); };
      positions *= static_cast<double>(valid_window_positions(s(conv.input_size[d]), s(conv.kernel_size[d]),
                                                              s(conv.output_size[d]), s(conv.stride[d]),
                                                              s(conv.padding_low[d]), s(conv.input_dilation[d]),
                                                              s(conv.kernel_dilation[d])));
      outputs *= static_cast<double>(conv.output_size[d]);
    }
    if (outputs > 0.0) {
      k = static_cast<std::uint64_t>(
          std::ceil(positions / outputs * static_cast<double>(conv.input_features) / static_cast<double>(groups)));
    }
  }
  return GemmShape{groups * batch_groups, conv.output_pixels(), conv.output_features / (groups * batch_groups), k};
}

std::int64_t valid_window_positions(std::int64_t input, std::int64_t kernel, std::int64_t output, std::int64_t stride,
                                    std::int64_t pad_low, std::int64_t input_dilation, std::int64_t kernel_dilation) {
  stride = std::max<std::int64_t>(stride, 1);
  input_dilation = std::max<std::int64_t>(input_dilation, 1);
  kernel_dilation = std::max<std::int64_t>(kernel_dilation, 1);
  if (input <= 0) {
    return 0;
  }
  const std::int64_t last = (input - 1) * input_dilation;
  const auto floor_div = [](std::int64_t a, std::int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); };
  std::int64_t valid = 0;
  for (std::int64_t k = 0; k < kernel; ++k) {
    const std::int64_t offset = k * kernel_dilation - pad_low;  // input index = o * stride + offset
    if (input_dilation == 1) {
      // o in [ceil(-offset / stride), floor((last - offset) / stride)], within [0, output).
      const std::int64_t low = std::max<std::int64_t>(0, -floor_div(offset, stride));
      const std::int64_t high = std::min<std::int64_t>(output - 1, floor_div(last - offset, stride));
      valid += std::max<std::int64_t>(0, high - low + 1);
    } else {
      for (std::int64_t o = 0; o < output; ++o) {
        const std::int64_t i = o * stride + offset;
        valid += (i >= 0 && i <= last && i % input_dilation == 0) ? 1 : 0;
      }
    }
  }
  return valid;
}

ConvShape convolution_from_scalesim_layer(std::uint64_t ifmap_height, std::uint64_t ifmap_width,
                                          std::uint64_t filter_height, std::uint64_t filter_width,
                                          std::uint64_t channels, std::uint64_t num_filters,
                                          std::uint64_t stride) {
  // SCALE-Sim: ofmap = ceil((ifmap - filter + stride) / stride) per dimension.
  auto scalesim_output = [stride](std::uint64_t in, std::uint64_t filter) {
    return (in - filter + stride + stride - 1) / stride;
  };
  ConvShape shape;
  shape.spatial_rank = 2;
  shape.input_features = channels;
  shape.output_features = num_filters;
  shape.input_size = {ifmap_height, ifmap_width, 1};
  shape.kernel_size = {filter_height, filter_width, 1};
  shape.stride = {stride, stride, 1};
  shape.output_size = {scalesim_output(ifmap_height, filter_height),
                       scalesim_output(ifmap_width, filter_width), 1};
  return shape;
}

GemmShape gemm_from_scalesim_layer(std::uint64_t m, std::uint64_t n, std::uint64_t k) {
  return GemmShape{1, m, n, k};
}

OpSignature elementwise_signature(std::string kind, OpClass op_class, ElementType type,
                                  std::uint64_t elements, std::uint32_t inputs,
                                  double flops_per_element) {
  OpSignature op;
  op.op_class = op_class;
  op.kind = std::move(kind);
  op.element_type = type;
  op.elements = elements;
  op.flops = Flops{flops_per_element * static_cast<double>(elements)};
  op.bytes_read = Bytes{storage_bytes(type, elements * inputs)};
  op.bytes_written = Bytes{storage_bytes(type, elements)};
  return op;
}

OpSignature rowwise_signature(std::string kind, OpClass op_class, ElementType type, std::uint64_t rows,
                              std::uint64_t row_length, double flops_per_element) {
  OpSignature op;
  op.op_class = op_class;
  op.kind = std::move(kind);
  op.element_type = type;
  op.elements = rows * row_length;
  op.row_length = row_length;
  op.flops = Flops{flops_per_element * static_cast<double>(op.elements)};
  op.bytes_read = Bytes{storage_bytes(type, op.elements)};
  op.bytes_written = Bytes{storage_bytes(type, op.elements)};
  return op;
}

}  // namespace orrery::compute
