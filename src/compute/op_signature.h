// OpSignature: everything an estimator needs to know about one compute op, and nothing of the IR
// it came from. The counting layer (IR op -> signature) fills it; estimators read it; the estimate
// cache keys on it (equal signatures cost the same on the same hardware).
//
// A signature is a plain value: the class, the kind name, the element type, the dimensions that
// matter for its class, and the counted work (FLOPs, bytes read and written). Dimensions and counts
// are not re-derived from each other here: the counting layer owns those formulas, and the
// builders at the end of this file implement the textbook ones for signatures made by hand
// (tests, validation against kernel tables).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "compute/element_type.h"
#include "config/compute_config.h"
#include "util/units.h"

namespace orrery::compute {

using config::OpClass;
using config::kOpClassCount;

std::string_view name(OpClass op_class);

// A (batched) matrix product: `batch` independent products of an m x k matrix by a k x n matrix.
// For dot_general: batch = product of the batching dims, m / n = product of the lhs / rhs free dims,
// k = product of the contracting dims.
struct GemmShape {
  std::uint64_t batch = 1;
  std::uint64_t m = 0;
  std::uint64_t n = 0;
  std::uint64_t k = 0;
  friend bool operator==(const GemmShape&, const GemmShape&) = default;
};

// A convolution with up to three spatial dimensions (unused ones are 1, padding 0). Sizes are per
// spatial dimension, in the order of the op's dimension numbers.
//
// output_size is the size of the op's result. StableHLO gives
//   out = floor((in_dilated + pad_low + pad_high - kernel_dilated) / stride) + 1,
// SCALE-Sim's topology files use ceil((in - kernel + stride) / stride) with no padding; the systolic
// model reads output_size as given, so a signature built from a SCALE-Sim layer
// (convolution_from_scalesim_layer) reproduces SCALE-Sim's cycle counts.
struct ConvShape {
  std::uint32_t spatial_rank = 2;   // 1 to 3
  std::uint64_t batch = 1;          // N of the input
  std::uint64_t input_features = 0; // C_in, over all groups
  std::uint64_t output_features = 0;// C_out, over all groups
  std::uint64_t feature_groups = 1; // feature_group_count (depthwise: = C_in)
  std::uint64_t batch_groups = 1;   // batch_group_count
  std::array<std::uint64_t, 3> input_size{1, 1, 1};
  std::array<std::uint64_t, 3> kernel_size{1, 1, 1};
  std::array<std::uint64_t, 3> output_size{1, 1, 1};
  std::array<std::uint64_t, 3> stride{1, 1, 1};
  std::array<std::uint64_t, 3> padding_low{0, 0, 0};
  std::array<std::uint64_t, 3> padding_high{0, 0, 0};
  std::array<std::uint64_t, 3> input_dilation{1, 1, 1};   // lhs_dilation
  std::array<std::uint64_t, 3> kernel_dilation{1, 1, 1};  // rhs_dilation
  friend bool operator==(const ConvShape&, const ConvShape&) = default;

  [[nodiscard]] std::uint64_t output_pixels() const;  // batch / batch_groups x prod(output_size)
  [[nodiscard]] std::uint64_t kernel_volume() const;  // prod(kernel_size)
};

struct OpSignature {
  OpClass op_class = OpClass::kOther;
  // The op's name: the StableHLO op without dialect prefix ("dot_general", "exponential",
  // "reduce"), a custom-call target ("__cudnn$convForward"), or a fused kernel's name
  // ("rms_norm"). Tables and rules match on it.
  std::string kind;
  // The precision the op computes in: selects the hardware peak. For most ops the operands'
  // element type; tf32 for f32 dots that run on TF32 tensor cores.
  ElementType element_type = ElementType::kF32;

  GemmShape gemm;  // kGemm only
  ConvShape conv;  // kConvolution only
  // Every other class: `elements` is the number of elements the op produces; reductions,
  // normalisations and sorts work row by row, with `row_length` the reduced / normalised / sorted
  // extent (so a reduce reads elements x row_length and writes elements; a normalisation or sort
  // reads and writes elements). row_length is 0 for ops without rows.
  std::uint64_t elements = 0;
  std::uint64_t row_length = 0;

  // The counted work. FLOPs count a multiply-add as 2; transcendentals are weighted as the
  // counting layer documents.
  Flops flops;
  Bytes bytes_read;
  Bytes bytes_written;

  [[nodiscard]] Bytes bytes() const { return bytes_read + bytes_written; }
  // FLOPs per byte moved (0 when nothing moves).
  [[nodiscard]] double arithmetic_intensity() const;

  // The dimensions tables are keyed on (docs/compute.md, "Table format"):
  //   gemm: [batch, m, n, k]
  //   convolution: [batch, C_in, C_out, groups, input..., kernel..., stride..., output...]
  //   normalisation, sort with rows: [elements / row_length, row_length] (rows, row length)
  //   reduction with rows: [elements, row_length] (outputs, reduced extent)
  //   everything else: [elements]
  [[nodiscard]] std::vector<std::uint64_t> table_shape() const;

  // A stable 64-bit hash of every field (the memoisation key); equal signatures hash equally.
  [[nodiscard]] std::uint64_t hash() const;
  // "dot_general gemm f16 [1x4096x12288x4096] 4.1e11 FLOP 1.3e8 B" for notes and errors.
  [[nodiscard]] std::string describe() const;

  friend bool operator==(const OpSignature&, const OpSignature&) = default;
};

struct OpSignatureHash {
  std::size_t operator()(const OpSignature& op) const { return static_cast<std::size_t>(op.hash()); }
};

// --- builders for signatures made by hand ------------------------------------------------------

// A GEMM: flops = 2 * batch * m * n * k; reads batch * (m*k + k*n) elements, writes batch * m * n.
OpSignature gemm_signature(std::string kind, ElementType type, GemmShape shape);

// A convolution: flops = 2 * (C_in / groups) * C_out * (batch / batch groups) * prod_d V_d, V_d the
// (output, kernel) index pairs of dimension d that land on a real input element
// (valid_window_positions; without padding or dilation output * kernel, the im2col count);
// reads the input (batch * C_in * prod(input_size)) and the kernel (kernel_volume * C_in / groups *
// C_out), writes output_pixels * C_out elements.
OpSignature convolution_signature(std::string kind, ElementType type, const ConvShape& shape);

// The GEMM a convolution runs as (im2col): m = output pixels per batch group, k = kernel volume *
// C_in / feature groups, n = C_out / (feature groups * batch groups), once per group
// (batch = feature groups * batch groups). An input-dilated convolution (the backward-data
// convolution of a strided layer) multiplies only the kernel taps that land on real input
// elements: k = ceil(prod_d V_d / prod_d out_d * C_in / feature groups), V_d from
// valid_window_positions, instead of kernel volume * C_in / groups (4x too many for stride 2).
GemmShape im2col_gemm(const ConvShape& conv);

// The (output index o, kernel index k) pairs of one spatial dimension whose input index
// o * stride - pad_low + k * kernel_dilation lands on a real element of the input dilated by
// input_dilation: inside [0, (input - 1) * input_dilation] and a multiple of input_dilation
// (XLA's HloCostAnalysis rule; without padding and dilation, output * kernel).
std::int64_t valid_window_positions(std::int64_t input, std::int64_t kernel, std::int64_t output, std::int64_t stride,
                                    std::int64_t pad_low, std::int64_t input_dilation, std::int64_t kernel_dilation);

// SCALE-Sim's convolution layer (topology CSV row): an ifmap of height x width x channels, a
// filter of filter_height x filter_width, num_filters filters, one stride for both dimensions, no
// padding, batch 1, and SCALE-Sim's output size ceil((in - filter + stride) / stride).
ConvShape convolution_from_scalesim_layer(std::uint64_t ifmap_height, std::uint64_t ifmap_width,
                                          std::uint64_t filter_height, std::uint64_t filter_width,
                                          std::uint64_t channels, std::uint64_t num_filters,
                                          std::uint64_t stride);
// SCALE-Sim's GEMM layer (M, N, K CSV row): SCALE-Sim maps it to a 1 x K filter over an M x K
// ifmap with N filters, which is exactly the GEMM m = M, n = N, k = K.
GemmShape gemm_from_scalesim_layer(std::uint64_t m, std::uint64_t n, std::uint64_t k);

// An elementwise-like op producing `elements` outputs from `inputs` operands of the same size:
// flops = flops_per_element * elements; reads inputs * elements, writes elements.
OpSignature elementwise_signature(std::string kind, OpClass op_class, ElementType type,
                                  std::uint64_t elements, std::uint32_t inputs,
                                  double flops_per_element);

// A row-wise op over rows x row_length elements (normalisation, softmax, sort): reads and writes
// rows * row_length elements, flops = flops_per_element * rows * row_length.
OpSignature rowwise_signature(std::string kind, OpClass op_class, ElementType type, std::uint64_t rows,
                              std::uint64_t row_length, double flops_per_element);

}  // namespace orrery::compute
